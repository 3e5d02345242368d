//! Sending as the guest would, against loopback servers: redirects, limits, headers, time.
//! Every address here is loopback, so a request that escaped its rule stays on the machine;
//! the refusals of private addresses are tested in a network namespace by the security suite.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use super::*;

/// A loopback server answering every request with `answer(method, path)`; each request,
/// head and body, is recorded before it is answered.
fn serve(answer: impl Fn(&str, &str) -> String + Send + 'static) -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).into_owned();
            let length = head
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            let mut body = vec![0; length];
            let _ = stream.read_exact(&mut body);
            let mut words = head.split_whitespace();
            let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or("/"));
            let reply = answer(method, path);
            record
                .lock()
                .unwrap()
                .push(format!("{head}{}", String::from_utf8_lossy(&body)));
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    (port, seen)
}

fn reply(status: &str, headers: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn request(url: &str, method: &str, headers: &[(&str, &str)]) -> GuestRequest {
    GuestRequest {
        url: url.to_owned(),
        headers: headers
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect(),
        method: Some(method.to_owned()),
    }
}

fn loopback() -> PluginHttp {
    PluginHttp::new(vec!["127.0.0.1".to_owned()], true)
}

const TIME: Option<Duration> = Some(Duration::from_secs(30));

#[test]
fn redirects_change_methods_and_drop_credentials_as_ureq_does() {
    let (port, seen) = serve(|method, path| match path {
        "/see-other" => reply("303 See Other", "Location: /landing\r\n", ""),
        "/found" => reply("302 Found", "Location: /landing\r\n", ""),
        "/temporary" => reply("307 Temporary Redirect", "Location: /landing\r\n", ""),
        _ => reply("200 OK", "", &format!("landed {method}")),
    });
    let http = loopback();
    let url = |path: &str| format!("http://127.0.0.1:{port}{path}");
    let secret = [("Authorization", "Bearer s3cret"), ("cookie", "id=1")];

    let see_other = http
        .send(
            request(&url("/see-other"), "post", &secret),
            Some(b"payload".to_vec()),
            TIME,
            1024,
        )
        .unwrap();
    assert_eq!(
        (see_other.status, see_other.body.as_slice()),
        (200, &b"landed GET"[..])
    );
    let heads = seen.lock().unwrap().clone();
    assert!(heads[0].starts_with("POST /see-other ") && heads[0].ends_with("payload"));
    assert!(heads[0].contains("s3cret") && heads[0].contains("id=1"));
    let landing = heads[1].to_ascii_lowercase();
    assert!(landing.starts_with("get /landing "), "{landing}");
    for dropped in ["payload", "s3cret", "id=1", "content-length"] {
        assert!(
            !landing.contains(dropped),
            "{dropped} was carried: {landing}"
        );
    }

    let put = http.send(
        request(&url("/found"), "PUT", &[]),
        Some(b"x".to_vec()),
        TIME,
        1024,
    );
    assert_eq!(put.unwrap().body, b"landed GET");
    // 307 keeps the method; one with a body is not resent, and the 307 is the answer.
    let get = http.send(request(&url("/temporary"), "GET", &[]), None, TIME, 1024);
    assert_eq!(get.unwrap().body, b"landed GET");
    let posted = http.send(
        request(&url("/temporary"), "POST", &[]),
        Some(b"x".to_vec()),
        TIME,
        1024,
    );
    assert_eq!(posted.unwrap().status, 307);
    let head = http.send(request(&url("/found"), "HEAD", &[]), None, TIME, 1024);
    assert_eq!(head.unwrap().status, 200);
    assert!(
        seen.lock()
            .unwrap()
            .last()
            .unwrap()
            .starts_with("HEAD /landing ")
    );
}

#[test]
fn answers_are_bounded_and_headers_shown_only_when_enabled() {
    let (port, _) = serve(|_, _| reply("200 OK", "X-Mark: yes\r\n", "0123456789"));
    let url = format!("http://127.0.0.1:{port}/");
    let exact = loopback()
        .send(request(&url, "GET", &[]), None, TIME, 10)
        .unwrap();
    assert_eq!(exact.body, b"0123456789");
    assert_eq!(exact.headers.get("x-mark").map(String::as_str), Some("yes"));
    assert_eq!(
        loopback()
            .send(request(&url, "GET", &[]), None, TIME, 9)
            .unwrap_err(),
        Failure::Failed(format!(
            "the answer of `{url}` is larger than the 9 bytes a plugin may receive"
        ))
    );
    let hidden = PluginHttp::new(vec!["127.0.0.1".to_owned()], false)
        .send(request(&url, "GET", &[]), None, TIME, 10)
        .unwrap();
    assert!(hidden.headers.is_empty());
}

#[test]
fn a_server_that_never_answers_costs_the_call_its_time() {
    // Connections wait in the backlog, never accepted, never answered.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://127.0.0.1:{}/",
        listener.local_addr().unwrap().port()
    );
    let outcome = loopback().send(
        request(&url, "GET", &[]),
        None,
        Some(Duration::from_millis(300)),
        10,
    );
    assert_eq!(outcome.unwrap_err(), Failure::Timeout);
    assert_eq!(
        loopback()
            .send(request(&url, "GET", &[]), None, Some(Duration::ZERO), 10)
            .unwrap_err(),
        Failure::Timeout
    );
    drop(listener);
}

#[test]
fn every_hop_is_checked_and_bad_requests_say_why() {
    let (port, seen) = serve(move |_, path| match path {
        "/away" => reply("302 Found", "Location: http://[::1]:1/\r\n", ""),
        "/loop" => reply("302 Found", "Location: /loop\r\n", ""),
        _ => reply("302 Found", "Location: ftp://127.0.0.1/\r\n", ""),
    });
    let http = loopback();
    let url = |path: &str| format!("http://127.0.0.1:{port}{path}");
    assert_eq!(
        http.send(request(&url("/away"), "GET", &[]), None, TIME, 10)
            .unwrap_err(),
        Failure::Refused(
            "redirected to `http://[::1]:1/`: the host `::1` is not among the allowed hosts \
             (`127.0.0.1`)"
                .to_owned()
        )
    );
    assert_eq!(
        http.send(request(&url("/ftp"), "GET", &[]), None, TIME, 10)
            .unwrap_err(),
        Failure::Refused(
            "redirected to `ftp://127.0.0.1/`: `ftp:` URLs cannot be fetched; only http and https"
                .to_owned()
        )
    );
    assert_eq!(
        http.send(request(&url("/loop"), "GET", &[]), None, TIME, 10)
            .unwrap_err(),
        Failure::Failed(format!("`{}` redirected more than 10 times", url("/loop")))
    );
    let loops = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|h| h.starts_with("GET /loop "))
        .count();
    assert_eq!(loops, MAX_REDIRECTS + 1);
    assert_eq!(
        http.send(request("not a url", "GET", &[]), None, TIME, 10)
            .unwrap_err(),
        Failure::Failed("`not a url` is not a URL: relative URL without a base".to_owned())
    );
    assert_eq!(
        http.send(request(&url("/"), "GE T", &[]), None, TIME, 10)
            .unwrap_err(),
        Failure::Failed("`GE T` is not an HTTP method".to_owned())
    );
    let bad_header = http.send(
        request(&url("/"), "GET", &[("bad name", "x")]),
        None,
        TIME,
        10,
    );
    assert!(
        matches!(&bad_header, Err(Failure::Failed(why)) if why.contains("cannot be made")),
        "{bad_header:?}"
    );
}

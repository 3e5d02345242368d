//! The network proxy of [`Network::Proxy`]: a process outside the sandbox, on the host's
//! network, that accepts connections on the socket the first stage made inside the sandbox
//! and, for each request whose host the policy admits, connects to an address it checked
//! itself. It ends when the first stage does.

mod grants;
mod request;

use std::io::IoSliceMut;
use std::mem::MaybeUninit;
use std::net::SocketAddr;
use std::os::fd::AsFd as _;
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::{SigSet, Signal};
use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::timeout;

use super::Failure;
use crate::sandbox::FAILURE_PREFIX;
use crate::sandbox::launch::Plan;
use crate::sandbox::policy::Network;
use grants::Grants;
use request::{MAX_HEAD, Request};

/// How many connections the proxy carries at once; more wait to be accepted.
const MAX_CONNECTIONS: usize = 256;

/// How long a client may take to send a request's head.
const HEAD_TIME: Duration = Duration::from_secs(30);

/// How long resolving a name, and connecting to one address, may take.
const REACH_TIME: Duration = Duration::from_secs(15);

pub(super) fn run(plan: &Plan) -> Result<i32, Failure> {
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)
        .map_err(|error| Failure::of("follow the launcher's end", error))?;
    // A write to a client that left fails with EPIPE instead of ending the process (the
    // standard library ignores SIGPIPE in `main`, which this process never reaches).
    SigSet::from_iter([Signal::SIGPIPE])
        .thread_block()
        .map_err(|error| Failure::of("block SIGPIPE", error))?;
    let Network::Proxy(hosts) = &plan.policy.network else {
        return Err(Failure(
            "the proxy was started for a policy without one".to_owned(),
        ));
    };
    let grants = Arc::new(Grants::new(hosts));
    let listener = receive()?;
    listener
        .set_nonblocking(true)
        .map_err(|error| Failure::of("listen for the sandbox", error))?;
    // The first stage holds the channel open while it lives: its end is this one's.
    std::thread::spawn(|| {
        let stdin = std::io::stdin();
        let mut byte = [0_u8; 1];
        loop {
            match rustix::net::recv(stdin.as_fd(), &mut byte, RecvFlags::empty()) {
                Ok((0, _)) => std::process::exit(0),
                Err(rustix::io::Errno::INTR) | Ok(_) => {}
                Err(_) => std::process::exit(0),
            }
        }
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| Failure::of("start the proxy's runtime", error))?;
    runtime.block_on(async move {
        let listener = TcpListener::from_std(listener)
            .map_err(|error| Failure::of("listen for the sandbox", error))?;
        serve(&listener, &grants).await;
        Ok(0)
    })
}

/// The listening socket the first stage sends over standard input.
fn receive() -> Result<std::net::TcpListener, Failure> {
    let stdin = std::io::stdin();
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let mut port = [0_u8; 2];
    rustix::net::recvmsg(
        stdin.as_fd(),
        &mut [IoSliceMut::new(&mut port)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )
    .map_err(|error| Failure::of("receive the sandbox's socket", error))?;
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(mut fds) = message
            && let Some(fd) = fds.next()
        {
            return Ok(std::net::TcpListener::from(fd));
        }
    }
    Err(Failure(
        "the sandbox's first stage ended before handing the proxy its socket".to_owned(),
    ))
}

async fn serve(listener: &TcpListener, grants: &Arc<Grants>) {
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(permit) = Arc::clone(&permits).acquire_owned().await else {
            return;
        };
        match listener.accept().await {
            Ok((client, _)) => {
                let grants = Arc::clone(grants);
                tokio::spawn(async move {
                    carry(client, &grants).await;
                    drop(permit);
                });
            }
            // Out of files or memory for a moment: try again shortly.
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// Reads one request, and either refuses it in words or carries the connection to its host.
async fn carry(mut client: TcpStream, grants: &Grants) {
    let (request, read) = match timeout(HEAD_TIME, read_head(&mut client)).await {
        Ok(Ok(found)) => found,
        Ok(Err(message)) => return answer(&mut client, "400 Bad Request", &message).await,
        Err(_) => {
            let message = format!("no whole request came in {} s", HEAD_TIME.as_secs());
            return answer(&mut client, "408 Request Timeout", &message).await;
        }
    };
    let target = request.target();
    let addresses = match admit(grants, &request).await {
        Ok(addresses) => addresses,
        Err(reason) => {
            let message = format!("the sandbox's network proxy refused {target}: {reason}");
            eprintln!("{FAILURE_PREFIX}{message}");
            return answer(&mut client, "403 Forbidden", &message).await;
        }
    };
    let mut upstream = match connect(&addresses).await {
        Ok(upstream) => upstream,
        Err(error) => {
            let message = format!("the sandbox's network proxy cannot reach {target}: {error}");
            return answer(&mut client, "502 Bad Gateway", &message).await;
        }
    };
    let sent = match &request.forward {
        None => {
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
        }
        Some(head) => upstream.write_all(head).await,
    };
    let rest = read.get(request.head_len..).unwrap_or_default();
    if sent.is_ok() && upstream.write_all(rest).await.is_ok() {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
    }
}

async fn read_head(client: &mut TcpStream) -> Result<(Request, Vec<u8>), String> {
    let mut read = Vec::with_capacity(4096);
    // Where the search for the head's end goes on from: each byte is looked at once.
    let mut searched = 0;
    loop {
        if read.len() >= MAX_HEAD {
            return Err(format!(
                "the request's head is longer than {} KiB",
                MAX_HEAD / 1024
            ));
        }
        let count = client
            .read_buf(&mut read)
            .await
            .map_err(|error| error.to_string())?;
        if count == 0 {
            return Err("the connection closed before a whole request came".to_owned());
        }
        let ended = read
            .get(searched..)
            .is_some_and(|rest| rest.windows(4).any(|window| window == b"\r\n\r\n"));
        searched = read.len().saturating_sub(3);
        if !ended {
            continue;
        }
        if let Some(request) = request::parse(&read)? {
            return Ok((request, read));
        }
    }
}

/// The addresses `request` may go to: its host and port granted, its name resolved here, and
/// each address checked.
async fn admit(grants: &Grants, request: &Request) -> Result<Vec<SocketAddr>, String> {
    let rule = grants.rule(&request.host, request.port)?;
    rule.check(request.scheme(), Some(&request.host))
        .map_err(|refusal| refusal.to_string())?;
    let found: Vec<SocketAddr> = match timeout(
        REACH_TIME,
        tokio::net::lookup_host((request.host.as_str(), request.port)),
    )
    .await
    {
        Ok(Ok(found)) => found.collect(),
        Ok(Err(_)) | Err(_) => Vec::new(),
    };
    rule.admit(&request.host, found)
        .map_err(|refusal| refusal.to_string())
}

async fn connect(addresses: &[SocketAddr]) -> std::io::Result<TcpStream> {
    let mut last = std::io::Error::other("no address to connect to");
    for address in addresses {
        match timeout(REACH_TIME, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(error)) => last = error,
            Err(_) => last = std::io::Error::from(std::io::ErrorKind::TimedOut),
        }
    }
    Err(last)
}

/// Answers the client with `status` and `message` as a plain text body, and closes.
async fn answer(client: &mut TcpStream, status: &str, message: &str) {
    let text = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{message}\n",
        message.len() + 1
    );
    let _ = client.write_all(text.as_bytes()).await;
    let _ = client.shutdown().await;
}

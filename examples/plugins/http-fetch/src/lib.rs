//! Fetches a URL through the host's HTTP function. The host sends the request only when the
//! URL's host is listed in the manifest's `[permissions] network`.

use extism_pdk::{FnResult, HttpRequest, Json, config, http, plugin_fn};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct FetchArgs {
    url: String,
}

#[derive(Serialize)]
struct Fetched {
    status: u16,
    body: String,
    sent_token: bool,
}

/// `fetch`: GET the URL, with the `FETCH_TOKEN` environment variable as a bearer token when
/// the host granted it.
#[plugin_fn]
pub fn fetch(Json(args): Json<FetchArgs>) -> FnResult<Json<Fetched>> {
    let mut request = HttpRequest::new(&args.url).with_method("GET");
    let token = config::get("FETCH_TOKEN")?;
    if let Some(token) = &token {
        request = request.with_header("Authorization", format!("Bearer {token}"));
    }
    let response = http::request::<()>(&request, None)?;
    let body = String::from_utf8_lossy(&response.body())
        .chars()
        .take(2_000)
        .collect();
    Ok(Json(Fetched {
        status: response.status_code(),
        body,
        sent_token: token.is_some(),
    }))
}

//! `GET /metrics` of `serve --http`: the library's metrics (calls, errors and latency per
//! tool; MCP sessions and tasks) in Prometheus's text format.

use std::time::Duration;

use aleph_tools::middleware::CALL_DURATION;
use anyhow::Context as _;
use axum::http::HeaderName;
use axum::http::header::CONTENT_TYPE;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Where Prometheus scrapes.
pub const PATH: &str = "/metrics";

/// The bounds of the call-duration histogram's buckets, in seconds: from a quick in-process
/// tool to a long browser or code run.
const BUCKETS: [f64; 14] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// How often the recorder drops old histogram samples.
const UPKEEP: Duration = Duration::from_secs(5);

/// Installs the Prometheus recorder for this process; the routes that serve what it holds.
pub fn install() -> anyhow::Result<axum::Router> {
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Full(CALL_DURATION.to_owned()), &BUCKETS)
        .context("the metrics' histogram buckets")?
        .install_recorder()
        .context("cannot install the metrics recorder")?;
    let upkeep = handle.clone();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(UPKEEP);
        loop {
            every.tick().await;
            upkeep.run_upkeep();
        }
    });
    Ok(axum::Router::new().route(
        PATH,
        axum::routing::get(move || std::future::ready(render(&handle))),
    ))
}

/// The page Prometheus reads, with its content type.
fn render(handle: &PrometheusHandle) -> ([(HeaderName, &'static str); 1], String) {
    (
        [(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        handle.render(),
    )
}

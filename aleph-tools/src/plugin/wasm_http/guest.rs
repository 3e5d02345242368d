//! The guest's side: the three functions of `extism:host/env` an instance is built with in
//! place of Extism's, reading the request from the guest's memory and writing the answer
//! back, as Extism's own do.

use std::collections::BTreeMap;
use std::sync::Arc;

use extism::{CurrentPlugin, PTR, PluginBuilder, UserData, Val, ValType};

use super::{Failure, GuestRequest, PluginHttp};
use crate::util::sync::lock;

/// Where Extism's kernel functions live; the guest imports its HTTP functions from here.
const NAMESPACE: &str = "extism:host/env";

/// The most body bytes when the manifest sets no limit: Extism's own default.
const DEFAULT_MAX_BYTES: u64 = 50 * 1024 * 1024;

/// One instance's HTTP state: the status and headers of its last response.
struct Exchange {
    http: Arc<PluginHttp>,
    status: u16,
    headers: Option<BTreeMap<String, String>>,
}

impl PluginHttp {
    /// `builder` with the three HTTP functions in place of Extism's, sharing one state.
    pub(in crate::plugin) fn link<'a>(
        self: &Arc<Self>,
        builder: PluginBuilder<'a>,
    ) -> PluginBuilder<'a> {
        let exchange = UserData::new(Exchange {
            http: Arc::clone(self),
            status: 0,
            headers: None,
        });
        builder
            .with_function_in_namespace(
                NAMESPACE,
                "http_request",
                [PTR, PTR],
                [PTR],
                exchange.clone(),
                http_request,
            )
            .with_function_in_namespace(
                NAMESPACE,
                "http_status_code",
                std::iter::empty(),
                [ValType::I32],
                exchange.clone(),
                http_status_code,
            )
            .with_function_in_namespace(
                NAMESPACE,
                "http_headers",
                std::iter::empty(),
                [PTR],
                exchange,
                http_headers,
            )
    }
}

/// A memory offset the guest passed as argument `index`.
fn offset(inputs: &[Val], index: usize) -> Result<u64, extism::Error> {
    inputs
        .get(index)
        .and_then(Val::i64)
        .and_then(|offset| u64::try_from(offset).ok())
        .ok_or_else(|| {
            extism::Error::msg(format!(
                "http_request: argument {index} is not a memory offset"
            ))
        })
}

/// `http_request(request, body) -> response body`: the request is JSON (`url`, `method`,
/// `headers`), the body an optional memory block; both are the host's to free.
#[allow(clippy::needless_pass_by_value)] // Extism hands the user data by value.
fn http_request(
    plugin: &mut CurrentPlugin,
    inputs: &[Val],
    outputs: &mut [Val],
    exchange: UserData<Exchange>,
) -> Result<(), extism::Error> {
    let exchange = exchange.get()?;
    let mut exchange = lock(&exchange);
    exchange.status = 0;
    exchange.headers = exchange.http.headers.then(BTreeMap::new);
    outputs[0] = Val::I64(0);
    let request_offset = offset(inputs, 0)?;
    let handle = plugin.memory_handle(request_offset).ok_or_else(|| {
        extism::Error::msg(format!(
            "invalid handle offset for http request: {request_offset}"
        ))
    })?;
    let request: GuestRequest = serde_json::from_slice(plugin.memory_bytes(handle)?)?;
    plugin.memory_free(handle)?;
    let body_offset = offset(inputs, 1)?;
    let body = if body_offset == 0 {
        None
    } else {
        let handle = plugin.memory_handle(body_offset).ok_or_else(|| {
            extism::Error::msg(format!(
                "invalid handle offset for http request body: {body_offset}"
            ))
        })?;
        let body = plugin.memory_bytes(handle)?.to_vec();
        plugin.memory_free(handle)?;
        Some(body)
    };
    let max_bytes = plugin
        .manifest()
        .memory
        .max_http_response_bytes
        .unwrap_or(DEFAULT_MAX_BYTES);
    let answer = exchange
        .http
        .send(request, body, plugin.time_remaining(), max_bytes)
        .map_err(Failure::into_error)?;
    exchange.status = answer.status;
    if exchange.http.headers {
        exchange.headers = Some(answer.headers);
    }
    let memory = plugin.memory_new(answer.body.as_slice())?;
    outputs[0] = Val::I64(i64::try_from(memory.offset())?);
    Ok(())
}

/// `http_status_code() -> status` of the last response (0 before any).
#[allow(clippy::needless_pass_by_value)] // Extism hands the user data by value.
fn http_status_code(
    _plugin: &mut CurrentPlugin,
    _inputs: &[Val],
    outputs: &mut [Val],
    exchange: UserData<Exchange>,
) -> Result<(), extism::Error> {
    let exchange = exchange.get()?;
    outputs[0] = Val::I32(i32::from(lock(&exchange).status));
    Ok(())
}

/// `http_headers() -> JSON object` of the last response's headers, or 0 when the plugin may
/// not read them.
#[allow(clippy::needless_pass_by_value)] // Extism hands the user data by value.
fn http_headers(
    plugin: &mut CurrentPlugin,
    _inputs: &[Val],
    outputs: &mut [Val],
    exchange: UserData<Exchange>,
) -> Result<(), extism::Error> {
    let exchange = exchange.get()?;
    let headers = lock(&exchange).headers.clone();
    match headers {
        Some(headers) => {
            plugin.memory_set_val(&mut outputs[0], serde_json::to_string(&headers)?)?;
        }
        None => outputs[0] = Val::I64(0),
    }
    Ok(())
}

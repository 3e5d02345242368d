//! Requests for a method the protocol defines whose params do not fit it. rmcp reads
//! those as custom requests, which would be answered "method not found"; they are
//! invalid params, with what does not fit.

// `resources/subscribe` and `logging/setLevel` are gone from MCP 2026-07-28; clients of
// the earlier revisions send them.
#![allow(deprecated)]

use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequest, CallToolRequestMethod, CancelTaskMethod, CancelTaskRequest, CompleteRequest,
    CompleteRequestMethod, ConstString, CustomRequest, ErrorCode, GetPromptRequest,
    GetPromptRequestMethod, GetTaskMethod, GetTaskRequest, ListPromptsRequest,
    ListPromptsRequestMethod, ListResourceTemplatesRequest, ListResourceTemplatesRequestMethod,
    ListResourcesRequest, ListResourcesRequestMethod, ListToolsRequest, ListToolsRequestMethod,
    ReadResourceRequest, ReadResourceRequestMethod, SetLevelRequest, SetLevelRequestMethod,
    SubscribeRequest, SubscribeRequestMethod, SubscriptionsListenRequest,
    SubscriptionsListenRequestMethod, UnsubscribeRequest, UnsubscribeRequestMethod,
    UpdateTaskMethod, UpdateTaskRequest,
};
use serde::de::DeserializeOwned;
use serde_json::json;

/// Says why a request is not of one method's type, if it is not.
type Misfit = fn(&CustomRequest) -> Option<String>;

/// The methods a client sends that a server serves, each with its request type.
const METHODS: &[(&str, Misfit)] = &[
    (CallToolRequestMethod::VALUE, misfit::<CallToolRequest>),
    (ListToolsRequestMethod::VALUE, misfit::<ListToolsRequest>),
    (GetPromptRequestMethod::VALUE, misfit::<GetPromptRequest>),
    (
        ListPromptsRequestMethod::VALUE,
        misfit::<ListPromptsRequest>,
    ),
    (
        ListResourcesRequestMethod::VALUE,
        misfit::<ListResourcesRequest>,
    ),
    (
        ListResourceTemplatesRequestMethod::VALUE,
        misfit::<ListResourceTemplatesRequest>,
    ),
    (
        ReadResourceRequestMethod::VALUE,
        misfit::<ReadResourceRequest>,
    ),
    (SubscribeRequestMethod::VALUE, misfit::<SubscribeRequest>),
    (
        UnsubscribeRequestMethod::VALUE,
        misfit::<UnsubscribeRequest>,
    ),
    (
        SubscriptionsListenRequestMethod::VALUE,
        misfit::<SubscriptionsListenRequest>,
    ),
    (SetLevelRequestMethod::VALUE, misfit::<SetLevelRequest>),
    (CompleteRequestMethod::VALUE, misfit::<CompleteRequest>),
    (GetTaskMethod::VALUE, misfit::<GetTaskRequest>),
    (UpdateTaskMethod::VALUE, misfit::<UpdateTaskRequest>),
    (CancelTaskMethod::VALUE, misfit::<CancelTaskRequest>),
];

/// The answer to a custom request: invalid params, saying what does not fit, when its
/// method is one the protocol defines (its params are then why rmcp could not read it as
/// that method); method not found otherwise.
pub(super) fn unread_request(request: &CustomRequest) -> ErrorData {
    let method = request.method.as_str();
    let why = METHODS
        .iter()
        .find(|(name, _)| *name == method)
        .and_then(|(_, misfit)| misfit(request));
    match why {
        Some(why) => ErrorData::invalid_params(
            format!("the params of `{method}` do not fit it: {why}"),
            None,
        ),
        None => ErrorData::new(ErrorCode::METHOD_NOT_FOUND, method.to_owned(), None),
    }
}

/// Why `request` is not a `T`, if it is not.
fn misfit<T: DeserializeOwned>(request: &CustomRequest) -> Option<String> {
    let whole = json!({ "method": request.method, "params": request.params });
    serde_json::from_value::<T>(whole)
        .err()
        .map(|err| err.to_string())
}

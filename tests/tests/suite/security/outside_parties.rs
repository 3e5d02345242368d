//! Every outside party is bounded: a model server (its `retry-after`, the size and shape of
//! its stream, where the API key goes), a wrapped MCP server (time to connect, list and
//! answer; size and depth of its answers; `list_changed` storms; how many tools it lists), and
//! a plugin's HTTP route (it never sees the client's credentials, and its bad answers are
//! not echoed). Each is tried for real: loopback servers, real processes, real plugins.

mod model_servers;
mod plugin_routes;
mod wrapped_servers;

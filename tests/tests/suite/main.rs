//! The end-to-end tests of aleph-tools through its public API, one module per capability.
//!
//! They share one test binary: each links wasmtime, rmcp and axum, and one binary links them
//! once instead of fifty times, which saves gigabytes of disk and minutes of linking. Run one
//! capability with `cargo test -p aleph-tools-tests --test suite mcp_tasks::`.
//!
//! Four tests keep binaries of their own, for what they do to the whole process:
//! `registry_duplicate` links two tools of one name, `server` serves every registered tool,
//! `tool_logs` installs the process's `tracing` subscriber, and `soak` counts the process's
//! memory and file descriptors.

mod admin;
mod agent_anthropic;
mod agent_gemini;
mod agent_openai_chat;
mod agent_openai_responses;
mod argument_paths;
mod argument_repair;
mod ask;
mod audit;
mod browser;
mod builtin_exec;
mod builtin_files;
mod builtin_skills;
mod builtin_web;
mod calls;
mod code_mode;
mod compress;
mod dialects;
mod filter;
mod guide_crate;
mod limits;
mod malformed_corpus;
mod mcp_ask;
mod mcp_auth;
mod mcp_conformance;
mod mcp_http_calls;
mod mcp_http_sleep;
mod mcp_polling;
mod mcp_prompts;
mod mcp_replica_streams;
mod mcp_replicas;
mod mcp_serve;
mod mcp_subscriptions;
mod mcp_tasks;
mod mcp_wrap;
mod middleware;
mod node_hostile;
mod node_plugins;
mod operations;
mod paths;
mod pdf;
mod plain_args;
mod plugin_adapters;
mod plugin_hooks;
mod plugin_hostile;
mod plugin_install;
mod plugin_manifest;
mod plugin_messages;
mod plugin_policy;
mod plugin_prompts;
mod plugin_reload;
mod plugin_routes;
mod plugin_services;
mod plugins;
mod progress;
mod providers;
mod repair;
mod schemas;
mod security;
mod state;
mod table_changes;
mod tool_search;
mod tool_search_quality;
mod validation;

//! A plugin's `[[hooks]]` as the server's hooks: its handlers see tool calls like any
//! interceptor, resolver or observer added in Rust, by priority, then in manifest order.
//!
//! | event | interceptor | resolver | observer |
//! | --- | --- | --- | --- |
//! | `before_tool_call` | may change the arguments or block the call | may answer in the tool's place | told, fire and forget |
//! | `after_tool_call` | — | — | told of every outcome |
//! | `on_error` | — | — | told of every failure |
//!
//! A handler gets a JSON context (the book's "Hooks" section documents it) and answers JSON.
//! `on_message` and `on_response` hooks are the manager's own (see `messages`).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::code::{Code, Failure, Purpose};
use super::error::PluginError;
use super::manifest::{HookEvent, HookKind, LoadedManifest};
use super::messages::MessageHook;
use crate::error::ToolError;
use crate::middleware::{
    Interceptor, Layer, ObservedCall, Observer, ObserverError, Resolver, ToolCall,
};
use crate::result::ToolOutput;

/// The plugin's hooks: those to add to a server, and its message hooks. A combination no
/// host event supports fails the load, naming the hook.
pub(super) fn plugin_hooks(
    loaded: &LoadedManifest,
    code: &Code,
) -> Result<(Vec<Layer>, Vec<Arc<MessageHook>>), PluginError> {
    let manifest = &loaded.manifest;
    let mut hooks = Vec::with_capacity(manifest.hooks.len());
    let mut messages = Vec::new();
    for (i, section) in manifest.hooks.iter().enumerate() {
        let target = Arc::new(Target {
            plugin: manifest.plugin.id.clone(),
            handler: section.handler.clone(),
            event: section.event,
            code: code.clone(),
        });
        let priority = section.priority;
        let hook = match (section.event, section.kind) {
            (HookEvent::BeforeToolCall, HookKind::Interceptor) => {
                Layer::interceptor(priority, Intercept(target))
            }
            (HookEvent::BeforeToolCall, HookKind::Resolver) => {
                Layer::resolver(priority, Resolve(target))
            }
            (HookEvent::BeforeToolCall, HookKind::Observer) => {
                Layer::interceptor(priority, Notify(target))
            }
            (HookEvent::AfterToolCall | HookEvent::OnError, HookKind::Observer) => {
                Layer::observer(priority, Observe(target))
            }
            (HookEvent::OnResponse, HookKind::Resolver) => {
                return Err(PluginError::Load {
                    plugin: manifest.plugin.id.clone(),
                    message: format!(
                        "`hooks[{i}]`: a `resolver` cannot take part in `on_response`, which has nothing to resolve; make it an `interceptor` or an `observer`"
                    ),
                });
            }
            (HookEvent::OnMessage | HookEvent::OnResponse, kind) => {
                messages.push(Arc::new(MessageHook {
                    event: section.event,
                    kind,
                    priority,
                    plugin: manifest.plugin.id.clone(),
                    handler: section.handler.clone(),
                    code: code.clone(),
                }));
                continue;
            }
            (event, kind) => {
                return Err(PluginError::Load {
                    plugin: manifest.plugin.id.clone(),
                    message: format!(
                        "`hooks[{i}]`: a `{}` hook cannot take part in `{}`, which happens after the call; make it an `observer`",
                        name(&kind),
                        name(&event)
                    ),
                });
            }
        };
        hooks.push(hook);
    }
    Ok((hooks, messages))
}

fn name(value: &impl serde::Serialize) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// One hook handler of one plugin.
struct Target {
    plugin: String,
    handler: String,
    event: HookEvent,
    code: Code,
}

impl Target {
    async fn run(&self, context: &Value) -> Result<Value, String> {
        let event = name(&self.event);
        self.code
            .invoke(&self.handler, Purpose::Hook(&event), context)
            .await
    }

    fn describe(&self) -> String {
        format!("the `{}` hook of plugin `{}`", self.handler, self.plugin)
    }
}

/// What a hook is told of a call about to run.
///
/// `toolName`, `args` (and after the call `duration`) repeat `tool`, `arguments` and
/// `duration_ms` under their short names, so a hook written to those works as written.
fn before(call: &ToolCall) -> Value {
    json!({
        "event": "before_tool_call",
        "tool": call.name(),
        "toolName": call.name(),
        "call_id": call.context().call_id(),
        "caller": call.context().caller(),
        "arguments": call.arguments(),
        "args": call.arguments(),
    })
}

/// What a hook is told of a finished call.
fn after(event: HookEvent, call: &ObservedCall) -> Value {
    let (result, error) = match &call.outcome {
        Ok(output) => (
            output
                .data
                .clone()
                .unwrap_or_else(|| Value::String(output.model_text().into_owned())),
            Value::Null,
        ),
        Err(error) => (Value::Null, Value::String(error.to_string())),
    };
    let millis = u64::try_from(call.duration.as_millis()).unwrap_or(u64::MAX);
    json!({
        "event": name(&event),
        "tool": call.tool,
        "toolName": call.tool,
        "call_id": call.call_id,
        "caller": call.caller,
        "arguments": call.arguments,
        "args": call.arguments,
        "success": call.outcome.is_ok(),
        "result": result,
        "error": error,
        "duration_ms": millis,
        "duration": millis,
    })
}

/// An interceptor of calls about to run. Its handler answers in one of these ways:
///
/// - nothing (`null`): the call runs as it is;
/// - the context it was given, changed or not: the call runs with the context's
///   `arguments`;
/// - `{"arguments": {…}}`: the call runs with these arguments;
/// - `{"block": "why"}`, or an error it raises (a JavaScript `throw`): the call is refused
///   with that reason.
///
/// A handler that breaks (a crash, a timeout, an answer of another shape) refuses the call
/// too: an interceptor is a guard, and a guard that fails keeps the door shut.
struct Intercept(Arc<Target>);

/// The keys of the context an interceptor is given, by which a returned context is known.
const CONTEXT_KEYS: [&str; 5] = ["event", "tool", "toolName", "call_id", "caller"];

impl Interceptor for Intercept {
    async fn intercept(&self, mut call: ToolCall) -> Result<ToolCall, ToolError> {
        let target = &self.0;
        let event = name(&target.event);
        let context = before(&call);
        let answer = match target
            .code
            .invoke_handler(&target.handler, Purpose::Hook(&event), &context)
            .await
        {
            Ok(answer) => answer,
            Err(Failure::Raised(reason)) => return Err(blocked(&call, target, &reason)),
            Err(Failure::Broke(error)) => {
                return Err(ToolError::Execution(format!(
                    "{} failed, so the call was not run: {error}",
                    target.describe()
                )));
            }
        };
        let bad = |what: &str| {
            ToolError::Execution(format!(
                "{} answered {what}; an interceptor answers nothing (`null`), the context it was \
                 given (changed or not), `{{\"arguments\": {{…}}}}` or `{{\"block\": \"why\"}}`, \
                 or throws to block the call",
                target.describe()
            ))
        };
        let answer: Map<String, Value> = match answer {
            Value::Null => return Ok(call),
            Value::Object(answer) => answer,
            other => return Err(bad(&format!("`{other}`"))),
        };
        let is_context = CONTEXT_KEYS.iter().any(|key| answer.contains_key(*key));
        let mut arguments = answer.get("arguments");
        if is_context {
            for key in ["tool", "toolName"] {
                if let Some(tool) = answer.get(key)
                    && tool.as_str() != Some(call.name())
                {
                    return Err(bad(&format!(
                        "a context for the tool {tool} (an interceptor cannot change which tool \
                         runs; the call is to `{}`)",
                        call.name()
                    )));
                }
            }
            // The arguments are under two names; the one the hook changed counts
            // (`arguments` when both were).
            let changed = |key: &str| answer.get(key).filter(|new| Some(*new) != context.get(key));
            arguments = changed("arguments")
                .or_else(|| changed("args"))
                .or(arguments);
        } else if let Some(key) = answer.keys().find(|k| *k != "arguments" && *k != "block") {
            return Err(bad(&format!("an object with `{key}`")));
        }
        if let Some(reason) = answer.get("block").filter(|reason| !reason.is_null()) {
            let reason = reason
                .as_str()
                .map_or_else(|| reason.to_string(), str::to_owned);
            return Err(blocked(&call, target, &reason));
        }
        match arguments {
            Some(Value::Object(arguments)) => {
                *call.arguments_mut() = Value::Object(arguments.clone());
                Ok(call)
            }
            Some(other) => Err(bad(&format!(
                "`arguments` that are not an object: `{other}`"
            ))),
            None => Ok(call),
        }
    }
}

/// The refusal of a call an interceptor blocked, with its reason.
fn blocked(call: &ToolCall, target: &Target, reason: &str) -> ToolError {
    ToolError::permission_denied(
        call.name(),
        format!("plugin `{}` blocked it: {reason}", target.plugin),
    )
}

/// An observer of calls about to run: told on its own task, changes nothing.
struct Notify(Arc<Target>);

impl Interceptor for Notify {
    async fn intercept(&self, call: ToolCall) -> Result<ToolCall, ToolError> {
        let target = Arc::clone(&self.0);
        let context = before(&call);
        tokio::spawn(async move {
            if let Err(error) = target.run(&context).await {
                tracing::warn!(plugin = %target.plugin, "{} failed: {error}", target.describe());
            }
        });
        Ok(call)
    }
}

struct Resolve(Arc<Target>);

impl Resolver for Resolve {
    async fn resolve(&self, call: &ToolCall) -> Option<ToolOutput> {
        let target = Arc::clone(&self.0);
        let context = before(call);
        match target.run(&context).await {
            Ok(Value::Null) => None,
            Ok(answer) => Some(ToolOutput::json(answer)),
            Err(error) => {
                tracing::warn!(
                    plugin = %target.plugin,
                    "{} failed, so it did not answer: {error}",
                    target.describe()
                );
                None
            }
        }
    }
}

struct Observe(Arc<Target>);

impl Observer for Observe {
    async fn observe(&self, call: Arc<ObservedCall>) -> Result<(), ObserverError> {
        let target = &self.0;
        if target.event == HookEvent::OnError && call.outcome.is_ok() {
            return Ok(());
        }
        target
            .run(&after(target.event, &call))
            .await
            .map(drop)
            .map_err(|error| format!("{} failed: {error}", target.describe()).into())
    }
}

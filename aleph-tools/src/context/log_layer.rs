//! [`ToolLogLayer`]: the `tracing` events a tool emits while it runs, sent as its call's log
//! messages (feature `tracing-layer`).

use std::fmt;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, Layer};

use super::log::{LogLevel, RUNNING_CALL};

/// A [`tracing_subscriber`] layer that hands the `tracing` events a tool emits while it runs
/// to whoever listens to the call's progress, as [`ProgressEvent::Log`](super::ProgressEvent::Log)
/// messages: over MCP, the client that made the call hears them as `notifications/message`
/// at the level it asked for; in process, a
/// [`ToolProgressHandler`](crate::middleware::ToolProgressHandler) hears them.
///
/// Add it to the application's subscriber beside its own output:
///
/// ```
/// use aleph_tools::ToolLogLayer;
/// use tracing_subscriber::layer::SubscriberExt as _;
///
/// let subscriber = tracing_subscriber::registry().with(ToolLogLayer::new());
/// tracing::subscriber::set_global_default(subscriber).expect("no subscriber set before");
/// ```
///
/// Events count as the tool's when the tool's own task emits them while the server polls the
/// tool's future, or a sync tool's body emits them on the blocking pool; work the tool
/// spawns onto other tasks or threads logs only to the subscriber. The
/// server's own events (target `aleph_tools`) are never forwarded. A `TRACE` or `DEBUG`
/// event becomes [`LogLevel::Debug`]; the message is the event's `message` alone, or an
/// object of all its fields when it has others; the logger is the event's target.
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolLogLayer {
    _private: (),
}

impl ToolLogLayer {
    /// The layer.
    pub fn new() -> Self {
        Self::default()
    }
}

impl<S: tracing::Subscriber> Layer<S> for ToolLogLayer {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let metadata = event.metadata();
        let target = metadata.target();
        if target == "aleph_tools" || target.starts_with("aleph_tools::") {
            return;
        }
        let _ = RUNNING_CALL.try_with(|progress| {
            if !progress.is_listening() {
                return;
            }
            let mut fields = Fields::default();
            event.record(&mut fields);
            progress.log_from(
                LogLevel::from(*metadata.level()),
                Some(target),
                fields.into_data(),
            );
        });
    }
}

/// An event's fields as JSON.
#[derive(Default)]
struct Fields(Map<String, Value>);

impl Fields {
    /// The message alone when it is the only field, else every field as an object.
    fn into_data(mut self) -> Value {
        if self.0.len() == 1
            && let Some(message) = self.0.remove("message")
        {
            return message;
        }
        Value::Object(self.0)
    }
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().to_owned(), Value::String(format!("{value:?}")));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0
            .insert(field.name().to_owned(), Value::String(value.to_owned()));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), value.into());
    }
}

//! A spinner on standard error while a long step runs (loading plugins, which compiles their
//! WebAssembly and starts their processes; installing one; connecting to MCP servers), drawn
//! only when standard error is a terminal: piped or logged output never holds one.

use std::borrow::Cow;
use std::io::IsTerminal as _;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Spins with its message and the time taken until dropped, then leaves no trace.
pub struct Spinner(Option<ProgressBar>);

impl Spinner {
    /// Starts spinning with `message`, when standard error is a terminal.
    pub fn start(message: impl Into<Cow<'static, str>>) -> Self {
        if !std::io::stderr().is_terminal() {
            return Self(None);
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                .expect("the template is valid"),
        );
        bar.set_message(message);
        bar.tick();
        bar.enable_steady_tick(Duration::from_millis(100));
        Self(Some(bar))
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

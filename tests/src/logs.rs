//! `tracing` output captured in memory, for tests that check what the library logs.

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};

use tracing::subscriber::DefaultGuard;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::util::SubscriberInitExt;

/// What this thread's `tracing` events wrote while the [`DefaultGuard`] that
/// [`capture`](Self::capture) gave lives, as plain text.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// Captures the events of this thread (the one a `#[tokio::test]` runs on) until the
    /// guard drops.
    #[must_use = "events are captured only while the guard lives"]
    pub fn capture() -> (Self, DefaultGuard) {
        let captured = Self::default();
        let guard = tracing_subscriber::fmt()
            .with_writer(captured.clone())
            .with_ansi(false)
            .finish()
            .set_default();
        (captured, guard)
    }

    /// Everything written so far.
    pub fn text(&self) -> String {
        let bytes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut bytes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Self;

    fn make_writer(&'a self) -> Self {
        self.clone()
    }
}

//! [`InFlight`]: the tool calls and answers a server runs now, counted in and out by the
//! [`Running`] guard each holds, for the streamable HTTP server's drain and `tasks` to wait
//! on.

#![cfg_attr(
    not(feature = "mcp-http"),
    allow(
        dead_code,
        reason = "the drain that reads more than the calls running is streamable HTTP's"
    )
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The calls a server runs now (tool calls, tasks included) and the answers it streams, and
/// whether it drains.
#[derive(Debug, Default)]
pub(in crate::mcp) struct InFlight {
    /// Tool calls and answer streams open now: the drain waits until none is.
    busy: AtomicUsize,
    /// Of those, the tool calls.
    calls: AtomicUsize,
    draining: AtomicBool,
    /// Woken each time the last one ends.
    idle: tokio::sync::Notify,
}

/// One running call or open answer stream; dropping it (however it ends) counts it out.
#[must_use]
pub(in crate::mcp) struct Running {
    in_flight: Arc<InFlight>,
    call: bool,
}

impl InFlight {
    /// Counts a tool call in until the guard is dropped.
    pub(in crate::mcp) fn enter(self: &Arc<Self>) -> Running {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.busy.fetch_add(1, Ordering::SeqCst);
        Running {
            in_flight: Arc::clone(self),
            call: true,
        }
    }

    /// Counts an answer stream in until the guard is dropped: a call's answer is sent after
    /// the call ends, and the drain waits for it to reach the client.
    pub(in crate::mcp) fn answering(self: &Arc<Self>) -> Running {
        self.busy.fetch_add(1, Ordering::SeqCst);
        Running {
            in_flight: Arc::clone(self),
            call: false,
        }
    }

    /// The tool calls running now.
    pub(in crate::mcp) fn running(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Whether a drain has begun. A request counts itself in before it asks, and the drain
    /// marks itself before it counts: one of the two sees the other.
    pub(in crate::mcp) fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    pub(in crate::mcp) fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Waits until no call runs and no answer is on its way.
    pub(super) async fn settled(&self) {
        loop {
            let idle = self.idle.notified();
            if self.busy.load(Ordering::SeqCst) == 0 {
                return;
            }
            idle.await;
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.call {
            self.in_flight.calls.fetch_sub(1, Ordering::SeqCst);
        }
        if self.in_flight.busy.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.in_flight.idle.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::InFlight;

    #[tokio::test]
    async fn settled_waits_for_the_last_running_call_and_answer() {
        let in_flight = Arc::new(InFlight::default());
        in_flight.settled().await;
        let first = in_flight.enter();
        let second = in_flight.answering();
        assert_eq!(in_flight.running(), 1, "an answer is not a call");
        let waiter = tokio::spawn({
            let in_flight = Arc::clone(&in_flight);
            async move { in_flight.settled().await }
        });
        drop(first);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "one call still runs");
        drop(second);
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("settled once none runs")
            .unwrap();
    }
}

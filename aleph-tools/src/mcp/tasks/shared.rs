//! A task's life in a [`TaskStore`] other processes share: the running process keeps the
//! store in step with it; the others read it, and find a task whose process stopped.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use rmcp::ErrorData;
use rmcp::model::{DetailedTask, InputResponses, Task, TaskPayload};
use tokio_util::sync::CancellationToken;

use super::{Entry, error_object, outstanding, timestamp};
use crate::mcp::store::{LEASE, StoreError, TaskRecord, TaskStore, epoch_millis};
use crate::util::sync::lock;

/// The shortest and longest wait between two looks at the store by a running task.
pub(super) const SYNC_MIN: Duration = Duration::from_millis(100);
pub(super) const SYNC_MAX: Duration = Duration::from_secs(1);

/// Keeps the store in step with a task this process runs, until `ended`: its state written
/// when it changes and its lease renewed, and the cancellations and answers other processes
/// left for it handed over.
pub(super) async fn sync(
    store: Arc<dyn TaskStore>,
    entry: Arc<Entry>,
    every: Duration,
    ended: CancellationToken,
) {
    let mut written = u64::MAX;
    let mut renewed = Instant::now();
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = ended.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let changes = entry.changes.load(Ordering::Relaxed);
        if changes != written || renewed.elapsed() >= LEASE / 3 {
            match store.save(&entry.record()).await {
                Ok(true) => {
                    written = changes;
                    renewed = Instant::now();
                }
                Ok(false) => {
                    // Its end was written elsewhere (a replica found its lease lapsed), or
                    // it expired: the tool stops.
                    entry.cancel.cancel();
                    return;
                }
                Err(error) => {
                    tracing::warn!(task = %entry.id, %error, "the task could not be stored");
                }
            }
        }
        match store.signals(&entry.id).await {
            Ok(signals) => {
                if signals.cancelled {
                    entry.cancel.cancel();
                }
                for input in signals.inputs {
                    if let Ok(responses) = serde_json::from_value::<InputResponses>(input) {
                        let outstanding = outstanding(&lock(&entry.state).payload, responses);
                        if !outstanding.is_empty() {
                            let _ = entry.answers.send(outstanding);
                        }
                    }
                }
            }
            Err(error) => {
                tracing::warn!(task = %entry.id, %error, "the task's signals could not be read");
            }
        }
    }
}

/// Writes a task's end, trying again for a few seconds while the store cannot be reached.
pub(super) async fn save_end(store: &dyn TaskStore, entry: &Entry) {
    for wait in [100, 500, 2000, 0] {
        match store.save(&entry.record()).await {
            Ok(_) => return,
            Err(error) if wait == 0 => {
                tracing::warn!(task = %entry.id, %error, "the task's end could not be stored");
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(wait)).await,
        }
    }
}

/// A stored task's payload (failed when it cannot be read).
pub(super) fn stored_payload(record: &TaskRecord) -> TaskPayload {
    serde_json::from_value::<DetailedTask>(record.payload.clone()).map_or_else(
        |_| TaskPayload::Failed {
            error: error_object(&ErrorData::internal_error(
                "the task's stored state cannot be read",
                None,
            )),
        },
        |detailed| detailed.payload,
    )
}

/// Whether a stored task still runs by its record, but its process has not vouched for it
/// within its lease: the process stopped.
pub(super) fn lapsed(record: &TaskRecord) -> bool {
    let running = matches!(
        stored_payload(record),
        TaskPayload::Working | TaskPayload::InputRequired { .. }
    );
    running && record.lease_until_ms < epoch_millis(SystemTime::now())
}

/// `record`, failed because its process stopped.
pub(super) fn failed_record(record: &TaskRecord) -> TaskRecord {
    let payload = TaskPayload::Failed {
        error: error_object(&ErrorData::internal_error(
            "the server process running this task stopped before the task ended; start it again",
            None,
        )),
    };
    let now = SystemTime::now();
    let task = Task::new(
        record.id.clone(),
        payload.status(),
        timestamp(from_millis(record.created_ms)),
        timestamp(now),
    );
    let mut failed = record.clone();
    failed.payload = serde_json::to_value(DetailedTask::new(task, payload)).unwrap_or_default();
    failed.updated_ms = epoch_millis(now);
    failed
}

/// A store's failure as a client hears it; the detail goes to the log.
pub(super) fn store_failed(error: &StoreError) -> ErrorData {
    tracing::warn!(%error, "the task store failed");
    match error {
        StoreError::Full { .. } => ErrorData::internal_error(error.to_string(), None),
        _ => ErrorData::internal_error(
            "the task store cannot be reached now; try again in a moment",
            None,
        ),
    }
}

/// Whether `id` could be a task id this server made (a UUID's characters, not too long).
pub(super) fn plausible_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// The most JSON a `tasks/update` hands through the store.
pub(super) const MAX_STORED_INPUT: usize = 256 * 1024;

pub(super) fn from_millis(ms: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
}

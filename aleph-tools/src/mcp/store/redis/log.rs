//! The event logs of request streams in Redis.
//!
//! A stream is a sorted set `PREFIXevents:SESSION:STREAM` of its events, each scored by its
//! number and stored as `NUMBER EVENT` (so that no two are alike), beside a hash
//! `PREFIXevents-state:SESSION:STREAM` of where it is (`ended`, `lease`, `request`). Both
//! expire together.

use std::time::Duration;

use redis::Script;

use super::{RedisStore, millis, unavailable};
use crate::mcp::store::{EventLog, LogRead, LoggedEvent, StoreError, StreamState};
use crate::tool::BoxFuture;

/// Appends events and records the state of a stream that has not ended, keeping its newest
/// 4096 events, then renews both keys. `ARGV`: the ttl, `ended`, the lease, the request id,
/// then a number and an event for each event.
const APPEND: &str = r"
if redis.call('HGET', KEYS[2], 'ended') == '1' then return 0 end
for i = 5, #ARGV, 2 do
  redis.call('ZADD', KEYS[1], ARGV[i], ARGV[i] .. ' ' .. ARGV[i + 1])
end
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -4097)
redis.call('HSET', KEYS[2], 'ended', ARGV[2], 'lease', ARGV[3], 'request', ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
";

/// A stream's state and its events from a number on; nil when it is not kept.
const READ: &str = r"
local state = redis.call('HMGET', KEYS[2], 'ended', 'lease', 'request')
if not state[2] then return false end
local events = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], '+inf', 'LIMIT', 0, ARGV[2])
return {state[1], state[2], state[3], events}
";

/// Ends a stream whose lease ran out, with one last event numbered after its last (and
/// `ARGV[3]` at least).
const END_LAPSED: &str = r"
local state = redis.call('HMGET', KEYS[2], 'ended', 'lease')
if not state[2] or state[1] == '1' or tonumber(state[2]) >= tonumber(ARGV[1]) then return 0 end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
local index = tonumber(ARGV[3])
if last[2] and tonumber(last[2]) + 1 > index then index = tonumber(last[2]) + 1 end
redis.call('ZADD', KEYS[1], index, string.format('%d', index) .. ' ' .. ARGV[2])
redis.call('HSET', KEYS[2], 'ended', '1')
local left = redis.call('PTTL', KEYS[2])
if left > 0 then redis.call('PEXPIRE', KEYS[1], left) end
return 1
";

pub(super) struct Scripts {
    append: Script,
    read: Script,
    end_lapsed: Script,
}

impl Scripts {
    pub(super) fn new() -> Self {
        Self {
            append: Script::new(APPEND),
            read: Script::new(READ),
            end_lapsed: Script::new(END_LAPSED),
        }
    }
}

impl RedisStore {
    fn events_key(&self, session: &str, stream: &str) -> String {
        format!("{}events:{session}:{stream}", self.prefix)
    }

    fn state_key(&self, session: &str, stream: &str) -> String {
        format!("{}events-state:{session}:{stream}", self.prefix)
    }
}

/// What [`READ`] answers: `ended`, `lease`, `request` and the events.
type Found = (Option<String>, String, Option<String>, Vec<String>);

/// `NUMBER EVENT` read back; `None` when another program wrote the key.
fn event_of(member: &str) -> Option<LoggedEvent> {
    let (index, event) = member.split_once(' ')?;
    Some(LoggedEvent::new(index.parse().ok()?, event))
}

impl EventLog for RedisStore {
    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        events: &'a [LoggedEvent],
        state: &'a StreamState,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let mut invocation = self.scripts.log.append.prepare_invoke();
            invocation
                .key(self.events_key(session, stream))
                .key(self.state_key(session, stream))
                .arg(millis(ttl))
                .arg(if state.ended { "1" } else { "" })
                .arg(state.lease_until_ms)
                .arg(state.request_id.to_string());
            for event in events {
                invocation.arg(event.index).arg(&event.event);
            }
            let mut connection = self.connection.clone();
            let kept: i64 = invocation
                .invoke_async(&mut connection)
                .await
                .map_err(|e| unavailable(&e))?;
            Ok(kept == 1)
        })
    }

    fn read<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        from: u64,
        most: usize,
    ) -> BoxFuture<'a, Result<Option<LogRead>, StoreError>> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            let found: Option<Found> = self
                .scripts
                .log
                .read
                .key(self.events_key(session, stream))
                .key(self.state_key(session, stream))
                .arg(from)
                .arg(most)
                .invoke_async(&mut connection)
                .await
                .map_err(|e| unavailable(&e))?;
            Ok(found.map(|(ended, lease, request, events)| LogRead {
                events: events
                    .iter()
                    .filter_map(|member| event_of(member))
                    .collect(),
                state: StreamState {
                    ended: ended.as_deref() == Some("1"),
                    lease_until_ms: lease.parse().unwrap_or(0),
                    request_id: request
                        .and_then(|text| serde_json::from_str(&text).ok())
                        .unwrap_or_default(),
                },
            }))
        })
    }

    fn end_lapsed<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        event: &'a str,
        now_ms: u64,
        from: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            let ended: i64 = self
                .scripts
                .log
                .end_lapsed
                .key(self.events_key(session, stream))
                .key(self.state_key(session, stream))
                .arg(now_ms)
                .arg(event)
                .arg(from)
                .invoke_async(&mut connection)
                .await
                .map_err(|e| unavailable(&e))?;
            Ok(ended == 1)
        })
    }
}

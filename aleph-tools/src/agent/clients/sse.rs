//! Server-sent events, as the model APIs stream them: lines of `field: value`, an event
//! ending at a blank line. Bytes arrive in any pieces (a line, even a character, may be cut
//! between two), so whole lines are taken from a byte buffer before they are read as text.
//!
//! Reading is linear and bounded: each byte is looked at once (a piece is scanned for line
//! ends from where the last scan stopped, never from the start of the line again), one line
//! or one event may hold at most [`Limits::event`] bytes, and a whole answer at most
//! [`Limits::response`].

use crate::agent::ModelError;
use crate::provider::Provider;

use super::http::describe;
use super::stream_error;

/// How much of a model server's answer is read before it is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// The most one line, or one event's `data`, may hold.
    pub(crate) event: usize,
    /// The most a whole answer may hold, streamed or not.
    pub(crate) response: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            event: 16 << 20,
            response: 64 << 20,
        }
    }
}

impl Limits {
    /// The error for an event or a line over [`event`](Self::event).
    pub(crate) fn event_error(self, provider: Provider) -> ModelError {
        stream_error(
            provider,
            format!(
                "sent an event longer than {}, the most one event may hold \
                 (`max_event_bytes` raises the limit)",
                bytes(self.event)
            ),
        )
    }

    /// The error for an answer over [`response`](Self::response).
    pub(crate) fn response_error(self, provider: Provider) -> ModelError {
        stream_error(
            provider,
            format!(
                "sent more than {}, the most one answer may hold \
                 (`max_response_bytes` raises the limit)",
                bytes(self.response)
            ),
        )
    }
}

/// `n` bytes, with the binary unit it is a whole number of when there is one.
pub(crate) fn bytes(n: usize) -> String {
    match n {
        n if n >= 1 << 20 && n.is_multiple_of(1 << 20) => format!("{n} bytes ({} MiB)", n >> 20),
        n if n >= 1 << 10 && n.is_multiple_of(1 << 10) => format!("{n} bytes ({} KiB)", n >> 10),
        n => format!("{n} bytes"),
    }
}

/// Reads the events of a streamed answer, passing each to `on_event` until it says the
/// answer is complete (`Ok(true)`). `Ok(false)`: the stream ended first.
pub(crate) async fn read_events(
    mut response: reqwest::Response,
    url: &str,
    provider: Provider,
    limits: Limits,
    mut on_event: impl FnMut(SseEvent) -> Result<bool, ModelError>,
) -> Result<bool, ModelError> {
    let mut reader = SseReader::new(limits.event);
    let mut read = 0usize;
    loop {
        let chunk = response.chunk().await.map_err(|e| ModelError::Connection {
            url: url.to_owned(),
            message: describe(&e),
        })?;
        let events = match &chunk {
            Some(bytes) => {
                read = read.saturating_add(bytes.len());
                if read > limits.response {
                    return Err(limits.response_error(provider));
                }
                reader
                    .feed(bytes)
                    .map_err(|TooLong| limits.event_error(provider))?
            }
            None => reader.finish().into_iter().collect(),
        };
        for event in events {
            if on_event(event)? {
                return Ok(true);
            }
        }
        if chunk.is_none() {
            return Ok(false);
        }
    }
}

/// One event: its `event:` name (empty when it had none) and its `data:` lines joined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub(crate) event: String,
    pub(crate) data: String,
}

/// A line, or an event's data, over the reader's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooLong;

/// Reads events out of a byte stream, piece by piece.
#[derive(Debug)]
pub(crate) struct SseReader {
    /// The start of a line whose end has not come yet (no line end in it).
    pending: Vec<u8>,
    event: String,
    /// The event's `data:` lines so far, joined with `\n`.
    data: String,
    has_data: bool,
    max: usize,
}

impl SseReader {
    /// A reader that refuses a line, or an event's data, over `max` bytes.
    pub(crate) fn new(max: usize) -> Self {
        Self {
            pending: Vec::new(),
            event: String::new(),
            data: String::new(),
            has_data: false,
            max,
        }
    }

    /// Takes the next piece of the stream; returns the events it completed.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, TooLong> {
        let mut events = Vec::new();
        let mut rest = bytes;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            let (piece, after) = rest.split_at(end);
            rest = &after[1..];
            let event = if self.pending.is_empty() {
                if piece.len() > self.max {
                    return Err(TooLong);
                }
                self.line(piece)?
            } else {
                if self.pending.len() + piece.len() > self.max {
                    return Err(TooLong);
                }
                let mut line = std::mem::take(&mut self.pending);
                line.extend_from_slice(piece);
                let event = self.line(&line);
                // Keep the buffer's room for the next long line.
                line.clear();
                self.pending = line;
                event?
            };
            events.extend(event);
        }
        if self.pending.len() + rest.len() > self.max {
            return Err(TooLong);
        }
        self.pending.extend_from_slice(rest);
        Ok(events)
    }

    /// The event the stream's end completes, if it ended inside one.
    pub(crate) fn finish(&mut self) -> Option<SseEvent> {
        let rest = std::mem::take(&mut self.pending);
        if !rest.is_empty() {
            // Within the limit: `feed` refused anything longer.
            let _ = self.line(&rest);
        }
        self.dispatch()
    }

    fn line(&mut self, line: &[u8]) -> Result<Option<SseEvent>, TooLong> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        if line.starts_with(b":") {
            return Ok(None); // a comment: keep-alive
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => (&line[..colon], &line[colon + 1..]),
            None => (line, &[][..]),
        };
        let value = value.strip_prefix(b" ").unwrap_or(value);
        match field {
            b"data" => {
                let joined = self.data.len() + usize::from(self.has_data) + value.len();
                if joined > self.max {
                    return Err(TooLong);
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
            }
            b"event" => self.event = String::from_utf8_lossy(value).into_owned(),
            _ => {}
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = std::mem::take(&mut self.event);
        if !std::mem::take(&mut self.has_data) {
            return None;
        }
        let data = std::mem::take(&mut self.data);
        Some(SseEvent { event, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_in_pieces(stream: &[u8], piece: usize, max: usize) -> Result<Vec<SseEvent>, TooLong> {
        let mut reader = SseReader::new(max);
        let mut events = Vec::new();
        for chunk in stream.chunks(piece) {
            events.extend(reader.feed(chunk)?);
        }
        events.extend(reader.finish());
        Ok(events)
    }

    #[test]
    fn events_survive_any_cut() {
        let stream = "event: message_start\r\ndata: {\"t\":\"é😀\"}\r\n\r\n: ping\n\ndata: a\ndata: b\n\ndata:\n\ndata:[DONE]".as_bytes();
        let expected = vec![
            SseEvent {
                event: "message_start".into(),
                data: "{\"t\":\"é😀\"}".into(),
            },
            SseEvent {
                event: String::new(),
                data: "a\nb".into(),
            },
            SseEvent {
                event: String::new(),
                data: String::new(),
            },
            SseEvent {
                event: String::new(),
                data: "[DONE]".into(),
            },
        ];
        for piece in 1..=stream.len() {
            assert_eq!(
                read_in_pieces(stream, piece, 1 << 10),
                Ok(expected.clone()),
                "pieces of {piece}"
            );
        }
    }

    #[test]
    fn a_line_or_an_event_over_the_limit_is_refused_however_it_is_cut() {
        let line = format!("data: {}\n\n", "x".repeat(100));
        for piece in [1, 7, 64, line.len()] {
            assert_eq!(
                read_in_pieces(line.as_bytes(), piece, 106),
                Ok(vec![SseEvent {
                    event: String::new(),
                    data: "x".repeat(100),
                }]),
                "pieces of {piece}"
            );
            assert_eq!(
                read_in_pieces(line.as_bytes(), piece, 105),
                Err(TooLong),
                "pieces of {piece}"
            );
        }
        // Many short data lines add up to one event over the limit.
        let many = "data: abcdefghi\n".repeat(20);
        assert_eq!(read_in_pieces(many.as_bytes(), 5, 150), Err(TooLong));
        // A line without an end never grows past the limit.
        let mut reader = SseReader::new(1000);
        for _ in 0..99 {
            reader.feed(b"0123456789").unwrap();
        }
        assert_eq!(reader.feed(b"0123456789!"), Err(TooLong));
    }

    #[test]
    fn bytes_are_named_in_their_unit() {
        assert_eq!(bytes(16 << 20), "16777216 bytes (16 MiB)");
        assert_eq!(bytes(2048), "2048 bytes (2 KiB)");
        assert_eq!(bytes(1000), "1000 bytes");
    }
}

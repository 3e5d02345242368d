//! Server-sent events, as the model APIs stream them: lines of `field: value`, an event
//! ending at a blank line. Bytes arrive in any pieces (a line, even a character, may be cut
//! between two), so whole lines are taken from a byte buffer before they are read as text.

use crate::agent::ModelError;

use super::http::describe;

/// Reads the events of a streamed answer, passing each to `on_event` until it says the
/// answer is complete (`Ok(true)`). `Ok(false)`: the stream ended first.
pub(crate) async fn read_events(
    mut response: reqwest::Response,
    url: &str,
    mut on_event: impl FnMut(SseEvent) -> Result<bool, ModelError>,
) -> Result<bool, ModelError> {
    let mut reader = SseReader::default();
    loop {
        let chunk = response.chunk().await.map_err(|e| ModelError::Connection {
            url: url.to_owned(),
            message: describe(&e),
        })?;
        let events = match &chunk {
            Some(bytes) => reader.feed(bytes),
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

/// Reads events out of a byte stream, piece by piece.
#[derive(Debug, Default)]
pub(crate) struct SseReader {
    pending: Vec<u8>,
    event: String,
    data: Vec<String>,
}

impl SseReader {
    /// Takes the next piece of the stream; returns the events it completed.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        self.pending.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if let Some(event) = self.line(line) {
                events.push(event);
            }
        }
        events
    }

    /// The event the stream's end completes, if it ended inside one.
    pub(crate) fn finish(&mut self) -> Option<SseEvent> {
        let rest = std::mem::take(&mut self.pending);
        let rest = String::from_utf8_lossy(&rest).into_owned();
        let rest = rest.trim_end_matches('\r');
        if !rest.is_empty() {
            let _ = self.line(rest);
        }
        self.dispatch()
    }

    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None; // a comment: keep-alive
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "data" => self.data.push(value.to_owned()),
            "event" => value.clone_into(&mut self.event),
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = std::mem::take(&mut self.event);
        if self.data.is_empty() {
            return None;
        }
        let data = std::mem::take(&mut self.data).join("\n");
        Some(SseEvent { event, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_in_pieces(stream: &[u8], piece: usize) -> Vec<SseEvent> {
        let mut reader = SseReader::default();
        let mut events: Vec<SseEvent> = stream.chunks(piece).flat_map(|c| reader.feed(c)).collect();
        events.extend(reader.finish());
        events
    }

    #[test]
    fn events_survive_any_cut() {
        let stream = "event: message_start\r\ndata: {\"t\":\"é😀\"}\r\n\r\n: ping\n\ndata: a\ndata: b\n\ndata:[DONE]".as_bytes();
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
                data: "[DONE]".into(),
            },
        ];
        for piece in 1..=stream.len() {
            assert_eq!(read_in_pieces(stream, piece), expected, "pieces of {piece}");
        }
    }
}

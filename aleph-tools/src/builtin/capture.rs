//! Output kept to a cap: the start and the end of a stream, the middle counted and left
//! out, streamed as progress while it comes.

use std::collections::VecDeque;
use std::fmt::Write as _;

use crate::context::Progress;

/// One output stream, kept to a cap: its start and its end; the middle is counted.
pub(super) struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    half: usize,
    pub(super) omitted: u64,
    /// The bytes of a character cut between two reads, held until the rest comes.
    pending: Vec<u8>,
}

impl Capture {
    pub(super) fn new(limit: usize) -> Self {
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            half: limit / 2,
            omitted: 0,
            pending: Vec::new(),
        }
    }

    pub(super) fn push(&mut self, bytes: &[u8], progress: &Progress) {
        let room = self.half - self.head.len();
        let (head, rest) = bytes.split_at(room.min(bytes.len()));
        if !head.is_empty() {
            self.head.extend_from_slice(head);
            if progress.is_listening() {
                self.stream(head, progress);
            }
        }
        if rest.len() >= self.half {
            // The new bytes fill the whole tail: what it held, and their start, are left out.
            self.omitted += (self.tail.len() + rest.len() - self.half) as u64;
            self.tail.clear();
            self.tail.extend(&rest[rest.len() - self.half..]);
            return;
        }
        let overflow = (self.tail.len() + rest.len()).saturating_sub(self.half);
        self.tail.drain(..overflow);
        self.omitted += overflow as u64;
        self.tail.extend(rest);
    }

    /// Streams what was read as text, holding back a character cut at the end.
    fn stream(&mut self, bytes: &[u8], progress: &Progress) {
        self.pending.extend_from_slice(bytes);
        let complete = match std::str::from_utf8(&self.pending) {
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            _ => self.pending.len(),
        };
        let text = String::from_utf8_lossy(&self.pending[..complete]).into_owned();
        self.pending.drain(..complete);
        if !text.is_empty() {
            progress.chunk(text);
        }
    }

    /// The kept output as text; a character cut at either edge of the gap is dropped.
    pub(super) fn text(&self) -> String {
        let mut head = self.head.as_slice();
        if (self.omitted > 0 || !self.tail.is_empty())
            && let Err(e) = std::str::from_utf8(head)
            && e.error_len().is_none()
        {
            head = &head[..e.valid_up_to()];
        }
        let mut text = String::from_utf8_lossy(head).into_owned();
        if self.omitted > 0 {
            let _ = write!(text, "\n[… {} bytes left out …]\n", self.omitted);
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        let start = if self.omitted > 0 {
            tail.iter()
                .position(|&b| (b & 0xC0) != 0x80)
                .unwrap_or(tail.len())
        } else {
            0
        };
        text.push_str(&String::from_utf8_lossy(&tail[start..]));
        text
    }
}

//! Reading a plugin's output one line at a time, never holding more than the message limit:
//! a line past the limit is skipped as it streams by, keeping only its head.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// How much of an over-long line is kept, to find the id of the call it answers.
const HEAD: usize = 256;

/// One line of a plugin's output.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Frame {
    /// A whole line, without its `\n`.
    Line(Vec<u8>),
    /// A line longer than the limit: its first bytes and its whole length.
    TooLong { head: Vec<u8>, len: u64 },
}

/// Splits a byte stream into lines of at most `max` bytes.
pub(super) struct Lines<R> {
    reader: R,
    max: usize,
}

impl<R: AsyncBufRead + Unpin> Lines<R> {
    pub(super) fn new(reader: R, max: usize) -> Self {
        Self { reader, max }
    }

    /// The next line; `None` at the end of the stream. A last line without its `\n` (a plugin
    /// that died mid-write) is dropped with the stream.
    pub(super) async fn next(&mut self) -> std::io::Result<Option<Frame>> {
        let mut line = Vec::new();
        let mut skipped: Option<u64> = None;
        loop {
            let buf = self.reader.fill_buf().await?;
            if buf.is_empty() {
                return Ok(None);
            }
            let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(end) => (&buf[..end], true),
                None => (buf, false),
            };
            let taken = chunk.len() + usize::from(done);
            match &mut skipped {
                None if line.len() + chunk.len() <= self.max => line.extend_from_slice(chunk),
                _ => {
                    // Past the limit: count the line's bytes, keep only its head.
                    let len = skipped.get_or_insert(line.len() as u64);
                    *len += chunk.len() as u64;
                    line.truncate(HEAD);
                    let keep = HEAD.saturating_sub(line.len()).min(chunk.len());
                    line.extend_from_slice(&chunk[..keep]);
                }
            }
            self.reader.consume(taken);
            if done {
                return Ok(Some(match skipped {
                    Some(len) => Frame::TooLong { head: line, len },
                    None => Frame::Line(line),
                }));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize, buffer: usize) -> Vec<Frame> {
        let reader = tokio::io::BufReader::with_capacity(buffer, input);
        let mut lines = Lines::new(reader, max);
        let mut out = Vec::new();
        while let Some(frame) = lines.next().await.unwrap() {
            out.push(frame);
        }
        out
    }

    #[tokio::test]
    async fn lines_split_across_reads_and_past_the_limit() {
        let long = format!("{{\"id\":9,\"x\":\"{}\"}}", "a".repeat(5000));
        let input = format!("one\n\n{long}\nthree\nhalf");
        for buffer in [1, 7, 64, 8192] {
            let got = frames(input.as_bytes(), 100, buffer).await;
            assert_eq!(got.len(), 4, "buffer {buffer}");
            assert_eq!(got[0], Frame::Line(b"one".to_vec()));
            assert_eq!(got[1], Frame::Line(Vec::new()));
            match &got[2] {
                Frame::TooLong { head, len } => {
                    assert_eq!(*len, long.len() as u64);
                    assert_eq!(head.as_slice(), &long.as_bytes()[..HEAD]);
                }
                other @ Frame::Line(_) => panic!("{other:?}"),
            }
            assert_eq!(got[3], Frame::Line(b"three".to_vec()));
        }
    }

    #[tokio::test]
    async fn a_line_exactly_at_the_limit_is_whole() {
        let got = frames(b"abcd\nabcde\n", 4, 2).await;
        assert_eq!(got[0], Frame::Line(b"abcd".to_vec()));
        assert!(matches!(got[1], Frame::TooLong { len: 5, .. }));
    }
}

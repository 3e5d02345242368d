//! Counting the pages of a PDF the browser printed, by reading its objects as PDF's lexical
//! rules have them (strings, comments and stream data skipped), so that nothing a document
//! says (a heading kept in the outline, a link) can pass for a page.

/// The number of page objects (dictionaries with `/Type /Page`) in `pdf`.
///
/// Chromium's PDF writer (Skia) writes page objects as plain dictionaries, never inside
/// compressed object streams; what a page shows is in streams, and titles and links in
/// strings, which are skipped.
pub(super) fn count(pdf: &[u8]) -> usize {
    let mut pages = 0;
    let mut after_type = false;
    let mut at = 0;
    while at < pdf.len() {
        let byte = pdf[at];
        match byte {
            b'%' => {
                // A comment, to the end of its line.
                while at < pdf.len() && !matches!(pdf[at], b'\r' | b'\n') {
                    at += 1;
                }
            }
            b'(' => {
                at = skip_literal_string(pdf, at);
                after_type = false;
            }
            b'<' if pdf.get(at + 1) == Some(&b'<') => {
                // A dictionary opens.
                at += 2;
                after_type = false;
            }
            b'<' => {
                // A hex string.
                at = pdf[at..]
                    .iter()
                    .position(|&byte| byte == b'>')
                    .map_or(pdf.len(), |end| at + end + 1);
                after_type = false;
            }
            b'/' => {
                let start = at + 1;
                at = start;
                while at < pdf.len() && is_regular(pdf[at]) {
                    at += 1;
                }
                let name = &pdf[start..at];
                if after_type && name == b"Page" {
                    pages += 1;
                }
                after_type = name == b"Type";
            }
            _ if is_regular(byte) => {
                let start = at;
                while at < pdf.len() && is_regular(pdf[at]) {
                    at += 1;
                }
                if &pdf[start..at] == b"stream" {
                    at = skip_stream(pdf, at);
                }
                after_type = false;
            }
            _ => {
                if !is_whitespace(byte) {
                    after_type = false;
                }
                at += 1;
            }
        }
    }
    pages
}

/// Where the literal string opening at `open` ends (its parentheses balanced, `\` escaping
/// the next byte).
fn skip_literal_string(pdf: &[u8], open: usize) -> usize {
    let mut depth = 0_usize;
    let mut at = open;
    while at < pdf.len() {
        match pdf[at] {
            b'\\' => at += 1,
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return at + 1;
                }
            }
            _ => {}
        }
        at += 1;
    }
    pdf.len()
}

/// Where the data of the stream whose keyword ends at `at` ends: after `endstream`.
fn skip_stream(pdf: &[u8], at: usize) -> usize {
    const END: &[u8] = b"endstream";
    pdf[at..]
        .windows(END.len())
        .position(|window| window == END)
        .map_or(pdf.len(), |end| at + end + END.len())
}

fn is_whitespace(byte: u8) -> bool {
    matches!(byte, b'\0' | b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

fn is_regular(byte: u8) -> bool {
    !is_whitespace(byte)
        && !matches!(
            byte,
            b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%'
        )
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn pages_are_counted_by_their_dictionaries_and_nothing_else() {
        let pdf = b"%PDF-1.4\n%/Type /Page in a comment\n\
            1 0 obj\n<</Type /Pages /Count 2 /Kids [2 0 R 3 0 R]>>\nendobj\n\
            2 0 obj\n<</Type /Page /Parent 1 0 R>>\nendobj\n\
            3 0 obj\n<</Type\n/Page/Parent 1 0 R /Annots [<</Type /Annot /A <</URI (http://x/\\(/Type /Page\\))>>>>]>>\nendobj\n\
            4 0 obj\n<</Title (a (nested) /Type /Page title) /Next <2F54797065202F50616765>>>\nendobj\n\
            5 0 obj\n<</Length 30>>\nstream\n(unbalanced /Type /Page data\nendstream\nendobj\n\
            6 0 obj\n<</Type /PageLabel>>\nendobj\n";
        assert_eq!(count(pdf), 2);
        assert_eq!(count(b"%PDF-1.4 nothing"), 0);
        assert_eq!(count(b"(never closed /Type /Page"), 0);
        assert_eq!(count(b"stream no end /Type /Page"), 0);
    }
}

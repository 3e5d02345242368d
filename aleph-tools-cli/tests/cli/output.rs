//! What a run of the command printed, read as text, shared by the command's tests.

use std::process::Output;

/// `bytes` as text, invalid UTF-8 replaced.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// What the run printed on standard output.
pub fn stdout(output: &Output) -> String {
    text(&output.stdout)
}

/// What the run printed on standard error.
pub fn stderr(output: &Output) -> String {
    text(&output.stderr)
}

/// The standard output of a run that succeeded; panics with both outputs when it did not.
#[track_caller]
pub fn succeeded(output: &Output) -> String {
    assert!(
        output.status.success(),
        "{}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        stdout(output),
        stderr(output)
    );
    stdout(output)
}

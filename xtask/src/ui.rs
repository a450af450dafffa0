//! The terminal: the only module that writes to stdout or stderr. Commands build strings
//! (pure, snapshot-tested) and hand them here.
//!
//! Must not: decide anything. A closed stdout (`| head`) is not an error.

use std::io::{self, Write};

/// Writes a command's result to stdout. A broken pipe ends quietly.
pub fn out(text: &str) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Prints an error chain once, as `error: outer: inner: ...`.
pub fn error(e: &anyhow::Error) {
    let _ = writeln!(io::stderr().lock(), "error: {e:#}");
}

/// A progress or status line on stderr (never mixed into stdout's results).
pub fn status(text: &str) {
    let _ = writeln!(io::stderr().lock(), "{text}");
}

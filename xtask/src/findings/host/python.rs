//! Python's side of the host output: the traceback and chaining lines, a `File "..."` frame,
//! an exception line's name and message, and a logger prefix repeated before each line.
//!
//! Must not: do I/O, spawn processes or print.

use super::text::{cut, MAX_CALL, MAX_MESSAGE};
use crate::findings::Frame;

pub(super) const TRACEBACK: &str = "Traceback (most recent call last):";
pub(super) const CHAIN_DURING: &str = "During handling of the above exception, another exception occurred:";
pub(super) const CHAIN_CAUSE: &str = "The above exception was the direct cause of the following exception:";

/// Strips a log prefix of the same length as the one before `Traceback (most recent call
/// last):` (a logger's `ERROR 06-13 15:32:09 [core.py:515] `), when the line looks like
/// it has one (same first bytes).
pub(crate) fn strip_prefix_like<'a>(line: &'a str, len: usize, head: &[u8; 5]) -> Option<&'a str> {
    if len == 0 {
        return Some(line);
    }
    let n = len.min(5);
    if line.len() < len || !line.is_char_boundary(len) || line.as_bytes()[..n] != head[..n] {
        return None;
    }
    Some(&line[len..])
}

/// `/src/probe/assert_ce.py", line 7, in <module>` (after `  File "`).
pub(super) fn parse_frame(rest: &str) -> Option<Frame> {
    let (file, tail) = rest.rsplit_once("\", line ")?;
    let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
    let line: u32 = tail[..digits].parse().ok()?;
    let function = tail[digits..].strip_prefix(", in ").map(|f| cut(f.trim(), MAX_MESSAGE).to_string());
    Some(Frame {
        function,
        file: Some(cut(file, MAX_CALL).to_string()),
        line: Some(line),
        module: None,
        python: true,
    })
}

/// A Python exception line: `torch.AcceleratorError: CUDA error: ...` -> (name, message).
/// The class name must look like one (`KeyError`, not `INFO` or `step`): it ends in `Error`,
/// `Exception`, `Interrupt`, `Exit`, ... or, unless `strict`, is qualified by a module
/// (`torch._dynamo.exc.Unsupported`).
pub(super) fn exception_shape(s: &str, strict: bool) -> Option<(&str, &str)> {
    let (name, rest) = match s.find(':') {
        Some(c) => (&s[..c], &s[c + 1..]),
        None => (s.trim_end(), ""),
    };
    let nb = name.as_bytes();
    if nb.is_empty()
        || !(nb[0].is_ascii_alphabetic() || nb[0] == b'_')
        || nb.last() == Some(&b'.')
        || !nb.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
    {
        return None;
    }
    if !rest.is_empty() && !rest.starts_with(' ') {
        return None;
    }
    let class = name.rsplit('.').next().unwrap_or(name);
    let cb = class.as_bytes();
    if !cb.first().is_some_and(u8::is_ascii_uppercase) || !cb.iter().any(u8::is_ascii_lowercase) {
        return None;
    }
    let classy = ["Error", "Exception", "Interrupt", "Exit", "Failure", "Failed", "Warning", "Iteration"]
        .iter()
        .any(|s| class.ends_with(s));
    if !classy && (strict || !name.contains('.')) {
        return None;
    }
    Some((name, rest.trim()))
}

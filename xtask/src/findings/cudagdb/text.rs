//! The caps of the cuda-gdb parser and the bits of gdb's syntax its readers share: the first
//! tokens of a line, a string cut at a character boundary, splitting at the top level of
//! brackets, the `(` of a final group, and a call's `name=value` argument list.
//!
//! Must not: do I/O, spawn processes, print, or panic on any input. Every cap of the parser's
//! memory is here.

/// Frames, arguments and locals kept per session.
pub(super) const MAX_ITEMS: usize = 256;
/// Faults and notes kept per input.
pub(super) const MAX_SESSIONS: usize = 1024;
/// Thread groups (kernel, PC, line) kept per snapshot; rows past it are counted.
pub(super) const MAX_GROUPS: usize = 1024;
/// Bytes kept of a file name in a thread row.
pub(super) const MAX_NAME: usize = 4096;

/// The first `n` whitespace-separated tokens of `s` and the rest after them (trimmed).
pub(super) fn tokens(s: &str, n: usize) -> Option<(Vec<&str>, &str)> {
    let mut out = Vec::with_capacity(n);
    let mut rest = s;
    for _ in 0..n {
        rest = rest.trim_start();
        if rest.is_empty() {
            return None;
        }
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        out.push(&rest[..end]);
        rest = &rest[end..];
    }
    Some((out, rest.trim()))
}

/// At most `max` bytes of `s`, cut at a character boundary ([`crate::model::text::cut`]).
pub(super) fn cut(s: &str, max: usize) -> String {
    crate::model::text::cut(s, max).to_string()
}

/// Splits at `sep` outside parentheses, brackets, braces and double quotes.
pub(super) fn split_top(s: &str, sep: u8) -> impl Iterator<Item = &str> {
    let b = s.as_bytes();
    let mut start = 0;
    let mut depth = 0i32;
    let mut quoted = false;
    let mut i = 0;
    std::iter::from_fn(move || {
        if start > b.len() {
            return None;
        }
        while i < b.len() {
            let c = b[i];
            if quoted {
                if c == b'\\' {
                    i += 1;
                } else if c == b'"' {
                    quoted = false;
                }
            } else {
                match c {
                    b'"' => quoted = true,
                    b'(' | b'[' | b'{' => depth += 1,
                    b')' | b']' | b'}' => depth -= 1,
                    _ if c == sep && depth <= 0 => {
                        let piece = &s[start..i];
                        i += 1;
                        start = i;
                        return Some(piece);
                    }
                    _ => {}
                }
            }
            i += 1;
        }
        let piece = s.get(start..).unwrap_or("");
        start = b.len() + 1;
        Some(piece)
    })
}

/// The index of the `(` matching a final `)`, if `s` ends with one (also py-spy's frames).
pub(in crate::findings) fn open_of_last_group(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if b.last() != Some(&b')') {
        return None;
    }
    let mut depth = 0usize;
    for (i, &c) in b.iter().enumerate().rev() {
        match c {
            b')' => depth += 1,
            b'(' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// `name=value, name=value` (gdb's argument list) into pairs; pieces that are not
/// `identifier=value` are skipped.
pub(super) fn parse_args(inner: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for piece in split_top(inner, b',') {
        let Some((name, value)) = piece.split_once('=') else {
            continue;
        };
        let name = name.trim();
        if is_ident(name) && out.len() < MAX_ITEMS {
            out.push((name.to_string(), value.trim().to_string()));
        }
    }
    out
}

pub(super) fn is_ident(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// `scatter_far(out=0x7f6f33e00000, n=1024)` -> (`scatter_far`, args);
/// `at::native::k<4, F>()` -> (`at::native::k<4, F>`, none).
pub(super) fn split_call(s: &str) -> (&str, Vec<(String, String)>) {
    let s = s.trim();
    match open_of_last_group(s) {
        Some(o) => (s[..o].trim_end(), parse_args(&s[o + 1..s.len() - 1])),
        None => (s, Vec::new()),
    }
}

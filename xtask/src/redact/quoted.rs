//! Where a value ends: quotes (bytes and XML entities), their real closing quote (escaped
//! quotes do not close), and a bare value's end by how it is written ([`Mode`]).
//!
//! Must not: decide what is secret (callers do); look past the line.

use super::bytes::*;

/// A quote: a byte, or an XML entity (`&quot;`, `&apos;`), as compute-sanitizer's XML writes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Quote {
    Byte(u8),
    Entity(&'static [u8]),
}

impl Quote {
    pub(super) fn len(self) -> usize {
        match self {
            Quote::Byte(_) => 1,
            Quote::Entity(e) => e.len(),
        }
    }
}

pub(super) const ENTITIES: [&[u8]; 4] = [b"&quot;", b"&apos;", b"&#34;", b"&#39;"];

/// A quote escaped inside an enclosing string (`{"log": "api_key = \"…\""}`): a value's
/// quote, as an entity is.
const ESCAPED_QUOTE: &[u8] = b"\\\"";

/// The quote that ends at `j`.
pub(super) fn quote_before(s: &[u8], j: usize) -> Option<Quote> {
    if j > 0 && is_quote(s[j - 1]) {
        return Some(Quote::Byte(s[j - 1]));
    }
    if j > 0 && s[j - 1] == b';' {
        return ENTITIES.into_iter().find(|e| s[..j].ends_with(e)).map(Quote::Entity);
    }
    None
}

/// The quote that starts at `j`.
pub(super) fn quote_at(s: &[u8], j: usize) -> Option<Quote> {
    match s.get(j) {
        Some(&b) if is_quote(b) => Some(Quote::Byte(b)),
        Some(b'&') => ENTITIES.into_iter().find(|e| s[j..].starts_with(e)).map(Quote::Entity),
        Some(b'\\') if s[j..].starts_with(ESCAPED_QUOTE) => Some(Quote::Entity(ESCAPED_QUOTE)),
        _ => None,
    }
}

/// The end of a quoted value that starts at `start`: its closing quote (one a backslash
/// escapes, as JSON, Python and C++ literals write a quote inside a string, does not close
/// it), the end of the line, or (after an XML entity) the next tag.
pub(super) fn closing(s: &[u8], start: usize, q: Quote) -> usize {
    match q {
        Quote::Byte(b) => {
            let mut k = start;
            while k < s.len() && s[k] != b'\n' {
                // `''` inside YAML's (and SQL's) single quotes is a quote; Python reads it as
                // the next string, part of the same value.
                if s[k] == b && !(b == b'\'' && k > start && s.get(k + 1) == Some(&b'\'')) {
                    break;
                }
                k += if (s[k] == b'\\' || s[k] == b) && s.get(k + 1).is_some_and(|&n| n != b'\n') {
                    2
                } else {
                    1
                };
            }
            k.min(s.len())
        }
        Quote::Entity(e) => {
            let mut k = start;
            while k < s.len() && s[k] != b'\n' && s[k] != b'<' && !s[k..].starts_with(e) {
                k += 1;
            }
            k
        }
    }
}

pub(super) fn is_name_byte(b: u8) -> bool {
    is_word(b) || b == b'.' || b == b'-'
}

/// How a value is written, which says where a bare one ends and what is no secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// `NAME=value` (an environment, a query, a keyword argument) and `--flag value`: a bare
    /// value ends at a blank, a quote, `&`, `;` or `<`.
    Flag,
    /// `name: value` (YAML, JSON, a Python dict, a header without its own rule) and
    /// `name = value` (INI, cuda-gdb's locals): also at `,`, `)`, `]` or `}`; `true`, `null`,
    /// short numbers and addresses are no secrets.
    Loose,
    /// `name = value` with a bare value: only a single word that ends its line, not an
    /// expression (`key = torch.randn(3)`).
    Spaced,
}

/// The value that starts at `v`: inside quotes, or bare (see [`Mode`]). A shell variable
/// reference (`$HF_TOKEN`, `${HF_TOKEN}`) is not a value: scripts pass secrets along that way
/// without holding them; nor is the start of a structure (`{`, `[`, a YAML `|`).
pub(super) fn value_span(s: &[u8], v: usize, mode: Mode) -> Option<(usize, usize)> {
    let quote = quote_at(s, v);
    let (start, end) = match quote {
        Some(q) => {
            let start = v + q.len();
            (start, closing(s, start, q))
        }
        None => {
            // A bracket closes a value only inside one (`{a: b, c: d}`, `f(k=v)`): a YAML or INI
            // value outside any (`password: a,b)c`) runs to its blank.
            // (The 512 bytes before: a hostile line of `key = x key = x …` stays linear.)
            let from = v.saturating_sub(512);
            let line = memchr::memrchr(b'\n', &s[from..v]).map_or(from, |k| from + k + 1);
            let inside = memchr::memchr3(b'{', b'[', b'(', &s[line..v]).is_some();
            // Inside one, a `,` separates only before a blank, a quote or a bracket (`{a: b, c:
            // d}`); `a,b` is one value.
            let stop = |k: usize| {
                let b = s[k];
                let next = s.get(k + 1).copied().unwrap_or(b' ');
                b.is_ascii_whitespace()
                    || is_quote(b)
                    || matches!(b, b'&' | b';' | b'<')
                    || (mode != Mode::Flag
                        && inside
                        && (matches!(b, b')' | b']' | b'}')
                            || (b == b','
                                && (next.is_ascii_whitespace() || is_quote(next) || b"[{".contains(&next)))))
            };
            let mut end = v;
            while end < s.len() && !stop(end) {
                end += 1;
            }
            (v, end)
        }
    };
    let value = &s[start..end];
    let reference = value.first() == Some(&b'$')
        && value.len() > 1
        && value[1..].iter().all(|&b| is_word(b) || b == b'{' || b == b'}');
    // Already redacted, maybe around a token's prefix (`sk-[REDACTED]`): a bare value stops at
    // the mark's `]`.
    let marked = find(&s[start..s.len().min(end + 1)], b"[REDACTED").is_some();
    if start >= end || marked || reference {
        return None;
    }
    if quote.is_none() {
        if matches!(value[0], b'{' | b'[' | b'|' | b'>' | b'(') {
            return None;
        }
        if mode != Mode::Flag {
            let word = ["true", "false", "null", "none", "nil", "undefined", "yes", "no"]
                .iter()
                .any(|w| value.eq_ignore_ascii_case(w.as_bytes()));
            let number = value.len() <= 4 && value.iter().all(u8::is_ascii_digit);
            let address =
                value.len() > 2 && value.starts_with(b"0x") && value[2..].iter().all(|&b| is_hex(b));
            if word || number || address {
                return None;
            }
        }
        if mode == Mode::Spaced {
            // The rest of the line: nothing, a comment, a closing quote or tag.
            let rest = &s[run(s, end, is_blank)..];
            let rest_blank =
                matches!(rest.first(), None | Some(b'\n' | b'\r' | b'#' | b'<' | b'"' | b'\'' | b'`'));
            if !rest_blank || value.iter().any(|b| b"()[]{}".contains(b)) {
                return None;
            }
        }
    }
    Some((start, end))
}

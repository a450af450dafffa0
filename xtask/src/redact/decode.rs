//! Escapes decoded before matching, so that a secret written encoded is found: XML and HTML
//! entities (`&quot;`, `&amp;`, `&#47;`, `&#x2F;`), JSON's `\uXXXX`, `\/`, `\"` and `\\`, and
//! URL percent-encoding (`%3D`, `%2F`). [`decoded`] gives the decoded text and, for each of its
//! bytes, where it came from, so that a span found in it is redacted over the encoded bytes
//! of the original ([`original`]): the output keeps its encoding but for the mark. The scanner
//! decodes again what one level left encoded (JSON in a JSON string, `%253D`), to a fixed
//! point of at most [`LEVELS`] levels; the text as it is is always scanned too, so a rule that
//! reads an escaped quote as part of a value (`"a\"b"`) still sees it.
//!
//! Must not: decode a control byte (a newline stays a line's end) or a byte past ASCII;
//! allocate for a text without an escape.

use super::bytes::*;

/// The decoded byte and the length of the escape at `i`, if one starts there.
fn escape(s: &[u8], i: usize) -> Option<(u8, usize)> {
    let hex = |v: &[u8]| -> Option<u32> {
        std::str::from_utf8(v)
            .ok()
            .filter(|t| t.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|t| u32::from_str_radix(t, 16).ok())
    };
    let (value, len) = match s[i] {
        b'%' => (hex(s.get(i + 1..i + 3)?)?, 3),
        b'\\' => match s.get(i + 1)? {
            b'/' => (u32::from(b'/'), 2),
            b'"' => (u32::from(b'"'), 2),
            b'\'' => (u32::from(b'\''), 2),
            b'\\' => (u32::from(b'\\'), 2),
            b'u' => (hex(s.get(i + 2..i + 6)?)?, 6),
            _ => return None,
        },
        b'&' => entity(s, i)?,
        _ => return None,
    };
    // Printable ASCII only: no newline, no quote a backslash escaped, nothing past ASCII.
    (0x20..0x7f).contains(&value).then_some((value as u8, len))
}

/// An XML or HTML entity at `i` (`&quot;`, `&#47;`, `&#x2F;`): its value and length.
fn entity(s: &[u8], i: usize) -> Option<(u32, usize)> {
    const NAMED: [(&[u8], u8); 5] =
        [(b"&quot;", b'"'), (b"&apos;", b'\''), (b"&amp;", b'&'), (b"&lt;", b'<'), (b"&gt;", b'>')];
    let rest = &s[i..];
    if let Some((e, v)) = NAMED.iter().find(|(e, _)| rest.starts_with(e)) {
        return Some((u32::from(*v), e.len()));
    }
    let semi = rest.iter().take(10).position(|&b| b == b';')?;
    let body = rest.get(2..semi)?;
    if rest.get(1) != Some(&b'#') || body.is_empty() {
        return None;
    }
    let v = match body[0] {
        b'x' | b'X' => u32::from_str_radix(std::str::from_utf8(&body[1..]).ok()?, 16).ok()?,
        _ => {
            std::str::from_utf8(body).ok().filter(|t| t.bytes().all(|b| b.is_ascii_digit()))?.parse().ok()?
        }
    };
    Some((v, semi + 1))
}

/// How many levels of escaping are decoded, at most.
pub(super) const LEVELS: usize = 3;

/// Whether `s` holds an escape [`decoded`] would decode: one SIMD search and a few
/// comparisons per hit.
pub(super) fn has_escape(s: &[u8]) -> bool {
    memchr::memchr3_iter(b'%', b'&', b'\\', s).any(|i| escape(s, i).is_some())
}

/// `s` with its escapes decoded, and for each byte of it (and one past its end) the offset in
/// `s` it starts at; `None` when `s` holds no escape.
pub(super) fn decoded(s: &[u8]) -> Option<(Vec<u8>, Vec<usize>)> {
    if !has_escape(s) {
        return None;
    }
    let mut out = Vec::with_capacity(s.len());
    let mut map = Vec::with_capacity(s.len() + 1);
    let mut i = 0;
    while i < s.len() {
        match matches!(s[i], b'%' | b'&' | b'\\').then(|| escape(s, i)).flatten() {
            Some((b, len)) => {
                out.push(b);
                map.push(i);
                i += len;
            }
            None => {
                out.push(s[i]);
                map.push(i);
                i += 1;
            }
        }
    }
    map.push(s.len());
    Some((out, map))
}

/// The spans found in a decoded text, over the original's bytes: a span from decoded byte `a`
/// to `b` covers the escapes those bytes came from.
pub(super) fn original(found: &[Span], map: &[usize], spans: &mut Vec<Span>) {
    spans.extend(found.iter().map(|&(a, b, label)| (map[a], map[b.min(map.len() - 1)], label)));
}

//! Byte helpers of the redaction scanners: character classes, runs, the left boundary of a
//! token (after a terminal colour too), and the [`Span`] every scanner reports.
//!
//! Must not: know any rule or shape of secret; allocate.

/// A byte range of a line to replace with `MARK`, and the kind of secret.
pub(super) type Span = (usize, usize, &'static str);

pub(super) fn trim(s: &[u8]) -> (usize, usize) {
    let a = run(s, 0, |c| c.is_ascii_whitespace());
    let mut b = s.len();
    while b > a && s[b - 1].is_ascii_whitespace() {
        b -= 1;
    }
    (a, b)
}

pub(super) fn find(s: &[u8], pat: &[u8]) -> Option<usize> {
    memchr::memmem::find(s, pat)
}

pub(super) fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

pub(super) fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

pub(super) fn is_word_dash(b: u8) -> bool {
    is_word(b) || b == b'-'
}

pub(super) fn is_b64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'+' || b == b'/'
}

pub(super) fn is_hex(b: u8) -> bool {
    b.is_ascii_hexdigit()
}

pub(super) fn is_quote(b: u8) -> bool {
    matches!(b, b'"' | b'\'' | b'`')
}

pub(super) fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Whether a token may start at `i`: nothing alphanumeric right before it, or the end of a
/// terminal escape (`\x1b[31m`), which a coloured log puts right before a token.
pub(super) fn left_ok(s: &[u8], i: usize) -> bool {
    i == 0 || !is_alnum(s[i - 1]) || after_escape(s, i)
}

/// Like [`left_ok`], and no `_` either (an AWS key id inside a longer word is none).
pub(super) fn left_ok_word(s: &[u8], i: usize) -> bool {
    i == 0 || !is_word(s[i - 1]) || after_escape(s, i)
}

/// Whether `s[..i]` ends with a CSI escape sequence: ESC `[`, parameters, a final letter.
pub(super) fn after_escape(s: &[u8], i: usize) -> bool {
    if i < 3 || !s[i - 1].is_ascii_alphabetic() {
        return false;
    }
    let mut k = i - 1;
    while k > 0 && i - 1 - k < 16 && (s[k - 1].is_ascii_digit() || s[k - 1] == b';' || s[k - 1] == b'?') {
        k -= 1;
    }
    k >= 2 && s[k - 1] == b'[' && s[k - 2] == 0x1b
}

/// The end of the run of bytes from `start` that satisfy `ok`.
pub(super) fn run(s: &[u8], start: usize, ok: impl Fn(u8) -> bool) -> usize {
    start + s[start..].iter().take_while(|&&b| ok(b)).count()
}

/// The start of the run of at most `max` bytes ending at `end` that satisfy `ok`; `None` when
/// the run is longer.
pub(super) fn back(s: &[u8], end: usize, ok: impl Fn(u8) -> bool, max: usize) -> Option<usize> {
    let mut k = end;
    while k > 0 && ok(s[k - 1]) {
        if end - k == max {
            return None;
        }
        k -= 1;
    }
    Some(k)
}

//! Key material: PEM private-key blocks (one line or many), lines of random base64, `.netrc`
//! passwords and secret-named XML elements.
//!
//! Must not: take a hex digest, a UUID, a path or a mangled name for key material.

use std::sync::LazyLock;

use super::bytes::*;
use super::generic::*;
use super::names::*;
use super::quoted::*;
use memchr::memmem::Finder;

/// `s[a..b]` without its blanks as a PEM span, unless empty or already redacted.
pub(super) fn push_trimmed(s: &[u8], a: usize, b: usize, spans: &mut Vec<Span>) {
    let a = run(s, a, |c| c.is_ascii_whitespace()).min(b);
    let mut b = b;
    while b > a && s[b - 1].is_ascii_whitespace() {
        b -= 1;
    }
    if a < b && &s[a..b] != MARK.as_bytes() {
        spans.push((a, b, PEM));
    }
}

/// A line that can be inside a PEM block: base64 (with `=` padding), a header of an encrypted
/// key or an armour (`Proc-Type: 4,ENCRYPTED`, `DEK-Info: …`, `Comment: …`), blank, or already
/// redacted.
pub(super) fn pem_body(s: &[u8]) -> bool {
    const HEADERS: [&[u8]; 5] = [b"Proc-Type:", b"DEK-Info:", b"Comment:", b"Version:", b"Hash:"];
    let (a, b) = trim(s);
    let t = &s[a..b];
    t.is_empty()
        || t == MARK.as_bytes()
        || t.iter().all(|&c| is_b64(c) || c == b'=')
        || HEADERS.iter().any(|h| t.starts_with(h))
}

/// A line whose PEM private-key header ends it: the block follows on the next lines.
pub(super) fn opens_block(s: &[u8]) -> bool {
    let Some(i) = find(s, b"-----BEGIN ") else { return false };
    match pem_header_end(s, i) {
        Some(h) => s[h..].iter().all(|b| b.is_ascii_whitespace() || is_quote(*b)),
        None => false,
    }
}

/// The end of a PEM private-key header that starts at `i`
/// (`-----BEGIN RSA PRIVATE KEY-----`, `OPENSSH`, `ENCRYPTED`, `PGP … KEY BLOCK`).
pub(super) fn pem_header_end(s: &[u8], i: usize) -> Option<usize> {
    let label = i + b"-----BEGIN ".len();
    let label_end = run(s, label, |b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b' ');
    let name = &s[label..label_end];
    let key = name.ends_with(b"PRIVATE KEY") || name.ends_with(b"PRIVATE KEY BLOCK");
    (label_end - label <= 48 && key && s[label_end..].starts_with(b"-----")).then_some(label_end + 5)
}

/// A PEM private key on one line (a JSON string with `\n` escapes, as in a cloud
/// service-account file): what is between its header and its `-----END` line, or the closing
/// quote or the end of the line (64 KiB at most: keys are smaller). A header alone starts a
/// block ([`Lines`]). Returns how far it looked.
pub(super) fn pem_line(s: &[u8], i: usize, spans: &mut Vec<Span>) -> usize {
    let Some(h) = pem_header_end(s, i) else { return i + 1 };
    let bound = s.len().min(h + (64 << 10));
    let eol = memchr::memchr(b'\n', &s[h..bound]).map_or(bound, |k| h + k);
    let rest = &s[h..eol];
    let end = match find(rest, b"-----END") {
        Some(e) => h + e,
        None => rest.iter().position(|&b| is_quote(b)).map_or(eol, |q| h + q),
    };
    let body = &s[h..end];
    let escapes_only = body.split(|&b| b == b'\\').all(|p| {
        let p = p.strip_prefix(b"n").or_else(|| p.strip_prefix(b"r")).unwrap_or(p);
        p.iter().all(|b| b.is_ascii_whitespace())
    });
    if !escapes_only && body != MARK.as_bytes() {
        spans.push((h, end, PEM));
    }
    end
}

/// `.netrc`: `machine HOST login USER password SECRET`, or `password SECRET` alone on its line.
pub(super) fn netrc(s: &[u8], spans: &mut Vec<Span>) {
    static PASSWORD: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"password"));
    for i in PASSWORD.find_iter(s) {
        if i > 0 && !s[i - 1].is_ascii_whitespace() {
            continue;
        }
        let after = i + 8;
        if !s.get(after).is_some_and(|&b| is_blank(b)) {
            continue;
        }
        let v = run(s, after, is_blank);
        let end = run(s, v, |b| !b.is_ascii_whitespace());
        if v == end || &s[v..end] == MARK.as_bytes() || s[v] == b'$' {
            continue;
        }
        let line_start = memchr::memrchr(b'\n', &s[i.saturating_sub(512)..i])
            .map_or(i.saturating_sub(512), |k| i.saturating_sub(512) + k + 1);
        let before = &s[line_start..i];
        let alone = before.iter().all(|b| b.is_ascii_whitespace())
            && s[end..].iter().take_while(|&&b| b != b'\n').all(|b| b.is_ascii_whitespace());
        let netrc = find(before, b"machine ").is_some()
            || find(before, b"login ").is_some()
            || find(before, b"default ").is_some();
        if alone || netrc {
            spans.push((v, end, ".netrc password"));
        }
    }
}

/// Lines that are base64 key material (the body of a PEM private key, printed without its
/// header in view): at the end of a line (or alone on it, when shorter than 40), 16 to 128
/// bytes of base64 that looks random ([`random_enough`]). A hex digest has no uppercase, a
/// UUID and a mangled name have `-` or `_`.
pub(super) fn key_lines(s: &[u8], spans: &mut Vec<Span>) {
    let mut check = |end: usize| {
        let mut e = end;
        while e > 0 && matches!(s[e - 1], b'\r' | b' ' | b'\t') {
            e -= 1;
        }
        let mut k = e;
        while k > 0 && s[k - 1] == b'=' && e - k < 2 {
            k -= 1;
        }
        let Some(start) = back(s, k, is_b64, 128) else { return };
        let len = e - start;
        if len < 16 || start == k {
            return;
        }
        let body = &s[start..k];
        // A path alone on its line (`/opt/Qt5/lib/QtCore5`) changes case rarely.
        if !random_enough(body, if len >= 40 || body[0] == b'/' { 3 } else { 1 })
            || (len >= 40 && wordy(body))
        {
            return;
        }
        let alone = match back(s, start, is_blank, 64) {
            Some(ls) => ls == 0 || s[ls - 1] == b'\n',
            None => false,
        };
        let own_word = start == 0 || s[start - 1].is_ascii_whitespace();
        if alone || (len >= 40 && own_word) {
            spans.push((start, e, PEM));
        }
    };
    for i in memchr::memchr_iter(b'\n', s) {
        check(i);
    }
    if s.last() != Some(&b'\n') {
        check(s.len());
    }
}

/// XML elements named as secrets, on one line: `<password>hunter2</password>`,
/// `<ApiKey type="x">…</ApiKey>` (a Maven `settings.xml`, a NuGet config), also escaped as
/// compute-sanitizer's XML report quotes what a program printed (`&lt;password&gt;…`): the
/// text between the opening and the closing tag. Found by the closing tag, whose name
/// [`secret_name`] judges; the opening tag of the same name must be on the line before it.
pub(super) fn xml_elements(s: &[u8], spans: &mut Vec<Span>) {
    static CLOSE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"</"));
    static CLOSE_ESCAPED: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"&lt;/"));
    let forms: [(&Finder<'static>, &[u8], &[u8]); 2] =
        [(&CLOSE, b"<", b">"), (&CLOSE_ESCAPED, b"&lt;", b"&gt;")];
    for (close, lt, gt) in forms {
        for i in close.find_iter(s) {
            let name_start = i + lt.len() + 1;
            let mut name_end = run(s, name_start, is_name_byte);
            // A namespaced element (`<ns:password>`): its local name says what it is.
            let mut local = name_start;
            if s.get(name_end) == Some(&b':') && name_end > name_start {
                local = name_end + 1;
                name_end = run(s, local, is_name_byte);
            }
            let name = &s[name_start..name_end];
            if local == name_end || !s[name_end..].starts_with(gt) || !secret_name_bytes(&s[local..name_end])
            {
                continue;
            }
            let from = i.saturating_sub(64 * 1024);
            let line_start = memchr::memrchr(b'\n', &s[from..i]).map_or(from, |k| from + k + 1);
            // The last `<name>` or `<name …>` before the closing tag.
            let open = memchr::memrchr_iter(lt[0], &s[line_start..i]).map(|k| line_start + k).find(|&o| {
                let n = o + lt.len();
                s[o..].starts_with(lt)
                    && s[n..].starts_with(name)
                    && (s[n + name.len()..].starts_with(gt)
                        || matches!(s.get(n + name.len()), Some(b' ' | b'\t')))
            });
            let Some(open) = open else { continue };
            let Some(content) = find(&s[open..i], gt).map(|k| open + k + gt.len()) else { continue };
            if s[..content - gt.len()].ends_with(b"/") {
                continue; // `<password/>`: empty
            }
            let (a, b) = trim(&s[content..i]);
            let (start, end) = (content + a, content + b);
            if start < end && &s[start..end] != MARK.as_bytes() && s[start] != b'$' {
                spans.push((start, end, "secret-named XML element"));
            }
        }
    }
}

//! Every scanner over a line in one place ([`scan`]), the one pass over `_`, `-` and `.` that
//! tokens, flags and PEM headers share, and the values [`remember`]ed for the run.
//!
//! Must not: hold state other than what [`remember`] sets once per process.

use std::sync::OnceLock;

use super::bytes::*;
use super::decode::*;
use super::flags::*;
use super::generic::*;
use super::keys::*;
use super::names::*;
use super::pairs::*;
use super::tokens::*;
use memchr::memmem::Finder;

/// The values remembered for this process ([`remember`]), longest first.
pub(super) static REMEMBERED: OnceLock<Vec<Finder<'static>>> = OnceLock::new();

/// Remembers secret values for the rest of the process ([`secret_values`]: a `--set password=…`,
/// an inherited `HF_TOKEN`), so that they are redacted wherever they show up again: in a
/// positional argument, in what the target prints. Set once per process (by `debug-ima`); a
/// second call changes nothing and returns false. Values shorter than 6 bytes, numbers and
/// multi-line values are not kept.
pub fn remember(values: impl IntoIterator<Item = String>) -> bool {
    let mut values: Vec<String> = values.into_iter().filter(|v| worth_remembering(v)).collect();
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    values.dedup();
    REMEMBERED.set(values.iter().map(|v| Finder::new(v.as_bytes()).into_owned()).collect()).is_ok()
}

/// Every scanner over `s` (a line, or many lines: no rule crosses a newline), over `s` as it is
/// and, when it holds escapes (`&quot;`, `%3D`, `\u002F`), over `s` decoded, the spans found
/// there put back over the encoded bytes.
pub(super) fn scan(s: &[u8], spans: &mut Vec<Span>) {
    rules(s, spans);
    if let Some((text, map)) = decoded(s) {
        let mut found = Vec::new();
        rules(&text, &mut found);
        original(&found, &map, spans);
    }
}

/// Every rule over `s`.
fn rules(s: &[u8], spans: &mut Vec<Span>) {
    punctuation(s, spans);
    separators(s, spans);
    capitals(s, spans);
    bearer(s, spans);
    netrc(s, spans);
    key_lines(s, spans);
    xml_elements(s, spans);
    blobs(s, spans);
    anchored(s, spans);
    logins(s, spans);
    remembered(s, spans);
}

/// Hits of `_`, `-` and `.`: the tokens whose prefix has its trigger there, `--flag value`,
/// `-p password`, `-u user:password`, PEM private keys.
pub(super) fn punctuation(s: &[u8], spans: &mut Vec<Span>) {
    let triggers = &*TRIGGERS;
    // Where each token's body run was scanned to: a later hit inside it ends there too, with a
    // shorter body, so it is not scanned again (a line of `sk-sk-sk-…` stays linear).
    let mut scanned = [0usize; N_TOKENS];
    let mut pem_scanned = 0;
    let mut before = Before::default();
    for i in memchr::memchr3_iter(b'_', b'-', b'.', s) {
        if i >= 2 {
            for &(n, at) in &triggers[trigger_hash(s[i], s[i - 2], s[i - 1])] {
                if i < at || i - at + TOKENS[n].prefix.len() < scanned[n] {
                    continue;
                }
                if let Some((end, taken)) = token(s, i - at, &TOKENS[n], spans) {
                    scanned[n] = end;
                    if taken {
                        break;
                    }
                }
            }
        }
        if s[i] != b'-' || (i > 0 && s[i - 1] == b'-') {
            continue;
        }
        if s[i..].starts_with(b"-----BEGIN ") {
            if i >= pem_scanned {
                pem_scanned = pem_line(s, i, spans);
            }
        } else if i == 0 || is_blank(s[i - 1]) || is_quote(s[i - 1]) || s[i - 1] == b'\n' {
            match s.get(i + 1) {
                Some(b'-') => long_flag(s, i, spans),
                Some(b'p' | b'u') if s.get(i + 2).is_some_and(|&b| is_blank(b)) => {
                    short_flag(s, i, spans, &mut before)
                }
                Some(b'p') => attached_p(s, i, spans),
                _ => {}
            }
        }
    }
}

/// The values [`remember`]ed for this process.
pub(super) fn remembered(s: &[u8], spans: &mut Vec<Span>) {
    let Some(known) = REMEMBERED.get() else { return };
    for f in known {
        let n = f.needle().len();
        spans.extend(f.find_iter(s).map(|i| (i, i + n, KNOWN)));
    }
}

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
pub(super) static REMEMBERED: OnceLock<Remembered> = OnceLock::new();

/// Up to this many remembered values, each is searched for on its own (memchr's `memmem`
/// is fastest then); beyond, a line is read once against an index of their first bytes, so
/// thousands of secret-named variables do not make every line cost thousands of searches.
const FINDERS_UP_TO: usize = 8;

/// The remembered values, longest first, and how to find them.
pub(super) struct Remembered {
    finders: Vec<Finder<'static>>,
    /// The values' indices by their first four bytes (each has at least six), longest first.
    by_head: std::collections::HashMap<[u8; 4], Vec<usize>>,
}

impl Remembered {
    fn new(values: &[String]) -> Remembered {
        let finders: Vec<Finder<'static>> =
            values.iter().map(|v| Finder::new(v.as_bytes()).into_owned()).collect();
        let mut by_head: std::collections::HashMap<[u8; 4], Vec<usize>> = std::collections::HashMap::new();
        if finders.len() > FINDERS_UP_TO {
            for (i, v) in values.iter().enumerate() {
                let b = v.as_bytes();
                by_head.entry([b[0], b[1], b[2], b[3]]).or_default().push(i);
            }
        }
        Remembered { finders, by_head }
    }

    /// Every place a remembered value starts in `s`, with its length.
    fn find(&self, s: &[u8], spans: &mut Vec<Span>) {
        if self.by_head.is_empty() {
            for f in &self.finders {
                let n = f.needle().len();
                spans.extend(f.find_iter(s).map(|i| (i, i + n, KNOWN)));
            }
            return;
        }
        for i in 0..s.len().saturating_sub(3) {
            let Some(ids) = self.by_head.get(&[s[i], s[i + 1], s[i + 2], s[i + 3]]) else { continue };
            // Longest first: the first value that starts here covers the shorter ones.
            if let Some(n) =
                ids.iter().map(|&k| self.finders[k].needle()).find(|v| s[i..].starts_with(v)).map(<[u8]>::len)
            {
                spans.push((i, i + n, KNOWN));
            }
        }
    }
}

/// Remembers secret values for the rest of the process ([`secret_values`]: a `--set password=…`,
/// an inherited `HF_TOKEN`), so that they are redacted wherever they show up again: in a
/// positional argument, in what the target prints. Set once per process (by `debug-ima`); a
/// second call changes nothing and returns false. Values shorter than 6 bytes, numbers and
/// multi-line values are not kept.
pub fn remember(values: impl IntoIterator<Item = String>) -> bool {
    let mut values: Vec<String> = values.into_iter().filter(|v| worth_remembering(v)).collect();
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    values.dedup();
    REMEMBERED.set(Remembered::new(&values)).is_ok()
}

/// Every scanner over `s` (a line, or many lines: no rule crosses a newline), over `s` as it is
/// and, when it holds escapes (`&quot;`, `%3D`, `\u002F`), over `s` decoded, the spans found
/// there put back over the encoded bytes.
pub(super) fn scan(s: &[u8], spans: &mut Vec<Span>) {
    rules(s, spans);
    let Some((mut text, mut map)) = decoded(s) else { return };
    for level in 1..=LEVELS {
        let mut found = Vec::new();
        rules(&text, &mut found);
        original(&found, &map, spans);
        if level == LEVELS {
            break;
        }
        // One more level: what this one left encoded (`\\\"` in a JSON string's JSON, `%253D`).
        let Some((next, next_map)) = decoded(&text) else { break };
        map = next_map.iter().map(|&k| map[k]).collect();
        text = next;
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
                Some(b'a') if s.get(i + 2).is_some_and(|&b| is_blank(b)) => a_flag(s, i, spans),
                Some(b'p') => attached_p(s, i, spans),
                _ => {}
            }
        }
    }
}

/// The values [`remember`]ed for this process.
pub(super) fn remembered(s: &[u8], spans: &mut Vec<Span>) {
    if let Some(known) = REMEMBERED.get() {
        known.find(s, spans);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Many remembered values (the index of first bytes) find what one search each finds.
    #[test]
    fn many_remembered_values_are_found_as_few_are() {
        let many: Vec<String> = (0..50).map(|i| format!("s3cr3t-value-{i:03}-xyz")).collect();
        let few: Vec<String> = many[..3].to_vec();
        let line = b"a s3cr3t-value-001-xyz b s3cr3t-value-049-xyz s3cr3t-value-000-xy c";
        let spans = |r: &Remembered| {
            let mut v = Vec::new();
            r.find(line, &mut v);
            v.sort();
            v
        };
        let indexed = Remembered::new(&many);
        assert!(!indexed.by_head.is_empty());
        let found = spans(&indexed);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(&line[found[0].0..found[0].1], b"s3cr3t-value-001-xyz");
        assert_eq!(&line[found[1].0..found[1].1], b"s3cr3t-value-049-xyz");
        let searched = Remembered::new(&few);
        assert!(searched.by_head.is_empty());
        assert_eq!(spans(&searched), found[..1]);
        // Longest first: a value that starts another is covered by the longer one.
        let nested = Remembered::new(
            &(0..10).map(|i| "abcdefgh".repeat(1 + i % 2) + &i.to_string()).collect::<Vec<_>>(),
        );
        let mut v = Vec::new();
        nested.find(b"abcdefghabcdefgh1", &mut v);
        assert_eq!(v, [(0, 17, KNOWN)]);
    }
}

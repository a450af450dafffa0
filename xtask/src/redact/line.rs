//! Redaction of one line ([`redact_line`]) and of a stream of lines ([`Lines`], which follows
//! a PEM block), the prefilter that picks the lines to redact ([`candidates`]) and where a
//! too-long line may be cut ([`cut_point`]).
//!
//! Must not: allocate for a line with nothing to redact.

use std::borrow::Cow;
use std::sync::LazyLock;

use super::bytes::*;
use super::keys::*;
use super::names::*;
use super::pairs::*;
use super::scan::*;
use memchr::memmem::Finder;

/// Offsets in `text` where [`redact_line`] takes something out, sorted: the same scanners run
/// over the whole buffer (each rule stops at a newline), a few SIMD searches whose hits are
/// checked in a few byte comparisons, so that a caller redacts only the lines holding one. A
/// line without any is left unchanged by [`redact_line`]. A PEM private-key header is one too,
/// for a [`Lines`] to follow its block, whose lines must all reach it while
/// [`Lines::in_block`].
pub fn candidates(text: &[u8], out: &mut Vec<usize>) {
    static BEGIN: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"-----BEGIN "));
    let mut spans = Vec::new();
    scan(text, &mut spans);
    out.extend(spans.iter().map(|&(start, _, _)| start));
    // A PEM header alone changes nothing, but a [`Lines`] must see it to follow its block.
    out.extend(BEGIN.find_iter(text).filter(|&i| pem_header_end(text, i).is_some()));
    // So is a debugger's `print` of a secret-named expression: its value follows.
    static PRINTS: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"gdb) p"));
    for i in PRINTS.find_iter(text) {
        let start = memchr::memrchr(b'\n', &text[..i]).map_or(0, |k| k + 1);
        let end = memchr::memchr(b'\n', &text[i..]).map_or(text.len(), |k| i + k);
        if prints_secret(&text[start..end]) {
            out.push(start);
        }
    }
    out.sort_unstable();
    out.dedup();
}

/// Redacts one line by value, and names the kinds of secret found (each once). Borrowed, with no
/// allocation, when nothing matches. Redacting the result again changes nothing.
pub fn redact_line(line: &str) -> (Cow<'_, str>, Vec<&'static str>) {
    redact_spans(line, Vec::new())
}

/// The lines of a PEM block that a [`Lines`] redacts after its `BEGIN` line, at most: a key
/// that never ends stops being one.
pub(super) const PEM_LINES: u32 = 400;

/// Line-by-line redaction that follows a PEM private key over its lines: after a
/// `-----BEGIN … PRIVATE KEY-----` line, every line of the block (base64, `Proc-Type:`
/// headers, blank) up to its `-----END` line is redacted whole, whatever its length. Use one
/// per stream, in order; [`redact_line`] is the same without the memory of a block.
#[derive(Debug, Default, Clone)]
pub struct Lines {
    /// Lines left in the block; 0 outside one.
    left: u32,
    /// The last line was a debugger's `print` of a secret-named expression: the next one may be
    /// its value (`$1 = "…"`).
    printed: bool,
}

impl Lines {
    pub fn new() -> Lines {
        Lines::default()
    }

    /// Whether the next line is inside a PEM block: it must reach [`Lines::line`] even when
    /// [`candidates`] finds nothing in it.
    pub fn in_block(&self) -> bool {
        self.left > 0 || self.printed
    }

    /// Redacts one line (without its newline), as [`redact_line`] does, and the lines of a PEM
    /// block.
    pub fn line<'a>(&mut self, line: &'a str) -> (Cow<'a, str>, Vec<&'static str>) {
        let s = line.as_bytes();
        let mut extra = Vec::new();
        if self.left > 0 {
            match find(s, b"-----END") {
                Some(e) => {
                    self.left = 0;
                    push_trimmed(s, 0, e, &mut extra);
                }
                None if pem_body(s) => {
                    self.left -= 1;
                    push_trimmed(s, 0, s.len(), &mut extra);
                }
                None => self.left = 0,
            }
        }
        if self.left == 0 && opens_block(s) {
            self.left = PEM_LINES;
        }
        if std::mem::replace(&mut self.printed, false) {
            printed_value(s, &mut extra);
        }
        self.printed = prints_secret(s);
        redact_spans(line, extra)
    }
}

/// Where a line too long to be held whole ([`crate::process`] holds 1 MiB) may be cut, so that
/// each piece is redacted alone without a secret straddling the cut: after the last blank of
/// the last 64 KiB whose words before do not take a value (`Bearer`, `--token`, `password:`),
/// else after the last byte that no token holds, else the whole piece. The result is in
/// `1..=piece.len()` for a piece that is not empty.
pub fn cut_point(piece: &[u8]) -> usize {
    const WINDOW: usize = 64 << 10;
    let floor = piece.len().saturating_sub(WINDOW);
    let mut end = piece.len();
    let mut first = None;
    for _ in 0..16 {
        let Some(k) = memchr::memrchr2(b' ', b'\t', &piece[floor..end]) else { break };
        let p = floor + k;
        first.get_or_insert(p + 1);
        if !takes_value(piece, p) {
            return p + 1;
        }
        end = p;
    }
    if let Some(p) = first {
        return p;
    }
    let token_byte = |b: u8| b.is_ascii_alphanumeric() || b"_-./+=:@%~".contains(&b) || b >= 0x80;
    match piece[floor..].iter().rposition(|&b| !token_byte(b)) {
        Some(k) => floor + k + 1,
        None => piece.len(),
    }
}

/// Whether the words before the blank at `p` would take what follows as a secret.
pub(super) fn takes_value(piece: &[u8], p: usize) -> bool {
    const FILLER: &[u8] = b"Zq3Wv8Lm2Xc7Rt5Yb4";
    let from = p.saturating_sub(256);
    let mut probe = piece[from..=p].to_vec();
    probe.extend_from_slice(FILLER);
    let mut spans = Vec::new();
    scan(&probe, &mut spans);
    spans.iter().any(|&(_, end, _)| end > p + 1 - from)
}

/// Redacts `line`: the spans the scanners find, with `extra` (a PEM block's), then again to a
/// fixed point.
pub(super) fn redact_spans(line: &str, mut spans: Vec<Span>) -> (Cow<'_, str>, Vec<&'static str>) {
    scan(line.as_bytes(), &mut spans);
    if spans.is_empty() {
        return (Cow::Borrowed(line), Vec::new());
    }
    let mut labels = Vec::new();
    let mut current = apply(line, &mut spans, &mut labels);
    // A redaction can give a neighbour the boundary that it lacked; rescan to a fixed point so
    // that redacting twice is the same as once.
    for _ in 0..8 {
        spans.clear();
        scan(current.as_bytes(), &mut spans);
        if spans.is_empty() {
            break;
        }
        let next = apply(&current, &mut spans, &mut labels);
        if next == current {
            break;
        }
        current = next;
    }
    (Cow::Owned(current), labels)
}

/// Replaces the spans (merged where they overlap or touch) with [`MARK`]. Span ends are moved
/// to character boundaries (outwards), so that a lossy line stays valid.
pub(super) fn apply(line: &str, spans: &mut [Span], labels: &mut Vec<&'static str>) -> String {
    spans.sort_unstable_by_key(|&(start, end, _)| (start, end));
    let mut out = String::with_capacity(line.len() + MARK.len());
    let mut copied = 0;
    let mut i = 0;
    while i < spans.len() {
        let (start, mut end, _) = spans[i];
        while i < spans.len() && spans[i].0 <= end {
            end = end.max(spans[i].1);
            if !labels.contains(&spans[i].2) {
                labels.push(spans[i].2);
            }
            i += 1;
        }
        let mut start = start.max(copied);
        while !line.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = end.min(line.len());
        while !line.is_char_boundary(end) {
            end += 1;
        }
        let start = start.max(copied);
        out.push_str(&line[copied..start]);
        out.push_str(MARK);
        copied = end.max(start);
    }
    out.push_str(&line[copied..]);
    out
}

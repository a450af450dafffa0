//! The caps of the host parser and the small readers its files share: source positions
//! (`FILE:LINE`, `FILE LINE`), the rank of a NCCL watchdog line, a device assert's
//! `FILE:LINE: FUNC` prefix and thread ranges, case-insensitive search, cutting, hashing.
//!
//! Must not: do I/O, spawn processes or print. Every cap of the parser's memory is here.

use crate::findings::{parse_source_loc, SourceLoc, Symptom};
use std::hash::{DefaultHasher, Hash, Hasher};

/// Frames kept per traceback: the innermost ones (a traceback that never ends stays bounded).
pub(super) const MAX_FRAMES: usize = 64;
/// Distinct symptoms kept per file.
pub(super) const MAX_SYMPTOMS: usize = 1024;
/// Distinct device-assert sites kept per file.
pub(super) const MAX_SITES: usize = 1024;
/// Ranks whose traceback state is tracked at once (least recently seen is dropped).
pub(super) const MAX_RANKS: usize = 64;
/// Lines of a rank that are not part of its open traceback before it is given up.
pub(super) const MAX_NOISE: u32 = 64;
/// Lines after a non-CUDA exception line in which a CUDA error still belongs to it
/// (multi-line messages such as NCCL's `unhandled cuda error ... Cuda failure '...'`).
pub(super) const POST_WINDOW: u64 = 8;
/// Lines after a symptom in which PyTorch's `Exception raised from F at FILE:LINE` belongs to it.
pub(super) const RAISED_WINDOW: u64 = 64;
/// Lines in which a `what():` line repeating an earlier report of the same error is folded.
pub(super) const WHAT_WINDOW: u64 = 4096;
/// Longest message kept (bytes).
pub(super) const MAX_MESSAGE: usize = 256;
/// Longest call kept (bytes).
pub(super) const MAX_CALL: usize = 512;
/// Chained exceptions remembered per rank for de-duplication.
pub(super) const MAX_CHAIN: usize = 16;

/// File name endings that make a `FILE:LINE` token a source position.
pub(super) const SOURCE_EXTS: &[&str] =
    &[".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".hxx", ".py", ".pyx"];

/// A source position in `s`: `FILE:LINE`, `FILE LINE` (`GPUassert: ... ima.cu 40`),
/// `FILE, line N`, `'FILE' on line N`, `FILE at line N`; FILE must have a source extension.
pub(super) fn find_loc(s: &str) -> Option<SourceLoc> {
    const PUNCT: &[char] = &['\'', '"', '(', ')', ',', ';', '[', ']', '<', '>', '`'];
    let mut toks = s.split_ascii_whitespace().take(64).peekable();
    while let Some(tok) = toks.next() {
        let t = tok.trim_matches(PUNCT).trim_end_matches([':', '.']);
        if let Some(loc) = parse_source_loc(t) {
            if has_source_ext(&loc.file) {
                return Some(short_loc(loc));
            }
        }
        if has_source_ext(t) {
            let mut look = toks.clone();
            for _ in 0..3 {
                let Some(n) = look.next() else { break };
                let n = n.trim_matches(PUNCT).trim_end_matches(['.', ':']);
                if let Ok(line) = n.parse::<u32>() {
                    return Some(SourceLoc { file: cut(t, MAX_CALL).to_string(), line });
                }
                if !matches!(n, "line" | "at" | "on" | "") {
                    break;
                }
            }
        }
    }
    None
}

/// A position with its file name cut to a sane length.
pub(super) fn short_loc(mut loc: SourceLoc) -> SourceLoc {
    if loc.file.len() > MAX_CALL {
        loc.file = cut(&loc.file, MAX_CALL).to_string();
    }
    loc
}

pub(super) fn has_source_ext(f: &str) -> bool {
    let base = f.rsplit('/').next().unwrap_or(f);
    base.len() > 2 && SOURCE_EXTS.iter().any(|e| base.len() > e.len() && base.ends_with(e))
}

/// `[PG ID 0 PG GUID 0(default_pg) Rank 1]` -> 1.
pub(in crate::findings) fn infer_rank(s: &str) -> Option<u32> {
    let mut from = 0;
    while let Some(p) = s[from..].find("Rank ") {
        let at = from + p + "Rank ".len();
        let digits = s.as_bytes()[at..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits > 0 && s.as_bytes().get(at + digits) == Some(&b']') {
            return s[at..at + digits].parse().ok();
        }
        from = at;
    }
    None
}

/// Splits `FILE:LINE: FUNC` (possibly after other output on the same line, such as a
/// progress bar) into the position and the function.
pub(super) fn split_assert_prefix(prefix: &str) -> (Option<SourceLoc>, Option<&str>) {
    let mut from = 0;
    while let Some(p) = prefix[from..].find(": ") {
        let at = from + p;
        let left = &prefix[..at];
        let start = left.rfind([' ', '\t', ']', '\r']).map_or(0, |i| i + 1);
        if let Some(loc) = parse_source_loc(&left[start..]) {
            return (Some(loc), Some(prefix[at + 2..].trim()));
        }
        from = at + 2;
    }
    (None, None)
}

pub(super) fn widen(r: &mut [[u32; 3]; 2], d: [u32; 3]) {
    for k in 0..3 {
        r[0][k] = r[0][k].min(d[k]);
        r[1][k] = r[1][k].max(d[k]);
    }
}

pub(super) fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Case-insensitive search for an ASCII lower-case needle that starts with a letter.
pub(super) fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let first = *needle.first()?;
    memchr::memchr2_iter(first, first.to_ascii_uppercase(), hay)
        .find(|&i| hay.get(i..i + needle.len()).is_some_and(|w| w.eq_ignore_ascii_case(needle)))
}

pub(super) use crate::model::text::cut;

pub(super) fn hash_str(s: &str) -> u64 {
    let mut h = DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// A symptom's content, all but the line it was printed on.
pub(super) fn symptom_key(s: &Symptom) -> u64 {
    let mut h = DefaultHasher::new();
    s.message.hash(&mut h);
    s.reported_at.hash(&mut h);
    s.call.hash(&mut h);
    s.exception.hash(&mut h);
    s.rank.hash(&mut h);
    for f in &s.python_frames {
        f.file.hash(&mut h);
        f.line.hash(&mut h);
        f.function.hash(&mut h);
    }
    h.finish()
}

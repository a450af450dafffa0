//! The cheap test every line of a log goes through first: whether it holds one of the
//! fixed texts the host parser reads, or a `CUDA error` / `cudaErrorX` / `CUDA_ERROR_X`
//! mention, found by a rare byte so that a line that is nothing of ours costs a few checks.
//!
//! Must not: do I/O, spawn processes, print, or allocate: it only looks at bytes.

use super::text::is_ident;

/// Fixed texts that make a line worth reading (besides the `cuda` forms, see [`triggers`]),
/// each with the offset of its first `c`, `C`, `g`, `G` or backtick: the bytes searched for.
pub(super) const TRIGGERS: &[(&[u8], usize)] = &[
    (b"an illegal memory access was encountered", rare_offset(b"an illegal memory access was encountered")),
    (b"an illegal instruction was encountered", rare_offset(b"an illegal instruction was encountered")),
    (b"misaligned address", rare_offset(b"misaligned address")),
    (b"device-side assert triggered", rare_offset(b"device-side assert triggered")),
    (b"unspecified launch failure", rare_offset(b"unspecified launch failure")),
    (b"the launch timed out and was terminated", rare_offset(b"the launch timed out and was terminated")),
    (b"invalid program counter", rare_offset(b"invalid program counter")),
    (b"hardware stack error", rare_offset(b"hardware stack error")),
    (
        b"operation not supported on global/shared address space",
        rare_offset(b"operation not supported on global/shared address space"),
    ),
    (b"GPUassert: ", rare_offset(b"GPUassert: ")),
    (b"Assertion `", rare_offset(b"Assertion `")),
];

pub(super) const fn is_rare(c: u8) -> bool {
    matches!(c, b'c' | b'C' | b'g' | b'G' | b'`')
}

pub(super) const fn rare_offset(s: &[u8]) -> usize {
    let mut i = 0;
    while i < s.len() {
        if is_rare(s[i]) {
            return i;
        }
        i += 1;
    }
    panic!("trigger without a rare byte")
}

/// True when the line holds something this parser reads: a `CUDA error` / `Cuda failure`
/// mention, a `cudaErrorX` / `CUDA_ERROR_X` name, a known error text, `GPUassert: ` or
/// `Assertion ``. The common path: two SIMD byte searches for rare bytes (`c C g` and
/// `G ``) and a few byte comparisons at each hit; no allocation.
pub(super) fn triggers(b: &[u8]) -> bool {
    memchr::memchr3_iter(b'c', b'C', b'g', b).any(|p| trigger_at(b, p))
        || memchr::memchr2_iter(b'G', b'`', b).any(|p| trigger_at(b, p))
}

pub(super) fn trigger_at(b: &[u8], p: usize) -> bool {
    let c = b[p];
    if (c == b'c' || c == b'C') && cuda_mention_at(b, p) {
        return true;
    }
    TRIGGERS.iter().any(|&(t, off)| t[off] == c && p >= off && b[p - off..].starts_with(t))
}

/// `cuda error` / `cuda failure` (any case, word-bounded), `cudaErrorX`, `CUDA_ERROR_X` at `p`.
pub(super) fn cuda_mention_at(b: &[u8], p: usize) -> bool {
    let Some(w) = b.get(p..p + 4) else { return false };
    if !w.eq_ignore_ascii_case(b"cuda") || (p > 0 && is_ident(b[p - 1])) {
        return false;
    }
    let rest = &b[p + 4..];
    let ci = |n: &[u8]| {
        rest.get(..n.len()).is_some_and(|r| r.eq_ignore_ascii_case(n))
            && rest.get(n.len()).is_none_or(|c| !c.is_ascii_alphanumeric())
    };
    ci(b" error")
        || ci(b" failure")
        || (rest.starts_with(b"Error") && rest.get(5).is_some_and(u8::is_ascii_uppercase))
        || (rest.starts_with(b"_ERROR_") && w == b"CUDA")
}

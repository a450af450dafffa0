//! CUDA errors in a piece of text: the known `cudaGetErrorString` texts, the fault enum
//! names, the message after a `CUDA error` marker, and the CUDA/NCCL call it was about.
//!
//! Must not: do I/O, spawn processes or print.

use super::text::{cut, find_ci, has_source_ext, is_ident, MAX_CALL, MAX_MESSAGE};
use crate::findings::ErrorClass;

/// `cudaGetErrorString` texts of errors that mean a kernel faulted: recognised anywhere.
pub(super) const KNOWN: &[&str] = &[
    "an illegal memory access was encountered",
    "an illegal instruction was encountered",
    "misaligned address",
    "device-side assert triggered",
    "unspecified launch failure",
    "the launch timed out and was terminated",
    "invalid program counter",
    "hardware stack error",
    "operation not supported on global/shared address space",
];

/// Enum names of the same errors (runtime and driver API), recognised on their own, with
/// the text they stand for (used to classify them).
pub(super) const FAULT_ENUMS: &[(&str, &str)] = &[
    ("cudaErrorIllegalAddress", "an illegal memory access was encountered"),
    ("cudaErrorMisalignedAddress", "misaligned address"),
    ("cudaErrorAssert", "device-side assert triggered"),
    ("cudaErrorLaunchFailure", "unspecified launch failure"),
    ("cudaErrorIllegalInstruction", "an illegal instruction was encountered"),
    ("cudaErrorHardwareStackError", "hardware stack error"),
    ("cudaErrorInvalidPc", "invalid program counter"),
    ("cudaErrorLaunchTimeout", "the launch timed out and was terminated"),
    ("cudaErrorInvalidAddressSpace", "operation not supported on global/shared address space"),
    ("CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"),
    ("CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"),
    ("CUDA_ERROR_ASSERT", "device-side assert triggered"),
    ("CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"),
    ("CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered"),
    ("CUDA_ERROR_HARDWARE_STACK_ERROR", "hardware stack error"),
    ("CUDA_ERROR_INVALID_PC", "invalid program counter"),
    ("CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"),
    ("CUDA_ERROR_INVALID_ADDRESS_SPACE", "operation not supported on global/shared address space"),
];

/// A CUDA error found in a piece of text.
pub(super) struct Found<'a> {
    pub(super) message: &'a str,
    pub(super) error: ErrorClass,
    /// Where the error text starts: positions and calls are looked for from here on, so a
    /// log prefix (`[E1130 ... ProcessGroupNCCL.cpp:2119]`) is not taken for one.
    pub(super) anchor: usize,
}

/// Finds a CUDA error in `s`: a known error text, a fault enum name, or a `CUDA error` /
/// `cudaErrorX` mention with its message.
pub(super) fn find_cuda_error(s: &str) -> Option<Found<'_>> {
    // Source code and format strings (`fprintf(stderr, "CUDA error at %s:%d: ...`) are not reports.
    if s.contains("printf(") || s.contains("<< \"") {
        return None;
    }
    let marker = marker_pos(s);
    for k in KNOWN {
        if let Some(p) = s.find(k) {
            let message = &s[p..p + k.len()];
            if s[p + k.len()..].starts_with('`') && s[..p].contains('`') {
                // `CUDA error: unspecified launch failure` quoted in prose (a README).
                continue;
            }
            let anchor = marker.map_or(p, |m| m.min(p));
            return Some(Found { message, error: ErrorClass::from_message(message), anchor });
        }
    }
    if let Some((p, tok)) = enum_token(s) {
        let fault = FAULT_ENUMS.iter().find(|(n, _)| *n == tok);
        if fault.is_some() || marker.is_some() {
            let error = ErrorClass::from_message(fault.map_or(tok, |(_, m)| m));
            return Some(Found { message: tok, error, anchor: marker.map_or(p, |m| m.min(p)) });
        }
    }
    if let Some(g) = s.find("GPUassert: ") {
        // `GPUassert: %s %s %d` (message, file, line): any message, since it is
        // `cudaGetErrorString`'s.
        let rest = &s[g + "GPUassert: ".len()..];
        let mut it = rest.trim_end().rsplitn(3, ' ');
        let (line, file, msg) = (it.next()?, it.next()?, it.next()?);
        if line.bytes().all(|c| c.is_ascii_digit()) && has_source_ext(file) {
            let msg = cut(msg.trim(), MAX_MESSAGE);
            if !msg.is_empty() {
                return Some(Found { message: msg, error: ErrorClass::from_message(msg), anchor: g });
            }
        }
    }
    let m = marker?;
    let message = marker_message(&s[m..])?;
    Some(Found { message, error: ErrorClass::from_message(message), anchor: m })
}

/// Where `CUDA error` (any case; not `CUDA errors`) or `Cuda failure` starts.
pub(super) fn marker_pos(s: &str) -> Option<usize> {
    for needle in ["cuda error", "cuda failure"] {
        let mut from = 0;
        while let Some(p) = find_ci(&s.as_bytes()[from..], needle.as_bytes()) {
            let at = from + p;
            let end = at + needle.len();
            let before_ok = at == 0 || !is_ident(s.as_bytes()[at - 1]);
            let after_ok = s.as_bytes().get(end).is_none_or(|c| !c.is_ascii_alphanumeric());
            if before_ok && after_ok {
                return Some(at);
            }
            from = end;
        }
    }
    None
}

/// The message after a `CUDA error` marker: after its last top-level `: ` (`CUDA error at
/// f.cu:32: cudaMemcpy(...): invalid argument`), else the first quoted text.
pub(super) fn marker_message(s: &str) -> Option<&str> {
    // `s` starts with the marker: `cuda error` or `cuda failure`, in any case.
    let mlen =
        if s.as_bytes().get(..10).is_some_and(|m| m.eq_ignore_ascii_case(b"cuda error")) { 10 } else { 12 };
    let rest = s.get(mlen..)?;
    let rb = rest.as_bytes();
    if !matches!(rb.first(), Some(b':' | b' ' | b'(' | b'[' | b'=')) {
        return None;
    }
    let mut depth = 0i32;
    let mut tick = false;
    let mut split = None;
    for (i, &c) in rb.iter().enumerate() {
        match c {
            b'`' => tick = !tick,
            b'(' | b'[' | b'{' if !tick => depth += 1,
            b')' | b']' | b'}' if !tick => depth -= 1,
            b':' if !tick && depth <= 0 && rb.get(i + 1) == Some(&b' ') => split = Some(i + 2),
            _ => {}
        }
    }
    let msg = match split {
        Some(i) => rest[i..].trim(),
        None => {
            let q = rest.find(['"', '\''])?;
            let qc = rest.as_bytes()[q];
            let inner = &rest[q + 1..];
            let e = inner.find(qc as char)?;
            inner[..e].trim()
        }
    };
    // `out of memory. In file 'x.cu' on line 5`: keep the sentence.
    let msg = msg.split(". ").next().unwrap_or(msg).trim();
    let msg = cut(msg, MAX_MESSAGE);
    let format_string = ["%s", "%d", "%i", "%u", "\\n"].iter().any(|f| msg.contains(f));
    // An odd backtick: the text is quoted in prose (`CUDA error: ...` in a README).
    let unbalanced = msg.bytes().filter(|&c| c == b'`').count() % 2 == 1;
    (!msg.is_empty() && !format_string && !unbalanced).then_some(msg)
}

/// A `cudaErrorX` or `CUDA_ERROR_X` enum name, word-bounded.
pub(super) fn enum_token(s: &str) -> Option<(usize, &str)> {
    let b = s.as_bytes();
    for (prefix, upper_only) in [("cudaError", false), ("CUDA_ERROR_", true)] {
        let mut from = 0;
        while let Some(p) = s[from..].find(prefix) {
            let at = from + p;
            let end = at + prefix.len();
            from = end;
            if at > 0 && is_ident(b[at - 1]) {
                continue;
            }
            if !b.get(end).is_some_and(|c| c.is_ascii_uppercase()) {
                continue;
            }
            let len = b[end..]
                .iter()
                .take_while(|&&c| {
                    if upper_only {
                        c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_'
                    } else {
                        c.is_ascii_alphanumeric()
                    }
                })
                .count();
            return Some((at, &s[at..end + len]));
        }
    }
    None
}

/// The first CUDA/NCCL call expression in `s`: `cudaMemcpy(h, d, n * sizeof(int), ...)`.
pub(super) fn find_call(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    let mut i = 0;
    while i + 2 < b.len() {
        let starts = (b[i] == b'c' && b[i + 1] == b'u') || (b[i] == b'n' && b[i + 1] == b'c');
        if !starts || (i > 0 && is_ident(b[i - 1])) {
            i += 1;
            continue;
        }
        let id_len = b[i..].iter().take_while(|&&c| is_ident(c)).count();
        let name = &s[i..i + id_len];
        let open = i + id_len;
        if b.get(open) == Some(&b'(')
            && (name.starts_with("cu") || name.starts_with("nccl"))
            && !matches!(name, "cudaGetErrorString" | "cudaGetErrorName")
        {
            let mut depth = 0usize;
            for (j, &c) in b[open..].iter().enumerate().take(MAX_CALL) {
                match c {
                    b'(' => depth += 1,
                    b')' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(&s[i..open + j + 1]);
                        }
                    }
                    _ => {}
                }
            }
            return None;
        }
        i += id_len.max(1);
    }
    None
}

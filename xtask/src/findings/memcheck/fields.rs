//! The fields of a compute-sanitizer record, shared by the text, XML and racecheck readers:
//! `Program hit ...`, the kernel's name, an access's class, header and nearest allocation,
//! host and device frames, `(x,y,z)` triples, grouped decimals, and fields clipped to the cap.
//!
//! Must not: do I/O, print, or panic on any input.

use super::caps::MAX_FIELD;
use crate::findings::{names, parse_hex, parse_source_loc, Dim3, ErrorClass, Frame, Nearest, SourceLoc};

/// Parses `Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch
/// failure" on CUDA API call to cudaDeviceSynchronize.` into (error, code, message, api).
pub(crate) fn parse_program_hit(text: &str) -> Option<(&str, Option<u32>, &str, &str)> {
    let rest = text.trim().strip_prefix("Program hit ")?;
    let (error, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    let code = rest
        .strip_prefix("(error ")
        .and_then(|r| r.split_once(')'))
        .and_then(|(n, _)| n.trim().parse::<u32>().ok());
    let (head, api) = match rest.rsplit_once(" on CUDA API call to ") {
        Some((h, a)) => (h, a.trim().trim_end_matches('.').trim()),
        None => (rest, ""),
    };
    let message = match head.split_once(" due to ") {
        Some((_, m)) => {
            let m = m.trim();
            m.strip_prefix('"').and_then(|m| m.strip_suffix('"')).unwrap_or(m)
        }
        None => "",
    };
    Some((error, code, message, if api.is_empty() { "?" } else { api }))
}

/// The kernel as a finding names it, and its mangled name where the tool printed one.
/// `__assertfail` (where a device assert traps) is not the user's kernel: `None`.
pub(crate) fn kernel_name(func: &str) -> (Option<String>, Option<String>) {
    let func = func.trim();
    if func.is_empty() || func.starts_with("__assertfail") {
        return (None, None);
    }
    if func.starts_with("_Z") {
        if let Some(d) = names::demangle(func) {
            return (Some(names::compact_signature(&d)), Some(func.to_string()));
        }
    }
    (Some(names::compact_signature(func)), None)
}

/// Error class of an access record, from its header and the `... is <problem>` phrase.
pub(crate) fn access_class(header: &str, problem: &str) -> ErrorClass {
    if problem.contains("misaligned") || header.contains("isaligned") {
        ErrorClass::MisalignedAccess
    } else {
        ErrorClass::InvalidAccess
    }
}

/// Cuts a field to [`MAX_FIELD`] bytes at a char boundary.
pub(crate) fn clip(s: &str) -> &str {
    crate::model::text::cut(s, MAX_FIELD)
}

/// Appends `s` to `buf`, never growing it past [`MAX_FIELD`].
pub(crate) fn push_clipped(buf: &mut String, s: &str) {
    let room = MAX_FIELD.saturating_sub(buf.len());
    if s.len() <= room {
        buf.push_str(s);
    } else {
        let mut end = room;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        buf.push_str(&s[..end]);
    }
}

/// Parses a decimal with thousands separators (`31,999,997,952`; `.` and `'` are accepted
/// for other locales) without allocating.
pub(crate) fn grouped_u64(s: &str) -> Option<u64> {
    let mut v: u64 = 0;
    let mut digits = 0;
    for b in s.trim().bytes() {
        match b {
            b'0'..=b'9' => {
                v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
                digits += 1;
            }
            b',' | b'.' | b'\'' => {}
            _ => return None,
        }
    }
    (digits > 0).then_some(v)
}

// ---------------------------------------------------------------------------------------
// Text records.

/// Splits the part after `at ` (or `Device Frame: `): `scatter_far(int *, int)+0xf0 in
/// ima_far.cu:13` into (function, `0xf0`, `ima_far.cu:13`). Without -lineinfo there is no
/// ` in FILE:LINE`.
pub(crate) fn split_position(s: &str) -> (&str, Option<&str>, Option<&str>) {
    let s = s.trim();
    if let Some(p) = s.rfind("+0x") {
        let func = &s[..p];
        let rest = &s[p + 1..];
        let (off, loc) = match rest.find(' ') {
            Some(q) => (&rest[..q], rest[q..].trim_start().strip_prefix("in ").map(str::trim)),
            None => (rest, None),
        };
        return (func, Some(off), loc.filter(|l| !l.is_empty()));
    }
    match s.rsplit_once(" in ") {
        Some((f, l)) if parse_source_loc(l).is_some() => (f, None, Some(l.trim())),
        _ => (s, None, None),
    }
}

/// Parses what follows `Host Frame:`: `main [0x8dca] in f_li`, ` [0x2062a] in
/// libcudart.so.13`, `ncclCommInitRankConfig in init.cc:2162 [0x8a0b5] in libnccl.so.2`,
/// or a Python frame `replay in graphs.py:139`.
pub(crate) fn parse_host_frame(s: &str) -> Frame {
    let s = s.trim();
    if let Some(p) = s.rfind("[0x") {
        let head = s[..p].trim();
        let module = s[p..].split_once("] in ").map(|(_, m)| m.trim()).filter(|m| !m.is_empty());
        let (function, file, line) = match head.rsplit_once(" in ") {
            Some((f, l)) => match parse_source_loc(l) {
                Some(loc) => (f.trim(), Some(loc.file), Some(loc.line)),
                None => (head, None, None),
            },
            None => (head, None, None),
        };
        return Frame {
            function: (!function.is_empty()).then(|| function.to_string()),
            file,
            line,
            module: module.map(str::to_string),
            python: false,
        };
    }
    if let Some((f, l)) = s.rsplit_once(" in ") {
        if let Some(loc) = parse_source_loc(l) {
            let f = f.trim();
            return Frame {
                function: (!f.is_empty()).then(|| f.to_string()),
                file: Some(loc.file),
                line: Some(loc.line),
                module: None,
                python: true,
            };
        }
    }
    Frame { function: (!s.is_empty()).then(|| s.to_string()), ..Frame::default() }
}

/// Parses what follows `Device Frame:`: `__assertfail+0x1930`, `f+0x12c0 in x.py:122`.
pub(super) fn parse_device_frame(s: &str) -> Frame {
    let (func, _, loc) = split_position(s);
    let loc = loc.and_then(parse_source_loc);
    let func = func.trim();
    let function = if func.starts_with("_Z") {
        names::demangle(func).map(|d| names::compact_signature(&d))
    } else {
        None
    }
    .or_else(|| (!func.is_empty()).then(|| names::compact_signature(func)));
    Frame {
        function,
        line: loc.as_ref().map(|l| l.line),
        file: loc.map(|l| l.file),
        module: None,
        python: false,
    }
}

/// Parses `(0,0,0) in block (2,0,0)` (after `by thread `) without allocating.
pub(super) fn parse_by_thread(s: &[u8]) -> Option<(Dim3, Dim3)> {
    let (thread, n) = dim3_prefix(s)?;
    let rest = s.get(n..)?.strip_prefix(b" in block ")?;
    let (block, _) = dim3_prefix(rest)?;
    Some((thread, block))
}

/// Parses `(x,y,z)` at the start of `s`, returning it and the bytes used.
pub(crate) fn dim3_prefix(s: &[u8]) -> Option<(Dim3, usize)> {
    let mut i = 1;
    if s.first() != Some(&b'(') {
        return None;
    }
    let mut d = [0u32; 3];
    for (k, v) in d.iter_mut().enumerate() {
        let start = i;
        while let Some(c) = s.get(i).filter(|c| c.is_ascii_digit()) {
            *v = v.checked_mul(10)?.checked_add(u32::from(c - b'0'))?;
            i += 1;
        }
        let sep = if k == 2 { b')' } else { b',' };
        if i == start || s.get(i) != Some(&sep) {
            return None;
        }
        i += 1;
    }
    Some((d, i))
}

/// Splits `Invalid __global__ write of size 4 bytes` into (space, kind, size).
pub(super) fn parse_access_header(header: &str) -> (Option<String>, Option<String>, Option<u64>) {
    let Some(rest) = header.strip_prefix("Invalid ") else {
        return (None, None, None);
    };
    let (body, size) = match rest.split_once(" of size ") {
        Some((b, s)) => (b, s.split_whitespace().next().and_then(grouped_u64)),
        None => (rest, None),
    };
    let mut words = body.split_whitespace();
    let space = words.next().map(str::to_string);
    let kind: Vec<&str> = words.collect();
    let kind = (!kind.is_empty()).then(|| kind.join(" "));
    (space, kind, size)
}

/// Parses `and is 31,999,997,952 bytes before the nearest allocation at 0x7f283c800000 of
/// size 4,096 bytes`.
pub(super) fn parse_nearest(s: &str) -> Option<Nearest> {
    let rest = s.strip_prefix("and is ")?;
    let (distance, rest) = rest.split_once(" byte")?;
    let rest = rest.trim_start_matches('s').trim_start();
    let before = if rest.starts_with("before") {
        true
    } else if rest.starts_with("after") {
        false
    } else {
        return None;
    };
    let (_, rest) = rest.split_once(" at ")?;
    let (alloc, rest) = rest.split_once(" of size ")?;
    let size = rest.split_whitespace().next()?;
    Some(Nearest {
        distance: grouped_u64(distance)?,
        before,
        allocation: parse_hex(alloc)?,
        allocation_size: grouped_u64(size)?,
    })
}

/// `SourceLoc` from an XML `<path>`/`<line>` pair (shared with the XML reader).
pub(crate) fn source_loc(path: &str, line: &str) -> Option<SourceLoc> {
    let path = path.trim();
    let line: u32 = line.trim().parse().ok()?;
    (!path.is_empty()).then(|| SourceLoc { file: clip(path).to_string(), line })
}

//! The lines of a cuda-gdb session that place a fault: `bt` frames (launch shape, arguments,
//! `at FILE:LINE` with its `inlined from` chain), `The exception was triggered at PC ...`,
//! the focus line, the exception's class and the `info locals` / `info args` lines.
//!
//! Must not: do I/O, spawn processes, print, or panic on any input.

use super::text::{cut, is_ident, open_of_last_group, parse_args, split_top, MAX_ITEMS, MAX_NAME};
use crate::findings::{parse_dim3, parse_hex, parse_source_loc, Dim3, ErrorClass, Frame, SourceLoc};

/// One frame as cuda-gdb printed it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct GdbFrame {
    pub(super) function: String,
    pub(super) file: Option<String>,
    pub(super) line: Option<u32>,
    pub(super) module: Option<String>,
    pub(super) grid: Option<Dim3>,
    pub(super) block_dim: Option<Dim3>,
    pub(super) args: Vec<(String, String)>,
    /// Printed with a `<<<grid,block>>>` launch shape: a kernel (device) frame.
    pub(super) launch: bool,
    /// `at FILE:LINE in FN inlined from FILE:LINE ...`: the `inlined from` positions, outwards.
    pub(super) inlined: Vec<SourceLoc>,
}

impl GdbFrame {
    pub(super) fn to_frame(&self) -> Frame {
        Frame {
            function: Some(self.function.clone()).filter(|f| !f.is_empty()),
            file: self.file.clone(),
            line: self.line,
            module: self.module.clone(),
            python: false,
        }
    }

    pub(super) fn location(&self) -> Option<SourceLoc> {
        Some(SourceLoc { file: self.file.clone()?, line: self.line? })
    }

    /// The frame's position and the positions it was inlined into, innermost first.
    pub(super) fn chain(&self) -> Vec<SourceLoc> {
        self.location().into_iter().chain(self.inlined.iter().cloned()).collect()
    }
}

/// The focus line's coordinates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Focus {
    pub(super) block: Option<Dim3>,
    pub(super) thread: Option<Dim3>,
    pub(super) device: Option<u32>,
    pub(super) sm: Option<u32>,
    pub(super) warp: Option<u32>,
    pub(super) lane: Option<u32>,
}

/// What `The exception was triggered at ...` said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Triggered {
    pub(super) pc: Option<u64>,
    pub(super) function: Option<String>,
    /// The innermost inlined function, where the line names one (`sm_30_intrinsics.hpp:110 in
    /// _ZN..10__syncwarpEj inlined from expert_offsets.cu:17`).
    pub(super) inner: Option<String>,
    /// Innermost first; the last is the user's line.
    pub(super) chain: Vec<SourceLoc>,
}

/// Classifies a cuda-gdb exception name (`Warp Illegal Address`, `Warp Out-of-range Address`).
pub(super) fn error_class(name: &str) -> ErrorClass {
    let e = ErrorClass::from_message(name);
    if !e.is_device_fault() && name.contains('-') {
        let alt = ErrorClass::from_message(&name.replace('-', " "));
        if alt.is_device_fault() {
            return alt;
        }
    }
    e
}

/// `FILE:LINE` optionally followed by ` in FUNCTION`.
pub(super) fn loc_of(s: &str) -> Option<SourceLoc> {
    let s = s.trim();
    let s = s.split_once(" in ").map(|(l, _)| l).unwrap_or(s);
    if s.contains(' ') {
        return None;
    }
    parse_source_loc(s)
}

/// `PC 0x7f9a577a00f0  scatter_far(int*, int)  (ima_far.cu:13)`, also with the
/// location missing, the function missing, or `(a.cu:5 in f(int*) inlined from b.cu:13)`
/// and trailing ` inlined from FILE:LINE` positions.
pub(super) fn parse_triggered(rest: &str) -> Option<Triggered> {
    let rest = rest.trim().strip_prefix("PC ")?;
    let (pc, mut r) = match rest.find(char::is_whitespace) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let mut t = Triggered { pc: parse_hex(pc), ..Triggered::default() };
    r = r.trim();
    // Trailing ` inlined from FILE:LINE` outside the parentheses, outermost last.
    let mut trailing = Vec::new();
    while let Some((head, tail)) = r.rsplit_once(" inlined from ") {
        if tail.contains(['(', ')']) {
            break;
        }
        match loc_of(tail) {
            Some(loc) if trailing.len() < MAX_ITEMS => {
                trailing.push(loc);
                r = head.trim_end();
            }
            _ => break,
        }
    }
    trailing.reverse();
    let mut func = r;
    if let Some(o) = open_of_last_group(r) {
        let inner = &r[o + 1..r.len() - 1];
        let mut segs = inner.split(" inlined from ");
        let head = segs.next();
        if let Some(first) = head.and_then(loc_of) {
            t.inner = head.and_then(|h| h.split_once(" in ")).map(|(_, f)| cut(f.trim(), MAX_NAME));
            t.chain.push(first);
            for seg in segs {
                if let Some(loc) = loc_of(seg) {
                    if t.chain.len() < MAX_ITEMS {
                        t.chain.push(loc);
                    }
                }
            }
            func = r[..o].trim();
        }
    }
    t.chain.extend(trailing);
    t.chain.truncate(MAX_ITEMS);
    let func = func.trim();
    if !func.is_empty() {
        t.function = Some(func.to_string());
    }
    Some(t)
}

/// The inside of `[Current focus set to CUDA kernel 0, grid 10, block (16902,0,0), ...]`.
pub(super) fn parse_focus(s: &str) -> Focus {
    let s = s.trim_end();
    let s = s.strip_suffix(']').unwrap_or(s);
    let mut f = Focus::default();
    for piece in split_top(s, b',') {
        let Some((key, value)) = piece.trim().rsplit_once(' ') else {
            continue;
        };
        match key.trim() {
            "block" => f.block = parse_dim3(value),
            "thread" => f.thread = parse_dim3(value),
            "device" => f.device = value.parse().ok(),
            "sm" => f.sm = value.parse().ok(),
            "warp" => f.warp = value.parse().ok(),
            "lane" => f.lane = value.parse().ok(),
            _ => {}
        }
    }
    f
}

/// `#N  ...` -> (N, frame).
pub(super) fn parse_frame_line(line: &str) -> Option<(u32, GdbFrame)> {
    let rest = line.strip_prefix('#')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || !rest[digits..].starts_with(' ') {
        return None;
    }
    let n = rest[..digits].parse().ok()?;
    Some((n, parse_frame_body(rest[digits..].trim())?))
}

/// `[0x... in ]FUNC[<<<(g),(b)>>>] [(ARGS)] [at FILE:LINE | from LIB]`.
pub(super) fn parse_frame_body(body: &str) -> Option<GdbFrame> {
    let mut s = body.trim();
    if s.starts_with("0x") {
        let (_, tail) = s.split_once(" in ")?;
        s = tail.trim_start();
    }
    let mut f = GdbFrame::default();
    if let Some((head, tail)) = s.rsplit_once(" at ") {
        if let Some(loc) = parse_source_loc(tail).filter(|_| !tail.trim().contains(' ')) {
            f.file = Some(loc.file);
            f.line = Some(loc.line);
            s = head.trim_end();
        } else if let Some((first, outer)) = inline_chain(tail) {
            // `at hang_flag.cu:8 in _Z13wait_for_flagPViPi inlined from hang_flag.cu:15`.
            f.file = Some(first.file);
            f.line = Some(first.line);
            f.inlined = outer;
            s = head.trim_end();
        }
    }
    if f.file.is_none() {
        if let Some((head, tail)) = s.rsplit_once(" from ") {
            let tail = tail.trim();
            if !tail.is_empty() && !tail.contains([' ', '(', ')']) {
                f.module = Some(tail.to_string());
                s = head.trim_end();
            }
        }
    }
    if let Some(i) = s.find("<<<") {
        let after = &s[i + 3..];
        let end = after.find(">>>")?;
        let shape = &after[..end];
        if let Some(j) = shape.find("),(") {
            f.grid = parse_dim3(&shape[..j + 1]);
            f.block_dim = parse_dim3(&shape[j + 2..]);
        }
        f.launch = true;
        f.function = s[..i].trim().to_string();
        let rest = after[end + 3..].trim();
        if let Some(inner) = rest.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
            f.args = parse_args(inner);
        }
    } else {
        f.function = s.to_string();
        if let Some(o) = open_of_last_group(s) {
            // gdb separates the argument list with a space: `helper (p=0x0)`; a
            // signature `f(int*)` has none.
            if o > 0 && s.as_bytes()[o - 1] == b' ' {
                f.args = parse_args(&s[o + 1..s.len() - 1]);
                f.function = s[..o].trim_end().to_string();
            }
        }
    }
    Some(f)
}

/// `FILE:LINE in FN inlined from FILE:LINE[ in FN inlined from FILE:LINE ...]` -> the first
/// position and the `inlined from` ones, outwards. Every segment must be a position.
pub(super) fn inline_chain(s: &str) -> Option<(SourceLoc, Vec<SourceLoc>)> {
    let mut segs = s.split(" inlined from ");
    let first = segs.next().and_then(loc_of)?;
    let mut outer = Vec::new();
    for seg in segs {
        let loc = loc_of(seg)?;
        if outer.len() < MAX_ITEMS {
            outer.push(loc);
        }
    }
    (!outer.is_empty()).then_some((first, outer))
}

/// `i = 640` (an `info locals` / `info args` line); not `$1 = 640`.
pub(super) fn parse_var(line: &str) -> Option<(&str, &str)> {
    let (name, value) = line.split_once(" = ")?;
    if !is_ident(name) {
        return None;
    }
    Some((name, value.trim()))
}

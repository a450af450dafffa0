//! The rows of cuda-gdb's tables: `info cuda threads` (before they are merged into
//! thread groups), `info cuda warps` with its `Device D SM S` lines, and `info cuda kernels`.
//!
//! Must not: do I/O, spawn processes, print, or panic on any input. A file name kept from a
//! row is capped.

use super::text::{cut, tokens, MAX_NAME};
use crate::findings::{parse_dim3, parse_hex, Dim3, WarpRow};

/// A row of `info cuda kernels`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct KernelRow {
    pub(super) current: bool,
    pub(super) id: Option<u32>,
    pub(super) status: Option<String>,
    pub(super) device: Option<u32>,
    pub(super) grid: Option<Dim3>,
    pub(super) block_dim: Option<Dim3>,
    pub(super) invocation: String,
}

/// A row of `info cuda threads`, before it is merged into a [`ThreadGroup`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ThreadRow {
    pub(super) focus: bool,
    pub(super) kernel_id: Option<u32>,
    /// (block, thread) of the first and the last thread of the row.
    pub(super) from: (Dim3, Dim3),
    pub(super) to: (Dim3, Dim3),
    pub(super) count: u64,
    pub(super) pc: u64,
    pub(super) file: Option<String>,
    pub(super) line: Option<u32>,
}

/// The order of CUDA's linear index: `z`, then `y`, then `x`.
pub(super) fn dim_key(d: Dim3) -> (u32, u32, u32) {
    (d[2], d[1], d[0])
}

pub(super) fn dim_min(a: Dim3, b: Dim3) -> Dim3 {
    if dim_key(b) < dim_key(a) {
        b
    } else {
        a
    }
}

pub(super) fn dim_max(a: Dim3, b: Dim3) -> Dim3 {
    if dim_key(b) > dim_key(a) {
        b
    } else {
        a
    }
}

/// A row of `info cuda threads`:
/// `*  (4,0,0)   (0,0,0)     (4,0,0)  (31,0,0)    32 0x00007f197f7a0120   /tmp/x/hang_flag.cu     8 `.
/// The file may hold spaces: it is what lies between the PC and the final line number.
pub(super) fn parse_thread_row(line: &str) -> Option<ThreadRow> {
    let t = line.trim_start();
    let (focus, t) = match t.strip_prefix('*') {
        Some(r) => (true, r),
        None => (false, t),
    };
    let (toks, rest) = tokens(t, 6)?;
    let d = |i: usize| parse_dim3(toks[i]);
    let (b1, t1, b2, t2) = (d(0)?, d(1)?, d(2)?, d(3)?);
    let count: u64 = toks[4].parse().ok()?;
    if !toks[5].starts_with("0x") {
        return None;
    }
    let pc = parse_hex(toks[5])?;
    let (file, line_no) = match rest.rsplit_once(char::is_whitespace) {
        Some((f, l)) if l.bytes().all(|b| b.is_ascii_digit()) => (f.trim(), l.parse().ok()),
        _ if rest.bytes().all(|b| b.is_ascii_digit()) && !rest.is_empty() => ("", rest.parse().ok()),
        _ => (rest, None),
    };
    let file = (!file.is_empty()).then(|| cut(file, MAX_NAME));
    Some(ThreadRow { focus, kernel_id: None, from: (b1, t1), to: (b2, t2), count, pc, file, line: line_no })
}

/// `Device 0 SM 124` (in `info cuda warps`) -> (device, sm).
pub(super) fn parse_device_sm(line: &str) -> Option<(Option<u32>, Option<u32>)> {
    let rest = line.trim().strip_prefix("Device ")?;
    let (dev, sm) = rest.split_once(" SM ")?;
    Some((Some(dev.trim().parse().ok()?), Some(sm.trim().parse().ok()?)))
}

/// A row of `info cuda warps`:
/// `*  0        0xffffffff           0x00000000 0x00007f197f7a0120      0  (4,0,0)   (0,0,0) `.
pub(super) fn parse_warp_row(line: &str) -> Option<WarpRow> {
    let t = line.trim_start();
    let (focus, t) = match t.strip_prefix('*') {
        Some(r) => (true, r),
        None => (false, t),
    };
    let (toks, _) = tokens(t, 7)?;
    let warp = toks[0].parse().ok()?;
    if !toks[1].starts_with("0x") || !toks[2].starts_with("0x") {
        return None;
    }
    Some(WarpRow {
        device: None,
        sm: None,
        warp,
        active_mask: parse_hex(toks[1])?,
        divergent_mask: parse_hex(toks[2])?,
        pc: toks[3].starts_with("0x").then(|| parse_hex(toks[3])).flatten(),
        kernel_id: toks[4].parse().ok(),
        block: parse_dim3(toks[5]),
        thread: parse_dim3(toks[6]),
        focus,
    })
}

/// A row of the `info cuda kernels` table:
/// `*      0      -   0    1 Active 0x0550... (4,1,1) (256,1,1) scatter_far(out=0x7f6f33e00000, n=1024) `.
pub(super) fn parse_kernel_row(line: &str) -> Option<KernelRow> {
    let t = line.trim_start();
    let (current, t) = match t.strip_prefix('*') {
        Some(r) => (true, r),
        None => (false, t),
    };
    // Token boundaries, so that the invocation (which has spaces) is kept whole.
    let mut toks: Vec<(usize, usize)> = Vec::with_capacity(12);
    let b = t.as_bytes();
    let mut i = 0;
    while i < b.len() && toks.len() < 12 {
        while i < b.len() && b[i] == b' ' {
            i += 1;
        }
        let start = i;
        while i < b.len() && b[i] != b' ' {
            i += 1;
        }
        if start < i {
            toks.push((start, i));
        }
    }
    let tok = |k: usize| toks.get(k).map(|&(a, z)| &t[a..z]);
    tok(0)?.parse::<u32>().ok()?;
    let g = (1..toks.len()).find(|&k| tok(k).and_then(parse_dim3).is_some())?;
    let grid = tok(g).and_then(parse_dim3);
    let block_dim = tok(g + 1).and_then(parse_dim3);
    block_dim?;
    let invocation = toks.get(g + 2).map(|&(a, _)| t[a..].trim()).unwrap_or("");
    // `Kernel Parent Dev Grid Status SMs-Mask GridDim ...`: the status is the fifth column.
    let status = (g >= 6).then(|| tok(4)).flatten().filter(|s| !s.starts_with("0x")).map(str::to_string);
    Some(KernelRow {
        current,
        id: tok(0).and_then(|d| d.parse().ok()),
        status,
        device: tok(2).and_then(|d| d.parse().ok()),
        grid,
        block_dim,
        invocation: invocation.to_string(),
    })
}

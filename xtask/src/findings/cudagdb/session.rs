//! One cuda-gdb session as it is read (`Session`): what was seen of the exception, the
//! frames, the tables and the instructions, and how it becomes a [`Fault`] (with the trap's
//! line and the warp-synchronous barrier error) or a [`DeviceSnapshot`].
//!
//! Must not: do I/O, spawn processes, print, or panic on any input. Memory is bounded: thread
//! groups past the cap are counted, not kept.

use super::frames::{Focus, GdbFrame, Triggered};
use super::instructions::{sass_access, LineRange};
use super::tables::{dim_max, dim_min, KernelRow, ThreadRow};
use super::text::{cut, split_call, MAX_GROUPS, MAX_NAME};
use crate::findings::{
    names, DeviceSnapshot, Dim3, ErrorClass, Fault, KernelInfo, ThreadGroup, Tool, WarpRow,
};
use std::collections::HashMap;

/// What rows of `info cuda threads` are merged by: kernel id, PC, file, line.
pub(super) type GroupKey = (Option<u32>, u64, Option<String>, Option<u32>);

/// One cuda-gdb run (or one coredump opened in it).
#[derive(Debug, Default)]
pub(super) struct Session {
    pub(super) rank: Option<u32>,
    pub(super) pid: Option<u32>,
    pub(super) core: Option<String>,
    pub(super) error: Option<ErrorClass>,
    pub(super) triggered: Option<Triggered>,
    pub(super) device_only: Option<u32>,
    pub(super) focus: Option<Focus>,
    /// The last device `bt` (a listing with a kernel frame).
    pub(super) frames: Vec<GdbFrame>,
    pub(super) stop: Option<GdbFrame>,
    pub(super) kernel_row: Option<KernelRow>,
    pub(super) locals: Vec<(String, String)>,
    /// The instruction at the error PC (`x/i $errorpc`): `ATOMS.POPC.INC.32 RZ[R5+URZ]`.
    pub(super) instruction: Option<String>,
    /// The address and symbol of that `x/i` line (`0x7f19.. <_Z7consumePViPiPf+288>`).
    pub(super) instruction_pc: Option<u64>,
    pub(super) instruction_symbol: Option<String>,
    /// The last `x/i` line before a `=>` one (`x/2i $pc-16`): its address and instruction. A
    /// kernel stopped by `__trap()` has its PC past the `BPT.TRAP` (recorded on the H200).
    pub(super) before_pc: Option<(u64, String)>,
    /// The source line cuda-gdb printed after the device `bt` (the focus frame's).
    pub(super) source_text: Option<String>,
    /// A `BPT.TRAP` found just before the PC: its address.
    pub(super) trap_pc: Option<u64>,
    /// `info line *ADDR`: `Line N of "FILE" starts at address A <..> and ends at B <..>.`
    pub(super) line_ranges: Vec<LineRange>,
    /// Something cuda-gdb printed that belongs to this session was seen.
    pub(super) output: bool,
    /// Every row of `info cuda kernels` (capped).
    pub(super) kernels: Vec<KernelRow>,
    /// `info cuda threads` was printed, and its rows merged by (kernel, PC, file, line).
    pub(super) threads_table: bool,
    pub(super) groups: Vec<ThreadGroup>,
    pub(super) group_at: HashMap<GroupKey, usize>,
    pub(super) threads_dropped: u64,
    pub(super) warps: Vec<WarpRow>,
    /// `No CUDA threads.`, `No CUDA kernels.`
    pub(super) no_threads: bool,
    pub(super) log_line: u64,
}

impl Session {
    pub(super) fn has_exception(&self) -> bool {
        self.error.is_some() || self.triggered.is_some() || self.focus.is_some()
    }

    /// No exception, and cuda-gdb listed the threads (or said there were none): a snapshot.
    pub(super) fn is_snapshot(&self) -> bool {
        self.error.is_none() && self.triggered.is_none() && (self.threads_table || self.no_threads)
    }

    pub(super) fn block_dim_of(&self, kernel_id: Option<u32>) -> Option<Dim3> {
        self.kernels.iter().find(|k| k.id == kernel_id && kernel_id.is_some()).and_then(|k| k.block_dim)
    }

    /// Adds a row of `info cuda threads` to its group.
    pub(super) fn thread_row(&mut self, row: ThreadRow) {
        let key = (row.kernel_id, row.pc, row.file.clone(), row.line);
        let spans = row.from.0 != row.to.0;
        let t_lo = if spans { [0, 0, 0] } else { row.from.1 };
        let t_hi = match (spans, self.block_dim_of(row.kernel_id)) {
            (false, _) => row.to.1,
            (true, Some(d)) => [d[0].saturating_sub(1), d[1].saturating_sub(1), d[2].saturating_sub(1)],
            (true, None) => dim_max(row.from.1, row.to.1),
        };
        match self.group_at.get(&key) {
            Some(&i) => {
                let g = &mut self.groups[i];
                g.count = g.count.saturating_add(row.count);
                g.rows += 1;
                g.block_range = [dim_min(g.block_range[0], row.from.0), dim_max(g.block_range[1], row.to.0)];
                g.thread_range = [dim_min(g.thread_range[0], t_lo), dim_max(g.thread_range[1], t_hi)];
                g.focus |= row.focus;
            }
            None if self.groups.len() < MAX_GROUPS => {
                self.group_at.insert(key, self.groups.len());
                self.groups.push(ThreadGroup {
                    kernel_id: row.kernel_id,
                    count: row.count,
                    rows: 1,
                    pc: row.pc,
                    file: row.file,
                    line: row.line,
                    block_range: [row.from.0, row.to.0],
                    thread_range: [t_lo, t_hi],
                    focus: row.focus,
                });
            }
            None => self.threads_dropped = self.threads_dropped.saturating_add(row.count),
        }
    }

    pub(super) fn to_snapshot(&self) -> DeviceSnapshot {
        let kframe = self.kernel_frame();
        let chain = kframe
            .map(GdbFrame::chain)
            .filter(|c| !c.is_empty())
            .or_else(|| self.frames.iter().map(GdbFrame::chain).find(|c| !c.is_empty()))
            .unwrap_or_default();
        let focus_row = self.kernels.iter().find(|k| k.current).or(self.kernels.first());
        let kernel = kframe
            .map(|k| k.function.clone())
            .filter(|k| !k.is_empty())
            .or_else(|| focus_row.map(|r| split_call(&r.invocation).0.to_string()).filter(|k| !k.is_empty()));
        let mangled = self.instruction_symbol.clone().filter(|m| m.starts_with("_Z"));
        let focus = self.focus.clone().unwrap_or_default();
        DeviceSnapshot {
            pid: self.pid,
            rank: self.rank,
            core: self.core.clone(),
            kernel,
            mangled,
            chain,
            block: focus.block,
            thread: focus.thread,
            device: focus.device.or(focus_row.and_then(|r| r.device)),
            sm: focus.sm,
            warp: focus.warp,
            pc: self.instruction_pc,
            instruction: self.instruction.clone(),
            source_text: self.source_text.clone(),
            kernels: self
                .kernels
                .iter()
                .map(|k| KernelInfo {
                    id: k.id,
                    device: k.device,
                    status: k.status.clone(),
                    grid: k.grid,
                    block_dim: k.block_dim,
                    invocation: k.invocation.clone(),
                    focus: k.current,
                })
                .collect(),
            threads: self.groups.clone(),
            threads_dropped: self.threads_dropped,
            warps: self.warps.clone(),
            no_threads: self.no_threads && self.groups.is_empty(),
            log_line: self.log_line,
        }
    }

    /// The kernel frame of the device stack: the one printed with a launch shape.
    pub(super) fn kernel_frame(&self) -> Option<&GdbFrame> {
        self.frames.iter().find(|f| f.launch).or(self.stop.as_ref().filter(|f| f.launch))
    }

    pub(super) fn to_fault(&self) -> Fault {
        let mut f = Fault {
            tool: Some(Tool::CudaGdb),
            error: self.error.clone(),
            pid: self.pid,
            rank: self.rank,
            count: 1,
            device: self.device_only,
            ..Fault::default()
        };
        if let Some(t) = &self.triggered {
            f.pc = t.pc;
            if let Some(name) = &t.function {
                if name.starts_with("_Z") {
                    f.mangled = Some(name.clone());
                }
                f.kernel = Some(names::pretty(name));
            }
            f.location = t.chain.last().cloned();
            if t.chain.len() > 1 {
                f.inlined = t.chain.clone();
            }
        }
        let kframe = self.kernel_frame();
        if f.kernel.is_none() {
            f.kernel = kframe.map(|k| k.function.clone()).filter(|k| !k.is_empty());
        }
        if f.location.is_none() {
            // `bt`'s `at FILE:LINE in FN inlined from FILE:LINE`: as the exception line's chain.
            let c = self.frames.iter().chain(self.stop.as_ref()).map(GdbFrame::chain).find(|c| !c.is_empty());
            if let Some(c) = c {
                f.location = c.last().cloned();
                if c.len() > 1 {
                    f.inlined = c;
                }
            }
        }
        if let Some(k) = kframe {
            f.grid = k.grid;
            f.block_dim = k.block_dim;
            f.args = k.args.clone();
        }
        if let Some(row) = &self.kernel_row {
            f.grid = f.grid.or(row.grid);
            f.block_dim = f.block_dim.or(row.block_dim);
            f.device = f.device.or(row.device);
            if f.kernel.is_none() || f.args.is_empty() {
                let (name, args) = split_call(&row.invocation);
                if f.kernel.is_none() && !name.is_empty() {
                    f.kernel = Some(name.to_string());
                }
                if f.args.is_empty() {
                    f.args = args;
                }
            }
        }
        self.trap_line(&mut f);
        self.warp_sync(&mut f);
        if let Some(focus) = &self.focus {
            f.block = focus.block;
            f.thread = focus.thread;
            f.device = focus.device.or(f.device);
            f.sm = focus.sm;
            f.warp = focus.warp;
            f.lane = focus.lane;
        }
        f.frames = if self.frames.is_empty() {
            self.stop.iter().map(GdbFrame::to_frame).collect()
        } else {
            self.frames.iter().map(GdbFrame::to_frame).collect()
        };
        f.locals = self.locals.clone();
        if let Some(access) = self.instruction.as_deref().and_then(sass_access) {
            f.access = Some(access);
        }
        f
    }

    /// A trap's PC is past its `BPT.TRAP`, so `bt` names the line after `__trap()`: with the
    /// trap found just before the PC and `info line` of its address, the line is the trap's
    /// (in the innermost frame, where the trap is; the user's line stays where it was inlined).
    pub(super) fn trap_line(&self, f: &mut Fault) {
        if f.error != Some(ErrorClass::Trap) {
            return;
        }
        let Some(at) = self.trap_pc else { return };
        let Some(r) = self.line_ranges.iter().find(|r| r.start <= at && at < r.end) else { return };
        // Inlined: the trap is in the innermost frame; the user's line (outermost) stays.
        let shown = if f.inlined.is_empty() { f.location.as_mut() } else { f.inlined.first_mut() };
        let Some(shown) = shown.filter(|l| l.file == r.loc.file && l.line != r.loc.line) else { return };
        let was = shown.line;
        shown.line = r.loc.line;
        f.detail.get_or_insert_with(|| {
            format!(
                "the trap's line: the PC is past the `BPT.TRAP` at line {}, so `bt` showed the next line ({was})",
                r.loc.line
            )
        });
    }

    /// An illegal instruction inside a warp-synchronous intrinsic (`__syncwarp`, `__shfl_*_sync`,
    /// `__ballot_sync`, ...) is a barrier error: its mask leaves out a lane that executes it, or
    /// names a lane that has exited (recorded on the H200: synccheck calls the same launch
    /// `Barrier error detected. Invalid arguments.`).
    pub(super) fn warp_sync(&self, f: &mut Fault) {
        if f.error != Some(ErrorClass::IllegalInstruction) {
            return;
        }
        let inner = self.triggered.as_ref().and_then(|t| t.inner.as_deref());
        let frame0 = self.frames.first().map(|g| g.function.as_str());
        let Some(name) = inner.into_iter().chain(frame0).find(|n| names::is_warp_sync_intrinsic(n)) else {
            return;
        };
        f.error = Some(ErrorClass::BarrierError);
        f.detail.get_or_insert_with(|| {
            format!(
                "an illegal instruction in `{}`, a warp-synchronous intrinsic: its mask must name every lane \
                 that calls it, and only lanes that have not exited",
                names::pretty(name)
            )
        });
    }

    pub(super) fn instruction_sym(&mut self, sym: Option<&str>) {
        self.instruction_symbol = sym.map(|s| cut(s, MAX_NAME));
    }

    /// A short account of what was kept, for the crash note.
    pub(super) fn kept(&self) -> String {
        if !self.has_exception() {
            return "nothing about the fault".to_string();
        }
        let f = self.to_fault();
        let mut parts = Vec::new();
        if let Some(e) = &f.error {
            parts.push(format!("the exception ({})", e.as_str()));
        }
        match (&f.kernel, &f.location) {
            (Some(k), Some(l)) => parts.push(format!("the kernel {k} at {l}")),
            (Some(k), None) => parts.push(format!("the kernel {k}")),
            (None, Some(l)) => parts.push(format!("the location {l}")),
            (None, None) => {}
        }
        if f.block.is_some() {
            parts.push("the focus (block, thread)".to_string());
        }
        if f.frames.is_empty() {
            parts.push("no backtrace".to_string());
        }
        parts.join(", ")
    }
}

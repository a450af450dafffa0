//! cuda-gdb's output, on a GPU coredump (`target cudacore FILE`) or attached to a live
//! process (`-p PID`, after `CUDA_DEVICE_WAITS_ON_EXCEPTION`).
//!
//! Recognises `Opening GPU coredump: PATH`, `CUDA Exception: Warp Illegal Address`,
//! `Assertion failed.`, `Thread N "x" received signal CUDA_EXCEPTION_14, ...`,
//! `The exception was triggered at PC 0x...  KERNEL  (FILE:LINE)` (also without the
//! location, and with `in FN inlined from FILE:LINE`: the location is then the outermost
//! `inlined from` position and the chain is kept innermost first), the focus line
//! (`[Current focus set to ...]` / `[Switching focus to ...]`), `bt` frames with the launch
//! shape, arguments and `at FILE:LINE`, the stop line of an attach
//! (`0x... in KERNEL<<<...>>> (...) at FILE:LINE`), `info locals` / `info args` lines right
//! after a device `bt`, the `info cuda kernels` table, and cuda-gdb's own crash
//! (`A fatal error internal to GDB has been detected`). One [`Fault`] per debugging
//! session (a `$ cuda-gdb ...` command line, an `Opening GPU coredump:` line, or the
//! first cuda-gdb line of a log without either) that showed an exception.
//!
//! A session with no exception that printed `info cuda threads` (the table under its
//! `BlockIdx ThreadIdx To BlockIdx ThreadIdx Count PC Filename Line` header, `Kernel N` lines,
//! the `*` focus row), or `No CUDA threads.` / `No CUDA kernels.`, is a [`DeviceSnapshot`]
//! instead: a user-triggered dump of a program that never returned. It keeps the focus, the
//! `bt` frame with its inline chain (`at FILE:LINE in FN inlined from FILE:LINE`), every row of
//! `info cuda kernels`, the thread rows merged by kernel, PC and line, `info cuda warps` (only
//! the focused SM on cuda-gdb 13.0) and `x/i $pc`.
//!
//! Must not: do I/O, spawn processes, print, panic on any input, or allocate for lines
//! that are not cuda-gdb's while no session is open (every line of a log reaches every
//! parser). Memory is bounded: frames, arguments, locals, notes, kernel rows, thread groups
//! and warps are capped.

use std::collections::HashMap;

use super::coredump::pid_from_dump_path;
use super::names;
use super::{
    parse_dim3, parse_hex, parse_source_loc, DeviceSnapshot, Dim3, ErrorClass, Evidence, Fault, Frame,
    KernelInfo, LineCtx, LineParser, SourceLoc, ThreadGroup, Tool, WarpRow,
};

/// Frames, arguments and locals kept per session.
const MAX_ITEMS: usize = 256;
/// Faults and notes kept per input.
const MAX_SESSIONS: usize = 1024;
/// Thread groups (kernel, PC, line) kept per snapshot; rows past it are counted.
const MAX_GROUPS: usize = 1024;
/// Bytes kept of a file name in a thread row.
const MAX_NAME: usize = 4096;

/// One frame as cuda-gdb printed it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct GdbFrame {
    function: String,
    file: Option<String>,
    line: Option<u32>,
    module: Option<String>,
    grid: Option<Dim3>,
    block_dim: Option<Dim3>,
    args: Vec<(String, String)>,
    /// Printed with a `<<<grid,block>>>` launch shape: a kernel (device) frame.
    launch: bool,
    /// `at FILE:LINE in FN inlined from FILE:LINE ...`: the `inlined from` positions, outwards.
    inlined: Vec<SourceLoc>,
}

impl GdbFrame {
    fn to_frame(&self) -> Frame {
        Frame {
            function: Some(self.function.clone()).filter(|f| !f.is_empty()),
            file: self.file.clone(),
            line: self.line,
            module: self.module.clone(),
            python: false,
        }
    }

    fn location(&self) -> Option<SourceLoc> {
        Some(SourceLoc { file: self.file.clone()?, line: self.line? })
    }

    /// The frame's position and the positions it was inlined into, innermost first.
    fn chain(&self) -> Vec<SourceLoc> {
        self.location().into_iter().chain(self.inlined.iter().cloned()).collect()
    }
}

/// The focus line's coordinates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Focus {
    block: Option<Dim3>,
    thread: Option<Dim3>,
    device: Option<u32>,
    sm: Option<u32>,
    warp: Option<u32>,
    lane: Option<u32>,
}

/// A row of `info cuda kernels`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct KernelRow {
    current: bool,
    id: Option<u32>,
    status: Option<String>,
    device: Option<u32>,
    grid: Option<Dim3>,
    block_dim: Option<Dim3>,
    invocation: String,
}

/// What `The exception was triggered at ...` said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Triggered {
    pc: Option<u64>,
    function: Option<String>,
    /// The innermost inlined function, where the line names one (`sm_30_intrinsics.hpp:110 in
    /// _ZN..10__syncwarpEj inlined from expert_offsets.cu:17`).
    inner: Option<String>,
    /// Innermost first; the last is the user's line.
    chain: Vec<SourceLoc>,
}

/// What rows of `info cuda threads` are merged by: kernel id, PC, file, line.
type GroupKey = (Option<u32>, u64, Option<String>, Option<u32>);

/// One cuda-gdb run (or one coredump opened in it).
#[derive(Debug, Default)]
struct Session {
    rank: Option<u32>,
    pid: Option<u32>,
    core: Option<String>,
    error: Option<ErrorClass>,
    triggered: Option<Triggered>,
    device_only: Option<u32>,
    focus: Option<Focus>,
    /// The last device `bt` (a listing with a kernel frame).
    frames: Vec<GdbFrame>,
    stop: Option<GdbFrame>,
    kernel_row: Option<KernelRow>,
    locals: Vec<(String, String)>,
    /// The instruction at the error PC (`x/i $errorpc`): `ATOMS.POPC.INC.32 RZ[R5+URZ]`.
    instruction: Option<String>,
    /// The address and symbol of that `x/i` line (`0x7f19.. <_Z7consumePViPiPf+288>`).
    instruction_pc: Option<u64>,
    instruction_symbol: Option<String>,
    /// The last `x/i` line before a `=>` one (`x/2i $pc-16`): its address and instruction. A
    /// kernel stopped by `__trap()` has its PC past the `BPT.TRAP` (recorded on the H200).
    before_pc: Option<(u64, String)>,
    /// The source line cuda-gdb printed after the device `bt` (the focus frame's).
    source_text: Option<String>,
    /// A `BPT.TRAP` found just before the PC: its address.
    trap_pc: Option<u64>,
    /// `info line *ADDR`: `Line N of "FILE" starts at address A <..> and ends at B <..>.`
    line_ranges: Vec<LineRange>,
    /// Something cuda-gdb printed that belongs to this session was seen.
    output: bool,
    /// Every row of `info cuda kernels` (capped).
    kernels: Vec<KernelRow>,
    /// `info cuda threads` was printed, and its rows merged by (kernel, PC, file, line).
    threads_table: bool,
    groups: Vec<ThreadGroup>,
    group_at: HashMap<GroupKey, usize>,
    threads_dropped: u64,
    warps: Vec<WarpRow>,
    /// `No CUDA threads.`, `No CUDA kernels.`
    no_threads: bool,
    log_line: u64,
}

impl Session {
    fn has_exception(&self) -> bool {
        self.error.is_some() || self.triggered.is_some() || self.focus.is_some()
    }

    /// No exception, and cuda-gdb listed the threads (or said there were none): a snapshot.
    fn is_snapshot(&self) -> bool {
        self.error.is_none() && self.triggered.is_none() && (self.threads_table || self.no_threads)
    }

    fn block_dim_of(&self, kernel_id: Option<u32>) -> Option<Dim3> {
        self.kernels.iter().find(|k| k.id == kernel_id && kernel_id.is_some()).and_then(|k| k.block_dim)
    }

    /// Adds a row of `info cuda threads` to its group.
    fn thread_row(&mut self, row: ThreadRow) {
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

    fn to_snapshot(&self) -> DeviceSnapshot {
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
    fn kernel_frame(&self) -> Option<&GdbFrame> {
        self.frames.iter().find(|f| f.launch).or(self.stop.as_ref().filter(|f| f.launch))
    }

    fn to_fault(&self) -> Fault {
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
    fn trap_line(&self, f: &mut Fault) {
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
    fn warp_sync(&self, f: &mut Fault) {
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

    fn instruction_sym(&mut self, sym: Option<&str>) {
        self.instruction_symbol = sym.map(|s| cut(s, MAX_NAME));
    }

    /// A short account of what was kept, for the crash note.
    fn kept(&self) -> String {
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

/// Parses cuda-gdb's output; see the module documentation.
#[derive(Default)]
pub struct CudaGdbParser {
    cur: Option<Session>,
    faults: Vec<Fault>,
    notes: Vec<String>,
    seen: bool,
    crashed: bool,
    /// A `bt` listing being read (`#0`, `#1`, ... lines).
    listing: Vec<GdbFrame>,
    in_listing: bool,
    /// The lines just after a device `bt`: `info locals` / `info args` output.
    after_bt: bool,
    /// Inside the `info cuda kernels` table.
    in_table: bool,
    /// Inside `info cuda threads`, with the kernel of the last `Kernel N` line.
    in_threads: bool,
    threads_kernel: Option<u32>,
    /// Inside `info cuda warps`, with the device and SM of the last `Device D SM S` line.
    in_warps: bool,
    warps_at: (Option<u32>, Option<u32>),
    snapshots: Vec<DeviceSnapshot>,
}

impl CudaGdbParser {
    fn session(&mut self, ctx: LineCtx) -> &mut Session {
        self.cur.get_or_insert_with(|| Session { rank: ctx.rank, log_line: ctx.lineno, ..Session::default() })
    }

    fn end_tables(&mut self) {
        self.in_table = false;
        self.in_threads = false;
        self.in_warps = false;
    }

    fn note(&mut self, note: String) {
        if self.notes.len() < MAX_SESSIONS {
            self.notes.push(note);
        }
    }

    fn end_listing(&mut self) {
        if !self.in_listing {
            return;
        }
        self.in_listing = false;
        let listing = std::mem::take(&mut self.listing);
        // Host stacks (`thread apply all bt`) have no kernel frame: not ours to keep.
        if listing.iter().any(|f| f.launch) {
            if let Some(s) = self.cur.as_mut() {
                s.frames = listing;
                self.after_bt = true;
            }
        }
    }

    fn end_session(&mut self) {
        self.end_listing();
        self.after_bt = false;
        self.end_tables();
        self.threads_kernel = None;
        self.warps_at = (None, None);
        if let Some(s) = self.cur.take() {
            if s.is_snapshot() {
                if self.snapshots.len() < MAX_SESSIONS {
                    self.snapshots.push(s.to_snapshot());
                }
            } else if s.has_exception() && self.faults.len() < MAX_SESSIONS {
                self.faults.push(s.to_fault());
            }
        }
    }

    fn command(&mut self, cmd: &str, ctx: LineCtx) {
        self.end_session();
        let mut toks = cmd.split_whitespace().map(|t| t.trim_matches(|c| c == '"' || c == '\''));
        if !toks.any(|t| names::base_name(t) == "cuda-gdb") {
            return;
        }
        let mut s = Session { rank: ctx.rank, log_line: ctx.lineno, ..Session::default() };
        let mut prev = "";
        for t in toks {
            if t == "--args" {
                break;
            }
            let num = |v: &str| v.parse::<u32>().ok();
            match prev {
                "-p" | "-pid" | "--pid" | "attach" => s.pid = s.pid.or(num(t)),
                "cudacore" if !t.starts_with('-') => {
                    s.core = Some(t.to_string());
                    s.pid = s.pid.or(pid_from_dump_path(t));
                }
                _ => {}
            }
            if let Some(v) = t.strip_prefix("--pid=").or_else(|| t.strip_prefix("-pid=")) {
                s.pid = s.pid.or(num(v));
            }
            prev = t;
        }
        self.cur = Some(s);
    }

    fn opening(&mut self, path: &str, ctx: LineCtx) {
        let path = path.trim();
        // A second coredump opened in the same run starts a new session.
        let busy = self.cur.as_ref().is_some_and(|s| s.has_exception() || s.output);
        if busy {
            self.end_session();
        }
        let s = self.session(ctx);
        s.output = true;
        s.pid = pid_from_dump_path(path).or(s.pid);
        s.core = Some(path.to_string());
    }

    fn crash(&mut self, ctx: LineCtx) {
        self.crashed = true;
        let kept = self.cur.as_ref().map(Session::kept).unwrap_or_else(|| "nothing".to_string());
        self.note(format!(
            "cuda-gdb crashed (`A fatal error internal to GDB has been detected`, line {}) after \
             printing what was kept: {kept}; the commands after that point printed nothing",
            ctx.lineno
        ));
        self.end_session();
    }

    /// Lines that may start a session (or belong to one): all begin with one of
    /// `$ O C T [ A P`.
    fn opener(&mut self, line: &str, ctx: LineCtx) -> bool {
        match line.as_bytes()[0] {
            b'$' => {
                if let Some(cmd) = line.strip_prefix("$ ") {
                    self.command(cmd, ctx);
                    return true;
                }
            }
            b'O' => {
                if let Some(path) = line.strip_prefix("Opening GPU coredump: ") {
                    self.seen = true;
                    self.opening(path, ctx);
                    return true;
                }
            }
            // `Program terminated with signal SIGTRAP, Trace/breakpoint trap.` (a dump of a kernel
            // that executed `__trap()`), `Program received signal SIGTRAP`: no CUDA exception.
            b'P' => {
                let sig = line
                    .strip_prefix("Program terminated with signal ")
                    .or_else(|| line.strip_prefix("Program received signal "));
                if let Some(sig) = sig.filter(|s| s.starts_with("SIGTRAP")) {
                    self.seen = true;
                    let s = self.session(ctx);
                    s.output = true;
                    s.error.get_or_insert_with(|| error_class(sig));
                    return true;
                }
            }
            b'C' => {
                if let Some(name) = line.strip_prefix("CUDA Exception: ") {
                    self.seen = true;
                    let s = self.session(ctx);
                    s.output = true;
                    s.error.get_or_insert_with(|| error_class(name));
                    return true;
                }
            }
            b'T' => {
                if let Some(rest) = line.strip_prefix("The exception was triggered ") {
                    self.seen = true;
                    let s = self.session(ctx);
                    s.output = true;
                    if let Some(pc) = rest.strip_prefix("at ") {
                        if s.triggered.is_none() {
                            s.triggered = parse_triggered(pc);
                        }
                    } else if let Some(dev) = rest.strip_prefix("in device ") {
                        s.device_only = dev.trim_end_matches('.').trim().parse().ok();
                    }
                    return true;
                }
                if line.starts_with("Thread ") {
                    if let Some((_, sig)) = line.split_once(" received signal CUDA_EXCEPTION_") {
                        self.seen = true;
                        let name = sig.split_once(", ").map(|(_, n)| n).unwrap_or("");
                        let name = name.trim().trim_end_matches('.');
                        let s = self.session(ctx);
                        s.output = true;
                        if !name.is_empty() {
                            s.error.get_or_insert_with(|| error_class(name));
                        }
                        return true;
                    }
                }
            }
            b'[' => {
                let focus = line
                    .strip_prefix("[Current focus set to ")
                    .or_else(|| line.strip_prefix("[Switching focus to "));
                if let Some(f) = focus {
                    self.seen = true;
                    let focus = parse_focus(f);
                    let s = self.session(ctx);
                    s.output = true;
                    if s.focus.is_none() {
                        s.focus = Some(focus);
                    }
                    return true;
                }
                if line.starts_with("[exit ") && self.cur.is_some() {
                    self.end_session();
                    return true;
                }
                // `[Inferior 1 (process 2963) detached]`: an attach's `detach` names its pid.
                if let Some(pid) = detached_pid(line) {
                    if let Some(s) = self.cur.as_mut() {
                        s.pid = s.pid.or(Some(pid));
                        return true;
                    }
                }
            }
            b'A' if line.starts_with("A fatal error internal to GDB has been detected") => {
                if self.cur.is_some() {
                    self.seen = true;
                }
                self.crash(ctx);
                return true;
            }
            _ => {}
        }
        false
    }

    /// Lines that only mean something inside a session.
    fn inside(&mut self, line: &str, ctx: LineCtx) {
        let first = line.as_bytes()[0];
        if first == b' ' && line.starts_with("   0x") && line.contains(">:") {
            // `x/2i $pc-16`: `   0x7f99... <_Z16gather_kv_blocksPKfPKiS2_Pfii+304>:\tBPT.TRAP 0x1`.
            if let (Some(s), (Some(pc), _)) = (self.cur.as_mut(), instruction_address(line)) {
                if let Some((_, ins)) = line.split_once(">:") {
                    s.before_pc = Some((pc, ins.trim().chars().take(200).collect()));
                }
                self.end_tables();
                return;
            }
        }
        if first == b'L' {
            if let (Some(s), Some(r)) = (self.cur.as_mut(), parse_line_range(line)) {
                if s.line_ranges.len() < MAX_ITEMS {
                    s.line_ranges.push(r);
                }
                return;
            }
        }
        if matches!(first, b'*' | b'=') {
            // `x/i $errorpc`: `*> 0x7fd8... <_Z9histogramPKiPji+592>:\tATOMS.POPC.INC.32 RZ[R5+URZ]`.
            if let Some(ins) = errorpc_instruction(line) {
                self.end_tables();
                if let Some(s) = self.cur.as_mut() {
                    if let Some((at, before)) = s.before_pc.take() {
                        if is_trap_instruction(&before) && s.trap_pc.is_none() {
                            s.trap_pc = Some(at);
                        }
                    }
                    if s.instruction.is_none() {
                        s.instruction = Some(ins);
                        let (pc, sym) = instruction_address(line);
                        s.instruction_pc = pc;
                        s.instruction_sym(sym);
                    }
                }
                return;
            }
        }
        if first == b'#' {
            if let Some((n, frame)) = parse_frame_line(line) {
                self.in_table = false;
                self.after_bt = false;
                if n == 0 || !self.in_listing {
                    self.listing.clear();
                    self.in_listing = true;
                }
                if self.listing.len() < MAX_ITEMS {
                    self.listing.push(frame);
                }
                return;
            }
        }
        // `26\t    __syncthreads();`: the source of the focus frame, printed after a device `bt`.
        if first.is_ascii_digit() && self.in_listing && self.listing.iter().any(|f| f.launch) {
            if let (Some(s), Some((n, text))) = (self.cur.as_mut(), line.split_once('\t')) {
                if n.parse::<u32>().is_ok() && s.source_text.is_none() && !text.trim().is_empty() {
                    s.source_text = Some(cut(text.trim(), MAX_NAME));
                }
            }
        }
        self.end_listing();
        let Some(s) = self.cur.as_mut() else { return };
        if first == b' ' && line.trim_start().starts_with("Kernel Parent Dev Grid Status") {
            self.seen = true;
            s.output = true;
            self.in_table = true;
            self.after_bt = false;
            return;
        }
        if self.in_table {
            if let Some(row) = parse_kernel_row(line) {
                if s.kernels.len() < MAX_ITEMS {
                    s.kernels.push(row.clone());
                }
                let better = match &s.kernel_row {
                    None => true,
                    Some(old) => row.current && !old.current,
                };
                if better {
                    s.kernel_row = Some(row);
                }
                return;
            }
            self.in_table = false;
        }
        let trimmed = line.trim_start();
        if first == b' ' && trimmed.starts_with("BlockIdx ThreadIdx To BlockIdx ThreadIdx Count") {
            self.seen = true;
            s.output = true;
            s.threads_table = true;
            self.in_threads = true;
            self.in_warps = false;
            self.threads_kernel = None;
            return;
        }
        if first == b' ' && trimmed.starts_with("Wp Active Lanes Mask") {
            self.seen = true;
            s.output = true;
            self.in_warps = true;
            self.in_threads = false;
            self.warps_at = (None, None);
            return;
        }
        if self.in_threads {
            if let Some(k) = line.strip_prefix("Kernel ").and_then(|k| k.trim().parse().ok()) {
                self.threads_kernel = Some(k);
                return;
            }
            if let Some(mut row) = parse_thread_row(line) {
                row.kernel_id = self.threads_kernel;
                s.thread_row(row);
                return;
            }
            self.in_threads = false;
        }
        if self.in_warps {
            if let Some(at) = parse_device_sm(line) {
                self.warps_at = at;
                return;
            }
            if let Some(mut w) = parse_warp_row(line) {
                (w.device, w.sm) = self.warps_at;
                if s.warps.len() < MAX_ITEMS {
                    s.warps.push(w);
                }
                return;
            }
            self.in_warps = false;
        }
        if first == b'N' && matches!(line.trim_end(), "No CUDA threads." | "No CUDA kernels.") {
            self.seen = true;
            s.output = true;
            s.no_threads = true;
            return;
        }
        if first == b'0' && line.starts_with("0x") && line.contains("<<<") {
            // The stop line of an attach: `0x... in KERNEL<<<...>>> (args) at FILE:LINE`.
            if let Some(frame) = parse_frame_body(line) {
                s.stop.get_or_insert(frame);
            }
            self.after_bt = false;
            return;
        }
        if self.after_bt {
            if line == "No locals." || line == "No arguments." {
                return;
            }
            if let Some((name, value)) = parse_var(line) {
                let is_arg = s.frames.first().is_some_and(|f| f.args.iter().any(|(n, _)| n == name));
                let known = s.locals.iter().any(|(n, _)| n == name);
                if !is_arg && !known && s.locals.len() < MAX_ITEMS {
                    s.locals.push((name.to_string(), value.to_string()));
                }
                return;
            }
            self.after_bt = false;
        }
        if line == "Assertion failed." {
            self.seen = true;
            s.output = true;
            s.error.get_or_insert(ErrorClass::DeviceAssert);
            return;
        }
        if line.starts_with("No core file specified") || line.starts_with("ptrace: ") {
            self.seen = true;
            s.output = true;
            let note = format!("cuda-gdb (line {}): {}", ctx.lineno, line.trim());
            self.note(note);
        }
    }
}

/// The pid in gdb's `[Inferior N (process PID) detached]`.
fn detached_pid(line: &str) -> Option<u32> {
    let rest = line.strip_prefix("[Inferior ")?.strip_suffix(" detached]")?;
    let (_, pid) = rest.split_once(" (process ")?;
    pid.strip_suffix(')')?.parse().ok()
}

impl LineParser for CudaGdbParser {
    fn line(&mut self, line: &str, ctx: LineCtx) {
        let Some(&first) = line.as_bytes().first() else {
            if self.cur.is_some() {
                self.end_listing();
                self.end_tables();
                self.after_bt = false;
            }
            return;
        };
        if self.cur.is_none() && !matches!(first, b'$' | b'O' | b'C' | b'T' | b'[' | b'A') {
            return;
        }
        if matches!(first, b'$' | b'O' | b'C' | b'T' | b'[' | b'A' | b'P') {
            if self.in_listing && first != b'#' {
                self.end_listing();
            }
            if self.opener(line, ctx) {
                self.end_tables();
                self.after_bt = false;
                return;
            }
        }
        if self.cur.is_some() {
            self.inside(line, ctx);
        }
    }

    fn finish(&mut self, ev: &mut Evidence) {
        self.end_session();
        if self.seen {
            ev.saw(Tool::CudaGdb);
        }
        if self.crashed {
            ev.debugger_crashed = true;
        }
        ev.faults.append(&mut self.faults);
        ev.snapshots.append(&mut self.snapshots);
        ev.notes.append(&mut self.notes);
    }
}

/// One answer of `info line *ADDR`: the code of `line` of `file` is in `[start, end)`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LineRange {
    loc: SourceLoc,
    start: u64,
    end: u64,
}

/// `Line 26 of "/w/paged_kv.cu" starts at address 0x7f99..0100 <_Z16..+256> and ends at
/// 0x7f99..0140 <_Z16..+320>.` (gdb's `info line`, recorded by cuda-gdb 13 on the H200).
fn parse_line_range(line: &str) -> Option<LineRange> {
    let rest = line.strip_prefix("Line ")?;
    let (n, rest) = rest.split_once(" of \"")?;
    let (file, rest) = rest.split_once("\" starts at address ")?;
    let (start, rest) = rest.split_once(' ')?;
    let (_, end) = rest.split_once(" and ends at ")?;
    let end = end.split([' ', '.']).next()?;
    Some(LineRange {
        loc: SourceLoc { file: cut(file, MAX_NAME), line: n.parse().ok()? },
        start: parse_hex(start)?,
        end: parse_hex(end)?,
    })
}

/// Whether a SASS instruction is the trap `__trap()` compiles to (`BPT.TRAP 0x1`), predicated
/// or not.
fn is_trap_instruction(ins: &str) -> bool {
    let mut words = ins.split_whitespace();
    let op = match words.next() {
        Some(w) if w.starts_with('@') => words.next(),
        w => w,
    };
    op.is_some_and(|o| o.starts_with("BPT.TRAP"))
}

/// A row of `info cuda threads`, before it is merged into a [`ThreadGroup`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct ThreadRow {
    focus: bool,
    kernel_id: Option<u32>,
    /// (block, thread) of the first and the last thread of the row.
    from: (Dim3, Dim3),
    to: (Dim3, Dim3),
    count: u64,
    pc: u64,
    file: Option<String>,
    line: Option<u32>,
}

/// The order of CUDA's linear index: `z`, then `y`, then `x`.
fn dim_key(d: Dim3) -> (u32, u32, u32) {
    (d[2], d[1], d[0])
}

fn dim_min(a: Dim3, b: Dim3) -> Dim3 {
    if dim_key(b) < dim_key(a) {
        b
    } else {
        a
    }
}

fn dim_max(a: Dim3, b: Dim3) -> Dim3 {
    if dim_key(b) > dim_key(a) {
        b
    } else {
        a
    }
}

/// The first `n` whitespace-separated tokens of `s` and the rest after them (trimmed).
fn tokens(s: &str, n: usize) -> Option<(Vec<&str>, &str)> {
    let mut out = Vec::with_capacity(n);
    let mut rest = s;
    for _ in 0..n {
        rest = rest.trim_start();
        if rest.is_empty() {
            return None;
        }
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        out.push(&rest[..end]);
        rest = &rest[end..];
    }
    Some((out, rest.trim()))
}

/// A row of `info cuda threads`:
/// `*  (4,0,0)   (0,0,0)     (4,0,0)  (31,0,0)    32 0x00007f197f7a0120   /tmp/x/hang_flag.cu     8 `.
/// The file may hold spaces: it is what lies between the PC and the final line number.
fn parse_thread_row(line: &str) -> Option<ThreadRow> {
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

/// At most `max` bytes of `s`, cut at a character boundary.
fn cut(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// `Device 0 SM 124` (in `info cuda warps`) -> (device, sm).
fn parse_device_sm(line: &str) -> Option<(Option<u32>, Option<u32>)> {
    let rest = line.trim().strip_prefix("Device ")?;
    let (dev, sm) = rest.split_once(" SM ")?;
    Some((Some(dev.trim().parse().ok()?), Some(sm.trim().parse().ok()?)))
}

/// A row of `info cuda warps`:
/// `*  0        0xffffffff           0x00000000 0x00007f197f7a0120      0  (4,0,0)   (0,0,0) `.
fn parse_warp_row(line: &str) -> Option<WarpRow> {
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

/// The address and the symbol of an `x/i` line: `=> 0x7f19.. <_Z7consumePViPiPf+288>:` ->
/// (`0x7f19..`, `_Z7consumePViPiPf`).
fn instruction_address(line: &str) -> (Option<u64>, Option<&str>) {
    let rest = line.get(3..).unwrap_or("");
    let (addr, tail) = rest.split_once(' ').unwrap_or((rest, ""));
    let sym = tail
        .strip_prefix('<')
        .and_then(|t| t.split_once(">:"))
        .map(|(s, _)| s.rsplit_once('+').map(|(n, _)| n).unwrap_or(s))
        .filter(|s| !s.is_empty());
    (parse_hex(addr), sym)
}

/// The instruction of an `x/i` line marked as the current (`=>`) or error (`*>`) PC.
fn errorpc_instruction(line: &str) -> Option<String> {
    let rest = line.strip_prefix("*> ").or_else(|| line.strip_prefix("=> "))?;
    if !rest.starts_with("0x") {
        return None;
    }
    let (_, ins) = rest.split_once(">:")?;
    let ins = ins.trim();
    (!ins.is_empty()).then(|| ins.chars().take(200).collect())
}

/// The memory space and kind of access of a SASS instruction, from its mnemonic: `LDS`,
/// `STS`, `ATOMS` are shared memory; `LDL`, `STL` local; `LDG`, `STG`, `ATOMG`, `RED` global;
/// `LD`, `ST`, `ATOM` generic (the address decides, so the space stays unknown).
pub fn sass_access(instruction: &str) -> Option<super::Access> {
    // A predicate (`@P0 `, `@!P1 `) may come first.
    let mut words = instruction.split_whitespace();
    let mut op = words.next()?;
    if op.starts_with('@') {
        op = words.next()?;
    }
    let base = op.split('.').next().unwrap_or(op);
    let (kind, space) = match base {
        "LDS" | "LDSM" => ("read", Some("shared")),
        "STS" => ("write", Some("shared")),
        "ATOMS" => ("atomic", Some("shared")),
        "LDL" => ("read", Some("local")),
        "STL" => ("write", Some("local")),
        "LDG" | "LDGSTS" => ("read", Some("global")),
        "STG" => ("write", Some("global")),
        "ATOMG" | "RED" => ("atomic", Some("global")),
        "LD" => ("read", None),
        "ST" => ("write", None),
        "ATOM" => ("atomic", None),
        _ => return None,
    };
    // The access size, where the mnemonic has one (`.32`, `.64`, `.128`, `.U8`, `.E.64`).
    let size = op.split('.').skip(1).find_map(|m| {
        let digits = m.trim_start_matches(['U', 'S']);
        match digits.parse::<u64>() {
            Ok(bits @ (8 | 16 | 32 | 64 | 128)) => Some(bits / 8),
            _ => None,
        }
    });
    Some(super::Access {
        kind: Some(kind.to_string()),
        space: space.map(str::to_string),
        size,
        ..super::Access::default()
    })
}

/// Classifies a cuda-gdb exception name (`Warp Illegal Address`, `Warp Out-of-range Address`).
fn error_class(name: &str) -> ErrorClass {
    let e = ErrorClass::from_message(name);
    if !e.is_device_fault() && name.contains('-') {
        let alt = ErrorClass::from_message(&name.replace('-', " "));
        if alt.is_device_fault() {
            return alt;
        }
    }
    e
}

/// Splits at `sep` outside parentheses, brackets, braces and double quotes.
fn split_top(s: &str, sep: u8) -> impl Iterator<Item = &str> {
    let b = s.as_bytes();
    let mut start = 0;
    let mut depth = 0i32;
    let mut quoted = false;
    let mut i = 0;
    std::iter::from_fn(move || {
        if start > b.len() {
            return None;
        }
        while i < b.len() {
            let c = b[i];
            if quoted {
                if c == b'\\' {
                    i += 1;
                } else if c == b'"' {
                    quoted = false;
                }
            } else {
                match c {
                    b'"' => quoted = true,
                    b'(' | b'[' | b'{' => depth += 1,
                    b')' | b']' | b'}' => depth -= 1,
                    _ if c == sep && depth <= 0 => {
                        let piece = &s[start..i];
                        i += 1;
                        start = i;
                        return Some(piece);
                    }
                    _ => {}
                }
            }
            i += 1;
        }
        let piece = s.get(start..).unwrap_or("");
        start = b.len() + 1;
        Some(piece)
    })
}

/// The index of the `(` matching a final `)`, if `s` ends with one (also py-spy's frames).
pub(super) fn open_of_last_group(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if b.last() != Some(&b')') {
        return None;
    }
    let mut depth = 0usize;
    for (i, &c) in b.iter().enumerate().rev() {
        match c {
            b')' => depth += 1,
            b'(' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// `name=value, name=value` (gdb's argument list) into pairs; pieces that are not
/// `identifier=value` are skipped.
fn parse_args(inner: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for piece in split_top(inner, b',') {
        let Some((name, value)) = piece.split_once('=') else {
            continue;
        };
        let name = name.trim();
        if is_ident(name) && out.len() < MAX_ITEMS {
            out.push((name.to_string(), value.trim().to_string()));
        }
    }
    out
}

fn is_ident(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// `scatter_far(out=0x7f6f33e00000, n=1024)` -> (`scatter_far`, args);
/// `at::native::k<4, F>()` -> (`at::native::k<4, F>`, none).
fn split_call(s: &str) -> (&str, Vec<(String, String)>) {
    let s = s.trim();
    match open_of_last_group(s) {
        Some(o) => (s[..o].trim_end(), parse_args(&s[o + 1..s.len() - 1])),
        None => (s, Vec::new()),
    }
}

/// `FILE:LINE` optionally followed by ` in FUNCTION`.
fn loc_of(s: &str) -> Option<SourceLoc> {
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
fn parse_triggered(rest: &str) -> Option<Triggered> {
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
fn parse_focus(s: &str) -> Focus {
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
fn parse_frame_line(line: &str) -> Option<(u32, GdbFrame)> {
    let rest = line.strip_prefix('#')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || !rest[digits..].starts_with(' ') {
        return None;
    }
    let n = rest[..digits].parse().ok()?;
    Some((n, parse_frame_body(rest[digits..].trim())?))
}

/// `[0x... in ]FUNC[<<<(g),(b)>>>] [(ARGS)] [at FILE:LINE | from LIB]`.
fn parse_frame_body(body: &str) -> Option<GdbFrame> {
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
fn inline_chain(s: &str) -> Option<(SourceLoc, Vec<SourceLoc>)> {
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

/// A row of the `info cuda kernels` table:
/// `*      0      -   0    1 Active 0x0550... (4,1,1) (256,1,1) scatter_far(out=0x7f6f33e00000, n=1024) `.
fn parse_kernel_row(line: &str) -> Option<KernelRow> {
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

/// `i = 640` (an `info locals` / `info args` line); not `$1 = 640`.
fn parse_var(line: &str) -> Option<(&str, &str)> {
    let (name, value) = line.split_once(" = ")?;
    if !is_ident(name) {
        return None;
    }
    Some((name, value.trim()))
}

#[cfg(test)]
mod tests {
    use super::super::scan::scan_str;
    use super::super::{ErrorClass, Evidence, SourceLoc, Tool};
    use super::*;

    #[test]
    fn an_inlined_header_atomic_on_shared_memory_keeps_the_chain_the_class_and_the_space() {
        // cuda-gdb 13.0 on an H200, tests/gpu/programs/shared_atomic.cu (record_verdict.sh).
        let ev = super::super::scan::scan_str(recording!("h200/shared_atomic/cudagdb-merged-1.log"), "x.log");
        let f = &ev.faults[0];
        assert_eq!(f.error, Some(ErrorClass::OutOfRangeAddress));
        assert_eq!(f.location, Some(SourceLoc { file: "shared_atomic.cu".into(), line: 16 }));
        assert_eq!(f.inlined[0], SourceLoc { file: "device_atomic_functions.hpp".into(), line: 112 });
        let a = f.access.as_ref().expect("x/i $errorpc gives the access");
        assert_eq!(
            (a.kind.as_deref(), a.space.as_deref(), a.size),
            (Some("atomic"), Some("shared"), Some(4))
        );
    }

    #[test]
    fn sass_mnemonics_name_the_space() {
        let space = |i: &str| sass_access(i).and_then(|a| a.space);
        assert_eq!(space("ATOMS.POPC.INC.32 RZ[R5+URZ]").as_deref(), Some("shared"));
        assert_eq!(space("@P0 STG.E.64 desc[UR4][R2.64], R4").as_deref(), Some("global"));
        assert_eq!(space("LDL.64 R2, [R1]").as_deref(), Some("local"));
        assert_eq!(space("ST.E [R2.64], R5"), None);
        assert!(sass_access("IMAD R1, R2, R3").is_none());
        assert!(sass_access("").is_none());
        assert_eq!(sass_access("STG.E.128 [R2], R4").and_then(|a| a.size), Some(16));
    }
    use proptest::prelude::*;

    /// `target cudacore` on PyTorch's device-side assert: no source line (PID 2899).
    const TORCH_ASSERT_CORE: &str = recording!("h200/torch_assert/cudagdb-core-1.log");
    /// Attached to the same program: the same kernel, no source line.
    const TORCH_ASSERT_ATTACH: &str = recording!("h200/torch_assert/attach.log");
    /// cuda-gdb crashes right after the exception line (the warp had exited; PID 851).
    const OOB_WRITE_CORE: &str = recording!("h200/oob_write/cudagdb-core-1.log");
    /// The same crash when attaching (PID 915, from meta.tsv).
    const OOB_WRITE_ATTACH: &str = recording!("h200/oob_write/attach.log");
    const OOB_WRITE_META: &str = recording!("h200/oob_write/meta.tsv");
    /// A -G build: `info locals` and `info args` after `bt` (PID 2419).
    const OOB_WRITE_G_CORE: &str = recording!("h200/oob_write_G/cudagdb-core-1.log");
    /// Attached to the -G build (PID 2482, from meta.tsv).
    const OOB_WRITE_G_ATTACH: &str = recording!("h200/oob_write_G/attach.log");
    const OOB_WRITE_G_META: &str = recording!("h200/oob_write_G/meta.tsv");
    /// A template kernel, `axpy_vec<float, 4>` (PID 1740).
    const TEMPLATED_CORE: &str = recording!("h200/templated/cudagdb-core-1.log");
    /// Attached by `debug-ima` (PID 4069 in the command it wrote beside the log).
    const OOB_READ_ATTACH: &str = recording!("bundles/oob_read-full/rungs/05-attach/cudagdb-attach.log");
    const OOB_READ_ATTACH_CMD: &str =
        recording!("bundles/oob_read-full/rungs/05-attach/cudagdb-attach.command.txt");
    /// cuda-gdb without a coredump, and attaching to a process that is gone.
    const NO_CORE_13: &str = transcript!("13_cudacore.excerpt.log");
    const NO_PROCESS_17: &str = transcript!("17_attach.excerpt.log");
    /// Attached to a -G build with `print i` and `print out` among the commands.
    const ATTACH_G_53: &str = transcript!("53_attach_G.excerpt.log");
    /// Attached to a PyTorch kernel without line information: the exception line names a
    /// template kernel with spaces and no `(FILE:LINE)`.
    const DIST_ATTACH_86: &str = transcript!("86_dist_attach.excerpt.log");
    /// Attached by `debug-ima` to the faulting rank (device 1) of a two-GPU torchrun job
    /// (PID 1040 in the command it wrote beside the log).
    const DIST_ATTACH: &str = recording!("bundles/dist_fault-full/rungs/04-attach/cudagdb-attach.log");
    const DIST_ATTACH_CMD: &str =
        recording!("bundles/dist_fault-full/rungs/04-attach/cudagdb-attach.command.txt");

    /// `log` after a shell transcript's `$ CMD` line, with the command line record.sh noted
    /// for `rung` in a case's `meta.tsv` (rung, exit status, seconds, command): how a log
    /// that carries its command gives cuda-gdb's `-p PID`.
    fn with_command(meta: &str, rung: &str, log: &str) -> String {
        let cmd = meta
            .lines()
            .find_map(|l| {
                let mut f = l.split('\t');
                if f.next() == Some(rung) {
                    f.nth(2)
                } else {
                    None
                }
            })
            .unwrap_or_else(|| panic!("no `{rung}` in meta.tsv"));
        format!("$ {}\n{log}", cmd.trim_end())
    }

    /// A bundle's attach log after the command `debug-ima` ran (written beside it).
    fn with_bundle_command(cmd: &str, log: &str) -> String {
        format!("$ {}\n{log}", cmd.trim_end())
    }

    fn loc(file: &str, line: u32) -> SourceLoc {
        SourceLoc { file: file.to_string(), line }
    }

    fn pair(a: &str, b: &str) -> (String, String) {
        (a.to_string(), b.to_string())
    }

    fn one_fault(text: &str) -> (Evidence, Fault) {
        let ev = scan_str(text, "x.log");
        assert_eq!(ev.faults.len(), 1, "{:#?}", ev.faults);
        let f = ev.faults[0].clone();
        assert_eq!(f.tool, Some(Tool::CudaGdb));
        assert_eq!(f.count, 1);
        (ev, f)
    }

    const NLL: &str = "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)";

    const FILL: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<unsigned char>, std::array<char*, 1ul> >(int, at::native::FillFunctor<unsigned char>, std::array<char*, 1ul>)";

    const SCALE_WRITE: &str = "scale_write(float*, int, long long)";

    #[test]
    fn coredump_of_a_device_assert() {
        let (ev, f) = one_fault(TORCH_ASSERT_CORE);
        assert!(ev.tools.contains(&Tool::CudaGdb));
        assert_eq!(f.error, Some(ErrorClass::DeviceAssert));
        assert_eq!(f.kernel.as_deref(), Some(NLL));
        assert_eq!(f.location, None);
        assert_eq!(f.block, Some([0, 0, 0]));
        assert_eq!(f.thread, Some([5, 0, 0]));
        assert_eq!((f.device, f.sm, f.warp, f.lane), (Some(0), Some(124), Some(1), Some(5)));
        assert_eq!(f.grid, Some([1, 1, 1]));
        assert_eq!(f.block_dim, Some([32, 1, 1]));
        assert_eq!(f.pid, Some(2899));
        assert_eq!(f.frames.len(), 1);
        assert!(f.args.is_empty() && f.locals.is_empty());
        assert!(!ev.debugger_crashed);
    }

    #[test]
    fn crash_after_the_exception_line_keeps_it() {
        let (ev, f) = one_fault(OOB_WRITE_CORE);
        assert!(ev.debugger_crashed);
        assert_eq!(f.error, Some(ErrorClass::IllegalAddress));
        assert_eq!(f.kernel.as_deref(), Some(SCALE_WRITE));
        assert_eq!(f.location, Some(loc("oob_write.cu", 7)));
        assert!(f.inlined.is_empty());
        assert_eq!(f.pc, Some(0x7fd8177a0110));
        assert_eq!(f.pid, Some(851));
        assert_eq!((f.block, f.thread, f.grid), (None, None, None));
        assert!(f.frames.is_empty());
        let note = ev.notes.iter().find(|n| n.contains("cuda-gdb crashed")).expect("crash note");
        assert!(note.contains("scale_write(float*, int, long long) at oob_write.cu:7"), "{note}");
        assert!(note.contains("line 34"), "{note}");
    }

    #[test]
    fn debug_build_coredump_with_locals_and_args() {
        let (_, f) = one_fault(OOB_WRITE_G_CORE);
        assert_eq!(f.error, Some(ErrorClass::IllegalAddress));
        assert_eq!(f.kernel.as_deref(), Some(SCALE_WRITE));
        // The exception line is exact; the frame (line 9, `}`) is where the warp was after.
        assert_eq!(f.location, Some(loc("oob_write.cu", 7)));
        assert_eq!(f.pc, Some(0x7f857b7a0370));
        assert_eq!(f.block, Some([8, 0, 0]));
        assert_eq!(f.thread, Some([128, 0, 0]));
        assert_eq!((f.device, f.sm, f.warp, f.lane), (Some(0), Some(0), Some(4), Some(0)));
        assert_eq!(f.grid, Some([16, 1, 1]));
        assert_eq!(f.block_dim, Some([256, 1, 1]));
        assert_eq!(
            f.args,
            vec![pair("out", "0x7f856de00000"), pair("n", "4096"), pair("shift", "-8589934592")]
        );
        // `info args` repeats the arguments after `info locals`: only `i` is a local.
        assert_eq!(f.locals, vec![pair("i", "2176")]);
        assert_eq!(
            f.frames,
            vec![Frame {
                function: Some("scale_write".into()),
                file: Some("oob_write.cu".into()),
                line: Some(9),
                ..Frame::default()
            }]
        );
        assert_eq!(f.pid, Some(2419));
    }

    #[test]
    fn crash_on_attach_keeps_the_exception_and_the_pid() {
        let (ev, f) = one_fault(&with_command(OOB_WRITE_META, "attach", OOB_WRITE_ATTACH));
        assert!(ev.debugger_crashed);
        assert_eq!(f.kernel.as_deref(), Some(SCALE_WRITE));
        assert_eq!(f.location, Some(loc("oob_write.cu", 7)));
        assert_eq!(f.pc, Some(0x7f490f7a0110));
        assert_eq!(f.pid, Some(915));
        assert!(ev.notes.iter().any(|n| n.contains("cuda-gdb crashed")));
        // The log alone (as `debug-ima` keeps it): the same fault, no PID.
        let (ev, f) = one_fault(OOB_WRITE_ATTACH);
        assert!(ev.debugger_crashed);
        assert_eq!((f.pc, f.pid), (Some(0x7f490f7a0110), None));
    }

    #[test]
    fn attach_to_a_debug_build() {
        let (ev, f) = one_fault(&with_command(OOB_WRITE_G_META, "attach", OOB_WRITE_G_ATTACH));
        assert!(!ev.debugger_crashed);
        assert_eq!(f.error, Some(ErrorClass::IllegalAddress));
        assert_eq!(f.kernel.as_deref(), Some(SCALE_WRITE));
        assert_eq!(f.location, Some(loc("oob_write.cu", 7)));
        assert_eq!(f.pc, Some(0x7fdd9b7a0370));
        assert_eq!(f.block, Some([8, 0, 0]));
        assert_eq!(f.thread, Some([128, 0, 0]));
        assert_eq!((f.device, f.sm, f.warp, f.lane), (Some(0), Some(0), Some(4), Some(0)));
        assert_eq!(f.grid, Some([16, 1, 1]));
        assert_eq!(f.block_dim, Some([256, 1, 1]));
        assert_eq!(
            f.args,
            vec![pair("out", "0x7fdd93e00000"), pair("n", "4096"), pair("shift", "-8589934592")]
        );
        assert_eq!(f.locals, vec![pair("i", "2176")]);
        assert_eq!(f.pid, Some(2482));
    }

    #[test]
    fn print_results_are_not_locals() {
        // `$1 = 640` (print i) and `$2 = ...` (print out) after `info locals`.
        let (_, f) = one_fault(ATTACH_G_53);
        assert_eq!(f.locals, vec![pair("i", "640")]);
        assert_eq!(f.args, vec![pair("out", "0x7fe6f5e00000"), pair("n", "1024")]);
        assert_eq!(f.pid, Some(1933));
    }

    #[test]
    fn template_kernels_with_spaces_with_and_without_a_line() {
        let (_, f) = one_fault(TEMPLATED_CORE);
        let axpy = "void axpy_vec<float, 4>(float*, float const*, float, int, long long)";
        assert_eq!(f.kernel.as_deref(), Some(axpy));
        assert_eq!(f.location, Some(loc("templated.cu", 11)));
        assert_eq!(f.pc, Some(0x7fd74b7a0190));
        assert_eq!(f.block, Some([8, 0, 0]));
        assert_eq!(f.thread, Some([64, 0, 0]));
        assert_eq!((f.device, f.sm, f.warp, f.lane), (Some(0), Some(0), Some(2), Some(0)));
        assert_eq!(f.grid, Some([16, 1, 1]));
        assert_eq!(f.block_dim, Some([128, 1, 1]));
        assert_eq!(f.frames.len(), 1);
        assert_eq!(f.pid, Some(1740));

        // PyTorch's kernels have no line information: the stop line and `bt` end in `()`.
        let (_, f) = one_fault(TORCH_ASSERT_ATTACH);
        assert_eq!(f.error, Some(ErrorClass::DeviceAssert));
        assert_eq!(f.kernel.as_deref(), Some(NLL));
        assert_eq!(f.location, None);
        assert_eq!(f.block, Some([0, 0, 0]));
        assert_eq!(f.thread, Some([5, 0, 0]));
        assert_eq!((f.device, f.sm, f.warp, f.lane), (Some(0), Some(124), Some(1), Some(5)));
        assert_eq!(f.grid, Some([1, 1, 1]));
        assert_eq!(f.block_dim, Some([32, 1, 1]));
        assert_eq!(f.frames.len(), 1);
        assert_eq!(f.frames[0].function.as_deref(), Some(NLL));
        assert_eq!(f.pid, None);
    }

    #[test]
    fn attach_to_one_rank_of_a_distributed_job() {
        let (_, f) = one_fault(&with_bundle_command(DIST_ATTACH_CMD, DIST_ATTACH));
        assert_eq!(f.error, Some(ErrorClass::IllegalAddress));
        assert_eq!(f.kernel.as_deref(), Some("gather_kv_kernel"));
        assert_eq!(f.location, Some(loc("vllm_shaped.py", 22)));
        assert_eq!(f.pc, Some(0x7fca749ff600));
        assert_eq!(f.block, Some([41, 0, 0]));
        assert_eq!(f.thread, Some([96, 0, 0]));
        assert_eq!((f.device, f.sm, f.warp, f.lane), (Some(1), Some(84), Some(0), Some(0)));
        assert_eq!(f.grid, Some([64, 1, 1]));
        assert_eq!(f.block_dim, Some([128, 1, 1]));
        assert_eq!(f.pid, Some(1040));
    }

    #[test]
    fn exception_line_without_a_location() {
        let (_, f) = one_fault(DIST_ATTACH_86);
        assert_eq!(f.error, Some(ErrorClass::IllegalAddress));
        assert_eq!(f.kernel.as_deref(), Some(FILL));
        assert_eq!(f.location, None);
        assert_eq!(f.pc, Some(0x7f02edd3c830));
        assert_eq!(f.block, Some([50295, 0, 0]));
        assert_eq!((f.device, f.sm, f.warp, f.lane), (Some(1), Some(0), Some(7), Some(0)));
        assert_eq!(f.grid, Some([524288, 1, 1]));
        assert_eq!(f.block_dim, Some([128, 1, 1]));
        assert_eq!(f.pid, Some(833));
    }

    #[test]
    fn focus_and_bt_without_the_exception_line() {
        // The attach log from the signal line on: no `The exception was triggered` line.
        let from = OOB_READ_ATTACH.find("Thread 1 \"oob_read\"").unwrap();
        let (_, f) = one_fault(&OOB_READ_ATTACH[from..]);
        assert_eq!(f.error, Some(ErrorClass::IllegalAddress));
        assert_eq!(f.kernel.as_deref(), Some("gather_rows"));
        assert_eq!(f.pc, None);
        assert_eq!(f.block, Some([3, 0, 0]));
        assert_eq!(f.device, Some(0));
        assert_eq!(f.grid, Some([4, 1, 1]));
        assert_eq!(f.pid, None);
        // Only the focus line and the stop line.
        let from = OOB_READ_ATTACH.find("[Switching focus").unwrap();
        let to = OOB_READ_ATTACH.find("  Kernel Parent").unwrap();
        let (_, f) = one_fault(&OOB_READ_ATTACH[from..to]);
        assert_eq!(f.error, None);
        assert_eq!(f.kernel.as_deref(), Some("gather_rows"));
        assert_eq!(f.block, Some([3, 0, 0]));
        assert_eq!(f.grid, Some([4, 1, 1]));
    }

    #[test]
    fn failed_runs_give_notes_not_faults() {
        let ev = scan_str(NO_CORE_13, "13.log");
        assert!(ev.faults.is_empty());
        assert!(ev.tools.contains(&Tool::CudaGdb));
        assert!(ev.notes.iter().any(|n| n == "cuda-gdb (line 2): No core file specified."), "{:?}", ev.notes);
        let ev = scan_str(NO_PROCESS_17, "17.log");
        assert!(ev.faults.is_empty());
        assert!(
            ev.notes.iter().any(|n| n == "cuda-gdb (line 2): ptrace: No such process."),
            "{:?}",
            ev.notes
        );
        assert!(!ev.debugger_crashed);
    }

    #[test]
    fn sessions_in_one_log_stay_apart() {
        let text = format!(
            "{TORCH_ASSERT_CORE}{OOB_WRITE_CORE}{OOB_WRITE_G_CORE}{}",
            with_bundle_command(OOB_READ_ATTACH_CMD, OOB_READ_ATTACH)
        );
        let ev = scan_str(&text, "many.log");
        let got: Vec<_> = ev.faults.iter().map(|f| (f.pid, f.error.clone(), f.location.clone())).collect();
        assert_eq!(
            got,
            vec![
                (Some(2899), Some(ErrorClass::DeviceAssert), None),
                (Some(851), Some(ErrorClass::IllegalAddress), Some(loc("oob_write.cu", 7))),
                (Some(2419), Some(ErrorClass::IllegalAddress), Some(loc("oob_write.cu", 7))),
                (Some(4069), Some(ErrorClass::IllegalAddress), Some(loc("oob_read.cu", 8))),
            ]
        );
        assert!(ev.debugger_crashed);
        assert_eq!(ev.faults[2].locals, vec![pair("i", "2176")]);
        assert!(ev.faults[3].locals.is_empty());
    }

    #[test]
    fn kernel_table_rows() {
        let row_of = |text: &str| text.lines().find(|l| l.starts_with('*')).unwrap().to_string();
        let row = parse_kernel_row(&row_of(TEMPLATED_CORE)).unwrap();
        assert!(row.current);
        assert_eq!(row.device, Some(0));
        assert_eq!(row.grid, Some([16, 1, 1]));
        assert_eq!(row.block_dim, Some([128, 1, 1]));
        assert_eq!(row.invocation, "axpy_vec<float, 4>()");
        // A kernel on the second GPU.
        let row = parse_kernel_row(&row_of(DIST_ATTACH)).unwrap();
        assert_eq!(row.device, Some(1));
        assert_eq!(row.grid, Some([64, 1, 1]));
        assert_eq!(row.invocation, "gather_kv_kernel()");
        // A template kernel's row without line information.
        let row = parse_kernel_row(&row_of(TORCH_ASSERT_CORE)).unwrap();
        assert_eq!((row.grid, row.block_dim), (Some([1, 1, 1]), Some([32, 1, 1])));
        assert_eq!(
            row.invocation,
            "at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>()"
        );
        let header = TEMPLATED_CORE.lines().find(|l| l.trim_start().starts_with("Kernel Parent")).unwrap();
        assert_eq!(parse_kernel_row(header), None);
    }

    #[test]
    fn excerpts_cut_at_every_char_boundary_never_panic() {
        // The parser alone (scan_str allocates a 1 MiB buffer per call).
        fn parse(text: &str) -> Evidence {
            let mut p = CudaGdbParser::default();
            for (n, line) in text.lines().enumerate() {
                let (line, rank) = super::super::scan::strip_rank(line);
                p.line(line, LineCtx { lineno: n as u64 + 1, rank });
            }
            let mut ev = Evidence::default();
            p.finish(&mut ev);
            ev
        }
        for text in [
            NO_CORE_13,
            NO_PROCESS_17,
            TORCH_ASSERT_CORE,
            TORCH_ASSERT_ATTACH,
            OOB_WRITE_CORE,
            OOB_WRITE_G_CORE,
            OOB_WRITE_ATTACH,
            OOB_WRITE_G_ATTACH,
            TEMPLATED_CORE,
            OOB_READ_ATTACH,
            ATTACH_G_53,
            DIST_ATTACH_86,
            DIST_ATTACH,
        ] {
            assert_eq!(parse(text).faults, scan_str(text, "x.log").faults);
            for (i, _) in text.char_indices() {
                let _ = parse(&text[..i]);
                let _ = parse(&text[i..]);
            }
        }
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(s in "\\PC{0,400}") {
            let _ = scan_str(&s, "any.log");
            let _ = parse_triggered(&s);
            let _ = parse_frame_body(&s);
            let _ = parse_kernel_row(&s);
            let _ = parse_focus(&s);
        }

        #[test]
        fn gdb_like_lines_never_panic(
            lines in prop::collection::vec(
                "(\\$ cuda-gdb -p |Opening GPU coredump: |CUDA Exception: |The exception was triggered at PC 0x|\\[Current focus set to |#[0-9]  0x[0-9a-f]{1,4} in |0x1 in |  Kernel Parent Dev Grid Status|\\*  |[a-z]{1,3} = |A fatal error internal to GDB has been detected|Assertion failed\\.|\\[exit )[ -~]{0,60}",
                0..40,
            )
        ) {
            let text = lines.join("\n");
            let ev = scan_str(&text, "gen.log");
            prop_assert!(ev.faults.iter().all(|f| f.frames.len() <= MAX_ITEMS && f.locals.len() <= MAX_ITEMS));
        }

        #[test]
        fn triggered_lines_with_nested_parentheses_never_panic(
            s in "PC 0x[0-9a-f]{1,8} {1,2}[a-z<>(), :*0-9]{0,60}( \\(| inlined from )?[a-z.:0-9() ]{0,30}"
        ) {
            if let Some(t) = parse_triggered(&s) {
                prop_assert!(t.chain.len() <= MAX_ITEMS);
            }
        }

        #[test]
        fn shuffled_real_lines_never_panic(picks in prop::collection::vec(0usize..200, 0..80)) {
            let all: Vec<&str> = [
                TORCH_ASSERT_CORE,
                OOB_WRITE_CORE,
                OOB_WRITE_G_CORE,
                OOB_WRITE_G_ATTACH,
                TEMPLATED_CORE,
                OOB_READ_ATTACH,
                DIST_ATTACH_86,
                DIST_ATTACH,
            ]
                .iter()
                .flat_map(|t| t.lines())
                .collect();
            let text: Vec<&str> = picks.iter().map(|&i| all[i % all.len()]).collect();
            let _ = scan_str(&text.join("\n"), "mix.log");
        }
    }

    // Multi-byte, invalid and 5,000-character kernel names in cuda-gdb's lines (`The exception
    // was triggered at PC`, frames with `<<<...>>>`, the kernel table): no panic.
    crate::findings::fuzz::multi_byte_kernel_names_never_panic!(
        "cudagdb-core-1.log",
        "attach.log",
        "cudagdb-merged-1.log",
        "cudagdb-hang.log"
    );

    const HANG_FLAG: &str = recording!("h200/hang/hang_flag/cudagdb_1.log");
    const HANG_PEER: &str = recording!("h200/hang/hang_two_procs/cudagdb_1.log");
    const HANG_IDLE: &str = recording!("h200/hang/hang_two_procs/cudagdb_2.log");

    /// A real attach to the hung `hang_flag` (`-ex 'thread apply all bt' -ex detach`).
    const ATTACHED: &str = recording!("h200/hang/hang_flag_attached/attach_host.log");
    /// `debug-ima dump`'s attach to the hung `hang_flag` and `hang_triton` (tests/fixtures/h200/dump).
    const LIVE_FLAG: &str = recording!("h200/dump/hang_flag/attach.log");
    const LIVE_TRITON: &str = recording!("h200/dump/hang_triton/attach.log");

    #[test]
    fn an_attach_names_its_pid_when_it_detaches() {
        let last = ATTACHED.lines().last().unwrap();
        assert_eq!(last, "[Inferior 1 (process 2963) detached]");
        assert_eq!(detached_pid(last), Some(2963));
        assert_eq!(detached_pid("[Inferior 1 (process x) detached]"), None);
        assert_eq!(detached_pid("[Inferior 1 (process 2963) exited normally]"), None);
    }

    #[test]
    fn an_attach_to_a_hung_process_is_a_snapshot_with_its_pid() {
        let ev = scan_str(LIVE_FLAG, "cudagdb-attach-467.log");
        assert!(ev.faults.is_empty(), "{:?}", ev.faults);
        assert_eq!(ev.snapshots.len(), 1, "{ev:?}");
        let s = &ev.snapshots[0];
        assert_eq!((s.pid, s.kernel.as_deref(), s.core.as_deref()), (Some(467), Some("consume"), None));
        assert_eq!(
            s.chain,
            vec![loc("/work/main/tests/gpu/programs/hang_flag.cu", 8), loc("hang_flag.cu", 15)]
        );
        let lines: Vec<(u64, Option<u32>)> = s.threads.iter().map(|g| (g.count, g.line)).collect();
        assert_eq!(lines, vec![(256, Some(8)), (768, Some(18))], "{:?}", s.threads);
        let s = &scan_str(LIVE_TRITON, "cudagdb-attach-571.log").snapshots[0];
        assert_eq!((s.pid, s.kernel.as_deref(), s.thread_count()), (Some(571), Some("wait_then_copy"), 512));
    }

    #[test]
    fn a_user_triggered_dump_of_a_hang_is_a_snapshot_not_a_fault() {
        let ev = scan_str(HANG_FLAG, "cudagdb-584.log");
        assert!(ev.faults.is_empty(), "{:?}", ev.faults);
        assert_eq!(ev.snapshots.len(), 1);
        let s = &ev.snapshots[0];
        assert_eq!(s.pid, Some(584));
        assert_eq!(s.kernel.as_deref(), Some("consume"));
        assert_eq!(s.mangled.as_deref(), Some("_Z7consumePViPiPf"));
        // `bt`: `at /tmp/ima-hang_flag/hang_flag.cu:8 in _Z13wait_for_flagPViPi inlined from hang_flag.cu:15`.
        assert_eq!(s.chain, vec![loc("/tmp/ima-hang_flag/hang_flag.cu", 8), loc("hang_flag.cu", 15)]);
        assert_eq!(
            (s.block, s.thread, s.device, s.sm, s.warp),
            (Some([4, 0, 0]), Some([0, 0, 0]), Some(0), Some(124), Some(0))
        );
        assert_eq!(s.pc, Some(0x7f197f7a0120));
        assert_eq!(s.instruction.as_deref(), Some("ISETP.NE.AND P0,PT,R0,RZ,PT"));
        assert_eq!(s.kernels.len(), 1);
        let k = &s.kernels[0];
        assert_eq!(
            (k.id, k.status.as_deref(), k.grid, k.block_dim),
            (Some(0), Some("Active"), Some([8, 1, 1]), Some([128, 1, 1]))
        );
        assert!(k.focus);
        // 16 rows in three groups: the header's atomicAdd, line 8, line 18.
        let g: Vec<(u64, u64, Option<&str>, Option<u32>)> = s
            .threads
            .iter()
            .map(|g| (g.count, g.rows, g.file.as_deref().map(names::base_name), g.line))
            .collect();
        assert_eq!(
            g,
            vec![
                (128, 4, Some("device_atomic_functions.hpp"), Some(107)),
                (768, 8, Some("hang_flag.cu"), Some(18)),
                (128, 4, Some("hang_flag.cu"), Some(8)),
            ]
        );
        assert_eq!(
            s.threads[0].file.as_deref(),
            Some("/usr/local/cuda/bin/../targets/x86_64-linux/include/device_atomic_functions.hpp")
        );
        assert_eq!(s.threads[1].block_range, [[0, 0, 0], [7, 0, 0]]);
        assert_eq!(s.threads[1].thread_range, [[32, 0, 0], [127, 0, 0]]);
        assert_eq!(s.threads[2].block_range, [[3, 0, 0], [7, 0, 0]]);
        assert!(s.threads[2].focus && !s.threads[1].focus);
        assert_eq!(s.threads.iter().map(|g| g.kernel_id).collect::<Vec<_>>(), vec![Some(0); 3]);
        assert_eq!(s.thread_count(), 1024);
        // `info cuda warps`: the focused SM only.
        assert_eq!(s.warps.len(), 4);
        assert_eq!((s.warps[0].sm, s.warps[0].focus, s.warps[0].pc), (Some(124), true, Some(0x7f197f7a0120)));
        assert_eq!(
            (s.warps[3].warp, s.warps[3].block, s.warps[3].thread),
            (3, Some([4, 0, 0]), Some([96, 0, 0]))
        );
    }

    #[test]
    fn a_row_spanning_blocks_covers_every_thread_of_the_block() {
        let s = &scan_str(HANG_PEER, "cudagdb-1163.log").snapshots[0];
        assert_eq!(s.pid, Some(1163));
        assert_eq!(s.chain, vec![loc("/tmp/ima-hang_two_procs/hang_two_procs.py", 15)]);
        // (1,0,0)(96,0,0) .. (2,0,0)(127,0,0), 160 threads, joins the rows at the same PC.
        let at_f80 = s.threads.iter().find(|g| g.pc == 0x7eff8f7a0f80).unwrap();
        assert_eq!((at_f80.count, at_f80.rows), (384, 4));
        assert_eq!(at_f80.block_range, [[0, 0, 0], [3, 0, 0]]);
        assert_eq!(at_f80.thread_range, [[0, 0, 0], [127, 0, 0]]);
        assert_eq!(s.thread_count(), 512);
    }

    #[test]
    fn a_dump_with_no_kernel_running_says_so() {
        let ev = scan_str(HANG_IDLE, "cudagdb-1190.log");
        assert!(ev.faults.is_empty());
        let s = &ev.snapshots[0];
        assert_eq!(s.pid, Some(1190));
        assert!(s.no_threads && s.threads.is_empty() && s.kernels.is_empty());
        assert_eq!(s.kernel, None);
    }

    #[test]
    fn thread_rows_with_spaces_in_the_file_and_without_a_line() {
        let row = HANG_FLAG.lines().find(|l| l.starts_with('*') && l.contains("hang_flag.cu")).unwrap();
        let spaced = row.replace("/tmp/ima-hang_flag/hang_flag.cu", "/tmp/my project/hang flag.cu");
        let r = parse_thread_row(&spaced).unwrap();
        assert_eq!(
            (r.file.as_deref(), r.line, r.count, r.focus),
            (Some("/tmp/my project/hang flag.cu"), Some(8), 32, true)
        );
        let cut_line = row.trim_end().trim_end_matches(char::is_numeric).to_string();
        let r = parse_thread_row(&cut_line).unwrap();
        assert_eq!((r.file.as_deref(), r.line), (Some("/tmp/ima-hang_flag/hang_flag.cu"), None));
        let header = HANG_FLAG.lines().find(|l| l.contains("BlockIdx ThreadIdx")).unwrap();
        assert_eq!(parse_thread_row(header), None);
        assert_eq!(parse_thread_row("Kernel 0"), None);
    }
}

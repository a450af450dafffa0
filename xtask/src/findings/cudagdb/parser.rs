//! The cuda-gdb line parser (`CudaGdbParser`): which line opens a session (a `$ cuda-gdb`
//! command line, `Opening GPU coredump:`, the first cuda-gdb line), cuda-gdb's own crash,
//! and each line inside a session handed to the readers of its siblings.
//!
//! Must not: do I/O, spawn processes, print, panic on any input, or allocate for lines
//! that are not cuda-gdb's while no session is open (every line of a log reaches every
//! parser). Memory is bounded: frames, arguments, locals, notes, kernel rows and warps are
//! capped.

use super::frames::{
    error_class, parse_focus, parse_frame_body, parse_frame_line, parse_triggered, parse_var, GdbFrame,
};
use super::instructions::{errorpc_instruction, instruction_address, is_trap_instruction, parse_line_range};
use super::session::Session;
use super::tables::{parse_device_sm, parse_kernel_row, parse_thread_row, parse_warp_row};
use super::text::{cut, MAX_ITEMS, MAX_NAME, MAX_SESSIONS};
use crate::findings::{
    coredump::pid_from_dump_path, names, DeviceSnapshot, ErrorClass, Evidence, Fault, LineCtx, LineParser,
    Tool,
};

/// The function of cuda-gdb 13.0 that opens a GPU dump (`target cudacore`), as GDB's own
/// backtrace names it when cuda-gdb crashes there (recorded on the H200 and the H100).
const OPEN_FRAME: &str = "cuda_core_target_open";

/// Parses cuda-gdb's output; see the module documentation.
#[derive(Default)]
pub struct CudaGdbParser {
    pub(super) cur: Option<Session>,
    pub(super) faults: Vec<Fault>,
    pub(super) notes: Vec<String>,
    pub(super) seen: bool,
    pub(super) crashed: bool,
    /// In this session, GDB's own backtrace (printed just before a crash) named the frame that
    /// opens a GPU dump (`cuda_core_target_open`): the crash came while opening it.
    pub(super) open_frame: bool,
    /// A crash came while cuda-gdb opened the dump, before any later command ran.
    pub(super) crashed_opening: bool,
    /// A `bt` listing being read (`#0`, `#1`, ... lines).
    pub(super) listing: Vec<GdbFrame>,
    pub(super) in_listing: bool,
    /// The lines just after a device `bt`: `info locals` / `info args` output.
    pub(super) after_bt: bool,
    /// Inside the `info cuda kernels` table.
    pub(super) in_table: bool,
    /// Inside `info cuda threads`, with the kernel of the last `Kernel N` line.
    pub(super) in_threads: bool,
    pub(super) threads_kernel: Option<u32>,
    /// Inside `info cuda warps`, with the device and SM of the last `Device D SM S` line.
    pub(super) in_warps: bool,
    pub(super) warps_at: (Option<u32>, Option<u32>),
    pub(super) snapshots: Vec<DeviceSnapshot>,
}

impl CudaGdbParser {
    pub(super) fn session(&mut self, ctx: LineCtx) -> &mut Session {
        self.cur.get_or_insert_with(|| Session { rank: ctx.rank, log_line: ctx.lineno, ..Session::default() })
    }

    pub(super) fn end_tables(&mut self) {
        self.in_table = false;
        self.in_threads = false;
        self.in_warps = false;
    }

    pub(super) fn note(&mut self, note: String) {
        if self.notes.len() < MAX_SESSIONS {
            self.notes.push(note);
        }
    }

    pub(super) fn end_listing(&mut self) {
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

    pub(super) fn end_session(&mut self) {
        self.open_frame = false;
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

    pub(super) fn command(&mut self, cmd: &str, ctx: LineCtx) {
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

    pub(super) fn opening(&mut self, path: &str, ctx: LineCtx) {
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

    pub(super) fn crash(&mut self, ctx: LineCtx) {
        self.crashed = true;
        self.crashed_opening |= self.open_frame;
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
    pub(super) fn opener(&mut self, line: &str, ctx: LineCtx) -> bool {
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
    pub(super) fn inside(&mut self, line: &str, ctx: LineCtx) {
        let first = line.as_bytes()[0];
        // A frame of GDB's own backtrace after `Fatal signal`: `0x604950 _ZL21cuda_core_target_openPKci`.
        if first == b'0' && line.contains(OPEN_FRAME) {
            self.open_frame = true;
            return;
        }
        if self.instruction_line(line, first) {
            return;
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
        if self.table_line(line, first) {
            return;
        }
        let Some(s) = self.cur.as_mut() else { return };
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

    /// `x/i` lines (before the PC, at the error PC) and `info line`'s range: true when `line` was one.
    fn instruction_line(&mut self, line: &str, first: u8) -> bool {
        if first == b' ' && line.starts_with("   0x") && line.contains(">:") {
            // `x/2i $pc-16`: `   0x7f99... <_Z16gather_kv_blocksPKfPKiS2_Pfii+304>:\tBPT.TRAP 0x1`.
            if let (Some(s), (Some(pc), _)) = (self.cur.as_mut(), instruction_address(line)) {
                if let Some((_, ins)) = line.split_once(">:") {
                    s.before_pc = Some((pc, ins.trim().chars().take(200).collect()));
                }
                self.end_tables();
                return true;
            }
        }
        if first == b'L' {
            if let (Some(s), Some(r)) = (self.cur.as_mut(), parse_line_range(line)) {
                if s.line_ranges.len() < MAX_ITEMS {
                    s.line_ranges.push(r);
                }
                return true;
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
                return true;
            }
        }
        false
    }

    /// The rows of `info cuda kernels`, `info cuda threads` and `info cuda warps`, with their
    /// headers: true when `line` was one of them.
    fn table_line(&mut self, line: &str, first: u8) -> bool {
        let Some(s) = self.cur.as_mut() else { return false };
        if first == b' ' && line.trim_start().starts_with("Kernel Parent Dev Grid Status") {
            self.seen = true;
            s.output = true;
            self.in_table = true;
            self.after_bt = false;
            return true;
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
                return true;
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
            return true;
        }
        if first == b' ' && trimmed.starts_with("Wp Active Lanes Mask") {
            self.seen = true;
            s.output = true;
            self.in_warps = true;
            self.in_threads = false;
            self.warps_at = (None, None);
            return true;
        }
        if self.in_threads {
            if let Some(k) = line.strip_prefix("Kernel ").and_then(|k| k.trim().parse().ok()) {
                self.threads_kernel = Some(k);
                return true;
            }
            if let Some(mut row) = parse_thread_row(line) {
                row.kernel_id = self.threads_kernel;
                s.thread_row(row);
                return true;
            }
            self.in_threads = false;
        }
        if self.in_warps {
            if let Some(at) = parse_device_sm(line) {
                self.warps_at = at;
                return true;
            }
            if let Some(mut w) = parse_warp_row(line) {
                (w.device, w.sm) = self.warps_at;
                if s.warps.len() < MAX_ITEMS {
                    s.warps.push(w);
                }
                return true;
            }
            self.in_warps = false;
        }
        false
    }
}

/// The pid in gdb's `[Inferior N (process PID) detached]`.
pub(super) fn detached_pid(line: &str) -> Option<u32> {
    let rest = line.strip_prefix("[Inferior ")?.strip_suffix(" detached]")?;
    let (_, pid) = rest.split_once(" (process ")?;
    pid.strip_suffix(')')?.parse().ok()
}

impl LineParser for CudaGdbParser {
    /// Inside a session; else a line that may open one.
    #[inline]
    fn wants(&self, line: &str, _phrase_free: bool) -> bool {
        self.cur.is_some() || matches!(line.as_bytes().first(), Some(b'$' | b'O' | b'C' | b'T' | b'[' | b'A'))
    }

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
        if self.crashed_opening {
            ev.debugger_crashed_opening = true;
        }
        ev.faults.append(&mut self.faults);
        ev.snapshots.append(&mut self.snapshots);
        ev.notes.append(&mut self.notes);
    }
}

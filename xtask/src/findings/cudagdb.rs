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
//! Must not: do I/O, spawn processes, print, panic on any input, or allocate for lines
//! that are not cuda-gdb's while no session is open (every line of a log reaches every
//! parser). Memory is bounded: frames, arguments, locals and notes are capped.

use super::coredump::pid_from_dump_path;
use super::names;
use super::{
    parse_dim3, parse_hex, parse_source_loc, Dim3, ErrorClass, Evidence, Fault, Frame, LineCtx, LineParser,
    SourceLoc, Tool,
};

/// Frames, arguments and locals kept per session.
const MAX_ITEMS: usize = 256;
/// Faults and notes kept per input.
const MAX_SESSIONS: usize = 1024;

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
    /// Innermost first; the last is the user's line.
    chain: Vec<SourceLoc>,
}

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
    /// Something cuda-gdb printed that belongs to this session was seen.
    output: bool,
}

impl Session {
    fn has_exception(&self) -> bool {
        self.error.is_some() || self.triggered.is_some() || self.focus.is_some()
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
            f.location = self.frames.iter().chain(self.stop.as_ref()).find_map(GdbFrame::location);
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
        f
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
}

impl CudaGdbParser {
    fn session(&mut self, ctx: LineCtx) -> &mut Session {
        self.cur.get_or_insert_with(|| Session { rank: ctx.rank, ..Session::default() })
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
        self.in_table = false;
        if let Some(s) = self.cur.take() {
            if s.has_exception() && self.faults.len() < MAX_SESSIONS {
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
        let mut s = Session { rank: ctx.rank, ..Session::default() };
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
    /// `$ O C T [ A`.
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

impl LineParser for CudaGdbParser {
    fn line(&mut self, line: &str, ctx: LineCtx) {
        let Some(&first) = line.as_bytes().first() else {
            if self.cur.is_some() {
                self.end_listing();
                self.in_table = false;
                self.after_bt = false;
            }
            return;
        };
        if self.cur.is_none() && !matches!(first, b'$' | b'O' | b'C' | b'T' | b'[' | b'A') {
            return;
        }
        if matches!(first, b'$' | b'O' | b'C' | b'T' | b'[' | b'A') {
            if self.in_listing && first != b'#' {
                self.end_listing();
            }
            if self.opener(line, ctx) {
                self.in_table = false;
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
        ev.notes.append(&mut self.notes);
    }
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

/// The index of the `(` matching a final `)`, if `s` ends with one.
fn open_of_last_group(s: &str) -> Option<usize> {
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
        if let Some(first) = segs.next().and_then(loc_of) {
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
    Some(KernelRow {
        current,
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
    use proptest::prelude::*;

    /// `13_cudacore.log`, verbatim.
    const NO_CORE_13: &str = r#"$ cuda-gdb -batch -ex set pagination off -ex target cudacore  -ex info cuda kernels -ex bt -ex info cuda threads -ex info line *$pc -ex x/3i $pc -ex info registers $pc -ex info cuda exceptions
No core file specified.
No CUDA kernels.
No stack.
No CUDA threads.
No registers.
No registers.
The program has no registers now.
Unrecognized option: 'exceptions'.
[exit 1, s]
"#;

    /// `17_attach.log`, verbatim.
    const NO_PROCESS_17: &str = r#"$ cuda-gdb -batch -ex set pagination off -p 927 -ex info cuda kernels -ex bt -ex info cuda threads -ex info line *$pc -ex info cuda exceptions -ex thread apply all bt -ex kill
ptrace: No such process.
No CUDA kernels.
No stack.
No CUDA threads.
No registers.
Unrecognized option: 'exceptions'.
The program is not being run.
[exit 1, s]
"#;

    /// `36_assert_cudacore.log`, verbatim.
    const ASSERT_36: &str = r#"$ cuda-gdb -batch -ex target cudacore /tmp/cd/cuda_coredump_vm.1293.1795999427 -ex info cuda kernels -ex bt
Opening GPU coredump: /tmp/cd/cuda_coredump_vm.1293.1795999427
[Current focus set to CUDA kernel 0, grid 3, block (0,0,0), thread (3,0,0), device 0, sm 124, warp 2, lane 3]

Assertion failed.
#0  0x00007f22377a4380 in void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)<<<(1,1,1),(32,1,1)>>> ()
  Kernel Parent Dev Grid Status                             SMs Mask GridDim BlockDim Invocation                                                                                      
*      0      -   0    3 Active 0x0010000000000000000000000000000000 (1,1,1) (32,1,1) at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>() 
#0  0x00007f22377a4380 in void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)<<<(1,1,1),(32,1,1)>>> ()
[exit 0, s]
"#;

    /// `43_far_cudacore.log`, verbatim.
    const CRASH_43: &str = r#"$ cuda-gdb -batch -ex target cudacore /tmp/cd/cuda_coredump_vm.1720.1795999523 -ex set pagination off -ex info cuda kernels -ex bt -ex info cuda devices -ex info cuda sms -ex info cuda warps -ex info cuda lanes -ex info cuda threads -ex info line *$pc -ex x/4i $pc -ex list *$pc -ex print $errno -ex info frame
Opening GPU coredump: /tmp/cd/cuda_coredump_vm.1720.1795999523

CUDA Exception: Warp Illegal Address
The exception was triggered at PC 0x7f9a577a00f0  scatter_far(int*, int)  (ima_far.cu:13)
terminate called after throwing an instance of 'std::out_of_range'
  what():  vector::_M_range_check: __n (which is 4294967294) >= this->size() (which is 64)


Fatal signal: Aborted
----- Backtrace -----
0x545d9b _Z22gdb_internal_backtracev
0x6fa971 _ZL19handle_fatal_signali
0x7f145104532f ???
0x7f145109ec0c pthread_kill
0x7f145104527d gsignal
0x7f14510288fe abort
0x7f14514a5ff4 ???
0x7f14514bb0d9 ???
0x7f14514a5a54 _ZSt9terminatev
0x7f14514bb390 __cxa_throw
0x7f14514a949f _ZSt24__throw_out_of_range_fmtPKcz
0x60790c _ZNK14cuda_exception27print_cuda_exception_stringEv
0x604504 _Z38cuda_core_initialize_events_exceptionsv
0x604950 _ZL21cuda_core_target_openPKci
0x957bc2 _ZL11open_targetPKciP16cmd_list_element
0x57266f _Z8cmd_funcP16cmd_list_elementPKci
0x96801e _Z15execute_commandPKci
0x7de284 _ZL20catch_command_errorsPFvPKciES0_ib
0x7de33f _ZL15execute_cmdargsPKSt6vectorI6cmdargSaIS0_EE11cmdarg_kindS5_Pi
0x7df3b6 _ZL15captured_main_1P18captured_main_args
0x7dfd8a _Z8gdb_mainP18captured_main_args
0x44c884 main
---------------------
A fatal error internal to GDB has been detected, further
debugging is not possible.  GDB will now terminate.

This is a bug, please report it.  For instructions, see:
<https://forums.developer.nvidia.com/c/developer-tools/cuda-developer-tools/cuda-gdb>.

[exit 134, 328 ms]
"#;

    /// `45_far_cudacore_G.log`, verbatim.
    const LOCALS_45: &str = r#"$ cuda-gdb -batch -ex target cudacore /tmp/cd/cuda_coredump_vm.1783.1795999524 -ex bt -ex info locals -ex info args -ex print i -ex info cuda kernels
Opening GPU coredump: /tmp/cd/cuda_coredump_vm.1783.1795999524
[Current focus set to CUDA kernel 0, grid 1, block (2,0,0), thread (128,0,0), device 0, sm 124, warp 4, lane 0]

CUDA Exception: Warp Illegal Address
The exception was triggered at PC 0x7f6f3b7a02c0  scatter_far(int*, int)  (ima_far.cu:13)
#0  0x00007f6f3b7a02f0 in scatter_far<<<(4,1,1),(256,1,1)>>> (out=0x7f6f33e00000, n=1024) at ima_far.cu:15
15	}
#0  0x00007f6f3b7a02f0 in scatter_far<<<(4,1,1),(256,1,1)>>> (out=0x7f6f33e00000, n=1024) at ima_far.cu:15
i = 640
out = 0x7f6f33e00000
n = 1024
$1 = 640
  Kernel Parent Dev Grid Status                             SMs Mask GridDim  BlockDim Invocation                              
*      0      -   0    1 Active 0x0550000000000000000000000000000000 (4,1,1) (256,1,1) scatter_far(out=0x7f6f33e00000, n=1024) 
[exit 0, 304 ms]
"#;

    /// `51_attach.log`, verbatim.
    const ATTACH_CRASH_51: &str = r#"$ cuda-gdb -batch -p 1866 -ex set pagination off -ex info cuda kernels -ex bt -ex info cuda devices -ex info cuda sms -ex info cuda warps -ex info cuda lanes -ex info cuda threads -ex info line *$pc -ex x/4i $pc -ex list *$pc -ex print $errno -ex info frame -ex info cuda exception -ex thread apply all bt
[New LWP 1869]
[New LWP 1873]
[Thread debugging using libthread_db enabled]
Using host libthread_db library "/lib/x86_64-linux-gnu/libthread_db.so.1".
[New Thread 0x7fae47dd5000 (LWP 1920)]
[New Thread 0x7fac35b0d000 (LWP 1921)]
[Detaching after fork from child process 1922]
[Thread 0x7fae47dd5000 (LWP 1920) exited]

CUDA Exception: Warp Illegal Address
The exception was triggered at PC 0x7fac2f7a00f0  scatter_far(int*, int)  (ima_far.cu:13)
terminate called after throwing an instance of 'std::out_of_range'
  what():  vector::_M_range_check: __n (which is 4294967294) >= this->size() (which is 64)


Fatal signal: Aborted
----- Backtrace -----
0x545d9b _Z22gdb_internal_backtracev
0x6fa971 _ZL19handle_fatal_signali
0x7f9e4d84532f ???
0x7f9e4d89ec0c pthread_kill
0x7f9e4d84527d gsignal
0x7f9e4d8288fe abort
0x7f9e4dca5ff4 ???
0x7f9e4dcbb0d9 ???
0x7f9e4dca5a54 _ZSt9terminatev
0x7f9e4dca5a6e ???
0x445ba2 _Z11target_wait6ptid_tP17target_waitstatus10enum_flagsI16target_wait_flagE.cold.332
0x77fc42 _ZL16do_target_wait_1P8inferior6ptid_tP17target_waitstatus10enum_flagsI16target_wait_flagE
0x7929c7 _ZL17wait_for_inferiorP8inferior
0x61b617 _ZL21cuda_inferior_createdP8inferior
0x775373 _Z20post_create_inferiori
0x7759e7 _ZL16attach_post_waiti21attach_post_wait_mode
0x7777fe _ZN8inferior20do_all_continuationsEv
0x765b0b _Z22inferior_event_handler19inferior_event_type
0x793289 _Z20fetch_inferior_eventv
0xb4b69c _ZL18gdb_wait_for_eventi.part.17
0xb4b7b5 _Z16gdb_do_one_eventi
0x964b88 _Z22wait_sync_command_donev
0x7de28f _ZL20catch_command_errorsPFvPKciES0_ib
0x7dfa20 _ZL15captured_main_1P18captured_main_args
0x7dfd8a _Z8gdb_mainP18captured_main_args
0x44c884 main
---------------------
A fatal error internal to GDB has been detected, further
debugging is not possible.  GDB will now terminate.

This is a bug, please report it.  For instructions, see:
<https://forums.developer.nvidia.com/c/developer-tools/cuda-developer-tools/cuda-gdb>.

[exit 134, 503 ms]
"#;

    /// `53_attach_G.log`, verbatim.
    const ATTACH_G_53: &str = r#"$ cuda-gdb -batch -p 1933 -ex bt -ex info locals -ex print i -ex print out -ex info cuda kernels
[New LWP 1935]
[New LWP 1939]
[Thread debugging using libthread_db enabled]
Using host libthread_db library "/lib/x86_64-linux-gnu/libthread_db.so.1".
[New Thread 0x7fe915fd5000 (LWP 1988)]
[New Thread 0x7fe90c851000 (LWP 1989)]
[Detaching after fork from child process 1990]
[Thread 0x7fe915fd5000 (LWP 1988) exited]

CUDA Exception: Warp Illegal Address
The exception was triggered at PC 0x7fe7037a02c0  scatter_far(int*, int)  (ima_far.cu:13)

Thread 1 "f_G" received signal CUDA_EXCEPTION_14, Warp Illegal Address.
[Switching focus to CUDA kernel 0, grid 1, block (2,0,0), thread (128,0,0), device 0, sm 124, warp 4, lane 0]
0x00007fe7037a02f0 in scatter_far<<<(4,1,1),(256,1,1)>>> (out=0x7fe6f5e00000, n=1024) at ima_far.cu:15
15	}
#0  0x00007fe7037a02f0 in scatter_far<<<(4,1,1),(256,1,1)>>> (out=0x7fe6f5e00000, n=1024) at ima_far.cu:15
i = 640
$1 = 640
$2 = (@generic int * @parameter) 0x7fe6f5e00000
  Kernel Parent Dev Grid Status                             SMs Mask GridDim  BlockDim Invocation                              
*      0      -   0    1 Active 0x0550000000000000000000000000000000 (4,1,1) (256,1,1) scatter_far(out=0x7fe6f5e00000, n=1024) 
[exit 0, 709 ms]
"#;

    /// `63_graph_cudacore.log`, verbatim.
    const GRAPH_63: &str = r#"$ cuda-gdb -batch -ex target cudacore /tmp/cd/cuda_coredump_vm.2131.1795999550 -ex info cuda kernels -ex bt
Opening GPU coredump: /tmp/cd/cuda_coredump_vm.2131.1795999550
[Current focus set to CUDA kernel 0, grid 10, block (16902,0,0), thread (0,0,0), device 0, sm 0, warp 10, lane 0]

CUDA Exception: Warp Illegal Address
The exception was triggered at PC 0x7ff49f7a9430  void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<unsigned char>, std::array<char*, 1ul> >(int, at::native::FillFunctor<unsigned char>, std::array<char*, 1ul>)
#0  0x00007ff49f7a9470 in void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<unsigned char>, std::array<char*, 1ul> >(int, at::native::FillFunctor<unsigned char>, std::array<char*, 1ul>)<<<(40960,1,1),(128,1,1)>>> ()
  Kernel Parent Dev Grid Status                             SMs Mask     GridDim  BlockDim Invocation                                                                                                      
*      0      -   0   10 Active 0x0fffffffffffffffffffffffffffffffff (40960,1,1) (128,1,1) at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<unsigned char>, std::array<char*, 1ul> >() 
#0  0x00007ff49f7a9470 in void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<unsigned char>, std::array<char*, 1ul> >(int, at::native::FillFunctor<unsigned char>, std::array<char*, 1ul>)<<<(40960,1,1),(128,1,1)>>> ()
[exit 0, 3123 ms]
"#;

    /// `86_dist_attach.log`, verbatim.
    const DIST_ATTACH_86: &str = r#"$ cuda-gdb -batch -p 833 -ex info cuda kernels -ex bt
[New LWP 852]
[New LWP 853]
[New LWP 854]
[New LWP 855]
[New LWP 866]
[New LWP 869]
[New LWP 870]
[Thread debugging using libthread_db enabled]
Using host libthread_db library "/lib/x86_64-linux-gnu/libthread_db.so.1".
[New Thread 0x7f05bdfd5700 (LWP 964)]
[New Thread 0x7f02b8a416c0 (LWP 966)]
[Detaching after fork from child process 967]
[Thread 0x7f05bdfd5700 (LWP 964) exited]

CUDA Exception: Warp Illegal Address
The exception was triggered at PC 0x7f02edd3c830  void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<unsigned char>, std::array<char*, 1ul> >(int, at::native::FillFunctor<unsigned char>, std::array<char*, 1ul>)

Thread 1 "python3" received signal CUDA_EXCEPTION_14, Warp Illegal Address.
[Switching focus to CUDA kernel 0, grid 4, block (50295,0,0), thread (0,0,0), device 1, sm 0, warp 7, lane 0]
0x00007f02edd3c870 in void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<unsigned char>, std::array<char*, 1ul> >(int, at::native::FillFunctor<unsigned char>, std::array<char*, 1ul>)<<<(524288,1,1),(128,1,1)>>> ()
  Kernel Parent Dev Grid Status                             SMs Mask      GridDim  BlockDim Invocation                                                                                                      
*      0      -   1    4 Active 0x0fffffffffffffffffffffffffffffffff (524288,1,1) (128,1,1) at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<unsigned char>, std::array<char*, 1ul> >() 
#0  0x00007f02edd3c870 in void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<unsigned char>, std::array<char*, 1ul> >(int, at::native::FillFunctor<unsigned char>, std::array<char*, 1ul>)<<<(524288,1,1),(128,1,1)>>> ()
[exit 0, 12801 ms]
"#;

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

    const FILL: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<unsigned char>, std::array<char*, 1ul> >(int, at::native::FillFunctor<unsigned char>, std::array<char*, 1ul>)";

    #[test]
    fn coredump_of_a_device_assert() {
        let (ev, f) = one_fault(ASSERT_36);
        assert!(ev.tools.contains(&Tool::CudaGdb));
        assert_eq!(f.error, Some(ErrorClass::DeviceAssert));
        assert_eq!(
            f.kernel.as_deref(),
            Some(
                "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)"
            )
        );
        assert_eq!(f.location, None);
        assert_eq!(f.block, Some([0, 0, 0]));
        assert_eq!(f.thread, Some([3, 0, 0]));
        assert_eq!((f.device, f.sm, f.warp, f.lane), (Some(0), Some(124), Some(2), Some(3)));
        assert_eq!(f.grid, Some([1, 1, 1]));
        assert_eq!(f.block_dim, Some([32, 1, 1]));
        assert_eq!(f.pid, Some(1293));
        assert_eq!(f.frames.len(), 1);
        assert!(f.args.is_empty() && f.locals.is_empty());
        assert!(!ev.debugger_crashed);
    }

    #[test]
    fn crash_after_the_exception_line_keeps_it() {
        let (ev, f) = one_fault(CRASH_43);
        assert!(ev.debugger_crashed);
        assert_eq!(f.error, Some(ErrorClass::IllegalAddress));
        assert_eq!(f.kernel.as_deref(), Some("scatter_far(int*, int)"));
        assert_eq!(f.location, Some(loc("ima_far.cu", 13)));
        assert!(f.inlined.is_empty());
        assert_eq!(f.pc, Some(0x7f9a577a00f0));
        assert_eq!(f.pid, Some(1720));
        assert_eq!((f.block, f.thread, f.grid), (None, None, None));
        assert!(f.frames.is_empty());
        let note = ev.notes.iter().find(|n| n.contains("cuda-gdb crashed")).expect("crash note");
        assert!(note.contains("scatter_far(int*, int) at ima_far.cu:13"), "{note}");
        assert!(note.contains("line 35"), "{note}");
    }

    #[test]
    fn debug_build_coredump_with_locals_and_args() {
        let (_, f) = one_fault(LOCALS_45);
        assert_eq!(f.error, Some(ErrorClass::IllegalAddress));
        assert_eq!(f.kernel.as_deref(), Some("scatter_far(int*, int)"));
        // The exception line is exact; the frame (line 15, `}`) is where the warp was after.
        assert_eq!(f.location, Some(loc("ima_far.cu", 13)));
        assert_eq!(f.pc, Some(0x7f6f3b7a02c0));
        assert_eq!(f.block, Some([2, 0, 0]));
        assert_eq!(f.thread, Some([128, 0, 0]));
        assert_eq!((f.device, f.sm, f.warp, f.lane), (Some(0), Some(124), Some(4), Some(0)));
        assert_eq!(f.grid, Some([4, 1, 1]));
        assert_eq!(f.block_dim, Some([256, 1, 1]));
        assert_eq!(f.args, vec![pair("out", "0x7f6f33e00000"), pair("n", "1024")]);
        assert_eq!(f.locals, vec![pair("i", "640")]);
        assert_eq!(
            f.frames,
            vec![Frame {
                function: Some("scatter_far".into()),
                file: Some("ima_far.cu".into()),
                line: Some(15),
                ..Frame::default()
            }]
        );
        assert_eq!(f.pid, Some(1783));
    }

    #[test]
    fn crash_on_attach_keeps_the_exception_and_the_pid() {
        let (ev, f) = one_fault(ATTACH_CRASH_51);
        assert!(ev.debugger_crashed);
        assert_eq!(f.kernel.as_deref(), Some("scatter_far(int*, int)"));
        assert_eq!(f.location, Some(loc("ima_far.cu", 13)));
        assert_eq!(f.pc, Some(0x7fac2f7a00f0));
        assert_eq!(f.pid, Some(1866));
        assert!(ev.notes.iter().any(|n| n.contains("cuda-gdb crashed")));
    }

    #[test]
    fn attach_to_a_debug_build() {
        let (ev, f) = one_fault(ATTACH_G_53);
        assert!(!ev.debugger_crashed);
        assert_eq!(f.error, Some(ErrorClass::IllegalAddress));
        assert_eq!(f.kernel.as_deref(), Some("scatter_far(int*, int)"));
        assert_eq!(f.location, Some(loc("ima_far.cu", 13)));
        assert_eq!(f.pc, Some(0x7fe7037a02c0));
        assert_eq!(f.block, Some([2, 0, 0]));
        assert_eq!(f.thread, Some([128, 0, 0]));
        assert_eq!((f.device, f.sm, f.warp, f.lane), (Some(0), Some(124), Some(4), Some(0)));
        assert_eq!(f.grid, Some([4, 1, 1]));
        assert_eq!(f.block_dim, Some([256, 1, 1]));
        assert_eq!(f.args, vec![pair("out", "0x7fe6f5e00000"), pair("n", "1024")]);
        // `$1 = 640` and `$2 = ...` (print) are not locals.
        assert_eq!(f.locals, vec![pair("i", "640")]);
        assert_eq!(f.pid, Some(1933));
    }

    #[test]
    fn template_kernel_with_spaces_and_no_line() {
        let (_, f) = one_fault(GRAPH_63);
        assert_eq!(f.kernel.as_deref(), Some(FILL));
        assert_eq!(f.location, None);
        assert_eq!(f.pc, Some(0x7ff49f7a9430));
        assert_eq!(f.block, Some([16902, 0, 0]));
        assert_eq!(f.thread, Some([0, 0, 0]));
        assert_eq!((f.device, f.sm, f.warp, f.lane), (Some(0), Some(0), Some(10), Some(0)));
        assert_eq!(f.grid, Some([40960, 1, 1]));
        assert_eq!(f.block_dim, Some([128, 1, 1]));
        assert_eq!(f.frames.len(), 1);
        assert_eq!(f.frames[0].function.as_deref(), Some(FILL));
        assert_eq!(f.pid, Some(2131));
    }

    #[test]
    fn attach_to_one_rank_of_a_distributed_job() {
        let (_, f) = one_fault(DIST_ATTACH_86);
        assert_eq!(f.error, Some(ErrorClass::IllegalAddress));
        assert_eq!(f.kernel.as_deref(), Some(FILL));
        assert_eq!(f.pc, Some(0x7f02edd3c830));
        assert_eq!(f.block, Some([50295, 0, 0]));
        assert_eq!((f.device, f.sm, f.warp, f.lane), (Some(1), Some(0), Some(7), Some(0)));
        assert_eq!(f.grid, Some([524288, 1, 1]));
        assert_eq!(f.block_dim, Some([128, 1, 1]));
        assert_eq!(f.pid, Some(833));
    }

    #[test]
    fn focus_and_bt_without_the_exception_line() {
        // 86 from the signal line on: no `$ cuda-gdb -p` line, no `The exception was
        // triggered` line.
        let from = DIST_ATTACH_86.find("Thread 1 \"python3\"").unwrap();
        let (_, f) = one_fault(&DIST_ATTACH_86[from..]);
        assert_eq!(f.error, Some(ErrorClass::IllegalAddress));
        assert_eq!(f.kernel.as_deref(), Some(FILL));
        assert_eq!(f.pc, None);
        assert_eq!(f.block, Some([50295, 0, 0]));
        assert_eq!(f.device, Some(1));
        assert_eq!(f.grid, Some([524288, 1, 1]));
        assert_eq!(f.pid, None);
        // Only the focus line and the stop line.
        let from = DIST_ATTACH_86.find("[Switching focus").unwrap();
        let to = DIST_ATTACH_86.find("  Kernel Parent").unwrap();
        let (_, f) = one_fault(&DIST_ATTACH_86[from..to]);
        assert_eq!(f.error, None);
        assert_eq!(f.kernel.as_deref(), Some(FILL));
        assert_eq!(f.block, Some([50295, 0, 0]));
        assert_eq!(f.grid, Some([524288, 1, 1]));
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
        let text = format!("{ASSERT_36}{CRASH_43}{LOCALS_45}{DIST_ATTACH_86}");
        let ev = scan_str(&text, "many.log");
        let got: Vec<_> = ev.faults.iter().map(|f| (f.pid, f.error.clone(), f.location.clone())).collect();
        assert_eq!(
            got,
            vec![
                (Some(1293), Some(ErrorClass::DeviceAssert), None),
                (Some(1720), Some(ErrorClass::IllegalAddress), Some(loc("ima_far.cu", 13))),
                (Some(1783), Some(ErrorClass::IllegalAddress), Some(loc("ima_far.cu", 13))),
                (Some(833), Some(ErrorClass::IllegalAddress), None),
            ]
        );
        assert!(ev.debugger_crashed);
        assert_eq!(ev.faults[2].locals, vec![pair("i", "640")]);
        assert!(ev.faults[3].locals.is_empty());
    }

    #[test]
    fn kernel_table_rows() {
        let row = parse_kernel_row("*      0      -   1    4 Active 0x0fffffffffffffffffffffffffffffffff (524288,1,1) (128,1,1) at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<unsigned char>, std::array<char*, 1ul> >() ").unwrap();
        assert!(row.current);
        assert_eq!(row.device, Some(1));
        assert_eq!(row.grid, Some([524288, 1, 1]));
        assert_eq!(row.block_dim, Some([128, 1, 1]));
        assert_eq!(
            row.invocation,
            "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<unsigned char>, std::array<char*, 1ul> >()"
        );
        assert_eq!(parse_kernel_row("  Kernel Parent Dev Grid Status                             SMs Mask GridDim BlockDim Invocation"), None);
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
            ASSERT_36,
            CRASH_43,
            LOCALS_45,
            ATTACH_CRASH_51,
            ATTACH_G_53,
            GRAPH_63,
            DIST_ATTACH_86,
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
            let all: Vec<&str> = [ASSERT_36, CRASH_43, LOCALS_45, ATTACH_G_53, GRAPH_63, DIST_ATTACH_86]
                .iter()
                .flat_map(|t| t.lines())
                .collect();
            let text: Vec<&str> = picks.iter().map(|&i| all[i % all.len()]).collect();
            let _ = scan_str(&text.join("\n"), "mix.log");
        }
    }
}

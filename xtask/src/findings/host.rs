//! Host-side reports: what the CUDA program (or the Python/PyTorch program) printed itself.
//!
//! Recognises, line by line:
//! - CUDA runtime errors printed by C/C++ error checks (`CUDA error at ima_far.cu:32:
//!   cudaMemcpy(...): an illegal memory access was encountered`, `GPUassert: ... ima.cu 40`,
//!   `sync: unspecified launch failure`, `cudaErrorIllegalAddress`, a `what():` line after
//!   `terminate called after throwing an instance of 'c10::Error'`, PyTorch's NCCL watchdog
//!   line). Only CUDA errors are kept: a known CUDA error string, a fault enum name, or a
//!   `CUDA error` / `cudaErrorX` mention; not every line that says "error".
//! - Python tracebacks, per rank (`[rankN]:` prefixes are stripped by the scanner), chained
//!   ones included, ending in an exception line whose message is a CUDA error
//!   (`torch.AcceleratorError: CUDA error: device-side assert triggered`). Exceptions that
//!   are not CUDA errors are ignored.
//! - Device-side assert lines, from PyTorch, from C `assert()` in device code and from
//!   Triton (`FILE:LINE: FUNC: block: [x,y,z], thread: [x,y,z] Assertion `COND` failed.`):
//!   these are a device location, so they become [`Fault`]s, one per site, with the count
//!   and the block/thread ranges of the threads that printed it.
//!
//! Must not: do I/O, spawn processes or print. Every line of a possibly huge log reaches
//! [`HostParser::line`], so a line that is nothing of ours costs a few byte checks and no
//! allocation; everything kept is capped (frames per traceback, symptoms, sites, ranks).

use std::collections::{HashMap, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::OnceLock;

use memchr::memmem::Finder;

use super::{
    parse_dim3, parse_source_loc, ErrorClass, Evidence, Fault, Frame, LineCtx, LineParser, SourceLoc,
    Symptom, Tool,
};

/// Frames kept per traceback: the innermost ones (a traceback that never ends stays bounded).
const MAX_FRAMES: usize = 64;
/// Distinct symptoms kept per file.
const MAX_SYMPTOMS: usize = 1024;
/// Distinct device-assert sites kept per file.
const MAX_SITES: usize = 1024;
/// Ranks whose traceback state is tracked at once (least recently seen is dropped).
const MAX_RANKS: usize = 64;
/// Lines of a rank that are not part of its open traceback before it is given up.
const MAX_NOISE: u32 = 64;
/// Lines after a non-CUDA exception line in which a CUDA error still belongs to it
/// (multi-line messages such as NCCL's `unhandled cuda error ... Cuda failure '...'`).
const POST_WINDOW: u64 = 8;
/// Lines after a symptom in which PyTorch's `Exception raised from F at FILE:LINE` belongs to it.
const RAISED_WINDOW: u64 = 64;
/// Lines in which a `what():` line repeating an earlier report of the same error is folded.
const WHAT_WINDOW: u64 = 4096;
/// Longest message kept (bytes).
const MAX_MESSAGE: usize = 256;
/// Longest call kept (bytes).
const MAX_CALL: usize = 512;
/// Chained exceptions remembered per rank for de-duplication.
const MAX_CHAIN: usize = 16;

const TRACEBACK: &str = "Traceback (most recent call last):";
const CHAIN_DURING: &str = "During handling of the above exception, another exception occurred:";
const CHAIN_CAUSE: &str = "The above exception was the direct cause of the following exception:";

/// Substrings one of which every line we read (outside an open traceback) contains.
/// `UDA`/`uda`: `CUDA error`, `cudaErrorX`, `CUDA_ERROR_X`, `Cuda failure`; the rest: the
/// known error strings, `GPUassert` and `Assertion `.
const PREFILTER: &[&str] = &["UDA", "uda", "ssert", "illegal", "misaligned", "launch"];

/// `cudaGetErrorString` texts of errors that mean a kernel faulted: recognised anywhere.
const KNOWN: &[&str] = &[
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
const FAULT_ENUMS: &[(&str, &str)] = &[
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

/// File name endings that make a `FILE:LINE` token a source position.
const SOURCE_EXTS: &[&str] =
    &[".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".hxx", ".py", ".pyx"];

fn prefilter() -> &'static [Finder<'static>] {
    static F: OnceLock<Vec<Finder<'static>>> = OnceLock::new();
    F.get_or_init(|| PREFILTER.iter().map(|n| Finder::new(n.as_bytes())).collect())
}

/// Reads host-side reports: see the module documentation.
#[derive(Default)]
pub struct HostParser {
    symptoms: Vec<Symptom>,
    /// Hash of a symptom's content (all but its line) -> its index: exact repeats are folded.
    seen: HashMap<u64, usize>,
    dropped_symptoms: u64,
    /// The symptom last reported (recorded or folded into) and the line it was reported on.
    last_symptom: Option<(usize, u64)>,
    /// Recent reports: (message hash, rank, line), for folding `what():` repeats.
    recent: VecDeque<(u64, Option<u32>, u64)>,
    /// `terminate called after throwing an instance of 'T'`: (line, T).
    terminate: Option<(u64, String)>,
    faults: Vec<Fault>,
    /// Site hash -> indexes into `faults`.
    sites: HashMap<u64, Vec<usize>>,
    last_site: Option<usize>,
    dropped_sites: u64,
    ranks: Vec<RankState>,
    /// Ranks with an open traceback or a pending non-CUDA exception.
    live: usize,
}

/// Traceback state of one rank (or of the lines without a rank).
struct RankState {
    rank: Option<u32>,
    last_seen: u64,
    tb: Option<Traceback>,
    /// A chain marker (`During handling of the above exception...`) was seen: the next
    /// traceback belongs to the same chain.
    chain_pending: bool,
    /// Hashes of the CUDA error messages already recorded in the current chain.
    chain: Vec<u64>,
    /// A traceback that just ended in a non-CUDA exception whose message may go on.
    post: Option<PostTb>,
    /// The log prefix before `Traceback (most recent call last):` (length and first bytes).
    prefix_len: usize,
    prefix_head: [u8; 5],
}

struct Traceback {
    frames: VecDeque<Frame>,
    noise: u32,
}

struct PostTb {
    exception: String,
    frames: Vec<Frame>,
    line: u64,
}

/// A CUDA error found in a piece of text.
struct Found<'a> {
    message: &'a str,
    error: ErrorClass,
    /// Where the error text starts: positions and calls are looked for from here on, so a
    /// log prefix (`[E1130 ... ProcessGroupNCCL.cpp:2119]`) is not taken for one.
    anchor: usize,
}

impl LineParser for HostParser {
    fn line(&mut self, line: &str, ctx: LineCtx) {
        let b = line.as_bytes();
        if b.len() < 3 {
            return;
        }
        // compute-sanitizer's own lines, and the driver's coredump progress lines.
        if b[0] == b'=' && b.starts_with(b"=========") {
            return;
        }
        if b[0] == b'[' && memchr::memmem::find(&b[..b.len().min(40)], b"] coredump:").is_some() {
            return;
        }
        if self.live > 0 && self.traceback_line(line, ctx) {
            return;
        }
        // Cheap suffix checks: a traceback starting, a chained traceback announced.
        let last = b[b.len() - 1];
        if last == b':' {
            if line.ends_with(TRACEBACK) {
                self.start_traceback(line, ctx);
                return;
            }
            if line.ends_with(CHAIN_DURING) || line.ends_with(CHAIN_CAUSE) {
                if let Some(i) = self.state_index(ctx.rank) {
                    self.ranks[i].chain_pending = true;
                }
                return;
            }
        }
        match b[0] {
            b'E' if self.last_symptom.is_some_and(|(_, l)| ctx.lineno.saturating_sub(l) <= RAISED_WINDOW) => {
                if let Some(rest) = line.strip_prefix("Exception raised from ") {
                    self.raised_from(rest);
                    return;
                }
            }
            b't' => {
                if let Some(rest) = line.strip_prefix("terminate called after throwing an instance of '") {
                    let ty = rest.strip_suffix('\'').unwrap_or(rest);
                    self.terminate = Some((ctx.lineno, cut(ty, MAX_MESSAGE).to_string()));
                    return;
                }
            }
            b'S' if line.starts_with("Search for `cuda") => return, // PyTorch's follow-up line
            _ => {}
        }
        if !prefilter().iter().any(|f| f.find(b).is_some()) {
            return;
        }
        if line.contains("Assertion `") && line.contains("block: [") {
            self.device_assert(line, ctx);
            return;
        }
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("what():") {
            self.what_line(rest, ctx);
            return;
        }
        self.plain_line(line, ctx);
    }

    fn finish(&mut self, ev: &mut Evidence) {
        if !self.symptoms.is_empty() || !self.faults.is_empty() {
            ev.saw(Tool::Host);
        }
        ev.symptoms.append(&mut self.symptoms);
        ev.faults.append(&mut self.faults);
        if self.dropped_symptoms > 0 {
            ev.notes.push(format!(
                "host: {} further CUDA error report(s) were not kept (only the first {MAX_SYMPTOMS} distinct ones are)",
                self.dropped_symptoms
            ));
        }
        if self.dropped_sites > 0 {
            ev.notes.push(format!(
                "host: {} device-assert line(s) at further sites were not kept (only the first {MAX_SITES} sites are)",
                self.dropped_sites
            ));
        }
        self.seen.clear();
        self.sites.clear();
        self.recent.clear();
        self.ranks.clear();
        self.live = 0;
        self.last_symptom = None;
        self.last_site = None;
    }
}

impl HostParser {
    // ----- Python tracebacks -------------------------------------------------------------

    fn state_index(&self, rank: Option<u32>) -> Option<usize> {
        self.ranks.iter().position(|s| s.rank == rank)
    }

    fn state_or_insert(&mut self, rank: Option<u32>, lineno: u64) -> usize {
        if let Some(i) = self.state_index(rank) {
            return i;
        }
        if self.ranks.len() >= MAX_RANKS {
            if let Some((i, _)) = self.ranks.iter().enumerate().min_by_key(|(_, s)| s.last_seen) {
                self.ranks.swap_remove(i);
            }
        }
        self.ranks.push(RankState {
            rank,
            last_seen: lineno,
            tb: None,
            chain_pending: false,
            chain: Vec::new(),
            post: None,
            prefix_len: 0,
            prefix_head: [0; 5],
        });
        self.ranks.len() - 1
    }

    fn recount_live(&mut self) {
        self.live = self.ranks.iter().filter(|s| s.tb.is_some() || s.post.is_some()).count();
    }

    fn start_traceback(&mut self, line: &str, ctx: LineCtx) {
        let i = self.state_or_insert(ctx.rank, ctx.lineno);
        let st = &mut self.ranks[i];
        st.last_seen = ctx.lineno;
        if !st.chain_pending {
            st.chain.clear();
        }
        st.chain_pending = false;
        st.post = None;
        st.prefix_len = line.len() - TRACEBACK.len();
        st.prefix_head = [0; 5];
        let head = &line.as_bytes()[..st.prefix_len.min(5)];
        st.prefix_head[..head.len()].copy_from_slice(head);
        st.tb = Some(Traceback { frames: VecDeque::new(), noise: 0 });
        self.recount_live();
    }

    /// Feeds a line to the open traceback of its rank. Returns true when the line was the
    /// traceback's (a frame, a code or marker line, the exception line).
    fn traceback_line(&mut self, line: &str, ctx: LineCtx) -> bool {
        let Some(i) = self.state_index(ctx.rank) else { return false };
        let st = &mut self.ranks[i];
        st.last_seen = ctx.lineno;
        if st.post.as_ref().is_some_and(|p| ctx.lineno > p.line + POST_WINDOW) {
            st.post = None;
            self.recount_live();
        }
        let st = &mut self.ranks[i];
        let Some(tb) = st.tb.as_mut() else { return false };
        let body = strip_prefix_like(line, st.prefix_len, &st.prefix_head);
        if let Some(body) = body {
            if let Some(rest) = body.strip_prefix("  File \"") {
                tb.noise = 0;
                if let Some(frame) = parse_frame(rest) {
                    if tb.frames.len() >= MAX_FRAMES {
                        tb.frames.pop_front();
                    }
                    tb.frames.push_back(frame);
                }
                return true;
            }
            if body.starts_with(' ') || body.starts_with('\t') {
                // The code line under a frame, `^^^^` markers, `[Previous line repeated ...]`.
                return true;
            }
            if !body.ends_with(TRACEBACK) {
                if let Some((name, rest)) = exception_shape(body, false) {
                    let frames: Vec<Frame> = st.tb.take().map(|t| t.frames.into()).unwrap_or_default();
                    self.exception_line(i, name, rest, frames, ctx);
                    self.recount_live();
                    return true;
                }
            }
        }
        // Something else printed in the middle (another process, a log line).
        let st = &mut self.ranks[i];
        if let Some(tb) = st.tb.as_mut() {
            tb.noise += 1;
            if tb.noise > MAX_NOISE {
                st.tb = None;
                self.recount_live();
            }
        }
        false
    }

    /// The exception line that ends a traceback of rank state `i`.
    fn exception_line(&mut self, i: usize, name: &str, rest: &str, frames: Vec<Frame>, ctx: LineCtx) {
        let Some(found) = find_cuda_error(rest) else {
            let st = &mut self.ranks[i];
            st.post = Some(PostTb { exception: cut(name, MAX_MESSAGE).to_string(), frames, line: ctx.lineno });
            return;
        };
        let h = hash_str(found.message);
        let st = &mut self.ranks[i];
        if st.chain.contains(&h) {
            // The same CUDA error again, further up a chain of exceptions: keep the first.
            return;
        }
        if st.chain.len() < MAX_CHAIN {
            st.chain.push(h);
        }
        let tail = &rest[found.anchor..];
        let sym = Symptom {
            error: Some(found.error),
            message: found.message.to_string(),
            reported_at: find_loc(tail),
            call: find_call(tail).map(str::to_string),
            exception: Some(cut(name, MAX_MESSAGE).to_string()),
            python_frames: frames,
            rank: ctx.rank.or_else(|| infer_rank(rest)),
            log_line: ctx.lineno,
        };
        self.push_symptom(sym, h);
    }

    // ----- Plain lines ---------------------------------------------------------------------

    /// A line outside a traceback that may carry a CUDA error.
    fn plain_line(&mut self, line: &str, ctx: LineCtx) {
        let Some(found) = find_cuda_error(line) else { return };
        let tail = &line[found.anchor..];
        let mut exception = None;
        let mut frames = Vec::new();
        // The continuation of a non-CUDA exception's message (same rank, a few lines on).
        if self.live > 0 {
            if let Some(i) = self.state_index(ctx.rank) {
                let st = &mut self.ranks[i];
                if let Some(p) = st.post.take_if(|p| ctx.lineno <= p.line + POST_WINDOW) {
                    exception = Some(p.exception);
                    frames = p.frames;
                }
                self.recount_live();
            }
        }
        if exception.is_none() {
            // An exception line whose traceback was not seen (cut log, other process).
            if let Some((name, _)) = exception_shape(line, true) {
                exception = Some(cut(name, MAX_MESSAGE).to_string());
            }
        }
        let h = hash_str(found.message);
        let sym = Symptom {
            error: Some(found.error),
            message: found.message.to_string(),
            reported_at: find_loc(tail),
            call: find_call(tail).map(str::to_string),
            exception,
            python_frames: frames,
            rank: ctx.rank.or_else(|| infer_rank(line)),
            log_line: ctx.lineno,
        };
        self.push_symptom(sym, h);
    }

    /// `  what():  <message>` after `terminate called after throwing ...`.
    fn what_line(&mut self, rest: &str, ctx: LineCtx) {
        let Some(found) = find_cuda_error(rest) else { return };
        let rank = ctx.rank.or_else(|| infer_rank(rest));
        let h = hash_str(found.message);
        // PyTorch logs an error and then throws it: the `what():` repeats the report.
        let dup = self.recent.iter().rev().any(|&(mh, r, l)| {
            mh == h && (r == rank || r.is_none() || rank.is_none()) && ctx.lineno.saturating_sub(l) <= WHAT_WINDOW
        });
        let exception = match self.terminate.take() {
            Some((l, ty)) if ctx.lineno.saturating_sub(l) <= 2 => Some(ty),
            _ => None,
        };
        if dup {
            if let Some((i, _)) = self.last_symptom {
                self.last_symptom = Some((i, ctx.lineno));
            }
            return;
        }
        let tail = &rest[found.anchor..];
        let sym = Symptom {
            error: Some(found.error),
            message: found.message.to_string(),
            reported_at: find_loc(tail),
            call: find_call(tail).map(str::to_string),
            exception,
            python_frames: Vec::new(),
            rank,
            log_line: ctx.lineno,
        };
        self.push_symptom(sym, h);
    }

    /// `Exception raised from query at /pytorch/c10/cuda/CUDAEvent.h:111 (most recent call first):`
    fn raised_from(&mut self, rest: &str) {
        let Some((i, _)) = self.last_symptom else { return };
        let Some((_, at)) = rest.split_once(" at ") else { return };
        let at = at.split(" (").next().unwrap_or(at);
        if let Some(loc) = parse_source_loc(at) {
            if let Some(s) = self.symptoms.get_mut(i) {
                if s.reported_at.is_none() {
                    s.reported_at = Some(loc);
                }
            }
        }
    }

    fn push_symptom(&mut self, sym: Symptom, msg_hash: u64) {
        let key = symptom_key(&sym);
        if self.recent.len() >= 32 {
            self.recent.pop_front();
        }
        self.recent.push_back((msg_hash, sym.rank, sym.log_line));
        if let Some(&i) = self.seen.get(&key) {
            self.last_symptom = Some((i, sym.log_line));
            return;
        }
        if self.symptoms.len() >= MAX_SYMPTOMS {
            self.dropped_symptoms += 1;
            return;
        }
        let i = self.symptoms.len();
        self.seen.insert(key, i);
        self.last_symptom = Some((i, sym.log_line));
        self.symptoms.push(sym);
    }

    // ----- Device-side asserts -------------------------------------------------------------

    /// `FILE:LINE: FUNC: block: [x,y,z], thread: [x,y,z] Assertion `COND` failed.`
    fn device_assert(&mut self, line: &str, ctx: LineCtx) {
        let Some(a) = line.find("Assertion `") else { return };
        let head = &line[..a];
        let Some(bpos) = head.rfind("block: [") else { return };
        let after_block = &head[bpos + "block: ".len()..];
        let Some(bend) = after_block.find(']') else { return };
        let Some(block) = parse_dim3(&after_block[..=bend]) else { return };
        let thread = head[bpos..].find("thread: [").and_then(|t| {
            let s = &head[bpos + t + "thread: ".len()..];
            s.find(']').and_then(|e| parse_dim3(&s[..=e]))
        });
        let Some(thread) = thread else { return };
        let cond_all = &line[a + "Assertion `".len()..];
        let cond = match cond_all.rfind("` failed") {
            Some(e) => &cond_all[..e],
            None => cond_all,
        };
        let cond = cut(cond.trim(), MAX_MESSAGE);
        let detail = (!cond.is_empty()).then_some(cond);
        let prefix = head[..bpos].trim_end();
        let prefix = prefix.strip_suffix(':').unwrap_or(prefix).trim_end();
        let (loc, func) = split_assert_prefix(prefix);
        let loc = loc.filter(|l| !(l.file == "unknown" && l.line == 0));
        let kernel = func.filter(|f| !f.is_empty() && *f != "unknown");

        // One fault per site: PyTorch prints the line once per failing thread.
        let key = {
            let mut h = DefaultHasher::new();
            loc.as_ref().map(|l| (&l.file, l.line)).hash(&mut h);
            kernel.hash(&mut h);
            detail.hash(&mut h);
            ctx.rank.hash(&mut h);
            h.finish()
        };
        let same = |f: &Fault| {
            f.location == loc && f.kernel.as_deref() == kernel && f.detail.as_deref() == detail && f.rank == ctx.rank
        };
        let hit = match self.last_site {
            Some(i) if same(&self.faults[i]) => Some(i),
            _ => self.sites.get(&key).and_then(|v| v.iter().copied().find(|&i| same(&self.faults[i]))),
        };
        if let Some(i) = hit {
            self.last_site = Some(i);
            let f = &mut self.faults[i];
            f.count += 1;
            let b0 = f.block.unwrap_or(block);
            let t0 = f.thread.unwrap_or(thread);
            let br = f.block_range.get_or_insert([b0, b0]);
            widen(br, block);
            let tr = f.thread_range.get_or_insert([t0, t0]);
            widen(tr, thread);
            return;
        }
        if self.faults.len() >= MAX_SITES {
            self.dropped_sites += 1;
            return;
        }
        let i = self.faults.len();
        self.faults.push(Fault {
            tool: Some(Tool::Host),
            error: Some(ErrorClass::DeviceAssert),
            kernel: kernel.map(str::to_string),
            location: loc,
            block: Some(block),
            thread: Some(thread),
            count: 1,
            rank: ctx.rank,
            detail: detail.map(str::to_string),
            ..Fault::default()
        });
        self.sites.entry(key).or_default().push(i);
        self.last_site = Some(i);
    }
}

// ----- Helpers (pure functions on text) -----------------------------------------------------

/// Strips a log prefix of the same length as the one before `Traceback (most recent call
/// last):` (a logger's `ERROR 06-13 15:32:09 [core.py:515] `), when the line looks like
/// it has one (same first bytes).
fn strip_prefix_like<'a>(line: &'a str, len: usize, head: &[u8; 5]) -> Option<&'a str> {
    if len == 0 {
        return Some(line);
    }
    let n = len.min(5);
    if line.len() < len || !line.is_char_boundary(len) || line.as_bytes()[..n] != head[..n] {
        return None;
    }
    Some(&line[len..])
}

/// `/src/probe/assert_ce.py", line 7, in <module>` (after `  File "`).
fn parse_frame(rest: &str) -> Option<Frame> {
    let (file, tail) = rest.rsplit_once("\", line ")?;
    let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
    let line: u32 = tail[..digits].parse().ok()?;
    let function = tail[digits..].strip_prefix(", in ").map(|f| cut(f.trim(), MAX_MESSAGE).to_string());
    Some(Frame {
        function,
        file: Some(cut(file, MAX_CALL).to_string()),
        line: Some(line),
        module: None,
        python: true,
    })
}

/// A Python exception line: `torch.AcceleratorError: CUDA error: ...` -> (name, message).
/// With `strict`, the name must end like an exception class (`...Error`, `...Exception`).
fn exception_shape(s: &str, strict: bool) -> Option<(&str, &str)> {
    let (name, rest) = match s.find(':') {
        Some(c) => (&s[..c], &s[c + 1..]),
        None => (s.trim_end(), ""),
    };
    let nb = name.as_bytes();
    if nb.is_empty()
        || !(nb[0].is_ascii_alphabetic() || nb[0] == b'_')
        || nb.last() == Some(&b'.')
        || !nb.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
    {
        return None;
    }
    if !rest.is_empty() && !rest.starts_with(' ') {
        return None;
    }
    let class = name.rsplit('.').next().unwrap_or(name);
    let classy = ["Error", "Exception", "Interrupt", "Exit", "Failure", "Warning"]
        .iter()
        .any(|s| class.ends_with(s));
    let bare = !s.contains(':');
    if (strict || bare) && !classy {
        return None;
    }
    Some((name, rest.trim()))
}

/// Finds a CUDA error in `s`: a known error text, a fault enum name, or a `CUDA error` /
/// `cudaErrorX` mention with its message.
fn find_cuda_error(s: &str) -> Option<Found<'_>> {
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
    let m = marker?;
    let message = marker_message(&s[m..])?;
    Some(Found { message, error: ErrorClass::from_message(message), anchor: m })
}

/// Where `CUDA error` (any case; not `CUDA errors`) or `Cuda failure` starts.
fn marker_pos(s: &str) -> Option<usize> {
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
fn marker_message(s: &str) -> Option<&str> {
    // `s` starts with the marker: `cuda error` or `cuda failure`, in any case.
    let mlen = if s.as_bytes().get(..10).is_some_and(|m| m.eq_ignore_ascii_case(b"cuda error")) {
        10
    } else {
        12
    };
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
fn enum_token(s: &str) -> Option<(usize, &str)> {
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

/// A source position in `s`: `FILE:LINE`, `FILE LINE` (`GPUassert: ... ima.cu 40`),
/// `FILE, line N`, `'FILE' on line N`, `FILE at line N`; FILE must have a source extension.
fn find_loc(s: &str) -> Option<SourceLoc> {
    const PUNCT: &[char] = &['\'', '"', '(', ')', ',', ';', '[', ']', '<', '>', '`'];
    let mut toks = s.split_ascii_whitespace().take(64).peekable();
    while let Some(tok) = toks.next() {
        let t = tok.trim_matches(PUNCT).trim_end_matches([':', '.']);
        if let Some(loc) = parse_source_loc(t) {
            if has_source_ext(&loc.file) {
                return Some(loc);
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

fn has_source_ext(f: &str) -> bool {
    let base = f.rsplit('/').next().unwrap_or(f);
    base.len() > 2 && SOURCE_EXTS.iter().any(|e| base.len() > e.len() && base.ends_with(e))
}

/// The first CUDA/NCCL call expression in `s`: `cudaMemcpy(h, d, n * sizeof(int), ...)`.
fn find_call(s: &str) -> Option<&str> {
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

/// `[PG ID 0 PG GUID 0(default_pg) Rank 1]` -> 1.
fn infer_rank(s: &str) -> Option<u32> {
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
fn split_assert_prefix(prefix: &str) -> (Option<SourceLoc>, Option<&str>) {
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

fn widen(r: &mut [[u32; 3]; 2], d: [u32; 3]) {
    for k in 0..3 {
        r[0][k] = r[0][k].min(d[k]);
        r[1][k] = r[1][k].max(d[k]);
    }
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Case-insensitive search for an ASCII lower-case needle.
fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    (0..=hay.len() - needle.len()).find(|&i| hay[i..i + needle.len()].eq_ignore_ascii_case(needle))
}

/// `s` cut to at most `max` bytes, at a character boundary.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut e = max;
    while !s.is_char_boundary(e) {
        e -= 1;
    }
    &s[..e]
}

fn hash_str(s: &str) -> u64 {
    let mut h = DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// A symptom's content, all but the line it was printed on.
fn symptom_key(s: &Symptom) -> u64 {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[ignore]
    fn bench_tmp() {
        let mut text = String::new();
        let mut paths: Vec<_> = std::fs::read_dir("/work/shared/transcripts/h200-cuda13").unwrap().map(|e| e.unwrap().path()).collect();
        paths.sort();
        for p in &paths { if p.extension().is_some_and(|e| e == "log") { text.push_str(&std::fs::read_to_string(p).unwrap()); } }
        let mut big = String::new();
        while big.len() < 300 << 20 { big.push_str(&text); }
        let lines: Vec<&str> = big.lines().collect();
        let t = std::time::Instant::now();
        let mut p = HostParser::default();
        for (i, l) in lines.iter().enumerate() { p.line(l, LineCtx { lineno: i as u64 + 1, rank: None }); }
        let mut ev = Evidence::default();
        p.finish(&mut ev);
        let dt = t.elapsed();
        println!("transcripts: {} MB {} lines in {:?} = {:.1} ns/line, {:.2} GB/s; symptoms {} faults {}", big.len() >> 20, lines.len(), dt, dt.as_nanos() as f64 / lines.len() as f64, big.len() as f64 / dt.as_secs_f64() / 1e9, ev.symptoms.len(), ev.faults.len());
        let mut big = String::new();
        let mut i = 0u64;
        while big.len() < 300 << 20 { i += 1; big.push_str(&format!("step {i} loss 2.{i:05} lr 3e-4 grad_norm 1.{i} tokens/s 123456 mem 40.2GB\n")); }
        let lines: Vec<&str> = big.lines().collect();
        let t = std::time::Instant::now();
        let mut p = HostParser::default();
        for (i, l) in lines.iter().enumerate() { p.line(l, LineCtx { lineno: i as u64 + 1, rank: None }); }
        let dt = t.elapsed();
        println!("train: {} MB {} lines in {:?} = {:.1} ns/line, {:.2} GB/s", big.len() >> 20, lines.len(), dt, dt.as_nanos() as f64 / lines.len() as f64, big.len() as f64 / dt.as_secs_f64() / 1e9);
    }

    #[test]
    #[ignore]
    fn dump_transcripts() {
        let mut paths: Vec<_> = std::fs::read_dir("/work/shared/transcripts/h200-cuda13").unwrap().map(|e| e.unwrap().path()).collect();
        paths.sort();
        for p in paths {
            let text = std::fs::read_to_string(&p).unwrap();
            let ev = super::super::scan::scan_str(&text, p.to_str().unwrap());
            let v = serde_json::json!({"symptoms": ev.symptoms, "faults": ev.faults.iter().filter(|f| f.tool == Some(Tool::Host)).collect::<Vec<_>>(), "tools": ev.tools});
            println!("== {}\n{}", p.display(), serde_json::to_string(&v).unwrap());
        }
    }
}

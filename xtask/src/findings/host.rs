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
//!   A logger prefix repeated before every traceback line is allowed for.
//! - Device-side assert lines, from PyTorch, from C `assert()` in device code and from
//!   Triton (`FILE:LINE: FUNC: block: [x,y,z], thread: [x,y,z] Assertion `COND` failed.`,
//!   with `unknown:0: unknown` where Triton knows neither): these are a device location, so
//!   they become [`Fault`]s, one per site, with the count and the block/thread ranges of the
//!   threads that printed it.
//!
//! Must not: do I/O, spawn processes or print. Every line of a possibly huge log reaches
//! [`HostParser::line`], so a line that is nothing of ours costs a few byte checks and no
//! allocation; everything kept is capped (frames per traceback, symptoms, sites, ranks).

use std::collections::{HashMap, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};

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

/// Fixed texts that make a line worth reading (besides the `cuda` forms, see [`triggers`]),
/// each with the offset of its first `c`, `C`, `g`, `G` or backtick: the bytes searched for.
const TRIGGERS: &[(&[u8], usize)] = &[
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

const fn is_rare(c: u8) -> bool {
    matches!(c, b'c' | b'C' | b'g' | b'G' | b'`')
}

const fn rare_offset(s: &[u8]) -> usize {
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
fn triggers(b: &[u8]) -> bool {
    memchr::memchr3_iter(b'c', b'C', b'g', b).any(|p| trigger_at(b, p))
        || memchr::memchr2_iter(b'G', b'`', b).any(|p| trigger_at(b, p))
}

fn trigger_at(b: &[u8], p: usize) -> bool {
    let c = b[p];
    if (c == b'c' || c == b'C') && cuda_mention_at(b, p) {
        return true;
    }
    TRIGGERS.iter().any(|&(t, off)| t[off] == c && p >= off && b[p - off..].starts_with(t))
}

/// `cuda error` / `cuda failure` (any case, word-bounded), `cudaErrorX`, `CUDA_ERROR_X` at `p`.
fn cuda_mention_at(b: &[u8], p: usize) -> bool {
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
        if !triggers(b) {
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
        // A logger's prefix, where the traceback had one; otherwise the line as it is
        // (`Original Traceback (most recent call last):` has no prefix on its frames).
        let body = strip_prefix_like(line, st.prefix_len, &st.prefix_head).unwrap_or(line);
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
            st.post =
                Some(PostTb { exception: cut(name, MAX_MESSAGE).to_string(), frames, line: ctx.lineno });
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
            mh == h
                && (r == rank || r.is_none() || rank.is_none())
                && ctx.lineno.saturating_sub(l) <= WHAT_WINDOW
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
        if let Some(loc) = parse_source_loc(at).map(short_loc) {
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
        // Triton prints `unknown:0: unknown` where it knows neither.
        let loc = loc.filter(|l| !(l.file == "unknown" && l.line == 0)).map(short_loc);
        let kernel = func.filter(|f| !f.is_empty() && *f != "unknown").map(|f| cut(f, MAX_CALL));

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
            f.location == loc
                && f.kernel.as_deref() == kernel
                && f.detail.as_deref() == detail
                && f.rank == ctx.rank
        };
        let hit = match self.last_site {
            Some(i) if same(&self.faults[i]) => Some(i),
            _ => self.sites.get(&key).and_then(|v| v.iter().copied().find(|&i| same(&self.faults[i]))),
        };
        if let Some(i) = hit {
            self.last_site = Some(i);
            let f = &mut self.faults[i];
            f.count += 1;
            widen(f.block_range.get_or_insert([block, block]), block);
            widen(f.thread_range.get_or_insert([thread, thread]), thread);
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
            block_range: Some([block, block]),
            thread_range: Some([thread, thread]),
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
/// The class name must look like one (`KeyError`, not `INFO` or `step`): it ends in `Error`,
/// `Exception`, `Interrupt`, `Exit`, ... or, unless `strict`, is qualified by a module
/// (`torch._dynamo.exc.Unsupported`).
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
    let cb = class.as_bytes();
    if !cb.first().is_some_and(u8::is_ascii_uppercase) || !cb.iter().any(u8::is_ascii_lowercase) {
        return None;
    }
    let classy = ["Error", "Exception", "Interrupt", "Exit", "Failure", "Failed", "Warning", "Iteration"]
        .iter()
        .any(|s| class.ends_with(s));
    if !classy && (strict || !name.contains('.')) {
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
                return Some(short_loc(loc));
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

/// A position with its file name cut to a sane length.
fn short_loc(mut loc: SourceLoc) -> SourceLoc {
    if loc.file.len() > MAX_CALL {
        loc.file = cut(&loc.file, MAX_CALL).to_string();
    }
    loc
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
pub(super) fn infer_rank(s: &str) -> Option<u32> {
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

/// Case-insensitive search for an ASCII lower-case needle that starts with a letter.
fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let first = *needle.first()?;
    memchr::memchr2_iter(first, first.to_ascii_uppercase(), hay)
        .find(|&i| hay.get(i..i + needle.len()).is_some_and(|w| w.eq_ignore_ascii_case(needle)))
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
    use super::super::scan::{scan_str, strip_rank};
    use super::*;
    use proptest::prelude::*;

    /// Feeds `text` to a `HostParser` alone, line by line, as the scanner does (the
    /// `[rankN]:` prefix stripped), so these tests do not depend on the other parsers.
    fn host(text: &str) -> Evidence {
        let mut p = HostParser::default();
        feed(&mut p, text);
        let mut ev = Evidence::default();
        p.finish(&mut ev);
        ev
    }

    fn feed(p: &mut HostParser, text: &str) {
        for (i, raw) in text.lines().enumerate() {
            let (line, rank) = strip_rank(raw);
            p.line(line, LineCtx { lineno: i as u64 + 1, rank });
        }
    }

    fn pyframe(function: &str, file: &str, line: u32) -> Frame {
        Frame {
            function: Some(function.into()),
            file: Some(file.into()),
            line: Some(line),
            module: None,
            python: true,
        }
    }

    fn loc(file: &str, line: u32) -> Option<SourceLoc> {
        Some(SourceLoc { file: file.into(), line })
    }

    /// Lines `from..=to` (1-based) of `text`, each with its newline.
    fn lines(text: &str, from: usize, to: usize) -> String {
        text.lines().skip(from - 1).take(to + 1 - from).map(|l| format!("{l}\n")).collect()
    }

    /// The invariants every input must keep.
    fn check_bounded(text: &str, ev: &Evidence) {
        let n = text.lines().count().max(1);
        assert!(ev.symptoms.len() <= n, "{} symptoms from {n} lines", ev.symptoms.len());
        assert!(ev.faults.len() <= n);
        assert!(ev.faults.iter().map(|f| f.count).sum::<u64>() <= n as u64);
        for s in &ev.symptoms {
            assert!(s.message.len() <= MAX_MESSAGE && !s.message.is_empty());
            assert!(s.python_frames.len() <= MAX_FRAMES);
            assert!(s.log_line >= 1 && s.log_line <= n as u64);
            assert!(s.call.as_ref().is_none_or(|c| c.len() <= MAX_CALL));
        }
        for f in &ev.faults {
            assert_eq!(f.tool, Some(Tool::Host));
            assert!(f.count >= 1);
            assert!(f.detail.as_ref().is_none_or(|d| d.len() <= MAX_MESSAGE));
        }
    }

    // ----- The project's own recordings (tests/fixtures/h200 and bundles) --------------------
    /// `CUDA error at oob_read.cu:26: cudaMemcpy(...): an illegal memory access was encountered`.
    const OOB_READ_BASELINE: &str = recording!("h200/oob_read/baseline.log");
    /// The program's own `CUDA error at ...` line (line 14) among compute-sanitizer's.
    const OOB_READ_MEMCHECK: &str = recording!("h200/oob_read/memcheck.log");
    /// The waits-on-exception message: `vm: The application encountered ...`.
    const OOB_READ_WAITS: &str = recording!("h200/oob_read/waits.log");
    /// PyTorch's assert line, then its traceback (exception line 7).
    const TORCH_ASSERT_BASELINE: &str = recording!("h200/torch_assert/baseline.log");
    /// PyTorch's assert line among the coredump's progress lines.
    const TORCH_ASSERT_COREDUMP: &str = recording!("h200/torch_assert/coredump.log");
    /// Lines 106-113: `terminate` + `what():` from a destructor, no traceback.
    const TORCH_ASSERT_MEMCHECK: &str = recording!("h200/torch_assert/memcheck.log");
    /// A CUDA graph replayed: the error is reported at the next sync (exception line 8).
    const TRITON_GRAPH_BASELINE: &str = recording!("h200/triton_graph/baseline.log");
    /// The same with CUDA_LAUNCH_BLOCKING=1: reported at `g.replay()`, through torch's frame.
    const TRITON_GRAPH_BLOCKING: &str = recording!("h200/triton_graph/launch-blocking.log");
    /// cuda-gdb's own crash: `terminate` + `what():  vector::_M_range_check`.
    const OOB_WRITE_CUDAGDB: &str = recording!("h200/oob_write/cudagdb-core-1.log");
    /// C `assert()` in a kernel.
    const DEVICE_ASSERT_BASELINE: &str = recording!("h200/device_assert/baseline.log");
    /// Triton's launcher raises `RuntimeError: Triton Error [CUDA]: ...`.
    const TRITON_EAGER_BLOCKING: &str = recording!("h200/triton_eager/launch-blocking.log");
    /// Rank 1 of a two-GPU torchrun job faults (recorded by `debug-ima`,
    /// tests/fixtures/bundles/dist_fault-full): the NCCL watchdog's report behind `[rank1]:`,
    /// `terminate` + `what():`, torchrun's traceback.
    const DIST_PLAIN: &str = recording!("bundles/dist_fault-full/rungs/01-baseline/stderr.log");
    /// The same with CUDA_LAUNCH_BLOCKING=1: rank 1's traceback behind `[rank1]:`, then
    /// torchrun's own.
    const DIST_BLOCKING: &str = recording!("bundles/dist_fault-full/rungs/02-launch-blocking/stderr.log");

    // ----- Reference excerpts (tests/fixtures/transcripts) -------------------------------------
    /// `cudaMemcpy(...): invalid argument`: a host API error.
    const NULL_PLAIN: &str = transcript!("46_null_plain.excerpt.log");
    /// A spawned child's assert line (with an empty condition) under memcheck.
    const CHILD_MEMCHECK_HEAD: &str = transcript!("39_child_memcheck.head.excerpt.log");
    /// The child's Python traceback among memcheck's lines.
    const CHILD_MEMCHECK_TAIL: &str = transcript!("39_child_memcheck.tail.excerpt.log");
    /// `compute-sanitizer --help` naming `CUDA_ERROR_NOT_FOUND`.
    const SANITIZER_HELP: &str = transcript!("01_sanitizer_help.excerpt.log");
    /// A watchdog timeout, not a CUDA error.
    const DIST_TIMEOUT: &str = transcript!("87_dist_memcheck.timeout.excerpt.log");

    /// torch_assert/memcheck.log, lines 106-113.
    fn torch_what() -> String {
        lines(TORCH_ASSERT_MEMCHECK, 106, 113)
    }

    const OOB_READ_CALL: &str = "cudaMemcpy(h_out.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost)";
    const VLLM_SHAPED: &str = "/tmp/ima-record/vllm_shaped.py";
    const DIST_FAULT: &str = "/work/main/tests/gpu/programs/dist_fault.py";
    const SUITE_VLLM_SHAPED: &str = "/work/main/tests/gpu/programs/vllm_shaped.py";

    // ----- C/C++ runtime errors ---------------------------------------------------------------

    #[test]
    fn cuda_error_at_file_line_through_the_scanner() {
        let ev = scan_str(OOB_READ_BASELINE, "oob_read/baseline.log");
        assert_eq!(
            ev.symptoms,
            vec![Symptom {
                error: Some(ErrorClass::IllegalAddress),
                message: "an illegal memory access was encountered".into(),
                reported_at: loc("oob_read.cu", 26),
                call: Some(OOB_READ_CALL.into()),
                exception: None,
                python_frames: vec![],
                rank: None,
                log_line: 1,
            }]
        );
        assert!(ev.tools.contains(&Tool::Host));
        assert!(ev.faults.iter().all(|f| f.tool != Some(Tool::Host)));
    }

    #[test]
    fn host_api_errors_are_kept_but_are_not_device_faults() {
        let ev = host(NULL_PLAIN);
        assert_eq!(ev.symptoms.len(), 1);
        let s = &ev.symptoms[0];
        assert_eq!(s.message, "invalid argument");
        assert_eq!(s.error, Some(ErrorClass::Other("invalid argument".into())));
        assert!(!s.error.as_ref().unwrap().is_device_fault());
        assert_eq!(s.reported_at, loc("ima_far.cu", 32));
        assert_eq!(s.call.as_deref(), Some("cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost)"));
        assert_eq!(ev.tools, vec![Tool::Host]);
    }

    #[test]
    fn program_line_inside_a_sanitizer_log() {
        let ev = host(OOB_READ_MEMCHECK);
        // `CUDA error at oob_read.cu:26: ...: unspecified launch failure` is the program's;
        // `========= Program hit cudaErrorLaunchFailure ...` is compute-sanitizer's and is not
        // read here.
        assert_eq!(
            ev.symptoms,
            vec![Symptom {
                error: Some(ErrorClass::LaunchFailure),
                message: "unspecified launch failure".into(),
                reported_at: loc("oob_read.cu", 26),
                call: Some(OOB_READ_CALL.into()),
                log_line: 14,
                ..Symptom::default()
            }]
        );
        assert!(ev.faults.is_empty());
    }

    #[test]
    fn shapes_named_in_the_brief() {
        // `GPUassert: %s %s %d`, the widespread gpuErrchk helper.
        let ev = host("GPUassert: an illegal memory access was encountered ima.cu 40\n");
        assert_eq!(ev.symptoms.len(), 1);
        assert_eq!(ev.symptoms[0].message, "an illegal memory access was encountered");
        assert_eq!(ev.symptoms[0].reported_at, loc("ima.cu", 40));
        assert_eq!(ev.symptoms[0].error, Some(ErrorClass::IllegalAddress));

        let ev = host("cudaErrorIllegalAddress\n");
        assert_eq!(ev.symptoms[0].message, "cudaErrorIllegalAddress");
        assert_eq!(ev.symptoms[0].error, Some(ErrorClass::IllegalAddress));

        let ev =
            host("small.cu:12: void k(int*): block: [0,0,0], thread: [0,0,0] Assertion `i < n` failed.\n");
        assert_eq!(ev.faults.len(), 1);
        let f = &ev.faults[0];
        assert_eq!(f.kernel.as_deref(), Some("void k(int*)"));
        assert_eq!(f.location, loc("small.cu", 12));
        assert_eq!(f.detail.as_deref(), Some("i < n"));
        assert_eq!((f.block, f.thread), (Some([0, 0, 0]), Some([0, 0, 0])));
    }

    #[test]
    fn not_every_error_line_is_a_cuda_error() {
        // cuda-gdb's own crash (`what():  vector::_M_range_check`), an option's help text
        // naming CUDA_ERROR_NOT_FOUND, a watchdog timeout, PyTorch's follow-up lines.
        for text in [OOB_WRITE_CUDAGDB, SANITIZER_HELP, DIST_TIMEOUT, &lines(TRITON_GRAPH_BASELINE, 9, 13)] {
            let ev = host(text);
            assert!(ev.symptoms.is_empty(), "{text}: {:?}", ev.symptoms);
            assert!(ev.faults.is_empty());
            assert!(ev.tools.is_empty());
        }
    }

    #[test]
    fn repeated_identical_reports_are_folded() {
        let line = lines(OOB_READ_BASELINE, 1, 1);
        let ev = host(&line.repeat(1000));
        assert_eq!(ev.symptoms.len(), 1);
        assert_eq!(ev.symptoms[0].log_line, 1);
    }

    // ----- Python tracebacks ------------------------------------------------------------------

    #[test]
    fn pytorch_assert_line_and_traceback() {
        let ev = host(TORCH_ASSERT_BASELINE);
        assert_eq!(
            ev.faults,
            vec![Fault {
                tool: Some(Tool::Host),
                error: Some(ErrorClass::DeviceAssert),
                kernel: Some("nll_loss_forward_reduce_cuda_kernel_2d".into()),
                location: loc("/pytorch/aten/src/ATen/native/cuda/Loss.cu", 245),
                block: Some([0, 0, 0]),
                thread: Some([5, 0, 0]),
                count: 1,
                block_range: Some([[0, 0, 0], [0, 0, 0]]),
                thread_range: Some([[5, 0, 0], [5, 0, 0]]),
                detail: Some("t >= 0 && t < n_classes".into()),
                ..Fault::default()
            }]
        );
        assert_eq!(
            ev.symptoms,
            vec![Symptom {
                error: Some(ErrorClass::DeviceAssert),
                message: "device-side assert triggered".into(),
                exception: Some("torch.AcceleratorError".into()),
                python_frames: vec![pyframe("<module>", "/tmp/ima-record/torch_assert.py", 10)],
                log_line: 7,
                ..Symptom::default()
            }]
        );
        assert_eq!(ev.tools, vec![Tool::Host]);
    }

    #[test]
    fn traceback_through_a_library_frame() {
        let ev = host(TRITON_GRAPH_BASELINE);
        assert_eq!(ev.symptoms.len(), 1);
        assert_eq!(
            ev.symptoms[0].python_frames,
            vec![pyframe("<module>", VLLM_SHAPED, 65), pyframe("run", VLLM_SHAPED, 50)]
        );
        assert_eq!(ev.symptoms[0].error, Some(ErrorClass::IllegalAddress));
        assert_eq!(ev.symptoms[0].log_line, 8);

        let ev = host(TRITON_GRAPH_BLOCKING);
        let s = &ev.symptoms[0];
        assert_eq!(
            s.python_frames,
            vec![
                pyframe("<module>", VLLM_SHAPED, 65),
                pyframe("run", VLLM_SHAPED, 44),
                pyframe("replay", "/opt/torch/.venv/lib/python3.12/site-packages/torch/cuda/graphs.py", 139),
            ]
        );
        assert_eq!(s.user_frame(), Some(&pyframe("run", VLLM_SHAPED, 44)));
        assert_eq!(s.message, "an illegal memory access was encountered");
        assert_eq!(s.exception.as_deref(), Some("torch.AcceleratorError"));
    }

    #[test]
    fn child_process_under_memcheck() {
        let ev = host(CHILD_MEMCHECK_HEAD);
        assert_eq!(ev.faults.len(), 1);
        let f = &ev.faults[0];
        assert_eq!(f.kernel.as_deref(), Some("_assert_async_cuda_kernel"));
        assert_eq!(f.location, loc("/pytorch/aten/src/ATen/native/cuda/TensorCompare.cu", 109));
        assert_eq!(f.detail, None, "Assertion `` has no text");

        let ev = host(CHILD_MEMCHECK_TAIL);
        assert_eq!(ev.symptoms.len(), 1);
        let s = &ev.symptoms[0];
        assert_eq!(s.message, "device-side assert triggered");
        assert_eq!(s.log_line, 12);
        assert_eq!(s.python_frames.len(), 3);
        assert_eq!(s.user_frame(), Some(&pyframe("worker", "/src/probe/child_ima.py", 8)));
    }

    #[test]
    fn assert_line_among_coredump_progress() {
        let ev = host(TORCH_ASSERT_COREDUMP);
        assert!(ev.symptoms.is_empty());
        assert_eq!(ev.faults.len(), 1);
        assert_eq!(ev.faults[0].kernel.as_deref(), Some("nll_loss_forward_reduce_cuda_kernel_2d"));
        assert_eq!(ev.faults[0].thread, Some([5, 0, 0]));
    }

    #[test]
    fn rank_prefixed_traceback() {
        let ev = host(DIST_BLOCKING);
        // torchrun's own traceback ends in ChildFailedError: not a CUDA error, ignored.
        let site = "/opt/torch/.venv/lib/python3.12/site-packages/triton";
        assert_eq!(
            ev.symptoms,
            vec![Symptom {
                error: Some(ErrorClass::IllegalAddress),
                message: "an illegal memory access was encountered".into(),
                exception: Some("RuntimeError".into()),
                python_frames: vec![
                    pyframe("<module>", DIST_FAULT, 37),
                    pyframe("main", DIST_FAULT, 30),
                    pyframe("gather", SUITE_VLLM_SHAPED, 27),
                    pyframe("<lambda>", &format!("{site}/runtime/jit.py"), 370),
                    pyframe("run", &format!("{site}/runtime/jit.py"), 744),
                    pyframe("__call__", &format!("{site}/backends/nvidia/driver.py"), 713),
                ],
                rank: Some(1),
                log_line: 20,
                ..Symptom::default()
            }]
        );
    }

    #[test]
    fn nccl_watchdog_and_its_what_line_are_one_symptom() {
        let ev = host(DIST_PLAIN);
        assert_eq!(
            ev.symptoms,
            vec![Symptom {
                error: Some(ErrorClass::IllegalAddress),
                message: "an illegal memory access was encountered".into(),
                // From the `Exception raised from query at ...` line that follows.
                reported_at: loc("/pytorch/c10/cuda/CUDAEvent.h", 111),
                rank: Some(1),
                log_line: 5,
                ..Symptom::default()
            }]
        );
        // The `terminate` + `what():` pair alone: the exception type, and the rank from
        // `[PG ID 0 PG GUID 0(default_pg) Rank 1]` (the line has no `[rank1]:` prefix).
        let at = DIST_PLAIN.lines().position(|l| l.starts_with("terminate called")).unwrap() + 1;
        let ev = host(&lines(DIST_PLAIN, at, at + 1));
        assert_eq!(ev.symptoms.len(), 1);
        let s = &ev.symptoms[0];
        assert_eq!(s.exception.as_deref(), Some("c10::DistBackendError"));
        assert_eq!((s.rank, s.log_line), (Some(1), 2));
        assert_eq!(s.message, "an illegal memory access was encountered");
    }

    // Derived inputs: real lines, re-arranged (interleaved, relabelled, repeated) to exercise
    // what a recording of one run cannot show.

    #[test]
    fn interleaved_ranks_keep_separate_tracebacks() {
        let r1: Vec<&str> = DIST_BLOCKING.lines().filter(|l| l.starts_with("[rank1]:")).collect();
        let r0: Vec<String> = r1.iter().map(|l| l.replacen("[rank1]:", "[rank0]:", 1)).collect();
        let noise = lines(DIST_PLAIN, 2, 3); // torchrun's `OMP_NUM_THREADS` banner
        let mut text = String::new();
        for (a, b) in r1.iter().zip(&r0) {
            text.push_str(&format!("{a}\n{noise}{b}\n"));
        }
        let ev = host(&text);
        assert_eq!(ev.symptoms.len(), 2, "{:?}", ev.symptoms);
        let mut ranks: Vec<_> = ev.symptoms.iter().map(|s| s.rank).collect();
        ranks.sort();
        assert_eq!(ranks, vec![Some(0), Some(1)]);
        for s in &ev.symptoms {
            assert_eq!(s.python_frames.len(), 6);
            assert_eq!(s.user_frame(), Some(&pyframe("gather", SUITE_VLLM_SHAPED, 27)));
        }
    }

    #[test]
    fn unrelated_lines_inside_a_traceback_are_skipped() {
        let other = lines(TRITON_GRAPH_BASELINE, 1, 1); // `replayed`
        let text: String = TRITON_GRAPH_BLOCKING.lines().map(|l| format!("{l}\n{other}")).collect();
        let ev = host(&text);
        assert_eq!(ev.symptoms.len(), 1);
        assert_eq!(ev.symptoms[0].python_frames.len(), 3);
    }

    #[test]
    fn chained_tracebacks_report_an_error_once() {
        let first = lines(TRITON_GRAPH_BASELINE, 2, 8);
        let second = lines(TRITON_GRAPH_BLOCKING, 1, 8);
        let chained = format!("{first}\n{CHAIN_DURING}\n\n{second}");
        let ev = host(&chained);
        assert_eq!(ev.symptoms.len(), 1);
        assert_eq!(
            ev.symptoms[0].python_frames,
            vec![pyframe("<module>", VLLM_SHAPED, 65), pyframe("run", VLLM_SHAPED, 50)]
        );
        // Two separate tracebacks of the same error are two reports.
        let ev = host(&format!("{first}{second}"));
        assert_eq!(ev.symptoms.len(), 2);
    }

    #[test]
    fn logger_prefix_before_every_traceback_line() {
        let text: String = lines(TRITON_GRAPH_BLOCKING, 1, 8).lines().map(|l| format!("w0| {l}\n")).collect();
        let ev = host(&text);
        assert_eq!(ev.symptoms.len(), 1);
        assert_eq!(ev.symptoms[0].python_frames.len(), 3);
        assert_eq!(ev.symptoms[0].exception.as_deref(), Some("torch.AcceleratorError"));
    }

    #[test]
    fn a_traceback_that_never_ends_stays_bounded() {
        let frame = lines(TRITON_GRAPH_BLOCKING, 2, 3);
        let mut p = HostParser::default();
        feed(&mut p, &format!("{}{}", lines(TRITON_GRAPH_BLOCKING, 1, 1), frame.repeat(50_000)));
        assert_eq!(p.ranks[0].tb.as_ref().map(|t| t.frames.len()), Some(MAX_FRAMES));
        p.line(lines(TRITON_GRAPH_BLOCKING, 8, 8).trim_end(), LineCtx { lineno: 100_002, rank: None });
        let mut ev = Evidence::default();
        p.finish(&mut ev);
        assert_eq!(ev.symptoms.len(), 1);
        assert_eq!(ev.symptoms[0].python_frames.len(), MAX_FRAMES);
    }

    #[test]
    fn assert_lines_are_grouped_per_site() {
        // PyTorch prints one line per failing thread: the recorded line, with other threads.
        let line = lines(TORCH_ASSERT_BASELINE, 2, 2);
        let mut text = String::new();
        for t in [5, 3, 7, 0, 4] {
            text.push_str(&line.replace("thread: [5,0,0]", &format!("thread: [{t},0,0]")));
        }
        text.push_str(&format!("[rank1]:{line}"));
        let ev = host(&text);
        assert_eq!(ev.faults.len(), 2);
        let f = &ev.faults[0];
        assert_eq!(f.count, 5);
        assert_eq!(f.thread, Some([5, 0, 0]));
        assert_eq!(f.thread_range, Some([[0, 0, 0], [7, 0, 0]]));
        assert_eq!(f.block_range, Some([[0, 0, 0], [0, 0, 0]]));
        assert_eq!((ev.faults[1].rank, ev.faults[1].count), (Some(1), 1));
        assert_eq!(ev.faults[1].thread_range, Some([[5, 0, 0], [5, 0, 0]]));
    }

    #[test]
    fn distinct_reports_are_capped() {
        let line = lines(OOB_READ_BASELINE, 1, 1);
        let text: String = (0..MAX_SYMPTOMS + 10).map(|i| line.replace(":26:", &format!(":{i}:"))).collect();
        let ev = host(&text);
        assert_eq!(ev.symptoms.len(), MAX_SYMPTOMS);
        assert!(ev.notes.iter().any(|n| n.contains("10 further")));
    }

    #[test]
    fn helpers() {
        // Triton prints `unknown:0: unknown` for position and function.
        let (l, f) = split_assert_prefix("unknown:0: unknown");
        assert_eq!((l, f), (loc("unknown", 0), Some("unknown")));
        assert_eq!(
            exception_shape(TORCH_ASSERT_BASELINE.lines().nth(6).unwrap(), true).map(|e| e.0),
            Some("torch.AcceleratorError")
        );
        // `vm: The application encountered ...`: a host name, not an exception.
        assert_eq!(exception_shape(OOB_READ_WAITS.lines().next().unwrap(), false), None);
        assert_eq!(exception_shape("launched scale_write", false), None);
        let what = DIST_PLAIN.lines().find(|l| l.contains("what():")).unwrap();
        assert_eq!(infer_rank(what), Some(1));
        assert_eq!(cut("héllo", 2), "h");
        // PyTorch's follow-up line (torch_assert/baseline.log, line 9) names no error itself.
        assert!(!triggers(TORCH_ASSERT_BASELINE.lines().nth(8).unwrap().as_bytes()));
        assert!(
            triggers(b"x CUDA Error: y") && triggers(b"cudaErrorAssert") && triggers(b"CUDA_ERROR_ASSERT")
        );
        assert!(!triggers(b"libtorch_cuda.so") && !triggers(b"device='cuda'"));
    }

    #[test]
    fn project_recordings() {
        let ev = host(DEVICE_ASSERT_BASELINE);
        assert_eq!(ev.faults.len(), 1);
        let f = &ev.faults[0];
        assert_eq!(f.kernel.as_deref(), Some("void check_labels(const int *, int, int, int *)"));
        assert_eq!(f.location, loc("device_assert.cu", 10));
        assert_eq!((f.block, f.thread), (Some([0, 0, 0]), Some([37, 0, 0])));
        assert_eq!(f.detail.as_deref(), Some("c >= 0 && c < classes"));
        assert_eq!(
            ev.symptoms,
            vec![Symptom {
                error: Some(ErrorClass::DeviceAssert),
                message: "device-side assert triggered".into(),
                reported_at: loc("device_assert.cu", 26),
                call: Some("cudaDeviceSynchronize()".into()),
                log_line: 2,
                ..Symptom::default()
            }]
        );

        // Triton's launcher raises `RuntimeError: Triton Error [CUDA]: ...`.
        let ev = host(TRITON_EAGER_BLOCKING);
        assert_eq!(ev.symptoms.len(), 1);
        let s = &ev.symptoms[0];
        assert_eq!((s.exception.as_deref(), s.log_line), (Some("RuntimeError"), 15));
        assert_eq!(s.error, Some(ErrorClass::IllegalAddress));
        assert_eq!(s.python_frames.len(), 6);
        assert_eq!(s.user_frame(), Some(&pyframe("gather", VLLM_SHAPED, 27)));

        // An exception thrown from a destructor: `terminate` + `what():`, no traceback.
        let ev = host(&torch_what());
        assert_eq!(
            ev.symptoms,
            vec![Symptom {
                error: Some(ErrorClass::DeviceAssert),
                message: "device-side assert triggered".into(),
                reported_at: loc("/pytorch/c10/cuda/CUDACachingAllocator.cpp", 3885),
                exception: Some("c10::AcceleratorError".into()),
                log_line: 2,
                ..Symptom::default()
            }]
        );
    }

    // ----- Robustness ---------------------------------------------------------------------------

    /// Every input above (the long recordings cut to the part the tests read).
    fn all_inputs() -> Vec<String> {
        let mut all: Vec<String> = [
            OOB_READ_BASELINE,
            NULL_PLAIN,
            OOB_READ_MEMCHECK,
            TORCH_ASSERT_BASELINE,
            TRITON_GRAPH_BASELINE,
            TRITON_GRAPH_BLOCKING,
            DIST_BLOCKING,
            DIST_PLAIN,
            CHILD_MEMCHECK_HEAD,
            CHILD_MEMCHECK_TAIL,
            OOB_WRITE_CUDAGDB,
            SANITIZER_HELP,
            DIST_TIMEOUT,
            DEVICE_ASSERT_BASELINE,
            TRITON_EAGER_BLOCKING,
        ]
        .iter()
        .map(|t| t.to_string())
        .collect();
        // The assert line and the first coredump progress lines; the `what():` pair.
        all.push(lines(TORCH_ASSERT_COREDUMP, 1, 8));
        all.push(torch_what());
        all
    }

    #[test]
    fn truncated_excerpts_never_panic() {
        for ex in all_inputs() {
            for cut_at in (0..=ex.len()).filter(|&i| ex.is_char_boundary(i)) {
                let text = &ex[..cut_at];
                check_bounded(text, &host(text));
            }
        }
    }

    fn real_lines() -> Vec<String> {
        all_inputs().iter().flat_map(|t| t.lines().map(str::to_string).collect::<Vec<_>>()).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_text_is_bounded(s in any::<String>()) {
            check_bounded(&s, &host(&s));
        }

        #[test]
        fn byte_soup_is_bounded(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
            let s = String::from_utf8_lossy(&bytes);
            check_bounded(&s, &host(&s));
        }

        #[test]
        fn shuffled_real_lines_are_bounded(
            picks in proptest::collection::vec((any::<proptest::sample::Index>(), 0u8..4), 0..400),
        ) {
            let pool = real_lines();
            let mut text = String::new();
            for (i, r) in picks {
                let l = &pool[i.index(pool.len())];
                match r {
                    0 => text.push_str(&format!("[rank0]:{l}\n")),
                    1 => text.push_str(&format!("[rank1]: {l}\n")),
                    _ => text.push_str(&format!("{l}\n")),
                }
            }
            check_bounded(&text, &host(&text));
        }

        #[test]
        fn real_lines_with_junk_spliced_in(
            i in any::<proptest::sample::Index>(),
            at in any::<proptest::sample::Index>(),
            junk in "\\PC{0,40}",
        ) {
            let pool = real_lines();
            let l = &pool[i.index(pool.len())];
            let mut cut_at = at.index(l.len() + 1);
            while !l.is_char_boundary(cut_at) {
                cut_at -= 1;
            }
            let text = format!("{}{junk}{}\n", &l[..cut_at], &l[cut_at..]);
            check_bounded(&text, &host(&text));
        }
    }

    // Multi-byte, invalid and 5,000-character kernel names in the program's own lines
    // (PyTorch's and CUDA's device-assert lines): no panic.
    crate::findings::fuzz::multi_byte_kernel_names_never_panic!("baseline.log");
}

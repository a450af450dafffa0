//! The host parser (`HostParser`): each line of what the program printed itself read for
//! CUDA errors, Python tracebacks per rank (chained ones included) and device-side assert
//! sites, into symptoms and faults.
//!
//! Must not: do I/O, spawn processes or print. Every line of a possibly huge log reaches
//! [`HostParser::line`], so a line that is nothing of ours costs a few byte checks and no
//! allocation; everything kept is capped (frames per traceback, symptoms, sites, ranks).
//!
//! [`HostParser::line`]: crate::findings::LineParser::line

use super::errors::{find_call, find_cuda_error};
use super::python::{exception_shape, parse_frame, strip_prefix_like, CHAIN_CAUSE, CHAIN_DURING, TRACEBACK};
use super::text::{
    cut, find_loc, hash_str, infer_rank, short_loc, split_assert_prefix, symptom_key, widen, MAX_CALL,
    MAX_CHAIN, MAX_FRAMES, MAX_MESSAGE, MAX_NOISE, MAX_RANKS, MAX_SITES, MAX_SYMPTOMS, POST_WINDOW,
    RAISED_WINDOW, WHAT_WINDOW,
};
use super::triggers::triggers;
use crate::findings::{
    parse_dim3, parse_source_loc, ErrorClass, Evidence, Fault, Frame, LineCtx, LineParser, Symptom, Tool,
};
use std::collections::{HashMap, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};

/// Reads host-side reports: see the module documentation.
#[derive(Default)]
pub struct HostParser {
    pub(super) symptoms: Vec<Symptom>,
    /// Hash of a symptom's content (all but its line) -> its index: exact repeats are folded.
    pub(super) seen: HashMap<u64, usize>,
    pub(super) dropped_symptoms: u64,
    /// The symptom last reported (recorded or folded into) and the line it was reported on.
    pub(super) last_symptom: Option<(usize, u64)>,
    /// Recent reports: (message hash, rank, line), for folding `what():` repeats.
    pub(super) recent: VecDeque<(u64, Option<u32>, u64)>,
    /// `terminate called after throwing an instance of 'T'`: (line, T).
    pub(super) terminate: Option<(u64, String)>,
    pub(super) faults: Vec<Fault>,
    /// Site hash -> indexes into `faults`.
    pub(super) sites: HashMap<u64, Vec<usize>>,
    pub(super) last_site: Option<usize>,
    pub(super) dropped_sites: u64,
    pub(super) ranks: Vec<RankState>,
    /// Ranks with an open traceback or a pending non-CUDA exception.
    pub(super) live: usize,
}

/// Traceback state of one rank (or of the lines without a rank).
pub(super) struct RankState {
    pub(super) rank: Option<u32>,
    pub(super) last_seen: u64,
    pub(super) tb: Option<Traceback>,
    /// A chain marker (`During handling of the above exception...`) was seen: the next
    /// traceback belongs to the same chain.
    pub(super) chain_pending: bool,
    /// Hashes of the CUDA error messages already recorded in the current chain.
    pub(super) chain: Vec<u64>,
    /// A traceback that just ended in a non-CUDA exception whose message may go on.
    pub(super) post: Option<PostTb>,
    /// The log prefix before `Traceback (most recent call last):` (length and first bytes).
    pub(super) prefix_len: usize,
    pub(super) prefix_head: [u8; 5],
}

pub(super) struct Traceback {
    pub(super) frames: VecDeque<Frame>,
    pub(super) noise: u32,
}

pub(super) struct PostTb {
    pub(super) exception: String,
    pub(super) frames: Vec<Frame>,
    pub(super) line: u64,
}

impl LineParser for HostParser {
    /// Not a short line, not compute-sanitizer's.
    #[inline]
    fn wants(&self, line: &str, _phrase_free: bool) -> bool {
        let b = line.as_bytes();
        b.len() >= 3 && !b.starts_with(b"=========")
    }

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

    pub(super) fn state_index(&self, rank: Option<u32>) -> Option<usize> {
        self.ranks.iter().position(|s| s.rank == rank)
    }

    pub(super) fn state_or_insert(&mut self, rank: Option<u32>, lineno: u64) -> usize {
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

    pub(super) fn recount_live(&mut self) {
        self.live = self.ranks.iter().filter(|s| s.tb.is_some() || s.post.is_some()).count();
    }

    pub(super) fn start_traceback(&mut self, line: &str, ctx: LineCtx) {
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
    pub(super) fn traceback_line(&mut self, line: &str, ctx: LineCtx) -> bool {
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
    pub(super) fn exception_line(
        &mut self,
        i: usize,
        name: &str,
        rest: &str,
        frames: Vec<Frame>,
        ctx: LineCtx,
    ) {
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
    pub(super) fn plain_line(&mut self, line: &str, ctx: LineCtx) {
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
    pub(super) fn what_line(&mut self, rest: &str, ctx: LineCtx) {
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
    pub(super) fn raised_from(&mut self, rest: &str) {
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

    pub(super) fn push_symptom(&mut self, sym: Symptom, msg_hash: u64) {
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
    pub(super) fn device_assert(&mut self, line: &str, ctx: LineCtx) {
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

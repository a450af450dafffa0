//! Python's faulthandler (`PYTHONFAULTHANDLER=1`): the Python stack of every thread, printed
//! when the process dies of a fatal signal. When the CUDA driver has written a GPU coredump
//! (`CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1`) it aborts the process, and this stack is all the
//! program prints: no traceback comes, the abort is first. Under `CUDA_LAUNCH_BLOCKING=1` the
//! stack names the line that launched the faulting kernel; without it, where the error surfaced.
//!
//! Recognises `Fatal Python error: WHAT` (`Aborted`, `Segmentation fault`, a `Py_FatalError`
//! message), up to a few lines of preamble (`Python runtime state: initialized`, blanks), then
//! the thread blocks: `Current thread 0x... (most recent call first):`, `Thread 0x...
//! (most recent call first):` (anything allowed between the id and the parenthesis) or `Stack
//! (most recent call first):`, each with its frames, innermost first, `  File "PATH", line N in FUNC` (no comma
//! before `in`, unlike a traceback; `???` where faulthandler knew nothing). `  <no Python
//! frame>`, `  ...` (more than 100 frames) and `...` (more than 100 threads) are allowed; a
//! thread ends at a blank line, the record at a line that is none of these (`Extension
//! modules: ...`). faulthandler writes every character beyond printable ASCII as `\xHH`,
//! `\uHHHH` or `\UHHHHHHHH`: paths and names are decoded. A log prefix before `Fatal Python
//! error` (a logger's, repeated on each line) is allowed for; rank labels are the scanner's.
//!
//! Each record becomes one [`Symptom`] (`Fatal Python error: Aborted`, no exception, `error`
//! only where the text names a CUDA error) with the frames of one thread, outermost first as a
//! traceback has them: the current thread; else the one with the user's frames inside a launch
//! (a Triton or PyTorch frame inwards of a user frame); else the first with user frames; else
//! the first. The driver's `Starting GPU coredump generation` sets
//! [`Evidence::gpu_dump_started`], so the verdict can tell an abort after a device fault.
//!
//! Must not: do I/O, print, panic on any input, or allocate for lines that are not its own
//! (every line of a log reaches its `wants`: with no record open, a line without either of
//! its two phrases, which the scanner searches a read at a time, costs it two comparisons;
//! a line with one, a search of its first bytes).
//! Memory is bounded: ranks with an open record, threads per record (at most four kept),
//! frames per thread, symptoms per input and the length of every name are capped.

use super::host::strip_prefix_like;
use super::names;
use super::{ErrorClass, Evidence, Frame, LineCtx, LineParser, Symptom, Tool};
use crate::model::text::cut as cut_str;

/// How faulthandler's record starts; a [`Symptom`]'s message starts with it too.
pub const FATAL: &str = "Fatal Python error: ";
/// The CUDA driver's line before it writes a GPU coredump (with or without
/// `CUDA_COREDUMP_SHOW_PROGRESS`'s `[time] coredump: ` before it).
const DUMP_STARTED: &str = "Starting GPU coredump generation";
/// What [`marker`] looks for: the scanner searches every line for them
/// ([`LineParser::wants`]).
pub(super) const PHRASES: [&str; 2] = [FATAL, DUMP_STARTED];
/// faulthandler's name for SIGABRT, the signal the driver aborts with after a GPU coredump.
const ABORTED: &str = "Aborted";
const MOST_RECENT: &str = "(most recent call first):";

/// Frames kept per thread, the innermost ones (faulthandler prints 100, then `  ...`).
const MAX_FRAMES: usize = 128;
/// Thread blocks read per record (faulthandler prints 100, then `...`); later ones are skipped.
const MAX_THREADS: usize = 256;
/// Records (symptoms) kept per input.
const MAX_SYMPTOMS: usize = 256;
/// Ranks with a record open at once (the least recently seen is closed).
const MAX_RANKS: usize = 64;
/// Lines between `Fatal Python error` and the first thread before the record is given up.
const MAX_PREAMBLE: u32 = 16;
/// Bytes of a log prefix before `Fatal Python error: ` (or the driver's line).
const MAX_PREFIX: usize = 64;
/// Bytes kept of a path or function name, and of the fatal error's text.
const MAX_NAME: usize = 2048;
const MAX_MESSAGE: usize = 256;

/// Whether a symptom is faulthandler's stack at a fatal error rather than a traceback.
pub fn is_stack(s: &Symptom) -> bool {
    s.exception.is_none() && s.message.starts_with(FATAL)
}

/// Whether it is the stack at a SIGABRT (`Fatal Python error: Aborted`), as the driver aborts
/// a process after its GPU coredump; a segmentation fault's stack is not a device fault's.
pub fn is_abort(s: &Symptom) -> bool {
    is_stack(s) && s.message[FATAL.len()..].trim() == ABORTED
}

/// Reads faulthandler's records; see the module documentation.
#[derive(Default)]
pub struct FaultHandlerParser {
    open: Vec<Record>,
    symptoms: Vec<Symptom>,
    dropped: u64,
    dump_started: bool,
}

/// One `Fatal Python error` being read, of one rank.
struct Record {
    rank: Option<u32>,
    last_seen: u64,
    what: String,
    log_line: u64,
    /// The log prefix before `Fatal Python error: ` (length and first bytes).
    prefix_len: usize,
    prefix_head: [u8; 5],
    stage: Stage,
    preamble: u32,
    threads: usize,
    /// The thread whose frames are being read (`None` past [`MAX_THREADS`]).
    reading: Option<Thread>,
    picks: Picks,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// After `Fatal Python error`, before the first thread.
    Preamble,
    /// In a thread's frames.
    Frames,
    /// After a thread's blank line: another thread, or the end.
    Between,
}

/// The threads that may be chosen, each the first of its kind.
#[derive(Default)]
struct Picks {
    current: Option<Thread>,
    launching: Option<Thread>,
    user: Option<Thread>,
    first: Option<Thread>,
}

struct Thread {
    current: bool,
    /// Innermost first, as faulthandler prints them.
    frames: Vec<Frame>,
}

impl Thread {
    /// The innermost frame in the user's own code, not a library's.
    fn user_at(&self) -> Option<usize> {
        // Innermost first; a function torch.compile compiled (entered through Dynamo, shown
        // at its `def`) is not the launch: its caller is.
        let user = |f: Option<&str>| f.is_some_and(|p| !names::is_host_machinery(p));
        let fr = &self.frames;
        (0..fr.len()).find(|&i| {
            user(fr[i].file.as_deref())
                && !names::entered_compiled(fr[i + 1..].iter().map(|f| f.file.as_deref()), user)
        })
    }

    /// Inside a launch: a Triton or PyTorch frame inwards of the user's frame.
    fn in_launch(&self) -> bool {
        self.user_at().is_some_and(|u| {
            self.frames[..u]
                .iter()
                .filter_map(|f| f.file.as_deref())
                .any(|p| p.contains("/triton/") || p.contains("/torch/"))
        })
    }
}

impl Picks {
    fn offer(&mut self, t: Thread) {
        if self.current.is_some() {
            return;
        }
        if t.current {
            *self = Picks { current: Some(t), ..Picks::default() };
        } else if t.user_at().is_some() {
            if t.in_launch() {
                self.launching.get_or_insert(t);
            } else {
                self.user.get_or_insert(t);
            }
        } else {
            self.first.get_or_insert(t);
        }
    }

    fn chosen(self) -> Option<Thread> {
        self.current.or(self.launching).or(self.user).or(self.first)
    }
}

impl Record {
    fn begin_thread(&mut self, current: bool) {
        self.end_thread();
        self.stage = Stage::Frames;
        if self.threads < MAX_THREADS {
            self.reading = Some(Thread { current, frames: Vec::new() });
        }
        self.threads += 1;
    }

    fn end_thread(&mut self) {
        if let Some(t) = self.reading.take() {
            self.picks.offer(t);
        }
    }

    fn into_symptom(mut self) -> Option<Symptom> {
        self.end_thread();
        let mut frames = self.picks.chosen()?.frames;
        frames.reverse();
        Some(Symptom {
            error: cuda_error(&self.what),
            message: format!("{FATAL}{}", self.what),
            python_frames: frames,
            rank: self.rank,
            log_line: self.log_line,
            ..Symptom::default()
        })
    }
}

/// What starts at most [`MAX_PREFIX`] bytes into a line: `Fatal Python error: ` or the
/// driver's `Starting GPU coredump generation`, with where. Cheap for other lines.
enum Marker {
    Fatal(usize),
    Dump,
}

fn marker(line: &str) -> Option<Marker> {
    let b = line.as_bytes();
    if b.len() < FATAL.len() {
        return None;
    }
    let window = &b[..b.len().min(MAX_PREFIX + 1)];
    // The second byte first (`Fa`, `St`): `Frame`, `Saved` and their like stop there.
    memchr::memchr2_iter(b'F', b'S', window).find_map(|p| match b.get(p + 1) {
        Some(b'a') if b[p..].starts_with(FATAL.as_bytes()) => Some(Marker::Fatal(p)),
        Some(b't') if b[p..].starts_with(DUMP_STARTED.as_bytes()) => Some(Marker::Dump),
        _ => None,
    })
}

impl LineParser for FaultHandlerParser {
    /// A line with a record open, or with one of [`PHRASES`].
    #[inline]
    fn wants(&self, _line: &str, phrase_free: bool) -> bool {
        !phrase_free || !self.open.is_empty()
    }

    fn line(&mut self, line: &str, ctx: LineCtx) {
        let found = marker(line);
        if matches!(found, Some(Marker::Dump)) {
            self.dump_started = true;
        }
        let open = self.open.iter().position(|r| r.rank == ctx.rank);
        match (found, open) {
            (Some(Marker::Fatal(at)), open) => {
                if let Some(i) = open {
                    self.close(i);
                }
                self.start(line, at, ctx);
            }
            (_, Some(i)) => self.record_line(i, line, ctx),
            _ => {}
        }
    }

    fn finish(&mut self, ev: &mut Evidence) {
        while !self.open.is_empty() {
            self.close(0);
        }
        self.symptoms.sort_by_key(|s| s.log_line);
        if !self.symptoms.is_empty() {
            ev.saw(Tool::Host);
        }
        ev.symptoms.append(&mut self.symptoms);
        ev.gpu_dump_started |= self.dump_started;
        if self.dropped > 0 {
            ev.notes.push(format!(
                "faulthandler: {} further `{}` stack(s) were not kept (at most {MAX_SYMPTOMS})",
                self.dropped,
                FATAL.trim_end()
            ));
            self.dropped = 0;
        }
    }
}

impl FaultHandlerParser {
    fn start(&mut self, line: &str, at: usize, ctx: LineCtx) {
        if self.open.len() >= MAX_RANKS {
            if let Some((i, _)) = self.open.iter().enumerate().min_by_key(|(_, r)| r.last_seen) {
                self.close(i);
            }
        }
        let mut prefix_head = [0u8; 5];
        let head = &line.as_bytes()[..at.min(5)];
        prefix_head[..head.len()].copy_from_slice(head);
        self.open.push(Record {
            rank: ctx.rank,
            last_seen: ctx.lineno,
            what: cut(line[at + FATAL.len()..].trim(), MAX_MESSAGE),
            log_line: ctx.lineno,
            prefix_len: at,
            prefix_head,
            stage: Stage::Preamble,
            preamble: 0,
            threads: 0,
            reading: None,
            picks: Picks::default(),
        });
    }

    /// A line of rank `i`'s open record: a thread, a frame, or its end.
    fn record_line(&mut self, i: usize, line: &str, ctx: LineCtx) {
        let r = &mut self.open[i];
        r.last_seen = ctx.lineno;
        let body = strip_prefix_like(line, r.prefix_len, &r.prefix_head).unwrap_or(line);
        let blank = body.trim().is_empty();
        match r.stage {
            Stage::Preamble => match thread_header(body) {
                Some(current) => r.begin_thread(current),
                None => {
                    r.preamble += 1;
                    if r.preamble > MAX_PREAMBLE {
                        self.open.remove(i);
                    }
                }
            },
            Stage::Frames if blank => {
                r.end_thread();
                r.stage = Stage::Between;
            }
            Stage::Frames if frame_body(body).is_some() => {
                if let Some(t) = r.reading.as_mut().filter(|t| t.frames.len() < MAX_FRAMES) {
                    t.frames.extend(parse_frame(body));
                }
            }
            // `  <no Python frame>`, `  ...`, `  Garbage-collecting` and their like.
            Stage::Frames if body.starts_with(' ') => {}
            Stage::Between if blank || body.trim_end() == "..." => {}
            Stage::Frames | Stage::Between => match thread_header(body) {
                Some(current) => r.begin_thread(current),
                None => self.close(i),
            },
        }
    }

    fn close(&mut self, i: usize) {
        let r = self.open.remove(i);
        let Some(s) = r.into_symptom() else { return };
        if self.symptoms.len() < MAX_SYMPTOMS {
            self.symptoms.push(s);
        } else {
            self.dropped += 1;
        }
    }
}

/// `Current thread 0x00007f.. (most recent call first):` (true), `Thread 0x.. [name] (most
/// recent call first):` (false), `Stack (most recent call first):` (the current thread's).
fn thread_header(body: &str) -> Option<bool> {
    let rest = body.trim_end().strip_suffix(MOST_RECENT)?;
    if rest == "Stack " {
        return Some(true);
    }
    let (current, id) = match rest.strip_prefix("Current thread 0x") {
        Some(id) => (true, id),
        None => (false, rest.strip_prefix("Thread 0x")?),
    };
    let digits = id.bytes().take_while(u8::is_ascii_hexdigit).count();
    (digits > 0 && id[digits..].starts_with(' ')).then_some(current)
}

/// A frame line's text after `File `: indented by two spaces, or by one where a label before
/// it took one (`[rank1]:` without its space).
fn frame_body(body: &str) -> Option<&str> {
    let rest = body.strip_prefix(' ')?;
    rest.strip_prefix(' ').unwrap_or(rest).strip_prefix("File ")
}

/// `  File "/src/x.py", line 42 in apply_rope` -> the frame; `???` for what faulthandler did
/// not know (`  File "???", line ??? in ???`).
fn parse_frame(body: &str) -> Option<Frame> {
    let rest = frame_body(body)?;
    let (file, tail) = match rest.strip_prefix('"') {
        Some(quoted) => quoted.rsplit_once("\", line ")?,
        None => rest.split_once(", line ")?,
    };
    let (line, function) = tail.split_once(" in ")?;
    let line = match line {
        "???" => None,
        l if !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()) => Some(l.parse().ok()?),
        _ => return None,
    };
    let known = |s: &str| (s != "???" && !s.is_empty()).then(|| unescaped(s));
    Some(Frame { function: known(function.trim_end()), file: known(file), line, module: None, python: true })
}

/// The fatal error's class, only where its text names a CUDA error (faulthandler's own
/// `Illegal instruction` is the CPU's SIGILL, `_PyObject_AssertFailed` Python's assert).
fn cuda_error(what: &str) -> Option<ErrorClass> {
    const CUDA: &[&str] = &[
        "cuda",
        "illegal memory access",
        "illegal address",
        "misaligned address",
        "device-side assert",
        "unspecified launch failure",
        "illegal instruction was encountered",
    ];
    let lower = what.to_ascii_lowercase();
    if !CUDA.iter().any(|t| lower.contains(t)) {
        return None;
    }
    Some(ErrorClass::from_message(what)).filter(ErrorClass::is_device_fault)
}

/// The text with faulthandler's escapes of characters beyond printable ASCII (`\xe9`,
/// `\u6838`, `\U0001f600`) decoded, where each is one faulthandler writes; at most
/// [`MAX_NAME`] bytes. A backslash of anything else is kept as it is.
fn unescaped(s: &str) -> String {
    if !s.contains('\\') {
        return cut(s, MAX_NAME);
    }
    let mut out = String::new();
    let mut rest = s;
    while let Some(p) = rest.find('\\') {
        if out.len() > MAX_NAME {
            break;
        }
        out.push_str(&rest[..p]);
        let esc = &rest[p..];
        match decode_escape(esc) {
            Some((c, n)) => {
                out.push(c);
                rest = &esc[n..];
            }
            None => {
                out.push('\\');
                rest = &esc[1..];
            }
        }
    }
    if out.len() <= MAX_NAME {
        out.push_str(cut_str(rest, MAX_NAME));
    }
    cut(&out, MAX_NAME)
}

/// The character of one escape at the start of `esc`, and the escape's length.
fn decode_escape(esc: &str) -> Option<(char, usize)> {
    let (digits, least) = match esc.as_bytes().get(1)? {
        b'x' => (2, 0),
        b'u' => (4, 0x100),
        b'U' => (8, 0x1_0000),
        _ => return None,
    };
    let hex = esc.get(2..2 + digits)?;
    if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let v = u32::from_str_radix(hex, 16).ok()?;
    // Printable ASCII is written as it is; a surrogate (an undecodable byte of a file name)
    // is no character: both stay escaped.
    if v < least || (digits == 2 && (0x20..0x7f).contains(&v)) {
        return None;
    }
    Some((char::from_u32(v)?, 2 + digits))
}

fn cut(s: &str, max: usize) -> String {
    cut_str(s, max).to_string()
}

#[cfg(test)]
mod tests {
    use super::super::render::render_text;
    use super::super::scan::{scan_reader, scan_str};
    use super::super::verdict::{decide, Analysis};
    use super::*;
    use proptest::prelude::*;

    const ROPE_LB: &str = recording!("h200/faulthandler/E1_p01_triton_rope_partial.1.log");
    const ROPE: &str = recording!("h200/faulthandler/E1_p01_triton_rope_partial.0.log");
    const WORKER_LB: &str = recording!("h200/faulthandler/E1_p03_spawn_worker.1.log");
    const WORKER: &str = recording!("h200/faulthandler/E1_p03_spawn_worker.0.log");
    const ROPE_PY: &str = "/tmp/fh/p01_triton_rope_partial.py";
    const WORKER_PY: &str = "/tmp/fh/p03_spawn_worker.py";
    const TRITON: &str = "/opt/torch/.venv/lib/python3.12/site-packages/triton";
    const MP: &str = "/usr/lib/python3.12/multiprocessing";

    fn fh(text: &str) -> Evidence {
        let mut p = FaultHandlerParser::default();
        for (i, raw) in text.lines().enumerate() {
            let (line, rank) = super::super::strip_rank_in(raw, false);
            p.line(line, LineCtx { lineno: i as u64 + 1, rank });
        }
        let mut ev = Evidence::default();
        p.finish(&mut ev);
        ev
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

    /// Lines `from..=to` (1-based) of a recording, each with its newline.
    fn lines(text: &str, from: usize, to: usize) -> String {
        text.lines().skip(from - 1).take(to + 1 - from).map(|l| format!("{l}\n")).collect()
    }

    /// The one symptom's user frame: (function, file, line).
    fn user(ev: &Evidence) -> (String, String, u32) {
        assert_eq!(ev.symptoms.len(), 1, "{:?}", ev.symptoms);
        let f = ev.symptoms[0].user_frame().expect("a frame");
        (f.function.clone().unwrap(), f.file.clone().unwrap(), f.line.unwrap())
    }

    fn at(function: &str, file: &str, line: u32) -> (String, String, u32) {
        (function.into(), file.into(), line)
    }

    #[test]
    fn under_launch_blocking_the_stack_names_the_launch_inside_triton() {
        let ev = scan_str(ROPE_LB, "E1_p01_triton_rope_partial.1.log");
        assert_eq!(ev.tools, vec![Tool::Host]);
        assert!(ev.gpu_dump_started, "the driver's `Starting GPU coredump generation` line");
        assert_eq!(ev.symptoms.len(), 1);
        let s = &ev.symptoms[0];
        assert_eq!(s.message, "Fatal Python error: Aborted");
        assert_eq!((&s.error, &s.exception, s.rank, s.log_line), (&None, &None, None, 2));
        assert!(is_stack(s) && is_abort(s));
        // Outermost first, as a traceback has them: reversed from faulthandler's order.
        assert_eq!(
            s.python_frames,
            vec![
                pyframe("<module>", ROPE_PY, 59),
                pyframe("main", ROPE_PY, 53),
                pyframe("apply_rope", ROPE_PY, 42),
                pyframe("<lambda>", &format!("{TRITON}/runtime/jit.py"), 370),
                pyframe("run", &format!("{TRITON}/runtime/jit.py"), 744),
                pyframe("__call__", &format!("{TRITON}/backends/nvidia/driver.py"), 713),
            ]
        );
        assert_eq!(user(&ev), at("apply_rope", ROPE_PY, 42));
    }

    #[test]
    fn without_launch_blocking_the_stack_is_where_the_error_surfaced() {
        let ev = scan_str(ROPE, "E1_p01_triton_rope_partial.0.log");
        let s = &ev.symptoms[0];
        assert_eq!(s.python_frames, vec![pyframe("<module>", ROPE_PY, 59), pyframe("main", ROPE_PY, 54)]);
        assert_eq!(user(&ev), at("main", ROPE_PY, 54));
    }

    #[test]
    fn a_spawned_worker_from_string_bootstrap_to_the_launch() {
        let ev = scan_str(WORKER_LB, "E1_p03_spawn_worker.1.log");
        let s = &ev.symptoms[0];
        assert_eq!(s.python_frames.len(), 9);
        assert_eq!(s.python_frames[0], pyframe("<module>", "<string>", 1));
        assert_eq!(s.python_frames[1], pyframe("spawn_main", &format!("{MP}/spawn.py"), 122));
        assert_eq!(s.python_frames[8].function.as_deref(), Some("__call__"));
        assert_eq!(user(&ev), at("worker", WORKER_PY, 36));
        // The parent's `engine worker exited with code -6` after the record is not part of it.
        assert_eq!(s.log_line, 2);

        let ev = scan_str(WORKER, "E1_p03_spawn_worker.0.log");
        assert_eq!(ev.symptoms[0].python_frames.len(), 6);
        assert_eq!(user(&ev), at("worker", WORKER_PY, 34));
    }

    #[test]
    fn a_traceback_is_not_a_fatal_stack() {
        let ev = scan_str(recording!("h200/triton_eager/launch-blocking.log"), "launch-blocking.log");
        assert!(!ev.symptoms.is_empty());
        assert!(ev.symptoms.iter().all(|s| !is_stack(s)));
        assert!(!ev.gpu_dump_started);
    }

    // Derived inputs: the recordings' own lines, re-arranged (several threads in one record,
    // relabelled, prefixed, cut), for what a single-threaded recording cannot show.

    /// A record of the threads given as (text, first line, last line) blocks, blank-separated.
    fn record(threads: &[(&str, usize, usize)]) -> String {
        let mut text = lines(ROPE_LB, 1, 3);
        let blocks: Vec<String> = threads.iter().map(|&(t, a, b)| lines(t, a, b)).collect();
        text.push_str(&blocks.join("\n"));
        text.push('\n');
        text.push_str(&lines(ROPE_LB, 12, 12));
        text
    }

    #[test]
    fn of_several_threads_the_current_one_else_the_one_inside_a_launch() {
        // ROPE's thread (user frames, no launch) and ROPE_LB's (inside Triton's launcher).
        for order in [[(ROPE, 4, 6), (ROPE_LB, 4, 10)], [(ROPE_LB, 4, 10), (ROPE, 4, 6)]] {
            let ev = fh(&record(&order));
            assert_eq!(user(&ev), at("apply_rope", ROPE_PY, 42));
        }
        // `Current thread` wins.
        let current = record(&[(ROPE_LB, 4, 10), (ROPE, 4, 6)]).replacen(
            "Thread 0x00007fda5ba8e140",
            "Current thread 0x00007fda5ba8e140",
            1,
        );
        assert_eq!(user(&fh(&current)), at("main", ROPE_PY, 54));
        // A thread of library frames only (the worker's without its own frame) is passed over.
        let library: String = lines(WORKER, 4, 10)
            .lines()
            .filter(|l| !l.contains(WORKER_PY))
            .map(|l| format!("{l}\n"))
            .collect();
        let mut text = lines(ROPE_LB, 1, 3);
        text.push_str(&format!("{library}\n{}", lines(ROPE, 4, 6)));
        assert_eq!(user(&fh(&text)), at("main", ROPE_PY, 54));
        // Alone, it is the stack (its innermost frame a library's).
        let mut text = lines(ROPE_LB, 1, 3);
        text.push_str(&library);
        let ev = fh(&text);
        assert_eq!(ev.symptoms[0].python_frames.len(), 5);
        assert_eq!(ev.symptoms[0].user_frame(), Some(&pyframe("run", &format!("{MP}/process.py"), 108)));
    }

    #[test]
    fn rank_labels_and_a_logger_prefix() {
        // `[rank1]:` without its space (the scanner strips one, an indent's).
        let labelled: String = ROPE_LB.lines().map(|l| format!("[rank1]:{l}\n")).collect();
        let ev = fh(&labelled);
        assert_eq!(ev.symptoms[0].rank, Some(1));
        assert_eq!(user(&ev), at("apply_rope", ROPE_PY, 42));
        // `srun -l` task labels, after the launcher's placement line.
        let srun: String = std::iter::once("0: debug-ima: task 0 on node node1".to_string())
            .chain(WORKER_LB.lines().map(|l| format!("0: {l}")))
            .map(|l| l + "\n")
            .collect();
        let ev = scan_str(&srun, "stdout.log");
        assert_eq!(ev.symptoms[0].rank, Some(0));
        assert_eq!(user(&ev), at("worker", WORKER_PY, 36));
        // A logger's prefix on every line.
        let prefixed: String = ROPE.lines().map(|l| format!("w0| {l}\n")).collect();
        assert_eq!(user(&fh(&prefixed)), at("main", ROPE_PY, 54));
        // Two ranks' records interleaved line by line stay apart.
        let (a, b): (Vec<&str>, Vec<&str>) = (ROPE_LB.lines().collect(), WORKER_LB.lines().collect());
        let mut text = String::new();
        for i in 0..a.len().max(b.len()) {
            for (r, l) in [(0, a.get(i)), (1, b.get(i))] {
                if let Some(l) = l {
                    text.push_str(&format!("[rank{r}]: {l}\n"));
                }
            }
        }
        let ev = fh(&text);
        let got: Vec<_> = ev.symptoms.iter().map(|s| (s.rank, s.user_frame().and_then(|f| f.line))).collect();
        assert_eq!(got, vec![(Some(0), Some(42)), (Some(1), Some(36))]);
    }

    #[test]
    fn a_cut_log_keeps_the_frames_read() {
        // Header, the thread, two frames: the innermost two, outermost first.
        let ev = fh(&lines(ROPE_LB, 1, 6));
        assert_eq!(ev.symptoms[0].python_frames.len(), 2);
        assert_eq!(ev.symptoms[0].python_frames[1].function.as_deref(), Some("__call__"));
        // A header with no thread yet is no stack.
        assert!(fh(&lines(ROPE_LB, 1, 3)).symptoms.is_empty());
        for text in [ROPE_LB, ROPE, WORKER_LB, WORKER] {
            for cut_at in (0..=text.len()).filter(|&i| text.is_char_boundary(i)) {
                check_bounded(&text[..cut_at], &fh(&text[..cut_at]));
            }
        }
    }

    #[test]
    fn a_frame_list_that_never_ends_stays_bounded() {
        let frame = lines(ROPE_LB, 5, 5);
        let ev = fh(&format!("{}{}", lines(ROPE_LB, 1, 4), frame.repeat(50_000)));
        assert_eq!(ev.symptoms[0].python_frames.len(), MAX_FRAMES);
        // Threads without end, and records without end.
        let thread = lines(ROPE_LB, 4, 10) + "\n";
        let ev = fh(&format!("{}{}", lines(ROPE_LB, 1, 3), thread.repeat(5_000)));
        assert_eq!(ev.symptoms.len(), 1);
        assert_eq!(user(&ev), at("apply_rope", ROPE_PY, 42));
        let ev = fh(&lines(ROPE_LB, 1, 10).repeat(MAX_SYMPTOMS + 3));
        assert_eq!(ev.symptoms.len(), MAX_SYMPTOMS);
        assert!(ev.notes.iter().any(|n| n.contains("3 further")), "{:?}", ev.notes);
        // A header followed by anything else is given up.
        let junk = lines(ROPE_LB, 12, 12).repeat(MAX_PREAMBLE as usize + 1);
        assert!(fh(&format!("{}{junk}{}", lines(ROPE_LB, 2, 2), lines(ROPE_LB, 4, 10))).symptoms.is_empty());
    }

    #[test]
    fn multi_byte_paths_raw_and_as_faulthandler_escapes_them() {
        let want = "/tmp/核😀é/p01_triton_rope_partial.py";
        let raw = ROPE_LB.replace("/tmp/fh/", "/tmp/核😀é/");
        assert_eq!(user(&fh(&raw)).1, want);
        // faulthandler writes non-ASCII as `\uXXXX`, `\UXXXXXXXX`, `\xXX` (CPython's
        // `_Py_DumpASCII`); an undecodable byte's surrogate and a plain backslash stay.
        let escaped = ROPE_LB.replace("/tmp/fh/", "/tmp/\\u6838\\U0001f600\\xe9/");
        assert_eq!(user(&fh(&escaped)).1, want);
        assert_eq!(unescaped("a\\udc80b\\q\\x41\\u12"), "a\\udc80b\\q\\x41\\u12");
        // A path of 5,000 multi-byte characters is cut at a character boundary.
        let long = ROPE_LB.replace("/tmp/fh/", &format!("/{}/", "核".repeat(5_000)));
        let f = user(&fh(&long));
        assert!(f.1.len() <= MAX_NAME && f.1.starts_with("/核"), "{}", f.1.len());
        let long = ROPE_LB.replace("/tmp/fh/", &format!("/{}/", "\\u6838".repeat(5_000)));
        assert!(user(&fh(&long)).1.len() <= MAX_NAME);
    }

    #[test]
    fn headers_frames_and_errors() {
        assert_eq!(thread_header(ROPE_LB.lines().nth(3).unwrap()), Some(false));
        assert_eq!(thread_header("Current thread 0x00007fa947134140 (most recent call first):"), Some(true));
        assert_eq!(thread_header("Stack (most recent call first):"), Some(true));
        assert_eq!(thread_header("Current thread's C stack trace (most recent call first):"), None);
        assert_eq!(thread_header("Thread 2 (Thread 0x7f (LWP 3)):"), None);
        assert_eq!(
            parse_frame("  File \"???\", line ??? in ???"),
            Some(Frame { python: true, ..Frame::default() })
        );
        assert_eq!(parse_frame("  File \"x.py\", line 3, in f"), None, "a traceback's frame");
        assert_eq!(cuda_error("Aborted"), None);
        assert_eq!(cuda_error("Illegal instruction"), None, "the CPU's SIGILL");
        assert_eq!(cuda_error("_PyObject_AssertFailed: object assertion failed"), None);
        assert_eq!(
            cuda_error("CUDA error: an illegal memory access was encountered"),
            Some(ErrorClass::IllegalAddress)
        );
    }

    /// The invariants every input must keep.
    fn check_bounded(text: &str, ev: &Evidence) {
        let n = text.lines().count().max(1) as u64;
        assert!(ev.symptoms.len() as u64 <= n);
        for s in &ev.symptoms {
            assert!(is_stack(s) && s.message.len() <= FATAL.len() + MAX_MESSAGE);
            assert!(s.python_frames.len() <= MAX_FRAMES);
            assert!(s.log_line >= 1 && s.log_line <= n);
            for f in &s.python_frames {
                assert!(f.file.as_ref().is_none_or(|p| p.len() <= MAX_NAME));
                assert!(f.function.as_ref().is_none_or(|p| p.len() <= MAX_NAME));
            }
        }
    }

    fn real_lines() -> Vec<&'static str> {
        [ROPE_LB, ROPE, WORKER_LB, WORKER].iter().flat_map(|t| t.lines()).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_text_is_bounded(s in any::<String>()) {
            check_bounded(&s, &fh(&s));
        }

        #[test]
        fn shuffled_real_lines_are_bounded(
            picks in proptest::collection::vec((any::<proptest::sample::Index>(), 0u8..3), 0..400),
        ) {
            let pool = real_lines();
            let mut text = String::new();
            for (i, r) in picks {
                let l = pool[i.index(pool.len())];
                match r {
                    0 => text.push_str(&format!("[rank0]:{l}\n")),
                    1 => text.push_str(&format!("\n{l}\n")),
                    _ => text.push_str(&format!("{l}\n")),
                }
            }
            check_bounded(&text, &fh(&text));
        }
    }

    crate::findings::fuzz::multi_byte_kernel_names_never_panic!("faulthandler.log");

    // ----- The verdict ----------------------------------------------------------------------

    /// The armed first run's log (`blocking`: under `CUDA_LAUNCH_BLOCKING=1`) and, as one run
    /// of one bundle, cuda-gdb's reading of a GPU dump. The reading is of another program's
    /// recording (triton_eager's `gather_kv_kernel`): no recording has both of one program, and
    /// the launch site does not depend on the kernel's name.
    fn armed(log: &str, blocking: bool, group: &str) -> Analysis {
        let mut run = scan_reader(log.as_bytes(), "b/rungs/01-baseline/stdout.log", "baseline");
        run.launch_blocking = blocking;
        run.group = Some(group.into());
        let gdb = recording!("h200/triton_eager/cudagdb-core-1.log");
        let mut core =
            scan_reader(gdb.as_bytes(), "b/rungs/02-coredump/cudagdb-core-1.log", "coredump/cudagdb-core-1");
        core.group = Some("b".into());
        decide(&[run, core])
    }

    #[test]
    fn the_stack_is_the_launch_site_under_launch_blocking_and_where_it_surfaced_otherwise() {
        let a = armed(ROPE_LB, true, "b");
        let v = a.verdict.as_ref().expect("cuda-gdb located the fault");
        let h = v.launch_site.as_ref().expect("the launch site");
        assert_eq!((h.frame.function.as_deref(), h.frame.line), (Some("apply_rope"), Some(42)));
        assert_eq!(
            (h.how.as_str(), h.from.as_str()),
            ("the Python stack at the driver's abort, under launch-blocking", "baseline")
        );
        assert!(v.surfaced_at.is_none());
        assert!(!v.unknown.iter().any(|p| p.as_str() == "launch site"));
        let text = render_text(&a);
        assert!(
            text.contains(
                "  launched: apply_rope at /tmp/fh/p01_triton_rope_partial.py:42 [the Python stack at the \
                 driver's abort, under launch-blocking; baseline]"
            ),
            "{text}"
        );

        // Asynchronous: where it surfaced, never the launch site.
        for log in [ROPE, ROPE_LB] {
            let a = armed(log, false, "b");
            let v = a.verdict.unwrap();
            assert!(v.launch_site.is_none(), "{:?}", v.launch_site);
            let s = v.surfaced_at.expect("where it surfaced");
            assert!(s.how.starts_with("asynchronous: the Python stack at the driver's abort"), "{}", s.how);
        }
        let v = armed(ROPE, false, "b").verdict.unwrap();
        assert_eq!(
            v.surfaced_at.map(|s| (s.frame.function, s.frame.line)),
            Some((Some("main".into()), Some(54)))
        );
        let v = armed(WORKER_LB, true, "b").verdict.unwrap();
        assert_eq!(
            v.launch_site.map(|s| (s.frame.function, s.frame.line)),
            Some((Some("worker".into()), Some(36)))
        );
    }

    #[test]
    fn another_runs_stack_is_never_the_launch_site() {
        // Another bundle's run (its driver's dump line kept): not joined to this kernel.
        let a = armed(ROPE_LB, true, "another");
        let v = a.verdict.as_ref().unwrap();
        assert!(v.launch_site.is_none() && v.surfaced_at.is_none(), "{v:?}");
        // Still reported, as its own symptom.
        assert!(a.symptoms.iter().any(|s| s.origin == "baseline" && is_stack(&s.item)));
    }
}

//! The CUDA driver's coredump progress stream (`CUDA_COREDUMP_SHOW_PROGRESS=1`, on the
//! faulting process's stderr): `[hh:mm:ss.micro] coredump: ...` lines.
//!
//! Recognises `Starting GPU coredump generation`, `Detected an exception of type
//! CUDBG_EXCEPTION_* (N)` followed by `- Device: N`, `- SM: N`, `- Warp: N` (or `- Warp:
//! exception was detected after the warp has exited`, then no stack), `- PC 0x...`,
//! `Stack trace (lane masks: ...)` and `#N<TAB>0x...<TAB><mangled name>` frames;
//! `SM k/N has finished state collection` (see [`sm_progress`]); `Writing ELF file to PATH`
//! and `All done (took 05s)`. Every detected exception becomes one [`Fault`]; the dump
//! file becomes a [`CoredumpFile`] and lends its PID (`%h.%p.%t` names) to the faults
//! of the same stream. A stream that starts but never writes its file is noted
//! (the process was killed mid-dump). Streams of different ranks (`[rankN]:` prefixes)
//! are kept apart.
//!
//! Must not: do I/O, spawn processes, print, panic on any input, or allocate for lines
//! that are not coredump progress lines (every line of a log reaches every parser).
//! Memory is bounded: frames, faults, files and streams are capped.

use super::names;
use super::{parse_hex, CoredumpFile, ErrorClass, Evidence, Fault, Frame, LineCtx, LineParser, Tool};

/// Frames kept per exception.
const MAX_FRAMES: usize = 256;
/// Faults kept per input.
const MAX_FAULTS: usize = 1024;
/// Dump files and coredump streams kept per input.
const MAX_SESSIONS: usize = 1024;

/// The detail given to a fault whose warp had exited before the driver looked at it.
pub const WARP_EXITED: &str = "warp had exited before the exception was reported";

/// One process's coredump progress stream.
#[derive(Debug, Default)]
struct Stream {
    rank: Option<u32>,
    /// Line of `Starting GPU coredump generation`; `None` when the stream was picked up
    /// in the middle (an excerpt, or a log that lost its start).
    started_at: Option<u64>,
    /// Index into `CoredumpParser::files`.
    file: Option<usize>,
    done: bool,
    /// Indices into `CoredumpParser::faults`.
    faults: Vec<usize>,
    last_sm: Option<(u32, u32)>,
}

/// Parses the coredump progress stream; see the module documentation.
#[derive(Default)]
pub struct CoredumpParser {
    streams: Vec<Stream>,
    faults: Vec<Fault>,
    files: Vec<CoredumpFile>,
    seen: bool,
    dropped_faults: u64,
    dropped_streams: u64,
    overlapped: bool,
}

/// The text after `coredump:` on a progress line, leading spaces kept
/// (`[00:45:24.191207] coredump:   - SM: 124` -> `  - SM: 124`). Cheap for other lines.
fn progress_body(line: &str) -> Option<&str> {
    let b = line.as_bytes();
    let rest = match *b.first()? {
        b'[' => {
            let close = memchr::memchr(b']', &b[..b.len().min(40)])?;
            // `]` is ASCII, so `close + 1` is a char boundary.
            line[close + 1..].trim_start_matches(' ')
        }
        b'c' => line,
        _ => return None,
    };
    let body = rest.strip_prefix("coredump:")?;
    Some(body.strip_prefix(' ').unwrap_or(body))
}

/// `(k, N)` for a `SM k/N has finished state collection` line, with or without the
/// `[time] coredump: ` and `[rankN]:` prefixes. For a progress bar.
pub fn sm_progress(line: &str) -> Option<(u32, u32)> {
    let (line, _) = super::strip_rank_in(line, false);
    let body = progress_body(line).unwrap_or(line).trim();
    parse_sm(body)
}

fn parse_sm(body: &str) -> Option<(u32, u32)> {
    let rest = body.strip_prefix("SM ")?;
    let (k, rest) = rest.split_once('/')?;
    let (n, rest) = rest.split_once(' ')?;
    if !rest.starts_with("has finished state collection") {
        return None;
    }
    Some((k.parse().ok()?, n.parse().ok()?))
}

/// The PID in a coredump name of the `%h.%p.%t` shape (`cuda_coredump_vm.1293.1795999427`,
/// or any `NAME.PID.TIME`): the second-to-last dot field, when it and the last one are
/// numbers. Host names may contain dots, hence counting from the end.
pub fn pid_from_dump_path(path: &str) -> Option<u32> {
    let name = names::base_name(path.trim());
    let mut fields = name.rsplit('.');
    let time = fields.next()?;
    let pid = fields.next()?;
    let head = fields.next()?;
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if head.is_empty() || !numeric(time) || !numeric(pid) {
        return None;
    }
    pid.parse().ok()
}

/// A lane mask with exactly one bit set names that lane.
fn single_lane(mask: &str) -> Option<u32> {
    let m = parse_hex(mask)?;
    (m.count_ones() == 1).then(|| m.trailing_zeros())
}

impl CoredumpParser {
    /// The open stream of this rank, if any.
    fn current(&self, rank: Option<u32>) -> Option<usize> {
        self.streams.iter().rposition(|s| s.rank == rank && !s.done)
    }

    fn current_or_new(&mut self, rank: Option<u32>) -> usize {
        match self.current(rank) {
            Some(i) => i,
            None => self.new_stream(rank, None),
        }
    }

    fn new_stream(&mut self, rank: Option<u32>, started_at: Option<u64>) -> usize {
        if self.streams.len() >= MAX_SESSIONS {
            self.dropped_streams += 1;
            // Keep feeding the last stream rather than growing without bound.
            return self.streams.len() - 1;
        }
        self.streams.push(Stream { rank, started_at, ..Stream::default() });
        self.streams.len() - 1
    }

    /// The fault being filled in by `- Device:`, `- SM:`, ... lines.
    fn last_fault(&mut self, rank: Option<u32>) -> Option<&mut Fault> {
        let s = self.current(rank)?;
        let &i = self.streams[s].faults.last()?;
        self.faults.get_mut(i)
    }

    fn exception(&mut self, kind: &str, ctx: LineCtx) {
        let s = self.current_or_new(ctx.rank);
        if self.faults.len() >= MAX_FAULTS {
            self.dropped_faults += 1;
            return;
        }
        let kind = kind.split_whitespace().next().unwrap_or(kind);
        self.faults.push(Fault {
            tool: Some(Tool::Coredump),
            error: Some(ErrorClass::from_message(kind)),
            rank: ctx.rank,
            count: 1,
            ..Fault::default()
        });
        let i = self.faults.len() - 1;
        self.streams[s].faults.push(i);
    }

    fn item(&mut self, item: &str, ctx: LineCtx) {
        let Some(f) = self.last_fault(ctx.rank) else {
            return;
        };
        let (key, value) = match item.split_once(':') {
            Some((k, v)) => (k.trim(), v.trim()),
            // `- PC 0x7f9a577a00f0` has no colon.
            None => match item.split_once(' ') {
                Some((k, v)) => (k.trim(), v.trim()),
                None => return,
            },
        };
        match key {
            "Device" => f.device = value.parse().ok(),
            "SM" => f.sm = value.parse().ok(),
            "Lane" => f.lane = value.parse().ok(),
            "Warp" => match value.parse() {
                Ok(w) => f.warp = Some(w),
                Err(_) if value.contains("exited") => f.detail = Some(WARP_EXITED.to_string()),
                Err(_) => {}
            },
            "PC" => f.pc = parse_hex(value),
            _ => {}
        }
    }

    fn frame(&mut self, body: &str, ctx: LineCtx) {
        // `#0<TAB>0x7f22377a4380<TAB>_ZN2at6native...`
        let mut parts = body.split('\t');
        let Some(num) = parts.next().and_then(|n| n.trim().strip_prefix('#')) else {
            return;
        };
        let Ok(num) = num.trim().parse::<u32>() else {
            return;
        };
        let _pc = parts.next();
        let name = parts.next().map(str::trim).unwrap_or("");
        let Some(f) = self.last_fault(ctx.rank) else {
            return;
        };
        if f.frames.len() >= MAX_FRAMES {
            return;
        }
        let function = (!name.is_empty()).then(|| names::pretty(name));
        if num == 0 && f.kernel.is_none() && !name.is_empty() {
            f.kernel = function.clone();
            if name.starts_with("_Z") {
                f.mangled = Some(name.to_string());
            }
        }
        f.frames.push(Frame { function, ..Frame::default() });
    }

    fn writing(&mut self, path: &str, ctx: LineCtx) {
        let path = path.trim();
        let mut s = self.current_or_new(ctx.rank);
        if self.streams[s].file.is_some() {
            // A second file for the same stream: two processes' progress lines are
            // interleaved. Give it to the oldest open stream that has none.
            self.overlapped = true;
            match self.streams.iter().position(|st| st.rank == ctx.rank && !st.done && st.file.is_none()) {
                Some(o) => s = o,
                None => s = self.new_stream(ctx.rank, None),
            }
        }
        if self.files.len() >= MAX_SESSIONS {
            return;
        }
        self.files.push(CoredumpFile { path: path.to_string(), pid: pid_from_dump_path(path) });
        self.streams[s].file = Some(self.files.len() - 1);
    }
}

impl LineParser for CoredumpParser {
    /// A line that starts as the progress stream's does ([`progress_body`]).
    #[inline]
    fn wants(&self, line: &str, _phrase_free: bool) -> bool {
        matches!(line.as_bytes().first(), Some(b'[' | b'c'))
    }

    fn line(&mut self, line: &str, ctx: LineCtx) {
        let Some(body) = progress_body(line) else {
            return;
        };
        self.seen = true;
        let body = body.trim_start();
        if let Some(rest) = body.strip_prefix("- ") {
            self.item(rest, ctx);
        } else if body.starts_with('#') {
            self.frame(body, ctx);
        } else if let Some(sm) = parse_sm(body) {
            if let Some(s) = self.current(ctx.rank) {
                self.streams[s].last_sm = Some(sm);
            }
        } else if let Some(kind) = body.strip_prefix("Detected an exception of type ") {
            self.exception(kind, ctx);
        } else if let Some(rest) = body.strip_prefix("Stack trace (lane masks: active ") {
            let mask = rest.split([',', ')']).next().unwrap_or("");
            if let Some(lane) = single_lane(mask) {
                if let Some(f) = self.last_fault(ctx.rank) {
                    f.lane.get_or_insert(lane);
                }
            }
        } else if body.starts_with("Starting GPU coredump generation") {
            self.new_stream(ctx.rank, Some(ctx.lineno));
        } else if let Some(path) = body.strip_prefix("Writing ELF file to ") {
            self.writing(path, ctx);
        } else if body.starts_with("All done") {
            if let Some(s) = self.current(ctx.rank) {
                self.streams[s].done = true;
            }
        }
    }

    fn finish(&mut self, ev: &mut Evidence) {
        if self.seen {
            ev.saw(Tool::Coredump);
        }
        for s in &self.streams {
            let file = s.file.and_then(|i| self.files.get(i));
            if let Some(pid) = file.and_then(|f| f.pid) {
                for &i in &s.faults {
                    if let Some(f) = self.faults.get_mut(i) {
                        f.pid.get_or_insert(pid);
                    }
                }
            }
            let progress = s
                .last_sm
                .map(|(k, n)| format!(" (last progress: SM {k}/{n} finished state collection)"))
                .unwrap_or_default();
            match (s.started_at, file) {
                (Some(at), None) => ev.notes.push(format!(
                    "coredump generation started (line {at}) but never reached `Writing ELF file`: \
                     the process was killed mid-dump and no coredump was written{progress}"
                )),
                (Some(at), Some(f)) if !s.done => ev.notes.push(format!(
                    "coredump generation (started line {at}) was writing {} but never reached \
                     `All done`: the process was killed mid-dump and the file may be incomplete",
                    f.path
                )),
                _ => {}
            }
        }
        if self.overlapped {
            ev.notes.push(
                "coredump progress lines of several processes are interleaved in this log: which \
                 exception belongs to which dump file is uncertain"
                    .to_string(),
            );
        }
        if self.dropped_faults > 0 {
            ev.notes.push(format!(
                "{} more coredump exception(s) were not kept (limit {MAX_FAULTS})",
                self.dropped_faults
            ));
        }
        if self.dropped_streams > 0 {
            ev.notes.push(format!(
                "{} more coredump stream(s) were merged into the last one (limit {MAX_SESSIONS})",
                self.dropped_streams
            ));
        }
        for f in std::mem::take(&mut self.files) {
            if !ev.coredumps.iter().any(|c| c.path == f.path) {
                ev.coredumps.push(f);
            }
        }
        ev.faults.append(&mut self.faults);
        self.streams.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::super::scan::scan_str;
    use super::super::{ErrorClass, Evidence, Fault, Tool};
    use super::*;
    use proptest::prelude::*;

    /// The faulting warp had exited before the dump: no stack (PID 851).
    const OOB_WRITE: &str = recording!("h200/oob_write/coredump.log");
    /// The exception detected after 126 of 132 SMs had been collected (PID 1077).
    const OOB_READ: &str = recording!("h200/oob_read/coredump.log");
    /// PyTorch's device-side assert, with PyTorch's assert line first (PID 2899).
    const TORCH_ASSERT: &str = recording!("h200/torch_assert/coredump.log");
    /// A multiprocessing-spawned worker's dump, named with the worker's PID (4554); the
    /// parent prints `worker exit code -6` after it.
    const TRITON_WORKER: &str = recording!("h200/triton_worker/coredump.log");
    /// A -G build: the stack names the kernel unmangled (PID 2419).
    const OOB_WRITE_G: &str = recording!("h200/oob_write_G/coredump.log");
    /// A template kernel, mangled (PID 1740).
    const TEMPLATED: &str = recording!("h200/templated/coredump.log");
    /// Runs with the coredump variables set that printed no coredump line.
    const CLEAN: &str = recording!("h200/clean/coredump.log");
    const INLINED: &str = recording!("h200/inlined/coredump.log");
    /// A two-GPU torchrun job without the coredump variables: `[rank1]:` lines, the NCCL
    /// watchdog's report, torchrun's. Recorded by `debug-ima` (tests/fixtures/bundles).
    const DIST: &str = recording!("bundles/dist_fault-full/rungs/01-baseline/stderr.log");

    /// The first `n` lines of `text`, each with its newline.
    fn head(text: &str, n: usize) -> String {
        text.split_inclusive('\n').take(n).collect()
    }

    /// `text` up to and including the first line that contains `pat`.
    fn up_to(text: &str, pat: &str) -> String {
        let mut out = String::new();
        for l in text.split_inclusive('\n') {
            out.push_str(l);
            if l.contains(pat) {
                break;
            }
        }
        out
    }

    /// This parser's notes (not the scanner's `no output of a known tool (..., coredump,
    /// ...) was recognised`).
    fn coredump_notes(ev: &Evidence) -> Vec<&String> {
        ev.notes
            .iter()
            .filter(|n| n.contains("coredump") && !n.starts_with(super::super::scan::NOT_RECOGNISED))
            .collect()
    }

    /// The faults this parser found (the scanner also runs the host parser, which reads
    /// PyTorch's assert line).
    fn dump_faults(ev: &Evidence) -> Vec<&Fault> {
        ev.faults.iter().filter(|f| f.tool == Some(Tool::Coredump)).collect()
    }

    #[test]
    fn warp_exited_before_the_dump() {
        let ev = scan_str(OOB_WRITE, "oob_write/coredump.log");
        assert!(ev.tools.contains(&Tool::Coredump));
        assert_eq!(ev.faults.len(), 1);
        let f = &ev.faults[0];
        assert_eq!(f.tool, Some(Tool::Coredump));
        assert_eq!(f.error, Some(ErrorClass::IllegalAddress));
        assert_eq!((f.device, f.sm, f.warp, f.lane), (Some(0), Some(0), None, None));
        assert_eq!(f.pc, Some(0x7fd8177a0110));
        assert_eq!(f.detail.as_deref(), Some(WARP_EXITED));
        assert_eq!(f.kernel, None);
        assert!(f.frames.is_empty());
        assert_eq!(f.pid, Some(851));
        assert_eq!(f.count, 1);
        assert_eq!(
            ev.coredumps,
            vec![CoredumpFile {
                path: "/tmp/ima-record/cores/oob_write/core_vm.851.1796031885".into(),
                pid: Some(851)
            }]
        );
        assert!(coredump_notes(&ev).is_empty(), "{:?}", ev.notes);
    }

    #[test]
    fn device_assert_with_stack() {
        let ev = scan_str(TORCH_ASSERT, "torch_assert/coredump.log");
        let faults = dump_faults(&ev);
        assert_eq!(faults.len(), 1);
        let f = faults[0];
        assert_eq!(f.error, Some(ErrorClass::DeviceAssert));
        assert_eq!((f.device, f.sm, f.warp), (Some(0), Some(124), Some(1)));
        // `lane masks: active 0x00000020`: one lane, lane 5 (cuda-gdb's focus agrees:
        // torch_assert/cudagdb-core-1.log).
        assert_eq!(f.lane, Some(5));
        assert_eq!(f.pc, Some(0x7f4c4f7a9280));
        let mangled = "_ZN2at6native39_GLOBAL__N__5cd812b1_7_Loss_cu_5b0651e138nll_loss_forward_reduce_cuda_kernel_2dIfflEEvPT_S4_PKS3_PKT1_S6_bllll";
        assert_eq!(f.mangled.as_deref(), Some(mangled));
        assert_eq!(
            f.kernel.as_deref(),
            Some(
                "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)"
            )
        );
        assert_eq!(f.frames.len(), 1);
        assert_eq!(f.frames[0].function, f.kernel);
        assert_eq!(f.pid, Some(2899));
        assert_eq!(ev.coredumps[0].path, "/tmp/ima-record/cores/torch_assert/core_vm.2899.1796031946");
        assert_eq!(f.detail, None);
    }

    #[test]
    fn child_process_dump() {
        let ev = scan_str(TRITON_WORKER, "triton_worker/coredump.log");
        assert_eq!(ev.faults.len(), 1);
        let f = &ev.faults[0];
        assert_eq!(f.error, Some(ErrorClass::IllegalAddress));
        // Triton names its kernels unmangled.
        assert_eq!(f.kernel.as_deref(), Some("gather_kv_kernel"));
        assert_eq!(f.mangled, None);
        // `lane masks: active 0xFFFFFFFF`: every lane, so no one lane.
        assert_eq!((f.sm, f.warp, f.lane), (Some(84), Some(0), None));
        assert_eq!(f.pc, Some(0x7f170f7a5400));
        assert_eq!(f.pid, Some(4554));
        assert_eq!(ev.coredumps[0].pid, Some(4554));
    }

    #[test]
    fn unmangled_kernel_name_of_a_debug_build() {
        let ev = scan_str(OOB_WRITE_G, "oob_write_G/coredump.log");
        let f = &ev.faults[0];
        assert_eq!(f.kernel.as_deref(), Some("scale_write"));
        assert_eq!(f.mangled, None);
        assert_eq!((f.sm, f.warp, f.lane), (Some(0), Some(4), None));
        assert_eq!(f.pc, Some(0x7f857b7a0370));
        assert_eq!(f.pid, Some(2419));
    }

    #[test]
    fn template_kernel_is_demangled() {
        let ev = scan_str(TEMPLATED, "templated/coredump.log");
        let f = &ev.faults[0];
        let mangled = "_Z8axpy_vecIfLi4EEvPT_PKS0_S0_ix";
        assert_eq!(f.mangled.as_deref(), Some(mangled));
        assert_eq!(f.kernel, Some(names::pretty(mangled)));
        assert!(f.kernel.as_deref().unwrap().starts_with("void axpy_vec<float, 4>("), "{:?}", f.kernel);
        assert_eq!((f.device, f.sm, f.warp), (Some(0), Some(0), Some(2)));
        assert_eq!(f.pc, Some(0x7fd74b7a0190));
        assert_eq!(f.pid, Some(1740));
    }

    #[test]
    fn several_processes_in_one_log_stay_apart() {
        let text = format!("{TORCH_ASSERT}{OOB_WRITE}{TRITON_WORKER}");
        let ev = scan_str(&text, "many.log");
        let got: Vec<_> = dump_faults(&ev).iter().map(|f| (f.pid, f.error.clone(), f.warp)).collect();
        assert_eq!(
            got,
            vec![
                (Some(2899), Some(ErrorClass::DeviceAssert), Some(1)),
                (Some(851), Some(ErrorClass::IllegalAddress), None),
                (Some(4554), Some(ErrorClass::IllegalAddress), Some(0)),
            ]
        );
        let pids: Vec<_> = ev.coredumps.iter().map(|c| c.pid).collect();
        assert_eq!(pids, vec![Some(2899), Some(851), Some(4554)]);
        assert!(coredump_notes(&ev).is_empty(), "{:?}", ev.notes);
    }

    #[test]
    fn killed_before_writing_is_noted() {
        // The process died while SMs were still being collected (before the exception was
        // detected at SM 126).
        let ev = scan_str(&head(OOB_READ, 10), "killed.log");
        assert!(ev.faults.is_empty());
        assert!(ev.coredumps.is_empty());
        let notes = coredump_notes(&ev);
        assert_eq!(notes.len(), 1, "{:?}", ev.notes);
        assert!(notes[0].contains("never reached `Writing ELF file`"), "{}", notes[0]);
        assert!(notes[0].contains("SM 9/132"), "{}", notes[0]);
        assert!(notes[0].contains("line 1"), "{}", notes[0]);
    }

    #[test]
    fn killed_while_writing_is_noted() {
        let ev = scan_str(&up_to(OOB_WRITE, "Writing done"), "killed.log");
        assert_eq!(ev.faults.len(), 1);
        assert_eq!(ev.faults[0].pid, Some(851));
        assert_eq!(ev.coredumps.len(), 1);
        let notes = coredump_notes(&ev);
        assert_eq!(notes.len(), 1, "{:?}", ev.notes);
        assert!(notes[0].contains("never reached `All done`"), "{}", notes[0]);
        assert!(notes[0].contains("/tmp/ima-record/cores/oob_write/core_vm.851.1796031885"), "{}", notes[0]);
    }

    #[test]
    fn a_run_without_coredump_lines_finds_nothing() {
        for (text, name) in [
            (CLEAN, "clean/coredump.log"),
            (INLINED, "inlined/coredump.log"),
            (DIST, "dist_fault-full/rungs/01-baseline/stderr.log"),
        ] {
            let ev = scan_str(text, name);
            assert!(!ev.tools.contains(&Tool::Coredump), "{name}");
            assert!(ev.faults.iter().all(|f| f.tool != Some(Tool::Coredump)), "{name}");
            assert!(ev.coredumps.is_empty(), "{name}");
            assert!(coredump_notes(&ev).is_empty(), "{name}: {:?}", ev.notes);
        }
    }

    #[test]
    fn sm_progress_lines() {
        // Lines of oob_write/coredump.log.
        assert_eq!(
            sm_progress("[09:44:46.334769] coredump: SM 1/132 has finished state collection"),
            Some((1, 132))
        );
        assert_eq!(
            sm_progress("[09:44:46.382867] coredump: SM 132/132 has finished state collection"),
            Some((132, 132))
        );
        assert_eq!(sm_progress("SM 57/132 has finished state collection"), Some((57, 132)));
        assert_eq!(sm_progress("[09:44:46.382876] coredump: Device 1/1 has finished state collection"), None);
        assert_eq!(sm_progress("[09:44:46.334762] coredump:   - SM: 0"), None);
        assert_eq!(sm_progress("launched scale_write"), None);
        assert_eq!(sm_progress(""), None);
        let all: Vec<_> = OOB_WRITE.lines().filter_map(sm_progress).collect();
        assert_eq!(all.len(), 132);
        assert_eq!(all.first(), Some(&(1, 132)));
        assert_eq!(all.last(), Some(&(132, 132)));
    }

    #[test]
    fn pids_from_dump_names() {
        // The name record.sh gives (`CUDA_COREDUMP_FILE=.../core_%h.%p.%t`).
        assert_eq!(pid_from_dump_path("/tmp/ima-record/cores/oob_write/core_vm.851.1796031885"), Some(851));
        // Host names may have dots: the PID is the second-to-last field.
        assert_eq!(pid_from_dump_path("/d/cuda_coredump_gpu7.example.org.746.1796031885"), Some(746));
        assert_eq!(pid_from_dump_path("core.4242.17"), Some(4242));
        assert_eq!(pid_from_dump_path("cores/cs_core"), None);
        assert_eq!(pid_from_dump_path("core-r1-125335.nvcudmp"), None);
        assert_eq!(pid_from_dump_path(".1.2"), None);
        assert_eq!(pid_from_dump_path("x.1.y"), None);
        assert_eq!(pid_from_dump_path(""), None);
    }

    #[test]
    fn excerpts_cut_at_every_char_boundary_never_panic() {
        // The parser alone (scan_str allocates a 1 MiB buffer per call).
        fn parse(text: &str) -> Evidence {
            let mut p = CoredumpParser::default();
            for (n, line) in text.lines().enumerate() {
                let (line, rank) = super::super::strip_rank(line);
                p.line(line, LineCtx { lineno: n as u64 + 1, rank });
            }
            let mut ev = Evidence::default();
            p.finish(&mut ev);
            ev
        }
        // One whole log; of the others, the lines around the exception (a whole log costs
        // as much as the first: every cut is parsed from the start).
        let line_of = |text: &str, pat: &str| {
            let at = text.find(pat).unwrap();
            text[..at].rfind('\n').map_or(0, |n| n + 1)
        };
        let excerpts = [
            OOB_WRITE,
            &TORCH_ASSERT[line_of(TORCH_ASSERT, "coredump: SM 124/132 ")..],
            &TRITON_WORKER[line_of(TRITON_WORKER, "coredump: SM 84/132 ")..],
            &OOB_WRITE_G[..line_of(OOB_WRITE_G, "coredump: SM 1/132 ")],
            &TEMPLATED[..line_of(TEMPLATED, "coredump: SM 1/132 ")],
            &DIST[..line_of(DIST, "Exception raised from query")],
        ];
        for text in excerpts {
            let ev = scan_str(text, "x.log");
            assert_eq!(parse(text).faults.iter().collect::<Vec<_>>(), dump_faults(&ev));
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
            let _ = sm_progress(&s);
            let _ = pid_from_dump_path(&s);
        }

        #[test]
        fn coredump_like_lines_never_panic(
            lines in prop::collection::vec(
                "(\\[[0-9:.]{0,16}\\] )?coredump:( {0,3}- )?(SM|Device|Warp|PC|Lane|#[0-9]\t0x[0-9a-f]{0,8}\t_Z|Detected an exception of type |Writing ELF file to |All done|Starting GPU coredump generation|Stack trace \\(lane masks: active )[ -~\t]{0,40}",
                0..40,
            )
        ) {
            let text = lines.join("\n");
            let ev = scan_str(&text, "gen.log");
            prop_assert!(ev.faults.len() <= MAX_FAULTS);
        }

        #[test]
        fn shuffled_real_lines_never_panic(picks in prop::collection::vec(0usize..400, 0..80)) {
            let all: Vec<&str> = [OOB_WRITE, TORCH_ASSERT, TRITON_WORKER, TEMPLATED].iter().flat_map(|t| t.lines()).collect();
            let text: Vec<&str> = picks.iter().map(|&i| all[i % all.len()]).collect();
            let _ = scan_str(&text.join("\n"), "mix.log");
        }
    }

    // Multi-byte, invalid and 5,000-character kernel names in the progress stream's stack trace
    // (`#0\t0x...\t_Z8axpy_vec...`): no panic.
    crate::findings::fuzz::multi_byte_kernel_names_never_panic!("coredump.log");
}

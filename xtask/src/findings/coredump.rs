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
    let (line, _) = super::scan::strip_rank(line);
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
    use super::super::{ErrorClass, Evidence, Tool};
    use super::*;
    use proptest::prelude::*;

    /// `42_far_coredump.log`, verbatim.
    const FAR_42: &str = r#"$ env CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_COREDUMP_SHOW_PROGRESS=1 CUDA_COREDUMP_GENERATION_FLAGS=skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,skip_local_memory,skip_constbank_memory CUDA_COREDUMP_FILE=/tmp/cd/cuda_coredump_%h.%p.%t ./f_li
launched both kernels
[00:45:24.185900] coredump: Starting GPU coredump generation
[00:45:24.186041] coredump: SM 1/132 has finished state collection
[00:45:24.186050] coredump: SM 2/132 has finished state collection
[00:45:24.186054] coredump: SM 3/132 has finished state collection
[00:45:24.186057] coredump: SM 4/132 has finished state collection
[00:45:24.186061] coredump: SM 5/132 has finished state collection
[00:45:24.186064] coredump: SM 6/132 has finished state collection
[00:45:24.186068] coredump: SM 7/132 has finished state collection
[00:45:24.186090] coredump: SM 8/132 has finished state collection
[00:45:24.186094] coredump: SM 9/132 has finished state collection
[00:45:24.186098] coredump: SM 10/132 has finished state collection
[00:45:24.186102] coredump: SM 11/132 has finished state collection
[00:45:24.186105] coredump: SM 12/132 has finished state collection
[00:45:24.186109] coredump: SM 13/132 has finished state collection
[00:45:24.186112] coredump: SM 14/132 has finished state collection
[00:45:24.186116] coredump: SM 15/132 has finished state collection
[00:45:24.186119] coredump: SM 16/132 has finished state collection
[00:45:24.186123] coredump: SM 17/132 has finished state collection
[00:45:24.186126] coredump: SM 18/132 has finished state collection
[00:45:24.186130] coredump: SM 19/132 has finished state collection
[00:45:24.186133] coredump: SM 20/132 has finished state collection
[00:45:24.186137] coredump: SM 21/132 has finished state collection
[00:45:24.186141] coredump: SM 22/132 has finished state collection
[00:45:24.186144] coredump: SM 23/132 has finished state collection
[00:45:24.186148] coredump: SM 24/132 has finished state collection
[00:45:24.186152] coredump: SM 25/132 has finished state collection
[00:45:24.186155] coredump: SM 26/132 has finished state collection
[00:45:24.186159] coredump: SM 27/132 has finished state collection
[00:45:24.186162] coredump: SM 28/132 has finished state collection
[00:45:24.186166] coredump: SM 29/132 has finished state collection
[00:45:24.186169] coredump: SM 30/132 has finished state collection
[00:45:24.186173] coredump: SM 31/132 has finished state collection
[00:45:24.186176] coredump: SM 32/132 has finished state collection
[00:45:24.186180] coredump: SM 33/132 has finished state collection
[00:45:24.186183] coredump: SM 34/132 has finished state collection
[00:45:24.186186] coredump: SM 35/132 has finished state collection
[00:45:24.186190] coredump: SM 36/132 has finished state collection
[00:45:24.186193] coredump: SM 37/132 has finished state collection
[00:45:24.186197] coredump: SM 38/132 has finished state collection
[00:45:24.186200] coredump: SM 39/132 has finished state collection
[00:45:24.186203] coredump: SM 40/132 has finished state collection
[00:45:24.186206] coredump: SM 41/132 has finished state collection
[00:45:24.186209] coredump: SM 42/132 has finished state collection
[00:45:24.186212] coredump: SM 43/132 has finished state collection
[00:45:24.186216] coredump: SM 44/132 has finished state collection
[00:45:24.186219] coredump: SM 45/132 has finished state collection
[00:45:24.186223] coredump: SM 46/132 has finished state collection
[00:45:24.186226] coredump: SM 47/132 has finished state collection
[00:45:24.186229] coredump: SM 48/132 has finished state collection
[00:45:24.186233] coredump: SM 49/132 has finished state collection
[00:45:24.186236] coredump: SM 50/132 has finished state collection
[00:45:24.186239] coredump: SM 51/132 has finished state collection
[00:45:24.186243] coredump: SM 52/132 has finished state collection
[00:45:24.186246] coredump: SM 53/132 has finished state collection
[00:45:24.186249] coredump: SM 54/132 has finished state collection
[00:45:24.186252] coredump: SM 55/132 has finished state collection
[00:45:24.186256] coredump: SM 56/132 has finished state collection
[00:45:24.186277] coredump: SM 57/132 has finished state collection
[00:45:24.186280] coredump: SM 58/132 has finished state collection
[00:45:24.186284] coredump: SM 59/132 has finished state collection
[00:45:24.186287] coredump: SM 60/132 has finished state collection
[00:45:24.186290] coredump: SM 61/132 has finished state collection
[00:45:24.186294] coredump: SM 62/132 has finished state collection
[00:45:24.186297] coredump: SM 63/132 has finished state collection
[00:45:24.186300] coredump: SM 64/132 has finished state collection
[00:45:24.186304] coredump: SM 65/132 has finished state collection
[00:45:24.186307] coredump: SM 66/132 has finished state collection
[00:45:24.186311] coredump: SM 67/132 has finished state collection
[00:45:24.186314] coredump: SM 68/132 has finished state collection
[00:45:24.186317] coredump: SM 69/132 has finished state collection
[00:45:24.186321] coredump: SM 70/132 has finished state collection
[00:45:24.186324] coredump: SM 71/132 has finished state collection
[00:45:24.186328] coredump: SM 72/132 has finished state collection
[00:45:24.186331] coredump: SM 73/132 has finished state collection
[00:45:24.186335] coredump: SM 74/132 has finished state collection
[00:45:24.186338] coredump: SM 75/132 has finished state collection
[00:45:24.186341] coredump: SM 76/132 has finished state collection
[00:45:24.186345] coredump: SM 77/132 has finished state collection
[00:45:24.186348] coredump: SM 78/132 has finished state collection
[00:45:24.186351] coredump: SM 79/132 has finished state collection
[00:45:24.186355] coredump: SM 80/132 has finished state collection
[00:45:24.186358] coredump: SM 81/132 has finished state collection
[00:45:24.186362] coredump: SM 82/132 has finished state collection
[00:45:24.186365] coredump: SM 83/132 has finished state collection
[00:45:24.186369] coredump: SM 84/132 has finished state collection
[00:45:24.186372] coredump: SM 85/132 has finished state collection
[00:45:24.186376] coredump: SM 86/132 has finished state collection
[00:45:24.186379] coredump: SM 87/132 has finished state collection
[00:45:24.186382] coredump: SM 88/132 has finished state collection
[00:45:24.186386] coredump: SM 89/132 has finished state collection
[00:45:24.186389] coredump: SM 90/132 has finished state collection
[00:45:24.186393] coredump: SM 91/132 has finished state collection
[00:45:24.186396] coredump: SM 92/132 has finished state collection
[00:45:24.186400] coredump: SM 93/132 has finished state collection
[00:45:24.186403] coredump: SM 94/132 has finished state collection
[00:45:24.186406] coredump: SM 95/132 has finished state collection
[00:45:24.186410] coredump: SM 96/132 has finished state collection
[00:45:24.186413] coredump: SM 97/132 has finished state collection
[00:45:24.186417] coredump: SM 98/132 has finished state collection
[00:45:24.186420] coredump: SM 99/132 has finished state collection
[00:45:24.186424] coredump: SM 100/132 has finished state collection
[00:45:24.186427] coredump: SM 101/132 has finished state collection
[00:45:24.186431] coredump: SM 102/132 has finished state collection
[00:45:24.186434] coredump: SM 103/132 has finished state collection
[00:45:24.186438] coredump: SM 104/132 has finished state collection
[00:45:24.186441] coredump: SM 105/132 has finished state collection
[00:45:24.186444] coredump: SM 106/132 has finished state collection
[00:45:24.186448] coredump: SM 107/132 has finished state collection
[00:45:24.186451] coredump: SM 108/132 has finished state collection
[00:45:24.186454] coredump: SM 109/132 has finished state collection
[00:45:24.186458] coredump: SM 110/132 has finished state collection
[00:45:24.186461] coredump: SM 111/132 has finished state collection
[00:45:24.186465] coredump: SM 112/132 has finished state collection
[00:45:24.186468] coredump: SM 113/132 has finished state collection
[00:45:24.186472] coredump: SM 114/132 has finished state collection
[00:45:24.186475] coredump: SM 115/132 has finished state collection
[00:45:24.186479] coredump: SM 116/132 has finished state collection
[00:45:24.186485] coredump: SM 117/132 has finished state collection
[00:45:24.186488] coredump: SM 118/132 has finished state collection
[00:45:24.186492] coredump: SM 119/132 has finished state collection
[00:45:24.186495] coredump: SM 120/132 has finished state collection
[00:45:24.186499] coredump: SM 121/132 has finished state collection
[00:45:24.186502] coredump: SM 122/132 has finished state collection
[00:45:24.186506] coredump: SM 123/132 has finished state collection
[00:45:24.186509] coredump: SM 124/132 has finished state collection
[00:45:24.191207] coredump: Detected an exception of type CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS (14)
[00:45:24.191234] coredump:   - Device: 0
[00:45:24.191238] coredump:   - SM: 124
[00:45:24.191241] coredump:   - Warp: exception was detected after the warp has exited
[00:45:24.191245] coredump:   - PC 0x7f9a577a00f0
[00:45:24.191248] coredump: SM 125/132 has finished state collection
[00:45:24.191253] coredump: SM 126/132 has finished state collection
[00:45:24.195731] coredump: SM 127/132 has finished state collection
[00:45:24.195759] coredump: SM 128/132 has finished state collection
[00:45:24.200240] coredump: SM 129/132 has finished state collection
[00:45:24.200269] coredump: SM 130/132 has finished state collection
[00:45:24.204857] coredump: SM 131/132 has finished state collection
[00:45:24.204887] coredump: SM 132/132 has finished state collection
[00:45:24.204900] coredump: Device 1/1 has finished state collection
[00:45:24.205006] coredump: Calculating ELF file layout
[00:45:24.206309] coredump: ELF file layout calculated
[00:45:24.206326] coredump: Writing ELF file to /tmp/cd/cuda_coredump_vm.1720.1795999523
[00:45:24.206355] coredump: Current working directory is /src/probe
[00:45:24.206450] coredump: Writing out global memory (0 bytes)
[00:45:24.206454] coredump: Writing out device table
[00:45:24.206816] coredump: Writing out metadata
[00:45:24.206823] coredump: Finalizing
[00:45:24.206964] coredump: Writing done
[00:45:24.206970] coredump: All done (took 00s)
[exit 134, 512 ms]
total 668
drwxr-xr-x 2 root root   4096 Nov 30 00:45 .
drwxrwxrwt 4 root root   4096 Nov 30 00:45 ..
-rw-r--r-- 1 root root 674066 Nov 30 00:45 cuda_coredump_vm.1720.1795999523
"#;

    /// `35_assert_coredump.log, from `SM 124/132` to the exit line`, verbatim.
    const ASSERT_35: &str = r#"[00:43:47.679431] coredump: SM 124/132 has finished state collection
[00:43:47.687070] coredump: Detected an exception of type CUDBG_EXCEPTION_WARP_ASSERT (12)
[00:43:47.687115] coredump:   - Device: 0
[00:43:47.687119] coredump:   - SM: 124
[00:43:47.687122] coredump:   - Warp: 2
[00:43:47.687124] coredump:   - PC 0x7f22377a4380
[00:43:47.687149] coredump: Stack trace (lane masks: active 0x00000008, valid 0x00000008):
[00:43:47.687152] coredump:   #0	0x7f22377a4380	_ZN2at6native39_GLOBAL__N__5cd812b1_7_Loss_cu_5b0651e138nll_loss_forward_reduce_cuda_kernel_2dIfflEEvPT_S4_PKS3_PKT1_S6_bllll
[00:43:47.687502] coredump: SM 125/132 has finished state collection
[00:43:47.687511] coredump: SM 126/132 has finished state collection
[00:43:47.687514] coredump: SM 127/132 has finished state collection
[00:43:47.687517] coredump: SM 128/132 has finished state collection
[00:43:47.687520] coredump: SM 129/132 has finished state collection
[00:43:47.687523] coredump: SM 130/132 has finished state collection
[00:43:47.687526] coredump: SM 131/132 has finished state collection
[00:43:47.687529] coredump: SM 132/132 has finished state collection
[00:43:47.687536] coredump: Device 1/1 has finished state collection
[00:43:47.687620] coredump: Calculating ELF file layout
[00:43:47.687690] coredump: ELF file layout calculated
[00:43:47.687693] coredump: Writing ELF file to /tmp/cd/cuda_coredump_vm.1293.1795999427
[00:43:47.687720] coredump: Current working directory is /src/probe
[00:43:47.687800] coredump: Writing out global memory (0 bytes)
[00:43:47.687803] coredump: Writing out device table
[00:43:47.694128] coredump: Writing out metadata
[00:43:47.694149] coredump: Finalizing
[00:43:47.694173] coredump: Writing done
[00:43:47.694177] coredump: All done (took 00s)
[exit 134, s]
"#;

    /// `37_child_coredump.log, from `SM 124/132` to the exit line`, verbatim.
    const CHILD_37: &str = r#"[00:43:55.307163] coredump: SM 124/132 has finished state collection
[00:43:55.321582] coredump: Detected an exception of type CUDBG_EXCEPTION_WARP_ASSERT (12)
[00:43:55.321624] coredump:   - Device: 0
[00:43:55.321627] coredump:   - SM: 124
[00:43:55.321629] coredump:   - Warp: 0
[00:43:55.321631] coredump:   - PC 0x7f2e6f7b5380
[00:43:55.321654] coredump: Stack trace (lane masks: active 0x00000001, valid 0x00000001):
[00:43:55.321656] coredump:   #0	0x7f2e6f7b5380	_ZN2at6native25_assert_async_cuda_kernelIbEEvPKT_NS0_3MsgE
[00:43:55.322491] coredump: SM 125/132 has finished state collection
[00:43:55.322501] coredump: SM 126/132 has finished state collection
[00:43:55.322505] coredump: SM 127/132 has finished state collection
[00:43:55.322508] coredump: SM 128/132 has finished state collection
[00:43:55.322510] coredump: SM 129/132 has finished state collection
[00:43:55.322513] coredump: SM 130/132 has finished state collection
[00:43:55.322516] coredump: SM 131/132 has finished state collection
[00:43:55.322518] coredump: SM 132/132 has finished state collection
[00:43:55.322524] coredump: Device 1/1 has finished state collection
[00:43:55.322593] coredump: Calculating ELF file layout
[00:43:55.322656] coredump: ELF file layout calculated
[00:43:55.322658] coredump: Writing ELF file to /tmp/cd/cuda_coredump_vm.1394.1795999434
[00:43:55.322679] coredump: Current working directory is /src/probe
[00:43:55.322736] coredump: Writing out global memory (0 bytes)
[00:43:55.322738] coredump: Writing out device table
[00:43:55.334626] coredump: Writing out metadata
[00:43:55.334658] coredump: Finalizing
[00:43:55.334687] coredump: Writing done
[00:43:55.334691] coredump: All done (took 00s)
child exit code -6
[exit 0, s]
"#;

    /// `44_far_coredump_G.log, from `SM 124/132` to the exit line`, verbatim.
    const FAR_G_44: &str = r#"[00:45:25.035208] coredump: SM 124/132 has finished state collection
[00:45:25.038299] coredump: Detected an exception of type CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS (14)
[00:45:25.038324] coredump:   - Device: 0
[00:45:25.038327] coredump:   - SM: 124
[00:45:25.038332] coredump:   - Warp: 4
[00:45:25.038334] coredump:   - PC 0x7f6f3b7a02c0
[00:45:25.038649] coredump: Stack trace (lane masks: active 0xFFFFFFFF, valid 0xFFFFFFFF):
[00:45:25.038655] coredump:   #0	0x7f6f3b7a02f0	scatter_far
[00:45:25.041312] coredump: SM 125/132 has finished state collection
[00:45:25.041332] coredump: SM 126/132 has finished state collection
[00:45:25.046765] coredump: SM 127/132 has finished state collection
[00:45:25.046787] coredump: SM 128/132 has finished state collection
[00:45:25.052205] coredump: SM 129/132 has finished state collection
[00:45:25.052225] coredump: SM 130/132 has finished state collection
[00:45:25.057660] coredump: SM 131/132 has finished state collection
[00:45:25.057679] coredump: SM 132/132 has finished state collection
[00:45:25.057689] coredump: Device 1/1 has finished state collection
[00:45:25.057779] coredump: Calculating ELF file layout
[00:45:25.059071] coredump: ELF file layout calculated
[00:45:25.059084] coredump: Writing ELF file to /tmp/cd/cuda_coredump_vm.1783.1795999524
[00:45:25.059116] coredump: Current working directory is /src/probe
[00:45:25.059216] coredump: Writing out global memory (0 bytes)
[00:45:25.059220] coredump: Writing out device table
[00:45:25.059656] coredump: Writing out metadata
[00:45:25.059664] coredump: Finalizing
[00:45:25.059850] coredump: Writing done
[00:45:25.059856] coredump: All done (took 00s)
[exit 134, 543 ms]
"#;

    /// `62_graph_coredump.log`, verbatim.
    const GRAPH_62: &str = r#"$ env CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_COREDUMP_SHOW_PROGRESS=1 CUDA_COREDUMP_GENERATION_FLAGS=skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,skip_local_memory,skip_constbank_memory CUDA_COREDUMP_FILE=/tmp/cd/cuda_coredump_%h.%p.%t CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION=0 python3 graph_ima.py
replayed
[00:45:52.023274] coredump: Starting GPU coredump generation
[00:45:52.030085] coredump: Detected an exception of type CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS (14)
[00:45:52.030121] coredump:   - Device: 0
[00:45:52.030124] coredump:   - SM: 0
[00:45:52.030126] coredump:   - Warp: 10
[00:45:52.030128] coredump:   - PC 0x7ff49f7a9430
[00:45:52.031685] coredump: Stack trace (lane masks: active 0xFFFFFFFF, valid 0xFFFFFFFF):
[00:45:52.031718] coredump:   #0	0x7ff49f7a9470	_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIhEESt5arrayIPcLm1EEEEviT0_T1_
[00:45:52.058339] coredump: SM 1/132 has finished state collection
[00:45:52.089809] coredump: SM 2/132 has finished state collection
[00:45:52.121023] coredump: SM 3/132 has finished state collection
[00:45:52.153314] coredump: SM 4/132 has finished state collection
[00:45:52.184893] coredump: SM 5/132 has finished state collection
[00:45:52.217421] coredump: SM 6/132 has finished state collection
[00:45:52.248871] coredump: SM 7/132 has finished state collection
[00:45:52.280073] coredump: SM 8/132 has finished state collection
[00:45:52.311326] coredump: SM 9/132 has finished state collection
[00:45:52.342567] coredump: SM 10/132 has finished state collection
[00:45:52.374302] coredump: SM 11/132 has finished state collection
[00:45:52.405474] coredump: SM 12/132 has finished state collection
[00:45:52.437136] coredump: SM 13/132 has finished state collection
[00:45:52.469469] coredump: SM 14/132 has finished state collection
[00:45:52.501691] coredump: SM 15/132 has finished state collection
[00:45:52.533267] coredump: SM 16/132 has finished state collection
[00:45:52.564401] coredump: SM 17/132 has finished state collection
[00:45:52.597398] coredump: SM 18/132 has finished state collection
[00:45:52.630562] coredump: SM 19/132 has finished state collection
[00:45:52.662176] coredump: SM 20/132 has finished state collection
[00:45:52.695048] coredump: SM 21/132 has finished state collection
[00:45:52.729012] coredump: SM 22/132 has finished state collection
[00:45:52.769222] coredump: SM 23/132 has finished state collection
[00:45:52.809113] coredump: SM 24/132 has finished state collection
[00:45:52.849354] coredump: SM 25/132 has finished state collection
[00:45:52.888227] coredump: SM 26/132 has finished state collection
[00:45:52.927550] coredump: SM 27/132 has finished state collection
[00:45:52.967613] coredump: SM 28/132 has finished state collection
[00:45:53.008172] coredump: SM 29/132 has finished state collection
[00:45:53.047599] coredump: SM 30/132 has finished state collection
[00:45:53.085646] coredump: SM 31/132 has finished state collection
[00:45:53.125136] coredump: SM 32/132 has finished state collection
[00:45:53.170283] coredump: SM 33/132 has finished state collection
[00:45:53.211219] coredump: SM 34/132 has finished state collection
[00:45:53.250262] coredump: SM 35/132 has finished state collection
[00:45:53.288779] coredump: SM 36/132 has finished state collection
[00:45:53.327733] coredump: SM 37/132 has finished state collection
[00:45:53.366510] coredump: SM 38/132 has finished state collection
[00:45:53.405425] coredump: SM 39/132 has finished state collection
[00:45:53.444670] coredump: SM 40/132 has finished state collection
[00:45:53.482146] coredump: SM 41/132 has finished state collection
[00:45:53.521034] coredump: SM 42/132 has finished state collection
[00:45:53.559821] coredump: SM 43/132 has finished state collection
[00:45:53.598740] coredump: SM 44/132 has finished state collection
[00:45:53.637608] coredump: SM 45/132 has finished state collection
[00:45:53.677600] coredump: SM 46/132 has finished state collection
[00:45:53.717701] coredump: SM 47/132 has finished state collection
[00:45:53.757521] coredump: SM 48/132 has finished state collection
[00:45:53.796387] coredump: SM 49/132 has finished state collection
[00:45:53.834418] coredump: SM 50/132 has finished state collection
[00:45:53.874208] coredump: SM 51/132 has finished state collection
[00:45:53.914060] coredump: SM 52/132 has finished state collection
[00:45:53.954577] coredump: SM 53/132 has finished state collection
[00:45:53.995351] coredump: SM 54/132 has finished state collection
[00:45:54.035747] coredump: SM 55/132 has finished state collection
[00:45:54.075807] coredump: SM 56/132 has finished state collection
[00:45:54.115336] coredump: SM 57/132 has finished state collection
[00:45:54.154982] coredump: SM 58/132 has finished state collection
[00:45:54.195229] coredump: SM 59/132 has finished state collection
[00:45:54.235317] coredump: SM 60/132 has finished state collection
[00:45:54.275829] coredump: SM 61/132 has finished state collection
[00:45:54.315630] coredump: SM 62/132 has finished state collection
[00:45:54.356321] coredump: SM 63/132 has finished state collection
[00:45:54.395195] coredump: SM 64/132 has finished state collection
[00:45:54.432439] coredump: SM 65/132 has finished state collection
[00:45:54.470697] coredump: SM 66/132 has finished state collection
[00:45:54.508994] coredump: SM 67/132 has finished state collection
[00:45:54.545722] coredump: SM 68/132 has finished state collection
[00:45:54.583177] coredump: SM 69/132 has finished state collection
[00:45:54.621379] coredump: SM 70/132 has finished state collection
[00:45:54.660146] coredump: SM 71/132 has finished state collection
[00:45:54.698993] coredump: SM 72/132 has finished state collection
[00:45:54.738193] coredump: SM 73/132 has finished state collection
[00:45:54.778857] coredump: SM 74/132 has finished state collection
[00:45:54.819660] coredump: SM 75/132 has finished state collection
[00:45:54.859319] coredump: SM 76/132 has finished state collection
[00:45:54.897923] coredump: SM 77/132 has finished state collection
[00:45:54.938845] coredump: SM 78/132 has finished state collection
[00:45:54.979553] coredump: SM 79/132 has finished state collection
[00:45:55.021507] coredump: SM 80/132 has finished state collection
[00:45:55.063024] coredump: SM 81/132 has finished state collection
[00:45:55.104184] coredump: SM 82/132 has finished state collection
[00:45:55.145448] coredump: SM 83/132 has finished state collection
[00:45:55.185619] coredump: SM 84/132 has finished state collection
[00:45:55.227041] coredump: SM 85/132 has finished state collection
[00:45:55.267976] coredump: SM 86/132 has finished state collection
[00:45:55.307909] coredump: SM 87/132 has finished state collection
[00:45:55.349006] coredump: SM 88/132 has finished state collection
[00:45:55.389758] coredump: SM 89/132 has finished state collection
[00:45:55.428839] coredump: SM 90/132 has finished state collection
[00:45:55.467508] coredump: SM 91/132 has finished state collection
[00:45:55.507940] coredump: SM 92/132 has finished state collection
[00:45:55.545983] coredump: SM 93/132 has finished state collection
[00:45:55.583094] coredump: SM 94/132 has finished state collection
[00:45:55.618453] coredump: SM 95/132 has finished state collection
[00:45:55.656651] coredump: SM 96/132 has finished state collection
[00:45:55.695076] coredump: SM 97/132 has finished state collection
[00:45:55.733944] coredump: SM 98/132 has finished state collection
[00:45:55.772470] coredump: SM 99/132 has finished state collection
[00:45:55.811005] coredump: SM 100/132 has finished state collection
[00:45:55.850010] coredump: SM 101/132 has finished state collection
[00:45:55.889162] coredump: SM 102/132 has finished state collection
[00:45:55.927750] coredump: SM 103/132 has finished state collection
[00:45:55.965803] coredump: SM 104/132 has finished state collection
[00:45:56.005738] coredump: SM 105/132 has finished state collection
[00:45:56.044291] coredump: SM 106/132 has finished state collection
[00:45:56.081847] coredump: SM 107/132 has finished state collection
[00:45:56.119412] coredump: SM 108/132 has finished state collection
[00:45:56.158807] coredump: SM 109/132 has finished state collection
[00:45:56.196977] coredump: SM 110/132 has finished state collection
[00:45:56.234614] coredump: SM 111/132 has finished state collection
[00:45:56.273378] coredump: SM 112/132 has finished state collection
[00:45:56.311838] coredump: SM 113/132 has finished state collection
[00:45:56.349094] coredump: SM 114/132 has finished state collection
[00:45:56.387817] coredump: SM 115/132 has finished state collection
[00:45:56.425797] coredump: SM 116/132 has finished state collection
[00:45:56.463515] coredump: SM 117/132 has finished state collection
[00:45:56.501802] coredump: SM 118/132 has finished state collection
[00:45:56.540369] coredump: SM 119/132 has finished state collection
[00:45:56.577652] coredump: SM 120/132 has finished state collection
[00:45:56.616149] coredump: SM 121/132 has finished state collection
[00:45:56.655048] coredump: SM 122/132 has finished state collection
[00:45:56.692641] coredump: SM 123/132 has finished state collection
[00:45:56.730679] coredump: SM 124/132 has finished state collection
[00:45:56.769728] coredump: SM 125/132 has finished state collection
[00:45:56.807808] coredump: SM 126/132 has finished state collection
[00:45:56.845186] coredump: SM 127/132 has finished state collection
[00:45:56.883827] coredump: SM 128/132 has finished state collection
[00:45:56.922061] coredump: SM 129/132 has finished state collection
[00:45:56.959276] coredump: SM 130/132 has finished state collection
[00:45:56.998446] coredump: SM 131/132 has finished state collection
[00:45:57.036585] coredump: SM 132/132 has finished state collection
[00:45:57.036649] coredump: Device 1/1 has finished state collection
[00:45:57.036751] coredump: Calculating ELF file layout
[00:45:57.511549] coredump: ELF file layout calculated
[00:45:57.511618] coredump: Writing ELF file to /tmp/cd/cuda_coredump_vm.2131.1795999550
[00:45:57.511676] coredump: Current working directory is /src/probe
[00:45:57.511744] coredump: Writing out global memory (0 bytes)
[00:45:57.511748] coredump: Writing out device table
[00:45:57.572849] coredump: Writing out metadata
[00:45:57.572888] coredump: Finalizing
[00:45:57.598310] coredump: Writing done
[00:45:57.602597] coredump: All done (took 05s)
[exit 134, 10497 ms]
total 145068
drwxr-xr-x 2 root root      4096 Nov 30 00:45 .
drwxrwxrwt 6 root root      4096 Nov 30 00:45 ..
-rw-r--r-- 1 root root 148541384 Nov 30 00:45 cuda_coredump_vm.2131.1795999550
"#;

    /// `83_dist_coredump.log, first 12 lines`, verbatim.
    const DIST_83: &str = r#"$ env PYTHONUNBUFFERED=1 CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_COREDUMP_SHOW_PROGRESS=1 CUDA_COREDUMP_GENERATION_FLAGS=skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,skip_local_memory,skip_constbank_memory CUDA_COREDUMP_FILE=/tmp/cd/cuda_coredump_%h.%p.%t python3 -m torch.distributed.run --nproc-per-node 2 dist_ima.py

*****************************************
Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed. 
*****************************************
rank 1 pid 746 first all_reduce ok
rank 0 pid 745 first all_reduce ok
[rank1]:[E1130 01:10:31.351491630 ProcessGroupNCCL.cpp:2119] [PG ID 0 PG GUID 0(default_pg) Rank 1] Process group watchdog thread terminated with exception: CUDA error: unspecified launch failure
Search for `cudaErrorLaunchFailure' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.
"#;

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

    fn coredump_notes(ev: &Evidence) -> Vec<&String> {
        ev.notes.iter().filter(|n| n.contains("coredump")).collect()
    }

    #[test]
    fn warp_exited_before_the_dump() {
        let ev = scan_str(FAR_42, "42.log");
        assert!(ev.tools.contains(&Tool::Coredump));
        assert_eq!(ev.faults.len(), 1);
        let f = &ev.faults[0];
        assert_eq!(f.tool, Some(Tool::Coredump));
        assert_eq!(f.error, Some(ErrorClass::IllegalAddress));
        assert_eq!((f.device, f.sm, f.warp, f.lane), (Some(0), Some(124), None, None));
        assert_eq!(f.pc, Some(0x7f9a577a00f0));
        assert_eq!(f.detail.as_deref(), Some(WARP_EXITED));
        assert_eq!(f.kernel, None);
        assert!(f.frames.is_empty());
        assert_eq!(f.pid, Some(1720));
        assert_eq!(f.count, 1);
        assert_eq!(
            ev.coredumps,
            vec![CoredumpFile { path: "/tmp/cd/cuda_coredump_vm.1720.1795999523".into(), pid: Some(1720) }]
        );
        assert!(coredump_notes(&ev).is_empty(), "{:?}", ev.notes);
    }

    #[test]
    fn device_assert_with_stack() {
        let ev = scan_str(ASSERT_35, "35.log");
        assert_eq!(ev.faults.len(), 1);
        let f = &ev.faults[0];
        assert_eq!(f.error, Some(ErrorClass::DeviceAssert));
        assert_eq!((f.device, f.sm, f.warp), (Some(0), Some(124), Some(2)));
        // `lane masks: active 0x00000008`: one lane, lane 3 (cuda-gdb's focus agrees).
        assert_eq!(f.lane, Some(3));
        assert_eq!(f.pc, Some(0x7f22377a4380));
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
        assert_eq!(f.pid, Some(1293));
        assert_eq!(ev.coredumps[0].path, "/tmp/cd/cuda_coredump_vm.1293.1795999427");
        assert_eq!(f.detail, None);
    }

    #[test]
    fn child_process_dump() {
        let ev = scan_str(CHILD_37, "37.log");
        assert_eq!(ev.faults.len(), 1);
        let f = &ev.faults[0];
        assert_eq!(f.error, Some(ErrorClass::DeviceAssert));
        assert_eq!(
            f.kernel.as_deref(),
            Some("void at::native::_assert_async_cuda_kernel<bool>(bool const*, at::native::Msg)")
        );
        assert_eq!(f.mangled.as_deref(), Some("_ZN2at6native25_assert_async_cuda_kernelIbEEvPKT_NS0_3MsgE"));
        assert_eq!((f.sm, f.warp, f.lane), (Some(124), Some(0), Some(0)));
        assert_eq!(f.pid, Some(1394));
        assert_eq!(ev.coredumps[0].pid, Some(1394));
    }

    #[test]
    fn unmangled_kernel_name_of_a_debug_build() {
        let ev = scan_str(FAR_G_44, "44.log");
        let f = &ev.faults[0];
        assert_eq!(f.kernel.as_deref(), Some("scatter_far"));
        assert_eq!(f.mangled, None);
        assert_eq!((f.sm, f.warp, f.lane), (Some(124), Some(4), None));
        assert_eq!(f.pc, Some(0x7f6f3b7a02c0));
        assert_eq!(f.pid, Some(1783));
    }

    #[test]
    fn template_kernel_is_demangled() {
        let ev = scan_str(GRAPH_62, "62.log");
        let f = &ev.faults[0];
        let mangled = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIhEESt5arrayIPcLm1EEEEviT0_T1_";
        assert_eq!(f.mangled.as_deref(), Some(mangled));
        assert_eq!(f.kernel, Some(names::pretty(mangled)));
        assert!(f
            .kernel
            .as_deref()
            .unwrap()
            .starts_with("void at::native::vectorized_elementwise_kernel<4,"));
        assert_eq!((f.device, f.sm, f.warp), (Some(0), Some(0), Some(10)));
        assert_eq!(f.pc, Some(0x7ff49f7a9430));
        assert_eq!(f.pid, Some(2131));
    }

    #[test]
    fn several_processes_in_one_log_stay_apart() {
        let text = format!("{ASSERT_35}{FAR_42}{CHILD_37}");
        let ev = scan_str(&text, "many.log");
        let got: Vec<_> = ev.faults.iter().map(|f| (f.pid, f.error.clone(), f.warp)).collect();
        assert_eq!(
            got,
            vec![
                (Some(1293), Some(ErrorClass::DeviceAssert), Some(2)),
                (Some(1720), Some(ErrorClass::IllegalAddress), None),
                (Some(1394), Some(ErrorClass::DeviceAssert), Some(0)),
            ]
        );
        let pids: Vec<_> = ev.coredumps.iter().map(|c| c.pid).collect();
        assert_eq!(pids, vec![Some(1293), Some(1720), Some(1394)]);
        assert!(coredump_notes(&ev).is_empty(), "{:?}", ev.notes);
    }

    #[test]
    fn killed_before_writing_is_noted() {
        // The process died while SMs were still being collected.
        let ev = scan_str(&head(FAR_42, 10), "killed.log");
        assert!(ev.faults.is_empty());
        assert!(ev.coredumps.is_empty());
        let notes = coredump_notes(&ev);
        assert_eq!(notes.len(), 1, "{:?}", ev.notes);
        assert!(notes[0].contains("never reached `Writing ELF file`"), "{}", notes[0]);
        assert!(notes[0].contains("SM 7/132"), "{}", notes[0]);
        assert!(notes[0].contains("line 3"), "{}", notes[0]);
    }

    #[test]
    fn killed_while_writing_is_noted() {
        let ev = scan_str(&up_to(FAR_42, "Writing done"), "killed.log");
        assert_eq!(ev.faults.len(), 1);
        assert_eq!(ev.faults[0].pid, Some(1720));
        assert_eq!(ev.coredumps.len(), 1);
        let notes = coredump_notes(&ev);
        assert_eq!(notes.len(), 1, "{:?}", ev.notes);
        assert!(notes[0].contains("never reached `All done`"), "{}", notes[0]);
        assert!(notes[0].contains("/tmp/cd/cuda_coredump_vm.1720.1795999523"), "{}", notes[0]);
    }

    #[test]
    fn a_run_without_coredump_lines_finds_nothing() {
        let ev = scan_str(DIST_83, "83.log");
        assert!(!ev.tools.contains(&Tool::Coredump));
        assert!(ev.faults.iter().all(|f| f.tool != Some(Tool::Coredump)));
        assert!(ev.coredumps.is_empty());
        assert!(coredump_notes(&ev).is_empty(), "{:?}", ev.notes);
    }

    #[test]
    fn sm_progress_lines() {
        assert_eq!(
            sm_progress("[00:43:47.679032] coredump: SM 1/132 has finished state collection"),
            Some((1, 132))
        );
        assert_eq!(
            sm_progress("[00:45:57.036585] coredump: SM 132/132 has finished state collection"),
            Some((132, 132))
        );
        assert_eq!(sm_progress("SM 57/132 has finished state collection"), Some((57, 132)));
        assert_eq!(sm_progress("[00:45:57.036649] coredump: Device 1/1 has finished state collection"), None);
        assert_eq!(sm_progress("[00:45:24.191238] coredump:   - SM: 124"), None);
        assert_eq!(sm_progress("launched both kernels"), None);
        assert_eq!(sm_progress(""), None);
        let all: Vec<_> = FAR_42.lines().filter_map(sm_progress).collect();
        assert_eq!(all.len(), 132);
        assert_eq!(all.first(), Some(&(1, 132)));
        assert_eq!(all.last(), Some(&(132, 132)));
    }

    #[test]
    fn pids_from_dump_names() {
        assert_eq!(pid_from_dump_path("/tmp/cd/cuda_coredump_vm.1293.1795999427"), Some(1293));
        // Host names may have dots: the PID is the second-to-last field.
        assert_eq!(pid_from_dump_path("/d/cuda_coredump_gpu7.example.org.746.1795999427"), Some(746));
        assert_eq!(pid_from_dump_path("core.4242.17"), Some(4242));
        assert_eq!(pid_from_dump_path("/tmp/cd/cs_core"), None);
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
                let (line, rank) = super::super::scan::strip_rank(line);
                p.line(line, LineCtx { lineno: n as u64 + 1, rank });
            }
            let mut ev = Evidence::default();
            p.finish(&mut ev);
            ev
        }
        for text in [FAR_42, ASSERT_35, CHILD_37, FAR_G_44, GRAPH_62, DIST_83] {
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
            let all: Vec<&str> = [FAR_42, ASSERT_35, CHILD_37, GRAPH_62].iter().flat_map(|t| t.lines()).collect();
            let text: Vec<&str> = picks.iter().map(|&i| all[i % all.len()]).collect();
            let _ = scan_str(&text.join("\n"), "mix.log");
        }
    }
}

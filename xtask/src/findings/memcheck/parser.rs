//! The memcheck text parser (`MemcheckParser`): the `=========` records read one at a time
//! (`Record`, its buffers reused), grouped into faults by site and API errors by (error,
//! API), with the `ERROR SUMMARY` and a sanitizer-written coredump.
//!
//! Must not: keep state for more than the record being read (groups and API errors are
//! capped), allocate for a record that joins an existing group, panic on any input, or look
//! at lines without the `=========` prefix (they are the program's own; the host parser
//! reads them).

use super::caps::{MAX_COREDUMPS, MAX_DEVICE_FRAMES, MAX_HOST_FRAMES, PREFIX};
use super::fields::{
    access_class, clip, grouped_u64, kernel_name, parse_access_header, parse_by_thread, parse_device_frame,
    parse_host_frame, parse_nearest, parse_program_hit, push_clipped, split_position,
};
use super::grouping::{ApiErrors, Sites, Slot};
use crate::findings::{
    parse_hex, parse_source_loc, Access, CoredumpFile, Dim3, ErrorClass, Evidence, Fault, LineCtx,
    LineParser, Nearest, Tool,
};

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) enum RecKind {
    /// Not in a record.
    #[default]
    None,
    /// `Invalid __global__ write of size 4 bytes`.
    Access,
    /// Another top-level header (`Warp assert`): a record only if an `at` line follows.
    Other,
    /// A `Program hit ...` block or other block whose frames are not kept.
    Skip,
}

/// The record being read. Buffers are reused from record to record.
#[derive(Default)]
pub(super) struct Record {
    pub(super) kind: RecKind,
    pub(super) header: String,
    pub(super) at: String,
    pub(super) has_at: bool,
    pub(super) problem: String,
    pub(super) thread: Option<Dim3>,
    pub(super) block: Option<Dim3>,
    pub(super) address: Option<u64>,
    pub(super) nearest: Option<Nearest>,
    /// Raw `Device Frame:` texts, one a line.
    pub(super) device: String,
    pub(super) n_device: usize,
    /// Raw `Host Frame:` texts, one a line, kept only while the site may be new.
    pub(super) host: String,
    pub(super) n_host: usize,
    /// The record's site, once looked up (at the first line that needs it: the nearest
    /// allocation and host frames are kept only for a new site); reset by lines of the key.
    pub(super) slot: Option<Slot>,
    pub(super) frames_cut: bool,
    pub(super) rank: Option<u32>,
}

impl Record {
    pub(super) fn reset(&mut self, kind: RecKind) {
        self.kind = kind;
        self.header.clear();
        self.at.clear();
        self.has_at = false;
        self.problem.clear();
        self.thread = None;
        self.block = None;
        self.address = None;
        self.nearest = None;
        self.device.clear();
        self.n_device = 0;
        self.host.clear();
        self.n_host = 0;
        self.slot = None;
        self.frames_cut = false;
        self.rank = None;
    }
}

/// Reads compute-sanitizer's text output. See the module documentation.
#[derive(Default)]
pub struct MemcheckParser {
    pub(super) seen: bool,
    pub(super) sites: Sites,
    pub(super) api: ApiErrors,
    pub(super) summary: Option<u64>,
    pub(super) not_printed: Option<u64>,
    pub(super) coredumps: Vec<CoredumpFile>,
    pub(super) rec: Record,
    pub(super) key: Vec<u8>,
}

impl MemcheckParser {
    /// Builds the current record's site key into `self.key`: rank, header, function, line
    /// (or offset without line info) and the `is <problem>` phrase.
    pub(super) fn build_key(&mut self) {
        let r = &self.rec;
        let k = &mut self.key;
        k.clear();
        match r.rank {
            Some(n) => {
                k.push(1);
                k.extend_from_slice(&n.to_le_bytes());
            }
            None => k.push(0),
        }
        k.extend_from_slice(r.header.as_bytes());
        k.push(0);
        let (func, off, loc) = split_position(&r.at);
        k.extend_from_slice(func.as_bytes());
        k.push(0);
        match loc {
            Some(l) => k.extend_from_slice(l.as_bytes()),
            None => k.extend_from_slice(off.unwrap_or("").as_bytes()),
        }
        k.push(0);
        k.extend_from_slice(r.problem.as_bytes());
    }

    /// Ends the record being read (if any) and counts it into its group.
    pub(super) fn end_record(&mut self) {
        let kind = self.rec.kind;
        let valid = match kind {
            RecKind::Access => self.rec.has_at || self.rec.thread.is_some(),
            RecKind::Other => self.rec.has_at,
            RecKind::None | RecKind::Skip => false,
        };
        if !valid {
            self.rec.reset(RecKind::None);
            return;
        }
        self.seen = true;
        let (block, thread) = (self.rec.block, self.rec.thread);
        match self.site() {
            Slot::Known(i) => self.sites.hit(i, block, thread),
            Slot::Full => self.sites.skip(),
            Slot::New => {
                let fault = self.new_fault();
                if self.rec.frames_cut {
                    self.sites.note_frames_cut();
                }
                self.sites.add(&self.key, fault, block, thread);
            }
        }
        self.rec.reset(RecKind::None);
    }

    /// The current record's site, looked up once (`self.key` then holds its key); inlined
    /// where it is known, which it is for most lines of a record.
    #[inline]
    pub(super) fn site(&mut self) -> Slot {
        match self.rec.slot {
            Some(s) => s,
            None => self.look_up_site(),
        }
    }

    fn look_up_site(&mut self) -> Slot {
        self.build_key();
        let s = self.sites.find(&self.key);
        self.rec.slot = Some(s);
        s
    }

    /// The finding for the first record of a new site (block/thread/count set by `Sites::add`).
    pub(super) fn new_fault(&self) -> Fault {
        let r = &self.rec;
        let (func, off, loc) = split_position(&r.at);
        let (kernel, mangled) = kernel_name(func);
        let (error, access, detail) = if r.kind == RecKind::Access {
            let (space, kind, size) = parse_access_header(&r.header);
            let access = Access { kind, space, size, address: r.address, nearest: r.nearest.clone() };
            let detail = (!r.problem.is_empty()).then(|| r.problem.clone());
            (access_class(&r.header, &r.problem), Some(access), detail)
        } else {
            let access = r.address.map(|a| Access { address: Some(a), ..Access::default() });
            (ErrorClass::from_message(&r.header), access, Some(r.header.clone()))
        };
        Fault {
            tool: Some(Tool::Memcheck),
            error: Some(error),
            kernel,
            mangled,
            location: loc.and_then(parse_source_loc),
            pc: off.and_then(parse_hex),
            access,
            frames: r.device.lines().map(parse_device_frame).collect(),
            host_frames: r.host.lines().map(parse_host_frame).collect(),
            rank: r.rank,
            detail,
            ..Fault::default()
        }
    }

    pub(super) fn top_level(&mut self, text: &str, ctx: LineCtx) {
        if text.starts_with("Invalid ") {
            self.end_record();
            self.rec.reset(RecKind::Access);
            push_clipped(&mut self.rec.header, text.trim_end());
            self.rec.rank = ctx.rank;
        } else if text.starts_with("Program hit ") {
            self.end_record();
            self.seen = true;
            if let Some((error, code, message, api)) = parse_program_hit(text) {
                self.api.add(error, code, message, api);
            }
            self.rec.reset(RecKind::Skip);
        } else if let Some(rest) = text.strip_prefix("ERROR SUMMARY: ") {
            self.end_record();
            self.seen = true;
            let n = rest.split_whitespace().next().and_then(grouped_u64);
            if rest.contains("not printed") {
                self.not_printed = self.not_printed.or(n);
            } else {
                self.summary = self.summary.or(n);
            }
        } else if text.starts_with("COMPUTE-SANITIZER") || text.starts_with("Target application returned") {
            self.end_record();
            self.seen = true;
        } else if let Some(path) = text.strip_prefix("Generating coredump file ") {
            self.end_record();
            self.seen = true;
            let path = path.trim();
            if !path.is_empty()
                && self.coredumps.len() < MAX_COREDUMPS
                && !self.coredumps.iter().any(|c| c.path == path)
            {
                self.coredumps.push(CoredumpFile { path: clip(path).to_string(), pid: None });
            }
        } else {
            // `Warp assert` and other headers: a record only if an `at` line follows.
            self.end_record();
            self.rec.reset(RecKind::Other);
            push_clipped(&mut self.rec.header, text.trim_end());
            self.rec.rank = ctx.rank;
        }
    }

    pub(super) fn detail(&mut self, text: &str) {
        if let Some(at) = text.strip_prefix("at ") {
            let r = &mut self.rec;
            if !r.has_at {
                r.has_at = true;
                push_clipped(&mut r.at, at.trim());
                r.slot = None;
            }
        } else if let Some(rest) = text.strip_prefix("by thread ") {
            if let Some((t, b)) = parse_by_thread(rest.as_bytes()) {
                self.rec.thread = Some(t);
                self.rec.block = Some(b);
            }
        } else if let Some(rest) = text.strip_prefix("Access to ").or_else(|| text.strip_prefix("Address ")) {
            let sp = memchr::memchr(b' ', rest.as_bytes()).unwrap_or(rest.len());
            if let Some(problem) = rest[sp..].strip_prefix(" is ") {
                let r = &mut self.rec;
                r.address = parse_hex(&rest[..sp]);
                let problem = problem.trim().trim_end_matches('.');
                if r.problem != problem {
                    r.problem.clear();
                    push_clipped(&mut r.problem, problem);
                    r.slot = None;
                }
            }
        } else if text.starts_with("and is ") {
            // Only the first record of a site keeps its nearest allocation.
            if self.site() == Slot::New {
                self.rec.nearest = parse_nearest(text);
            }
        }
    }

    pub(super) fn frame(&mut self, text: &str) {
        if let Some(f) = text.strip_prefix("Host Frame:") {
            if !matches!(self.rec.kind, RecKind::Access | RecKind::Other) {
                return;
            }
            if self.site() != Slot::New {
                return;
            }
            let r = &mut self.rec;
            if r.n_host >= MAX_HOST_FRAMES {
                r.frames_cut = true;
                return;
            }
            r.n_host += 1;
            r.host.push_str(clip(f.trim()));
            r.host.push('\n');
        } else if let Some(f) = text.strip_prefix("Device Frame:") {
            let r = &mut self.rec;
            if !matches!(r.kind, RecKind::Access | RecKind::Other) {
                return;
            }
            if r.n_device >= MAX_DEVICE_FRAMES {
                r.frames_cut = true;
                return;
            }
            r.n_device += 1;
            r.device.push_str(clip(f.trim()));
            r.device.push('\n');
        }
    }
}

impl LineParser for MemcheckParser {
    /// compute-sanitizer's lines only.
    #[inline]
    fn wants(&self, line: &str, _phrase_free: bool) -> bool {
        line.as_bytes().starts_with(PREFIX)
    }

    // Inlined into the scanner's loop: on compute-sanitizer's output it takes every line.
    #[inline]
    fn line(&mut self, line: &str, ctx: LineCtx) {
        let b = line.as_bytes();
        if !b.starts_with(PREFIX) {
            return;
        }
        // `=========` then a space (or nothing); a row of `=` is the program's own.
        let rest = &line[PREFIX.len()..];
        let body = match rest.strip_prefix(' ') {
            Some(body) => body,
            None if rest.trim().is_empty() => "",
            None => return,
        };
        let indent = crate::findings::quick::leading_spaces(body.as_bytes());
        let text = &body[indent..];
        if text.bytes().all(|c| c.is_ascii_whitespace()) {
            // `========= ` ends a record.
            self.end_record();
            return;
        }
        if indent == 0 {
            self.top_level(text, ctx);
        } else if text.starts_with("Host Frame:") || text.starts_with("Device Frame:") {
            self.frame(text);
        } else if matches!(self.rec.kind, RecKind::Access | RecKind::Other) {
            self.detail(text);
        }
    }

    fn finish(&mut self, ev: &mut Evidence) {
        let r = &self.rec;
        let incomplete = match r.kind {
            RecKind::Access => !r.has_at || r.problem.is_empty(),
            RecKind::Other => !r.has_at,
            RecKind::None | RecKind::Skip => false,
        };
        if incomplete && (r.has_at || r.thread.is_some()) {
            ev.notes.push(format!(
                "compute-sanitizer: the last record (`{}`) was cut off before its site was known \
                 and was not counted",
                clip(&r.header)
            ));
            self.rec.reset(RecKind::None);
        }
        self.end_record();
        if self.seen {
            ev.saw(Tool::Memcheck);
        }
        let records = self.sites.records();
        self.sites.finish(ev);
        self.api.finish(ev);
        if ev.error_summary.is_none() {
            ev.error_summary = self.summary;
        }
        if let Some(n) = self.not_printed {
            let total = self.summary.map(|t| format!(" of {t}")).unwrap_or_default();
            ev.notes.push(format!(
                "compute-sanitizer did not print {n}{total} errors (--print-limit); the {records} \
                 grouped record(s) are the printed ones only"
            ));
        }
        ev.coredumps.append(&mut self.coredumps);
    }
}

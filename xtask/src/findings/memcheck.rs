//! compute-sanitizer (memcheck) text output: the `========= `-prefixed records of invalid
//! accesses and hardware exceptions (`Warp assert`), `Program hit ...` API errors, the
//! `ERROR SUMMARY` and a sanitizer-written coredump, turned into [`Fault`]s grouped by site
//! and [`ApiError`]s grouped by (error, API).
//!
//! Must not: keep state for more than the record being read (groups and API errors are
//! capped), allocate for a record that joins an existing group, panic on any input, or look
//! at lines without the `=========` prefix (they are the program's own; the host parser
//! reads them). The grouping helpers here are shared with [`super::memcheck_xml`].

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::{
    names, parse_hex, parse_source_loc, Access, ApiError, CoredumpFile, Dim3, ErrorClass, Evidence, Fault,
    Frame, LineCtx, LineParser, Nearest, SourceLoc, Tool,
};

/// Distinct sites (kernel, line, error kind) kept; records at further sites are only counted.
pub const MAX_SITES: usize = 4096;
/// Host frames kept per site (of its first record).
pub const MAX_HOST_FRAMES: usize = 64;
/// Device frames kept per site (of its first record).
pub const MAX_DEVICE_FRAMES: usize = 64;
/// Distinct (error, API) pairs kept.
pub const MAX_API_ERRORS: usize = 256;
/// Sanitizer-written coredumps kept.
const MAX_COREDUMPS: usize = 64;
/// Longest record field (header, `at` line) kept, in bytes.
const MAX_FIELD: usize = 16 * 1024;

/// compute-sanitizer's default `--prefix`.
const PREFIX: &[u8] = b"=========";

// ---------------------------------------------------------------------------------------
// Grouping shared with the XML reader.

/// A small, fast, non-cryptographic hasher (FxHash) for site keys: the hot path hashes one
/// key per record, and these keys come from local logs.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

const FX_K: u64 = 0x517c_c1b7_2722_0a95;

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut h = self.0;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
            h = (h.rotate_left(5) ^ w).wrapping_mul(FX_K);
        }
        for &b in chunks.remainder() {
            h = (h.rotate_left(5) ^ u64::from(b)).wrapping_mul(FX_K);
        }
        self.0 = h;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Where a record's site stands among the groups seen so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    /// An existing group, by index.
    Known(usize),
    /// A new site, and there is room for it.
    New,
    /// A new site, but [`MAX_SITES`] groups exist already.
    Full,
}

/// Records grouped by site, in order of first appearance.
#[derive(Default)]
pub(crate) struct Sites {
    index: HashMap<Box<[u8]>, usize, BuildHasherDefault<FxHasher>>,
    keys: Vec<Box<[u8]>>,
    faults: Vec<Fault>,
    last: Option<usize>,
    /// Records at sites beyond [`MAX_SITES`].
    other: u64,
    /// Whether some site's host or device stack was cut to the cap.
    frames_cut: bool,
}

impl Sites {
    /// Looks a site key up without allocating. Consecutive records of one site (the usual
    /// case) cost one comparison.
    pub(crate) fn find(&mut self, key: &[u8]) -> Slot {
        if let Some(i) = self.last {
            if self.keys.get(i).is_some_and(|k| &**k == key) {
                return Slot::Known(i);
            }
        }
        if let Some(&i) = self.index.get(key) {
            self.last = Some(i);
            return Slot::Known(i);
        }
        if self.faults.len() >= MAX_SITES {
            Slot::Full
        } else {
            Slot::New
        }
    }

    /// Counts one more record of group `i`.
    pub(crate) fn hit(&mut self, i: usize, block: Option<Dim3>, thread: Option<Dim3>) {
        if let Some(f) = self.faults.get_mut(i) {
            f.count = f.count.saturating_add(1);
            widen(&mut f.block_range, block);
            widen(&mut f.thread_range, thread);
        }
    }

    /// Starts a new group from its first record (`count`, ranges, block and thread are set here).
    pub(crate) fn add(&mut self, key: &[u8], mut fault: Fault, block: Option<Dim3>, thread: Option<Dim3>) {
        if self.faults.len() >= MAX_SITES {
            self.other = self.other.saturating_add(1);
            return;
        }
        fault.count = 1;
        fault.block = block;
        fault.thread = thread;
        fault.block_range = block.map(|b| [b, b]);
        fault.thread_range = thread.map(|t| [t, t]);
        let i = self.faults.len();
        self.faults.push(fault);
        let k: Box<[u8]> = key.into();
        self.keys.push(k.clone());
        self.index.insert(k, i);
        self.last = Some(i);
    }

    /// Counts `n` more into group `i` (a racecheck analysis record stands for many hazards).
    pub(crate) fn add_count(&mut self, i: usize, n: u64) {
        if let Some(f) = self.faults.get_mut(i) {
            f.count = f.count.saturating_add(n);
        }
    }

    /// The groups so far.
    pub(crate) fn len(&self) -> usize {
        self.faults.len()
    }

    /// Counts a record at a site beyond the cap.
    pub(crate) fn skip(&mut self) {
        self.other = self.other.saturating_add(1);
    }

    pub(crate) fn note_frames_cut(&mut self) {
        self.frames_cut = true;
    }

    /// Records grouped so far, over all sites (including those beyond the cap).
    pub(crate) fn records(&self) -> u64 {
        self.faults.iter().map(|f| f.count).fold(self.other, u64::saturating_add)
    }

    /// Moves the groups into `ev`, with notes on what was capped.
    pub(crate) fn finish(&mut self, ev: &mut Evidence) {
        ev.faults.append(&mut self.faults);
        if self.other > 0 {
            ev.notes.push(format!(
                "compute-sanitizer: {} record(s) at sites beyond the first {MAX_SITES} distinct \
                 sites were counted but not grouped",
                self.other
            ));
        }
        if self.frames_cut {
            ev.notes.push(format!(
                "compute-sanitizer: backtraces longer than {MAX_HOST_FRAMES} frames were cut to that length"
            ));
        }
        self.index.clear();
        self.keys.clear();
        self.last = None;
        self.other = 0;
        self.frames_cut = false;
    }
}

/// Widens a `[min, max]` range component-wise to include `v`.
pub(crate) fn widen(range: &mut Option<[Dim3; 2]>, v: Option<Dim3>) {
    let Some(v) = v else { return };
    match range {
        Some([lo, hi]) => {
            for i in 0..3 {
                lo[i] = lo[i].min(v[i]);
                hi[i] = hi[i].max(v[i]);
            }
        }
        None => *range = Some([v, v]),
    }
}

/// API errors grouped by (error, API), in order of first appearance.
#[derive(Default)]
pub(crate) struct ApiErrors {
    list: Vec<ApiError>,
    last: Option<usize>,
    other: u64,
}

impl ApiErrors {
    pub(crate) fn add(&mut self, error: &str, code: Option<u32>, message: &str, api: &str) {
        let same = |e: &ApiError| e.error == error && e.api == api;
        let found = match self.last {
            Some(i) if self.list.get(i).is_some_and(same) => Some(i),
            _ => self.list.iter().position(same),
        };
        match found {
            Some(i) => {
                if let Some(e) = self.list.get_mut(i) {
                    e.count = e.count.saturating_add(1);
                }
                self.last = Some(i);
            }
            None if self.list.len() < MAX_API_ERRORS => {
                self.list.push(ApiError {
                    api: clip(api).to_string(),
                    error: clip(error).to_string(),
                    code,
                    message: clip(message).to_string(),
                    count: 1,
                });
                self.last = Some(self.list.len() - 1);
            }
            None => self.other = self.other.saturating_add(1),
        }
    }

    pub(crate) fn finish(&mut self, ev: &mut Evidence) {
        ev.api_errors.append(&mut self.list);
        if self.other > 0 {
            ev.notes.push(format!(
                "compute-sanitizer: {} API error(s) beyond the first {MAX_API_ERRORS} distinct \
                 (error, API) pairs were not kept",
                self.other
            ));
        }
        self.other = 0;
        self.last = None;
    }
}

/// Parses `Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch
/// failure" on CUDA API call to cudaDeviceSynchronize.` into (error, code, message, api).
pub(crate) fn parse_program_hit(text: &str) -> Option<(&str, Option<u32>, &str, &str)> {
    let rest = text.trim().strip_prefix("Program hit ")?;
    let (error, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    let code = rest
        .strip_prefix("(error ")
        .and_then(|r| r.split_once(')'))
        .and_then(|(n, _)| n.trim().parse::<u32>().ok());
    let (head, api) = match rest.rsplit_once(" on CUDA API call to ") {
        Some((h, a)) => (h, a.trim().trim_end_matches('.').trim()),
        None => (rest, ""),
    };
    let message = match head.split_once(" due to ") {
        Some((_, m)) => {
            let m = m.trim();
            m.strip_prefix('"').and_then(|m| m.strip_suffix('"')).unwrap_or(m)
        }
        None => "",
    };
    Some((error, code, message, if api.is_empty() { "?" } else { api }))
}

/// The kernel as a finding names it, and its mangled name where the tool printed one.
/// `__assertfail` (where a device assert traps) is not the user's kernel: `None`.
pub(crate) fn kernel_name(func: &str) -> (Option<String>, Option<String>) {
    let func = func.trim();
    if func.is_empty() || func.starts_with("__assertfail") {
        return (None, None);
    }
    if func.starts_with("_Z") {
        if let Some(d) = names::demangle(func) {
            return (Some(names::compact_signature(&d)), Some(func.to_string()));
        }
    }
    (Some(names::compact_signature(func)), None)
}

/// Error class of an access record, from its header and the `... is <problem>` phrase.
pub(crate) fn access_class(header: &str, problem: &str) -> ErrorClass {
    if problem.contains("misaligned") || header.contains("isaligned") {
        ErrorClass::MisalignedAccess
    } else {
        ErrorClass::InvalidAccess
    }
}

/// Cuts a field to [`MAX_FIELD`] bytes at a char boundary.
pub(crate) fn clip(s: &str) -> &str {
    if s.len() <= MAX_FIELD {
        return s;
    }
    let mut end = MAX_FIELD;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Appends `s` to `buf`, never growing it past [`MAX_FIELD`].
pub(crate) fn push_clipped(buf: &mut String, s: &str) {
    let room = MAX_FIELD.saturating_sub(buf.len());
    if s.len() <= room {
        buf.push_str(s);
    } else {
        let mut end = room;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        buf.push_str(&s[..end]);
    }
}

/// Parses a decimal with thousands separators (`31,999,997,952`; `.` and `'` are accepted
/// for other locales) without allocating.
pub(crate) fn grouped_u64(s: &str) -> Option<u64> {
    let mut v: u64 = 0;
    let mut digits = 0;
    for b in s.trim().bytes() {
        match b {
            b'0'..=b'9' => {
                v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
                digits += 1;
            }
            b',' | b'.' | b'\'' => {}
            _ => return None,
        }
    }
    (digits > 0).then_some(v)
}

// ---------------------------------------------------------------------------------------
// Text records.

/// Splits the part after `at ` (or `Device Frame: `): `scatter_far(int *, int)+0xf0 in
/// ima_far.cu:13` into (function, `0xf0`, `ima_far.cu:13`). Without -lineinfo there is no
/// ` in FILE:LINE`.
pub(crate) fn split_position(s: &str) -> (&str, Option<&str>, Option<&str>) {
    let s = s.trim();
    if let Some(p) = s.rfind("+0x") {
        let func = &s[..p];
        let rest = &s[p + 1..];
        let (off, loc) = match rest.find(' ') {
            Some(q) => (&rest[..q], rest[q..].trim_start().strip_prefix("in ").map(str::trim)),
            None => (rest, None),
        };
        return (func, Some(off), loc.filter(|l| !l.is_empty()));
    }
    match s.rsplit_once(" in ") {
        Some((f, l)) if parse_source_loc(l).is_some() => (f, None, Some(l.trim())),
        _ => (s, None, None),
    }
}

/// Parses what follows `Host Frame:`: `main [0x8dca] in f_li`, ` [0x2062a] in
/// libcudart.so.13`, `ncclCommInitRankConfig in init.cc:2162 [0x8a0b5] in libnccl.so.2`,
/// or a Python frame `replay in graphs.py:139`.
pub(crate) fn parse_host_frame(s: &str) -> Frame {
    let s = s.trim();
    if let Some(p) = s.rfind("[0x") {
        let head = s[..p].trim();
        let module = s[p..].split_once("] in ").map(|(_, m)| m.trim()).filter(|m| !m.is_empty());
        let (function, file, line) = match head.rsplit_once(" in ") {
            Some((f, l)) => match parse_source_loc(l) {
                Some(loc) => (f.trim(), Some(loc.file), Some(loc.line)),
                None => (head, None, None),
            },
            None => (head, None, None),
        };
        return Frame {
            function: (!function.is_empty()).then(|| function.to_string()),
            file,
            line,
            module: module.map(str::to_string),
            python: false,
        };
    }
    if let Some((f, l)) = s.rsplit_once(" in ") {
        if let Some(loc) = parse_source_loc(l) {
            let f = f.trim();
            return Frame {
                function: (!f.is_empty()).then(|| f.to_string()),
                file: Some(loc.file),
                line: Some(loc.line),
                module: None,
                python: true,
            };
        }
    }
    Frame { function: (!s.is_empty()).then(|| s.to_string()), ..Frame::default() }
}

/// Parses what follows `Device Frame:`: `__assertfail+0x1930`, `f+0x12c0 in x.py:122`.
fn parse_device_frame(s: &str) -> Frame {
    let (func, _, loc) = split_position(s);
    let loc = loc.and_then(parse_source_loc);
    let func = func.trim();
    let function = if func.starts_with("_Z") {
        names::demangle(func).map(|d| names::compact_signature(&d))
    } else {
        None
    }
    .or_else(|| (!func.is_empty()).then(|| names::compact_signature(func)));
    Frame {
        function,
        line: loc.as_ref().map(|l| l.line),
        file: loc.map(|l| l.file),
        module: None,
        python: false,
    }
}

/// Parses `(0,0,0) in block (2,0,0)` (after `by thread `) without allocating.
fn parse_by_thread(s: &[u8]) -> Option<(Dim3, Dim3)> {
    let (thread, n) = dim3_prefix(s)?;
    let rest = s.get(n..)?.strip_prefix(b" in block ")?;
    let (block, _) = dim3_prefix(rest)?;
    Some((thread, block))
}

/// Parses `(x,y,z)` at the start of `s`, returning it and the bytes used.
pub(crate) fn dim3_prefix(s: &[u8]) -> Option<(Dim3, usize)> {
    let mut i = 1;
    if s.first() != Some(&b'(') {
        return None;
    }
    let mut d = [0u32; 3];
    for (k, v) in d.iter_mut().enumerate() {
        let start = i;
        while let Some(c) = s.get(i).filter(|c| c.is_ascii_digit()) {
            *v = v.checked_mul(10)?.checked_add(u32::from(c - b'0'))?;
            i += 1;
        }
        let sep = if k == 2 { b')' } else { b',' };
        if i == start || s.get(i) != Some(&sep) {
            return None;
        }
        i += 1;
    }
    Some((d, i))
}

/// Splits `Invalid __global__ write of size 4 bytes` into (space, kind, size).
fn parse_access_header(header: &str) -> (Option<String>, Option<String>, Option<u64>) {
    let Some(rest) = header.strip_prefix("Invalid ") else {
        return (None, None, None);
    };
    let (body, size) = match rest.split_once(" of size ") {
        Some((b, s)) => (b, s.split_whitespace().next().and_then(grouped_u64)),
        None => (rest, None),
    };
    let mut words = body.split_whitespace();
    let space = words.next().map(str::to_string);
    let kind: Vec<&str> = words.collect();
    let kind = (!kind.is_empty()).then(|| kind.join(" "));
    (space, kind, size)
}

/// Parses `and is 31,999,997,952 bytes before the nearest allocation at 0x7f283c800000 of
/// size 4,096 bytes`.
fn parse_nearest(s: &str) -> Option<Nearest> {
    let rest = s.strip_prefix("and is ")?;
    let (distance, rest) = rest.split_once(" byte")?;
    let rest = rest.trim_start_matches('s').trim_start();
    let before = if rest.starts_with("before") {
        true
    } else if rest.starts_with("after") {
        false
    } else {
        return None;
    };
    let (_, rest) = rest.split_once(" at ")?;
    let (alloc, rest) = rest.split_once(" of size ")?;
    let size = rest.split_whitespace().next()?;
    Some(Nearest {
        distance: grouped_u64(distance)?,
        before,
        allocation: parse_hex(alloc)?,
        allocation_size: grouped_u64(size)?,
    })
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum RecKind {
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
struct Record {
    kind: RecKind,
    header: String,
    at: String,
    has_at: bool,
    problem: String,
    thread: Option<Dim3>,
    block: Option<Dim3>,
    address: Option<u64>,
    nearest: Option<Nearest>,
    /// Raw `Device Frame:` texts, one a line.
    device: String,
    n_device: usize,
    /// Raw `Host Frame:` texts, one a line, kept only while the site may be new.
    host: String,
    n_host: usize,
    /// The record's site, once looked up (at the first line that needs it: the nearest
    /// allocation and host frames are kept only for a new site); reset by lines of the key.
    slot: Option<Slot>,
    frames_cut: bool,
    rank: Option<u32>,
}

impl Record {
    fn reset(&mut self, kind: RecKind) {
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
    seen: bool,
    sites: Sites,
    api: ApiErrors,
    summary: Option<u64>,
    not_printed: Option<u64>,
    coredumps: Vec<CoredumpFile>,
    rec: Record,
    key: Vec<u8>,
}

impl MemcheckParser {
    /// Builds the current record's site key into `self.key`: rank, header, function, line
    /// (or offset without line info) and the `is <problem>` phrase.
    fn build_key(&mut self) {
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
    fn end_record(&mut self) {
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

    /// The current record's site, looked up once (`self.key` then holds its key).
    fn site(&mut self) -> Slot {
        if let Some(s) = self.rec.slot {
            return s;
        }
        self.build_key();
        let s = self.sites.find(&self.key);
        self.rec.slot = Some(s);
        s
    }

    /// The finding for the first record of a new site (block/thread/count set by `Sites::add`).
    fn new_fault(&self) -> Fault {
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

    fn top_level(&mut self, text: &str, ctx: LineCtx) {
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

    fn detail(&mut self, text: &str) {
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

    fn frame(&mut self, text: &str) {
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
        let indent = body.bytes().take_while(|&c| c == b' ').count();
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

/// `SourceLoc` from an XML `<path>`/`<line>` pair (shared with the XML reader).
pub(crate) fn source_loc(path: &str, line: &str) -> Option<SourceLoc> {
    let path = path.trim();
    let line: u32 = line.trim().parse().ok()?;
    (!path.is_empty()).then(|| SourceLoc { file: clip(path).to_string(), line })
}

#[cfg(test)]
mod tests {
    use super::super::scan::scan_str;
    use super::*;
    use proptest::prelude::*;

    /// 200 printed records of one write site (of 4097 errors), the program's own lines.
    const OOB_WRITE: &str = recording!("h200/oob_write/memcheck.log");
    /// One invalid read, then the API error it causes and the program's own error line.
    const OOB_READ: &str = recording!("h200/oob_read/memcheck.log");
    /// A Triton kernel replayed in a CUDA graph: host stacks that end in Python frames, the
    /// program's `replayed` among the records.
    const TRITON_GRAPH: &str = recording!("h200/triton_graph/memcheck.log");
    /// PyTorch's device-side assert: `Warp assert` in `__assertfail`, then two API errors.
    const TORCH_ASSERT: &str = recording!("h200/torch_assert/memcheck.log");
    /// A clean run.
    const CLEAN: &str = recording!("h200/clean/memcheck.log");
    const MISALIGNED_LOG: &str = recording!("h200/misaligned/memcheck.log");
    const INLINED_LOG: &str = recording!("h200/inlined/memcheck.log");
    const TRITON_LOG: &str = recording!("h200/triton_worker/memcheck.log");
    /// A two-GPU torchrun job under memcheck (recorded by `debug-ima`,
    /// tests/fixtures/bundles/dist_fault-full): NCCL's API errors at start-up, rank 1's
    /// invalid reads, the API errors they cause.
    const DIST: &str = recording!("bundles/dist_fault-full/rungs/05-memcheck/stdout.log");
    /// An invalid read `after` an allocation, then an API error.
    const SMALL_22: &str = transcript!("22_memcheck_small.excerpt.log");
    /// A build without -lineinfo (no `in FILE:LINE`): its first record.
    const PLAIN_21: &str = transcript!("21_memcheck_plain.excerpt.log");
    /// `--generate-coredump`: the sanitizer writes a coredump itself.
    const COREDUMP_57: &str = transcript!("57_far_memcheck_coredump.excerpt.log");

    fn memcheck_faults(ev: &Evidence) -> Vec<&Fault> {
        ev.faults.iter().filter(|f| f.tool == Some(Tool::Memcheck)).collect()
    }

    /// `text` from its start to the end of its `n`-th record (the blank `========= ` line).
    fn records(text: &str, n: usize) -> &str {
        let mut seen = 0;
        let mut end = 0;
        for l in text.split_inclusive('\n') {
            end += l.len();
            if l.trim_end() == "=========" {
                seen += 1;
                if seen == n {
                    return &text[..end];
                }
            }
        }
        panic!("fewer than {n} records");
    }

    /// The first `n` lines of `text`.
    fn head(text: &str, n: usize) -> &str {
        let end: usize = text.split_inclusive('\n').take(n).map(str::len).sum();
        &text[..end]
    }

    /// The first record of `text`, from its `========= Invalid` line to its end.
    fn first_record(text: &str) -> &str {
        let one = records(text, 1);
        &one[one.find("========= Invalid").unwrap()..]
    }

    #[test]
    fn records_of_one_site_are_one_fault() {
        let ev = scan_str(OOB_WRITE, "oob_write/memcheck.log");
        assert!(ev.tools.contains(&Tool::Memcheck));
        let f = memcheck_faults(&ev);
        assert_eq!(f.len(), 1);
        let f = f[0];
        assert_eq!(f.error, Some(ErrorClass::InvalidAccess));
        assert_eq!(f.kernel.as_deref(), Some("scale_write(float*, int, long long)"));
        assert_eq!(f.mangled, None);
        assert_eq!(f.location, Some(SourceLoc { file: "oob_write.cu".into(), line: 7 }));
        assert_eq!(f.pc, Some(0x110));
        assert_eq!(f.count, 200);
        assert_eq!(f.block, Some([8, 0, 0]));
        assert_eq!(f.thread, Some([0, 0, 0]));
        assert_eq!(f.block_range, Some([[8, 0, 0], [8, 0, 0]]));
        assert_eq!(f.thread_range, Some([[0, 0, 0], [199, 0, 0]]));
        assert_eq!(f.detail.as_deref(), Some("out of bounds"));
        assert_eq!(
            f.access,
            Some(Access {
                kind: Some("write".into()),
                space: Some("__global__".into()),
                size: Some(4),
                address: Some(0x7f4b50802000),
                nearest: Some(Nearest {
                    distance: 34_359_730_176,
                    before: true,
                    allocation: 0x7f5350800000,
                    allocation_size: 16_384,
                }),
            })
        );
        assert_eq!(
            f.host_frames,
            vec![Frame {
                function: Some("main".into()),
                module: Some("oob_write".into()),
                ..Frame::default()
            }]
        );
        assert!(f.frames.is_empty());
        assert_eq!(ev.error_summary, Some(4097));
        assert!(ev.notes.iter().any(|n| n.contains("did not print 3897 of 4097 errors")), "{:?}", ev.notes);
        assert!(ev.api_errors.is_empty());
    }

    #[test]
    fn read_before_allocation_and_api_error() {
        let ev = scan_str(OOB_READ, "oob_read/memcheck.log");
        let f = memcheck_faults(&ev);
        assert_eq!(f.len(), 1);
        let f = f[0];
        assert_eq!(f.kernel.as_deref(), Some("gather_rows(const float*, const long long*, float*, int)"));
        assert_eq!(f.location, Some(SourceLoc { file: "oob_read.cu".into(), line: 8 }));
        assert_eq!(f.thread, Some([9, 0, 0]));
        assert_eq!(f.block, Some([3, 0, 0]));
        let a = f.access.as_ref().unwrap();
        assert_eq!(a.kind.as_deref(), Some("read"));
        assert_eq!(
            a.nearest,
            Some(Nearest {
                distance: 34_359_738_368,
                before: true,
                allocation: 0x7fa9e2800000,
                allocation_size: 4096
            })
        );
        assert_eq!(
            ev.api_errors,
            vec![ApiError {
                api: "cudaMemcpy".into(),
                error: "cudaErrorLaunchFailure".into(),
                code: Some(719),
                message: "unspecified launch failure".into(),
                count: 1,
            }]
        );
        assert_eq!(ev.error_summary, Some(2));
        assert!(!ev.notes.iter().any(|n| n.contains("did not print")));
    }

    #[test]
    fn read_after_allocation_and_api_error() {
        let ev = scan_str(SMALL_22, "22_memcheck_small.log");
        let f = memcheck_faults(&ev);
        assert_eq!(f.len(), 1);
        let f = f[0];
        assert_eq!(f.kernel.as_deref(), Some("sum_neighbors(const float*, float*, int)"));
        assert_eq!(f.location, Some(SourceLoc { file: "small_oob.cu".into(), line: 8 }));
        assert_eq!(f.thread, Some([231, 0, 0]));
        assert_eq!(f.block, Some([3, 0, 0]));
        let a = f.access.as_ref().unwrap();
        assert_eq!(a.kind.as_deref(), Some("read"));
        assert_eq!(
            a.nearest,
            Some(Nearest { distance: 1, before: false, allocation: 0x7f0496800000, allocation_size: 4000 })
        );
        assert_eq!(
            ev.api_errors,
            vec![ApiError {
                api: "cudaDeviceSynchronize".into(),
                error: "cudaErrorLaunchFailure".into(),
                code: Some(719),
                message: "unspecified launch failure".into(),
                count: 1,
            }]
        );
        assert_eq!(ev.error_summary, Some(2));
        assert!(!ev.notes.iter().any(|n| n.contains("did not print")));
    }

    #[test]
    fn without_line_info_the_offset_is_the_site() {
        let ev = scan_str(PLAIN_21, "21_memcheck_plain.log");
        let f = memcheck_faults(&ev);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].location, None);
        assert_eq!(f[0].pc, Some(0xc0));
        assert_eq!(f[0].kernel.as_deref(), Some("scatter_far(int*, int)"));
        assert_eq!(f[0].host_frames[0].module.as_deref(), Some("a_plain"));
    }

    #[test]
    fn python_host_frames_are_marked() {
        let ev = scan_str(TRITON_GRAPH, "triton_graph/memcheck.log");
        let f = memcheck_faults(&ev);
        assert_eq!(f.len(), 1);
        let f = f[0];
        assert_eq!(f.kernel.as_deref(), Some("gather_kv_kernel"));
        assert_eq!(f.location, Some(SourceLoc { file: "vllm_shaped.py".into(), line: 22 }));
        assert_eq!(f.pc, Some(0x100));
        assert_eq!(f.block, Some([41, 0, 0]));
        assert_eq!(f.count, 128);
        assert_eq!(f.host_frames.len(), 22);
        assert_eq!(f.host_frames[0], Frame { module: Some("libcudart.so.13".into()), ..Frame::default() });
        assert_eq!(f.host_frames[1].function.as_deref(), Some("cudaGraphLaunch"));
        assert_eq!(f.host_frames[2].function.as_deref(), Some("at::cuda::CUDAGraph::replay()"));
        assert_eq!(
            f.host_frames[21],
            Frame {
                function: Some("<module>".into()),
                file: Some("vllm_shaped.py".into()),
                line: Some(65),
                module: None,
                python: true,
            }
        );
        assert!(f.host_frames[20].python);
        assert!(!f.host_frames[18].python, "{:?}", f.host_frames[18]);
        assert_eq!(f.host_frames.iter().filter(|h| h.python).count(), 3);
    }

    #[test]
    fn warp_assert_and_grouped_api_errors() {
        let ev = scan_str(TORCH_ASSERT, "torch_assert/memcheck.log");
        let f = memcheck_faults(&ev);
        assert_eq!(f.len(), 1);
        let f = f[0];
        assert_eq!(f.error, Some(ErrorClass::DeviceAssert));
        assert_eq!(f.kernel, None, "__assertfail is not the user's kernel");
        assert_eq!(f.detail.as_deref(), Some("Warp assert"));
        assert_eq!(f.pc, Some(0x19a0));
        assert_eq!(f.thread, Some([5, 0, 0]));
        assert_eq!(f.frames, vec![Frame { function: Some("__assertfail".into()), ..Frame::default() }]);
        assert_eq!(f.host_frames.len(), 35);
        assert_eq!(
            f.host_frames[34],
            Frame {
                function: Some("<module>".into()),
                file: Some("torch_assert.py".into()),
                line: Some(8),
                module: None,
                python: true,
            }
        );
        assert_eq!(f.host_frames.iter().filter(|h| h.python).count(), 2);
        assert_eq!(ev.api_errors.len(), 2);
        assert_eq!(ev.api_errors[0].api, "cudaFree");
        assert_eq!(ev.api_errors[0].code, Some(710));
        assert_eq!(ev.api_errors[0].message, "device-side assert triggered");
        assert_eq!(ev.api_errors[1].api, "cudaGetLastError");
        assert_eq!(ev.error_summary, Some(3));
    }

    #[test]
    fn api_errors_group_by_error_and_api() {
        let ev = scan_str(DIST, "dist_fault-full/rungs/05-memcheck/stdout.log");
        let got: Vec<(&str, &str, u64)> =
            ev.api_errors.iter().map(|e| (e.error.as_str(), e.api.as_str(), e.count)).collect();
        assert_eq!(
            got,
            vec![
                ("cudaErrorNoKernelImageForDevice", "cudaFuncGetAttributes", 8),
                ("cudaErrorNoKernelImageForDevice", "cudaGetLastError", 8),
                ("cudaErrorLaunchFailure", "cudaEventQuery", 1),
                ("cudaErrorLaunchFailure", "cudaGetLastError", 1),
            ]
        );
        assert_eq!(ev.api_errors[0].code, Some(209));
        assert_eq!(ev.api_errors[0].message, "no kernel image is available for execution on the device");
        // Rank 1's invalid reads are one site.
        let f = memcheck_faults(&ev);
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].kernel.as_deref(), f[0].count), (Some("gather_kv_kernel"), 128));
        assert_eq!(ev.error_summary, Some(146));
    }

    #[test]
    fn sanitizer_coredump_and_clean_run() {
        let ev = scan_str(COREDUMP_57, "57_far_memcheck_coredump.log");
        assert_eq!(ev.coredumps, vec![CoredumpFile { path: "/tmp/cd/cs_core".into(), pid: None }]);
        assert_eq!(ev.error_summary, Some(1024));
        assert!(memcheck_faults(&ev).is_empty());
        let ev = scan_str(CLEAN, "clean/memcheck.log");
        assert!(ev.tools.contains(&Tool::Memcheck));
        assert_eq!(ev.error_summary, Some(0));
        assert!(ev.faults.is_empty());
    }

    /// `n` with thousands separators, as compute-sanitizer prints distances.
    fn grouped(n: u64) -> String {
        let digits = n.to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    }

    /// The first record of oob_write/memcheck.log repeated with the recorded pattern: thread
    /// x counts up (256 a block, from block 8), the address by 4, the distance down by 4.
    fn repeated_records(n: u32) -> String {
        let rec = first_record(OOB_WRITE);
        let mut s = String::from("========= COMPUTE-SANITIZER\n");
        for i in 0..n {
            let (tx, bx) = (i % 256, 8 + i / 256);
            let k = u64::from(i) * 4;
            s.push_str(
                &rec.replace(
                    "by thread (0,0,0) in block (8,0,0)",
                    &format!("by thread ({tx},0,0) in block ({bx},0,0)"),
                )
                .replace("0x7f4b50802000", &format!("{:#x}", 0x7f4b50802000u64 + k))
                .replace("34,359,730,176", &grouped(34_359_730_176 - k)),
            );
        }
        s
    }

    #[test]
    fn many_records_group_with_ranges() {
        let text = repeated_records(1000);
        // The pattern reproduces the recording's own second record.
        let second = &records(&text, 2)[records(&text, 1).len()..];
        assert_eq!(second, &records(OOB_WRITE, 2)[records(OOB_WRITE, 1).len()..]);
        let ev = scan_str(&text, "repeated.log");
        assert_eq!(ev.faults.len(), 1);
        let f = &ev.faults[0];
        assert_eq!(f.count, 1000);
        assert_eq!(f.thread_range, Some([[0, 0, 0], [255, 0, 0]]));
        assert_eq!(f.block_range, Some([[8, 0, 0], [11, 0, 0]]));
        assert_eq!(f.access.as_ref().unwrap().address, Some(0x7f4b50802000));
        assert_eq!(f.access.as_ref().unwrap().nearest.as_ref().unwrap().distance, 34_359_730_176);
        assert_eq!(f.host_frames.len(), 1);
    }

    #[test]
    fn sites_keep_order_of_first_appearance() {
        // oob_read's read site, then oob_write's write site (5 records), then oob_read again.
        let read = records(OOB_READ, 1);
        let write = records(OOB_WRITE, 5);
        let text = format!("{read}{write}{read}");
        let ev = scan_str(&text, "x.log");
        let got: Vec<(Option<&str>, u64)> =
            ev.faults.iter().map(|f| (f.kernel.as_deref(), f.count)).collect();
        assert_eq!(
            got,
            vec![
                (Some("gather_rows(const float*, const long long*, float*, int)"), 2),
                (Some("scale_write(float*, int, long long)"), 5)
            ]
        );
        assert_eq!(ev.faults[0].host_frames.len(), 1);
    }

    #[test]
    fn distinct_sites_are_capped() {
        let rec = first_record(OOB_WRITE);
        let mut text = String::new();
        for i in 0..(MAX_SITES + 10) {
            // Different lines are different sites.
            text.push_str(&rec.replace("in oob_write.cu:7", &format!("in oob_write.cu:{}", 100 + i)));
        }
        let ev = scan_str(&text, "x.log");
        assert_eq!(ev.faults.len(), MAX_SITES);
        assert!(ev.notes.iter().any(|n| n.contains("10 record(s) at sites beyond")), "{:?}", ev.notes);
    }

    #[test]
    fn misaligned_records_group_and_keep_no_nearest() {
        let ev = scan_str(MISALIGNED_LOG, "misaligned/memcheck.log");
        let f = memcheck_faults(&ev);
        assert_eq!(f.len(), 1);
        let f = f[0];
        assert_eq!(f.error, Some(ErrorClass::MisalignedAccess));
        assert_eq!(f.kernel.as_deref(), Some("sum_pairs(const char*, double*, int)"));
        assert_eq!(f.location, Some(SourceLoc { file: "misaligned.cu".into(), line: 8 }));
        assert_eq!(f.count, 200);
        assert_eq!(f.thread_range, Some([[0, 0, 0], [127, 0, 0]]));
        assert_eq!(f.block_range, Some([[0, 0, 0], [1, 0, 0]]));
        assert_eq!(f.detail.as_deref(), Some("misaligned"));
        let a = f.access.as_ref().unwrap();
        assert_eq!((a.kind.as_deref(), a.size), (Some("read"), Some(8)));
        // `and is inside the nearest allocation ...` has no distance: not a `Nearest`.
        assert_eq!(a.nearest, None);
        assert_eq!(ev.error_summary, Some(513));
    }

    #[test]
    fn device_frames_of_inlined_code() {
        let ev = scan_str(INLINED_LOG, "inlined/memcheck.log");
        let f = memcheck_faults(&ev);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].kernel.as_deref(), Some("store_scaled(float*, long long, float, float)"));
        assert_eq!(f[0].location, Some(SourceLoc { file: "store_helpers.cuh".into(), line: 5 }));
        assert_eq!(
            f[0].frames,
            vec![Frame {
                function: Some("apply_offsets(float*, const long long*, int)".into()),
                file: Some("inlined.cu".into()),
                line: Some(8),
                ..Frame::default()
            }]
        );
        assert_eq!(f[0].host_frames.len(), 1);
        assert_eq!(ev.api_errors.len(), 1);
    }

    #[test]
    fn triton_kernel_in_a_python_file() {
        let ev = scan_str(TRITON_LOG, "triton_worker/memcheck.log");
        let f = memcheck_faults(&ev);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].kernel.as_deref(), Some("gather_kv_kernel"));
        assert_eq!(f[0].location, Some(SourceLoc { file: "vllm_shaped.py".into(), line: 22 }));
        assert_eq!(f[0].count, 128);
        assert!(f[0].frames.is_empty());
        assert_eq!(f[0].host_frames.iter().filter(|h| h.python).count(), 11);
        // A multiprocessing-spawned worker: its stack ends in `<module> in <string>:1`.
        let last = f[0].host_frames.last().unwrap();
        assert_eq!(
            (last.function.as_deref(), last.file.as_deref(), last.line),
            (Some("<module>"), Some("<string>"), Some(1))
        );
        assert!(last.python);
        let apis: Vec<(&str, u64)> = ev.api_errors.iter().map(|e| (e.api.as_str(), e.count)).collect();
        assert_eq!(apis, vec![("cudaLaunchKernel", 1), ("cudaGetLastError", 2), ("cudaFree", 1)]);
        assert_eq!(ev.error_summary, Some(132));
    }

    #[test]
    fn rows_of_equals_signs_are_not_sanitizer_lines() {
        let ev = scan_str("======================================================\n", "x.log");
        assert!(!ev.tools.contains(&Tool::Memcheck));
    }

    #[test]
    fn helpers() {
        assert_eq!(grouped_u64("34,359,738,368"), Some(34_359_738_368));
        assert_eq!(grouped_u64("18,446,744,073,709,551,615"), Some(u64::MAX));
        assert_eq!(grouped_u64("99,999,999,999,999,999,999"), None);
        assert_eq!(grouped_u64(""), None);
        assert_eq!(
            split_position("scale_write(float *, int, long long)+0x110 in oob_write.cu:7"),
            ("scale_write(float *, int, long long)", Some("0x110"), Some("oob_write.cu:7"))
        );
        assert_eq!(split_position("__assertfail+0x1930"), ("__assertfail", Some("0x1930"), None));
        assert_eq!(parse_by_thread(b"(9,0,0) in block (3,0,0)"), Some(([9, 0, 0], [3, 0, 0])));
        assert_eq!(parse_by_thread(b"(9,0) in block (3,0,0)"), None);
        assert_eq!(parse_by_thread(b"(4294967296,0,0) in block (3,0,0)"), None);
        assert_eq!(parse_by_thread(b"(1,2,3) in block (4,5,6"), None);
        // A host frame with a source position and a module (NCCL's).
        let nccl = DIST.lines().find_map(|l| l.split_once("Host Frame: ncclInit")).unwrap();
        let f = parse_host_frame(&format!("ncclInit{}", nccl.1));
        assert_eq!(f.function.as_deref(), Some("ncclInitKernelsForDevice(int, int, unsigned long*)"));
        assert_eq!((f.file.as_deref(), f.line), (Some("enqueue.cc"), Some(52)));
        assert_eq!(f.module.as_deref(), Some("libnccl.so.2"));
        assert!(!f.python);
        // A `[clone .isra.0]` suffix stays part of the function (torch_assert/memcheck.log).
        let clone = TORCH_ASSERT
            .lines()
            .filter_map(|l| l.split_once("Host Frame: ").map(|(_, t)| t))
            .find(|t| t.contains("[clone .isra.0]"))
            .unwrap();
        let f = parse_host_frame(clone);
        assert_eq!(
            f.function.as_deref(),
            Some("at::native::(anonymous namespace)::nll_loss_forward_out_cuda_template(at::Tensor const&, at::Tensor const&, at::Tensor const&, at::Tensor const&, at::Tensor const&, long, long)::{lambda()#3}::operator()() const::{lambda()#2}::operator()() const [clone .isra.0]")
        );
        assert_eq!(f.module.as_deref(), Some("libtorch_cuda.so"));
        assert_eq!(
            kernel_name("_Z11gather_rowsPKfPKxPfi"),
            (
                Some("gather_rows(float const*, long long const*, float*, int)".into()),
                Some("_Z11gather_rowsPKfPKxPfi".into())
            )
        );
    }

    #[test]
    fn every_truncation_of_real_output_is_safe() {
        let write = records(OOB_WRITE, 5);
        for text in [write, OOB_READ, records(TORCH_ASSERT, 1), SMALL_22, head(DIST, 6), COREDUMP_57] {
            for (i, _) in text.char_indices() {
                let ev = scan_str(&text[..i], "t.log");
                assert!(ev.faults.len() <= 2);
            }
        }
        // Cut inside a record before its site is known: the record is dropped, with a note.
        let cut = write.find("=========     Access to 0x7f4b50802004").unwrap();
        let ev = scan_str(&write[..cut], "t.log");
        assert_eq!(ev.faults.len(), 1);
        assert_eq!(ev.faults[0].count, 1);
        assert!(ev.notes.iter().any(|n| n.contains("cut off")), "{:?}", ev.notes);
        // Cut after it: it counts.
        let cut = write.find("=========     and is 34,359,730,172").unwrap();
        let ev = scan_str(&write[..cut], "t.log");
        assert_eq!(ev.faults[0].count, 2);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn random_text_never_panics(s in "\\PC*") {
            let _ = scan_str(&s, "r.log");
        }

        #[test]
        fn prefixed_garbage_never_panics(lines in proptest::collection::vec(
            ("(=========)?( {0,9})?(Invalid |at |by thread |Access to |Address |and is |Host Frame:|Device Frame:|Program hit |ERROR SUMMARY: )?", "\\PC{0,40}"),
            0..40,
        )) {
            let text: String = lines.iter().map(|(a, b)| format!("{a}{b}\n")).collect();
            let _ = scan_str(&text, "r.log");
        }

        #[test]
        fn spliced_real_output_never_panics(cut in 0usize..4000, junk in "\\PC{0,30}") {
            let s = crate::findings::fuzz::inserted(records(TRITON_GRAPH, 1), cut, &junk);
            let _ = scan_str(&s, "r.log");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// Multi-byte, invalid and 5,000-character kernel names where memcheck prints the kernel
        /// (`at NAME(...)+0x110 in f.cu:7`, templates too): no panic; a plain name comes through whole.
        #[test]
        fn multi_byte_kernel_names_never_panic(
            which in any::<proptest::sample::Index>(),
            name in crate::findings::fuzz::name(),
            edits in crate::findings::fuzz::invalid_edits(),
        ) {
            let reals: Vec<_> = ["memcheck.log"].iter().flat_map(|f| crate::findings::fuzz::real(f)).collect();
            let _a = crate::findings::fuzz::splice_and_run(&reals, which, &name, &edits);
            let plain = name.chars().all(|c| c.is_alphanumeric() || c == '_') && name.len() < MAX_FIELD / 2;
            if edits.is_empty() && plain && reals[which.index(reals.len())].kernel == "scale_write" {
                let v = _a.verdict.expect("the record still locates the fault");
                prop_assert!(v.kernel.starts_with(&format!("{name}(")), "{} for {name}", v.kernel);
            }
        }
    }
}

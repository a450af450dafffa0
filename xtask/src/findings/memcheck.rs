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
fn split_position(s: &str) -> (&str, Option<&str>, Option<&str>) {
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
fn parse_host_frame(s: &str) -> Frame {
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
fn dim3_prefix(s: &[u8]) -> Option<(Dim3, usize)> {
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

    /// 55_far_memcheck.log (H200, CUDA 13.0), without the recorder's `$` and `[exit]` lines.
    const FAR: &str = "\
========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at scatter_far(int *, int)+0xf0 in ima_far.cu:13
=========     by thread (0,0,0) in block (2,0,0)
=========     Access to 0x7f20c926c800 is out of bounds
=========     and is 31,999,997,952 bytes before the nearest allocation at 0x7f283c800000 of size 4,096 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: main [0x8dca] in f_li
========= 
========= Invalid __global__ write of size 4 bytes
=========     at scatter_far(int *, int)+0xf0 in ima_far.cu:13
=========     by thread (1,0,0) in block (2,0,0)
=========     Access to 0x7f20c926c804 is out of bounds
=========     and is 31,999,997,948 bytes before the nearest allocation at 0x7f283c800000 of size 4,096 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: main [0x8dca] in f_li
========= 
========= Invalid __global__ write of size 4 bytes
=========     at scatter_far(int *, int)+0xf0 in ima_far.cu:13
=========     by thread (2,0,0) in block (2,0,0)
=========     Access to 0x7f20c926c808 is out of bounds
=========     and is 31,999,997,944 bytes before the nearest allocation at 0x7f283c800000 of size 4,096 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: main [0x8dca] in f_li
========= 
========= Invalid __global__ write of size 4 bytes
=========     at scatter_far(int *, int)+0xf0 in ima_far.cu:13
=========     by thread (3,0,0) in block (2,0,0)
=========     Access to 0x7f20c926c80c is out of bounds
=========     and is 31,999,997,940 bytes before the nearest allocation at 0x7f283c800000 of size 4,096 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: main [0x8dca] in f_li
========= 
========= Invalid __global__ write of size 4 bytes
=========     at scatter_far(int *, int)+0xf0 in ima_far.cu:13
=========     by thread (4,0,0) in block (2,0,0)
=========     Access to 0x7f20c926c810 is out of bounds
=========     and is 31,999,997,936 bytes before the nearest allocation at 0x7f283c800000 of size 4,096 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: main [0x8dca] in f_li
========= 
launched both kernels
CUDA error at ima_far.cu:32: cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost): unspecified launch failure
========= Target application returned an error
========= ERROR SUMMARY: 1026 errors
========= ERROR SUMMARY: 1021 errors were not printed. Use --print-limit option to adjust the number of printed errors
";

    /// 22_memcheck_small.log: an invalid read `after` an allocation, then an API error.
    const SMALL: &str = "\
========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at sum_neighbors(const float *, float *, int)+0xc0 in small_oob.cu:8
=========     by thread (231,0,0) in block (3,0,0)
=========     Access to 0x7f0496800fa0 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f0496800000 of size 4,000 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: main [0x8d47] in s_li
========= 
========= Program hit cudaErrorLaunchFailure (error 719) due to \"unspecified launch failure\" on CUDA API call to cudaDeviceSynchronize.
=========     Saved host backtrace up to driver entry point at error
=========         Host Frame: main [0x8d4c] in s_li
========= 
sync: unspecified launch failure
========= Target application returned an error
========= ERROR SUMMARY: 2 errors
";

    /// 21_memcheck_plain.log: a build without -lineinfo (no `in FILE:LINE`), first record.
    const PLAIN: &str = "\
========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at scatter_far(int *, int)+0xc0
=========     by thread (0,0,0) in block (2,0,0)
=========     Access to 0x7f33c4a88400 is out of bounds
=========     and is 399,997,952 bytes before the nearest allocation at 0x7f33dc800000 of size 4,096 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: main [0x8db5] in a_plain
========= 
";

    /// 38_graph_memcheck.log: a PyTorch kernel without line info, host stack ending in
    /// Python frames; the program's own output is interleaved.
    const GRAPH: &str = "\
========= COMPUTE-SANITIZER
replayed
========= Invalid __global__ write of size 4 bytes
=========     at void at::native::vectorized_elementwise_kernel<(int)4, at::native::FillFunctor<unsigned char>, std::array<char *, (unsigned long)1>>(int, T2, T3)+0x130
=========     by thread (0,0,0) in block (2391,0,0)
=========     Access to 0x7fcdb7faba00 is out of bounds
=========     and is 3,848,705 bytes after the nearest allocation at 0x7fcdb7a00000 of size 2,097,152 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame:  [0x2062a] in libcudart.so.13
=========         Host Frame: cudaGraphLaunch [0x76211] in libcudart.so.13
=========         Host Frame: at::cuda::CUDAGraph::replay() [0xcb1646] in libtorch_cuda.so
=========         Host Frame: torch::detail::wrap_pybind_function_impl_<void (at::cuda::CUDAGraph::*)(), 0ul, true>(void (at::cuda::CUDAGraph::*&&)(), std::integer_sequence<unsigned long, 0ul>, std::integral_constant<bool, true>)::{lambda(at::cuda::CUDAGraph&)#1}::operator()(at::cuda::CUDAGraph&) const [0xe6fbb1] in libtorch_python.so
=========         Host Frame: pybind11::cpp_function::initialize<torch::detail::wrap_pybind_function_impl_<void (at::cuda::CUDAGraph::*)(), 0ul, true>(void (at::cuda::CUDAGraph::*&&)(), std::integer_sequence<unsigned long, 0ul>, std::integral_constant<bool, true>)::{lambda(at::cuda::CUDAGraph&)#1}, void, at::cuda::CUDAGraph&, pybind11::name, pybind11::is_method, pybind11::sibling>(void (at::cuda::CUDAGraph::*&&)(), void (*)(at::cuda::CUDAGraph&), pybind11::name const&, pybind11::is_method const&, pybind11::sibling const&)::{lambda(pybind11::detail::function_call&)#1}::_FUN(pybind11::detail::function_call&) [0xe7083c] in libtorch_python.so
=========         Host Frame: pybind11::cpp_function::dispatcher(_object*, _object*, _object*) [0x41105f] in libtorch_python.so
=========         Host Frame:  [0x18216e] in python3
=========         Host Frame: _PyObject_MakeTpCall [0x148fb4] in python3
=========         Host Frame: _PyEval_EvalFrameDefault [0x1d710e] in python3
=========         Host Frame: PyEval_EvalCode [0x1d55ea] in python3
=========         Host Frame:  [0x208851] in python3
=========         Host Frame:  [0x2b50d2] in python3
=========         Host Frame: _PyRun_SimpleFileObject [0x2b4e39] in python3
=========         Host Frame: _PyRun_AnyFileObject [0x2b4c6e] in python3
=========         Host Frame: Py_RunMain [0x2bccd4] in python3
=========         Host Frame: Py_BytesMain [0x2bc7bc] in python3
=========         Host Frame:  [0x2a1c9] in libc.so.6
=========         Host Frame: __libc_start_main [0x2a28a] in libc.so.6
=========         Host Frame: _start [0x257a04] in python3
=========         Host Frame: replay in graphs.py:139
=========         Host Frame: <module> in graph_ima.py:32
========= 
";

    /// 39_child_memcheck.log: a device assert in a spawned child (lines 2-40, verbatim), then
    /// its two API errors and the summary (lines 41-42, 74-76, 108, 124: host frames left out).
    const CHILD: &str = r#"========= COMPUTE-SANITIZER
/pytorch/aten/src/ATen/native/cuda/TensorCompare.cu:109: _assert_async_cuda_kernel: block: [0,0,0], thread: [0,0,0] Assertion `` failed.
========= Warp assert
=========     at __assertfail+0x19a0
=========     by thread (0,0,0) in block (0,0,0)
=========         Device Frame: __assertfail+0x1930
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame:  [0x1376c] in libcudart.so.13
=========         Host Frame: cudaLaunchKernel [0x745b7] in libcudart.so.13
=========         Host Frame: at::native::_assert_async_msg_cuda(at::Tensor const&, std::basic_string_view<char, std::char_traits<char> >) [0x2bf343d] in libtorch_cuda.so
=========         Host Frame: c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<c10::CompileTimeFunctionPointer<void (at::Tensor const&), &at::(anonymous namespace)::(anonymous namespace)::wrapper_CUDA___assert_async>, void, c10::guts::typelist::typelist<at::Tensor const&> >, void (at::Tensor const&)>::call(c10::OperatorKernel*, c10::DispatchKeySet, at::Tensor const&) [0x36b8739] in libtorch_cuda.so
=========         Host Frame: at::_ops::_assert_async::call(at::Tensor const&) [0x2e2b92e] in libtorch_cpu.so
=========         Host Frame: at::native::makeLinearIndex(at::Tensor, c10::IListRef<at::OptionalTensorRef>, bool) [clone .constprop.0] [0x1faf192] in libtorch_cuda.so
=========         Host Frame: at::native::(anonymous namespace)::index_put_with_sort_kernel(at::Tensor&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool, bool) [0x1fb137e] in libtorch_cuda.so
=========         Host Frame: at::native::_index_put_impl_(at::Tensor&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool, bool) [0x21a6585] in libtorch_cpu.so
=========         Host Frame: c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<c10::CompileTimeFunctionPointer<at::Tensor& (at::Tensor&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool, bool), &at::(anonymous namespace)::(anonymous namespace)::wrapper_CUDA___index_put_impl_>, at::Tensor&, c10::guts::typelist::typelist<at::Tensor&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool, bool> >, at::Tensor& (at::Tensor&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool, bool)>::call(c10::OperatorKernel*, c10::DispatchKeySet, at::Tensor&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool, bool) [0x36b6ef5] in libtorch_cuda.so
=========         Host Frame: at::_ops::_index_put_impl_::call(at::Tensor&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool, bool) [0x282b5fe] in libtorch_cpu.so
=========         Host Frame: c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<c10::CompileTimeFunctionPointer<at::Tensor& (c10::DispatchKeySet, at::Tensor&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool), &torch::ADInplaceOrView::(anonymous namespace)::index_put_>, at::Tensor&, c10::guts::typelist::typelist<c10::DispatchKeySet, at::Tensor&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool> >, at::Tensor& (c10::DispatchKeySet, at::Tensor&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool)>::call(c10::OperatorKernel*, c10::DispatchKeySet, at::Tensor&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool) [0x5c17f43] in libtorch_cpu.so
=========         Host Frame: torch::autograd::VariableType::(anonymous namespace)::index_put_(c10::DispatchKeySet, at::Tensor&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool) [0x538c8ca] in libtorch_cpu.so
=========         Host Frame: at::_ops::index_put_::call(at::Tensor&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool) [0x2ebdec5] in libtorch_cpu.so
=========         Host Frame: torch::autograd::THPVariable_index_put_(_object*, _object*, _object*) [0x4cd66b] in libtorch_python.so
=========         Host Frame:  [0x151417] in python3
=========         Host Frame: PyObject_Vectorcall [0x1499b4] in python3
=========         Host Frame: _PyEval_EvalFrameDefault [0x1d710e] in python3
=========         Host Frame: PyEval_EvalCode [0x1d55ea] in python3
=========         Host Frame: PyRun_StringFlags [0x208732] in python3
=========         Host Frame: PyRun_SimpleStringFlags [0x2b40dd] in python3
=========         Host Frame: Py_RunMain [0x2bcda0] in python3
=========         Host Frame: Py_BytesMain [0x2bc7bc] in python3
=========         Host Frame:  [0x2a1c9] in libc.so.6
=========         Host Frame: __libc_start_main [0x2a28a] in libc.so.6
=========         Host Frame: _start [0x257a04] in python3
=========         Host Frame: worker in child_ima.py:8
=========         Host Frame: run in process.py:108
=========         Host Frame: _bootstrap in process.py:314
=========         Host Frame: _main in spawn.py:135
=========         Host Frame: spawn_main in spawn.py:122
=========         Host Frame: <module> in <string>:1
========= 
========= Program hit cudaErrorAssert (error 710) due to "device-side assert triggered" on CUDA API call to cudaLaunchKernel.
=========     Saved host backtrace up to driver entry point at error
========= 
========= Program hit cudaErrorAssert (error 710) due to "device-side assert triggered" on CUDA API call to cudaGetLastError.
=========     Saved host backtrace up to driver entry point at error
========= 
========= ERROR SUMMARY: 3 errors
"#;

    /// 87_dist_memcheck.log: NCCL's API errors under memcheck (lines 2-9, 44-46, 82-84, 120,
    /// 462, 483-485: the rest of each host stack left out).
    const DIST: &str = r#"========= COMPUTE-SANITIZER

*****************************************
Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed. 
*****************************************
========= Program hit cudaErrorNoKernelImageForDevice (error 209) due to "no kernel image is available for execution on the device" on CUDA API call to cudaFuncGetAttributes.
=========     Saved host backtrace up to driver entry point at error
=========         Host Frame: ncclInitKernelsForDevice(int, int, unsigned long*) in enqueue.cc:52 [0x6d9d3] in libnccl.so.2
========= 
========= Program hit cudaErrorNoKernelImageForDevice (error 209) due to "no kernel image is available for execution on the device" on CUDA API call to cudaGetLastError.
=========     Saved host backtrace up to driver entry point at error
========= 
========= Program hit cudaErrorNoKernelImageForDevice (error 209) due to "no kernel image is available for execution on the device" on CUDA API call to cudaFuncGetAttributes.
=========     Saved host backtrace up to driver entry point at error
========= 
======================================================
========= Target application returned an error
========= ERROR SUMMARY: 225814 errors
========= ERROR SUMMARY: 225804 errors were not printed. Use --print-limit option to adjust the number of printed errors
"#;

    /// 57_far_memcheck_coredump.log: the sanitizer writes a coredump itself.
    const COREDUMP: &str = "\
========= COMPUTE-SANITIZER
========= Generating coredump file /tmp/cd/cs_core
========= It can be loaded in the debugger with the following command:
========= cuda-gdb -ex 'target cudacore /tmp/cd/cs_core'
Starting GPU coredump generation, set the CUDA_COREDUMP_SHOW_PROGRESS environment variable to 1 to enable more detailed output
========= ERROR SUMMARY: 1024 errors
========= ERROR SUMMARY: 924 errors were not printed. Use --print-limit option to adjust the number of printed errors
";

    /// 71_time_assert_memcheck.log: a clean run.
    const CLEAN: &str = "\
========= COMPUTE-SANITIZER
ok 4.143046855926514
========= ERROR SUMMARY: 0 errors
";

    fn memcheck_faults(ev: &Evidence) -> Vec<&Fault> {
        ev.faults.iter().filter(|f| f.tool == Some(Tool::Memcheck)).collect()
    }

    #[test]
    fn five_records_of_one_site_are_one_fault() {
        let ev = scan_str(FAR, "55_far_memcheck.log");
        assert!(ev.tools.contains(&Tool::Memcheck));
        let f = memcheck_faults(&ev);
        assert_eq!(f.len(), 1);
        let f = f[0];
        assert_eq!(f.error, Some(ErrorClass::InvalidAccess));
        assert_eq!(f.kernel.as_deref(), Some("scatter_far(int*, int)"));
        assert_eq!(f.mangled, None);
        assert_eq!(f.location, Some(SourceLoc { file: "ima_far.cu".into(), line: 13 }));
        assert_eq!(f.pc, Some(0xf0));
        assert_eq!(f.count, 5);
        assert_eq!(f.block, Some([2, 0, 0]));
        assert_eq!(f.thread, Some([0, 0, 0]));
        assert_eq!(f.block_range, Some([[2, 0, 0], [2, 0, 0]]));
        assert_eq!(f.thread_range, Some([[0, 0, 0], [4, 0, 0]]));
        assert_eq!(f.detail.as_deref(), Some("out of bounds"));
        assert_eq!(
            f.access,
            Some(Access {
                kind: Some("write".into()),
                space: Some("__global__".into()),
                size: Some(4),
                address: Some(0x7f20c926c800),
                nearest: Some(Nearest {
                    distance: 31_999_997_952,
                    before: true,
                    allocation: 0x7f283c800000,
                    allocation_size: 4096,
                }),
            })
        );
        assert_eq!(
            f.host_frames,
            vec![Frame { function: Some("main".into()), module: Some("f_li".into()), ..Frame::default() }]
        );
        assert!(f.frames.is_empty());
        assert_eq!(ev.error_summary, Some(1026));
        assert!(ev.notes.iter().any(|n| n.contains("did not print 1021 of 1026 errors")), "{:?}", ev.notes);
        assert!(ev.api_errors.is_empty());
    }

    #[test]
    fn read_after_allocation_and_api_error() {
        let ev = scan_str(SMALL, "22_memcheck_small.log");
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
        let ev = scan_str(PLAIN, "21_memcheck_plain.log");
        let f = memcheck_faults(&ev);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].location, None);
        assert_eq!(f[0].pc, Some(0xc0));
        assert_eq!(f[0].kernel.as_deref(), Some("scatter_far(int*, int)"));
        assert_eq!(f[0].host_frames[0].module.as_deref(), Some("a_plain"));
    }

    #[test]
    fn python_host_frames_are_marked() {
        let ev = scan_str(GRAPH, "38_graph_memcheck.log");
        let f = memcheck_faults(&ev);
        assert_eq!(f.len(), 1);
        let f = f[0];
        assert_eq!(
            f.kernel.as_deref(),
            Some("void at::native::vectorized_elementwise_kernel<(int)4, at::native::FillFunctor<unsigned char>, std::array<char*, (unsigned long)1>>(int, T2, T3)")
        );
        assert_eq!(f.pc, Some(0x130));
        assert_eq!(f.block, Some([2391, 0, 0]));
        assert_eq!(f.host_frames.len(), 21);
        assert_eq!(f.host_frames[0], Frame { module: Some("libcudart.so.13".into()), ..Frame::default() });
        assert_eq!(f.host_frames[2].function.as_deref(), Some("at::cuda::CUDAGraph::replay()"));
        assert_eq!(
            f.host_frames[20],
            Frame {
                function: Some("<module>".into()),
                file: Some("graph_ima.py".into()),
                line: Some(32),
                module: None,
                python: true,
            }
        );
        assert!(f.host_frames[19].python);
        assert_eq!(f.host_frames.iter().filter(|h| h.python).count(), 2);
    }

    #[test]
    fn warp_assert_and_grouped_api_errors() {
        let ev = scan_str(CHILD, "39_child_memcheck.log");
        let f = memcheck_faults(&ev);
        assert_eq!(f.len(), 1);
        let f = f[0];
        assert_eq!(f.error, Some(ErrorClass::DeviceAssert));
        assert_eq!(f.kernel, None, "__assertfail is not the user's kernel");
        assert_eq!(f.detail.as_deref(), Some("Warp assert"));
        assert_eq!(f.pc, Some(0x19a0));
        assert_eq!(f.thread, Some([0, 0, 0]));
        assert_eq!(f.frames, vec![Frame { function: Some("__assertfail".into()), ..Frame::default() }]);
        assert_eq!(f.host_frames.len(), 31);
        assert_eq!(f.host_frames[30].file.as_deref(), Some("<string>"));
        assert!(f.host_frames[30].python);
        assert_eq!(f.host_frames.iter().filter(|h| h.python).count(), 6);
        assert_eq!(ev.api_errors.len(), 2);
        assert_eq!(ev.api_errors[0].api, "cudaLaunchKernel");
        assert_eq!(ev.api_errors[0].code, Some(710));
        assert_eq!(ev.api_errors[0].message, "device-side assert triggered");
        assert_eq!(ev.api_errors[1].api, "cudaGetLastError");
        assert_eq!(ev.error_summary, Some(3));
    }

    #[test]
    fn api_errors_group_by_error_and_api() {
        let ev = scan_str(DIST, "87_dist_memcheck.log");
        assert!(memcheck_faults(&ev).is_empty());
        let got: Vec<(&str, u64)> = ev.api_errors.iter().map(|e| (e.api.as_str(), e.count)).collect();
        assert_eq!(got, vec![("cudaFuncGetAttributes", 2), ("cudaGetLastError", 1)]);
        assert_eq!(ev.api_errors[0].error, "cudaErrorNoKernelImageForDevice");
        assert_eq!(ev.api_errors[0].code, Some(209));
        assert_eq!(ev.api_errors[0].message, "no kernel image is available for execution on the device");
        assert_eq!(ev.error_summary, Some(225_814));
    }

    #[test]
    fn sanitizer_coredump_and_clean_run() {
        let ev = scan_str(COREDUMP, "57_far_memcheck_coredump.log");
        assert_eq!(ev.coredumps, vec![CoredumpFile { path: "/tmp/cd/cs_core".into(), pid: None }]);
        assert_eq!(ev.error_summary, Some(1024));
        assert!(memcheck_faults(&ev).is_empty());
        let ev = scan_str(CLEAN, "71_time_assert_memcheck.log");
        assert!(ev.tools.contains(&Tool::Memcheck));
        assert_eq!(ev.error_summary, Some(0));
        assert!(ev.faults.is_empty());
    }

    /// The first record of 20_memcheck.log repeated with the recorded pattern: thread x
    /// counts up, the address by 4, the distance down by 4.
    fn repeated_far_records(n: u32) -> String {
        let mut s = String::from("========= COMPUTE-SANITIZER\n");
        for i in 0..n {
            let (tx, bx) = (i % 128, 2 + i / 128);
            let k = u64::from(i) * 4;
            s.push_str(&format!(
                "========= Invalid __global__ write of size 4 bytes\n\
                 =========     at scatter_far(int *, int)+0xc0 in ima_async.cu:13\n\
                 =========     by thread ({tx},0,0) in block ({bx},0,0)\n\
                 =========     Access to {:#x} is out of bounds\n\
                 =========     and is {} bytes before the nearest allocation at 0x7fcea8800000 of size 4,096 bytes\n\
                 =========     Saved host backtrace up to driver entry point at kernel launch time\n\
                 =========         Host Frame: main [0x8db5] in a_li\n\
                 ========= \n",
                0x7fce90a88400u64 + k,
                399_997_952 - k,
            ));
        }
        s
    }

    #[test]
    fn many_records_group_with_ranges() {
        let ev = scan_str(&repeated_far_records(1000), "20.log");
        assert_eq!(ev.faults.len(), 1);
        let f = &ev.faults[0];
        assert_eq!(f.count, 1000);
        assert_eq!(f.thread_range, Some([[0, 0, 0], [127, 0, 0]]));
        assert_eq!(f.block_range, Some([[2, 0, 0], [9, 0, 0]]));
        assert_eq!(f.access.as_ref().unwrap().address, Some(0x7fce90a88400));
        assert_eq!(f.access.as_ref().unwrap().nearest.as_ref().unwrap().distance, 399_997_952);
        assert_eq!(f.host_frames.len(), 1);
    }

    #[test]
    fn sites_keep_order_of_first_appearance() {
        // 22's read site, then 55's write site, then 22 again.
        let small = &SMALL[..SMALL.find("========= Program hit").unwrap()];
        let far = &FAR[..FAR.find("launched").unwrap()];
        let text = format!("{small}{far}{small}");
        let ev = scan_str(&text, "x.log");
        let got: Vec<(Option<&str>, u64)> =
            ev.faults.iter().map(|f| (f.kernel.as_deref(), f.count)).collect();
        assert_eq!(
            got,
            vec![(Some("sum_neighbors(const float*, float*, int)"), 2), (Some("scatter_far(int*, int)"), 5)]
        );
        assert_eq!(ev.faults[0].host_frames.len(), 1);
    }

    #[test]
    fn distinct_sites_are_capped() {
        let rec = &PLAIN[PLAIN.find("========= Invalid").unwrap()..];
        let mut text = String::new();
        for i in 0..(MAX_SITES + 10) {
            // Different offsets are different sites in a build without line info.
            text.push_str(&rec.replace("+0xc0", &format!("+{:#x}", 0x10 + i * 0x10)));
        }
        let ev = scan_str(&text, "x.log");
        assert_eq!(ev.faults.len(), MAX_SITES);
        assert!(ev.notes.iter().any(|n| n.contains("10 record(s) at sites beyond")), "{:?}", ev.notes);
    }

    /// The project's own recordings (tests/fixtures/h200, H200, CUDA 13.0).
    const MISALIGNED_LOG: &str = include_str!("../../../tests/fixtures/h200/misaligned/memcheck.log");
    const INLINED_LOG: &str = include_str!("../../../tests/fixtures/h200/inlined/memcheck.log");
    const TRITON_LOG: &str = include_str!("../../../tests/fixtures/h200/triton_worker/memcheck.log");

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
        assert_eq!(grouped_u64("18,446,603,832,858,691,073"), Some(18_446_603_832_858_691_073));
        assert_eq!(grouped_u64("99,999,999,999,999,999,999"), None);
        assert_eq!(grouped_u64(""), None);
        assert_eq!(
            split_position("scatter_far(int *, int)+0xf0 in ima_far.cu:13"),
            ("scatter_far(int *, int)", Some("0xf0"), Some("ima_far.cu:13"))
        );
        assert_eq!(split_position("__assertfail+0x1930"), ("__assertfail", Some("0x1930"), None));
        assert_eq!(parse_by_thread(b"(231,0,0) in block (3,0,0)"), Some(([231, 0, 0], [3, 0, 0])));
        assert_eq!(parse_by_thread(b"(231,0) in block (3,0,0)"), None);
        assert_eq!(parse_by_thread(b"(4294967296,0,0) in block (3,0,0)"), None);
        assert_eq!(parse_by_thread(b"(1,2,3) in block (4,5,6"), None);
        let f = parse_host_frame("ncclCommInitRankConfig in init.cc:2162 [0x8a0b5] in libnccl.so.2");
        assert_eq!(f.function.as_deref(), Some("ncclCommInitRankConfig"));
        assert_eq!((f.file.as_deref(), f.line), (Some("init.cc"), Some(2162)));
        assert_eq!(f.module.as_deref(), Some("libnccl.so.2"));
        assert!(!f.python);
        let f = parse_host_frame("at::native::makeLinearIndex(at::Tensor, c10::IListRef<at::OptionalTensorRef>, bool) [clone .constprop.0] [0x1faf192] in libtorch_cuda.so");
        assert_eq!(
            f.function.as_deref(),
            Some("at::native::makeLinearIndex(at::Tensor, c10::IListRef<at::OptionalTensorRef>, bool) [clone .constprop.0]")
        );
        assert_eq!(
            kernel_name("_Z11scatter_farPii"),
            (Some("scatter_far(int*, int)".into()), Some("_Z11scatter_farPii".into()))
        );
    }

    #[test]
    fn every_truncation_of_real_output_is_safe() {
        for text in [FAR, SMALL, CHILD, DIST, COREDUMP] {
            for (i, _) in text.char_indices() {
                let ev = scan_str(&text[..i], "t.log");
                assert!(ev.faults.len() <= 2);
            }
        }
        // Cut inside a record before its site is known: the record is dropped, with a note.
        let cut = FAR.find("=========     Access to 0x7f20c926c804").unwrap();
        let ev = scan_str(&FAR[..cut], "t.log");
        assert_eq!(ev.faults.len(), 1);
        assert_eq!(ev.faults[0].count, 1);
        assert!(ev.notes.iter().any(|n| n.contains("cut off")), "{:?}", ev.notes);
        // Cut after it: it counts.
        let cut = FAR.find("=========     and is 31,999,997,948").unwrap();
        let ev = scan_str(&FAR[..cut], "t.log");
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
            let mut s = GRAPH.to_string();
            let mut at = cut.min(s.len());
            while !s.is_char_boundary(at) {
                at -= 1;
            }
            s.insert_str(at, &junk);
            let _ = scan_str(&s, "r.log");
        }
    }
}

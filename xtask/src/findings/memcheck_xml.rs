//! compute-sanitizer's `--xml --save FILE` report (`<ComputeSanitizerOutput>` of `<record>`s),
//! read with a streaming pull parser into the same grouped [`Fault`]s (tool
//! `memcheck-xml`) and [`ApiError`]s as the text reader in [`super::memcheck`].
//!
//! Must not: build a document tree, keep more than the record being read (groups, frames
//! and field lengths are capped), or panic on any byte sequence. A malformed or truncated
//! report keeps every record that was complete and adds a note naming the byte position.

use std::io::BufRead;

use quick_xml::events::Event;
use quick_xml::Reader;

use super::memcheck::{
    access_class, clip, kernel_name, parse_program_hit, push_clipped, source_loc, ApiErrors, Sites, Slot,
    MAX_DEVICE_FRAMES, MAX_HOST_FRAMES,
};
use super::{names, parse_hex, Access, Dim3, ErrorClass, Evidence, Fault, Frame, Tool};

/// Deepest element nesting tracked; deeper elements are skipped (but still balanced).
const MAX_DEPTH: usize = 64;

/// The element names this reader acts on; everything else is `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Root,
    Record,
    Kind,
    Who,
    ThreadIdx,
    BlockIdx,
    X,
    Y,
    Z,
    What,
    Text,
    Space,
    Size,
    Direction,
    Error,
    Address,
    Api,
    Message,
    Result,
    Where,
    Func,
    Path,
    File,
    Line,
    Pc,
    HostStack,
    DeviceStack,
    Exception,
    Frame,
    Module,
    /// Racecheck: the analysis record's two sides, the hazard record's two threads.
    Source,
    Destination,
    Thread0,
    Thread1,
    Count,
    Common,
    Type,
    Access,
    Other,
}

fn tag_of(name: &str) -> Tag {
    match name {
        "ComputeSanitizerOutput" => Tag::Root,
        "record" => Tag::Record,
        "kind" => Tag::Kind,
        "who" => Tag::Who,
        "threadIdx" => Tag::ThreadIdx,
        "blockIdx" => Tag::BlockIdx,
        "x" => Tag::X,
        "y" => Tag::Y,
        "z" => Tag::Z,
        "what" => Tag::What,
        "text" => Tag::Text,
        "space" => Tag::Space,
        "size" => Tag::Size,
        "direction" => Tag::Direction,
        "error" => Tag::Error,
        "address" => Tag::Address,
        "api" => Tag::Api,
        "message" => Tag::Message,
        "result" => Tag::Result,
        "where" => Tag::Where,
        "func" => Tag::Func,
        "path" => Tag::Path,
        "file" => Tag::File,
        "line" => Tag::Line,
        "pc" => Tag::Pc,
        "hostStack" => Tag::HostStack,
        "deviceStack" => Tag::DeviceStack,
        "exception" => Tag::Exception,
        "frame" => Tag::Frame,
        "module" => Tag::Module,
        "source" => Tag::Source,
        "destination" => Tag::Destination,
        "thread0" => Tag::Thread0,
        "thread1" => Tag::Thread1,
        "count" => Tag::Count,
        "common" => Tag::Common,
        "type" => Tag::Type,
        "access" => Tag::Access,
        _ => Tag::Other,
    }
}

/// One `<frame>` of a `<hostStack>`, as text fields (reused).
#[derive(Default)]
struct RawFrame {
    func: String,
    module: String,
    path: String,
    line: String,
}

impl RawFrame {
    fn clear(&mut self) {
        self.func.clear();
        self.module.clear();
        self.path.clear();
        self.line.clear();
    }

    fn to_frame(&self) -> Frame {
        let func = self.func.trim();
        let module = self.module.trim();
        let line: Option<u32> = self.line.trim().parse().ok();
        let path = self.path.trim();
        Frame {
            function: (!func.is_empty()).then(|| func.to_string()),
            file: (!path.is_empty()).then(|| path.to_string()),
            line,
            module: (!module.is_empty()).then(|| module.to_string()),
            // A frame with a source line but no module is an interpreter (Python) frame.
            python: module.is_empty() && line.is_some(),
        }
    }

    fn to_device_frame(&self) -> Frame {
        let (function, _) = kernel_name(&self.func);
        let func = self.func.trim();
        Frame {
            function: function.or_else(|| (!func.is_empty()).then(|| func.to_string())),
            python: false,
            module: None,
            ..self.to_frame()
        }
    }
}

/// The `<record>` being read; buffers are reused from record to record.
#[derive(Default)]
struct Record {
    kind: String,
    thread: [Option<u32>; 3],
    block: [Option<u32>; 3],
    text: String,
    space: String,
    size: String,
    direction: String,
    error: String,
    exception: String,
    address: String,
    api: String,
    message: String,
    result: String,
    func: String,
    path: String,
    line: String,
    pc: String,
    /// Racecheck: the second side (`<destination>`, `<thread1>`) and the hazard count.
    side: super::racecheck::XmlSide,
    /// Keep this record's stacks (decided at the first `<deviceStack>` or `<hostStack>`,
    /// after `<what>` and `<where>`: is its site new?)
    want_frames: Option<bool>,
    frames: Vec<Frame>,
    device_frames: Vec<Frame>,
    frames_cut: bool,
    frame: RawFrame,
}

impl Record {
    fn clear(&mut self) {
        self.kind.clear();
        self.thread = [None; 3];
        self.block = [None; 3];
        for s in [
            &mut self.text,
            &mut self.space,
            &mut self.size,
            &mut self.direction,
            &mut self.error,
            &mut self.exception,
            &mut self.address,
            &mut self.api,
            &mut self.message,
            &mut self.result,
            &mut self.func,
            &mut self.path,
            &mut self.line,
            &mut self.pc,
        ] {
            s.clear();
        }
        self.side.clear();
        self.want_frames = None;
        self.frames.clear();
        self.device_frames.clear();
        self.frames_cut = false;
        self.frame.clear();
    }

    fn dim(d: [Option<u32>; 3]) -> Option<Dim3> {
        Some([d[0]?, d[1]?, d[2]?])
    }

    fn is_api(&self) -> bool {
        self.kind.trim() == "Api"
    }

    /// A record that locates a fault: it names a function or a thread.
    fn is_fault(&self) -> bool {
        !self.is_api() && (!self.func.trim().is_empty() || Self::dim(self.thread).is_some())
    }

    /// The site key: kind, what happened, function, and line (or offset without line info).
    fn key(&self, k: &mut Vec<u8>) {
        k.clear();
        for s in [
            &self.kind,
            &self.text,
            &self.space,
            &self.direction,
            &self.size,
            &self.error,
            &self.exception,
            &self.func,
            &self.path,
        ] {
            k.extend_from_slice(s.trim().as_bytes());
            k.push(0);
        }
        let line = self.line.trim();
        k.extend_from_slice(if line.is_empty() { self.pc.trim() } else { line }.as_bytes());
        self.side.key(k);
    }

    fn fault(&self) -> Fault {
        let func = self.func.trim();
        let (mut kernel, mut mangled) = kernel_name(func);
        // `<func>` is the bare name (`sum_neighbors`); the launch stub in the host stack
        // (`__device_stub__Z13sum_neighborsPKfPfi`), saved when the kernel was launched,
        // carries its mangled signature. For a device assert (`__assertfail`) the stub is
        // the only name of the kernel.
        let stub = self.frames.iter().filter_map(|f| f.function.as_deref()).find_map(|f| {
            let m = f.strip_prefix("__device_stub_")?;
            let d = names::demangle(m)?;
            let fits = match &kernel {
                Some(_) => names::kernel_key(&d) == names::kernel_key(func),
                None => func.starts_with("__assertfail"),
            };
            fits.then(|| (d, m.to_string()))
        });
        if let Some((d, m)) = stub {
            kernel = Some(names::compact_signature(&d));
            mangled = Some(m);
        }
        let text = match self.text.trim() {
            "" => self.exception.trim(),
            t => t,
        };
        let error = self.error.trim();
        let direction = self.direction.trim();
        let space = self.space.trim();
        let is_access = text.starts_with("Invalid ") || !direction.is_empty() || !space.is_empty();
        let address = parse_hex(&self.address);
        let (class, access) = if is_access {
            let access = Access {
                kind: (!direction.is_empty()).then(|| direction.to_string()),
                space: (!space.is_empty()).then(|| space.to_string()),
                size: self.size.trim().parse().ok(),
                address,
                nearest: None,
            };
            (access_class(text, error), Some(access))
        } else {
            let what = if text.is_empty() { self.kind.trim() } else { text };
            let access = address.map(|a| Access { address: Some(a), ..Access::default() });
            (ErrorClass::from_message(what), access)
        };
        let detail = if !error.is_empty() {
            Some(error.to_string())
        } else if !text.is_empty() {
            Some(text.to_string())
        } else {
            None
        };
        if let Some(f) = super::racecheck::xml_fault(self.kind.trim(), direction, &self.side) {
            return Fault {
                tool: Some(Tool::MemcheckXml),
                kernel,
                mangled,
                location: source_loc(&self.path, &self.line),
                pc: parse_hex(&self.pc),
                host_frames: self.frames.clone(),
                ..f
            };
        }
        Fault {
            tool: Some(Tool::MemcheckXml),
            error: Some(class),
            kernel,
            mangled,
            location: source_loc(&self.path, &self.line),
            pc: parse_hex(&self.pc),
            access,
            host_frames: self.frames.clone(),
            frames: self.device_frames.clone(),
            detail,
            ..Fault::default()
        }
    }
}

/// The reader's state between events.
#[derive(Default)]
struct State {
    stack: Vec<Tag>,
    /// Elements open below [`MAX_DEPTH`], not tracked.
    deep: usize,
    /// Character data of the innermost element (capped).
    chars: String,
    in_record: bool,
    rec: Record,
    key: Vec<u8>,
    sites: Sites,
    api: ApiErrors,
    records: u64,
    seen_root: bool,
}

impl State {
    fn parent(&self) -> Option<Tag> {
        self.stack.last().copied()
    }

    fn start(&mut self, tag: Tag) {
        if self.stack.len() >= MAX_DEPTH || self.deep > 0 {
            self.deep += 1;
            return;
        }
        let parent = self.parent();
        self.stack.push(tag);
        self.chars.clear();
        match (tag, parent) {
            (Tag::Root, None) => self.seen_root = true,
            (Tag::Record, _) if !self.in_record => {
                self.in_record = true;
                self.rec.clear();
            }
            (Tag::HostStack | Tag::DeviceStack, Some(Tag::Record))
                if self.in_record && self.rec.want_frames.is_none() =>
            {
                // The site is known by now (`<what>` and `<where>` come first): keep the
                // stacks only for the first record of a site.
                let want = self.rec.is_fault() && {
                    self.rec.key(&mut self.key);
                    self.sites.find(&self.key) == Slot::New
                };
                self.rec.want_frames = Some(want);
            }
            (Tag::Frame, Some(Tag::HostStack | Tag::DeviceStack)) => self.rec.frame.clear(),
            _ => {}
        }
    }

    fn end(&mut self) {
        if self.deep > 0 {
            self.deep -= 1;
            return;
        }
        let Some(tag) = self.stack.pop() else { return };
        let parent = self.parent();
        let grand = self.stack.len().checked_sub(2).and_then(|i| self.stack.get(i)).copied();
        if !self.in_record {
            self.chars.clear();
            return;
        }
        let text = self.chars.trim();
        let r = &mut self.rec;
        match (parent, tag) {
            (Some(Tag::Record), Tag::Kind) => set(&mut r.kind, text),
            (Some(Tag::ThreadIdx), Tag::X | Tag::Y | Tag::Z) if grand == Some(Tag::Thread1) => {
                r.side.thread_dim(tag == Tag::X, tag == Tag::Y, text);
            }
            (Some(Tag::Where), Tag::Func | Tag::Path | Tag::File | Tag::Line | Tag::Pc)
                if matches!(grand, Some(Tag::Destination | Tag::Thread1)) =>
            {
                r.side.where_field(tag == Tag::Line, matches!(tag, Tag::Path | Tag::File), text);
            }
            (Some(Tag::Source), Tag::Direction) | (Some(Tag::Thread0), Tag::Access) => {
                set(&mut r.direction, text)
            }
            (Some(Tag::Destination), Tag::Direction) | (Some(Tag::Thread1), Tag::Access) => r.side.kind(text),
            (Some(Tag::Destination), Tag::Count) => r.side.count(text),
            (Some(Tag::Common), Tag::Type) => r.side.hazard(text),
            (Some(Tag::Common), Tag::Address) => set(&mut r.address, text),
            (Some(Tag::What), Tag::Type) => set(&mut r.error, text),
            (Some(Tag::ThreadIdx | Tag::BlockIdx), Tag::X | Tag::Y | Tag::Z) => {
                let i = match tag {
                    Tag::X => 0,
                    Tag::Y => 1,
                    _ => 2,
                };
                let v = text.parse().ok();
                if parent == Some(Tag::ThreadIdx) {
                    r.thread[i] = v;
                } else {
                    r.block[i] = v;
                }
            }
            (Some(Tag::What), Tag::Text) => set(&mut r.text, text),
            (Some(Tag::What), Tag::Space) => set(&mut r.space, text),
            (Some(Tag::What), Tag::Size) => set(&mut r.size, text),
            (Some(Tag::What), Tag::Direction) => set(&mut r.direction, text),
            (Some(Tag::What), Tag::Error) => set(&mut r.error, text),
            (Some(Tag::What), Tag::Exception) => set(&mut r.exception, text),
            (Some(Tag::What), Tag::Address) => set(&mut r.address, text),
            (Some(Tag::What), Tag::Api) => set(&mut r.api, text),
            (Some(Tag::What), Tag::Message) => set(&mut r.message, text),
            (Some(Tag::What), Tag::Result) => set(&mut r.result, text),
            (Some(Tag::Where), Tag::Func) => set(&mut r.func, text),
            (Some(Tag::Where), Tag::Path | Tag::File) => set(&mut r.path, text),
            (Some(Tag::Where), Tag::Line) => set(&mut r.line, text),
            (Some(Tag::Where), Tag::Pc) => set(&mut r.pc, text),
            (Some(Tag::Frame), t)
                if matches!(grand, Some(Tag::HostStack | Tag::DeviceStack))
                    && r.want_frames == Some(true) =>
            {
                match t {
                    Tag::Func => set(&mut r.frame.func, text),
                    Tag::Module => set(&mut r.frame.module, text),
                    Tag::Path | Tag::File => set(&mut r.frame.path, text),
                    Tag::Line => set(&mut r.frame.line, text),
                    _ => {}
                }
            }
            (Some(Tag::HostStack), Tag::Frame) if r.want_frames == Some(true) => {
                if r.frames.len() < MAX_HOST_FRAMES {
                    r.frames.push(r.frame.to_frame());
                } else {
                    r.frames_cut = true;
                }
            }
            (Some(Tag::DeviceStack), Tag::Frame) if r.want_frames == Some(true) => {
                if r.device_frames.len() < MAX_DEVICE_FRAMES {
                    r.device_frames.push(r.frame.to_device_frame());
                } else {
                    r.frames_cut = true;
                }
            }
            (_, Tag::Record) => self.end_record(),
            _ => {}
        }
        self.chars.clear();
    }

    /// Counts the finished `<record>` into its group.
    fn end_record(&mut self) {
        self.in_record = false;
        self.records += 1;
        let r = &self.rec;
        if r.is_api() {
            let (mut error, mut code, mut message, mut api) =
                (r.error.trim(), r.result.trim().parse().ok(), r.message.trim(), r.api.trim());
            if api.is_empty() || error.is_empty() {
                if let Some((e, c, m, a)) = parse_program_hit(&r.text) {
                    (error, code, message, api) = (e, c, m, a);
                }
            }
            if !api.is_empty() || !error.is_empty() {
                self.api.add(error, code, message, if api.is_empty() { "?" } else { api });
            }
            return;
        }
        if !r.is_fault() {
            return;
        }
        let (block, thread) = (Record::dim(r.block), Record::dim(r.thread));
        r.key(&mut self.key);
        match self.sites.find(&self.key) {
            Slot::Known(i) => {
                self.sites.hit(i, block, thread);
                self.sites.add_count(i, r.side.extra());
            }
            Slot::Full => self.sites.skip(),
            Slot::New => {
                let fault = r.fault();
                if r.frames_cut {
                    self.sites.note_frames_cut();
                }
                self.sites.add(&self.key, fault, block, thread);
                self.sites.add_count(self.sites.len().saturating_sub(1), r.side.extra());
            }
        }
    }

    fn chars(&mut self, s: &str) {
        if self.in_record && self.deep == 0 {
            push_clipped(&mut self.chars, s);
        }
    }
}

fn set(dst: &mut String, s: &str) {
    dst.clear();
    dst.push_str(clip(s));
}

/// Reads one compute-sanitizer XML report into `ev`. Never fails: problems become notes.
pub fn parse<R: BufRead>(r: R, ev: &mut Evidence) {
    let mut reader = Reader::from_reader(r);
    let mut buf: Vec<u8> = Vec::with_capacity(8 * 1024);
    let mut st = State::default();
    let mut problem: Option<String> = None;
    loop {
        let event = reader.read_event_into(&mut buf);
        match event {
            Ok(Event::Start(e)) => st.start(tag_of(e.local_name().as_ref())),
            Ok(Event::Empty(e)) => {
                st.start(tag_of(e.local_name().as_ref()));
                st.end();
            }
            Ok(Event::End(_)) => st.end(),
            Ok(Event::Text(t)) => st.chars(&t),
            Ok(Event::CData(t)) => st.chars(&t),
            Ok(Event::GeneralRef(g)) => {
                let resolved = match g.resolve_char_ref() {
                    Ok(Some(c)) => Some(c),
                    _ => quick_xml::escape::resolve_predefined_entity(&g).and_then(|s| s.chars().next()),
                };
                match resolved {
                    Some(c) => st.chars(c.encode_utf8(&mut [0u8; 4])),
                    None => st.chars("\u{fffd}"),
                }
            }
            Ok(Event::Eof) => {
                if !st.stack.is_empty() || st.deep > 0 {
                    let inside = if st.in_record { " inside a <record>" } else { "" };
                    problem =
                        Some(format!("XML report truncated at byte {}{inside}", reader.buffer_position()));
                }
                break;
            }
            Ok(_) => {}
            Err(e) => {
                problem = Some(format!("XML report malformed at byte {}: {e}", reader.error_position()));
                break;
            }
        }
        buf.clear();
    }
    ev.bytes = reader.buffer_position();
    if st.seen_root || st.records > 0 {
        ev.saw(Tool::MemcheckXml);
    }
    let complete = st.records;
    st.sites.finish(ev);
    st.api.finish(ev);
    if let Some(p) = problem {
        let partial = if st.in_record { "; the partial record was dropped" } else { "" };
        ev.notes.push(format!("{p}: the {complete} complete record(s) before it were kept{partial}"));
    }
    if !st.seen_root {
        ev.notes
            .push("XML without a <ComputeSanitizerOutput> root: not a compute-sanitizer report".to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// tests/fixtures/h200/oob_read/memcheck.xml (the project's own recording, H200, CUDA
    /// 13.0, `compute-sanitizer --xml --save`): one invalid read, then the API error it causes.
    const REPORT: &str = recording!("h200/oob_read/memcheck.xml");

    fn read(bytes: &[u8]) -> Evidence {
        let mut ev = Evidence::new("r.xml", "r.xml");
        parse(bytes, &mut ev);
        ev
    }

    /// The report's first record, as it stands between `  <record>` and `  </record>`.
    fn first_record() -> &'static str {
        let start = REPORT.find("  <record>").unwrap();
        let end = REPORT.find("  </record>").unwrap() + "  </record>\n".len();
        &REPORT[start..end]
    }

    #[test]
    fn reads_the_recorded_report() {
        let ev = read(REPORT.as_bytes());
        assert_eq!(ev.tools, vec![Tool::MemcheckXml]);
        assert!(ev.notes.is_empty(), "{:?}", ev.notes);
        assert_eq!(ev.faults.len(), 1);
        let f = &ev.faults[0];
        assert_eq!(f.tool, Some(Tool::MemcheckXml));
        assert_eq!(f.error, Some(ErrorClass::InvalidAccess));
        assert_eq!(f.kernel.as_deref(), Some("gather_rows(float const*, long long const*, float*, int)"));
        assert_eq!(f.mangled.as_deref(), Some("_Z11gather_rowsPKfPKxPfi"));
        assert_eq!(
            f.location,
            Some(super::super::SourceLoc { file: "/tmp/ima-record/oob_read.cu".into(), line: 8 })
        );
        assert_eq!(f.pc, Some(0x100));
        assert_eq!(f.thread, Some([9, 0, 0]));
        assert_eq!(f.block, Some([3, 0, 0]));
        assert_eq!(f.count, 1);
        assert_eq!(f.thread_range, Some([[9, 0, 0], [9, 0, 0]]));
        assert_eq!(f.detail.as_deref(), Some("out of bounds"));
        assert_eq!(
            f.access,
            Some(Access {
                kind: Some("read".into()),
                space: Some("__global__".into()),
                size: Some(4),
                address: Some(0x7f0748800000),
                nearest: None,
            })
        );
        assert_eq!(f.host_frames.len(), 10);
        assert_eq!(
            f.host_frames[6],
            Frame {
                function: Some("main".into()),
                module: Some("/tmp/ima-record/./bin/oob_read".into()),
                ..Frame::default()
            }
        );
        assert_eq!(f.host_frames[7].function, None);
        assert!(f.host_frames.iter().all(|h| !h.python));
        assert_eq!(
            ev.api_errors,
            vec![super::super::ApiError {
                api: "cudaMemcpy".into(),
                error: "cudaErrorLaunchFailure".into(),
                code: Some(719),
                message: "unspecified launch failure".into(),
                count: 1,
            }]
        );
        assert_eq!(ev.bytes, REPORT.len() as u64);
    }

    #[test]
    fn same_site_records_group() {
        // The recorded record repeated with the thread index counting up.
        let rec = first_record();
        let mut doc = String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<ComputeSanitizerOutput>\n");
        for i in 0..300u32 {
            doc.push_str(&rec.replacen("<x>9</x>", &format!("<x>{}</x>", 200 + i % 50), 1));
        }
        doc.push_str(&REPORT[REPORT.find("  <record>\n    <kind>Api").unwrap()..]);
        let ev = read(doc.as_bytes());
        assert_eq!(ev.faults.len(), 1);
        let f = &ev.faults[0];
        assert_eq!(f.count, 300);
        assert_eq!(f.thread, Some([200, 0, 0]));
        assert_eq!(f.thread_range, Some([[200, 0, 0], [249, 0, 0]]));
        assert_eq!(f.block_range, Some([[3, 0, 0], [3, 0, 0]]));
        assert_eq!(f.host_frames.len(), 10);
        assert_eq!(ev.api_errors[0].count, 1);
    }

    #[test]
    fn truncated_report_keeps_complete_records() {
        let cut = REPORT.find("<api>").unwrap();
        let ev = read(&REPORT.as_bytes()[..cut]);
        assert_eq!(ev.faults.len(), 1);
        assert!(ev.api_errors.is_empty());
        let note = ev.notes.iter().find(|n| n.contains("truncated")).expect("a note");
        assert!(note.contains(&format!("at byte {cut}")), "{note}");
        assert!(note.contains("1 complete record(s)"), "{note}");
        assert!(note.contains("partial record was dropped"), "{note}");
    }

    #[test]
    fn malformed_report_says_where() {
        let bad = REPORT.replacen("</what>", "</wat>", 1);
        let ev = read(bad.as_bytes());
        assert!(ev.faults.is_empty());
        let note = ev.notes.iter().find(|n| n.contains("malformed")).expect("a note");
        assert!(note.contains("at byte"), "{note}");
    }

    /// Reads `tests/fixtures/h200/<case>/memcheck.<ext>` (the project's own recordings).
    fn fixture(case: &str, ext: &str) -> String {
        let p = format!("{}/../tests/fixtures/h200/{case}/memcheck.{ext}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    #[test]
    fn device_assert_is_named_by_the_launch_stub() {
        let ev = read(fixture("device_assert", "xml").as_bytes());
        assert_eq!(ev.faults.len(), 1);
        let f = &ev.faults[0];
        assert_eq!(f.error, Some(ErrorClass::DeviceAssert));
        assert_eq!(f.kernel.as_deref(), Some("check_labels(int const*, int, int, int*)"));
        assert_eq!(f.mangled.as_deref(), Some("_Z12check_labelsPKiiiPi"));
        assert_eq!(f.detail.as_deref(), Some("Warp assert"));
        assert_eq!(f.pc, Some(0x19a0));
        assert_eq!(f.thread, Some([37, 0, 0]));
        assert_eq!(f.access, None);
        assert_eq!(f.frames, vec![Frame { function: Some("__assertfail".into()), ..Frame::default() }]);
        assert_eq!(ev.api_errors.len(), 1);
    }

    #[test]
    fn device_stack_of_inlined_code() {
        let ev = read(fixture("inlined", "xml").as_bytes());
        let f = &ev.faults[0];
        assert_eq!(f.kernel.as_deref(), Some("store_scaled"));
        assert_eq!(
            f.frames,
            vec![Frame {
                function: Some("apply_offsets".into()),
                file: Some("/tmp/ima-record/inlined.cu".into()),
                line: Some(8),
                ..Frame::default()
            }]
        );
    }

    #[test]
    fn python_frames_in_the_host_stack() {
        let ev = read(fixture("triton_worker", "xml").as_bytes());
        assert_eq!(ev.faults.len(), 1);
        let f = &ev.faults[0];
        assert_eq!(f.count, 128);
        let py: Vec<&Frame> = f.host_frames.iter().filter(|h| h.python).collect();
        assert_eq!(py.len(), 11);
        assert!(py.iter().all(|h| h.module.is_none() && h.line.is_some()));
    }

    /// Text and XML reports of the same runs agree on every site.
    #[test]
    fn text_and_xml_agree_on_every_recording() {
        let dir = format!("{}/../tests/fixtures/h200", env!("CARGO_MANIFEST_DIR"));
        let mut cases = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let case = entry.unwrap().file_name().to_string_lossy().into_owned();
            let (Ok(log), Ok(xml)) = (
                std::fs::read_to_string(format!("{dir}/{case}/memcheck.log")),
                std::fs::read(format!("{dir}/{case}/memcheck.xml")),
            ) else {
                continue;
            };
            cases += 1;
            let text = super::super::scan::scan_str(&log, "memcheck.log");
            let xml = read(&xml);
            let sites = |ev: &Evidence| -> Vec<_> {
                ev.faults
                    .iter()
                    .filter(|f| matches!(f.tool, Some(Tool::Memcheck | Tool::MemcheckXml)))
                    .map(|f| {
                        let line =
                            f.location.as_ref().map(|l| (names::base_name(&l.file).to_string(), l.line));
                        let key = f.kernel.as_deref().map(names::kernel_key);
                        (
                            f.error.clone(),
                            line,
                            f.pc,
                            f.count,
                            f.block_range,
                            f.thread_range,
                            f.frames.len(),
                            key,
                        )
                    })
                    .collect()
            };
            let (mut t, x) = (sites(&text), sites(&xml));
            // Only XML names an asserting kernel (by its launch stub).
            for (s, xs) in t.iter_mut().zip(&x) {
                if s.7.is_none() {
                    s.7.clone_from(&xs.7);
                }
            }
            assert_eq!(t, x, "{case}");
            let apis = |ev: &Evidence| -> Vec<_> {
                ev.api_errors.iter().map(|e| (e.api.clone(), e.error.clone(), e.code, e.count)).collect()
            };
            assert_eq!(apis(&text), apis(&xml), "{case}");
            assert!(xml.notes.is_empty(), "{case}: {:?}", xml.notes);
        }
        assert!(cases >= 10, "{cases} recordings found in {dir}");
    }

    #[test]
    fn not_a_report() {
        let ev = read(b"<?xml version=\"1.0\"?><html><body/></html>");
        assert!(ev.tools.is_empty());
        assert!(ev.notes.iter().any(|n| n.contains("not a compute-sanitizer report")));
    }

    #[test]
    fn scan_sends_xml_here() {
        let ev = super::super::scan::scan_str(REPORT, "oob_read/memcheck.xml");
        assert_eq!(ev.tools, vec![Tool::MemcheckXml]);
        assert_eq!(ev.faults.len(), 1);
    }

    #[test]
    fn every_truncation_is_safe() {
        for i in 0..=REPORT.len() {
            let ev = read(&REPORT.as_bytes()[..i]);
            assert!(ev.faults.len() <= 1);
            if i < REPORT.len() - 1 && i > 0 {
                assert!(!ev.notes.is_empty(), "cut at {i} went unnoticed");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let _ = read(&bytes);
        }

        #[test]
        fn corrupted_reports_never_panic(at in 0usize..REPORT.len(), junk in proptest::collection::vec(any::<u8>(), 0..16)) {
            let mut bytes = REPORT.as_bytes().to_vec();
            let at = at.min(bytes.len());
            bytes.splice(at..at, junk);
            let _ = read(&bytes);
        }

        #[test]
        fn tag_soup_never_panics(parts in proptest::collection::vec(
            "(<record>|</record>|<what>|</what>|<where>|</where>|<hostStack>|</hostStack>|<frame>|</frame>|<func>f</func>|<kind>Api</kind>|<x>1</x>|<threadIdx>|</threadIdx>|&quot;|&#x41;|&bogus;|<![CDATA[x]]>)",
            0..60,
        )) {
            let doc = format!("<ComputeSanitizerOutput>{}</ComputeSanitizerOutput>", parts.concat());
            let _ = read(doc.as_bytes());
        }
    }

    #[test]
    fn kernel_names_arrive_through_character_references() {
        // A three- and a four-byte character, as a writer may escape them.
        let doc = REPORT.replace("<func>gather_rows</func>", "<func>k&#x1F600;&#26680;</func>");
        let ev = read(doc.as_bytes());
        assert!(
            ev.faults[0].kernel.as_deref().is_some_and(|k| k.starts_with("k😀核")),
            "{:?}",
            ev.faults[0].kernel
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// The kernel's `<func>` as raw multi-byte text, as character references (`&#x1F600;`,
        /// `&#128512;`) and through an entity the document declares; invalid UTF-8 anywhere; names
        /// of 5,000 characters: no panic, and a name written as references reads back whole.
        #[test]
        fn kernel_names_as_text_references_and_entities_never_panic(
            name in crate::findings::fuzz::name(),
            how in 0u8..3,
            edits in crate::findings::fuzz::invalid_edits(),
        ) {
            use crate::findings::fuzz::{char_refs, pipeline, real, spliced};
            let r = real("memcheck.xml")[0];
            let (text, with) = match how {
                0 => (r.excerpt().to_string(), name.clone()),
                1 => (r.excerpt().to_string(), char_refs(&name)),
                _ => {
                    let dtd = format!("?>\n<!DOCTYPE ComputeSanitizerOutput [<!ENTITY k \"{}\">]>", char_refs(&name));
                    (r.excerpt().replacen("?>", &dtd, 1), "&k;".to_string())
                }
            };
            let bytes = spliced(&text, r.kernel, &with, &edits);
            let a = pipeline(&[(&bytes, "memcheck.xml")]);
            let plain = name.chars().all(|c| c.is_alphanumeric() || c == '_') && name.len() < 8 * 1024;
            if how == 1 && edits.is_empty() && plain {
                let v = a.verdict.expect("the record still locates the fault");
                prop_assert!(v.kernel.starts_with(&name), "{} for {name}", v.kernel);
            }
        }
    }
}

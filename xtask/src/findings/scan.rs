//! The scanning loop: reads one input in bounded memory, recognises which tool wrote it
//! from its content (never its name), and offers every line to every line parser: a read at
//! a time (1 MiB), its UTF-8 checked and its [`PHRASES`] searched once, each line sliced from
//! it and given to each parser whose [`LineParser::wants`] takes it.
//!
//! Must not: hold a whole file in memory (one read, the start of a line cut by it, and where
//! the read's phrases are), panic on any byte sequence, or spawn anything; nor give a parser
//! less than every line its `line` would act on (the tests compare with every line offered
//! to every parser). Reading errors in the middle of a file end the scan and become a note;
//! what was read before is kept.

use std::io::{BufRead, BufReader, Read};

use super::{
    coredump::CoredumpParser, cudagdb::CudaGdbParser, faulthandler::FaultHandlerParser, host::HostParser,
    hoststack::HostStackParser, launch_log, launch_sites, memcheck::MemcheckParser, memcheck_xml, nccl,
    pyspy::PySpyParser, racecheck::RacecheckParser, ranks::RankParser, waits::WaitsParser, Evidence, LineCtx,
    LineParser,
};

/// Lines longer than this are cut (the rest of the line is skipped, not buffered).
pub const MAX_LINE: usize = 64 * 1024;
/// How the note for a text input with nothing recognisable starts.
pub const NOT_RECOGNISED: &str = "no output of a known tool";
/// The note for an empty input.
pub const EMPTY: &str = "empty file";
/// Size of the read buffer.
const CHUNK: usize = 1 << 20;

/// What the first bytes of an input look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    Empty,
    Text,
    Xml,
    Binary,
}

/// Sniffs the first bytes of an input: XML, text, binary or empty.
pub fn sniff(head: &[u8]) -> Content {
    if head.is_empty() {
        return Content::Empty;
    }
    let trimmed = head.trim_ascii_start();
    if trimmed.starts_with(b"<?xml") || trimmed.starts_with(b"<ComputeSanitizerOutput") {
        return Content::Xml;
    }
    let sample = &head[..head.len().min(8192)];
    let nul = sample.iter().filter(|&&b| b == 0).count();
    let ctrl =
        sample.iter().filter(|&&b| b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x1b | 0x0c)).count();
    // Logs may carry a stray control byte; ELF files, coredumps and archives are full of them.
    if nul > 0 || ctrl * 20 > sample.len() {
        return Content::Binary;
    }
    Content::Text
}

/// The line parsers, in the order every line is offered to them. Each is called directly
/// (no virtual call per line), and only where its [`LineParser::wants`], inlined here, says
/// the line may change something: most lines of a log are some one tool's, and cost every
/// other parser a byte or two.
#[derive(Default)]
struct Parsers {
    host: HostParser,
    faulthandler: FaultHandlerParser,
    coredump: CoredumpParser,
    cudagdb: CudaGdbParser,
    hoststack: HostStackParser,
    waits: WaitsParser,
    memcheck: MemcheckParser,
    racecheck: RacecheckParser,
    pyspy: PySpyParser,
    ranks: RankParser,
}

/// Calls `$what` for each parser of [`Parsers`], in their order.
macro_rules! each_parser {
    ($what:ident) => {
        $what!(host, faulthandler, coredump, cudagdb, hoststack, waits, memcheck, racecheck, pyspy, ranks)
    };
}

impl Parsers {
    /// One line to every parser that [wants](LineParser::wants) it (to every parser when not
    /// `gated`: the tests compare the two).
    #[inline]
    fn line(&mut self, line: &str, ctx: LineCtx, phrase_free: bool, gated: bool) {
        macro_rules! feed {
            ($($p:ident),*) => {
                $(if !gated || self.$p.wants(line, phrase_free) {
                    self.$p.line(line, ctx);
                })*
            };
        }
        each_parser!(feed);
    }

    fn finish(&mut self, ev: &mut Evidence) {
        macro_rules! finish {
            ($($p:ident),*) => {
                $(self.$p.finish(ev);)*
            };
        }
        each_parser!(finish);
    }
}

/// Every line of one text input to the parsers: its first [`MAX_LINE`] bytes, one `\r` before
/// the newline dropped, as text (invalid UTF-8 replaced), with its rank label stripped.
struct Feed {
    parsers: Parsers,
    /// Each parser sees only the lines it [wants](LineParser::wants) (always, but in tests).
    gated: bool,
    srun: super::SrunLabels,
    lineno: u64,
    /// Lines longer than [`MAX_LINE`], cut to it.
    long_lines: u64,
    /// The start of a line that the read buffer ended in, cut to [`MAX_LINE`].
    partial: Vec<u8>,
    /// The kept line was longer than [`MAX_LINE`] (counted once).
    partial_cut: bool,
    /// Where [`NEEDLES`] start in the text being fed, in order (reused from read to read).
    phrases_at: Vec<usize>,
}

/// The texts that a parser acts on wherever they are in a line (not only at its start). Their
/// [`NEEDLES`] are searched for once over all the complete lines of a read, where a search per
/// line would cost more than everything else a line goes through; a line without one holds
/// no phrase and is `phrase_free` for [`LineParser::wants`].
pub const PHRASES: [&str; 6] = [
    super::ranks::PHRASES[0],
    super::ranks::PHRASES[1],
    super::ranks::PHRASES[2],
    super::ranks::PHRASES[3],
    super::faulthandler::PHRASES[0],
    super::faulthandler::PHRASES[1],
];

/// What is searched for: every one of [`PHRASES`] holds one of these (the tests check it);
/// two searches fewer than one per phrase (` coredump` is in two of them, `atchdog ` in two).
const NEEDLES: [&str; 4] =
    [" coredump", "atchdog ", "we are taking the entire process down", "Fatal Python error: "];

static FINDERS: std::sync::LazyLock<Vec<memchr::memmem::Finder<'static>>> =
    std::sync::LazyLock::new(|| NEEDLES.iter().map(memchr::memmem::Finder::new).collect());

impl Feed {
    fn new(gated: bool) -> Feed {
        Feed {
            parsers: Parsers::default(),
            gated,
            srun: super::SrunLabels::default(),
            lineno: 0,
            long_lines: 0,
            partial: Vec::new(),
            partial_cut: false,
            phrases_at: Vec::new(),
        }
    }

    /// One line, valid UTF-8 and within [`MAX_LINE`]; `phrase_free` where it holds none of
    /// [`NEEDLES`], so none of [`PHRASES`].
    #[inline]
    fn text(&mut self, line: &str, phrase_free: bool) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        self.lineno += 1;
        let labelled = self.srun.see(line);
        let (line, rank) = super::strip_rank_in(line, labelled);
        self.parsers.line(line, LineCtx { lineno: self.lineno, rank }, phrase_free && self.gated, self.gated);
    }

    /// One line as bytes, already cut to [`MAX_LINE`]: it may hold invalid UTF-8 (or a
    /// character cut in two).
    fn bytes(&mut self, line: &[u8]) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        match std::str::from_utf8(line) {
            Ok(s) => self.text(s, false),
            Err(_) => self.text(&String::from_utf8_lossy(line), false),
        }
    }

    /// The complete lines of `block`, each ended by a newline: validated as UTF-8 once for
    /// the whole block where it is valid, line by line around what is not.
    fn block(&mut self, mut block: &[u8]) {
        while !block.is_empty() {
            let good = match std::str::from_utf8(block) {
                Ok(s) => return self.lines(s),
                Err(e) => e.valid_up_to(),
            };
            // The lines before the invalid byte's line are valid; that line is read as bytes.
            let start = memchr::memrchr(b'\n', &block[..good]).map_or(0, |i| i + 1);
            if let Ok(s) = std::str::from_utf8(&block[..start]) {
                self.lines(s);
            }
            let end = memchr::memchr(b'\n', &block[good..]).map_or(block.len(), |i| good + i);
            self.cut(&block[start..end]);
            block = block.get(end + 1..).unwrap_or_default();
        }
    }

    /// The lines of `text`, each ended by a newline.
    fn lines(&mut self, text: &str) {
        let b = text.as_bytes();
        let mut at = std::mem::take(&mut self.phrases_at);
        at.clear();
        for f in FINDERS.iter() {
            at.extend(f.find_iter(b));
        }
        at.sort_unstable();
        let (mut start, mut next) = (0, 0);
        for end in memchr::memchr_iter(b'\n', b) {
            while at.get(next).is_some_and(|&p| p < start) {
                next += 1;
            }
            if end - start > MAX_LINE {
                self.cut(&b[start..end]);
            } else {
                self.text(&text[start..end], at.get(next).is_none_or(|&p| p >= end));
            }
            start = end + 1;
        }
        self.phrases_at = at;
    }

    /// One whole line as bytes: cut to [`MAX_LINE`] (and counted) when longer.
    fn cut(&mut self, line: &[u8]) {
        if line.len() > MAX_LINE {
            self.long_lines += 1;
        }
        self.bytes(&line[..line.len().min(MAX_LINE)]);
    }

    /// The start or a middle piece of a line that goes on in the next read; kept up to
    /// [`MAX_LINE`] bytes.
    fn keep(&mut self, piece: &[u8]) {
        let room = MAX_LINE.saturating_sub(self.partial.len());
        if piece.len() > room && !self.partial_cut {
            self.long_lines += 1;
            self.partial_cut = true;
        }
        self.partial.extend_from_slice(&piece[..piece.len().min(room)]);
    }

    /// One read: its first piece ends the kept line, if any; its complete lines go through
    /// [`Feed::block`]; its last piece is kept.
    fn chunk(&mut self, chunk: &[u8]) {
        let mut rest = chunk;
        if !self.partial.is_empty() {
            let Some(nl) = memchr::memchr(b'\n', rest) else {
                self.keep(rest);
                return;
            };
            self.keep(&rest[..nl]);
            let line = std::mem::take(&mut self.partial);
            self.bytes(&line);
            self.partial = line;
            self.partial.clear();
            self.partial_cut = false;
            rest = &rest[nl + 1..];
        }
        let end = memchr::memrchr(b'\n', rest).map_or(0, |i| i + 1);
        self.block(&rest[..end]);
        self.keep(&rest[end..]);
    }

    /// The last line, when the input does not end with a newline.
    fn end(&mut self) {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.bytes(&line);
        }
    }
}

pub use super::strip_rank;

/// Scans text already in memory (tests, small inputs).
pub fn scan_str(text: &str, path: &str) -> Evidence {
    scan_reader(text.as_bytes(), path, super::names::base_name(path))
}

/// Scans one input. Never fails: what could not be read is recorded in `notes`.
pub fn scan_reader<R: Read>(reader: R, path: &str, origin: &str) -> Evidence {
    scan_gated(reader, path, origin, true)
}

/// [`scan_reader`]; each line offered to every parser when not `gated` (the tests compare).
fn scan_gated<R: Read>(reader: R, path: &str, origin: &str, gated: bool) -> Evidence {
    let mut ev = Evidence::new(path, origin);
    let mut r = BufReader::with_capacity(CHUNK, reader);
    let head = match r.fill_buf() {
        Ok(h) => h,
        Err(e) => {
            ev.notes.push(format!("could not read: {e}"));
            return ev;
        }
    };
    match sniff(head) {
        Content::Empty => {
            ev.notes.push(format!("{EMPTY}: nothing to read"));
            return ev;
        }
        Content::Binary => {
            ev.notes.push(
                "binary content (not a text log or XML report): skipped; coredumps are read with \
                 `cuda-gdb`, not by `analyze`"
                    .to_string(),
            );
            return ev;
        }
        Content::Xml => {
            memcheck_xml::parse(r, &mut ev);
            return ev;
        }
        Content::Text if nccl::looks_like(head) => {
            nccl::parse(r, path, &mut ev);
            return ev;
        }
        Content::Text if launch_log::looks_like(head) => {
            launch_log::parse(r, &mut ev);
            return ev;
        }
        Content::Text if launch_sites::looks_like(head) => {
            ev.static_launches = launch_sites::parse_table(r);
            ev.saw(super::Tool::Objdump);
            return ev;
        }
        Content::Text => {}
    }

    let mut feed = Feed::new(gated);
    loop {
        let chunk = match r.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                ev.notes.push(format!("read error after {} bytes: {e}; what came before is kept", ev.bytes));
                break;
            }
        };
        if chunk.is_empty() {
            break;
        }
        let n = chunk.len();
        feed.chunk(chunk);
        ev.bytes += n as u64;
        r.consume(n);
    }
    feed.end();
    ev.lines = feed.lineno;
    feed.parsers.finish(&mut ev);
    let long_lines = feed.long_lines;
    if long_lines > 0 {
        ev.notes.push(format!(
            "{long_lines} line(s) longer than {} KiB were cut to that length",
            MAX_LINE / 1024
        ));
    }
    if ev.tools.is_empty() {
        ev.notes.push(format!(
            "{NOT_RECOGNISED} (CUDA runtime error, Python traceback, coredump, cuda-gdb, \
             compute-sanitizer) was recognised"
        ));
    }
    ev
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A reader that gives `first` bytes, then `k` bytes a read: lines are cut across reads.
    struct Pieces<'a> {
        rest: &'a [u8],
        next: usize,
        k: usize,
    }

    impl Read for Pieces<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.next.min(buf.len()).min(self.rest.len());
            buf[..n].copy_from_slice(&self.rest[..n]);
            self.rest = &self.rest[n..];
            self.next = self.k;
            Ok(n)
        }
    }

    /// `bytes` as the scanner reads it without its shortcuts: in pieces (the head of 8 KiB
    /// first, for the sniff), each line offered to every parser, no line taken as free of the
    /// phrases.
    fn slow(bytes: &[u8], k: usize) -> Evidence {
        scan_gated(Pieces { rest: bytes, next: 8192, k }, "f", "f", false)
    }

    /// Whether the text loop reads `bytes` (not the XML, NCCL, launch-log or table readers).
    fn line_scanned(bytes: &[u8]) -> bool {
        let head = &bytes[..bytes.len().min(CHUNK)];
        sniff(head) == Content::Text
            && !nccl::looks_like(head)
            && !launch_log::looks_like(head)
            && !launch_sites::looks_like(head)
    }

    /// Every recorded text fixture gives the same evidence read whole with the shortcuts (each
    /// parser's `wants`, the phrase search, a read's lines validated at once) as read in
    /// small pieces without them.
    #[test]
    fn every_fixture_reads_alike_without_the_shortcuts_and_in_pieces() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
        let mut files = 0;
        for e in walkdir::WalkDir::new(&root).into_iter().flatten().filter(|e| e.file_type().is_file()) {
            let bytes = std::fs::read(e.path()).unwrap();
            if !line_scanned(&bytes) {
                continue;
            }
            files += 1;
            let k = if bytes.len() < 32 * 1024 { 1 } else { 4093 };
            let fast = scan_reader(&bytes[..], "f", "f");
            assert_eq!(fast, slow(&bytes, k), "{}", e.path().display());
        }
        assert!(files > 500, "{files} files");
    }

    #[test]
    fn every_phrase_holds_a_needle() {
        for p in PHRASES {
            assert!(NEEDLES.iter().any(|n| p.contains(n)), "{p}");
        }
    }

    #[test]
    fn sniffs() {
        assert_eq!(sniff(b""), Content::Empty);
        assert_eq!(sniff(b"  <?xml version=\"1.0\"?>"), Content::Xml);
        assert_eq!(sniff(b"\x7fELF\x02\x01\x01\0\0\0"), Content::Binary);
        assert_eq!(sniff(b"launched both kernels\n"), Content::Text);
    }

    #[test]
    fn ranks() {
        assert_eq!(strip_rank("[rank1]: Traceback"), ("Traceback", Some(1)));
        assert_eq!(strip_rank("[rankx]: y"), ("[rankx]: y", None));
        assert_eq!(strip_rank("plain"), ("plain", None));
    }

    #[test]
    fn empty_and_binary_inputs_say_so() {
        let ev = scan_str("", "e.log");
        assert!(ev.notes[0].contains("empty"));
        let ev = scan_reader(&b"\x7fELF\0\0\0\x01\x02"[..], "core", "core");
        assert!(ev.notes[0].contains("binary"));
        let ev = scan_str("hello\nworld\n", "x.log");
        assert_eq!(ev.lines, 2);
        assert!(ev.notes.iter().any(|n| n.contains("no output of a known tool")));
    }

    #[test]
    fn long_lines_are_cut_not_buffered() {
        let mut s = "x".repeat(MAX_LINE * 3);
        s.push('\n');
        s.push_str("short\n");
        let ev = scan_str(&s, "long.log");
        assert_eq!(ev.lines, 2);
        assert!(ev.notes.iter().any(|n| n.contains("longer than")));
        // In pieces that end anywhere, the cut line long before its end, one line exactly
        // [`MAX_LINE`] long: each counted once.
        let mut s = format!("{}\r\n{}\n", "y".repeat(MAX_LINE - 1), "x".repeat(MAX_LINE * 3));
        s.push_str("=========     at k(int*)+0x10 in k.cu:7\r\nend");
        let whole = scan_str(&s, "f");
        assert_eq!(whole.lines, 4);
        assert!(
            whole.notes.iter().any(|n| n.starts_with("1 line(s) longer than 64 KiB")),
            "{:?}",
            whole.notes
        );
        for k in [1, 3, 4096, MAX_LINE - 1, MAX_LINE, MAX_LINE + 1] {
            assert_eq!(whole, slow(s.as_bytes(), k), "{k}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// Every tool's real output with a generated kernel name spliced in (multi-byte, 5,000
        /// characters) and invalid UTF-8 inserted anywhere, read as bytes: no panic, and no
        /// more lines counted than there are.
        #[test]
        fn real_output_with_multi_byte_names_and_invalid_bytes_never_panics(
            which in any::<proptest::sample::Index>(),
            name in crate::findings::fuzz::name(),
            edits in crate::findings::fuzz::invalid_edits(),
        ) {
            use crate::findings::fuzz::{spliced, REAL};
            let r = &REAL[which.index(REAL.len())];
            let bytes = spliced(r.excerpt(), r.kernel, &name, &edits);
            let ev = scan_reader(&bytes[..], r.file, r.file);
            let newlines = bytes.iter().filter(|&&b| b == b'\n').count() as u64;
            prop_assert!(ev.lines <= newlines + 1);
            if line_scanned(&bytes) {
                let mut slow = slow(&bytes, 7);
                (slow.path, slow.origin) = (ev.path.clone(), ev.origin.clone());
                prop_assert_eq!(ev, slow);
            }
        }

        /// A line longer than [`MAX_LINE`] of multi-byte characters, so that the cut falls
        /// inside one, in a memcheck record: no panic.
        #[test]
        fn long_multi_byte_lines_are_cut_safely(c in crate::findings::fuzz::WIDE, skew in 0usize..4) {
            let name: String = c.repeat(MAX_LINE / c.len() + skew);
            let text = format!(
                "========= Invalid __global__ write of size 4 bytes\n=========     at {name}(int*)+0x10 in k.cu:7\n\
                 =========     by thread (0,0,0) in block (0,0,0)\n========= \n"
            );
            let ev = scan_reader(text.as_bytes(), "m.log", "memcheck");
            prop_assert_eq!(ev.lines, 4);
        }
    }
}

//! The scanning loop: reads one input in bounded memory, recognises which tool wrote it
//! from its content (never its name), and feeds every line to every line parser.
//!
//! Must not: hold a whole file in memory, panic on any byte sequence, or spawn anything.
//! Reading errors in the middle of a file end the scan and become a note; what was read
//! before is kept.

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

/// The line parsers, in the order every line is offered to them.
fn parsers() -> Vec<Box<dyn LineParser>> {
    vec![
        Box::new(HostParser::default()),
        Box::new(FaultHandlerParser::default()),
        Box::new(CoredumpParser::default()),
        Box::new(CudaGdbParser::default()),
        Box::new(HostStackParser::default()),
        Box::new(WaitsParser::default()),
        Box::new(MemcheckParser::default()),
        Box::new(RacecheckParser::default()),
        Box::new(PySpyParser::default()),
        Box::new(RankParser::default()),
    ]
}

pub use super::strip_rank;

/// Scans text already in memory (tests, small inputs).
pub fn scan_str(text: &str, path: &str) -> Evidence {
    scan_reader(text.as_bytes(), path, super::names::base_name(path))
}

/// Scans one input. Never fails: what could not be read is recorded in `notes`.
pub fn scan_reader<R: Read>(reader: R, path: &str, origin: &str) -> Evidence {
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

    let mut parsers = parsers();
    let mut line_buf: Vec<u8> = Vec::with_capacity(4096);
    let mut truncated_line = false;
    let mut long_lines = 0u64;
    let mut lineno = 0u64;
    let mut srun = super::SrunLabels::default();
    let mut emit = |buf: &mut Vec<u8>, ev: &mut Evidence, parsers: &mut [Box<dyn LineParser>]| {
        lineno += 1;
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        let text = match std::str::from_utf8(buf) {
            Ok(s) => std::borrow::Cow::Borrowed(s),
            Err(_) => String::from_utf8_lossy(buf),
        };
        let labelled = srun.see(&text);
        let (line, rank) = super::strip_rank_in(&text, labelled);
        let ctx = LineCtx { lineno, rank };
        for p in parsers.iter_mut() {
            p.line(line, ctx);
        }
        ev.lines = lineno;
        buf.clear();
    };

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
        let mut start = 0;
        while start < n {
            match memchr::memchr(b'\n', &chunk[start..]) {
                Some(off) => {
                    let piece = &chunk[start..start + off];
                    if !truncated_line {
                        let room = MAX_LINE.saturating_sub(line_buf.len());
                        line_buf.extend_from_slice(&piece[..piece.len().min(room)]);
                        if piece.len() > room {
                            long_lines += 1;
                        }
                    }
                    truncated_line = false;
                    emit(&mut line_buf, &mut ev, &mut parsers);
                    start += off + 1;
                }
                None => {
                    let piece = &chunk[start..];
                    if !truncated_line {
                        let room = MAX_LINE.saturating_sub(line_buf.len());
                        line_buf.extend_from_slice(&piece[..piece.len().min(room)]);
                        if piece.len() > room {
                            truncated_line = true;
                            long_lines += 1;
                        }
                    }
                    start = n;
                }
            }
        }
        ev.bytes += n as u64;
        r.consume(n);
    }
    if !line_buf.is_empty() {
        emit(&mut line_buf, &mut ev, &mut parsers);
    }
    for p in parsers.iter_mut() {
        p.finish(&mut ev);
    }
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

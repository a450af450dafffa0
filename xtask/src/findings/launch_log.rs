//! The launch recorder's log (`launches.log`): where a Python target launched each Triton
//! kernel from and where it began each CUDA graph capture, written by the recorder the
//! ladder loads into the target's interpreter (`ladder/recorder.py`, whose header gives the
//! format). One record per distinct place, so the log stays small in a loop of millions of
//! launches; the verdict takes a kernel's launch site from it only when the faulting process
//! launched that kernel from one place (`launch_sites` holds static sites to the same rule).
//!
//! Must not: read files (it takes a reader), trust a record it cannot parse (skipped), or read
//! more than [`MAX_LOG`] bytes.

use std::io::BufRead;

use super::{provenance, Evidence, Frame, RecordedCapture, RecordedLaunch, Tool};

/// How much of a log is read: the recorder stops at 20,000 records.
pub const MAX_LOG: u64 = 16 << 20;

/// Whether an input is such a log: its first record is one of the recorder's kinds.
pub fn looks_like(head: &[u8]) -> bool {
    ["hooked\t", "launch\t", "capture\t", "inductor\t", "model\t", "jit\t"]
        .iter()
        .any(|k| head.starts_with(k.as_bytes()))
}

/// A frame of the recorder (`FILE`, `LINE`, `FUNCTION`), a Python one.
fn frame(file: &str, line: &str, function: &str) -> Option<Frame> {
    provenance::site(file, line, function).as_ref().map(frame_of)
}

/// A recorder's frame as a Python [`Frame`].
pub fn frame_of(s: &provenance::Site) -> Frame {
    Frame {
        function: s.function.clone(),
        file: Some(s.file.clone()),
        line: Some(s.line),
        module: None,
        python: true,
    }
}

/// `FILE:LINE:FUNCTION` (the file may hold `:`): the stack's frames.
fn stack_frame(s: &str) -> Option<Frame> {
    provenance::stack_site(s).as_ref().map(frame_of)
}

/// Reads a log into `ev`: its launches, captures and the processes the recorder hooked.
pub fn parse<R: BufRead>(r: R, ev: &mut Evidence) {
    let mut r = r.take(MAX_LOG);
    let mut buf = Vec::new();
    let mut skipped = 0u64;
    loop {
        buf.clear();
        match r.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                ev.notes.push(format!("read error in the launch log: {e}; what came before is kept"));
                break;
            }
        }
        ev.lines += 1;
        ev.bytes += buf.len() as u64;
        let text = String::from_utf8_lossy(&buf);
        let cells: Vec<&str> = text.trim_end_matches(['\n', '\r']).split('\t').collect();
        if !record(&cells, ev) {
            skipped += 1;
        }
    }
    if skipped > 0 {
        ev.notes.push(format!("{skipped} line(s) of the launch log were not records and were skipped"));
    }
    ev.recorded_launches.sort();
    ev.recorded_launches.dedup();
    ev.recorded_captures.sort();
    ev.recorded_captures.dedup();
    ev.recorder_pids.sort_unstable();
    ev.recorder_pids.dedup();
    ev.provenance.settle();
    ev.saw(Tool::LaunchRecorder);
}

/// One record into `ev`; false when it is none.
fn record(cells: &[&str], ev: &mut Evidence) -> bool {
    let Some(pid) = cells.get(1).and_then(|p| p.parse::<u32>().ok()) else { return false };
    match cells[0] {
        "hooked" if cells.get(2).is_some_and(|w| w.starts_with("triton.")) => ev.recorder_pids.push(pid),
        "hooked" => {}
        "full" => ev.notes.push(format!(
            "the launch recorder of process {pid} stopped at its limit of records: later places are not in it"
        )),
        "launch" => {
            let [_, _, kernel, file, line, function, cap_file, cap_line, ..] = cells[..] else {
                return false;
            };
            let Some(site) = frame(file, line, function) else { return false };
            if kernel.is_empty() {
                return false;
            }
            let capture = frame(cap_file, cap_line, "");
            let stack =
                cells.get(8).map(|s| s.split(" <- ").filter_map(stack_frame).collect()).unwrap_or_default();
            ev.recorded_launches.push(RecordedLaunch {
                pid,
                kernel: kernel.to_string(),
                site,
                capture,
                stack,
            });
        }
        "capture" => {
            let [_, _, file, line, function, ..] = cells[..] else { return false };
            let Some(site) = frame(file, line, function) else { return false };
            ev.recorded_captures.push(RecordedCapture { pid, site });
        }
        _ => return provenance::record(cells, pid, &mut ev.provenance),
    }
    true
}

/// The places `pid` (any process, when `None`) launched `kernel` from (`same` compares kernel
/// names), without repeats: one is the launch site, several are a choice the log cannot make.
pub fn places_of(ev: &[Evidence], pid: Option<u32>, same: impl Fn(&str) -> bool) -> Vec<&RecordedLaunch> {
    let mut out: Vec<&RecordedLaunch> = Vec::new();
    for l in ev.iter().flat_map(|e| &e.recorded_launches) {
        if pid.is_none_or(|p| p == l.pid)
            && same(&l.kernel)
            && !out.iter().any(|o| o.site == l.site && o.capture == l.capture)
        {
            out.push(l);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Evidence {
        let mut ev = Evidence::new("launches.log", "baseline");
        parse(text.as_bytes(), &mut ev);
        ev
    }

    #[test]
    fn garbage_truncated_and_multibyte_lines_are_skipped_not_trusted() {
        let ev = read("launch\tx\tk\n\u{00e9}\u{4e2d}\t\t\nlaunch\t7\tk\tf.py\tNaN\tg\t-\t-\n\ncapture\t7\n");
        assert!(ev.recorded_launches.is_empty() && ev.recorded_captures.is_empty());
        assert!(ev.notes.iter().any(|n| n.contains("were skipped")), "{:?}", ev.notes);
        let cut = "launch\t7\tgather\t/s/a.py\t12\tstep\t-\t-\t/s/a.py:12:step";
        // A record cut anywhere is dropped or read whole up to its optional stack: never a
        // launch with another kernel, file or line.
        let mut whole = 0;
        for n in 0..=cut.len() {
            let ev = read(&cut[..n]);
            for l in &ev.recorded_launches {
                assert_eq!(
                    (l.kernel.as_str(), l.site.file.as_deref(), l.site.line),
                    ("gather", Some("/s/a.py"), Some(12))
                );
                assert!(l.capture.is_none(), "{n}: {l:?}");
                whole += 1;
            }
        }
        assert!(whole > 0, "the whole record was never read");
    }
}

//! The driver's `CUDA_DEVICE_WAITS_ON_EXCEPTION=1` message:
//! `HOST: The application encountered a device error and CUDA_DEVICE_WAITS_ON_EXCEPTION is
//! set. You can now attach a debugger to the application (PID 1866) for inspection.`
//! becomes a [`WaitNotice`] (the host is what precedes `: The application encountered`;
//! the PID is the one to attach cuda-gdb to). [`wait_notice`] reads one line, for the
//! ladder watching a live process's stderr.
//!
//! Must not: do I/O, spawn processes, print, panic on any input, or allocate for lines
//! that are not this message (every line of a log reaches every parser).

use super::{Evidence, LineCtx, LineParser, Tool, WaitNotice};

/// Notices kept per input.
const MAX_NOTICES: usize = 1024;

const MARK: &str = ": The application encountered a device error";
const TAIL: &str = " for inspection.";

/// The notice on one line, if the line is the waits-on-exception message.
pub fn wait_notice(line: &str) -> Option<WaitNotice> {
    let t = super::quick::trim_end(line);
    // The cheap test first: every other line stops here.
    if !t.ends_with(TAIL) {
        return None;
    }
    let at = t.find(MARK)?;
    let head = &t[..at];
    // Host names have no spaces; anything before (another stream's text, a
    // `[default0]:` launcher prefix) is not part of it.
    let host = head.rsplit(char::is_whitespace).next().unwrap_or(head);
    let host = host.rsplit("]:").next().unwrap_or(host);
    let tail = &t[at + MARK.len()..];
    let (_, pid) = tail.split_once("(PID ")?;
    let (pid, _) = pid.split_once(')')?;
    let pid = pid.trim().parse().ok()?;
    Some(WaitNotice { host: host.to_string(), pid })
}

/// Collects every distinct [`WaitNotice`] of an input.
#[derive(Default)]
pub struct WaitsParser {
    notices: Vec<WaitNotice>,
}

impl LineParser for WaitsParser {
    /// A line that ends as the message does.
    #[inline]
    fn wants(&self, line: &str, _phrase_free: bool) -> bool {
        super::quick::trim_end(line).ends_with(TAIL)
    }

    fn line(&mut self, line: &str, _ctx: LineCtx) {
        if let Some(n) = wait_notice(line) {
            if self.notices.len() < MAX_NOTICES && !self.notices.contains(&n) {
                self.notices.push(n);
            }
        }
    }

    fn finish(&mut self, ev: &mut Evidence) {
        if self.notices.is_empty() {
            return;
        }
        ev.saw(Tool::Waits);
        for n in self.notices.drain(..) {
            if !ev.waits.contains(&n) {
                ev.waits.push(n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::scan::scan_str;
    use super::*;
    use proptest::prelude::*;

    /// A run that did not fault: no message.
    const CLEAN: &str = recording!("h200/clean/waits.log");
    /// `launched scale_write`, then the message (PID 915).
    const OOB_WRITE: &str = recording!("h200/oob_write/waits.log");
    /// The same program built with -G (PID 2482).
    const OOB_WRITE_G: &str = recording!("h200/oob_write_G/waits.log");
    /// A multiprocessing-spawned worker faults: the message names the worker (PID 4802),
    /// then the parent prints `worker exit code -9`.
    const TRITON_WORKER: &str = recording!("h200/triton_worker/waits.log");
    /// Rank 1 of a two-GPU torchrun job faults (PID 1040); then torchrun (PID 997) stops
    /// rank 0 (PID 1039). Recorded by `debug-ima` (tests/fixtures/bundles).
    const DIST: &str = recording!("bundles/dist_fault-full/rungs/04-attach/stderr.log");

    fn notice(host: &str, pid: u32) -> WaitNotice {
        WaitNotice { host: host.to_string(), pid }
    }

    #[test]
    fn the_message_names_host_and_pid() {
        let ev = scan_str(OOB_WRITE, "oob_write/waits.log");
        assert_eq!(ev.waits, vec![notice("vm", 915)]);
        assert!(ev.tools.contains(&Tool::Waits));
        assert_eq!(scan_str(OOB_WRITE_G, "oob_write_G/waits.log").waits, vec![notice("vm", 2482)]);
    }

    #[test]
    fn the_faulting_process_not_its_parent() {
        let ev = scan_str(TRITON_WORKER, "triton_worker/waits.log");
        assert_eq!(ev.waits, vec![notice("vm", 4802)]);
    }

    #[test]
    fn the_faulting_rank_not_the_launcher() {
        let ev = scan_str(DIST, "dist_fault-full/rungs/04-attach/stderr.log");
        assert_eq!(ev.waits, vec![notice("vm", 1040)]);
    }

    #[test]
    fn no_message_no_notice() {
        let ev = scan_str(CLEAN, "clean/waits.log");
        assert!(ev.waits.is_empty());
        assert!(!ev.tools.contains(&Tool::Waits));
    }

    #[test]
    fn one_line_at_a_time() {
        let line = OOB_WRITE.lines().nth(1).unwrap();
        assert_eq!(wait_notice(line), Some(notice("vm", 915)));
        assert_eq!(wait_notice(&format!("{line}\r")), Some(notice("vm", 915)));
        assert_eq!(wait_notice(OOB_WRITE.lines().next().unwrap()), None);
        assert_eq!(wait_notice(""), None);
        // The same notice twice is one notice.
        let twice = format!("{OOB_WRITE}{OOB_WRITE}");
        assert_eq!(scan_str(&twice, "x.log").waits.len(), 1);
    }

    #[test]
    fn excerpts_cut_at_every_char_boundary_never_panic() {
        for text in [OOB_WRITE, OOB_WRITE_G, TRITON_WORKER, DIST, CLEAN] {
            for (i, _) in text.char_indices() {
                for part in [&text[..i], &text[i..]] {
                    for line in part.lines() {
                        let _ = wait_notice(line);
                    }
                }
            }
        }
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(s in "\\PC{0,300}") {
            let _ = wait_notice(&s);
            let _ = scan_str(&s, "any.log");
        }

        #[test]
        fn message_like_lines_never_panic(
            s in "[ -~]{0,20}: The application encountered a device error[ -~]{0,40}(\\(PID [0-9a-z]{0,12}\\)?)?[ -~]{0,10} for inspection\\."
        ) {
            let _ = wait_notice(&s);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// Multi-byte, invalid and 5,000-character names in and around the waits notice: no panic.
        #[test]
        fn multi_byte_names_never_panic(
            which in any::<proptest::sample::Index>(),
            name in crate::findings::fuzz::name(),
            edits in crate::findings::fuzz::invalid_edits(),
        ) {
            let reals: Vec<_> = ["waits.log"].iter().flat_map(|f| crate::findings::fuzz::real(f)).collect();
            let _a = crate::findings::fuzz::splice_and_run(&reals, which, &name, &edits);
            let host = format!("{name}: The application encountered a device error and CUDA_DEVICE_WAITS_ON_EXCEPTION is set. You can now attach a debugger to the application (PID 9) for inspection.");
            let _ = wait_notice(&host);
        }
    }
}

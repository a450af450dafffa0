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
    let t = line.trim_end();
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

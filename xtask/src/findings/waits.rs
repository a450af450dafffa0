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

#[cfg(test)]
mod tests {
    use super::super::scan::scan_str;
    use super::*;
    use proptest::prelude::*;

    /// `16_waits.log`, verbatim.
    const NO_WAIT_16: &str = r#"launched both kernels
done 7
"#;

    /// `50_waits.log`, verbatim.
    const WAITS_50: &str = r#"launched both kernels
vm: The application encountered a device error and CUDA_DEVICE_WAITS_ON_EXCEPTION is set. You can now attach a debugger to the application (PID 1866) for inspection.
"#;

    /// `52_waits_G.log`, verbatim.
    const WAITS_G_52: &str = r#"launched both kernels
vm: The application encountered a device error and CUDA_DEVICE_WAITS_ON_EXCEPTION is set. You can now attach a debugger to the application (PID 1933) for inspection.
"#;

    /// `85_dist_waits.log`, verbatim.
    const DIST_WAITS_85: &str = r#"
*****************************************
Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed. 
*****************************************
rank 0 pid 832 first all_reduce ok
rank 1 pid 833 first all_reduce ok
vm: The application encountered a device error and CUDA_DEVICE_WAITS_ON_EXCEPTION is set. You can now attach a debugger to the application (PID 833) for inspection.
W1130 01:10:55.980000 772 torch/distributed/elastic/multiprocessing/api.py:1012] Sending process 832 closing signal SIGTERM
E1130 01:10:56.095000 772 torch/distributed/elastic/multiprocessing/api.py:986] failed (exitcode: -9) local_rank: 1 (pid: 833) of binary: /opt/torch/.venv/bin/python3
Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
  File "<frozen runpy>", line 88, in _run_code
  File "/opt/torch/.venv/lib/python3.12/site-packages/torch/distributed/run.py", line 994, in <module>
    main()
  File "/opt/torch/.venv/lib/python3.12/site-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 362, in wrapper
    return f(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^
  File "/opt/torch/.venv/lib/python3.12/site-packages/torch/distributed/run.py", line 990, in main
    run(args)
  File "/opt/torch/.venv/lib/python3.12/site-packages/torch/distributed/run.py", line 981, in run
    elastic_launch(
  File "/opt/torch/.venv/lib/python3.12/site-packages/torch/distributed/launcher/api.py", line 170, in __call__
    return launch_agent(self._config, self._entrypoint, list(args))
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/opt/torch/.venv/lib/python3.12/site-packages/torch/distributed/launcher/api.py", line 317, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
=====================================================
dist_ima.py FAILED
-----------------------------------------------------
Failures:
[1]:
  time      : 2026-11-30_01:10:56
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 832)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 832
-----------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-30_01:10:55
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 833)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 833
=====================================================
--- 20 s after attach:
pid, process_name
"#;

    fn notice(host: &str, pid: u32) -> WaitNotice {
        WaitNotice { host: host.to_string(), pid }
    }

    #[test]
    fn the_message_names_host_and_pid() {
        let ev = scan_str(WAITS_50, "50.log");
        assert_eq!(ev.waits, vec![notice("vm", 1866)]);
        assert!(ev.tools.contains(&Tool::Waits));
        assert_eq!(scan_str(WAITS_G_52, "52.log").waits, vec![notice("vm", 1933)]);
    }

    #[test]
    fn the_faulting_rank_not_the_launcher() {
        let ev = scan_str(DIST_WAITS_85, "85.log");
        assert_eq!(ev.waits, vec![notice("vm", 833)]);
    }

    #[test]
    fn no_message_no_notice() {
        let ev = scan_str(NO_WAIT_16, "16.log");
        assert!(ev.waits.is_empty());
        assert!(!ev.tools.contains(&Tool::Waits));
    }

    #[test]
    fn one_line_at_a_time() {
        let line = WAITS_50.lines().nth(1).unwrap();
        assert_eq!(wait_notice(line), Some(notice("vm", 1866)));
        assert_eq!(wait_notice(&format!("{line}\r")), Some(notice("vm", 1866)));
        assert_eq!(wait_notice("launched both kernels"), None);
        assert_eq!(wait_notice(""), None);
        // The same notice twice is one notice.
        let twice = format!("{WAITS_50}{WAITS_50}");
        assert_eq!(scan_str(&twice, "x.log").waits.len(), 1);
    }

    #[test]
    fn excerpts_cut_at_every_char_boundary_never_panic() {
        for text in [WAITS_50, WAITS_G_52, DIST_WAITS_85, NO_WAIT_16] {
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
}

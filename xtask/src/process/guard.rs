//! The guardian: a small process the tool starts before its first process (itself, run as `GUARD_ARG TOKEN`),
//! which outlives a SIGKILL of the tool. It blocks on a pipe whose only writer is the tool;
//! when the tool ends, however (SIGKILL included, which no handler sees), the pipe closes,
//! and the guardian SIGKILLs every process that carries one of the tool's run marks
//! ([`super::tree::MARK_VAR`] with the tool's token), `setsid` and double-forked ones included,
//! and every descendant of those (found through `/proc` by parent: an `env -i setsid` daemon
//! that a run started is, while the run's first process lives, its child, because that
//! process is the subreaper of its descendants: `spawn.rs`), then exits. After a normal end the tool has killed them already and there is nothing left.
//!
//! Why ancestry and not a cgroup or the session: a cgroup of its own needs a delegated,
//! writable cgroup tree, which containers and batch systems rarely give; a daemon leaves its
//! session and group (`setsid`) and its environment (`env -i`); the guardian cannot be an
//! ancestor of the runs (the tool starts them), so the runs' first processes are made the
//! subreapers, which the kernel honours whatever the daemon does.
//!
//! Must not: signal a process that neither carries the tool's mark nor descends from one that
//! does, or carry the mark itself.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// The first argument that makes the binary the guardian instead of the tool.
pub const GUARD_ARG: &str = "__debug-ima-guard";
/// How long the guardian keeps looking for marked processes (one caught in a `fork` leaves a
/// child the next look finds).
const SWEEP: Duration = Duration::from_secs(3);

/// Starts the guardian of this tool's runs, once, before the first process the tool starts
/// (a command that starts none, `analyze` or `--help`, pays nothing). The write end of its pipe stays in this process
/// only (close-on-exec, so the processes the tool starts do not hold it open). A guardian
/// that cannot start is no reason not to run: the tool still kills what it started whenever
/// it can; only a SIGKILL of the tool would leave its processes then.
pub(super) fn start(token: &str) {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| start_now(token));
}

fn start_now(token: &str) {
    let Ok(exe) = std::env::current_exe() else { return };
    let mut child = match Command::new(exe)
        .arg(GUARD_ARG)
        .arg(token)
        .env_remove(super::tree::MARK_VAR)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own group: a Ctrl-C at the terminal is the tool's to handle, not the guardian's.
        .process_group(0)
        .spawn()
    {
        Ok(c) => c,
        Err(_) => return,
    };
    super::tree::set_guardian(child.id() as i32);
    // Kept open (and never written) for as long as this process lives: the pipe's end.
    if let Some(w) = child.stdin.take() {
        std::mem::forget(w);
    }
    std::mem::forget(child);
}

/// When the binary was started as the guardian (`args[1]` is [`GUARD_ARG`]): waits for the
/// tool's end, kills what is left of its runs, and returns `true`; `false` otherwise.
pub fn serve_if_asked(args: &[std::ffi::OsString]) -> bool {
    if args.get(1).is_none_or(|a| a != GUARD_ARG) {
        return false;
    }
    let Some(token) = args.get(2).map(|t| t.to_string_lossy().into_owned()) else { return true };
    // EOF when the tool is gone: its end of the pipe was the only one.
    let mut buf = [0u8; 64];
    let mut stdin = std::io::stdin();
    while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
    let until = Instant::now() + SWEEP;
    loop {
        let marked = super::tree::marked_by(&token);
        for pid in &marked {
            let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
        }
        if marked.is_empty() || Instant::now() >= until {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_guard_argument_makes_a_guardian() {
        let os = |a: &[&str]| a.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        assert!(!serve_if_asked(&os(&["debug-ima", "run"])));
        assert!(!serve_if_asked(&os(&["debug-ima"])));
        // Without a token it has nothing to guard and returns at once.
        assert!(serve_if_asked(&os(&["debug-ima", GUARD_ARG])));
    }
}

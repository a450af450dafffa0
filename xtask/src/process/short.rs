//! Short commands whose output is wanted as text: doctor's probes (`nvidia-smi`, `nvcc
//! --version`, `df`, `ldconfig -p`), a container runtime's `version`, `image inspect`, `rm
//! -f`, the benchmarks' reference commands. Each runs in its own process group, stdin
//! closed, `LC_ALL=C`, killed with its group after its timeout or on Ctrl-C (asking the
//! process-wide [`Interrupt`], so a probe of doctor is killed as soon as the signal comes);
//! the group is registered for [`super::tree::kill_all`] while it runs, and whatever of its
//! process tree is left when it ends (a descendant that left the group) is killed too.
//!
//! Must not: print, parse what it captured (the callers do), or hold more than
//! [`MAX_OUTPUT`] of a stream.

use std::io::PipeReader;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::drain::{Drain, Got};
use super::interrupt::Interrupt;
use super::spawn::{start, Start};
use crate::model::Exit;

/// Bytes kept of each stream; the rest is read and dropped.
pub const MAX_OUTPUT: usize = 256 * 1024;
/// How long a pipe may stay open and empty after the child ended (a leftover of its group
/// holds it) before its reader stops and the group is killed. What the child wrote before
/// it ended is read whatever the time it takes ([`super::drain`]).
const READER_GRACE: Duration = Duration::from_millis(500);

/// What a short command printed, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Output {
    pub exit: Exit,
    pub stdout: String,
    /// For [`Exit::NotStarted`]: why it could not start.
    pub stderr: String,
}

impl Output {
    /// An output with exit code `code` (for tests and recordings).
    pub fn exited(code: i32, stdout: &str, stderr: &str) -> Output {
        Output { exit: Exit::Code(code), stdout: stdout.to_string(), stderr: stderr.to_string() }
    }

    /// A command that could not start, and why.
    pub fn not_started(why: impl Into<String>) -> Output {
        Output { exit: Exit::NotStarted, stdout: String::new(), stderr: why.into() }
    }

    pub fn success(&self) -> bool {
        self.exit.success()
    }
}

/// Runs `program args` to its end or `timeout`, whichever comes first.
pub fn run(program: &Path, args: &[&str], timeout: Duration) -> Output {
    run_in(program, args, None, timeout)
}

/// How often a short command is looked at at most, once it has run a while.
const POLL: Duration = Duration::from_millis(50);
/// How often [`run_watching`] calls its `tick`.
const TICK: Duration = Duration::from_millis(5);

/// [`run`] in a working directory.
pub fn run_in(program: &Path, args: &[&str], cwd: Option<&Path>, timeout: Duration) -> Output {
    poll(program, args, cwd, timeout, POLL, &mut |_| {})
}

/// [`run_in`], calling `tick` with the child's pid every [`TICK`] while it runs (the
/// benchmark samples its peak memory so).
pub fn run_watching(
    program: &Path,
    args: &[&str],
    cwd: Option<&Path>,
    timeout: Duration,
    tick: &mut dyn FnMut(u32),
) -> Output {
    poll(program, args, cwd, timeout, TICK, tick)
}

/// Runs the command, looking at it (and calling `tick`) at most every `every`.
fn poll(
    program: &Path,
    args: &[&str],
    cwd: Option<&Path>,
    timeout: Duration,
    every: Duration,
    tick: &mut dyn FnMut(u32),
) -> Output {
    let interrupt = Interrupt::default();
    if interrupt.is_set() {
        return Output { exit: Exit::Interrupted, stdout: String::new(), stderr: String::new() };
    }
    let program = program.as_os_str().to_owned();
    let args: Vec<_> = args.iter().map(|a| a.into()).collect();
    let cwd = cwd.map(Path::to_path_buf);
    let env_set = [("LC_ALL".to_string(), "C".to_string())];
    let mark = super::tree::new_mark();
    let spec = Start {
        program: &program,
        args: &args,
        cwd: cwd.as_ref(),
        env_remove: &[],
        env_set: &env_set,
        mark: &mark,
    };
    let pipes = std::io::pipe().and_then(|out| Ok((out, std::io::pipe()?)));
    let ((out_r, out_w), (err_r, err_w)) = match pipes {
        Ok(p) => p,
        Err(e) => return Output::not_started(format!("cannot make a pipe: {e}")),
    };
    let spawning = super::groups::hold_spawns();
    let handle = match start(&spec, super::spawn::Input::Null, OwnedFd::from(out_w), OwnedFd::from(err_w)) {
        Ok(h) => h,
        Err(e) => return Output::not_started(e.to_string()),
    };
    let pgid = handle.pids().first().copied().unwrap_or(0);
    let group = super::groups::Registered::new(pgid, &mark);
    drop(spawning);
    let tree = super::tree::Run::new(mark, pgid);
    let gone = Arc::new(AtomicBool::new(false));
    let stdout = keep(out_r, &gone);
    let stderr = keep(err_r, &gone);
    let deadline = Instant::now() + timeout;
    let mut nap = Duration::from_millis(2);
    let exit = loop {
        match handle.try_wait() {
            Ok(Some(out)) => break super::exit_of(out.status),
            Ok(None) if interrupt.is_set() => {
                group.kill();
                break Exit::Interrupted;
            }
            Ok(None) if Instant::now() < deadline => {
                tick(pgid);
                thread::sleep(nap);
                nap = (nap * 2).min(every);
            }
            Ok(None) => {
                group.kill();
                break Exit::TimedOut;
            }
            Err(e) => {
                group.kill();
                super::tree::kill(&tree);
                return Output::not_started(e.to_string());
            }
        }
    };
    if exit == Exit::TimedOut || exit == Exit::Interrupted {
        let _ = handle.wait();
    }
    // What is left of its tree outside the group (a descendant that called `setsid`) goes
    // now, pipes and all.
    super::tree::kill(&tree);
    // The readers read what is left and end. A pipe still open after that is held by a
    // leftover of the group (a background grandchild): that member keeps the group's id
    // reserved, so killing the group is safe.
    gone.store(true, Ordering::Release);
    let (stdout, out_open) = stdout.recv().unwrap_or_default();
    let (stderr, err_open) = stderr.recv().unwrap_or_default();
    if out_open || err_open {
        group.kill();
    }
    group.done();
    Output { exit, stdout, stderr }
}

/// Reads a pipe to its end on a thread ([`super::drain`], ending once `gone` is set and the
/// pipe is empty), keeping the first [`MAX_OUTPUT`] bytes; and whether the pipe was still held
/// open then.
fn keep(pipe: PipeReader, gone: &Arc<AtomicBool>) -> mpsc::Receiver<(String, bool)> {
    let (tx, rx) = mpsc::channel();
    let gone = Arc::clone(gone);
    thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buf = [0u8; 8192];
        let mut pipe = Drain::new(pipe, &gone, READER_GRACE);
        let held_open = loop {
            match pipe.next(&mut buf) {
                Ok(Got::End) | Err(_) => break false,
                Ok(Got::HeldOpen) => break true,
                Ok(Got::Bytes(n)) => {
                    let room = MAX_OUTPUT.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        };
        let _ = tx.send((String::from_utf8_lossy(&kept).into_owned(), held_open));
    });
    rx
}

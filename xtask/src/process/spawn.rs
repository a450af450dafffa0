//! The one place a process is started: through duct, with stdin closed (or, for `watch`'s
//! job, the tool's own stdin or a pipe fed from it: [`Input`]), stdout and stderr
//! into the pipe ends the caller reads, in a process group of its own (duct's `before_spawn`
//! hook), so that a timeout, a Stop or Ctrl-C can signal the whole target with its workers,
//! and with its run's mark in its environment ([`super::tree::MARK_VAR`]), which its
//! descendants inherit, so that one that leaves the group is still found; and as the
//! subreaper of its own descendants (`PR_SET_CHILD_SUBREAPER`, set between `fork` and `exec`,
//! kept across `exec`), so that one that clears its environment, leaves its session and
//! loses its parent (a double-forked daemon) stays its descendant, found by ancestry. (A
//! program that waits for any child, `waitpid(-1)`, may then reap such an adopted orphan;
//! the usual ones wait for their own children by pid.)
//!
//! Must not: wait, read or kill (the callers in this folder do), or print.

use std::ffi::OsString;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

/// What to start.
pub(super) struct Start<'a> {
    pub program: &'a OsString,
    pub args: &'a [OsString],
    pub cwd: Option<&'a PathBuf>,
    /// Removed from the inherited environment first.
    pub env_remove: &'a [String],
    /// Then set.
    pub env_set: &'a [(String, String)],
    /// The run's mark, set last ([`super::tree::MARK_VAR`]).
    pub mark: &'a str,
}

/// What the process reads as its stdin.
pub(super) enum Input {
    /// Nothing: `/dev/null`.
    Null,
    /// The tool's own stdin, shared (not a terminal: a file or a pipe).
    Inherit,
    /// The read end of a pipe the caller feeds.
    From(OwnedFd),
}

/// Starts the process; `stdout` and `stderr` are the write ends of the caller's pipes (or
/// one file twice), closed here once the child has them, as is a pipe's end in `stdin`.
pub(super) fn start(s: &Start, stdin: Input, stdout: OwnedFd, stderr: OwnedFd) -> io::Result<duct::Handle> {
    // Whatever is started from here on outlives no SIGKILL of the tool.
    super::guard::start(super::tree::own_token());
    let mut expr = duct::cmd(s.program, s.args);
    expr = match stdin {
        Input::Null => expr.stdin_null(),
        Input::Inherit => expr,
        Input::From(fd) => expr.stdin_file(fd),
    };
    let mut expr = expr.stdout_file(stdout).stderr_file(stderr).unchecked().before_spawn(|cmd| {
        cmd.process_group(0);
        // Safe: the closure runs in the child between fork and exec and makes one
        // system call (prctl), which is async-signal-safe. A kernel that refuses it
        // leaves the tool's other ways of finding orphans.
        unsafe {
            cmd.pre_exec(|| {
                let _ = nix::sys::prctl::set_child_subreaper(true);
                Ok(())
            });
        }
        Ok(())
    });
    if let Some(dir) = s.cwd {
        expr = expr.dir(dir);
    }
    // duct applies the outermost call first, so a name both removed and set is only set:
    // set wins, as the callers mean it.
    // The mark is the runner's, whatever the caller asks for that name.
    let mark = super::tree::MARK_VAR;
    for name in s.env_remove.iter().filter(|n| *n != mark && !s.env_set.iter().any(|(k, _)| k == *n)) {
        expr = expr.env_remove(name);
    }
    for (name, value) in s.env_set.iter().filter(|(k, _)| k != mark) {
        expr = expr.env(name, value);
    }
    expr = expr.env(mark, s.mark);
    let handle = expr.start();
    // The expression holds the pipes' write ends: dropped here, the readers see the end of
    // the pipes when the child (and whatever inherited them) closes its own.
    drop(expr);
    handle
}

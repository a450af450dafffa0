//! The registry of live process groups: every group a runner starts is in it, with the mark
//! its processes carry ([`super::tree::MARK_VAR`]), until its child is reaped, so that
//! [`super::tree::kill_all`] (a second Ctrl-C, an error path, the end of the tool) can kill
//! them all, and so that the reaper of orphans ([`super::tree::reap_orphans`]) never takes the
//! exit status of a child that a runner still waits on.
//!
//! Must not: start or reap processes (the runners do), or look at `/proc` (the tree does).

use std::cell::Cell;
use std::sync::{Mutex, MutexGuard, PoisonError};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// The process groups started and not yet reaped: the child's pid (its group's id) and the
/// run's mark.
static GROUPS: Mutex<Vec<(i32, String)>> = Mutex::new(Vec::new());
/// Held while a child is started and registered, and while orphans are reaped: a child that
/// exits at once cannot be reaped by the reaper before it is registered. Taken before
/// [`GROUPS`], never while holding it.
static SPAWNS: Mutex<()> = Mutex::new(());

fn groups() -> MutexGuard<'static, Vec<(i32, String)>> {
    GROUPS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Held by a runner across its start and [`Registered::new`], and by the reaper.
pub(super) fn hold_spawns() -> MutexGuard<'static, ()> {
    SPAWNS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The pids of the registered children and the marks of their runs.
pub(super) fn snapshot() -> (Vec<i32>, Vec<String>) {
    groups().iter().map(|(p, m)| (*p, m.clone())).unzip()
}

/// Sends `signal` to every live process group started here.
pub(super) fn signal_all(signal: Signal) {
    let pgids: Vec<i32> = groups().iter().map(|(p, _)| *p).collect();
    for pgid in pgids {
        let _ = killpg(Pid::from_raw(pgid), signal);
    }
}

/// A process group in the registry until [`Registered::done`] or drop, unless
/// [`Registered::keep`] leaves it there for [`super::tree::kill_all`].
pub(super) struct Registered {
    pub(super) pgid: Pid,
    kept: Cell<bool>,
}

impl Registered {
    /// Registers the child `pgid` of the run marked `mark`; the caller holds
    /// [`hold_spawns`] from before the start.
    pub(super) fn new(pgid: u32, mark: &str) -> Registered {
        let pgid = Pid::from_raw(i32::try_from(pgid).unwrap_or(0));
        if pgid.as_raw() > 0 {
            groups().push((pgid.as_raw(), mark.to_string()));
        }
        Registered { pgid, kept: Cell::new(false) }
    }

    pub(super) fn signal(&self, signal: Signal) {
        // ESRCH (nobody left) is the common case after a normal exit.
        if self.pgid.as_raw() > 0 {
            let _ = killpg(self.pgid, signal);
        }
    }

    pub(super) fn kill(&self) {
        self.signal(Signal::SIGKILL);
    }

    pub(super) fn done(&self) {
        groups().retain(|(g, _)| *g != self.pgid.as_raw());
    }

    /// Leaves the group registered when this is dropped: its child could not be reaped, so
    /// a later [`super::tree::kill_all`] must still reach it.
    pub(super) fn keep(&self) {
        self.kept.set(true);
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        if !self.kept.get() {
            self.done();
        }
    }
}

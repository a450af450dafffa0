//! The registry of live process groups: every group a runner starts is in it until its
//! child is reaped, so that [`kill_all`] (a second Ctrl-C, an error path) can kill them all.
//!
//! Must not: start or reap processes (the runners do).

use std::cell::Cell;
use std::sync::{Mutex, MutexGuard, PoisonError};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// Ids of the process groups started and not yet reaped.
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

fn groups() -> MutexGuard<'static, Vec<i32>> {
    GROUPS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// SIGKILLs every live process group started here. Safe to call from anywhere, at any time
/// (error paths, panic hooks, the signal thread); each runner reaps its own child.
pub fn kill_all() {
    for &pgid in groups().iter() {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
}

/// A process group in the registry until [`Registered::done`] or drop, unless
/// [`Registered::keep`] leaves it there for [`kill_all`].
pub(super) struct Registered {
    pub(super) pgid: Pid,
    kept: Cell<bool>,
}

impl Registered {
    pub(super) fn new(pgid: u32) -> Registered {
        let pgid = Pid::from_raw(i32::try_from(pgid).unwrap_or(0));
        if pgid.as_raw() > 0 {
            groups().push(pgid.as_raw());
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
        groups().retain(|&g| g != self.pgid.as_raw());
    }

    /// Leaves the group registered when this is dropped: its child could not be reaped, so
    /// a later [`kill_all`] must still reach it.
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

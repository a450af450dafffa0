//! Ctrl-C, SIGTERM and SIGHUP as a value: an [`Interrupt`] handle that the runner, the
//! ladder's driver and the `collect` thread are given and ask, instead of each reading a
//! global. The signal handler is process-wide, so every handle made by [`Interrupt::install`]
//! sees the same flag; [`Interrupt::manual`] makes one that only [`Interrupt::trigger`] sets
//! (tests, embedding).
//!
//! Must not: print or decide what an interrupt means to the ladder (the driver does).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

use anyhow::anyhow;

/// The flag the signal handler sets.
static SIGNALLED: OnceLock<Arc<AtomicBool>> = OnceLock::new();
static SIGNALS: AtomicU32 = AtomicU32::new(0);
static HANDLER: OnceLock<Result<(), String>> = OnceLock::new();

fn signalled() -> Arc<AtomicBool> {
    SIGNALLED.get_or_init(|| Arc::new(AtomicBool::new(false))).clone()
}

/// Whether the run was asked to stop.
#[derive(Debug, Clone)]
pub struct Interrupt {
    flag: Arc<AtomicBool>,
}

impl Default for Interrupt {
    /// The process-wide handle: set by the signal handler once [`Interrupt::install`] ran.
    fn default() -> Interrupt {
        Interrupt { flag: signalled() }
    }
}

impl Interrupt {
    /// Installs the handler for Ctrl-C, SIGTERM and SIGHUP (once; later calls return the
    /// first result) and returns the handle it sets. A run in progress then kills its group
    /// within about 50 ms and ends as interrupted; later runs start nothing. A second signal
    /// kills every group at once ([`super::groups::kill_all`]), for when the caller is busy inside a
    /// line callback (cuda-gdb attached to a spinning target).
    pub fn install() -> anyhow::Result<Interrupt> {
        let installed = HANDLER.get_or_init(|| {
            let flag = signalled();
            ctrlc::set_handler(move || {
                let before = SIGNALS.fetch_add(1, Ordering::SeqCst);
                flag.store(true, Ordering::SeqCst);
                if before > 0 {
                    super::groups::kill_all();
                }
            })
            .map_err(|e| e.to_string())
        });
        installed.clone().map_err(|e| anyhow!("cannot install the Ctrl-C handler: {e}"))?;
        Ok(Interrupt::default())
    }

    /// A handle no signal sets: only [`Interrupt::trigger`] does.
    pub fn manual() -> Interrupt {
        Interrupt { flag: Arc::new(AtomicBool::new(false)) }
    }

    /// Asks every holder of this handle to stop.
    pub fn trigger(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }

    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_handle_is_its_own() {
        let a = Interrupt::manual();
        let b = a.clone();
        assert!(!b.is_set());
        a.trigger();
        assert!(b.is_set());
        assert!(!Interrupt::manual().is_set());
    }
}

//! The gate a pass beside an armed run's reading waits at (the driver's memcheck pass): the
//! armed run says once whether the pass starts, as soon as its target ended; if it ends without
//! a word, [`Closes`] says "no".
//!
//! Must not: run anything, or block other than in [`Gate::wait`].

use std::sync::{Condvar, Mutex};

/// Whether the pass beside an armed run's reading starts (the driver's `execute_with_pass`):
/// opened once, by the armed run when its target ended, else when the armed run ended.
#[derive(Default)]
pub struct Gate {
    open: Mutex<Option<bool>>,
    opened: Condvar,
}

impl Gate {
    /// Says whether the pass starts; only the first word counts.
    pub fn open(&self, start: bool) {
        let mut o = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if o.is_none() {
            *o = Some(start);
            self.opened.notify_all();
        }
    }

    /// Waits for the word.
    pub fn wait(&self) -> bool {
        let mut o = self.open.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(start) = *o {
                return start;
            }
            o = self.opened.wait(o).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Opens its gate with "no pass" when dropped, so that a pass never waits on an armed run
/// that ended without a word (an error, a panic).
pub struct Closes<'g>(pub &'g Gate);

impl Drop for Closes<'_> {
    fn drop(&mut self) {
        self.0.open(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_word_counts_and_an_armed_run_ending_without_one_says_no() {
        let g = Gate::default();
        std::thread::scope(|s| {
            let waiting = s.spawn(|| g.wait());
            g.open(true);
            g.open(false);
            assert!(waiting.join().unwrap());
        });
        assert!(g.wait(), "a later word changed the first");
        let g = Gate::default();
        std::thread::scope(|s| {
            let waiting = s.spawn(|| g.wait());
            drop(Closes(&g));
            assert!(!waiting.join().unwrap());
        });
        let g = Gate::default();
        g.open(true);
        drop(Closes(&g));
        assert!(g.wait(), "closing after the word keeps it");
    }
}

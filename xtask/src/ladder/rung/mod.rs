//! The rungs: one file each, holding the rung's whole behaviour: what it is for, what it
//! costs, what the policy needs to know of it, the steps it runs (the exact commands and
//! environments, which `--dry-run` shows too) and how it runs them. This file registers them
//! (a `mod` line and an entry in [`ALL`] each); `watch` is the baseline of a climb that watches
//! a job ([`get_for`]). Beside the rungs: the [`Rung`] trait and the [`Step`] value (`api`),
//! and [`parts`], what the rungs share (the command builders, the armed run, the reading of
//! dumps, the run until hung, ...): a rung imports `api` and `parts`, never another rung.
//!
//! Adding a rung: its line in `model/rung.rs` (its [`RungId`], name, needs and recipe
//! options), its file here implementing [`Rung`], its `mod` line and its entry in [`ALL`] below
//! (docs/ARCHITECTURE.md, "Adding a rung").
//!
//! Must not: decide which rung runs (the policy), print (the driver's progress does), or spawn
//! (every step runs through [`RungIo`], which the driver implements).

mod api;
pub mod parts;

use crate::model::RungId;
pub use api::*;
pub use parts::build::*;

// The rungs' files, declared plainly so that `cargo fmt` formats them (a macro hid them).
pub mod attach;
pub mod baseline;
pub mod coredump;
pub mod hang;
pub mod initcheck;
pub mod launch_blocking;
pub mod memcheck;
pub mod racecheck;
pub mod rebuild;
pub mod repro;
pub mod synccheck;
pub mod watch;

/// The rungs, in ladder order (as [`RungId::ALL`]: the test below holds them so).
pub const ALL: [&dyn Rung; 11] = [
    &baseline::Baseline,
    &rebuild::Rebuild,
    &launch_blocking::LaunchBlocking,
    &coredump::Coredump,
    &attach::Attach,
    &memcheck::Memcheck,
    &initcheck::Initcheck,
    &racecheck::Racecheck,
    &synccheck::Synccheck,
    &hang::Hang,
    &repro::Repro,
];

/// The rung of an id, as a climb that watches one run of a job (`watch`) or not runs it:
/// the baseline of a watch is [`watch::Watched`].
pub fn get_for(id: RungId, watching: bool) -> &'static dyn Rung {
    if watching && id == RungId::Baseline {
        &watch::Watched
    } else {
        get(id)
    }
}

/// The rung of an id of the ladder ([`RungId::ALL`]; `RungId::Dump`, `debug-ima dump`'s folder,
/// has no rung and is never asked for: the climb plans from `RungId::ALL`).
pub fn get(id: RungId) -> &'static dyn Rung {
    // ALL is in RungId order; the test below holds it so.
    ALL[RungId::ALL.iter().position(|r| *r == id).unwrap_or(0)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Invocation, Role};

    #[test]
    fn the_rungs_are_listed_in_id_order() {
        let ids: Vec<RungId> = ALL.iter().map(|r| r.id()).collect();
        assert_eq!(ids, RungId::ALL);
        for id in RungId::ALL {
            assert_eq!(get(id).id(), id);
        }
    }

    #[test]
    fn filled_steps_replace_the_placeholder_and_number_the_stem() {
        let s =
            Step::new(Role::CudaGdb, Invocation::new(vec!["x".into(), format!("target {DUMP}")]), "g-{n}");
        let f = s.filled(DUMP, "/b/core_1", 2);
        assert_eq!(f.inv.argv, ["x", "target /b/core_1"]);
        assert_eq!(f.stem, "g-2");
    }
}

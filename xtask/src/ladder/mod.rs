//! The ladder: the pure [`policy`] that decides what runs next, the [`driver`] that climbs,
//! one file per rung under [`rung`], the `collect` commands beside the climb, and the
//! `--dry-run` plan derived from the very steps the run executes; and [`dump`], the evidence of
//! a process already running (`debug-ima dump PID`), outside the climb.
//!
//! Must not: parse tool output (`findings`), print other than through `ui`, spawn other than
//! through `launch`/`process`, or choose exit numbers.

pub mod ablation;
pub mod climb;
pub mod collect;
pub mod driver;
pub mod dump;
mod exec;
mod gate;
pub mod plan;
pub mod policy;
pub mod recorder;
pub mod run;
pub mod rung;
pub mod schedule;

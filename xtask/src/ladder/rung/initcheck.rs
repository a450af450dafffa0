//! Rung 7, initcheck: `compute-sanitizer --tool initcheck`, the second of the sweep when
//! nothing faults: a read of device memory that was never written (a read past the end of a
//! buffer into a neighbour that is not initialised yet, a missing `cudaMemset`).
//!
//! Must not: parse its report (`findings::memcheck` reads initcheck's records too).

use anyhow::Result;

use super::api::{Ran, Rung, RungIo, Step, StepCx};
use super::parts::sanitizer::{self, Scope};
use crate::findings::verdict::Part;
use crate::model::RungId;

pub struct Initcheck;

impl Rung for Initcheck {
    fn id(&self) -> RungId {
        RungId::Initcheck
    }

    fn describe(&self) -> &'static str {
        "rerun under `compute-sanitizer --tool initcheck`: finds reads of memory never written \
         (about as slow as memcheck)"
    }

    fn answers(&self, _python: bool) -> &'static [Part] {
        &[Part::SourceLine, Part::Class, Part::LaunchSite]
    }

    /// Right after memcheck, as slow.
    fn cost_rank(&self, _python: bool) -> Option<u32> {
        Some(110)
    }

    /// Reads of unwritten memory do not fault: once the target faulted, it is no answer.
    fn locates_faults(&self) -> bool {
        false
    }

    fn in_sweep(&self) -> bool {
        true
    }

    fn steps(&self, cx: &StepCx) -> Vec<Step> {
        sanitizer::steps(cx, RungId::Initcheck, "initcheck", &[], Scope::Every)
    }

    fn run(&self, io: &mut dyn RungIo, steps: &[Step]) -> Result<Ran> {
        sanitizer::run(io, steps, RungId::Initcheck)
    }
}

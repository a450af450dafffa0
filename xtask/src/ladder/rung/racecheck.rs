//! Rung 8, racecheck: `compute-sanitizer --tool racecheck`, part of the sweep when nothing
//! faults: two threads of a block touching the same shared memory without a barrier between
//! them. The default analysis report (one record per pair of lines, with the hazard count),
//! the text on stdout and the XML saved in the rung's folder, from one run.
//!
//! Must not: parse its report (`findings::racecheck` reads the text, `findings::memcheck_xml`
//! the XML), or ask for the hazard report (`--racecheck-report hazard`: one record per byte,
//! 15x slower on the recordings; recipes may add it through `args`).

use anyhow::Result;

use super::api::{Ran, Rung, RungIo, Step, StepCx};
use super::parts::sanitizer::{self, Scope};
use crate::findings::verdict::Part;
use crate::model::RungId;

pub struct Racecheck;

impl Rung for Racecheck {
    fn id(&self) -> RungId {
        RungId::Racecheck
    }

    fn describe(&self) -> &'static str {
        "rerun under `compute-sanitizer --tool racecheck`: finds shared-memory races (a missing \
         `__syncthreads()`), naming both lines; can be far slower than memcheck (2 s on a tiny \
         program where memcheck took 0.5 s; its hazard report 30 s)"
    }

    fn answers(&self, _python: bool) -> &'static [Part] {
        &[Part::SourceLine, Part::Class]
    }

    fn in_sweep(&self) -> bool {
        true
    }

    fn steps(&self, cx: &StepCx) -> Vec<Step> {
        sanitizer::steps(cx, RungId::Racecheck, RungId::Racecheck.name(), &[], Scope::Shared)
    }

    fn run(&self, io: &mut dyn RungIo, steps: &[Step]) -> Result<Ran> {
        sanitizer::run(io, steps, RungId::Racecheck)
    }
}

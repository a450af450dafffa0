//! Rung 9, synccheck: `compute-sanitizer --tool synccheck`, the last of the sweep when nothing
//! faults: a `__syncwarp` or `__syncthreads()` whose mask leaves out a calling thread, or that
//! not every thread of the block reaches (`Barrier error detected`). Over every kernel, unlike
//! racecheck: which kernels use a barrier is not told from the binary (a `__syncwarp(mask)` the
//! compiler dropped from the SASS is still synccheck's error, tests/fixtures/h200/scope).
//!
//! Must not: parse its report (`findings::memcheck` and `findings::memcheck_xml` read
//! synccheck's records, which have memcheck's shape).

use anyhow::Result;

use super::api::{Ran, Rung, RungIo, Step, StepCx};
use super::parts::sanitizer::{self, Scope};
use crate::findings::verdict::Part;
use crate::model::RungId;

pub struct Synccheck;

impl Rung for Synccheck {
    fn id(&self) -> RungId {
        RungId::Synccheck
    }

    fn describe(&self) -> &'static str {
        "rerun under `compute-sanitizer --tool synccheck`: finds barriers used wrongly (a \
         `__syncwarp` mask without the calling lane, a divergent `__syncthreads()`); about 3x \
         memcheck's time on a tiny program (1.7 s against 0.5 s)"
    }

    fn answers(&self, _python: bool) -> &'static [Part] {
        &[Part::SourceLine, Part::Class, Part::LaunchSite]
    }

    fn in_sweep(&self) -> bool {
        true
    }

    fn steps(&self, cx: &StepCx) -> Vec<Step> {
        sanitizer::steps(cx, RungId::Synccheck, RungId::Synccheck.name(), &[], Scope::Every)
    }

    fn run(&self, io: &mut dyn RungIo, steps: &[Step]) -> Result<Ran> {
        sanitizer::run(io, steps, RungId::Synccheck)
    }
}

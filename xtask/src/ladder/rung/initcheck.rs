//! Rung 7, initcheck: `compute-sanitizer --tool initcheck`, the second half of the sweep when
//! nothing faults: a read of device memory that was never written (a read past the end of a
//! buffer into a neighbour that is not initialised yet, a missing `cudaMemset`).
//!
//! Must not: parse its report (`findings::memcheck` reads initcheck's records too).

use anyhow::Result;

use super::api::{Ran, Rung, RungIo, Step, StepCx, When};
use super::memcheck::{kns, run_sanitizer, sanitizer, KERNEL_NAME};
use crate::bundle::layout::INITCHECK_XML;
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

    fn steps(&self, cx: &StepCx) -> Vec<Step> {
        let xml = cx.dir.join(INITCHECK_XML);
        vec![
            Step::target(sanitizer(cx.recipe, RungId::Initcheck, "initcheck", &[], &xml)),
            Step::target(sanitizer(cx.recipe, RungId::Initcheck, "initcheck", &[KERNEL_NAME, &kns()], &xml))
                .when(When::KernelKnown),
        ]
    }

    fn run(&self, io: &mut dyn RungIo, steps: &[Step]) -> Result<Ran> {
        run_sanitizer(io, steps, INITCHECK_XML, RungId::Initcheck)
    }
}

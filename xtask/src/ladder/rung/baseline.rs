//! Rung 1, baseline: the target as it is, to capture the symptom. When a binary the build
//! makes does not exist yet, the recipe's plain build runs first.
//!
//! Must not: change the target's environment beyond what every rung does (`build::target`).

use anyhow::{bail, Result};

use super::api::{step, Ran, Rung, RungIo, Step, StepCx, When};
use super::build::{target, with_options};
use crate::model::{Invocation, Role, RungId};
use crate::recipe::Resolved;

pub struct Baseline;

pub fn invocation(r: &Resolved) -> Invocation {
    with_options(target(r), r, RungId::Baseline)
}

impl Rung for Baseline {
    fn id(&self) -> RungId {
        RungId::Baseline
    }

    fn describe(&self) -> &'static str {
        "run the target as it is, to capture the symptom (one normal run)"
    }

    fn steps(&self, cx: &StepCx) -> Vec<Step> {
        let mut steps = Vec::new();
        if let Some(b) = &cx.recipe.build {
            let build = super::rebuild::plain_build(b);
            steps.push(Step::new(Role::Build, build, "build").when(When::BinariesMissing));
        }
        steps.push(Step::target(invocation(cx.recipe)));
        steps
    }

    fn run(&self, io: &mut dyn RungIo, steps: &[Step]) -> Result<Ran> {
        if let Some(b) = &io.recipe().build {
            if b.binaries_missing() {
                io.say("building the target first (plain, as the recipe builds it)");
                super::rebuild::create_binary_dirs(b)?;
                let build = step(steps, When::BinariesMissing)?;
                let ran = io.exec(build)?;
                if !ran.success() {
                    bail!(
                        "the recipe's build failed ({}): see `{}/{}.log`",
                        ran.text(),
                        io.shown_dir(),
                        build.stem
                    );
                }
            }
        }
        let ran = io.exec(step(steps, When::Always)?)?;
        Ok(Ran { faulted: !ran.success(), yielded: true })
    }
}

//! `--dry-run`: the plan, every step's exact command and environment, derived from the very
//! steps the run executes ([`Climb::steps`], the `collect` jobs) and placed by the launchers
//! the same way ([`super::run::place_for`]): what it prints is what would run.
//!
//! Must not: run or write anything.

use std::path::Path;

use super::collect;
use super::driver::Climb;
use super::run::place_for;
use super::rung::{self, Step, When};
use crate::bundle::layout;
use crate::launch::Place;
use crate::model::{Invocation, Role, RungId};

/// The plan's text. `bundle` is the folder the run would create (its name unknown until then).
pub fn render(climb: &Climb, bundle: &Path) -> String {
    let r = climb.recipe;
    let mut s = format!(
        "recipe: {}\nplan: {}\n",
        r.name,
        climb.plan.iter().map(|r| r.name()).collect::<Vec<_>>().join(", ")
    );
    if !climb.request.runs_every_planned_rung() {
        s.push_str(
            "   (after the first, only the rungs the verdict still needs run, cheapest first, until it is \
             complete; their folders are numbered as they run: `rungs/<NN>-<rung>`)\n",
        );
    }
    for l in climb.launchers.iter() {
        s.push_str(&l.plan());
    }
    s.push_str("\ncollect (once, in the background beside the climb; a failure is noted, not fatal):\n");
    for job in collect::jobs(r, &climb.launchers) {
        let inv = job.place.wrap(&job.inv);
        let shown = crate::redact::invocation(&inv, "plan", &mut Vec::new());
        s.push_str(&format!("   {}: {}\n", layout::env_file(&job.name), shown.shell_line()));
        if let Some(t) = inv.timeout {
            s.push_str(&format!("      timeout: {} s\n", t.as_secs()));
        }
    }
    let mut last = None;
    for planned in steps(climb, bundle) {
        if last != Some(planned.rung) {
            let i = climb.plan.iter().position(|r| *r == planned.rung).unwrap_or(0) + 1;
            s.push_str(&format!(
                "\n{i}. {}: {}\n",
                planned.rung,
                rung::get(planned.rung).describe_in(r, climb.debug)
            ));
            last = Some(planned.rung);
        }
        // Redacted as the run records it (`command.txt`): a plan gets pasted into issues too.
        let shown = crate::redact::invocation(&planned.inv, "plan", &mut Vec::new());
        s.push_str(&format!("   {}: {}\n", label(&planned.step), shown.shell_line()));
        if let Some(t) = planned.inv.timeout {
            s.push_str(&format!("      timeout: {} s\n", t.as_secs()));
        }
    }
    s
}

/// One step of the plan, as it would run.
#[derive(Debug, Clone)]
pub struct Planned {
    pub rung: RungId,
    pub step: Step,
    /// The command that would run: the step's, wrapped for its container.
    pub inv: Invocation,
}

/// Every step of every planned rung, in order, wrapped where it would run. A step that runs
/// only when the target is not built yet is left out when it is.
pub fn steps(climb: &Climb, bundle: &Path) -> Vec<Planned> {
    let missing = climb.recipe.not_built(!climb.launchers.in_container()).is_some();
    let mut out = Vec::new();
    let mut started = 0;
    for (i, id) in climb.plan.iter().enumerate() {
        let mut target = Place::HOST;
        // Every rung of `--full` or `--rungs` runs, numbered as listed; the default climb runs
        // the first and then only what the verdict still needs, numbered as they run.
        let definite = climb.request.runs_every_planned_rung() || i == 0;
        let dir = if definite { layout::rung_dir(i + 1, *id, 0) } else { layout::rung_dir_unnumbered(*id) };
        for mut step in climb.steps(*id, bundle.join(dir), 0, Default::default()) {
            // The baseline builds or checks, as the binaries are there or not now.
            if (step.when == When::BinariesMissing && !missing)
                || (step.when == When::BinariesPresent && missing)
            {
                continue;
            }
            // Named as the first dump's (or the only attach's) would be.
            step.stem = step.stem.replace("{n}", "1");
            let place = place_for(&climb.launchers, &mut started, &step, &target);
            if step.role == Role::Target {
                target = place.clone();
            }
            let inv = place.wrap(&step.inv);
            out.push(Planned { rung: *id, step, inv });
        }
    }
    out
}

/// How the plan names a step.
fn label(step: &Step) -> String {
    match (step.role, step.when) {
        (Role::Build, When::BinariesMissing) => {
            "build (with line info, the target is not built yet)".to_string()
        }
        (Role::Cuobjdump, When::Listing) => {
            "kernel listing (before the run, per binary, of the kernels with shared memory)".to_string()
        }
        (Role::Cuobjdump, When::PerJitLibrary) => {
            format!("line-info check ({})", When::PerJitLibrary.label())
        }
        (Role::Cuobjdump, _) => "line-info check".to_string(),
        (_, When::Always) => step.role.name().to_string(),
        (_, When::PerDump) => "per dump".to_string(),
        (_, When::OnWaitMessage) => "on the wait message".to_string(),
        (role, w) => format!("{role} ({})", w.label()),
    }
}

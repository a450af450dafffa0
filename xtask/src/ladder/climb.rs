//! What a climb is given ([`Climb`]: the recipe, the request, the plan, where its runs go)
//! and what it leaves ([`Climbed`], [`Stopped`]); the steps of a rung as the climb will run
//! them. The climb itself is the driver's ([`super::driver`]), the running of steps the
//! executor's ([`super::exec`]).
//!
//! Must not: run, print, or decide what runs next (that is `policy`).

use std::path::PathBuf;

use anyhow::Result;

use super::policy::{self, Facts, Request};
use super::recorder;
use super::rung::{self, Debug, Step, StepCx};
use crate::bundle::Bundle;
use crate::findings::verdict::Analysis;
use crate::launch::Launchers;
use crate::model::{Role, RungId};
use crate::process::Interrupt;
use crate::recipe::Resolved;

/// Everything a climb is given.
pub struct Climb<'a> {
    pub recipe: &'a Resolved,
    pub request: &'a Request,
    pub plan: &'a [RungId],
    pub debug: Debug,
    /// `NVCC_PREPEND_FLAGS` of the ladder's environment, which the rebuild keeps.
    pub inherited_prepend: Option<String>,
    /// `PYTHONPATH` of the ladder's environment, which a Python target's runs keep behind the
    /// launch recorder's folder ([`super::recorder`]).
    pub inherited_pythonpath: Option<String>,
    /// How many GPUs doctor saw (`nvidia-smi --query-gpu`).
    pub gpus: usize,
    /// `PATH` for every process of the climb, when doctor found tools outside the tool's own
    /// (the host only: a container has its own): given to each step, never set process-wide.
    pub path: Option<String>,
    /// Where the run's processes go, innermost first: the run's containers, when every rung
    /// runs in one; the Slurm allocation the target's runs go into as job steps (`--launcher
    /// slurm`), or the hosts they go to, one rank each (`--launcher ssh`). None: the host.
    pub launchers: Launchers,
    pub interrupt: Interrupt,
}

/// What a climb left.
pub struct Climbed {
    pub bundle: Bundle,
    pub analysis: Analysis,
    /// Why it stopped, or the error that stopped it.
    pub outcome: Result<Stopped>,
}

/// How a climb ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    /// The policy or the prompt stopped it; the reason, for the user.
    Done(String),
    /// Ctrl-C, SIGTERM, SIGHUP or another signal the tool catches (`process::Cause`).
    Interrupted,
}

impl Stopped {
    /// For the user and the manifest's `stopped`. An interruption names the signal that came
    /// first (`interrupted (SIGTERM): ...`), as the process-wide handler recorded it; a stop
    /// asked for without a signal says only `interrupted`.
    pub fn reason(&self) -> String {
        match self {
            Stopped::Done(why) => why.clone(),
            Stopped::Interrupted => {
                let by = match Interrupt::default().cause().filter(|c| c.signal().is_some()) {
                    Some(cause) => format!(" ({})", cause.text()),
                    None => String::new(),
                };
                format!("interrupted{by}: the bundle keeps what was collected")
            }
        }
    }
}

impl Climb<'_> {
    /// The steps of one rung, as its `attempt`-th run (0-based) will run them from its folder
    /// `dir`.
    pub fn steps(&self, id: RungId, dir: PathBuf, attempt: usize, facts: Facts) -> Vec<Step> {
        let cx = StepCx {
            recipe: self.recipe,
            debug: self.debug,
            dir: dir.clone(),
            inherited_prepend: self.inherited_prepend.clone(),
            blocking: policy::armed_blocking(self.request, facts, attempt),
            static_sites: facts.static_sites,
        };
        let mut steps = rung::get_for(id, self.request.watch).steps(&cx);
        if let Some(p) = &self.path {
            for s in &mut steps {
                s.inv.set("PATH", p.clone());
            }
        }
        if self.records_launches() {
            for s in steps.iter_mut().filter(|s| s.role == Role::Target) {
                recorder::arm(&mut s.inv, &dir, self.inherited_pythonpath.as_deref());
            }
        }
        steps
    }

    /// Whether the target's runs go through a launcher of ranks (Slurm, ssh), whose output is
    /// labelled by rank.
    pub fn ranked(&self) -> bool {
        self.launchers.ranked()
    }

    /// Whether the target's runs load the launch recorder: a Python target on the host or
    /// through Slurm (not in a container: [`recorder`]).
    pub(super) fn records_launches(&self) -> bool {
        self.recipe.python && !self.launchers.in_container()
    }
}

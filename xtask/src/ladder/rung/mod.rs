//! The rungs: one file each, holding the rung's whole behaviour: what it is for, what it
//! costs, the steps it runs (the exact commands and environments, which `--dry-run` shows
//! too) and how it runs them. This file holds the [`Rung`] trait, the [`Step`] value and the
//! command builders the rungs share.
//!
//! Adding a rung: a [`RungId`] variant (with its name and needs) and a file here implementing
//! [`Rung`], listed in [`ALL`].
//!
//! Must not: decide which rung runs (the policy), print (the driver's progress does), or spawn
//! (every step runs through [`RungIo`], which the driver implements).

pub mod attach;
pub mod baseline;
pub mod coredump;
pub mod launch_blocking;
pub mod memcheck;
pub mod rebuild;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;

use crate::launch::container::Access;
use crate::model::{Exit, Invocation, Role, RungId};
use crate::process::Control;
use crate::recipe::{Resolved, Step as RecipeStep};
pub use rebuild::Debug;

/// One rung: its identity, what it is for, the steps it runs and how.
pub trait Rung: Sync {
    fn id(&self) -> RungId;
    /// What the rung does and what it costs, for the prompt before it runs.
    fn describe(&self) -> &'static str;
    /// Whether the rung is of use only when the target faults (then a clean baseline skips it).
    fn needs_fault(&self) -> bool {
        false
    }
    /// Whether the rung can run for this recipe (the rebuild needs a `build` step).
    fn applies(&self, r: &Resolved) -> bool {
        let _ = r;
        true
    }
    /// Every step the rung may run, in order, each with when it runs: the run executes these
    /// (placeholders filled in), `--dry-run` prints them.
    fn steps(&self, cx: &StepCx) -> Vec<Step>;
    /// Runs the steps through `io`.
    fn run(&self, io: &mut dyn RungIo, steps: &[Step]) -> Result<Ran>;
}

/// The rungs, in ladder order.
pub const ALL: [&dyn Rung; 6] = [
    &baseline::Baseline,
    &rebuild::Rebuild,
    &launch_blocking::LaunchBlocking,
    &coredump::Coredump,
    &attach::Attach,
    &memcheck::Memcheck,
];

/// The rung of an id.
pub fn get(id: RungId) -> &'static dyn Rung {
    // ALL is in RungId order; the test below holds it so.
    ALL[RungId::ALL.iter().position(|r| *r == id).unwrap_or(0)]
}

/// What a rung ran to, for the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ran {
    /// The target exited non-zero, died of a signal, or left a dump.
    pub faulted: bool,
    /// The rung's tool produced the artifact it exists for.
    pub yielded: bool,
}

/// What the steps are built from.
#[derive(Debug, Clone)]
pub struct StepCx<'a> {
    pub recipe: &'a Resolved,
    pub debug: Debug,
    /// The rung's folder in the bundle (absolute): dumps and reports go there.
    pub dir: PathBuf,
    /// `NVCC_PREPEND_FLAGS` of the ladder's own environment, which the rebuild keeps.
    pub inherited_prepend: Option<String>,
}

/// When a step runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    Always,
    /// Before the target, when a binary the build makes does not exist yet.
    BinariesMissing,
    /// Once per dump the target left ([`DUMP`] in its argv stands for the dump's path).
    PerDump,
    /// Again on that dump, with fewer commands, when cuda-gdb crashed on it.
    PerDumpAfterCrash,
    /// When a process announces it waits for a debugger ([`PID`] stands for its pid).
    OnWaitMessage,
    /// Again while it still waits, with fewer commands, when cuda-gdb crashed attached.
    OnWaitMessageAfterCrash,
}

impl When {
    /// How `--dry-run` says it.
    pub fn label(self) -> &'static str {
        match self {
            When::Always => "",
            When::BinariesMissing => "if a binary does not exist yet",
            When::PerDump => "per dump",
            When::PerDumpAfterCrash => "per dump, if cuda-gdb crashed",
            When::OnWaitMessage => "on the wait message",
            When::OnWaitMessageAfterCrash => "on the wait message, if cuda-gdb crashed",
        }
    }
}

/// Where a step's process runs, with a container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    /// In a new container of its own.
    New(Access),
    /// Inside the container of the target that is running (cuda-gdb attaching to it).
    BesideTarget,
}

/// Stands for the path of a dump in a [`When::PerDump`] step.
pub const DUMP: &str = "core_<host>.<pid>.<time>";
/// Stands for the pid in a [`When::OnWaitMessage`] step.
pub const PID: &str = "<PID from the message>";

/// One process a rung runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub role: Role,
    pub inv: Invocation,
    /// The logs' name in the rung folder: empty for the target's `stdout.log` and
    /// `stderr.log`, else `<stem>.log` with both streams.
    pub stem: String,
    pub at: At,
    pub when: When,
}

impl Step {
    pub fn new(role: Role, inv: Invocation, stem: impl Into<String>) -> Step {
        Step { role, inv, stem: stem.into(), at: At::New(Access::Plain), when: When::Always }
    }

    /// The target's run: its streams in `stdout.log` and `stderr.log`.
    pub fn target(inv: Invocation) -> Step {
        Step::new(Role::Target, inv, "")
    }

    pub fn when(mut self, when: When) -> Step {
        self.when = when;
        self
    }

    pub fn at(mut self, at: At) -> Step {
        self.at = at;
        self
    }

    /// The step with `placeholder` replaced by `value` in its argv and `{n}` in its stem by
    /// `n`: a per-dump or on-message step made concrete.
    pub fn filled(&self, placeholder: &str, value: &str, n: usize) -> Step {
        let mut s = self.clone();
        for a in &mut s.inv.argv {
            if a.contains(placeholder) {
                *a = a.replace(placeholder, value);
            }
        }
        s.stem = s.stem.replace("{n}", &n.to_string());
        s
    }
}

/// The first step of `steps` that runs `when`.
pub fn step(steps: &[Step], when: When) -> Result<&Step> {
    steps.iter().find(|s| s.when == when).ok_or_else(|| anyhow::anyhow!("the rung has no {when:?} step"))
}

/// What the driver gives a rung's run.
pub trait RungIo {
    fn recipe(&self) -> &Resolved;
    /// The rung's folder (absolute).
    fn dir(&self) -> &Path;
    /// The rung's folder as the bundle names it (`rungs/02-rebuild`), for messages.
    fn shown_dir(&self) -> String;
    /// GPUs doctor saw.
    fn gpus(&self) -> usize;
    fn interrupted(&self) -> bool;
    /// Runs one step into the bundle and records it; the target's and the build's lines go
    /// to the progress.
    fn exec(&mut self, step: &Step) -> Result<Exit>;
    /// Runs `step` (the target), giving `watch` every line and a runner for steps
    /// [`At::BesideTarget`]; `watch` returning [`Control::Stop`] ends the target.
    fn exec_watching(
        &mut self,
        step: &Step,
        watch: &mut dyn FnMut(&str, &mut dyn Beside) -> Control,
    ) -> Result<Exit>;
    /// A note kept in the rung's record (and shown when the rung ends).
    fn note(&mut self, text: String);
    /// A remark shown now, while the rung runs.
    fn say(&self, text: &str);
}

/// Runs steps beside a running target, from inside its line callback.
pub trait Beside {
    /// Runs the step into the bundle; the error is the process's (the bundle's are kept).
    fn exec(&mut self, step: &Step) -> Result<()>;
    /// The log the step wrote (`<stem>.log`).
    fn log(&self, step: &Step) -> PathBuf;
    fn say(&self, text: &str);
    fn interrupted(&self) -> bool;
}

/// Default time limit of one run of the target when the recipe sets none.
pub const DEFAULT_RUN_TIMEOUT: Duration = Duration::from_secs(600);
/// Time limit for one cuda-gdb session.
pub const GDB_TIMEOUT: Duration = Duration::from_secs(300);

/// `cuda-gdb -batch -nx` with `first` (the target: `-p PID`, or nothing) and the
/// commands: pagination off, then `target` (the coredump, if any); with `full`, the kernels
/// table and the backtrace; with `locals` too, locals and arguments (a `-G` build has them).
pub fn cuda_gdb(first: &[String], target: Option<String>, full: bool, locals: bool) -> Invocation {
    let mut argv: Vec<String> = vec!["cuda-gdb".into(), "-batch".into(), "-nx".into()];
    argv.extend(first.iter().cloned());
    let mut commands = vec!["set pagination off".to_string()];
    commands.extend(target);
    if full {
        commands.extend(["info cuda kernels".to_string(), "bt".to_string()]);
        if locals {
            commands.extend(["info locals".to_string(), "info args".to_string()]);
        }
    }
    for c in commands {
        argv.push("-ex".into());
        argv.push(c);
    }
    Invocation { timeout: Some(GDB_TIMEOUT), ..Invocation::new(argv) }
}

/// An invocation of a recipe step (build or run) with its own environment.
pub fn from_step(step: &RecipeStep) -> Invocation {
    Invocation {
        argv: step.argv.clone(),
        cwd: step.cwd.clone(),
        env_set: step.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        env_remove: step.env_remove.clone(),
        timeout: step.timeout.or(Some(DEFAULT_RUN_TIMEOUT)),
    }
}

/// The target's run, as every rung starts it: the recipe's command and environment, plus
/// what keeps the evidence intact — unbuffered Python output, Triton line info on.
pub fn target(r: &Resolved) -> Invocation {
    let mut inv = from_step(&r.run);
    // Triton drops line info when this is set: the coredump and memcheck rungs need it.
    inv.remove("TRITON_DISABLE_LINE_INFO");
    if r.python {
        inv.set("PYTHONUNBUFFERED", "1");
    }
    inv
}

/// Applies a rung's recipe options: its timeout and extra environment.
pub fn with_options(mut inv: Invocation, r: &Resolved, rung: RungId) -> Invocation {
    if let Some(o) = r.rungs.get(&rung) {
        if let Some(t) = o.timeout {
            inv.timeout = Some(Duration::from_secs(t));
        }
        for (k, v) in &o.env {
            inv.set(k, v.clone());
        }
    }
    inv
}

#[cfg(test)]
mod tests {
    use super::*;

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

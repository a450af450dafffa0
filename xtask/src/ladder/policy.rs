//! The ladder's policy, pure: which rungs run, in which order, and — given what the rungs so
//! far found — whether to stop, go on, or change course; what a rung's run comes to
//! ([`outcome`]). What it knows of each rung (its cost, the sweep, whether it stands for the
//! baseline, ...) it asks of the rung ([`rung::Rung`]); it names a rung only for the roles its
//! logic is built on: the armed baseline, the rebuild (new binaries, or for a Python target
//! without a build its run-time builds redone in one armed run) and the hang rung.
//!
//! Must not: spawn processes, touch files or print. The driver asks, runs, and asks again.

use super::rung::{self, ArmedEnd, Ran, Rung};
use crate::findings::verdict::{Analysis, Part, Reproduced};
use crate::findings::{ErrorClass, Evidence};
use crate::model::{Exit, RungId};

/// What the user asked for.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// `--rungs a,b,...`: exactly these, in ladder order.
    pub rungs: Option<Vec<RungId>>,
    /// `--full`: every rung, even after a verdict.
    pub full: bool,
    /// The recipe can rebuild the target (it has a `build:` step).
    pub has_build: bool,
    /// The target is not built yet (`Resolved::not_built`: a binary of the build, or the
    /// program the run names, does not exist): its build runs before the first rung that runs
    /// it, whatever `--rungs` says.
    pub not_built: bool,
    /// Rungs the recipe disabled.
    pub disabled: Vec<RungId>,
    /// The target is a Python program (the recipe says so): its costs and sources differ.
    pub python: bool,
    /// `--hang-after` or `run.hang_after` was given: a hang is expected, so the hang rung runs
    /// first, in the baseline's place (one run; if the target ends by itself before, that run
    /// stands for the baseline).
    pub hang_after: bool,
    /// `--retries N`: how many more times a rung that did not reproduce the fault runs before
    /// the climb concludes (0 in tests that do not say).
    pub retries: u32,
    /// Why the armed first run must not be launch-blocking (`armed::blocking_unsafe`: collectives
    /// it can deadlock, or the recipe says so); `None`: it may be.
    pub blocking_unsafe: Option<String>,
    /// `watch`: one armed run of a long job, at full speed (never launch-blocking), and no
    /// other rung: the job cannot be rerun.
    pub watch: bool,
    /// `--repro`: once the climb would stop with a verdict, the repro rung writes and checks a
    /// standalone reproducer of the faulting launch (one more run of the target).
    pub repro: bool,
}

impl Request {
    /// `--full` or `--rungs`: every planned rung runs, in the plan's order, whatever it finds.
    pub fn runs_every_planned_rung(&self) -> bool {
        self.full || self.rungs.is_some()
    }

    /// The rebuild redoes the target's run-time builds: a Python program without a `build:`
    /// step, whose kernels were compiled while it ran (a `torch.utils.cpp_extension` op, a
    /// CuPy kernel). Its rebuild is one armed run of the target with those builds sent to fresh
    /// folders with line info; the user's own caches, which every other rung's run reads, stay
    /// as they were.
    pub fn rebuilds_at_run_time(&self) -> bool {
        self.python && !self.has_build
    }

    /// The recipe has something the rebuild can build again: its `build:` step, or a Python
    /// program's run-time builds.
    fn can_rebuild(&self) -> bool {
        self.has_build || self.rebuilds_at_run_time()
    }
}

/// Whether the baseline's `attempt`-th run (0-based) is launch-blocking: the first is where it
/// is safe, so that one run gives the launch site; retries alternate without and with it, so
/// that a fault launch-blocking hides (a race between the host and the device, or between
/// streams) shows too.
/// Once the binary named its launch sites (`facts.static_sites`), the first run is at full
/// speed and the retries that block are the odd ones: launch-blocking is then only for a fault
/// in a kernel launched from several places, or one that shows only so.
pub fn armed_blocking(req: &Request, facts: Facts, attempt: usize) -> bool {
    let first_blocks = facts.static_sites != Some(true) || req.python;
    !req.watch && req.blocking_unsafe.is_none() && attempt.is_multiple_of(2) == first_blocks
}

/// How many times `r` has run (or been skipped or failed) so far.
pub fn attempts(done: &[(RungId, RungOutcome)], r: RungId) -> usize {
    done.iter().filter(|(d, _)| *d == r).count()
}

/// The baseline's runs so far, in order: whether each was launch-blocking, and its outcome.
fn baseline_runs<'a>(
    req: &'a Request,
    facts: Facts,
    done: &'a [(RungId, RungOutcome)],
) -> impl Iterator<Item = (bool, RungOutcome)> + 'a {
    done.iter()
        .filter(|(r, _)| *r == RungId::Baseline)
        .enumerate()
        .map(move |(k, (_, o))| (armed_blocking(req, facts, k), *o))
}

/// Launch-blocking hid the fault: an armed run without it faulted, and every one with it ran
/// clean (at least one did).
pub fn blocking_hid(req: &Request, facts: Facts, done: &[(RungId, RungOutcome)]) -> bool {
    let runs: Vec<(bool, RungOutcome)> = baseline_runs(req, facts, done).collect();
    runs.iter().any(|(b, o)| !b && o.faulted())
        && runs.iter().any(|(b, o)| *b && o.ran_clean())
        && !runs.iter().any(|(b, o)| *b && o.faulted())
}

/// Whether an armed baseline run already did what rung `r` would: the coredump rung's run is
/// the armed run's (dumps on exception, read by cuda-gdb: [`Rung::covered_by_armed_run`]),
/// launch-blocking for a native target; so it is covered once an armed run faulted under the
/// same conditions.
/// A rebuild after it (the binaries lacked line info) makes the next dump worth having again;
/// a rebuild of run-time builds does not: its fresh builds are its own run's, and every other
/// run reads the user's caches as the first did.
fn covered(req: &Request, facts: Facts, done: &[(RungId, RungOutcome)], r: RungId) -> bool {
    let rebuilt = !req.rebuilds_at_run_time()
        && done.iter().any(|(d, o)| *d == RungId::Rebuild && *o != RungOutcome::Skipped);
    rung::get(r).covered_by_armed_run()
        && !rebuilt
        && baseline_runs(req, facts, done).any(|(b, o)| o.faulted() && (req.python || b))
}

/// The rung to run again because it did not reproduce the fault, within `--retries`: the last
/// rung that needs a fault, when a fault was seen in an earlier run; or, when nothing faulted
/// at all and the sweep has run (or is not planned), the armed baseline once more.
fn retry(
    req: &Request,
    plan: &[RungId],
    done: &[(RungId, RungOutcome)],
    analysis: &Analysis,
) -> Option<RungId> {
    let &(last, outcome) = done.last()?;
    if !outcome.ran_clean() {
        return None;
    }
    let left = |r: RungId| attempts(done, r) <= req.retries as usize;
    let seen = done.iter().any(|(_, o)| o.faulted());
    if seen {
        return (rung::get(last).needs_fault() && left(last)).then_some(last);
    }
    let sweep_pending = sweep().any(|r| plan.contains(&r) && attempts(done, r) == 0);
    let clean = analysis.verdict.is_none() && analysis.findings.is_empty();
    (clean && !sweep_pending && plan.contains(&RungId::Baseline) && left(RungId::Baseline))
        .then_some(RungId::Baseline)
}

/// The sweep when nothing faulted, in ladder order, each while nothing was found: the rungs
/// [`Rung::in_sweep`] (memcheck with padding, initcheck, racecheck, synccheck).
pub fn sweep() -> impl Iterator<Item = RungId> + Clone {
    rung::ALL.into_iter().filter(|r| r.in_sweep()).map(|r| r.id())
}

/// The plan: the rungs in the order they will run.
pub fn plan(req: &Request) -> Vec<RungId> {
    let mut rungs: Vec<RungId> = match &req.rungs {
        Some(r) => {
            let mut r = r.clone();
            r.sort();
            r.dedup();
            r
        }
        // The hang rung runs when a hang is expected or seen (a timeout), not in a default
        // climb or `--full`: a run that ends by itself gains nothing from it. The repro rung
        // only when asked (`--repro`): it is one more run of the target, for the maintainers.
        None => RungId::ALL.into_iter().filter(|r| *r != RungId::Hang && *r != RungId::Repro).collect(),
    };
    if req.repro && !rungs.contains(&RungId::Repro) {
        rungs.push(RungId::Repro);
    }
    if req.hang_after {
        if req.rungs.is_none() {
            rungs.retain(|r| *r != RungId::Baseline);
            if !req.disabled.contains(&RungId::Hang) {
                rungs.push(RungId::Hang);
            }
        }
        // First: it arms the dump before the target starts, and the rest would hang too.
        if let Some(i) = rungs.iter().position(|r| *r == RungId::Hang) {
            let hang = rungs.remove(i);
            rungs.insert(0, hang);
        }
    }
    if !req.can_rebuild() {
        rungs.retain(|r| *r != RungId::Rebuild);
    }
    if req.rungs.is_none() {
        rungs.retain(|r| !req.disabled.contains(r));
    }
    build_first(req, &mut rungs);
    rungs
}

/// A target not built yet is built before the first rung that runs it: the armed baseline
/// and the hang rung build it themselves (with line info); before any other, the rebuild is
/// put in the plan (`--rungs coredump,memcheck`, a recipe that disables the baseline), as a
/// rebuild already there before it does.
fn build_first(req: &Request, rungs: &mut Vec<RungId>) {
    if !req.not_built || !req.has_build {
        return;
    }
    let Some(i) = rungs.iter().position(|&r| rung::get(r).runs_target()) else { return };
    let builds_itself = matches!(rungs[i], RungId::Baseline | RungId::Hang);
    if !builds_itself && !rungs[..i].contains(&RungId::Rebuild) {
        rungs.insert(i, RungId::Rebuild);
    }
}

/// Why `plan` (made by [`plan`] from `req`) runs nothing, for the user, naming what to do;
/// `None` when some rung will run. Only the rebuild is ever dropped from `--rungs` (a native
/// recipe without a `build:` step), and only the recipe's `enabled: false` empties the default
/// plan.
pub fn empty_plan(req: &Request, plan: &[RungId]) -> Option<String> {
    if !plan.is_empty() {
        return None;
    }
    Some(match &req.rungs {
        Some(asked) if asked.contains(&RungId::Rebuild) && !req.can_rebuild() => format!(
            "`--rungs {}`: the {} rung rebuilds the target with the recipe's `build:` step, and this recipe \
             has none (nor is it a Python program, whose run-time builds it could redo), so nothing would \
             run: add a `build:` step to the recipe (docs/recipes.md), or ask for rungs that run the target \
             as it is (`--rungs {},{}`)",
            asked.iter().map(|r| r.name()).collect::<Vec<_>>().join(","),
            RungId::Rebuild,
            RungId::Baseline,
            RungId::Coredump
        ),
        Some(_) => "`--rungs` names no rung: give at least one (`--rungs baseline`)".to_string(),
        None => format!(
            "the recipe's `rungs:` section disables every rung (`enabled: false`), so nothing would run: \
             enable one, or name the rungs to run with `--rungs` (one of {})",
            RungId::names()
        ),
    })
}

/// What happened in a rung, as far as the policy cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RungOutcome {
    /// Not run (skipped at the prompt): it says nothing about the target.
    Skipped,
    /// It could not run to its end (its error is in the bundle): it says nothing either.
    Failed,
    /// The target failed, but not with a CUDA error, a device assert or a fatal signal (a
    /// Python exception without CUDA, a missing file): no rung can locate that.
    FailedWithoutCuda,
    /// The target ran into its time limit and was killed: a sign of a hang.
    TimedOut,
    /// The hang rung found the target still running at `hang_after` and took its evidence.
    Hung,
    Ran {
        /// The target exited non-zero, died of a signal, or a tool saw a device error.
        faulted: bool,
        /// The rung ran its tool and produced the artifact it exists for.
        yielded: bool,
    },
}

impl RungOutcome {
    pub fn faulted(self) -> bool {
        matches!(self, RungOutcome::Ran { faulted: true, .. })
    }

    pub fn yielded(self) -> bool {
        matches!(self, RungOutcome::Ran { yielded: true, .. })
    }

    /// It ran and the target did not fault.
    pub fn ran_clean(self) -> bool {
        matches!(self, RungOutcome::Ran { faulted: false, .. })
    }
}

/// What the climb has learnt about the target, besides the analysis.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Facts {
    /// The binaries carry line info (built with it, or `cuobjdump` said so); `None`: unknown.
    pub lineinfo: Option<bool>,
    /// The first armed run counted on the target's disassembly for where its kernels are
    /// launched, and so ran at full speed: `Some(true)` when the disassembly named them, or when
    /// the binary's symbols held kernel stubs and it was read beside the run (whatever it then
    /// named); `Some(false)` when it named none; `None`: not read.
    pub static_sites: Option<bool>,
    /// How long the first armed run of the target took, whole seconds (rounded up); `None`:
    /// it has not run.
    pub armed_secs: Option<u32>,
}

/// An armed run at most this long makes memcheck cheap enough to run after a complete
/// verdict, to look for an earlier bug that corrupted memory without faulting (measured on the
/// H200: 0.66 s armed, 0.87 s under memcheck for a program of two such bugs,
/// tests/fixtures/h200/kinds-pc/two_bugs_softmax_scatter). Past it the verdict says how.
pub const CONFIRM_UNDER_S: u32 = 30;

/// An armed run at most this long, and the sweep's runs go side by side on the GPU
/// ([`beside`]): each sanitizer's start costs 0.5-1.2 s whatever the program does (measured on
/// the H200, docs/benchmarks.md "Scoped and bounded racecheck"), so on a short program four
/// in a row cost three times what memcheck and initcheck did. A longer program is also
/// likelier to need the GPU's memory to itself, and its starts matter less.
pub const SIDE_BY_SIDE_UNDER_S: u32 = 30;

/// The rungs that run beside `first`, which [`next`] chose: when nothing faulted and the climb
/// sweeps (`first` is the sweep's), every other sweep rung not yet run, if the armed run was
/// short ([`SIDE_BY_SIDE_UNDER_S`]); otherwise none. Each sweep rung checks on its own, so
/// running them together changes what each finds only through the GPU's memory and time,
/// which a run that failed beside the others rules out by running again alone
/// ([`again_alone`]). `--full`, `--rungs` and `watch` keep their one-at-a-time order.
pub fn beside(
    req: &Request,
    plan: &[RungId],
    done: &[(RungId, RungOutcome)],
    analysis: &Analysis,
    facts: Facts,
    first: RungId,
) -> Vec<RungId> {
    let short = facts.armed_secs.is_some_and(|s| s <= SIDE_BY_SIDE_UNDER_S);
    let nothing_found = analysis.verdict.is_none()
        && hazard_found(analysis).is_none()
        && !done.iter().any(|(_, o)| o.faulted() || *o == RungOutcome::Hung);
    if req.watch || req.runs_every_planned_rung() || !short || !nothing_found || !rung::get(first).in_sweep()
    {
        return Vec::new();
    }
    sweep().filter(|&r| r != first && plan.contains(&r) && attempts(done, r) == 0).collect()
}

/// Whether a rung that ran beside others must run again alone before its outcome counts: it
/// could not run to its end, or its target failed (or faulted) while its tool found nothing
/// (`device_error` false): the GPU's memory or time, shared with the others, may be why.
pub fn again_alone(outcome: RungOutcome, device_error: bool) -> bool {
    match outcome {
        RungOutcome::Failed | RungOutcome::FailedWithoutCuda | RungOutcome::TimedOut => true,
        RungOutcome::Ran { faulted, .. } => faulted && !device_error,
        RungOutcome::Skipped | RungOutcome::Hung => false,
    }
}

/// The next step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    Run(RungId),
    /// Stop: the reason, for the user.
    Stop(String),
}

/// The rungs that can locate a fault, cheapest first for the kind of target
/// ([`Rung::cost_rank`]; equal ranks in ladder order): one run each, the sanitizers last
/// (10-100x slower). For a native target the coredump rung also gives the launch line
/// (launch-blocking CPU core); for Python, launch-blocking gives it.
fn by_cost(python: bool) -> Vec<RungId> {
    let mut ranked: Vec<(u32, RungId)> =
        rung::ALL.iter().filter_map(|r| r.cost_rank(python).map(|c| (c, r.id()))).collect();
    ranked.sort_by_key(|(c, _)| *c);
    ranked.into_iter().map(|(_, r)| r).collect()
}

fn names(parts: &[Part]) -> String {
    parts.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(", ")
}

/// Decides the next rung from the plan, the rungs done so far, the merged analysis and what
/// is known about the target: the cheapest rung that can establish a part of the verdict that
/// is still unknown, until the verdict is complete or no rung can add to it. `--full` and
/// `--rungs` run every planned rung in order.
pub fn next(
    req: &Request,
    plan: &[RungId],
    done: &[(RungId, RungOutcome)],
    analysis: &Analysis,
    facts: Facts,
) -> Next {
    // The repro rung comes after the climb, whatever it ran to: the climb decides as if it were
    // not there, and where that stops with a verdict of a fault, the reproducer is written
    // (once). Its run is no evidence of the target's, so it changes no later decision.
    let repro_planned = plan.contains(&RungId::Repro);
    let repro_done = done.iter().any(|(r, _)| *r == RungId::Repro);
    let without: Vec<RungId> = plan.iter().copied().filter(|r| *r != RungId::Repro).collect();
    let climbed: Vec<(RungId, RungOutcome)> =
        done.iter().copied().filter(|(r, _)| *r != RungId::Repro).collect();
    let next = next_in_climb(req, &without, &climbed, analysis, facts);
    match next {
        Next::Stop(why) if repro_planned && !repro_done && !req.watch && reproducible(analysis) => {
            let _ = why;
            Next::Run(RungId::Repro)
        }
        other => other,
    }
}

/// Whether the verdict is of a fault a reproducer can show: a kernel that faulted, not a hang
/// or what only a sanitizer sees.
fn reproducible(analysis: &Analysis) -> bool {
    analysis.verdict.as_ref().is_some_and(|v| {
        !matches!(
            v.error,
            ErrorClass::Hang
                | ErrorClass::Race
                | ErrorClass::UninitializedRead
                | ErrorClass::BarrierError
                | ErrorClass::InvalidAccess
                | ErrorClass::MisalignedAccess
        )
    })
}

fn next_in_climb(
    req: &Request,
    plan: &[RungId],
    done: &[(RungId, RungOutcome)],
    analysis: &Analysis,
    facts: Facts,
) -> Next {
    let pending: Vec<RungId> = plan.iter().copied().filter(|r| !done.iter().any(|(d, _)| d == r)).collect();
    if req.watch && !done.is_empty() {
        return Next::Stop("the job was watched for its one run (`watch` never reruns it)".to_string());
    }
    if req.rungs.is_none() {
        if let Some(stop) = after_a_hang(req, done) {
            return stop;
        }
    }
    if let Some(r) = retry(req, plan, done, analysis) {
        return Next::Run(r);
    }
    let Some(&first) = pending.first() else {
        return Next::Stop(match &analysis.verdict {
            Some(v) if !v.unknown.is_empty() => {
                format!("every planned rung has run; the {} stays unknown", names(&v.unknown))
            }
            Some(_) => "every planned rung has run".to_string(),
            None => "every planned rung has run and none located a fault".to_string(),
        });
    };
    if req.runs_every_planned_rung() || first == RungId::Baseline || done.is_empty() {
        return Next::Run(first);
    }
    // An ordinary failure is not a GPU fault: climbing would rerun it under every tool.
    if done.iter().any(|(r, s)| stands_for_baseline(*r, *s) && *s == RungOutcome::FailedWithoutCuda) {
        return Next::Stop(
            "the target failed without a CUDA error (the baseline's note quotes it): that is not a GPU \
             fault, so no rung can locate it. Fix it first, or pass `--rungs` (e.g. \
             `--rungs baseline,memcheck`) to climb anyway"
                .to_string(),
        );
    }
    let skipping = |after: &[RungId]| {
        let rest: Vec<&str> = pending.iter().filter(|r| !after.contains(r)).map(|r| r.name()).collect();
        if rest.is_empty() {
            String::new()
        } else {
            format!("; skipping {} (`--full` runs them too)", rest.join(", "))
        }
    };
    let missing: Vec<Part> = match &analysis.verdict {
        Some(v) if v.unknown.is_empty() => {
            let unchecked = match memcheck_pass(req, &pending, done, analysis, facts) {
                Ok(r) => return Next::Run(r),
                Err(said) => said,
            };
            return Next::Stop(format!(
                "the verdict is complete: {}{}{unchecked}",
                complete_line(analysis).unwrap_or_default(),
                skipping(&[]),
            ));
        }
        // A part that cannot exist (a library kernel's source line) is never looked for.
        Some(v) => v.unknown.iter().copied().filter(|p| !v.not_applicable.contains(p)).collect(),
        None => vec![Part::SourceLine, Part::Class, Part::LaunchSite],
    };
    if let Some(why) = hazard_found(analysis) {
        return Next::Stop(format!("{why}{}", skipping(&[])));
    }
    // A skipped or failed baseline says nothing: the fault rungs still run. A clean one means
    // the symptom did not reproduce; not every bad access faults, so the sweep still runs.
    let baseline_clean = done.iter().any(|(r, s)| stands_for_baseline(*r, *s) && s.ran_clean());
    let faulted = done.iter().any(|(_, s)| s.faulted());
    let fault_expected = faulted || !baseline_clean;
    let sweeping = !fault_expected && analysis.verdict.is_none();
    if sweeping {
        if let Some(r) = sweep().find(|r| pending.contains(r)) {
            return Next::Run(r);
        }
        // In the sweep's order, whichever order they ended in (side by side, or one run again).
        let swept: Vec<&str> =
            sweep().filter(|r| done.iter().any(|(d, s)| d == r && s.yielded())).map(RungId::name).collect();
        let runs = attempts(done, RungId::Baseline);
        let armed = match runs {
            0 | 1 => "the target ran without a CUDA error".to_string(),
            n => format!("the target ran {n} times armed without a CUDA error"),
        };
        return Next::Stop(if swept.is_empty() {
            format!(
                "no fault was reproduced: {armed}, and the sweep did not run (`--rungs {}` runs it)",
                sweep().map(RungId::name).collect::<Vec<_>>().join(",")
            )
        } else {
            format!("no fault was reproduced: {armed}, and the sweep ({}) found nothing", swept.join(", "))
        });
    }
    // Source lines need line info: rebuild first when the binaries lack it (or it is unknown),
    // or when a Python target's kernel has no line (its run-time builds).
    if fault_expected
        && missing.contains(&Part::SourceLine)
        && pending.contains(&RungId::Rebuild)
        && rebuild_for_line(req, analysis, facts)
    {
        return Next::Run(RungId::Rebuild);
    }
    let chosen = by_cost(req.python).into_iter().find(|&r| {
        let rung = rung::get(r);
        pending.contains(&r)
            && (fault_expected || !rung.needs_fault())
            // The armed baseline already ran it, and faulted.
            && !covered(req, facts, done, r)
            // Initcheck is the sweep's: it finds reads of unwritten memory, not faults.
            && (rung.locates_faults() || !faulted)
            && rung.answers(req.python).iter().any(|p| missing.contains(p))
    });
    match chosen {
        Some(r) => Next::Run(r),
        None => Next::Stop(match &analysis.verdict {
            Some(v) => format!(
                "no remaining rung can establish the {} of `{}`: it stays unknown{}{}",
                names(&missing),
                v.kernel,
                if missing.contains(&Part::LaunchSite) && !req.python {
                    " (a native launch line needs host debug info, `-g`, and the CPU core of a \
                     launch-blocking run: the coredump rung's note says why there was none)"
                } else {
                    ""
                },
                skipping(&[])
            ),
            None => format!("no remaining rung can locate the fault{}", skipping(&[])),
        }),
    }
}

/// Whether a rebuild can give a fault's missing source line (`missing` holds it, so the kernel
/// is not a library's: a precompiled kernel's line is not applicable, never missing): the
/// recipe's build, while its binaries are not known to carry line info; a Python target's
/// run-time builds ([`Request::rebuilds_at_run_time`]) once a kernel was located, since only
/// its kernel tells that the line is missing for want of line info rather than of a fault.
fn rebuild_for_line(req: &Request, analysis: &Analysis, facts: Facts) -> bool {
    if req.rebuilds_at_run_time() {
        analysis.verdict.is_some()
    } else {
        facts.lineinfo != Some(true)
    }
}

/// A complete verdict in a line: "`kernel` at file:line, launched from function at file:line";
/// `None` while a part is unknown.
pub fn complete_line(analysis: &Analysis) -> Option<String> {
    let v = analysis.verdict.as_ref().filter(|v| v.unknown.is_empty())?;
    let at = match (&v.file, v.line) {
        (Some(f), Some(l)) => format!("{f}:{l}"),
        _ if v.not_applicable.contains(&Part::SourceLine) => "no source line (a library kernel)".into(),
        _ => "?".into(),
    };
    let launched = v.launch_site.as_ref().map(|h| site(&h.frame)).unwrap_or_default();
    Some(format!("`{}` at {at}, launched from {launched}", v.kernel))
}

/// Whether the verdict has every part it can have (a part that cannot exist, a library
/// kernel's source line, is `not_applicable`, never `unknown`).
pub fn complete(analysis: &Analysis) -> bool {
    analysis.verdict.as_ref().is_some_and(|v| v.unknown.is_empty())
}

/// The memcheck pass after a complete verdict from a faulting run, which looks for an earlier
/// bug that did not fault (an overrun in one kernel corrupts the indices the next one faults
/// on): `Ok` to run it, for a native target whose armed run was short ([`CONFIRM_UNDER_S`]);
/// else what the stop says of it: how to get the pass, or nothing when no pass applies (no
/// fault, a sanitizer looked already, memcheck not planned or run, a race or a hang). The default
/// climb only: `--rungs` and `--full` run what they run.
fn memcheck_pass(
    req: &Request,
    pending: &[RungId],
    done: &[(RungId, RungOutcome)],
    analysis: &Analysis,
    facts: Facts,
) -> Result<RungId, String> {
    let fault = analysis
        .verdict
        .as_ref()
        .is_some_and(|v| !matches!(v.error, ErrorClass::Race | ErrorClass::BarrierError | ErrorClass::Hang));
    let faulted = done.iter().any(|(_, o)| o.faulted());
    let swept = done.iter().any(|(r, _)| rung::get(*r).in_sweep());
    if !fault || !faulted || swept || !pending.contains(&RungId::Memcheck) {
        return Err(String::new());
    }
    let why = match facts.armed_secs {
        _ if req.python => "a Python target (memcheck on PyTorch takes minutes)".to_string(),
        Some(s) if s <= CONFIRM_UNDER_S => return Ok(RungId::Memcheck),
        Some(s) => format!("its run took {s} s (memcheck is 10-100x slower)"),
        None => "its run time is unknown".to_string(),
    };
    Err(format!(
        ". memcheck did not look for an earlier bug that corrupted memory without faulting, {why}: \
         `--rungs {},{}` does",
        RungId::Baseline,
        RungId::Memcheck
    ))
}

/// The rung that may start beside the reading of armed run `id` (the memcheck pass, whose
/// target then runs while cuda-gdb reads the dumps, instead of after): the first armed run of a
/// native target in the default climb, with memcheck planned and nothing swept yet. Whether it
/// starts is [`pass_beside_reading`]'s, once the armed run's target ended; the pass is the one
/// [`next`] would ask for after a fault's verdict (`memcheck_pass`), started early.
pub fn pass_may_follow(
    req: &Request,
    plan: &[RungId],
    done: &[(RungId, RungOutcome)],
    id: RungId,
) -> Option<RungId> {
    let first_armed = id == RungId::Baseline && attempts(done, RungId::Baseline) == 0;
    let swept = done.iter().any(|(r, _)| rung::get(*r).in_sweep());
    let wanted = first_armed
        && !req.runs_every_planned_rung()
        && !req.python
        && !req.watch
        && !swept
        && plan.contains(&RungId::Memcheck)
        && attempts(done, RungId::Memcheck) == 0;
    wanted.then_some(RungId::Memcheck)
}

/// Whether the pass [`pass_may_follow`] named starts, now that the armed run's target ended as
/// `ended`: it left a GPU dump (a fault the reading names; without one the cheaper rungs that
/// locate a fault come first) within [`CONFIRM_UNDER_S`] (memcheck is 10-100x slower), and its
/// binaries are not known to lack line info (the rebuild then comes first, and the pass after it).
pub fn pass_beside_reading(ended: ArmedEnd) -> bool {
    ended.dumps > 0 && ended.secs <= CONFIRM_UNDER_S as f64 && ended.lineinfo != Some(false)
}

/// A race or a barrier error with its kernel, line(s) and class is as complete as such a
/// verdict gets: no rung that reruns the target adds to it (nothing faulted, so no dump; its
/// launch site comes from the sanitizer's own host backtrace where it printed one).
fn hazard_found(analysis: &Analysis) -> Option<String> {
    let v = analysis.verdict.as_ref()?;
    if !matches!(v.error, ErrorClass::Race | ErrorClass::BarrierError)
        || v.unknown.contains(&Part::SourceLine)
    {
        return None;
    }
    let at = |f: &Option<String>, l: Option<u32>| match (f, l) {
        (Some(f), Some(l)) => format!("{f}:{l}"),
        _ => "?".into(),
    };
    let other = v.hazard.as_ref().and_then(|h| h.other_side.as_ref());
    let lines = match other {
        Some(o) => format!("{} and {}:{}", at(&v.file, v.line), o.at.file, o.at.line),
        None => at(&v.file, v.line),
    };
    Some(format!("the verdict is complete: {} in `{}` at {lines}", v.error.as_str(), v.kernel))
}

/// Whether rung `r`'s run, which came to `o`, says what a baseline says
/// ([`Rung::stands_for_baseline`]): the baseline, and the hang rung, which takes its place when
/// a hang is expected, when the target ended by itself.
fn stands_for_baseline(r: RungId, o: RungOutcome) -> bool {
    rung::get(r).stands_for_baseline(o == RungOutcome::Hung)
}

/// What the driver saw of one run of a rung, besides what the rung's run returned: for
/// [`outcome`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// The exit of the rung's target, when it ran one.
    pub target_exit: Option<Exit>,
    /// The rung's files show a device error: a located fault, or a symptom that is one.
    pub device_error: bool,
    /// The rung's files show a CUDA error of any kind.
    pub cuda_error: bool,
}

impl Seen {
    /// What the evidence read from the rung's files shows, with its target's exit.
    pub fn of(target_exit: Option<Exit>, evidence: &[Evidence]) -> Seen {
        let device_error = evidence.iter().any(|e| {
            !e.faults.is_empty()
                || e.symptoms.iter().any(|s| s.error.as_ref().is_some_and(|x| x.is_device_fault()))
        });
        let cuda_error = evidence.iter().any(|e| e.symptoms.iter().any(|s| s.error.is_some()));
        Seen { target_exit, device_error, cuda_error }
    }
}

/// What one run of `rung` comes to, for the policy, from what its run returned (`ran`; `None`:
/// it failed, its error is in the bundle) and what the driver `seen`. A run that stands for the
/// baseline and failed without any CUDA error is [`RungOutcome::FailedWithoutCuda`] (the driver
/// quotes the target's last line in a note).
pub fn outcome(rung: &dyn Rung, ran: Option<Ran>, seen: Seen) -> RungOutcome {
    let Some(r) = ran else { return RungOutcome::Failed };
    // A command that could not start (126: not executable, 127: not found, the shell's
    // codes) is no fault in any rung: under `--rungs` without the baseline, a target that was
    // never built must not send the climb hunting for a fault (seen on the H200 under Slurm).
    let not_started = matches!(seen.target_exit, Some(Exit::Code(126 | 127)));
    let ordinary = !r.hung
        && (rung.stands_for_baseline(false) || not_started)
        && matches!(seen.target_exit, Some(Exit::Code(c)) if c != 0)
        && !seen.device_error
        && !seen.cuda_error;
    if ordinary {
        RungOutcome::FailedWithoutCuda
    } else if r.hung {
        RungOutcome::Hung
    } else if seen.target_exit == Some(Exit::TimedOut) {
        RungOutcome::TimedOut
    } else {
        RungOutcome::Ran { faulted: r.faulted || seen.device_error, yielded: r.yielded }
    }
}

/// Whether the error of rung `id`'s run ends the climb (`done` holds that run, last): the
/// baseline's, or the hang rung's as the first run, in the baseline's place. Every later rung
/// runs the same target: if it cannot start, none can.
pub fn error_ends_climb(id: RungId, done: &[(RungId, RungOutcome)]) -> bool {
    id == RungId::Baseline || (id == RungId::Hang && done.len() == 1)
}

/// How many runs of the target this climb made and in how many a fault showed (a device
/// error, a dump, a hang); rungs that did not run the target (skipped, failed, the rebuild:
/// [`Rung::runs_target`]) do not count, but for a rebuild of run-time builds, which is a run of
/// the target ([`Request::rebuilds_at_run_time`]).
pub fn reproduced(req: &Request, done: &[(RungId, RungOutcome)]) -> Reproduced {
    let runs_target =
        |r: RungId| rung::get(r).runs_target() || (r == RungId::Rebuild && req.rebuilds_at_run_time());
    let ran = done
        .iter()
        .filter(|(r, o)| runs_target(*r) && !matches!(o, RungOutcome::Skipped | RungOutcome::Failed));
    let runs = ran.clone().count();
    let faulted = ran.filter(|(_, o)| o.faulted() || *o == RungOutcome::Hung).count();
    Reproduced { faulted, runs }
}

/// Why a rung runs again, for its record: the attempt, and for the armed baseline whether
/// this one is launch-blocking.
pub fn retry_note(req: &Request, facts: Facts, id: RungId, attempt: usize) -> String {
    let blocking = if id == RungId::Baseline {
        if armed_blocking(req, facts, attempt) {
            ", launch-blocking"
        } else {
            ", without launch-blocking (a fault it hides may show so)"
        }
    } else {
        ""
    };
    format!(
        "run {} of {id} (`--retries {}`): the fault did not come back in the earlier run{}",
        attempt + 1,
        req.retries,
        blocking
    )
}

/// What a hang, or a sign of one, decides (the default climb and `--full`; `--rungs` runs
/// what it names): after the hang rung found the target hung, stop (every other rung reruns
/// the target, which would hang again until its time limit); after a rung timed out, the hang
/// rung, unless it ran already or the recipe disabled it.
fn after_a_hang(req: &Request, done: &[(RungId, RungOutcome)]) -> Option<Next> {
    if let Some((hung, _)) = done.iter().find(|(_, s)| *s == RungOutcome::Hung) {
        return Some(Next::Stop(format!(
            "the target hung: the {hung} rung took what it could while it ran (its notes say which host stacks \
             and GPU dumps; each `cudagdb-*.log` names the kernels and lines that spin); the other rungs \
             rerun the target and would hang too, so the climb stops here"
        )));
    }
    let (timed_out, _) = done.iter().find(|(_, s)| *s == RungOutcome::TimedOut)?;
    if done.iter().any(|(r, _)| *r == RungId::Hang) {
        return None;
    }
    if req.disabled.contains(&RungId::Hang) {
        return Some(Next::Stop(format!(
            "the target ran into its time limit in the {timed_out} rung, a sign of a hang; every other rung \
             reruns it and would time out too, and the recipe disables the {} rung that would look at it: \
             enable it (docs/hangs.md), or raise `run.timeout` if the run is only slow",
            RungId::Hang
        )));
    }
    Some(Next::Run(RungId::Hang))
}

/// `main at x.cu:34` for a stop reason.
fn site(f: &crate::findings::Frame) -> String {
    let func = f.function.clone().unwrap_or_else(|| "?".into());
    match (&f.file, f.line) {
        (Some(file), Some(l)) => format!("{func} at {file}:{l}"),
        _ => func,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::verdict::decide;

    fn empty() -> Analysis {
        decide(&[])
    }

    fn ran(faulted: bool) -> RungOutcome {
        RungOutcome::Ran { faulted, yielded: true }
    }

    /// A plan that runs nothing is refused with the reason: `--rungs rebuild` without a
    /// build, or a recipe that disables every rung.
    #[test]
    fn an_empty_plan_says_why() {
        let only_rebuild = Request { rungs: Some(vec![RungId::Rebuild]), ..Request::default() };
        let p = plan(&only_rebuild);
        assert!(p.is_empty());
        let why = empty_plan(&only_rebuild, &p).unwrap();
        assert!(why.starts_with("`--rungs rebuild`: the rebuild rung"), "{why}");
        assert!(why.contains("add a `build:` step"), "{why}");
        let with_build = Request { has_build: true, ..only_rebuild.clone() };
        assert_eq!(empty_plan(&with_build, &plan(&with_build)), None);
        let all_off = Request { disabled: RungId::ALL.to_vec(), ..Request::default() };
        let why = empty_plan(&all_off, &plan(&all_off)).unwrap();
        assert!(why.contains("disables every rung"), "{why}");
        assert_eq!(empty_plan(&Request::default(), &plan(&Request::default())), None);
    }

    /// The analysis of recordings of tests/gpu/programs/shared_atomic.cu on an H200: the
    /// GPU dump read by cuda-gdb and, with `blocking`, the launch-blocking CPU core's stacks.
    fn shared_atomic(cpu_core: bool) -> Analysis {
        use crate::findings::scan::scan_str;
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/h200/shared_atomic/");
        let read = |f: &str| std::fs::read_to_string(format!("{dir}{f}")).unwrap();
        let mut ev = vec![scan_str(&read("cudagdb-merged-1.log"), "coredump/cudagdb-1")];
        if cpu_core {
            let mut cpu = scan_str(&read("cpucore-gdb.log"), "coredump/cpucore-gdb");
            cpu.origin = "coredump/cpucore-gdb".into();
            cpu.launch_blocking = true;
            ev.push(cpu);
        }
        decide(&ev)
    }

    /// A fault in cuBLAS's precompiled kernel (the H200 recording of
    /// tests/gpu/programs/cublas_fault.cu, memcheck only): its source line is not applicable,
    /// so the climb neither rebuilds with `-lineinfo` nor runs a rung to find it.
    #[test]
    fn a_library_kernel_is_not_rebuilt_for_a_line_it_cannot_have() {
        use crate::findings::scan::scan_str;
        let log = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/h200/kinds/cublas_fault/memcheck.log"
        ));
        let a = decide(&[scan_str(log, "memcheck")]);
        let v = a.verdict.as_ref().unwrap();
        assert_eq!(v.not_applicable, vec![Part::SourceLine]);
        assert!(!v.unknown.contains(&Part::SourceLine), "{:?}", v.unknown);
        let req = Request { has_build: true, ..Request::default() };
        let p = plan(&req);
        let no_lines = Facts { lineinfo: Some(false), ..Facts::default() };
        let done = vec![(RungId::Baseline, ran(true)), (RungId::Memcheck, ran(true))];
        match next(&req, &p, &done, &a, no_lines) {
            Next::Stop(why) => assert!(why.contains("no source line (a library kernel)"), "{why}"),
            other => panic!("{other:?}"),
        }
        // With the launch site unknown too, a rung for it runs, never the rebuild.
        let mut partial = a.clone();
        partial.verdict.as_mut().unwrap().unknown = vec![Part::SourceLine, Part::LaunchSite];
        let done = vec![(RungId::Baseline, ran(true))];
        let n = next(&req, &p, &done, &partial, no_lines);
        assert!(!matches!(n, Next::Run(RungId::Rebuild)), "{n:?}");
        assert!(!matches!(n, Next::Run(RungId::Attach)), "{n:?}");
        // Nor are a Python target's run-time builds redone for it.
        let py = Request { python: true, ..Request::default() };
        let n = next(&py, &plan(&py), &done, &partial, Facts::default());
        assert!(!matches!(n, Next::Run(RungId::Rebuild)), "{n:?}");
    }

    /// The CuPy kernel compiled while its program ran, recorded on an H100
    /// (tests/fixtures/h100/jit_rebuild): the armed run's reading without CuPy's debug switch
    /// (no line) and, with `debug`, the rebuild's with it (`<sha1>.cubin.cu:13`); with `stack`,
    /// the faulthandler stack of the launch-blocking armed run (the launch site).
    fn run_time_built(debug: bool, stack: bool) -> Analysis {
        use crate::findings::scan::scan_str;
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/h100/jit_rebuild/");
        let read = |f: &str| std::fs::read_to_string(format!("{dir}{f}")).unwrap();
        let mut ev = vec![scan_str(&read("cupy/cudagdb-core-1.log"), "baseline/cudagdb-1")];
        if stack {
            let mut armed = scan_str(&read("cupy/coredump.log"), "baseline");
            armed.launch_blocking = true;
            ev.push(armed);
        }
        if debug {
            ev.push(scan_str(&read("cupy_debug/cudagdb-core-1.log"), "rebuild/cudagdb-1"));
        }
        decide(&ev)
    }

    /// A Python target without a build: its rebuild redoes the run-time builds (one armed run,
    /// fresh JIT folders with line info). It is planned, and run when a located kernel, not a
    /// library's, has no line; not without a located kernel, nor when nothing faulted. After it,
    /// the coredump rung stays covered by the armed run (every other run reads the user's
    /// caches, as the armed run did), unlike after a rebuild of the recipe's build.
    #[test]
    fn a_run_time_built_kernel_without_a_line_gets_its_builds_redone() {
        let py = Request { python: true, ..Request::default() };
        assert!(py.rebuilds_at_run_time());
        let p = plan(&py);
        assert_eq!(p[..3], [RungId::Baseline, RungId::Rebuild, RungId::LaunchBlocking]);
        let f = Facts::default();
        let armed = vec![(RungId::Baseline, ran(true))];
        let a = run_time_built(false, true);
        let v = a.verdict.as_ref().unwrap();
        assert_eq!(
            (v.kernel.as_str(), v.unknown.as_slice()),
            ("scatter_add", &[Part::SourceLine][..]),
            "{v:?}"
        );
        assert!(v.not_applicable.is_empty(), "{v:?}");
        assert_eq!(next(&py, &p, &armed, &a, f), Next::Run(RungId::Rebuild));
        // Its run's dump has the line: the verdict is complete.
        let rebuilt = vec![(RungId::Baseline, ran(true)), (RungId::Rebuild, ran(true))];
        let done = run_time_built(true, true);
        assert_eq!(done.verdict.as_ref().unwrap().line, Some(13));
        match next(&py, &p, &rebuilt, &done, Facts { lineinfo: Some(true), ..f }) {
            Next::Stop(why) => {
                assert!(why.starts_with("the verdict is complete: `scatter_add` at "), "{why}")
            }
            other => panic!("{other:?}"),
        }
        // Still no line: not the coredump rung (the user's caches again), attach next; a rebuild
        // of the recipe's build instead makes the coredump rung's dump worth having.
        assert_eq!(next(&py, &p, &rebuilt, &a, f), Next::Run(RungId::Attach));
        let built = Request { has_build: true, ..py.clone() };
        assert!(!built.rebuilds_at_run_time());
        assert_eq!(next(&built, &plan(&built), &rebuilt, &a, f), Next::Run(RungId::Coredump));
        // Without the armed run's stack the launch site is missing too: the rebuild still comes
        // first (its run is armed and launch-blocking too), not launch-blocking's run.
        assert_eq!(next(&py, &p, &armed, &run_time_built(false, false), f), Next::Run(RungId::Rebuild));
        // No located kernel (nothing says the line is missing for want of line info), or a
        // clean armed run (the sweep): no rebuild.
        assert_ne!(next(&py, &p, &armed, &empty(), f), Next::Run(RungId::Rebuild));
        assert_eq!(
            next(&py, &p, &[(RungId::Baseline, ran(false))], &empty(), f),
            Next::Run(RungId::Memcheck)
        );
        // `--rungs rebuild` runs it alone for a Python recipe; a native one without a build has
        // nothing to rebuild.
        let only = Request { rungs: Some(vec![RungId::Rebuild]), ..py.clone() };
        assert_eq!(plan(&only), [RungId::Rebuild]);
        assert_eq!(empty_plan(&only, &plan(&only)), None);
        let native = Request { python: false, ..only };
        assert!(plan(&native).is_empty());
        assert!(empty_plan(&native, &plan(&native)).unwrap().contains("nor is it a Python program"));
    }

    #[test]
    fn plan_is_cheapest_first_and_drops_rebuild_without_build() {
        let req = Request { has_build: false, ..Request::default() };
        assert_eq!(
            plan(&req),
            vec![
                RungId::Baseline,
                RungId::LaunchBlocking,
                RungId::Coredump,
                RungId::Attach,
                RungId::Memcheck,
                RungId::Initcheck,
                RungId::Racecheck,
                RungId::Synccheck
            ]
        );
        let req = Request {
            rungs: Some(vec![RungId::Memcheck, RungId::Baseline]),
            has_build: true,
            ..Request::default()
        };
        assert_eq!(plan(&req), vec![RungId::Baseline, RungId::Memcheck]);
    }

    /// Issue 41: a target not built yet is built before the first rung that runs it, whatever
    /// `--rungs` says: the baseline and the hang rung build it themselves; before any other
    /// rung the rebuild comes first. Without a build there is nothing to put there.
    #[test]
    fn a_target_not_built_yet_is_built_before_the_first_rung_that_runs_it() {
        use RungId::*;
        let asked = |rungs: &[RungId]| Request {
            rungs: Some(rungs.to_vec()),
            has_build: true,
            not_built: true,
            ..Request::default()
        };
        assert_eq!(plan(&asked(&[Coredump, Memcheck])), vec![Rebuild, Coredump, Memcheck]);
        assert_eq!(plan(&asked(&[Memcheck])), vec![Rebuild, Memcheck]);
        assert_eq!(plan(&asked(&[Baseline, Memcheck])), vec![Baseline, Memcheck]);
        assert_eq!(plan(&asked(&[Rebuild, Coredump])), vec![Rebuild, Coredump]);
        let hang = Request { hang_after: true, ..asked(&[Hang, Memcheck]) };
        assert_eq!(plan(&hang), vec![Hang, Memcheck]);
        // Built already, or nothing to build it with: the plan is as asked.
        assert_eq!(plan(&Request { not_built: false, ..asked(&[Coredump]) }), vec![Coredump]);
        assert_eq!(plan(&Request { has_build: false, ..asked(&[Coredump]) }), vec![Coredump]);
        // The default climb starts with the baseline, which builds; a recipe that disables the
        // baseline (and the rebuild) still gets the build first.
        let default = Request { has_build: true, not_built: true, ..Request::default() };
        assert_eq!(plan(&default)[..2], [Baseline, Rebuild]);
        let disabled = Request { disabled: vec![Baseline, Rebuild], ..default };
        assert_eq!(plan(&disabled)[..2], [Rebuild, LaunchBlocking]);
    }

    #[test]
    fn a_fault_rebuilds_only_without_line_info_then_takes_the_cheapest_answer() {
        let req = Request { has_build: true, ..Request::default() };
        let p = plan(&req);
        assert_eq!(next(&req, &p, &[], &empty(), Facts::default()), Next::Run(RungId::Baseline));
        let done = vec![(RungId::Baseline, ran(true))];
        let unknown = Facts { lineinfo: None, ..Facts::default() };
        let with = Facts { lineinfo: Some(true), ..Facts::default() };
        assert_eq!(next(&req, &p, &done, &empty(), unknown), Next::Run(RungId::Rebuild));
        assert_eq!(
            next(&req, &p, &done, &empty(), Facts { lineinfo: Some(false), ..Facts::default() }),
            Next::Run(RungId::Rebuild)
        );
        // The armed baseline faulted under launch-blocking and said nothing (no dump): the
        // coredump rung would run the same run again, so attach is next.
        assert_eq!(next(&req, &p, &done, &empty(), with), Next::Run(RungId::Attach));
        // After a rebuild the next dump has line info the first did not.
        let rebuilt = vec![(RungId::Baseline, ran(true)), (RungId::Rebuild, ran(false))];
        assert_eq!(next(&req, &p, &rebuilt, &empty(), with), Next::Run(RungId::Coredump));
        // Without launch-blocking in the armed run (collectives), a native target's coredump
        // rung adds it (and the CPU core of the launch).
        let nccl = Request { blocking_unsafe: Some("torchrun".into()), ..req.clone() };
        assert_eq!(next(&nccl, &p, &done, &empty(), with), Next::Run(RungId::Coredump));
        // Python: the dump for the line, then launch-blocking for the launch site.
        let py = Request { python: true, ..nccl.clone() };
        let a = shared_atomic(false);
        assert_eq!(a.verdict.as_ref().unwrap().unknown, vec![Part::LaunchSite]);
        assert_eq!(next(&py, &p, &done, &a, with), Next::Run(RungId::LaunchBlocking));
        // Native, with only the launch site missing after the coredump rung: memcheck.
        let done_nat = vec![(RungId::Baseline, ran(true)), (RungId::Coredump, ran(true))];
        assert_eq!(next(&req, &p, &done_nat, &a, with), Next::Run(RungId::Memcheck));
    }

    #[test]
    fn the_armed_baseline_alternates_launch_blocking_where_it_is_safe() {
        let req = Request::default();
        let f = Facts::default();
        assert!(armed_blocking(&req, f, 0) && !armed_blocking(&req, f, 1) && armed_blocking(&req, f, 2));
        let nccl = Request { blocking_unsafe: Some("torchrun".into()), ..req.clone() };
        assert!(!armed_blocking(&nccl, f, 0) && !armed_blocking(&nccl, f, 1));
        // The binary names its launch sites: the first run is at full speed, the second blocks.
        let sites = Facts { static_sites: Some(true), ..f };
        assert!(!armed_blocking(&req, sites, 0) && armed_blocking(&req, sites, 1));
        assert!(!armed_blocking(&nccl, sites, 1));
        // Python's launch sites are not in a binary: the first run blocks as before.
        let py = Request { python: true, ..req.clone() };
        assert!(armed_blocking(&py, sites, 0));
        // A faulting full-speed first run does not cover the coredump rung (launch-blocking), so
        // a kernel launched from several places still gets its launch site from it.
        let done = vec![(RungId::Baseline, ran(true))];
        let with = Facts { lineinfo: Some(true), static_sites: Some(true), armed_secs: None };
        assert!(!covered(&req, with, &done, RungId::Coredump));
        assert!(covered(&req, Facts { static_sites: None, ..with }, &done, RungId::Coredump));
    }

    #[test]
    fn a_fault_that_does_not_come_back_is_retried_within_the_bound() {
        let req = Request { has_build: true, retries: 2, ..Request::default() };
        let p = plan(&req);
        let f = Facts { lineinfo: Some(true), ..Facts::default() };
        // A fault seen once (no launch site yet): the launch-blocking rung that ran clean runs
        // again, at most `retries` more times.
        let py = Request { python: true, blocking_unsafe: Some("torchrun".into()), ..req.clone() };
        let a = shared_atomic(false);
        let mut done = vec![(RungId::Baseline, ran(true)), (RungId::LaunchBlocking, ran(false))];
        assert_eq!(next(&py, &p, &done, &a, f), Next::Run(RungId::LaunchBlocking));
        done.push((RungId::LaunchBlocking, ran(false)));
        assert_eq!(next(&py, &p, &done, &a, f), Next::Run(RungId::LaunchBlocking));
        done.push((RungId::LaunchBlocking, ran(false)));
        assert_ne!(next(&py, &p, &done, &a, f), Next::Run(RungId::LaunchBlocking));
        // Nothing faulted: the sweep first (a silent bug needs nothing more), then the armed
        // baseline again, then the conclusion, which counts the armed runs.
        let mut done = vec![(RungId::Baseline, ran(false))];
        assert_eq!(next(&req, &p, &done, &empty(), f), Next::Run(RungId::Memcheck));
        done.push((RungId::Memcheck, ran(false)));
        assert_eq!(next(&req, &p, &done, &empty(), f), Next::Run(RungId::Initcheck));
        done.push((RungId::Initcheck, ran(false)));
        assert_eq!(next(&req, &p, &done, &empty(), f), Next::Run(RungId::Racecheck));
        done.push((RungId::Racecheck, ran(false)));
        assert_eq!(next(&req, &p, &done, &empty(), f), Next::Run(RungId::Synccheck));
        done.push((RungId::Synccheck, ran(false)));
        assert_eq!(next(&req, &p, &done, &empty(), f), Next::Run(RungId::Baseline));
        done.push((RungId::Baseline, ran(false)));
        assert_eq!(next(&req, &p, &done, &empty(), f), Next::Run(RungId::Baseline));
        done.push((RungId::Baseline, ran(false)));
        match next(&req, &p, &done, &empty(), f) {
            Next::Stop(why) => assert!(why.contains("ran 3 times armed"), "{why}"),
            other => panic!("{other:?}"),
        }
        // The second armed run (without launch-blocking) faulted where the first did not.
        let hid = vec![
            (RungId::Baseline, ran(false)),
            (RungId::Memcheck, ran(false)),
            (RungId::Baseline, ran(true)),
        ];
        assert!(blocking_hid(&req, f, &hid));
        assert!(!blocking_hid(&req, f, &hid[..2]));
        // It is not covered: the coredump rung (launch-blocking) may still get the launch.
        assert_eq!(next(&req, &p, &hid, &empty(), f), Next::Run(RungId::Coredump));
        // Without retries nothing runs twice.
        let once = Request { retries: 0, ..req };
        let done = vec![
            (RungId::Baseline, ran(false)),
            (RungId::Memcheck, ran(false)),
            (RungId::Initcheck, ran(false)),
            (RungId::Racecheck, ran(false)),
            (RungId::Synccheck, ran(false)),
        ];
        assert!(matches!(next(&once, &p, &done, &empty(), f), Next::Stop(_)));
    }

    #[test]
    fn a_complete_verdict_stops_the_climb() {
        let req = Request { has_build: true, ..Request::default() };
        let p = plan(&req);
        let done = vec![(RungId::Baseline, ran(true)), (RungId::Coredump, ran(true))];
        let a = shared_atomic(true);
        let v = a.verdict.as_ref().unwrap();
        assert!(v.unknown.is_empty(), "{v:?}");
        match next(&req, &p, &done, &a, Facts { lineinfo: Some(true), ..Facts::default() }) {
            Next::Stop(why) => {
                assert!(why.contains("complete") && why.contains("shared_atomic.cu:16"), "{why}");
                assert!(why.contains("main at") && why.contains("shared_atomic.cu:33"), "{why}");
                assert!(why.contains("skipping") && why.contains("memcheck"), "{why}");
            }
            other => panic!("{other:?}"),
        }
    }

    /// `--repro` adds the repro rung, which runs once where the climb would stop with a verdict
    /// of a fault, and leaves the climb's own stop reason as it was; without `--repro`, with no
    /// verdict, or for a hang, it never runs.
    #[test]
    fn the_reproducer_comes_once_where_the_climb_stops_with_a_fault() {
        let req = Request { python: true, repro: true, ..Request::default() };
        let p = plan(&req);
        assert_eq!(p.last(), Some(&RungId::Repro));
        assert!(!plan(&Request { python: true, ..Request::default() }).contains(&RungId::Repro));
        let a = shared_atomic(true);
        let done = vec![(RungId::Baseline, ran(true))];
        let facts = Facts { lineinfo: Some(true), ..Facts::default() };
        let without = Request { repro: false, ..req.clone() };
        let plain = next(&without, &plan(&without), &done, &a, facts);
        assert!(matches!(plain, Next::Stop(_)), "{plain:?}");
        assert_eq!(next(&req, &p, &done, &a, facts), Next::Run(RungId::Repro));
        let mut after = done.clone();
        after.push((RungId::Repro, ran(true)));
        assert_eq!(next(&req, &p, &after, &a, facts), plain, "the climb's own stop, as without --repro");
        assert!(matches!(next(&req, &p, &done, &empty(), facts), Next::Run(r) if r != RungId::Repro));
        let mut hang = a.clone();
        hang.verdict.as_mut().unwrap().error = ErrorClass::Hang;
        assert!(!reproducible(&hang));
    }

    /// A complete verdict from a short native run is checked by memcheck for an earlier bug
    /// that corrupted memory without faulting; a long run or a Python target is not, and the
    /// stop says how to get that check. Once memcheck ran, the climb stops.
    #[test]
    fn a_short_run_s_complete_verdict_gets_one_memcheck_pass() {
        let req = Request { has_build: true, ..Request::default() };
        let p = plan(&req);
        let done = vec![(RungId::Baseline, ran(true))];
        let a = shared_atomic(true);
        let short = Facts { lineinfo: Some(true), armed_secs: Some(2), ..Facts::default() };
        assert_eq!(next(&req, &p, &done, &a, short), Next::Run(RungId::Memcheck));
        let mut after = done.clone();
        after.push((RungId::Memcheck, ran(true)));
        match next(&req, &p, &after, &a, short) {
            Next::Stop(why) => assert!(why.contains("complete") && !why.contains("did not look"), "{why}"),
            other => panic!("{other:?}"),
        }
        let long = Facts { armed_secs: Some(CONFIRM_UNDER_S + 1), ..short };
        match next(&req, &p, &done, &a, long) {
            Next::Stop(why) => {
                assert!(why.contains("memcheck did not look for an earlier bug"), "{why}");
                assert!(why.contains("--rungs baseline,memcheck"), "{why}");
            }
            other => panic!("{other:?}"),
        }
        let py = Request { python: true, ..req.clone() };
        match next(&py, &plan(&py), &done, &a, short) {
            Next::Stop(why) => assert!(why.contains("a Python target"), "{why}"),
            other => panic!("{other:?}"),
        }
        // `--full` runs memcheck anyway; `--rungs` without it does not add it.
        let rungs = Request { rungs: Some(vec![RungId::Baseline]), ..req };
        assert!(matches!(next(&rungs, &plan(&rungs), &done, &a, short), Next::Stop(_)));
    }

    /// The pass [`next`] asks for after a short native run's fault (above) starts beside the
    /// armed run's reading instead: named before the first armed run of a native target in the
    /// default climb, started only once that run's target left a dump within
    /// [`CONFIRM_UNDER_S`] with line info not known to be missing.
    #[test]
    fn the_memcheck_pass_may_start_beside_the_first_armed_run_s_reading() {
        let req = Request { has_build: true, ..Request::default() };
        let p = plan(&req);
        assert_eq!(pass_may_follow(&req, &p, &[], RungId::Baseline), Some(RungId::Memcheck));
        // Only before the first armed run, and not before another rung.
        let once = [(RungId::Baseline, ran(false))];
        assert_eq!(pass_may_follow(&req, &p, &once, RungId::Baseline), None);
        assert_eq!(pass_may_follow(&req, &p, &[], RungId::Coredump), None);
        // Python (memcheck on PyTorch takes minutes), `--full`, `--rungs`, watch: never.
        for other in [
            Request { python: true, ..req.clone() },
            Request { full: true, ..req.clone() },
            Request { rungs: Some(vec![RungId::Baseline, RungId::Memcheck]), ..req.clone() },
            Request { watch: true, ..req.clone() },
        ] {
            assert_eq!(pass_may_follow(&other, &plan(&other), &[], RungId::Baseline), None, "{other:?}");
        }
        // Not when memcheck is not planned (a recipe disabled it).
        let without: Vec<RungId> = p.iter().copied().filter(|r| *r != RungId::Memcheck).collect();
        assert_eq!(pass_may_follow(&req, &without, &[], RungId::Baseline), None);
        let ended = ArmedEnd { dumps: 1, secs: 0.9, lineinfo: Some(true) };
        assert!(pass_beside_reading(ended));
        assert!(pass_beside_reading(ArmedEnd { lineinfo: None, ..ended }), "a prebuilt binary");
        assert!(!pass_beside_reading(ArmedEnd { dumps: 0, ..ended }), "no dump: attach is cheaper");
        assert!(!pass_beside_reading(ArmedEnd { lineinfo: Some(false), ..ended }), "the rebuild first");
        assert!(!pass_beside_reading(ArmedEnd { secs: CONFIRM_UNDER_S as f64 + 0.5, ..ended }));
    }

    #[test]
    fn no_rung_left_that_can_answer_says_what_stays_unknown() {
        let req = Request { has_build: false, rungs: None, ..Request::default() };
        let p: Vec<RungId> = vec![RungId::Baseline, RungId::Coredump, RungId::Attach];
        let done = vec![(RungId::Baseline, ran(true)), (RungId::Coredump, ran(true))];
        match next(&req, &p, &done, &shared_atomic(false), Facts::default()) {
            Next::Stop(why) => assert!(why.contains("launch site") && why.contains("unknown"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn no_fault_runs_the_sweep_then_says_nothing_was_found() {
        let req = Request { has_build: true, ..Request::default() };
        let p = plan(&req);
        let f = Facts::default();
        let done = vec![(RungId::Baseline, ran(false))];
        assert_eq!(next(&req, &p, &done, &empty(), f), Next::Run(RungId::Memcheck));
        let done = vec![(RungId::Baseline, ran(false)), (RungId::Memcheck, ran(false))];
        assert_eq!(next(&req, &p, &done, &empty(), f), Next::Run(RungId::Initcheck));
        let mut done = vec![
            (RungId::Baseline, ran(false)),
            (RungId::Memcheck, ran(false)),
            (RungId::Initcheck, ran(false)),
        ];
        assert_eq!(next(&req, &p, &done, &empty(), f), Next::Run(RungId::Racecheck));
        done.push((RungId::Racecheck, ran(false)));
        assert_eq!(next(&req, &p, &done, &empty(), f), Next::Run(RungId::Synccheck));
        done.push((RungId::Synccheck, ran(false)));
        match next(&req, &p, &done, &empty(), f) {
            Next::Stop(why) => {
                assert!(
                    why.contains("no fault was reproduced")
                        && why.contains("memcheck, initcheck, racecheck, synccheck"),
                    "{why}"
                )
            }
            other => panic!("{other:?}"),
        }
    }

    /// After a short clean armed run the sweep's rungs go side by side; after a long one, a
    /// fault, `--full` or `--rungs`, and for rungs outside the sweep, one at a time.
    #[test]
    fn the_sweep_goes_side_by_side_only_after_a_short_clean_run() {
        use RungId::*;
        let req = Request { has_build: true, ..Request::default() };
        let p = plan(&req);
        let short = Facts { armed_secs: Some(SIDE_BY_SIDE_UNDER_S), ..Facts::default() };
        let long = Facts { armed_secs: Some(SIDE_BY_SIDE_UNDER_S + 1), ..Facts::default() };
        let clean = vec![(Baseline, ran(false))];
        assert_eq!(next(&req, &p, &clean, &empty(), short), Next::Run(Memcheck));
        assert_eq!(beside(&req, &p, &clean, &empty(), short, Memcheck), [Initcheck, Racecheck, Synccheck]);
        assert_eq!(beside(&req, &p, &clean, &empty(), long, Memcheck), []);
        assert_eq!(beside(&req, &p, &clean, &empty(), Facts::default(), Memcheck), []);
        // One already ran (run again alone, or skipped): the others only.
        let some = vec![(Baseline, ran(false)), (Memcheck, ran(false))];
        assert_eq!(beside(&req, &p, &some, &empty(), short, Initcheck), [Racecheck, Synccheck]);
        // A fault: the fault rungs, one at a time.
        let faulted = vec![(Baseline, ran(true))];
        assert_eq!(beside(&req, &p, &faulted, &empty(), short, Memcheck), []);
        assert_eq!(beside(&req, &p, &clean, &empty(), short, Coredump), []);
        for req in [
            Request { full: true, ..req.clone() },
            Request { rungs: Some(vec![Memcheck, Racecheck]), ..req.clone() },
            Request { watch: true, ..req.clone() },
        ] {
            assert_eq!(beside(&req, &plan(&req), &clean, &empty(), short, Memcheck), [], "{req:?}");
        }
    }

    /// A run beside others counts unless it failed while its tool found nothing.
    #[test]
    fn a_run_beside_others_runs_again_alone_only_when_it_failed_unexplained() {
        let faulted = RungOutcome::Ran { faulted: true, yielded: true };
        assert!(again_alone(faulted, false));
        assert!(!again_alone(faulted, true));
        assert!(!again_alone(ran(false), false));
        for o in [RungOutcome::Failed, RungOutcome::FailedWithoutCuda, RungOutcome::TimedOut] {
            assert!(again_alone(o, false), "{o:?}");
        }
        assert!(!again_alone(RungOutcome::Skipped, false));
    }

    #[test]
    fn a_skipped_or_failed_baseline_does_not_drop_the_fault_rungs() {
        let req = Request { has_build: false, ..Request::default() };
        let p = plan(&req);
        for outcome in [RungOutcome::Skipped, RungOutcome::Failed] {
            let done = vec![(RungId::Baseline, outcome)];
            assert_eq!(
                next(&req, &p, &done, &empty(), Facts::default()),
                Next::Run(RungId::Coredump),
                "{outcome:?}"
            );
        }
    }

    #[test]
    fn a_failure_without_cuda_stops_after_the_baseline_unless_rungs_are_named() {
        let req = Request { has_build: true, ..Request::default() };
        let p = plan(&req);
        let done = vec![(RungId::Baseline, RungOutcome::FailedWithoutCuda)];
        match next(&req, &p, &done, &empty(), Facts::default()) {
            Next::Stop(why) => {
                assert!(why.contains("without a CUDA error") && why.contains("--rungs"), "{why}")
            }
            other => panic!("{other:?}"),
        }
        let req = Request { rungs: Some(vec![RungId::Baseline, RungId::Memcheck]), ..req };
        let p = plan(&req);
        assert_eq!(next(&req, &p, &done, &empty(), Facts::default()), Next::Run(RungId::Memcheck));
    }

    /// The sweep's racecheck found a race (tests/fixtures/h200/kinds/race_shared): the kernel,
    /// both lines and the class are what such a verdict has, so the climb stops there.
    #[test]
    fn a_race_found_by_the_sweep_stops_the_climb() {
        use crate::findings::scan::scan_str;
        let log = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/h200/kinds/race_shared/racecheck.log"
        ));
        let a = decide(&[scan_str(log, "racecheck/stdout.log")]);
        let req = Request { has_build: true, ..Request::default() };
        let p = plan(&req);
        let done = vec![
            (RungId::Baseline, ran(false)),
            (RungId::Memcheck, ran(false)),
            (RungId::Initcheck, ran(false)),
            (RungId::Racecheck, ran(false)),
        ];
        match next(&req, &p, &done, &a, Facts::default()) {
            Next::Stop(why) => {
                assert!(why.contains("race in `shift_left"), "{why}");
                assert!(why.contains("race_shared.cu:9 and race_shared.cu:11"), "{why}");
                assert!(why.contains("skipping") && why.contains("synccheck"), "{why}");
            }
            other => panic!("{other:?}"),
        }
    }

    /// The per-rung knowledge the policy asks of the rungs comes to the orders it had as
    /// tables: the cost order for each kind of target and the sweep.
    #[test]
    fn the_rungs_give_the_cost_order_and_the_sweep() {
        use RungId::*;
        assert_eq!(by_cost(false), [Coredump, Attach, LaunchBlocking, Memcheck, Initcheck]);
        assert_eq!(by_cost(true), [Coredump, LaunchBlocking, Attach, Memcheck, Initcheck]);
        assert_eq!(sweep().collect::<Vec<_>>(), [Memcheck, Initcheck, Racecheck, Synccheck]);
        let standing: Vec<RungId> =
            RungId::ALL.into_iter().filter(|r| stands_for_baseline(*r, ran(false))).collect();
        assert_eq!(standing, [Baseline, Hang]);
        assert!(!stands_for_baseline(Hang, RungOutcome::Hung));
        let counted: Vec<RungId> = RungId::ALL.into_iter().filter(|r| !rung::get(*r).runs_target()).collect();
        assert_eq!(counted, [Rebuild, Repro]);
    }

    /// A run's outcome: a run in the baseline's place that failed without any CUDA error is an
    /// ordinary failure; a hang, a timeout, a device error seen in the files.
    #[test]
    fn a_run_comes_to_its_outcome() {
        let code = |c: i32| Seen { target_exit: Some(Exit::Code(c)), device_error: false, cuda_error: false };
        let ran = |faulted: bool, hung: bool| Some(Ran { faulted, yielded: true, hung, ..Ran::default() });
        let base = rung::get(RungId::Baseline);
        let hang = rung::get(RungId::Hang);
        let memcheck = rung::get(RungId::Memcheck);
        assert_eq!(outcome(base, ran(true, false), code(1)), RungOutcome::FailedWithoutCuda);
        assert_eq!(outcome(hang, ran(true, false), code(1)), RungOutcome::FailedWithoutCuda);
        assert_eq!(outcome(hang, ran(true, true), code(1)), RungOutcome::Hung);
        // A run that counted as hung (the armed baseline at its limit, `watch`'s job) is a hang
        // whatever its exit: ended by the dump's abort through a shell, it exits 134.
        assert_eq!(outcome(base, ran(false, true), code(134)), RungOutcome::Hung);
        let watched = rung::get_for(RungId::Baseline, true);
        assert_eq!(outcome(watched, ran(false, true), code(1)), RungOutcome::Hung);
        assert_eq!(outcome(watched, ran(false, true), code(0)), RungOutcome::Hung);
        assert_eq!(
            outcome(memcheck, ran(true, false), code(1)),
            RungOutcome::Ran { faulted: true, yielded: true }
        );
        // A command that never started is no fault in any rung (a binary never built, under
        // `--rungs coredump,attach` through srun on the H200: exit 127, four attach retries).
        for r in [RungId::Coredump, RungId::Attach, RungId::Memcheck] {
            for c in [126, 127] {
                assert_eq!(outcome(rung::get(r), ran(true, false), code(c)), RungOutcome::FailedWithoutCuda);
            }
            let with_cuda = Seen { cuda_error: true, ..code(127) };
            assert_ne!(outcome(rung::get(r), ran(true, false), with_cuda), RungOutcome::FailedWithoutCuda);
        }
        let cuda = Seen { cuda_error: true, ..code(1) };
        assert_eq!(
            outcome(base, ran(false, false), cuda),
            RungOutcome::Ran { faulted: false, yielded: true }
        );
        let device = Seen { device_error: true, ..code(0) };
        assert_eq!(
            outcome(base, ran(false, false), device),
            RungOutcome::Ran { faulted: true, yielded: true }
        );
        let timed_out = Seen { target_exit: Some(Exit::TimedOut), ..code(0) };
        assert_eq!(outcome(memcheck, ran(false, false), timed_out), RungOutcome::TimedOut);
        assert_eq!(outcome(base, None, device), RungOutcome::Failed);
        // The rebuild runs no target: its run does not count as one.
        let done = [
            (RungId::Baseline, ran_clean()),
            (RungId::Rebuild, RungOutcome::Ran { faulted: false, yielded: true }),
            (RungId::Coredump, RungOutcome::Ran { faulted: true, yielded: true }),
            (RungId::Attach, RungOutcome::Skipped),
        ];
        let native = Request { has_build: true, ..Request::default() };
        assert_eq!(reproduced(&native, &done), Reproduced { faulted: 1, runs: 2 });
        // A Python target's rebuild of its run-time builds is a run of the target.
        let py = Request { python: true, ..Request::default() };
        assert_eq!(reproduced(&py, &done), Reproduced { faulted: 1, runs: 3 });
        // The repro rung's capture run is the reproducer's, not one of the climb's runs of the
        // target (issue 41: `seen in: 2 of 2 runs` after one run and its capture).
        let with_repro =
            [done[0], done[2], (RungId::Repro, RungOutcome::Ran { faulted: true, yielded: true })];
        assert_eq!(reproduced(&native, &with_repro), Reproduced { faulted: 1, runs: 2 });
        assert!(error_ends_climb(RungId::Baseline, &done) && !error_ends_climb(RungId::Hang, &done));
        assert!(
            error_ends_climb(RungId::Hang, &done[..1]) && !error_ends_climb(RungId::Memcheck, &done[..1])
        );
    }

    fn ran_clean() -> RungOutcome {
        ran(false)
    }

    #[test]
    fn full_runs_everything() {
        let req = Request { has_build: true, full: true, ..Request::default() };
        let p = plan(&req);
        let done = vec![(RungId::Baseline, ran(false))];
        assert_eq!(next(&req, &p, &done, &empty(), Facts::default()), Next::Run(RungId::Rebuild));
    }
}

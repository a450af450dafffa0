//! The climb: asks the [`policy`](super::policy) what to run next, asks the prompter, runs the
//! rung's steps where they belong ([`Place`]) into the bundle, reads what they printed with
//! `findings`, and repeats until the policy says stop. It is given its prompter, its progress
//! sink and its interrupt handle as values, so that a test climbs in-process with a scripted
//! prompter and stand-in tools.
//!
//! Rungs the policy names to run side by side (the sweep, [`policy::beside`]) run on threads
//! of their own, sharing a read-only view of the climb; each keeps its own folder and record.
//! So does the memcheck pass the policy may start beside the first armed run's reading
//! ([`policy::pass_may_follow`]): its thread waits until the armed run's target ended and the
//! armed run says whether it starts.
//!
//! Must not: parse tool output itself (that is `findings`), print other than through the
//! progress sink, spawn other than through `process`, or leave a process of the target alive.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::Result;

use super::collect::{self, Collected};
use super::gate::{Closes, Gate};
use super::policy::{self, Facts, Next, Request, RungOutcome};
use super::recorder;
use super::run::{place_for, run_logged_watched};
use super::rung::{self, ArmedEnd, Beside, Debug, Ran, Rung, RungIo, Step, StepCx};
use super::side::{self, outcome_notes, Logged, Side};
use crate::bundle::inputs::{is_rung_output, last_line, scan_file};
use crate::bundle::{self, layout, Bundle, CommandRecord, InputsRecord, RungRecord, RungStatus};
use crate::findings::coredump::sm_progress;
use crate::findings::verdict::{decide, decide_in, Analysis};
use crate::findings::Evidence;
use crate::launch::container::Containers;
use crate::launch::slurm::Slurm;
use crate::launch::ssh::Ssh;
use crate::launch::{self, Place};
use crate::model::{Exit, PromptEnd, Role, RungId};
use crate::process::{self, Control, Interrupt, Running, Stream};
use crate::recipe::Resolved;
use crate::redact::Redaction;
use crate::ui::{Choice, Progress, Prompter, RungBar};

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
    /// The run's containers, when every rung runs in one.
    pub containers: Option<Containers>,
    /// The Slurm allocation the target's runs go into as job steps (`--launcher slurm`).
    pub slurm: Option<Slurm>,
    /// The hosts the target's runs go to, one rank each (`--launcher ssh`).
    pub ssh: Option<Ssh>,
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
    /// Ctrl-C, SIGTERM or SIGHUP.
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
        self.slurm.is_some() || self.ssh.is_some()
    }

    /// Whether the target's runs load the launch recorder: a Python target on the host or
    /// through Slurm (not in a container: [`recorder`]).
    fn records_launches(&self) -> bool {
        self.recipe.python && self.containers.is_none()
    }

    /// Climbs into `bundle`: starts the `collect` commands beside the climb, runs the rungs
    /// the policy asks for, and writes the analysis after each. Whatever happens the bundle
    /// keeps what was collected.
    pub fn run(self, mut bundle: Bundle, prompter: &mut dyn Prompter, progress: &dyn Progress) -> Climbed {
        if self.records_launches() {
            if let Err(e) = bundle.write_file(layout::RECORDER_FILE, recorder::SOURCE) {
                return Climbed { analysis: decide(&[]), bundle, outcome: Err(e) };
            }
        }
        let mut jobs = collect::jobs(self.recipe, self.containers.as_ref());
        if let Some(p) = &self.path {
            for j in &mut jobs {
                j.inv.set("PATH", p.clone());
            }
        }
        for job in jobs.iter().filter(|j| !j.quiet) {
            progress.status(&format!(
                "==> collect {} (beside the climb): {}",
                layout::env_file(&job.name),
                collect::shown(job)
            ));
        }
        let collecting = collect::start(jobs, bundle.root().to_path_buf(), self.interrupt.clone());
        let mut state = State {
            climb: &self,
            bundle,
            evidence: Vec::new(),
            done: Vec::new(),
            analysis: decide(&[]),
            facts: Facts::default(),
            started: 0,
            collecting: collecting.ok(),
            hidden: Vec::new(),
            alone: Vec::new(),
        };
        let mut outcome = state.climb_all(prompter, progress);
        if let Err(e) = state.join_collect(progress) {
            outcome = outcome.and(Err(e));
        }
        let State { mut bundle, analysis, .. } = state;
        bundle.set_stopped(match &outcome {
            Ok(s) => s.reason(),
            Err(e) => format!("error: {e:#}"),
        });
        if let Err(e) = bundle.write_analysis(&analysis) {
            outcome = outcome.and(Err(e));
        }
        Climbed { bundle, analysis, outcome }
    }
}

/// The state of one climb.
struct State<'c, 'a> {
    climb: &'c Climb<'a>,
    bundle: Bundle,
    evidence: Vec<Evidence>,
    done: Vec<(RungId, RungOutcome)>,
    /// The verdict over `evidence`, recomputed once after each rung.
    analysis: Analysis,
    /// What the rungs learnt about the target (line info in its binaries).
    facts: Facts,
    /// Containers started so far (their names count up).
    started: usize,
    /// The `collect` commands and the snapshot running in the background, until joined.
    collecting: Option<std::thread::JoinHandle<Vec<Result<Collected>>>>,
    /// Indices in `done` of runs made beside others that do not count ([`policy::again_alone`]).
    hidden: Vec<usize>,
    /// The rungs to run again alone, for their record's note.
    alone: Vec<RungId>,
}

/// A rung about to run: where it writes, what it runs, its record so far.
struct Planned {
    id: RungId,
    rung: &'static dyn Rung,
    index: usize,
    dir: PathBuf,
    steps: Vec<Step>,
    record: RungRecord,
    started: Instant,
    /// When its run ended (a rung beside others ends before its record is completed).
    ended: Option<Instant>,
}

/// Runs planned rung `p` on a thread of its own beside others: its remarks held for its
/// record's lines ([`Held`]), a panic its error, its end time set.
fn run_on_thread(view: &View<'_, '_>, p: &mut Planned, pass: bool) -> (Result<Ran>, Vec<String>) {
    let held = Held::default();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut io = Io { view, dir: &p.dir, record: &mut p.record, bar: &held, gate: None, pass };
        p.rung.run(&mut io, &p.steps)
    }))
    .unwrap_or_else(|_| Err(anyhow::anyhow!("{} stopped on an internal error", p.id)));
    p.ended = Some(Instant::now());
    (result, held.notes.into_inner())
}

/// How the pass beside an armed run's reading ended ([`State::execute_with_pass`]).
enum Pass {
    /// It ran: its rung, its run, the remarks held for its record's lines.
    Ran(Box<Planned>, Result<Ran>, Vec<String>),
    /// It did not start: its (empty) folder, to remove.
    NotStarted(PathBuf),
}

/// How the prompt before a rung ended.
enum Asked {
    Run,
    Skipped,
    Stop(Stopped),
}

impl State<'_, '_> {
    fn climb_all(&mut self, prompter: &mut dyn Prompter, progress: &dyn Progress) -> Result<Stopped> {
        let total = self.climb.plan.len();
        let mut index = 0;
        loop {
            if self.climb.interrupt.is_set() {
                return Ok(Stopped::Interrupted);
            }
            let counted = self.counted();
            let (req, plan) = (self.climb.request, self.climb.plan);
            let first = match policy::next(req, plan, &counted, &self.analysis, self.facts) {
                Next::Stop(why) => return Ok(Stopped::Done(why)),
                Next::Run(r) => r,
            };
            let others = match self.side_by_side_here() {
                true => policy::beside(req, plan, &counted, &self.analysis, self.facts, first),
                false => Vec::new(),
            };
            let mut chosen = Vec::new();
            for id in std::iter::once(first).chain(others) {
                match self.ask(prompter, id)? {
                    Asked::Run => chosen.push(id),
                    Asked::Skipped => {}
                    Asked::Stop(s) => return Ok(s),
                }
            }
            let mut planned = Vec::new();
            for id in chosen {
                index += 1;
                planned.push(self.plan_rung(id, index)?);
            }
            if planned.len() > 1 {
                let names: Vec<&str> = planned.iter().map(|p| p.id.name()).collect();
                let bar = progress.rung(
                    planned[0].index,
                    total,
                    &names.join("+"),
                    "the sweep's sanitizers side by side on the GPU (each one's start costs about a second)",
                );
                let ran = self.execute_beside(planned);
                bar.finish(&format!("{} runs side by side", ran.len()));
                for (p, result, notes) in ran {
                    let lines = Lines { progress, id: p.id };
                    for n in &notes {
                        lines.note(n);
                    }
                    if let Some(stop) = self.finish(p, result, &lines, progress, true)? {
                        return Ok(stop);
                    }
                }
                continue;
            }
            let Some(p) = planned.pop() else { continue };
            let what = p.rung.describe_in(self.climb.recipe, self.climb.debug);
            let bar = progress.rung(p.index, total, p.id.name(), &what);
            let Some(id) = self.pass_may_follow(p.id, prompter) else {
                let (p, result) = self.execute(p, bar.as_ref());
                if let Some(stop) = self.finish(p, result, bar.as_ref(), progress, false)? {
                    return Ok(stop);
                }
                continue;
            };
            let pass = self.plan_rung(id, index + 1)?;
            let (armed, pass) = self.execute_with_pass(p, pass, bar.as_ref(), progress);
            let armed = armed?;
            // The pass's record is kept even when the armed run's end stops the climb (Ctrl-C).
            let passed = match pass {
                Pass::Ran(pass, result, notes) => {
                    index += 1;
                    let lines = Lines { progress, id: pass.id };
                    for n in &notes {
                        lines.note(n);
                    }
                    self.finish(*pass, result, &lines, progress, true)?
                }
                // Not wanted after all: its folder goes, and its number is the next rung's.
                Pass::NotStarted(dir) => {
                    let _ = std::fs::remove_dir(&dir);
                    None
                }
            };
            if let Some(stop) = armed.or(passed) {
                return Ok(stop);
            }
        }
    }

    /// The rungs done as the policy counts them: a run that failed beside others does not
    /// count until the same rung has run alone ([`policy::again_alone`]).
    fn counted(&self) -> Vec<(RungId, RungOutcome)> {
        self.done.iter().enumerate().filter(|(i, _)| !self.hidden.contains(i)).map(|(_, d)| *d).collect()
    }

    /// Whether the sweep's runs may go side by side here: on the host (a container or a job
    /// step each is the runtime's or Slurm's to place), and never for `watch`.
    fn side_by_side_here(&self) -> bool {
        self.climb.containers.is_none() && !self.climb.ranked() && !self.climb.request.watch
    }

    /// The prompt before rung `id`; a skip is recorded here.
    fn ask(&mut self, prompter: &mut dyn Prompter, id: RungId) -> Result<Asked> {
        let rung = rung::get_for(id, self.climb.request.watch);
        let what = rung.prompt(self.climb.recipe, self.climb.debug);
        let choice = match process::while_prompting(|| prompter.before_rung(id.name(), &what)) {
            Ok(c) => c,
            // Ctrl-C at the prompt (a key in the terminal's raw mode): an interruption like
            // the signal, whether or not one came too.
            Err(e) if PromptEnd::of(&e) == Some(PromptEnd::Interrupted) => {
                self.climb.interrupt.trigger();
                return Ok(Asked::Stop(Stopped::Interrupted));
            }
            Err(e) => return Err(e),
        };
        match choice {
            Choice::Run => Ok(Asked::Run),
            Choice::Skip => {
                self.done.push((id, RungOutcome::Skipped));
                self.bundle.push_rung(RungRecord {
                    rung: id,
                    dir: String::new(),
                    status: RungStatus::Skipped,
                    duration_s: 0.0,
                    commands: vec![],
                    files: vec![],
                    notes: vec!["skipped at the prompt".into()],
                    inputs: vec![],
                })?;
                Ok(Asked::Skipped)
            }
            Choice::Stop => Ok(Asked::Stop(Stopped::Done(format!("stopped at the prompt before {id}")))),
        }
    }

    /// Rung `id`'s folder, steps and record, as the `index`-th rung of the climb.
    fn plan_rung(&mut self, id: RungId, index: usize) -> Result<Planned> {
        let attempt = policy::attempts(&self.done, id);
        let dir = self.bundle.rung_dir(index, id, attempt)?;
        let mut record = RungRecord {
            rung: id,
            dir: self.bundle.rel(&dir),
            status: RungStatus::Ran,
            duration_s: 0.0,
            commands: vec![],
            files: vec![],
            notes: vec![],
            inputs: vec![],
        };
        let steps = self.climb.steps(id, dir.clone(), attempt, self.facts);
        if let Some(k) = self.alone.iter().position(|&r| r == id) {
            self.alone.remove(k);
            record.notes.push(
                "run again alone: beside the sweep's other runs its target failed while its tool found \
                 nothing, which the shared GPU may have caused"
                    .into(),
            );
        } else if attempt > 0 {
            record.notes.push(policy::retry_note(self.climb.request, self.facts, id, attempt));
        }
        let rung = rung::get_for(id, self.climb.request.watch);
        Ok(Planned { id, rung, index, dir, steps, record, started: Instant::now(), ended: None })
    }

    /// The rung to start beside the reading of armed run `id` when its target faulted
    /// ([`policy::pass_may_follow`]): on the host, and with a prompter that asks nobody (a
    /// person is asked before each rung, after the one before it ended).
    fn pass_may_follow(&self, id: RungId, prompter: &dyn Prompter) -> Option<RungId> {
        let (req, plan) = (self.climb.request, self.climb.plan);
        let here = self.side_by_side_here() && !prompter.asks();
        here.then(|| policy::pass_may_follow(req, plan, &self.counted(), id)).flatten()
    }

    /// Runs the armed run `p`, its progress on `bar`, and on a thread beside it the pass
    /// (`pass`), which waits until the armed run's target ended and starts only if the armed
    /// run then says so ([`RungIo::reading_begins`], [`policy::pass_beside_reading`]): the
    /// pass's target runs while cuda-gdb reads the dumps. The armed run's record is finished
    /// (its line shown, the verdict recomputed, and a complete one said) while the pass still
    /// runs: the pass's view owns what it reads of the state. [`Pass::NotStarted`]: it did not.
    fn execute_with_pass(
        &mut self,
        mut p: Planned,
        mut pass: Planned,
        bar: &dyn RungBar,
        progress: &dyn Progress,
    ) -> (Result<Option<Stopped>>, Pass) {
        let root = self.bundle.root().to_path_buf();
        let analysis = self.analysis.clone();
        let view = View::new(self.climb, &root, &analysis, self.started);
        let gate = Gate::default();
        let pass_dir = pass.dir.clone();
        let (armed, side) = std::thread::scope(|s| {
            let (view, gate) = (&view, &gate);
            let handle = s.spawn(move || {
                if !gate.wait() {
                    return Pass::NotStarted(pass.dir);
                }
                pass.started = Instant::now();
                pass.record.notes.push(
                    "the memcheck pass a short native run's fault gets, over every kernel (an earlier one \
                     may have corrupted memory without faulting): started beside the armed run's reading \
                     of its dumps, not after it"
                        .into(),
                );
                let (result, notes) = run_on_thread(view, &mut pass, true);
                Pass::Ran(Box::new(pass), result, notes)
            });
            // Opened (no pass) when the armed run ends without opening it, however it ends.
            let closes = Closes(gate);
            p.started = Instant::now();
            let result = {
                let mut io =
                    Io { view, dir: &p.dir, record: &mut p.record, bar, gate: Some(gate), pass: false };
                p.rung.run(&mut io, &p.steps)
            };
            p.ended = Some(Instant::now());
            drop(closes);
            let armed = self.finish(p, result, bar, progress, false);
            if gate.wait() && matches!(armed, Ok(None)) {
                if let Some(line) = policy::complete_line(&self.analysis) {
                    progress.status(&format!(
                        "    the armed run's verdict: {line} (the memcheck pass still looks for an earlier bug)"
                    ));
                }
            }
            let side = handle.join().unwrap_or(Pass::NotStarted(pass_dir));
            (armed, side)
        });
        let (started, found) = view.into_parts();
        self.started = started;
        self.bundle.note_redactions(found);
        (armed, side)
    }

    /// Runs one planned rung, its progress on `bar`.
    fn execute(&mut self, mut p: Planned, bar: &dyn RungBar) -> (Planned, Result<Ran>) {
        p.started = Instant::now();
        let view = View::of(self);
        let result = {
            let mut io = Io { view: &view, dir: &p.dir, record: &mut p.record, bar, gate: None, pass: false };
            p.rung.run(&mut io, &p.steps)
        };
        let (started, found) = view.into_parts();
        self.started = started;
        self.bundle.note_redactions(found);
        (p, result)
    }

    /// Runs the planned rungs at once, each on its own thread (their processes go through
    /// `process` as every run's do), each rung's remarks kept for its record's lines.
    fn execute_beside(&mut self, planned: Vec<Planned>) -> Vec<(Planned, Result<Ran>, Vec<String>)> {
        let view = View::of(self);
        let ran: Vec<(Planned, Result<Ran>, Vec<String>)> = std::thread::scope(|s| {
            let handles: Vec<_> = planned
                .into_iter()
                .map(|mut p| {
                    let view = &view;
                    s.spawn(move || {
                        p.started = Instant::now();
                        let (result, notes) = run_on_thread(view, &mut p, false);
                        (p, result, notes)
                    })
                })
                .collect();
            // Each thread catches its rung's panic, so every join returns its rung.
            handles.into_iter().filter_map(|h| h.join().ok()).collect()
        });
        let (started, found) = view.into_parts();
        self.started = started;
        self.bundle.note_redactions(found);
        ran
    }

    /// What a rung's run left: its record completed and saved, its files read into the
    /// evidence, the outcome the policy sees, and the analysis written; `Some` when the climb
    /// must stop. A rung run `beside` others whose run does not count alone
    /// ([`policy::again_alone`]) runs again, alone.
    fn finish(
        &mut self,
        p: Planned,
        result: Result<Ran>,
        bar: &dyn RungBar,
        progress: &dyn Progress,
        beside: bool,
    ) -> Result<Option<Stopped>> {
        let Planned { id, rung, dir, mut record, started, ended, .. } = p;
        record.duration_s = ended.unwrap_or_else(Instant::now).duration_since(started).as_secs_f64();
        self.give_back_after(&dir, &record);
        self.redact_reports(&dir, &mut record);
        if self.climb.ranked() {
            // One rank's output per file, beside the interleaved logs.
            if let Err(e) = bundle::ranks::split(&dir) {
                record.notes.push(format!("{e:#}: the per-rank logs under `ranks/` are incomplete"));
            }
        }
        record.files = self.bundle.files_of(&dir);
        let ran = match &result {
            Ok(r) => Some(*r),
            Err(e) => {
                record.status = RungStatus::Failed;
                record.notes.push(format!("{e:#}"));
                None
            }
        };
        if self.climb.interrupt.is_set() {
            record.status = RungStatus::Interrupted;
        }
        // Read what the rung's files say, then save the bundle's view of it.
        let before = self.evidence.len();
        for f in record.files.iter().filter(|f| rung.gives_evidence() && is_rung_output(Path::new(&f.path))) {
            if let Ok(ev) = scan_file(&self.bundle.root().join(&f.path)) {
                self.evidence.push(ev);
            }
        }
        let target_exit = record.commands.iter().find(|c| c.role == Role::Target).and_then(|c| c.exit);
        let seen = policy::Seen::of(target_exit, &self.evidence[before..]);
        let outcome = policy::outcome(rung, ran, seen);
        if outcome == RungOutcome::FailedWithoutCuda {
            record.notes.push(failed_without_cuda(&dir, target_exit));
        }
        if let Some(li) = ran.and_then(|r| r.lineinfo) {
            self.facts.lineinfo = Some(li);
        }
        if let Some(known) = ran.and_then(|r| r.static_sites) {
            self.facts.static_sites = Some(known);
        }
        if rung.stands_for_baseline(false) && self.facts.armed_secs.is_none() {
            if let Some(c) = record.commands.iter().find(|c| c.role == Role::Target) {
                self.facts.armed_secs = Some(c.duration_s.ceil().clamp(0.0, u32::MAX as f64) as u32);
            }
        }
        let interrupted = record.status == RungStatus::Interrupted;
        if beside && !interrupted && policy::again_alone(outcome, seen.device_error) {
            self.hidden.push(self.done.len());
            self.alone.push(id);
            record.notes.push(
                "its target failed beside the sweep's other runs while its tool found nothing: it runs \
                 again alone before its run counts"
                    .into(),
            );
        }
        // What the line says is what the files show: a device error only when they hold one
        // (a target killed by Ctrl-C, or one that died of a signal without a CUDA error in
        // its logs, is no device error).
        let shown = format!(
            "{}{}",
            target_exit.map(Exit::text).unwrap_or_else(|| record.status.to_string()),
            match (seen.device_error, outcome.faulted() && !interrupted) {
                (true, _) => ", device error seen",
                (false, true) => ", faulted (no device error in its files)",
                (false, false) => "",
            }
        );
        bar.finish(&shown);
        for n in &record.notes {
            progress.status(&format!("    note: {n}"));
        }
        let hid_before = policy::blocking_hid(self.climb.request, self.facts, &self.done);
        self.done.push((id, outcome));
        if !hid_before && policy::blocking_hid(self.climb.request, self.facts, &self.done) {
            record.notes.push(
                "this run, without launch-blocking, faulted where the launch-blocking ones did not: the \
                 fault is intermittent, or launch-blocking hides it (a race between the host and the \
                 device, or between streams); a launch site needs a launch-blocking run that faults"
                    .into(),
            );
        }
        self.bundle.push_rung(record)?;
        self.analysis = decide_in(&self.evidence, &self.climb.recipe.source_roots());
        self.analysis.reproduced = Some(policy::reproduced(self.climb.request, &self.done));
        // The files hold no CUDA error, but the run failed: the conclusion says that, not
        // "nothing faulted, run the sweep" beside a stop that says to fix it first.
        if self.analysis.verdict.is_none()
            && self.done.iter().any(|(_, o)| *o == RungOutcome::FailedWithoutCuda)
        {
            self.analysis.conclusion = "no verdict: the target failed without a CUDA error (the baseline's \
                                        note quotes it): that is no GPU fault, fix it first"
                .to_string();
        }
        self.bundle.write_analysis(&self.analysis)?;
        if let Err(e) = result {
            if self.climb.interrupt.is_set() {
                return Ok(Some(Stopped::Interrupted));
            }
            if crate::files::out_of_space(&e) {
                // Every later rung writes logs too: stop here, with what is written.
                return Err(e.context(format!("{id} could not write its files")));
            }
            if policy::error_ends_climb(id, &self.done) {
                // Every later rung runs the same target: if it cannot start, none can.
                return Err(e.context("the baseline could not run the target, so no rung can"));
            }
            progress.status(&format!("    {id} failed: {e:#}; going on"));
        }
        Ok(None)
    }

    /// Waits for the `collect` commands and the snapshot (once) and adds what they collected
    /// to the bundle; a recipe command that failed is noted then.
    fn join_collect(&mut self, progress: &dyn Progress) -> Result<()> {
        let Some(handle) = self.collecting.take() else { return Ok(()) };
        let results = handle.join().map_err(|_| anyhow::anyhow!("the environment snapshot panicked"))?;
        for r in results {
            let c = r?;
            self.bundle.note_redactions(c.found);
            let note = c.note.filter(|_| !c.quiet);
            if let Some(n) = &note {
                progress.status(&format!("    note: {n}"));
            }
            self.bundle.push_collected(c.record, note)?;
        }
        Ok(())
    }

    /// Files a root container wrote go back to their folder's owner: a rung's folder to the
    /// owner of the folder the bundles go to, the build's tree to its own owner.
    fn give_back_after(&self, dir: &Path, record: &RungRecord) {
        let Some(c) = &self.climb.containers else { return };
        if let Some(bundles) = self.bundle.root().parent() {
            launch::give_back(c, dir, bundles);
        }
        if record.commands.iter().any(|c| c.role == Role::Build) {
            if let Some(b) = &self.climb.recipe.build {
                let tree = b.cwd.clone().unwrap_or_else(|| c.workdir.clone());
                launch::give_back(c, &tree, &tree);
            }
        }
    }

    /// Redacts what the tool did not write through the redactor as it ran (the tools'
    /// reports, what the target left in the rung's folder, at any depth) in place, and the
    /// names that hold a secret ([`bundle::redact_left`]); its own logs and command files,
    /// those its records name, were redacted as they were written.
    fn redact_reports(&mut self, dir: &Path, record: &mut RungRecord) {
        let root = self.bundle.root().to_path_buf();
        let logged = bundle::leaves::tool_logs(&record.commands);
        let mut found = Vec::new();
        let left = bundle::redact_left(dir, &root, &logged, &mut found);
        record.notes.extend(left.notes);
        self.bundle.note_redactions(found);
    }
}

/// What the rungs see of the climb while they run, shared by rungs that run side by side:
/// what they only read, and what they add to (the containers' count, the redactions found),
/// which goes back into the state once they end ([`View::into_parts`]).
struct View<'v, 'a> {
    climb: &'v Climb<'a>,
    root: &'v Path,
    analysis: &'v Analysis,
    started: Mutex<usize>,
    found: Mutex<Vec<Redaction>>,
}

impl<'v, 'a> View<'v, 'a> {
    fn of(state: &'v State<'_, 'a>) -> View<'v, 'a> {
        View::new(state.climb, state.bundle.root(), &state.analysis, state.started)
    }

    /// A view of `climb` writing under `root`, the verdict so far `analysis`, `started`
    /// containers so far.
    fn new(climb: &'v Climb<'a>, root: &'v Path, analysis: &'v Analysis, started: usize) -> View<'v, 'a> {
        View { climb, root, analysis, started: Mutex::new(started), found: Mutex::new(Vec::new()) }
    }

    /// The containers started so far and the redactions found.
    fn into_parts(self) -> (usize, Vec<Redaction>) {
        let started = self.started.into_inner().unwrap_or_else(|e| e.into_inner());
        (started, self.found.into_inner().unwrap_or_else(|e| e.into_inner()))
    }

    fn note_redactions(&self, found: Vec<Redaction>) {
        self.found.lock().unwrap_or_else(|e| e.into_inner()).extend(found);
    }

    /// Where the next process of `step` runs: on the host, or in a new container named
    /// after its logs (or role), as the plan names it.
    fn place(&self, step: &Step) -> Place {
        let mut started = self.started.lock().unwrap_or_else(|e| e.into_inner());
        let c = self.climb;
        place_for(c.containers.as_ref(), c.slurm.as_ref(), c.ssh.as_ref(), &mut started, step, &Place::Host)
    }
}

/// A rung's view of the climb while it runs.
struct Io<'s, 'v, 'a> {
    view: &'s View<'v, 'a>,
    dir: &'s Path,
    record: &'s mut RungRecord,
    bar: &'s dyn RungBar,
    /// The armed run's word to the pass beside its reading, when one waits.
    gate: Option<&'s Gate>,
    /// This run is the pass beside an armed run's reading ([`RungIo::pass`]).
    pass: bool,
}

/// The bar of a rung that runs beside others: the one bar of them all shows their progress,
/// so each one's remarks are held for the lines that follow it ([`Lines`]).
#[derive(Default)]
struct Held {
    notes: std::cell::RefCell<Vec<String>>,
}

impl RungBar for Held {
    fn line(&self, _line: &str) {}

    fn sm(&self, _k: u32, _n: u32) {}

    fn note(&self, text: &str) {
        self.notes.borrow_mut().push(text.to_string());
    }

    fn finish(&self, _outcome: &str) {}
}

/// A rung that ran beside others, told in status lines after their one bar ended.
struct Lines<'p> {
    progress: &'p dyn Progress,
    id: RungId,
}

impl RungBar for Lines<'_> {
    fn line(&self, _line: &str) {}

    fn sm(&self, _k: u32, _n: u32) {}

    fn note(&self, text: &str) {
        self.progress.status(&format!("    {}: {text}", self.id));
    }

    fn finish(&self, outcome: &str) {
        self.progress.status(&format!("    {}: {outcome}", self.id));
    }
}

/// The lines of the target and the build go to the progress (the coredump's `SM k/N` as a
/// bar); a tool's are only logged.
fn shows_lines(role: Role) -> bool {
    matches!(role, Role::Target | Role::Build)
}

fn to_bar(bar: &dyn RungBar, line: &str) {
    match sm_progress(line) {
        Some((k, n)) => bar.sm(k, n),
        // The terminal shows the latest line: redacted, as the log has it.
        None => bar.line(&crate::redact::redact_line(line).0),
    }
}

impl Io<'_, '_, '_> {
    /// Runs `step` at `place`, recording it; the outer error is the bundle's, the inner the
    /// process's.
    fn run_at(
        &mut self,
        step: &Step,
        place: &Place,
        on_line: &mut dyn FnMut(Stream, &str) -> Control,
        on_tick: &mut dyn FnMut(&Running) -> Control,
    ) -> Result<Exit> {
        let mut found = Vec::new();
        let logged = run_logged_watched(
            self.view.root,
            step.role,
            &step.inv,
            place,
            layout::logs(self.dir, &step.stem),
            Some(self.dir),
            &mut found,
            &self.view.climb.interrupt,
            on_line,
            on_tick,
        );
        self.recorded(step, place, found, logged)
    }

    /// What one step's run at `place` left (`logged`, with the redactions `found` in it) joins
    /// the rung's record: its command, its notes (a container runtime's own failure, a timeout,
    /// a log cut) and, with `-v`, the command on the bar. The outer error is the bundle's, the
    /// inner the process's.
    fn recorded(
        &mut self,
        step: &Step,
        place: &Place,
        found: Vec<Redaction>,
        logged: Result<(CommandRecord, Result<process::Outcome>)>,
    ) -> Result<Exit> {
        self.view.note_redactions(found);
        let (rec, result) = logged?;
        if crate::ui::verbosity() == crate::ui::Verbosity::Verbose {
            let exit = rec.exit.map(Exit::text).unwrap_or_else(|| "not started".into());
            self.bar.note(&format!("$ {} ({exit}, {:.1} s)", rec.command, rec.duration_s));
        }
        self.record.commands.push(rec);
        let o = result?;
        if place.in_container() && o.exit == Exit::Code(125) {
            self.record.notes.push(format!(
                "{}: the container runtime could not run the command (exit 125, its own error): see the log \
                 for the runtime's message",
                step.role
            ));
        }
        self.record.notes.extend(outcome_notes(step, &o));
        Ok(o.exit)
    }

    /// What steps run on threads of their own ([`side::spawn_logged`]) left, each joined to
    /// the rung's record as [`Io::recorded`] does; a thread that panicked is an error of its
    /// step.
    fn joined(
        &mut self,
        steps: &[Step],
        places: &[Place],
        joined: Vec<std::thread::Result<Logged>>,
    ) -> Vec<Result<Exit>> {
        let mut exits = Vec::new();
        for ((step, place), joined) in steps.iter().zip(places).zip(joined) {
            exits.push(match joined {
                Ok((logged, found)) => self.recorded(step, place, found, logged),
                Err(_) => Err(anyhow::anyhow!("{} stopped on an internal error", step.role)),
            });
        }
        exits
    }
}

/// What watches each line of a run with steps beside it.
type OnLine<'f> = dyn FnMut(&str, &mut dyn Beside) -> Control + 'f;
/// What is called at each tick of a run with steps beside it.
type OnTick<'f> = dyn FnMut(&Running, &mut dyn Beside) -> Control + 'f;

impl Io<'_, '_, '_> {
    /// Runs `step` with steps beside it (a [`Side`]): `watch` sees each line, `tick` each
    /// tick of the run; what the side steps recorded joins the rung's record.
    fn exec_beside(
        &mut self,
        step: &Step,
        mut watch: Option<&mut OnLine<'_>>,
        mut tick: Option<&mut OnTick<'_>>,
    ) -> Result<Exit> {
        let place = self.view.place(step);
        let beside = std::cell::RefCell::new(Side {
            root: self.view.root.to_path_buf(),
            dir: self.dir.to_path_buf(),
            place: place.beside(),
            interrupt: self.view.climb.interrupt.clone(),
            bar: self.bar,
            records: Vec::new(),
            found: Vec::new(),
            notes: Vec::new(),
        });
        let bar = self.bar;
        let echo = step.role == Role::Target;
        let result = self.run_at(
            step,
            &place,
            &mut |stream, line| {
                to_bar(bar, line);
                if echo {
                    bar.echo(stream, line);
                }
                match watch.as_mut() {
                    Some(w) => w(line, &mut *beside.borrow_mut()),
                    None => Control::Continue,
                }
            },
            &mut |running| match tick.as_mut() {
                Some(t) => t(running, &mut *beside.borrow_mut()),
                None => Control::Continue,
            },
        );
        let beside = beside.into_inner();
        self.record.commands.extend(beside.records);
        self.record.notes.extend(beside.notes);
        self.view.note_redactions(beside.found);
        result
    }
}

impl RungIo for Io<'_, '_, '_> {
    fn recipe(&self) -> &Resolved {
        self.view.climb.recipe
    }

    fn dir(&self) -> &Path {
        self.dir
    }

    fn shown_dir(&self) -> String {
        self.record.dir.clone()
    }

    fn gpus(&self) -> usize {
        self.view.climb.gpus
    }

    fn interrupted(&self) -> bool {
        self.view.climb.interrupt.is_set()
    }

    /// Only the default climb scopes a sanitizer to the suspect, and only while its verdict
    /// lacks a part: `--full` and `--rungs` ask for the rung as such, and a sanitizer after a
    /// complete verdict looks for another bug (the memcheck pass), so every kernel is checked.
    fn suspect(&self) -> Option<String> {
        if self.view.climb.request.runs_every_planned_rung() || policy::complete(self.view.analysis) {
            return None;
        }
        crate::findings::verdict::kernel_filter(self.view.analysis)
    }

    /// The pass beside the reading, or memcheck once the default climb's verdict is complete
    /// (no suspect then): the policy asks for no other rung then (`policy::next`).
    fn pass(&self) -> bool {
        self.pass
            || (self.record.rung == RungId::Memcheck
                && !self.view.climb.request.runs_every_planned_rung()
                && policy::complete(self.view.analysis))
    }

    fn verdict(&self) -> Option<crate::findings::verdict::Verdict> {
        self.view.analysis.verdict.clone()
    }

    fn in_container(&self) -> bool {
        self.view.climb.containers.is_some()
    }

    fn sources(&self) -> Vec<String> {
        let mut files: Vec<String> = self
            .view
            .analysis
            .findings
            .iter()
            .flat_map(|f| f.item.frames.iter().filter_map(|fr| fr.file.clone()))
            .collect();
        files.sort();
        files.dedup();
        files
    }

    fn exec(&mut self, step: &Step) -> Result<Exit> {
        let place = self.view.place(step);
        let bar = self.bar;
        let shows = shows_lines(step.role);
        let echo = step.role == Role::Target;
        self.run_at(
            step,
            &place,
            &mut |stream, line| {
                if shows {
                    to_bar(bar, line);
                }
                if echo {
                    bar.echo(stream, line);
                }
                Control::Continue
            },
            &mut |_| Control::Continue,
        )
    }

    fn exec_watching(
        &mut self,
        step: &Step,
        watch: &mut dyn FnMut(&str, &mut dyn Beside) -> Control,
    ) -> Result<Exit> {
        self.exec_beside(step, Some(watch), None)
    }

    fn exec_ticking(
        &mut self,
        step: &Step,
        tick: &mut dyn FnMut(&Running, &mut dyn Beside) -> Control,
    ) -> Result<Exit> {
        self.exec_beside(step, None, Some(tick))
    }

    fn exec_observed(
        &mut self,
        step: &Step,
        watch: &mut dyn FnMut(&str, &mut dyn Beside) -> Control,
        tick: &mut dyn FnMut(&Running, &mut dyn Beside) -> Control,
        side: &[Step],
    ) -> (Result<Exit>, Vec<Result<Exit>>) {
        if side.is_empty() {
            return (self.exec_beside(step, Some(watch), Some(tick)), Vec::new());
        }
        let places: Vec<Place> = side.iter().map(|s| self.view.place(s)).collect();
        let view = self.view;
        let at = (view.root, self.dir, &view.climb.interrupt);
        let (exit, joined) = std::thread::scope(|sc| {
            let handles = side::spawn_logged(sc, at, side, &places);
            let exit = self.exec_beside(step, Some(watch), Some(tick));
            (exit, handles.into_iter().map(|h| h.join()).collect())
        });
        (exit, self.joined(side, &places, joined))
    }

    fn exec_together(&mut self, steps: &[Step]) -> Vec<Result<Exit>> {
        if steps.len() < 2 {
            return steps.iter().map(|s| self.exec(s)).collect();
        }
        let places: Vec<Place> = steps.iter().map(|s| self.view.place(s)).collect();
        let view = self.view;
        let at = (view.root, self.dir, &view.climb.interrupt);
        let joined = std::thread::scope(|sc| {
            side::spawn_logged(sc, at, steps, &places).into_iter().map(|h| h.join()).collect()
        });
        self.joined(steps, &places, joined)
    }

    fn reading_begins(&mut self, ended: ArmedEnd) {
        if let Some(gate) = self.gate {
            gate.open(policy::pass_beside_reading(ended));
        }
    }

    fn note(&mut self, text: String) {
        self.record.notes.push(text);
    }

    fn say(&self, text: &str) {
        self.bar.note(text);
    }

    fn holds_inputs(&mut self, record: InputsRecord) {
        let text = record.text();
        self.bar.note(&text);
        self.record.notes.push(text);
        self.record.inputs.push(record);
    }
}

/// The note of a run that failed without a CUDA error: its exit and the target's last line
/// (its stderr's, else its stdout's), which usually says why.
fn failed_without_cuda(dir: &Path, exit: Option<Exit>) -> String {
    let quote = last_line(&dir.join(layout::STDERR))
        .or_else(|| last_line(&dir.join(layout::STDOUT)))
        .unwrap_or_else(|| "(it printed nothing)".to_string());
    format!(
        "the target failed without a CUDA error ({}): `{quote}`",
        exit.map(Exit::text).unwrap_or_default()
    )
}

/// `baseline ran (1.2 s), rebuild skipped (0.0 s), ...` for the end of a run.
pub fn rung_line(rungs: &[RungRecord]) -> String {
    rungs
        .iter()
        .map(|r| format!("{} {} ({:.1} s)", r.rung, r.status, r.duration_s))
        .collect::<Vec<_>>()
        .join(", ")
}

//! The climb: asks the [`schedule`](super::schedule) what to consider next, asks the prompter,
//! hands each chosen rung to the executor ([`super::exec`]) as the schedule says ([`How`]:
//! alone, side by side, or the armed run with the pass beside its reading), reads what the
//! rung's files say with `findings`, and repeats until the schedule says stop. It is given its
//! prompter, its progress sink and its interrupt handle as values, so that a test climbs
//! in-process with a scripted prompter and stand-in tools.
//!
//! Rungs that run side by side each run on a thread of their own, sharing a read-only view of
//! the climb, and keep their own folder and record; the pass beside an armed run's reading
//! waits on its thread until the armed run's target ended and the armed run says whether it
//! starts.
//!
//! Must not: parse tool output itself (that is `findings`), print other than through the
//! progress sink, spawn other than through `process`, or leave a process of the target alive.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;

pub use super::climb::{Climb, Climbed, Stopped};
use super::collect::{self, Collected};
use super::exec::{Held, Io, Lines, View};
use super::gate::{Closes, Gate};
use super::policy::{self, Facts, RungOutcome};
use super::recorder;
use super::rung::{self, Ran, Rung, Step};
use super::schedule::{self, Considered, Here, How};
use crate::bundle::inputs::{is_rung_output, last_line, scan_file};
use crate::bundle::{self, layout, Bundle, RungRecord, RungStatus};
use crate::findings::verdict::{decide, decide_in, Analysis};
use crate::findings::Evidence;
use crate::model::{Exit, PromptEnd, Role, RungId};
use crate::process;
use crate::ui::{Choice, Progress, Prompter, RungBar};

impl Climb<'_> {
    /// Climbs into `bundle`: starts the `collect` commands beside the climb, runs the rungs
    /// the policy asks for, and writes the analysis after each. Whatever happens the bundle
    /// keeps what was collected.
    pub fn run(self, mut bundle: Bundle, prompter: &mut dyn Prompter, progress: &dyn Progress) -> Climbed {
        if self.records_launches() {
            if let Err(e) = bundle.write_file(layout::RECORDER_FILE, recorder::SOURCE) {
                return Climbed { analysis: decide(&[]), bundle, outcome: Err(e) };
            }
        }
        let mut jobs = collect::jobs(self.recipe, &self.launchers);
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
    /// The files its run read to decide ([`RungIo::scan`](super::rung::RungIo::scan)), by
    /// path: their evidence is taken as read, not read again.
    read: BTreeMap<PathBuf, Evidence>,
}

/// Runs planned rung `p` on a thread of its own beside others: its remarks held for its
/// record's lines ([`Held`]), a panic its error, its end time set.
fn run_on_thread(view: &View<'_, '_>, p: &mut Planned, pass: bool) -> (Result<Ran>, Vec<String>) {
    let held = Held::default();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut io = Io::new(view, &p.dir, &mut p.record, &held).passing(pass);
        let result = p.rung.run(&mut io, &p.steps);
        p.read = io.into_read();
        result
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
            let (req, plan) = (self.climb.request, self.climb.plan);
            let here = Here { side_by_side: self.side_by_side_here(), unattended: !prompter.asks() };
            let asked =
                match schedule::considered(req, plan, &self.counted(), &self.analysis, self.facts, here) {
                    Considered::Stop(why) => return Ok(Stopped::Done(why)),
                    Considered::Ask(ids) => ids,
                };
            let mut chosen = Vec::new();
            for id in asked {
                match self.ask(prompter, id)? {
                    Asked::Run => chosen.push(id),
                    Asked::Skipped => {}
                    Asked::Stop(s) => return Ok(s),
                }
            }
            let stop = match schedule::how(req, plan, &self.counted(), &chosen, here) {
                None => None,
                Some(How::SideBySide(ids)) => self.side_by_side(&ids, &mut index, total, progress)?,
                Some(How::Alone(id)) => {
                    index += 1;
                    let p = self.plan_rung(id, index)?;
                    let bar = progress.rung(p.index, total, p.id.name(), &self.describe(&p));
                    let (p, result) = self.execute(p, bar.as_ref());
                    self.finish(p, result, bar.as_ref(), progress, false)?
                }
                Some(How::WithPass { armed, pass }) => {
                    self.with_pass((armed, pass), &mut index, total, progress)?
                }
            };
            if let Some(stop) = stop {
                return Ok(stop);
            }
        }
    }

    /// What the bar says planned rung `p` does.
    fn describe(&self, p: &Planned) -> String {
        p.rung.describe_in(self.climb.recipe, self.climb.debug)
    }

    /// Runs rungs `ids` side by side ([`How::SideBySide`]) as the climb's next rungs after
    /// `index`, under one bar; each one's record is then finished in turn, with its remarks.
    fn side_by_side(
        &mut self,
        ids: &[RungId],
        index: &mut usize,
        total: usize,
        progress: &dyn Progress,
    ) -> Result<Option<Stopped>> {
        let mut planned = Vec::new();
        for &id in ids {
            *index += 1;
            planned.push(self.plan_rung(id, *index)?);
        }
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
                return Ok(Some(stop));
            }
        }
        Ok(None)
    }

    /// Runs the armed run and the pass that may start beside its reading ([`How::WithPass`])
    /// as the climb's next rungs after `index` (the pass's number only if it ran).
    fn with_pass(
        &mut self,
        (armed, pass): (RungId, RungId),
        index: &mut usize,
        total: usize,
        progress: &dyn Progress,
    ) -> Result<Option<Stopped>> {
        *index += 1;
        let p = self.plan_rung(armed, *index)?;
        let bar = progress.rung(p.index, total, p.id.name(), &self.describe(&p));
        let pass = self.plan_rung(pass, *index + 1)?;
        let (armed, pass) = self.execute_with_pass(p, pass, bar.as_ref(), progress);
        let armed = armed?;
        // The pass's record is kept even when the armed run's end stops the climb (Ctrl-C).
        let passed = match pass {
            Pass::Ran(pass, result, notes) => {
                *index += 1;
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
        Ok(armed.or(passed))
    }

    /// The rungs done as the policy counts them: a run that failed beside others does not
    /// count until the same rung has run alone ([`policy::again_alone`]).
    fn counted(&self) -> Vec<(RungId, RungOutcome)> {
        self.done.iter().enumerate().filter(|(i, _)| !self.hidden.contains(i)).map(|(_, d)| *d).collect()
    }

    /// Whether the sweep's runs may go side by side here: on the host (a container or a job
    /// step each is the runtime's or Slurm's to place), and never for `watch`.
    fn side_by_side_here(&self) -> bool {
        !self.climb.launchers.in_container() && !self.climb.ranked() && !self.climb.request.watch
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
        Ok(Planned {
            id,
            rung,
            index,
            dir,
            steps,
            record,
            started: Instant::now(),
            ended: None,
            read: BTreeMap::new(),
        })
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
                let mut io = Io::new(view, &p.dir, &mut p.record, bar).gated(gate);
                let result = p.rung.run(&mut io, &p.steps);
                p.read = io.into_read();
                result
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

    /// What the rungs about to run see of the climb.
    fn view(&self) -> View<'_, '_> {
        View::new(self.climb, self.bundle.root(), &self.analysis, self.started)
    }

    /// Runs one planned rung, its progress on `bar`.
    fn execute(&mut self, mut p: Planned, bar: &dyn RungBar) -> (Planned, Result<Ran>) {
        p.started = Instant::now();
        let view = self.view();
        let result = {
            let mut io = Io::new(&view, &p.dir, &mut p.record, bar);
            let result = p.rung.run(&mut io, &p.steps);
            p.read = io.into_read();
            result
        };
        let (started, found) = view.into_parts();
        self.started = started;
        self.bundle.note_redactions(found);
        (p, result)
    }

    /// Runs the planned rungs at once, each on its own thread (their processes go through
    /// `process` as every run's do), each rung's remarks kept for its record's lines.
    fn execute_beside(&mut self, planned: Vec<Planned>) -> Vec<(Planned, Result<Ran>, Vec<String>)> {
        let view = self.view();
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
        let Planned { id, rung, dir, mut record, started, ended, mut read, .. } = p;
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
            let path = self.bundle.root().join(&f.path);
            // A file the rung read to decide is not read again.
            if let Ok(ev) = read.remove(&path).map(Ok).unwrap_or_else(|| scan_file(&path)) {
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
        let launchers = &self.climb.launchers;
        if let Some(bundles) = self.bundle.root().parent() {
            launchers.give_back(dir, bundles);
        }
        if record.commands.iter().any(|c| c.role == Role::Build) {
            if let Some(b) = &self.climb.recipe.build {
                if let Some(tree) = b.cwd.as_deref().or(launchers.workdir()) {
                    launchers.give_back(tree, tree);
                }
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

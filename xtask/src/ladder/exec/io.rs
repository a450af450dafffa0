//! The executor: runs what a rung gives it ([`Run`], a run described as data) into the
//! bundle, at the place the launchers say ([`View::place`]), and records each step's command,
//! exit and notes into the rung's record. It is the [`RungIo`] a rung runs through; the climb
//! (what runs next, the prompts, the record's end) is the driver's.
//!
//! Must not: decide what runs (that is the rung and the `policy`), parse tool output itself
//! (`findings` reads the file a rung asks about, once), print
//! other than through the rung's bar, or spawn other than through `process`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Result;

use super::side::{self, outcome_notes, Logged, Side};
use crate::bundle::inputs::scan_file;
use crate::bundle::{layout, CommandRecord, InputsRecord, RungRecord};
use crate::findings::coredump::sm_progress;
use crate::findings::verdict::Analysis;
use crate::findings::Evidence;
use crate::ladder::climb::Climb;
use crate::ladder::gate::Gate;
use crate::ladder::policy;
use crate::ladder::run::{place_for, run_logged_watched};
use crate::ladder::rung::{ArmedEnd, Exits, OnLine, OnTick, Run, RungIo, Step};
use crate::launch::Place;
use crate::model::{Exit, Role, RungId};
use crate::process::{self, Control, Running, Stream};
use crate::recipe::Resolved;
use crate::redact::Redaction;
use crate::ui::{Progress, RungBar};

/// What the rungs see of the climb while they run, shared by rungs that run side by side:
/// what they only read, and what they add to (the containers' count, the redactions found),
/// which goes back into the state once they end ([`View::into_parts`]).
pub(crate) struct View<'v, 'a> {
    climb: &'v Climb<'a>,
    root: &'v Path,
    analysis: &'v Analysis,
    started: Mutex<usize>,
    found: Mutex<Vec<Redaction>>,
}

impl<'v, 'a> View<'v, 'a> {
    /// A view of `climb` writing under `root`, the verdict so far `analysis`, `started`
    /// containers so far.
    pub(crate) fn new(
        climb: &'v Climb<'a>,
        root: &'v Path,
        analysis: &'v Analysis,
        started: usize,
    ) -> View<'v, 'a> {
        View { climb, root, analysis, started: Mutex::new(started), found: Mutex::new(Vec::new()) }
    }

    /// The containers started so far and the redactions found.
    pub(crate) fn into_parts(self) -> (usize, Vec<Redaction>) {
        let started = self.started.into_inner().unwrap_or_else(|e| e.into_inner());
        (started, self.found.into_inner().unwrap_or_else(|e| e.into_inner()))
    }

    fn note_redactions(&self, found: Vec<Redaction>) {
        self.found.lock().unwrap_or_else(|e| e.into_inner()).extend(found);
    }

    /// Where the next process of `step` runs: where the climb's launchers place it (on the
    /// host without any), numbered and named as the plan names it.
    fn place(&self, step: &Step) -> Place {
        let mut started = self.started.lock().unwrap_or_else(|e| e.into_inner());
        place_for(&self.climb.launchers, &mut started, step, &Place::HOST)
    }
}

/// A rung's view of the climb while it runs.
pub(crate) struct Io<'s, 'v, 'a> {
    view: &'s View<'v, 'a>,
    dir: &'s Path,
    record: &'s mut RungRecord,
    bar: &'s dyn RungBar,
    /// The armed run's word to the pass beside its reading, when one waits.
    gate: Option<&'s Gate>,
    /// This run is the pass beside an armed run's reading ([`RungIo::pass`]).
    pass: bool,
    /// The files the rung read to decide ([`RungIo::scan`]), by path, for the driver.
    read: BTreeMap<PathBuf, Evidence>,
}

impl<'s, 'v, 'a> Io<'s, 'v, 'a> {
    /// The executor of one rung's run: `view` of the climb, the rung's folder `dir`, its
    /// `record`, its progress on `bar`.
    pub(crate) fn new(
        view: &'s View<'v, 'a>,
        dir: &'s Path,
        record: &'s mut RungRecord,
        bar: &'s dyn RungBar,
    ) -> Io<'s, 'v, 'a> {
        Io { view, dir, record, bar, gate: None, pass: false, read: BTreeMap::new() }
    }

    /// The files the rung read ([`RungIo::scan`]), so that the driver does not read them again.
    pub(crate) fn into_read(self) -> BTreeMap<PathBuf, Evidence> {
        self.read
    }

    /// The armed run whose end opens `gate` for the pass beside its reading.
    pub(crate) fn gated(self, gate: &'s Gate) -> Io<'s, 'v, 'a> {
        Io { gate: Some(gate), ..self }
    }

    /// The pass beside an armed run's reading ([`RungIo::pass`]) when `pass`.
    pub(crate) fn passing(self, pass: bool) -> Io<'s, 'v, 'a> {
        Io { pass, ..self }
    }
}

/// The bar of a rung that runs beside others: the one bar of them all shows their progress,
/// so each one's remarks are held for the lines that follow it ([`Lines`]).
#[derive(Default)]
pub(crate) struct Held {
    pub(crate) notes: std::cell::RefCell<Vec<String>>,
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
pub(crate) struct Lines<'p> {
    pub(crate) progress: &'p dyn Progress,
    pub(crate) id: RungId,
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
            (&self.view.climb.interrupt, step.role == Role::Target && self.bar.passes_through()),
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

impl Io<'_, '_, '_> {
    /// Runs `step` with a runner for steps beside it (a [`Side`]): its lines to the bar when
    /// it is the target's or the build's, `watch` at each line, `tick` at each tick; what the
    /// steps beside recorded joins the rung's record.
    fn observed(
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
            read: Vec::new(),
        });
        let bar = self.bar;
        let shows = shows_lines(step.role);
        let result = self.run_at(
            step,
            &place,
            &mut |_, line| {
                if shows {
                    to_bar(bar, line);
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
        self.read.extend(beside.read);
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
        self.view.climb.launchers.in_container()
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

    fn execute(&mut self, run: Run<'_, '_>) -> Exits {
        let Run { step, watch, tick, with } = run;
        // The steps beside are placed first, as they start first.
        let places: Vec<Place> = with.iter().map(|s| self.view.place(s)).collect();
        let view = self.view;
        let at = (view.root, self.dir, &view.climb.interrupt);
        let (exit, joined) = std::thread::scope(|sc| {
            let handles = side::spawn_logged(sc, at, with, &places);
            let exit = step.map(|step| self.observed(step, watch, tick));
            (exit, handles.into_iter().map(|h| h.join()).collect())
        });
        Exits { exit, with: self.joined(with, &places, joined) }
    }

    fn reading_begins(&mut self, ended: ArmedEnd) {
        if let Some(gate) = self.gate {
            gate.open(policy::pass_beside_reading(ended));
        }
    }

    fn scan(&mut self, path: &Path) -> Result<Evidence> {
        let ev = scan_file(path)?;
        self.read.insert(path.to_path_buf(), ev.clone());
        Ok(ev)
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

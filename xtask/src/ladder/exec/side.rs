//! Steps run beside the target: from inside its line or tick callback, one at a time
//! ([`Side`], the [`Beside`] runner the hang's evidence and `watch` use), or each on a thread
//! of its own while the target or another step runs ([`spawn_logged`]: the disassembly beside
//! the armed run, the readings of several dumps). Each step's command record and log land in
//! the rung's folder like any step's.
//!
//! Must not: print other than through the rung's bar, spawn other than through
//! [`run_logged`] (the process layer), or join the rung's record itself: the driver merges
//! what they return.

use std::path::{Path, PathBuf};
use std::thread::{Scope, ScopedJoinHandle};

use anyhow::Result;

use crate::bundle::inputs::scan_file;
use crate::bundle::{layout, CommandRecord};
use crate::findings::Evidence;
use crate::ladder::run::run_logged;
use crate::ladder::rung::{Beside, Step};
use crate::launch::Place;
use crate::model::Exit;
use crate::process::{self, Control, Interrupt, Stream};
use crate::redact::Redaction;
use crate::ui::RungBar;

/// What one step run on a thread of its own left: its record and outcome, and the redactions
/// its log needed.
pub(super) type Logged = (Result<(CommandRecord, Result<process::Outcome>)>, Vec<Redaction>);

/// Starts each of `steps` (at its place, `places[i]`) on a thread of `sc`, logged into `dir`
/// under `root`; each ends at its timeout or on `interrupt`. Join them for each one's
/// [`Logged`].
pub(super) fn spawn_logged<'sc, 'e>(
    sc: &'sc Scope<'sc, 'e>,
    (root, dir, interrupt): (&'e Path, &'e Path, &'e Interrupt),
    steps: &'e [Step],
    places: &'e [Place],
) -> Vec<ScopedJoinHandle<'sc, Logged>> {
    steps
        .iter()
        .zip(places)
        .map(|(step, place)| {
            sc.spawn(move || {
                let mut found = Vec::new();
                let none = &mut |_: Stream, _: &str| Control::Continue;
                let logs = layout::logs(dir, &step.stem);
                let r = run_logged(
                    root,
                    step.role,
                    &step.inv,
                    place,
                    logs,
                    Some(dir),
                    &mut found,
                    interrupt,
                    none,
                );
                (r, found)
            })
        })
        .collect()
}

/// Runs steps beside the target from inside its line callback: records kept apart, merged
/// into the rung's when the target's run returns.
pub(super) struct Side<'b> {
    pub root: PathBuf,
    pub dir: PathBuf,
    pub place: Place,
    pub interrupt: Interrupt,
    pub bar: &'b dyn RungBar,
    pub records: Vec<CommandRecord>,
    pub found: Vec<Redaction>,
    /// [`outcome_notes`] of the steps run.
    pub notes: Vec<String>,
    /// The files read ([`Beside::scan`]), for the rung's record of what was read.
    pub read: Vec<(PathBuf, Evidence)>,
}

impl Beside for Side<'_> {
    fn exec(&mut self, step: &Step) -> Result<()> {
        let (rec, result) = run_logged(
            &self.root,
            step.role,
            &step.inv,
            &self.place,
            layout::logs(&self.dir, &step.stem),
            Some(&self.dir),
            &mut self.found,
            &self.interrupt,
            &mut |_, _| Control::Continue,
        )?;
        self.records.push(rec);
        self.notes.extend(outcome_notes(step, &result?));
        Ok(())
    }

    fn log(&self, step: &Step) -> PathBuf {
        layout::logs(&self.dir, &step.stem).0
    }

    fn scan(&mut self, path: &Path) -> Result<Evidence> {
        let ev = scan_file(path)?;
        self.read.push((path.to_path_buf(), ev.clone()));
        Ok(ev)
    }

    fn say(&self, text: &str) {
        self.bar.note(text);
    }

    fn interrupted(&self) -> bool {
        self.interrupt.is_set()
    }

    fn on_node(&mut self, node: &str) {
        self.place = self.place.on_node(node);
    }

    fn gpu_busy(&self) -> Option<bool> {
        let out = process::short::run(
            std::path::Path::new("nvidia-smi"),
            &["--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"],
            std::time::Duration::from_secs(10),
        );
        if !out.success() {
            return None;
        }
        let loads: Vec<u32> = out.stdout.lines().filter_map(|l| l.trim().parse().ok()).collect();
        (!loads.is_empty()).then(|| loads.iter().any(|&l| l > 0))
    }
}

/// What a rung's record says of one step's run beyond its exit: a timeout, a log cut.
pub(super) fn outcome_notes(step: &Step, o: &process::Outcome) -> Vec<String> {
    let timeout = (o.exit == Exit::TimedOut).then(|| {
        format!(
            "{} timed out after {} s and was killed with every process it started",
            step.role,
            step.inv.timeout.map(|t| t.as_secs()).unwrap_or(0)
        )
    });
    timeout.into_iter().chain(o.notes().into_iter().map(|n| format!("{}: {n}", step.role))).collect()
}

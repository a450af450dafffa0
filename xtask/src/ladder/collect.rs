//! The `collect` commands: the recipe's own (`vllm collect-env`) and the environment snapshot
//! (`git describe` in the target's source tree, `pip freeze`, PyTorch's `collect_env`), run one
//! after the other in the background beside the climb into `env/NAME`. None of it is
//! needed to find the fault: a failure is a note.
//!
//! Must not: stop the ladder (a failure is noted), or run beside a later rung (the driver
//! joins them after the baseline).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};

use super::run::run_logged;
use super::rung::from_step;
use crate::bundle::{layout, CommandRecord};
use crate::launch::stack::Want;
use crate::launch::{Access, Launchers, Place};
use crate::model::{Exit, Invocation, Role};
use crate::process::{Control, Interrupt};
use crate::recipe::{Collect, Resolved};
use crate::redact::Redaction;

/// A `collect:` command (`vllm collect-env`), run once before the baseline: in the run
/// step's directory and environment, so that it sees the target's Python and packages,
/// with its own short time limit.
pub fn invocation(r: &Resolved, c: &Collect) -> Invocation {
    let mut inv = from_step(&r.run);
    inv.argv = c.argv.clone();
    inv.timeout = Some(c.timeout);
    inv
}

/// The snapshot's file that is always made on the host, also when the rungs run in a
/// container: `git describe` of the host's checkout.
pub const SNAPSHOT_ON_HOST: &str = layout::GIT_DESCRIBE;

/// The target's source tree, where `git describe` runs: the build step's folder (the tree
/// that is built: `{vllm_src}`), else the run step's, else the folder the tool was started
/// in (`{cwd}`, after `-C DIR`). Never the tool's own checkout, unless the target is there.
pub fn source_dir(r: &Resolved) -> Option<PathBuf> {
    r.build
        .as_ref()
        .and_then(|b| b.cwd.clone())
        .or_else(|| r.run.cwd.clone())
        .or_else(|| r.vars.get("cwd").map(PathBuf::from))
}

/// The environment snapshot taken before the baseline, besides the recipe's own `collect`
/// commands: `git describe --always --dirty` of the target's source ([`source_dir`]),
/// and for Python targets `pip freeze` and PyTorch's `collect_env` (unless the recipe already
/// collects a `collect-env`), with the target's Python.
pub fn snapshot(r: &Resolved) -> Vec<Collect> {
    let mut out = vec![Collect {
        name: SNAPSHOT_ON_HOST.into(),
        argv: ["git", "describe", "--always", "--dirty", "--tags"].map(String::from).to_vec(),
        timeout: Duration::from_secs(20),
    }];
    if r.python {
        let python = r.vars.get("python").cloned().unwrap_or_else(|| {
            let first = r.run.program();
            let base = first.rsplit('/').next().unwrap_or(first);
            if base.starts_with("python") {
                first.to_string()
            } else {
                "python3".to_string()
            }
        });
        out.push(Collect {
            name: "pip-freeze.txt".into(),
            argv: vec![python.clone(), "-m".into(), "pip".into(), "freeze".into()],
            timeout: Duration::from_secs(60),
        });
        if !r.collect.iter().any(|c| c.name.contains("collect-env")) {
            out.push(Collect {
                name: "torch-collect-env.txt".into(),
                argv: vec![python, "-m".into(), "torch.utils.collect_env".into()],
                timeout: Duration::from_secs(120),
            });
        }
    }
    out.retain(|c| !r.collect.iter().any(|own| own.name == c.name));
    out
}

/// One `collect` command to run into `env/NAME`.
#[derive(Debug, Clone)]
pub struct Job {
    pub name: String,
    pub inv: Invocation,
    pub place: Place,
    /// The snapshot's: a failure (no git checkout, no pip) shows only in its record and file.
    pub quiet: bool,
}

/// What one `collect` command left for the manifest.
pub struct Collected {
    pub record: CommandRecord,
    pub found: Vec<Redaction>,
    pub note: Option<String>,
    pub quiet: bool,
}

/// The recipe's `collect` commands, then the environment snapshot ([`snapshot`],
/// quiet), as jobs in the order they run, where the launchers place them (numbered in their
/// own order: in the image when there is one; a launcher of ranks leaves them here), except
/// `git describe`: the source is the host's checkout, and it runs in [`source_dir`].
pub fn jobs(r: &Resolved, launchers: &Launchers) -> Vec<Job> {
    let job = |i: usize, c: &Collect, quiet: bool| {
        let place = if c.name == SNAPSHOT_ON_HOST {
            Place::HOST
        } else {
            let what = format!("collect-{}", c.name);
            launchers.place_numbered(&Want { role: Role::Collect, access: Access::Plain, what: &what }, i)
        };
        let mut inv = invocation(r, c);
        if c.name == SNAPSHOT_ON_HOST {
            inv.cwd = source_dir(r).or(inv.cwd);
        }
        Job { name: c.name.clone(), inv, place, quiet }
    };
    let snapshot = snapshot(r);
    let all = r.collect.iter().map(|c| (c, false)).chain(snapshot.iter().map(|c| (c, true)));
    all.enumerate().map(|(i, (c, quiet))| job(i, c, quiet)).collect()
}

/// A job as the terminal shows it: its place and argv, redacted, without the environment it
/// runs in (the run step's, which may hold secrets under names no rule knows; the bundle's
/// `command.txt` records it redacted), and how many variables that is.
pub fn shown(job: &Job) -> String {
    let mut bare = job.inv.clone();
    let vars = bare.env_set.len();
    bare.env_set.clear();
    bare.env_remove.clear();
    let line = crate::redact::invocation(&job.place.wrap(&bare), "terminal", &mut Vec::new()).shell_line();
    match vars {
        0 => line,
        n => format!("{line} ({n} variable{} set, not shown)", if n == 1 { "" } else { "s" }),
    }
}

/// Runs one `collect` job into `root/env/NAME` (both streams). A command that is missing,
/// fails or times out gives a note; none of it is needed to find the fault.
fn run(root: &Path, job: &Job, interrupt: &Interrupt) -> Result<Collected> {
    let rel = layout::env_file(&job.name);
    let log = root.join(&rel);
    let mut found = Vec::new();
    let (record, result) = run_logged(
        root,
        Role::Collect,
        &job.inv,
        &job.place,
        (log.clone(), log),
        None,
        &mut found,
        interrupt,
        &mut |_, _| Control::Continue,
    )?;
    let cmd = &record.command;
    let mut notes = Vec::new();
    match result {
        Ok(o) => {
            notes.extend(match o.exit {
                Exit::Code(0) => None,
                Exit::Interrupted => Some(format!("`{cmd}` (for {rel}) was interrupted")),
                Exit::TimedOut => Some(format!(
                    "`{cmd}` (for {rel}) timed out after {} s and was killed with every process it started; \
                     what it printed is kept",
                    job.inv.timeout.map(|t| t.as_secs()).unwrap_or(0)
                )),
                other => Some(format!(
                    "`{cmd}` (for {rel}) ended with {}; what it printed is kept, and the ladder goes on",
                    other.text()
                )),
            });
            notes.extend(o.notes().into_iter().map(|n| format!("`{cmd}` (for {rel}): {n}")));
        }
        Err(e) => notes.push(format!(
            "`{cmd}` (for {rel}) could not run: {e:#}; not needed for the ladder, which goes on"
        )),
    }
    let note = (!notes.is_empty()).then(|| notes.join("; "));
    Ok(Collected { record, found, note, quiet: job.quiet })
}

/// The recipe's `collect` commands, then the snapshot, one after the other in the background
/// as the ladder starts: `collect_env` alone takes seconds (`vllm collect-env` more), and
/// nothing of the ladder needs them; the climb takes their results after the baseline
/// (the driver joins them), so the later rungs run alone.
pub fn start(
    jobs: Vec<Job>,
    root: PathBuf,
    interrupt: Interrupt,
) -> Result<std::thread::JoinHandle<Vec<Result<Collected>>>> {
    std::thread::Builder::new()
        .name("snapshot".into())
        .spawn(move || {
            jobs.iter().take_while(|_| !interrupt.is_set()).map(|j| run(&root, j, &interrupt)).collect()
        })
        .context("cannot start the `collect` commands")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The terminal line of a collect command holds neither its environment nor a secret of its
    /// argv: a password under a name no rule knows, set for the run step, is not shown.
    #[test]
    fn a_collect_line_shows_no_environment() {
        let mut inv = Invocation::new(vec!["sh".into(), "-c".into(), "cat x".into()]);
        inv.set("ZZ_PLAIN_SETTING", "Wq7uHnB3kLp2Xr9d");
        inv.set("HF_TOKEN", "Jd8sKq2mNw4pLx7z");
        inv.remove("LD_PRELOAD");
        let job = Job { name: "x.txt".into(), inv, place: Place::HOST, quiet: false };
        let line = shown(&job);
        assert!(!line.contains("Wq7uHnB3kLp2Xr9d") && !line.contains("Jd8sKq2mNw4pLx7z"), "{line}");
        assert!(!line.contains("ZZ_PLAIN_SETTING") && !line.contains("LD_PRELOAD"), "{line}");
        assert!(line.starts_with("sh -c 'cat x'") && line.contains("2 variables set"), "{line}");
    }
}

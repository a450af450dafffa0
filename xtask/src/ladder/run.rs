//! How one step's process runs for the bundle, the same for the rungs, the `collect`
//! commands and (for its place) the plan: where it runs ([`place_for`]), its command
//! recorded redacted, its logs, its record.
//!
//! Must not: decide what runs or print.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::rung::{At, Step};
use crate::bundle::{self, layout, CommandRecord};
use crate::launch::container::Containers;
use crate::launch::slurm::Slurm;
use crate::launch::Place;
use crate::model::{Invocation, Role};
use crate::process::{self, Control, Interrupt, Spec, Stream};
use crate::redact::Redaction;

/// Where a step runs, with the run's containers: a new container named after its logs (or
/// its role), numbered by `started`; beside the target, inside the target's. Through Slurm,
/// the target's run is a job step of the allocation (named as its container would be) wrapping
/// that place, and what runs beside it runs on the waiting task's node; the other steps (a
/// build, cuda-gdb on a dump, cuobjdump) stay where the bundle is (a shared filesystem).
pub fn place_for(
    containers: Option<&Containers>,
    slurm: Option<&Slurm>,
    started: &mut usize,
    step: &Step,
    target: &Place,
) -> Place {
    let what = if step.stem.is_empty() { step.role.name() } else { step.stem.as_str() };
    let inner = match (containers, step.at) {
        (None, _) => Place::Host,
        (Some(_), At::BesideTarget) => return target.beside(),
        (Some(c), At::New(access)) => {
            *started += 1;
            Place::New(c.clone(), c.name(*started, what), access)
        }
    };
    match (slurm, step.at) {
        (Some(_), At::BesideTarget) => target.beside(),
        (Some(s), At::New(access)) if step.role == Role::Target => {
            if containers.is_none() {
                *started += 1;
            }
            Place::Slurm(s.clone(), s.step_name(*started, what), access, Box::new(inner))
        }
        _ => inner,
    }
}

/// What `process` runs for an invocation, with its two logs (the same path for both streams
/// puts them in one file).
fn to_spec(inv: &Invocation, (stdout_log, stderr_log): (PathBuf, PathBuf), interrupt: &Interrupt) -> Spec {
    Spec {
        program: inv.argv[0].clone().into(),
        args: inv.argv[1..].iter().map(Into::into).collect(),
        cwd: inv.cwd.clone(),
        env_set: inv.env_set.clone(),
        env_remove: inv.env_remove.clone(),
        stdout_log,
        stderr_log,
        timeout: inv.timeout,
        redact: true,
        interrupt: interrupt.clone(),
    }
}

/// Runs one process for the bundle with everything recorded redacted: its command (in
/// `command_dir` when given: `command.txt` for the target, `<stem>.command.txt` for a tool),
/// its logs (redacted as `process` writes them) and its [`CommandRecord`]; the redactions
/// found are added to `found`. In a container, the command recorded is the runtime's. The
/// outer error is the bundle's (a file it could not write), the inner one the process's.
#[allow(clippy::too_many_arguments)]
pub fn run_logged(
    root: &Path,
    role: Role,
    inv: &Invocation,
    place: &Place,
    logs: (PathBuf, PathBuf),
    command_dir: Option<&Path>,
    found: &mut Vec<Redaction>,
    interrupt: &Interrupt,
    on_line: &mut dyn FnMut(Stream, &str) -> Control,
) -> Result<(CommandRecord, Result<process::Outcome>)> {
    run_logged_watched(root, role, inv, place, logs, command_dir, found, interrupt, on_line, &mut |_| {
        Control::Continue
    })
}

/// [`run_logged`] with a tick while the process runs ([`process::run_watched`]).
#[allow(clippy::too_many_arguments)]
pub fn run_logged_watched(
    root: &Path,
    role: Role,
    inv: &Invocation,
    place: &Place,
    logs: (PathBuf, PathBuf),
    command_dir: Option<&Path>,
    found: &mut Vec<Redaction>,
    interrupt: &Interrupt,
    on_line: &mut dyn FnMut(Stream, &str) -> Control,
    on_tick: &mut dyn FnMut(&process::Running) -> Control,
) -> Result<(CommandRecord, Result<process::Outcome>)> {
    let inv = &place.wrap(inv);
    let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
    let (out_rel, err_rel) = (rel(&logs.0), rel(&logs.1));
    let command_file = command_dir.map(|d| layout::command_file(d, &logs.0));
    let at = match &command_file {
        Some(f) => rel(f),
        None => format!("{out_rel} (command)"),
    };
    let shown = crate::redact::invocation(inv, &at, found);
    let mut rec = CommandRecord::new(role, &shown, &out_rel, &err_rel);
    if let Some(f) = &command_file {
        std::fs::write(f, shown.shell_line() + "\n")
            .with_context(|| format!("cannot write `{}`", f.display()))?;
    }
    let result = process::run_watched(&to_spec(inv, logs, interrupt), on_line, on_tick);
    place.clean_up();
    if let Ok(o) = &result {
        rec.exit = Some(o.exit);
        rec.duration_s = o.duration.as_secs_f64();
        found.extend(bundle::log_redactions(&o.redacted, &out_rel, &err_rel));
    }
    Ok((rec, result))
}

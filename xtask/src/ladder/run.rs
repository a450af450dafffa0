//! How one step's process runs for the bundle, the same for the rungs, the `collect`
//! commands and (for its place) the plan: where it runs ([`place_for`]), its command
//! recorded redacted, its logs, its record.
//!
//! Must not: decide what runs or print.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::rung::{At, Step};
use crate::bundle::{self, layout, CommandRecord};
use crate::launch::stack::Want;
use crate::launch::{Launchers, Place};
use crate::model::{Invocation, Role};
use crate::process::{self, Control, Interrupt, Spec, Stream};
use crate::redact::Redaction;

/// Where a step runs: a new process placed by the run's launchers in turn (each numbered from
/// `started` where one names it: a container named after its logs or its role, a Slurm job
/// step named as its container would be), or, beside the target, where the target's place
/// says ([`Place::beside`]: inside its container, on the waiting task's node or host).
pub fn place_for(launchers: &Launchers, started: &mut usize, step: &Step, target: &Place) -> Place {
    let what = if step.stem.is_empty() { step.role.name() } else { step.stem.as_str() };
    let want = match step.at {
        At::New(access) => Some(Want { role: step.role, access, what }),
        At::BesideTarget => None,
    };
    launchers.place(want.as_ref(), started, target)
}

/// What `process` runs for an invocation, with its two logs (the same path for both streams
/// puts them in one file).
fn to_spec(
    inv: &Invocation,
    (stdout_log, stderr_log): (PathBuf, PathBuf),
    interrupt: &Interrupt,
    pass_through: bool,
) -> Spec {
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
        pass_through,
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
    let passes = false;
    run_logged_watched(
        root,
        role,
        inv,
        place,
        logs,
        command_dir,
        found,
        (interrupt, passes),
        on_line,
        &mut |_| Control::Continue,
    )
}

/// [`run_logged`] with a tick while the process runs ([`process::run_watched`]); with
/// `passes` (`watch`'s job), its output and input pass through ([`Spec::pass_through`]).
#[allow(clippy::too_many_arguments)]
pub fn run_logged_watched(
    root: &Path,
    role: Role,
    inv: &Invocation,
    place: &Place,
    logs: (PathBuf, PathBuf),
    command_dir: Option<&Path>,
    found: &mut Vec<Redaction>,
    (interrupt, passes): (&Interrupt, bool),
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
    let result = process::run_watched(&to_spec(inv, logs, interrupt, passes), on_line, on_tick);
    place.clean_up();
    if let Ok(o) = &result {
        rec.exit = Some(o.exit);
        rec.duration_s = o.duration.as_secs_f64();
        found.extend(bundle::log_redactions(&o.redacted, &out_rel, &err_rel));
    }
    Ok((rec, result))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::slurm::{Pyxis, Slurm};

    /// Through Slurm with an image through pyxis, the build runs in the image on every node (a
    /// step of one task a node, in the climb's one container) and the target as a step of every
    /// task; cuobjdump stays on the batch host. Without pyxis, the build stays there too.
    #[test]
    fn with_pyxis_the_build_runs_in_the_image_on_every_node() {
        let env = |k: &str| match k {
            "SLURM_JOB_ID" => Some("42".to_string()),
            "SLURM_JOB_NUM_NODES" => Some("2".to_string()),
            _ => None,
        };
        let mut s = Slurm::from_env(&env, "debug-ima-b-7").unwrap();
        let step = |role| Step::new(role, Invocation::new(vec!["pip".into(), "install".into()]), "build");
        let mut started = 0;
        let place = |s: &Slurm, started: &mut usize, role| {
            place_for(&Launchers::default().with(Some(s.clone())), started, &step(role), &Place::HOST)
                .wrap(&step(role).inv)
                .argv
                .join(" ")
        };
        assert_eq!(place(&s, &mut started, Role::Build), "pip install", "no pyxis: on the batch host");
        s.pyxis = Some(Pyxis { image: "img".into(), mounts: vec![], workdir: "/w".into() });
        let build = place(&s, &mut started, Role::Build);
        assert!(build.starts_with("srun --label --kill-on-bad-exit=1 --job-name=debug-ima-b-7-01-build --ntasks-per-node=1 --nodes=2 "), "{build}");
        assert!(
            build.ends_with(
                " --container-image=img --container-workdir=/w --container-name=debug-ima-b-7 -- pip install"
            ),
            "{build}"
        );
        let target = place(&s, &mut started, Role::Target);
        assert!(target.contains("--container-name=debug-ima-b-7 -- sh -c"), "the same container: {target}");
        assert_eq!(place(&s, &mut started, Role::Cuobjdump), "pip install");
    }
}

//! `debug-ima watch [--recipe R] [--hang-after SECS] -- CMD ARGS...`: runs a long job (a
//! server, a training run) once, armed but at full speed, for as long as it runs. Its output
//! passes through byte for byte as it is printed, it reads the tool's stdin, and its exit
//! status is the command's. A device fault in it
//! (its dumps read after it ends) or a hang (silence while a GPU is busy for `--hang-after`,
//! or PyTorch's NCCL watchdog timeout line) gets a bundle with the verdict from that one
//! occurrence; a job that ends without either leaves no bundle. The tool's own lines go to
//! stderr, prefixed `debug-ima:`.
//!
//! Must not: rerun the job, make it launch-blocking, change its output, or print other than
//! through `ui`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};

use super::Outcome;
use crate::bundle::{layout, Bundle, RungStatus};
use crate::doctor;
use crate::findings::render::render_text;
use crate::ladder::driver::{Climb, Stopped};
use crate::ladder::policy::Request;
use crate::ladder::rung::Debug;
use crate::model::{Exit, Role, RungId, Usage};
use crate::process::Interrupt;
use crate::recipe::{self, ContainerConfig, Resolved, Step};
use crate::ui;

/// The options of `watch`.
#[derive(Debug, Clone, clap::Args)]
pub struct WatchArgs {
    /// The recipe whose run (its environment, its folder) the job is; the command after `--`,
    /// when given, replaces the recipe's run command.
    #[command(flatten)]
    pub recipe: super::args::RecipeArgs,
    /// Counts the job as hung when it has printed nothing for SECS seconds while a GPU is
    /// busy; without it only PyTorch's NCCL watchdog timeout counts as a hang.
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=2_592_000))]
    pub hang_after: Option<u64>,
    /// Where the bundle goes (default: `bundles/` in the current directory).
    #[arg(long, value_name = "DIR")]
    pub bundle_dir: Option<PathBuf>,
    /// No prompts (watch asks none; accepted as `debug-ima run` accepts it).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// The job and its arguments, after `--`.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// The job as a recipe's run: the recipe's (its command replaced by `CMD` when given), or
/// one made of `CMD` alone.
fn job(args: &WatchArgs) -> Result<Resolved> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let mut resolved = match &args.recipe.recipe {
        // The command after `--` is the job: the recipe gives the rest (never a build: watch
        // does not build), and variables only its run command used need no value.
        Some(name) if !args.command.is_empty() => {
            let mut r = recipe::load(name)?;
            r.build = None;
            let r = super::args::with_command(r, &args.command);
            recipe::resolve(&r, &args.recipe.values()?, &BTreeMap::new())?
        }
        Some(name) => recipe::resolve(&recipe::load(name)?, &args.recipe.values()?, &BTreeMap::new())?,
        None if args.command.is_empty() => {
            return Err(Usage::error(
                "`watch` needs the job to run: `debug-ima watch -- CMD ARGS...` (or `--recipe R`)",
            ))
        }
        None => Resolved {
            name: "watch".into(),
            source: "watch".into(),
            python: super::args::runs_python(&args.command),
            vars: BTreeMap::from([("cwd".to_string(), cwd.display().to_string())]),
            collect: Vec::new(),
            knobs: Vec::new(),
            build: None,
            run: Step {
                argv: Vec::new(),
                cwd: None,
                env: BTreeMap::new(),
                env_remove: Vec::new(),
                timeout: None,
                binaries: Vec::new(),
            },
            hang_after: None,
            launch_blocking: Some(false),
            rungs: BTreeMap::new(),
            container: ContainerConfig { runtime: None, image: None, mounts: Vec::new(), gpus: true },
            launch: None,
        },
    };
    if args.recipe.recipe.is_none() {
        resolved.run.argv = args.command.clone();
    }
    if let Some(secs) = args.hang_after {
        resolved.hang_after = Some(Duration::from_secs(secs));
    }
    // Watched for as long as it runs: no time limit of its own.
    resolved.run.timeout = None;
    resolved.build = None;
    Ok(resolved)
}

/// Runs `watch`.
pub fn run(args: WatchArgs) -> Result<Outcome> {
    let interrupt = Interrupt::install()?;
    let resolved = job(&args)?;
    // A job that cannot start (`-- ./nosuch`) is refused before anything runs (no build here).
    super::preflight::check(&resolved, true)?;
    let env = std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
    crate::redact::remember(crate::redact::secret_values(
        env,
        &serde_json::to_value(&resolved).unwrap_or_default(),
    ));
    let plan = vec![RungId::Baseline];
    let req =
        Request { rungs: Some(plan.clone()), watch: true, python: resolved.python, ..Request::default() };
    let bundle_root = args.bundle_dir.clone().unwrap_or_else(|| PathBuf::from(layout::DEFAULT_ROOT));
    let report = doctor::run_checks(&doctor::Options {
        coredump_dir: bundle_root.clone(),
        need: plan.clone(),
        container: None,
        wait_for_gpu: true,
    });
    if interrupt.is_set() {
        ui::status("debug-ima: interrupted while checking the machine: the job did not start");
        return Ok(Outcome::Interrupted);
    }
    let recipe_value = serde_json::to_value(&resolved).context("cannot record the job")?;
    let mut bundle = Bundle::create(&bundle_root, &resolved.name, &recipe_value)?;
    bundle.start(doctor::versions(&report), plan.clone())?;
    bundle.write_file(&layout::env_file(layout::DOCTOR), &doctor::render(&report))?;
    let climb = Climb {
        recipe: &resolved,
        request: &req,
        plan: &plan,
        debug: Debug::LineInfo,
        inherited_prepend: None,
        inherited_pythonpath: std::env::var("PYTHONPATH").ok(),
        gpus: report.gpus().len(),
        path: None,
        launchers: Default::default(),
        interrupt: interrupt.clone(),
    };
    let climbed = climb.run(bundle, &mut ui::NonInteractive, &ui::Echo);
    let (bundle, analysis, outcome) = (climbed.bundle, climbed.analysis, climbed.outcome);
    let record = bundle.manifest().rungs.first().cloned();
    let exit =
        record.as_ref().and_then(|r| r.commands.iter().find(|c| c.role == Role::Target)).and_then(|c| c.exit);
    let hung = record
        .as_ref()
        .is_some_and(|r| r.notes.iter().any(|n| n.starts_with(crate::ladder::rung::watch::HUNG_NOTE)));
    let happened = hung || analysis.verdict.is_some() || !analysis.findings.is_empty();
    if !happened && outcome.is_ok() && record.as_ref().is_some_and(|r| r.status == RungStatus::Ran) {
        let root = bundle.root().to_path_buf();
        bundle.discard()?;
        ui::status(&format!(
            "debug-ima: the job ended ({}) without a device fault or a hang: no bundle kept ({} removed)",
            exit.map(Exit::text).unwrap_or_else(|| "?".into()),
            root.display()
        ));
    } else {
        if let Err(e) = bundle.seal() {
            ui::status(&format!(
                "debug-ima: warning: {e:#}; `debug-ima bundle pack` writes {} later",
                layout::SUMS
            ));
        }
        for line in render_text(&analysis).lines() {
            ui::status(&format!("debug-ima: {line}"));
        }
        ui::status(&format!("debug-ima: bundle: {}", bundle.root().display()));
    }
    match outcome {
        Err(e) => Err(e),
        Ok(Stopped::Interrupted) => Ok(Outcome::Interrupted),
        Ok(_) if interrupt.is_set() => Ok(Outcome::Interrupted),
        Ok(_) => Ok(Outcome::Exited(exit.unwrap_or(Exit::NotStarted))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(command: &[&str]) -> WatchArgs {
        WatchArgs {
            recipe: Default::default(),
            hang_after: Some(30),
            bundle_dir: None,
            yes: true,
            command: command.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn a_command_alone_is_a_job_without_time_limit_or_launch_blocking() {
        let r = job(&args(&["python3", "serve.py", "--port", "8000"])).unwrap();
        assert!(r.python);
        assert_eq!(r.run.argv, ["python3", "serve.py", "--port", "8000"]);
        assert_eq!(r.run.timeout, None);
        assert_eq!(r.hang_after, Some(Duration::from_secs(30)));
        assert_eq!(r.launch_blocking, Some(false));
        assert!(!job(&args(&["./server"])).unwrap().python);
        let e = job(&args(&[])).unwrap_err();
        assert!(Usage::is_in(&e), "{e:#}");
    }
}

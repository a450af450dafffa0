//! `cargo xtask debug-ima`: the command line of the ladder. Loads the recipe and its
//! variables (asking on a terminal, after the instant GPU check), resolves the plan (an
//! empty one is a usage error), prints it for `--dry-run`, runs doctor's preflight for the
//! rungs planned (leaving out those that cannot run here), creates the bundle and hands the
//! climb to `ladder::driver`, then seals the bundle and prints the verdict, or that nothing
//! was learned when no rung ran. Mistakes on the command line are [`Usage`] errors.
//!
//! Must not: decide what runs (the policy), run a rung (the driver), or print other than
//! through `ui`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::doctor::RungChoice;
use super::{preflight, Outcome};
use crate::bundle::{layout, Bundle, RungStatus};
use crate::doctor;
use crate::findings::render::{render_json, render_text, render_verdict};
use crate::ladder::driver::{rung_line, Climb, Stopped};
use crate::ladder::policy::{self, Request};
use crate::ladder::rung::{self, parts::target_build::create_binary_dirs, Debug};
use crate::launch::container::{self, Containers};
use crate::launch::slurm::{self, Pyxis, Slurm};
use crate::launch::ssh::{self, Ssh};
use crate::launch::{images, Launchers};
use crate::model::{Launcher, PromptEnd, RungId, Runtime, Usage};
use crate::process::{while_prompting, Interrupt};
use crate::recipe::{self, ContainerConfig, Resolved};
use crate::ui::{self, Prompter};

/// The synopsis of `run`, one line of words per line of the block: the usage of its `--help`
/// ([`usage`]) and the first block of docs/ladder.md, which a test checks against [`usage`]
/// and against every option clap knows of this command.
pub const SYNOPSIS: [&str; 5] = [
    "[--recipe NAME|PATH] [--set KEY=VALUE]... [--rungs a,b,...] [--full]",
    "[--retries N] [--repro] [--hang-after SECS] [--timeout SECS]",
    "[--device-debug] [--error-exitcode N] [--json] [--dry-run] [--yes]",
    "[--bundle-dir DIR] [--container RUNTIME] [--image IMAGE]",
    "[--launcher LAUNCHER] [--hosts HOSTS] [-- CMD ARGS...]",
];

/// [`SYNOPSIS`] after `command` (`debug-ima run`, `cargo xtask debug-ima`), its later lines
/// aligned under the first option when the block starts `margin` columns in.
pub fn usage(command: &str, margin: usize) -> String {
    let indent = " ".repeat(margin + command.len() + 1);
    let mut out = format!("{command} {}", SYNOPSIS[0]);
    for line in &SYNOPSIS[1..] {
        out.push('\n');
        out.push_str(&indent);
        out.push_str(line);
    }
    out
}

/// The one-line help of `run`.
pub const ABOUT: &str = "Climb the debugging ladder for a target until the verdict is complete, with \
                         the evidence in a bundle";

/// The long help of `run`: the ladder as it is (its rungs named from [`RungId::ALL`]) and the
/// exit codes (`man` reads the `Exit codes:` paragraph).
pub fn long_about() -> String {
    let later: Vec<&str> = RungId::ALL
        .into_iter()
        .filter(|r| !matches!(r, RungId::Baseline | RungId::Hang | RungId::Repro))
        .map(RungId::name)
        .collect();
    format!(
        "Climb the debugging ladder for a target until the verdict is complete (the kernel, the \
         user's file:line, the error class and the host line that launched it), with every rung's \
         command, output and artifacts in a bundle. The first run (`baseline`) is armed: the GPU \
         coredump on the exception, read by cuda-gdb, the CPU core or Python's faulthandler stack, \
         and launch-blocking where it is safe, so it usually gives the whole verdict. The rungs \
         after it ({}) run only for what is still unknown, the cheapest first (`--full` runs them \
         all); `hang` runs first with `--hang-after`, or when a run reaches its time limit; `repro` \
         writes a verified reproducer with `--repro`. A program after `--` needs no recipe. \
         docs/ladder.md has the rungs and the policy.\n\n\
         Exit codes: 0 the ladder ran (with or without a verdict), N with `--error-exitcode N` when \
         it located a fault, 1 it could not (the message says why), 2 usage, 130 interrupted by \
         Ctrl-C, 143 by SIGTERM, 129 by SIGHUP (the bundle keeps what was collected).",
        later.join(", ")
    )
}

/// The options of `debug-ima`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub recipe: super::args::RecipeArgs,
    /// The program and its arguments, after `--`, in place of a recipe: `run -- ./app --n 4`
    /// (its run only; no build, so no rebuild rung). With `--recipe`, in place of the recipe's
    /// run command: the recipe gives the rest.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
    /// Runs exactly these rungs, in ladder order (comma-separated; `all`: every rung, the hang
    /// rung only with `--hang-after`, the repro rung only with `--repro`).
    #[arg(long, value_delimiter = ',', value_enum)]
    pub rungs: Option<Vec<RungChoice>>,
    /// Runs every rung, even after one has located the fault.
    #[arg(long)]
    pub full: bool,
    /// How many more times a run that did not reproduce the fault is repeated before the climb
    /// concludes (an intermittent fault; the armed baseline after the sweep found nothing too).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub retries: u32,
    /// Once the climb has its verdict, writes a standalone reproducer of the faulting Triton
    /// launch and checks it faults the same way (`repro/repro.py`; one more run of the target;
    /// docs/repro.md).
    #[arg(long)]
    pub repro: bool,
    /// Exits with N when the climb located a fault (a verdict), as compute-sanitizer's
    /// `--error-exitcode` does: for scripts and CI jobs (0 otherwise, as without it).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=125))]
    pub error_exitcode: Option<u8>,
    /// Prints the analysis as one JSON object on stdout (`findings.json`'s), for scripts; the
    /// `stopped`, `rungs` and `bundle` lines go to stderr.
    #[arg(long)]
    pub json: bool,
    /// Treats a run still going SECS seconds after its start as hung: the hang rung runs first
    /// and takes host stacks and GPU dumps of it (overrides the recipe's `run.hang_after`;
    /// docs/hangs.md).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=2_592_000))]
    pub hang_after: Option<u64>,
    /// Each run's time limit (overrides the recipe's `run.timeout`; default 600 s). An armed
    /// first run still going then is looked at as hung (host stacks, a GPU dump of every CUDA
    /// process) before it is ended.
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=2_592_000))]
    pub timeout: Option<u64>,
    /// Rebuilds with `-G` (full device debug info: locals, arguments) instead of `-lineinfo`.
    #[arg(long = "device-debug")]
    pub device_debug: bool,
    /// Prints the plan (every rung's exact command and environment) and runs nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// No prompts: take the defaults; a missing answer is an error naming its flag.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Where bundles go (default: `bundles/` in the current directory).
    #[arg(long, value_name = "DIR")]
    pub bundle_dir: Option<PathBuf>,
    /// Runs every rung inside a container (overrides the recipe's `container: runtime:`);
    /// `none` runs on the host.
    #[arg(long, value_enum, value_name = "RUNTIME")]
    pub container: Option<Runtime>,
    /// The image (or Apptainer `.sif`) to run in (overrides the recipe's `container: image:`);
    /// `cargo xtask container build cuda` makes `debug-ima/cuda:13.0`.
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
    /// How the target's runs start (overrides the recipe's `launch:`): `slurm` runs each
    /// through `srun` inside the allocation (salloc, sbatch), an `--image` without
    /// `--container` through pyxis (docs/slurm.md).
    #[arg(long, value_enum, value_name = "LAUNCHER")]
    pub launcher: Option<Launcher>,
    /// The hosts of `--launcher ssh`, one rank each, rank 0 first: `node1,node2:2222,user@node3`
    /// (implies `--launcher ssh`; `DEBUG_IMA_SSH_COMMAND` replaces `ssh`, e.g. `ssh -F FILE`).
    #[arg(long, value_name = "HOSTS")]
    pub hosts: Option<String>,
}

/// The container every rung runs in, from the command line and the recipe: `None` on the
/// host.
fn container_choice(
    args: &Args,
    config: &ContainerConfig,
    launcher: Launcher,
) -> Result<Option<(Runtime, String, bool)>> {
    let runtime = args.container.or(config.runtime).unwrap_or(Runtime::None);
    if runtime == Runtime::None {
        // Through Slurm, an image without a runtime is pyxis's (`srun --container-image`).
        if args.image.is_some() && args.container.is_none() && launcher != Launcher::Slurm {
            return Err(Usage::error(
                "`--image` needs a container runtime: add `--container docker` (or `podman`, `apptainer`), \
                 or set `container: { runtime: ... }` in the recipe",
            ));
        }
        return Ok(None);
    }
    let Some(image) = args.image.clone().or_else(|| config.image.clone()) else {
        return Err(Usage::error(format!(
            "`--container {}` needs an image: give `--image IMAGE` or `container: {{ image: ... }}` in the \
             recipe (`cargo xtask container build cuda` builds `debug-ima/cuda:13.0`, see {})",
            runtime.name(),
            images::readme()
        )));
    };
    Ok(Some((runtime, image, config.gpus)))
}

/// The run's containers, when it runs in one: the recipe's folders and `bundles` mounted,
/// names starting with `name` and `pid`.
fn containers_for(
    choice: Option<&(Runtime, String, bool)>,
    resolved: &Resolved,
    bundles: &Path,
    name: &str,
    pid: u32,
    workdir: &Path,
) -> Option<Containers> {
    choice.map(|(runtime, image, gpus)| {
        let mut mounts = recipe::container_mounts(resolved);
        mounts.push(bundles.to_path_buf());
        Containers::new(*runtime, image, &mounts, *gpus, name, pid, workdir)
    })
}

/// The hosts of `--launcher ssh` (`--hosts`), `None` for another launcher; hosts without the
/// ssh launcher, or the ssh launcher without hosts, is a usage error that says which flag.
fn ssh_for(launcher: Launcher, args: &Args) -> Result<Option<Ssh>> {
    match (launcher, &args.hosts) {
        (Launcher::Ssh, Some(list)) => {
            let command = std::env::var(ssh::SSH_COMMAND).ok();
            Ssh::parse(list, command.as_deref()).map(Some).map_err(Usage::error)
        }
        (Launcher::Ssh, None) => Err(Usage::error(
            "`--launcher ssh` needs `--hosts HOST,HOST,...`: one rank per host, rank 0 first (docs/ssh.md)",
        )),
        (other, Some(_)) => Err(Usage::error(format!(
            "`--hosts` is for `--launcher ssh`, and the launcher is `{}`: drop one of them",
            other.name()
        ))),
        (_, None) => Ok(None),
    }
}

/// The Slurm allocation the target's runs go into, for `--launcher slurm`: `None` on the host.
/// Outside an allocation a run is refused (a plan is shown with the job id left open); an
/// image without a container runtime becomes pyxis's, mounting the bundles and the work dir.
#[allow(clippy::too_many_arguments)]
fn slurm_for(
    launcher: Launcher,
    args: &Args,
    config: &ContainerConfig,
    resolved: &Resolved,
    bundles: &Path,
    name: &str,
    pid: u32,
    workdir: &Path,
) -> Result<Option<Slurm>> {
    if launcher != Launcher::Slurm {
        return Ok(None);
    }
    let prefix = container::name_prefix(name, pid);
    let mut s = match Slurm::from_env(&|k| std::env::var(k).ok(), &prefix) {
        Ok(s) => s,
        Err(_) if args.dry_run => {
            Slurm { job_id: slurm::NO_JOB.to_string(), ntasks: None, nodes: None, pyxis: None, prefix }
        }
        Err(why) => return Err(Usage::error(why)),
    };
    let runtime = args.container.or(config.runtime).unwrap_or(Runtime::None);
    if runtime == Runtime::None {
        if let Some(image) = args.image.clone().or_else(|| config.image.clone()) {
            let mut mounts = recipe::container_mounts(resolved);
            mounts.push(bundles.to_path_buf());
            mounts.push(workdir.to_path_buf());
            mounts.sort();
            mounts.dedup();
            let outer: Vec<PathBuf> = mounts
                .iter()
                .filter(|p| !mounts.iter().any(|q| q != *p && p.starts_with(q)))
                .cloned()
                .collect();
            s.pyxis = Some(Pyxis { image, mounts: outer, workdir: workdir.to_path_buf() });
        }
    }
    Ok(Some(s))
}

/// Everything `debug-ima` runs with, made from its arguments in one step: the recipe and its
/// values resolved, the request and its plan, where the target runs. The dry-run and the run
/// build their climb from it with [`Config::climb`], so that the plan shown is the one run.
struct Config {
    recipe: recipe::Recipe,
    sets: BTreeMap<String, String>,
    /// The built-in variables' values (`{max_jobs}`; `{gpu_arch}` once doctor knows it).
    supplied: BTreeMap<String, String>,
    resolved: Resolved,
    req: Request,
    plan: Vec<RungId>,
    launcher: Launcher,
    /// The hosts of `--launcher ssh`.
    ssh: Option<Ssh>,
    choice: Option<(Runtime, String, bool)>,
    debug: Debug,
    bundle_root: PathBuf,
    inherited_prepend: Option<String>,
    workdir: PathBuf,
    /// `PATH` for every process of a climb on the host, when doctor found tools outside the
    /// tool's own `PATH` (`/usr/local/cuda/bin`); passed to each step, never set process-wide.
    path: Option<String>,
}

impl Config {
    /// The configuration of `args` with the recipe and values gathered: resolved with what is
    /// known without a GPU (`{gpu_arch}` a placeholder), so that a mistake in the recipe, a
    /// `--set` or the plan is reported before doctor runs.
    fn new(args: &Args, recipe: recipe::Recipe, sets: BTreeMap<String, String>) -> Result<Config> {
        let supplied = host_builtins();
        let mut resolved = recipe::resolve(&recipe, &sets, &supplied)?;
        with_hang_after(&mut resolved, args)?;
        // Values known to be secret (a `--set password=...`, an inherited `HF_TOKEN`) are
        // redacted wherever they show up again: in a positional argument, in what the target
        // prints.
        let env =
            std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
        crate::redact::remember(crate::redact::secret_values(
            env,
            &serde_json::to_value(&resolved).unwrap_or_default(),
        ));
        let launcher = args
            .launcher
            .or(args.hosts.as_ref().map(|_| Launcher::Ssh))
            .or(resolved.launch)
            .unwrap_or_default();
        let ssh = ssh_for(launcher, args)?;
        let ranks = match &ssh {
            Some(s) => Some(s.hosts.len() as u32),
            None => Slurm::from_env(&|k| std::env::var(k).ok(), "").ok().and_then(|s| s.ntasks),
        };
        let blocking_unsafe = rung::parts::armed::blocking_unsafe(
            &resolved,
            ranks,
            launcher,
            std::env::var("WORLD_SIZE").ok().as_deref(),
        );
        let choice = container_choice(args, &resolved.container, launcher)?;
        let req = Request {
            rungs: args.rungs.as_deref().map(|c| rung_ids(c, resolved.hang_after.is_some())),
            retries: args.retries,
            blocking_unsafe,
            watch: false,
            full: args.full,
            has_build: resolved.build.is_some(),
            not_built: resolved.not_built(choice.is_none()).is_some(),
            disabled: RungId::ALL.into_iter().filter(|id| !resolved.enabled(*id)).collect(),
            python: resolved.python,
            hang_after: resolved.hang_after.is_some(),
            repro: args.repro,
        };
        let plan = policy::plan(&req);
        if let Some(why) = policy::empty_plan(&req, &plan) {
            return Err(Usage::error(why));
        }
        // Outside an allocation `--launcher slurm` cannot run: say so before anything else.
        if launcher == Launcher::Slurm && !args.dry_run {
            Slurm::from_env(&|k| std::env::var(k).ok(), "").map_err(Usage::error)?;
        }
        // A checkout or a program that is not there: refused before anything runs or is made.
        if !args.dry_run {
            preflight::check(&resolved, choice.is_none() && launcher == Launcher::Host)?;
        }
        if choice.is_some() && !args.dry_run {
            check_mounts(&resolved)?;
        }
        let debug = if args.device_debug { Debug::Full } else { debug_from_recipe(&resolved) };
        Ok(Config {
            recipe,
            sets,
            supplied,
            resolved,
            req,
            plan,
            launcher,
            ssh,
            choice,
            debug,
            bundle_root: args.bundle_dir.clone().unwrap_or_else(|| PathBuf::from(layout::DEFAULT_ROOT)),
            inherited_prepend: std::env::var("NVCC_PREPEND_FLAGS").ok(),
            workdir: std::env::current_dir().context("cannot read the current directory")?,
            path: None,
        })
    }

    /// What doctor learnt: the rungs that can run here, GPU 0's compute capability for
    /// `{gpu_arch}` (the recipe resolved again with it), the tool folders outside `PATH`.
    fn after_doctor(&mut self, args: &Args, report: &doctor::Report, runnable: Vec<RungId>) -> Result<()> {
        self.plan = runnable;
        match report.gpus().first().and_then(|g| g.compute_cap.clone()) {
            Some(cc) => {
                self.supplied.insert("gpu_arch".to_string(), cc);
            }
            None if recipe::uses_variable(&self.recipe, "gpu_arch") => bail!(
                "recipe `{}` uses `{{gpu_arch}}`, but `nvidia-smi` did not report GPU 0's compute capability (a \
                 driver too old for `--query-gpu=compute_cap`): copy the recipe (`cargo xtask recipe show {} > \
                 mine.yaml`), write the architecture (`9.0` for an H100 or H200) in place of `{{gpu_arch}}`, and \
                 pass `--recipe mine.yaml`",
                self.recipe.name,
                args.recipe.recipe.as_deref().unwrap_or(&self.recipe.name)
            ),
            None => {}
        }
        self.resolved = recipe::resolve(&self.recipe, &self.sets, &self.supplied)?;
        with_hang_after(&mut self.resolved, args)?;
        self.path = tool_path(report)?;
        Ok(())
    }

    /// The climb of this configuration, for the bundle at `bundle` (named `name`, its
    /// containers' and steps' names made from it and `pid`), `gpus` seen.
    fn climb(
        &self,
        args: &Args,
        bundle: &Path,
        name: &str,
        pid: u32,
        gpus: usize,
        interrupt: Interrupt,
    ) -> Result<Climb<'_>> {
        let containers =
            containers_for(self.choice.as_ref(), &self.resolved, bundle, name, pid, &self.workdir);
        let slurm = slurm_for(
            self.launcher,
            args,
            &self.resolved.container,
            &self.resolved,
            bundle,
            name,
            pid,
            &self.workdir,
        )?;
        Ok(Climb {
            recipe: &self.resolved,
            request: &self.req,
            plan: &self.plan,
            debug: self.debug,
            inherited_prepend: self.inherited_prepend.clone(),
            inherited_pythonpath: std::env::var("PYTHONPATH").ok(),
            gpus,
            path: self.path.clone().filter(|_| containers.is_none()),
            // The launchers, innermost first: a new one is registered here.
            launchers: Launchers::default().with(containers).with(slurm).with(self.ssh.clone()),
            interrupt,
        })
    }
}

/// `PATH` for the climb's processes on the host when doctor found CUDA tools outside the
/// tool's own `PATH` (`/usr/local/cuda/bin`): those folders first; `None` when it found none.
pub(super) fn tool_path(report: &doctor::Report) -> Result<Option<String>> {
    let additions = report.path_additions();
    if additions.is_empty() {
        return Ok(None);
    }
    let old = std::env::var_os("PATH").unwrap_or_default();
    let joined = std::env::join_paths(additions.iter().cloned().chain(std::env::split_paths(&old)))
        .context("cannot extend PATH with the CUDA tool directories")?;
    Ok(Some(joined.to_string_lossy().into_owned()))
}

/// Before a run in containers: the build's output folders are made now (the baseline would
/// make them) so they can be mounted; another folder that does not exist would be created
/// empty (Docker) or refused at the first rung: say which now.
fn check_mounts(resolved: &Resolved) -> Result<()> {
    if let Some(b) = &resolved.build {
        create_binary_dirs(b)?;
    }
    for m in recipe::container_mounts(resolved) {
        if !m.is_dir() {
            bail!(
                "`{}` is to be mounted in the container but is not a folder here: check the recipe's \
                 `container: mounts:`, `cwd` and paths, or the `--set` values",
                m.display()
            );
        }
    }
    Ok(())
}

/// Runs `debug-ima`.
pub fn run(args: Args) -> Result<Outcome> {
    // Interrupts are this command's from the start: Ctrl-C at a prompt comes as a key (the
    // terminal is in raw mode) and as the SIGINT the prompt raises, and it must end the
    // command as an interruption, with the cursor shown again, not kill the tool mid-prompt.
    let interrupt = Interrupt::install()?;
    let interactive = !args.yes && ui::is_tty();
    let mut prompter: Box<dyn Prompter> =
        if interactive { Box::new(ui::Interactive) } else { Box::new(ui::NonInteractive) };
    // A recipe named on the command line is read first, terminal or not: a typo in it is the
    // first thing to say, as it is without a terminal.
    if let Some(name) = &args.recipe.recipe {
        recipe::load(name)?;
    }
    // Without `nvidia-smi` (known at once) the ladder cannot run: say so before asking.
    if interactive && !args.dry_run {
        if let Some(gpu) = doctor::gpu_not_found() {
            doctor::require(&doctor::Report { checks: vec![gpu] }, &[])?;
        }
    }
    let (recipe, sets) = match recipe_and_values(&args, prompter.as_mut(), interactive) {
        Ok(v) => v,
        Err(e) => return prompt_ended(e, &interrupt),
    };
    let mut cfg = Config::new(&args, recipe, sets)?;
    if args.dry_run {
        return dry_run(&args, &cfg);
    }
    // Rungs asked for without one that builds: the plan has the rebuild first; say why.
    let asked = cfg.req.rungs.as_ref().is_some_and(|r| !r.contains(&RungId::Rebuild));
    if let Some(missing) = cfg.resolved.not_built(cfg.choice.is_none()).filter(|_| asked) {
        if cfg.plan.contains(&RungId::Rebuild) {
            ui::status(&format!(
                "`{}` does not exist yet: the rebuild runs first, to build the target (with line info)",
                ui::safe(&missing, true)
            ));
        }
    }

    // Preflight: on a machine without what the plan needs, stop now and say what is missing.
    let report = doctor::run_checks(&doctor::Options {
        coredump_dir: cfg.bundle_root.clone(),
        need: cfg.plan.clone(),
        container: cfg.choice.as_ref().map(|(runtime, image, gpus)| doctor::ContainerTarget {
            runtime: *runtime,
            image: image.clone(),
            gpus: *gpus,
        }),
        wait_for_gpu: true,
    });
    if interrupt.is_set() {
        ui::status("interrupted while checking the machine: nothing ran, no bundle was written");
        return Ok(Outcome::Interrupted);
    }
    // What cannot run here is left out of the default plan, saying so; what is needed stops
    // the run now, naming what is missing.
    let builds_with_nvcc = cfg
        .resolved
        .build
        .as_ref()
        .is_some_and(|b| Path::new(b.program()).file_name().is_some_and(|n| n == "nvcc"));
    let (runnable, skipped) = doctor::gate(&report, &cfg.plan, args.rungs.is_some(), builds_with_nvcc)?;
    for why in &skipped {
        ui::status(why);
    }
    cfg.after_doctor(&args, &report, runnable)?;

    let recipe_value = serde_json::to_value(&cfg.resolved).context("cannot record the recipe")?;
    let mut bundle = Bundle::create(&cfg.bundle_root, &cfg.resolved.name, &recipe_value)?;
    bundle.start(doctor::versions(&report), cfg.plan.clone())?;
    bundle.write_file(&layout::env_file(layout::DOCTOR), &doctor::render(&report))?;
    ui::status(&format!("bundle: {}", ui::safe(&bundle.root().display().to_string(), true)));
    let name = bundle.root().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let climb =
        cfg.climb(&args, bundle.root(), &name, std::process::id(), report.gpus().len(), interrupt.clone())?;
    say_where(&climb, &mut bundle)?;
    let climbed = climb.run(bundle, prompter.as_mut(), &ui::Terminal);
    finish(climbed, &interrupt, args.json)
}

/// `--dry-run`: the plan of the climb the run would build (every rung's exact command and
/// environment), redacted like everything the tool writes (a plan gets pasted into issues
/// too); nothing runs and no bundle is made.
fn dry_run(args: &Args, cfg: &Config) -> Result<Outcome> {
    // Absolute, as the run makes it: commands get paths into the bundle.
    let root = std::path::absolute(&cfg.bundle_root).unwrap_or_else(|_| cfg.bundle_root.clone());
    let bundle = root.join(format!("<UTC time>_{}", cfg.resolved.name));
    let name = format!("UTC-time_{}", cfg.resolved.name);
    let climb = cfg.climb(args, &root, &name, 0, 0, Interrupt::manual())?;
    let text = crate::ladder::plan::render(&climb, &bundle);
    ui::out(&crate::redact::redact_text(&text, "plan", &mut Vec::new()))?;
    Ok(Outcome::Done)
}

/// Says where the climb's processes run (a container, a Slurm allocation) and records the
/// container in the bundle.
fn say_where(climb: &Climb, bundle: &mut Bundle) -> Result<()> {
    for l in climb.launchers.iter() {
        let said = l.announce();
        ui::status(&said.line);
        if let Some(record) = said.container {
            bundle.set_container(record)?;
        }
    }
    Ok(())
}

/// Seals the climbed bundle (`SHA256SUMS`), prints the verdict, where it stopped and the
/// bundle, and turns the climb's end into the command's outcome.
fn finish(climbed: crate::ladder::driver::Climbed, interrupt: &Interrupt, json: bool) -> Result<Outcome> {
    let (bundle, analysis, outcome) = (climbed.bundle, climbed.analysis, climbed.outcome);
    // The rungs' files were hashed as each rung ended (the manifest has them).
    let outcome = super::seal::seal(&bundle, outcome);

    // A rung that ran to its end is what the analysis speaks of: without one (stopped at the
    // first prompt, Ctrl-C in the baseline, every rung skipped), nothing was learned, and the
    // analysis's "no fault" would be read as a result.
    let learned = bundle.manifest().rungs.iter().any(|r| r.status == RungStatus::Ran);
    let quiet = ui::verbosity() == ui::Verbosity::Quiet;
    // After an error with nothing found, the analysis has nothing to say: the error does.
    let mut text = if outcome.is_err() && analysis.findings.is_empty() && analysis.symptoms.is_empty() {
        String::new()
    } else if !learned && outcome.is_ok() {
        "nothing was learned: no rung ran to its end, so there is no result (the bundle holds the \
         environment snapshot only); run again and let the baseline run\n"
            .to_string()
    } else if quiet {
        // `-q`, as cargo's: the verdict and its fields, where the rest of the analysis is in
        // the bundle's `summary.md`.
        render_verdict(&analysis) + "\n"
    } else {
        render_text(&analysis) + "\n"
    };
    // One line each, whatever a value holds (a newline in a folder's name must not forge a
    // `verdict:` line).
    let line = |v: &str| ui::safe(v, true).into_owned();
    let stop = bundle.manifest().stopped.clone().unwrap_or_default();
    text.push_str(&format!("stopped: {}\n", line(&stop)));
    if !quiet {
        text.push_str(&format!("rungs: {}\n", line(&rung_line(&bundle.manifest().rungs))));
    }
    text.push_str(&format!("bundle: {}\n", line(&bundle.root().display().to_string())));
    if json {
        // The result lines (those after the analysis) on stderr, the analysis on stdout.
        let results = if quiet { 2 } else { 3 };
        for l in text.lines().rev().take(results).collect::<Vec<_>>().into_iter().rev() {
            ui::status(l);
        }
        ui::out(&render_json(&analysis))?;
    } else {
        ui::out(&text)?;
    }
    match outcome {
        Ok(Stopped::Interrupted) => Ok(Outcome::Interrupted),
        Ok(_) if interrupt.is_set() => Ok(Outcome::Interrupted),
        // Stopped (or everything skipped) before any rung ran: the ladder did not run.
        Ok(_) if !learned => Ok(Outcome::Interrupted),
        Ok(_) if analysis.verdict.is_some() => Ok(Outcome::Located),
        Ok(_) => Ok(Outcome::Done),
        Err(e) => Err(e.context(format!("the bundle keeps what was collected: {}", bundle.root().display()))),
    }
}

fn debug_from_recipe(r: &Resolved) -> Debug {
    match r.debug_info() {
        recipe::DebugInfo::G => Debug::Full,
        recipe::DebugInfo::Lineinfo => Debug::LineInfo,
    }
}

/// The built-in variables known without a GPU: `{max_jobs}`, from the cores this process
/// may use and the memory available (the cgroup's limit too, in a container).
fn host_builtins() -> BTreeMap<String, String> {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let jobs = recipe::max_jobs(cores, available_memory());
    BTreeMap::from([("max_jobs".to_string(), jobs.to_string())])
}

/// Bytes of memory new processes can get: `MemAvailable`, capped by a cgroup v2 limit
/// (`memory.max` less `memory.current`) when there is one.
fn available_memory() -> Option<u64> {
    let host = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| doctor::parse_mem_available(&m));
    let read = |f: &str| -> Option<u64> { std::fs::read_to_string(f).ok()?.trim().parse().ok() };
    let cgroup = match (read("/sys/fs/cgroup/memory.max"), read("/sys/fs/cgroup/memory.current")) {
        (Some(max), Some(current)) => Some(max.saturating_sub(current)),
        _ => None,
    };
    match (host, cgroup) {
        (Some(h), Some(c)) => Some(h.min(c)),
        (h, c) => h.or(c),
    }
}

/// A prompt the user ended before the bundle exists: Ctrl-C is an interruption, Esc or `q`
/// at the recipe choice a cancel; both end the command with nothing run. Any other error is
/// returned as it is.
fn prompt_ended(e: anyhow::Error, interrupt: &Interrupt) -> Result<Outcome> {
    let Some(end) = PromptEnd::of(&e) else { return Err(e) };
    if end == PromptEnd::Interrupted {
        interrupt.trigger();
    }
    ui::status(&format!("{end}: nothing ran, no bundle was written"));
    Ok(Outcome::Interrupted)
}

/// Loads the recipe and gathers its variables' values: `--set`, then, on a terminal, a
/// prompt for each required one without a value. Without a terminal nothing is asked:
/// resolving names every missing variable at once, with the `--set` that gives it.
fn recipe_and_values(
    args: &Args,
    prompter: &mut dyn Prompter,
    interactive: bool,
) -> Result<(recipe::Recipe, BTreeMap<String, String>)> {
    let recipe = match (&args.recipe.recipe, args.command.is_empty()) {
        // The command after `--` is the run; the recipe gives the rest.
        (Some(n), false) => super::args::with_command(recipe::load(n)?, &args.command),
        (None, false) => super::args::command_recipe(
            &args.command,
            std::env::current_dir().context("cannot read the current directory")?,
        )?,
        (Some(n), true) => recipe::load(n)?,
        (None, true) => {
            let local = local_recipes(&std::env::current_dir().context("cannot read the current directory")?);
            let mut names: Vec<&str> = recipe::builtin_names().to_vec();
            names.extend(local.iter().map(String::as_str));
            recipe::load(&while_prompting(|| prompter.choose_recipe(&names))?)?
        }
    };
    let mut sets = args.recipe.values()?;
    if interactive {
        for (k, var) in recipe::missing_variables(&recipe, &sets) {
            let v = while_prompting(|| prompter.variable(&k, &var.description, var.default.as_deref()))?;
            sets.insert(k, v);
        }
    }
    Ok((recipe, sets))
}

/// The recipe files in `dir` (`*.yaml`, `*.yml`, and those in its `recipes/`) that load as
/// recipes, as `./NAME.yaml`, sorted: the recipe picker offers them after the built-in ones.
fn local_recipes(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for (sub, prefix) in [("", "./"), ("recipes", "./recipes/")] {
        let Ok(rd) = std::fs::read_dir(dir.join(sub)) else { continue };
        let mut names: Vec<String> = rd
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.ends_with(".yaml") || n.ends_with(".yml"))
            .collect();
        names.sort();
        // Inside the clone, its `recipes/` holds the built-in ones: offered once, by name.
        let builtin = sub == "recipes" && dir.join(sub) == recipe::builtin_dir();
        for n in names.into_iter().take(32) {
            let stem = n.rsplit_once('.').map_or(n.as_str(), |(s, _)| s);
            if builtin && recipe::builtin_names().contains(&stem) {
                continue;
            }
            let path = format!("{prefix}{n}");
            let file = dir.join(sub).join(&n);
            if recipe::load(&file.display().to_string()).is_ok() && !out.contains(&path) {
                out.push(path);
            }
        }
    }
    out
}

/// The rungs `--rungs` names: `all` is every rung in ladder order, the hang rung only when a
/// hang is expected (`--hang-after`: it reruns the target until then).
fn rung_ids(choices: &[RungChoice], hang_after: bool) -> Vec<RungId> {
    RungChoice::named(choices).unwrap_or_else(|| {
        // `all` is every rung that diagnoses: the hang rung with a hang expected, and the
        // reproducer only with `--repro` (policy::plan adds it).
        RungId::ALL
            .into_iter()
            .filter(|r| (*r != RungId::Hang || hang_after) && *r != RungId::Repro)
            .collect()
    })
}

/// `--hang-after` and `--timeout` over the recipe's `run.hang_after` and `run.timeout`,
/// refused (a usage error naming the fix) when the run's own time limit would end it first.
fn with_hang_after(resolved: &mut Resolved, args: &Args) -> Result<()> {
    if let Some(secs) = args.hang_after {
        resolved.hang_after = Some(std::time::Duration::from_secs(secs));
    }
    if let Some(secs) = args.timeout {
        resolved.run.timeout = Some(std::time::Duration::from_secs(secs));
    }
    rung::hang::check(resolved).map_err(|e| Usage::error(format!("{e:#}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_s_recipes_are_offered_and_other_yaml_is_not() {
        let dir = std::env::temp_dir().join(format!("local-recipes-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("recipes")).unwrap();
        let good = "version: 1\nname: mine\ndescription: d\nrun:\n  command: [./app]\n";
        std::fs::write(dir.join("mine.yaml"), good).unwrap();
        std::fs::write(dir.join("recipes/other.yml"), good.replace("mine", "other")).unwrap();
        std::fs::write(dir.join("notes.yaml"), "not: [a recipe\n").unwrap();
        std::fs::write(dir.join("ci.yaml"), "jobs: {}\n").unwrap();
        assert_eq!(local_recipes(&dir), ["./mine.yaml", "./recipes/other.yml"]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

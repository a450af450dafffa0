//! `cargo xtask debug-ima`: climbs the ladder for one recipe. Asks `ladder` what to run
//! next, builds the rung's commands with `rungs`, runs them with `exec` into the bundle,
//! reads what they printed with `findings`, and repeats until the policy says stop.
//!
//! Must not: parse tool output itself (that is `findings`), print (that is `ui`), or leave
//! a process of the target alive (every run goes through `exec`, which owns the groups).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::analyze::scan_file;
use crate::bundle::{self, exit_text, Bundle, CommandRecord, RungRecord};
use crate::container::{Access, ContainerConfig, Containers, Runtime};
use crate::doctor;
use crate::exec::{self, Control, Exit, Spec, Stream};
use crate::findings::{
    coredump::sm_progress,
    verdict::{decide, Analysis},
    waits::wait_notice,
    Evidence,
};
use crate::ladder::{self, Next, Request, Rung, RungSummary};
use crate::recipe::{self, Resolved};
use crate::redact::Redaction;
use crate::rungs::{self, rebuild::Debug, Invocation};
use crate::ui::{self, Choice, Prompter, RungProgress};

/// The options of `debug-ima`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// A built-in recipe (`demo`, `cuda`, `pytorch`, `vllm`) or a path to a recipe file.
    /// Asked for when absent on a terminal.
    #[arg(long, value_name = "NAME|PATH")]
    pub recipe: Option<String>,
    /// Sets a recipe variable (repeatable): `--set script=repro.py`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Runs exactly these rungs, in ladder order (comma-separated).
    #[arg(long, value_delimiter = ',', value_enum)]
    pub rungs: Option<Vec<Rung>>,
    /// Runs every rung, even after one has located the fault.
    #[arg(long)]
    pub full: bool,
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
}

/// The container every rung runs in, from the command line and the recipe: `None` on the
/// host.
fn container_choice(args: &Args, config: &ContainerConfig) -> Result<Option<(Runtime, String, bool)>> {
    let runtime = args.container.or(config.runtime).unwrap_or(Runtime::None);
    if runtime == Runtime::None {
        if args.image.is_some() && args.container.is_none() {
            bail!(
                "`--image` needs a container runtime: add `--container docker` (or `podman`, `apptainer`), \
                 or set `container: {{ runtime: ... }}` in the recipe"
            );
        }
        return Ok(None);
    }
    let Some(image) = args.image.clone().or_else(|| config.image.clone()) else {
        bail!(
            "`--container {}` needs an image: give `--image IMAGE` or `container: {{ image: ... }}` in the \
             recipe (`cargo xtask container build cuda` builds `debug-ima/cuda:13.0`, see containers/README.md)",
            runtime.name()
        );
    };
    Ok(Some((runtime, image, config.gpus)))
}

/// The manifest's record of the container: the runtime and its version, the image with its id
/// and digests (for Apptainer, the `.sif` file's SHA-256), what was mounted.
fn container_record(c: &Containers) -> bundle::ContainerRecord {
    let run = |argv: &[String]| -> Option<String> {
        let out = run_short(argv)?;
        out.success().then(|| out.stdout.trim().to_string()).filter(|s| !s.is_empty())
    };
    let version = run(&c.runtime.version());
    let (image_id, repo_digests) = match c.runtime {
        Runtime::Apptainer => {
            (crate::archive::sha256_file(Path::new(&c.image)).ok().map(|h| format!("sha256:{h}")), Vec::new())
        }
        _ => match run(&c.runtime.inspect_image(&c.image)) {
            Some(line) => {
                let (id, digests) = line.split_once('|').unwrap_or((line.as_str(), ""));
                (
                    Some(id.to_string()),
                    digests.split(',').filter(|d| !d.is_empty()).map(str::to_string).collect(),
                )
            }
            None => (None, Vec::new()),
        },
    };
    bundle::ContainerRecord {
        runtime: c.runtime,
        version,
        image: c.image.clone(),
        image_id,
        repo_digests,
        mounts: c.mounts.clone(),
        gpus: c.gpus,
    }
}

/// Runs `debug-ima`; returns the exit code.
pub fn run(args: Args) -> Result<i32> {
    let interactive = !args.yes && ui::is_tty();
    let mut prompter: Box<dyn Prompter> =
        if interactive { Box::new(ui::Interactive) } else { Box::new(ui::NonInteractive) };
    let (recipe, sets) = recipe_and_values(&args, prompter.as_mut())?;
    // Resolved first with what is known without a GPU (`{gpu_arch}` a placeholder): a
    // mistake in the recipe or a `--set` is reported before doctor runs.
    let mut supplied = host_builtins();
    let mut resolved = recipe::resolve(&recipe, &sets, &supplied)?;

    let req = Request {
        rungs: args.rungs.clone(),
        full: args.full,
        has_build: resolved.build.is_some(),
        disabled: resolved
            .rungs
            .iter()
            .filter(|(_, o)| o.enabled == Some(false))
            .filter_map(|(k, _)| Rung::from_name(k))
            .collect(),
    };
    let plan = ladder::plan(&req);
    let choice = container_choice(&args, &resolved.container)?;
    if choice.is_some() && !args.dry_run {
        // The build's output folders are made now (the baseline would make them) so they
        // can be mounted. Another folder that does not exist would be created empty
        // (Docker) or refused at the first rung: say which now.
        if let Some(b) = &resolved.build {
            create_binary_dirs(b)?;
        }
        for m in recipe::container_mounts(&resolved) {
            if !m.is_dir() {
                bail!(
                    "`{}` is to be mounted in the container but is not a folder here: check the recipe's \
                     `container: mounts:`, `cwd` and paths, or the `--set` values",
                    m.display()
                );
            }
        }
    }
    let debug = if args.device_debug { Debug::Full } else { debug_from_recipe(&resolved) };
    let bundle_root = args.bundle_dir.clone().unwrap_or_else(|| PathBuf::from(crate::bundle::DEFAULT_ROOT));

    if args.dry_run {
        let planned = choice.as_ref().map(|(runtime, image, gpus)| {
            let mut mounts = recipe::container_mounts(&resolved);
            mounts.push(std::path::absolute(&bundle_root).unwrap_or_else(|_| bundle_root.clone()));
            let here = std::env::current_dir().unwrap_or_default();
            Containers::new(*runtime, image, &mounts, *gpus, &format!("UTC-time_{}", resolved.name), 0, &here)
        });
        // Redacted like everything the tool writes: a plan gets pasted into issues too.
        let text = render_plan(&resolved, &plan, debug, &bundle_root, planned.as_ref());
        ui::out(&crate::redact::redact_text(&text, "plan", &mut Vec::new()))?;
        return Ok(crate::cli::EXIT_OK);
    }

    // Preflight: on a machine without what the plan needs, stop now and say what is missing.
    let need: Vec<String> = plan.iter().map(|r| r.name().to_string()).collect();
    let report = doctor::run_checks(&doctor::Options {
        coredump_dir: bundle_root.clone(),
        need: need.clone(),
        container: choice.as_ref().map(|(runtime, image, gpus)| doctor::ContainerTarget {
            runtime: *runtime,
            image: image.clone(),
            gpus: *gpus,
        }),
    });
    let names: Vec<&str> = need.iter().map(String::as_str).collect();
    doctor::require(&report, &names)?;
    // Now the GPU is known: `{gpu_arch}` gets GPU 0's compute capability.
    let gpus = report.gpus();
    match gpus.first().and_then(|g| g.compute_cap.clone()) {
        Some(cc) => {
            supplied.insert("gpu_arch".to_string(), cc);
        }
        None if recipe::uses_variable(&recipe, "gpu_arch") => bail!(
            "recipe `{}` uses `{{gpu_arch}}`, but `nvidia-smi` did not report GPU 0's compute capability (a \
             driver too old for `--query-gpu=compute_cap`): copy the recipe (`cargo xtask recipe show {} > \
             mine.yaml`), write the architecture (`9.0` for an H100 or H200) in place of `{{gpu_arch}}`, and \
             pass `--recipe mine.yaml`",
            recipe.name,
            args.recipe.as_deref().unwrap_or(&recipe.name)
        ),
        None => {}
    }
    resolved = recipe::resolve(&recipe, &sets, &supplied)?;
    // Tools found outside PATH (`/usr/local/cuda/bin`) are put on it for the rungs.
    let additions = report.path_additions();
    if !additions.is_empty() {
        let old = std::env::var_os("PATH").unwrap_or_default();
        let joined = std::env::join_paths(additions.iter().cloned().chain(std::env::split_paths(&old)))
            .context("cannot extend PATH with the CUDA tool directories")?;
        // Safe: set once, before any thread of ours starts a process.
        unsafe { std::env::set_var("PATH", joined) };
    }

    exec::install_interrupt_handler()?;
    let recipe_value = serde_json::to_value(&resolved).context("cannot record the recipe")?;
    let mut bundle = Bundle::create(&bundle_root, &resolved.name, &recipe_value)?;
    bundle.manifest.versions = doctor::versions(&report);
    bundle.manifest.plan = need;
    bundle.write_file("env/doctor.txt", &doctor::render(&report))?;
    bundle.write_manifest()?;
    ui::status(&format!("bundle: {}", bundle.root.display()));
    let workdir = std::env::current_dir().context("cannot read the current directory")?;
    let containers = choice.map(|(runtime, image, gpus)| {
        let mut mounts = recipe::container_mounts(&resolved);
        mounts.push(bundle.root.clone());
        let name = bundle.root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        Containers::new(runtime, &image, &mounts, gpus, &name, std::process::id(), &workdir)
    });
    if let Some(c) = &containers {
        let record = container_record(c);
        ui::status(&format!(
            "container: {} {} ({}), image {} {}",
            c.runtime.name(),
            record.version.as_deref().unwrap_or("?"),
            if c.gpus { "GPUs passed in" } else { "no GPUs" },
            c.image,
            record.image_id.as_deref().unwrap_or("(id unknown)")
        ));
        bundle.manifest.container = Some(record);
        bundle.write_manifest()?;
    }
    let jobs = collect_jobs(&resolved, containers.as_ref());
    for job in jobs.iter().filter(|j| !j.quiet) {
        let shown = job.place.wrap(&job.inv).redacted("terminal", &mut Vec::new());
        ui::status(&format!("==> collect env/{} (beside the baseline): {}", job.name, shown.shell_line()));
    }
    let collecting = start_collect(jobs, bundle.root.clone())?;

    let mut ladder = Climb {
        resolved: &resolved,
        bundle,
        evidence: Vec::new(),
        debug,
        done: Vec::new(),
        analysis: decide(&[]),
        gpus: gpus.len(),
        containers,
        started: 0,
        collecting: Some(collecting),
    };
    let outcome = ladder.climb(&req, &plan, prompter.as_mut());
    ladder.join_collect()?;
    // Whatever happened, the bundle keeps what was collected: the analysis of every rung
    // that ran (kept up to date by the climb after each rung).
    let analysis = &ladder.analysis;
    let stop = match &outcome {
        Ok(reason) => reason.clone(),
        Err(e) => format!("error: {e:#}"),
    };
    ladder.bundle.manifest.stopped = Some(stop.clone());
    ladder.bundle.write_analysis(analysis)?;
    // Sealed last, so that `bundle verify` can tell later edits (also after Ctrl-C).
    // The rungs' files were hashed as each rung ended (the manifest has them).
    let known = ladder
        .bundle
        .manifest
        .rungs
        .iter()
        .flat_map(|r| &r.files)
        .map(|f| (f.path.clone(), (f.bytes, f.sha256.clone())))
        .collect();
    if let Err(e) = crate::archive::write_sums_reusing(&ladder.bundle.root, &known) {
        ui::status(&format!("warning: {e:#}; `cargo xtask bundle pack` writes SHA256SUMS later"));
    }

    // After an error with nothing found, the analysis has nothing to say: the error does.
    let mut text = if outcome.is_err() && analysis.findings.is_empty() && analysis.symptoms.is_empty() {
        String::new()
    } else {
        crate::analyze::render_text(analysis) + "\n"
    };
    text.push_str(&format!("stopped: {stop}\n"));
    text.push_str(&format!("rungs: {}\n", rung_line(&ladder.bundle.manifest.rungs)));
    text.push_str(&format!("bundle: {}\n", ladder.bundle.root.display()));
    ui::out(&text)?;
    match outcome {
        Ok(_) if exec::interrupted() => Ok(130),
        Ok(_) => Ok(crate::cli::EXIT_OK),
        Err(e) => {
            Err(e.context(format!("the bundle keeps what was collected: {}", ladder.bundle.root.display())))
        }
    }
}

/// What `exec` runs for an invocation, with its two logs (the same path for both streams
/// puts them in one file).
fn to_spec(inv: &Invocation, stdout_log: PathBuf, stderr_log: PathBuf) -> Spec {
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
    }
}

/// A rung's logs: the target's streams are kept apart (`stdout.log`, `stderr.log`); a tool's
/// go into one `<stem>.log`, read as one (cuda-gdb prints the fault on stdout and its own crash
/// on stderr).
fn rung_logs(dir: &Path, stem: &str) -> (PathBuf, PathBuf) {
    if stem.is_empty() {
        (dir.join("stdout.log"), dir.join("stderr.log"))
    } else {
        (dir.join(format!("{stem}.log")), dir.join(format!("{stem}.log")))
    }
}

/// Where one process runs.
#[derive(Debug, Clone)]
enum Place {
    Host,
    /// In a new container of this name, removed when the run ends however it ends.
    New(Containers, String, Access),
    /// Inside the running container of this name (cuda-gdb next to the attach rung's target).
    In(Containers, String),
}

impl Place {
    /// The command that really runs.
    fn wrap(&self, inv: &Invocation) -> Invocation {
        match self {
            Place::Host => inv.clone(),
            Place::New(c, name, access) => c.wrap(inv, name, *access),
            Place::In(c, name) => c.exec_in(name, inv),
        }
    }

    /// Kills and removes the container a [`Place::New`] run started (a no-op when it has
    /// gone by itself with `--rm`).
    fn clean_up(&self) {
        if let Place::New(c, name, _) = self {
            if let Some(argv) = c.remove(name) {
                run_short(&argv);
            }
        }
    }
}

/// How long removing a container, giving its files back or asking the runtime about an
/// image may take.
const CLEANUP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Runs a short runtime command (`docker rm -f`, `docker image inspect`), stdin closed,
/// killed after [`CLEANUP_TIMEOUT`]; an empty `argv` runs nothing.
fn run_short(argv: &[String]) -> Option<doctor::Output> {
    let (program, rest) = argv.split_first()?;
    let args: Vec<&str> = rest.iter().map(String::as_str).collect();
    Some(doctor::run_with_timeout(Path::new(program), &args, CLEANUP_TIMEOUT))
}

/// Runs one process for the bundle with everything recorded redacted: its command
/// (`<stem>.command.txt`, or `command.txt` for the target, in `command_dir` when given), its
/// logs (redacted as `exec` writes them) and its [`CommandRecord`]; the redactions found are
/// added to `found`. In a container, the command recorded is the runtime's. The outer error
/// is the bundle's (a file it could not write), the inner one the process's.
#[allow(clippy::too_many_arguments)]
fn run_logged(
    root: &Path,
    role: &str,
    inv: &Invocation,
    place: &Place,
    (out, err): (PathBuf, PathBuf),
    command_dir: Option<&Path>,
    found: &mut Vec<Redaction>,
    on_line: &mut dyn FnMut(Stream, &str) -> Control,
) -> Result<(CommandRecord, Result<exec::Outcome>)> {
    let inv = &place.wrap(inv);
    let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
    let (out_rel, err_rel) = (rel(&out), rel(&err));
    let command_file = command_dir.map(|d| {
        let stem = out.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        d.join(if stem == "stdout" { "command.txt".to_string() } else { format!("{stem}.command.txt") })
    });
    let at = match &command_file {
        Some(f) => rel(f),
        None => format!("{out_rel} (command)"),
    };
    let shown = inv.redacted(&at, found);
    let mut rec = CommandRecord::new(role, &shown, &out_rel, &err_rel);
    if let Some(f) = &command_file {
        std::fs::write(f, shown.shell_line() + "\n")
            .with_context(|| format!("cannot write `{}`", f.display()))?;
    }
    let result = exec::run(&to_spec(inv, out, err), on_line);
    place.clean_up();
    if let Ok(o) = &result {
        rec.exit = Some(o.exit);
        rec.duration_s = o.duration.as_secs_f64();
        found.extend(bundle::log_redactions(o, &out_rel, &err_rel));
    }
    Ok((rec, result))
}

/// `nvcc -o DIR/FILE` does not create `DIR`: the build's output folders are made first.
fn create_binary_dirs(b: &recipe::Step) -> Result<()> {
    for d in b.binary_dirs() {
        std::fs::create_dir_all(&d)
            .with_context(|| format!("cannot create `{}` for the build's output", d.display()))?;
    }
    Ok(())
}

fn rung_line(rungs: &[RungRecord]) -> String {
    rungs
        .iter()
        .map(|r| format!("{} {} ({:.1} s)", r.rung, r.status, r.duration_s))
        .collect::<Vec<_>>()
        .join(", ")
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

/// One `collect` command to run into `env/NAME`.
#[derive(Debug, Clone)]
struct CollectJob {
    name: String,
    inv: Invocation,
    place: Place,
    /// The snapshot's: a failure (no git checkout, no pip) shows only in its record and file.
    quiet: bool,
}

/// What one `collect` command left for the manifest.
struct Collected {
    record: CommandRecord,
    found: Vec<Redaction>,
    note: Option<String>,
    quiet: bool,
}

/// The recipe's `collect` commands, then the environment snapshot ([`rungs::snapshot`],
/// quiet), as jobs in the order they run: each in the image when there is one, except `git
/// describe`: the source is the host's checkout.
fn collect_jobs(r: &Resolved, containers: Option<&Containers>) -> Vec<CollectJob> {
    let job = |i: usize, c: &recipe::Collect, quiet: bool| {
        let place = match containers {
            Some(k) if c.name != rungs::SNAPSHOT_ON_HOST => {
                Place::New(k.clone(), k.name(i, &format!("collect-{}", c.name)), Access::Plain)
            }
            _ => Place::Host,
        };
        CollectJob { name: c.name.clone(), inv: rungs::collect(r, c), place, quiet }
    };
    let snapshot = rungs::snapshot(r);
    let all = r.collect.iter().map(|c| (c, false)).chain(snapshot.iter().map(|c| (c, true)));
    all.enumerate().map(|(i, (c, quiet))| job(i, c, quiet)).collect()
}

/// Runs one `collect` job into `root/env/NAME` (both streams). A command that is missing,
/// fails or times out gives a note; none of it is needed to find the fault.
fn run_collect(root: &Path, job: &CollectJob) -> Result<Collected> {
    let rel = format!("env/{}", job.name);
    let log = root.join(&rel);
    let mut found = Vec::new();
    let (record, result) = run_logged(
        root,
        "collect",
        &job.inv,
        &job.place,
        (log.clone(), log),
        None,
        &mut found,
        &mut |_, _| Control::Continue,
    )?;
    let cmd = &record.command;
    let note = match result {
        Ok(o) => match o.exit {
            Exit::Code(0) => None,
            Exit::Interrupted => Some(format!("`{cmd}` (for {rel}) was interrupted")),
            Exit::TimedOut => Some(format!(
                "`{cmd}` (for {rel}) timed out after {} s and was killed; what it printed is kept",
                job.inv.timeout.map(|t| t.as_secs()).unwrap_or(0)
            )),
            other => Some(format!(
                "`{cmd}` (for {rel}) ended with {}; what it printed is kept, and the ladder goes on",
                exit_text(other)
            )),
        },
        Err(e) => Some(format!(
            "`{cmd}` (for {rel}) could not run: {e:#}; not needed for the ladder, which goes on"
        )),
    };
    Ok(Collected { record, found, note, quiet: job.quiet })
}

/// Adds what a `collect` job left to the bundle; a recipe command's note is shown and kept.
fn record_collected(bundle: &mut Bundle, c: Collected) -> Result<()> {
    bundle.note_redactions(c.found);
    if let Some(n) = c.note.filter(|_| !c.quiet) {
        ui::status(&format!("    note: {n}"));
        bundle.manifest.notes.push(n);
    }
    bundle.manifest.collected.push(c.record);
    bundle.write_manifest()
}

/// The recipe's `collect` commands, then the snapshot, one after the other in the background
/// as the ladder starts: `collect_env` alone takes seconds (`vllm collect-env` more), and
/// nothing of the ladder needs them; the climb takes their results after the baseline
/// ([`Climb::join_collect`]), so the later rungs run alone.
fn start_collect(
    jobs: Vec<CollectJob>,
    root: PathBuf,
) -> Result<std::thread::JoinHandle<Vec<Result<Collected>>>> {
    std::thread::Builder::new()
        .name("snapshot".into())
        .spawn(move || {
            jobs.iter().take_while(|_| !exec::interrupted()).map(|j| run_collect(&root, j)).collect()
        })
        .context("cannot start the `collect` commands")
}

/// Loads the recipe and gathers its variables' values: `--set`, then a prompt for each
/// required one without a value.
fn recipe_and_values(
    args: &Args,
    prompter: &mut dyn Prompter,
) -> Result<(recipe::Recipe, BTreeMap<String, String>)> {
    let name = match &args.recipe {
        Some(n) => n.clone(),
        None => prompter.choose_recipe(recipe::builtin_names())?,
    };
    let recipe = recipe::load(&name)?;
    let mut sets: BTreeMap<String, String> = BTreeMap::new();
    for s in &args.sets {
        let (k, v) = recipe::parse_set(s)?;
        sets.insert(k, v);
    }
    for (k, var) in recipe::missing_variables(&recipe, &sets) {
        let v = prompter.variable(&k, &var.description, var.default.as_deref())?;
        sets.insert(k, v);
    }
    Ok((recipe, sets))
}

/// `--dry-run`: the plan, every rung's exact command and environment.
pub fn render_plan(
    r: &Resolved,
    plan: &[Rung],
    debug: Debug,
    bundle_root: &Path,
    containers: Option<&Containers>,
) -> String {
    let mut s = format!(
        "recipe: {}\nplan: {}\n",
        r.name,
        plan.iter().map(|r| r.name()).collect::<Vec<_>>().join(", ")
    );
    if let Some(c) = containers {
        s.push_str(&format!(
            "container: {} image {} ({}); each command in its own container, removed after it\n   \
             mounted at the same path: {}\n",
            c.runtime.name(),
            c.image,
            if c.gpus { "GPUs passed in" } else { "no GPUs" },
            c.mounts.iter().map(|m| m.display().to_string()).collect::<Vec<_>>().join(", ")
        ));
    }
    let mut started = 0;
    let mut wrap =
        |inv: Invocation, what: &str, access: Access, inside: Option<&str>| -> (Invocation, String) {
            match containers {
                None => (inv, String::new()),
                Some(c) => {
                    if let Some(name) = inside {
                        return (c.exec_in(name, &inv), name.to_string());
                    }
                    started += 1;
                    let name = c.name(started, what);
                    (c.wrap(&inv, &name, access), name)
                }
            }
        };
    let dir = |i: usize, rung: Rung| {
        bundle_root.join("<UTC time>_".to_string() + &r.name).join(format!("rungs/{i:02}-{}", rung.name()))
    };
    {
        s.push_str(
            "\ncollect (once, in the background beside the baseline; a failure is noted, not fatal):\n",
        );
        for c in rungs::snapshot(r).iter().chain(&r.collect) {
            let inv = rungs::collect(r, c);
            s.push_str(&format!(
                "   env/{}: {}\n      timeout: {} s\n",
                c.name,
                inv.shell_line(),
                c.timeout.as_secs()
            ));
        }
    }
    for (i, rung) in plan.iter().enumerate() {
        let i = i + 1;
        s.push_str(&format!("\n{i}. {}: {}\n", rung.name(), rung.describe()));
        let d = dir(i, *rung);
        let mut invs: Vec<(&str, Invocation)> = match rung {
            Rung::Baseline => {
                let mut v = Vec::new();
                if let Some(b) = &r.build {
                    if b.binaries.iter().any(|p| !p.exists()) {
                        v.push((
                            "build (plain, the binaries do not exist yet)",
                            rungs::rebuild::plain_build(b),
                        ));
                    }
                }
                v.push(("target", rungs::baseline::invocation(r)));
                v
            }
            Rung::Rebuild => {
                let b = r.build.as_ref().expect("plan has rebuild only with a build");
                let mut v = vec![("build", rungs::rebuild::invocation(r, b, debug, None))];
                for bin in &b.binaries {
                    v.push(("line-info check", rungs::rebuild::lineinfo_check(bin)));
                }
                v
            }
            Rung::LaunchBlocking => vec![("target", rungs::launch_blocking::invocation(r))],
            Rung::Coredump => vec![
                ("target", rungs::coredump::invocation(r, &d)),
                (
                    "per dump",
                    rungs::coredump::gdb(&d.join("core_<host>.<pid>.<time>"), true, debug == Debug::Full),
                ),
            ],
            Rung::Attach => vec![
                ("target", rungs::attach::invocation(r)),
                ("on the wait message", rungs::attach::gdb(0, true, debug == Debug::Full)),
            ],
            Rung::Memcheck => vec![("target", rungs::memcheck::invocation(r, &d.join("memcheck.xml")))],
        };
        let mut target_container = String::new();
        for (role, inv) in invs.iter_mut() {
            let (access, inside) = match (rung, *role) {
                (Rung::Attach, "target") => (Access::Ptrace, None),
                (Rung::Attach, _) => (Access::Plain, Some(target_container.as_str())),
                (Rung::Coredump, "per dump") => (Access::Plain, None),
                _ => (Access::Plain, None),
            };
            let what = if *role == "target" { "target" } else { "tool" };
            let (wrapped, name) = wrap(inv.clone(), what, access, inside);
            if *role == "target" {
                target_container = name;
            }
            *inv = wrapped;
        }
        for (role, inv) in invs {
            let mut line = inv.shell_line();
            if matches!(rung, Rung::Attach) && role != "target" {
                line = line.replace("-p 0", "-p <PID from the message>");
            }
            s.push_str(&format!("   {role}: {line}\n"));
            if let Some(t) = inv.timeout {
                s.push_str(&format!("      timeout: {} s\n", t.as_secs()));
            }
        }
    }
    s
}

/// The state of one climb.
struct Climb<'a> {
    resolved: &'a Resolved,
    bundle: Bundle,
    evidence: Vec<Evidence>,
    debug: Debug,
    done: Vec<(Rung, RungSummary)>,
    /// The verdict over `evidence`, recomputed once after each rung.
    analysis: Analysis,
    /// How many GPUs doctor saw (`nvidia-smi --query-gpu`).
    gpus: usize,
    /// The run's containers, when every rung runs in one.
    containers: Option<Containers>,
    /// Containers started so far (their names count up).
    started: usize,
    /// The `collect` commands and the snapshot running in the background, until joined.
    collecting: Option<std::thread::JoinHandle<Vec<Result<Collected>>>>,
}

impl Climb<'_> {
    fn climb(&mut self, req: &Request, plan: &[Rung], prompter: &mut dyn Prompter) -> Result<String> {
        let total = plan.len();
        let mut index = 0;
        loop {
            if exec::interrupted() {
                return Ok("interrupted (Ctrl-C): the bundle keeps what was collected".into());
            }
            let rung = match ladder::next(req, plan, &self.done, &self.analysis) {
                Next::Stop(why) => return Ok(why),
                Next::Run(r) => r,
            };
            index += 1;
            match prompter.before_rung(rung.name(), rung.describe())? {
                Choice::Run => {}
                Choice::Skip => {
                    self.done.push((rung, RungSummary::default()));
                    self.bundle.manifest.rungs.push(RungRecord {
                        rung: rung.name().into(),
                        dir: String::new(),
                        status: "skipped".into(),
                        duration_s: 0.0,
                        commands: vec![],
                        files: vec![],
                        notes: vec!["skipped at the prompt".into()],
                    });
                    continue;
                }
                Choice::Stop => return Ok(format!("stopped at the prompt before {}", rung.name())),
            }
            let dir = self.bundle.rung_dir(index, rung.name())?;
            let progress = RungProgress::start(index, total, rung.name(), rung.describe());
            let started = Instant::now();
            let mut record = RungRecord {
                rung: rung.name().into(),
                dir: self.bundle.rel(&dir),
                status: "ran".into(),
                duration_s: 0.0,
                commands: vec![],
                files: vec![],
                notes: vec![],
            };
            let result = self.run_rung(rung, &dir, &progress, &mut record);
            record.duration_s = started.elapsed().as_secs_f64();
            if let Some(bundles) = self.bundle.root.parent() {
                self.give_back(&dir, bundles);
            }
            if record.commands.iter().any(|c| c.role == "build") {
                // The build wrote into the target's tree (objects, binaries) as root too.
                if let (Some(b), Some(c)) = (&self.resolved.build, &self.containers) {
                    let tree = b.cwd.clone().unwrap_or_else(|| c.workdir.clone());
                    self.give_back(&tree, &tree);
                }
            }
            self.redact_reports(&dir, &mut record);
            record.files = self.bundle.files_of(&dir);
            let summary = match &result {
                Ok(s) => s.clone(),
                Err(e) => {
                    record.status = "failed".into();
                    record.notes.push(format!("{e:#}"));
                    RungSummary::default()
                }
            };
            if exec::interrupted() {
                record.status = "interrupted".into();
            }
            // Read what the rung's files say, then save the bundle's view of it.
            let before = self.evidence.len();
            for f in record.files.iter().filter(|f| crate::analyze::is_rung_output(Path::new(&f.path))) {
                if let Ok(ev) = scan_file(&self.bundle.root.join(&f.path)) {
                    self.evidence.push(ev);
                }
            }
            let faulted = summary.faulted
                || self.evidence[before..].iter().any(|e| {
                    !e.faults.is_empty()
                        || e.symptoms.iter().any(|s| s.error.as_ref().is_some_and(|x| x.is_device_fault()))
                });
            let outcome = format!(
                "{}{}",
                record
                    .commands
                    .iter()
                    .find(|c| c.role == "target")
                    .and_then(|c| c.exit)
                    .map(exit_text)
                    .unwrap_or_else(|| record.status.clone()),
                if faulted { ", device error seen" } else { "" }
            );
            progress.finish(&outcome);
            for n in &record.notes {
                ui::status(&format!("    note: {n}"));
            }
            self.bundle.manifest.rungs.push(record);
            self.done.push((rung, RungSummary { faulted, yielded: summary.yielded }));
            // After the baseline: the later rungs run the target under a debugger or a
            // sanitizer, alone.
            self.join_collect()?;
            self.analysis = decide(&self.evidence);
            self.bundle.write_analysis(&self.analysis)?;
            if let Err(e) = result {
                if exec::interrupted() {
                    return Ok("interrupted (Ctrl-C): the bundle keeps what was collected".into());
                }
                if rung == Rung::Baseline {
                    // Every later rung runs the same target: if it cannot start, none can.
                    return Err(e.context("the baseline could not run the target, so no rung can"));
                }
                ui::status(&format!("    {} failed: {e:#}; going on", rung.name()));
            }
        }
    }

    /// Waits for the `collect` commands and the snapshot (once) and adds what they collected
    /// to the bundle; a recipe command that failed is noted then.
    fn join_collect(&mut self) -> Result<()> {
        let Some(handle) = self.collecting.take() else { return Ok(()) };
        let results = handle.join().map_err(|_| anyhow::anyhow!("the environment snapshot panicked"))?;
        for r in results {
            record_collected(&mut self.bundle, r?)?;
        }
        Ok(())
    }

    /// Runs one process into `dir/<stem>.log`, both streams (or `stdout.log`
    /// and `stderr.log` for the target), calling `on_line` for each line.
    fn exec(
        &mut self,
        role: &str,
        inv: &Invocation,
        dir: &Path,
        stem: &str,
        record: &mut RungRecord,
        on_line: &mut dyn FnMut(Stream, &str) -> Control,
    ) -> Result<Exit> {
        let place = self.place(if stem.is_empty() { role } else { stem }, Access::Plain);
        self.exec_at(role, inv, &place, dir, stem, record, on_line)
    }

    /// Where the next process runs: on the host, or in a new container named after `what`.
    fn place(&mut self, what: &str, access: Access) -> Place {
        match &self.containers {
            Some(c) => {
                self.started += 1;
                Place::New(c.clone(), c.name(self.started, what), access)
            }
            None => Place::Host,
        }
    }

    /// [`Climb::exec`] at a given place.
    #[allow(clippy::too_many_arguments)]
    fn exec_at(
        &mut self,
        role: &str,
        inv: &Invocation,
        place: &Place,
        dir: &Path,
        stem: &str,
        record: &mut RungRecord,
        on_line: &mut dyn FnMut(Stream, &str) -> Control,
    ) -> Result<Exit> {
        let mut found = Vec::new();
        let (rec, result) = run_logged(
            &self.bundle.root,
            role,
            inv,
            place,
            rung_logs(dir, stem),
            Some(dir),
            &mut found,
            on_line,
        )?;
        self.bundle.note_redactions(found);
        record.commands.push(rec);
        let o = result?;
        if matches!(place, Place::New(..) | Place::In(..)) && o.exit == Exit::Code(125) {
            record.notes.push(format!(
                "{role}: the container runtime could not run the command (exit 125, its own error): see \
                 the log for the runtime's message"
            ));
        }
        if o.exit == Exit::TimedOut {
            record.notes.push(format!(
                "{role} timed out after {} s and was killed with its process group",
                inv.timeout.map(|t| t.as_secs()).unwrap_or(0)
            ));
        }
        Ok(o.exit)
    }

    /// Files a root container wrote into `dir` go back to the owner of `owner_of`: Docker and
    /// Podman run as root, so that cuda-gdb may attach. A rung's folder goes to the owner of
    /// the folder the bundles go to (`--bundle-dir`, the user's also when the ladder runs as
    /// root), the build's tree to its own owner.
    fn give_back(&self, dir: &Path, owner_of: &Path) {
        let Some(c) = &self.containers else { return };
        use std::os::unix::fs::MetadataExt;
        let Ok(meta) = std::fs::metadata(owner_of) else { return };
        if let Some(inv) = c.chown(dir, meta.uid(), meta.gid()) {
            run_short(&inv.argv);
        }
    }

    /// Redacts what the tools wrote themselves (compute-sanitizer's `--save` XML, the
    /// rebuild's table) in place; logs were redacted as they were written.
    fn redact_reports(&mut self, dir: &Path, record: &mut RungRecord) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        let mut reports: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "xml" || x == "tsv"))
            .collect();
        reports.sort();
        for p in reports {
            let mut found = Vec::new();
            let place = self.bundle.rel(&p);
            if let Err(e) = bundle::redact_file(&p, &place, &mut found) {
                record.notes.push(format!("{e:#}: check `{place}` for secrets before sharing the bundle"));
            }
            self.bundle.note_redactions(found);
        }
    }

    fn target_lines<'p>(progress: &'p RungProgress) -> impl FnMut(Stream, &str) -> Control + 'p {
        move |_, line| {
            if let Some((k, n)) = sm_progress(line) {
                progress.sm(k, n);
            } else {
                progress.line(line);
            }
            Control::Continue
        }
    }

    fn run_rung(
        &mut self,
        rung: Rung,
        dir: &Path,
        progress: &RungProgress,
        record: &mut RungRecord,
    ) -> Result<RungSummary> {
        let r = self.resolved;
        match rung {
            Rung::Baseline => {
                if let Some(b) = &r.build {
                    if b.binaries.iter().any(|p| !p.exists()) {
                        progress.note("building the target first (plain, as the recipe builds it)");
                        create_binary_dirs(b)?;
                        let inv = rungs::rebuild::plain_build(b);
                        let ran = self.exec(
                            "build",
                            &inv,
                            dir,
                            "build",
                            record,
                            &mut Self::target_lines(progress),
                        )?;
                        if ran != Exit::Code(0) {
                            bail!(
                                "the recipe's build failed ({}): see `{}/build.log`",
                                exit_text(ran),
                                record.dir
                            );
                        }
                    }
                }
                let inv = rungs::baseline::invocation(r);
                let ran = self.exec("target", &inv, dir, "", record, &mut Self::target_lines(progress))?;
                Ok(RungSummary { faulted: ran != Exit::Code(0), yielded: true })
            }
            Rung::Rebuild => {
                let b = r.build.as_ref().context("the recipe has no `build` step to rebuild with")?;
                create_binary_dirs(b)?;
                let inherited = std::env::var("NVCC_PREPEND_FLAGS").ok();
                let inv = rungs::rebuild::invocation(r, b, self.debug, inherited.as_deref());
                let ran = self.exec("build", &inv, dir, "", record, &mut Self::target_lines(progress))?;
                if ran != Exit::Code(0) {
                    bail!("the rebuild failed ({}): see `{}/stderr.log`", exit_text(ran), record.dir);
                }
                let mut lines = String::new();
                let mut all_ok = true;
                for (i, bin) in b.binaries.iter().enumerate() {
                    let check = rungs::rebuild::lineinfo_check(bin);
                    let stem = format!("cuobjdump-{}", i + 1);
                    let ran =
                        self.exec("cuobjdump", &check, dir, &stem, record, &mut |_, _| Control::Continue)?;
                    let n = std::fs::File::open(dir.join(format!("{stem}.log")))
                        .map(|f| rungs::rebuild::count_line_sections_in(std::io::BufReader::new(f)))
                        .unwrap_or(0);
                    lines.push_str(&format!(
                        "{}\t{n} line-info sections\t{}\n",
                        bin.display(),
                        exit_text(ran)
                    ));
                    if n == 0 {
                        all_ok = false;
                        record.notes.push(format!(
                            "`{}` has no line info after the rebuild: the build may not use nvcc, may ignore \
                             NVCC_PREPEND_FLAGS, or may not have rebuilt it",
                            bin.display()
                        ));
                    }
                }
                std::fs::write(dir.join("lineinfo.tsv"), lines).context("cannot write lineinfo.tsv")?;
                Ok(RungSummary { faulted: false, yielded: all_ok })
            }
            Rung::LaunchBlocking => {
                let inv = rungs::launch_blocking::invocation(r);
                let inherited = std::env::var("CUDA_VISIBLE_DEVICES").ok();
                let visible = rungs::launch_blocking::visible_gpus(
                    self.gpus,
                    rungs::launch_blocking::cuda_visible_devices(&inv, inherited.as_deref()),
                );
                if let Some(note) = rungs::launch_blocking::multi_gpu_note(visible, inv.timeout) {
                    // Said before the run, which may hang until the timeout.
                    progress.note(&format!("warning: {note}"));
                    record.notes.push(note);
                }
                let ran = self.exec("target", &inv, dir, "", record, &mut Self::target_lines(progress))?;
                Ok(RungSummary { faulted: ran != Exit::Code(0), yielded: true })
            }
            Rung::Coredump => {
                let inv = rungs::coredump::invocation(r, dir);
                let ran = self.exec("target", &inv, dir, "", record, &mut Self::target_lines(progress))?;
                let mut dumps: Vec<PathBuf> = std::fs::read_dir(dir)
                    .with_context(|| format!("cannot list `{}`", dir.display()))?
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with(rungs::coredump::DUMP_PREFIX))
                    })
                    .collect();
                dumps.sort();
                if dumps.is_empty() {
                    record.notes.push(format!(
                        "no coredump was written ({}): the process may have been aborted before the GPU \
                         exception was handled (an NCCL watchdog does that), or nothing faulted",
                        exit_text(ran)
                    ));
                }
                let locals = self.debug == Debug::Full;
                for (i, core) in dumps.iter().enumerate() {
                    if exec::interrupted() {
                        break;
                    }
                    progress.line(&format!("cuda-gdb on {}", core.display()));
                    let stem = format!("cudagdb-{}", i + 1);
                    self.exec(
                        "cuda-gdb",
                        &rungs::coredump::gdb(core, true, locals),
                        dir,
                        &stem,
                        record,
                        &mut |_, _| Control::Continue,
                    )?;
                    let ev = scan_file(&dir.join(format!("{stem}.log")))?;
                    let crashed = ev.debugger_crashed;
                    if crashed {
                        // What it printed is kept; fewer commands sometimes get further.
                        progress.note("cuda-gdb crashed: retrying with fewer commands");
                        let retry = format!("{stem}-retry");
                        self.exec(
                            "cuda-gdb",
                            &rungs::coredump::gdb(core, false, false),
                            dir,
                            &retry,
                            record,
                            &mut |_, _| Control::Continue,
                        )?;
                    }
                    if crashed {
                        record.notes.push(
                            "cuda-gdb crashed on this dump (kept what it printed); a `-G` rebuild \
                             (`--device-debug`) often avoids that and shows locals"
                                .into(),
                        );
                    }
                }
                Ok(RungSummary {
                    faulted: ran != Exit::Code(0) || !dumps.is_empty(),
                    yielded: !dumps.is_empty(),
                })
            }
            Rung::Attach => {
                let inv = rungs::attach::invocation(r);
                let locals = self.debug == Debug::Full;
                let mut attached: Option<u32> = None;
                let mut gdb_error: Option<anyhow::Error> = None;
                let mut gdb_records: Vec<CommandRecord> = Vec::new();
                let mut gdb_notes: Vec<String> = Vec::new();
                let mut gdb_found: Vec<Redaction> = Vec::new();
                let root = self.bundle.root.clone();
                let target_place = self.place("target", Access::Ptrace);
                {
                    let dir2 = dir.to_path_buf();
                    let mut on_line = |_s: Stream, line: &str| -> Control {
                        progress.line(line);
                        if attached.is_some() {
                            return Control::Continue;
                        }
                        let Some(notice) = wait_notice(line) else { return Control::Continue };
                        attached = Some(notice.pid);
                        progress.note(&format!(
                            "process {} waits for a debugger: attaching cuda-gdb",
                            notice.pid
                        ));
                        // A crash of the full session is retried with fewer commands while
                        // the target still waits.
                        for (stem, full) in [("cudagdb-attach", true), ("cudagdb-attach-retry", false)] {
                            let gdb = rungs::attach::gdb(notice.pid, full, locals);
                            let logs = rung_logs(&dir2, stem);
                            let out = logs.0.clone();
                            let gdb_place = match &target_place {
                                Place::New(c, name, _) => Place::In(c.clone(), name.clone()),
                                _ => Place::Host,
                            };
                            match run_logged(
                                &root,
                                "cuda-gdb",
                                &gdb,
                                &gdb_place,
                                logs,
                                Some(&dir2),
                                &mut gdb_found,
                                &mut |_, _| Control::Continue,
                            ) {
                                Ok((rec, result)) => {
                                    gdb_records.push(rec);
                                    if let Err(e) = result {
                                        gdb_error = Some(e);
                                    }
                                }
                                Err(e) => gdb_error = Some(e),
                            }
                            let crashed = scan_file(&out).map(|e| e.debugger_crashed).unwrap_or(false);
                            if !crashed || !full || gdb_error.is_some() || exec::interrupted() {
                                break;
                            }
                            progress.note("cuda-gdb crashed: retrying with fewer commands");
                            gdb_notes.push(
                                "cuda-gdb crashed while attached (kept what it printed); a `-G` rebuild \
                                 (`--device-debug`) often avoids that"
                                    .to_string(),
                            );
                        }
                        gdb_notes.push(format!(
                            "attached to PID {} on {}; the target was killed afterwards",
                            notice.pid, notice.host
                        ));
                        Control::Stop
                    };
                    self.exec_at("target", &inv, &target_place, dir, "", record, &mut on_line)?;
                }
                record.commands.extend(gdb_records);
                record.notes.extend(gdb_notes);
                self.bundle.note_redactions(gdb_found);
                if let Some(e) = gdb_error {
                    return Err(e.context("cuda-gdb could not attach"));
                }
                if attached.is_none() {
                    record.notes.push(
                        "no process announced that it waits for a debugger: nothing faulted in this run"
                            .into(),
                    );
                }
                Ok(RungSummary { faulted: attached.is_some(), yielded: attached.is_some() })
            }
            Rung::Memcheck => {
                let inv = rungs::memcheck::invocation(r, &dir.join("memcheck.xml"));
                let ran = self.exec("target", &inv, dir, "", record, &mut Self::target_lines(progress))?;
                let yielded = dir.join("memcheck.xml").exists();
                if !yielded {
                    record.notes.push("compute-sanitizer wrote no XML report".into());
                }
                Ok(RungSummary { faulted: ran != Exit::Code(0), yielded })
            }
        }
    }
}

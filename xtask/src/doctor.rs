//! `cargo xtask doctor`: checks what the ladder needs (a GPU and its driver, nvcc,
//! cuobjdump, cuda-gdb, compute-sanitizer, the debugger back-end, ptrace permission, a
//! writable TMPDIR, room for coredumps) and says how to fix what is missing. `debug-ima`
//! runs the same checks first and stops, within seconds, when a rung it needs cannot run.
//!
//! With a container ([`Options::container`]) it also checks the runtime, the image and the
//! GPU plumbing, and looks for the tools inside the image with one probe run there (the
//! script [`IMAGE_PROBE_SCRIPT`], which prints `key=value` lines that [`parse_image_probe`]
//! reads); the host's GPU, ptrace, coredump space and core pattern stay host checks.
//!
//! Two layers. [`gather`] is the impure one: through a [`Probe`] it runs short commands
//! (`nvidia-smi`, `nvcc --version`, `df -Pk`, `ldconfig -p`), each killed after
//! [`PROBE_TIMEOUT`] at most and all at once in threads, and reads files (`/proc`); what
//! it saw is kept raw in [`Facts`]. [`evaluate`] is pure: facts in, [`Check`]s out, so the
//! tests feed it outputs recorded on a real H200 and on a machine without a GPU.
//!
//! Must not: print (rendering returns a string; `ui` prints), change the machine (the
//! only writes are a probe file created and removed at once to test that a directory is
//! writable, and the probe's container, started with `--rm` and removed by name if it
//! outlives its timeout; no image is pulled), run any probe longer than [`PROBE_TIMEOUT`]
//! (the one inside an image: [`IMAGE_PROBE_TIMEOUT`]), or start a process that it does not
//! kill when the timeout passes.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use serde::Serialize;

use crate::container::Runtime;
use crate::ui;

/// The longest any one probe may run before it is killed. `nvidia-smi` can hang on a
/// broken driver; every probe runs in its own thread, so the whole doctor takes about
/// this long at worst (on the host; see [`IMAGE_PROBE_TIMEOUT`] for a container).
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest the probe inside the container image may run: starting a container with
/// the GPUs passed in can take seconds. It runs after the runtime's version and the image
/// inspection (each within [`PROBE_TIMEOUT`]), so a container check takes 80 s at worst.
pub const IMAGE_PROBE_TIMEOUT: Duration = Duration::from_secs(60);
/// Below this much free space in the coredump directory the space check warns: a GPU
/// coredump takes 1 MB to hundreds of MB per process, and several processes may fault.
pub const LOW_SPACE_BYTES: u64 = 2 << 30;
/// The fix for a machine without a usable GPU, also shown by `debug-ima` when it stops.
pub const NO_GPU_FIX: &str = "install the NVIDIA driver; on a machine without a GPU the ladder cannot run \
     (use `cargo xtask analyze` on logs from a GPU machine)";
/// Rung names accepted in [`Options::need`] and `--rung`. `all` means every rung.
pub const RUNGS: [&str; 7] =
    ["baseline", "rebuild", "launch-blocking", "coredump", "attach", "memcheck", "all"];

/// The `--query-gpu` fields asked of `nvidia-smi`, and the fallback for old drivers that
/// do not know `compute_cap` (`Field "compute_cap" is not a valid field to query.`).
const GPU_QUERY: &str = "--query-gpu=name,driver_version,compute_cap,memory.total";
const GPU_QUERY_OLD: &str = "--query-gpu=name,driver_version,memory.total";
/// How much of a probe's stdout or stderr is kept.
const MAX_PROBE_OUTPUT: usize = 256 * 1024;
/// Time given to a probe's pipe readers once the process is gone.
const READER_GRACE: Duration = Duration::from_millis(500);
/// Where NVIDIA's packages install the toolkit; its `bin` is searched after PATH and
/// `$CUDA_HOME/bin`.
const CUDA_DEFAULT_HOME: &str = "/usr/local/cuda";

// ---------------------------------------------------------------------------------------
// The report
// ---------------------------------------------------------------------------------------

/// How a check came out. Only `Missing` stops a rung that needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    Missing,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Missing => "missing",
        }
    }
}

/// One thing the ladder needs, as found on this machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// `gpu`, `runtime`, `gpu-plumbing`, `image` (the last three with a container),
    /// `driver-toolkit`, `nvcc`, `cuobjdump`, `cuda-gdb`, `compute-sanitizer`,
    /// `cuda-debugger-backend`, `ptrace`, `tmpdir`, `coredump-space` or `core-pattern`.
    pub name: String,
    pub status: Status,
    /// The version or what was found (or why nothing was).
    pub detail: String,
    /// How to fix it, commands in backticks. `None` when there is nothing to fix.
    pub fix: Option<String>,
    /// The rungs that need it: `rebuild`, `coredump`, `attach`, `memcheck`, or `all`.
    pub needed_by: Vec<String>,
    /// The tool's version line as it printed it (`Cuda compilation tools, release 13.0,
    /// V13.0.88`); for `gpu`, the `nvidia-smi --query-gpu` lines joined by `; `; for
    /// `runtime`, its name and version (`docker 20.10.24+dfsg1`); for `image`, its id
    /// (`sha256:...`).
    pub version: Option<String>,
    /// Where the tool was found, also when it is not on PATH. With a container, the tools'
    /// and the debugger back-end's paths are inside the image.
    pub path: Option<PathBuf>,
    /// The tool was found outside PATH (`$CUDA_HOME/bin`, `/usr/local/cuda/bin`).
    pub off_path: bool,
}

impl Check {
    fn new(name: &str, status: Status, detail: impl Into<String>, needed_by: &[&str]) -> Check {
        Check {
            name: name.to_string(),
            status,
            detail: detail.into(),
            fix: None,
            needed_by: needed_by.iter().map(|s| s.to_string()).collect(),
            version: None,
            path: None,
            off_path: false,
        }
    }

    fn fix(mut self, fix: impl Into<String>) -> Check {
        self.fix = Some(fix.into());
        self
    }

    /// Whether a run of any of `rungs` needs this check (`all` on either side matches).
    pub fn needed_for(&self, rungs: &[&str]) -> bool {
        self.needed_by.iter().any(|n| n == "all") || rungs.contains(&"all") || {
            self.needed_by.iter().any(|n| rungs.contains(&n.as_str()))
        }
    }
}

/// Every check that was run, in a fixed order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    /// The checks that are `Missing` and needed by any of `rungs`.
    pub fn missing_for(&self, rungs: &[&str]) -> Vec<&Check> {
        self.checks.iter().filter(|c| c.status == Status::Missing && c.needed_for(rungs)).collect()
    }

    /// The checks that are `Warn` and needed by any of `rungs`.
    pub fn warnings_for(&self, rungs: &[&str]) -> Vec<&Check> {
        self.checks.iter().filter(|c| c.status == Status::Warn && c.needed_for(rungs)).collect()
    }

    /// Whether `nvidia-smi` listed at least one GPU.
    pub fn has_gpu(&self) -> bool {
        self.get("gpu").is_some_and(|c| c.status != Status::Missing)
    }

    pub fn get(&self, name: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.name == name)
    }

    /// The GPUs `nvidia-smi` listed, in its order (empty without a usable GPU).
    pub fn gpus(&self) -> Vec<Gpu> {
        self.get("gpu")
            .filter(|c| c.status != Status::Missing)
            .and_then(|c| c.version.as_deref())
            .map(|v| parse_gpus(&v.replace("; ", "\n")))
            .unwrap_or_default()
    }

    /// Where a tool was found (`nvcc`, `cuda-gdb`, ...), also off PATH, if it runs; with a
    /// container, the path inside the image.
    pub fn tool_path(&self, name: &str) -> Option<&Path> {
        self.get(name).filter(|c| c.status != Status::Missing).and_then(|c| c.path.as_deref())
    }

    /// Directories of tools found only outside PATH (in `$CUDA_HOME/bin` or
    /// `/usr/local/cuda/bin`), in check order and without repeats: the ladder can put them
    /// in front of the PATH it gives the target and the tools. Empty with a container (a
    /// tool off the image's PATH is a warning whose fix is the image's).
    pub fn path_additions(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Vec::new();
        for c in &self.checks {
            let usable = c.off_path && c.status != Status::Missing;
            if let (true, Some(dir)) = (usable, c.path.as_deref().and_then(Path::parent)) {
                if !out.iter().any(|d| d == dir) {
                    out.push(dir.to_path_buf());
                }
            }
        }
        out
    }
}

/// What to check, and where.
#[derive(Debug, Clone)]
pub struct Options {
    /// The directory coredumps will be written to; it need not exist yet (its nearest
    /// existing ancestor is measured).
    pub coredump_dir: PathBuf,
    /// The rungs to check for (names from [`RUNGS`]); empty means every rung.
    pub need: Vec<String>,
    /// The container the ladder will run in: `None` (or [`Runtime::None`]) checks the
    /// host's tools; otherwise the runtime, the image, the GPU plumbing, and the tools,
    /// the debugger back-end and `/tmp` inside the image, in place of the host's.
    pub container: Option<ContainerTarget>,
}

/// The container the ladder's rungs run in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContainerTarget {
    pub runtime: Runtime,
    /// A Docker/Podman image reference (`debug-ima/cuda:13.0`), or for Apptainer an image
    /// file, a sandbox directory or a `docker://`/`oras://` URI.
    pub image: String,
    /// Whether the GPUs are passed in ([`Runtime::gpu_args`]): then the GPU plumbing is
    /// checked and the probe runs with them, so it sees the driver's libraries.
    pub gpus: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options { coredump_dir: PathBuf::from("bundles"), need: Vec::new(), container: None }
    }
}

impl Options {
    /// The container to check, when there is one (a runtime other than [`Runtime::None`]).
    pub fn container_target(&self) -> Option<&ContainerTarget> {
        self.container.as_ref().filter(|t| t.runtime != Runtime::None)
    }

    /// Whether a check needed by `needed_by` is wanted for these options.
    fn wants(&self, needed_by: &[&str]) -> bool {
        self.need.is_empty()
            || needed_by.contains(&"all")
            || self.need.iter().any(|n| n == "all" || needed_by.contains(&n.as_str()))
    }
}

/// The rungs each check is needed by.
const NEED_GPU: &[&str] = &["all"];
const NEED_NVCC: &[&str] = &["rebuild"];
const NEED_CUOBJDUMP: &[&str] = &["rebuild", "coredump"];
const NEED_CUDA_GDB: &[&str] = &["coredump", "attach"];
const NEED_SANITIZER: &[&str] = &["memcheck"];
const NEED_BACKEND: &[&str] = &["attach"];
const NEED_PTRACE: &[&str] = &["attach"];
const NEED_TMPDIR: &[&str] = &["coredump", "attach"];
const NEED_SPACE: &[&str] = &["coredump"];
const NEED_CONTAINER: &[&str] = &["all"];

/// Runs every check `opts` asks for on this machine. Takes about [`PROBE_TIMEOUT`] at
/// worst (a hanging `nvidia-smi`); on a machine without a GPU, well under a second.
pub fn run_checks(opts: &Options) -> Report {
    evaluate(&gather(&SystemProbe, opts))
}

/// `debug-ima`'s gate: an error naming every missing check that `rungs` need, with its
/// fix, or `Ok` when they can all run (warnings do not stop it).
pub fn require(report: &Report, rungs: &[&str]) -> Result<()> {
    let missing = report.missing_for(rungs);
    if missing.is_empty() {
        return Ok(());
    }
    let mut msg = if report.has_gpu() {
        format!("this machine cannot run the {} rung(s): something they need is missing", rungs.join(", "))
    } else {
        "this machine cannot run the ladder: no usable GPU".to_string()
    };
    for c in missing {
        let _ = write!(msg, "\n  {} ({}): {}", c.name, c.needed_by.join(", "), c.detail);
        if let Some(fix) = &c.fix {
            let _ = write!(msg, "\n    fix: {fix}");
        }
    }
    msg.push_str("\n`cargo xtask doctor` lists every check");
    bail!(msg)
}

/// Tool name to version line, for the bundle manifest: `gpu` (the `nvidia-smi` lines),
/// `driver`, `nvcc`, `cuobjdump`, `cuda-gdb`, `compute-sanitizer` (with a container, as
/// found inside the image), `runtime` (`docker 20.10.24+dfsg1`) and `image` (its id),
/// where known.
pub fn versions(report: &Report) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for c in &report.checks {
        let Some(v) = &c.version else { continue };
        out.insert(c.name.clone(), v.clone());
        if c.name == "gpu" {
            if let Some(gpu) = parse_gpus(&v.replace("; ", "\n")).into_iter().next() {
                out.insert("driver".to_string(), gpu.driver);
            }
        }
    }
    out
}

/// The report as a table for humans, then one line that says what can run. Pure and
/// deterministic: the same report gives the same text.
pub fn render(report: &Report) -> String {
    let header = ["check", "status", "needed by", "found"];
    let rows: Vec<[String; 4]> = report
        .checks
        .iter()
        .map(|c| [c.name.clone(), c.status.as_str().to_string(), c.needed_by.join(", "), c.detail.clone()])
        .collect();
    let mut width = [0usize; 3];
    for row in std::iter::once(&header.map(String::from)).chain(rows.iter()) {
        for (w, cell) in width.iter_mut().zip(row.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let indent = width.iter().sum::<usize>() + 3 * 2;
    let mut out = String::new();
    let line = |out: &mut String, row: &[String; 4]| {
        let _ = writeln!(
            out,
            "{:w0$}  {:w1$}  {:w2$}  {}",
            row[0],
            row[1],
            row[2],
            row[3],
            w0 = width[0],
            w1 = width[1],
            w2 = width[2]
        );
    };
    line(&mut out, &header.map(String::from));
    for (c, row) in report.checks.iter().zip(&rows) {
        line(&mut out, row);
        if let Some(fix) = &c.fix {
            let _ = writeln!(out, "{:indent$}fix: {fix}", "");
        }
    }
    out.push('\n');
    out.push_str(&summary(report));
    out.push('\n');
    out
}

/// One line: what can run here and what cannot.
fn summary(report: &Report) -> String {
    if !report.has_gpu() {
        return "the ladder cannot run here: no usable GPU; `cargo xtask analyze` reads logs recorded on a GPU \
                machine"
            .to_string();
    }
    let missing: Vec<String> = report
        .missing_for(&["all"])
        .iter()
        .map(|c| format!("{} ({})", c.name, c.needed_by.join(", ")))
        .collect();
    let warns = report.warnings_for(&["all"]).len();
    let warn_note = match warns {
        0 => String::new(),
        1 => "; 1 warning".to_string(),
        n => format!("; {n} warnings"),
    };
    if missing.is_empty() {
        format!("ready: every checked rung can run{warn_note}")
    } else {
        format!("missing: {}; the rungs that need it will be skipped{warn_note}", missing.join(", "))
    }
}

// ---------------------------------------------------------------------------------------
// `cargo xtask doctor`
// ---------------------------------------------------------------------------------------

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Print the checks as JSON instead of a table
    #[arg(long)]
    pub json: bool,
    /// The directory coredumps will go to; its free space is checked
    #[arg(long, value_name = "DIR", default_value = "bundles")]
    pub coredump_dir: PathBuf,
    /// Check only what this rung needs (repeatable); default every rung
    #[arg(long = "rung", value_name = "RUNG", value_parser = clap::builder::PossibleValuesParser::new(RUNGS))]
    pub rungs: Vec<String>,
    /// Check running the ladder in a container: the runtime, the GPU plumbing, the image
    /// (`--image`) and the tools inside it
    #[arg(long, value_enum, value_name = "RUNTIME")]
    pub container: Option<Runtime>,
    /// The image for `--container`: a local Docker/Podman image, or an Apptainer `.sif`
    #[arg(
        long,
        value_name = "IMAGE",
        requires = "container",
        required_if_eq_any = [("container", "docker"), ("container", "podman"), ("container", "apptainer")]
    )]
    pub image: Option<String>,
}

/// Runs `cargo xtask doctor`: prints the table (or JSON) and returns the exit code, 0 when
/// nothing the chosen rungs need is missing, 1 otherwise.
pub fn run(args: DoctorArgs) -> Result<i32> {
    let container = match (args.container, args.image) {
        (Some(runtime), Some(image)) if runtime != Runtime::None => {
            Some(ContainerTarget { runtime, image, gpus: true })
        }
        (Some(runtime), None) if runtime != Runtime::None => {
            // clap enforces it; kept so that a change there cannot check the host by mistake.
            bail!("`--container {}` needs `--image IMAGE`", runtime.name())
        }
        _ => None,
    };
    let opts = Options { coredump_dir: args.coredump_dir, need: args.rungs, container };
    let report = run_checks(&opts);
    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&report)?;
        s.push('\n');
        s
    } else {
        render(&report)
    };
    ui::out(&text)?;
    let rungs: Vec<&str> =
        if opts.need.is_empty() { vec!["all"] } else { opts.need.iter().map(String::as_str).collect() };
    Ok(if report.missing_for(&rungs).is_empty() { 0 } else { 1 })
}

// ---------------------------------------------------------------------------------------
// Probing: the impure layer
// ---------------------------------------------------------------------------------------

/// How a probe's command ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Exit {
    Code(i32),
    Signal(i32),
    /// Killed after its timeout.
    TimedOut,
    /// Could not be started (the error).
    NotRun(String),
}

/// What a probe's command printed, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Output {
    pub exit: Exit,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// An output with exit code `code` (for tests and recordings).
    pub fn exited(code: i32, stdout: &str, stderr: &str) -> Output {
        Output { exit: Exit::Code(code), stdout: stdout.to_string(), stderr: stderr.to_string() }
    }

    pub fn success(&self) -> bool {
        self.exit == Exit::Code(0)
    }

    /// stdout then stderr.
    pub fn text(&self) -> String {
        let mut s = self.stdout.clone();
        if !s.is_empty() && !s.ends_with('\n') {
            s.push('\n');
        }
        s.push_str(&self.stderr);
        s
    }

    /// The first non-blank line of stdout, else of stderr.
    fn first_line(&self) -> &str {
        first_line(&self.stdout).or_else(|| first_line(&self.stderr)).unwrap_or("")
    }

    /// `exit 2`, `killed by signal 9`, `no answer within 10 s`, `cannot start: ...`.
    fn describe_exit(&self) -> String {
        match &self.exit {
            Exit::Code(c) => format!("exit {c}"),
            Exit::Signal(s) => format!("killed by signal {s}"),
            Exit::TimedOut => format!("no answer within {} s", PROBE_TIMEOUT.as_secs()),
            Exit::NotRun(e) => format!("cannot start: {e}"),
        }
    }
}

fn first_line(s: &str) -> Option<&str> {
    s.lines().map(str::trim).find(|l| !l.is_empty())
}

/// Everything the checks look at on a machine. [`SystemProbe`] is the real one; tests
/// implement it over recorded outputs.
pub trait Probe: Sync {
    /// Runs `program args` with stdin closed, killing it (and its process group) after
    /// `timeout`.
    fn run(&self, program: &Path, args: &[&str], timeout: Duration) -> Output;
    /// A text file's content, `None` when it cannot be read (absent included).
    fn read_file(&self, path: &Path) -> Option<String>;
    /// An environment variable of this process.
    fn env(&self, key: &str) -> Option<String>;
    /// A regular file with an execute bit.
    fn is_executable(&self, path: &Path) -> bool;
    fn is_file(&self, path: &Path) -> bool;
    fn is_dir(&self, path: &Path) -> bool;
    /// Creates and removes a file in `dir`: `Err` says why it cannot be written.
    fn check_writable(&self, dir: &Path) -> std::result::Result<(), String>;
}

/// The real machine.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemProbe;

impl Probe for SystemProbe {
    fn run(&self, program: &Path, args: &[&str], timeout: Duration) -> Output {
        run_with_timeout(program, args, timeout)
    }

    fn read_file(&self, path: &Path) -> Option<String> {
        std::fs::read(path).ok().map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    fn env(&self, key: &str) -> Option<String> {
        std::env::var_os(key).map(|v| v.to_string_lossy().into_owned())
    }

    fn is_executable(&self, path: &Path) -> bool {
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }

    fn is_file(&self, path: &Path) -> bool {
        path.is_file()
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }

    fn check_writable(&self, dir: &Path) -> std::result::Result<(), String> {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let name = format!(".xtask-doctor-{}-{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed));
        let file = dir.join(name);
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&file) {
            Ok(_) => {
                let _ = std::fs::remove_file(&file);
                Ok(())
            }
            Err(e) => Err(e.to_string()),
        }
    }
}

/// Runs a short command in its own process group, polling `try_wait` until it exits or
/// `timeout` passes, then kills the group. Output beyond [`MAX_PROBE_OUTPUT`] per stream is
/// dropped. A pipe still open [`READER_GRACE`] after the child ended means a leftover in
/// the group: the group is killed; a reader still blocked after that (a process that left
/// the group holds the pipe) is abandoned.
pub fn run_with_timeout(program: &Path, args: &[&str], timeout: Duration) -> Output {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Output { exit: Exit::NotRun(e.to_string()), stdout: String::new(), stderr: String::new() }
        }
    };
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let deadline = Instant::now() + timeout;
    let mut nap = Duration::from_millis(2);
    let exit = loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                break match (status.code(), status.signal()) {
                    (Some(c), _) => Exit::Code(c),
                    (None, Some(s)) => Exit::Signal(s),
                    (None, None) => Exit::NotRun("no exit status".into()),
                };
            }
            Ok(None) if Instant::now() < deadline => {
                thread::sleep(nap);
                nap = (nap * 2).min(Duration::from_millis(50));
            }
            Ok(None) => {
                kill_group(&mut child);
                break Exit::TimedOut;
            }
            Err(e) => {
                kill_group(&mut child);
                break Exit::NotRun(e.to_string());
            }
        }
    };
    // A pipe still open after the exit is held by a leftover of the group (a background
    // grandchild): that member keeps the group's id reserved, so killing the group is safe.
    let pgid = child.id();
    let collect = |rx: Option<mpsc::Receiver<String>>| {
        let rx = rx?;
        rx.recv_timeout(READER_GRACE).ok().or_else(|| {
            killpg(pgid);
            rx.recv_timeout(READER_GRACE).ok()
        })
    };
    let stdout = collect(stdout).unwrap_or_default();
    let stderr = collect(stderr).unwrap_or_default();
    Output { exit, stdout, stderr }
}

fn killpg(pgid: u32) {
    if let Ok(pid) = i32::try_from(pgid) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
}

fn kill_group(child: &mut std::process::Child) {
    killpg(child.id());
    let _ = child.kill();
    let _ = child.wait();
}

/// Reads a pipe to its end on a thread, keeping the first [`MAX_PROBE_OUTPUT`] bytes.
fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> Option<mpsc::Receiver<String>> {
    let mut pipe = pipe?;
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = MAX_PROBE_OUTPUT.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        }
        let _ = tx.send(String::from_utf8_lossy(&kept).into_owned());
    });
    Some(rx)
}

/// Where a tool was looked for and found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Found {
    /// In a directory of PATH.
    OnPath(PathBuf),
    /// Not on PATH but here (`$CUDA_HOME/bin`, `/usr/local/cuda/bin`, ...).
    OffPath(PathBuf),
    /// Nowhere; the directories searched besides PATH.
    NotFound { searched: Vec<PathBuf> },
}

impl Found {
    pub fn path(&self) -> Option<&Path> {
        match self {
            Found::OnPath(p) | Found::OffPath(p) => Some(p),
            Found::NotFound { .. } => None,
        }
    }
}

/// A tool: where it was found and what its version command printed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolFacts {
    pub name: String,
    pub found: Found,
    /// `None` when the tool was not found (so not run).
    pub output: Option<Output>,
}

/// What [`gather`] saw, raw: the input of [`evaluate`]. A `None` section was not asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Facts {
    /// `nvidia-smi --query-gpu=... --format=csv,noheader`.
    pub gpu: Option<ToolFacts>,
    /// `nvcc`, `cuobjdump`, `cuda-gdb`, `compute-sanitizer` with `--version`, in this order.
    pub tools: Vec<ToolFacts>,
    pub debugger_backend: Option<BackendFacts>,
    pub ptrace: Option<PtraceFacts>,
    pub tmpdir: Option<TmpdirFacts>,
    pub coredump: Option<SpaceFacts>,
    pub core: Option<CoreFacts>,
    /// The container the ladder runs in; then `tools` and `debugger_backend` stay empty
    /// (the host's are not probed) and `tmpdir` is `None`: the image's are checked.
    pub container: Option<ContainerFacts>,
}

/// Where `libcudadebugger.so.1` (the driver's debugger back-end, needed by cuda-gdb) is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BackendFacts {
    /// `ldconfig -p`, if ldconfig was found.
    pub ldconfig: Option<Output>,
    /// Copies found in the directories of `LD_LIBRARY_PATH`.
    pub in_ld_library_path: Vec<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PtraceFacts {
    /// `/proc/self/status` (its `Uid:` and `CapEff:` lines are read).
    pub proc_status: Option<String>,
    /// `/proc/sys/kernel/yama/ptrace_scope`; `None` when absent (no Yama).
    pub ptrace_scope: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TmpdirFacts {
    /// `$TMPDIR`, if set (even empty).
    pub env: Option<String>,
    /// The directory cuda-gdb and the target will use: `$TMPDIR` or `/tmp`.
    pub dir: PathBuf,
    pub is_dir: bool,
    pub writable: std::result::Result<(), String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpaceFacts {
    /// The coredump directory as given.
    pub dir: PathBuf,
    /// Its nearest existing ancestor (itself when it exists), which was measured.
    pub measured: PathBuf,
    pub writable: std::result::Result<(), String>,
    /// `df -Pk MEASURED`; `None` when df was not found.
    pub df: Option<Output>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CoreFacts {
    /// `/proc/sys/kernel/core_pattern`.
    pub core_pattern: Option<String>,
    /// `/proc/self/limits` (its `Max core file size` line is read).
    pub limits: Option<String>,
}

/// A tool to look for: its name and where to look after PATH.
fn extra_dirs(name: &str, cuda_home: Option<&str>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if name == "nvidia-smi" {
        // The driver's own places: distro packages, NVIDIA's container mounts, WSL.
        for d in ["/usr/bin", "/usr/local/nvidia/bin", "/usr/lib/wsl/lib"] {
            dirs.push(PathBuf::from(d));
        }
        return dirs;
    }
    let homes: Vec<PathBuf> = cuda_home
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .into_iter()
        .chain(std::iter::once(PathBuf::from(CUDA_DEFAULT_HOME)))
        .collect();
    for h in &homes {
        dirs.push(h.join("bin"));
    }
    if name == "compute-sanitizer" {
        // Some installs keep only the real binary in its own directory.
        for h in &homes {
            dirs.push(h.join("compute-sanitizer"));
        }
    }
    dirs.dedup();
    dirs
}

/// Looks for `name` in PATH, then in [`extra_dirs`].
pub fn locate(probe: &dyn Probe, name: &str) -> Found {
    let path = probe.env("PATH").unwrap_or_default();
    for dir in path.split(':').filter(|d| !d.is_empty()) {
        let candidate = Path::new(dir).join(name);
        if probe.is_executable(&candidate) {
            return Found::OnPath(candidate);
        }
    }
    let searched = extra_dirs(name, probe.env("CUDA_HOME").as_deref());
    for dir in &searched {
        let candidate = dir.join(name);
        if probe.is_executable(&candidate) {
            return Found::OffPath(candidate);
        }
    }
    Found::NotFound { searched }
}

fn probe_tool(probe: &dyn Probe, name: &str, args: &[&str]) -> ToolFacts {
    let found = locate(probe, name);
    let output = found.path().map(|p| probe.run(p, args, PROBE_TIMEOUT));
    ToolFacts { name: name.to_string(), found, output }
}

fn probe_gpu(probe: &dyn Probe) -> ToolFacts {
    let mut facts = probe_tool(probe, "nvidia-smi", &[GPU_QUERY, "--format=csv,noheader"]);
    let old_driver =
        facts.output.as_ref().is_some_and(|o| o.text().contains("is not a valid field to query"));
    if let (true, Some(path)) = (old_driver, facts.found.path()) {
        facts.output = Some(probe.run(path, &[GPU_QUERY_OLD, "--format=csv,noheader"], PROBE_TIMEOUT));
    }
    facts
}

fn probe_backend(probe: &dyn Probe) -> BackendFacts {
    let ldconfig = match locate(probe, "ldconfig") {
        Found::NotFound { .. } => ["/sbin/ldconfig", "/usr/sbin/ldconfig"]
            .iter()
            .map(Path::new)
            .find(|p| probe.is_executable(p))
            .map(Path::to_path_buf),
        found => found.path().map(Path::to_path_buf),
    };
    let ldconfig = ldconfig.map(|p| probe.run(&p, &["-p"], PROBE_TIMEOUT));
    let in_ld_library_path = probe
        .env("LD_LIBRARY_PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join("libcudadebugger.so.1"))
        .filter(|p| probe.is_file(p))
        .collect();
    BackendFacts { ldconfig, in_ld_library_path }
}

fn probe_space(probe: &dyn Probe, dir: &Path) -> SpaceFacts {
    let mut measured = dir.to_path_buf();
    loop {
        let here = if measured.as_os_str().is_empty() { Path::new(".") } else { measured.as_path() };
        if probe.is_dir(here) {
            measured = here.to_path_buf();
            break;
        }
        match measured.parent() {
            Some(p) => measured = p.to_path_buf(),
            None => {
                measured = PathBuf::from(if dir.is_absolute() { "/" } else { "." });
                break;
            }
        }
    }
    let writable = probe.check_writable(&measured);
    let df = match locate(probe, "df") {
        Found::NotFound { .. } => None,
        found => found.path().map(|p| {
            let arg = measured.to_string_lossy().into_owned();
            probe.run(p, &["-Pk", &arg], PROBE_TIMEOUT)
        }),
    };
    SpaceFacts { dir: dir.to_path_buf(), measured, writable, df }
}

fn probe_tmpdir(probe: &dyn Probe) -> TmpdirFacts {
    let env = probe.env("TMPDIR");
    let dir = PathBuf::from(env.as_deref().filter(|t| !t.is_empty()).unwrap_or("/tmp"));
    let is_dir = probe.is_dir(&dir);
    let writable = if is_dir { probe.check_writable(&dir) } else { Err("not a directory".to_string()) };
    TmpdirFacts { env, dir, is_dir, writable }
}

/// The script the doctor runs inside the image (`sh -c`): one `key=value` line per finding,
/// between `probe=debug-ima-doctor 1` and `end=ok`, for [`parse_image_probe`]:
///
/// - `id=` the uid the image runs as (`id -u`), `path=` its `PATH`;
/// - per tool (`nvcc`, `cuobjdump`, `cuda-gdb`, `compute-sanitizer`): `TOOL=` where it was
///   found (on `PATH`, then in `$CUDA_HOME/bin`, `/usr/local/cuda/bin`, and for
///   compute-sanitizer `.../compute-sanitizer`; empty when nowhere), then, when found,
///   `TOOL_exit=` the exit status of `TOOL --version` and `TOOL_out=` each of its first 20
///   non-blank output lines;
/// - `libcudadebugger=` each copy of the driver's debugger back-end, from `ldconfig -p` and
///   the directories of `LD_LIBRARY_PATH`, `/usr/lib/x86_64-linux-gnu`,
///   `/usr/lib/aarch64-linux-gnu`, `/usr/lib64`, `/usr/local/nvidia/lib64` and
///   `/.singularity.d/libs` (where the runtimes mount the driver's libraries);
/// - `tmp=writable` or `tmp=not writable`: whether a file can be created in `/tmp` (the
///   rungs' `TMPDIR` there); it is removed at once.
///
/// Plain POSIX `sh` with no other tool needed (busybox and distro images alike).
pub const IMAGE_PROBE_SCRIPT: &str = r#"set -f
echo "probe=debug-ima-doctor 1"
echo "id=$(id -u 2>/dev/null)"
echo "path=$PATH"
tool() {
  n=$1
  shift
  p=$(command -v "$n" 2>/dev/null)
  case $p in /*) ;; *) p= ;; esac
  if [ -z "$p" ]; then
    for d in "$@"; do
      if [ -f "$d/$n" ] && [ -x "$d/$n" ]; then p=$d/$n; break; fi
    done
  fi
  echo "$n=$p"
  [ -n "$p" ] || return 0
  o=$("$p" --version 2>&1 </dev/null)
  echo "${n}_exit=$?"
  printf '%s\n' "$o" | {
    k=0
    while [ $k -lt 20 ] && IFS= read -r l; do
      [ -n "$l" ] && printf '%s_out=%s\n' "$n" "$l"
      k=$((k + 1))
    done
  }
}
c=${CUDA_HOME:-/usr/local/cuda}
tool nvcc "$c/bin" /usr/local/cuda/bin
tool cuobjdump "$c/bin" /usr/local/cuda/bin
tool cuda-gdb "$c/bin" /usr/local/cuda/bin
tool compute-sanitizer "$c/bin" /usr/local/cuda/bin "$c/compute-sanitizer" /usr/local/cuda/compute-sanitizer
for l in ldconfig /sbin/ldconfig /usr/sbin/ldconfig; do
  if command -v "$l" >/dev/null 2>&1; then
    "$l" -p 2>/dev/null | while IFS= read -r e; do
      case $e in *"libcudadebugger.so.1 "*"=> "*) echo "libcudadebugger=${e##*=> }" ;; esac
    done
    break
  fi
done
IFS=:
for d in $LD_LIBRARY_PATH /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 \
  /usr/local/nvidia/lib64 /.singularity.d/libs; do
  if [ -n "$d" ] && [ -e "$d/libcudadebugger.so.1" ]; then echo "libcudadebugger=$d/libcudadebugger.so.1"; fi
done
unset IFS
t=/tmp/.debug-ima-doctor-$$
if (: >"$t") 2>/dev/null; then rm -f "$t"; echo "tmp=writable"; else echo "tmp=not writable"; fi
echo "end=ok"
"#;

/// The tools the probe in the image looks for, in check order.
const IMAGE_TOOLS: [&str; 4] = ["nvcc", "cuobjdump", "cuda-gdb", "compute-sanitizer"];
/// Where the NVIDIA Container Toolkit writes its CDI specs (`nvidia-ctk cdi generate`).
pub const CDI_SPECS: [&str; 4] =
    ["/etc/cdi/nvidia.yaml", "/etc/cdi/nvidia.json", "/var/run/cdi/nvidia.yaml", "/var/run/cdi/nvidia.json"];
/// Apptainer's list of the driver's libraries that `--nv` binds in.
pub const NVLIBLIST: [&str; 2] = ["/etc/apptainer/nvliblist.conf", "/usr/local/etc/apptainer/nvliblist.conf"];

/// The command that runs `script` inside the image: `docker run --rm --name NAME
/// --pull=never --network=none [GPUs] --entrypoint sh IMAGE -c SCRIPT` (Podman alike; the
/// name lets a container that outlives its timeout be removed), `apptainer exec --cleanenv
/// [--nv] IMAGE sh -c SCRIPT`. Empty for [`Runtime::None`].
pub fn image_probe_argv(target: &ContainerTarget, name: &str, script: &str) -> Vec<String> {
    let mut argv: Vec<String> = Vec::new();
    match target.runtime {
        Runtime::Docker | Runtime::Podman => {
            argv.extend(
                [target.runtime.name(), "run", "--rm", "--name", name, "--pull=never", "--network=none"]
                    .map(String::from),
            );
            if target.gpus {
                argv.extend(target.runtime.gpu_args());
            }
            argv.extend(["--entrypoint", "sh", &target.image, "-c", script].map(String::from));
        }
        Runtime::Apptainer => {
            argv.extend(["apptainer", "exec", "--cleanenv"].map(String::from));
            if target.gpus {
                argv.extend(target.runtime.gpu_args());
            }
            argv.extend([&target.image, "sh", "-c", script].map(String::from));
        }
        Runtime::None => {}
    }
    argv
}

/// The image's local inspection: its id and repository digests (`ID|DIGEST,...`). Not
/// `{{join .RepoDigests ","}}`: Docker 20.10's engine with a newer client refuses it
/// (`wrong type for value; expected []string; got []interface {}`).
fn inspect_argv(runtime: Runtime, image: &str) -> Vec<String> {
    [
        runtime.name(),
        "image",
        "inspect",
        "--format",
        "{{.Id}}|{{range $i, $d := .RepoDigests}}{{if $i}},{{end}}{{$d}}{{end}}",
        image,
    ]
    .map(String::from)
    .to_vec()
}

/// Whether an Apptainer image names a remote one (`docker://`, `oras://`, `library://`):
/// pulled when first run, so nothing local to check.
fn is_image_uri(image: &str) -> bool {
    image.split_once("://").is_some_and(|(scheme, _)| !scheme.is_empty() && !scheme.contains('/'))
}

/// What the container checks saw, raw: the input of [`check_runtime`], [`check_image`],
/// [`check_gpu_plumbing`] and the checks made from the probe inside the image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContainerFacts {
    pub target: ContainerTarget,
    /// The runtime's client (`docker`, `podman`, `apptainer`), on PATH or in `/usr/bin`.
    pub client: Option<PathBuf>,
    /// Its version command ([`Runtime::version`]); `None` when the client was not found.
    pub version: Option<Output>,
    /// Docker/Podman: `image inspect`; `None` when not run (the runtime does not answer).
    pub inspect: Option<Output>,
    /// Apptainer: the image is a file, or a directory (a sandbox).
    pub image_is_file: bool,
    pub image_is_dir: bool,
    /// Only when the GPUs are passed in.
    pub plumbing: Option<PlumbingFacts>,
    /// The checks the probe in the image answers for, in check order (`nvcc`, ...,
    /// `cuda-debugger-backend`, `tmpdir`): those the chosen rungs need.
    pub in_image_checks: Vec<String>,
    /// [`IMAGE_PROBE_SCRIPT`] run in the image; `None` when it was not run (the runtime or
    /// the image is missing, an Apptainer URI, or nothing asked for needs it).
    pub in_image: Option<Output>,
}

/// What makes `--gpus all`, `--device nvidia.com/gpu=all` or `--nv` work.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PlumbingFacts {
    /// `nvidia-ctk` and `nvidia-container-cli`, where found on PATH.
    pub toolkit: Vec<PathBuf>,
    /// Docker only: `docker info --format '{{json .Runtimes}}'`.
    pub docker_runtimes: Option<Output>,
    /// The CDI specs of [`CDI_SPECS`] that exist.
    pub cdi_specs: Vec<PathBuf>,
    /// Apptainer only: the `nvliblist.conf` files of [`NVLIBLIST`] and their text.
    pub nvliblist: Vec<(PathBuf, String)>,
}

/// A program on PATH, else in `/usr/bin` (no CUDA directories: for runtimes and the
/// container toolkit).
fn on_path(probe: &dyn Probe, name: &str) -> Option<PathBuf> {
    let path = probe.env("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .filter(|d| !d.is_empty())
        .chain(["/usr/bin"])
        .map(|d| Path::new(d).join(name))
        .find(|p| probe.is_executable(p));
    found
}

/// Runs `argv` (its first word located with [`on_path`] as `client`).
fn run_argv(probe: &dyn Probe, client: &Path, argv: &[String], timeout: Duration) -> Output {
    let args: Vec<&str> = argv.iter().skip(1).map(String::as_str).collect();
    probe.run(client, &args, timeout)
}

/// The runtime, then the image, then (when both answered and `in_image_checks` or the
/// ptrace check need it) the probe inside the image: one after the other, since each
/// needs the one before.
fn probe_container(
    probe: &dyn Probe,
    target: &ContainerTarget,
    in_image_checks: Vec<String>,
    uid_wanted: bool,
) -> ContainerFacts {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let runtime = target.runtime;
    let client = on_path(probe, runtime.name());
    let version = client.as_deref().map(|c| run_argv(probe, c, &runtime.version(), PROBE_TIMEOUT));
    let answered = version.as_ref().is_some_and(Output::success);
    let uri = runtime == Runtime::Apptainer && is_image_uri(&target.image);
    let (image_is_file, image_is_dir) = if runtime == Runtime::Apptainer && !uri {
        let p = Path::new(&target.image);
        (probe.is_file(p), probe.is_dir(p))
    } else {
        (false, false)
    };
    let inspect = match (runtime, client.as_deref(), answered) {
        (Runtime::Docker | Runtime::Podman, Some(c), true) => {
            Some(run_argv(probe, c, &inspect_argv(runtime, &target.image), PROBE_TIMEOUT))
        }
        _ => None,
    };
    let image_ok = match runtime {
        Runtime::Docker | Runtime::Podman => inspect.as_ref().is_some_and(Output::success),
        _ => image_is_file || image_is_dir,
    };
    let mut in_image = None;
    if let (Some(c), true, true) =
        (client.as_deref(), answered && image_ok, !in_image_checks.is_empty() || uid_wanted)
    {
        let name = format!("debug-ima-doctor-{}-{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed));
        let out =
            run_argv(probe, c, &image_probe_argv(target, &name, IMAGE_PROBE_SCRIPT), IMAGE_PROBE_TIMEOUT);
        if out.exit == Exit::TimedOut && runtime != Runtime::Apptainer {
            // Killing the client leaves the container running: remove it by name.
            let rm = [runtime.name(), "rm", "-f", &name].map(String::from);
            let _ = run_argv(probe, c, &rm, PROBE_TIMEOUT);
        }
        in_image = Some(out);
    }
    ContainerFacts {
        target: target.clone(),
        client,
        version,
        inspect,
        image_is_file,
        image_is_dir,
        plumbing: None,
        in_image_checks,
        in_image,
    }
}

fn probe_plumbing(probe: &dyn Probe, runtime: Runtime) -> PlumbingFacts {
    let toolkit =
        ["nvidia-ctk", "nvidia-container-cli"].into_iter().filter_map(|n| on_path(probe, n)).collect();
    let cdi_specs = CDI_SPECS.iter().map(PathBuf::from).filter(|p| probe.is_file(p)).collect();
    let docker_runtimes = match (runtime, on_path(probe, "docker")) {
        (Runtime::Docker, Some(docker)) => {
            Some(probe.run(&docker, &["info", "--format", "{{json .Runtimes}}"], PROBE_TIMEOUT))
        }
        _ => None,
    };
    let nvliblist = if runtime == Runtime::Apptainer {
        NVLIBLIST
            .iter()
            .filter_map(|p| probe.read_file(Path::new(p)).map(|t| (PathBuf::from(p), t)))
            .collect()
    } else {
        Vec::new()
    };
    PlumbingFacts { toolkit, docker_runtimes, cdi_specs, nvliblist }
}

/// Looks at the machine through `probe`, for the checks `opts` asks for. The commands run
/// in parallel threads, each within [`PROBE_TIMEOUT`] (the probe inside a container image
/// within [`IMAGE_PROBE_TIMEOUT`]). With a container, the host's CUDA tools, debugger
/// back-end and TMPDIR are not probed: the image's are.
pub fn gather(probe: &dyn Probe, opts: &Options) -> Facts {
    let target = opts.container_target();
    let tools: Vec<(&str, &[&str])> = [
        ("nvcc", NEED_NVCC),
        ("cuobjdump", NEED_CUOBJDUMP),
        ("cuda-gdb", NEED_CUDA_GDB),
        ("compute-sanitizer", NEED_SANITIZER),
    ]
    .into_iter()
    .filter(|(_, need)| opts.wants(need))
    .collect();
    let (host_tools, in_image_checks): (Vec<&str>, Vec<String>) = match target {
        None => (tools.iter().map(|(name, _)| *name).collect(), Vec::new()),
        Some(_) => {
            let mut names: Vec<String> = tools.iter().map(|(name, _)| name.to_string()).collect();
            if opts.wants(NEED_BACKEND) {
                names.push("cuda-debugger-backend".into());
            }
            if opts.wants(NEED_TMPDIR) {
                names.push("tmpdir".into());
            }
            (Vec::new(), names)
        }
    };
    let on_host = target.is_none();
    thread::scope(|s| {
        let gpu = s.spawn(|| probe_gpu(probe));
        let tools: Vec<_> =
            host_tools.iter().map(|name| s.spawn(move || probe_tool(probe, name, &["--version"]))).collect();
        let backend = (on_host && opts.wants(NEED_BACKEND)).then(|| s.spawn(|| probe_backend(probe)));
        let space = opts.wants(NEED_SPACE).then(|| s.spawn(|| probe_space(probe, &opts.coredump_dir)));
        let container = target.map(|t| {
            let uid_wanted = opts.wants(NEED_PTRACE);
            s.spawn(move || probe_container(probe, t, in_image_checks, uid_wanted))
        });
        let plumbing = target.filter(|t| t.gpus).map(|t| s.spawn(move || probe_plumbing(probe, t.runtime)));
        let tmpdir = (on_host && opts.wants(NEED_TMPDIR)).then(|| probe_tmpdir(probe));
        let ptrace = opts.wants(NEED_PTRACE).then(|| PtraceFacts {
            proc_status: probe.read_file(Path::new("/proc/self/status")),
            ptrace_scope: probe.read_file(Path::new("/proc/sys/kernel/yama/ptrace_scope")),
        });
        let core = opts.wants(NEED_SPACE).then(|| CoreFacts {
            core_pattern: probe.read_file(Path::new("/proc/sys/kernel/core_pattern")),
            limits: probe.read_file(Path::new("/proc/self/limits")),
        });
        fn join<T>(h: thread::ScopedJoinHandle<'_, T>) -> T {
            h.join().expect("a doctor probe panicked")
        }
        let container = container.map(|h| ContainerFacts { plumbing: plumbing.map(join), ..join(h) });
        Facts {
            gpu: Some(join(gpu)),
            tools: tools.into_iter().map(join).collect(),
            debugger_backend: backend.map(join),
            ptrace,
            tmpdir,
            coredump: space.map(join),
            core,
            container,
        }
    })
}

// ---------------------------------------------------------------------------------------
// Checks: the pure layer
// ---------------------------------------------------------------------------------------

/// Every check for the facts gathered, in a fixed order.
pub fn evaluate(facts: &Facts) -> Report {
    let mut checks = Vec::new();
    if let Some(gpu) = &facts.gpu {
        checks.push(check_gpu(gpu));
    }
    let mut in_image = None;
    match &facts.container {
        None => {
            let nvcc = facts.tools.iter().find(|t| t.name == "nvcc");
            if let (Some(gpu), Some(nvcc)) = (&facts.gpu, nvcc) {
                checks.extend(check_driver_toolkit(gpu, nvcc));
            }
            for tool in &facts.tools {
                checks.push(check_tool(tool));
            }
            if let Some(b) = &facts.debugger_backend {
                checks.push(check_debugger_backend(b));
            }
        }
        Some(c) => {
            let runtime = check_runtime(c);
            let image = check_image(c, &runtime);
            let outcome = image_probe_outcome(c, &runtime, &image);
            checks.push(runtime);
            if let Some(p) = &c.plumbing {
                checks.push(check_gpu_plumbing(c.target.runtime, p));
            }
            checks.push(image);
            let wants = |name: &str| c.in_image_checks.iter().any(|n| n == name);
            if let (Some(gpu), Ok(found), true) = (&facts.gpu, &outcome, wants("nvcc")) {
                checks.extend(check_image_driver_toolkit(gpu, &c.target, found));
            }
            for name in c.in_image_checks.iter().filter(|n| *n != "tmpdir") {
                checks.push(check_in_image(name, &c.target, &outcome));
            }
            in_image = Some((c, outcome));
        }
    }
    if let Some(p) = &facts.ptrace {
        checks.push(match &in_image {
            None => check_ptrace(p),
            Some((c, outcome)) => {
                let uid = outcome.as_ref().ok().and_then(|found| found.uid);
                check_ptrace_in_container(p, c.target.runtime, uid)
            }
        });
    }
    if let Some(t) = &facts.tmpdir {
        checks.push(check_tmpdir(t));
    }
    if let Some((c, outcome)) = &in_image {
        if c.in_image_checks.iter().any(|n| n == "tmpdir") {
            checks.push(check_in_image("tmpdir", &c.target, outcome));
        }
    }
    if let Some(s) = &facts.coredump {
        checks.push(check_space(s));
    }
    if let Some(c) = &facts.core {
        checks.push(check_core_pattern(c));
    }
    Report { checks }
}

/// One GPU as `nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total
/// --format=csv,noheader` lists it (`NVIDIA H200, 580.159.04, 9.0, 143771 MiB`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gpu {
    pub name: String,
    pub driver: String,
    /// `9.0`; `None` from a driver too old to report it.
    pub compute_cap: Option<String>,
    pub memory: String,
}

/// `MemAvailable` in `/proc/meminfo`, in bytes: what new processes can get without
/// swapping (free memory plus reclaimable caches).
pub fn parse_mem_available(meminfo: &str) -> Option<u64> {
    meminfo.lines().find_map(|l| {
        let rest = l.strip_prefix("MemAvailable:")?.trim();
        let kib: u64 = rest.strip_suffix("kB").unwrap_or(rest).trim().parse().ok()?;
        kib.checked_mul(1024)
    })
}

/// The GPUs in `nvidia-smi --query-gpu` CSV output, four fields (or three, without
/// `compute_cap`) a line; other lines are skipped.
pub fn parse_gpus(csv: &str) -> Vec<Gpu> {
    csv.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split(", ").map(str::trim).collect();
            let driver_like = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || c == '.');
            match f.as_slice() {
                [name, driver, cc, mem] if driver_like(driver) => Some(Gpu {
                    name: name.to_string(),
                    driver: driver.to_string(),
                    compute_cap: Some(cc.to_string()),
                    memory: mem.to_string(),
                }),
                [name, driver, mem] if driver_like(driver) => Some(Gpu {
                    name: name.to_string(),
                    driver: driver.to_string(),
                    compute_cap: None,
                    memory: mem.to_string(),
                }),
                _ => None,
            }
        })
        .collect()
}

/// The GPU and its driver, from `nvidia-smi --query-gpu`.
pub fn check_gpu(facts: &ToolFacts) -> Check {
    let missing = |detail: String, fix: &str| Check::new("gpu", Status::Missing, detail, NEED_GPU).fix(fix);
    let Some(out) = &facts.output else {
        return missing("`nvidia-smi` not found: no NVIDIA driver on this machine".to_string(), NO_GPU_FIX);
    };
    let path = facts.found.path().map(Path::to_path_buf);
    let text = out.text();
    let first = out.first_line().to_string();
    let mut check = if text.contains("couldn't communicate with the NVIDIA driver") {
        missing(
            format!("nvidia-smi: {first}"),
            "the NVIDIA driver is not loaded: check `lsmod | grep nvidia` and `dmesg | grep -i nvrm`, \
             reinstall the driver or reboot; in a container, start it with `--gpus all` (Docker) or \
             `--device nvidia.com/gpu=all` (Podman)",
        )
    } else if text.contains("Driver/library version mismatch") {
        missing(
            format!("nvidia-smi: {first}"),
            "the loaded kernel module and the driver's libraries differ (usually after a driver upgrade): \
             reboot, or unload and reload the `nvidia` modules",
        )
    } else if text.contains("No devices were found") {
        missing(
            format!("nvidia-smi: {first}"),
            "the driver sees no GPU: check `lspci | grep -i nvidia`; in a container, pass the GPUs in \
             (`--gpus all`, `--device nvidia.com/gpu=all`)",
        )
    } else if out.exit == Exit::TimedOut {
        missing(
            format!("`nvidia-smi` did not answer within {} s", PROBE_TIMEOUT.as_secs()),
            "the driver may be hung: look for Xid errors in `dmesg`; if `nvidia-smi` hangs too, the machine \
             needs a reset or a reboot",
        )
    } else if !out.success() {
        missing(
            format!("`nvidia-smi` failed ({}): {first}", out.describe_exit()),
            "run `nvidia-smi` and fix what it reports; the ladder needs a working driver",
        )
    } else {
        let gpus = parse_gpus(&out.stdout);
        if gpus.is_empty() {
            missing(
                format!(
                    "`nvidia-smi` listed no GPU: {}",
                    if first.is_empty() { "no output" } else { &first }
                ),
                "run `nvidia-smi` and fix what it reports; the ladder needs a working driver",
            )
        } else {
            let each: Vec<String> = gpus
                .iter()
                .map(|g| match &g.compute_cap {
                    Some(cc) => format!("{} (compute capability {cc}, {})", g.name, g.memory),
                    None => format!("{} ({})", g.name, g.memory),
                })
                .collect();
            let count = if gpus.len() == 1 { String::new() } else { format!("{} GPUs: ", gpus.len()) };
            let mut c = Check::new(
                "gpu",
                Status::Ok,
                format!("{count}{}, driver {}", each.join(", "), gpus[0].driver),
                NEED_GPU,
            );
            c.version = Some(
                out.stdout.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; "),
            );
            c
        }
    };
    check.path = path;
    check
}

/// A tool's version: the line as printed and a short form (`13.0 (V13.0.88)`).
pub fn parse_version(tool: &str, text: &str) -> Option<(String, String)> {
    for line in text.lines().map(str::trim) {
        let short = match tool {
            // `Cuda compilation tools, release 13.0, V13.0.88`
            "nvcc" | "cuobjdump" => line.strip_prefix("Cuda compilation tools, release ").map(|rest| {
                let mut parts = rest.split(", ");
                let release = parts.next().unwrap_or("").to_string();
                match parts.next() {
                    Some(build) => format!("{release} ({build})"),
                    None => release,
                }
            }),
            // `NVIDIA (R) cuda-gdb 13.0` (after the wrapper's `exec: ...` line)
            "cuda-gdb" => line.strip_prefix("NVIDIA (R) cuda-gdb ").map(|v| v.trim().to_string()),
            // `Version 2025.3.1.0 (build 36400806) (public-release)`
            "compute-sanitizer" => {
                line.strip_prefix("Version ").and_then(|v| v.split_whitespace().next()).map(str::to_string)
            }
            _ => None,
        };
        if let Some(short) = short.filter(|s| !s.is_empty()) {
            return Some((line.to_string(), short));
        }
    }
    None
}

/// How to install each tool (commands in backticks).
fn install_fix(tool: &str) -> String {
    match tool {
        "nvcc" => "install the CUDA toolkit's compiler: `apt-get install cuda-nvcc-13-0` (match your CUDA \
                   version) from NVIDIA's repository, or use an `nvidia/cuda:*-devel` image; without a GPU, \
                   `pip install nvidia-cuda-nvcc nvidia-cuda-cuobjdump nvidia-cuda-runtime nvidia-cuda-crt` \
                   installs a working nvcc under `site-packages/nvidia/cu13/bin` (put it on PATH)"
            .to_string(),
        "cuobjdump" => "install it with the toolkit: `apt-get install cuda-cuobjdump-13-0` (match your CUDA \
                        version) or `pip install nvidia-cuda-cuobjdump`; without it the rebuild rung cannot \
                        confirm line info and cuda-gdb cannot disassemble"
            .to_string(),
        "cuda-gdb" => "install it: `apt-get install cuda-gdb-13-0` (match your CUDA version), or use an \
                       `nvidia/cuda:*-devel` image (`cuda-command-line-tools`); it is not published on PyPI"
            .to_string(),
        "compute-sanitizer" => {
            "install it: `apt-get install cuda-sanitizer-13-0` (match your CUDA version), \
                                or use an `nvidia/cuda:*-devel` image (`cuda-command-line-tools`)"
                .to_string()
        }
        _ => format!("install `{tool}`"),
    }
}

/// The rungs that need a check, and its status when what it checks is absent (cuobjdump
/// and the debugger back-end only warn).
fn tool_need(name: &str) -> (&'static [&'static str], Status) {
    match name {
        "nvcc" => (NEED_NVCC, Status::Missing),
        "cuobjdump" => (NEED_CUOBJDUMP, Status::Warn),
        "cuda-gdb" => (NEED_CUDA_GDB, Status::Missing),
        "compute-sanitizer" => (NEED_SANITIZER, Status::Missing),
        "cuda-debugger-backend" => (NEED_BACKEND, Status::Warn),
        "tmpdir" => (NEED_TMPDIR, Status::Missing),
        _ => (&["all"], Status::Missing),
    }
}

/// A CUDA tool, from where it was found and what `TOOL --version` printed.
pub fn check_tool(facts: &ToolFacts) -> Check {
    let name = facts.name.as_str();
    let (need, missing_status) = tool_need(name);
    let path = match &facts.found {
        Found::NotFound { searched } => {
            let searched: Vec<String> = searched.iter().map(|p| p.display().to_string()).collect();
            let detail = format!("`{name}` not found on PATH nor in {}", searched.join(", "));
            return Check::new(name, missing_status, detail, need).fix(install_fix(name));
        }
        found => found.path().unwrap_or(Path::new(name)).to_path_buf(),
    };
    let Some(out) = &facts.output else {
        let detail = format!("`{}` was not run", path.display());
        return Check::new(name, missing_status, detail, need).fix(install_fix(name));
    };
    let shown = path.display().to_string();
    let mut check = if !out.success() {
        Check::new(
            name,
            missing_status,
            format!("`{shown} --version` failed ({}): {}", out.describe_exit(), out.first_line()),
            need,
        )
        .fix(format!("run `{shown} --version` and fix what it reports, or reinstall: {}", install_fix(name)))
    } else {
        match parse_version(name, &out.text()) {
            Some((line, short)) => {
                let mut c = Check::new(name, Status::Ok, format!("{short} at {shown}"), need);
                c.version = Some(line);
                c
            }
            None => Check::new(
                name,
                Status::Warn,
                format!("`{shown} --version` printed no version line: {}", out.first_line()),
                need,
            )
            .fix(format!("check that `{shown}` is NVIDIA's {name}")),
        }
    };
    if let (Found::OffPath(p), true) = (&facts.found, check.status != Status::Missing) {
        let dir = p.parent().unwrap_or(Path::new("/")).display().to_string();
        check.status = Status::Warn;
        check.detail.push_str(" (not on PATH)");
        check.fix = Some(format!("found at `{shown}` but not on PATH: `export PATH={dir}:$PATH`"));
        check.off_path = true;
    }
    check.path = Some(path);
    check
}

/// The oldest driver branch a CUDA major release runs on (minor version compatibility):
/// 13.x needs 580, 12.x 525, 11.x 450.
fn min_driver(cuda_major: u32) -> Option<u32> {
    match cuda_major {
        13 => Some(580),
        12 => Some(525),
        11 => Some(450),
        _ => None,
    }
}

/// Whether the driver can run what this nvcc builds. Only when both are known and
/// working; a warning, since a prebuilt target may not use this nvcc at all.
pub fn check_driver_toolkit(gpu: &ToolFacts, nvcc: &ToolFacts) -> Option<Check> {
    let gpus = parse_gpus(&gpu.output.as_ref().filter(|o| o.success())?.stdout);
    let driver = &gpus.first()?.driver;
    let (_, short) = parse_version("nvcc", &nvcc.output.as_ref().filter(|o| o.success())?.text())?;
    let release = short.split_whitespace().next()?;
    driver_toolkit(driver, release)
}

/// The same, on a driver version (`580.159.04`) and an nvcc release (`13.0`).
pub fn driver_toolkit(driver: &str, release: &str) -> Option<Check> {
    let driver_major: u32 = driver.split('.').next()?.parse().ok()?;
    let cuda_major: u32 = release.split('.').next()?.parse().ok()?;
    let need = min_driver(cuda_major)?;
    Some(if driver_major >= need {
        Check::new(
            "driver-toolkit",
            Status::Ok,
            format!("driver {driver} runs CUDA {release} programs (needs {need} or newer)"),
            NEED_GPU,
        )
    } else {
        Check::new(
            "driver-toolkit",
            Status::Warn,
            format!(
                "nvcc {release} needs driver {need} or newer, this one is {driver}: programs it builds fail \
                 with `CUDA driver version is insufficient for CUDA runtime version`"
            ),
            NEED_GPU,
        )
        .fix(format!(
            "upgrade the driver to {need} or newer, or put a CUDA toolkit no newer than the driver supports \
             first on PATH (`nvidia-smi` shows the highest CUDA version it supports)"
        ))
    })
}

/// `libcudadebugger.so.1`, which cuda-gdb loads to debug a live process.
pub fn check_debugger_backend(facts: &BackendFacts) -> Check {
    let name = "cuda-debugger-backend";
    let mut found: Vec<String> = Vec::new();
    if let Some(out) = facts.ldconfig.as_ref().filter(|o| o.success()) {
        for line in out.stdout.lines() {
            let line = line.trim();
            if line.starts_with("libcudadebugger.so.1 ") {
                if let Some((_, path)) = line.split_once("=> ") {
                    found.push(path.trim().to_string());
                }
            }
        }
    }
    for p in &facts.in_ld_library_path {
        let p = p.display().to_string();
        if !found.contains(&p) {
            found.push(p);
        }
    }
    if let Some(first) = found.first() {
        let more = if found.len() > 1 { format!(" (+{} more)", found.len() - 1) } else { String::new() };
        let mut c =
            Check::new(name, Status::Ok, format!("libcudadebugger.so.1 at {first}{more}"), NEED_BACKEND);
        c.path = Some(PathBuf::from(first));
        return c;
    }
    let how = match &facts.ldconfig {
        None => "`ldconfig` not found; libcudadebugger.so.1 not in LD_LIBRARY_PATH".to_string(),
        Some(o) if !o.success() => {
            format!("`ldconfig -p` failed ({}); not in LD_LIBRARY_PATH", o.describe_exit())
        }
        Some(_) => {
            "libcudadebugger.so.1 is not in the `ldconfig -p` cache nor in LD_LIBRARY_PATH".to_string()
        }
    };
    Check::new(name, Status::Warn, how, NEED_BACKEND).fix(
        "cuda-gdb needs the driver's debugger back-end to attach (`Could not find CUDA Debugger back-end`): \
         install the full NVIDIA driver (it ships libcudadebugger.so.1); in a container make sure the driver \
         libraries are mounted (Apptainer: add it to `nvliblist.conf`), then check `ldconfig -p | grep \
         libcudadebugger`",
    )
}

/// `Uid:` (effective, the second number) and whether `CapEff:` holds CAP_SYS_PTRACE (bit 19).
pub fn parse_proc_status(status: &str) -> (Option<u32>, Option<bool>) {
    let mut euid = None;
    let mut cap = None;
    for line in status.lines() {
        if let Some(rest) = line.strip_prefix("Uid:") {
            euid = rest.split_whitespace().nth(1).and_then(|u| u.parse().ok());
        } else if let Some(rest) = line.strip_prefix("CapEff:") {
            cap = u64::from_str_radix(rest.trim(), 16).ok().map(|bits| bits & (1 << 19) != 0);
        }
    }
    (euid, cap)
}

/// Permission to attach cuda-gdb to the target, which is not cuda-gdb's child.
pub fn check_ptrace(facts: &PtraceFacts) -> Check {
    let (euid, cap) = facts.proc_status.as_deref().map(parse_proc_status).unwrap_or((None, None));
    let root = euid == Some(0);
    let scope = facts.ptrace_scope.as_deref().map(str::trim);
    let sysctl_fix = "`sudo sysctl kernel.yama.ptrace_scope=0` (for good: \
                      `echo kernel.yama.ptrace_scope=0 | sudo tee /etc/sysctl.d/10-ptrace.conf`) or run as root";
    let c = |status, detail: String| Check::new("ptrace", status, detail, NEED_PTRACE);
    match scope {
        Some("3") => c(Status::Missing, "ptrace_scope is 3: no process may attach, root included".into()).fix(
            "the setting cannot be lowered until a reboot: set `kernel.yama.ptrace_scope` to 0 or 1 in \
             `/etc/sysctl.d/` and reboot; until then use the coredump and memcheck rungs",
        ),
        _ if root && cap != Some(false) => {
            let scope = scope.map_or("no Yama ptrace_scope".to_string(), |s| format!("ptrace_scope {s}"));
            c(Status::Ok, format!("running as root ({scope})"))
        }
        _ if cap == Some(true) => c(Status::Ok, "CAP_SYS_PTRACE held".into()),
        None => c(Status::Ok, "no Yama ptrace_scope: a process may attach to its user's processes".into()),
        Some("0") => c(Status::Ok, "ptrace_scope 0: a process may attach to its user's processes".into()),
        Some("1") if root => c(Status::Warn, "running as root without CAP_SYS_PTRACE, ptrace_scope 1".into()).fix(
            "attaching to a non-child needs CAP_SYS_PTRACE: start the container with `--cap-add=SYS_PTRACE` \
             (often also `--security-opt seccomp=unconfined`), or on the host `sudo sysctl \
             kernel.yama.ptrace_scope=0`",
        ),
        Some("1") => c(
            Status::Warn,
            "ptrace_scope 1: only a parent may attach, and cuda-gdb is not the target's parent".into(),
        )
        .fix(format!("attaching to a non-child needs {sysctl_fix}")),
        Some("2") if root => c(Status::Missing, "ptrace_scope 2 and no CAP_SYS_PTRACE".into())
            .fix("start the container with `--cap-add=SYS_PTRACE`, or on the host `sudo sysctl kernel.yama.ptrace_scope=1`"),
        Some("2") => c(Status::Missing, "ptrace_scope 2: only root (CAP_SYS_PTRACE) may attach".into())
            .fix(format!("run the ladder as root (`sudo`), or {sysctl_fix}")),
        Some(other) => c(Status::Warn, format!("unexpected ptrace_scope `{other}`"))
            .fix(format!("check `/proc/sys/kernel/yama/ptrace_scope`; to attach, {sysctl_fix}")),
    }
}

/// The directory cuda-gdb and the target use for temporary files (cuda-gdb writes the
/// kernels' ELF images there). The ladder gives both the same environment, so they see
/// the same `$TMPDIR`.
pub fn check_tmpdir(facts: &TmpdirFacts) -> Check {
    let dir = facts.dir.display().to_string();
    let which = match facts.env.as_deref() {
        Some(t) if !t.is_empty() => format!("TMPDIR={t}"),
        Some(_) => "TMPDIR empty: /tmp".to_string(),
        None => "TMPDIR unset: /tmp".to_string(),
    };
    let c = |status, detail: String| Check::new("tmpdir", status, detail, NEED_TMPDIR);
    match (&facts.writable, facts.is_dir) {
        (Ok(()), _) => c(Status::Ok, format!("{which}, writable; cuda-gdb and the target get the same one")),
        (Err(_), false) => c(Status::Missing, format!("{which}: `{dir}` is not a directory"))
            .fix(format!("`mkdir -p {dir}` or point TMPDIR at a writable directory: `export TMPDIR=/tmp`")),
        (Err(e), true) => c(Status::Missing, format!("{which}: cannot write in `{dir}`: {e}"))
            .fix("point TMPDIR at a writable directory (`export TMPDIR=/tmp`); cuda-gdb and the target must see the same one"),
    }
}

/// Available KiB from `df -Pk DIR` (the last line's fourth field).
pub fn parse_df_available_kib(text: &str) -> Option<u64> {
    let line = text.lines().rfind(|l| !l.trim().is_empty())?;
    let fields: Vec<&str> = line.split_whitespace().collect();
    // Filesystem 1024-blocks Used Available Capacity Mounted-on; the filesystem name or
    // mount point may hold spaces, so find the `NN%` field and take the one before it.
    let pct = fields
        .iter()
        .rposition(|f| f.ends_with('%') && f[..f.len() - 1].chars().all(|c| c.is_ascii_digit()))?;
    fields.get(pct.checked_sub(1)?)?.parse().ok()
}

/// Sizes for people: `64.0 GiB`, `512 MiB`.
pub fn human_bytes(bytes: u64) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    const MIB: f64 = (1u64 << 20) as f64;
    let b = bytes as f64;
    if b >= GIB {
        format!("{:.1} GiB", b / GIB)
    } else {
        format!("{:.0} MiB", b / MIB)
    }
}

/// Room for GPU coredumps in the coredump directory.
pub fn check_space(facts: &SpaceFacts) -> Check {
    let dir = facts.dir.display().to_string();
    let measured = facts.measured.display().to_string();
    let where_ =
        if facts.measured == facts.dir { format!("`{dir}`") } else { format!("`{measured}` (for `{dir}`)") };
    let c = |status, detail: String| Check::new("coredump-space", status, detail, NEED_SPACE);
    let choose = "choose a directory on a writable disk with room (`cargo xtask doctor --coredump-dir DIR` checks one)";
    if let Err(e) = &facts.writable {
        return c(Status::Missing, format!("cannot write in {where_}: {e}")).fix(choose);
    }
    let avail = facts.df.as_ref().filter(|o| o.success()).and_then(|o| parse_df_available_kib(&o.stdout));
    match avail {
        Some(kib) => {
            let bytes = kib.saturating_mul(1024);
            if bytes < LOW_SPACE_BYTES {
                c(
                    Status::Warn,
                    format!(
                        "{} free in {where_}: GPU coredumps take 1 MB to hundreds of MB per process, and \
                         several processes may fault",
                        human_bytes(bytes)
                    ),
                )
                .fix(format!("free at least {} there, or {choose}", human_bytes(LOW_SPACE_BYTES)))
            } else {
                c(Status::Ok, format!("{} free in {where_}", human_bytes(bytes)))
            }
        }
        None => {
            let why = match &facts.df {
                None => "`df` not found".to_string(),
                Some(o) if !o.success() => {
                    format!("`df -Pk {measured}` failed ({}): {}", o.describe_exit(), o.first_line())
                }
                Some(o) => format!("cannot read `df -Pk {measured}`: {}", o.first_line()),
            };
            c(Status::Warn, format!("free space in {where_} unknown: {why}")).fix(format!(
                "check with `df -h {measured}`: coredumps take up to hundreds of MB per process"
            ))
        }
    }
}

/// The soft `Max core file size` from `/proc/self/limits`: `0`, `unlimited`, a number.
pub fn parse_core_limit(limits: &str) -> Option<String> {
    let line = limits.lines().find(|l| l.starts_with("Max core file size"))?;
    line["Max core file size".len()..].split_whitespace().next().map(str::to_string)
}

/// Where CPU core files go: informative only, GPU coredumps do not depend on it.
pub fn check_core_pattern(facts: &CoreFacts) -> Check {
    let pattern = facts.core_pattern.as_deref().map(str::trim);
    let mut detail = match pattern {
        None => "core_pattern unreadable".to_string(),
        Some(p) if p.starts_with('|') => format!("core_pattern `{p}`: CPU core files are piped to a program"),
        Some(p) if p.starts_with('/') => format!("core_pattern `{p}`: CPU core files go to that path"),
        Some(p) => format!("core_pattern `{p}`: CPU core files go to the process's working directory"),
    };
    match facts.limits.as_deref().and_then(parse_core_limit).as_deref() {
        Some("0") => detail.push_str("; ulimit -c 0: no CPU core files"),
        Some(limit) => {
            let _ = write!(detail, "; ulimit -c {limit}");
        }
        None => {}
    }
    detail.push_str("; GPU coredumps go to CUDA_COREDUMP_FILE either way");
    Check::new("core-pattern", Status::Ok, detail, NEED_SPACE)
}

// ---------------------------------------------------------------------------------------
// The container: runtime, image, GPU plumbing, and the tools inside the image
// ---------------------------------------------------------------------------------------

/// What [`IMAGE_PROBE_SCRIPT`] printed inside the image, read by [`parse_image_probe`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ImageProbe {
    /// The uid the image runs as (`id -u`).
    pub uid: Option<u32>,
    /// The image's `PATH`.
    pub path: Option<String>,
    /// `nvcc`, `cuobjdump`, `cuda-gdb`, `compute-sanitizer`, in the order printed.
    pub tools: Vec<ImageTool>,
    /// Every `libcudadebugger.so.1` found, first the `ldconfig -p` cache's, without repeats.
    pub libcudadebugger: Vec<PathBuf>,
    /// Whether a file could be created in `/tmp`.
    pub tmp_writable: Option<bool>,
}

impl ImageProbe {
    pub fn tool(&self, name: &str) -> Option<&ImageTool> {
        self.tools.iter().find(|t| t.name == name)
    }
}

/// One tool as the probe found it in the image.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ImageTool {
    pub name: String,
    /// Where it is; `None` when it is nowhere.
    pub path: Option<PathBuf>,
    /// The exit status of `TOOL --version`.
    pub exit: Option<i32>,
    /// Its first non-blank output lines.
    pub output: Vec<String>,
}

/// Reads the `key=value` lines [`IMAGE_PROBE_SCRIPT`] prints. `None` unless both its first
/// line (`probe=debug-ima-doctor 1`) and its last (`end=ok`) are there: anything else (a
/// runtime's error, a cut-off run) is not a probe's answer. Lines before the first, unknown
/// keys and lines without `=` are skipped.
pub fn parse_image_probe(text: &str) -> Option<ImageProbe> {
    let mut started = false;
    let mut ended = false;
    let mut p = ImageProbe::default();
    for line in text.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else { continue };
        if !started {
            started = key == "probe" && value == "debug-ima-doctor 1";
            continue;
        }
        match key {
            "end" => {
                ended = value == "ok";
                break;
            }
            "id" => p.uid = value.trim().parse().ok(),
            "path" => p.path = Some(value.to_string()),
            "tmp" => {
                p.tmp_writable = match value {
                    "writable" => Some(true),
                    "not writable" => Some(false),
                    _ => None,
                }
            }
            "libcudadebugger" => {
                let lib = PathBuf::from(value.trim());
                if !value.trim().is_empty() && !p.libcudadebugger.contains(&lib) {
                    p.libcudadebugger.push(lib);
                }
            }
            _ if IMAGE_TOOLS.contains(&key) => {
                let path = Some(value.trim()).filter(|v| !v.is_empty()).map(PathBuf::from);
                p.tools.retain(|t| t.name != key);
                p.tools.push(ImageTool { name: key.to_string(), path, ..ImageTool::default() });
            }
            _ => {
                let Some((name, field)) = key.rsplit_once('_') else { continue };
                let Some(tool) = p.tools.iter_mut().find(|t| t.name == name) else { continue };
                match field {
                    "exit" => tool.exit = value.trim().parse().ok(),
                    "out" => tool.output.push(value.to_string()),
                    _ => {}
                }
            }
        }
    }
    (started && ended).then_some(p)
}

/// Why the checks inside the image could not be made: their status (`Missing`, or `Warn`
/// for an Apptainer URI that is pulled later), detail and fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotChecked {
    pub status: Status,
    pub detail: String,
    pub fix: String,
}

/// `docker run --rm [--gpus all] --entrypoint sh IMAGE -c true`: a command for people to
/// try the container with.
fn try_container_cmd(target: &ContainerTarget) -> String {
    let gpus = if target.gpus { format!(" {}", target.runtime.gpu_args().join(" ")) } else { String::new() };
    match target.runtime {
        Runtime::Apptainer => format!("apptainer exec{gpus} {} sh -c true", target.image),
        rt => format!("{} run --rm{gpus} --entrypoint sh {} -c true", rt.name(), target.image),
    }
}

/// `docker run --rm --entrypoint TOOL IMAGE ARGS`, `apptainer exec IMAGE TOOL ARGS`.
fn in_image_cmd(target: &ContainerTarget, tool: &str, args: &str) -> String {
    match target.runtime {
        Runtime::Apptainer => format!("apptainer exec {} {tool} {args}", target.image),
        rt => format!("{} run --rm --entrypoint {tool} {} {args}", rt.name(), target.image),
    }
}

/// The probe's answer, or why there is none: the runtime or the image is missing (then it
/// was not run), an Apptainer URI (not pulled to look inside), or the run failed.
pub fn image_probe_outcome(
    c: &ContainerFacts,
    runtime: &Check,
    image: &Check,
) -> Result<ImageProbe, NotChecked> {
    let name = c.target.image.as_str();
    if runtime.status == Status::Missing {
        return Err(NotChecked {
            status: Status::Missing,
            detail: format!("not checked in `{name}`: the runtime is missing ({})", runtime.detail),
            fix: "fix the `runtime` check first".to_string(),
        });
    }
    if image.status == Status::Missing {
        return Err(NotChecked {
            status: Status::Missing,
            detail: format!("not checked in `{name}`: the image is missing ({})", image.detail),
            fix: "fix the `image` check first".to_string(),
        });
    }
    if c.target.runtime == Runtime::Apptainer && is_image_uri(name) {
        return Err(NotChecked {
            status: Status::Warn,
            detail: format!("not checked in `{name}`: a remote image, pulled when the ladder first runs it"),
            fix: image.fix.clone().unwrap_or_default(),
        });
    }
    let Some(out) = &c.in_image else {
        return Err(NotChecked {
            status: Status::Missing,
            detail: format!("not checked in `{name}`: the probe was not run"),
            fix: format!("run `{}` and fix what it reports", try_container_cmd(&c.target)),
        });
    };
    if let Some(found) = parse_image_probe(&out.stdout) {
        return Ok(found);
    }
    let how = match out.exit {
        Exit::TimedOut => format!("no answer within {} s", IMAGE_PROBE_TIMEOUT.as_secs()),
        _ => out.describe_exit(),
    };
    let text = out.text();
    let hint = if text.contains("could not select device driver") {
        ": Docker has no NVIDIA Container Toolkit to pass the GPUs in (see the `gpu-plumbing` check)"
    } else if text.contains("executable file not found") || text.contains("sh: not found") {
        ": the image needs a POSIX `sh`"
    } else {
        ""
    };
    Err(NotChecked {
        status: Status::Missing,
        detail: format!("not checked in `{name}`: the probe failed ({how}): {}", out.first_line()),
        fix: format!("run `{}` and fix what it reports{hint}", try_container_cmd(&c.target)),
    })
}

/// How to install a runtime.
fn install_runtime_fix(runtime: Runtime) -> String {
    let how = match runtime {
        Runtime::Docker => "install Docker Engine (https://docs.docker.com/engine/install/)",
        Runtime::Podman => "install Podman (`apt-get install podman`)",
        _ => "install Apptainer (https://apptainer.org/docs/admin/main/installation.html)",
    };
    format!("{how}, or choose another runtime with `--container docker|podman|apptainer`")
}

/// The runtime's client is found and answers its version command (Docker: the daemon
/// answers, `docker version --format {{.Server.Version}}`).
pub fn check_runtime(facts: &ContainerFacts) -> Check {
    let rt = facts.target.runtime;
    let name = rt.name();
    let check = |status, detail: String| Check::new("runtime", status, detail, NEED_CONTAINER);
    let Some(client) = &facts.client else {
        return check(Status::Missing, format!("`{name}` not found on PATH")).fix(install_runtime_fix(rt));
    };
    let cmd = rt.version().join(" ");
    let Some(out) = &facts.version else {
        return check(Status::Missing, format!("`{cmd}` was not run")).fix(format!("run `{cmd}`"));
    };
    let text = out.text();
    let line_with = |needle: &str| text.lines().find(|l| l.contains(needle)).unwrap_or("").trim().to_string();
    let mut result = if out.success() && first_line(&out.stdout).is_some() {
        let line = first_line(&out.stdout).unwrap_or("");
        let version = line.strip_prefix(&format!("{name} version ")).unwrap_or(line).trim();
        let mut c = check(Status::Ok, format!("{name} {version} at {}", client.display()));
        c.version = Some(format!("{name} {version}"));
        c
    } else if text.contains("Cannot connect to the Docker daemon") {
        check(
            Status::Missing,
            format!(
                "the Docker daemon does not answer: {}",
                line_with("Cannot connect to the Docker daemon")
            ),
        )
        .fix(
            "start it (`sudo systemctl start docker`), or check where the client looks (`DOCKER_HOST`, \
             `docker context ls`)",
        )
    } else if text.contains("permission denied while trying to connect to the Docker daemon") {
        check(
            Status::Missing,
            format!("no permission to use the Docker daemon: {}", line_with("permission denied")),
        )
        .fix(
            "run as a user in the `docker` group (`sudo usermod -aG docker $USER`, then log in again) or \
             as root",
        )
    } else if out.exit == Exit::TimedOut {
        check(Status::Missing, format!("`{cmd}` did not answer within {} s", PROBE_TIMEOUT.as_secs())).fix(
            format!(
                "run `{cmd}` and fix what it reports (is the daemon hung? `sudo systemctl status {name}`)"
            ),
        )
    } else {
        let first =
            if out.success() { "printed no version".to_string() } else { out.first_line().to_string() };
        check(Status::Missing, format!("`{cmd}` failed ({}): {first}", out.describe_exit()))
            .fix(format!("run `{cmd}` and fix what it reports"))
    };
    result.path = Some(client.clone());
    result
}

/// The name of a project image under `containers/` (`debug-ima/cuda:13.0` is `cuda`).
fn project_image(image: &str) -> Option<&str> {
    let rest = image.strip_prefix("debug-ima/")?;
    let name = rest.split([':', '@']).next()?;
    ["cuda", "pytorch", "vllm"].contains(&name).then_some(name)
}

/// How to get a missing image: the project's own are built, others pulled.
fn image_missing_fix(runtime: Runtime, image: &str) -> String {
    match (runtime, project_image(image)) {
        (Runtime::Apptainer, _) => {
            "build the `.sif` from a Docker image: `apptainer build debug-ima-cuda.sif \
                                    docker-daemon://debug-ima/cuda:13.0` (see containers/README.md), or give \
                                    the path of an existing one"
                .to_string()
        }
        (rt, Some(name)) => {
            let flag = if rt == Runtime::Podman { " --runtime podman" } else { "" };
            format!(
                "build it: `cargo xtask container build {name}{flag}` (the project's images, \
                 containers/README.md)"
            )
        }
        (rt, None) => format!(
            "pull it: `{} pull {image}`, or build one of the project's images (`cargo xtask container build \
             cuda`, see containers/README.md)",
            rt.name()
        ),
    }
}

/// The image exists locally (Docker/Podman: `image inspect`; Apptainer: the file or sandbox
/// directory exists, a `docker://`/`oras://` URI is a warning: it is pulled when run).
pub fn check_image(c: &ContainerFacts, runtime: &Check) -> Check {
    let rt = c.target.runtime;
    let image = c.target.image.as_str();
    let check = |status, detail: String| Check::new("image", status, detail, NEED_CONTAINER);
    if rt == Runtime::Apptainer {
        return if is_image_uri(image) {
            check(Status::Warn, format!("`{image}` is pulled when the ladder first runs it")).fix(format!(
                "pull it once into a file and check that: `apptainer pull image.sif {image}`, then \
                 `--image image.sif`"
            ))
        } else if c.image_is_file {
            check(Status::Ok, format!("`{image}`, an image file"))
        } else if c.image_is_dir {
            check(Status::Ok, format!("`{image}`, a sandbox directory"))
        } else {
            check(Status::Missing, format!("`{image}` does not exist")).fix(image_missing_fix(rt, image))
        };
    }
    let Some(out) = &c.inspect else {
        let why = if runtime.status == Status::Missing {
            format!("the runtime is missing ({})", runtime.detail)
        } else {
            "`image inspect` was not run".to_string()
        };
        return check(Status::Missing, format!("not checked: {why}")).fix("fix the `runtime` check first");
    };
    let text = out.text();
    let id_line = out.stdout.trim();
    if out.success() && !id_line.is_empty() {
        let (id, digests) = id_line.split_once('|').unwrap_or((id_line, ""));
        let digests = digests.trim();
        let from = if digests.is_empty() {
            " (local, no registry digest)".to_string()
        } else {
            format!(" ({digests})")
        };
        let mut c = check(Status::Ok, format!("`{image}` is {id}{from}"));
        c.version = Some(id.to_string());
        return c;
    }
    if text.to_ascii_lowercase().contains("no such image") {
        return check(Status::Missing, format!("`{image}` is not among {}'s local images", rt.name()))
            .fix(image_missing_fix(rt, image));
    }
    let cmd = format!("{} image inspect {image}", rt.name());
    check(Status::Missing, format!("`{cmd}` failed ({}): {}", out.describe_exit(), out.first_line()))
        .fix(format!("run `{cmd}` and fix what it reports"))
}

/// The runtime names in `docker info --format '{{json .Runtimes}}'` (`runc`, `nvidia`, ...).
fn docker_runtime_names(out: &Output) -> Option<Vec<String>> {
    let map: BTreeMap<String, serde_json::Value> =
        serde_json::from_str(out.stdout.trim()).ok().filter(|_| out.success())?;
    Some(map.into_keys().collect())
}

/// What passes the GPUs in: Docker, the NVIDIA Container Toolkit (`nvidia-ctk` or
/// `nvidia-container-cli`, an `nvidia` runtime of the daemon, or a CDI spec); Podman, a CDI
/// spec; Apptainer, `nvidia-container-cli` or an `nvliblist.conf` (a warning when that one
/// does not list `libcudadebugger.so`, apptainer/apptainer#2261).
pub fn check_gpu_plumbing(runtime: Runtime, p: &PlumbingFacts) -> Check {
    let check = |status, detail: String| Check::new("gpu-plumbing", status, detail, NEED_CONTAINER);
    let shown = |v: &[PathBuf]| v.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    let toolkit = shown(&p.toolkit);
    let install =
        "install the NVIDIA Container Toolkit (`apt-get install nvidia-container-toolkit` from NVIDIA's \
                   repository)";
    let cdi_fix = "`sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`";
    match runtime {
        Runtime::Docker => {
            let mut found: Vec<String> = Vec::new();
            if !p.toolkit.is_empty() {
                found.push(format!("NVIDIA Container Toolkit at {toolkit}"));
            }
            let runtimes = p.docker_runtimes.as_ref().and_then(docker_runtime_names);
            let nvidia: Vec<&String> = runtimes.iter().flatten().filter(|r| r.contains("nvidia")).collect();
            if !nvidia.is_empty() {
                let names: Vec<&str> = nvidia.iter().map(|s| s.as_str()).collect();
                found.push(format!("docker runtime {}", names.join(", ")));
            }
            if !p.cdi_specs.is_empty() {
                found.push(format!("CDI spec {}", shown(&p.cdi_specs)));
            }
            if !found.is_empty() {
                return check(Status::Ok, format!("{} (`--gpus all`)", found.join("; ")));
            }
            let daemon = match (&p.docker_runtimes, &runtimes) {
                (_, Some(r)) => format!("docker's runtimes are {}", r.join(", ")),
                (Some(o), None) => format!("`docker info` failed ({})", o.describe_exit()),
                (None, None) => "`docker info` was not run".to_string(),
            };
            check(
                Status::Missing,
                format!(
                    "no NVIDIA Container Toolkit: `nvidia-ctk` and `nvidia-container-cli` not on PATH, {daemon}, \
                     no CDI spec ({}): `docker run --gpus all` fails",
                    CDI_SPECS.join(", ")
                ),
            )
            .fix(format!(
                "{install}, then `sudo nvidia-ctk runtime configure --runtime=docker` and `sudo systemctl \
                 restart docker`"
            ))
        }
        Runtime::Podman => {
            if !p.cdi_specs.is_empty() {
                return check(
                    Status::Ok,
                    format!("CDI spec {} (`--device nvidia.com/gpu=all`)", shown(&p.cdi_specs)),
                );
            }
            let has_ctk = p.toolkit.iter().any(|t| t.ends_with("nvidia-ctk"));
            let fix = if has_ctk {
                format!("generate it: {cdi_fix}")
            } else {
                format!("{install}, then {cdi_fix}")
            };
            check(
                Status::Missing,
                format!(
                    "no CDI spec for the GPUs ({}): `podman run --device nvidia.com/gpu=all` fails",
                    CDI_SPECS.join(", ")
                ),
            )
            .fix(fix)
        }
        _ => {
            let cli: Vec<&PathBuf> =
                p.toolkit.iter().filter(|t| t.ends_with("nvidia-container-cli")).collect();
            let lists_debugger = |text: &str| {
                text.lines()
                    .map(str::trim)
                    .any(|l| !l.starts_with('#') && l.starts_with("libcudadebugger.so"))
            };
            let good_list = p.nvliblist.iter().find(|(_, text)| lists_debugger(text));
            if let Some(cli) = cli.first() {
                return check(Status::Ok, format!("`nvidia-container-cli` at {} (`--nv`)", cli.display()));
            }
            if let Some((path, _)) = good_list {
                return check(Status::Ok, format!("{} lists libcudadebugger.so (`--nv`)", path.display()));
            }
            if let Some((path, _)) = p.nvliblist.first() {
                return check(
                    Status::Warn,
                    format!(
                        "only {}, which does not list libcudadebugger.so: `--nv` leaves out cuda-gdb's back-end \
                         (apptainer/apptainer#2261), and the attach rung fails",
                        path.display()
                    ),
                )
                .fix(format!(
                    "add a line `libcudadebugger.so` to {} (newer Apptainer releases list it), or {install} for \
                     `nvidia-container-cli`",
                    path.display()
                ));
            }
            check(
                Status::Missing,
                format!(
                    "neither `nvidia-container-cli` on PATH nor an nvliblist.conf ({}): `apptainer exec --nv` \
                     cannot bind the driver's libraries",
                    NVLIBLIST.join(", ")
                ),
            )
            .fix(format!("reinstall Apptainer (it ships nvliblist.conf), or {install}"))
        }
    }
}

/// The fix for a tool the image lacks.
fn image_lacks_fix(tool: &str, image: &str) -> String {
    format!(
        "the image `{image}` lacks {tool}: build it on an `nvidia/cuda:*-devel` base, which has nvcc, \
         cuobjdump, cuda-gdb and compute-sanitizer (the project's images do: `cargo xtask container build \
         cuda`, see containers/README.md)"
    )
}

/// The same checks as the host's (`nvcc`, `cuobjdump`, `cuda-gdb`, `compute-sanitizer`,
/// `cuda-debugger-backend`, `tmpdir`), made from the probe inside the image; with no probe
/// answer, `not checked` with the reason.
pub fn check_in_image(
    name: &str,
    target: &ContainerTarget,
    outcome: &Result<ImageProbe, NotChecked>,
) -> Check {
    let (need, absent) = tool_need(name);
    let found = match outcome {
        Ok(found) => found,
        Err(nc) => return Check::new(name, nc.status, nc.detail.clone(), need).fix(nc.fix.clone()),
    };
    let image = target.image.as_str();
    match name {
        "cuda-debugger-backend" => check_image_backend(target, found),
        "tmpdir" => match found.tmp_writable {
            Some(true) => Check::new(
                name,
                Status::Ok,
                format!(
                    "in {image}: /tmp writable; the rungs get TMPDIR=/tmp there, cuda-gdb and the target \
                     alike"
                ),
                need,
            ),
            _ => Check::new(
                name,
                Status::Missing,
                format!("in {image}: /tmp is missing or not writable"),
                need,
            )
            .fix(format!(
                "cuda-gdb and the target use /tmp in the container: give the image a writable /tmp (`RUN \
                     mkdir -m 1777 /tmp` in its Containerfile; `{image}` lacks it)"
            )),
        },
        _ => {
            let Some(tool) = found.tool(name) else {
                return Check::new(
                    name,
                    absent,
                    format!("in {image}: the probe did not report {name}"),
                    need,
                )
                .fix(image_lacks_fix(name, image));
            };
            let Some(path) = &tool.path else {
                let dirs = if name == "compute-sanitizer" {
                    "$CUDA_HOME/bin, /usr/local/cuda/bin, /usr/local/cuda/compute-sanitizer"
                } else {
                    "$CUDA_HOME/bin, /usr/local/cuda/bin"
                };
                let detail = format!("in {image}: `{name}` not found on PATH nor in {dirs}");
                return Check::new(name, absent, detail, need).fix(image_lacks_fix(name, image));
            };
            let shown = path.display().to_string();
            let text = tool.output.join("\n");
            let first = tool.output.first().map(String::as_str).unwrap_or("no output");
            let mut c = if tool.exit != Some(0) {
                let exit = tool.exit.map_or("no exit status".to_string(), |e| format!("exit {e}"));
                let detail = format!("in {image}: `{shown} --version` failed ({exit}): {first}");
                Check::new(name, absent, detail, need).fix(format!(
                        "run `{}` and fix what it reports, or rebuild the image on an `nvidia/cuda:*-devel` base \
                         (see containers/README.md)",
                        in_image_cmd(target, &shown, "--version")
                    ))
            } else {
                match parse_version(name, &text) {
                    Some((line, short)) => {
                        let detail = format!("in {image}: {short} at {shown}");
                        let mut c = Check::new(name, Status::Ok, detail, need);
                        c.version = Some(line);
                        c
                    }
                    None => Check::new(
                        name,
                        Status::Warn,
                        format!("in {image}: `{shown} --version` printed no version line: {first}"),
                        need,
                    )
                    .fix(format!("check that `{shown}` in the image is NVIDIA's {name}")),
                }
            };
            let dir = path.parent().map(|d| d.display().to_string()).unwrap_or_default();
            let on_path = found.path.as_deref().is_some_and(|p| p.split(':').any(|d| d == dir));
            if !on_path && c.status != Status::Missing {
                c.status = Status::Warn;
                c.detail.push_str(" (not on the image's PATH)");
                c.fix = Some(format!(
                    "put {dir} on the image's PATH: add `ENV PATH={dir}:$PATH` to its Containerfile"
                ));
            }
            c.path = Some(path.clone());
            c
        }
    }
}

/// `libcudadebugger.so.1` inside the image: the runtime mounts it with the driver's
/// libraries when the GPUs are passed in; without them it cannot be checked (a warning).
pub fn check_image_backend(target: &ContainerTarget, found: &ImageProbe) -> Check {
    let name = "cuda-debugger-backend";
    let image = target.image.as_str();
    if !target.gpus {
        return Check::new(
            name,
            Status::Warn,
            format!(
                "in {image}: not checked: the container gets no GPU here, so the runtime mounts none of the \
                 driver's libraries"
            ),
            NEED_BACKEND,
        )
        .fix("check with the GPUs passed in: `cargo xtask doctor --container RUNTIME --image IMAGE`");
    }
    if let Some(first) = found.libcudadebugger.first() {
        let n = found.libcudadebugger.len();
        let more = if n > 1 { format!(" (+{} more)", n - 1) } else { String::new() };
        let mut c = Check::new(
            name,
            Status::Ok,
            format!("in {image}: libcudadebugger.so.1 at {}{more}", first.display()),
            NEED_BACKEND,
        );
        c.path = Some(first.clone());
        return c;
    }
    let how = match target.runtime {
        Runtime::Apptainer => {
            "add `libcudadebugger.so` to Apptainer's nvliblist.conf (apptainer/apptainer#2261, see \
                               the `gpu-plumbing` check)"
                .to_string()
        }
        Runtime::Podman => {
            "update the NVIDIA Container Toolkit and regenerate the CDI spec (`sudo nvidia-ctk cdi \
                            generate --output=/etc/cdi/nvidia.yaml`)"
                .to_string()
        }
        _ => "update the NVIDIA Container Toolkit (it mounts the driver's compute libraries)".to_string(),
    };
    Check::new(
        name,
        Status::Warn,
        format!(
            "in {image}: libcudadebugger.so.1 is not in the image's `ldconfig -p` cache, its LD_LIBRARY_PATH nor \
             the driver library directories: the runtime did not inject the driver's debugger library"
        ),
        NEED_BACKEND,
    )
    .fix(format!(
        "cuda-gdb needs it to attach (`Could not find CUDA Debugger back-end`): {how}; the host's driver must \
         ship it (`ldconfig -p | grep libcudadebugger` on the host)"
    ))
}

/// The host's driver against the image's nvcc (see [`driver_toolkit`]).
pub fn check_image_driver_toolkit(
    gpu: &ToolFacts,
    target: &ContainerTarget,
    found: &ImageProbe,
) -> Option<Check> {
    let gpus = parse_gpus(&gpu.output.as_ref().filter(|o| o.success())?.stdout);
    let driver = &gpus.first()?.driver;
    let nvcc = found.tool("nvcc").filter(|t| t.exit == Some(0))?;
    let (_, short) = parse_version("nvcc", &nvcc.output.join("\n"))?;
    let release = short.split_whitespace().next()?;
    let mut c = driver_toolkit(driver, release)?;
    c.detail = format!("nvcc in {}: {}", target.image, c.detail);
    if c.status != Status::Ok {
        c.fix = Some(format!(
            "upgrade the host's driver to the release it names, or use an image whose CUDA the driver supports \
             (`nvidia-smi` shows the highest CUDA version it supports; `{}` has CUDA {release})",
            target.image
        ));
    }
    Some(c)
}

/// ptrace for the attach rung in a container. Docker and Podman run the target as root
/// with `--cap-add SYS_PTRACE`, so only `ptrace_scope` 3 blocks it, unless the image runs
/// as another user (`USER`), who does not hold the capability. Apptainer runs it as this
/// user in the host's PID namespace: the host's rules, as [`check_ptrace`] applies them.
pub fn check_ptrace_in_container(facts: &PtraceFacts, runtime: Runtime, image_uid: Option<u32>) -> Check {
    let scope = facts.ptrace_scope.as_deref().map(str::trim);
    if runtime == Runtime::Apptainer || runtime == Runtime::None || scope == Some("3") {
        let mut c = check_ptrace(facts);
        if runtime == Runtime::Apptainer {
            c.detail.push_str(" (Apptainer runs the target as this user, in the host's PID namespace)");
        }
        return c;
    }
    let c = |status, detail: String| Check::new("ptrace", status, detail, NEED_PTRACE);
    let scope_text = scope.map_or("no Yama ptrace_scope".to_string(), |s| format!("ptrace_scope {s}"));
    match image_uid {
        Some(uid) if uid != 0 => {
            let fix = format!(
                "run the image as root (no `USER`, or `USER root`, in its Containerfile, as containers/ do), or \
                 lower the host's scope: `sudo sysctl kernel.yama.ptrace_scope=0`; the image runs as uid {uid}"
            );
            let detail = format!(
                "{scope_text} on the host, and the image runs as uid {uid}, who does not hold the container's \
                 SYS_PTRACE"
            );
            match scope {
                None | Some("0") => {
                    c(Status::Ok, format!("{scope_text} on the host: uid {uid} may attach to its own processes"))
                }
                Some("1") => c(Status::Warn, detail).fix(fix),
                _ => c(Status::Missing, detail).fix(fix),
            }
        }
        _ => c(
            Status::Ok,
            format!(
                "{scope_text} on the host: the container gets `--cap-add SYS_PTRACE` and runs as root, so only \
                 ptrace_scope 3 blocks it"
            ),
        ),
    }
}

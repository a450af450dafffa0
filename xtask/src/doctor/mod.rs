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
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use anyhow::{bail, Result};
use serde::Serialize;

use crate::launch::container::RuntimeArgv;
use crate::model::{Exit, Need, RungId, Runtime};
pub use crate::process::short::Output;

mod container;
pub use container::*;

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

/// The `--query-gpu` fields asked of `nvidia-smi`, and the fallback for old drivers that
/// do not know `compute_cap` (`Field "compute_cap" is not a valid field to query.`).
const GPU_QUERY: &str = "--query-gpu=name,driver_version,compute_cap,memory.total";
const GPU_QUERY_OLD: &str = "--query-gpu=name,driver_version,memory.total";
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
    /// What of the ladder's needs it checks.
    pub need: Need,
    /// The rungs that need it (derived from [`RungId::needs`]), or `all`.
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
    fn new(name: &str, status: Status, detail: impl Into<String>, need: Need) -> Check {
        let needed_by = if need.universal() {
            vec!["all".to_string()]
        } else {
            RungId::ALL.into_iter().filter(|r| r.has_need(need)).map(|r| r.name().to_string()).collect()
        };
        Check {
            name: name.to_string(),
            status,
            detail: detail.into(),
            fix: None,
            need,
            needed_by,
            version: None,
            path: None,
            off_path: false,
        }
    }

    fn fix(mut self, fix: impl Into<String>) -> Check {
        self.fix = Some(fix.into());
        self
    }

    /// Whether a run of any of `rungs` needs this check (no rungs: every rung).
    pub fn needed_for(&self, rungs: &[RungId]) -> bool {
        rungs.is_empty() || rungs.iter().any(|r| r.has_need(self.need))
    }
}

/// Every check that was run, in a fixed order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    /// The checks that are `Missing` and needed by any of `rungs`.
    pub fn missing_for(&self, rungs: &[RungId]) -> Vec<&Check> {
        self.checks.iter().filter(|c| c.status == Status::Missing && c.needed_for(rungs)).collect()
    }

    /// The checks that are `Warn` and needed by any of `rungs`.
    pub fn warnings_for(&self, rungs: &[RungId]) -> Vec<&Check> {
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
    /// The rungs to check for; empty means every rung.
    pub need: Vec<RungId>,
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

    /// Whether a check of `need` is wanted for these options.
    fn wants(&self, need: Need) -> bool {
        self.need.is_empty() || self.need.iter().any(|r| r.has_need(need))
    }
}

/// Runs every check `opts` asks for on this machine. Takes about [`PROBE_TIMEOUT`] at
/// worst (a hanging `nvidia-smi`); on a machine without a GPU, well under a second.
pub fn run_checks(opts: &Options) -> Report {
    evaluate(&gather(&SystemProbe, opts))
}

/// `debug-ima`'s gate: an error naming every missing check that `rungs` need, with its
/// fix, or `Ok` when they can all run (warnings do not stop it).
pub fn require(report: &Report, rungs: &[RungId]) -> Result<()> {
    let missing = report.missing_for(rungs);
    if missing.is_empty() {
        return Ok(());
    }
    let mut msg = if report.has_gpu() {
        let names: Vec<&str> = rungs.iter().map(|r| r.name()).collect();
        format!("this machine cannot run the {} rung(s): something they need is missing", names.join(", "))
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
    let missing: Vec<String> =
        report.missing_for(&[]).iter().map(|c| format!("{} ({})", c.name, c.needed_by.join(", "))).collect();
    let warns = report.warnings_for(&[]).len();
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
// Probing: the impure layer
// ---------------------------------------------------------------------------------------

/// What doctor reads off a short command's [`Output`].
pub trait OutputExt {
    /// stdout then stderr.
    fn text(&self) -> String;
    /// The first non-blank line of stdout, else of stderr.
    fn first_line(&self) -> &str;
    /// `exit 2`, `killed by signal 9`, `no answer within 10 s`, `cannot start: ...`.
    fn describe_exit(&self) -> String;
}

impl OutputExt for Output {
    fn text(&self) -> String {
        let mut s = self.stdout.clone();
        if !s.is_empty() && !s.ends_with('\n') {
            s.push('\n');
        }
        s.push_str(&self.stderr);
        s
    }

    fn first_line(&self) -> &str {
        first_line(&self.stdout).or_else(|| first_line(&self.stderr)).unwrap_or("")
    }

    fn describe_exit(&self) -> String {
        match self.exit {
            Exit::Code(c) => format!("exit {c}"),
            Exit::Signal(s) => format!("killed by signal {s}"),
            Exit::TimedOut => format!("no answer within {} s", PROBE_TIMEOUT.as_secs()),
            Exit::NotStarted => format!("cannot start: {}", self.stderr.trim()),
            Exit::Stopped | Exit::Interrupted => "interrupted".to_string(),
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
        crate::process::short::run(program, args, timeout)
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

/// Looks at the machine through `probe`, for the checks `opts` asks for. The commands run
/// in parallel threads, each within [`PROBE_TIMEOUT`] (the probe inside a container image
/// within [`IMAGE_PROBE_TIMEOUT`]). With a container, the host's CUDA tools, debugger
/// back-end and TMPDIR are not probed: the image's are.
pub fn gather(probe: &dyn Probe, opts: &Options) -> Facts {
    let target = opts.container_target();
    let tools: Vec<(&str, Need)> = [
        ("nvcc", Need::Nvcc),
        ("cuobjdump", Need::Cuobjdump),
        ("cuda-gdb", Need::CudaGdb),
        ("compute-sanitizer", Need::ComputeSanitizer),
    ]
    .into_iter()
    .filter(|(_, need)| opts.wants(*need))
    .collect();
    let (host_tools, in_image_checks): (Vec<&str>, Vec<String>) = match target {
        None => (tools.iter().map(|(name, _)| *name).collect(), Vec::new()),
        Some(_) => {
            let mut names: Vec<String> = tools.iter().map(|(name, _)| name.to_string()).collect();
            if opts.wants(Need::DebuggerBackend) {
                names.push("cuda-debugger-backend".into());
            }
            if opts.wants(Need::Tmpdir) {
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
        let backend =
            (on_host && opts.wants(Need::DebuggerBackend)).then(|| s.spawn(|| probe_backend(probe)));
        let space =
            opts.wants(Need::CoredumpSpace).then(|| s.spawn(|| probe_space(probe, &opts.coredump_dir)));
        let container = target.map(|t| {
            let uid_wanted = opts.wants(Need::Ptrace);
            s.spawn(move || probe_container(probe, t, in_image_checks, uid_wanted))
        });
        let plumbing = target.filter(|t| t.gpus).map(|t| s.spawn(move || probe_plumbing(probe, t.runtime)));
        let tmpdir = (on_host && opts.wants(Need::Tmpdir)).then(|| probe_tmpdir(probe));
        let ptrace = opts.wants(Need::Ptrace).then(|| PtraceFacts {
            proc_status: probe.read_file(Path::new("/proc/self/status")),
            ptrace_scope: probe.read_file(Path::new("/proc/sys/kernel/yama/ptrace_scope")),
        });
        let core = opts.wants(Need::CoredumpSpace).then(|| CoreFacts {
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
    let missing = |detail: String, fix: &str| Check::new("gpu", Status::Missing, detail, Need::Gpu).fix(fix);
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
                Need::Gpu,
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
fn tool_need(name: &str) -> (Need, Status) {
    match name {
        "nvcc" => (Need::Nvcc, Status::Missing),
        "cuobjdump" => (Need::Cuobjdump, Status::Warn),
        "cuda-gdb" => (Need::CudaGdb, Status::Missing),
        "compute-sanitizer" => (Need::ComputeSanitizer, Status::Missing),
        "cuda-debugger-backend" => (Need::DebuggerBackend, Status::Warn),
        "tmpdir" => (Need::Tmpdir, Status::Missing),
        _ => (Need::Gpu, Status::Missing),
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
            Need::Gpu,
        )
    } else {
        Check::new(
            "driver-toolkit",
            Status::Warn,
            format!(
                "nvcc {release} needs driver {need} or newer, this one is {driver}: programs it builds fail \
                 with `CUDA driver version is insufficient for CUDA runtime version`"
            ),
            Need::Gpu,
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
        let mut c = Check::new(
            name,
            Status::Ok,
            format!("libcudadebugger.so.1 at {first}{more}"),
            Need::DebuggerBackend,
        );
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
    Check::new(name, Status::Warn, how, Need::DebuggerBackend).fix(
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
    let c = |status, detail: String| Check::new("ptrace", status, detail, Need::Ptrace);
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
    let c = |status, detail: String| Check::new("tmpdir", status, detail, Need::Tmpdir);
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
    let c = |status, detail: String| Check::new("coredump-space", status, detail, Need::CoredumpSpace);
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
    Check::new("core-pattern", Status::Ok, detail, Need::CoredumpSpace)
}

//! doctor's report: the limits every probe keeps, the [`Check`]s with their [`Status`], the
//! [`Report`] with what the ladder reads off it (GPUs, tool paths, versions), the gate
//! [`require`] and the rendered table.
//!
//! Must not: probe anything or print (rendering returns a string).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Result};
use serde::Serialize;

use crate::model::{Need, RungId, Runtime};

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
    pub(super) fn new(name: &str, status: Status, detail: impl Into<String>, need: Need) -> Check {
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

    pub(super) fn fix(mut self, fix: impl Into<String>) -> Check {
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
    /// Whether a GPU probe that did not answer within [`PROBE_TIMEOUT`] is waited for (a run
    /// about to start: under load, several runs starting at once can make `nvidia-smi` slow,
    /// which is no reason to call the machine GPU-less), saying so, until it answers or
    /// Ctrl-C; `doctor` itself reports the timeout instead.
    pub wait_for_gpu: bool,
}

/// How long a run waits for a slow `nvidia-smi` after [`PROBE_TIMEOUT`]: no limit in
/// practice (a year); Ctrl-C or any other signal the tool catches ends the wait.
pub const GPU_WAIT: Duration = Duration::from_secs(365 * 24 * 3600);

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
        Options {
            coredump_dir: PathBuf::from("bundles"),
            need: Vec::new(),
            container: None,
            wait_for_gpu: false,
        }
    }
}

impl Options {
    /// The container to check, when there is one (a runtime other than [`Runtime::None`]).
    pub fn container_target(&self) -> Option<&ContainerTarget> {
        self.container.as_ref().filter(|t| t.runtime != Runtime::None)
    }

    /// Whether a check of `need` is wanted for these options.
    pub(super) fn wants(&self, need: Need) -> bool {
        self.need.is_empty() || self.need.iter().any(|r| r.has_need(need))
    }
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

/// The version of `doctor --json`'s shape: raised when a field is removed or changes meaning
/// (adding one does not change it). docs/doctor.md lists the fields.
pub const JSON_SCHEMA: u32 = 1;

/// `doctor --json`: the report and what it means for the rungs asked about, one object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JsonReport<'a> {
    /// [`JSON_SCHEMA`].
    pub schema: u32,
    /// The tool's version and commit (`0.1.0 (abc1234 2026-12-01)`).
    pub tool: String,
    /// The rungs checked for (`--rungs`), every rung when none was asked.
    pub rungs: Vec<&'static str>,
    /// Nothing those rungs need is `missing` (warnings allowed): doctor exits 0.
    pub ready: bool,
    /// `nvidia-smi` listed a usable GPU.
    pub gpu: bool,
    /// The names of the `missing` checks those rungs need.
    pub missing: Vec<&'a str>,
    /// The names of the `warn` checks those rungs need.
    pub warnings: Vec<&'a str>,
    /// Every check that ran, in table order.
    pub checks: &'a [Check],
}

/// The `doctor --json` object for `report`, checked for `rungs` (empty: every rung); `tool`
/// is the version line.
pub fn json_report<'a>(report: &'a Report, rungs: &[RungId], tool: &str) -> JsonReport<'a> {
    let names = |checks: Vec<&'a Check>| checks.into_iter().map(|c| c.name.as_str()).collect();
    let asked: Vec<RungId> = if rungs.is_empty() { RungId::ALL.to_vec() } else { rungs.to_vec() };
    JsonReport {
        schema: JSON_SCHEMA,
        tool: tool.to_string(),
        rungs: asked.iter().map(|r| r.name()).collect(),
        ready: report.missing_for(rungs).is_empty(),
        gpu: report.has_gpu(),
        missing: names(report.missing_for(rungs)),
        warnings: names(report.warnings_for(rungs)),
        checks: &report.checks,
    }
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

const HEADER: [&str; 4] = ["check", "status", "needed by", "found"];

/// The table's rows: check, status, needed by, found.
fn rows(report: &Report) -> Vec<[String; 4]> {
    report
        .checks
        .iter()
        .map(|c| [c.name.clone(), c.status.as_str().to_string(), c.needed_by.join(", "), c.detail.clone()])
        .collect()
}

/// The widths of the table's first three columns, the header's included.
fn widths(rows: &[[String; 4]]) -> [usize; 3] {
    let mut width = [0usize; 3];
    for row in std::iter::once(&HEADER.map(String::from)).chain(rows.iter()) {
        for (w, cell) in width.iter_mut().zip(row.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    width
}

/// The report for a terminal `columns` wide (`None`: no width to fit, a pipe or a file): the
/// table ([`render`]) where its first three columns leave 40 for what was found, else one
/// block per check (`gpu: missing (needed by all)`, then what was found and the fix, indented).
/// With a width every line fits it: what was found, the fixes and the summary are wrapped at
/// spaces, each continuation under its own column (a word longer than the room stays whole).
pub fn render_in(report: &Report, columns: Option<usize>) -> String {
    let Some(cols) = columns else { return render(report) };
    let rows = rows(report);
    let width = widths(&rows);
    let first = width.iter().sum::<usize>() + 6;
    let mut out = String::new();
    let put = |out: &mut String, lead: &str, indent: usize, text: &str| {
        let mut lines = wrapped(text, cols.saturating_sub(indent).max(20)).into_iter();
        let _ = writeln!(out, "{lead}{}", lines.next().unwrap_or_default());
        for l in lines {
            let _ = writeln!(out, "{:indent$}{l}", "");
        }
    };
    if first + 40 <= cols {
        let head = |r: &[String; 4]| {
            format!("{:w0$}  {:w1$}  {:w2$}  ", r[0], r[1], r[2], w0 = width[0], w1 = width[1], w2 = width[2])
        };
        let header = HEADER.map(String::from);
        put(&mut out, &head(&header), first, &header[3]);
        let indent = first - 6;
        for (c, row) in report.checks.iter().zip(&rows) {
            put(&mut out, &head(row), first, &row[3]);
            if let Some(fix) = &c.fix {
                put(&mut out, &format!("{:indent$}fix: ", ""), indent + 5, fix);
            }
        }
    } else {
        for c in &report.checks {
            let what = format!("{}: {} (needed by {})", c.name, c.status.as_str(), c.needed_by.join(", "));
            put(&mut out, "", 4, &what);
            put(&mut out, "    ", 4, &c.detail);
            if let Some(fix) = &c.fix {
                put(&mut out, "    fix: ", 9, fix);
            }
        }
    }
    out.push('\n');
    put(&mut out, "", 0, &summary(report));
    out
}

/// `text` in lines of at most `width` characters, split at spaces; a word longer than `width`
/// has a line of its own. Pure.
fn wrapped(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if !cur.is_empty() && cur.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    lines.push(cur);
    lines
}

/// The report as a table for humans, then one line that says what can run. Pure and
/// deterministic: the same report gives the same text.
pub fn render(report: &Report) -> String {
    let rows = rows(report);
    let width = widths(&rows);
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
    line(&mut out, &HEADER.map(String::from));
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

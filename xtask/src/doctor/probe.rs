//! The real machine behind [`Probe`] ([`SystemProbe`]) and the host's probes: where each CUDA
//! tool is, its version, the GPUs, the debugger back-end, coredump space, `TMPDIR`.
//!
//! Must not: judge what it saw (the checks do) or run a probe longer than its timeout.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::facts::*;
use super::report::PROBE_TIMEOUT;
use crate::process::short::Output;

/// The `--query-gpu` fields asked of `nvidia-smi`, and the fallback for old drivers that
/// do not know `compute_cap` (`Field "compute_cap" is not a valid field to query.`).
const GPU_QUERY: &str = "--query-gpu=name,driver_version,compute_cap,memory.total";
const GPU_QUERY_OLD: &str = "--query-gpu=name,driver_version,memory.total";
/// Where NVIDIA's packages install the toolkit; its `bin` is searched after PATH and
/// `$CUDA_HOME/bin`.
const CUDA_DEFAULT_HOME: &str = "/usr/local/cuda";

/// The real machine.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemProbe;

impl Probe for SystemProbe {
    /// Through `process::short`, like every short command: killed with its group and the
    /// rest of its tree at its timeout, or as soon as Ctrl-C, SIGTERM or SIGHUP comes (the
    /// handler is installed at the tool's start, `process::init`, before any probe runs).
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

/// A tool to look for: its name and where to look after PATH.
pub(super) fn extra_dirs(name: &str, cuda_home: Option<&str>) -> Vec<PathBuf> {
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

pub(super) fn probe_tool(probe: &dyn Probe, name: &str, args: &[&str]) -> ToolFacts {
    let found = locate(probe, name);
    let output = found.path().map(|p| probe.run(p, args, PROBE_TIMEOUT));
    ToolFacts { name: name.to_string(), found, output }
}

/// `nvidia-smi --query-gpu`; with `wait`, a query that timed out is asked again and waited
/// for ([`super::report::GPU_WAIT`]), the wait said on the terminal.
pub(super) fn probe_gpu(probe: &dyn Probe, wait: bool) -> ToolFacts {
    let mut facts = probe_tool(probe, "nvidia-smi", &[GPU_QUERY, "--format=csv,noheader"]);
    let timed_out = facts.output.as_ref().is_some_and(|o| o.exit == crate::model::Exit::TimedOut);
    if let (true, true, Some(path)) = (wait, timed_out, facts.found.path()) {
        crate::ui::status(&format!(
            "waiting for `nvidia-smi`, which did not answer within {} s (a busy machine, or a hung \
             driver: Ctrl-C stops)",
            PROBE_TIMEOUT.as_secs()
        ));
        facts.output = Some(probe.run(path, &[GPU_QUERY, "--format=csv,noheader"], super::report::GPU_WAIT));
    }
    let old_driver =
        facts.output.as_ref().is_some_and(|o| o.text().contains("is not a valid field to query"));
    if let (true, Some(path)) = (old_driver, facts.found.path()) {
        facts.output = Some(probe.run(path, &[GPU_QUERY_OLD, "--format=csv,noheader"], PROBE_TIMEOUT));
    }
    facts
}

pub(super) fn probe_backend(probe: &dyn Probe) -> BackendFacts {
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

pub(super) fn probe_space(probe: &dyn Probe, dir: &Path) -> SpaceFacts {
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

pub(super) fn probe_tmpdir(probe: &dyn Probe) -> TmpdirFacts {
    let env = probe.env("TMPDIR");
    let dir = PathBuf::from(env.as_deref().filter(|t| !t.is_empty()).unwrap_or("/tmp"));
    let is_dir = probe.is_dir(&dir);
    let writable = if is_dir { probe.check_writable(&dir) } else { Err("not a directory".to_string()) };
    TmpdirFacts { env, dir, is_dir, writable }
}

//! What doctor saw, raw: the [`Probe`] interface to the machine, the facts each probe
//! gathers (the host's and a container's), and what is read off a short command's output.
//! The input of the pure checks; tests build it from recordings.
//!
//! Must not: run anything itself (a [`Probe`] does) or judge what it holds (the checks do).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::model::Exit;

use super::report::{ContainerTarget, PROBE_TIMEOUT};
use crate::process::short::Output;

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

pub(super) fn first_line(s: &str) -> Option<&str> {
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

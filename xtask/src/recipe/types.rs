//! The recipe's types: as parsed ([`Recipe`], with templates) and as resolved for a run
//! ([`Resolved`]); the format's limits and the built-in recipes' texts.
//!
//! Must not: read files or parse YAML (`parse.rs` does); it only asks whether the paths a
//! resolved recipe names exist ([`Resolved::not_built`], [`Step::missing_program`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize, Serializer};

use crate::model::{Launcher, RungId, Runtime};

use super::words::join_words;

/// The recipe format version this code reads (`version: 1`).
pub const VERSION: u64 = 1;
/// A recipe is a short file; anything bigger is refused before it is parsed.
pub const MAX_RECIPE_BYTES: usize = 1 << 20;
/// The longest `timeout` accepted, in seconds (30 days); longer is surely a typo.
/// The most errors one reading of a recipe reports (issue 24: all of them at once).
pub const MAX_RECIPE_ERRORS: usize = 20;

pub const MAX_TIMEOUT_SECS: u64 = 30 * 24 * 3600;
/// Variables every recipe has without declaring them. `recipe_dir` and `cwd` come from the
/// recipe and the current directory; the others are supplied by the caller (the ladder fills
/// them from doctor's report and the host, see [`SUPPLIED_BUILTINS`]).
pub const BUILTIN_VARIABLES: [&str; 4] = ["recipe_dir", "cwd", "gpu_arch", "max_jobs"];
/// `{gpu_arch}` when no GPU was asked (`--dry-run`, `recipe show`): the text stands in.
pub const GPU_ARCH_UNKNOWN: &str = "<compute capability of GPU 0>";
/// `{max_jobs}` when the caller did not measure the host (`recipe show`, `recipe check`).
pub const MAX_JOBS_UNKNOWN: &str = "<jobs from cores and memory>";
/// The built-in variables a caller supplies to [`resolve_in_with`], with the text that
/// stands in for each when it supplies none: `gpu_arch` (GPU 0's compute capability from
/// `nvidia-smi`, `9.0`) and `max_jobs` (see [`max_jobs`]).
pub const SUPPLIED_BUILTINS: [(&str, &str); 2] =
    [("gpu_arch", GPU_ARCH_UNKNOWN), ("max_jobs", MAX_JOBS_UNKNOWN)];
/// Memory one compile job is given when `{max_jobs}` is worked out: nvcc on vLLM's kernels
/// takes a few GiB each.
pub const GIB_PER_JOB: u64 = 4;
/// The time limit of a `collect` command when the recipe gives none.
pub const DEFAULT_COLLECT_TIMEOUT: u64 = 120;

const BUILTIN_NAMES: [&str; 4] = ["demo", "cuda", "pytorch", "vllm"];
const BUILTIN_TEXTS: [&str; 4] = [
    include_str!("../../../recipes/demo.yaml"),
    include_str!("../../../recipes/cuda.yaml"),
    include_str!("../../../recipes/pytorch.yaml"),
    include_str!("../../../recipes/vllm.yaml"),
];

/// The files of the built-in recipes' folder, by path relative to it, as this binary was
/// built with them: an installed tool whose clone is gone writes them into its cache folder
/// ([`crate::recipe::cached_builtin_dir`]) and runs from there.
pub const EMBEDDED: [(&str, &str); 5] = [
    ("demo.yaml", BUILTIN_TEXTS[0]),
    ("cuda.yaml", BUILTIN_TEXTS[1]),
    ("pytorch.yaml", BUILTIN_TEXTS[2]),
    ("vllm.yaml", BUILTIN_TEXTS[3]),
    ("demo/ima_demo.cu", include_str!("../../../recipes/demo/ima_demo.cu")),
];

/// `{max_jobs}`: as many compile jobs as there are cores, but no more than one per
/// [`GIB_PER_JOB`] GiB of available memory (when known), and at least one.
pub fn max_jobs(cores: usize, mem_available_bytes: Option<u64>) -> usize {
    let by_memory = mem_available_bytes.map(|b| (b / (GIB_PER_JOB << 30)) as usize).unwrap_or(usize::MAX);
    cores.min(by_memory).max(1)
}

/// The built-in recipes' names, in the order `recipe list` shows them.
pub fn builtin_names() -> &'static [&'static str] {
    &BUILTIN_NAMES
}

/// The YAML text of a built-in recipe.
pub fn builtin_text(name: &str) -> Option<&'static str> {
    BUILTIN_NAMES.iter().position(|n| *n == name).map(|i| BUILTIN_TEXTS[i])
}

/// What a recipe (`container:`) or the command line (`--container`, `--image`) says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContainerConfig {
    /// `None` when neither the recipe nor the command line chose one: the host.
    pub runtime: Option<Runtime>,
    /// A Docker/Podman image reference (`debug-ima/cuda:13.0`, best with `@sha256:`), or an
    /// Apptainer image file (`.sif`).
    pub image: Option<String>,
    /// Host paths mounted at the same path besides those always mounted (the bundle root,
    /// the run's and the build's folders, the recipe's folder).
    pub mounts: Vec<PathBuf>,
    /// Pass the GPUs in (default). Off only for tests without a GPU runtime.
    pub gpus: bool,
}

impl Default for ContainerConfig {
    fn default() -> ContainerConfig {
        ContainerConfig { runtime: None, image: None, mounts: Vec::new(), gpus: true }
    }
}

// ---------------------------------------------------------------------------------------
// The recipe, as parsed
// ---------------------------------------------------------------------------------------

/// Where a recipe came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecipeSource {
    /// Embedded in the binary (`recipes/NAME.yaml`).
    Builtin(String),
    /// A file the user named, as they wrote it.
    File(PathBuf),
}

impl RecipeSource {
    /// How errors name the file: `recipes/demo.yaml` for a built-in, the path as given.
    pub fn label(&self) -> String {
        match self {
            RecipeSource::Builtin(name) => format!("recipes/{name}.yaml"),
            RecipeSource::File(path) => path.display().to_string(),
        }
    }
}

impl fmt::Display for RecipeSource {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            RecipeSource::Builtin(_) => write!(f, "built in: {}", self.label()),
            RecipeSource::File(_) => write!(f, "{}", self.label()),
        }
    }
}

/// A declared variable: `{name}` in the recipe's strings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Variable {
    pub description: String,
    /// `None`: required; the user gives it with `--set NAME=VALUE` or at a prompt.
    pub default: Option<String>,
}

/// A command or a list of paths: a list of words, or one string split into words like a
/// shell would (quotes, backslashes) after expansion, but never run through a shell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Words {
    List(Vec<String>),
    Line(String),
}

impl Words {
    pub(super) fn is_empty(&self) -> bool {
        match self {
            Words::List(items) => items.is_empty(),
            Words::Line(line) => line.trim().is_empty(),
        }
    }
}

/// `build:` or `run:` before expansion: every string may hold `{variable}`s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepTemplate {
    pub command: Words,
    pub cwd: Option<String>,
    pub env: BTreeMap<String, String>,
    /// Environment variables taken away from the step (their mere presence can matter:
    /// older vLLM reads any value of `VLLM_USE_PRECOMPILED`, `0` too, as yes).
    pub env_remove: Vec<String>,
    /// Seconds.
    pub timeout: Option<u64>,
    /// Only in `build`: the files to check for line info with `cuobjdump`.
    pub binaries: Words,
}

/// One `collect:` entry before expansion: a command whose output (both streams) is saved as
/// `env/NAME` in the bundle, run once beside the climb.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectTemplate {
    pub name: String,
    pub command: Words,
    /// Seconds; [`DEFAULT_COLLECT_TIMEOUT`] when absent.
    pub timeout: Option<u64>,
}

/// One `knobs:` entry before expansion: a setting `debug-ima ablate` may change in the run
/// (docs/why.md), and how: variables set or removed, words added to or removed from the run
/// command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnobTemplate {
    pub name: String,
    pub description: String,
    pub env: BTreeMap<String, String>,
    pub env_remove: Vec<String>,
    pub args_add: Words,
    pub args_remove: Words,
}

/// A knob ready to apply: its values expanded, its words split.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Knob {
    pub name: String,
    pub description: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env_remove: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args_add: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args_remove: Vec<String>,
}

impl Knob {
    /// Applies the knob's change to the run step: its variables set (and no longer removed),
    /// removed (and no longer set), its words removed from the command where present (the
    /// program itself never), then added at the end.
    pub fn apply(&self, run: &mut Step) {
        for (k, v) in &self.env {
            run.env.insert(k.clone(), v.clone());
            run.env_remove.retain(|r| r != k);
        }
        for k in &self.env_remove {
            run.env.remove(k);
            if !run.env_remove.contains(k) {
                run.env_remove.push(k.clone());
            }
        }
        if let Some((program, rest)) = run.argv.split_first() {
            let kept: Vec<String> = rest.iter().filter(|a| !self.args_remove.contains(a)).cloned().collect();
            run.argv = std::iter::once(program.clone()).chain(kept).collect();
        }
        run.argv.extend(self.args_add.iter().cloned());
    }

    /// The change in a few words, for tables: `TORCH_COMPILE_DISABLE=1`, `+--enforce-eager`.
    pub fn change(&self) -> String {
        let mut parts: Vec<String> = self.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        parts.extend(self.env_remove.iter().map(|k| format!("-{k} (unset)")));
        parts.extend(self.args_add.iter().map(|a| format!("+{a}")));
        parts.extend(self.args_remove.iter().map(|a| format!("-{a}")));
        parts.join(" ")
    }
}

/// How the rebuild rung compiles device code: `-lineinfo` or `-G`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DebugInfo {
    #[serde(rename = "lineinfo")]
    Lineinfo,
    #[serde(rename = "G")]
    G,
}

impl DebugInfo {
    /// The nvcc flag, for `NVCC_PREPEND_FLAGS`.
    pub fn nvcc_flag(self) -> &'static str {
        match self {
            DebugInfo::Lineinfo => "-lineinfo",
            DebugInfo::G => "-G",
        }
    }
}

/// `container:` before expansion: the container every rung's command runs in (see
/// [`crate::launch::container`]). `--container` and `--image` on the command line override it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerTemplate {
    /// `None`: not said; `--container` chooses it, else the ladder runs on the host.
    pub runtime: Option<Runtime>,
    /// The image reference or Apptainer `.sif` file; may hold `{variable}`s.
    pub image: Option<String>,
    /// Host folders mounted at the same path besides those always mounted (see
    /// [`container_mounts`]); relative ones are taken from the current directory.
    pub mounts: Words,
    /// Pass the GPUs in; `true` unless the recipe says `gpus: false`.
    pub gpus: bool,
}

/// Per-rung options (`rungs.NAME`). Which keys a rung takes is its id's
/// ([`RungId::options`]: `args` the sanitizers', `debug` the rebuild's); the parser refuses
/// the others.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RungOptions {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Seconds; for `rebuild`, the build's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// Added to the environment of the rung's run (for `rebuild`, of the build).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The sanitizers: extra `compute-sanitizer` arguments, before the target's command.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// `rebuild`: `lineinfo` (default) or `G`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub debug: Option<DebugInfo>,
}

/// A parsed, validated recipe; strings still hold their `{variable}`s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recipe {
    pub name: String,
    pub description: String,
    pub python: bool,
    pub variables: BTreeMap<String, Variable>,
    /// Commands whose output goes into the bundle's `env/`, run beside the climb.
    pub collect: Vec<CollectTemplate>,
    /// `knobs:`: the settings `debug-ima ablate` may change, in the recipe's order.
    pub knobs: Vec<KnobTemplate>,
    pub build: Option<StepTemplate>,
    pub run: StepTemplate,
    /// `run.hang_after`, seconds: a run still going after this long is looked at as hung
    /// (docs/hangs.md).
    pub hang_after: Option<u64>,
    /// `run.launch_blocking`: whether the armed first run may be launch-blocking (`None`: the
    /// ladder decides, docs/ladder.md "The armed first run").
    pub launch_blocking: Option<bool>,
    /// Keyed by rung, in ladder order.
    pub rungs: BTreeMap<RungId, RungOptions>,
    /// `container:`, if the recipe has one.
    pub container: Option<ContainerTemplate>,
    /// `launch:` (`host` or `slurm`), if the recipe says; `--launcher` overrides it.
    pub launch: Option<Launcher>,
    pub source: RecipeSource,
    /// `{recipe_dir}`: the directory of the recipe file.
    pub dir: PathBuf,
    /// The YAML text, for `recipe show`.
    pub text: String,
}

impl Recipe {
    /// How errors name the recipe's file.
    pub fn label(&self) -> String {
        self.source.label()
    }

    /// Variables without a default, in name order.
    pub fn required_variables(&self) -> Vec<&str> {
        self.variables.iter().filter(|(_, v)| v.default.is_none()).map(|(k, _)| k.as_str()).collect()
    }

    /// `rungs.NAME`, if the recipe gave any.
    pub fn rung(&self, id: RungId) -> Option<&RungOptions> {
        self.rungs.get(&id)
    }
}

// ---------------------------------------------------------------------------------------
// The recipe, resolved
// ---------------------------------------------------------------------------------------

/// A command ready to run: variables expanded, words split, paths absolute where they were
/// relative (`cwd`, `binaries`, a program given with a `/`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    pub argv: Vec<String>,
    /// `None`: the current directory.
    pub cwd: Option<PathBuf>,
    pub env: BTreeMap<String, String>,
    /// Variables removed from the step's environment.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env_remove: Vec<String>,
    #[serde(serialize_with = "serialize_secs")]
    pub timeout: Option<Duration>,
    pub binaries: Vec<PathBuf>,
}

/// A `collect:` command ready to run. It runs in the `run` step's directory and
/// environment, so that it sees the same Python and packages as the target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Collect {
    /// The file under the bundle's `env/`.
    pub name: String,
    pub argv: Vec<String>,
    #[serde(serialize_with = "serialize_duration")]
    pub timeout: Duration,
}

impl Step {
    /// The program: `argv[0]`.
    pub fn program(&self) -> &str {
        self.argv.first().map(String::as_str).unwrap_or("")
    }

    /// The command as one line a shell would split back into `argv`, for logs and prompts.
    pub fn command_line(&self) -> String {
        join_words(&self.argv)
    }

    /// Whether a binary the build makes does not exist yet (then the baseline builds first).
    pub fn binaries_missing(&self) -> bool {
        self.binaries.iter().any(|p| !p.exists())
    }

    /// The program (`argv[0]`) when there is none to start on this machine: a path (with a
    /// `/`; a relative one from the step's folder) that names no file, or a bare name that is
    /// in no folder of `PATH` (the step's own `PATH`, else this process's) as an executable
    /// file. `None` when it is there.
    pub fn missing_program(&self) -> Option<String> {
        let program = self.program();
        if program.is_empty() {
            return None;
        }
        if program.contains('/') {
            let path = match &self.cwd {
                Some(dir) => dir.join(program),
                None => PathBuf::from(program),
            };
            return (!path.exists()).then(|| program.to_string());
        }
        let path = self.env.get("PATH").map(std::ffi::OsString::from).or_else(|| std::env::var_os("PATH"));
        let found = path.iter().flat_map(std::env::split_paths).any(|dir| {
            use std::os::unix::fs::PermissionsExt;
            let candidate =
                if dir.as_os_str().is_empty() { PathBuf::from(program) } else { dir.join(program) };
            std::fs::metadata(candidate).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        });
        (!found).then(|| program.to_string())
    }

    /// The script a Python interpreter is to run when it does not exist: the first word after
    /// `python`/`python3.X` and its options that is no option (taken from the step's folder
    /// when relative). `None` when the program is no Python interpreter, when it runs a module
    /// (`-m`) or a command (`-c`) or reads stdin, or when the script is there.
    pub fn missing_script(&self) -> Option<String> {
        let base = self.program().rsplit('/').next().unwrap_or_default();
        if !base.strip_prefix("python").is_some_and(|v| v.bytes().all(|b| b.is_ascii_digit() || b == b'.')) {
            return None;
        }
        let mut words = self.argv.iter().skip(1);
        while let Some(w) = words.next() {
            match w.as_str() {
                "-m" | "-c" | "-" => return None,
                // The options of the interpreter that take a value.
                "-W" | "-X" | "--check-hash-based-pycs" => {
                    words.next();
                }
                o if o.starts_with('-') => {
                    // `-c CMD` and `-m MOD` may come attached to other flags (`-uc`, `-um`).
                    if !o.starts_with("--") && (o.contains('c') || o.contains('m')) {
                        return None;
                    }
                }
                script => {
                    let path = match &self.cwd {
                        Some(dir) => dir.join(script),
                        None => PathBuf::from(script),
                    };
                    return (!path.exists()).then(|| script.to_string());
                }
            }
        }
        None
    }

    /// The directories the binaries go to. The build may need them to exist
    /// (`nvcc -o DIR/FILE` does not create `DIR`); whoever runs the build creates them.
    pub fn binary_dirs(&self) -> Vec<PathBuf> {
        let dirs: BTreeSet<PathBuf> =
            self.binaries.iter().filter_map(|b| b.parent()).map(Path::to_path_buf).collect();
        dirs.into_iter().collect()
    }
}

fn serialize_duration<S: Serializer>(d: &Duration, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_secs())
}

fn serialize_secs<S: Serializer>(d: &Option<Duration>, s: S) -> std::result::Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_some(&d.as_secs()),
        None => s.serialize_none(),
    }
}

/// A recipe with every variable filled: what the ladder runs and the manifest records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resolved {
    pub name: String,
    /// `recipes/demo.yaml` for a built-in, else the path as given.
    pub source: String,
    pub python: bool,
    /// Every variable's value, the built-ins (`recipe_dir`, `cwd`, `gpu_arch`, `max_jobs`)
    /// included.
    pub vars: BTreeMap<String, String>,
    /// Run once beside the climb, each into `env/NAME`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub collect: Vec<Collect>,
    /// `knobs:`, expanded: what `debug-ima ablate` may change in the run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub knobs: Vec<Knob>,
    pub build: Option<Step>,
    pub run: Step,
    /// `run.hang_after` (or `--hang-after`): from the target's start, how long before a run
    /// that has not exited is treated as hung; `None` when not given.
    #[serde(serialize_with = "serialize_secs", skip_serializing_if = "Option::is_none")]
    pub hang_after: Option<Duration>,
    /// `run.launch_blocking`, when the recipe says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_blocking: Option<bool>,
    /// Keyed by rung name; `env` and `args` expanded.
    pub rungs: BTreeMap<RungId, RungOptions>,
    /// `container:` with its variables filled and `mounts` absolute; the default (the host,
    /// unless `--container` says otherwise) when the recipe has none.
    pub container: ContainerConfig,
    /// `launch:`, when the recipe says (`--launcher` overrides it; the host without either).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch: Option<Launcher>,
}

impl Resolved {
    /// The user's own source trees, absolute: the folders the build and the run work in and
    /// the one the ladder started in. A device line in CUTLASS or ATen under one of them is
    /// the user's line (a PyTorch developer's ATen is their code).
    pub fn source_roots(&self) -> Vec<String> {
        let mut roots: Vec<String> = Vec::new();
        let dirs = [self.build.as_ref().and_then(|b| b.cwd.clone()), self.run.cwd.clone()];
        let started = self.vars.get("cwd").map(std::path::PathBuf::from);
        for d in dirs.into_iter().flatten().chain(started) {
            let d = d.display().to_string();
            if d.starts_with('/') && d != "/" && !roots.contains(&d) {
                roots.push(d);
            }
        }
        roots
    }

    /// The options of a rung; the defaults when the recipe gave none.
    pub fn rung(&self, id: RungId) -> RungOptions {
        self.rungs.get(&id).cloned().unwrap_or_default()
    }

    /// False only when the recipe says `enabled: false` for the rung.
    pub fn enabled(&self, id: RungId) -> bool {
        self.rungs.get(&id).and_then(|r| r.enabled).unwrap_or(true)
    }

    /// `rungs.rebuild.debug`, `lineinfo` when not given.
    pub fn debug_info(&self) -> DebugInfo {
        self.rungs.get(&RungId::Rebuild).and_then(|r| r.debug).unwrap_or(DebugInfo::Lineinfo)
    }

    /// Why the target is not built yet, when the recipe has a build: the first of its
    /// binaries that does not exist, else the program the run names when there is none to
    /// start ([`Step::missing_program`]), asked only where the target starts from this
    /// machine's files (`here`: not in a container, whose programs are the image's). `None`
    /// without a build, or when both are there.
    pub fn not_built(&self, here: bool) -> Option<String> {
        let build = self.build.as_ref()?;
        if let Some(b) = build.binaries.iter().find(|p| !p.exists()) {
            return Some(b.display().to_string());
        }
        self.run.missing_program().filter(|_| here)
    }
}

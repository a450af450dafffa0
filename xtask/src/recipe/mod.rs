//! Recipes: the YAML files that say how to build and run a target. Strict parsing with
//! `file:line:column` errors, `{variable}` expansion, shell-like word splitting (never a
//! shell), the built-in recipes, and the text of `cargo xtask recipe list|show|check`.
//!
//! All YAML code of the project lives here. Must not: spawn processes, print, or write
//! files; it reads files only in [`load`] and [`check`].

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};
use std::io::Read as _;
use std::marker::PhantomData;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::model::{RungId, Runtime};

/// The recipe format version this code reads (`version: 1`).
pub const VERSION: u64 = 1;
/// A recipe is a short file; anything bigger is refused before it is parsed.
pub const MAX_RECIPE_BYTES: usize = 1 << 20;
/// The longest `timeout` accepted, in seconds (30 days); longer is surely a typo.
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
    fn is_empty(&self) -> bool {
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
/// `env/NAME` in the bundle, run once beside the baseline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectTemplate {
    pub name: String,
    pub command: Words,
    /// Seconds; [`DEFAULT_COLLECT_TIMEOUT`] when absent.
    pub timeout: Option<u64>,
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

/// Per-rung options (`rungs.NAME`). `args` exists only for `memcheck`, `debug` only for
/// `rebuild`; the parser refuses them elsewhere.
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
    /// `memcheck`: extra `compute-sanitizer` arguments, before the target's command.
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
    /// Commands whose output goes into the bundle's `env/`, run beside the baseline.
    pub collect: Vec<CollectTemplate>,
    pub build: Option<StepTemplate>,
    pub run: StepTemplate,
    /// Keyed by rung, in ladder order.
    pub rungs: BTreeMap<RungId, RungOptions>,
    /// `container:`, if the recipe has one.
    pub container: Option<ContainerTemplate>,
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
    /// Run once beside the baseline, each into `env/NAME`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub collect: Vec<Collect>,
    pub build: Option<Step>,
    pub run: Step,
    /// Keyed by rung name; `env` and `args` expanded.
    pub rungs: BTreeMap<RungId, RungOptions>,
    /// `container:` with its variables filled and `mounts` absolute; the default (the host,
    /// unless `--container` says otherwise) when the recipe has none.
    pub container: ContainerConfig,
}

impl Resolved {
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
}

// ---------------------------------------------------------------------------------------
// Loading and parsing
// ---------------------------------------------------------------------------------------

/// Loads a built-in recipe by name, or a recipe file by path.
pub fn load(name_or_path: &str) -> Result<Recipe> {
    if let Some(text) = builtin_text(name_or_path) {
        return parse(text, RecipeSource::Builtin(name_or_path.to_string()), builtin_dir());
    }
    let path = Path::new(name_or_path);
    let looks_like_path = name_or_path.contains('/')
        || name_or_path.ends_with(".yaml")
        || name_or_path.ends_with(".yml")
        || path.exists();
    if !looks_like_path {
        bail!(
            "unknown recipe `{name_or_path}`: built-in recipes are {}; or pass a path to a .yaml file",
            builtin_names().join(", ")
        );
    }
    load_file(path)
}

/// Reads and parses a recipe file (at most [`MAX_RECIPE_BYTES`]).
pub fn load_file(path: &Path) -> Result<Recipe> {
    let label = path.display();
    let file = std::fs::File::open(path).with_context(|| {
        format!(
            "cannot read recipe `{label}`: check the path, or use a built-in recipe ({})",
            builtin_names().join(", ")
        )
    })?;
    let mut bytes = Vec::new();
    file.take(MAX_RECIPE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read recipe `{label}`"))?;
    if bytes.len() > MAX_RECIPE_BYTES {
        bail!(
            "{label}: larger than {} KiB; a recipe is a short YAML file (see docs/recipes.md)",
            MAX_RECIPE_BYTES / 1024
        );
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        anyhow!(
            "{label}: not UTF-8 text (invalid byte at offset {}); a recipe is a YAML file",
            e.utf8_error().valid_up_to()
        )
    })?;
    let abs = std::path::absolute(path).with_context(|| format!("cannot make `{label}` absolute"))?;
    let dir = abs.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("/"));
    parse(&text, RecipeSource::File(path.to_path_buf()), normalize(&dir))
}

/// `{recipe_dir}` of the built-in recipes: the repository's `recipes/`, found by looking for
/// `recipes/demo.yaml` from the current directory upwards, else beside this crate.
pub fn builtin_dir() -> PathBuf {
    if let Ok(cwd) = std::env::current_dir() {
        for dir in cwd.ancestors() {
            let candidate = dir.join("recipes");
            if candidate.join("demo.yaml").is_file() {
                return candidate;
            }
        }
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).join("recipes")
}

/// Parses and validates a recipe. Pure: `dir` becomes `{recipe_dir}`; `source` names the
/// file in errors (`recipes/x.yaml:LINE:COLUMN: message`).
pub fn parse(text: &str, source: RecipeSource, dir: PathBuf) -> Result<Recipe> {
    let label = source.label();
    if text.len() > MAX_RECIPE_BYTES {
        bail!(
            "{label}: larger than {} KiB; a recipe is a short YAML file (see docs/recipes.md)",
            MAX_RECIPE_BYTES / 1024
        );
    }
    if is_blank_yaml(text) {
        bail!("{label}: the file is empty: a recipe needs `version`, `name`, `description` and `run` (see docs/recipes.md)");
    }
    // libyaml slows down quadratically with flow nesting (`{a: {a: ...`): refuse deep nesting
    // before it is parsed. A recipe needs a handful of levels.
    if let Some((line, col)) = too_deep(text) {
        bail!(
            "{label}:{line}:{col}: brackets nested deeper than {MAX_FLOW_DEPTH} levels; a recipe needs a few"
        );
    }
    // First pass: only the declared variables' names, so that the strict pass can point at
    // an unknown `{reference}` where it stands. A failure here is reported by the strict pass.
    let declared = serde_yaml::from_str::<Prepass>(text)
        .ok()
        .map(|p| p.variables.map(|v| v.into_keys().collect::<BTreeSet<_>>()).unwrap_or_default());
    let raw: RawRecipe = {
        let _guard = DeclaredGuard::set(declared);
        serde_yaml::from_str(text).map_err(|e| yaml_error(&label, text, e))?
    };
    let recipe = raw.into_recipe(source, dir, text);
    check_references(&recipe, text)?;
    check_env_remove(&recipe)?;
    Ok(recipe)
}

/// The deepest `[`/`{` nesting accepted.
const MAX_FLOW_DEPTH: usize = 64;

/// Where unquoted `[`/`{` first nest deeper than [`MAX_FLOW_DEPTH`] (line, column; 1-based).
/// A quick scan that knows quotes and comments well enough: it only has to be right for
/// inputs nested this deep, and never wrong by much for real recipes.
fn too_deep(text: &str) -> Option<(usize, usize)> {
    let (mut depth, mut line, mut col) = (0usize, 1usize, 0usize);
    let mut quote: Option<char> = None;
    let mut comment = false;
    let mut prev = '\n';
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        col += 1;
        if c == '\n' {
            line += 1;
            col = 0;
            comment = false;
        } else if comment {
            // skipped to the end of the line
        } else if let Some(q) = quote {
            if c == '\\' && q == '"' {
                col += 1;
                if chars.next() == Some('\n') {
                    line += 1;
                    col = 0;
                }
            } else if c == q {
                if q == '\'' && chars.peek() == Some(&'\'') {
                    chars.next();
                    col += 1;
                } else {
                    quote = None;
                }
            }
        } else {
            let at_start = prev.is_whitespace() || matches!(prev, '[' | '{' | ',' | ':');
            match c {
                '#' if prev.is_whitespace() => comment = true,
                '\'' | '"' if at_start => quote = Some(c),
                '[' | '{' => {
                    depth += 1;
                    if depth > MAX_FLOW_DEPTH {
                        return Some((line, col));
                    }
                }
                ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        prev = c;
    }
    None
}

/// Cuts a message that quotes a huge value.
fn shorten(msg: String) -> String {
    const MAX: usize = 400;
    if msg.len() <= MAX {
        return msg;
    }
    let mut end = MAX;
    while !msg.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes cut)", &msg[..end], msg.len() - end)
}

fn is_blank_yaml(text: &str) -> bool {
    text.lines().all(|l| {
        let t = l.trim();
        t.is_empty() || t.starts_with('#') || t == "---" || t == "..."
    })
}

fn yaml_error(label: &str, text: &str, e: serde_yaml::Error) -> anyhow::Error {
    let mut msg = shorten(e.to_string());
    match e.location() {
        Some(loc) => {
            let suffix = format!(" at line {} column {}", loc.line(), loc.column());
            if let Some(i) = msg.rfind(&suffix) {
                msg.replace_range(i..i + suffix.len(), "");
            }
            msg = friendly_struct_names(&msg);
            if msg.starts_with("EOF while parsing") && is_blank_yaml(text) {
                msg = "the file is empty".to_string();
            }
            anyhow!("{label}:{}:{}: {msg}", loc.line(), loc.column())
        }
        None => anyhow!("{label}: {}", friendly_struct_names(&msg)),
    }
}

/// serde names the Rust type in `expected struct RawRun`; say what the YAML needs instead.
fn friendly_struct_names(msg: &str) -> String {
    let mut out = msg.to_string();
    while let Some(i) = out.find("struct Raw") {
        let end = out[i + 10..].find(|c: char| !c.is_ascii_alphanumeric()).map_or(out.len(), |j| i + 10 + j);
        let what = match &out[i + 10..end] {
            "Recipe" => "a mapping with `version`, `name`, `description` and `run`",
            "Build" | "Run" => "a mapping with `command`",
            "Collect" => "a mapping with `name` and `command`",
            "ContainerFields" => CONTAINER_EXPECTING,
            _ => "a mapping",
        };
        out.replace_range(i..end, what);
    }
    out
}

// The raw shapes, as written in YAML. `deny_unknown_fields` everywhere; strings that may hold
// `{variable}`s are checked as they are read, so errors carry their line and column.

#[derive(Deserialize)]
struct Prepass {
    #[serde(default)]
    variables: Option<BTreeMap<String, IgnoredAny>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRecipe {
    #[allow(dead_code)]
    version: Version,
    name: RecipeName,
    description: String,
    #[serde(default)]
    python: bool,
    #[serde(default)]
    variables: Option<UniqueMap<VarName, RawVariable>>,
    #[serde(default)]
    collect: Option<CollectList>,
    #[serde(default)]
    build: Option<RawBuild>,
    run: RawRun,
    #[serde(default)]
    rungs: Option<RawRungs>,
    #[serde(default)]
    container: Option<RawContainer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVariable {
    #[serde(default)]
    description: String,
    #[serde(default)]
    default: Option<DefaultValue>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBuild {
    command: Command,
    #[serde(default)]
    cwd: Option<Tpl>,
    #[serde(default)]
    env: Option<UniqueMap<EnvName, Tpl>>,
    #[serde(default)]
    env_remove: Option<EnvNameList>,
    #[serde(default)]
    timeout: Option<Timeout>,
    #[serde(default)]
    binaries: Option<Paths>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRun {
    command: Command,
    #[serde(default)]
    cwd: Option<Tpl>,
    #[serde(default)]
    env: Option<UniqueMap<EnvName, Tpl>>,
    #[serde(default)]
    env_remove: Option<EnvNameList>,
    #[serde(default)]
    timeout: Option<Timeout>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCollect {
    name: CollectName,
    command: Command,
    #[serde(default)]
    timeout: Option<Timeout>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRungs {
    baseline: Option<RawRung>,
    rebuild: Option<RawRebuildRung>,
    #[serde(rename = "launch-blocking")]
    launch_blocking: Option<RawRung>,
    coredump: Option<RawRung>,
    attach: Option<RawRung>,
    memcheck: Option<RawMemcheckRung>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRung {
    enabled: Option<bool>,
    timeout: Option<Timeout>,
    #[serde(default)]
    env: Option<UniqueMap<EnvName, Tpl>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRebuildRung {
    enabled: Option<bool>,
    timeout: Option<Timeout>,
    #[serde(default)]
    env: Option<UniqueMap<EnvName, Tpl>>,
    debug: Option<DebugInfo>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMemcheckRung {
    enabled: Option<bool>,
    timeout: Option<Timeout>,
    #[serde(default)]
    env: Option<UniqueMap<EnvName, Tpl>>,
    #[serde(default)]
    args: Option<Vec<Tpl>>,
}

const CONTAINER_EXPECTING: &str = "a mapping with `runtime`, `image`, `mounts` or `gpus`";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawContainerFields {
    #[serde(default)]
    runtime: Option<RuntimeName>,
    #[serde(default)]
    image: Option<Image>,
    #[serde(default)]
    mounts: Option<Mounts>,
    #[serde(default)]
    gpus: Option<bool>,
}

/// `container:`, checked as a whole inside its mapping, so that an error about a key that is
/// missing carries the mapping's position (as `missing field` does).
struct RawContainer(RawContainerFields);

impl<'de> Deserialize<'de> for RawContainer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawContainer;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(CONTAINER_EXPECTING)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<RawContainer, A::Error> {
                let c = RawContainerFields::deserialize(de::value::MapAccessDeserializer::new(map))?;
                match &c.runtime {
                    Some(RuntimeName(rt)) if *rt != Runtime::None && c.image.is_none() => {
                        Err(de::Error::custom(format!(
                            "`runtime: {0}` needs an image: add `image:` (a pinned reference such as \
                             `debug-ima/cuda:13.0.1@sha256:...`, or an Apptainer `.sif` file), or leave \
                             `runtime` out and pass `--container {0} --image IMAGE`",
                            rt.name()
                        )))
                    }
                    _ => Ok(RawContainer(c)),
                }
            }
        }
        d.deserialize_map(V)
    }
}

fn env_map(env: Option<UniqueMap<EnvName, Tpl>>) -> BTreeMap<String, String> {
    env.map(|m| m.0.into_iter().map(|(k, v)| (k.0, v.0)).collect()).unwrap_or_default()
}

impl RawRecipe {
    fn into_recipe(self, source: RecipeSource, dir: PathBuf, text: &str) -> Recipe {
        let variables = self
            .variables
            .map(|m| {
                m.0.into_iter()
                    .map(|(k, v)| {
                        (k.0, Variable { description: v.description, default: v.default.map(|d| d.0) })
                    })
                    .collect()
            })
            .unwrap_or_default();
        let collect = self
            .collect
            .map(|c| {
                c.0.into_iter()
                    .map(|c| CollectTemplate {
                        name: c.name.0,
                        command: c.command.0,
                        timeout: c.timeout.map(|t| t.0),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let build = self.build.map(|b| StepTemplate {
            command: b.command.0,
            cwd: b.cwd.map(|c| c.0),
            env: env_map(b.env),
            env_remove: b.env_remove.map(|l| l.0).unwrap_or_default(),
            timeout: b.timeout.map(|t| t.0),
            binaries: b.binaries.map(|p| p.0).unwrap_or(Words::List(Vec::new())),
        });
        let run = StepTemplate {
            command: self.run.command.0,
            cwd: self.run.cwd.map(|c| c.0),
            env: env_map(self.run.env),
            env_remove: self.run.env_remove.map(|l| l.0).unwrap_or_default(),
            timeout: self.run.timeout.map(|t| t.0),
            binaries: Words::List(Vec::new()),
        };
        let mut rungs = BTreeMap::new();
        if let Some(r) = self.rungs {
            let plain = |r: RawRung| RungOptions {
                enabled: r.enabled,
                timeout: r.timeout.map(|t| t.0),
                env: env_map(r.env),
                ..RungOptions::default()
            };
            let mut put = |id: RungId, o: Option<RungOptions>| {
                if let Some(o) = o {
                    rungs.insert(id, o);
                }
            };
            put(RungId::Baseline, r.baseline.map(plain));
            put(
                RungId::Rebuild,
                r.rebuild.map(|r| RungOptions {
                    enabled: r.enabled,
                    timeout: r.timeout.map(|t| t.0),
                    env: env_map(r.env),
                    debug: r.debug,
                    ..RungOptions::default()
                }),
            );
            put(RungId::LaunchBlocking, r.launch_blocking.map(plain));
            put(RungId::Coredump, r.coredump.map(plain));
            put(RungId::Attach, r.attach.map(plain));
            put(
                RungId::Memcheck,
                r.memcheck.map(|r| RungOptions {
                    enabled: r.enabled,
                    timeout: r.timeout.map(|t| t.0),
                    env: env_map(r.env),
                    args: r.args.unwrap_or_default().into_iter().map(|a| a.0).collect(),
                    ..RungOptions::default()
                }),
            );
        }
        let container = self.container.map(|RawContainer(c)| ContainerTemplate {
            runtime: c.runtime.map(|r| r.0),
            image: c.image.map(|i| i.0),
            mounts: c.mounts.map(|m| m.0).unwrap_or(Words::List(Vec::new())),
            gpus: c.gpus.unwrap_or(true),
        });
        Recipe {
            name: self.name.0,
            description: self.description,
            python: self.python,
            variables,
            collect,
            build,
            run,
            rungs,
            container,
            source,
            dir,
            text: text.to_string(),
        }
    }
}

// The variables declared by the recipe being parsed, for the strict pass's checks. Set only
// around one `serde_yaml::from_str` call on this thread; `None` when the first pass failed.
thread_local! {
    static DECLARED: RefCell<Option<BTreeSet<String>>> = const { RefCell::new(None) };
}

struct DeclaredGuard;

impl DeclaredGuard {
    fn set(names: Option<BTreeSet<String>>) -> DeclaredGuard {
        DECLARED.with(|d| *d.borrow_mut() = names);
        DeclaredGuard
    }
}

impl Drop for DeclaredGuard {
    fn drop(&mut self) {
        DECLARED.with(|d| *d.borrow_mut() = None);
    }
}

/// Checks a template's syntax and, when the declared variables are known, its references.
fn check_template(t: &str, builtins_only: bool) -> std::result::Result<(), String> {
    for name in references(t)? {
        if BUILTIN_VARIABLES.contains(&name) {
            continue;
        }
        if builtins_only {
            return Err(format!(
                "`{{{name}}}`: a default can only use the built-in variables ({}); write `{{{{` for a literal brace",
                builtin_list()
            ));
        }
        let unknown =
            DECLARED.with(|d| d.borrow().as_ref().map(|set| (!set.contains(name)).then(|| set.clone())));
        if let Some(Some(declared)) = unknown {
            return Err(unknown_variable_message(name, &declared));
        }
    }
    Ok(())
}

fn builtin_list() -> String {
    BUILTIN_VARIABLES.iter().map(|b| format!("`{{{b}}}`")).collect::<Vec<_>>().join(", ")
}

fn unknown_variable_message(name: &str, declared: &BTreeSet<String>) -> String {
    let declared = if declared.is_empty() {
        "the recipe declares no variables".to_string()
    } else {
        format!(
            "the recipe declares {}",
            declared.iter().map(|d| format!("`{d}`")).collect::<Vec<_>>().join(", ")
        )
    };
    format!(
        "unknown variable `{{{name}}}`: {declared} (built in: {}); declare it under `variables:`, or write `{{{{` for a literal brace",
        builtin_list()
    )
}

/// A string that may hold `{variable}`s.
struct Tpl(String);

impl<'de> Deserialize<'de> for Tpl {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_str(CheckedStr { expecting: "a string", check: |s| check_template(s, false) }).map(Tpl)
    }
}

/// A variable's default: may use the built-in variables only.
struct DefaultValue(String);

impl<'de> Deserialize<'de> for DefaultValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_str(CheckedStr { expecting: "a string", check: |s| check_template(s, true) })
            .map(DefaultValue)
    }
}

/// `container.runtime`: one of [`Runtime::ALL`] by name.
struct RuntimeName(Runtime);

impl<'de> Deserialize<'de> for RuntimeName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RuntimeName;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "a container runtime: {}", runtime_names())
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<RuntimeName, E> {
                Runtime::parse(v).map(RuntimeName).ok_or_else(|| {
                    E::custom(format!(
                        "unknown container runtime `{}`: use {}",
                        v.escape_debug(),
                        runtime_names()
                    ))
                })
            }
        }
        d.deserialize_str(V)
    }
}

/// "`docker`, `podman`, `apptainer` or `none`".
fn runtime_names() -> String {
    let names: Vec<String> = Runtime::ALL.iter().map(|r| format!("`{}`", r.name())).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.concat(),
    }
}

/// `container.image`: a non-blank string that may hold `{variable}`s.
struct Image(String);

impl<'de> Deserialize<'de> for Image {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_str(CheckedStr {
            expecting: "an image reference, or an Apptainer `.sif` file",
            check: |s| {
                if s.trim().is_empty() {
                    return Err(
                        "the image is empty: give an image reference (`debug-ima/cuda:13.0.1@sha256:...`) \
                         or an Apptainer `.sif` file, or leave `image` out"
                            .to_string(),
                    );
                }
                check_template(s, false)
            },
        })
        .map(Image)
    }
}

/// One entry of `container.mounts` given in a list: a non-empty path.
struct MountPath(String);

impl<'de> Deserialize<'de> for MountPath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_str(CheckedStr {
            expecting: "a path",
            check: |s| {
                if s.is_empty() {
                    return Err(EMPTY_MOUNT.to_string());
                }
                check_template(s, false)
            },
        })
        .map(MountPath)
    }
}

const EMPTY_MOUNT: &str =
    "an empty path: each entry of `mounts` is a host folder mounted at the same path in the container";

/// `container.mounts`: paths, as a list or a string split into words; no empty one.
struct Mounts(Words);

impl<'de> Deserialize<'de> for Mounts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(WordsVisitor { command: false, mounts: true }).map(Mounts)
    }
}

struct RecipeName(String);

impl<'de> Deserialize<'de> for RecipeName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_str(CheckedStr { expecting: "a recipe name", check: check_recipe_name }).map(RecipeName)
    }
}

fn check_recipe_name(s: &str) -> std::result::Result<(), String> {
    let ok = !s.is_empty()
        && s.len() <= 64
        && s.as_bytes()[0].is_ascii_alphanumeric()
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid recipe name `{}`: use 1 to 64 letters, digits, `-`, `_` or `.`, starting with a letter or digit (it names the bundle directory)",
            s.escape_debug()
        ))
    }
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct VarName(String);

impl fmt::Display for VarName {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for VarName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_str(CheckedStr {
            expecting: "a variable name",
            check: |s| {
                if BUILTIN_VARIABLES.contains(&s) {
                    return Err(format!("`{s}` is a built-in variable; choose another name"));
                }
                if is_identifier(s) {
                    Ok(())
                } else {
                    Err(format!(
                        "invalid variable name `{}`: use letters, digits and `_`, not starting with a digit",
                        s.escape_debug()
                    ))
                }
            },
        })
        .map(VarName)
    }
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct EnvName(String);

impl fmt::Display for EnvName {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for EnvName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_str(CheckedStr {
            expecting: "an environment variable name",
            check: |s| {
                if is_identifier(s) {
                    Ok(())
                } else {
                    Err(format!(
                        "invalid environment variable name `{}`: use letters, digits and `_`, not starting with a digit",
                        s.escape_debug()
                    ))
                }
            },
        })
        .map(EnvName)
    }
}

/// `env_remove`: environment variable names, each once.
struct EnvNameList(Vec<String>);

impl<'de> Deserialize<'de> for EnvNameList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = EnvNameList;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of environment variable names")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<EnvNameList, A::Error> {
                let mut out: Vec<String> = Vec::new();
                while let Some(EnvName(name)) = seq.next_element()? {
                    if out.contains(&name) {
                        return Err(de::Error::custom(format!("`{name}` is listed twice")));
                    }
                    out.push(name);
                }
                Ok(EnvNameList(out))
            }
        }
        d.deserialize_seq(V)
    }
}

/// The file a `collect` command's output goes to, under the bundle's `env/`.
struct CollectName(String);

impl<'de> Deserialize<'de> for CollectName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_str(CheckedStr { expecting: "a file name", check: check_collect_name }).map(CollectName)
    }
}

fn check_collect_name(s: &str) -> std::result::Result<(), String> {
    let ok = !s.is_empty()
        && s.len() <= 64
        && s.as_bytes()[0].is_ascii_alphanumeric()
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !ok {
        return Err(format!(
            "invalid collect name `{}`: a file name of 1 to 64 letters, digits, `-`, `_` or `.`, starting with a letter or digit (the output goes to `env/NAME` in the bundle)",
            s.escape_debug()
        ));
    }
    if s == "doctor.txt" {
        return Err("`doctor.txt` is doctor's report in the bundle's `env/`: choose another name".to_string());
    }
    Ok(())
}

/// `collect:` entries, their names unique.
struct CollectList(Vec<RawCollect>);

impl<'de> Deserialize<'de> for CollectList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CollectList;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of mappings with `name` and `command`")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<CollectList, A::Error> {
                let mut out: Vec<RawCollect> = Vec::new();
                while let Some(c) = seq.next_element::<RawCollect>()? {
                    if out.iter().any(|o| o.name.0 == c.name.0) {
                        return Err(de::Error::custom(format!(
                            "two `collect` entries are named `{}`: each writes `env/NAME`, so names must differ",
                            c.name.0
                        )));
                    }
                    out.push(c);
                }
                Ok(CollectList(out))
            }
        }
        d.deserialize_seq(V)
    }
}

fn is_identifier(s: &str) -> bool {
    let mut bytes = s.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A string checked inside the visitor, so that an error carries the scalar's position.
struct CheckedStr {
    expecting: &'static str,
    check: fn(&str) -> std::result::Result<(), String>,
}

impl<'de> Visitor<'de> for CheckedStr {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<String, E> {
        if v.contains('\0') {
            return Err(E::custom("a NUL character cannot be part of a command, a path or the environment"));
        }
        (self.check)(v).map_err(E::custom)?;
        Ok(v.to_string())
    }
}

/// YAML integers may arrive as `i64`: a negative one is refused as `expected` describes.
fn non_negative<E: de::Error>(v: i64, expected: &dyn de::Expected) -> std::result::Result<u64, E> {
    u64::try_from(v).map_err(|_| E::invalid_value(de::Unexpected::Signed(v), expected))
}

struct Version;

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Version;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "the format version, {VERSION}")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Version, E> {
                if v == VERSION {
                    Ok(Version)
                } else {
                    Err(E::custom(format!(
                        "unsupported recipe version {v}: this xtask reads `version: {VERSION}` (see docs/recipes.md)"
                    )))
                }
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Version, E> {
                let v = non_negative(v, &self)?;
                self.visit_u64(v)
            }
        }
        d.deserialize_u64(V)
    }
}

/// Seconds, 1 to [`MAX_TIMEOUT_SECS`].
struct Timeout(u64);

impl<'de> Deserialize<'de> for Timeout {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Timeout;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "a whole number of seconds, 1 to {MAX_TIMEOUT_SECS}")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Timeout, E> {
                if (1..=MAX_TIMEOUT_SECS).contains(&v) {
                    Ok(Timeout(v))
                } else {
                    Err(E::invalid_value(de::Unexpected::Unsigned(v), &self))
                }
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Timeout, E> {
                let v = non_negative(v, &self)?;
                self.visit_u64(v)
            }
        }
        d.deserialize_u64(V)
    }
}

/// A command: a non-empty list of words, or a non-blank string.
struct Command(Words);

impl<'de> Deserialize<'de> for Command {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(WordsVisitor { command: true, mounts: false }).map(Command)
    }
}

/// Paths: a list, or a string split into words; may be empty.
struct Paths(Words);

impl<'de> Deserialize<'de> for Paths {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(WordsVisitor { command: false, mounts: false }).map(Paths)
    }
}

struct WordsVisitor {
    command: bool,
    /// `container.mounts`: no empty word.
    mounts: bool,
}

impl<'de> Visitor<'de> for WordsVisitor {
    type Value = Words;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if self.command {
            f.write_str("a command: a list of words, or a string split into words")
        } else {
            f.write_str("a list of paths, or a string of paths separated by spaces")
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Words, E> {
        let line = CheckedStr { expecting: "", check: |s| check_template(s, false) }.visit_str::<E>(v)?;
        let words = split_words(&line).map_err(|e| E::custom(format!("{e:#}")))?;
        if self.mounts && words.iter().any(String::is_empty) {
            return Err(E::custom(format!("`{line}`: {EMPTY_MOUNT}")));
        }
        if self.command && line.trim().is_empty() {
            return Err(E::custom("the command is empty: give the program and its arguments"));
        }
        Ok(Words::Line(line))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Words, A::Error> {
        let mut items = Vec::new();
        loop {
            let item = if self.mounts {
                seq.next_element::<MountPath>()?.map(|m| m.0)
            } else {
                seq.next_element::<Tpl>()?.map(|t| t.0)
            };
            let Some(item) = item else { break };
            items.push(item);
        }
        if self.command && items.is_empty() {
            return Err(de::Error::custom(
                "the command is an empty list: give the program and its arguments, e.g. [\"./app\", \"--size\", \"1024\"]",
            ));
        }
        Ok(Words::List(items))
    }
}

/// A mapping whose keys must be unique (a plain map would keep the last silently).
struct UniqueMap<K, V>(BTreeMap<K, V>);

impl<'de, K, V> Deserialize<'de> for UniqueMap<K, V>
where
    K: Deserialize<'de> + Ord + fmt::Display,
    V: Deserialize<'de>,
{
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct M<K, V>(PhantomData<(K, V)>);
        impl<'de, K, V> Visitor<'de> for M<K, V>
        where
            K: Deserialize<'de> + Ord + fmt::Display,
            V: Deserialize<'de>,
        {
            type Value = UniqueMap<K, V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a mapping")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Self::Value, A::Error> {
                let mut out = BTreeMap::new();
                while let Some(key) = map.next_key::<K>()? {
                    if out.contains_key(&key) {
                        return Err(de::Error::custom(format!("duplicate key `{key}`")));
                    }
                    let value = map.next_value::<V>()?;
                    out.insert(key, value);
                }
                Ok(UniqueMap(out))
            }
        }
        d.deserialize_map(M(PhantomData))
    }
}

// ---------------------------------------------------------------------------------------
// Variables and templates
// ---------------------------------------------------------------------------------------

enum Piece<'a> {
    Text(&'a str),
    Var(&'a str),
}

/// Cuts a template into text and `{name}` references. `{{` and `}}` are literal braces; a
/// lone `}` is kept as is; a `{` that starts no `{name}` is an error.
fn pieces(t: &str) -> std::result::Result<Vec<Piece<'_>>, String> {
    let bytes = t.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' if bytes.get(i + 1) == Some(&b'{') => {
                out.push(Piece::Text(&t[start..i + 1]));
                i += 2;
                start = i;
            }
            b'}' if bytes.get(i + 1) == Some(&b'}') => {
                out.push(Piece::Text(&t[start..i + 1]));
                i += 2;
                start = i;
            }
            b'{' => {
                let close = t[i + 1..].find('}').map(|j| i + 1 + j);
                let name = close.map(|c| &t[i + 1..c]).filter(|n| is_identifier(n));
                let (Some(close), Some(name)) = (close, name) else {
                    let shown: String = t[i..].chars().take(24).collect();
                    return Err(format!(
                        "`{shown}` in `{}`: `{{` starts no variable reference (`{{name}}`); write `{{{{` for a literal brace",
                        t.escape_debug()
                    ));
                };
                out.push(Piece::Text(&t[start..i]));
                out.push(Piece::Var(name));
                i = close + 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    out.push(Piece::Text(&t[start..]));
    out.retain(|p| !matches!(p, Piece::Text("")));
    Ok(out)
}

/// The variables a template refers to, in order, repeats included.
fn references(t: &str) -> std::result::Result<Vec<&str>, String> {
    Ok(pieces(t)?
        .into_iter()
        .filter_map(|p| match p {
            Piece::Var(v) => Some(v),
            Piece::Text(_) => None,
        })
        .collect())
}

/// Expands `{name}`s from `vars`; an unknown name is an error that names it.
pub fn expand(t: &str, vars: &BTreeMap<String, String>) -> Result<String> {
    let mut out = String::with_capacity(t.len());
    for p in pieces(t).map_err(|e| anyhow!(e))? {
        match p {
            Piece::Text(s) => out.push_str(s),
            Piece::Var(name) => match vars.get(name) {
                Some(v) => out.push_str(v),
                None => bail!("unknown variable `{{{name}}}`"),
            },
        }
    }
    Ok(out)
}

/// Every template string of a recipe with its field path (`run.command[0]`).
fn template_fields(r: &Recipe) -> Vec<(String, &str)> {
    fn push_words<'a>(out: &mut Vec<(String, &'a str)>, field: &str, w: &'a Words) {
        match w {
            Words::List(items) => {
                out.extend(items.iter().enumerate().map(|(i, s)| (format!("{field}[{i}]"), s.as_str())))
            }
            Words::Line(s) => out.push((field.to_string(), s.as_str())),
        }
    }
    fn push_step<'a>(out: &mut Vec<(String, &'a str)>, field: &str, s: &'a StepTemplate) {
        push_words(out, &format!("{field}.command"), &s.command);
        if let Some(c) = &s.cwd {
            out.push((format!("{field}.cwd"), c.as_str()));
        }
        out.extend(s.env.iter().map(|(k, v)| (format!("{field}.env.{k}"), v.as_str())));
        push_words(out, &format!("{field}.binaries"), &s.binaries);
    }
    let mut out = Vec::new();
    for (i, c) in r.collect.iter().enumerate() {
        push_words(&mut out, &format!("collect[{i}].command"), &c.command);
    }
    if let Some(b) = &r.build {
        push_step(&mut out, "build", b);
    }
    push_step(&mut out, "run", &r.run);
    for (name, o) in &r.rungs {
        out.extend(o.env.iter().map(|(k, v)| (format!("rungs.{name}.env.{k}"), v.as_str())));
        out.extend(o.args.iter().enumerate().map(|(i, a)| (format!("rungs.{name}.args[{i}]"), a.as_str())));
    }
    if let Some(c) = &r.container {
        if let Some(image) = &c.image {
            out.push(("container.image".to_string(), image.as_str()));
        }
        push_words(&mut out, "container.mounts", &c.mounts);
    }
    out
}

/// The authoritative reference check, after parsing (the in-parser one gives positions).
fn check_references(r: &Recipe, text: &str) -> Result<()> {
    let declared: BTreeSet<String> = r.variables.keys().cloned().collect();
    for (field, t) in template_fields(r) {
        let names = references(t).map_err(|e| anyhow!("{}: {field}: {e}", r.label()))?;
        for name in names {
            if BUILTIN_VARIABLES.contains(&name) || declared.contains(name) {
                continue;
            }
            let at = match locate(text, &format!("{{{name}}}")) {
                Some((line, col)) => format!("{}:{line}:{col}", r.label()),
                None => r.label(),
            };
            bail!("{at}: {field}: {}", unknown_variable_message(name, &declared));
        }
    }
    Ok(())
}

/// Whether any string of the recipe (a variable's default included) refers to `{name}`.
pub fn uses_variable(r: &Recipe, name: &str) -> bool {
    let defaults = r.variables.values().filter_map(|v| v.default.as_deref());
    template_fields(r)
        .into_iter()
        .map(|(_, t)| t)
        .chain(defaults)
        .any(|t| references(t).is_ok_and(|refs| refs.contains(&name)))
}

/// A variable both set (`env`) and removed (`env_remove`) by one step is a contradiction.
fn check_env_remove(r: &Recipe) -> Result<()> {
    let steps = r.build.iter().map(|b| ("build", b)).chain([("run", &r.run)]);
    for (field, step) in steps {
        if let Some(both) = step.env_remove.iter().find(|k| step.env.contains_key(*k)) {
            bail!(
                "{}: {field}: `{both}` is both in `{field}.env` and in `{field}.env_remove`: a variable is either \
                 set or removed; drop it from one of them",
                r.label()
            );
        }
    }
    Ok(())
}

/// Line and column (1-based, in characters) of the first `needle` outside a comment that
/// is not preceded by another `{` (an escaped brace).
fn locate(text: &str, needle: &str) -> Option<(usize, usize)> {
    for (n, line) in text.lines().enumerate() {
        let code = match line.find(" #") {
            Some(i) => &line[..i],
            None if line.trim_start().starts_with('#') => "",
            None => line,
        };
        let mut from = 0;
        while let Some(i) = code[from..].find(needle).map(|i| i + from) {
            if !code[..i].ends_with('{') {
                return Some((n + 1, code[..i].chars().count() + 1));
            }
            from = i + 1;
        }
    }
    None
}

/// Declared variables that have no default and no value in `sets`, in name order.
pub fn missing_variables(r: &Recipe, sets: &BTreeMap<String, String>) -> Vec<(String, Variable)> {
    r.variables
        .iter()
        .filter(|(k, v)| v.default.is_none() && !sets.contains_key(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Fills every variable (from `sets`, else the default) and expands the recipe, in the
/// current directory, with the supplied built-ins (`gpu_arch`, `max_jobs`: see
/// [`SUPPLIED_BUILTINS`]; those not given keep their placeholder text). Errors name what
/// is missing and the `--set NAME=VALUE` that gives it.
pub fn resolve(
    r: &Recipe,
    sets: &BTreeMap<String, String>,
    supplied: &BTreeMap<String, String>,
) -> Result<Resolved> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    resolve_in_with(r, sets, &cwd, supplied)
}

/// [`resolve`] with `cwd` as the current directory and no supplied built-ins (their
/// placeholder text stands in): pure.
pub fn resolve_in(r: &Recipe, sets: &BTreeMap<String, String>, cwd: &Path) -> Result<Resolved> {
    resolve_in_with(r, sets, cwd, &BTreeMap::new())
}

/// [`resolve`] with `cwd` as the current directory: pure. `supplied` gives the built-ins
/// only the caller knows (`gpu_arch`, `max_jobs`); any other name in it is an error.
pub fn resolve_in_with(
    r: &Recipe,
    sets: &BTreeMap<String, String>,
    cwd: &Path,
    supplied: &BTreeMap<String, String>,
) -> Result<Resolved> {
    if let Some(k) = supplied.keys().find(|k| !SUPPLIED_BUILTINS.iter().any(|(n, _)| n == k)) {
        bail!(
            "`{k}` is not a built-in variable a caller can supply (those are {}): a bug in the caller of \
             `recipe::resolve`",
            SUPPLIED_BUILTINS.iter().map(|(n, _)| format!("`{n}`")).collect::<Vec<_>>().join(", ")
        );
    }
    let unknown: Vec<&str> =
        sets.keys().filter(|k| !r.variables.contains_key(*k)).map(String::as_str).collect();
    if !unknown.is_empty() {
        let declared = if r.variables.is_empty() {
            "it declares no variables".to_string()
        } else {
            format!(
                "it declares {}",
                r.variables.keys().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
            )
        };
        bail!(
            "recipe `{}` has no variable {}: {declared} (`cargo xtask recipe show {}` lists them)",
            r.name,
            unknown.iter().map(|k| format!("`{k}` (from `--set {k}=...`)")).collect::<Vec<_>>().join(", "),
            show_arg(r)
        );
    }
    let missing = missing_variables(r, sets);
    if !missing.is_empty() {
        let what = missing
            .iter()
            .map(|(k, v)| {
                if v.description.is_empty() {
                    format!("`{k}`")
                } else {
                    format!("`{k}` ({})", v.description)
                }
            })
            .collect::<Vec<_>>()
            .join(" and ");
        let flags = missing.iter().map(|(k, _)| format!("--set {k}=VALUE")).collect::<Vec<_>>().join(" ");
        let s = if missing.len() == 1 { "" } else { "s" };
        bail!(
            "recipe `{}` needs a value for {what}: pass `{flags}` (no default for {} variable{s})",
            r.name,
            missing.len()
        );
    }
    let vars = variable_values(r, sets, cwd, supplied)?;
    resolve_with(r, vars, cwd)
}

fn show_arg(r: &Recipe) -> String {
    match &r.source {
        RecipeSource::Builtin(n) => n.clone(),
        RecipeSource::File(p) => p.display().to_string(),
    }
}

/// The built-in variables' values: `recipe_dir`, `cwd`, then each of
/// [`SUPPLIED_BUILTINS`] from `supplied`, else its placeholder text.
fn builtin_values(r: &Recipe, cwd: &Path, supplied: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::from([
        ("recipe_dir".to_string(), r.dir.display().to_string()),
        ("cwd".to_string(), cwd.display().to_string()),
    ]);
    for (name, placeholder) in SUPPLIED_BUILTINS {
        let value = supplied.get(name).cloned().unwrap_or_else(|| placeholder.to_string());
        out.insert(name.to_string(), value);
    }
    out
}

/// The built-ins, then each declared variable: its `--set` value (taken literally) or its
/// default (with the built-ins expanded).
fn variable_values(
    r: &Recipe,
    sets: &BTreeMap<String, String>,
    cwd: &Path,
    supplied: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>> {
    let builtins = builtin_values(r, cwd, supplied);
    let mut vars = builtins.clone();
    for (name, v) in &r.variables {
        let value = match (sets.get(name), &v.default) {
            (Some(set), _) => set.clone(),
            (None, Some(d)) => {
                expand(d, &builtins).with_context(|| format!("{}: variables.{name}.default", r.label()))?
            }
            (None, None) => continue,
        };
        if value.contains('\0') {
            bail!("the value of `{name}` contains a NUL character");
        }
        vars.insert(name.clone(), value);
    }
    Ok(vars)
}

fn resolve_with(r: &Recipe, vars: BTreeMap<String, String>, cwd: &Path) -> Result<Resolved> {
    let build = match &r.build {
        Some(b) => Some(resolve_step(r, "build", b, &vars, cwd)?),
        None => None,
    };
    let run = resolve_step(r, "run", &r.run, &vars, cwd)?;
    let run_dir = run.cwd.clone().unwrap_or_else(|| cwd.to_path_buf());
    let mut collect = Vec::new();
    for (i, c) in r.collect.iter().enumerate() {
        let field = format!("collect[{i}].command");
        let mut argv = expand_words(r, &field, &c.command, &vars)?;
        if argv.first().is_none_or(|p| p.is_empty()) {
            bail!(
                "recipe `{}`: `{field}` (`{}`) is empty once its variables are filled: give the program to run",
                r.name,
                c.name
            );
        }
        if argv[0].contains('/') && Path::new(&argv[0]).is_relative() {
            argv[0] = absolute_in(&run_dir, &argv[0]).display().to_string();
        }
        collect.push(Collect {
            name: c.name.clone(),
            argv,
            timeout: Duration::from_secs(c.timeout.unwrap_or(DEFAULT_COLLECT_TIMEOUT)),
        });
    }
    let mut rungs = BTreeMap::new();
    for (name, o) in &r.rungs {
        let field = format!("rungs.{name}");
        let env = resolve_env(r, &field, &o.env, &vars)?;
        let args = o
            .args
            .iter()
            .enumerate()
            .map(|(i, a)| expand_field(r, &format!("{field}.args[{i}]"), a, &vars))
            .collect::<Result<Vec<_>>>()?;
        rungs.insert(*name, RungOptions { env, args, ..o.clone() });
    }
    let container = resolve_container(r, &vars, cwd)?;
    Ok(Resolved {
        name: r.name.clone(),
        source: r.label(),
        python: r.python,
        vars,
        collect,
        build,
        run,
        rungs,
        container,
    })
}

/// `container:` expanded, `mounts` made absolute from `cwd`; the default without one.
fn resolve_container(r: &Recipe, vars: &BTreeMap<String, String>, cwd: &Path) -> Result<ContainerConfig> {
    let Some(c) = &r.container else {
        return Ok(ContainerConfig::default());
    };
    let image = match &c.image {
        Some(t) => Some(expand_field(r, "container.image", t, vars)?),
        None => None,
    };
    let image = match (image, c.runtime) {
        (Some(i), Some(rt)) if i.trim().is_empty() && rt != Runtime::None => bail!(
            "recipe `{}`: `container.image` is empty once its variables are filled, but `runtime: {}` needs \
             an image: give the variable a value (`--set NAME=IMAGE`) or pass `--image IMAGE`",
            r.name,
            rt.name()
        ),
        (Some(i), _) if i.trim().is_empty() => None,
        (image, _) => image,
    };
    let words = expand_words(r, "container.mounts", &c.mounts, vars)?;
    let mut mounts = Vec::new();
    for (i, m) in words.iter().enumerate() {
        let field = match &c.mounts {
            Words::List(_) => format!("container.mounts[{i}]"),
            Words::Line(_) => "container.mounts".to_string(),
        };
        if m.is_empty() {
            bail!(
                "recipe `{}`: `{field}` is an empty path once its variables are filled: give the variable a \
                 folder (`--set NAME=PATH`), or take the entry out of `mounts`",
                r.name
            );
        }
        let path = absolute_in(cwd, m);
        if !path.is_absolute() {
            bail!(
                "recipe `{}`: `{field}` is `{}`, not an absolute path: a mount is a host folder mounted at the \
                 same path; write it from `/` or from `{{cwd}}`",
                r.name,
                path.display()
            );
        }
        if !mounts.contains(&path) {
            mounts.push(path);
        }
    }
    Ok(ContainerConfig { runtime: c.runtime, image, mounts, gpus: c.gpus })
}

/// Folders where a program's own folder is not mounted: mounting the host's over the
/// image's would replace the image's system.
const SYSTEM_DIRS: [&str; 10] =
    ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/usr", "/etc", "/proc", "/sys", "/dev"];

/// The host folders every container of the run mounts at the same path, so that the
/// recipe's absolute paths mean the same inside: `container.mounts`, the run step's `cwd`
/// (the current directory when it has none), the build step's `cwd`, the recipe's directory
/// (`{recipe_dir}`), the parent folders of `build.binaries`, and the folder of the run's
/// program when it is an absolute path outside all of those (and outside the system's own
/// folders, `/usr`, `/bin`, ...). Absolute paths only, sorted, each once. The bundle root is
/// the caller's to add.
pub fn container_mounts(r: &Resolved) -> Vec<PathBuf> {
    let mut set: BTreeSet<PathBuf> = r.container.mounts.iter().cloned().collect();
    set.extend(r.run.cwd.clone().or_else(|| r.vars.get("cwd").map(PathBuf::from)));
    if let Some(b) = &r.build {
        set.extend(b.cwd.clone());
        set.extend(b.binary_dirs());
    }
    set.extend(r.vars.get("recipe_dir").map(PathBuf::from));
    let program = Path::new(r.run.program());
    if let Some(dir) = program.parent().filter(|_| program.is_absolute()) {
        let system = dir.parent().is_none() || SYSTEM_DIRS.iter().any(|s| dir.starts_with(s));
        if !system && !set.iter().any(|m| dir.starts_with(m)) {
            set.insert(dir.to_path_buf());
        }
    }
    set.into_iter().filter(|p| p.is_absolute()).collect()
}

fn expand_field(r: &Recipe, field: &str, t: &str, vars: &BTreeMap<String, String>) -> Result<String> {
    expand(t, vars).with_context(|| format!("recipe `{}` ({}): `{field}`", r.name, r.label()))
}

fn expand_words(r: &Recipe, field: &str, w: &Words, vars: &BTreeMap<String, String>) -> Result<Vec<String>> {
    match w {
        Words::List(items) => items
            .iter()
            .enumerate()
            .map(|(i, t)| expand_field(r, &format!("{field}[{i}]"), t, vars))
            .collect(),
        Words::Line(t) => {
            let line = expand_field(r, field, t, vars)?;
            split_words(&line).with_context(|| {
                format!("recipe `{}`: `{field}` is `{line}` once its variables are filled, and cannot be split into words", r.name)
            })
        }
    }
}

fn resolve_env(
    r: &Recipe,
    field: &str,
    env: &BTreeMap<String, String>,
    vars: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>> {
    env.iter().map(|(k, v)| Ok((k.clone(), expand_field(r, &format!("{field}.env.{k}"), v, vars)?))).collect()
}

fn resolve_step(
    r: &Recipe,
    field: &str,
    t: &StepTemplate,
    vars: &BTreeMap<String, String>,
    cwd: &Path,
) -> Result<Step> {
    let mut argv = expand_words(r, &format!("{field}.command"), &t.command, vars)?;
    if argv.first().is_none_or(|p| p.is_empty()) {
        bail!(
            "recipe `{}`: `{field}.command` is empty once its variables are filled: give the program to run{}",
            r.name,
            if r.variables.is_empty() { String::new() } else { " (`--set NAME=VALUE`)".to_string() }
        );
    }
    let step_cwd = match &t.cwd {
        Some(c) => Some(absolute_in(cwd, &expand_field(r, &format!("{field}.cwd"), c, vars)?)),
        None => None,
    };
    let base = step_cwd.clone().unwrap_or_else(|| cwd.to_path_buf());
    if argv[0].contains('/') && Path::new(&argv[0]).is_relative() {
        argv[0] = absolute_in(&base, &argv[0]).display().to_string();
    }
    let env = resolve_env(r, field, &t.env, vars)?;
    let binaries = expand_words(r, &format!("{field}.binaries"), &t.binaries, vars)?
        .into_iter()
        .filter(|b| !b.is_empty())
        .map(|b| absolute_in(&base, &b))
        .collect();
    Ok(Step {
        argv,
        cwd: step_cwd,
        env,
        env_remove: t.env_remove.clone(),
        timeout: t.timeout.map(Duration::from_secs),
        binaries,
    })
}

/// `p` joined to `base` when relative, with `.` and `..` taken out lexically.
fn absolute_in(base: &Path, p: &str) -> PathBuf {
    normalize(&base.join(p))
}

fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

// ---------------------------------------------------------------------------------------
// Words and `--set`
// ---------------------------------------------------------------------------------------

/// Parses `--set NAME=VALUE` (the value may be empty and may contain `=`).
pub fn parse_set(s: &str) -> Result<(String, String)> {
    let Some((name, value)) = s.split_once('=') else {
        bail!("`--set {s}`: expected NAME=VALUE, e.g. `--set arch=sm_90`");
    };
    if !is_identifier(name) {
        bail!("`--set {s}`: `{name}` is not a variable name (letters, digits and `_`); expected NAME=VALUE");
    }
    if value.contains('\0') {
        bail!("`--set {name}=...`: the value contains a NUL character");
    }
    Ok((name.to_string(), value.to_string()))
}

/// Splits a command line into words as a POSIX shell would, without running one: blanks
/// separate words; `'...'` is literal; in `"..."` a backslash escapes `"`, `\`, `$` and a
/// backquote; elsewhere a backslash escapes any character. What only a shell could do
/// (`|`, `&`, `;`, `<`, `>`, `(`, `)`, `$`, backquotes, `~` or `#` starting a word) is
/// an error asking to quote it; unbalanced quotes are errors. Globs are not expanded.
pub fn split_words(s: &str) -> Result<Vec<String>> {
    let shell = |what: &str| {
        anyhow!(
            "`{s}`: {what} is shell syntax, but commands are not run through a shell: quote it to pass it as an \
             argument, or run a shell explicitly (`sh -c '...'`)"
        )
    };
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' | '\r' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => bail!("`{s}`: a single quote is not closed"),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(e @ ('"' | '\\' | '$' | '`')) => word.push(e),
                            Some('\n') => {}
                            Some(e) => {
                                word.push('\\');
                                word.push(e);
                            }
                            None => bail!("`{s}`: a double quote is not closed"),
                        },
                        Some('$') => return Err(shell("`$` (expansion)")),
                        Some('`') => return Err(shell("a backquote")),
                        Some(c) => word.push(c),
                        None => bail!("`{s}`: a double quote is not closed"),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(e) => {
                    in_word = true;
                    word.push(e);
                }
                None => bail!("`{s}`: a backslash ends the line; escape it as `\\\\` or quote it"),
            },
            '|' | '&' | ';' | '<' | '>' | '(' | ')' => return Err(shell(&format!("`{c}`"))),
            '$' => return Err(shell("`$` (expansion)")),
            '`' => return Err(shell("a backquote")),
            '~' | '#' if !in_word => return Err(shell(&format!("`{c}` at the start of a word"))),
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// Joins words into one line that [`split_words`] splits back into the same words.
pub fn join_words<S: AsRef<str>>(words: &[S]) -> String {
    words.iter().map(|w| quote_word(w.as_ref())).collect::<Vec<_>>().join(" ")
}

fn quote_word(w: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c);
    if !w.is_empty() && w.chars().all(safe) {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

// ---------------------------------------------------------------------------------------
// recipe list | show | check
// ---------------------------------------------------------------------------------------

/// `cargo xtask recipe list`: the built-in recipes and their descriptions.
pub fn render_list() -> String {
    let width = builtin_names().iter().map(|n| n.len()).max().unwrap_or(0);
    let mut out = String::from("built-in recipes:\n");
    for name in builtin_names() {
        let text = builtin_text(name).unwrap_or_default();
        let description = match parse(text, RecipeSource::Builtin(name.to_string()), PathBuf::from("recipes"))
        {
            Ok(r) => r.description,
            Err(e) => format!("(does not parse: {e:#})"),
        };
        let _ = writeln!(out, "  {name:<width$}  {description}");
    }
    out.push_str(
        "\nuse one with `cargo xtask debug-ima --recipe NAME`, or pass a path to a .yaml file; \
         `cargo xtask recipe show NAME` prints a recipe (the format: docs/recipes.md)\n",
    );
    out
}

/// `cargo xtask recipe show NAME|PATH`: the YAML source, then the variables' values and the
/// commands with the defaults filled in, as YAML comments.
pub fn render_show(r: &Recipe) -> String {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    render_show_in(r, &cwd)
}

/// [`render_show`] with `cwd` as the current directory: pure.
pub fn render_show_in(r: &Recipe, cwd: &Path) -> String {
    let mut out = format!("# recipe `{}` ({})\n", r.name, r.source);
    out.push_str(&r.text);
    if !r.text.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("\n# ---- with the defaults ----\n# variables:\n");
    let builtins = builtin_values(r, cwd, &BTreeMap::new());
    let width = builtins.keys().chain(r.variables.keys()).map(String::len).max().unwrap_or(0);
    for (name, value) in &builtins {
        let _ = writeln!(out, "#   {name:<width$} = {}  (built in)", quote_word(value));
    }
    for (name, v) in &r.variables {
        let value = match &v.default {
            Some(d) => match expand(d, &builtins) {
                Ok(value) => quote_word(&value),
                Err(e) => format!("(error: {e:#})"),
            },
            None => format!("(required: `--set {name}=VALUE`)"),
        };
        let description =
            if v.description.is_empty() { String::new() } else { format!("  {}", v.description) };
        let _ = writeln!(out, "#   {name:<width$} = {value}{description}");
    }
    let required = r.required_variables();
    if !required.is_empty() {
        let flags = required.iter().map(|k| format!("--set {k}=VALUE")).collect::<Vec<_>>().join(" ");
        let _ = writeln!(out, "# commands: give `{flags}` first");
        return out;
    }
    match resolve_in(r, &BTreeMap::new(), cwd) {
        Ok(res) => {
            for c in &res.collect {
                let _ = writeln!(out, "# collect into env/{}: {}", c.name, join_words(&c.argv));
            }
            let steps = res.build.iter().map(|b| ("build", b)).chain([("run", &res.run)]);
            for (field, step) in steps {
                let _ = writeln!(out, "# {field}: {}", step.command_line());
                if let Some(c) = &step.cwd {
                    let _ = writeln!(out, "#   cwd: {}", quote_word(&c.display().to_string()));
                }
                if !step.env_remove.is_empty() {
                    let _ = writeln!(out, "#   env_remove: {}", step.env_remove.join(" "));
                }
                if !step.binaries.is_empty() {
                    let bins: Vec<String> = step.binaries.iter().map(|b| b.display().to_string()).collect();
                    let _ = writeln!(out, "#   binaries: {}", join_words(&bins));
                }
            }
            if r.container.is_some() {
                let c = &res.container;
                let runtime = match c.runtime {
                    Some(rt) => rt.name().to_string(),
                    None => "(chosen with `--container`)".to_string(),
                };
                let _ = writeln!(out, "# container: {runtime}");
                if let Some(image) = &c.image {
                    let _ = writeln!(out, "#   image: {}", quote_word(image));
                }
                let mounts: Vec<String> =
                    container_mounts(&res).iter().map(|m| m.display().to_string()).collect();
                let _ = writeln!(
                    out,
                    "#   mounted at the same path: {} (and the bundle root)",
                    join_words(&mounts)
                );
                if !c.gpus {
                    out.push_str("#   gpus: false (the GPUs are not passed in)\n");
                }
            }
        }
        Err(e) => {
            let _ = writeln!(out, "# commands: cannot be resolved: {e:#}");
        }
    }
    out
}

/// `cargo xtask recipe check PATH|NAME`: parses the recipe, resolves it with its defaults
/// (placeholder values for required variables) and returns a summary with notes.
pub fn check(path: impl AsRef<Path>) -> Result<String> {
    let path = path.as_ref();
    let r = match path.to_str().and_then(|s| builtin_text(s).map(|_| s)) {
        Some(name) => load(name)?,
        None => load_file(path)?,
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    check_recipe(&r, &cwd)
}

/// The summary of [`check`] for a parsed recipe: pure.
pub fn check_recipe(r: &Recipe, cwd: &Path) -> Result<String> {
    let placeholders: BTreeMap<String, String> =
        r.required_variables().into_iter().map(|k| (k.to_string(), format!("VALUE_OF_{k}"))).collect();
    resolve_in(r, &placeholders, cwd)
        .with_context(|| format!("{}: the recipe does not resolve with its defaults", r.label()))?;

    let mut out =
        format!("{}: ok: recipe `{}`{}\n", r.label(), r.name, if r.python { " (python)" } else { "" });
    let variables = r
        .variables
        .iter()
        .map(|(k, v)| match &v.default {
            Some(d) => format!("{k} (default {})", quote_word(d)),
            None => format!("{k} (required)"),
        })
        .collect::<Vec<_>>();
    let _ = writeln!(
        out,
        "  variables: {}",
        if variables.is_empty() { "none".to_string() } else { variables.join(", ") }
    );
    // As the YAML would write it: a flow list, or a quoted string.
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let show = |w: &Words| match w {
        Words::List(items) => format!("[{}]", items.iter().map(|i| quote(i)).collect::<Vec<_>>().join(", ")),
        Words::Line(line) => quote(line),
    };
    for c in &r.collect {
        let _ = writeln!(out, "  collect: env/{}: {}", c.name, show(&c.command));
    }
    match &r.build {
        Some(b) => {
            let _ = writeln!(out, "  build: {}", show(&b.command));
        }
        None => out.push_str("  build: none\n"),
    }
    let _ = writeln!(out, "  run: {}", show(&r.run.command));
    if let Some(c) = &r.container {
        let mut parts = vec![match c.runtime {
            Some(rt) => format!("runtime {}", rt.name()),
            None => "runtime from `--container`".to_string(),
        }];
        if let Some(image) = &c.image {
            parts.push(format!("image {}", quote(image)));
        }
        if !c.mounts.is_empty() {
            parts.push(format!("mounts {}", show(&c.mounts)));
        }
        if !c.gpus {
            parts.push("gpus false".to_string());
        }
        let _ = writeln!(out, "  container: {}", parts.join(", "));
    }
    let rungs: Vec<&str> = r.rungs.keys().map(|id| id.name()).collect();
    let _ = writeln!(
        out,
        "  rung options: {}",
        if rungs.is_empty() { "none".to_string() } else { rungs.join(", ") }
    );

    let mut notes = Vec::new();
    let used: BTreeSet<&str> =
        template_fields(r).into_iter().flat_map(|(_, t)| references(t).unwrap_or_default()).collect();
    for name in r.variables.keys() {
        if !used.contains(name.as_str()) {
            notes.push(format!("variable `{name}` is declared but never used"));
        }
    }
    match &r.build {
        Some(b) if b.binaries.is_empty() => notes.push(
            "`build.binaries` is empty: the rebuild rung cannot check the binaries for line info".to_string(),
        ),
        Some(_) => {}
        None => notes.push(
            "no `build`: the rebuild rung is skipped; tools name file:line only if the binaries already carry line info"
                .to_string(),
        ),
    }
    if r.build.is_none() && r.rungs.contains_key(&RungId::Rebuild) {
        notes.push("`rungs.rebuild` has no effect without `build`".to_string());
    }
    for note in notes {
        let _ = writeln!(out, "  note: {note}");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        split_words(s).unwrap()
    }

    #[test]
    fn split_words_like_a_shell() {
        assert_eq!(words("make -B"), ["make", "-B"]);
        assert_eq!(words("  a\t b \n c  "), ["a", "b", "c"]);
        assert_eq!(words("a 'b c' \"d e\""), ["a", "b c", "d e"]);
        assert_eq!(words("x'y'\"z\"w"), ["xyzw"]);
        assert_eq!(words("'' \"\""), ["", ""]);
        assert_eq!(words(r#"a\ b c\\d"#), ["a b", r"c\d"]);
        assert_eq!(words(r#""a\"b" "c\d" 'e\f'"#), [r#"a"b"#, r"c\d", r"e\f"]);
        assert_eq!(words("a \\\nb"), ["a", "b"]);
        assert_eq!(words("python -c 'print(1); import sys'"), ["python", "-c", "print(1); import sys"]);
        assert_eq!(words("a#b x~y"), ["a#b", "x~y"]);
        assert_eq!(words("'#' '~'"), ["#", "~"]);
        assert_eq!(words("{x}/bin"), ["{x}/bin"]);
        assert!(words("").is_empty());
        assert!(words("   ").is_empty());
    }

    /// The schema's `rungs:` keys are the rung ids' names: a recipe may give options to
    /// every rung, and to nothing else.
    #[test]
    fn every_rung_id_is_a_schema_key() {
        for id in RungId::ALL {
            let text = format!(
                "version: 1\nname: x\ndescription: x\nrun:\n  command: [\"t\"]\nrungs:\n  {}: {{ timeout: 5 }}\n",
                id.name()
            );
            let r = parse(&text, RecipeSource::Builtin("x".into()), PathBuf::from(".")).unwrap();
            assert_eq!(r.rung(id).and_then(|o| o.timeout), Some(5), "{id}");
        }
    }

    #[test]
    fn split_words_errors() {
        for (input, want) in [
            ("a 'b", "single quote is not closed"),
            ("a \"b", "double quote is not closed"),
            ("a\\", "backslash ends the line"),
            ("make && ./app", "`&` is shell syntax"),
            ("./app | tee log", "`|` is shell syntax"),
            ("./app > log", "`>` is shell syntax"),
            ("./app 2>&1", "`>` is shell syntax"),
            ("a; b", "`;` is shell syntax"),
            ("echo $HOME", "`$` (expansion)"),
            ("echo \"$HOME\"", "`$` (expansion)"),
            ("echo `date`", "backquote"),
            ("ls ~/x", "`~` at the start of a word"),
            ("make # comment", "`#` at the start of a word"),
            ("cmake -j$(nproc)", "`$` (expansion)"),
        ] {
            let e = format!("{:#}", split_words(input).unwrap_err());
            assert!(e.contains(want), "{input:?}: {e}");
        }
    }

    #[test]
    fn join_words_round_trips() {
        let cases: [&[&str]; 4] =
            [&["a", "b c", ""], &["it's", "\"q\"", "$x"], &["~", "#", "a\\b"], &["plain/path=1"]];
        for ws in cases {
            let line = join_words(ws);
            assert_eq!(split_words(&line).unwrap(), ws, "{line}");
        }
        assert_eq!(join_words(&["nvcc", "-o", "a b"]), "nvcc -o 'a b'");
    }

    #[test]
    fn templates_expand_and_escape() {
        let vars =
            BTreeMap::from([("a".to_string(), "1".to_string()), ("b_2".to_string(), "x y".to_string())]);
        assert_eq!(expand("{a}-{b_2}", &vars).unwrap(), "1-x y");
        assert_eq!(expand("{{a}}", &vars).unwrap(), "{a}");
        assert_eq!(expand("{{{a}}}", &vars).unwrap(), "{1}");
        assert_eq!(expand("x}y", &vars).unwrap(), "x}y");
        assert_eq!(expand("", &vars).unwrap(), "");
        assert!(format!("{:#}", expand("{c}", &vars).unwrap_err()).contains("unknown variable `{c}`"));
        for bad in ["{", "{a", "{}", "{ a }", "{a-b}", "x{1}"] {
            assert!(expand(bad, &vars).is_err(), "{bad}");
        }
    }

    #[test]
    fn locate_skips_comments_and_escapes() {
        let text = "# {x}\na: \"{{x}\" # {x}\nb: \"{x}\"\n";
        assert_eq!(locate(text, "{x}"), Some((3, 5)));
    }

    #[test]
    fn normalize_paths() {
        assert_eq!(absolute_in(Path::new("/w"), "./a/../b"), PathBuf::from("/w/b"));
        assert_eq!(absolute_in(Path::new("/w"), "/abs/x"), PathBuf::from("/abs/x"));
    }
}

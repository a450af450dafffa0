//! The bundle directory: layout, `manifest.yaml`, `summary.md`, `findings.json`. Written as
//! the ladder goes (after every rung), so an interrupted or failed run keeps everything it
//! had.
//!
//! ```text
//! bundles/<UTC time>_<recipe>/
//!   manifest.yaml   tool, recipe (resolved), host, versions, every command with its
//!                   environment changes, exit, duration, files with sha256, redactions
//!   summary.md      the verdict and the evidence, for a human or an issue
//!   findings.json   the same for machines (the `analyze --json` object)
//!   replay.sh       reruns one rung's target with its recorded environment
//!   SHA256SUMS      every file's hash, written when the run ends (and by `bundle pack`)
//!   env/            doctor's report, git describe, pip freeze, what `collect` commands printed
//!   rungs/NN-<rung>/  stdout.log, stderr.log, command.txt, artifacts (dumps, XML, cuda-gdb logs)
//! ```
//!
//! Secrets never reach the bundle: commands and environments are recorded redacted
//! ([`crate::redact`]), logs are redacted as `exec` writes them, and tool reports (XML) are
//! redacted in place after their rung; what was taken out is listed in the manifest by name
//! and place. docs/bundles.md documents every manifest field.
//!
//! Must not: run processes or decide policy.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::analyze::{render_json, render_text};
use crate::exec::{Exit, Outcome};
use crate::findings::verdict::Analysis;
use crate::redact::{redact_env, redact_json, redact_line, Redaction};
use crate::rungs::Invocation;

/// Where bundles go when `--bundle-dir` is not given: `bundles/` in the current directory.
pub const DEFAULT_ROOT: &str = "bundles";

/// One process the ladder ran, as the manifest records it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CommandRecord {
    /// `target`, `build`, `cuda-gdb`, `cuobjdump`.
    pub role: String,
    pub command: String,
    pub argv: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Variables the ladder or the recipe set; the rest of the environment is inherited and
    /// recorded (allow-listed) once, in [`Manifest::environment`].
    pub env_set: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_remove: Vec<String>,
    pub exit: Option<Exit>,
    pub duration_s: f64,
    /// Log files, relative to the bundle.
    pub stdout: String,
    pub stderr: String,
}

impl CommandRecord {
    /// The record of `inv`, which the caller has redacted ([`Invocation::redacted`]).
    pub fn new(role: &str, inv: &Invocation, stdout: &str, stderr: &str) -> CommandRecord {
        CommandRecord {
            role: role.to_string(),
            command: inv.shell_line(),
            argv: inv.argv.clone(),
            cwd: inv.cwd.clone(),
            env_set: inv.env_set.iter().cloned().collect(),
            env_remove: inv.env_remove.clone(),
            exit: None,
            duration_s: 0.0,
            stdout: stdout.to_string(),
            stderr: stderr.to_string(),
        }
    }
}

/// A file in the bundle.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileRecord {
    pub path: String,
    pub bytes: u64,
    /// Lowercase hex; empty when the file could not be read.
    #[serde(default)]
    pub sha256: String,
}

/// One rung, as the manifest records it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RungRecord {
    pub rung: String,
    pub dir: String,
    /// `ran`, `skipped`, `failed`, `interrupted`.
    pub status: String,
    pub duration_s: f64,
    pub commands: Vec<CommandRecord>,
    pub files: Vec<FileRecord>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl RungRecord {
    /// How its target (or, for the rebuild, its build) ended: `exit 1`, `signal 6`, or `-`.
    pub fn exit_text(&self) -> String {
        self.commands
            .iter()
            .find(|c| c.role == "target")
            .or_else(|| self.commands.iter().find(|c| c.role == "build"))
            .and_then(|c| c.exit)
            .map(exit_text)
            .unwrap_or_else(|| "-".into())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub tool: String,
    pub version: String,
    pub created: String,
    /// The bundle's absolute path when it was written (`replay.sh` maps it to its own).
    #[serde(default)]
    pub root: String,
    pub recipe: serde_json::Value,
    pub host: BTreeMap<String, String>,
    pub versions: BTreeMap<String, String>,
    /// The inherited environment variables that shape a CUDA, PyTorch or vLLM run
    /// ([`ENV_ALLOW`]), redacted; everything else in the environment is not recorded.
    #[serde(default)]
    pub environment: BTreeMap<String, String>,
    pub plan: Vec<String>,
    /// The environment snapshot and the recipe's `collect` commands, run before the
    /// baseline into `env/NAME`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub collected: Vec<CommandRecord>,
    /// Remarks on the run as a whole (a `collect` command that failed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub rungs: Vec<RungRecord>,
    /// Why the ladder stopped, once it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// The container every rung ran in; absent on the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<ContainerRecord>,
    /// What was redacted and where (a file, `file:LINE`, a command file, `recipe`,
    /// `environment`); names and kinds, never values. Sorted.
    #[serde(default)]
    pub redactions: Vec<Redaction>,
}

/// The container of a run, as the manifest records it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContainerRecord {
    pub runtime: crate::container::Runtime,
    /// What the runtime said of its version (Docker: the daemon's).
    pub version: Option<String>,
    /// The image as given (`debug-ima/cuda:13.0`, `name@sha256:...`, a `.sif` file).
    pub image: String,
    /// The local image id (`sha256:...`, the content hash of its configuration), or the
    /// SHA-256 of an Apptainer image file.
    pub image_id: Option<String>,
    /// Registry digests (`repo@sha256:...`) when the image came from a registry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repo_digests: Vec<String>,
    /// Host folders mounted at the same path inside.
    pub mounts: Vec<PathBuf>,
    /// Whether the GPUs were passed in.
    pub gpus: bool,
}

impl Manifest {
    /// The recipe's name, `?` when the recorded recipe has none.
    pub fn recipe_name(&self) -> &str {
        self.recipe.get("name").and_then(|v| v.as_str()).unwrap_or("?")
    }
}

/// Inherited variables recorded in [`Manifest::environment`]: these names, and names
/// starting with one of [`ENV_ALLOW_PREFIXES`].
pub const ENV_ALLOW: &[&str] = &[
    "PATH",
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "PYTHONPATH",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "CC",
    "CXX",
    "CUDACXX",
    "MAX_JOBS",
    "OMP_NUM_THREADS",
    "TMPDIR",
];

/// Prefixes of the inherited variables recorded in [`Manifest::environment`].
pub const ENV_ALLOW_PREFIXES: &[&str] = &[
    "CUDA_",
    "CUDNN_",
    "CUBLAS_",
    "NCCL_",
    "NVIDIA_",
    "NVCC_",
    "PYTORCH_",
    "TORCH_",
    "TORCHINDUCTOR_",
    "TRITON_",
    "VLLM_",
    "HF_",
    "TRANSFORMERS_",
    "XLA_",
    "COMPUTE_SANITIZER_",
];

/// The allow-listed part of an environment ([`ENV_ALLOW`], [`ENV_ALLOW_PREFIXES`]),
/// redacted, each redaction reported at `environment`.
pub fn recorded_environment(
    vars: impl IntoIterator<Item = (String, String)>,
    out: &mut Vec<Redaction>,
) -> BTreeMap<String, String> {
    let mut kept: Vec<(String, String)> = vars
        .into_iter()
        .filter(|(k, _)| {
            ENV_ALLOW.contains(&k.as_str()) || ENV_ALLOW_PREFIXES.iter().any(|p| k.starts_with(p))
        })
        .collect();
    kept.sort();
    redact_env(&kept, "environment", out).into_iter().collect()
}

/// The redactions of a run's logs as the manifest lists them: one per log and kind of secret,
/// with the number of lines (both streams counted when they share a log).
pub fn log_redactions(o: &Outcome, stdout: &str, stderr: &str) -> Vec<Redaction> {
    let mut counts: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    for &(stream, kind, n) in &o.redacted {
        let log = match stream {
            crate::exec::Stream::Stdout => stdout,
            crate::exec::Stream::Stderr => stderr,
        };
        *counts.entry((log, kind)).or_insert(0) += n;
    }
    counts
        .into_iter()
        .map(|((log, kind), n)| Redaction {
            place: log.to_string(),
            what: format!("{kind} ({n} line{})", if n == 1 { "" } else { "s" }),
        })
        .collect()
}

/// Redacts a tool's text report (compute-sanitizer's XML) in place, line by line; the file is
/// rewritten only when something was found. Findings are reported at `place:LINE`.
pub fn redact_file(path: &Path, place: &str, out: &mut Vec<Redaction>) -> Result<()> {
    use std::io::{BufRead, BufReader, BufWriter, Write};
    let open = || std::fs::File::open(path).with_context(|| format!("cannot read `{}`", path.display()));
    // First pass: is there anything to redact? (Usually not: no copy then.)
    let mut first = None;
    let mut line = Vec::new();
    let mut reader = BufReader::new(open()?);
    let mut n = 0u64;
    while {
        line.clear();
        reader.read_until(b'\n', &mut line).with_context(|| format!("cannot read `{}`", path.display()))? > 0
    } {
        n += 1;
        if matches!(redact_line(&String::from_utf8_lossy(&line)).0, std::borrow::Cow::Owned(_)) {
            first = Some(n);
            break;
        }
    }
    if first.is_none() {
        return Ok(());
    }
    let tmp = path.with_extension("redacting");
    let write_err =
        |e: std::io::Error| anyhow::Error::new(e).context(format!("cannot write `{}`", tmp.display()));
    let mut w = BufWriter::new(std::fs::File::create(&tmp).map_err(write_err)?);
    let mut reader = BufReader::new(open()?);
    let mut n = 0u64;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).with_context(|| format!("cannot read `{}`", path.display()))?
            == 0
        {
            break;
        }
        n += 1;
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = String::from_utf8_lossy(body);
        match redact_line(&text) {
            (std::borrow::Cow::Borrowed(_), _) => w.write_all(&line).map_err(write_err)?,
            (std::borrow::Cow::Owned(new), labels) => {
                w.write_all(new.as_bytes()).map_err(write_err)?;
                w.write_all(&line[body.len()..]).map_err(write_err)?;
                out.extend(
                    labels
                        .into_iter()
                        .map(|what| Redaction { place: format!("{place}:{n}"), what: what.to_string() }),
                );
            }
        }
    }
    w.flush().map_err(write_err)?;
    drop(w);
    std::fs::rename(&tmp, path).with_context(|| format!("cannot replace `{}`", path.display()))
}

/// An open bundle directory.
pub struct Bundle {
    pub root: PathBuf,
    pub manifest: Manifest,
}

/// `2026-11-30T10-04-05Z` from seconds since the epoch (UTC; `-` instead of `:` so the
/// name is valid everywhere).
pub fn utc_stamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}-{m:02}-{d:02}T{:02}-{:02}-{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

impl Bundle {
    /// Creates `<root>/<UTC time>_<recipe>/` (with a numeric suffix if it exists).
    /// The recipe is recorded redacted ([`redact_json`]).
    pub fn create(root: &Path, recipe: &str, recipe_value: &serde_json::Value) -> Result<Bundle> {
        let stamp = utc_stamp(now_secs());
        let safe: String = recipe
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
            .collect();
        std::fs::create_dir_all(root).with_context(|| {
            format!("cannot create the bundle root `{}`: choose another with `--bundle-dir`", root.display())
        })?;
        // Absolute: commands get paths into the bundle (the coredump pattern, `--save`) and
        // may run in another working directory.
        let root = &std::path::absolute(root)
            .with_context(|| format!("cannot resolve the bundle root `{}`", root.display()))?;
        let mut dir = root.join(format!("{stamp}_{safe}"));
        let mut n = 1;
        while dir.exists() {
            n += 1;
            dir = root.join(format!("{stamp}_{safe}-{n}"));
        }
        std::fs::create_dir_all(dir.join("rungs"))
            .with_context(|| format!("cannot create `{}`", dir.display()))?;
        std::fs::create_dir_all(dir.join("env"))
            .with_context(|| format!("cannot create `{}`", dir.display()))?;
        let mut host = BTreeMap::new();
        if let Ok(h) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
            host.insert("hostname".into(), h.trim().to_string());
        }
        if let Ok(os) = std::fs::read_to_string("/etc/os-release") {
            if let Some(p) = os.lines().find_map(|l| l.strip_prefix("PRETTY_NAME=")) {
                host.insert("os".into(), p.trim_matches('"').to_string());
            }
        }
        if let Ok(k) = std::fs::read_to_string("/proc/sys/kernel/osrelease") {
            host.insert("kernel".into(), k.trim().to_string());
        }
        let mut redactions = Vec::new();
        let recipe = redact_json(recipe_value, "recipe", &mut redactions);
        let environment = recorded_environment(
            std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
            &mut redactions,
        );
        let manifest = Manifest {
            tool: "cargo xtask debug-ima".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            created: stamp,
            root: dir.display().to_string(),
            recipe,
            host,
            versions: BTreeMap::new(),
            environment,
            container: None,
            redactions,
            plan: Vec::new(),
            collected: Vec::new(),
            notes: Vec::new(),
            rungs: Vec::new(),
            stopped: None,
            verdict: None,
        };
        let b = Bundle { root: dir, manifest };
        b.write_manifest()?;
        Ok(b)
    }

    /// `rungs/NN-<rung>/`, created.
    pub fn rung_dir(&self, index: usize, rung: &str) -> Result<PathBuf> {
        let d = self.root.join("rungs").join(format!("{index:02}-{rung}"));
        std::fs::create_dir_all(&d).with_context(|| format!("cannot create `{}`", d.display()))?;
        Ok(d)
    }

    /// A path relative to the bundle root, for the manifest.
    pub fn rel(&self, p: &Path) -> String {
        p.strip_prefix(&self.root).unwrap_or(p).display().to_string()
    }

    /// Lists the files of a rung folder, sorted, with their sizes and hashes.
    pub fn files_of(&self, dir: &Path) -> Vec<FileRecord> {
        let mut out = Vec::new();
        for e in walkdir::WalkDir::new(dir).sort_by_file_name().into_iter().flatten() {
            if e.file_type().is_file() {
                let bytes = e.metadata().map(|m| m.len()).unwrap_or(0);
                let sha256 = crate::archive::sha256_file(e.path()).unwrap_or_default();
                out.push(FileRecord { path: self.rel(e.path()), bytes, sha256 });
            }
        }
        out
    }

    /// Adds redactions to the manifest's list (kept sorted and without repeats).
    pub fn note_redactions(&mut self, found: impl IntoIterator<Item = Redaction>) {
        self.manifest.redactions.extend(found);
        self.manifest.redactions.sort();
        self.manifest.redactions.dedup();
    }

    /// Writes a text the tool made (not a log) into the bundle, redacted.
    pub fn write_file(&mut self, rel: &str, text: &str) -> Result<()> {
        let mut found = Vec::new();
        let text = crate::redact::redact_text(text, rel, &mut found);
        self.note_redactions(found);
        self.write_raw(rel, &text)
    }

    fn write_raw(&self, rel: &str, text: &str) -> Result<()> {
        let p = self.root.join(rel);
        std::fs::write(&p, text).with_context(|| format!("cannot write `{}`", p.display()))
    }

    /// Writes `manifest.yaml` and `replay.sh` (both built from the redacted records).
    pub fn write_manifest(&self) -> Result<()> {
        let text = serde_yaml::to_string(&self.manifest).context("cannot serialise the manifest")?;
        self.write_raw("manifest.yaml", &text)?;
        let replay = self.root.join(crate::replay::FILE);
        std::fs::write(&replay, crate::replay::script(&self.manifest))
            .with_context(|| format!("cannot write `{}`", replay.display()))?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&replay, std::fs::Permissions::from_mode(0o755))
            .with_context(|| format!("cannot make `{}` executable", replay.display()))
    }

    /// Reads a bundle's manifest.
    pub fn load(dir: &Path) -> Result<Manifest> {
        let p = dir.join("manifest.yaml");
        let text = std::fs::read_to_string(&p).with_context(|| {
            format!(
                "cannot read `{}`: is `{}` a bundle written by `cargo xtask debug-ima`?",
                p.display(),
                dir.display()
            )
        })?;
        serde_yaml::from_str(&text)
            .with_context(|| format!("`{}` is not a manifest this version can read", p.display()))
    }

    /// Writes the analysis so far: `findings.json` and `summary.md`, then the manifest.
    pub fn write_analysis(&mut self, a: &Analysis) -> Result<()> {
        self.manifest.verdict = a.verdict.as_ref().map(|_| a.conclusion.clone());
        // Both are built from logs that were redacted as they were written.
        self.write_raw("findings.json", &render_json(a))?;
        self.write_raw("summary.md", &summary_md(&self.manifest, a))?;
        self.write_manifest()
    }
}

/// The bundle's `summary.md`: verdict, the rungs with what each did, the full analysis.
pub fn summary_md(m: &Manifest, a: &Analysis) -> String {
    let mut s = String::new();
    writeln!(s, "# debug-ima: {}\n", m.recipe_name()).unwrap();
    match &a.verdict {
        Some(_) => writeln!(s, "**Verdict:** {}\n", a.conclusion).unwrap(),
        None => writeln!(s, "**No verdict:** {}\n", a.conclusion.trim_start_matches("no verdict: ")).unwrap(),
    }
    if let Some(st) = &m.stopped {
        writeln!(s, "Stopped: {st}\n").unwrap();
    }
    writeln!(s, "| rung | status | time | exit |").unwrap();
    writeln!(s, "|---|---|---|---|").unwrap();
    for r in &m.rungs {
        let exit = r.exit_text();
        writeln!(s, "| {} | {} | {:.1} s | {} |", r.rung, r.status, r.duration_s, exit).unwrap();
    }
    writeln!(s, "\n## Analysis\n\n```text\n{}```", render_text(a)).unwrap();
    s
}

/// `exit 1`, `signal 6`, `timed out`, ...
pub fn exit_text(e: Exit) -> String {
    match e {
        Exit::Code(c) => format!("exit {c}"),
        Exit::Signal(s) => format!("signal {s}"),
        Exit::TimedOut => "timed out".into(),
        Exit::Stopped => "killed by the ladder".into(),
        Exit::Interrupted => "interrupted".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps() {
        assert_eq!(utc_stamp(0), "1970-01-01T00-00-00Z");
        assert_eq!(utc_stamp(1_796_031_885), "2026-11-30T09-44-45Z");
        assert_eq!(utc_stamp(951_782_400), "2000-02-29T00-00-00Z");
    }
}

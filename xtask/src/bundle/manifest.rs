//! The manifest's schema: what `manifest.yaml` holds, written by the bundle writer and read
//! back by `bundle show|list|report|pack` and `replay.sh`'s builder. docs/bundles.md
//! documents every field.
//!
//! Must not: write files (the writer does), read any but `manifest.yaml` ([`read`], bounded:
//! a received bundle is not trusted), or hold values that were not redacted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::findings::yaml_bounds::{self, Bound, Limits};
use crate::model::{Exit, Invocation, Role, RungId, Runtime};
use crate::redact::Redaction;

/// One process the ladder ran, as the manifest records it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CommandRecord {
    pub role: Role,
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
    /// The record of `inv`, which the caller has redacted ([`crate::redact::invocation`]).
    pub fn new(role: Role, inv: &Invocation, stdout: &str, stderr: &str) -> CommandRecord {
        CommandRecord {
            role,
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

/// How a rung went, in the manifest's `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RungStatus {
    Ran,
    Skipped,
    Failed,
    Interrupted,
}

impl RungStatus {
    pub fn name(self) -> &'static str {
        match self {
            RungStatus::Ran => "ran",
            RungStatus::Skipped => "skipped",
            RungStatus::Failed => "failed",
            RungStatus::Interrupted => "interrupted",
        }
    }
}

impl std::fmt::Display for RungStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One rung, as the manifest records it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RungRecord {
    pub rung: RungId,
    /// The rung's folder, relative to the bundle; empty when it did not run.
    pub dir: String,
    pub status: RungStatus,
    pub duration_s: f64,
    pub commands: Vec<CommandRecord>,
    pub files: Vec<FileRecord>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Files of the rung that hold the program's input values (a reproducer's integer
    /// storages, a capture): `bundle pack` leaves them out unless `--with-inputs`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<InputsRecord>,
}

/// A file that holds the program's input values, as the manifest records it: how many values,
/// copied from which arguments of the launch; never the values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputsRecord {
    /// Relative to the bundle.
    pub file: String,
    /// How many values (elements of the integer and bool storages recorded).
    pub values: u64,
    /// The launch's arguments (or parameters) they were copied from.
    pub from: Vec<String>,
}

impl InputsRecord {
    /// What a note, the terminal and `LEFT_OUT.tsv` say of it.
    pub fn text(&self) -> String {
        format!(
            "`{}` holds {} input value(s) of the program, copied from argument(s) {}: they may be your data \
             (token ids of a prompt); `bundle pack` leaves it out unless `--with-inputs`",
            self.file,
            self.values,
            self.from.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ")
        )
    }
}

impl RungRecord {
    /// How its target (or, for the rebuild, its build) ended: `exit 1`, `signal 6`, or `-`.
    pub fn exit_text(&self) -> String {
        self.commands
            .iter()
            .find(|c| c.role == Role::Target)
            .or_else(|| self.commands.iter().find(|c| c.role == Role::Build))
            .and_then(|c| c.exit)
            .map(Exit::text)
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
    pub plan: Vec<RungId>,
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
    pub runtime: Runtime,
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

/// What `bundle show`, `bundle report` and `analyze` say of a bundle whose run did not end
/// ([`Manifest::finished`]).
pub const UNFINISHED: &str = "unfinished: the run that wrote this bundle did not reach its end (the tool \
     was killed, failed before its first rung, or is still running); what is here is what it wrote until then";

impl Manifest {
    /// Whether the run that wrote the bundle ended: every ending the tool sees (the plan
    /// done, a verdict, an error, Ctrl-C or any other signal it catches) writes `stopped`
    /// with the analysis, before the seal; a run killed (SIGKILL, a crash, the machine's
    /// end), one whose setup failed after the bundle was made (before the climb), or one
    /// still running has none.
    pub fn finished(&self) -> bool {
        self.stopped.is_some()
    }

    /// The recipe's name, `?` when the recorded recipe has none.
    /// The recipe's name, on one line (a received manifest's name may hold a newline that would
    /// forge a line of `bundle show`, `report`, `summary.md` or `replay.sh`: [`crate::ui::safe`]).
    /// A number or boolean (a hand-edited `name: 12`) is its text, as a recipe takes it.
    pub fn recipe_name(&self) -> String {
        let name = match self.recipe.get("name") {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(v @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_))) => v.to_string(),
            _ => "?".to_string(),
        };
        crate::ui::safe(&name, true).into_owned()
    }

    /// The tool's working directory when it ran (the recipe's built-in `cwd` variable): where a
    /// command recorded without a `cwd` ran.
    pub fn started_in(&self) -> Option<String> {
        let cwd = self.recipe.get("vars")?.get("cwd")?.as_str()?;
        (!cwd.is_empty()).then(|| cwd.to_string())
    }
}

/// Reads a bundle's manifest: a regular file, within [`Limits::MANIFEST`] (size, nesting,
/// anchors and aliases, checked before it is parsed: a received bundle is not trusted).
pub fn read(dir: &Path) -> Result<Manifest> {
    use std::io::Read as _;
    let p = dir.join(super::layout::MANIFEST);
    let not_a_bundle = || {
        format!(
            "cannot read `{}`: is `{}` a bundle written by `cargo xtask debug-ima`?",
            p.display(),
            dir.display()
        )
    };
    let f = crate::files::open_regular(&p).with_context(not_a_bundle)?;
    let max = Limits::MANIFEST.max_bytes;
    let mut bytes = Vec::new();
    f.take(max as u64 + 1).read_to_end(&mut bytes).with_context(not_a_bundle)?;
    let text = String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "`{}` is not UTF-8 text (invalid byte at offset {}): not a manifest `cargo xtask debug-ima` wrote",
            p.display(),
            e.utf8_error().valid_up_to()
        )
    })?;
    if let Err(r) = yaml_bounds::check(&text, &Limits::MANIFEST) {
        let what = match r.bound {
            Bound::Size => format!("larger than {} MiB", max >> 20),
            _ => r.to_string(),
        };
        anyhow::bail!(
            "`{}`: {what}; `cargo xtask debug-ima` writes manifests of a few KB with no aliases, \
             so this one was made or changed elsewhere: not read (get the bundle again from its \
             author, or unpack it from the original archive)",
            p.display()
        );
    }
    // A byte-order mark (an editor's) is no part of the first key.
    // The parser's message quotes the value it refused: one line, so that a value holding a
    // newline forges no line of the error.
    serde_yaml::from_str(text.strip_prefix('\u{feff}').unwrap_or(&text)).map_err(|e| {
        anyhow::anyhow!(
            "`{}` is not a manifest this version can read: {}",
            p.display(),
            crate::ui::safe(&e.to_string(), true)
        )
    })
}

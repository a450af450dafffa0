//! Where a process runs: on the host, in a new container of the run, or inside the running
//! container of another process (cuda-gdb beside the attach rung's target).
//!
//! Must not: decide what runs (the ladder) or write the bundle.

pub mod container;

use std::path::Path;
use std::time::Duration;

use crate::bundle::manifest::ContainerRecord;
use crate::model::{Invocation, Runtime};
use crate::process::short::{self, Output};
use container::{Access, Containers, RuntimeArgv};

/// How long removing a container, giving its files back or asking the runtime about an
/// image may take.
pub const CLEANUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Where one process runs.
#[derive(Debug, Clone)]
pub enum Place {
    Host,
    /// In a new container of this name, removed when the run ends however it ends.
    New(Containers, String, Access),
    /// Inside the running container of this name (cuda-gdb next to the attach rung's target).
    In(Containers, String),
}

impl Place {
    /// The command that really runs.
    pub fn wrap(&self, inv: &Invocation) -> Invocation {
        match self {
            Place::Host => inv.clone(),
            Place::New(c, name, access) => c.wrap(inv, name, *access),
            Place::In(c, name) => c.exec_in(name, inv),
        }
    }

    /// Where a process beside this one runs: inside its container, or on the host.
    pub fn beside(&self) -> Place {
        match self {
            Place::New(c, name, _) => Place::In(c.clone(), name.clone()),
            _ => Place::Host,
        }
    }

    pub fn in_container(&self) -> bool {
        !matches!(self, Place::Host)
    }

    /// Kills and removes the container a [`Place::New`] run started (a no-op when it has
    /// gone by itself with `--rm`).
    pub fn clean_up(&self) {
        if let Place::New(c, name, _) = self {
            if let Some(argv) = c.remove(name) {
                run_short(&argv);
            }
        }
    }
}

/// Runs a short runtime command (`docker rm -f`, `docker image inspect`), stdin closed,
/// killed after [`CLEANUP_TIMEOUT`]; an empty `argv` runs nothing.
pub fn run_short(argv: &[String]) -> Option<Output> {
    let (program, rest) = argv.split_first()?;
    let args: Vec<&str> = rest.iter().map(String::as_str).collect();
    Some(short::run(Path::new(program), &args, CLEANUP_TIMEOUT))
}

/// Files a root container wrote into `dir` go back to the owner of `owner_of`: Docker and
/// Podman run as root, so that cuda-gdb may attach.
pub fn give_back(c: &Containers, dir: &Path, owner_of: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(owner_of) else { return };
    if let Some(inv) = c.chown(dir, meta.uid(), meta.gid()) {
        run_short(&inv.argv);
    }
}

/// The manifest's record of the container: the runtime and its version, the image with its id
/// and digests (for Apptainer, the `.sif` file's SHA-256), what was mounted.
pub fn container_record(c: &Containers) -> ContainerRecord {
    let run = |argv: &[String]| -> Option<String> {
        let out = run_short(argv)?;
        out.success().then(|| out.stdout.trim().to_string()).filter(|s| !s.is_empty())
    };
    let version = run(&c.runtime.version());
    let (image_id, repo_digests) = match c.runtime {
        Runtime::Apptainer => (
            crate::bundle::archive::sha256_file(Path::new(&c.image)).ok().map(|h| format!("sha256:{h}")),
            Vec::new(),
        ),
        _ => match run(&c.runtime.inspect_image(&c.image)) {
            Some(line) => container::parse_inspect(&line),
            None => (None, Vec::new()),
        },
    };
    ContainerRecord {
        runtime: c.runtime,
        version,
        image: c.image.clone(),
        image_id,
        repo_digests,
        mounts: c.mounts.clone(),
        gpus: c.gpus,
    }
}

//! Where a process runs: on the host, in a new container of the run, or inside the running
//! container of another process (cuda-gdb beside the attach rung's target); and, through
//! Slurm, any of these as a job step of the allocation or on one node of a running step;
//! through ssh, as one rank on every host of a list or on one host. A place is a chain (a
//! launcher of ranks around a container around the host), each launcher one value of its own
//! file (`slurm`, `ssh`), the ranks' labels read by `labels` for both.
//!
//! Must not: decide what runs (the ladder) or write the bundle.

pub mod container;
pub mod images;
pub mod labels;
pub mod slurm;
pub mod ssh;

use std::path::Path;
use std::time::Duration;

use crate::bundle::manifest::ContainerRecord;
use crate::model::{Invocation, Runtime};
use crate::process::short::{self, Output};
use container::{Access, Containers, RuntimeArgv};
use slurm::Slurm;
use ssh::Ssh;

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
    /// As a job step named so (every task of the allocation, `srun`), each task at the inner
    /// place on its node.
    Slurm(Slurm, String, Access, Box<Place>),
    /// As a job step named so of one task on every node, in pyxis's container (the build, with
    /// an image through pyxis: [`Slurm::wrap_per_node`]).
    SlurmPerNode(Slurm, String),
    /// On one node (`srun --overlap -w NODE`) of the running step named so, at the inner place
    /// there (cuda-gdb beside the waiting task). The node is [`slurm::NODE`] until known.
    SlurmOn(Slurm, String, String, Box<Place>),
    /// One rank on every host of the list (`ssh`), each at the inner place on its host.
    Ssh(Ssh, Access, Box<Place>),
    /// On the host named so (`ssh HOST`), at the inner place there (cuda-gdb beside the
    /// waiting rank). The host is [`slurm::NODE`] until known.
    SshOn(Ssh, String, Box<Place>),
}

impl Place {
    /// The command that really runs.
    pub fn wrap(&self, inv: &Invocation) -> Invocation {
        match self {
            Place::Host => inv.clone(),
            Place::New(c, name, access) => c.wrap(inv, name, *access),
            Place::In(c, name) => c.exec_in(name, inv),
            Place::Slurm(s, name, access, inner) => s.wrap(&inner.wrap(inv), name, *access),
            Place::SlurmPerNode(s, name) => s.wrap_per_node(inv, name),
            Place::SlurmOn(s, node, name, inner) => s.on_node(node, name, &inner.wrap(inv)),
            Place::Ssh(s, access, inner) => s.wrap(&inner.wrap(inv), *access),
            Place::SshOn(s, node, inner) => s.on_node(node, &inner.wrap(inv)),
        }
    }

    /// The same place on another node: a [`Place::SlurmOn`] moved to `node`, any other
    /// unchanged.
    pub fn on_node(&self, node: &str) -> Place {
        match self {
            Place::SlurmOn(s, _, name, inner) => {
                Place::SlurmOn(s.clone(), node.into(), name.clone(), inner.clone())
            }
            Place::SshOn(s, _, inner) => Place::SshOn(s.clone(), node.into(), inner.clone()),
            other => other.clone(),
        }
    }

    /// Whether it runs through Slurm.
    pub fn through_slurm(&self) -> bool {
        matches!(self, Place::Slurm(..) | Place::SlurmOn(..) | Place::SlurmPerNode(..))
    }

    /// Where a process beside this one runs: inside its container, or on the host.
    pub fn beside(&self) -> Place {
        match self {
            Place::New(c, name, _) => Place::In(c.clone(), name.clone()),
            Place::Slurm(s, name, _, inner) => {
                Place::SlurmOn(s.clone(), slurm::NODE.into(), name.clone(), Box::new(inner.beside()))
            }
            Place::Ssh(s, _, inner) => Place::SshOn(s.clone(), slurm::NODE.into(), Box::new(inner.beside())),
            _ => Place::Host,
        }
    }

    pub fn in_container(&self) -> bool {
        match self {
            Place::Host => false,
            Place::SlurmPerNode(s, _) => s.pyxis.is_some(),
            Place::Slurm(_, _, _, inner) | Place::SlurmOn(_, _, _, inner) => inner.in_container(),
            Place::Ssh(_, _, inner) | Place::SshOn(_, _, inner) => inner.in_container(),
            _ => true,
        }
    }

    /// Kills and removes the container a [`Place::New`] run started (a no-op when it has
    /// gone by itself with `--rm`).
    /// Through Slurm, a step of its name still in the queue is cancelled (`scancel JOB.STEP`:
    /// killing srun ends its step, but an srun killed with SIGKILL may leave it running).
    pub fn clean_up(&self) {
        match self {
            Place::New(c, name, _) => {
                if let Some(argv) = c.remove(name) {
                    run_short(&argv);
                }
            }
            Place::SlurmPerNode(s, name) => {
                if let Some(argv) =
                    run_short(&s.steps_query()).and_then(|out| s.cancel(&out.stdout, name, true))
                {
                    run_short(&argv);
                }
            }
            Place::Slurm(s, name, _, inner) | Place::SlurmOn(s, _, name, inner) => {
                let whole = matches!(self, Place::Slurm(..));
                if let Some(out) = run_short(&s.steps_query()) {
                    if let Some(argv) = s.cancel(&out.stdout, name, whole) {
                        run_short(&argv);
                    }
                }
                inner.clean_up();
            }
            _ => {}
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

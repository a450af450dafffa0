//! Containers: every rung's command wrapped to run inside a pinned image with Docker, Podman
//! or Apptainer, with the bundle and the target's folders bind-mounted at the same paths (so
//! the coredump pattern, `--save` and the recipe's absolute paths mean the same inside), the
//! GPUs passed in, ptrace allowed for the attach rung, one name per container so that it can
//! be killed and removed whatever happens, and the variables passed by name (`-e NAME`, the
//! value from the client's environment), never as `NAME=value` on a command line.
//!
//! As a launcher ([`Launch`]), the innermost of the stack: every new process of the run in a
//! container of its own, numbered and named after what it runs; a process beside the target
//! inside the target's ([`Containers::exec_in`]).
//!
//! Must not: run anything but the short commands of its launcher's cleanup, record and
//! give-back ([`run_short`]); building the commands is pure, running them is `process`'s
//! (and `doctor`'s for the short probes).

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use super::stack::Access;
use super::stack::{run_short, Announced, Launch, Layer, Number, Place, Want};
use crate::bundle::manifest::ContainerRecord;
use crate::model::{Invocation, Runtime};

/// What a runtime is asked: its GPU flags, its version, an image's id.
pub trait RuntimeArgv {
    fn gpu_args(self) -> Vec<String>;
    fn version(self) -> Vec<String>;
    fn inspect_image(self, image: &str) -> Vec<String>;
}

impl RuntimeArgv for Runtime {
    /// The flags that pass every GPU in: `--gpus all` (Docker, through the NVIDIA Container
    /// Toolkit), the CDI device `nvidia.com/gpu=all` (Podman), `--nv` (Apptainer).
    fn gpu_args(self) -> Vec<String> {
        let words: &[&str] = match self {
            Runtime::Docker => &["--gpus", "all"],
            Runtime::Podman => &["--device", "nvidia.com/gpu=all", "--security-opt", "label=disable"],
            Runtime::Apptainer => &["--nv"],
            Runtime::None => &[],
        };
        words.iter().map(|w| w.to_string()).collect()
    }

    /// `docker version --format ...`: the runtime's (server's) version.
    fn version(self) -> Vec<String> {
        let words: &[&str] = match self {
            Runtime::Docker => &["docker", "version", "--format", "{{.Server.Version}}"],
            Runtime::Podman => &["podman", "version", "--format", "{{.Version}}"],
            Runtime::Apptainer => &["apptainer", "--version"],
            Runtime::None => &[],
        };
        words.iter().map(|w| w.to_string()).collect()
    }

    /// The command that prints an image's id and repository digests (`ID|DIGEST,...`); for
    /// Apptainer, whose images are files, their SHA-256 is taken by the caller.
    fn inspect_image(self, image: &str) -> Vec<String> {
        match self {
            Runtime::Docker | Runtime::Podman => vec![
                self.name().into(),
                "image".into(),
                "inspect".into(),
                "--format".into(),
                // Not `join`: Docker 20.10 fails on it (`wrong type for value; expected
                // []string; got []interface {}`).
                "{{.Id}}|{{range $i, $d := .RepoDigests}}{{if $i}},{{end}}{{$d}}{{end}}".into(),
                image.into(),
            ],
            Runtime::Apptainer | Runtime::None => Vec::new(),
        }
    }
}

/// The id and repository digests from [`RuntimeArgv::inspect_image`]'s `ID|DIGEST,...` line.
pub fn parse_inspect(line: &str) -> (Option<String>, Vec<String>) {
    let (id, digests) = line.split_once('|').unwrap_or((line, ""));
    (Some(id.to_string()), digests.split(',').filter(|d| !d.is_empty()).map(str::to_string).collect())
}

/// `TMPDIR` inside the container, for the target and the cuda-gdb that attaches to it: the
/// CUDA debugger finds the target's debug pipes there, so both must see the same one.
pub const TMPDIR: &str = "/tmp";

/// Containers of one ladder run: the runtime, the image, what is mounted, and the name every
/// container of the run starts with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Containers {
    pub runtime: Runtime,
    pub image: String,
    /// Absolute host paths, each mounted at the same path, sorted, without repeats.
    pub mounts: Vec<PathBuf>,
    pub gpus: bool,
    /// `debug-ima-<bundle name>-<pid>`, lowercased and cut to what container names allow:
    /// two runs started in the same second (same bundle name, other roots) never clash.
    pub prefix: String,
    /// The working directory of a command that names none: the ladder's own, as on the host
    /// (it is mounted).
    pub workdir: PathBuf,
}

/// `debug-ima-<bundle name>-<pid>`, lowercased and cut to what container (and job-step) names
/// allow.
pub fn name_prefix(bundle_name: &str, pid: u32) -> String {
    let safe: String = bundle_name
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' { c } else { '-' })
        .collect();
    let mut prefix = format!("debug-ima-{safe}");
    prefix.truncate(100);
    prefix.push_str(&format!("-{pid}"));
    prefix
}

impl Containers {
    /// The run's containers; `mounts` are made unique and sorted (a path inside another
    /// mounted path is dropped: the outer mount shows it).
    pub fn new(
        runtime: Runtime,
        image: &str,
        mounts: &[PathBuf],
        gpus: bool,
        bundle_name: &str,
        pid: u32,
        workdir: &Path,
    ) -> Containers {
        let mut m: Vec<PathBuf> = mounts.to_vec();
        m.sort();
        m.dedup();
        let outer: Vec<PathBuf> =
            m.iter().filter(|p| !m.iter().any(|q| q != *p && p.starts_with(q))).cloned().collect();
        let prefix = name_prefix(bundle_name, pid);
        Containers {
            runtime,
            image: image.to_string(),
            mounts: outer,
            gpus,
            prefix,
            workdir: workdir.to_path_buf(),
        }
    }

    /// The name of the container for one process of the run: `<prefix>-<NN>-<what>`.
    pub fn name(&self, index: usize, what: &str) -> String {
        run_name(&self.prefix, index, what)
    }

    /// `inv` run in a new container named `name`: the same command, working directory and
    /// variables (passed by name; `env_remove` applied inside with `env -u`), the mounts,
    /// the GPUs, and for [`Access::Ptrace`] what attaching a debugger needs. The returned
    /// invocation's `env_set` is what the runtime's client must have in its environment.
    pub fn wrap(&self, inv: &Invocation, name: &str, access: Access) -> Invocation {
        let mut argv: Vec<String> = Vec::new();
        let mut env_set = inv.env_set.clone();
        match self.runtime {
            Runtime::None => return inv.clone(),
            Runtime::Docker | Runtime::Podman => {
                argv.extend(
                    [self.runtime.name(), "run", "--rm", "--name", name, "--init", "--ipc=host"]
                        .map(String::from),
                );
                if self.gpus {
                    argv.extend(self.runtime.gpu_args());
                }
                if access == Access::Ptrace {
                    argv.extend(
                        ["--cap-add", "SYS_PTRACE", "--security-opt", "seccomp=unconfined"].map(String::from),
                    );
                }
                for m in &self.mounts {
                    argv.push("-v".into());
                    argv.push(format!("{0}:{0}", m.display()));
                }
                argv.push("-w".into());
                argv.push(inv.cwd.as_ref().unwrap_or(&self.workdir).display().to_string());
                env_set.retain(|(k, _)| k != "TMPDIR");
                env_set.push(("TMPDIR".into(), TMPDIR.into()));
                for (k, _) in &env_set {
                    argv.push("-e".into());
                    argv.push(k.clone());
                }
                argv.push(self.image.clone());
            }
            Runtime::Apptainer => {
                // Not `--containall`/`--contain`: they give the container its own PID namespace
                // and `/tmp`, and cuda-gdb could then not attach (another `apptainer exec`
                // must see the target's PID and its `TMPDIR`).
                argv.extend(["apptainer", "exec", "--cleanenv"].map(String::from));
                if self.gpus {
                    argv.extend(self.runtime.gpu_args());
                }
                for m in &self.mounts {
                    argv.push("--bind".into());
                    argv.push(m.display().to_string());
                }
                argv.push("--pwd".into());
                argv.push(inv.cwd.as_ref().unwrap_or(&self.workdir).display().to_string());
                // `--cleanenv` starts from a clean environment; `APPTAINERENV_X` sets X inside.
                env_set = inv.env_set.iter().map(|(k, v)| (format!("APPTAINERENV_{k}"), v.clone())).collect();
                env_set.push(("APPTAINERENV_TMPDIR".into(), TMPDIR.into()));
                argv.push(self.image.clone());
            }
        }
        if !inv.env_remove.is_empty() {
            argv.push("env".into());
            for k in &inv.env_remove {
                argv.push("-u".into());
                argv.push(k.clone());
            }
        }
        argv.extend(inv.argv.iter().cloned());
        Invocation { argv, cwd: None, env_set, env_remove: Vec::new(), timeout: inv.timeout }
    }

    /// `inv` run inside the running container `name` (Docker and Podman: `exec`), as the
    /// attach rung runs cuda-gdb next to the waiting target: same PID namespace, same
    /// `TMPDIR`. Apptainer shares the host's PID namespace, so a new `apptainer exec` does.
    pub fn exec_in(&self, name: &str, inv: &Invocation) -> Invocation {
        match self.runtime {
            Runtime::Docker | Runtime::Podman => {
                let mut argv: Vec<String> = vec![self.runtime.name().into(), "exec".into()];
                let mut env_set = inv.env_set.clone();
                env_set.retain(|(k, _)| k != "TMPDIR");
                env_set.push(("TMPDIR".into(), TMPDIR.into()));
                for (k, _) in &env_set {
                    argv.push("-e".into());
                    argv.push(k.clone());
                }
                argv.push(name.into());
                argv.extend(inv.argv.iter().cloned());
                Invocation { argv, cwd: None, env_set, env_remove: Vec::new(), timeout: inv.timeout }
            }
            Runtime::Apptainer | Runtime::None => self.wrap(inv, name, Access::Ptrace),
        }
    }

    /// Kills and removes a container by name (`docker rm -f NAME`): after every run, also
    /// after a timeout, an error or Ctrl-C; a container already gone is not an error worth
    /// reporting.
    pub fn remove(&self, name: &str) -> Option<Vec<String>> {
        match self.runtime {
            Runtime::Docker | Runtime::Podman => {
                Some(vec![self.runtime.name().into(), "rm".into(), "-f".into(), name.into()])
            }
            Runtime::Apptainer | Runtime::None => None,
        }
    }

    /// Gives files a root container wrote into `dir` back to `uid:gid` (Docker and Podman
    /// run as root so that cuda-gdb may attach; Apptainer runs as the user).
    pub fn chown(&self, dir: &Path, uid: u32, gid: u32) -> Option<Invocation> {
        match self.runtime {
            Runtime::Docker | Runtime::Podman if uid != 0 => Some(Invocation {
                argv: vec![
                    self.runtime.name().into(),
                    "run".into(),
                    "--rm".into(),
                    "-v".into(),
                    format!("{0}:{0}", dir.display()),
                    "--entrypoint".into(),
                    "chown".into(),
                    self.image.clone(),
                    "-R".into(),
                    format!("{uid}:{gid}"),
                    dir.display().to_string(),
                ],
                cwd: None,
                env_set: Vec::new(),
                env_remove: Vec::new(),
                timeout: Some(std::time::Duration::from_secs(120)),
            }),
            _ => None,
        }
    }
}

/// The containers as a launcher: the innermost layer of every new process.
impl Launch for Containers {
    fn place(&self, want: &Want, _inner: &Place, number: &mut Number) -> Option<Arc<dyn Layer>> {
        let name = self.name(number.get(), want.what);
        Some(Arc::new(New { c: self.clone(), name, access: want.access }))
    }

    fn is_container(&self) -> bool {
        true
    }

    fn plan(&self) -> String {
        format!(
            "container: {} image {} ({}); each command in its own container, removed after it\n   \
             mounted at the same path: {}\n",
            self.runtime.name(),
            self.image,
            if self.gpus { "GPUs passed in" } else { "no GPUs" },
            self.mounts.iter().map(|m| m.display().to_string()).collect::<Vec<_>>().join(", ")
        )
    }

    fn announce(&self) -> Announced {
        let record = record(self);
        let line = format!(
            "container: {} {} ({}), image {} {}",
            self.runtime.name(),
            record.version.as_deref().unwrap_or("?"),
            if self.gpus { "GPUs passed in" } else { "no GPUs" },
            self.image,
            record.image_id.as_deref().unwrap_or("(id unknown)")
        );
        Announced { line, container: Some(record) }
    }

    /// Docker and Podman run as root, so that cuda-gdb may attach.
    fn give_back(&self, dir: &Path, owner_of: &Path) {
        use std::os::unix::fs::MetadataExt;
        let Ok(meta) = std::fs::metadata(owner_of) else { return };
        if let Some(inv) = self.chown(dir, meta.uid(), meta.gid()) {
            run_short(&inv.argv);
        }
    }

    fn workdir(&self) -> Option<&Path> {
        Some(&self.workdir)
    }
}

/// In a new container of this name, removed when the run ends however it ends.
#[derive(Debug)]
struct New {
    c: Containers,
    name: String,
    access: Access,
}

impl Layer for New {
    fn wrap(&self, inv: &Invocation) -> Invocation {
        self.c.wrap(inv, &self.name, self.access)
    }

    fn beside(&self) -> Option<Arc<dyn Layer>> {
        Some(Arc::new(In { c: self.c.clone(), name: self.name.clone() }))
    }

    fn in_container(&self) -> bool {
        true
    }

    /// Kills and removes the container (a no-op when it has gone by itself with `--rm`).
    fn clean_up(&self) -> bool {
        if let Some(argv) = self.c.remove(&self.name) {
            run_short(&argv);
        }
        true
    }
}

/// Inside the running container of this name (cuda-gdb next to the attach rung's target).
#[derive(Debug)]
struct In {
    c: Containers,
    name: String,
}

impl Layer for In {
    fn wrap(&self, inv: &Invocation) -> Invocation {
        self.c.exec_in(&self.name, inv)
    }

    fn in_container(&self) -> bool {
        true
    }
}

/// The manifest's record of the containers: the runtime and its version, the image with its
/// id and digests (for Apptainer, the `.sif` file's SHA-256), what was mounted.
fn record(c: &Containers) -> ContainerRecord {
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
            Some(line) => parse_inspect(&line),
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

/// One of the project's images (`containers/<name>.Containerfile`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageDef {
    pub name: &'static str,
    /// The tag `container build` gives it.
    pub tag: &'static str,
    /// The image of ours it starts `FROM` (its `ARG BASE`), built first when missing.
    pub base: Option<&'static str>,
}

/// The images under `containers/`, in build order.
pub const IMAGES: [ImageDef; 3] = [
    ImageDef { name: "cuda", tag: "debug-ima/cuda:13.0", base: None },
    ImageDef { name: "pytorch", tag: "debug-ima/pytorch:2.11.0", base: Some("cuda") },
    ImageDef { name: "vllm", tag: "debug-ima/vllm:main", base: Some("pytorch") },
];

impl ImageDef {
    pub fn find(name: &str) -> Option<ImageDef> {
        IMAGES.into_iter().find(|d| d.name == name)
    }

    /// The tag for these build arguments: the vLLM image is tagged with its `VLLM_REF`.
    pub fn tag_for(&self, build_args: &[String]) -> String {
        let vllm_ref = build_args.iter().find_map(|a| a.strip_prefix("VLLM_REF="));
        match (self.name, vllm_ref) {
            ("vllm", Some(r)) if !r.is_empty() => {
                let safe: String =
                    r.chars()
                        .map(|c| {
                            if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' {
                                c
                            } else {
                                '-'
                            }
                        })
                        .take(120)
                        .collect();
                format!("debug-ima/vllm:{safe}")
            }
            _ => self.tag.to_string(),
        }
    }

    /// `docker build -f DIR/NAME.Containerfile -t TAG [--build-arg K=V]... DIR`.
    pub fn build_argv(&self, runtime: Runtime, dir: &Path, tag: &str, build_args: &[String]) -> Vec<String> {
        let mut argv: Vec<String> = vec![
            runtime.name().into(),
            "build".into(),
            "-f".into(),
            dir.join(format!("{}.Containerfile", self.name)).display().to_string(),
            "-t".into(),
            tag.into(),
        ];
        for a in build_args {
            argv.push("--build-arg".into());
            argv.push(a.clone());
        }
        argv.push(dir.display().to_string());
        argv
    }
}

/// The name of one process of the run, a container's or a Slurm job step's:
/// `<prefix>-<NN>-<what>`, with what no runtime takes in a name turned into `-`.
pub fn run_name(prefix: &str, index: usize, what: &str) -> String {
    let what: String =
        what.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '-' }).collect();
    format!("{prefix}-{index:02}-{what}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inv(argv: &[&str]) -> Invocation {
        Invocation {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            cwd: Some(PathBuf::from("/src/app")),
            env_set: vec![
                ("HF_TOKEN".into(), "secret-value".into()),
                ("CUDA_LAUNCH_BLOCKING".into(), "1".into()),
            ],
            env_remove: vec!["TRITON_DISABLE_LINE_INFO".into()],
            timeout: Some(std::time::Duration::from_secs(5)),
        }
    }

    fn containers(runtime: Runtime) -> Containers {
        Containers::new(
            runtime,
            "debug-ima/cuda:13.0",
            &[PathBuf::from("/src/app"), PathBuf::from("/src"), PathBuf::from("/b/x"), PathBuf::from("/src")],
            true,
            "2026-11-30T10-00-00Z_Demo",
            42,
            Path::new("/work"),
        )
    }

    #[test]
    fn mounts_and_names() {
        let c = containers(Runtime::Docker);
        assert_eq!(c.mounts, [PathBuf::from("/b/x"), PathBuf::from("/src")]);
        assert_eq!(c.prefix, "debug-ima-2026-11-30t10-00-00z_demo-42");
        assert_eq!(c.name(3, "cudagdb 1"), "debug-ima-2026-11-30t10-00-00z_demo-42-03-cudagdb-1");
        // A command without a working directory runs in the ladder's.
        let mut no_cwd = inv(&["t"]);
        no_cwd.cwd = None;
        assert!(c.wrap(&no_cwd, "n", Access::Plain).argv.join(" ").contains(" -w /work "));
    }

    #[test]
    fn docker_wraps_with_mounts_gpus_and_variables_by_name() {
        let c = containers(Runtime::Docker);
        let w = c.wrap(&inv(&["target", "--n", "1"]), "n1", Access::Plain);
        assert_eq!(
            w.argv.join(" "),
            "docker run --rm --name n1 --init --ipc=host --gpus all -v /b/x:/b/x -v /src:/src -w /src/app \
             -e HF_TOKEN -e CUDA_LAUNCH_BLOCKING -e TMPDIR debug-ima/cuda:13.0 env -u TRITON_DISABLE_LINE_INFO \
             target --n 1"
        );
        // The values go to the client's environment, never onto the command line.
        assert!(!w.argv.iter().any(|a| a.contains("secret-value")));
        assert!(w.env_set.contains(&("HF_TOKEN".into(), "secret-value".into())));
        assert!(w.env_set.contains(&("TMPDIR".into(), "/tmp".into())));
        assert_eq!((w.cwd, w.timeout), (None, Some(std::time::Duration::from_secs(5))));

        let p = c.wrap(&inv(&["target"]), "n2", Access::Ptrace);
        assert!(p.argv.join(" ").contains("--cap-add SYS_PTRACE --security-opt seccomp=unconfined"));
        let e = c.exec_in("n2", &inv(&["cuda-gdb", "-p", "7"]));
        assert_eq!(
            e.argv.join(" "),
            "docker exec -e HF_TOKEN -e CUDA_LAUNCH_BLOCKING -e TMPDIR n2 cuda-gdb -p 7"
        );
        assert_eq!(c.remove("n2"), Some(vec!["docker".into(), "rm".into(), "-f".into(), "n2".into()]));
        let own = c.chown(Path::new("/b/x/rungs/01"), 1000, 100).unwrap();
        assert_eq!(
            own.argv.join(" "),
            "docker run --rm -v /b/x/rungs/01:/b/x/rungs/01 --entrypoint chown debug-ima/cuda:13.0 -R 1000:100 \
             /b/x/rungs/01"
        );
        assert_eq!(c.chown(Path::new("/b"), 0, 0), None, "root needs nothing given back");
    }

    #[test]
    fn podman_uses_cdi() {
        let c = containers(Runtime::Podman);
        let w = c.wrap(&inv(&["target"]), "n1", Access::Ptrace);
        assert!(
            w.argv.join(" ").starts_with(
                "podman run --rm --name n1 --init --ipc=host --device nvidia.com/gpu=all --security-opt \
                 label=disable --cap-add SYS_PTRACE --security-opt seccomp=unconfined -v "
            ),
            "{}",
            w.argv.join(" ")
        );
        assert_eq!(c.exec_in("n1", &inv(&["cuda-gdb"])).argv[..2], ["podman", "exec"]);
    }

    #[test]
    fn apptainer_shares_pids_and_tmp_and_passes_variables_by_prefix() {
        let c = containers(Runtime::Apptainer);
        let w = c.wrap(&inv(&["target"]), "ignored", Access::Ptrace);
        assert_eq!(
            w.argv.join(" "),
            "apptainer exec --cleanenv --nv --bind /b/x --bind /src --pwd /src/app debug-ima/cuda:13.0 env -u \
             TRITON_DISABLE_LINE_INFO target"
        );
        assert!(w.env_set.contains(&("APPTAINERENV_HF_TOKEN".into(), "secret-value".into())));
        assert!(w.env_set.contains(&("APPTAINERENV_TMPDIR".into(), "/tmp".into())));
        // The debugger: another `apptainer exec`, in the same PID namespace.
        assert_eq!(c.exec_in("x", &inv(&["cuda-gdb", "-p", "9"])).argv[..2], ["apptainer", "exec"]);
        assert_eq!(c.remove("x"), None);
    }

    #[test]
    fn the_host_is_unchanged() {
        let c = containers(Runtime::None);
        assert_eq!(c.wrap(&inv(&["target"]), "x", Access::Ptrace), inv(&["target"]));
    }

    #[test]
    fn images_and_their_build_commands() {
        let vllm = ImageDef::find("vllm").unwrap();
        assert_eq!(vllm.tag_for(&["VLLM_REF=v0.11.0".into()]), "debug-ima/vllm:v0.11.0");
        assert_eq!(vllm.tag_for(&["VLLM_REF=feature/x y".into()]), "debug-ima/vllm:feature-x-y");
        assert_eq!(vllm.tag_for(&[]), "debug-ima/vllm:main");
        let cuda = ImageDef::find("cuda").unwrap();
        assert_eq!(
            cuda.build_argv(Runtime::Podman, Path::new("/r/containers"), "t:1", &["A=1".into()]).join(" "),
            "podman build -f /r/containers/cuda.Containerfile -t t:1 --build-arg A=1 /r/containers"
        );
        assert_eq!(ImageDef::find("pytorch").unwrap().base, Some("cuda"));
        assert_eq!(ImageDef::find("x"), None);
    }
}

//! Doctor's container half: the probes of a runtime, an image and the GPU plumbing
//! ([`probe_container`], [`probe_plumbing`], the script run inside the image), and the
//! checks made from what they saw. Its public items are re-exported by `doctor`.
//!
//! Must not: print, or pull an image; the probe's container is started with `--rm` and
//! removed by name if it outlives its timeout.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use crate::launch::container::RuntimeArgv;
use crate::launch::images;
use crate::model::{Exit, Need, Runtime};

use super::checks::*;
use super::facts::*;
use super::report::*;
use crate::process::short::Output;

/// The script the doctor runs inside the image (`sh -c`): one `key=value` line per finding,
/// between `probe=debug-ima-doctor 1` and `end=ok`, for [`parse_image_probe`]:
///
/// - `id=` the uid the image runs as (`id -u`), `path=` its `PATH`;
/// - per tool (`nvcc`, `cuobjdump`, `cuda-gdb`, `compute-sanitizer`): `TOOL=` where it was
///   found (on `PATH`, then in `$CUDA_HOME/bin`, `/usr/local/cuda/bin`, and for
///   compute-sanitizer `.../compute-sanitizer`; empty when nowhere), then, when found,
///   `TOOL_exit=` the exit status of `TOOL --version` and `TOOL_out=` each of its first 20
///   non-blank output lines;
/// - `libcudadebugger=` each copy of the driver's debugger back-end, from `ldconfig -p` and
///   the directories of `LD_LIBRARY_PATH`, `/usr/lib/x86_64-linux-gnu`,
///   `/usr/lib/aarch64-linux-gnu`, `/usr/lib64`, `/usr/local/nvidia/lib64` and
///   `/.singularity.d/libs` (where the runtimes mount the driver's libraries);
/// - `tmp=writable` or `tmp=not writable`: whether a file can be created in `/tmp` (the
///   rungs' `TMPDIR` there); it is removed at once.
///
/// Plain POSIX `sh` with no other tool needed (busybox and distro images alike).
pub const IMAGE_PROBE_SCRIPT: &str = r#"set -f
echo "probe=debug-ima-doctor 1"
echo "id=$(id -u 2>/dev/null)"
echo "path=$PATH"
tool() {
  n=$1
  shift
  p=$(command -v "$n" 2>/dev/null)
  case $p in /*) ;; *) p= ;; esac
  if [ -z "$p" ]; then
    for d in "$@"; do
      if [ -f "$d/$n" ] && [ -x "$d/$n" ]; then p=$d/$n; break; fi
    done
  fi
  echo "$n=$p"
  [ -n "$p" ] || return 0
  o=$("$p" --version 2>&1 </dev/null)
  echo "${n}_exit=$?"
  printf '%s\n' "$o" | {
    k=0
    while [ $k -lt 20 ] && IFS= read -r l; do
      [ -n "$l" ] && printf '%s_out=%s\n' "$n" "$l"
      k=$((k + 1))
    done
  }
}
c=${CUDA_HOME:-/usr/local/cuda}
tool nvcc "$c/bin" /usr/local/cuda/bin
tool cuobjdump "$c/bin" /usr/local/cuda/bin
tool cuda-gdb "$c/bin" /usr/local/cuda/bin
tool compute-sanitizer "$c/bin" /usr/local/cuda/bin "$c/compute-sanitizer" /usr/local/cuda/compute-sanitizer
tool py-spy
for l in ldconfig /sbin/ldconfig /usr/sbin/ldconfig; do
  if command -v "$l" >/dev/null 2>&1; then
    "$l" -p 2>/dev/null | while IFS= read -r e; do
      case $e in *"libcudadebugger.so.1 "*"=> "*) echo "libcudadebugger=${e##*=> }" ;; esac
    done
    break
  fi
done
IFS=:
for d in $LD_LIBRARY_PATH /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 \
  /usr/local/nvidia/lib64 /.singularity.d/libs; do
  if [ -n "$d" ] && [ -e "$d/libcudadebugger.so.1" ]; then echo "libcudadebugger=$d/libcudadebugger.so.1"; fi
done
unset IFS
t=/tmp/.debug-ima-doctor-$$
if (: >"$t") 2>/dev/null; then rm -f "$t"; echo "tmp=writable"; else echo "tmp=not writable"; fi
echo "end=ok"
"#;

/// The tools the probe in the image looks for, in check order.
pub(super) const IMAGE_TOOLS: [&str; 4] = ["nvcc", "cuobjdump", "cuda-gdb", "compute-sanitizer"];
/// Where the NVIDIA Container Toolkit writes its CDI specs (`nvidia-ctk cdi generate`).
pub const CDI_SPECS: [&str; 4] =
    ["/etc/cdi/nvidia.yaml", "/etc/cdi/nvidia.json", "/var/run/cdi/nvidia.yaml", "/var/run/cdi/nvidia.json"];
/// Apptainer's list of the driver's libraries that `--nv` binds in.
pub const NVLIBLIST: [&str; 2] = ["/etc/apptainer/nvliblist.conf", "/usr/local/etc/apptainer/nvliblist.conf"];

/// The command that runs `script` inside the image: `docker run --rm --name NAME
/// --pull=never --network=none [GPUs] --entrypoint sh IMAGE -c SCRIPT` (Podman alike; the
/// name lets a container that outlives its timeout be removed), `apptainer exec --cleanenv
/// [--nv] IMAGE sh -c SCRIPT`. Empty for [`Runtime::None`].
pub fn image_probe_argv(target: &ContainerTarget, name: &str, script: &str) -> Vec<String> {
    let mut argv: Vec<String> = Vec::new();
    match target.runtime {
        Runtime::Docker | Runtime::Podman => {
            argv.extend(
                [target.runtime.name(), "run", "--rm", "--name", name, "--pull=never", "--network=none"]
                    .map(String::from),
            );
            if target.gpus {
                argv.extend(target.runtime.gpu_args());
            }
            argv.extend(["--entrypoint", "sh", &target.image, "-c", script].map(String::from));
        }
        Runtime::Apptainer => {
            argv.extend(["apptainer", "exec", "--cleanenv"].map(String::from));
            if target.gpus {
                argv.extend(target.runtime.gpu_args());
            }
            argv.extend([&target.image, "sh", "-c", script].map(String::from));
        }
        Runtime::None => {}
    }
    argv
}

/// Whether an Apptainer image names a remote one (`docker://`, `oras://`, `library://`):
/// pulled when first run, so nothing local to check.
pub(super) fn is_image_uri(image: &str) -> bool {
    image.split_once("://").is_some_and(|(scheme, _)| !scheme.is_empty() && !scheme.contains('/'))
}

/// A program on PATH, else in `/usr/bin` (no CUDA directories: for runtimes and the
/// container toolkit).
pub(super) fn on_path(probe: &dyn Probe, name: &str) -> Option<PathBuf> {
    let path = probe.env("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .filter(|d| !d.is_empty())
        .chain(["/usr/bin"])
        .map(|d| Path::new(d).join(name))
        .find(|p| probe.is_executable(p));
    found
}

/// Runs `argv` (its first word located with [`on_path`] as `client`).
pub(super) fn run_argv(probe: &dyn Probe, client: &Path, argv: &[String], timeout: Duration) -> Output {
    let args: Vec<&str> = argv.iter().skip(1).map(String::as_str).collect();
    probe.run(client, &args, timeout)
}

/// The runtime, then the image, then (when both answered and `in_image_checks` or the
/// ptrace check need it) the probe inside the image: one after the other, since each
/// needs the one before.
pub(super) fn probe_container(
    probe: &dyn Probe,
    target: &ContainerTarget,
    in_image_checks: Vec<String>,
    uid_wanted: bool,
) -> ContainerFacts {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let runtime = target.runtime;
    let client = on_path(probe, runtime.name());
    let version = client.as_deref().map(|c| run_argv(probe, c, &runtime.version(), PROBE_TIMEOUT));
    let answered = version.as_ref().is_some_and(Output::success);
    let uri = runtime == Runtime::Apptainer && is_image_uri(&target.image);
    let (image_is_file, image_is_dir) = if runtime == Runtime::Apptainer && !uri {
        let p = Path::new(&target.image);
        (probe.is_file(p), probe.is_dir(p))
    } else {
        (false, false)
    };
    let inspect = match (runtime, client.as_deref(), answered) {
        (Runtime::Docker | Runtime::Podman, Some(c), true) => {
            Some(run_argv(probe, c, &runtime.inspect_image(&target.image), PROBE_TIMEOUT))
        }
        _ => None,
    };
    let image_ok = match runtime {
        Runtime::Docker | Runtime::Podman => inspect.as_ref().is_some_and(Output::success),
        _ => image_is_file || image_is_dir,
    };
    let mut in_image = None;
    if let (Some(c), true, true) =
        (client.as_deref(), answered && image_ok, !in_image_checks.is_empty() || uid_wanted)
    {
        let name = format!("debug-ima-doctor-{}-{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed));
        let out =
            run_argv(probe, c, &image_probe_argv(target, &name, IMAGE_PROBE_SCRIPT), IMAGE_PROBE_TIMEOUT);
        if out.exit == Exit::TimedOut && runtime != Runtime::Apptainer {
            // Killing the client leaves the container running: remove it by name.
            let rm = [runtime.name(), "rm", "-f", &name].map(String::from);
            let _ = run_argv(probe, c, &rm, PROBE_TIMEOUT);
        }
        in_image = Some(out);
    }
    ContainerFacts {
        target: target.clone(),
        client,
        version,
        inspect,
        image_is_file,
        image_is_dir,
        plumbing: None,
        in_image_checks,
        in_image,
    }
}

pub(super) fn probe_plumbing(probe: &dyn Probe, runtime: Runtime) -> PlumbingFacts {
    let toolkit =
        ["nvidia-ctk", "nvidia-container-cli"].into_iter().filter_map(|n| on_path(probe, n)).collect();
    let cdi_specs = CDI_SPECS.iter().map(PathBuf::from).filter(|p| probe.is_file(p)).collect();
    let docker_runtimes = match (runtime, on_path(probe, "docker")) {
        (Runtime::Docker, Some(docker)) => {
            Some(probe.run(&docker, &["info", "--format", "{{json .Runtimes}}"], PROBE_TIMEOUT))
        }
        _ => None,
    };
    let nvliblist = if runtime == Runtime::Apptainer {
        NVLIBLIST
            .iter()
            .filter_map(|p| probe.read_file(Path::new(p)).map(|t| (PathBuf::from(p), t)))
            .collect()
    } else {
        Vec::new()
    };
    PlumbingFacts { toolkit, docker_runtimes, cdi_specs, nvliblist }
}

// ---------------------------------------------------------------------------------------
// The container: runtime, image, GPU plumbing, and the tools inside the image
// ---------------------------------------------------------------------------------------

/// What [`IMAGE_PROBE_SCRIPT`] printed inside the image, read by [`parse_image_probe`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ImageProbe {
    /// The uid the image runs as (`id -u`).
    pub uid: Option<u32>,
    /// The image's `PATH`.
    pub path: Option<String>,
    /// `nvcc`, `cuobjdump`, `cuda-gdb`, `compute-sanitizer`, in the order printed.
    pub tools: Vec<ImageTool>,
    /// Every `libcudadebugger.so.1` found, first the `ldconfig -p` cache's, without repeats.
    pub libcudadebugger: Vec<PathBuf>,
    /// Whether a file could be created in `/tmp`.
    pub tmp_writable: Option<bool>,
}

impl ImageProbe {
    pub fn tool(&self, name: &str) -> Option<&ImageTool> {
        self.tools.iter().find(|t| t.name == name)
    }
}

/// One tool as the probe found it in the image.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ImageTool {
    pub name: String,
    /// Where it is; `None` when it is nowhere.
    pub path: Option<PathBuf>,
    /// The exit status of `TOOL --version`.
    pub exit: Option<i32>,
    /// Its first non-blank output lines.
    pub output: Vec<String>,
}

/// Reads the `key=value` lines [`IMAGE_PROBE_SCRIPT`] prints. `None` unless both its first
/// line (`probe=debug-ima-doctor 1`) and its last (`end=ok`) are there: anything else (a
/// runtime's error, a cut-off run) is not a probe's answer. Lines before the first, unknown
/// keys and lines without `=` are skipped.
pub fn parse_image_probe(text: &str) -> Option<ImageProbe> {
    let mut started = false;
    let mut ended = false;
    let mut p = ImageProbe::default();
    for line in text.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else { continue };
        if !started {
            started = key == "probe" && value == "debug-ima-doctor 1";
            continue;
        }
        match key {
            "end" => {
                ended = value == "ok";
                break;
            }
            "id" => p.uid = value.trim().parse().ok(),
            "path" => p.path = Some(value.to_string()),
            "tmp" => {
                p.tmp_writable = match value {
                    "writable" => Some(true),
                    "not writable" => Some(false),
                    _ => None,
                }
            }
            "libcudadebugger" => {
                let lib = PathBuf::from(value.trim());
                if !value.trim().is_empty() && !p.libcudadebugger.contains(&lib) {
                    p.libcudadebugger.push(lib);
                }
            }
            _ if IMAGE_TOOLS.contains(&key) => {
                let path = Some(value.trim()).filter(|v| !v.is_empty()).map(PathBuf::from);
                p.tools.retain(|t| t.name != key);
                p.tools.push(ImageTool { name: key.to_string(), path, ..ImageTool::default() });
            }
            _ => {
                let Some((name, field)) = key.rsplit_once('_') else { continue };
                let Some(tool) = p.tools.iter_mut().find(|t| t.name == name) else { continue };
                match field {
                    "exit" => tool.exit = value.trim().parse().ok(),
                    "out" => tool.output.push(value.to_string()),
                    _ => {}
                }
            }
        }
    }
    (started && ended).then_some(p)
}

/// Why the checks inside the image could not be made: their status (`Missing`, or `Warn`
/// for an Apptainer URI that is pulled later), detail and fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotChecked {
    pub status: Status,
    pub detail: String,
    pub fix: String,
}

/// `docker run --rm [--gpus all] --entrypoint sh IMAGE -c true`: a command for people to
/// try the container with.
pub(super) fn try_container_cmd(target: &ContainerTarget) -> String {
    let gpus = if target.gpus { format!(" {}", target.runtime.gpu_args().join(" ")) } else { String::new() };
    match target.runtime {
        Runtime::Apptainer => format!("apptainer exec{gpus} {} sh -c true", target.image),
        rt => format!("{} run --rm{gpus} --entrypoint sh {} -c true", rt.name(), target.image),
    }
}

/// `docker run --rm --entrypoint TOOL IMAGE ARGS`, `apptainer exec IMAGE TOOL ARGS`.
pub(super) fn in_image_cmd(target: &ContainerTarget, tool: &str, args: &str) -> String {
    match target.runtime {
        Runtime::Apptainer => format!("apptainer exec {} {tool} {args}", target.image),
        rt => format!("{} run --rm --entrypoint {tool} {} {args}", rt.name(), target.image),
    }
}

/// The probe's answer, or why there is none: the runtime or the image is missing (then it
/// was not run), an Apptainer URI (not pulled to look inside), or the run failed.
pub fn image_probe_outcome(
    c: &ContainerFacts,
    runtime: &Check,
    image: &Check,
) -> Result<ImageProbe, NotChecked> {
    let name = c.target.image.as_str();
    if runtime.status == Status::Missing {
        return Err(NotChecked {
            status: Status::Missing,
            detail: format!("not checked in `{name}`: the runtime is missing ({})", runtime.detail),
            fix: "fix the `runtime` check first".to_string(),
        });
    }
    if image.status == Status::Missing {
        return Err(NotChecked {
            status: Status::Missing,
            detail: format!("not checked in `{name}`: the image is missing ({})", image.detail),
            fix: "fix the `image` check first".to_string(),
        });
    }
    if c.target.runtime == Runtime::Apptainer && is_image_uri(name) {
        return Err(NotChecked {
            status: Status::Warn,
            detail: format!("not checked in `{name}`: a remote image, pulled when the ladder first runs it"),
            fix: image.fix.clone().unwrap_or_default(),
        });
    }
    let Some(out) = &c.in_image else {
        return Err(NotChecked {
            status: Status::Missing,
            detail: format!("not checked in `{name}`: the probe was not run"),
            fix: format!("run `{}` and fix what it reports", try_container_cmd(&c.target)),
        });
    };
    if let Some(found) = parse_image_probe(&out.stdout) {
        return Ok(found);
    }
    let how = match out.exit {
        Exit::TimedOut => format!("no answer within {} s", IMAGE_PROBE_TIMEOUT.as_secs()),
        _ => out.describe_exit(),
    };
    let text = out.text();
    let hint = if text.contains("could not select device driver") {
        ": Docker has no NVIDIA Container Toolkit to pass the GPUs in (see the `gpu-plumbing` check)"
    } else if text.contains("executable file not found") || text.contains("sh: not found") {
        ": the image needs a POSIX `sh`"
    } else {
        ""
    };
    Err(NotChecked {
        status: Status::Missing,
        detail: format!("not checked in `{name}`: the probe failed ({how}): {}", out.first_line()),
        fix: format!("run `{}` and fix what it reports{hint}", try_container_cmd(&c.target)),
    })
}

/// How to install a runtime.
pub(super) fn install_runtime_fix(runtime: Runtime) -> String {
    let how = match runtime {
        Runtime::Docker => "install Docker Engine (https://docs.docker.com/engine/install/)",
        Runtime::Podman => "install Podman (`apt-get install podman`)",
        _ => "install Apptainer (https://apptainer.org/docs/admin/main/installation.html)",
    };
    format!("{how}, or choose another runtime with `--container docker|podman|apptainer`")
}

/// The runtime's client is found and answers its version command (Docker: the daemon
/// answers, `docker version --format {{.Server.Version}}`).
pub fn check_runtime(facts: &ContainerFacts) -> Check {
    let rt = facts.target.runtime;
    let name = rt.name();
    let check = |status, detail: String| Check::new("runtime", status, detail, Need::Container);
    let Some(client) = &facts.client else {
        return check(Status::Missing, format!("`{name}` not found on PATH")).fix(install_runtime_fix(rt));
    };
    let cmd = rt.version().join(" ");
    let Some(out) = &facts.version else {
        return check(Status::Missing, format!("`{cmd}` was not run")).fix(format!("run `{cmd}`"));
    };
    let text = out.text();
    let line_with = |needle: &str| text.lines().find(|l| l.contains(needle)).unwrap_or("").trim().to_string();
    let mut result = if out.success() && first_line(&out.stdout).is_some() {
        let line = first_line(&out.stdout).unwrap_or("");
        let version = line.strip_prefix(&format!("{name} version ")).unwrap_or(line).trim();
        let mut c = check(Status::Ok, format!("{name} {version} at {}", client.display()));
        c.version = Some(format!("{name} {version}"));
        c
    } else if text.contains("Cannot connect to the Docker daemon") {
        check(
            Status::Missing,
            format!(
                "the Docker daemon does not answer: {}",
                line_with("Cannot connect to the Docker daemon")
            ),
        )
        .fix(
            "start it (`sudo systemctl start docker`), or check where the client looks (`DOCKER_HOST`, \
             `docker context ls`)",
        )
    } else if text.contains("permission denied while trying to connect to the Docker daemon") {
        check(
            Status::Missing,
            format!("no permission to use the Docker daemon: {}", line_with("permission denied")),
        )
        .fix(
            "run as a user in the `docker` group (`sudo usermod -aG docker $USER`, then log in again) or \
             as root",
        )
    } else if out.exit == Exit::TimedOut {
        check(Status::Missing, format!("`{cmd}` did not answer within {} s", PROBE_TIMEOUT.as_secs())).fix(
            format!(
                "run `{cmd}` and fix what it reports (is the daemon hung? `sudo systemctl status {name}`)"
            ),
        )
    } else {
        let first =
            if out.success() { "printed no version".to_string() } else { out.first_line().to_string() };
        check(Status::Missing, format!("`{cmd}` failed ({}): {first}", out.describe_exit()))
            .fix(format!("run `{cmd}` and fix what it reports"))
    };
    result.path = Some(client.clone());
    result
}

/// The name of a project image under `containers/` (`debug-ima/cuda:13.0` is `cuda`).
pub(super) fn project_image(image: &str) -> Option<&str> {
    let rest = image.strip_prefix("debug-ima/")?;
    let name = rest.split([':', '@']).next()?;
    ["cuda", "pytorch", "vllm"].contains(&name).then_some(name)
}

/// How to get a missing image: the project's own are built, others pulled.
pub(super) fn image_missing_fix(runtime: Runtime, image: &str) -> String {
    match (runtime, project_image(image)) {
        (Runtime::Apptainer, _) => format!(
            "build the `.sif` from a Docker image: `apptainer build debug-ima-cuda.sif \
             docker-daemon://debug-ima/cuda:13.0` (see {}), or give the path of an existing one",
            images::readme()
        ),
        (rt, Some(name)) => {
            let flag = if rt == Runtime::Podman { " --runtime podman" } else { "" };
            format!(
                "build it: `cargo xtask container build {name}{flag}` (the project's images, {})",
                images::readme()
            )
        }
        (rt, None) => format!(
            "pull it: `{} pull {image}`, or build one of the project's images (`cargo xtask container build \
             cuda`, see {})",
            rt.name(),
            images::readme()
        ),
    }
}

/// The image exists locally (Docker/Podman: `image inspect`; Apptainer: the file or sandbox
/// directory exists, a `docker://`/`oras://` URI is a warning: it is pulled when run).
pub fn check_image(c: &ContainerFacts, runtime: &Check) -> Check {
    let rt = c.target.runtime;
    let image = c.target.image.as_str();
    let check = |status, detail: String| Check::new("image", status, detail, Need::Container);
    if rt == Runtime::Apptainer {
        return if is_image_uri(image) {
            check(Status::Warn, format!("`{image}` is pulled when the ladder first runs it")).fix(format!(
                "pull it once into a file and check that: `apptainer pull image.sif {image}`, then \
                 `--image image.sif`"
            ))
        } else if c.image_is_file {
            check(Status::Ok, format!("`{image}`, an image file"))
        } else if c.image_is_dir {
            check(Status::Ok, format!("`{image}`, a sandbox directory"))
        } else {
            check(Status::Missing, format!("`{image}` does not exist")).fix(image_missing_fix(rt, image))
        };
    }
    let Some(out) = &c.inspect else {
        let why = if runtime.status == Status::Missing {
            format!("the runtime is missing ({})", runtime.detail)
        } else {
            "`image inspect` was not run".to_string()
        };
        return check(Status::Missing, format!("not checked: {why}")).fix("fix the `runtime` check first");
    };
    let text = out.text();
    let id_line = out.stdout.trim();
    if out.success() && !id_line.is_empty() {
        let (id, digests) = crate::launch::container::parse_inspect(id_line);
        let id = id.unwrap_or_default();
        let digests = digests.join(",");
        let from = if digests.is_empty() {
            " (local, no registry digest)".to_string()
        } else {
            format!(" ({digests})")
        };
        let mut c = check(Status::Ok, format!("`{image}` is {id}{from}"));
        c.version = Some(id.to_string());
        return c;
    }
    if text.to_ascii_lowercase().contains("no such image") {
        return check(Status::Missing, format!("`{image}` is not among {}'s local images", rt.name()))
            .fix(image_missing_fix(rt, image));
    }
    let cmd = format!("{} image inspect {image}", rt.name());
    check(Status::Missing, format!("`{cmd}` failed ({}): {}", out.describe_exit(), out.first_line()))
        .fix(format!("run `{cmd}` and fix what it reports"))
}

/// The runtime names in `docker info --format '{{json .Runtimes}}'` (`runc`, `nvidia`, ...).
pub(super) fn docker_runtime_names(out: &Output) -> Option<Vec<String>> {
    let map: BTreeMap<String, serde_json::Value> =
        serde_json::from_str(out.stdout.trim()).ok().filter(|_| out.success())?;
    Some(map.into_keys().collect())
}

/// What passes the GPUs in: Docker, the NVIDIA Container Toolkit (`nvidia-ctk` or
/// `nvidia-container-cli`, an `nvidia` runtime of the daemon, or a CDI spec); Podman, a CDI
/// spec; Apptainer, `nvidia-container-cli` or an `nvliblist.conf` (a warning when that one
/// does not list `libcudadebugger.so`, apptainer/apptainer#2261).
pub fn check_gpu_plumbing(runtime: Runtime, p: &PlumbingFacts) -> Check {
    let check = |status, detail: String| Check::new("gpu-plumbing", status, detail, Need::Container);
    let shown = |v: &[PathBuf]| v.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    let toolkit = shown(&p.toolkit);
    let install =
        "install the NVIDIA Container Toolkit (`apt-get install nvidia-container-toolkit` from NVIDIA's \
                   repository)";
    let cdi_fix = "`sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`";
    match runtime {
        Runtime::Docker => {
            let mut found: Vec<String> = Vec::new();
            if !p.toolkit.is_empty() {
                found.push(format!("NVIDIA Container Toolkit at {toolkit}"));
            }
            let runtimes = p.docker_runtimes.as_ref().and_then(docker_runtime_names);
            let nvidia: Vec<&String> = runtimes.iter().flatten().filter(|r| r.contains("nvidia")).collect();
            if !nvidia.is_empty() {
                let names: Vec<&str> = nvidia.iter().map(|s| s.as_str()).collect();
                found.push(format!("docker runtime {}", names.join(", ")));
            }
            if !p.cdi_specs.is_empty() {
                found.push(format!("CDI spec {}", shown(&p.cdi_specs)));
            }
            if !found.is_empty() {
                return check(Status::Ok, format!("{} (`--gpus all`)", found.join("; ")));
            }
            let daemon = match (&p.docker_runtimes, &runtimes) {
                (_, Some(r)) => format!("docker's runtimes are {}", r.join(", ")),
                (Some(o), None) => format!("`docker info` failed ({})", o.describe_exit()),
                (None, None) => "`docker info` was not run".to_string(),
            };
            check(
                Status::Missing,
                format!(
                    "no NVIDIA Container Toolkit: `nvidia-ctk` and `nvidia-container-cli` not on PATH, {daemon}, \
                     no CDI spec ({}): `docker run --gpus all` fails",
                    CDI_SPECS.join(", ")
                ),
            )
            .fix(format!(
                "{install}, then `sudo nvidia-ctk runtime configure --runtime=docker` and `sudo systemctl \
                 restart docker`"
            ))
        }
        Runtime::Podman => {
            if !p.cdi_specs.is_empty() {
                return check(
                    Status::Ok,
                    format!("CDI spec {} (`--device nvidia.com/gpu=all`)", shown(&p.cdi_specs)),
                );
            }
            let has_ctk = p.toolkit.iter().any(|t| t.ends_with("nvidia-ctk"));
            let fix = if has_ctk {
                format!("generate it: {cdi_fix}")
            } else {
                format!("{install}, then {cdi_fix}")
            };
            check(
                Status::Missing,
                format!(
                    "no CDI spec for the GPUs ({}): `podman run --device nvidia.com/gpu=all` fails",
                    CDI_SPECS.join(", ")
                ),
            )
            .fix(fix)
        }
        _ => {
            let cli: Vec<&PathBuf> =
                p.toolkit.iter().filter(|t| t.ends_with("nvidia-container-cli")).collect();
            let lists_debugger = |text: &str| {
                text.lines()
                    .map(str::trim)
                    .any(|l| !l.starts_with('#') && l.starts_with("libcudadebugger.so"))
            };
            let good_list = p.nvliblist.iter().find(|(_, text)| lists_debugger(text));
            if let Some(cli) = cli.first() {
                return check(Status::Ok, format!("`nvidia-container-cli` at {} (`--nv`)", cli.display()));
            }
            if let Some((path, _)) = good_list {
                return check(Status::Ok, format!("{} lists libcudadebugger.so (`--nv`)", path.display()));
            }
            if let Some((path, _)) = p.nvliblist.first() {
                return check(
                    Status::Warn,
                    format!(
                        "only {}, which does not list libcudadebugger.so: `--nv` leaves out cuda-gdb's back-end \
                         (apptainer/apptainer#2261), and the attach rung fails",
                        path.display()
                    ),
                )
                .fix(format!(
                    "add a line `libcudadebugger.so` to {} (newer Apptainer releases list it), or {install} for \
                     `nvidia-container-cli`",
                    path.display()
                ));
            }
            check(
                Status::Missing,
                format!(
                    "neither `nvidia-container-cli` on PATH nor an nvliblist.conf ({}): `apptainer exec --nv` \
                     cannot bind the driver's libraries",
                    NVLIBLIST.join(", ")
                ),
            )
            .fix(format!("reinstall Apptainer (it ships nvliblist.conf), or {install}"))
        }
    }
}

/// The fix for a tool the image lacks.
pub(super) fn image_lacks_fix(tool: &str, image: &str) -> String {
    if tool == "py-spy" {
        return format!(
            "the image `{image}` lacks py-spy: add `RUN pip install py-spy` to its Containerfile; without it \
             the hang rung takes no Python host stacks"
        );
    }
    format!(
        "the image `{image}` lacks {tool}: build it on an `nvidia/cuda:*-devel` base, which has nvcc, \
         cuobjdump, cuda-gdb and compute-sanitizer (the project's images do: `cargo xtask container build \
         cuda`, see {})",
        images::readme()
    )
}

/// The same checks as the host's (`nvcc`, `cuobjdump`, `cuda-gdb`, `compute-sanitizer`,
/// `cuda-debugger-backend`, `tmpdir`), made from the probe inside the image; with no probe
/// answer, `not checked` with the reason.
pub fn check_in_image(
    name: &str,
    target: &ContainerTarget,
    outcome: &Result<ImageProbe, NotChecked>,
) -> Check {
    let (need, absent) = tool_need(name);
    let found = match outcome {
        Ok(found) => found,
        Err(nc) => return Check::new(name, nc.status, nc.detail.clone(), need).fix(nc.fix.clone()),
    };
    let image = target.image.as_str();
    match name {
        "cuda-debugger-backend" => check_image_backend(target, found),
        "tmpdir" => match found.tmp_writable {
            Some(true) => Check::new(
                name,
                Status::Ok,
                format!(
                    "in {image}: /tmp writable; the rungs get TMPDIR=/tmp there, cuda-gdb and the target \
                     alike"
                ),
                need,
            ),
            _ => Check::new(
                name,
                Status::Missing,
                format!("in {image}: /tmp is missing or not writable"),
                need,
            )
            .fix(format!(
                "cuda-gdb and the target use /tmp in the container: give the image a writable /tmp (`RUN \
                     mkdir -m 1777 /tmp` in its Containerfile; `{image}` lacks it)"
            )),
        },
        _ => {
            let Some(tool) = found.tool(name) else {
                return Check::new(
                    name,
                    absent,
                    format!("in {image}: the probe did not report {name}"),
                    need,
                )
                .fix(image_lacks_fix(name, image));
            };
            let Some(path) = &tool.path else {
                let dirs = if name == "compute-sanitizer" {
                    "$CUDA_HOME/bin, /usr/local/cuda/bin, /usr/local/cuda/compute-sanitizer"
                } else {
                    "$CUDA_HOME/bin, /usr/local/cuda/bin"
                };
                let detail = format!("in {image}: `{name}` not found on PATH nor in {dirs}");
                return Check::new(name, absent, detail, need).fix(image_lacks_fix(name, image));
            };
            let shown = path.display().to_string();
            let text = tool.output.join("\n");
            let first = tool.output.first().map(String::as_str).unwrap_or("no output");
            let mut c = if tool.exit != Some(0) {
                let exit = tool.exit.map_or("no exit status".to_string(), |e| format!("exit {e}"));
                let detail = format!("in {image}: `{shown} --version` failed ({exit}): {first}");
                Check::new(name, absent, detail, need).fix(format!(
                        "run `{}` and fix what it reports, or rebuild the image on an `nvidia/cuda:*-devel` base \
                         (see {})",
                        in_image_cmd(target, &shown, "--version"),
                        images::readme()
                    ))
            } else {
                match parse_version(name, &text) {
                    Some((line, short)) => {
                        let detail = format!("in {image}: {short} at {shown}");
                        let mut c = Check::new(name, Status::Ok, detail, need);
                        c.version = Some(line);
                        c
                    }
                    None => Check::new(
                        name,
                        Status::Warn,
                        format!("in {image}: `{shown} --version` printed no version line: {first}"),
                        need,
                    )
                    .fix(format!("check that `{shown}` in the image is NVIDIA's {name}")),
                }
            };
            let dir = path.parent().map(|d| d.display().to_string()).unwrap_or_default();
            let on_path = found.path.as_deref().is_some_and(|p| p.split(':').any(|d| d == dir));
            if !on_path && c.status != Status::Missing {
                c.status = Status::Warn;
                c.detail.push_str(" (not on the image's PATH)");
                c.fix = Some(format!(
                    "put {dir} on the image's PATH: add `ENV PATH={dir}:$PATH` to its Containerfile"
                ));
            }
            c.path = Some(path.clone());
            c
        }
    }
}

/// `libcudadebugger.so.1` inside the image: the runtime mounts it with the driver's
/// libraries when the GPUs are passed in; without them it cannot be checked (a warning).
pub fn check_image_backend(target: &ContainerTarget, found: &ImageProbe) -> Check {
    let name = "cuda-debugger-backend";
    let image = target.image.as_str();
    if !target.gpus {
        return Check::new(
            name,
            Status::Warn,
            format!(
                "in {image}: not checked: the container gets no GPU here, so the runtime mounts none of the \
                 driver's libraries"
            ),
            Need::DebuggerBackend,
        )
        .fix("check with the GPUs passed in: `cargo xtask doctor --container RUNTIME --image IMAGE`");
    }
    if let Some(first) = found.libcudadebugger.first() {
        let n = found.libcudadebugger.len();
        let more = if n > 1 { format!(" (+{} more)", n - 1) } else { String::new() };
        let mut c = Check::new(
            name,
            Status::Ok,
            format!("in {image}: libcudadebugger.so.1 at {}{more}", first.display()),
            Need::DebuggerBackend,
        );
        c.path = Some(first.clone());
        return c;
    }
    let how = match target.runtime {
        Runtime::Apptainer => {
            "add `libcudadebugger.so` to Apptainer's nvliblist.conf (apptainer/apptainer#2261, see \
                               the `gpu-plumbing` check)"
                .to_string()
        }
        Runtime::Podman => {
            "update the NVIDIA Container Toolkit and regenerate the CDI spec (`sudo nvidia-ctk cdi \
                            generate --output=/etc/cdi/nvidia.yaml`)"
                .to_string()
        }
        _ => "update the NVIDIA Container Toolkit (it mounts the driver's compute libraries)".to_string(),
    };
    Check::new(
        name,
        Status::Warn,
        format!(
            "in {image}: libcudadebugger.so.1 is not in the image's `ldconfig -p` cache, its LD_LIBRARY_PATH nor \
             the driver library directories: the runtime did not inject the driver's debugger library"
        ),
        Need::DebuggerBackend,
    )
    .fix(format!(
        "cuda-gdb needs it to attach (`Could not find CUDA Debugger back-end`): {how}; the host's driver must \
         ship it (`ldconfig -p | grep libcudadebugger` on the host)"
    ))
}

/// The host's driver against the image's nvcc (see [`driver_toolkit`]).
pub fn check_image_driver_toolkit(
    gpu: &ToolFacts,
    target: &ContainerTarget,
    found: &ImageProbe,
) -> Option<Check> {
    let gpus = parse_gpus(&gpu.output.as_ref().filter(|o| o.success())?.stdout);
    let driver = &gpus.first()?.driver;
    let nvcc = found.tool("nvcc").filter(|t| t.exit == Some(0))?;
    let (_, short) = parse_version("nvcc", &nvcc.output.join("\n"))?;
    let release = short.split_whitespace().next()?;
    let mut c = driver_toolkit(driver, release)?;
    c.detail = format!("nvcc in {}: {}", target.image, c.detail);
    if c.status != Status::Ok {
        c.fix = Some(format!(
            "upgrade the host's driver to the release it names, or use an image whose CUDA the driver supports \
             (`nvidia-smi` shows the highest CUDA version it supports; `{}` has CUDA {release})",
            target.image
        ));
    }
    Some(c)
}

/// ptrace for the attach rung in a container. Docker and Podman run the target as root
/// with `--cap-add SYS_PTRACE`, so only `ptrace_scope` 3 blocks it, unless the image runs
/// as another user (`USER`), who does not hold the capability. Apptainer runs it as this
/// user in the host's PID namespace: the host's rules, as [`check_ptrace`] applies them.
pub fn check_ptrace_in_container(facts: &PtraceFacts, runtime: Runtime, image_uid: Option<u32>) -> Check {
    let scope = facts.ptrace_scope.as_deref().map(str::trim);
    if runtime == Runtime::Apptainer || runtime == Runtime::None || scope == Some("3") {
        let mut c = check_ptrace(facts);
        if runtime == Runtime::Apptainer {
            c.detail.push_str(" (Apptainer runs the target as this user, in the host's PID namespace)");
        }
        return c;
    }
    let c = |status, detail: String| Check::new("ptrace", status, detail, Need::Ptrace);
    let scope_text = scope.map_or("no Yama ptrace_scope".to_string(), |s| format!("ptrace_scope {s}"));
    match image_uid {
        Some(uid) if uid != 0 => {
            let fix = format!(
                "run the image as root (no `USER`, or `USER root`, in its Containerfile, as containers/ do), or \
                 lower the host's scope: `sudo sysctl kernel.yama.ptrace_scope=0`; the image runs as uid {uid}"
            );
            let detail = format!(
                "{scope_text} on the host, and the image runs as uid {uid}, who does not hold the container's \
                 SYS_PTRACE"
            );
            match scope {
                None | Some("0") => {
                    c(Status::Ok, format!("{scope_text} on the host: uid {uid} may attach to its own processes"))
                }
                Some("1") => c(Status::Warn, detail).fix(fix),
                _ => c(Status::Missing, detail).fix(fix),
            }
        }
        _ => c(
            Status::Ok,
            format!(
                "{scope_text} on the host: the container gets `--cap-add SYS_PTRACE` and runs as root, so only \
                 ptrace_scope 3 blocks it"
            ),
        ),
    }
}

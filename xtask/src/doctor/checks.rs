//! The host's checks, pure: facts in, [`Check`]s out, so the tests feed them outputs
//! recorded on a real H200 and on a machine without a GPU.
//!
//! Must not: probe, read files or print.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::model::{Exit, Need};

use super::facts::*;
use super::report::*;

/// The GPU and its driver, from `nvidia-smi --query-gpu`.
pub fn check_gpu(facts: &ToolFacts) -> Check {
    let missing = |detail: String, fix: &str| Check::new("gpu", Status::Missing, detail, Need::Gpu).fix(fix);
    let Some(out) = &facts.output else {
        return missing("`nvidia-smi` not found: no NVIDIA driver on this machine".to_string(), NO_GPU_FIX);
    };
    let path = facts.found.path().map(Path::to_path_buf);
    let text = out.text();
    let first = out.first_line().to_string();
    let mut check = if text.contains("couldn't communicate with the NVIDIA driver") {
        missing(
            format!("nvidia-smi: {first}"),
            "the NVIDIA driver is not loaded: check `lsmod | grep nvidia` and `dmesg | grep -i nvrm`, \
             reinstall the driver or reboot; in a container, start it with `--gpus all` (Docker) or \
             `--device nvidia.com/gpu=all` (Podman)",
        )
    } else if text.contains("Driver/library version mismatch") {
        missing(
            format!("nvidia-smi: {first}"),
            "the loaded kernel module and the driver's libraries differ (usually after a driver upgrade): \
             reboot, or unload and reload the `nvidia` modules",
        )
    } else if text.contains("No devices were found") {
        missing(
            format!("nvidia-smi: {first}"),
            "the driver sees no GPU: check `lspci | grep -i nvidia`; in a container, pass the GPUs in \
             (`--gpus all`, `--device nvidia.com/gpu=all`)",
        )
    } else if out.exit == Exit::TimedOut {
        missing(
            format!("`nvidia-smi` did not answer within {} s", PROBE_TIMEOUT.as_secs()),
            "the driver may be hung: look for Xid errors in `dmesg`; if `nvidia-smi` hangs too, the machine \
             needs a reset or a reboot",
        )
    } else if !out.success() {
        missing(
            format!("`nvidia-smi` failed ({}): {first}", out.describe_exit()),
            "run `nvidia-smi` and fix what it reports; the ladder needs a working driver",
        )
    } else {
        let gpus = parse_gpus(&out.stdout);
        if gpus.is_empty() {
            missing(
                format!(
                    "`nvidia-smi` listed no GPU: {}",
                    if first.is_empty() { "no output" } else { &first }
                ),
                "run `nvidia-smi` and fix what it reports; the ladder needs a working driver",
            )
        } else {
            let each: Vec<String> = gpus
                .iter()
                .map(|g| match &g.compute_cap {
                    Some(cc) => format!("{} (compute capability {cc}, {})", g.name, g.memory),
                    None => format!("{} ({})", g.name, g.memory),
                })
                .collect();
            let count = if gpus.len() == 1 { String::new() } else { format!("{} GPUs: ", gpus.len()) };
            let mut c = Check::new(
                "gpu",
                Status::Ok,
                format!("{count}{}, driver {}", each.join(", "), gpus[0].driver),
                Need::Gpu,
            );
            c.version = Some(
                out.stdout.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; "),
            );
            c
        }
    };
    check.path = path;
    check
}

/// A tool's version: the line as printed and a short form (`13.0 (V13.0.88)`).
pub fn parse_version(tool: &str, text: &str) -> Option<(String, String)> {
    for line in text.lines().map(str::trim) {
        let short = match tool {
            // `Cuda compilation tools, release 13.0, V13.0.88`
            "nvcc" | "cuobjdump" => line.strip_prefix("Cuda compilation tools, release ").map(|rest| {
                let mut parts = rest.split(", ");
                let release = parts.next().unwrap_or("").to_string();
                match parts.next() {
                    Some(build) => format!("{release} ({build})"),
                    None => release,
                }
            }),
            // `NVIDIA (R) cuda-gdb 13.0` (after the wrapper's `exec: ...` line)
            "cuda-gdb" => line.strip_prefix("NVIDIA (R) cuda-gdb ").map(|v| v.trim().to_string()),
            // `Version 2025.3.1.0 (build 36400806) (public-release)`
            "compute-sanitizer" => {
                line.strip_prefix("Version ").and_then(|v| v.split_whitespace().next()).map(str::to_string)
            }
            // `py-spy 0.4.3`
            "py-spy" => line.strip_prefix("py-spy ").map(|v| v.trim().to_string()),
            _ => None,
        };
        if let Some(short) = short.filter(|s| !s.is_empty()) {
            return Some((line.to_string(), short));
        }
    }
    None
}

/// How to install each tool (commands in backticks).
pub(super) fn install_fix(tool: &str) -> String {
    match tool {
        "nvcc" => "install the CUDA toolkit's compiler: `apt-get install cuda-nvcc-13-0` (match your CUDA \
                   version) from NVIDIA's repository, or use an `nvidia/cuda:*-devel` image; without a GPU, \
                   `pip install nvidia-cuda-nvcc nvidia-cuda-cuobjdump nvidia-cuda-runtime nvidia-cuda-crt` \
                   installs a working nvcc under `site-packages/nvidia/cu13/bin` (put it on PATH)"
            .to_string(),
        "cuobjdump" => "install it with the toolkit: `apt-get install cuda-cuobjdump-13-0` (match your CUDA \
                        version) or `pip install nvidia-cuda-cuobjdump`; without it the rebuild rung cannot \
                        confirm line info and cuda-gdb cannot disassemble"
            .to_string(),
        "cuda-gdb" => "install it: `apt-get install cuda-gdb-13-0` (match your CUDA version), or use an \
                       `nvidia/cuda:*-devel` image (`cuda-command-line-tools`); it is not published on PyPI"
            .to_string(),
        "compute-sanitizer" => {
            "install it: `apt-get install cuda-sanitizer-13-0` (match your CUDA version), \
                                or use an `nvidia/cuda:*-devel` image (`cuda-command-line-tools`)"
                .to_string()
        }
        "py-spy" => {
            "install it: `pip install py-spy` (a wheel from PyPI, nothing to compile); without it the \
                     hang rung goes on and takes no Python host stacks (the GPU dumps still say where the \
                     kernels spin)"
                .to_string()
        }
        _ => format!("install `{tool}`"),
    }
}

/// The rungs that need a check, and its status when what it checks is absent (cuobjdump
/// and the debugger back-end only warn).
pub(super) fn tool_need(name: &str) -> (Need, Status) {
    match name {
        "nvcc" => (Need::Nvcc, Status::Missing),
        "cuobjdump" => (Need::Cuobjdump, Status::Warn),
        "cuda-gdb" => (Need::CudaGdb, Status::Missing),
        "compute-sanitizer" => (Need::ComputeSanitizer, Status::Missing),
        "cuda-debugger-backend" => (Need::DebuggerBackend, Status::Warn),
        "py-spy" => (Need::PySpy, Status::Warn),
        "tmpdir" => (Need::Tmpdir, Status::Missing),
        _ => (Need::Gpu, Status::Missing),
    }
}

/// A CUDA tool, from where it was found and what `TOOL --version` printed.
pub fn check_tool(facts: &ToolFacts) -> Check {
    let name = facts.name.as_str();
    let (need, missing_status) = tool_need(name);
    let path = match &facts.found {
        Found::NotFound { searched } => {
            let searched: Vec<String> = searched.iter().map(|p| p.display().to_string()).collect();
            let detail = format!("`{name}` not found on PATH nor in {}", searched.join(", "));
            return Check::new(name, missing_status, detail, need).fix(install_fix(name));
        }
        found => found.path().unwrap_or(Path::new(name)).to_path_buf(),
    };
    let Some(out) = &facts.output else {
        let detail = format!("`{}` was not run", path.display());
        return Check::new(name, missing_status, detail, need).fix(install_fix(name));
    };
    let shown = path.display().to_string();
    let mut check = if !out.success() {
        Check::new(
            name,
            missing_status,
            format!("`{shown} --version` failed ({}): {}", out.describe_exit(), out.first_line()),
            need,
        )
        .fix(format!("run `{shown} --version` and fix what it reports, or reinstall: {}", install_fix(name)))
    } else {
        match parse_version(name, &out.text()) {
            Some((line, short)) => {
                let mut c = Check::new(name, Status::Ok, format!("{short} at {shown}"), need);
                c.version = Some(line);
                c
            }
            None => Check::new(
                name,
                Status::Warn,
                format!("`{shown} --version` printed no version line: {}", out.first_line()),
                need,
            )
            .fix(format!("check that `{shown}` is NVIDIA's {name}")),
        }
    };
    if let (Found::OffPath(p), true) = (&facts.found, check.status != Status::Missing) {
        let dir = p.parent().unwrap_or(Path::new("/")).display().to_string();
        check.status = Status::Warn;
        check.detail.push_str(" (not on PATH)");
        check.fix = Some(format!("found at `{shown}` but not on PATH: `export PATH={dir}:$PATH`"));
        check.off_path = true;
    }
    check.path = Some(path);
    check
}

/// A missing `nvcc` on a machine with a GPU: what `debug-ima` does without it, added to the
/// fix, so that doctor and the ladder say the same. The rebuild rung is skipped, but a recipe
/// whose build runs nvcc (the demo) cannot run at all: its every rung runs what it builds.
pub fn explain_missing_nvcc(nvcc: &mut Check) {
    if nvcc.status != Status::Missing {
        return;
    }
    let note = "without it `debug-ima` skips the rebuild rung, and refuses a recipe whose build step runs \
                `nvcc` (the demo, `--recipe demo`): every rung runs the target that build makes";
    nvcc.fix = Some(match nvcc.fix.take() {
        Some(fix) => format!("{fix}; {note}"),
        None => note.to_string(),
    });
}

/// The oldest driver branch a CUDA major release runs on (minor version compatibility):
/// 13.x needs 580, 12.x 525, 11.x 450.
pub(super) fn min_driver(cuda_major: u32) -> Option<u32> {
    match cuda_major {
        13 => Some(580),
        12 => Some(525),
        11 => Some(450),
        _ => None,
    }
}

/// Whether the driver can run what this nvcc builds. Only when both are known and
/// working; a warning, since a prebuilt target may not use this nvcc at all.
pub fn check_driver_toolkit(gpu: &ToolFacts, nvcc: &ToolFacts) -> Option<Check> {
    let gpus = parse_gpus(&gpu.output.as_ref().filter(|o| o.success())?.stdout);
    let driver = &gpus.first()?.driver;
    let (_, short) = parse_version("nvcc", &nvcc.output.as_ref().filter(|o| o.success())?.text())?;
    let release = short.split_whitespace().next()?;
    driver_toolkit(driver, release)
}

/// The same, on a driver version (`580.159.04`) and an nvcc release (`13.0`).
pub fn driver_toolkit(driver: &str, release: &str) -> Option<Check> {
    let driver_major: u32 = driver.split('.').next()?.parse().ok()?;
    let cuda_major: u32 = release.split('.').next()?.parse().ok()?;
    let need = min_driver(cuda_major)?;
    Some(if driver_major >= need {
        Check::new(
            "driver-toolkit",
            Status::Ok,
            format!("driver {driver} runs CUDA {release} programs (needs {need} or newer)"),
            Need::Gpu,
        )
    } else {
        Check::new(
            "driver-toolkit",
            Status::Warn,
            format!(
                "nvcc {release} needs driver {need} or newer, this one is {driver}: programs it builds fail \
                 with `CUDA driver version is insufficient for CUDA runtime version`"
            ),
            Need::Gpu,
        )
        .fix(format!(
            "upgrade the driver to {need} or newer, or put a CUDA toolkit no newer than the driver supports \
             first on PATH (`nvidia-smi` shows the highest CUDA version it supports)"
        ))
    })
}

/// `libcudadebugger.so.1`, which cuda-gdb loads to debug a live process.
pub fn check_debugger_backend(facts: &BackendFacts) -> Check {
    let name = "cuda-debugger-backend";
    let mut found: Vec<String> = Vec::new();
    if let Some(out) = facts.ldconfig.as_ref().filter(|o| o.success()) {
        for line in out.stdout.lines() {
            let line = line.trim();
            if line.starts_with("libcudadebugger.so.1 ") {
                if let Some((_, path)) = line.split_once("=> ") {
                    found.push(path.trim().to_string());
                }
            }
        }
    }
    for p in &facts.in_ld_library_path {
        let p = p.display().to_string();
        if !found.contains(&p) {
            found.push(p);
        }
    }
    if let Some(first) = found.first() {
        let more = if found.len() > 1 { format!(" (+{} more)", found.len() - 1) } else { String::new() };
        let mut c = Check::new(
            name,
            Status::Ok,
            format!("libcudadebugger.so.1 at {first}{more}"),
            Need::DebuggerBackend,
        );
        c.path = Some(PathBuf::from(first));
        return c;
    }
    let how = match &facts.ldconfig {
        None => "`ldconfig` not found; libcudadebugger.so.1 not in LD_LIBRARY_PATH".to_string(),
        Some(o) if !o.success() => {
            format!("`ldconfig -p` failed ({}); not in LD_LIBRARY_PATH", o.describe_exit())
        }
        Some(_) => {
            "libcudadebugger.so.1 is not in the `ldconfig -p` cache nor in LD_LIBRARY_PATH".to_string()
        }
    };
    Check::new(name, Status::Warn, how, Need::DebuggerBackend).fix(
        "cuda-gdb needs the driver's debugger back-end to attach (`Could not find CUDA Debugger back-end`): \
         install the full NVIDIA driver (it ships libcudadebugger.so.1); in a container make sure the driver \
         libraries are mounted (Apptainer: add it to `nvliblist.conf`), then check `ldconfig -p | grep \
         libcudadebugger`",
    )
}

/// `Uid:` (effective, the second number) and whether `CapEff:` holds CAP_SYS_PTRACE (bit 19).
pub fn parse_proc_status(status: &str) -> (Option<u32>, Option<bool>) {
    let mut euid = None;
    let mut cap = None;
    for line in status.lines() {
        if let Some(rest) = line.strip_prefix("Uid:") {
            euid = rest.split_whitespace().nth(1).and_then(|u| u.parse().ok());
        } else if let Some(rest) = line.strip_prefix("CapEff:") {
            cap = u64::from_str_radix(rest.trim(), 16).ok().map(|bits| bits & (1 << 19) != 0);
        }
    }
    (euid, cap)
}

/// Permission to attach cuda-gdb to the target, which is not cuda-gdb's child.
pub fn check_ptrace(facts: &PtraceFacts) -> Check {
    let (euid, cap) = facts.proc_status.as_deref().map(parse_proc_status).unwrap_or((None, None));
    let root = euid == Some(0);
    let scope = facts.ptrace_scope.as_deref().map(str::trim);
    let sysctl_fix = "`sudo sysctl kernel.yama.ptrace_scope=0` (for good: \
                      `echo kernel.yama.ptrace_scope=0 | sudo tee /etc/sysctl.d/10-ptrace.conf`) or run as root";
    let c = |status, detail: String| Check::new("ptrace", status, detail, Need::Ptrace);
    match scope {
        Some("3") => c(Status::Missing, "ptrace_scope is 3: no process may attach, root included".into()).fix(
            "the setting cannot be lowered until a reboot: set `kernel.yama.ptrace_scope` to 0 or 1 in \
             `/etc/sysctl.d/` and reboot; until then use the coredump and memcheck rungs",
        ),
        _ if root && cap != Some(false) => {
            let scope = scope.map_or("no Yama ptrace_scope".to_string(), |s| format!("ptrace_scope {s}"));
            c(Status::Ok, format!("running as root ({scope})"))
        }
        _ if cap == Some(true) => c(Status::Ok, "CAP_SYS_PTRACE held".into()),
        None => c(Status::Ok, "no Yama ptrace_scope: a process may attach to its user's processes".into()),
        Some("0") => c(Status::Ok, "ptrace_scope 0: a process may attach to its user's processes".into()),
        Some("1") if root => c(Status::Warn, "running as root without CAP_SYS_PTRACE, ptrace_scope 1".into()).fix(
            "attaching to a non-child needs CAP_SYS_PTRACE: start the container with `--cap-add=SYS_PTRACE` \
             (often also `--security-opt seccomp=unconfined`), or on the host `sudo sysctl \
             kernel.yama.ptrace_scope=0`",
        ),
        Some("1") => c(
            Status::Warn,
            "ptrace_scope 1: only a parent may attach, and cuda-gdb is not the target's parent".into(),
        )
        .fix(format!("attaching to a non-child needs {sysctl_fix}")),
        Some("2") if root => c(Status::Missing, "ptrace_scope 2 and no CAP_SYS_PTRACE".into())
            .fix("start the container with `--cap-add=SYS_PTRACE`, or on the host `sudo sysctl kernel.yama.ptrace_scope=1`"),
        Some("2") => c(Status::Missing, "ptrace_scope 2: only root (CAP_SYS_PTRACE) may attach".into())
            .fix(format!("run the ladder as root (`sudo`), or {sysctl_fix}")),
        Some(other) => c(Status::Warn, format!("unexpected ptrace_scope `{other}`"))
            .fix(format!("check `/proc/sys/kernel/yama/ptrace_scope`; to attach, {sysctl_fix}")),
    }
}

/// The directory cuda-gdb and the target use for temporary files (cuda-gdb writes the
/// kernels' ELF images there). The ladder gives both the same environment, so they see
/// the same `$TMPDIR`.
pub fn check_tmpdir(facts: &TmpdirFacts) -> Check {
    let dir = facts.dir.display().to_string();
    let which = match facts.env.as_deref() {
        Some(t) if !t.is_empty() => format!("TMPDIR={t}"),
        Some(_) => "TMPDIR empty: /tmp".to_string(),
        None => "TMPDIR unset: /tmp".to_string(),
    };
    let c = |status, detail: String| Check::new("tmpdir", status, detail, Need::Tmpdir);
    match (&facts.writable, facts.is_dir) {
        (Ok(()), _) => c(Status::Ok, format!("{which}, writable; cuda-gdb and the target get the same one")),
        (Err(_), false) => c(Status::Missing, format!("{which}: `{dir}` is not a directory"))
            .fix(format!("`mkdir -p {dir}` or point TMPDIR at a writable directory: `export TMPDIR=/tmp`")),
        (Err(e), true) => c(Status::Missing, format!("{which}: cannot write in `{dir}`: {e}"))
            .fix("point TMPDIR at a writable directory (`export TMPDIR=/tmp`); cuda-gdb and the target must see the same one"),
    }
}

/// Available KiB from `df -Pk DIR` (the last line's fourth field).
pub fn parse_df_available_kib(text: &str) -> Option<u64> {
    let line = text.lines().rfind(|l| !l.trim().is_empty())?;
    let fields: Vec<&str> = line.split_whitespace().collect();
    // Filesystem 1024-blocks Used Available Capacity Mounted-on; the filesystem name or
    // mount point may hold spaces, so find the `NN%` field and take the one before it.
    let pct = fields
        .iter()
        .rposition(|f| f.ends_with('%') && f[..f.len() - 1].chars().all(|c| c.is_ascii_digit()))?;
    fields.get(pct.checked_sub(1)?)?.parse().ok()
}

/// Sizes for people: `64.0 GiB`, `512 MiB`.
pub fn human_bytes(bytes: u64) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    const MIB: f64 = (1u64 << 20) as f64;
    let b = bytes as f64;
    if b >= GIB {
        format!("{:.1} GiB", b / GIB)
    } else {
        format!("{:.0} MiB", b / MIB)
    }
}

/// Room for GPU coredumps in the coredump directory.
pub fn check_space(facts: &SpaceFacts) -> Check {
    let dir = facts.dir.display().to_string();
    let measured = facts.measured.display().to_string();
    let where_ =
        if facts.measured == facts.dir { format!("`{dir}`") } else { format!("`{measured}` (for `{dir}`)") };
    let c = |status, detail: String| Check::new("coredump-space", status, detail, Need::CoredumpSpace);
    let choose = "choose a directory on a writable disk with room (`cargo xtask doctor --coredump-dir DIR` checks one)";
    if let Err(e) = &facts.writable {
        return c(Status::Missing, format!("cannot write in {where_}: {e}")).fix(choose);
    }
    let avail = facts.df.as_ref().filter(|o| o.success()).and_then(|o| parse_df_available_kib(&o.stdout));
    match avail {
        Some(kib) => {
            let bytes = kib.saturating_mul(1024);
            if bytes < LOW_SPACE_BYTES {
                c(
                    Status::Warn,
                    format!(
                        "{} free in {where_}: GPU coredumps take 1 MB to hundreds of MB per process, and \
                         several processes may fault",
                        human_bytes(bytes)
                    ),
                )
                .fix(format!("free at least {} there, or {choose}", human_bytes(LOW_SPACE_BYTES)))
            } else {
                c(Status::Ok, format!("{} free in {where_}", human_bytes(bytes)))
            }
        }
        None => {
            let why = match &facts.df {
                None => "`df` not found".to_string(),
                Some(o) if !o.success() => {
                    format!("`df -Pk {measured}` failed ({}): {}", o.describe_exit(), o.first_line())
                }
                Some(o) => format!("cannot read `df -Pk {measured}`: {}", o.first_line()),
            };
            c(Status::Warn, format!("free space in {where_} unknown: {why}")).fix(format!(
                "check with `df -h {measured}`: coredumps take up to hundreds of MB per process"
            ))
        }
    }
}

/// The soft `Max core file size` from `/proc/self/limits`: `0`, `unlimited`, a number.
pub fn parse_core_limit(limits: &str) -> Option<String> {
    let line = limits.lines().find(|l| l.starts_with("Max core file size"))?;
    line["Max core file size".len()..].split_whitespace().next().map(str::to_string)
}

/// Where CPU core files go: informative only, GPU coredumps do not depend on it.
pub fn check_core_pattern(facts: &CoreFacts) -> Check {
    let pattern = facts.core_pattern.as_deref().map(str::trim);
    let mut detail = match pattern {
        None => "core_pattern unreadable".to_string(),
        Some(p) if p.starts_with('|') => format!("core_pattern `{p}`: CPU core files are piped to a program"),
        Some(p) if p.starts_with('/') => format!("core_pattern `{p}`: CPU core files go to that path"),
        Some(p) => format!("core_pattern `{p}`: CPU core files go to the process's working directory"),
    };
    match facts.limits.as_deref().and_then(parse_core_limit).as_deref() {
        Some("0") => detail.push_str("; ulimit -c 0: no CPU core files"),
        Some(limit) => {
            let _ = write!(detail, "; ulimit -c {limit}");
        }
        None => {}
    }
    detail.push_str("; GPU coredumps go to CUDA_COREDUMP_FILE either way");
    Check::new("core-pattern", Status::Ok, detail, Need::CoredumpSpace)
}

//! `cargo xtask doctor`'s checks, fed real outputs through a recorded [`Probe`]: an H200
//! with CUDA 13.0 (recorded on the device machine with the same commands the doctor runs,
//! and the version lines of shared/transcripts/h200-cuda13/00_env.log), a
//! machine without a GPU (nvidia-smi not found), a driver that does not answer. Also the
//! real thing on this machine: `run_checks` must finish in well under 10 s.
//!
//! Every tool output below is copied from a real run; a case the recordings do not have
//! (an old driver) is tested on the versions themselves, not on made-up output.

use crate::support;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use xtask::doctor::{
    self, check_gpu_plumbing, check_ptrace, check_ptrace_in_container, check_space, driver_toolkit, evaluate,
    gather, parse_df_available_kib, parse_gpus, parse_image_probe, parse_version, render, render_in, require,
    run_checks, versions, ContainerTarget, Options, Output, PlumbingFacts, Probe, PtraceFacts, Report,
    SpaceFacts, Status, IMAGE_PROBE_SCRIPT, IMAGE_PROBE_TIMEOUT, NO_GPU_FIX,
};
use xtask::model::{Exit, RungId, Runtime};
use xtask::process::short::run as run_with_timeout;

// ---------------------------------------------------------------------------------------
// Recorded outputs
// ---------------------------------------------------------------------------------------

/// `nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader`
/// on the H200 (exit 0).
const H200_SMI_CSV: &str = "NVIDIA H200, 580.159.04, 9.0, 143771 MiB\n";
/// `nvidia-smi --query-gpu=name,driver_version,memory.total,bogus_field --format=csv,noheader`
/// on the H200: exit 2, the message on stdout.
const SMI_BAD_FIELD: &str = "Field \"bogus_field\" is not a valid field to query.\n\n";
/// `nvcc --version`, as in 00_env.log and tests/fixtures/h200/env.log.
const H200_NVCC: &str = "nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Wed_Aug_20_01:58:59_PM_PDT_2025
Cuda compilation tools, release 13.0, V13.0.88
Build cuda_13.0.r13.0/compiler.36424714_0
";
/// `cuda-gdb --version` (the wrapper prints the `exec:` line first), as in 00_env.log.
const H200_CUDA_GDB: &str = "exec: /usr/local/cuda/bin/cuda-gdb-python3.12-tui --version
NVIDIA (R) cuda-gdb 13.0
Portions Copyright (C) 2007-2025 NVIDIA Corporation
Based on GNU gdb 14.2
Copyright (C) 2023 Free Software Foundation, Inc.
License GPLv3+: GNU GPL version 3 or later <http://gnu.org/licenses/gpl.html>
This is free software: you are free to change and redistribute it.
There is NO WARRANTY, to the extent permitted by law.
";
/// `compute-sanitizer --version`, as in 00_env.log and tests/fixtures/h200/env.log.
const H200_SANITIZER: &str = "NVIDIA (R) Compute Sanitizer
Copyright (c) 2020-2025 NVIDIA Corporation
Version 2025.3.1.0 (build 36400806) (public-release)
";
/// `cuobjdump --version` on the H200.
const H200_CUOBJDUMP: &str = "cuobjdump: NVIDIA (R) fat binary listing tool
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Thu_Aug_14_07:26:37_PM_PDT_2025
Cuda compilation tools, release 13.0, V13.0.85
Build cuda_13.0.r13.0/compiler.36400806_0
";
/// `df -Pk /tmp` on the H200.
const H200_DF_TMP: &str = "Filesystem     1024-blocks     Used Available Capacity Mounted on
/dev/vda         264212084 16889820  67083752      21% /
";
/// `df -Pk DIR` on a 100 MiB tmpfs holding a 40 MiB file (mounted for this recording).
const SMALL_DF: &str = "Filesystem     1024-blocks  Used Available Capacity Mounted on
tmpfs               102400 40960     61440      40% /tmp/doctor-small
";
/// `df -Pk /nonexistent/dir` on the H200: exit 1, on stderr.
const DF_NO_DIR: &str = "df: /nonexistent/dir: No such file or directory\n";
/// `ldconfig -p | grep -i cudadebugger` on the H200 (the lines of `ldconfig -p` that matter).
const H200_LDCONFIG: &str =
    "\tlibcudadebugger.so.1 (libc6,x86-64) => /usr/local/nvidia/lib64/libcudadebugger.so.1
\tlibcudadebugger.so.1 (libc6,x86-64) => /lib/libcudadebugger.so.1
\tlibcudadebugger.so (libc6,x86-64) => /usr/local/nvidia/lib64/libcudadebugger.so
\tlibcudadebugger.so (libc6,x86-64) => /lib/libcudadebugger.so
";
/// `/proc/self/status` of root on the H200 and on this machine: `Uid:` (`id` said uid=0)
/// and `CapEff:` (recorded on both).
const ROOT_STATUS: &str = "Uid:\t0\t0\t0\t0\nCapEff:\t000001fffeffffff\n";
/// `/proc/self/limits`'s core line on this machine (the H200's `ulimit -c` also said 0).
const LIMITS: &str = "Max core file size        0                    unlimited            bytes     \n";
/// PATH, CUDA_HOME and LD_LIBRARY_PATH on the H200.
const H200_PATH: &str = "/opt/torch/.venv/bin:/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:\
                         /usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/gcc/bin";
/// nvidia-smi with the kernel module not loaded, as reported in
/// https://github.com/ci-for-research/self-hosted-runners/issues/40 ; exit 9 is nvidia-smi's
/// documented code for "NVIDIA driver is not loaded".
const SMI_NO_DRIVER: &str = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. \
                             Make sure that the latest NVIDIA driver is installed and running.\n";

const GPU_ARGS: &str = "--query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader";

// ---------------------------------------------------------------------------------------
// A probe over recorded outputs
// ---------------------------------------------------------------------------------------

#[derive(Default)]
struct Recorded {
    env: HashMap<String, String>,
    files: HashMap<PathBuf, String>,
    executables: HashSet<PathBuf>,
    dirs: HashSet<PathBuf>,
    unwritable: HashSet<PathBuf>,
    /// `program args...` to its output; a command not listed exits 127.
    outputs: HashMap<String, Output>,
    ran: Mutex<Vec<String>>,
}

impl Recorded {
    fn env(mut self, k: &str, v: &str) -> Self {
        self.env.insert(k.into(), v.into());
        self
    }
    fn file(mut self, p: &str, text: &str) -> Self {
        self.files.insert(p.into(), text.into());
        self
    }
    fn exe(mut self, p: &str) -> Self {
        self.executables.insert(p.into());
        self
    }
    fn dir(mut self, p: &str) -> Self {
        self.dirs.insert(p.into());
        self
    }
    fn output(mut self, cmd: &str, out: Output) -> Self {
        self.outputs.insert(cmd.into(), out);
        self
    }
    fn ran(&self) -> Vec<String> {
        self.ran.lock().unwrap().clone()
    }
}

impl Probe for Recorded {
    fn run(&self, program: &Path, args: &[&str], timeout: Duration) -> Output {
        // The probe inside a container image is shown as `... -c SCRIPT`, its container's
        // name (unique per run) as `NAME`.
        let in_image = args.contains(&IMAGE_PROBE_SCRIPT);
        let limit = if in_image { IMAGE_PROBE_TIMEOUT } else { Duration::from_secs(10) };
        assert!(timeout <= limit, "every probe is limited to 10 s, the one in the image to 60 s");
        let args: Vec<&str> = args
            .iter()
            .map(|a| match *a {
                a if a == IMAGE_PROBE_SCRIPT => "SCRIPT",
                a if a.starts_with("debug-ima-doctor-") => "NAME",
                a => a,
            })
            .collect();
        let cmd = format!("{} {}", program.display(), args.join(" "));
        self.ran.lock().unwrap().push(cmd.clone());
        self.outputs.get(&cmd).cloned().unwrap_or_else(|| Output::exited(127, "", "not recorded"))
    }
    fn read_file(&self, path: &Path) -> Option<String> {
        self.files.get(path).cloned()
    }
    fn env(&self, key: &str) -> Option<String> {
        self.env.get(key).cloned()
    }
    fn is_executable(&self, path: &Path) -> bool {
        self.executables.contains(path)
    }
    fn is_file(&self, path: &Path) -> bool {
        self.executables.contains(path) || self.files.contains_key(path)
    }
    fn is_dir(&self, path: &Path) -> bool {
        self.dirs.contains(path)
    }
    fn check_writable(&self, dir: &Path) -> Result<(), String> {
        if self.unwritable.contains(dir) {
            Err("Permission denied (os error 13)".into())
        } else {
            Ok(())
        }
    }
}

/// The H200 as recorded: every tool in /usr/local/cuda/bin, on PATH.
fn h200() -> Recorded {
    Recorded::default()
        .env("PATH", H200_PATH)
        .env("CUDA_HOME", "/usr/local/cuda")
        .env("LD_LIBRARY_PATH", "/usr/local/nvidia/lib64:/usr/local/nvidia/lib")
        .exe("/usr/local/nvidia/bin/nvidia-smi")
        .exe("/usr/local/cuda/bin/nvcc")
        .exe("/usr/local/cuda/bin/cuobjdump")
        .exe("/usr/local/cuda/bin/cuda-gdb")
        .exe("/usr/local/cuda/bin/compute-sanitizer")
        .exe("/usr/sbin/ldconfig")
        .exe("/usr/bin/df")
        .dir("/")
        .dir("/tmp")
        .file("/proc/self/status", ROOT_STATUS)
        .file("/proc/sys/kernel/core_pattern", "core\n")
        .file("/proc/self/limits", LIMITS)
        .output(&format!("/usr/local/nvidia/bin/nvidia-smi {GPU_ARGS}"), Output::exited(0, H200_SMI_CSV, ""))
        .output("/usr/local/cuda/bin/nvcc --version", Output::exited(0, H200_NVCC, ""))
        .output("/usr/local/cuda/bin/cuobjdump --version", Output::exited(0, H200_CUOBJDUMP, ""))
        .output("/usr/local/cuda/bin/cuda-gdb --version", Output::exited(0, H200_CUDA_GDB, ""))
        .output("/usr/local/cuda/bin/compute-sanitizer --version", Output::exited(0, H200_SANITIZER, ""))
        .output("/usr/sbin/ldconfig -p", Output::exited(0, H200_LDCONFIG, ""))
        .output("/usr/bin/df -Pk /tmp", Output::exited(0, H200_DF_TMP, ""))
}

/// A machine like this one: no NVIDIA driver, no CUDA toolkit, root, no Yama.
fn no_gpu() -> Recorded {
    Recorded::default()
        .env("PATH", "/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        .exe("/usr/bin/df")
        .exe("/usr/sbin/ldconfig")
        .dir("/")
        .dir("/tmp")
        .file("/proc/self/status", ROOT_STATUS)
        .file("/proc/sys/kernel/core_pattern", "core\n")
        .file("/proc/self/limits", LIMITS)
        .output("/usr/sbin/ldconfig -p", Output::exited(0, "", ""))
        .output("/usr/bin/df -Pk /tmp", Output::exited(0, H200_DF_TMP, ""))
}

fn opts() -> Options {
    Options { coredump_dir: PathBuf::from("/tmp/bundles"), ..Options::default() }
}

fn report(probe: &Recorded) -> Report {
    evaluate(&gather(probe, &opts()))
}

fn status_of(r: &Report, name: &str) -> Status {
    r.get(name).unwrap_or_else(|| panic!("no `{name}` check in {r:#?}")).status
}

// ---------------------------------------------------------------------------------------
// The H200
// ---------------------------------------------------------------------------------------

#[test]
fn h200_everything_ok_with_versions() {
    let r = report(&h200());
    let names: Vec<&str> = r.checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "gpu",
            "driver-toolkit",
            "nvcc",
            "cuobjdump",
            "cuda-gdb",
            "compute-sanitizer",
            "py-spy",
            "cuda-debugger-backend",
            "ptrace",
            "tmpdir",
            "coredump-space",
            "core-pattern"
        ]
    );
    // The H200 had no py-spy when it was recorded: a warning that blocks nothing.
    assert_eq!(status_of(&r, "py-spy"), Status::Warn);
    for c in r.checks.iter().filter(|c| c.name != "py-spy") {
        assert_eq!(c.status, Status::Ok, "{c:#?}");
        assert_eq!(c.fix, None, "{c:#?}");
    }
    assert!(r.has_gpu());
    assert!(r.missing_for(&[]).is_empty());
    assert!(require(&r, &[]).is_ok());
    assert_eq!(
        r.get("gpu").unwrap().detail,
        "NVIDIA H200 (compute capability 9.0, 143771 MiB), driver 580.159.04"
    );
    assert_eq!(r.get("nvcc").unwrap().detail, "13.0 (V13.0.88) at /usr/local/cuda/bin/nvcc");
    assert_eq!(r.get("coredump-space").unwrap().detail, "64.0 GiB free in `/tmp` (for `/tmp/bundles`)");
    assert_eq!(r.tool_path("cuda-gdb"), Some(Path::new("/usr/local/cuda/bin/cuda-gdb")));
    assert!(r.path_additions().is_empty());

    let expected: BTreeMap<String, String> = [
        ("compute-sanitizer", "Version 2025.3.1.0 (build 36400806) (public-release)"),
        ("cuda-gdb", "NVIDIA (R) cuda-gdb 13.0"),
        ("cuobjdump", "Cuda compilation tools, release 13.0, V13.0.85"),
        ("driver", "580.159.04"),
        ("gpu", "NVIDIA H200, 580.159.04, 9.0, 143771 MiB"),
        ("nvcc", "Cuda compilation tools, release 13.0, V13.0.88"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(versions(&r), expected);
}

#[test]
fn version_lines_of_the_recorded_environment() {
    // tests/fixtures/h200/env.log holds every tool's version output, one after the other
    // (recorded on the H200 by tests/gpu/record.sh); each parser finds its line.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(root.join("tests/fixtures/h200/env.log")).unwrap();
    assert_eq!(parse_version("nvcc", &text).unwrap().1, "13.0 (V13.0.88)");
    assert_eq!(parse_version("cuda-gdb", &text).unwrap(), ("NVIDIA (R) cuda-gdb 13.0".into(), "13.0".into()));
    assert_eq!(parse_version("compute-sanitizer", &text).unwrap().1, "2025.3.1.0");
    assert_eq!(parse_version("cuda-gdb", H200_CUDA_GDB).unwrap().1, "13.0");
    assert_eq!(parse_version("cuobjdump", H200_CUOBJDUMP).unwrap().1, "13.0 (V13.0.85)");
    assert_eq!(parse_version("nvcc", "nvcc: NVIDIA (R) Cuda compiler driver\n"), None);
}

#[test]
fn gpu_lines() {
    let gpus = parse_gpus(H200_SMI_CSV);
    assert_eq!(gpus.len(), 1);
    assert_eq!(gpus[0].name, "NVIDIA H200");
    assert_eq!(gpus[0].driver, "580.159.04");
    assert_eq!(gpus[0].compute_cap.as_deref(), Some("9.0"));
    assert_eq!(gpus[0].memory, "143771 MiB");
    assert!(parse_gpus(SMI_BAD_FIELD).is_empty());
    assert!(parse_gpus(SMI_NO_DRIVER).is_empty());
    // Two GPUs (the machine of 80_env.log had two H200s): one line each.
    let two = parse_gpus(&H200_SMI_CSV.repeat(2));
    assert_eq!(two.len(), 2);
}

#[test]
fn two_gpus_are_both_listed() {
    let probe = h200().output(
        &format!("/usr/local/nvidia/bin/nvidia-smi {GPU_ARGS}"),
        Output::exited(0, &H200_SMI_CSV.repeat(2), ""),
    );
    let r = report(&probe);
    let gpu = r.get("gpu").unwrap();
    assert!(gpu.detail.starts_with("2 GPUs: NVIDIA H200"), "{}", gpu.detail);
    assert_eq!(versions(&r)["driver"], "580.159.04");
    // What the ladder reads for `{gpu_arch}` and the launch-blocking rung's warning.
    let gpus = r.gpus();
    assert_eq!(gpus.len(), 2);
    assert_eq!(gpus[0].compute_cap.as_deref(), Some("9.0"));
    assert_eq!(report(&h200()).gpus().len(), 1);
    assert!(report(&no_gpu()).gpus().is_empty());
}

#[test]
fn available_memory_from_proc_meminfo() {
    // The first lines of /proc/meminfo on this machine.
    let meminfo = "MemTotal:       24684084 kB\nMemFree:        21061100 kB\nMemAvailable:   24219968 kB\n";
    assert_eq!(doctor::parse_mem_available(meminfo), Some(24219968 * 1024));
    assert_eq!(doctor::parse_mem_available("MemTotal:       24684084 kB\n"), None);
    assert_eq!(doctor::parse_mem_available(""), None);
}

#[test]
fn a_query_field_the_driver_does_not_know_is_asked_again_without_it() {
    // The H200's answer to an unknown field, given for `compute_cap` as an old driver would.
    let probe = h200().output(
        &format!("/usr/local/nvidia/bin/nvidia-smi {GPU_ARGS}"),
        Output::exited(2, SMI_BAD_FIELD, ""),
    );
    let r = report(&probe);
    assert!(probe.ran().iter().any(|c| c.contains("--query-gpu=name,driver_version,memory.total ")));
    let gpu = r.get("gpu").unwrap();
    assert_eq!(gpu.status, Status::Missing, "{gpu:#?}");
}

// ---------------------------------------------------------------------------------------
// No GPU, a broken driver
// ---------------------------------------------------------------------------------------

#[test]
fn without_nvidia_smi_the_gpu_is_missing_and_the_ladder_stops() {
    let r = report(&no_gpu());
    assert!(!r.has_gpu());
    let gpu = r.get("gpu").unwrap();
    assert_eq!(gpu.status, Status::Missing);
    assert_eq!(gpu.fix.as_deref(), Some(NO_GPU_FIX));
    assert!(gpu.fix.as_deref().unwrap().contains("`cargo xtask analyze`"));
    assert_eq!(gpu.needed_by, ["all"]);
    // The GPU stops every rung, the rebuild rung included (the ladder always starts with baseline).
    for rung in [RungId::Baseline, RungId::Rebuild, RungId::Coredump, RungId::Attach, RungId::Memcheck] {
        assert!(r.missing_for(&[rung]).iter().any(|c| c.name == "gpu"), "{rung}");
    }
    let err = require(&r, &[RungId::Coredump]).unwrap_err().to_string();
    assert!(err.starts_with("this machine cannot run the ladder: no usable GPU"), "{err}");
    assert!(err.contains(NO_GPU_FIX), "{err}");
    assert!(err.contains("cuda-gdb (coredump, attach, hang, repro)"), "{err}");
    assert!(!err.contains("compute-sanitizer"), "memcheck was not asked for: {err}");
    // No driver-toolkit check without a driver.
    assert!(r.get("driver-toolkit").is_none());
    assert_eq!(status_of(&r, "nvcc"), Status::Missing);
    assert_eq!(status_of(&r, "cuobjdump"), Status::Warn);
}

#[test]
fn driver_that_does_not_answer_is_missing() {
    let smi = format!("/usr/local/nvidia/bin/nvidia-smi {GPU_ARGS}");
    let r = report(&h200().output(&smi, Output::exited(9, SMI_NO_DRIVER, "")));
    let gpu = r.get("gpu").unwrap();
    assert_eq!(gpu.status, Status::Missing);
    assert!(gpu.detail.contains("couldn't communicate with the NVIDIA driver"), "{}", gpu.detail);
    assert!(gpu.fix.as_deref().unwrap().contains("`lsmod | grep nvidia`"));
    assert!(!r.has_gpu());
    assert!(r.get("driver-toolkit").is_none());

    let hung = Output { exit: Exit::TimedOut, stdout: String::new(), stderr: String::new() };
    let r = report(&h200().output(&smi, hung));
    let gpu = r.get("gpu").unwrap();
    assert_eq!(gpu.status, Status::Missing);
    assert_eq!(gpu.detail, "`nvidia-smi` did not answer within 10 s");
    assert!(gpu.fix.as_deref().unwrap().contains("Xid"));
}

#[test]
fn old_driver_for_the_toolkit_warns() {
    // The policy on the versions themselves (no R535 driver was recorded): an R535 driver
    // with nvcc 13.0.
    let c = driver_toolkit("535.104.05", "13.0").unwrap();
    assert_eq!(c.status, Status::Warn);
    assert!(
        c.detail.contains("CUDA driver version is insufficient for CUDA runtime version"),
        "{}",
        c.detail
    );
    // The H200's recorded driver and nvcc pass, through the whole report.
    let r = report(&h200());
    assert_eq!(r.get("driver-toolkit").unwrap().status, Status::Ok);
    assert!(r.missing_for(&[]).is_empty(), "a warning does not stop the ladder");
}

// ---------------------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------------------

#[test]
fn tools_off_path_are_found_in_cuda_home_and_the_fix_says_so() {
    let probe = h200().env("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    let r = report(&probe);
    for tool in ["nvcc", "cuobjdump", "cuda-gdb", "compute-sanitizer"] {
        let c = r.get(tool).unwrap();
        assert_eq!(c.status, Status::Warn, "{c:#?}");
        assert!(c.off_path);
        let fix = c.fix.as_deref().unwrap();
        assert!(fix.contains("`export PATH=/usr/local/cuda/bin:$PATH`"), "{fix}");
        assert!(c.version.is_some(), "it still ran: {c:#?}");
    }
    assert_eq!(r.path_additions(), [PathBuf::from("/usr/local/cuda/bin")]);
    assert!(r.missing_for(&[]).is_empty());
    // nvidia-smi is found in NVIDIA's container directory even off PATH.
    assert_eq!(status_of(&r, "gpu"), Status::Ok);
}

#[test]
fn missing_tools_say_which_rung_they_stop() {
    let mut probe = h200();
    probe.executables.remove(Path::new("/usr/local/cuda/bin/cuobjdump"));
    probe.executables.remove(Path::new("/usr/local/cuda/bin/compute-sanitizer"));
    let r = report(&probe);
    let cuobjdump = r.get("cuobjdump").unwrap();
    assert_eq!(cuobjdump.status, Status::Warn, "only the line-info check needs it");
    assert!(
        cuobjdump.detail.contains("not found on PATH nor in /usr/local/cuda/bin"),
        "{}",
        cuobjdump.detail
    );
    let sanitizer = r.get("compute-sanitizer").unwrap();
    assert_eq!(sanitizer.status, Status::Missing);
    assert!(sanitizer.fix.as_deref().unwrap().contains("`apt-get install cuda-sanitizer-13-0`"));
    assert_eq!(r.missing_for(&[RungId::Memcheck]).len(), 1);
    assert!(r.missing_for(&[RungId::Rebuild, RungId::Coredump, RungId::Attach]).is_empty());
    assert!(require(&r, &[RungId::Coredump]).is_ok());
    assert!(require(&r, &[RungId::Memcheck]).is_err());
}

#[test]
fn a_tool_that_fails_to_run_is_missing() {
    // cuda-gdb's wrapper found but not runnable here: the H200's df error stands in for any
    // failing `--version` (exit 1, message on stderr).
    let r =
        report(&h200().output("/usr/local/cuda/bin/cuda-gdb --version", Output::exited(1, "", DF_NO_DIR)));
    let c = r.get("cuda-gdb").unwrap();
    assert_eq!(c.status, Status::Missing);
    assert!(c.detail.contains("failed (exit 1): df: /nonexistent/dir"), "{}", c.detail);
}

#[test]
fn only_the_rungs_asked_for_are_probed() {
    let probe = h200();
    let o = Options { need: vec![RungId::Memcheck], ..opts() };
    let r = evaluate(&gather(&probe, &o));
    let names: Vec<&str> = r.checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["gpu", "compute-sanitizer"]);
    assert!(!probe.ran().iter().any(|c| c.contains("nvcc") || c.contains("cuda-gdb")));
}

// ---------------------------------------------------------------------------------------
// ptrace, TMPDIR, space
// ---------------------------------------------------------------------------------------

#[test]
fn ptrace_scope_values() {
    let user = "Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\n";
    let root_no_cap = "Uid:\t0\t0\t0\t0\nCapEff:\t00000000a80425fb\n"; // Docker's default set: no CAP_SYS_PTRACE
    let check = |status: &str, scope: Option<&str>| {
        check_ptrace(&PtraceFacts {
            proc_status: Some(status.to_string()),
            ptrace_scope: scope.map(|s| format!("{s}\n")),
        })
    };
    for scope in [None, Some("0"), Some("1"), Some("2")] {
        assert_eq!(check(ROOT_STATUS, scope).status, Status::Ok, "root, {scope:?}");
    }
    assert_eq!(check(ROOT_STATUS, Some("3")).status, Status::Missing);
    assert_eq!(check(user, None).status, Status::Ok);
    assert_eq!(check(user, Some("0")).status, Status::Ok);
    let one = check(user, Some("1"));
    assert_eq!(one.status, Status::Warn);
    assert!(one.fix.as_deref().unwrap().contains("`sudo sysctl kernel.yama.ptrace_scope=0`"));
    assert!(one.fix.as_deref().unwrap().contains("root"));
    let two = check(user, Some("2"));
    assert_eq!(two.status, Status::Missing);
    assert_eq!(two.needed_by, ["attach"]);
    assert_eq!(check(user, Some("3")).status, Status::Missing);
    let docker = check(root_no_cap, Some("1"));
    assert_eq!(docker.status, Status::Warn);
    assert!(docker.fix.as_deref().unwrap().contains("`--cap-add=SYS_PTRACE`"));
    assert_eq!(check(root_no_cap, Some("0")).status, Status::Ok);
    // Unreadable status: not known to be root, so the scope decides.
    let unknown = check_ptrace(&PtraceFacts { proc_status: None, ptrace_scope: Some("1\n".into()) });
    assert_eq!(unknown.status, Status::Warn);

    let r = report(&h200().file("/proc/sys/kernel/yama/ptrace_scope", "3\n"));
    assert_eq!(
        r.missing_for(&[RungId::Attach]).iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        ["ptrace"]
    );
    assert!(r.missing_for(&[RungId::Coredump, RungId::Memcheck]).is_empty());
}

#[test]
fn low_disk_warns_and_unwritable_is_missing() {
    assert_eq!(parse_df_available_kib(H200_DF_TMP), Some(67083752));
    assert_eq!(parse_df_available_kib(SMALL_DF), Some(61440));
    assert_eq!(parse_df_available_kib(DF_NO_DIR), None);
    let facts = |df: Output| SpaceFacts {
        dir: PathBuf::from("/tmp/doctor-small/dumps"),
        measured: PathBuf::from("/tmp/doctor-small"),
        writable: Ok(()),
        df: Some(df),
    };
    let low = check_space(&facts(Output::exited(0, SMALL_DF, "")));
    assert_eq!(low.status, Status::Warn);
    assert!(
        low.detail.starts_with("60 MiB free in `/tmp/doctor-small` (for `/tmp/doctor-small/dumps`)"),
        "{}",
        low.detail
    );
    assert!(low.detail.contains("hundreds of MB per process"));
    assert!(low.fix.as_deref().unwrap().contains("2.0 GiB"));
    let plenty = check_space(&facts(Output::exited(0, H200_DF_TMP, "")));
    assert_eq!(plenty.status, Status::Ok);
    let failed = check_space(&facts(Output::exited(1, "", DF_NO_DIR)));
    assert_eq!(failed.status, Status::Warn);
    assert!(failed.detail.contains("No such file or directory"));

    let mut probe = h200();
    probe.unwritable.insert(PathBuf::from("/tmp"));
    let r = report(&probe);
    assert_eq!(status_of(&r, "coredump-space"), Status::Missing);
    assert_eq!(status_of(&r, "tmpdir"), Status::Missing);
    assert!(r.get("coredump-space").unwrap().detail.contains("Permission denied"));
}

#[test]
fn tmpdir_must_exist_and_be_writable() {
    let r = report(&h200().env("TMPDIR", "/scratch/tmp"));
    let t = r.get("tmpdir").unwrap();
    assert_eq!(t.status, Status::Missing);
    assert!(t.detail.starts_with("TMPDIR=/scratch/tmp"), "{}", t.detail);
    let r = report(&h200().env("TMPDIR", "/scratch/tmp").dir("/scratch/tmp"));
    assert_eq!(status_of(&r, "tmpdir"), Status::Ok);
    let r = report(&h200());
    assert!(r.get("tmpdir").unwrap().detail.starts_with("TMPDIR unset: /tmp"));
}

#[test]
fn missing_debugger_backend_warns() {
    let r = report(&h200().output("/usr/sbin/ldconfig -p", Output::exited(0, "", "")));
    let c = r.get("cuda-debugger-backend").unwrap();
    assert_eq!(c.status, Status::Warn);
    assert!(c.fix.as_deref().unwrap().contains("`ldconfig -p | grep libcudadebugger`"));
    // Found through LD_LIBRARY_PATH when the cache lacks it.
    let r = report(
        &h200()
            .output("/usr/sbin/ldconfig -p", Output::exited(0, "", ""))
            .file("/usr/local/nvidia/lib64/libcudadebugger.so.1", ""),
    );
    assert_eq!(status_of(&r, "cuda-debugger-backend"), Status::Ok);
}

// ---------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------

#[test]
fn render_is_deterministic() {
    let h = report(&h200());
    assert_eq!(render(&h), render(&report(&h200())));
    insta::with_settings!({snapshot_path => support::root().join("tests/snapshots"), prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("doctor_h200", render(&h));
    });
    let n = report(&no_gpu());
    assert_eq!(render(&n), render(&report(&no_gpu())));
    insta::with_settings!({snapshot_path => support::root().join("tests/snapshots"), prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("doctor_no_gpu", render(&n));
    });
}

/// A terminal too narrow for the table gets one block per check, every fact of the table
/// in it; a wide one the table; no width at all (a pipe), the table unwrapped. With a width,
/// every line fits it (issue 41: rows of 319 characters), its words all there, in order.
#[test]
fn a_narrow_terminal_gets_a_block_per_check() {
    let n = report(&no_gpu());
    assert_eq!(render_in(&n, None), render(&n));
    let words = |t: &str| t.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    for cols in [60, 100, 200, 400] {
        let shown = render_in(&n, Some(cols));
        assert!(shown.lines().all(|l| l.chars().count() <= cols), "{cols} columns:\n{shown}");
        if shown.starts_with("check ") {
            assert_eq!(words(&shown), words(&render(&n)), "the table at {cols} columns");
        }
    }
    let narrow = render_in(&n, Some(60));
    assert_ne!(words(&narrow), words(&render(&n)), "a block per check, not the table");
    assert!(narrow.starts_with("gpu: missing (needed by all)\n    "), "{narrow}");
    let flat = words(&narrow).join(" ");
    for c in &n.checks {
        let block =
            format!("{}: {} (needed by {}) {}", c.name, c.status.as_str(), c.needed_by.join(", "), c.detail);
        assert!(flat.contains(&words(&block).join(" ")), "{}", c.name);
        if let Some(fix) = &c.fix {
            assert!(flat.contains(&format!("fix: {}", words(fix).join(" "))), "{}", c.name);
        }
    }
}

// ---------------------------------------------------------------------------------------
// The real machine
// ---------------------------------------------------------------------------------------

/// Doctor on this machine: every check of the full list, none of them waiting out a probe's
/// limit (the fast answer, told by what the probes said rather than by a clock, which a loaded
/// machine moves).
#[test]
fn run_checks_on_this_machine_is_fast() {
    let dir = std::env::temp_dir().join(format!("xtask-doctor-{}", std::process::id()));
    let r = run_checks(&Options { coredump_dir: dir.join("not-yet"), ..Options::default() });
    for c in &r.checks {
        assert!(
            !c.detail.contains("no answer within") && !c.detail.contains("did not answer within"),
            "{c:#?}"
        );
    }
    let smi_found = doctor::locate(&doctor::SystemProbe, "nvidia-smi").path().is_some();
    if !smi_found {
        // CI and the developers' machines have no GPU: nothing is asked of a GPU.
        assert!(!r.has_gpu());
        let gpu = r.get("gpu").unwrap();
        assert_eq!(gpu.status, Status::Missing);
        assert_eq!(gpu.fix.as_deref(), Some(NO_GPU_FIX));
        let err = require(&r, &[]).unwrap_err().to_string();
        assert!(err.contains("no usable GPU"), "{err}");
    }
    if smi_found {
        // The GPU machine: `cargo test --test it doctor:: -- --nocapture` shows the report.
        println!("{}", render(&r));
        println!("{:#?}", versions(&r));
        assert!(r.has_gpu(), "{}", render(&r));
    }
    assert!(!dir.exists(), "the doctor creates nothing");
    // Every check of the full list ran and rendered.
    assert!(render(&r).contains("coredump-space"));
}

#[test]
fn probes_are_killed_at_their_timeout() {
    // A child that outlives its parent's kill keeps the pipes open: the group kill ends it.
    let out = run_with_timeout(
        Path::new("/bin/sh"),
        &["-c", "echo started; sleep 30 & sleep 30"],
        Duration::from_millis(300),
    );
    assert_eq!(out.exit, Exit::TimedOut);
    assert_eq!(out.stdout, "started\n");

    // A background grandchild left holding stdout after its parent exited is killed too: were
    // it waited for, the probe would time out instead of exiting 0.
    let out = run_with_timeout(Path::new("/bin/sh"), &["-c", "echo bye; sleep 30 &"], Duration::from_secs(5));
    assert_eq!(out, Output::exited(0, "bye\n", ""));

    let out = run_with_timeout(
        Path::new("/bin/sh"),
        &["-c", "echo out; echo err >&2; exit 3"],
        Duration::from_secs(5),
    );
    assert_eq!(out, Output::exited(3, "out\n", "err\n"));
    let out = run_with_timeout(Path::new("/nonexistent/nvidia-smi"), &[], Duration::from_secs(1));
    assert_eq!(out.exit, Exit::NotStarted, "{out:?}");
}

// ---------------------------------------------------------------------------------------
// Containers: outputs recorded on this machine's Docker (engine 20.10.24+dfsg1, client
// 28.2.2, no NVIDIA Container Toolkit), and the probe script run in real containers
// ---------------------------------------------------------------------------------------

const DOCKER: &str = "/usr/bin/docker";
/// `docker version --format {{.Server.Version}}` (exit 0).
const DOCKER_SERVER_VERSION: &str = "20.10.24+dfsg1\n";
/// The same with `DOCKER_HOST=unix:///nonexistent.sock` (no daemon there): exit 1, one
/// empty line on stdout, this on stderr.
const DOCKER_DOWN: &str =
    "Cannot connect to the Docker daemon at unix:///nonexistent.sock. Is the docker daemon running?\n";
/// The same as a user outside the `docker` group (`setpriv --reuid=65534`): exit 1, one
/// empty line on stdout, this on stderr.
const DOCKER_DENIED: &str = "permission denied while trying to connect to the Docker daemon socket at \
                             unix:///var/run/docker.sock: Get \
                             \"http://%2Fvar%2Frun%2Fdocker.sock/v1.50/version\": dial unix \
                             /var/run/docker.sock: connect: permission denied\n";
/// The `--format` of the doctor's `docker image inspect`.
const INSPECT_FORMAT: &str = "{{.Id}}|{{range $i, $d := .RepoDigests}}{{if $i}},{{end}}{{$d}}{{end}}";
/// `docker image inspect --format INSPECT_FORMAT debug-ima/cuda:13.0` without that image:
/// exit 1, one empty line on stdout, this on stderr.
const INSPECT_NO_CUDA: &str =
    "Error response from daemon: no such image: debug-ima/cuda:13.0: No such image: debug-ima/cuda:13.0\n";
/// The same for `nvidia/cuda:13.0.1-devel-ubuntu24.04`.
const INSPECT_NO_NVIDIA: &str =
    "Error response from daemon: no such image: nvidia/cuda:13.0.1-devel-ubuntu24.04: \
                                 No such image: nvidia/cuda:13.0.1-devel-ubuntu24.04\n";
/// `docker info --format '{{json .Runtimes}}'` (exit 0): no `nvidia` runtime.
const DOCKER_RUNTIMES: &str =
    "{\"io.containerd.runc.v2\":{\"path\":\"runc\"},\"io.containerd.runtime.v1.linux\":\
                               {\"path\":\"runc\"},\"runc\":{\"path\":\"runc\"}}\n";
/// `docker run --rm --pull=never --network=none --gpus all --entrypoint sh IMAGE -c true`
/// without the toolkit: exit 125, nothing on stdout, this on stderr.
const RUN_NO_TOOLKIT: &str = "docker: Error response from daemon: could not select device driver \"\" with \
                              capabilities: [[gpu]]\n\nRun 'docker run --help' for more information\n";

/// An image built `FROM scratch` with busybox, `/tmp`, and stand-ins at
/// `/usr/local/cuda/bin/{nvcc,cuobjdump,cuda-gdb,compute-sanitizer}` that print the H200's
/// recorded `--version` output (H200_NVCC, ...), an empty
/// `/usr/local/nvidia/lib64/libcudadebugger.so.1`, and `/usr/local/cuda/bin` first on PATH;
/// `docker image inspect` gave it this id.
const FULL_IMAGE: &str = "debug-ima-rec/a:1";
const FULL_ID: &str = "sha256:a4f3f9b1f974f39fe3424cee6b549d638ce30802ea5ce20037539b9f0cf18fef";
/// What IMAGE_PROBE_SCRIPT printed in it (`docker run ... --entrypoint sh IMAGE -c SCRIPT`, exit 0).
const PROBE_FULL: &str = "probe=debug-ima-doctor 1
id=0
path=/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
nvcc=/usr/local/cuda/bin/nvcc
nvcc_exit=0
nvcc_out=nvcc: NVIDIA (R) Cuda compiler driver
nvcc_out=Copyright (c) 2005-2025 NVIDIA Corporation
nvcc_out=Built on Wed_Aug_20_01:58:59_PM_PDT_2025
nvcc_out=Cuda compilation tools, release 13.0, V13.0.88
nvcc_out=Build cuda_13.0.r13.0/compiler.36424714_0
cuobjdump=/usr/local/cuda/bin/cuobjdump
cuobjdump_exit=0
cuobjdump_out=cuobjdump: NVIDIA (R) fat binary listing tool
cuobjdump_out=Copyright (c) 2005-2025 NVIDIA Corporation
cuobjdump_out=Built on Thu_Aug_14_07:26:37_PM_PDT_2025
cuobjdump_out=Cuda compilation tools, release 13.0, V13.0.85
cuobjdump_out=Build cuda_13.0.r13.0/compiler.36400806_0
cuda-gdb=/usr/local/cuda/bin/cuda-gdb
cuda-gdb_exit=0
cuda-gdb_out=exec: /usr/local/cuda/bin/cuda-gdb-python3.12-tui --version
cuda-gdb_out=NVIDIA (R) cuda-gdb 13.0
cuda-gdb_out=Portions Copyright (C) 2007-2025 NVIDIA Corporation
cuda-gdb_out=Based on GNU gdb 14.2
cuda-gdb_out=Copyright (C) 2023 Free Software Foundation, Inc.
cuda-gdb_out=License GPLv3+: GNU GPL version 3 or later <http://gnu.org/licenses/gpl.html>
cuda-gdb_out=This is free software: you are free to change and redistribute it.
cuda-gdb_out=There is NO WARRANTY, to the extent permitted by law.
compute-sanitizer=/usr/local/cuda/bin/compute-sanitizer
compute-sanitizer_exit=0
compute-sanitizer_out=NVIDIA (R) Compute Sanitizer
compute-sanitizer_out=Copyright (c) 2020-2025 NVIDIA Corporation
compute-sanitizer_out=Version 2025.3.1.0 (build 36400806) (public-release)
libcudadebugger=/usr/local/nvidia/lib64/libcudadebugger.so.1
tmp=writable
end=ok
";
/// The same stand-ins without compute-sanitizer and libcudadebugger.so.1, busybox's default
/// PATH (without `/usr/local/cuda/bin`), and `USER 1000`.
const PARTIAL_IMAGE: &str = "debug-ima-rec/b:1";
const PARTIAL_ID: &str = "sha256:5493030be91e724046103257ee0924c82bb1cf1c9c69add86c4d18940b8df2fa";
const PROBE_PARTIAL: &str = "probe=debug-ima-doctor 1
id=1000
path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
nvcc=/usr/local/cuda/bin/nvcc
nvcc_exit=0
nvcc_out=nvcc: NVIDIA (R) Cuda compiler driver
nvcc_out=Copyright (c) 2005-2025 NVIDIA Corporation
nvcc_out=Built on Wed_Aug_20_01:58:59_PM_PDT_2025
nvcc_out=Cuda compilation tools, release 13.0, V13.0.88
nvcc_out=Build cuda_13.0.r13.0/compiler.36424714_0
cuobjdump=/usr/local/cuda/bin/cuobjdump
cuobjdump_exit=0
cuobjdump_out=cuobjdump: NVIDIA (R) fat binary listing tool
cuobjdump_out=Copyright (c) 2005-2025 NVIDIA Corporation
cuobjdump_out=Built on Thu_Aug_14_07:26:37_PM_PDT_2025
cuobjdump_out=Cuda compilation tools, release 13.0, V13.0.85
cuobjdump_out=Build cuda_13.0.r13.0/compiler.36400806_0
cuda-gdb=/usr/local/cuda/bin/cuda-gdb
cuda-gdb_exit=0
cuda-gdb_out=exec: /usr/local/cuda/bin/cuda-gdb-python3.12-tui --version
cuda-gdb_out=NVIDIA (R) cuda-gdb 13.0
cuda-gdb_out=Portions Copyright (C) 2007-2025 NVIDIA Corporation
cuda-gdb_out=Based on GNU gdb 14.2
cuda-gdb_out=Copyright (C) 2023 Free Software Foundation, Inc.
cuda-gdb_out=License GPLv3+: GNU GPL version 3 or later <http://gnu.org/licenses/gpl.html>
cuda-gdb_out=This is free software: you are free to change and redistribute it.
cuda-gdb_out=There is NO WARRANTY, to the extent permitted by law.
compute-sanitizer=
tmp=writable
end=ok
";
/// The test image of `container_checks_against_the_real_docker_engine` (busybox alone, no
/// `/tmp`); that test checks that the script still prints exactly this there.
const BUSYBOX_IMAGE: &str = "debug-ima-test/doctor:latest";
const PROBE_BUSYBOX: &str = "probe=debug-ima-doctor 1
id=0
path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
nvcc=
cuobjdump=
cuda-gdb=
compute-sanitizer=
py-spy=
tmp=not writable
end=ok
";
/// Apptainer's `etc/nvliblist.conf` (apptainer/apptainer at 1a0df58e), which does not list
/// libcudadebugger.so (apptainer/apptainer#2261).
const APPTAINER_NVLIBLIST: &str = "# NVLIBLIST.CONF
# This configuration file determines which NVIDIA libraries to search for on 
# the host system when the --nv option is invoked.  You can edit it if you have
# different libraries on your host system.  You can also add binaries and they
# will be mounted into the container when the --nv option is passed.

# put binaries here
# In shared environments you should ensure that permissions on these files 
# exclude writing by non-privileged users.  
nvidia-smi
nvidia-debugdump
nvidia-persistenced
nvidia-cuda-mps-control
nvidia-cuda-mps-server

# put libs here (must end in .so) 
libcuda.so
libEGL_installertest.so
libEGL_nvidia.so
libEGL.so
libGLdispatch.so
libGLESv1_CM_nvidia.so
libGLESv1_CM.so
libGLESv2_nvidia.so
libGLESv2.so
libGL.so
libGLX_installertest.so
libGLX_nvidia.so
libglx.so
libGLX.so
libnvcuvid.so
libnvidia-cbl.so
libnvidia-cfg.so
libnvidia-compiler.so
libnvidia-eglcore.so
libnvidia-egl-wayland.so
libnvidia-encode.so
libnvidia-fatbinaryloader.so
libnvidia-fbc.so
libnvidia-glcore.so
libnvidia-glsi.so
libnvidia-glvkspirv.so
libnvidia-gpucomp.so
libnvidia-gtk2.so
libnvidia-gtk3.so
libnvidia-ifr.so
libnvidia-ml.so
libnvidia-opencl.so
libnvidia-opticalflow.so
libnvidia-ptxjitcompiler.so
libnvidia-rtcore.so
libnvidia-tls.so
libnvidia-wfb.so
libnvoptix.so.1
libOpenCL.so
libOpenGL.so
libvdpau_nvidia.so
nvidia_drv.so
tls_test_.so
";

fn target(runtime: Runtime, image: &str, gpus: bool) -> ContainerTarget {
    ContainerTarget { runtime, image: image.to_string(), gpus }
}

fn version_cmd() -> String {
    format!("{DOCKER} version --format {{{{.Server.Version}}}}")
}

fn inspect_cmd(image: &str) -> String {
    format!("{DOCKER} image inspect --format {INSPECT_FORMAT} {image}")
}

/// The probe's command line as [`Recorded`] shows it.
fn probe_cmd(image: &str, gpus: bool) -> String {
    let gpu = if gpus { " --gpus all" } else { "" };
    format!(
        "{DOCKER} run --rm --name NAME --pull=never --network=none{gpu} --entrypoint sh {image} -c SCRIPT"
    )
}

/// The H200 with Docker answering, `image` present with `id`, and the probe in it printing
/// `probe_out` (with and without the GPUs).
fn docker_h200(image: &str, id: &str, probe_out: &str) -> Recorded {
    h200()
        .exe(DOCKER)
        .output(&version_cmd(), Output::exited(0, DOCKER_SERVER_VERSION, ""))
        .output(&inspect_cmd(image), Output::exited(0, &format!("{id}|\n"), ""))
        .output(
            &format!("{DOCKER} info --format {{{{json .Runtimes}}}}"),
            Output::exited(0, DOCKER_RUNTIMES, ""),
        )
        .output(&probe_cmd(image, true), Output::exited(0, probe_out, ""))
        .output(&probe_cmd(image, false), Output::exited(0, probe_out, ""))
}

fn container_report(probe: &Recorded, t: ContainerTarget) -> Report {
    evaluate(&gather(probe, &Options { container: Some(t), ..opts() }))
}

fn names(r: &Report) -> Vec<&str> {
    r.checks.iter().map(|c| c.name.as_str()).collect()
}

#[test]
fn container_runtime_missing_daemon_down_permission_denied_and_present() {
    // Not installed: nothing further is run, and the image and the tools say why.
    let probe = h200();
    let r = container_report(&probe, target(Runtime::Docker, FULL_IMAGE, true));
    let rt = r.get("runtime").unwrap();
    assert_eq!(rt.status, Status::Missing);
    assert_eq!(rt.detail, "`docker` not found on PATH");
    assert!(rt.fix.as_deref().unwrap().contains("install Docker Engine"), "{rt:#?}");
    assert_eq!(rt.needed_by, ["all"]);
    let image = r.get("image").unwrap();
    assert_eq!(image.status, Status::Missing);
    assert!(image.detail.starts_with("not checked: the runtime is missing"), "{}", image.detail);
    let nvcc = r.get("nvcc").unwrap();
    assert_eq!(nvcc.status, Status::Missing);
    assert!(nvcc.detail.contains("the runtime is missing (`docker` not found on PATH)"), "{}", nvcc.detail);
    assert_eq!(nvcc.fix.as_deref(), Some("fix the `runtime` check first"));
    assert!(!probe.ran().iter().any(|c| c.contains("docker")), "{:?}", probe.ran());

    // The daemon down: the client is there, the server does not answer.
    let probe = docker_h200(FULL_IMAGE, FULL_ID, PROBE_FULL)
        .output(&version_cmd(), Output::exited(1, "\n", DOCKER_DOWN));
    let r = container_report(&probe, target(Runtime::Docker, FULL_IMAGE, true));
    let rt = r.get("runtime").unwrap();
    assert_eq!(rt.status, Status::Missing);
    assert!(rt.detail.starts_with("the Docker daemon does not answer: Cannot connect to the Docker daemon"));
    assert!(rt.fix.as_deref().unwrap().contains("`sudo systemctl start docker`"), "{rt:#?}");
    assert_eq!(status_of(&r, "image"), Status::Missing);
    assert!(r.get("cuda-gdb").unwrap().detail.contains("the runtime is missing"));
    let ran = probe.ran();
    assert!(!ran.iter().any(|c| c.contains(" image inspect ") || c.contains(" run ")), "{ran:?}");
    let err = require(&r, &[RungId::Baseline]).unwrap_err().to_string();
    assert!(err.contains("runtime (all): the Docker daemon does not answer"), "{err}");

    // A user outside the `docker` group.
    let probe = docker_h200(FULL_IMAGE, FULL_ID, PROBE_FULL)
        .output(&version_cmd(), Output::exited(1, "\n", DOCKER_DENIED));
    let rt =
        container_report(&probe, target(Runtime::Docker, FULL_IMAGE, true)).get("runtime").unwrap().clone();
    assert_eq!(rt.status, Status::Missing);
    assert!(
        rt.detail.starts_with("no permission to use the Docker daemon: permission denied"),
        "{}",
        rt.detail
    );
    assert!(rt.fix.as_deref().unwrap().contains("the `docker` group"), "{rt:#?}");

    // Present.
    let r = container_report(
        &docker_h200(FULL_IMAGE, FULL_ID, PROBE_FULL),
        target(Runtime::Docker, FULL_IMAGE, true),
    );
    let rt = r.get("runtime").unwrap();
    assert_eq!(rt.status, Status::Ok);
    assert_eq!(rt.detail, "docker 20.10.24+dfsg1 at /usr/bin/docker");
    assert_eq!(rt.version.as_deref(), Some("docker 20.10.24+dfsg1"));
    assert_eq!(versions(&r)["runtime"], "docker 20.10.24+dfsg1");
}

#[test]
fn container_image_missing_and_present() {
    // The project's image, not built yet: the fix builds it, and nothing runs in it.
    let cuda = "debug-ima/cuda:13.0";
    let probe = docker_h200(cuda, "unused", PROBE_FULL)
        .output(&inspect_cmd(cuda), Output::exited(1, "\n", INSPECT_NO_CUDA));
    let r = container_report(&probe, target(Runtime::Docker, cuda, true));
    let image = r.get("image").unwrap();
    assert_eq!(image.status, Status::Missing);
    assert_eq!(image.detail, "`debug-ima/cuda:13.0` is not among docker's local images");
    assert!(image.fix.as_deref().unwrap().contains("`cargo xtask container build cuda`"), "{image:#?}");
    assert_eq!(image.version, None);
    for tool in ["nvcc", "cuobjdump", "cuda-gdb", "compute-sanitizer", "cuda-debugger-backend", "tmpdir"] {
        let c = r.get(tool).unwrap();
        assert_eq!(c.status, Status::Missing, "{c:#?}");
        assert!(c.detail.starts_with("not checked in `debug-ima/cuda:13.0`: the image is missing"), "{c:#?}");
    }
    assert!(!probe.ran().iter().any(|c| c.contains(" run ")), "{:?}", probe.ran());
    assert!(!versions(&r).contains_key("image"));

    // Someone else's image: pulled.
    let nv = "nvidia/cuda:13.0.1-devel-ubuntu24.04";
    let probe = docker_h200(nv, "unused", PROBE_FULL)
        .output(&inspect_cmd(nv), Output::exited(1, "\n", INSPECT_NO_NVIDIA));
    let image = container_report(&probe, target(Runtime::Docker, nv, true)).get("image").unwrap().clone();
    assert_eq!(image.status, Status::Missing);
    assert!(image
        .fix
        .as_deref()
        .unwrap()
        .starts_with("pull it: `docker pull nvidia/cuda:13.0.1-devel-ubuntu24.04`"));

    // Present: the id is shown and goes to the manifest.
    let r = container_report(
        &docker_h200(FULL_IMAGE, FULL_ID, PROBE_FULL),
        target(Runtime::Docker, FULL_IMAGE, true),
    );
    let image = r.get("image").unwrap();
    assert_eq!(image.status, Status::Ok);
    assert_eq!(image.detail, format!("`{FULL_IMAGE}` is {FULL_ID} (local, no registry digest)"));
    assert_eq!(image.version.as_deref(), Some(FULL_ID));
    assert_eq!(versions(&r)["image"], FULL_ID);
}

#[test]
fn apptainer_images_are_files_or_uris() {
    let t = |image: &str| target(Runtime::Apptainer, image, true);
    // No apptainer here: the runtime is missing, the image file is still checked.
    let probe = h200().file("/images/cuda.sif", "");
    let r = container_report(&probe, t("/images/cuda.sif"));
    assert_eq!(status_of(&r, "runtime"), Status::Missing);
    assert!(r.get("runtime").unwrap().fix.as_deref().unwrap().contains("install Apptainer"));
    let image = r.get("image").unwrap();
    assert_eq!((image.status, image.detail.as_str()), (Status::Ok, "`/images/cuda.sif`, an image file"));
    assert!(r.get("nvcc").unwrap().detail.contains("the runtime is missing"));

    let r = container_report(&h200(), t("/images/missing.sif"));
    let image = r.get("image").unwrap();
    assert_eq!(image.status, Status::Missing);
    assert!(image.fix.as_deref().unwrap().contains("`apptainer build debug-ima-cuda.sif"), "{image:#?}");

    let uri = "docker://nvidia/cuda:13.0.1-devel-ubuntu24.04";
    let r = container_report(&h200(), t(uri));
    let image = r.get("image").unwrap();
    assert_eq!(image.status, Status::Warn);
    assert!(image.fix.as_deref().unwrap().contains(&format!("`apptainer pull image.sif {uri}`")));

    // The probe's command lines, for each runtime.
    let argv = doctor::image_probe_argv(&t("/images/cuda.sif"), "n", "S");
    assert_eq!(argv, ["apptainer", "exec", "--cleanenv", "--nv", "/images/cuda.sif", "sh", "-c", "S"]);
    let argv = doctor::image_probe_argv(&target(Runtime::Podman, "img", true), "n", "S");
    assert_eq!(
        argv.join(" "),
        "podman run --rm --name n --pull=never --network=none --device nvidia.com/gpu=all --security-opt \
         label=disable --entrypoint sh img -c S"
    );
    let argv = doctor::image_probe_argv(&target(Runtime::Docker, "img", false), "n", "S");
    assert_eq!(
        argv.join(" "),
        "docker run --rm --name n --pull=never --network=none --entrypoint sh img -c S"
    );
}

#[test]
fn gpu_plumbing_for_each_runtime() {
    let docker_info = Output::exited(0, DOCKER_RUNTIMES, "");
    // Docker without the toolkit (this machine), then with each of its signs.
    let none = PlumbingFacts { docker_runtimes: Some(docker_info.clone()), ..PlumbingFacts::default() };
    let c = check_gpu_plumbing(Runtime::Docker, &none);
    assert_eq!(c.status, Status::Missing);
    assert!(c
        .detail
        .contains("docker's runtimes are io.containerd.runc.v2, io.containerd.runtime.v1.linux, runc"));
    assert!(
        c.fix.as_deref().unwrap().contains("`sudo nvidia-ctk runtime configure --runtime=docker`"),
        "{c:#?}"
    );
    let ctk = PlumbingFacts { toolkit: vec!["/usr/bin/nvidia-ctk".into()], ..none.clone() };
    let c = check_gpu_plumbing(Runtime::Docker, &ctk);
    assert_eq!(c.status, Status::Ok, "{c:#?}");
    assert!(c.detail.contains("/usr/bin/nvidia-ctk"));
    let cdi = PlumbingFacts { cdi_specs: vec!["/var/run/cdi/nvidia.yaml".into()], ..none.clone() };
    assert_eq!(check_gpu_plumbing(Runtime::Docker, &cdi).status, Status::Ok);

    // Podman needs a CDI spec; nvidia-ctk alone is not enough.
    let c = check_gpu_plumbing(
        Runtime::Podman,
        &PlumbingFacts { toolkit: ctk.toolkit.clone(), ..Default::default() },
    );
    assert_eq!(c.status, Status::Missing);
    assert_eq!(
        c.fix.as_deref(),
        Some("generate it: `sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`")
    );
    let c = check_gpu_plumbing(Runtime::Podman, &PlumbingFacts::default());
    assert!(c.fix.as_deref().unwrap().contains("install the NVIDIA Container Toolkit"), "{c:#?}");
    let c = check_gpu_plumbing(
        Runtime::Podman,
        &PlumbingFacts { cdi_specs: vec!["/etc/cdi/nvidia.yaml".into()], ..Default::default() },
    );
    assert_eq!(c.status, Status::Ok);

    // Apptainer: nvliblist.conf without libcudadebugger.so warns; with it, or with
    // nvidia-container-cli, ok; neither, missing.
    let conf = PathBuf::from("/etc/apptainer/nvliblist.conf");
    let old =
        PlumbingFacts { nvliblist: vec![(conf.clone(), APPTAINER_NVLIBLIST.into())], ..Default::default() };
    let c = check_gpu_plumbing(Runtime::Apptainer, &old);
    assert_eq!(c.status, Status::Warn);
    assert!(c.detail.contains("apptainer/apptainer#2261"), "{c:#?}");
    assert!(c
        .fix
        .as_deref()
        .unwrap()
        .contains("add a line `libcudadebugger.so` to /etc/apptainer/nvliblist.conf"));
    let fixed = format!("{APPTAINER_NVLIBLIST}libcudadebugger.so\n");
    let new = PlumbingFacts { nvliblist: vec![(conf, fixed)], ..Default::default() };
    assert_eq!(check_gpu_plumbing(Runtime::Apptainer, &new).status, Status::Ok);
    let cli = PlumbingFacts { toolkit: vec!["/usr/bin/nvidia-container-cli".into()], ..old };
    assert_eq!(check_gpu_plumbing(Runtime::Apptainer, &cli).status, Status::Ok);
    assert_eq!(check_gpu_plumbing(Runtime::Apptainer, &PlumbingFacts::default()).status, Status::Missing);

    // Through the probe: docker info is asked, the files are looked for; without GPUs the
    // check is not made at all.
    let probe = docker_h200(FULL_IMAGE, FULL_ID, PROBE_FULL);
    let r = container_report(&probe, target(Runtime::Docker, FULL_IMAGE, true));
    assert_eq!(status_of(&r, "gpu-plumbing"), Status::Missing);
    let r =
        container_report(&probe.file("/etc/cdi/nvidia.yaml", ""), target(Runtime::Docker, FULL_IMAGE, true));
    assert_eq!(status_of(&r, "gpu-plumbing"), Status::Ok);
    let probe = docker_h200(FULL_IMAGE, FULL_ID, PROBE_FULL);
    let r = container_report(&probe, target(Runtime::Docker, FULL_IMAGE, false));
    assert!(r.get("gpu-plumbing").is_none());
    assert!(!probe.ran().iter().any(|c| c.contains(" info ")), "{:?}", probe.ran());
    let probe =
        h200().exe("/usr/bin/apptainer").file("/usr/local/etc/apptainer/nvliblist.conf", APPTAINER_NVLIBLIST);
    let r = container_report(&probe, target(Runtime::Apptainer, "/images/cuda.sif", true));
    let c = r.get("gpu-plumbing").unwrap();
    assert_eq!(c.status, Status::Warn);
    assert!(c.detail.starts_with("only /usr/local/etc/apptainer/nvliblist.conf"), "{}", c.detail);
}

#[test]
fn the_probe_in_the_image_gives_the_tool_checks() {
    let probe = docker_h200(FULL_IMAGE, FULL_ID, PROBE_FULL).exe("/usr/bin/nvidia-ctk");
    let r = container_report(&probe, target(Runtime::Docker, FULL_IMAGE, true));
    // The recorded image has no py-spy: a warning (the hang rung goes on without it).
    assert_eq!(status_of(&r, "py-spy"), Status::Warn);
    for c in r.checks.iter().filter(|c| c.name != "py-spy") {
        assert_eq!(c.status, Status::Ok, "{c:#?}");
    }
    assert_eq!(
        r.get("nvcc").unwrap().detail,
        "in debug-ima-rec/a:1: 13.0 (V13.0.88) at /usr/local/cuda/bin/nvcc"
    );
    assert_eq!(
        r.get("cuda-gdb").unwrap().detail,
        "in debug-ima-rec/a:1: 13.0 at /usr/local/cuda/bin/cuda-gdb"
    );
    assert_eq!(
        r.get("cuda-debugger-backend").unwrap().detail,
        "in debug-ima-rec/a:1: libcudadebugger.so.1 at /usr/local/nvidia/lib64/libcudadebugger.so.1"
    );
    assert!(r.get("tmpdir").unwrap().detail.starts_with("in debug-ima-rec/a:1: /tmp writable"));
    // The host's driver against the image's nvcc.
    let dt = r.get("driver-toolkit").unwrap();
    assert!(
        dt.detail.starts_with("nvcc in debug-ima-rec/a:1: driver 580.159.04 runs CUDA 13.0"),
        "{}",
        dt.detail
    );
    // The paths are the image's; nothing is added to the host's PATH.
    assert_eq!(r.tool_path("compute-sanitizer"), Some(Path::new("/usr/local/cuda/bin/compute-sanitizer")));
    assert!(r.path_additions().is_empty());
    let v = versions(&r);
    assert_eq!(v["nvcc"], "Cuda compilation tools, release 13.0, V13.0.88");
    assert_eq!(v["cuda-gdb"], "NVIDIA (R) cuda-gdb 13.0");
    assert_eq!(v["compute-sanitizer"], "Version 2025.3.1.0 (build 36400806) (public-release)");
    assert_eq!(v["image"], FULL_ID);
    assert!(require(&r, &[]).is_ok());
}

#[test]
fn a_tool_and_the_debugger_backend_missing_in_the_image() {
    let probe = docker_h200(PARTIAL_IMAGE, PARTIAL_ID, PROBE_PARTIAL).exe("/usr/bin/nvidia-ctk");
    let r = container_report(&probe, target(Runtime::Docker, PARTIAL_IMAGE, true));
    let cs = r.get("compute-sanitizer").unwrap();
    assert_eq!(cs.status, Status::Missing);
    assert_eq!(
        cs.detail,
        "in debug-ima-rec/b:1: `compute-sanitizer` not found on PATH nor in $CUDA_HOME/bin, \
         /usr/local/cuda/bin, /usr/local/cuda/compute-sanitizer"
    );
    let fix = cs.fix.as_deref().unwrap();
    assert!(fix.starts_with("the image `debug-ima-rec/b:1` lacks compute-sanitizer"), "{fix}");
    assert!(fix.contains("`nvidia/cuda:*-devel`") && fix.contains("containers/README.md"), "{fix}");
    // Found, but off the image's PATH: a warning whose fix is the image's.
    let nvcc = r.get("nvcc").unwrap();
    assert_eq!(nvcc.status, Status::Warn);
    assert!(nvcc.detail.ends_with("(not on the image's PATH)"), "{}", nvcc.detail);
    assert!(nvcc.fix.as_deref().unwrap().contains("`ENV PATH=/usr/local/cuda/bin:$PATH`"));
    assert!(!nvcc.off_path);
    assert!(r.path_additions().is_empty());
    // The runtime did not mount the driver's debugger library.
    let backend = r.get("cuda-debugger-backend").unwrap();
    assert_eq!(backend.status, Status::Warn);
    assert!(
        backend.detail.contains("the runtime did not inject the driver's debugger library"),
        "{backend:#?}"
    );
    assert!(backend.fix.as_deref().unwrap().contains("NVIDIA Container Toolkit"));
    // Only memcheck is stopped.
    assert_eq!(
        r.missing_for(&[RungId::Memcheck]).iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        ["compute-sanitizer"]
    );
    assert!(require(&r, &[RungId::Rebuild, RungId::Coredump, RungId::Attach]).is_ok());
    // The image runs as uid 1000: no SYS_PTRACE for it, so the host's scope matters again.
    assert!(r.get("ptrace").unwrap().detail.contains("uid 1000"), "{:#?}", r.get("ptrace"));
    let r = container_report(
        &probe.file("/proc/sys/kernel/yama/ptrace_scope", "1\n"),
        target(Runtime::Docker, PARTIAL_IMAGE, true),
    );
    let p = r.get("ptrace").unwrap();
    assert_eq!(p.status, Status::Warn);
    assert!(p.fix.as_deref().unwrap().contains("`USER root`"), "{p:#?}");
}

#[test]
fn an_image_without_the_tools() {
    // Without GPUs (as CI runs it): the tools are missing, the back-end cannot be checked.
    let probe = docker_h200(
        BUSYBOX_IMAGE,
        "sha256:72df54af4b3d0f42ba38c410adf08a817e1fb76114319ba841473d99f8568aa2",
        PROBE_BUSYBOX,
    );
    let r = container_report(&probe, target(Runtime::Docker, BUSYBOX_IMAGE, false));
    for (tool, status) in [
        ("nvcc", Status::Missing),
        ("cuobjdump", Status::Warn),
        ("cuda-gdb", Status::Missing),
        ("compute-sanitizer", Status::Missing),
    ] {
        let c = r.get(tool).unwrap();
        assert_eq!(c.status, status, "{c:#?}");
        assert!(c.detail.starts_with(&format!("in {BUSYBOX_IMAGE}: `{tool}` not found on PATH")), "{c:#?}");
        assert!(c.fix.as_deref().unwrap().contains("`nvidia/cuda:*-devel` base"), "{c:#?}");
    }
    let backend = r.get("cuda-debugger-backend").unwrap();
    assert_eq!(backend.status, Status::Warn);
    assert!(backend.detail.contains("not checked: the container gets no GPU"), "{backend:#?}");
    let tmp = r.get("tmpdir").unwrap();
    assert_eq!(tmp.status, Status::Missing);
    assert!(tmp.fix.as_deref().unwrap().contains("`RUN mkdir -m 1777 /tmp`"));
    assert!(r.get("driver-toolkit").is_none());
}

#[test]
fn a_probe_that_fails_or_hangs_says_why() {
    // `--gpus all` on a Docker without the toolkit (this machine).
    let probe = docker_h200(FULL_IMAGE, FULL_ID, PROBE_FULL)
        .output(&probe_cmd(FULL_IMAGE, true), Output::exited(125, "", RUN_NO_TOOLKIT));
    let r = container_report(&probe, target(Runtime::Docker, FULL_IMAGE, true));
    let nvcc = r.get("nvcc").unwrap();
    assert_eq!(nvcc.status, Status::Missing);
    assert!(
        nvcc.detail.contains(
            "the probe failed (exit 125): docker: Error response from daemon: could not select device driver"
        ),
        "{}",
        nvcc.detail
    );
    let fix = nvcc.fix.as_deref().unwrap();
    assert!(fix.contains("`docker run --rm --gpus all --entrypoint sh debug-ima-rec/a:1 -c true`"), "{fix}");
    assert!(fix.contains("`gpu-plumbing`"), "{fix}");
    assert_eq!(status_of(&r, "gpu-plumbing"), Status::Missing);

    // A probe that outlives its 60 s: its container is removed by name.
    let hung =
        Output { exit: Exit::TimedOut, stdout: "probe=debug-ima-doctor 1\n".into(), stderr: String::new() };
    let probe = docker_h200(FULL_IMAGE, FULL_ID, PROBE_FULL).output(&probe_cmd(FULL_IMAGE, true), hung);
    let r = container_report(&probe, target(Runtime::Docker, FULL_IMAGE, true));
    assert!(r.get("cuda-gdb").unwrap().detail.contains("no answer within 60 s"), "{:#?}", r.get("cuda-gdb"));
    assert!(probe.ran().contains(&format!("{DOCKER} rm -f NAME")), "{:?}", probe.ran());
}

#[test]
fn host_tool_probes_are_skipped_in_container_mode() {
    let probe = docker_h200(FULL_IMAGE, FULL_ID, PROBE_FULL).exe("/usr/bin/nvidia-ctk");
    let r = container_report(&probe, target(Runtime::Docker, FULL_IMAGE, true));
    assert_eq!(
        names(&r),
        [
            "gpu",
            "runtime",
            "gpu-plumbing",
            "image",
            "driver-toolkit",
            "nvcc",
            "cuobjdump",
            "cuda-gdb",
            "compute-sanitizer",
            "py-spy",
            "cuda-debugger-backend",
            "ptrace",
            "tmpdir",
            "coredump-space",
            "core-pattern"
        ]
    );
    let ran = probe.ran();
    assert!(ran.iter().any(|c| c.contains("nvidia-smi")), "the GPU stays the host's: {ran:?}");
    assert!(!ran.iter().any(|c| c.contains("/usr/local/cuda/bin/") || c.contains("ldconfig")), "{ran:?}");
    assert_eq!(ran.iter().filter(|c| c.contains(" -c SCRIPT")).count(), 1, "one probe in the image: {ran:?}");
    // The ptrace check stays the host's, said for the container.
    let p = r.get("ptrace").unwrap();
    assert!(p.detail.contains("`--cap-add SYS_PTRACE` and runs as root"), "{}", p.detail);

    // Only what the rungs asked for: memcheck needs compute-sanitizer in the image.
    let o = Options {
        need: vec![RungId::Memcheck],
        container: Some(target(Runtime::Docker, FULL_IMAGE, true)),
        ..opts()
    };
    let r = evaluate(&gather(&probe, &o));
    assert_eq!(names(&r), ["gpu", "runtime", "gpu-plumbing", "image", "compute-sanitizer"]);

    // `none` is the host.
    let o = Options { container: Some(target(Runtime::None, "", true)), ..opts() };
    let probe = h200();
    assert_eq!(evaluate(&gather(&probe, &o)), report(&h200()));
    assert!(probe.ran().iter().any(|c| c == "/usr/local/cuda/bin/nvcc --version"));
}

#[test]
fn ptrace_in_a_container() {
    let facts = |scope: Option<&str>| PtraceFacts {
        proc_status: Some("Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\n".into()),
        ptrace_scope: scope.map(|s| format!("{s}\n")),
    };
    // Docker and Podman: root in the container with SYS_PTRACE; only scope 3 stops it.
    for rt in [Runtime::Docker, Runtime::Podman] {
        for scope in [None, Some("0"), Some("1"), Some("2")] {
            let c = check_ptrace_in_container(&facts(scope), rt, Some(0));
            assert_eq!(c.status, Status::Ok, "{rt:?} {scope:?}");
            assert!(c.detail.contains("only ptrace_scope 3 blocks it"), "{}", c.detail);
        }
        assert_eq!(check_ptrace_in_container(&facts(Some("3")), rt, Some(0)).status, Status::Missing);
        assert_eq!(check_ptrace_in_container(&facts(Some("2")), rt, None).status, Status::Ok);
    }
    // An image with `USER 1000`.
    assert_eq!(check_ptrace_in_container(&facts(Some("0")), Runtime::Docker, Some(1000)).status, Status::Ok);
    assert_eq!(
        check_ptrace_in_container(&facts(Some("1")), Runtime::Docker, Some(1000)).status,
        Status::Warn
    );
    assert_eq!(
        check_ptrace_in_container(&facts(Some("2")), Runtime::Docker, Some(1000)).status,
        Status::Missing
    );
    // Apptainer: this user in the host's PID namespace, the host's rules.
    let c = check_ptrace_in_container(&facts(Some("1")), Runtime::Apptainer, Some(1000));
    assert_eq!(c.status, Status::Warn);
    assert!(c.detail.contains("Apptainer runs the target as this user"), "{}", c.detail);
    assert_eq!(c, {
        let mut host = check_ptrace(&facts(Some("1")));
        host.detail.push_str(" (Apptainer runs the target as this user, in the host's PID namespace)");
        host
    });
}

#[test]
fn image_probe_parser_takes_only_whole_answers() {
    let p = parse_image_probe(PROBE_FULL).unwrap();
    assert_eq!(p.uid, Some(0));
    assert_eq!(
        p.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["nvcc", "cuobjdump", "cuda-gdb", "compute-sanitizer"]
    );
    let gdb = p.tool("cuda-gdb").unwrap();
    assert_eq!((gdb.exit, gdb.output.len()), (Some(0), 8));
    assert_eq!(p.libcudadebugger, [PathBuf::from("/usr/local/nvidia/lib64/libcudadebugger.so.1")]);
    assert_eq!(p.tmp_writable, Some(true));
    let b = parse_image_probe(PROBE_BUSYBOX).unwrap();
    assert!(b.tools.iter().all(|t| t.path.is_none() && t.exit.is_none()), "{b:#?}");
    assert_eq!(b.tmp_writable, Some(false));
    // CRLF and lines before the first are tolerated.
    let crlf = format!("WARNING: some runtime notice\n{}", PROBE_FULL.replace('\n', "\r\n"));
    assert_eq!(parse_image_probe(&crlf), Some(p.clone()));
    // Anything that is not a whole answer is none: every cut-off prefix, other tools' output,
    // errors, bytes.
    let lines: Vec<&str> = PROBE_FULL.lines().collect();
    for n in 0..lines.len() {
        assert_eq!(parse_image_probe(&lines[..n].join("\n")), None, "first {n} lines");
    }
    for text in [
        "",
        RUN_NO_TOOLKIT,
        DOCKER_DOWN,
        INSPECT_NO_CUDA,
        H200_NVCC,
        H200_LDCONFIG,
        "end=ok\nprobe=debug-ima-doctor 1\n",
    ] {
        assert_eq!(parse_image_probe(text), None, "{text}");
    }
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..200 {
        let bytes: Vec<u8> = (0..256)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed % 256) as u8
            })
            .collect();
        let text = String::from_utf8_lossy(&bytes);
        assert_eq!(parse_image_probe(&text), None);
        // Garbage inside a whole answer does not break it.
        let mixed = PROBE_FULL.replace("tmp=writable\n", &format!("{text}\ntmp=writable\n"));
        assert_eq!(parse_image_probe(&mixed).map(|m| m.tools), Some(p.tools.clone()));
    }
}

/// A folder of stand-ins printing the H200's recorded `--version` output, and a library
/// folder holding an empty `libcudadebugger.so.1`.
fn standin_toolkit(name: &str, tools: &[(&str, &str)]) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("doctor-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    std::fs::create_dir_all(dir.join("lib")).unwrap();
    for (tool, text) in tools {
        let p = dir.join("bin").join(tool);
        std::fs::write(&p, format!("#!/bin/sh\ncat <<'EOF'\n{text}EOF\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::write(dir.join("lib/libcudadebugger.so.1"), "").unwrap();
    dir
}

fn run_script_here(dir: &Path) -> Output {
    let out = std::process::Command::new("sh")
        .args(["-c", IMAGE_PROBE_SCRIPT])
        .env("PATH", format!("{}:/usr/bin:/bin", dir.join("bin").display()))
        .env("LD_LIBRARY_PATH", dir.join("lib"))
        .env_remove("CUDA_HOME")
        .output()
        .unwrap();
    Output::exited(
        out.status.code().unwrap_or(-1),
        &String::from_utf8_lossy(&out.stdout),
        &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn the_probe_script_run_here_with_sh() {
    let all = [
        ("nvcc", H200_NVCC),
        ("cuobjdump", H200_CUOBJDUMP),
        ("cuda-gdb", H200_CUDA_GDB),
        ("compute-sanitizer", H200_SANITIZER),
    ];
    let dir = standin_toolkit("probe-all", &all);
    let out = run_script_here(&dir);
    assert!(out.success(), "{out:?}");
    let p = parse_image_probe(&out.stdout).unwrap_or_else(|| panic!("{}", out.stdout));
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    assert_eq!(p.uid, doctor::parse_proc_status(&status).0);
    for (tool, text) in all {
        let t = p.tool(tool).unwrap();
        assert_eq!(t.path.as_deref(), Some(dir.join("bin").join(tool).as_path()));
        assert_eq!(t.exit, Some(0));
        let printed: Vec<&str> = text.lines().collect();
        assert_eq!(t.output, printed, "{tool}");
    }
    assert!(p.libcudadebugger.contains(&dir.join("lib/libcudadebugger.so.1")), "{p:#?}");
    assert_eq!(p.tmp_writable, Some(std::fs::metadata("/tmp").is_ok()));

    // Fed to the doctor as what `docker run` printed: every tool check is ok.
    let image = "debug-ima-test/sh:here";
    let probe = docker_h200(image, FULL_ID, &out.stdout).exe("/usr/bin/nvidia-ctk");
    let r = container_report(&probe, target(Runtime::Docker, image, true));
    for tool in ["nvcc", "cuobjdump", "cuda-gdb", "compute-sanitizer", "cuda-debugger-backend"] {
        let c = r.get(tool).unwrap();
        assert_eq!(c.status, Status::Ok, "{c:#?}");
        assert!(c.detail.starts_with(&format!("in {image}: ")), "{c:#?}");
    }

    // Without compute-sanitizer (where this machine has none of its own either).
    let cuda_sanitizer =
        ["/usr/local/cuda/bin/compute-sanitizer", "/usr/local/cuda/compute-sanitizer/compute-sanitizer"];
    if !cuda_sanitizer.iter().any(|p| Path::new(p).exists()) {
        let dir = standin_toolkit("probe-three", &all[..3]);
        let out = run_script_here(&dir);
        let p = parse_image_probe(&out.stdout).unwrap();
        assert_eq!(p.tool("compute-sanitizer").unwrap().path, None);
        let probe = docker_h200(image, FULL_ID, &out.stdout);
        let r = container_report(&probe, target(Runtime::Docker, image, true));
        assert_eq!(status_of(&r, "compute-sanitizer"), Status::Missing);
        assert_eq!(status_of(&r, "cuda-gdb"), Status::Ok);
    }
}

#[test]
fn doctor_container_without_image_is_a_usage_error() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["doctor", "--container", "docker"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--image <IMAGE>"), "{err}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["doctor", "--image", "debug-ima/cuda:13.0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--container <RUNTIME>"));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["doctor", "--container", "lxc", "--image", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("[possible values: docker, podman, apptainer, none]")
    );
}

#[test]
fn render_shows_the_container_rows() {
    let probe = docker_h200(PARTIAL_IMAGE, PARTIAL_ID, PROBE_PARTIAL).exe("/usr/bin/nvidia-ctk");
    let r = container_report(&probe, target(Runtime::Docker, PARTIAL_IMAGE, true));
    assert_eq!(render(&r), render(&container_report(&probe, target(Runtime::Docker, PARTIAL_IMAGE, true))));
    insta::with_settings!({snapshot_path => support::root().join("tests/snapshots"), prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("doctor_container", render(&r));
    });
}

// ---------------------------------------------------------------------------------------
// The real Docker engine of this machine (and CI's)
// ---------------------------------------------------------------------------------------

/// Skips (prints why) on a developer's machine, fails in CI (`CI` set).
fn skip_or_fail(why: &str) {
    if std::env::var_os("CI").is_some() {
        panic!(
            "{why}; CI must run the Docker test (`.ci/run` installs busybox-static; start the Docker daemon)"
        );
    }
    support::skipped(why);
}

/// `docker ARGS` with this process's environment, stdout trimmed, or the failure.
fn docker(args: &[&str]) -> Result<String, String> {
    let out = std::process::Command::new("docker").args(args).output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
    }
}

/// `debug-ima-test/doctor:latest`, built once from busybox (reused when it exists).
fn busybox_image() -> Result<String, String> {
    if let Ok(id) = docker(&["image", "inspect", "--format", "{{.Id}}", BUSYBOX_IMAGE]) {
        return Ok(id);
    }
    let ctx = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("doctor-image-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&ctx);
    std::fs::create_dir_all(&ctx).map_err(|e| e.to_string())?;
    std::fs::copy("/bin/busybox", ctx.join("busybox"))
        .map_err(|e| format!("cannot copy /bin/busybox: {e}"))?;
    std::fs::write(
        ctx.join("Containerfile"),
        "FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n",
    )
    .map_err(|e| e.to_string())?;
    let file = ctx.join("Containerfile");
    let built =
        docker(&["build", "-q", "-f", &file.to_string_lossy(), "-t", BUSYBOX_IMAGE, &ctx.to_string_lossy()]);
    let _ = std::fs::remove_dir_all(&ctx);
    built?;
    docker(&["image", "inspect", "--format", "{{.Id}}", BUSYBOX_IMAGE])
}

#[test]
fn container_checks_against_the_real_docker_engine() {
    if doctor::locate(&doctor::SystemProbe, "docker").path().is_none() {
        skip_or_fail("`docker` is not on PATH");
        return;
    }
    if !Path::new("/bin/busybox").is_file() {
        skip_or_fail("/bin/busybox is missing (`apt-get install busybox-static`)");
        return;
    }
    let server = match docker(&["version", "--format", "{{.Server.Version}}"]) {
        Ok(v) => v,
        Err(e) => {
            skip_or_fail(&format!("the Docker daemon does not answer: {e}"));
            return;
        }
    };
    let id = busybox_image().unwrap_or_else(|e| panic!("cannot build {BUSYBOX_IMAGE}: {e}"));
    assert!(id.starts_with("sha256:"), "{id}");

    let opts = Options {
        coredump_dir: std::env::temp_dir().join("xtask-doctor-docker"),
        need: Vec::new(),
        container: Some(target(Runtime::Docker, BUSYBOX_IMAGE, false)),
        wait_for_gpu: false,
    };
    let facts = gather(&doctor::SystemProbe, &opts);
    // The script prints exactly what the recorded PROBE_BUSYBOX holds.
    let c = facts.container.as_ref().unwrap();
    let ran = c.in_image.as_ref().expect("the probe ran in the image");
    assert_eq!(ran.stdout, PROBE_BUSYBOX, "{ran:?}");
    let r = evaluate(&facts);

    let rt = r.get("runtime").unwrap();
    assert_eq!(rt.status, Status::Ok, "{rt:#?}");
    assert_eq!(rt.version.as_deref(), Some(format!("docker {server}").as_str()));
    let image = r.get("image").unwrap();
    assert_eq!(image.status, Status::Ok, "{image:#?}");
    assert!(image.detail.contains(&id), "{}", image.detail);
    assert_eq!(versions(&r)["image"], id);
    assert!(r.get("gpu-plumbing").is_none(), "no GPUs asked for");
    for (tool, status) in [
        ("nvcc", Status::Missing),
        ("cuobjdump", Status::Warn),
        ("cuda-gdb", Status::Missing),
        ("compute-sanitizer", Status::Missing),
    ] {
        let c = r.get(tool).unwrap();
        assert_eq!(c.status, status, "{c:#?}");
        assert!(c.detail.starts_with(&format!("in {BUSYBOX_IMAGE}: `{tool}` not found")), "{c:#?}");
        let fix = c.fix.as_deref().unwrap();
        assert!(fix.starts_with(&format!("the image `{BUSYBOX_IMAGE}` lacks {tool}")), "{fix}");
        assert!(fix.contains("`nvidia/cuda:*-devel`"), "{fix}");
    }
    assert_eq!(status_of(&r, "cuda-debugger-backend"), Status::Warn);
    assert_eq!(status_of(&r, "tmpdir"), Status::Missing);
    // No container is left behind: none of this process's probes (`debug-ima-doctor-PID-N`;
    // the binary's doctor, run by other tests beside this one, names its own with its pid).
    let mine = format!("name=debug-ima-doctor-{}-", std::process::id());
    let left = docker(&["ps", "-a", "--filter", &mine, "--format", "{{.Names}}"]).unwrap();
    assert_eq!(left, "", "containers left: {left}");
}

// ---------------------------------------------------------------------------------------
// The command line: `--rungs a,b` (as debug-ima), the hidden `--rung`, `--json`'s fields
// ---------------------------------------------------------------------------------------

/// `doctor ARGS` through the binary on this machine: (exit code, stdout, stderr).
fn doctor_bin(args: &[&str]) -> (Option<i32>, String, String) {
    let out =
        std::process::Command::new(env!("CARGO_BIN_EXE_xtask")).arg("doctor").args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn doctor_json_has_the_documented_fields() {
    let (code, stdout, stderr) = doctor_bin(&["--json", "--rungs", "baseline,memcheck"]);
    let v: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["checks", "gpu", "missing", "ready", "rungs", "schema", "tool", "warnings"]);
    assert_eq!(v["schema"], doctor::JSON_SCHEMA);
    assert_eq!(v["rungs"], serde_json::json!(["baseline", "memcheck"]));
    assert!(v["tool"].as_str().unwrap().starts_with(concat!(env!("CARGO_PKG_VERSION"), " (")), "{v}");
    let ready = v["ready"].as_bool().unwrap();
    assert_eq!(code, Some(if ready { 0 } else { 1 }), "exit 1 exactly when not ready");
    assert_eq!(ready, v["missing"].as_array().unwrap().is_empty());
    let checks = v["checks"].as_array().unwrap();
    assert!(!checks.is_empty());
    for c in checks {
        let mut fields: Vec<&str> = c.as_object().unwrap().keys().map(String::as_str).collect();
        fields.sort();
        assert_eq!(
            fields,
            ["detail", "fix", "name", "need", "needed_by", "off_path", "path", "status", "version"]
        );
        assert!(["ok", "warn", "missing"].contains(&c["status"].as_str().unwrap()), "{c}");
    }
    let names: Vec<&str> = checks.iter().map(|c| c["name"].as_str().unwrap()).collect();
    // Only what baseline and memcheck need: no cuda-gdb, no nvcc.
    assert!(names.contains(&"gpu") && names.contains(&"compute-sanitizer"), "{names:?}");
    assert!(!names.contains(&"cuda-gdb") && !names.contains(&"nvcc"), "{names:?}");
    for m in v["missing"].as_array().unwrap() {
        let c = checks.iter().find(|c| c["name"] == *m).unwrap();
        assert_eq!(c["status"], "missing");
    }
    assert_eq!(
        v["gpu"].as_bool().unwrap(),
        checks.iter().any(|c| c["name"] == "gpu" && c["status"] != "missing")
    );
}

#[test]
fn doctor_takes_rungs_as_a_comma_list_and_rung_as_a_hidden_alias() {
    let (c1, list, _) = doctor_bin(&["--json", "--rungs", "coredump,attach"]);
    let (c2, repeated, _) = doctor_bin(&["--json", "--rung", "coredump", "--rung", "attach"]);
    let rungs = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap()["rungs"].clone();
    assert_eq!(rungs(&list), serde_json::json!(["coredump", "attach"]));
    assert_eq!(rungs(&list), rungs(&repeated));
    assert_eq!(c1, c2);
    let (_, all, _) = doctor_bin(&["--json", "--rungs", "all"]);
    assert_eq!(rungs(&all).as_array().unwrap().len(), RungId::ALL.len());
    let (code, _, err) = doctor_bin(&["--rungs", "baseline,bogus"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("invalid value 'bogus' for '--rungs <RUNG>'"), "{err}");
    assert!(
        err.contains("baseline, rebuild, launch-blocking, coredump, attach, memcheck, initcheck, racecheck, synccheck, hang, repro, all"),
        "{err}"
    );
    let (_, help, _) = doctor_bin(&["--help"]);
    assert!(help.contains("--rungs <RUNG>") && !help.contains("--rung <RUNG>"), "{help}");
}

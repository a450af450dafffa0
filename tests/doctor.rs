//! `cargo xtask doctor`'s checks, fed real outputs through a recorded [`Probe`]: an H200
//! with CUDA 13.0 (recorded on the device machine with the same commands the doctor runs,
//! and the version lines of shared/transcripts/h200-cuda13/00_env.log), a
//! machine without a GPU (nvidia-smi not found), a driver that does not answer. Also the
//! real thing on this machine: `run_checks` must finish in well under 10 s.
//!
//! Every tool output below is copied from a real run; a case the recordings do not have
//! (an old driver) is tested on the versions themselves, not on made-up output.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use xtask::doctor::{
    self, check_ptrace, check_space, driver_toolkit, evaluate, gather, parse_df_available_kib, parse_gpus,
    parse_version, render, require, run_checks, run_with_timeout, versions, Exit, Options, Output, Probe,
    PtraceFacts, Report, SpaceFacts, Status, NO_GPU_FIX,
};

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
        assert!(timeout <= Duration::from_secs(10), "every probe is limited to 10 s");
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
            "cuda-debugger-backend",
            "ptrace",
            "tmpdir",
            "coredump-space",
            "core-pattern"
        ]
    );
    for c in &r.checks {
        assert_eq!(c.status, Status::Ok, "{c:#?}");
        assert_eq!(c.fix, None, "{c:#?}");
    }
    assert!(r.has_gpu());
    assert!(r.missing_for(&["all"]).is_empty());
    assert!(require(&r, &["all"]).is_ok());
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
    for rung in ["baseline", "rebuild", "coredump", "attach", "memcheck"] {
        assert!(r.missing_for(&[rung]).iter().any(|c| c.name == "gpu"), "{rung}");
    }
    let err = require(&r, &["coredump"]).unwrap_err().to_string();
    assert!(err.starts_with("this machine cannot run the ladder: no usable GPU"), "{err}");
    assert!(err.contains(NO_GPU_FIX), "{err}");
    assert!(err.contains("cuda-gdb (coredump, attach)"), "{err}");
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
    assert!(r.missing_for(&["all"]).is_empty(), "a warning does not stop the ladder");
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
    assert!(r.missing_for(&["all"]).is_empty());
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
    assert_eq!(r.missing_for(&["memcheck"]).len(), 1);
    assert!(r.missing_for(&["rebuild", "coredump", "attach"]).is_empty());
    assert!(require(&r, &["coredump"]).is_ok());
    assert!(require(&r, &["memcheck"]).is_err());
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
    let o = Options { need: vec!["memcheck".into()], ..opts() };
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
    assert_eq!(r.missing_for(&["attach"]).iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["ptrace"]);
    assert!(r.missing_for(&["coredump", "memcheck"]).is_empty());
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
    insta::assert_snapshot!("doctor_h200", render(&h));
    let n = report(&no_gpu());
    assert_eq!(render(&n), render(&report(&no_gpu())));
    insta::assert_snapshot!("doctor_no_gpu", render(&n));
}

// ---------------------------------------------------------------------------------------
// The real machine
// ---------------------------------------------------------------------------------------

#[test]
fn run_checks_on_this_machine_is_fast() {
    let dir = std::env::temp_dir().join(format!("xtask-doctor-{}", std::process::id()));
    let start = Instant::now();
    let r = run_checks(&Options { coredump_dir: dir.join("not-yet"), ..Options::default() });
    let took = start.elapsed();
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let smi_found = doctor::locate(&doctor::SystemProbe, "nvidia-smi").path().is_some();
    if !smi_found {
        // CI and the developers' machines have no GPU.
        assert!(!r.has_gpu());
        assert!(took < Duration::from_secs(3), "without a GPU the doctor answers at once: {took:?}");
        let gpu = r.get("gpu").unwrap();
        assert_eq!(gpu.status, Status::Missing);
        assert_eq!(gpu.fix.as_deref(), Some(NO_GPU_FIX));
        let err = require(&r, &["all"]).unwrap_err().to_string();
        assert!(err.contains("no usable GPU"), "{err}");
    }
    if smi_found {
        // The GPU machine: `cargo test --test doctor -- --nocapture` shows the report.
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
    let start = Instant::now();
    // A child that outlives its parent's kill keeps the pipes open: the group kill ends it.
    let out = run_with_timeout(
        Path::new("/bin/sh"),
        &["-c", "echo started; sleep 30 & sleep 30"],
        Duration::from_millis(300),
    );
    assert_eq!(out.exit, Exit::TimedOut);
    assert_eq!(out.stdout, "started\n");
    assert!(start.elapsed() < Duration::from_secs(3), "{:?}", start.elapsed());

    // A background grandchild left holding stdout after its parent exited is killed too.
    let start = Instant::now();
    let out = run_with_timeout(Path::new("/bin/sh"), &["-c", "echo bye; sleep 30 &"], Duration::from_secs(5));
    assert_eq!(out, Output::exited(0, "bye\n", ""));
    assert!(start.elapsed() < Duration::from_secs(3), "{:?}", start.elapsed());

    let out = run_with_timeout(
        Path::new("/bin/sh"),
        &["-c", "echo out; echo err >&2; exit 3"],
        Duration::from_secs(5),
    );
    assert_eq!(out, Output::exited(3, "out\n", "err\n"));
    let out = run_with_timeout(Path::new("/nonexistent/nvidia-smi"), &[], Duration::from_secs(1));
    assert!(matches!(out.exit, Exit::NotRun(_)), "{out:?}");
}

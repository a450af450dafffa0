//! `debug-ima dump PID`, run as the real binary on a stand-in "target" the test starts itself
//! (not through the tool), with the stand-in `py-spy`, `gdb` and `cuda-gdb` on PATH replaying
//! the H200 recordings: py-spy's stacks of hang_triton (tests/fixtures/h200/hang), cuda-gdb's
//! attach to the hung hang_flag and hang_triton, recorded with `dump`'s own attach command on
//! programs started without the tool (tests/fixtures/h200/dump), and cuda-gdb on a
//! user-triggered dump (tests/fixtures/h200/hang).
//!
//! THE HOST STACKS OF gdb ARE A STAND-IN: no plain gdb was on the H200, so the stand-in gdb
//! replays the `thread apply all bt` of hang_flag's CPU core (the same program's host threads,
//! recorded after its abort). tests/gpu/record_dump.sh records a real one where gdb is
//! installed; for a program without an attach recording the stand-in cuda-gdb falls back to
//! the reading of its user-triggered dump (tests/standins/cuda-gdb says how).
//!
//! Each test checks what is left: the target still running (and not stopped) without
//! `--kill`, gone with it, every other process untouched.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::support;
use support::run::{Bundle, Output, Run};
use support::{alive, fixture, path_with, standins, Scratch};

/// A target started by the test, outside the tool: its own process group, the stand-ins on
/// PATH, replaying `case`.
struct Target {
    child: Child,
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = kill(Pid::from_raw(-(self.child.id() as i32)), Signal::SIGKILL);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(s: &Scratch, case: &str, argv: &[&str], env: &[(&str, String)]) -> Target {
    let mut cmd = Command::new(argv[0]);
    cmd.args(&argv[1..])
        .current_dir(&s.dir)
        .env("PATH", path_with(&[&standins()]))
        .env("STANDIN_CASE", fixture(case))
        .env("STANDIN_PIDS", s.pids_file())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(s.path("target.stdout")).unwrap())
        .stderr(std::fs::File::create(s.path("target.stderr")).unwrap())
        .process_group(0);
    for (k, v) in env {
        cmd.env(k, v);
    }
    Target { child: cmd.spawn().expect("cannot start the stand-in target") }
}

/// The pid the stand-in target recorded for `role`, once it has.
fn recorded(s: &Scratch, role: &str) -> i32 {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some((_, p)) = s.standin_pids().into_iter().find(|(r, _)| r == role) {
            return p;
        }
        assert!(Instant::now() < until, "the stand-in target recorded no {role} pid");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `xtask dump ARGS...` with the stand-ins first on PATH, replaying `case`.
fn dump<'a>(s: &'a Scratch, case: &str, args: &[&str]) -> Run<'a> {
    let mut argv = vec!["dump".to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    argv.extend(["--yes".to_string(), "--bundle-dir".to_string(), s.bundles().display().to_string()]);
    let env = vec![
        ("STANDIN_CASE".to_string(), fixture(case).display().to_string()),
        ("STANDIN_ATTACHES".to_string(), s.path("attaches.txt").display().to_string()),
    ];
    Run { scratch: s, args: argv, env, path: path_with(&[&standins()]), stdin: None }
}

/// The state letter in `/proc/PID/stat` (`S`, `R`, `T`, ...).
fn state(pid: i32) -> char {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(')').and_then(|(_, r)| r.trim_start().chars().next()).unwrap_or('?')
}

fn attaches(s: &Scratch) -> String {
    std::fs::read_to_string(s.path("attaches.txt")).unwrap_or_default()
}

fn verify(b: &Bundle) {
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["bundle", "verify", b.root.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}

fn wait_for(what: &str, f: &dyn Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A C++ kernel spinning on a flag (hang_flag), not armed: gdb's host stacks and a cuda-gdb
/// attach, the verdict names the kernel, the line and the host line, and the process is left
/// running. The stand-in attach is made to leave it stopped (on the H200 a cuda-gdb killed
/// mid-attach left the process running, tests/fixtures/h200/dump; a tracer that ends while its
/// process is group-stopped leaves it so): the tool sends it SIGCONT.
#[test]
fn a_hung_native_process_is_dumped_and_left_running() {
    let s = Scratch::for_run("dump-native");
    let _t = start(&s, "hang/hang_flag", &["target"], &[]);
    let pid = recorded(&s, "target");
    let out = dump(&s, "hang/hang_flag", &[&pid.to_string()]).env("STANDIN_ATTACH_LEAVES_STOPPED", "1").run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    assert_eq!(b.rung_dirs(), ["01-dump"], "{}", out.both());
    assert_eq!(b.manifest()["recipe"]["name"].as_str(), Some("dump"));
    assert_eq!(b.rung("dump")["status"].as_str(), Some("ran"), "{}", b.read("manifest.yaml"));
    let d = "rungs/01-dump";
    assert!(b.read(&format!("{d}/gdb-{pid}.log")).contains("hang_flag.cu:31"));
    let attach = b.read(&format!("{d}/cudagdb-attach-{pid}.log"));
    assert!(attach.contains(&format!("[Inferior 1 (process {pid}) detached]")), "{attach}");
    assert!(attach.contains("Thread 1 \"hf\" stopped."), "the real attach is replayed: {attach}");
    let command = b.read(&format!("{d}/cudagdb-attach-{pid}.command.txt"));
    assert!(command.contains(&format!("-p {pid}")) && command.contains("'info cuda threads'"), "{command}");
    assert_eq!(attaches(&s).trim(), pid.to_string());
    let v = &b.findings()["verdict"];
    assert_eq!(
        (v["error"].as_str(), v["kernel"].as_str(), v["line"].as_u64()),
        (Some("hang"), Some("consume"), Some(8)),
        "{v}"
    );
    assert!(v["file"].as_str().unwrap().ends_with("hang_flag.cu"), "{v}");
    let p = &v["hang"]["processes"][0];
    assert_eq!(p["pid"], pid, "{v}");
    let host = &p["host"][0]["frame"];
    assert_eq!((host["function"].as_str(), host["line"].as_u64()), (Some("main"), Some(31)), "{v}");
    assert!(out.stdout.starts_with("verdict: hang in `consume` at "), "{}", out.both());
    assert!(out.stdout.contains("it was left running"), "{}", out.both());
    assert!(b.notes("dump").contains(&format!("process {pid} was left stopped by a debugger: sent SIGCONT")));
    // Still running, and not stopped.
    assert!(alive(pid));
    wait_for("the target to run again", &|| state(pid) != 'T');
    verify(&b);
}

/// A Triton kernel in a Python process (hang_triton): py-spy's stacks, no gdb (a Python
/// process's host stack is py-spy's), the attach; `--json` prints the analysis on stdout.
#[test]
fn a_hung_python_process_gets_py_spy_and_the_attach() {
    let s = Scratch::for_run("dump-python");
    let python = s.path("python3");
    std::os::unix::fs::symlink(standins().join("target"), &python).unwrap();
    let _t = start(&s, "hang/hang_triton", &[python.to_str().unwrap(), "hang_triton.py"], &[]);
    let pid = recorded(&s, "target");
    let out = dump(&s, "hang/hang_triton", &[&pid.to_string(), "--json"]).run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    let d = "rungs/01-dump";
    assert!(b.read(&format!("{d}/pyspy-{pid}.log")).contains(&format!("Process {pid}:")));
    assert!(!b.exists(&format!("{d}/gdb-{pid}.log")), "{:?}", b.files_in(d));
    let command = b.read(&format!("{d}/cudagdb-attach-{pid}.command.txt"));
    assert!(command.contains("-iex 'set auto-solib-add off'"), "{command}");
    let json: serde_json::Value = serde_json::from_str(&out.stdout).expect("stdout is the analysis as JSON");
    let v = &json["verdict"];
    assert_eq!(
        (v["error"].as_str(), v["kernel"].as_str(), v["line"].as_u64()),
        (Some("hang"), Some("wait_then_copy"), Some(12)),
        "{v}"
    );
    let host = &v["hang"]["processes"][0]["host"][0]["frame"];
    assert_eq!((host["function"].as_str(), host["line"].as_u64()), (Some("main"), Some(26)), "{v}");
    assert_eq!(json, b.findings());
    assert!(alive(pid) && state(pid) != 'T', "state {}", state(pid));
    verify(&b);
}

/// With `--kill`, a process armed for a user-triggered dump gets one byte into its pipe and no
/// attach; the dump is read, the process aborts, and only its tree is ended: its parent and the
/// parent's other child live on.
#[test]
fn kill_triggers_the_armed_dump_without_an_attach_and_ends_only_the_tree() {
    let s = Scratch::for_run("dump-kill-armed");
    let dumps = s.path("dumps");
    std::fs::create_dir_all(&dumps).unwrap();
    let env = [
        ("CUDA_ENABLE_USER_TRIGGERED_COREDUMP", "1".to_string()),
        ("CUDA_COREDUMP_PIPE", format!("{}/corepipe.%h.%p", dumps.display())),
        ("CUDA_COREDUMP_FILE", format!("{}/core.%h.%p.%t", dumps.display())),
    ];
    // A parent shell with the target and a `sleep` beside it.
    let parent = start(&s, "hang/hang_flag", &["sh", "-c", "target & sleep 1000 & wait"], &env);
    let pid = recorded(&s, "target");
    wait_for("the target's pipe", &|| {
        std::fs::read_dir(&dumps)
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("corepipe."))
    });
    let sibling = sibling_sleep(parent.child.id() as i32);
    let out = dump(&s, "hang/hang_flag", &[&pid.to_string(), "--kill"]).run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    assert_eq!(attaches(&s), "", "nothing may attach before a user-triggered dump");
    let b = s.only_bundle();
    let d = "rungs/01-dump";
    let files = b.files_in(d);
    assert!(
        files.iter().any(|f| f.starts_with("core_") && f.contains(&format!(".{pid}."))),
        "the dump moved into the bundle as core_<host>.<pid>.<time>: {files:?}"
    );
    assert!(!files.iter().any(|f| f.starts_with("cudagdb-attach-")), "{files:?}");
    let gdb = b.read(&format!("{d}/cudagdb-{pid}.log"));
    assert!(gdb.contains(&format!("Opening GPU coredump: {}", b.root.join(d).display())), "{gdb}");
    let notes = b.notes("dump");
    assert!(notes.contains(&format!("triggered a GPU coredump of process {pid}")), "{notes}");
    let v = &b.findings()["verdict"];
    assert_eq!((v["kernel"].as_str(), v["line"].as_u64()), (Some("consume"), Some(8)), "{v}");
    assert!(out.stdout.contains("its tree was ended"), "{}", out.both());
    wait_for("the target to go", &|| !alive(pid));
    assert!(alive(parent.child.id() as i32), "the target's parent was signalled");
    assert!(alive(sibling), "the parent's other child was signalled");
    verify(&b);
}

/// The `sleep` child of `parent`.
fn sibling_sleep(parent: i32) -> i32 {
    let mut found = None;
    wait_for("the sibling sleep", &|| {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            let Ok(p) = e.file_name().to_string_lossy().parse::<i32>() else { return false };
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            let ppid =
                stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().nth(1)?.parse::<i32>().ok());
            ppid == Some(parent) && stat.contains("(sleep)")
        })
    });
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
        let ppid = stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().nth(1)?.parse::<i32>().ok());
        if ppid == Some(parent) && stat.contains("(sleep)") {
            found = Some(p);
        }
    }
    found.unwrap()
}

/// With `--kill` and no user-triggered dump armed: the attach first, then the tree ended.
#[test]
fn kill_ends_an_unarmed_tree_after_the_attach() {
    let s = Scratch::for_run("dump-kill");
    let _t = start(&s, "hang/hang_flag", &["target"], &[]);
    let pid = recorded(&s, "target");
    let out = dump(&s, "hang/hang_flag", &[&pid.to_string(), "--kill"]).run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    assert!(b.exists(&format!("rungs/01-dump/cudagdb-attach-{pid}.log")));
    let notes = b.notes("dump");
    assert!(
        notes.contains(&format!("ended the tree of process {pid} (`--kill`): SIGTERM to {pid}")),
        "{notes}"
    );
    wait_for("the target to go", &|| !alive(pid));
    s.assert_no_standin_left();
}

/// A process whose tree does not use CUDA (no process maps `libcuda.so`: the stand-in target
/// with STANDIN_NO_CUDA=1): gdb's host stacks only, no cuda-gdb attach, and the verdict line
/// says why there is none (issue 41: it attached cuda-gdb and advised compute-sanitizer's sweep).
#[test]
fn a_process_without_cuda_gets_host_stacks_and_no_cuda_gdb() {
    let s = Scratch::for_run("dump-no-cuda");
    let _t = start(&s, "hang/hang_flag", &["target"], &[("STANDIN_NO_CUDA", "1".into())]);
    let pid = recorded(&s, "target");
    let out = dump(&s, "hang/hang_flag", &[&pid.to_string()]).run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    assert_eq!(attaches(&s), "", "cuda-gdb attached: {}", out.both());
    let b = s.only_bundle();
    let d = "rungs/01-dump";
    assert!(b.exists(&format!("{d}/gdb-{pid}.log")), "{:?}", b.files_in(d));
    assert!(!b.files_in(d).iter().any(|f| f.starts_with("cudagdb")), "{:?}", b.files_in(d));
    let said = format!("no verdict: process {pid} does not use CUDA");
    assert!(out.both().contains(&said), "{}", out.both());
    assert!(!out.both().contains("sweep") && !out.both().contains("cuda-gdb attached"), "{}", out.both());
    assert!(b.read("summary.md").contains("does not use CUDA"), "{}", b.read("summary.md"));
    assert!(alive(pid));
}

fn refused(out: &Output, what: &str) {
    assert_eq!(out.code(), Some(2), "{}", out.both());
    assert!(out.stderr.contains(what), "{}", out.both());
}

/// PID 1, a PID that does not exist, the tool itself and its parent are refused (exit 2),
/// before anything is written.
#[test]
fn bad_pids_are_refused_with_exit_2() {
    let s = Scratch::for_run("dump-refused");
    refused(&dump(&s, "hang/hang_flag", &["1"]).run(), "init process");
    let mut gone = Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    refused(&dump(&s, "hang/hang_flag", &[&pid.to_string()]).run(), "does not exist");
    let xtask = env!("CARGO_BIN_EXE_xtask");
    let bundles = s.bundles().display().to_string();
    for (script, what) in [
        ("exec \"$0\" dump $$ --yes --bundle-dir \"$1\"", "this tool itself"),
        ("\"$0\" dump $$ --yes --bundle-dir \"$1\"", "an ancestor of this tool"),
    ] {
        let out = Command::new("sh").args(["-c", script, xtask, &bundles]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{script}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(what),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(!s.bundles().exists(), "a refused PID wrote a bundle");
}

/// Ctrl-C while gdb is attached (slowly): the command ends with 130, the bundle is sealed and
/// verifies, and the target runs on (the interrupted gdb left it stopped: SIGCONT).
#[test]
fn ctrl_c_leaves_the_target_running_and_the_bundle_sealed() {
    let s = Scratch::for_run("dump-ctrl-c");
    let _t = start(&s, "hang/hang_flag", &["target"], &[]);
    let pid = recorded(&s, "target");
    let run = dump(&s, "hang/hang_flag", &[&pid.to_string()]).env("STANDIN_GDB_SLEEP", "30");
    let started = Instant::now();
    let child = run.spawn();
    let gdb_log = |root: &Path| -> Option<PathBuf> {
        let b = std::fs::read_dir(root).ok()?.flatten().next()?.path();
        Some(b.join(format!("rungs/01-dump/gdb-{pid}.log"))).filter(|p| p.exists())
    };
    wait_for("gdb to attach", &|| gdb_log(&s.bundles()).is_some() && state(pid) == 'T');
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let out = run.finish(child, started);
    assert_eq!(out.code(), Some(130), "{}", out.both());
    assert!(out.took < Duration::from_secs(25), "took {:?}", out.took);
    let b = s.only_bundle();
    assert!(b.exists("SHA256SUMS"));
    verify(&b);
    assert_eq!(b.rung("dump")["status"].as_str(), Some("interrupted"), "{}", b.read("manifest.yaml"));
    assert!(attaches(&s).is_empty(), "cuda-gdb ran after Ctrl-C");
    assert!(alive(pid));
    wait_for("the target to run again", &|| state(pid) != 'T');
}

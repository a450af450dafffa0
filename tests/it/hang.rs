//! The hang rung (`debug-ima --hang-after SECS`, `run.hang_after`, a baseline that times out),
//! run as the real binary against the stand-ins, which replay the H200 hang recordings
//! (tests/fixtures/h200/hang/<case>, tests/gpu/record_hang.sh): the stand-in target makes the
//! real named pipe from `CUDA_COREDUMP_PIPE`, blocks reading it, writes its dump on the byte
//! and dies of SIGABRT; cuda-gdb and py-spy replay what the real tools printed. Every test
//! checks that no stand-in is left.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support;
use support::run::{target_recipe, Bundle, Run};
use support::{alive, standins, Scratch};

/// A `python3` in the scratch folder: a link to the stand-in target, so that its processes
/// are named `python3` as a Python program's are.
fn python_link(s: &Scratch) -> PathBuf {
    let p = s.path("python3");
    std::os::unix::fs::symlink(standins().join("target"), &p).unwrap();
    p
}

fn pids(s: &Scratch, role: &str) -> Vec<i32> {
    s.standin_pids().into_iter().filter(|(r, _)| r == role).map(|(_, p)| p).collect()
}

fn stopped(b: &Bundle) -> String {
    b.manifest()["stopped"].as_str().unwrap_or_default().to_string()
}

/// The recipe of the recorded two-process hang: the `python3` link runs the stand-in, and the
/// script it names is there (empty), as a missing one is refused before anything runs.
fn two_procs_recipe(s: &Scratch) -> PathBuf {
    let python = python_link(s);
    std::fs::write(s.path("hang_two_procs.py"), "").unwrap();
    s.write_recipe(&format!(
        "version: 1\nname: two\ndescription: \"two hung processes\"\npython: true\n\
         run:\n  command: [\"{}\", \"hang_two_procs.py\"]\n  timeout: 30\n  hang_after: 1\n",
        python.display()
    ))
}

/// A C++ kernel spinning on a flag (hang_flag), `--hang-after 1`: the hang rung runs first
/// and alone, triggers the pipe, cuda-gdb reads the dump (`cudagdb-<pid>.log`: the recorded
/// `info cuda threads` at hang_flag.cu:8 and :18) and the CPU core the abort left
/// (`cpucore-gdb.log`, then deleted) side by side (the stand-ins meet: each waits until the
/// other is running), and the climb stops saying the target hung.
#[test]
fn a_cuda_hang_is_dumped_through_its_pipe_and_the_climb_stops() {
    let s = Scratch::for_run("hang-flag");
    let recipe = s.write_recipe(&target_recipe(""));
    let out = Run::new(&s, &recipe, "hang/hang_flag").arg("--hang-after").arg("1").meet(2, 5).run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    assert_eq!(Run::seen(&s), ["cuda-gdb saw 2", "cuda-gdb-cpu saw 2"], "read one after the other");
    assert!(out.took < Duration::from_secs(30), "took {:?}", out.took);
    let b = s.only_bundle();
    assert_eq!(b.rung_dirs(), ["01-hang"], "{}", out.both());
    let pid = pids(&s, "target")[0];
    let gdb = b.read(&format!("rungs/01-hang/cudagdb-{pid}.log"));
    assert!(gdb.contains("hang_flag.cu    18"), "{gdb}");
    assert!(
        gdb.contains(&format!("Opening GPU coredump: {}", b.root.join("rungs/01-hang").display())),
        "{gdb}"
    );
    let cpu = b.read("rungs/01-hang/cpucore-gdb.log");
    assert!(cpu.contains("Program terminated with signal SIGABRT"), "{cpu}");
    let files = b.files_in("rungs/01-hang");
    assert!(!files.iter().any(|f| f == "cpu-core" || f.starts_with("corepipe.")), "{files:?}");
    assert!(!s.path("core").exists(), "the CPU core was left in the run's folder");
    assert_eq!(b.exit_of("hang", "target"), "signal 6", "{}", b.read("manifest.yaml"));
    let notes = b.notes("hang");
    assert!(notes.contains(&format!("triggered a GPU coredump of process {pid}")), "{notes}");
    let why = stopped(&b);
    assert!(why.contains("the target hung") && why.contains("would hang too"), "{why}");
    let command = b.read("rungs/01-hang/command.txt");
    for v in ["CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1", "CUDA_COREDUMP_PIPE=", "skip_constbank_memory"] {
        assert!(command.contains(v), "{command}");
    }
    assert!(!command.contains("TORCH_NCCL"), "a native target gets no flight recorder: {command}");
    // The verdict: a hang, where the warps spin, with the host line from the CPU core.
    let v = &b.findings()["verdict"];
    assert_eq!(v["error"], "hang", "{v}");
    assert_eq!(v["kernel"], "consume", "{v}");
    assert_eq!(v["line"], 8, "{v}");
    assert!(v["file"].as_str().unwrap().ends_with("hang_flag.cu"), "{v}");
    let host = &v["hang"]["processes"][0]["host"][0]["frame"];
    assert_eq!((host["function"].as_str(), host["line"].as_u64()), (Some("main"), Some(31)), "{v}");
    assert!(out.stdout.starts_with("verdict: hang in `consume` at "), "{}", out.both());
    s.assert_no_standin_left();
}

/// A Python parent spinning in a Triton kernel and a spawned worker blocked on the host
/// (hang_two_procs), `hang_after` in the recipe: both processes' py-spy stacks, both pipes
/// triggered, both dumps read side by side (the stand-ins meet); no CPU core (a Python
/// target's is about 1 GB).
#[test]
fn a_hang_in_a_worker_gets_both_pipes_and_both_stacks() {
    let s = Scratch::for_run("hang-two");
    let recipe = two_procs_recipe(&s);
    let out = Run::new(&s, &recipe, "hang/hang_two_procs").meet(2, 5).run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    assert_eq!(Run::seen(&s), ["cuda-gdb saw 2"; 2], "read one after the other");
    let b = s.only_bundle();
    assert_eq!(b.rung_dirs(), ["01-hang"], "{}", out.both());
    let parent = pids(&s, "target")[0];
    let worker = pids(&s, "worker")[0];
    let d = "rungs/01-hang";
    assert!(b.read(&format!("{d}/cudagdb-{parent}.log")).contains("wait_for_peer"));
    assert!(b.read(&format!("{d}/cudagdb-{worker}.log")).contains("No CUDA threads."));
    assert!(b.read(&format!("{d}/pyspy-{parent}.log")).contains(&format!("Process {parent}:")));
    assert!(b.read(&format!("{d}/pyspy-{worker}.log")).contains("worker (hang_two_procs.py:21)"));
    assert!(!b.exists(&format!("{d}/cpucore-gdb.log")));
    let notes = b.notes("hang");
    assert!(notes.contains("triggered a GPU coredump of processes"), "{notes}");
    // Which process was stuck where: the parent in the kernel, the worker on the host.
    let v = &b.findings()["verdict"];
    assert_eq!(
        (v["error"].as_str(), v["kernel"].as_str(), v["line"].as_u64()),
        (Some("hang"), Some("wait_for_peer"), Some(15)),
        "{v}"
    );
    let procs = v["hang"]["processes"].as_array().unwrap();
    let of = |pid: i32| procs.iter().find(|p| p["pid"] == pid).unwrap_or_else(|| panic!("no pid {pid}: {v}"));
    assert_eq!(of(parent)["kernel"], "wait_for_peer", "{v}");
    let w = &of(worker)["host"][0]["frame"];
    assert_eq!((w["function"].as_str(), w["line"].as_u64()), (Some("worker"), Some(21)), "{v}");
    let command = b.read(&format!("{d}/command.txt"));
    assert!(
        command.contains("TORCH_NCCL_DEBUG_INFO_PIPE_FILE=") && command.contains("ulimit -c 0"),
        "{command}"
    );
    s.assert_no_standin_left();
}

/// The GPU dumps are triggered one at a time, each waited for before the next: triggered
/// together on one GPU, one of three ranks wrote no dump in 2 of 3 runs on the H200. Each
/// stand-in notes when its pipe was read and when it ended: no two overlap.
#[test]
fn the_gpu_dumps_are_triggered_one_after_the_other() {
    let s = Scratch::for_run("hang-one-by-one");
    let recipe = two_procs_recipe(&s);
    let log = s.path("triggers.log");
    let out =
        Run::new(&s, &recipe, "hang/hang_two_procs").env("STANDIN_TRIGGERS", log.to_str().unwrap()).run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    let events = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = events.lines().collect();
    assert_eq!(lines.len(), 4, "{events}");
    let pid = |l: &str| l.split_whitespace().next().unwrap().to_string();
    assert!(
        lines[0].ends_with(" start") && lines[1].ends_with(" end") && pid(lines[0]) == pid(lines[1]),
        "{events}"
    );
    assert!(
        lines[2].ends_with(" start") && lines[3].ends_with(" end") && pid(lines[2]) == pid(lines[3]),
        "{events}"
    );
    assert!(
        b.notes("hang").contains("(one byte into each pipe, one after the other)"),
        "{}",
        b.notes("hang")
    );
    s.assert_no_standin_left();
}

/// A torch.distributed target: the flight recorder is asked through its pipe (the stand-in
/// answers with the pickle recorded on the H200), turned into JSON, and the pickle and the
/// pipe PyTorch leaves are not kept; the bundle verifies (no special file in it); the
/// verdict notes what the recorder says.
#[test]
fn a_torch_distributed_hang_gets_the_nccl_flight_recorder_as_json() {
    let s = Scratch::for_run("hang-nccl");
    let recipe = two_procs_recipe(&s);
    let pickle = support::fixture("hang/nccl_trace").join("nccl_trace_0.pickle");
    let out = Run::new(&s, &recipe, "hang/hang_two_procs")
        .env("STANDIN_NCCL_TRACE", pickle.to_str().unwrap())
        .run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    let d = "rungs/01-hang";
    let json = b.read(&format!("{d}/nccl-trace-0.json"));
    assert!(json.contains("\"pg_status\"") && json.contains("nccl:all_reduce"), "{json}");
    let files = b.files_in(d);
    assert!(!files.iter().any(|f| f == "nccl-trace-0" || f.ends_with(".pipe")), "{files:?}");
    assert!(out.stdout.contains("NCCL flight recorder of rank 0"), "{}", out.both());
    let verify = std::process::Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["bundle", "verify", b.root.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stdout));
    s.assert_no_standin_left();
}

/// A worker that exits after making its pipe, before the trigger: a note, no error; the
/// parent is dumped as before.
#[test]
fn a_process_gone_before_the_trigger_is_a_note() {
    let s = Scratch::for_run("hang-gone");
    let recipe = two_procs_recipe(&s);
    let out = Run::new(&s, &recipe, "hang/hang_two_procs").env("STANDIN_WORKER_EXITS", "1").run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    let worker = pids(&s, "worker")[0];
    let parent = pids(&s, "target")[0];
    let notes = b.notes("hang");
    assert!(notes.contains(&format!("process {worker} (`corepipe.")), "{notes}");
    assert!(notes.contains("exited before its pipe was triggered"), "{notes}");
    assert!(b.exists(&format!("rungs/01-hang/cudagdb-{parent}.log")));
    assert_eq!(b.rung("hang")["status"].as_str(), Some("ran"), "{}", b.read("manifest.yaml"));
    s.assert_no_standin_left();
}

/// A hang without CUDA (`sleep`): no pipe, a note that says so, the tree killed.
#[test]
fn a_hang_without_cuda_says_no_cuda_process_was_found() {
    let s = Scratch::for_run("hang-sleep");
    let recipe = s.write_recipe(
        "version: 1\nname: sleep\ndescription: \"no CUDA\"\nrun:\n  command: [\"sleep\", \"1000\"]\n  timeout: 30\n",
    );
    let out = Run::new(&s, &recipe, "hang/hang_flag").arg("--hang-after").arg("1").run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    assert!(out.took < Duration::from_secs(20), "took {:?}", out.took);
    let b = s.only_bundle();
    let notes = b.notes("hang");
    assert!(notes.contains("no CUDA process was found"), "{notes}");
    assert_eq!(b.exit_of("hang", "target"), "stopped", "{}", b.read("manifest.yaml"));
    assert!(!sleeping_left(&s.dir), "a `sleep 1000` of the run is still alive");
}

/// Whether a `sleep 1000` started from `dir` is alive.
fn sleeping_left(dir: &Path) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else { return false };
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap_or_default();
        cmd == b"sleep\x001000\x00" && cwd == dir && alive(pid)
    })
}

/// The stand-in target's recipe with the run's time limit `secs`.
fn standin_with_timeout(secs: u64) -> String {
    format!("version: 1\nname: standin\ndescription: \"the stand-in target\"\nrun:\n  command: [\"target\"]\n  timeout: {secs}\n")
}

/// A baseline that runs into its time limit (the recorded program without the trigger armed
/// hangs) takes the hang's evidence itself at the limit, as the hang rung would, instead of
/// being killed and run again: one run, the dump read with the hang rung's commands, the CPU
/// core of the abort, and the climb stops saying the target hung.
#[test]
fn a_baseline_at_its_time_limit_takes_the_hang_evidence_itself() {
    let s = Scratch::for_run("hang-timeout");
    let recipe = s.write_recipe(&standin_with_timeout(2));
    let out = Run::new(&s, &recipe, "hang/hang_flag").run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    assert_eq!(b.rung_dirs(), ["01-baseline"], "{}", out.both());
    assert!(b.notes("baseline").contains("still running at its time limit (2 s)"), "{}", b.notes("baseline"));
    let gdb: Vec<String> = b
        .files_in("rungs/01-baseline")
        .into_iter()
        .filter(|f| f.starts_with("cudagdb-") && f.ends_with(".log"))
        .collect();
    assert_eq!(gdb.len(), 1, "{:?}", b.files_in("rungs/01-baseline"));
    assert!(b.read(&format!("rungs/01-baseline/{}", gdb[0])).contains("hang_flag.cu    18"));
    assert!(b.exists("rungs/01-baseline/cpucore-gdb.log"));
    assert!(stopped(&b).contains("the target hung: the baseline rung"), "{}", stopped(&b));
    assert!(out.stdout.contains("verdict: hang in `consume`"), "{}", out.both());
    s.assert_no_standin_left();
}

/// `--timeout` sets the run's time limit over the recipe's: the armed run is looked at as
/// hung at it.
#[test]
fn the_timeout_flag_sets_where_the_armed_run_is_looked_at_as_hung() {
    let s = Scratch::for_run("hang-timeout-flag");
    let recipe = s.write_recipe(&standin_with_timeout(600));
    let out = Run::new(&s, &recipe, "hang/hang_flag").arg("--timeout").arg("2").run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    assert!(out.took < Duration::from_secs(60), "took {:?}", out.took);
    let b = s.only_bundle();
    assert!(b.notes("baseline").contains("still running at its time limit (2 s)"), "{}", b.notes("baseline"));
    s.assert_no_standin_left();
}

/// `--hang-after` at or past the run's own limit is refused before anything runs.
#[test]
fn hang_after_past_the_timeout_is_refused() {
    let s = Scratch::for_run("hang-refused");
    let recipe = s.write_recipe(&target_recipe(""));
    let out = Run::new(&s, &recipe, "hang/hang_flag").arg("--hang-after").arg("30").run();
    assert_eq!(out.code(), Some(2), "{}", out.both());
    assert!(out.stderr.contains("is not below") && out.stderr.contains("--hang-after"), "{}", out.both());
    assert!(!s.bundles().exists());
}

/// `debug-ima watch -- CMD`: the job runs once, armed at full speed, with its own arguments.
fn watch<'a>(s: &'a Scratch, case: &str, extra: &[&str], job: &[&str]) -> Run<'a> {
    let mut run = Run::new(s, Path::new("unused"), case);
    run.args = ["watch", "--bundle-dir", &s.bundles().display().to_string()].map(String::from).to_vec();
    run.args.extend(extra.iter().map(|a| a.to_string()));
    run.args.push("--".into());
    run.args.extend(job.iter().map(|a| a.to_string()));
    run
}

/// A watched job that faults (the out-of-bounds write, replayed): its output passes through,
/// the driver aborts it after the dump (no `skip_abort`: on the H200 that let a faulting job
/// go on as if nothing had happened) and `watch` exits with that status (134); the one run's
/// dump gives the verdict in a bundle; the run was never launch-blocking and had no time limit.
#[test]
fn watch_passes_the_job_through_and_bundles_its_one_fault() {
    let s = Scratch::for_run("watch-fault");
    let run = watch(&s, "oob_write", &[], &["target"]);
    let out = run.run();
    assert_eq!(out.code(), Some(134), "{}", out.both());
    // What the job printed reached the terminal as it printed it.
    assert!(out.stderr.contains("launched scale_write"), "{}", out.both());
    assert!(out
        .stderr
        .contains("coredump: Detected an exception of type CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS"));
    assert!(out.stderr.contains("debug-ima: verdict: illegal-address in `scale_write"), "{}", out.both());
    let b = s.only_bundle();
    assert_eq!(b.rung_dirs(), ["01-baseline"], "{}", out.both());
    let command = b.read("rungs/01-baseline/command.txt");
    assert!(command.contains("CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1"), "{command}");
    assert!(command.contains("CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1"), "{command}");
    assert!(!command.contains("CUDA_LAUNCH_BLOCKING"), "watch launch-blocked the job: {command}");
    assert!(command.contains("skip_constbank_memory") && !command.contains("skip_abort"), "{command}");
    assert!(!command.contains("core-limit"), "watch changed the job's core limit: {command}");
    let v = &b.findings()["verdict"];
    assert_eq!(v["line"], 7, "{v}");
    assert_eq!(b.findings()["reproduced"], serde_json::json!({"faulted": 1, "runs": 1}));
    assert!(stopped(&b).contains("watched for its one run"), "{}", stopped(&b));
    assert_eq!(pids(&s, "target").len(), 1, "the job ran more than once");
    s.assert_no_standin_left();
}

/// A watched job that ends without a device fault or a hang leaves no bundle and exits
/// with its own status; its stdout and stderr pass through apart.
#[test]
fn watch_of_a_job_that_ends_normally_keeps_its_status_and_no_bundle() {
    let s = Scratch::for_run("watch-clean");
    let run = watch(&s, "oob_write", &[], &["sh", "-c", "echo out-line; echo err-line >&2; exit 3"]);
    let out = run.run();
    assert_eq!(out.code(), Some(3), "{}", out.both());
    assert!(out.stdout.contains("out-line") && !out.stdout.contains("err-line"), "{}", out.both());
    assert!(out.stderr.contains("err-line"), "{}", out.both());
    assert!(out.stderr.contains("no bundle kept"), "{}", out.both());
    let left: Vec<_> = std::fs::read_dir(s.bundles()).map(|d| d.flatten().collect()).unwrap_or_default();
    assert!(left.is_empty(), "a bundle was kept: {left:?}");
    // Nothing about the binary's disassembly, whose launch sites only a fault would need (issue
    // 41: `note: objdump named no kernel launch in ...`), for a failing job or a clean one.
    assert!(!out.stderr.contains("objdump"), "{}", out.both());
    let clean = watch(&s, "oob_write", &[], &["sh", "-c", "echo done"]).run();
    assert_eq!(clean.code(), Some(0), "{}", clean.both());
    assert!(clean.stderr.contains("no bundle kept") && !clean.stderr.contains("objdump"), "{}", clean.both());
    // Without a command there is nothing to watch: a usage error.
    let mut bare = watch(&s, "oob_write", &[], &[]);
    bare.args.pop();
    assert_eq!(bare.run().code(), Some(2));
}

/// `watch` is transparent (issue 42: invalid UTF-8 became U+FFFD, a line was cut at 64 KiB, so
/// 50 MiB without a newline came out as 65,537 bytes, and the job read an empty stdin): what
/// the job reads is the tool's stdin, and what it writes reaches the tool's stdout and stderr
/// byte for byte, however long its lines and whatever its bytes; the bundle's log of a job
/// that faulted is still the redacted one.
#[test]
fn watch_passes_bytes_and_stdin_through_unchanged() {
    let s = Scratch::for_run("watch-bytes");
    // 50 MiB of pseudo-random bytes without a newline (invalid UTF-8 among them), for stdout;
    // a short run of invalid UTF-8 for stderr; a few lines with invalid bytes for stdin.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let data: Vec<u8> = (0..50 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match (x >> 24) as u8 {
                b'\n' => 0xFF,
                b => b,
            }
        })
        .collect();
    assert!(!data.contains(&b'\n') && std::str::from_utf8(&data).is_err());
    std::fs::write(s.path("data"), &data).unwrap();
    let err_bytes: &[u8] = b"\xff\xfe err \xc3\x28 no newline at the end";
    std::fs::write(s.path("err"), err_bytes).unwrap();
    let input: &[u8] = b"first line from stdin\n\xc3\x28 second\r\nlast, no newline";
    std::fs::write(s.path("input"), input).unwrap();
    let job = format!("cat; cat '{}'; cat '{}' >&2", s.path("data").display(), s.path("err").display());
    let mut run = watch(&s, "oob_write", &[], &["sh", "-c", &job]);
    run.stdin = Some(s.path("input"));
    let out = run.run();
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let stdout = std::fs::read(s.path("xtask.stdout")).unwrap();
    let mut want = input.to_vec();
    want.extend_from_slice(&data);
    assert_eq!(stdout.len(), want.len(), "stdout: {} bytes, not {}", stdout.len(), want.len());
    assert!(stdout == want, "stdout differs from what the job wrote");
    let stderr = std::fs::read(s.path("xtask.stderr")).unwrap();
    assert!(stderr.starts_with(err_bytes), "{}", String::from_utf8_lossy(&stderr));

    // A job that faults: its secret reaches the terminal as printed, the bundle's log redacted.
    let s = Scratch::for_run("watch-bytes-fault");
    let secret = "hunter2-Qx7vT9pL3mZ8";
    let job = format!("echo 'password={secret}'; exec target");
    let out = watch(&s, "oob_write", &[], &["sh", "-c", &job]).run();
    assert_eq!(out.code(), Some(134), "{}", out.both());
    assert!(out.stdout.contains(&format!("password={secret}\n")), "{}", out.both());
    let b = s.only_bundle();
    let log = b.read("rungs/01-baseline/stdout.log");
    assert!(log.contains("password=") && !log.contains(secret), "{log}");
}

/// From a terminal, `watch`'s job reads what is typed there (issue 42: it read an empty
/// stdin): the job runs in a process group of its own, which the terminal would stop at its
/// first read, so the tool passes the terminal's input on through a pipe.
#[test]
fn watch_passes_a_terminals_input_to_the_job() {
    use rexpect::session::{spawn_with_options, Options};
    let s = Scratch::for_run("watch-tty");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_xtask"));
    cmd.args([
        "watch",
        "--bundle-dir",
        s.bundles().to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "read x; echo got:$x",
    ])
    .current_dir(&s.dir)
    .env("PATH", crate::support::path_with(&[&crate::support::standins()]))
    .env("STANDIN_CASE", crate::support::fixture("oob_write"))
    .env("STANDIN_PIDS", s.pids_file());
    let mut tty = spawn_with_options(cmd, Options::default().timeout_ms(Some(30_000))).unwrap();
    tty.send_line("typed-at-the-terminal").unwrap();
    let seen = tty.exp_string("got:typed-at-the-terminal");
    assert!(seen.is_ok(), "{seen:?}");
    tty.exp_string("no bundle kept").unwrap();
}

/// `watch --recipe pytorch -- CMD`: the command after `--` is the job and the recipe gives
/// the rest, its `python: true` among it (faulthandler, unbuffered output, the flight
/// recorder); the recipe's `script`, which only its own run command used, needs no value (it
/// was refused for want of one). A recipe whose build needs a variable (`vllm`'s checkout)
/// needs none under `watch` either: watch never builds.
#[test]
fn watch_with_a_recipe_runs_the_command_after_the_dashes() {
    let s = Scratch::for_run("watch-recipe");
    let run =
        watch(&s, "oob_write", &["--recipe", "pytorch", "--set", "python=true"], &["target", "--n", "{4}"]);
    let out = run.run();
    assert_eq!(out.code(), Some(134), "{}", out.both());
    assert!(!out.stderr.contains("needs a value"), "{}", out.both());
    let b = s.only_bundle();
    assert_eq!(b.rung_dirs(), ["01-baseline"], "{}", out.both());
    let command = b.read("rungs/01-baseline/command.txt");
    for want in ["PYTHONFAULTHANDLER=1", "PYTHONUNBUFFERED=1", "TORCH_NCCL_DEBUG_INFO_PIPE_FILE="] {
        assert!(command.contains(want), "`{want}` missing: {command}");
    }
    assert!(command.ends_with("target --n '{4}'") || command.ends_with("target --n '{4}'\n"), "{command}");
    assert!(!command.contains("CUDA_LAUNCH_BLOCKING"), "{command}");
    assert_eq!(b.manifest()["recipe"]["name"].as_str(), Some("pytorch"), "{}", b.read("manifest.yaml"));
    assert_eq!(b.findings()["verdict"]["line"], 7);
    assert_eq!(pids(&s, "target").len(), 1, "the job ran more than once");

    let s = Scratch::for_run("watch-recipe-vllm");
    let out = watch(&s, "oob_write", &["--recipe", "vllm"], &["sh", "-c", "exit 0"]).run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    assert!(out.stderr.contains("no bundle kept"), "{}", out.both());
}

/// A watched job that goes silent while the GPU is busy (the recorded flag spin): after
/// `--hang-after` the hang's evidence is taken while it runs, its dump read, and the verdict
/// names where the warps spin. The driver aborts the hung job after the user-triggered dump,
/// and `watch` exits with that status (134).
#[test]
fn watch_takes_a_silent_busy_job_as_hung() {
    let s = Scratch::for_run("watch-hang");
    let run = watch(&s, "hang/hang_flag", &["--hang-after", "1"], &["target"]);
    let out = run.run();
    assert_eq!(out.code(), Some(134), "{}", out.both());
    assert!(out.took < Duration::from_secs(40), "took {:?}", out.took);
    let b = s.only_bundle();
    let notes = b.notes("baseline");
    assert!(notes.contains("the job counted as hung") && notes.contains("while a GPU was busy"), "{notes}");
    let v = &b.findings()["verdict"];
    assert_eq!(v["error"], "hang", "{v}");
    assert_eq!(v["kernel"], "consume", "{v}");
    assert_eq!(v["line"], 8, "{v}");
    s.assert_no_standin_left();
}

/// Pipes in the rung's folder that are not of the target's tree (20 of them, each named
/// after pid 1) are left alone: the rung triggers only its own processes' pipes, under one deadline,
/// and ends as fast as without them (issue 22: 20 pipes took 40 s, pid 1's 60 s more).
#[test]
fn stray_pipes_are_left_alone_within_the_deadline() {
    let s = Scratch::for_run("hang-stray");
    let recipe = s.write_recipe(&target_recipe(""));
    let out = Run::new(&s, &recipe, "hang/hang_flag")
        .env("STANDIN_STRAY_PIPES", "20")
        .arg("--hang-after")
        .arg("1")
        .run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    assert!(out.took < Duration::from_secs(30), "took {:?}", out.took);
    let b = s.only_bundle();
    let notes = b.notes("hang");
    assert_eq!(
        notes.matches("neither of the target's tree nor a rank it placed: left alone").count(),
        20,
        "{notes}"
    );
    assert!(
        notes.contains("`corepipe.stray1.1` is of process 1") && !notes.contains("did not read its pipe"),
        "{notes}"
    );
    assert_eq!(b.findings()["verdict"]["kernel"], "consume");
    s.assert_no_standin_left();
}

/// The user's own files named like cores in the target's working folder (a `core.12345` from
/// an earlier crash, a `core/` folder of theirs) are neither moved into the bundle, read by
/// cuda-gdb nor deleted: only a core of the target's processes, written during the rung, is
/// the tool's (issue 22).
#[test]
fn a_users_core_files_in_the_working_folder_are_left_alone() {
    let s = Scratch::for_run("hang-user-cores");
    std::fs::write(s.path("core.12345"), "the user's own core\n").unwrap();
    std::fs::create_dir(s.path("core")).unwrap();
    std::fs::write(s.path("core/notes.txt"), "the user's folder\n").unwrap();
    let recipe = s.write_recipe(&target_recipe(""));
    let out = Run::new(&s, &recipe, "hang/hang_flag").arg("--hang-after").arg("1").run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    assert_eq!(std::fs::read_to_string(s.path("core.12345")).unwrap(), "the user's own core\n");
    assert_eq!(std::fs::read_to_string(s.path("core/notes.txt")).unwrap(), "the user's folder\n");
    let b = s.only_bundle();
    let files = b.files_in("rungs/01-hang");
    assert!(!files.iter().any(|f| f.contains("12345") || f == "notes.txt"), "{files:?}");
    for f in files.iter().filter(|f| f.ends_with(".command.txt")) {
        let cmd = b.read(&format!("rungs/01-hang/{f}"));
        assert!(!cmd.contains("core.12345") && !cmd.contains("core/"), "{f}: {cmd}");
    }
    let notes = b.notes("hang");
    assert!(!notes.contains("core.12345"), "{notes}");
    s.assert_no_standin_left();
}

/// Ctrl-C while the hang rung waits for `hang_after`: the target is killed, the rung is
/// interrupted, and its line says so and nothing more (a target killed by Ctrl-C is no device
/// error; the summary and the line agree).
#[test]
fn ctrl_c_on_a_hang_says_interrupted_not_device_error() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let s = Scratch::for_run("hang-ctrl-c");
    let recipe = s.write_recipe(&target_recipe(""));
    let run = Run::new(&s, &recipe, "hang/hang_flag").arg("--hang-after").arg("20");
    let start = std::time::Instant::now();
    let child = run.spawn();
    let running = support::wait_for(Duration::from_secs(30), || !pids(&s, "target").is_empty());
    std::thread::sleep(Duration::from_millis(500));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let out = run.finish(child, start);
    assert!(running, "the hang rung's target did not start: {}", out.both());
    assert_eq!(out.code(), Some(130), "{}", out.both());
    let all = out.both();
    let line = all.lines().find(|l| l.trim_start().starts_with("[1/")).unwrap_or_default();
    assert!(line.contains("hang: interrupted ("), "{all}");
    assert!(!all.contains("device error seen"), "{all}");
    let pids = pids(&s, "target");
    assert!(
        support::wait_for(Duration::from_secs(2), || pids.iter().all(|p| !alive(*p))),
        "left running after Ctrl-C: {pids:?}"
    );
}

//! The whole ladder (`cargo xtask debug-ima`), run as the real binary against stand-ins
//! placed first on PATH (tests/standins/: the target program, `cuda-gdb`,
//! `compute-sanitizer`, `nvidia-smi`) that replay what the real tools printed on an H200
//! (tests/fixtures/h200/<case>/, recorded by tests/gpu/record.sh): exit codes and signals,
//! the coredump, the attach wait that never ends by itself, a hang. The rebuild rung runs
//! the real `nvcc` and `cuobjdump` from NVIDIA's PyPI wheels (.ci/run installs them).
//!
//! The built-in `pytorch` recipe runs the same way, with a stand-in `python3` written into
//! the test's folder (for its `collect` command) and `STANDIN_GPUS=2` for a two-GPU machine.
//!
//! Every test runs in its own folder under the target directory, with its own bundle root;
//! the stand-ins write their PIDs into a file there, and every test checks at the end that
//! none of them is still alive.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::support;
use support::run::{target_recipe, Output, Run};
use support::{alive, path_with, root, standins, wait_for, Scratch};

/// (a) The default ladder on the out-of-bounds write, a native target, climbs until the
/// verdict is complete: the baseline is the armed first run (the GPU coredump on exception,
/// the dump pipe, under launch-blocking, the core limit raised for the target), and its
/// cuda-gdb (which crashed with SIGABRT after printing the line, as cuda-gdb 13.0 did on the
/// H200) gives the kernel, the line and the class from that one run. The stand-in target
/// leaves no CPU core, so the launch site is still unknown; the coredump rung would repeat the
/// armed run, and launch-blocking gives a native target none, so the cheapest rung that can is
/// memcheck (its host backtrace at launch), which names only `main`: the recording's binary
/// has no host debug info. No rung left can name the launch line, so the ladder stops and
/// says it stays unknown. memcheck is the pass a short native run's fault gets, over every
/// kernel: it starts as soon as the armed run's target left its dump, and runs while cuda-gdb
/// reads that dump (the stand-ins meet: each waits until the other is running).
#[test]
fn oob_write_climbs_past_the_coredump_to_memcheck_and_says_the_launch_line_stays_unknown() {
    let s = Scratch::for_run("oob-write");
    let recipe = s.write_recipe(&target_recipe(""));
    let out = Run::new(&s, &recipe, "oob_write").meet(2, 3).run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    // cuda-gdb's reading met memcheck (each saw the other); it crashed while opening the
    // dump, so it ran once (no retry: opening it again crashes the same way).
    let seen = Run::seen(&s);
    let has = |l: &str| seen.iter().any(|x| x == l);
    assert!(has("memcheck saw 2") && has("cuda-gdb saw 2"), "{seen:?}\n{}", out.both());
    assert_eq!(seen.iter().filter(|l| l.starts_with("cuda-gdb")).count(), 1, "{seen:?}");

    let b = s.only_bundle();
    for f in ["manifest.yaml", "summary.md", "findings.json"] {
        assert!(b.exists(f), "{f} missing");
    }
    assert_eq!(b.rung_dirs(), ["01-baseline", "02-memcheck"], "{}", out.both());
    for rung in b.rung_dirs() {
        for f in ["stdout.log", "stderr.log", "command.txt"] {
            assert!(b.exists(&format!("rungs/{rung}/{f}")), "rungs/{rung}/{f} missing");
        }
    }

    // The verdict, in findings.json and on stdout: the line from the armed baseline, the launch
    // site from memcheck, where the error surfaced from memcheck's (asynchronous) run.
    let f = b.findings();
    let v = &f["verdict"];
    assert_eq!(v["line"], 7, "{}", b.read("findings.json"));
    assert!(v["kernel"].as_str().unwrap().contains("scale_write"), "{v}");
    assert!(v["file"].as_str().unwrap().ends_with("oob_write.cu"), "{v}");
    assert_eq!(v["error"], "illegal-address", "{v}");
    assert_eq!(v["unknown"], serde_json::json!(["launch-site"]), "{v}");
    let launch = &v["launch_site"];
    assert_eq!(launch["function"], "main", "{v}");
    assert_eq!(launch["how"], "memcheck's host backtrace at launch", "{v}");
    assert!(launch["from"].as_str().unwrap().starts_with("memcheck"), "{v}");
    let surfaced = &v["surfaced_at"];
    assert_eq!(surfaced["file"], "oob_write.cu", "{v}");
    assert_eq!(surfaced["line"], 18, "{v}");
    assert_eq!(surfaced["from"], "memcheck", "{v}");
    assert!(surfaced["how"].as_str().unwrap().starts_with("asynchronous"), "{v}");
    let found_by: Vec<&str> = v["rungs"].as_sequence_or_array();
    assert_eq!(found_by, ["baseline", "memcheck"], "{v}");
    assert_eq!(f["reproduced"], serde_json::json!({"faulted": 2, "runs": 2}), "{f}");
    assert!(out.stdout.contains("  seen in:  2 of 2 runs of the target"), "{}", out.both());
    assert!(out.stdout.contains("scale_write"), "{}", out.both());
    assert!(out.stdout.contains("oob_write.cu:7"), "{}", out.both());
    assert!(out.stdout.contains("  launched: main "), "{}", out.both());
    assert!(out.stdout.contains("  surfaced: cudaDeviceSynchronize() at oob_write.cu:18 "), "{}", out.both());
    let m = b.manifest();
    let stopped = m["stopped"].as_str().unwrap();
    assert!(
        stopped.starts_with("no remaining rung can establish the launch site of `scale_write"),
        "{stopped}"
    );
    assert!(stopped.contains("`-g`"), "says what would give it: {stopped}");
    assert!(
        stopped.contains("skipping launch-blocking, coredump, attach, initcheck, racecheck, synccheck (`--full` runs them too)"),
        "names the rungs skipped: {stopped}"
    );
    assert!(b.read("summary.md").contains("scale_write"));

    // The armed baseline of a native target: under launch-blocking, with the dump pipe,
    // through the shell that raises the core limit for the target only.
    let cmd = b.read("rungs/01-baseline/command.txt");
    for want in [
        "CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1",
        "CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1",
        "corepipe.%h.%p",
        "CUDA_LAUNCH_BLOCKING=1",
        "sh -c 'ulimit -c ",
        "core-limit target",
    ] {
        assert!(cmd.contains(want), "`{want}` missing: {cmd}");
    }
    // The dump the stand-in wrote, and what cuda-gdb printed before it crashed, kept.
    let files = b.files_in("rungs/01-baseline");
    assert!(files.iter().any(|f| f.starts_with("core_")), "no dump: {files:?}");
    // The pipe the armed run's process made is not kept (no fifo can be bundled).
    assert!(!files.iter().any(|f| f.starts_with("corepipe.")), "{files:?}");
    let gdb = b.read("rungs/01-baseline/cudagdb-1.log");
    assert!(gdb.contains("(oob_write.cu:7)"), "{gdb}");
    assert!(gdb.contains("A fatal error internal to GDB has been detected"), "{gdb}");
    assert!(b.read("rungs/01-baseline/cudagdb-1.command.txt").contains("-ex bt -ex 'x/i $errorpc'"));
    let notes = b.notes("baseline");
    assert!(notes.contains("cuda-gdb crashed"), "{notes}");
    // No CPU core (whatever this machine's core_pattern: the stand-in's abort writes none),
    // which is why the climb went on.
    assert!(notes.contains("the host launch line stays unknown here"), "{notes}");
    assert!(!files.iter().any(|f| f == "cpu-core" || f.starts_with("cpucore-gdb")), "{files:?}");
    // cuda-gdb crashed while opening the dump (GDB's own backtrace names
    // `cuda_core_target_open`): not run again, since opening it again crashes the same way
    // (every recorded retry did), and the note says so.
    assert!(!files.iter().any(|f| f.starts_with("cudagdb-1-retry")), "{files:?}");
    assert!(notes.contains("cuda-gdb crashed while opening `core_"), "{notes}");
    assert!(notes.contains("not retried, as opening it again crashes the same way"), "{notes}");
    // memcheck, with padding, both reports from one run, over every kernel: it started before
    // the armed run's verdict was known.
    let mc = b.read("rungs/02-memcheck/command.txt");
    // The pass prints the first 100 records (an earlier bug's come first), not the rung's 1,000.
    assert!(mc.contains("compute-sanitizer --tool memcheck --padding 64 --print-limit 100 "), "{mc}");
    assert!(!mc.contains("--kernel-name") && !mc.contains("1000"), "{mc}");
    let notes = b.notes("memcheck");
    assert!(notes.contains("started beside the armed run's reading of its dumps"), "{notes}");
    assert!(notes.contains("every kernel, the first 100 records printed"), "{notes}");
    assert!(!notes.contains("scoped to the suspect kernel"), "{notes}");
    assert!(b.read("rungs/02-memcheck/memcheck.xml").contains("<?xml"));
    assert!(b.read("rungs/02-memcheck/stdout.log").contains("Invalid __global__ write of size 4 bytes"));
    // The target died of SIGABRT after the dump, as the real program did (134 in meta.tsv).
    assert_eq!(b.exit_of("baseline", "target"), "signal 6", "{}", b.read("manifest.yaml"));
    assert_eq!(b.exit_of("memcheck", "target"), "code 1");
    s.assert_no_standin_left();
}

/// (a2) The same fault from a binary that names its launch sites (the stand-in objdump replays
/// the H200's disassembly of oob_write, `tests/fixtures/h200/objdump`): the armed run is not
/// launch-blocking, and its one run gives the whole verdict, the launch line from the table.
/// The memcheck pass starts beside the reading, over every kernel, its first 100 records.
#[test]
fn a_binary_that_names_its_launch_sites_gets_the_whole_verdict_from_one_run() {
    let s = Scratch::for_run("one-run");
    let recipe = s.write_recipe(&target_recipe(""));
    let out = Run::new(&s, &recipe, "oob_write").env("STANDIN_OBJDUMP", "1").meet(2, 3).run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    assert_eq!(b.rung_dirs(), ["01-baseline", "02-memcheck"], "{}", out.both());
    assert!(b.read("rungs/01-baseline/launch-sites.log").contains("scale_write("));
    let cmd = b.read("rungs/01-baseline/command.txt");
    assert!(!cmd.contains("CUDA_LAUNCH_BLOCKING"), "{cmd}");
    let v = &b.findings()["verdict"];
    assert_eq!(
        (v["kernel"].as_str(), v["line"].as_u64()),
        (Some("scale_write(float*, int, long long)"), Some(7)),
        "{v}"
    );
    let launch = &v["launch_site"];
    assert_eq!((launch["function"].as_str(), launch["line"].as_u64()), (Some("main"), Some(15)), "{v}");
    assert_eq!(launch["from"], "baseline/launch-sites", "{v}");
    assert!(out.stdout.contains("launched: main at /work/"), "{}", out.both());
    // The pass: beside the reading (the stand-ins met), every kernel, the first 100 records.
    let seen = Run::seen(&s);
    assert!(seen.iter().any(|l| l == "memcheck saw 2"), "{seen:?}");
    let mc = b.read("rungs/02-memcheck/command.txt");
    assert!(mc.contains("--print-limit 100 ") && !mc.contains("--kernel-name"), "{mc}");
    let stopped = b.manifest()["stopped"].as_str().unwrap().to_string();
    assert!(stopped.starts_with("the verdict is complete"), "{stopped}");
    // The armed run's line and its verdict are shown while the pass still runs, before the
    // pass's own line.
    let err = &out.stderr;
    let said = err
        .find("the armed run's verdict: `scale_write(float*, int, long long)` at oob_write.cu:7, \
               launched from main at /work/main/tests/gpu/programs/oob_write.cu:15 (the memcheck pass still looks")
        .unwrap_or_else(|| panic!("{}", out.both()));
    let armed = err.find("] baseline: signal 6").unwrap_or_else(|| panic!("{}", out.both()));
    let pass = err.find("    memcheck: exit 1").unwrap_or_else(|| panic!("{}", out.both()));
    assert!(armed < said && said < pass, "{}", out.both());
    s.assert_no_standin_left();
}

/// (a3) The suite's faults whose H200 dump and disassembly are both recorded get their whole
/// verdict from the armed run alone, not launch-blocking: the kernel and line from the dump,
/// the launch line from the binary's only launch of the kernel (a graph's kernel: where the
/// capture launched it), said before the memcheck pass beside the reading ends.
#[test]
fn each_recorded_fault_of_a_binary_naming_its_launch_sites_is_whole_after_one_run() {
    for (case, kernel, line, launch) in [
        ("graph_fault", "shift_copy", 12, "graph_fault.cu:27"),
        ("templated", "axpy_vec", 11, "templated.cu:23"),
    ] {
        let s = Scratch::for_run(&format!("one-run-{case}"));
        let recipe = s.write_recipe(&target_recipe(""));
        let out = Run::new(&s, &recipe, case).env("STANDIN_OBJDUMP", "1").run();
        assert_eq!(out.code(), Some(0), "{case}: {}", out.both());
        let b = s.only_bundle();
        assert!(!b.read("rungs/01-baseline/command.txt").contains("CUDA_LAUNCH_BLOCKING"), "{case}");
        let said = out
            .stderr
            .lines()
            .find(|l| l.contains("the armed run's verdict: "))
            .unwrap_or_else(|| panic!("{case}: the armed run's verdict was not whole: {}", out.both()));
        assert!(
            said.contains(kernel) && said.contains(&format!(":{line}, launched from main at ")),
            "{case}: {said}"
        );
        assert!(said.contains(launch), "{case}: {said}");
        s.assert_no_standin_left();
    }
}

/// (b) `--full` runs every rung in ladder order, after the verdict too: launch-blocking, the
/// attach rung, whose target waits for ever while cuda-gdb attaches to the PID it announced
/// and which the ladder then kills, memcheck and initcheck.
#[test]
fn full_runs_every_rung_and_kills_the_waiting_target() {
    let s = Scratch::for_run("full");
    let recipe = s.write_recipe(&target_recipe(""));
    let out = Run::new(&s, &recipe, "oob_write").arg("--full").run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    assert_eq!(
        b.rung_dirs(),
        [
            "01-baseline",
            "02-launch-blocking",
            "03-coredump",
            "04-attach",
            "05-memcheck",
            "06-initcheck",
            "07-racecheck",
            "08-synccheck"
        ],
        "{}",
        out.both()
    );

    // The attach rung: the message with the stand-in's PID, cuda-gdb's log, the kill.
    let logs = b.read("rungs/04-attach/stdout.log") + &b.read("rungs/04-attach/stderr.log");
    let pid: i32 = logs
        .split("(PID ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no wait message in the attach rung's logs:\n{logs}"));
    assert!(s.standin_pids().contains(&("target".to_string(), pid)), "the message names the stand-in's PID");
    assert!(!alive(pid), "the waiting target (PID {pid}) was not killed");
    let gdb = b.read("rungs/04-attach/cudagdb-attach.log");
    assert!(gdb.contains("(oob_write.cu:7)"), "cuda-gdb did not attach:\n{gdb}");
    assert!(b.read("rungs/04-attach/cudagdb-attach.command.txt").contains(&format!("-p {pid}")));
    assert_eq!(b.exit_of("attach", "target"), "stopped", "{}", b.read("manifest.yaml"));
    assert!(b.notes("attach").contains(&format!("attached to PID {pid}")), "{}", b.notes("attach"));
    // That cuda-gdb crashed (the recording's), so it was run again, fewer commands, same PID,
    // before the target was killed.
    let retry = b.read("rungs/04-attach/cudagdb-attach-retry.command.txt");
    assert!(retry.contains(&format!("-p {pid}")) && !retry.contains(" bt"), "{retry}");
    assert!(b.notes("attach").contains("crashed while attached"), "{}", b.notes("attach"));

    // memcheck: the text report and the XML report.
    assert!(b.read("rungs/05-memcheck/stdout.log").contains("Invalid __global__ write of size 4 bytes"));
    assert!(b.read("rungs/05-memcheck/memcheck.xml").contains("<?xml"));
    assert!(b.read("rungs/05-memcheck/command.txt").contains("--xml --save"));

    // initcheck ran with its own report. The oob_write recordings hold no initcheck run, and
    // the stand-in says so rather than replay memcheck's report under initcheck's name: the
    // rung ran, wrote no XML report, and adds nothing to the verdict.
    let ic = b.read("rungs/06-initcheck/command.txt");
    assert!(ic.contains("compute-sanitizer --tool initcheck --print-limit 1000"), "{ic}");
    assert!(ic.contains("--xml --save") && ic.contains("rungs/06-initcheck/initcheck.xml"), "{ic}");
    assert!(b.read("rungs/06-initcheck/stderr.log").contains("no recording of initcheck"));
    assert!(!b.exists("rungs/06-initcheck/initcheck.xml"));
    assert!(b.notes("initcheck").contains("wrote no XML report"), "{}", b.notes("initcheck"));

    let v = &b.findings()["verdict"];
    assert_eq!(v["line"], 7);
    let found_by: Vec<&str> = v["rungs"].as_sequence_or_array();
    assert_eq!(found_by, ["baseline", "coredump", "attach", "memcheck"], "{v}");
    // launch-blocking ran, but its traceback-less native run names no launch site.
    assert_eq!(v["launch_site"]["how"], "memcheck's host backtrace at launch", "{v}");
    assert_eq!(
        b.manifest()["stopped"].as_str(),
        Some("every planned rung has run; the launch site stays unknown"),
        "memcheck names only `main`: the recording's binary has no host debug info"
    );
    s.assert_no_standin_left();
}

/// Reads a JSON array of strings.
trait StrArray {
    fn as_sequence_or_array(&self) -> Vec<&str>;
}

impl StrArray for serde_json::Value {
    fn as_sequence_or_array(&self) -> Vec<&str> {
        self.as_array().map(|a| a.iter().filter_map(|x| x.as_str()).collect()).unwrap_or_default()
    }
}

/// (c) A rung that yields no artifact: the driver wrote no coredump in the armed baseline (as
/// when an NCCL watchdog aborts the rank first). The ladder says so and, since the coredump
/// rung would run the same armed run again, goes on to the next cheapest rung that answers the
/// line: attach, which finds it; the launch site still missing, memcheck
/// names its function (`main`, no line without `-g`), and no rung is left that could name the
/// line.
#[test]
fn a_rung_without_its_artifact_is_noted_and_the_ladder_goes_on() {
    let s = Scratch::for_run("no-dump");
    let recipe = s.write_recipe(&target_recipe(""));
    let out = Run::new(&s, &recipe, "oob_write").env("STANDIN_NO_DUMP", "1").run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    assert_eq!(b.rung_dirs(), ["01-baseline", "02-attach", "03-memcheck"], "{}", out.both());
    assert!(!b
        .files_in("rungs/01-baseline")
        .iter()
        .any(|f| f.starts_with("core_") || f.starts_with("cudagdb") || f.starts_with("cpucore")));
    let notes = b.notes("baseline");
    assert!(notes.contains("no coredump was written"), "{}", b.read("manifest.yaml"));
    // Without a dump there was no GPU fault to read a CPU core for.
    assert!(!notes.contains("CPU core"), "{notes}");
    assert!(out.stderr.contains("no coredump was written"), "{}", out.both());
    let v = &b.findings()["verdict"];
    assert_eq!(v["line"], 7);
    assert_eq!(v["rungs"].as_sequence_or_array(), ["attach", "memcheck"], "{v}");
    assert_eq!(v["launch_site"]["how"], "memcheck's host backtrace at launch", "{v}");
    let stopped = b.manifest()["stopped"].as_str().unwrap().to_string();
    assert!(stopped.starts_with("no remaining rung can establish the launch site"), "{stopped}");
    assert!(stopped.contains("skipping launch-blocking, coredump, initcheck"), "{stopped}");
    s.assert_no_standin_left();
}

/// (d) A target that hangs past the recipe's 2 s timeout: looked at as hung, then ended with
/// its child (the whole process group), noted, and the ladder goes on to the next rung asked
/// for.
#[test]
fn a_hang_past_the_timeout_is_killed_with_its_children_and_the_ladder_goes_on() {
    let s = Scratch::for_run("hang");
    // Only the baseline hangs; the next rung replays normally.
    let recipe = s.write_recipe(
        "version: 1\nname: hang\ndescription: \"the stand-in target, hanging in the baseline\"\n\
         run:\n  command: [\"target\"]\n  timeout: 2\n\
         rungs:\n  baseline:\n    env: { STANDIN_HANG: \"1\", STANDIN_CHILD: \"1\" }\n",
    );
    let out = Run::new(&s, &recipe, "oob_write").arg("--rungs").arg("baseline,launch-blocking").run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    assert!(out.took < Duration::from_secs(20), "took {:?}", out.took);
    let b = s.only_bundle();
    assert_eq!(b.rung_dirs(), ["01-baseline", "02-launch-blocking"], "{}", out.both());
    // At its limit the armed run is looked at as hung (no CUDA process in it: no pipe), then
    // ended.
    assert_eq!(b.exit_of("baseline", "target"), "stopped", "{}", b.read("manifest.yaml"));
    let notes = b.notes("baseline");
    assert!(notes.contains("still running at its time limit (2 s)"), "{notes}");
    assert!(notes.contains("no CUDA process was found in the target's tree"), "{notes}");
    let took = b.rung("baseline")["duration_s"].as_f64().unwrap();
    assert!((1.9..10.0).contains(&took), "the baseline took {took} s");

    // The target and the child it started in the background are both gone.
    let pids = s.standin_pids();
    assert!(pids.iter().any(|(r, _)| r == "child"), "the stand-in started no child: {pids:?}");
    assert!(
        wait_for(Duration::from_secs(2), || pids.iter().all(|(_, p)| !alive(*p))),
        "left running: {:?}",
        pids.iter().filter(|(_, p)| alive(*p)).collect::<Vec<_>>()
    );

    // The ladder went on: launch-blocking ran and ended as recorded.
    assert_eq!(b.exit_of("launch-blocking", "target"), "code 1");
    assert!(b
        .read("rungs/02-launch-blocking/stderr.log")
        .contains("an illegal memory access was encountered"));
    s.assert_no_standin_left();
}

/// (e) Ctrl-C in the middle of a rung: exit 130, the bundle keeps the manifest and the
/// rung's logs, and no stand-in is left.
#[test]
fn ctrl_c_in_the_middle_keeps_the_bundle_and_kills_the_target() {
    let s = Scratch::for_run("ctrl-c");
    // The coredump rung, second of the two asked for, hangs (a long timeout): Ctrl-C comes
    // while it runs.
    let recipe = s.write_recipe(&target_recipe(
        "rungs:\n  coredump:\n    env: { STANDIN_HANG: \"1\", STANDIN_CHILD: \"1\" }\n",
    ));
    let run = Run::new(&s, &recipe, "oob_write").arg("--rungs").arg("baseline,coredump");
    let start = Instant::now();
    let child = run.spawn();
    let xtask = Pid::from_raw(child.id() as i32);
    // Wait for the hanging rung's target and its child to be running.
    let running = wait_for(Duration::from_secs(30), || {
        s.standin_pids().iter().filter(|(r, _)| r == "target").count() >= 2
            && s.standin_pids().iter().any(|(r, _)| r == "child")
    });
    if !running {
        let _ = kill(xtask, Signal::SIGKILL);
    }
    assert!(running, "the coredump rung did not start: {:?}", s.standin_pids());
    // The rung's folder exists (its target runs): Ctrl-C, to the xtask process only (its
    // targets run in process groups of their own, so the ladder must kill them).
    std::thread::sleep(Duration::from_millis(200));
    kill(xtask, Signal::SIGINT).unwrap();
    let out = run.finish(child, start);
    assert_eq!(out.code(), Some(130), "{}", out.both());

    let b = s.only_bundle();
    assert!(b.exists("manifest.yaml") && b.exists("summary.md") && b.exists("findings.json"));
    for f in ["stdout.log", "stderr.log", "command.txt"] {
        assert!(b.exists(&format!("rungs/01-baseline/{f}")), "01-baseline/{f}");
        assert!(b.exists(&format!("rungs/02-coredump/{f}")), "02-coredump/{f}");
    }
    assert_eq!(b.rung_dirs(), ["01-baseline", "02-coredump"], "nothing ran after Ctrl-C");
    assert_eq!(b.rung("coredump")["status"].as_str(), Some("interrupted"), "{}", b.read("manifest.yaml"));
    assert_eq!(b.exit_of("coredump", "target"), "interrupted");
    // Its line says what happened, no more: a target killed by Ctrl-C is no device error.
    let line =
        out.both().lines().find(|l| l.trim_start().starts_with("[2/2] coredump: ")).map(str::to_string);
    let line = line.unwrap_or_default();
    assert!(
        line.trim().starts_with("[2/2] coredump: interrupted (") && !line.contains("device error"),
        "{}",
        out.both()
    );
    // What the armed baseline found is kept: its dump's reading.
    assert!(b.files_in("rungs/01-baseline").iter().any(|f| f.starts_with("cudagdb")));
    assert!(b.manifest()["stopped"].as_str().unwrap().contains("interrupted"), "{}", b.read("manifest.yaml"));
    let pids = s.standin_pids();
    assert!(
        wait_for(Duration::from_secs(2), || pids.iter().all(|(_, p)| !alive(*p))),
        "left running after Ctrl-C: {:?}",
        pids.iter().filter(|(_, p)| alive(*p)).collect::<Vec<_>>()
    );
    s.assert_no_standin_left();
}

/// (e2) Ctrl-C while the memcheck pass runs beside the armed run's reading (the stand-ins wait
/// for a third that never comes): exit 130 at once, and the bundle keeps both records, the
/// armed run's and the pass's, interrupted; nothing is left running.
#[test]
fn ctrl_c_during_the_pass_beside_the_reading_keeps_both_records() {
    let s = Scratch::for_run("ctrl-c-pass");
    let recipe = s.write_recipe(&target_recipe(""));
    let run = Run::new(&s, &recipe, "oob_write").meet(3, 60);
    let start = Instant::now();
    let child = run.spawn();
    let xtask = Pid::from_raw(child.id() as i32);
    let meet = s.path("meet");
    let both = wait_for(Duration::from_secs(30), || {
        let names: Vec<String> = std::fs::read_dir(&meet)
            .map(|rd| rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        ["running.memcheck.", "running.cuda-gdb."].iter().all(|p| names.iter().any(|n| n.starts_with(p)))
    });
    if !both {
        let _ = kill(xtask, Signal::SIGKILL);
    }
    assert!(both, "memcheck and cuda-gdb were not running together");
    kill(xtask, Signal::SIGINT).unwrap();
    let out = run.finish(child, start);
    assert_eq!(out.code(), Some(130), "{}", out.both());
    assert!(out.took < Duration::from_secs(50), "it waited for the stand-ins: {:?}", out.took);
    let b = s.only_bundle();
    assert_eq!(b.rung_dirs(), ["01-baseline", "02-memcheck"], "{}", out.both());
    assert_eq!(b.rung("memcheck")["status"].as_str(), Some("interrupted"), "{}", b.read("manifest.yaml"));
    assert!(b.rung("baseline")["status"].as_str().is_some(), "{}", b.read("manifest.yaml"));
    assert!(b.manifest()["stopped"].as_str().unwrap().contains("interrupted"), "{}", b.read("manifest.yaml"));
    s.assert_no_standin_left();
}

/// Whether `unshare --user --map-root-user --mount` can mount a tmpfs here (a small disk to
/// fill); required under CI, where the machine allows it.
fn can_mount_tmpfs(s: &Scratch) -> bool {
    let dir = s.path("probe-mount");
    std::fs::create_dir_all(&dir).unwrap();
    let ok = std::process::Command::new("unshare")
        .args([
            "--user",
            "--map-root-user",
            "--mount",
            "sh",
            "-c",
            "mount -t tmpfs -o size=64k tmpfs \"$0\"",
            &dir.display().to_string(),
        ])
        .status()
        .is_ok_and(|st| st.success());
    if !ok && std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false" && v != "0") {
        panic!("CI is set but `unshare --user --map-root-user --mount` cannot mount a tmpfs (util-linux's unshare)");
    }
    ok
}

/// A full disk, wherever it fills (creating the bundle, the doctor's file, a rung's log, the
/// manifest after a rung): exit 1 with one message naming the full disk, every time; what
/// was written is kept (a manifest, when there is one, is a whole one) and no process is left.
#[test]
fn a_full_disk_fails_the_same_way_wherever_the_space_runs_out() {
    let s = Scratch::for_run("full-disk");
    if !can_mount_tmpfs(&s) {
        support::skipped("cannot mount a tmpfs in a user namespace here (CI would fail)");
        return;
    }
    // A target that prints 4 MB, then the CUDA error.
    let recipe = s.write_recipe(
        "version: 1\nname: chatty\ndescription: \"prints a lot, then faults\"\nrun:\n  command: [\"sh\", \"-c\", \
         \"yes 'a line the target prints, again and again, to fill the disk' | head -c 4000000; echo 'CUDA error: \
         an illegal memory access was encountered' >&2; exit 1\"]\n  timeout: 30\n",
    );
    let mut codes = Vec::new();
    for size in ["4k", "12k", "1m", "6m", "10m", "64m"] {
        let bundles = s.bundles();
        let _ = std::fs::remove_dir_all(&bundles);
        std::fs::create_dir_all(&bundles).unwrap();
        let kept = s.path(&format!("kept-{size}"));
        std::fs::create_dir_all(&kept).unwrap();
        // The bundle root is a tmpfs of `size` in a mount namespace of the run's own; what the
        // run left there is copied out after it, with its exit status kept.
        let wrapper: Vec<String> = [
            "unshare",
            "--user",
            "--map-root-user",
            "--mount",
            "sh",
            "-c",
            "mount -t tmpfs -o size=$0 tmpfs \"$1\" || exit 97; b=$1; k=$2; shift 2; \"$@\"; rc=$?; \
             cp -a \"$b\"/. \"$k\"/; exit $rc",
            size,
        ]
        .iter()
        .map(|a| a.to_string())
        .chain([bundles.display().to_string(), kept.display().to_string()])
        .collect();
        let run = Run::new(&s, &recipe, "oob_write");
        let start = Instant::now();
        let out = run.finish(run.spawn_via(&wrapper), start);
        assert_ne!(out.code(), Some(97), "could not mount the tmpfs: {}", out.both());
        codes.push((size, out.code()));
        if out.code() == Some(0) {
            // The disk was large enough for the whole run: nothing to check at this size.
            continue;
        }
        assert_eq!(out.code(), Some(1), "size {size}: {}", out.both());
        assert!(out.stderr.contains("a disk is full"), "size {size}: {}", out.both());
        assert!(!out.stderr.contains("panicked"), "size {size}: {}", out.both());
        for (entry, bytes) in support::every_file(&kept) {
            let name = entry.file_name().unwrap().to_string_lossy().into_owned();
            assert!(!name.ends_with(".partial"), "size {size}: a partial file was left: {}", entry.display());
            if name == "manifest.yaml" {
                let text = String::from_utf8_lossy(&bytes);
                serde_yaml::from_str::<serde_yaml::Value>(&text)
                    .unwrap_or_else(|e| panic!("size {size}: a broken manifest was left: {e}\n{text}"));
            }
        }
    }
    assert!(
        codes.iter().filter(|(_, c)| *c == Some(1)).count() >= 3,
        "the disk filled too rarely: {codes:?}"
    );
    s.assert_no_standin_left();
}

/// (f) A recipe with an unknown key fails before anything runs: `file:line:column` in the
/// message, no bundle, no process started.
#[test]
fn a_bad_recipe_fails_before_anything_runs() {
    let s = Scratch::for_run("bad-recipe");
    let recipe = s.write_recipe(&target_recipe("retries: 3\n"));
    let out = Run::new(&s, &recipe, "oob_write").run();
    assert_eq!(out.code(), Some(1), "{}", out.both());
    // The unknown key is on line 7 (after version, name, description, run and its 2 keys).
    let at = format!("{}:7:1", recipe.display());
    assert!(out.stderr.contains(&at), "no `{at}` in:\n{}", out.both());
    assert!(out.stderr.contains("retries"), "{}", out.both());
    assert!(!s.bundles().exists(), "a bundle root was created");
    assert!(s.standin_pids().is_empty(), "something ran: {:?}", s.standin_pids());
    assert!(out.took < Duration::from_secs(10), "took {:?}", out.took);
}

/// A stand-in case folder from the real bundle `debug-ima --full` wrote on the H200 for the
/// correct stencil (tests/fixtures/h200/stencil_fixed, `stencil_neighbour.cu -DFIXED`): each
/// rung's recorded output under the name the stand-ins replay (the target's stdout, then its
/// stderr), and the exit codes the bundle recorded, all 0.
fn stencil_fixed_case(s: &Scratch) -> PathBuf {
    let rungs = support::fixture("stencil_fixed").join("rungs");
    let to = s.path("case-stencil-fixed");
    std::fs::create_dir_all(&to).unwrap();
    let both = |dir: &str| {
        let read = |f: &str| std::fs::read(rungs.join(dir).join(f)).unwrap();
        [read("stdout.log"), read("stderr.log")].concat()
    };
    let mut meta = String::new();
    for (dir, name) in [
        ("01-baseline", "baseline"),
        ("03-launch-blocking", "launch-blocking"),
        ("04-coredump", "coredump"),
        ("05-attach", "waits"),
        ("06-memcheck", "memcheck"),
        ("07-initcheck", "initcheck"),
    ] {
        std::fs::write(to.join(format!("{name}.log")), both(dir)).unwrap();
        meta.push_str(&format!(
            "{name}\t{}\t0.500\t(from the bundle)\n",
            if name == "waits" { "none" } else { "0" }
        ));
    }
    for (dir, xml) in [("06-memcheck", "memcheck.xml"), ("07-initcheck", "initcheck.xml")] {
        std::fs::copy(rungs.join(dir).join(xml), to.join(xml)).unwrap();
    }
    std::fs::write(to.join("meta.tsv"), meta).unwrap();
    to
}

/// The folders of a clean program's default climb: the baseline, the sweep, the retries.
const CLEAN_CLIMB: [&str; 8] = [
    "01-baseline",
    "02-memcheck",
    "03-initcheck",
    "04-racecheck",
    "05-synccheck",
    "06-baseline-2",
    "07-baseline-3",
    "08-baseline-4",
];

/// (g) A clean program (the correct stencil, replayed from its H200 bundle): no verdict, the
/// symptom did not reproduce, and the sweep still ran, since a bad access does not always
/// fault: memcheck (with padding), then initcheck; then the armed baseline again, `--retries`
/// times (3 by default), the second without launch-blocking (a race it hides), in case the
/// fault is intermittent; the rungs that wait for a fault are skipped.
#[test]
fn a_clean_run_gives_no_verdict_after_the_memcheck_and_initcheck_sweep() {
    let s = Scratch::for_run("clean");
    let recipe = s.write_recipe(&target_recipe(""));
    let case = stencil_fixed_case(&s);
    let out = Run::new(&s, &recipe, "clean").env("STANDIN_CASE", case.to_str().unwrap()).run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    assert_eq!(b.rung_dirs(), CLEAN_CLIMB, "{}", out.both());
    assert!(b.findings()["verdict"].is_null(), "{}", b.read("findings.json"));
    assert_eq!(b.findings()["reproduced"], serde_json::json!({"faulted": 0, "runs": 8}));
    let stopped = b.manifest()["stopped"].as_str().unwrap().to_string();
    assert_eq!(
        stopped,
        "no fault was reproduced: the target ran 4 times armed without a CUDA error, and the sweep \
         (memcheck, initcheck, racecheck) found nothing"
    );
    // The stand-in has no synccheck recording of this case: its failure, without a report, is
    // not a fault, and the sweep does not claim it found nothing.
    assert!(b.notes("synccheck").contains("wrote no XML report"), "{}", b.notes("synccheck"));
    for (dir, blocking) in [("01-baseline", true), ("06-baseline-2", false), ("07-baseline-3", true)] {
        let cmd = b.read(&format!("rungs/{dir}/command.txt"));
        assert_eq!(cmd.contains("CUDA_LAUNCH_BLOCKING=1"), blocking, "{dir}: {cmd}");
    }
    let notes = b.read("manifest.yaml");
    assert!(
        notes.contains("run 2 of baseline (`--retries 3`)") && notes.contains("without launch-blocking"),
        "{notes}"
    );
    assert!(out.stdout.contains(&format!("stopped: {stopped}")), "{}", out.both());
    assert_eq!(b.exit_of("baseline", "target"), "code 0");
    assert_eq!(b.exit_of("memcheck", "target"), "code 0");
    assert!(b.read("rungs/02-memcheck/command.txt").contains("--tool memcheck --padding 64"));
    assert!(b.read("rungs/02-memcheck/stdout.log").contains("ERROR SUMMARY: 0 errors"));
    assert!(b.exists("rungs/02-memcheck/memcheck.xml"));
    assert_eq!(b.exit_of("initcheck", "target"), "code 0");
    let ic = b.read("rungs/03-initcheck/command.txt");
    assert!(ic.contains("compute-sanitizer --tool initcheck --print-limit 1000"), "{ic}");
    assert!(b.read("rungs/03-initcheck/stdout.log").contains("ERROR SUMMARY: 0 errors"));
    assert!(b.exists("rungs/03-initcheck/initcheck.xml"));
    assert!(b.notes("initcheck").is_empty(), "{}", b.notes("initcheck"));
    s.assert_no_standin_left();
}

/// [`nvcc_dir`], or `None` after saying the test skipped its real work; with CI set, a
/// failure instead (.ci/run installs them).
pub(crate) fn nvcc_or_skip() -> Option<PathBuf> {
    let dir = nvcc_dir();
    if dir.is_none() {
        if std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false" && v != "0") {
            panic!(
                "CI is set but nvcc and cuobjdump are neither on PATH nor in .venv-cuda: .ci/run installs them \
                 (`pip install nvidia-cuda-nvcc nvidia-cuda-cuobjdump nvidia-cuda-runtime nvidia-cuda-crt`)"
            );
        }
        support::skipped("no nvcc on PATH nor in .venv-cuda (CI would fail here)");
    }
    dir
}

/// The bin folder of nvcc and cuobjdump: PATH, else this checkout's .venv-cuda (what
/// .ci/run installs from PyPI).
fn nvcc_dir() -> Option<PathBuf> {
    let on_path = std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(PathBuf::from)
        .find(|d| d.join("nvcc").is_file() && d.join("cuobjdump").is_file());
    on_path.or_else(|| {
        let lib = root().join(".venv-cuda/lib");
        std::fs::read_dir(lib)
            .ok()?
            .flatten()
            .map(|e| e.path().join("site-packages/nvidia/cu13/bin"))
            .find(|d| d.join("nvcc").is_file() && d.join("cuobjdump").is_file())
    })
}

/// (h) The rebuild rung with the real nvcc (from the PyPI wheels, no GPU needed) on a real
/// program: `NVCC_PREPEND_FLAGS="-lineinfo -g"` reaches nvcc, and `cuobjdump -elf` finds the
/// line-info sections.
#[test]
fn rebuild_with_the_real_nvcc_finds_line_info() {
    let Some(bin) = nvcc_or_skip() else { return };
    let s = Scratch::for_run("rebuild");
    let src = root().join("tests/gpu/programs/oob_write.cu");
    let exe = s.path("oob_write");
    let recipe = s.write_recipe(&format!(
        "version: 1\nname: rebuild\ndescription: \"oob_write.cu built by the real nvcc\"\n\
         build:\n  command: [\"nvcc\", \"-arch=sm_90\", \"-o\", \"{exe}\", \"{src}\"]\n  binaries: [\"{exe}\"]\n  timeout: 300\n\
         run:\n  command: [\"target\"]\n",
        exe = exe.display(),
        src = src.display()
    ));
    let out = Run::new(&s, &recipe, "oob_write")
        .path(path_with(&[&standins(), &bin]))
        .arg("--rungs")
        .arg("rebuild")
        .run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    assert_eq!(b.rung_dirs(), ["01-rebuild"], "{}", out.both());
    assert!(exe.is_file(), "nvcc built nothing:\n{}", b.read("rungs/01-rebuild/stderr.log"));
    assert_eq!(b.exit_of("rebuild", "build"), "code 0", "{}", b.read("rungs/01-rebuild/stderr.log"));
    // Line info for the device code and host debug info (`-g`, for a CPU core's launch line).
    let cmd = b.read("rungs/01-rebuild/command.txt");
    assert!(cmd.contains("'NVCC_PREPEND_FLAGS=-lineinfo -g'"), "{cmd}");
    let tsv = b.read("rungs/01-rebuild/lineinfo.tsv");
    let n: usize = tsv
        .split('\t')
        .nth(1)
        .and_then(|f| f.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("lineinfo.tsv: {tsv}"));
    assert!(n > 0, "no line-info sections: {tsv}");
    assert!(tsv.starts_with(&exe.display().to_string()), "{tsv}");
    assert!(b.read("rungs/01-rebuild/cuobjdump-1.log").contains("debug_line"));
    assert!(b.notes("rebuild").is_empty(), "{}", b.notes("rebuild"));
    s.assert_no_standin_left();
}

/// The recordings of a CuPy kernel compiled while its program ran (H100:
/// tests/fixtures/h100/jit_rebuild): `cupy` as it ran, `cupy_debug` with CuPy's debug switch.
fn jit_fixture(case: &str) -> PathBuf {
    root().join("tests/fixtures/h100/jit_rebuild").join(case)
}

/// A stand-in `python3` for `nvrtc_fault.py cupy`, whose kernel is compiled while it runs: the
/// stand-in target replays the run recorded without CuPy's debug switch, or, when the run has
/// `CUPY_CUDA_COMPILE_WITH_DEBUG=1`, the one recorded with it, after copying the source CuPy
/// saved in that run into `CUPY_CACHE_DIR` (with `CUPY_CACHE_SAVE_CUDA_SOURCE`), as CuPy does.
/// With `TORCH_EXTENSIONS_DIR` set it first builds an extension library in it with the real
/// nvcc, as a `torch.utils.cpp_extension.load()` into an empty folder does (nvcc reads
/// `NVCC_PREPEND_FLAGS` itself). `-m MODULE` (the snapshot's `pip freeze`, the recipe's
/// `collect_env`) prints one line.
fn jit_python_standin(s: &Scratch) -> PathBuf {
    let p = s.path("python3");
    let script = format!(
        "#!/bin/sh
         if [ \"$1\" = -m ]; then echo \"$2 (stand-in)\"; exit 0; fi
         rec={plain}
         if [ \"${{CUPY_CUDA_COMPILE_WITH_DEBUG:-}}\" = 1 ]; then
             rec={debug}
             if [ -n \"${{CUPY_CACHE_SAVE_CUDA_SOURCE:-}}\" ]; then cp \"$rec\"/kernel_cache/*.cubin.cu \"$CUPY_CACHE_DIR\"/ || exit 1; fi
         fi
         if [ -n \"${{TORCH_EXTENSIONS_DIR:-}}\" ]; then
             mkdir -p \"$TORCH_EXTENSIONS_DIR/ima_gather_op\" || exit 1
             nvcc -arch=sm_90 -shared -Xcompiler -fPIC -o \"$TORCH_EXTENSIONS_DIR/ima_gather_op/ima_gather_op.so\" {src} || exit 1
         fi
         STANDIN_CASE=$rec exec target \"$@\"
",
        plain = jit_fixture("cupy").display(),
        debug = jit_fixture("cupy_debug").display(),
        src = root().join("tests/gpu/programs/oob_write.cu").display(),
    );
    std::fs::write(&p, script).unwrap();
    // The script the run names is there (a missing one is refused before anything runs); the
    // stand-in runs the recording, not it.
    std::fs::write(s.path("nvrtc_fault.py"), "").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// Every file under `dir`, relative, with its bytes, sorted.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let rel = e.path().strip_prefix(dir).unwrap().display().to_string();
            (rel, std::fs::read(e.path()).unwrap())
        })
        .collect();
    out.sort();
    out
}

/// A Python target whose kernel is compiled while it runs (a CuPy `RawKernel` through NVRTC,
/// recorded on an H100), climbed with the built-in `pytorch` recipe (no `build:`): its armed
/// run names the kernel and the launch line but no source line, so the rebuild redoes its
/// run-time builds. That is one more armed run of the target with every library's JIT
/// folder fresh and empty inside the rung's folder (`jit/`) and line info asked of each
/// (`NVCC_PREPEND_FLAGS`, `CUPY_CUDA_COMPILE_WITH_DEBUG=1`, FlashInfer's and DeepGEMM's
/// switches). Its dump gives the line (`<sha1>.cubin.cu:13`), CuPy's saved source lands in the
/// bundle, the extension library the run built there carries line info (the real nvcc and
/// cuobjdump), and the user's own caches (in a home of the test's own) are not touched.
#[test]
fn a_python_target_s_run_time_builds_are_redone_with_line_info_for_the_line() {
    let Some(bin) = nvcc_or_skip() else { return };
    let s = Scratch::for_run("jit-rebuild");
    let home = s.path("home");
    for f in [
        ".cache/torch_extensions/py312_cu130/ima_gather_op/build.ninja",
        ".cupy/kernel_cache/00fbfaeb924fb39e58db144444aa336f7fc0f973.cubin.cu",
    ] {
        std::fs::create_dir_all(home.join(f).parent().unwrap()).unwrap();
        std::fs::write(home.join(f), "the user's cached build\n").unwrap();
    }
    let before = tree(&home);
    let python = jit_python_standin(&s);
    let out = Run::new(&s, Path::new("pytorch"), "unused")
        .env("STANDIN_CASE", jit_fixture("cupy").to_str().unwrap())
        .env("HOME", home.to_str().unwrap())
        .path(path_with(&[&standins(), &bin]))
        .arg("--set")
        .arg(&format!("python={}", python.display()))
        .arg("--set")
        .arg("script=nvrtc_fault.py")
        .arg("--set")
        .arg("args=cupy")
        .run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    assert_eq!(b.rung_dirs(), ["01-baseline", "02-rebuild"], "{}", out.both());

    // The armed run's reading: the kernel and where it was launched, no line.
    let first = b.read("rungs/01-baseline/cudagdb-1.log");
    assert!(first.contains("No line number information available"), "{first}");
    // The rebuild's run: the armed run's environment, and every JIT folder in its own.
    let rung = b.root.join("rungs/02-rebuild");
    let cmd = b.read("rungs/02-rebuild/command.txt");
    for (var, folder) in [
        ("TORCH_EXTENSIONS_DIR", "torch_extensions"),
        ("CUPY_CACHE_DIR", "cupy"),
        ("FLASHINFER_WORKSPACE_BASE", "flashinfer"),
        ("DG_JIT_CACHE_DIR", "deep_gemm"),
    ] {
        let want = format!("{var}={}", rung.join("jit").join(folder).display());
        assert!(cmd.contains(&want), "`{want}` missing: {cmd}");
    }
    for want in [
        "'NVCC_PREPEND_FLAGS=-lineinfo -g'",
        "CUPY_CUDA_COMPILE_WITH_DEBUG=1",
        "CUPY_CACHE_SAVE_CUDA_SOURCE=1",
        "-u CUPY_CACHE_IN_MEMORY",
        "FLASHINFER_JIT_LINEINFO=1",
        "DG_JIT_WITH_LINEINFO=1",
        "CCACHE_DISABLE=1",
        "CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1",
        "PYTHONFAULTHANDLER=1",
        "CUDA_LAUNCH_BLOCKING=1",
        "nvrtc_fault.py cupy",
    ] {
        assert!(cmd.contains(want), "`{want}` missing: {cmd}");
    }
    assert!(!cmd.contains(&home.display().to_string()), "{cmd}");
    // Its dump, read as the armed run's is, names the line; the source CuPy saved is there.
    let second = b.read("rungs/02-rebuild/cudagdb-1.log");
    assert!(second.contains("00fbfaeb924fb39e58db144444aa336f7fc0f973.cubin.cu:13"), "{second}");
    let source = b.read("rungs/02-rebuild/jit/cupy/00fbfaeb924fb39e58db144444aa336f7fc0f973.cubin.cu");
    assert_eq!(source.lines().nth(12).map(str::trim), Some("out[j] += x[i];  // FAULT"), "{source}");
    // The extension library the run built in the fresh folder, checked by the real cuobjdump.
    assert!(rung.join("jit/torch_extensions/ima_gather_op/ima_gather_op.so").is_file());
    let tsv = b.read("rungs/02-rebuild/lineinfo.tsv");
    assert!(tsv.contains("ima_gather_op/ima_gather_op.so\t"), "{tsv}");
    assert!(!tsv.contains("\t0 line-info sections"), "{tsv}");
    let notes = b.notes("rebuild");
    assert!(
        notes.contains("carry line info") && notes.contains("`ima_gather_op/ima_gather_op.so`"),
        "{notes}"
    );
    assert!(notes.contains("CuPy compiled 1 kernel source(s)"), "{notes}");

    // The verdict: the line from the rebuild's run, the launch from the armed run's stack.
    let f = b.findings();
    let v = &f["verdict"];
    assert_eq!(v["kernel"], "scatter_add", "{v}");
    assert!(
        v["file"].as_str().unwrap().ends_with("00fbfaeb924fb39e58db144444aa336f7fc0f973.cubin.cu"),
        "{v}"
    );
    assert_eq!(v["line"], 13, "{v}");
    assert!(v["unknown"].is_null(), "{v}");
    assert_eq!(v["launch_site"]["line"], 52, "{v}");
    assert_eq!(f["reproduced"], serde_json::json!({"faulted": 2, "runs": 2}), "{f}");
    let stopped = b.manifest()["stopped"].as_str().unwrap().to_string();
    assert!(stopped.starts_with("the verdict is complete: `scatter_add` at "), "{stopped}");
    // What a JIT build wrote into the bundle is not read as a tool's output.
    assert!(!b.read("findings.json").contains("/jit/"), "{}", b.read("findings.json"));

    // Nothing of the user's caches was read into, changed, or added to.
    assert_eq!(tree(&home), before, "the user's home changed");
    s.assert_no_standin_left();
}

/// The armed first run of a native binary that names its launch sites (objdump of the real
/// nvcc build, no GPU needed, beside the run: its symbols hold kernel stubs) is not launch-blocking: `launch-sites.log` holds where `main`
/// launches `scale_write`, the disassembly itself is not kept, and the run's command has no
/// `CUDA_LAUNCH_BLOCKING`. (Without a GPU the program fails at its first CUDA call.)
#[test]
fn a_binary_that_names_its_launch_sites_runs_at_full_speed() {
    let Some(bin) = nvcc_or_skip() else { return };
    let s = Scratch::for_run("launch-sites");
    let src = root().join("tests/gpu/programs/oob_write.cu");
    let exe = s.path("oob_write");
    let recipe = s.write_recipe(&format!(
        "version: 1\nname: sites\ndescription: \"oob_write.cu built by the real nvcc\"\n\
         build:\n  command: [\"nvcc\", \"-arch=sm_90\", \"-o\", \"{exe}\", \"{src}\"]\n  binaries: [\"{exe}\"]\n  timeout: 300\n\
         run:\n  command: [\"{exe}\"]\n",
        exe = exe.display(),
        src = src.display()
    ));
    let out = Run::new(&s, &recipe, "oob_write")
        .path(path_with(&[&standins(), &bin]))
        .arg("--rungs")
        .arg("baseline")
        .run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    let d = "rungs/01-baseline";
    let table = b.read(&format!("{d}/launch-sites.log"));
    let row = table
        .lines()
        .find(|l| l.starts_with("scale_write("))
        .unwrap_or_else(|| panic!("no scale_write row: {table}"));
    let cells: Vec<&str> = row.split('\t').collect();
    assert_eq!(cells[1], "main", "{row}");
    assert!(cells[2].ends_with("oob_write.cu:15"), "{row}");
    assert!(!b.exists(&format!("{d}/objdump.log")), "the disassembly is not kept: {:?}", b.files_in(d));
    let cmd = b.read(&format!("{d}/command.txt"));
    assert!(!cmd.contains("CUDA_LAUNCH_BLOCKING"), "{cmd}");
    assert!(cmd.contains("CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1"), "{cmd}");
    let notes = b.notes("baseline");
    assert!(notes.contains("the armed run is not launch-blocking"), "{notes}");
    // nvcc's build has kernel stubs in its symbols: the disassembly ran beside the run.
    assert!(notes.contains("symbols hold kernel stubs") && notes.contains("read beside the run"), "{notes}");
    let json = b.findings();
    assert!(json.to_string().contains("objdump"), "the table is read as evidence: {json}");
    s.assert_no_standin_left();
}

/// racecheck scopes itself to the kernels that have shared memory, read from the real
/// `cuobjdump -elf` (the PyPI wheels', no GPU needed) of a real nvcc build: clean_layers.cu's
/// transpose and RMSNorm do, its warp-shuffle row sum does not. racecheck checks the two for
/// their first 4 launches; synccheck checks every kernel; the listing is not kept, its table is.
/// A program with no shared memory (oob_write.cu) has nothing for racecheck: the target is
/// not run.
#[test]
fn racecheck_checks_only_the_kernels_that_touch_shared_memory() {
    let Some(bin) = nvcc_or_skip() else { return };
    let s = Scratch::for_run("scope");
    // Built here, as a user's build would have left them (a rung alone does not build).
    let build = |s: &Scratch, name: &str, src: &str| {
        let exe = s.path(name);
        let built = std::process::Command::new(bin.join("nvcc"))
            .args(["-arch=sm_90", "-o"])
            .arg(&exe)
            .arg(root().join("tests/gpu/programs").join(src))
            .env("PATH", path_with(&[&bin]))
            .output()
            .unwrap();
        assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
        s.write_recipe(&format!(
            "version: 1\nname: scope\ndescription: \"{src} built by the real nvcc\"\n\
             build:\n  command: [\"false\"]\n  binaries: [\"{exe}\"]\n\
             run:\n  command: [\"target\"]\n",
            exe = exe.display(),
        ))
    };
    let recipe = build(&s, "clean_layers", "clean_layers.cu");
    let out = Run::new(&s, &recipe, "oob_write")
        .path(path_with(&[&standins(), &bin]))
        .arg("--rungs")
        .arg("racecheck,synccheck")
        .run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    let (race, sync) = ("rungs/01-racecheck", "rungs/02-synccheck");
    let filters = "--kernel-name kne=_Z15transpose_tiledPKfPfii --kernel-name kne=_Z8rms_normPKfS0_Pfif";
    let rc = b.read(&format!("{race}/command.txt"));
    assert!(rc.contains(&format!("{filters} --launch-count 4 ")), "{rc}");
    assert!(!rc.contains("row_sums"), "{rc}");
    let table = b.read(&format!("{race}/scope.txt"));
    assert!(table.lines().any(|l| l.starts_with("_Z8row_sumsPKfPfii\tfalse\t")), "{table}");
    assert!(table.lines().any(|l| l.starts_with("_Z15transpose_tiledPKfPfii\ttrue\t")), "{table}");
    assert!(!b.exists(&format!("{race}/elf-1.log")), "the listing is not kept: {:?}", b.files_in(race));
    let notes = b.notes("racecheck");
    assert!(notes.contains("scoped to the 2 kernel(s) of the binaries that have shared memory"), "{notes}");
    assert!(notes.contains("their first 4 launches"), "{notes}");
    let sc = b.read(&format!("{sync}/command.txt"));
    assert!(
        !sc.contains("--kernel-name") && !sc.contains("--launch-count"),
        "synccheck checks every kernel: {sc}"
    );
    assert!(!b.exists(&format!("{sync}/scope.txt")), "{:?}", b.files_in(sync));

    let s = Scratch::for_run("scope-none");
    let recipe = build(&s, "oob_write", "oob_write.cu");
    let out = Run::new(&s, &recipe, "oob_write")
        .path(path_with(&[&standins(), &bin]))
        .arg("--rungs")
        .arg("racecheck")
        .run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    let notes = b.notes("racecheck");
    assert!(notes.contains("nothing to check, and did not run the target"), "{notes}");
    assert!(!b.exists("rungs/01-racecheck/command.txt"), "{:?}", b.files_in("rungs/01-racecheck"));
    assert!(b.read("rungs/01-racecheck/scope.txt").contains("_Z11scale_writePfix\tfalse\t"));
    s.assert_no_standin_left();
}

/// The build writes its binaries into folders that need not exist yet (the built-in demo
/// builds into `target/debug-ima/demo/`): the ladder creates them, since `nvcc -o DIR/FILE`
/// (like `cp` here) does not.
#[test]
fn the_build_gets_the_folders_of_its_binaries() {
    let s = Scratch::for_run("binary-dirs");
    let recipe = s.write_recipe(&format!(
        "version: 1\nname: dirs\ndescription: \"a build into a folder that does not exist yet\"\n\
         build:\n  command: [\"cp\", \"{src}\", \"out/sub/app.cu\"]\n  binaries: [\"out/sub/app.cu\"]\n\
         run:\n  command: [\"target\"]\n",
        src = root().join("tests/gpu/programs/oob_write.cu").display()
    ));
    let out = Run::new(&s, &recipe, "oob_write").arg("--rungs").arg("baseline").run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    assert!(
        s.path("out/sub/app.cu").is_file(),
        "the build's output folder was not created:\n{}",
        b.read("rungs/01-baseline/build.log")
    );
    assert_eq!(b.rung("baseline")["status"].as_str(), Some("ran"), "{}", b.read("manifest.yaml"));
    assert_eq!(b.exit_of("baseline", "target"), "signal 6");
    s.assert_no_standin_left();
}

/// The rebuild rung runs only when the binaries lack line info, with the real nvcc and
/// cuobjdump on a real program: a binary that does not exist yet is built by the baseline
/// itself with `-lineinfo -g`, and no rebuild follows; one that exists is checked with
/// `cuobjdump -elf` after the baseline's run: built with `-lineinfo` it passes, built plainly
/// it is rebuilt before the coredump rung.
#[test]
fn the_rebuild_runs_only_when_the_binaries_lack_line_info() {
    let Some(bin) = nvcc_or_skip() else { return };
    let src = root().join("tests/gpu/programs/oob_write.cu");
    let nvcc = bin.join("nvcc");
    // The binary as the ladder finds it (not built, built with line info, built plainly) and
    // the rungs that run.
    let cases: [(&str, &[&str]); 3] = [
        // The armed baseline read the dump; its line info was there (built, or checked).
        ("missing", &["01-baseline", "02-memcheck"]),
        ("lineinfo", &["01-baseline", "02-memcheck"]),
        // Without line info: the rebuild, asked for by name (the replayed dump names the line
        // anyway, which a real dump of a plain build would not, so the default climb would
        // not need it here; the policy's unit tests hold that it rebuilds when the line is
        // missing).
        ("plain", &["01-baseline", "02-rebuild", "03-memcheck"]),
    ];
    for (prebuilt, rungs) in cases {
        let s = Scratch::for_run("lineinfo");
        let exe = s.path("oob_write");
        if prebuilt != "missing" {
            let flags: &[&str] = if prebuilt == "lineinfo" { &["-lineinfo"] } else { &[] };
            let st = std::process::Command::new(&nvcc)
                .args(["-arch=sm_90"])
                .args(flags)
                .arg("-o")
                .arg(&exe)
                .arg(&src)
                .env_remove("NVCC_PREPEND_FLAGS")
                .status()
                .unwrap();
            assert!(st.success(), "nvcc {flags:?}");
        }
        let recipe = s.write_recipe(&format!(
            "version: 1\nname: lineinfo\ndescription: \"oob_write.cu built by the real nvcc\"\n\
             build:\n  command: [\"nvcc\", \"-arch=sm_90\", \"-o\", \"{exe}\", \"{src}\"]\n  binaries: [\"{exe}\"]\n  timeout: 300\n\
             run:\n  command: [\"target\"]\n",
            exe = exe.display(),
            src = src.display()
        ));
        let mut run = Run::new(&s, &recipe, "oob_write").path(path_with(&[&standins(), &bin]));
        if prebuilt == "plain" {
            run = run.arg("--rungs").arg("baseline,rebuild,memcheck");
        }
        let out = run.run();
        assert_eq!(out.code(), Some(0), "{prebuilt}: {}", out.both());
        let b = s.only_bundle();
        assert_eq!(b.rung_dirs(), rungs, "{prebuilt}: {}", out.both());
        let baseline = b.files_in("rungs/01-baseline");
        if prebuilt == "missing" {
            // Built with line info and host debug info, so nothing to check afterwards.
            let cmd = b.read("rungs/01-baseline/build.command.txt");
            assert!(cmd.contains("'NVCC_PREPEND_FLAGS=-lineinfo -g'"), "{cmd}");
            assert_eq!(b.exit_of("baseline", "build"), "code 0", "{}", b.read("rungs/01-baseline/build.log"));
            assert!(!baseline.iter().any(|f| f.starts_with("cuobjdump")), "{baseline:?}");
            continue;
        }
        // The existing binary was not rebuilt by the baseline, but checked after its run.
        assert!(!baseline.iter().any(|f| f.starts_with("build")), "{baseline:?}");
        assert!(b.read("rungs/01-baseline/cuobjdump-1.command.txt").contains("cuobjdump -elf"));
        let tsv = b.read("rungs/01-baseline/lineinfo.tsv");
        let notes = b.notes("baseline");
        if prebuilt == "plain" {
            assert!(tsv.contains("\t0 line-info sections"), "{tsv}");
            assert!(notes.contains("has no line info in the existing binaries"), "{notes}");
            let cmd = b.read("rungs/02-rebuild/command.txt");
            assert!(cmd.contains("'NVCC_PREPEND_FLAGS=-lineinfo -g'"), "{cmd}");
            assert_eq!(b.rung("rebuild")["status"].as_str(), Some("ran"), "{}", b.read("manifest.yaml"));
            assert!(!b.read("rungs/02-rebuild/lineinfo.tsv").contains("\t0 line-info"));
        } else {
            assert!(!tsv.contains("\t0 line-info") && tsv.contains(" line-info sections"), "{tsv}");
            assert!(!notes.contains("line info"), "{notes}");
        }
        s.assert_no_standin_left();
    }
}

/// A baseline that cannot run (its build fails) is not a clean run: the ladder must not
/// conclude that the symptom did not reproduce, nor skip the fault rungs on that ground.
#[test]
fn a_failed_baseline_build_is_not_a_clean_run() {
    let s = Scratch::for_run("build-fails");
    let recipe = s.write_recipe(
        "version: 1\nname: build-fails\ndescription: \"a build that fails\"\n\
         build:\n  command: [\"false\"]\n  binaries: [\"never-built\"]\n\
         run:\n  command: [\"target\"]\n",
    );
    let out = Run::new(&s, &recipe, "oob_write").arg("--rungs").arg("baseline,coredump").run();
    let b = s.only_bundle();
    assert_eq!(b.rung("baseline")["status"].as_str(), Some("failed"), "{}", b.read("manifest.yaml"));
    assert!(s.standin_pids().is_empty(), "the target ran without its build: {:?}", s.standin_pids());
    let stopped = b.manifest()["stopped"].as_str().unwrap_or_default().to_string();
    assert!(
        !stopped.contains("did not reproduce") && !out.stdout.contains("did not reproduce"),
        "the target never ran, yet: {stopped}\n{}",
        out.both()
    );
    assert_eq!(out.code(), Some(1), "a failed build is a failure:\n{}", out.both());
}

/// A failed build's error shows the compiler's last lines (not only where its log is), made
/// safe for the terminal, and says what to do.
#[test]
fn a_failed_build_shows_the_compiler_s_last_lines() {
    let s = Scratch::for_run("build-says-why");
    let script = s.path("cc.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nfor i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14; do echo \"compiling unit $i\"; done\n\
         echo 'app.cu(7): error: identifier \"blockDimx\" is undefined' >&2\n\
         printf '1 error detected in the compilation of \"app.cu\".\\033[2J\\n' >&2\nexit 2\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let recipe = s.write_recipe(&format!(
        "version: 1\nname: build-says\ndescription: \"a build that fails with a message\"\n\
         build:\n  command: [\"{}\"]\n  binaries: [\"never-built\"]\n\
         run:\n  command: [\"target\"]\n",
        script.display()
    ));
    let out = Run::new(&s, &recipe, "oob_write").arg("--rungs").arg("baseline").run();
    assert_eq!(out.code(), Some(1), "{}", out.both());
    let both = out.both();
    assert!(both.contains("the build's last lines (`rungs/01-baseline/build.log`)"), "{both}");
    assert!(
        out.stdout.contains("stopped: error: ") && !out.stdout.contains("\\n"),
        "one line: {}",
        out.stdout
    );
    assert!(both.contains("identifier \"blockDimx\" is undefined"), "{both}");
    assert!(both.contains("1 error detected in the compilation"), "{both}");
    assert!(!both.contains("compiling unit 1\n") && both.contains("compiling unit 14"), "{both}");
    assert!(!both.contains('\u{1b}'), "an escape reached the terminal: {both:?}");
    assert!(both.contains("fix the build, then run again"), "{both}");
}

/// `-q` leaves only the result on the terminal (no rung lines, no notes: the bundle has
/// them); `-v` adds every command as it ran, redacted as the bundle records it, with its
/// exit and time. The verdict is the same either way.
#[test]
fn quiet_says_only_the_result_and_verbose_every_command() {
    let s = Scratch::for_run("quiet-verbose");
    let recipe = s.write_recipe(&target_recipe(""));
    let quiet = Run::new(&s, &recipe, "oob_write").arg("--rungs").arg("baseline").arg("-q").run();
    assert!(quiet.stdout.contains("verdict: ") && quiet.stdout.contains("bundle: "), "{}", quiet.both());
    assert!(!quiet.stderr.contains("==>") && !quiet.stderr.contains("note:"), "{}", quiet.both());
    let loud = Run::new(&s, &recipe, "oob_write").arg("--rungs").arg("baseline").arg("--verbose").run();
    // Stdout as cargo's `-q` leaves it (issue 41: it was unchanged): the verdict and its fields,
    // the stop reason and the bundle; not the findings, symptoms, what else was seen or the rungs'
    // line, which the normal run prints and the bundle's summary keeps.
    for section in ["findings:\n", "also seen:\n", "\nrungs: "] {
        assert!(loud.stdout.contains(section), "{section:?} in a normal run: {}", loud.both());
        assert!(!quiet.stdout.contains(section), "{section:?} with -q: {}", quiet.both());
    }
    // The same fields (their values but the pid's are the same run's).
    let fields = |o: &str| {
        o.lines()
            .take_while(|l| !l.is_empty())
            .map(|l| l.split(':').next().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(fields(&quiet.stdout), fields(&loud.stdout));
    assert!(quiet.stdout.contains("\nstopped: "), "{}", quiet.both());
    assert!(loud.stderr.contains("==> [1/1] baseline"), "{}", loud.both());
    assert!(
        loud.stderr.contains("    $ ") && loud.stderr.contains("target") && loud.stderr.contains(" s)"),
        "{}",
        loud.both()
    );
    let verdict = |o: &str| o.lines().find(|l| l.starts_with("verdict: ")).map(str::to_string);
    assert_eq!(verdict(&quiet.stdout), verdict(&loud.stdout));
    // Before the subcommand too, as `-C` and `--color` are.
    let early = Run::new(&s, &recipe, "oob_write");
    let mut early = early.arg("--rungs").arg("baseline");
    early.args.insert(0, "-q".into());
    let out = early.run();
    assert_eq!(out.code(), quiet.code(), "{}", out.both());
}

/// `--rungs all` (as doctor takes it) plans every rung in ladder order, the hang rung only
/// when a hang is expected.
#[test]
fn rungs_all_plans_every_rung() {
    let s = Scratch::for_run("rungs-all");
    let recipe = s.write_recipe(&target_recipe(""));
    let out = Run::new(&s, &recipe, "oob_write").arg("--rungs").arg("all").arg("--dry-run").run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    assert!(
        out.stdout.contains(
            "plan: baseline, launch-blocking, coredump, attach, memcheck, initcheck, racecheck, synccheck\n"
        ),
        "{}",
        out.both()
    );
    let out = Run::new(&s, &recipe, "oob_write")
        .arg("--rungs")
        .arg("all")
        .arg("--hang-after")
        .arg("5")
        .arg("--dry-run")
        .run();
    assert!(out.stdout.contains("plan: hang, baseline, "), "{}", out.both());
}

/// A Python recipe without a build (`pytorch`) plans the rebuild of its run-time builds: the
/// dry-run shows it second, with the fresh JIT folders in its rung folder, the line-info
/// switches and the check of each extension library, and says the user's caches are not
/// touched; `--rungs rebuild` is accepted for it. A native recipe without a build still refuses
/// `--rungs rebuild`: there is nothing it could build.
#[test]
fn a_python_recipe_plans_the_rebuild_of_its_run_time_builds() {
    let s = Scratch::for_run("dry-run-jit");
    let dry = |rungs: Option<&str>| {
        let mut run = Run::new(&s, Path::new("pytorch"), "oob_write")
            .arg("--set")
            .arg("script=jit_op_fault.py")
            .arg("--set")
            .arg("args=load")
            .arg("--dry-run");
        if let Some(r) = rungs {
            run = run.arg("--rungs").arg(r);
        }
        run.run()
    };
    let out = dry(None);
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let o = &out.stdout;
    assert!(o.contains("plan: baseline, rebuild, launch-blocking, coredump, "), "{o}");
    let at =
        o.find("\n2. rebuild: rerun the target armed, its run-time builds redone with line info").expect(o);
    let rebuild = &o[at..o[at..].find("\n3. ").map_or(o.len(), |e| at + e)];
    assert!(rebuild.contains("nothing of your own caches is read, changed or deleted"), "{rebuild}");
    for want in [
        "-rebuild/jit/torch_extensions",
        "-rebuild/jit/cupy",
        "-rebuild/jit/flashinfer",
        "-rebuild/jit/deep_gemm",
        "'NVCC_PREPEND_FLAGS=-lineinfo -g'",
        "CUPY_CUDA_COMPILE_WITH_DEBUG=1",
        "CUPY_CACHE_SAVE_CUDA_SOURCE=1",
        "FLASHINFER_JIT_LINEINFO=1",
        "DG_JIT_WITH_LINEINFO=1",
        "CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1",
        "jit_op_fault.py load",
        "cuda-gdb -batch",
        "line-info check (per extension library the run built into the fresh TORCH_EXTENSIONS_DIR): cuobjdump -elf ",
        "/jit/torch_extensions/<NAME>/<NAME>.so",
    ] {
        assert!(rebuild.contains(want), "`{want}` missing:\n{rebuild}");
    }
    let only = dry(Some("rebuild"));
    assert_eq!(only.code(), Some(0), "{}", only.both());
    assert!(only.stdout.contains("plan: rebuild\n"), "{}", only.both());
    assert!(only.stdout.contains("CUPY_CUDA_COMPILE_WITH_DEBUG=1"), "{}", only.both());
    // A native recipe without a build: refused, saying why.
    let recipe = s.write_recipe(&target_recipe(""));
    let native = Run::new(&s, &recipe, "oob_write").arg("--rungs").arg("rebuild").arg("--dry-run").run();
    assert_eq!(native.code(), Some(2), "{}", native.both());
    assert!(native.stderr.contains("add a `build:` step"), "{}", native.both());
    assert!(!s.bundles().exists());
}

/// `debug-ima --recipe NAME -- CMD` (refused before: "either with `--recipe` or after `--`"):
/// the command after `--` is the run and the recipe gives the rest, its `python: true` among
/// it (the Python armed run); a variable only the recipe's run command used needs no value,
/// one its build uses still does (the rebuild runs that build).
#[test]
fn a_recipe_with_a_command_after_the_dashes_runs_the_command() {
    let s = Scratch::for_run("recipe-and-command");
    let out = Run::new(&s, Path::new("pytorch"), "triton_worker")
        .arg("--set")
        .arg("python=true")
        .arg("--rungs")
        .arg("baseline")
        .arg("--")
        .arg("target")
        .arg("vllm_shaped.py")
        .arg("worker")
        .run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    let cmd = b.read("rungs/01-baseline/command.txt");
    assert!(cmd.contains("PYTHONFAULTHANDLER=1") && cmd.contains("PYTHONUNBUFFERED=1"), "{cmd}");
    assert!(cmd.trim_end().ends_with("core-limit target vllm_shaped.py worker"), "{cmd}");
    assert_eq!(b.findings()["verdict"]["line"], 22, "{}", b.read("findings.json"));
    let vllm =
        Run::new(&s, Path::new("vllm"), "triton_worker").arg("--dry-run").arg("--").arg("target").run();
    assert_eq!(vllm.code(), Some(2), "{}", vllm.both());
    assert!(vllm.stderr.contains("`vllm_src`") && !vllm.stderr.contains("`repro`"), "{}", vllm.both());
    s.assert_no_standin_left();
}

/// (i) `--dry-run` prints every rung's command and environment (initcheck's, the native
/// coredump rung's core-limit shell and CPU-core step, the baseline's build with line info
/// among them), and runs nothing.
#[test]
fn dry_run_prints_every_command_and_creates_nothing() {
    let s = Scratch::for_run("dry-run");
    let recipe = s.write_recipe(
        "version: 1\nname: dry\ndescription: \"every rung\"\n\
         build:\n  command: [\"nvcc\", \"-arch=sm_90\", \"-o\", \"app\", \"app.cu\"]\n  binaries: [\"app\"]\n\
         run:\n  command: [\"target\", \"--size\", \"1024\"]\n  env: { MY_SETTING: \"x\" }\n",
    );
    let out = Run::new(&s, &recipe, "oob_write").arg("--dry-run").run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let o = &out.stdout;
    for want in [
        "baseline",
        "rebuild",
        "launch-blocking",
        "coredump",
        "attach",
        "memcheck",
        "NVCC_PREPEND_FLAGS=-lineinfo",
        "cuobjdump -elf",
        "CUDA_LAUNCH_BLOCKING=1",
        "CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1",
        "CUDA_COREDUMP_FILE=",
        "target cudacore",
        "CUDA_DEVICE_WAITS_ON_EXCEPTION=1",
        "cuda-gdb -batch",
        "-p '<PID from the message>'",
        "compute-sanitizer --tool memcheck --padding 64",
        "--xml --save",
        "initcheck",
        "compute-sanitizer --tool initcheck",
        "initcheck.xml",
        "-ex bt -ex 'x/i $errorpc'",
        "core-limit target --size 1024",
        "-ex 'thread apply all bt'",
        "build (with line info, the target is not built yet)",
        "MY_SETTING=x",
        "target --size 1024",
    ] {
        assert!(o.contains(want), "`{want}` missing from the plan:\n{}", out.both());
    }
    assert!(!s.bundles().exists(), "--dry-run created the bundle root");
    assert!(s.standin_pids().is_empty(), "--dry-run ran something: {:?}", s.standin_pids());
}

/// (j) On a machine without a GPU (this one, without the stand-in nvidia-smi), the demo
/// fails within seconds and says what is missing.
#[test]
fn without_a_gpu_the_demo_fails_fast_naming_the_gpu() {
    if support::has_real_nvidia_smi() {
        support::skipped("this machine has an nvidia-smi");
        return;
    }
    let s = Scratch::for_run("no-gpu");
    let out =
        Run::new(&s, Path::new("demo"), "oob_write").path(std::env::var("PATH").unwrap_or_default()).run();
    assert_eq!(out.code(), Some(1), "{}", out.both());
    assert!(out.took < Duration::from_secs(10), "took {:?}", out.took);
    let err = out.stderr.to_lowercase();
    assert!(err.contains("gpu"), "the message does not name the GPU:\n{}", out.both());
    assert!(err.contains("nvidia-smi") || err.contains("driver"), "{}", out.both());
    assert!(!s.bundles().exists(), "a bundle was created");
    assert!(s.standin_pids().is_empty());
}

/// A stand-in `python3` in the scratch folder for the built-in `pytorch` recipe: `-m
/// torch.utils.collect_env` (the recipe's `collect`) prints one line and succeeds; anything
/// else is the program, which the stand-in target replays.
fn python_standin(s: &Scratch) -> PathBuf {
    let p = s.path("python3");
    std::fs::write(
        &p,
        "#!/bin/sh\n# Stand-in python3: collect_env prints one line; the program is the stand-in target.\n\
         if [ \"$1\" = -m ] && [ \"$2\" = torch.utils.collect_env ]; then\n  \
         echo 'torch.utils.collect_env (stand-in)'\n  exit 0\nfi\nexec target \"$@\"\n",
    )
    .unwrap();
    // The script the runs name is there (a missing one is refused before anything runs); the
    // stand-in target runs the recording, not it.
    std::fs::write(s.path("vllm_shaped.py"), "").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// The built-in `pytorch` recipe on vllm_shaped.py's spawned worker (the `triton_worker`
/// recordings), with `extra` arguments.
fn triton_worker_run(s: &Scratch, extra: &[&str]) -> Output {
    let python = python_standin(s);
    let mut run = Run::new(s, Path::new("pytorch"), "triton_worker")
        .arg("--set")
        .arg(&format!("python={}", python.display()))
        .arg("--set")
        .arg("script=vllm_shaped.py")
        .arg("--set")
        .arg("args=worker");
    for a in extra {
        run = run.arg(a);
    }
    run.run()
}

/// Whether doctor left the rebuild out of the plan, saying so: it needs nvcc and cuobjdump,
/// which CI has (.ci/run) and a machine without a CUDA toolkit may not. The default plan of a
/// Python recipe has it (the rebuild of its run-time builds).
fn rebuild_left_out(out: &Output) -> bool {
    out.stderr.contains("skipping rebuild: it needs what is missing here")
}

/// The built-in `pytorch` recipe on the Triton kernel with a missing mask, run in a spawned
/// worker (vllm_shaped.py, recorded on the H200), with `--full`: every rung (the rebuild of
/// its run-time builds too, where nvcc is), the verdict at the kernel's Python line, the
/// collect step in the bundle, the Python environment of each rung (the sanitizers' among
/// them).
#[test]
fn the_pytorch_recipe_finds_the_triton_kernel_line_in_the_worker() {
    let s = Scratch::for_run("pytorch");
    let out = triton_worker_run(&s, &["--full"]);
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    let mut names = vec!["baseline", "launch-blocking", "coredump", "attach", "memcheck", "initcheck"];
    names.extend(["racecheck", "synccheck"]);
    if !rebuild_left_out(&out) {
        names.insert(1, "rebuild");
    }
    let dirs: Vec<String> = names.iter().enumerate().map(|(i, n)| format!("{:02}-{n}", i + 1)).collect();
    let dir = |name: &str| dirs.iter().find(|d| d[3..] == *name).unwrap().clone();
    assert_eq!(b.rung_dirs(), dirs, "{}", out.both());

    let v = &b.findings()["verdict"];
    assert!(v["kernel"].as_str().unwrap().contains("gather_kv_kernel"), "{v}");
    assert!(v["file"].as_str().unwrap().ends_with("vllm_shaped.py"), "{v}");
    assert_eq!(v["line"], 22, "{v}");
    assert!(out.stdout.contains("`gather_kv_kernel` at /tmp/ima-record/vllm_shaped.py:22"), "{}", out.both());

    // The collect step ran once, beside the climb, into env/; it is shown as it starts.
    assert_eq!(b.read("env/torch-collect-env.txt"), "torch.utils.collect_env (stand-in)\n");
    let m = b.manifest();
    let collected = m["collected"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|c| c["stdout"].as_str() == Some("env/torch-collect-env.txt"))
        .expect("the recipe's collect command is recorded");
    assert_eq!(collected["role"].as_str(), Some("collect"), "{}", b.read("manifest.yaml"));
    assert!(collected["command"].as_str().unwrap().ends_with("python3 -m torch.utils.collect_env"));
    assert_eq!(collected["stdout"].as_str(), Some("env/torch-collect-env.txt"));
    assert!(m["notes"].is_null(), "nothing to note: {}", b.read("manifest.yaml"));
    let collect_at =
        out.stderr.find("collect env/torch-collect-env.txt").expect("the collect step is not shown");
    let first = format!("[1/{}] baseline", dirs.len());
    assert!(collect_at < out.stderr.find(&first).unwrap(), "{}", out.both());

    // The Python environment: unbuffered everywhere; under memcheck no caching allocator.
    assert!(b.read("rungs/01-baseline/command.txt").contains("PYTHONUNBUFFERED=1"));
    for tool in ["memcheck", "initcheck"] {
        let cmd = b.read(&format!("rungs/{}/command.txt", dir(tool)));
        for want in [
            "PYTORCH_NO_CUDA_MEMORY_CACHING=1",
            "-u PYTORCH_CUDA_ALLOC_CONF",
            &format!("--tool {tool} "),
            "--target-processes all",
        ] {
            assert!(cmd.contains(want), "`{want}` missing: {cmd}");
        }
        assert!(cmd.contains("python3 vllm_shaped.py worker"), "{cmd}");
    }
    // A Python target's coredump rung: no launch-blocking (its abort would leave no
    // traceback), no CPU core, no core-limit shell.
    let coredump = b.read(&format!("rungs/{}/command.txt", dir("coredump")));
    assert!(coredump.contains("CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION=0"), "{coredump}");
    assert!(!coredump.contains("CUDA_LAUNCH_BLOCKING") && !coredump.contains("core-limit"), "{coredump}");
    // Its attach skips the host libraries' symbols.
    let attach = b.read(&format!("rungs/{}/cudagdb-attach.command.txt", dir("attach")));
    assert!(attach.contains("-iex 'set auto-solib-add off' -p "), "{attach}");
    // One GPU: no word about NCCL.
    assert!(b.notes("launch-blocking").is_empty(), "{}", b.notes("launch-blocking"));
    s.assert_no_standin_left();
}

/// The same program under the default climb of a Python target: the armed baseline gives the
/// kernel, its line and the class. The recording it replays was made without faulthandler,
/// so the launch site is missing (on the GPU the armed run's faulthandler stack gives it:
/// tests/fixtures/h200/faulthandler), and for Python the cheapest rung that gives it is
/// launch-blocking (its traceback names the launching line); the coredump rung would repeat
/// the armed run. Then the verdict is complete: attach and the sanitizers are skipped.
#[test]
fn the_pytorch_recipe_climbs_coredump_then_launch_blocking_for_the_launch_site() {
    let s = Scratch::for_run("pytorch-default");
    let out = triton_worker_run(&s, &[]);
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    assert_eq!(b.rung_dirs(), ["01-baseline", "02-launch-blocking"], "{}", out.both());
    let armed = b.read("rungs/01-baseline/command.txt");
    for want in ["PYTHONFAULTHANDLER=1", "CUDA_LAUNCH_BLOCKING=1", "CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION=0"]
    {
        assert!(armed.contains(want), "`{want}` missing: {armed}");
    }

    let v = &b.findings()["verdict"];
    assert!(v["kernel"].as_str().unwrap().contains("gather_kv_kernel"), "{v}");
    assert_eq!(v["line"], 22, "{v}");
    assert_eq!(v["rungs"].as_sequence_or_array(), ["baseline"], "{v}");
    assert!(v["unknown"].is_null(), "every part is known: {v}");
    // Launched at line 27 (the launch-blocking traceback); surfaced later, at line 50.
    let launch = &v["launch_site"];
    assert_eq!(launch["function"], "gather", "{v}");
    assert!(launch["file"].as_str().unwrap().ends_with("vllm_shaped.py"), "{v}");
    assert_eq!(launch["line"], 27, "{v}");
    assert_eq!(launch["how"], "the launch-blocking traceback", "{v}");
    assert_eq!(launch["from"], "launch-blocking", "{v}");
    assert!(out.stdout.contains("  launched: gather at "), "{}", out.both());

    let stopped = b.manifest()["stopped"].as_str().unwrap().to_string();
    assert!(
        stopped.starts_with("the verdict is complete: `gather_kv_kernel` at vllm_shaped.py:22"),
        "{stopped}"
    );
    assert!(
        stopped.contains("launched from gather at ") && stopped.contains("vllm_shaped.py:27"),
        "{stopped}"
    );
    // The rebuild of its run-time builds is not needed: the line is known (Triton's).
    let rebuild = if rebuild_left_out(&out) { "" } else { "rebuild, " };
    let skipped = format!(
        "skipping {rebuild}coredump, attach, memcheck, initcheck, racecheck, synccheck (`--full` runs them too)"
    );
    assert!(stopped.contains(&skipped), "{stopped}");
    // The Python armed run has no CPU-core step.
    assert!(!b.notes("baseline").contains("CPU core"), "{}", b.notes("baseline"));
    s.assert_no_standin_left();
}

/// With two GPUs visible, the launch-blocking rung warns (CUDA_LAUNCH_BLOCKING=1 can
/// deadlock NCCL), on stderr before it runs and in the bundle; one visible GPU does not.
#[test]
fn launch_blocking_with_two_gpus_visible_warns_about_nccl() {
    let warning = "CUDA_LAUNCH_BLOCKING=1 with 2 GPUs visible can deadlock NCCL";
    for visible in [None, Some("0"), Some("0,1")] {
        let s = Scratch::for_run("two-gpus");
        let python = python_standin(&s);
        let mut run = Run::new(&s, Path::new("pytorch"), "triton_worker")
            .env("STANDIN_GPUS", "2")
            .arg("--set")
            .arg(&format!("python={}", python.display()))
            .arg("--set")
            .arg("script=vllm_shaped.py")
            .arg("--rungs")
            .arg("baseline,launch-blocking");
        if let Some(v) = visible {
            run = run.env("CUDA_VISIBLE_DEVICES", v);
        }
        let out = run.run();
        assert_eq!(out.code(), Some(0), "{}", out.both());
        let b = s.only_bundle();
        assert!(b.read("env/doctor.txt").contains("2 GPUs: NVIDIA H200"), "{}", b.read("env/doctor.txt"));
        let notes = b.notes("launch-blocking");
        if visible == Some("0") {
            assert!(notes.is_empty(), "one GPU visible, yet: {notes}");
            assert!(!out.stderr.contains(warning), "{}", out.both());
            continue;
        }
        assert!(notes.contains(warning), "CUDA_VISIBLE_DEVICES={visible:?}: {}", b.read("manifest.yaml"));
        assert!(notes.contains("timeout (900 s) bounds it"), "{notes}");
        // Said before the rung's run, which could hang until its timeout.
        let warned = out.stderr.find(&format!("warning: {warning}")).expect("no warning on stderr");
        let started = out.stderr.find("==> [2/2] launch-blocking:").expect("the rung's start is not shown");
        let ended = out.stderr.find("    [2/2] launch-blocking:").expect("the rung's end is not shown");
        assert!(started < warned && warned < ended, "{}", out.both());
        assert!(b.notes("baseline").is_empty());
        s.assert_no_standin_left();
    }
}

/// A `collect` command that is missing or fails is noted, what it printed is kept, and the
/// ladder runs as usual.
#[test]
fn a_failing_collect_command_is_noted_and_the_ladder_goes_on() {
    let s = Scratch::for_run("collect-fails");
    let recipe = s.write_recipe(
        "version: 1\nname: collect\ndescription: \"collect commands that fail\"\n\
         collect:\n  - { name: missing.txt, command: no-such-collect-tool }\n  \
         - { name: partial.txt, command: [\"sh\", \"-c\", \"echo partial; exit 3\"] }\n\
         run:\n  command: [\"target\"]\n",
    );
    let out = Run::new(&s, &recipe, "oob_write").arg("--rungs").arg("baseline").run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    assert_eq!(b.read("env/partial.txt"), "partial\n");
    let m = b.manifest();
    let notes: Vec<&str> = m["notes"].as_sequence().unwrap().iter().filter_map(|n| n.as_str()).collect();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes[0].contains("`no-such-collect-tool` (for env/missing.txt) could not run"), "{notes:?}");
    assert!(notes[1].contains("(for env/partial.txt) ended with exit 3"), "{notes:?}");
    assert!(out.stderr.contains("could not run"), "{}", out.both());
    // The two of the recipe, in order, then the snapshot's `git describe` (in the background).
    let collected: Vec<&str> =
        m["collected"].as_sequence().unwrap().iter().filter_map(|c| c["stdout"].as_str()).collect();
    assert_eq!(collected, ["env/missing.txt", "env/partial.txt", "env/git-describe.txt"]);
    assert_eq!(b.exit_of("baseline", "target"), "signal 6");
    s.assert_no_standin_left();
}

/// A prebuilt program after `--` needs no recipe (as `compute-sanitizer ./app` takes one),
/// and the ladder is the default command: `debug-ima --yes -- ./app` is `debug-ima run --yes
/// -- ./app`. Its arguments reach it as given, braces too; with a recipe too, the command is
/// the recipe's run (the `demo` recipe's build stays).
#[test]
fn a_program_after_the_dashes_needs_no_recipe() {
    let s = Scratch::for_run("dashes");
    let mut run = Run::new(&s, Path::new("unused"), "oob_write");
    run.args = ["--yes", "--bundle-dir", &s.bundles().display().to_string(), "--", "target", "{x}"]
        .map(String::from)
        .to_vec();
    let out = run.run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    assert_eq!(b.rung_dirs(), ["01-baseline", "02-memcheck"], "{}", out.both());
    assert!(
        b.read("rungs/01-baseline/command.txt").contains("core-limit target '{x}'"),
        "{}",
        b.read("rungs/01-baseline/command.txt")
    );
    assert_eq!(b.findings()["verdict"]["line"], 7, "{}", b.read("findings.json"));
    assert!(b.manifest()["recipe"]["name"].as_str() == Some("command"), "{}", b.read("manifest.yaml"));
    let mut both = Run::new(&s, Path::new("demo"), "oob_write").arg("--dry-run");
    both.args.extend(["--", "target", "{x}"].map(String::from));
    let plan = both.run();
    assert_eq!(plan.code(), Some(0), "{}", plan.both());
    assert!(plan.stdout.contains("core-limit target '{x}'\n"), "{}", plan.stdout);
    assert!(plan.stdout.contains("nvcc") && plan.stdout.contains("ima_demo.cu"), "{}", plan.stdout);
}

/// SIGKILL of the tool, which no handler sees, in the middle of a rung: its guardian ends
/// the target's whole tree (the target and the child it started) within seconds (issue 22:
/// it kept running).
#[test]
fn sigkill_of_the_tool_leaves_no_process_of_its_runs() {
    let s = Scratch::for_run("sigkill");
    let recipe = s.write_recipe(&target_recipe(
        "rungs:\n  baseline:\n    env: { STANDIN_HANG: \"1\", STANDIN_CHILD: \"1\" }\n",
    ));
    let run = Run::new(&s, &recipe, "oob_write");
    let start = Instant::now();
    let child = run.spawn();
    let xtask = Pid::from_raw(child.id() as i32);
    let running = wait_for(Duration::from_secs(30), || {
        s.standin_pids().iter().any(|(r, _)| r == "target")
            && s.standin_pids().iter().any(|(r, _)| r == "child")
    });
    kill(xtask, Signal::SIGKILL).unwrap();
    let _ = run.finish(child, start);
    assert!(running, "the target did not start: {:?}", s.standin_pids());
    let pids = s.standin_pids();
    assert!(
        wait_for(Duration::from_secs(10), || pids.iter().all(|(_, p)| !alive(*p))),
        "left running after SIGKILL of the tool: {:?}",
        pids.iter().filter(|(_, p)| alive(*p)).collect::<Vec<_>>()
    );
    s.assert_no_standin_left();
}

/// SIGKILL of the tool at moments spread over a whole `--full` climb (the armed run, cuda-gdb
/// on its dump, the other rungs, the sweep, writing the bundle): every run of the target
/// leaves a `sleep 1000` child in its group (`STANDIN_CHILD`), which the tool kills at the end
/// of the step; killed itself, only its guardian can end what was running then, and no
/// stand-in the climb started may be left (issue 22: "at any moment").
#[test]
fn sigkill_at_any_moment_of_a_climb_leaves_no_process() {
    let mut children = 0;
    for (i, delay) in [20u64, 120, 300, 600, 1000, 1600, 2500].into_iter().enumerate() {
        let s = Scratch::for_run(&format!("sigkill-{i}"));
        let recipe = s.write_recipe(&target_recipe(""));
        let run = Run::new(&s, &recipe, "oob_write").arg("--full").env("STANDIN_CHILD", "1");
        let start = Instant::now();
        let child = run.spawn();
        std::thread::sleep(Duration::from_millis(delay));
        let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
        let _ = run.finish(child, start);
        let pids = s.standin_pids();
        children += pids.iter().filter(|(r, _)| r == "child").count();
        assert!(
            wait_for(Duration::from_secs(10), || pids.iter().all(|(_, p)| !alive(*p))),
            "SIGKILL after {delay} ms left running: {:?}",
            pids.iter().filter(|(_, p)| alive(*p)).collect::<Vec<_>>()
        );
    }
    assert!(children > 0, "no run of the target started a child: the test proves nothing");
}

/// `--error-exitcode N` (issue 24, as compute-sanitizer's): a located fault exits N, a run
/// without a verdict exits 0, and without the option a verdict exits 0 as before.
#[test]
fn error_exitcode_says_a_fault_was_located() {
    let s = Scratch::for_run("error-exitcode");
    let recipe = s.write_recipe(&target_recipe(""));
    let run = |case: &str, extra: &[&str]| {
        let mut r = Run::new(&s, &recipe, case).arg("--rungs").arg("baseline");
        for a in extra {
            r = r.arg(a);
        }
        r.run()
    };
    let located = run("oob_write", &["--error-exitcode", "7"]);
    assert_eq!(located.code(), Some(7), "{}", located.both());
    assert!(located.stdout.contains("verdict: illegal-address"), "{}", located.both());
    assert_eq!(run("oob_write", &[]).code(), Some(0));
    let clean = Run::new(&s, &recipe, "clean")
        .env("STANDIN_CASE", stencil_fixed_case(&s).to_str().unwrap())
        .arg("--rungs")
        .arg("baseline")
        .arg("--error-exitcode")
        .arg("7")
        .run();
    assert_eq!(clean.code(), Some(0), "{}", clean.both());
    assert_eq!(run("oob_write", &["--error-exitcode", "0"]).code(), Some(2), "0 is refused: it says nothing");
}

/// `--json` (issue 24): the analysis on stdout as one JSON object, the same as the bundle's
/// `findings.json`; the result lines on stderr.
#[test]
fn json_puts_the_analysis_on_stdout() {
    let s = Scratch::for_run("run-json");
    let recipe = s.write_recipe(&target_recipe(""));
    let out = Run::new(&s, &recipe, "oob_write").arg("--rungs").arg("baseline").arg("--json").run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let json: serde_json::Value = serde_json::from_str(&out.stdout).expect("stdout is one JSON object");
    assert_eq!(json["verdict"]["line"], 7, "{json}");
    let b = s.only_bundle();
    assert_eq!(json, b.findings());
    assert!(out.stderr.contains("\nbundle: ") && out.stderr.contains("\nstopped: "), "{}", out.both());
}

/// A newline in a folder's name cannot forge a line of the result (issue 22): the bundle's
/// path is printed on one line, its newline shown as `\n`.
#[test]
fn a_newline_in_the_bundle_folder_forges_no_verdict_line() {
    let s = Scratch::for_run("forge");
    let recipe = s.write_recipe(&target_recipe(""));
    let dir = s.path("b\nverdict: FORGED in `nothing` at nowhere.cu:1");
    let mut run = Run::new(&s, &recipe, "oob_write").arg("--rungs").arg("baseline");
    let at = run.args.iter().position(|a| a == "--bundle-dir").unwrap();
    run.args[at + 1] = dir.display().to_string();
    let out = run.run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    assert!(
        !out.stdout.lines().chain(out.stderr.lines()).any(|l| l.starts_with("verdict: FORGED")),
        "{}",
        out.both()
    );
    assert!(out.stdout.contains("b\\nverdict: FORGED"), "{}", out.both());
}

/// The armed baseline and the coredump rung look for the CPU core the target's abort left:
/// the user's own `core.12345` and `core/` folder in the target's working folder, there
/// before the run, are neither moved into the bundle, given to cuda-gdb nor deleted (issue 22).
#[test]
fn a_users_core_files_survive_the_armed_baseline_and_the_coredump_rung() {
    let s = Scratch::for_run("user-cores");
    std::fs::write(s.path("core.12345"), "the user's own core\n").unwrap();
    std::fs::create_dir(s.path("core")).unwrap();
    std::fs::write(s.path("core/notes.txt"), "the user's folder\n").unwrap();
    let recipe = s.write_recipe(&target_recipe(""));
    let out = Run::new(&s, &recipe, "oob_write").arg("--rungs").arg("baseline,coredump").run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    assert_eq!(std::fs::read_to_string(s.path("core.12345")).unwrap(), "the user's own core\n");
    assert_eq!(std::fs::read_to_string(s.path("core/notes.txt")).unwrap(), "the user's folder\n");
    let b = s.only_bundle();
    for rung in b.rung_dirs() {
        let files = b.files_in(&format!("rungs/{rung}"));
        assert!(
            !files.iter().any(|f| f.contains("12345") || f == "notes.txt" || f == "cpu-core"),
            "{files:?}"
        );
        for f in files.iter().filter(|f| f.ends_with("command.txt")) {
            let cmd = b.read(&format!("rungs/{rung}/{f}"));
            assert!(!cmd.contains("core.12345") && !cmd.contains("/core "), "{rung}/{f}: {cmd}");
        }
    }
    assert!(!b.read("manifest.yaml").contains("core.12345"));
    s.assert_no_standin_left();
}

/// 20,000 allow-listed variables in the tool's environment (`CUDA_X0..CUDA_X19999`) and 500
/// secret-named ones among them: the run completes, the manifest records each plain one with
/// its value and each secret-named one redacted by name (issue 22: the recording must stay
/// about linear in their number; figures in docs/benchmarks.md, no timing asserted).
#[test]
fn twenty_thousand_allow_listed_variables_are_recorded() {
    let s = Scratch::for_run("many-vars");
    let recipe = s.write_recipe(&target_recipe(""));
    let mut run = Run::new(&s, &recipe, "oob_write").arg("--rungs").arg("baseline");
    for i in 0..20_000 {
        run = run.env(&format!("CUDA_X{i}"), &format!("v{i}"));
    }
    for i in 0..500 {
        run = run.env(&format!("CUDA_X{i}_TOKEN"), &format!("planted-secret-{i:06}"));
    }
    let out = run.run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    let env = b.manifest()["environment"].clone();
    for i in [0, 1, 9_999, 19_999] {
        assert_eq!(env[format!("CUDA_X{i}").as_str()].as_str(), Some(format!("v{i}").as_str()), "CUDA_X{i}");
    }
    let plain = (0..20_000).filter(|i| env[format!("CUDA_X{i}").as_str()].as_str().is_some()).count();
    assert_eq!(plain, 20_000);
    for i in [0, 499] {
        assert_eq!(env[format!("CUDA_X{i}_TOKEN").as_str()].as_str(), Some("[REDACTED]"), "CUDA_X{i}_TOKEN");
    }
    let manifest = b.read("manifest.yaml");
    assert!(!manifest.contains("planted-secret-"), "a secret-named value was recorded");
    s.assert_no_standin_left();
}

/// (g2) The sweep's four sanitizer runs go side by side after a short armed run: each
/// stand-in run waits until all four are running at once, which runs one after another never
/// are (each would wait out its 10 s alone and see only itself).
#[test]
fn the_sweep_runs_its_sanitizers_side_by_side() {
    let s = Scratch::for_run("beside");
    let recipe = s.write_recipe(&target_recipe(""));
    let case = stencil_fixed_case(&s);
    let out = Run::new(&s, &recipe, "clean").env("STANDIN_CASE", case.to_str().unwrap()).meet(4, 10).run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    assert_eq!(
        Run::seen(&s),
        ["initcheck saw 4", "memcheck saw 4", "racecheck saw 4", "synccheck saw 4"],
        "{}",
        out.both()
    );
    assert!(out.both().contains("memcheck+initcheck+racecheck+synccheck"), "{}", out.both());
    let b = s.only_bundle();
    assert_eq!(b.rung_dirs(), CLEAN_CLIMB);
    assert!(b.findings()["verdict"].is_null(), "{}", b.read("findings.json"));
    s.assert_no_standin_left();
}

/// (g3) A sanitizer run that failed beside the others while its tool found nothing (as a
/// target would that could not get the GPU's memory) does not count: it runs again alone, and
/// the climb concludes from that run, not from a fault that was never there.
#[test]
fn a_sanitizer_that_failed_beside_the_others_runs_again_alone() {
    let s = Scratch::for_run("beside-fail");
    let recipe = s.write_recipe(&target_recipe(""));
    let case = stencil_fixed_case(&s);
    let out = Run::new(&s, &recipe, "clean")
        .env("STANDIN_CASE", case.to_str().unwrap())
        .meet(4, 2)
        .env("STANDIN_FAIL_BESIDE", "memcheck")
        .run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    let dirs = b.rung_dirs();
    assert_eq!(
        &dirs[..6],
        ["01-baseline", "02-memcheck", "03-initcheck", "04-racecheck", "05-synccheck", "06-memcheck-2"],
        "{}",
        out.both()
    );
    assert_eq!(b.exit_of("02-memcheck", "target"), "code 1");
    assert_eq!(b.exit_of("06-memcheck-2", "target"), "code 0");
    // In the order they ended: the run again alone came last.
    let seen = std::fs::read_to_string(s.path("meet").join("seen.log")).unwrap();
    assert!(seen.lines().last() == Some("memcheck saw 1"), "{seen}");
    let notes = b.read("manifest.yaml");
    assert!(notes.contains("runs again alone before its run counts"), "{notes}");
    assert!(notes.contains("run again alone: beside the sweep"), "{notes}");
    // The failed run beside the others is no fault: no fault rung ran, and nothing was found.
    assert!(b.findings()["verdict"].is_null(), "{}", b.read("findings.json"));
    assert!(!dirs.iter().any(|d| d.contains("coredump") || d.contains("attach")), "{dirs:?}");
    let stopped = b.manifest()["stopped"].as_str().unwrap().to_string();
    assert!(stopped.ends_with("and the sweep (memcheck, initcheck, racecheck) found nothing"), "{stopped}");
    s.assert_no_standin_left();
}

//! The one-host Slurm cluster CI starts (`.ci/slurm-up`: munge, slurmctld, and two slurmd
//! named node1 and node2 on their own ports), as the multi-node tests of issue 15 will use it:
//! `srun -N2 -n2` places one task on each node, tasks tell their rank and node by their
//! `SLURM_*` variables (the nodes share one PID namespace, so `/proc/PID/environ` is how a
//! process is placed), `srun --jobid J --overlap -w node2` reaches a running step's node (the
//! attach rung's way in), and nothing is left: no step, no job, no process.
//!
//! With CI set and no `SLURM_CONF`, the tests fail (`.ci/run` starts the cluster); elsewhere
//! they are skipped.
//!
//! Must not: need a GPU, or leave a job or a process behind.

use crate::support;

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use support::run::{target_recipe, Run};
use support::{fixture, Scratch};

fn cluster() -> Option<String> {
    match std::env::var("SLURM_CONF") {
        Ok(c) if std::path::Path::new(&c).is_file() => Some(c),
        _ => {
            if std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false" && v != "0") {
                panic!(
                    "CI is set but SLURM_CONF names no slurm.conf: .ci/run starts the cluster (.ci/slurm-up)"
                );
            }
            support::skipped("no Slurm cluster (SLURM_CONF); `.ci/slurm-up DIR` starts one");
            None
        }
    }
}

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program).args(args).output().unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// No job of ours is left in the queue (within a few seconds of its end).
fn assert_queue_empty(name: &str) {
    let start = Instant::now();
    loop {
        let q = run("squeue", &["-h", "-n", name, "-o", "%i %T"]);
        if String::from_utf8_lossy(&q.stdout).trim().is_empty() {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "left in the queue: {}", text(&q));
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn srun_places_one_rank_on_each_node_and_says_which_by_its_variables() {
    let Some(_) = cluster() else { return };
    let name = "debug-ima-ranks";
    let o = run(
        "srun",
        &[
            "-J",
            name,
            "-N2",
            "-n2",
            "-l",
            "sh",
            "-c",
            "echo \"$SLURM_PROCID $SLURMD_NODENAME $SLURM_NTASKS\"",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let mut lines: Vec<String> = String::from_utf8_lossy(&o.stdout).lines().map(String::from).collect();
    lines.sort();
    // `-l` labels each line with its task: `0: 0 node1 2`.
    assert_eq!(lines, ["0: 0 node1 2", "1: 1 node2 2"], "{}", text(&o));
    assert_queue_empty(name);
}

#[test]
fn a_running_step_is_reached_on_its_node_with_overlap_and_nothing_is_left() {
    let Some(_) = cluster() else { return };
    let name = "debug-ima-overlap";
    // An allocation whose step runs a rank on each node; a second step reaches node2 with
    // `--overlap` and finds rank 1's process there by its SLURM_PROCID in /proc/PID/environ.
    let script = "srun -N2 -n2 sh -c 'exec sleep 30' & step=$!; \
        for i in $(seq 1 100); do [ \"$(squeue -h -s -j $SLURM_JOB_ID | wc -l)\" -ge 1 ] && break; sleep 0.1; done; sleep 1; \
        srun --jobid=$SLURM_JOB_ID --overlap -w node2 -N1 -n1 sh -c 'for e in /proc/[0-9]*/environ; do \
          tr \"\\0\" \"\\n\" < $e 2>/dev/null | grep -qx SLURM_PROCID=1 && tr \"\\0\" \"\\n\" < $e | grep -qx SLURMD_NODENAME=node2 \
          && grep -q sleep ${e%environ}comm && echo found rank 1 on $SLURMD_NODENAME; done | sort -u'; \
        scancel -s KILL $SLURM_JOB_ID.0; wait $step; echo done";
    let start = Instant::now();
    let o = run("timeout", &["60", "salloc", "-J", name, "-N2", "-n2", "sh", "-c", script]);
    let all = text(&o);
    assert!(all.contains("found rank 1 on node2"), "{all}");
    assert!(all.contains("done"), "{all}");
    assert!(start.elapsed() < Duration::from_secs(30), "the step was not cancelled: {all}");
    assert_queue_empty(name);
    // No `sleep 30` of the step is left on the host.
    let left = sleeps_of_job(name);
    assert!(left.is_empty(), "left running: {left:?}");
}

/// The live `sleep 30` processes of the job `name`, known by the `SLURM_JOB_NAME` its tasks
/// carry: the other tests of the binary, running beside this one, start a `sleep 30` of their
/// own.
fn sleeps_of_job(name: &str) -> Vec<i32> {
    let mark = format!("SLURM_JOB_NAME={name}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == b"sleep\x0030\x00")
                && std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == mark.as_bytes()))
                && support::alive(pid)
        })
        .collect()
}

/// A recipe that runs the two-rank stand-in through Slurm (`launch: slurm`).
fn slurm_recipe(s: &Scratch) -> std::path::PathBuf {
    s.write_recipe(&target_recipe("launch: slurm\n").replace("[\"target\"]", "[\"slurm-target\"]"))
}

/// `debug-ima` inside `salloc -N2 -n2 -J NAME`: rank 1 replays the H200 recording of
/// `oob_write` (it faults), rank 0 that of a clean run (collateral).
fn in_allocation(s: &Scratch, name: &str, args: &[&str]) -> support::run::Output {
    let recipe = slurm_recipe(s);
    let mut run =
        Run::new(s, &recipe, "oob_write").env("STANDIN_RANK0_CASE", &fixture("clean").display().to_string());
    for a in args {
        run = run.arg(a);
    }
    let start = Instant::now();
    let child = run.spawn_via(&["salloc", "-N2", "-n2", "-J", name].map(String::from));
    run.finish(child, start)
}

#[test]
fn outside_an_allocation_the_slurm_launcher_says_to_use_salloc_or_sbatch() {
    let s = Scratch::for_run("slurm-no-alloc");
    let recipe = slurm_recipe(&s);
    let out = Run::new(&s, &recipe, "oob_write").env("SLURM_JOB_ID", "").run();
    assert_eq!(out.code(), Some(2), "{}", out.both());
    assert!(
        out.stderr.contains("SLURM_JOB_ID is not set") && out.stderr.contains("salloc"),
        "{}",
        out.both()
    );
    assert!(!s.bundles().exists(), "nothing ran, no bundle");
}

#[test]
fn the_dry_run_shows_the_srun_commands_of_the_allocation() {
    let Some(_) = cluster() else { return };
    let s = Scratch::for_run("slurm-dry-run");
    let name = "debug-ima-dry-run";
    let out = in_allocation(&s, name, &["--dry-run", "--rungs", "coredump,attach"]);
    assert!(out.status.success(), "{}", out.both());
    let plan = &out.stdout;
    for want in [
        "srun --label --kill-on-bad-exit=1 --job-name=debug-ima-utc-time_standin-0-01-target --ntasks=2 --nodes=2 \
         --export=ALL,CUDA_ENABLE_COREDUMP_ON_EXCEPTION,",
        "srun --label --kill-on-bad-exit=0 --job-name=debug-ima-utc-time_standin-0-02-target --ntasks=2 --nodes=2 \
         --export=ALL,CUDA_DEVICE_WAITS_ON_EXCEPTION -- sh -c 'echo \"debug-ima: task $SLURM_PROCID on node \
         $SLURMD_NODENAME pid $$\" >&2; exec \"$@\"' debug-ima slurm-target",
        "on the wait message: srun --jobid=",
        " --overlap -w '<node of the waiting task>' -N1 -n1 --job-name=debug-ima-utc-time_standin-0-02-target-beside \
         --export=ALL -- cuda-gdb -batch -nx -p '<PID from the message>'",
    ] {
        assert!(plan.contains(want), "missing `{want}` in:\n{plan}");
    }
    // cuda-gdb on a dump stays on this host (the bundle is on the shared filesystem).
    assert!(plan.contains("   per dump: cuda-gdb -batch"), "{plan}");
    assert!(!s.bundles().exists());
    assert_queue_empty(name);
}

#[test]
fn the_ladder_runs_through_srun_on_both_nodes_and_attaches_on_the_faulting_ranks_node() {
    let Some(_) = cluster() else { return };
    let s = Scratch::for_run("slurm-ladder");
    let name = "debug-ima-ladder";
    let out = in_allocation(&s, name, &["--rungs", "coredump,attach"]);
    assert!(out.status.success(), "{}", out.both());
    assert!(out.stdout.contains("oob_write.cu:7"), "{}", out.both());
    // The triage across ranks: rank 1 (node2) faulted, rank 0 is collateral.
    assert!(out.stdout.contains("  culprit:  rank 1 "), "{}", out.both());
    assert!(out.stdout.contains("  collateral: rank 0"), "{}", out.both());
    let b = s.only_bundle();
    let ranks = &b.findings()["verdict"]["ranks"];
    assert_eq!(ranks["culprit"]["rank"], 1, "{ranks}");
    assert_eq!(ranks["collateral"][0]["rank"], 0, "{ranks}");
    // Where srun placed them, and rank 0's true account: it ran on node1 and ended cleanly; the
    // `task 0: Aborted` of the attach rung's own `srun --overlap` step is not rank 0's.
    assert_eq!(ranks["culprit"]["node"], "node2", "{ranks}");
    assert_eq!(ranks["collateral"][0]["node"], "node1", "{ranks}");
    let reason = ranks["collateral"][0]["reason"].as_str().unwrap_or_default();
    // Rank 0 ended cleanly, or under load was stopped by srun after rank 1 failed (`srun: task 0
    // Terminated`): both are its own account; the attach step's `task 0: Aborted` is not.
    assert!(!reason.contains("Aborted"), "{ranks}");
    // Each rank's output, labelled by its task, in the rung's logs.
    let err = b.read("rungs/02-attach/stderr.log");
    for want in [
        "0: debug-ima: task 0 on node node1",
        "1: debug-ima: task 1 on node node2",
        "1: launched scale_write",
        "0: clean run finished",
    ] {
        assert!(err.contains(want), "missing `{want}`:\n{err}");
    }
    assert!(b.read("rungs/01-coredump/stderr.log").contains("1: "), "labelled");
    // And each rank's own lines, label stripped, in the rung's `ranks/` folder.
    let r1 = b.read("rungs/02-attach/ranks/rank-1.stderr.log");
    assert!(r1.lines().any(|l| l == "launched scale_write"), "{r1}");
    assert!(!r1.contains("clean run finished"), "rank 0's line in rank 1's log: {r1}");
    let r0 = b.read("rungs/02-attach/ranks/rank-0.stderr.log");
    assert!(r0.lines().any(|l| l == "clean run finished"), "{r0}");
    let files: Vec<String> = b.manifest()["rungs"][1]["files"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect();
    assert!(files.iter().any(|f| f == "rungs/02-attach/ranks/rank-1.stderr.log"), "{files:?}");
    // The dump is named by host and PID, under the bundle.
    assert!(
        b.files_in("rungs/01-coredump").iter().any(|f| f.starts_with("core_")),
        "{:?}",
        b.files_in("rungs/01-coredump")
    );
    // The target's command is srun's; cuda-gdb attached on rank 1's node through `--overlap`.
    assert!(b.read("rungs/02-attach/command.txt").contains("srun --label --kill-on-bad-exit=0 --job-name="));
    let gdb = b.read("rungs/02-attach/cudagdb-attach.command.txt");
    assert!(
        gdb.contains(" --overlap -w node2 -N1 -n1 ") && gdb.contains(" -- cuda-gdb -batch -nx -p "),
        "{gdb}"
    );
    assert!(gdb.starts_with("srun --jobid="), "{gdb}");
    assert!(b.notes("attach").contains("(task 1, node node2)"), "{}", b.notes("attach"));
    // Nothing left: no job, no step, no stand-in.
    assert_queue_empty(name);
    // (Other tests' steps may be running: only ours, named after the bundle, count.)
    let steps = run("squeue", &["-h", "-s", "-o", "%i %j"]);
    let ours = String::from_utf8_lossy(&steps.stdout).lines().filter(|l| l.contains("_standin-")).count();
    assert_eq!(ours, 0, "steps left: {}", text(&steps));
    s.assert_no_standin_left();
}

/// The job scripts of docs/slurm.md (each ```bash block with `#SBATCH` lines), submitted with
/// `sbatch --wait` as written but for four changes the test makes and checks it made: `/shared`
/// is a scratch folder (with the work dir, vLLM's source folder and the model folder the
/// scripts name), `debug-ima` is this build (a link of that name on PATH) with `--dry-run`
/// added, and the `--gpus-per-node` line is left out (CI's cluster has no GPUs). Each job's
/// plan must show the srun commands of its allocation: two nodes, its job id, pyxis's image
/// where the script gives one.
#[test]
fn the_job_scripts_of_the_slurm_docs_run_as_written() {
    let Some(_) = cluster() else { return };
    let doc = std::fs::read_to_string(support::root().join("docs/slurm.md")).unwrap();
    let mut scripts = Vec::new();
    let mut block: Option<String> = None;
    for line in doc.lines() {
        match (&mut block, line.trim_start()) {
            (None, "```bash") => block = Some(String::new()),
            (Some(b), "```") => {
                if b.contains("#SBATCH") {
                    scripts.push(b.clone());
                }
                block = None;
            }
            (Some(b), _) => {
                b.push_str(line);
                b.push('\n');
            }
            (None, _) => {}
        }
    }
    assert_eq!(scripts.len(), 2, "docs/slurm.md's job scripts: {scripts:#?}");
    let s = Scratch::for_run("slurm-docs");
    let shared = s.path("docs-shared");
    for d in ["work", "src/vllm", "models/my-model"] {
        std::fs::create_dir_all(shared.join(d)).unwrap();
    }
    std::fs::write(shared.join("work/repro.py"), "\n").unwrap();
    let bin = s.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_xtask"), bin.join("debug-ima")).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    for (i, script) in scripts.iter().enumerate() {
        let name = format!("debug-ima-docs-{i}");
        let gpus = script.lines().filter(|l| l.starts_with("#SBATCH --gpus-per-node")).count();
        assert_eq!(gpus, 1, "{script}");
        let calls = script.matches("\ndebug-ima ").count();
        assert_eq!(calls, 1, "{script}");
        let changed: String = script
            .lines()
            .filter(|l| !l.starts_with("#SBATCH --gpus-per-node"))
            .map(|l| match l.strip_prefix("debug-ima ") {
                Some(rest) => format!("debug-ima --dry-run {rest}\n"),
                None => format!("{l}\n"),
            })
            .collect::<String>()
            .replace("/shared", &shared.display().to_string());
        let file = s.path(&format!("job-{i}.sh"));
        std::fs::write(&file, &changed).unwrap();
        let out = s.path(&format!("job-{i}.out"));
        let sb = Command::new("sbatch")
            .args(["--wait", "-J", &name, "-o"])
            .arg(&out)
            .arg(&file)
            .env("PATH", &path)
            .env("HOME", s.path("home"))
            .output()
            .unwrap();
        let printed = std::fs::read_to_string(&out).unwrap_or_default();
        assert!(sb.status.success(), "job {i} failed: {}\n{printed}\n{changed}", text(&sb));
        let job = String::from_utf8_lossy(&sb.stdout)
            .split_whitespace()
            .last()
            .map(str::to_string)
            .unwrap_or_default();
        assert!(!job.is_empty() && job.bytes().all(|b| b.is_ascii_digit()), "{}", text(&sb));
        for want in
            ["srun --label --kill-on-bad-exit=", "--ntasks=2 --nodes=2", &format!("--jobid={job} --overlap")]
        {
            assert!(printed.contains(want), "job {i}: missing `{want}` in:\n{printed}");
        }
        assert_eq!(
            printed.contains("--container-image=nvcr.io/nvidia/vllm:25.09-py3"),
            script.contains("--image")
        );
        assert!(!printed.contains("/shared/"), "{printed}");
        assert_queue_empty(&name);
    }
    assert!(!shared.join("work/bundles").exists(), "a dry run writes no bundle");
}

/// A hang through srun (issue 25): both ranks spin in a kernel (the H200 recording of
/// `hang_flag`), `--hang-after 2`. The ranks are srun's tasks, not processes of the tool's
/// tree: the hang rung knows them by their placement lines (node and pid), triggers each
/// one's GPU dump through its pipe, and cuda-gdb reads both dumps; nothing is left.
#[test]
fn a_hang_through_srun_dumps_every_rank_through_its_pipe() {
    let Some(_) = cluster() else { return };
    let s = Scratch::for_run("slurm-hang");
    let name = "debug-ima-slurm-hang";
    let recipe = slurm_recipe(&s);
    let run = Run::new(&s, &recipe, "hang/hang_flag")
        .env("STANDIN_RANK0_CASE", &fixture("hang/hang_flag").display().to_string())
        .arg("--hang-after")
        .arg("2");
    let start = Instant::now();
    let child = run.spawn_via(&["salloc", "-N2", "-n2", "-J", name].map(String::from));
    let out = run.finish(child, start);
    assert!(out.status.success(), "{}", out.both());
    let b = s.only_bundle();
    assert_eq!(b.rung_dirs(), ["01-hang"], "{}", out.both());
    let err = b.read("rungs/01-hang/stderr.log");
    let pids: Vec<u32> = err
        .lines()
        .filter_map(|l| {
            l.split_once(" pid ").and_then(|(head, p)| head.contains("debug-ima: task ").then_some(p))
        })
        .filter_map(|p| p.trim().parse().ok())
        .collect();
    assert_eq!(pids.len(), 2, "{err}");
    let notes = b.notes("hang");
    assert!(notes.contains("triggered a GPU coredump of processes "), "{notes}");
    for pid in &pids {
        assert!(notes.contains(&pid.to_string()), "rank pid {pid} not triggered: {notes}");
        let gdb = b.read(&format!("rungs/01-hang/cudagdb-{pid}.log"));
        assert!(gdb.contains("hang_flag.cu    18"), "{gdb}");
    }
    assert!(!notes.contains("left alone"), "{notes}");
    let v = &b.findings()["verdict"];
    assert_eq!(v["error"], "hang", "{v}");
    assert_eq!(v["kernel"], "consume", "{v}");
    assert_queue_empty(name);
    s.assert_no_standin_left();
}

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

use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn cluster() -> Option<String> {
    match std::env::var("SLURM_CONF") {
        Ok(c) if std::path::Path::new(&c).is_file() => Some(c),
        _ => {
            if std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false" && v != "0") {
                panic!(
                    "CI is set but SLURM_CONF names no slurm.conf: .ci/run starts the cluster (.ci/slurm-up)"
                );
            }
            eprintln!("skipped: no Slurm cluster (SLURM_CONF); `.ci/slurm-up DIR` starts one");
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
    let ps = run("pgrep", &["-f", "^sleep 30$"]);
    assert!(String::from_utf8_lossy(&ps.stdout).trim().is_empty(), "left running: {}", text(&ps));
}

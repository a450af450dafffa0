//! Running a target until it counts as hung, and taking the hang's evidence beside it: once
//! `after` has passed and it still runs, the host stacks of its Python processes (py-spy), the
//! NCCL flight recorder's traces (to JSON), then one GPU dump per CUDA process (one byte into
//! its pipe, the youngest first, each dump waited for), then the tree is ended. The hang rung,
//! the armed baseline at its time limit and `watch` share it; what it shares with
//! `debug-ima dump PID` (py-spy, the pipes, the waits) is in `evidence`.
//!
//! Must not: attach a debugger or signal a process of the target before its dump is written
//! (or the wait for it has run out), read the dumps (cuda-gdb does, in the steps the rungs
//! run after), or leave a pipe or a pickled trace behind.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::armed::{NCCL_PIPE, NCCL_TRACE, PIPE_PREFIX};
use super::evidence::{
    alive, fifos, files, is_python, name_of, poke, poke_until, pyspy, trace_to_json, wait_for_dumps,
    wait_for_traces, youngest_first, Wrote, DUMP_WAIT, OPEN_RETRY, TRACE_WAIT,
};
use crate::ladder::rung::api::{exit_of, step, At, Beside, Run, RungIo, Step, StepCx, When, TRACE, TREE_PID};
use crate::launch::labels::placed_at;
use crate::model::launcher::Placed;
use crate::model::{Exit, Role};
use crate::process::{Control, Running};

/// The user-triggered dump's name start (`core.<host>.<pid>.<time>`).
pub const DUMP_PREFIX: &str = "core.";
/// What the target's time limit adds to `hang_after`: the stacks, the triggers, the wait.
pub const HANG_MARGIN: Duration = Duration::from_secs(300);

/// The pid in a pipe's or a dump's name: `corepipe.<host>.<pid>`, `core.<host>.<pid>.<time>`.
/// The host may hold dots, so the pid is counted from the end.
pub fn pid_in(name: &str) -> Option<u32> {
    if let Some(rest) = name.strip_prefix(PIPE_PREFIX) {
        return rest.rsplit('.').next()?.parse().ok();
    }
    // The armed run's dumps (`watch`) are named as the coredump rung's: `core_<host>.<pid>.<time>`.
    let rest =
        name.strip_prefix(DUMP_PREFIX).or_else(|| name.strip_prefix(crate::bundle::layout::DUMP_PREFIX))?;
    let mut parts = rest.rsplit('.');
    parts.next()?;
    parts.next()?.parse().ok()
}

/// The size of the newest dump of `pid` in `dir`, if it wrote one.
fn dump_size(dir: &Path, pid: u32) -> Option<u64> {
    files(dir, "")
        .into_iter()
        .filter(|p| pid_in(&name_of(p)) == Some(pid))
        .filter_map(|p| std::fs::metadata(p).ok().map(|m| m.len()))
        .max()
}

/// What the watch found, for the notes after the run.
#[derive(Default)]
pub struct Seen {
    pub hung: bool,
    /// Where the ranks of a launcher of ranks run (their placement lines): processes of the
    /// job that are not in the target's tree (srun's tasks, ssh's ranks).
    pub ranks: Vec<Placed>,
    pub notes: Vec<String>,
    pub error: Option<anyhow::Error>,
}

/// The steps beside a target once it counts as hung: py-spy per Python process of its tree,
/// and, for Python, each NCCL flight-recorder dump to JSON. The hang rung and `watch` share
/// them.
pub fn beside_steps(cx: &StepCx) -> Vec<Step> {
    let mut steps = vec![Step::new(Role::PySpy, pyspy(TREE_PID), "pyspy-{n}")
        .at(At::BesideTarget)
        .when(When::PerPythonProcess)];
    if cx.recipe.python {
        steps.push(
            Step::new(Role::Python, trace_to_json(&cx.dir), "nccl-trace-{n}-json")
                .at(At::BesideTarget)
                .when(When::PerNcclTrace),
        );
    }
    steps
}

/// Runs `target` (one of `steps`, which hold the [`beside_steps`]); once `after` has passed
/// since its start and it still runs, `why` is said, the hang's evidence taken ([`collect`])
/// and the tree ended. Then the pipes the tree left (PyTorch does not remove the NCCL one) are
/// removed, as is each flight-recorder pickle turned into JSON (kept only as JSON: text,
/// redacted like every report), and what was seen is noted. Its exit and whether it counted as
/// hung. The hang rung and the armed baseline at its time limit run the target so. `side` run
/// meanwhile (`Run::with`, [`RungIo::execute`]); their exits come back, whatever the target's.
pub fn run_until_hung(
    io: &mut dyn RungIo,
    steps: &[Step],
    target: &Step,
    (after, why): (Duration, &str),
    side: &[Step],
) -> (Result<(Exit, bool)>, Vec<Result<Exit>>) {
    let dir = io.dir().to_path_buf();
    let pyspy = match step(steps, When::PerPythonProcess) {
        Ok(s) => s.clone(),
        Err(e) => return (Err(e), Vec::new()),
    };
    let convert = steps.iter().find(|s| s.when == When::PerNcclTrace).cloned();
    let mut seen = Seen::default();
    let placed = std::cell::RefCell::new(Vec::new());
    let ran = {
        let watch = &mut |line: &str, _: &mut dyn Beside| {
            if let Some(p) = placed_at(line) {
                placed.borrow_mut().push(p);
            }
            Control::Continue
        };
        let tick = &mut collect_after(after, why, &dir, &pyspy, convert.as_ref(), &mut seen, &placed);
        io.execute(Run::of(target).watched(watch).ticked(tick).with(side))
    };
    let (exit, side) = (exit_of(ran.exit), ran.with);
    let exit = match exit {
        Ok(e) => e,
        Err(e) => return (Err(e), side),
    };
    for p in fifos(&dir, "", "") {
        let _ = std::fs::remove_file(p);
    }
    for t in files(&dir, NCCL_TRACE).into_iter().filter(|t| t.extension().is_none()) {
        if t.with_extension("json").is_file() {
            let _ = std::fs::remove_file(t);
        }
    }
    for n in std::mem::take(&mut seen.notes) {
        io.note(n);
    }
    if let Some(e) = seen.error.take() {
        return (Err(e), side);
    }
    (Ok((exit, seen.hung)), side)
}

/// The tick of a target that counts as hung once `after` has passed since its start: then
/// `why` is said, the hang's evidence is taken ([`collect`]) into `seen`, and the tree is
/// ended.
fn collect_after<'a>(
    after: Duration,
    why: &'a str,
    dir: &'a Path,
    pyspy: &'a Step,
    convert: Option<&'a Step>,
    seen: &'a mut Seen,
    placed: &'a std::cell::RefCell<Vec<Placed>>,
) -> impl FnMut(&Running, &mut dyn Beside) -> Control + 'a {
    move |running, beside| {
        if seen.hung || running.elapsed() < after {
            return Control::Continue;
        }
        seen.hung = true;
        seen.ranks = placed.borrow().clone();
        beside.say(&format!("{why}: taking the hang's evidence"));
        collect(dir, running, beside, pyspy, convert, seen);
        if running.child_exited() {
            Control::Continue
        } else {
            Control::Stop
        }
    }
}

/// Everything taken once the run counts as hung, in the order that keeps the evidence: host
/// stacks first (py-spy only reads memory), then the NCCL traces (the processes keep running),
/// then the GPU dumps (the driver aborts each process after its dump), then the wait for them.
pub fn collect(
    dir: &Path,
    running: &Running,
    beside: &mut dyn Beside,
    pyspy: &Step,
    convert: Option<&Step>,
    seen: &mut Seen,
) {
    let tree = running.tree();
    // The ranks a launcher started (not in the tree: srun's tasks, ssh's ranks), each with
    // the node to reach it on; a rank whose process is here and not Python needs no py-spy.
    let ranks: Vec<(u32, String)> = seen
        .ranks
        .iter()
        .filter_map(|r| Some((r.pid?, r.node.clone(), r.task)))
        .filter(|(pid, _, _)| !tree.contains(pid))
        .filter_map(|(pid, node, task)| {
            if rank_here(pid, task) {
                return Some((pid, node));
            }
            // A rank on another host: its process and its pipe (a FIFO of that host's kernel,
            // which a write here through the shared filesystem does not reach) are not here.
            seen.notes.push(format!(
                "rank {task} runs on node {node} (pid {pid}), not on this host: neither its host stacks nor its \
                 GPU dump were taken; `debug-ima dump {pid}` on that node takes them"
            ));
            None
        })
        .collect();
    let python: Vec<(u32, Option<String>)> = tree
        .iter()
        .copied()
        .filter(|&p| is_python(p))
        .map(|p| (p, None))
        .chain(ranks.iter().filter(|(p, _)| is_python(*p)).map(|(p, n)| (*p, Some(n.clone()))))
        .collect();
    for (i, (pid, node)) in python.iter().enumerate() {
        if beside.interrupted() {
            return;
        }
        if let Some(n) = node {
            beside.on_node(n);
        }
        let p = pid.to_string();
        let mut s = pyspy.filled(TREE_PID, &p, i + 1);
        s.stem = format!("pyspy-{pid}");
        if let Err(e) = beside.exec(&s) {
            seen.notes.push(format!(
                "py-spy could not run ({e:#}), so there are no host stacks of the Python processes: install it \
                 (`pip install py-spy`; `cargo xtask doctor` checks it) and give it ptrace rights"
            ));
            break;
        }
    }
    let nccl = fifos(dir, NCCL_PIPE, ".pipe");
    if !nccl.is_empty() {
        let mut triggered = 0;
        for p in &nccl {
            match poke(p, b"1") {
                Wrote::Done => triggered += 1,
                Wrote::NoReader => seen.notes.push(format!("nobody read the NCCL pipe `{}`", name_of(p))),
                Wrote::Failed(e) => {
                    seen.notes.push(format!("cannot write the NCCL pipe `{}`: {e}", name_of(p)))
                }
            }
        }
        let traces = wait_for_traces(dir, NCCL_TRACE, triggered, None, &|| beside.interrupted());
        match convert {
            Some(c) => {
                for (i, t) in traces.iter().enumerate() {
                    let name = name_of(t);
                    let mut s = c.filled(&dir.join(TRACE).display().to_string(), &t.display().to_string(), i);
                    s.stem = format!("{name}-json");
                    if let Err(e) = beside.exec(&s) {
                        seen.notes.push(format!(
                            "could not convert `{name}` to JSON ({e:#}); the pickle is kept: \
                             `python3 -c 'import pickle,json,sys; print(json.dumps(pickle.load(open(sys.argv[1],\"rb\")),default=repr))' {name}`"
                        ));
                        break;
                    }
                }
            }
            None => seen.notes.push(
                "NCCL pipes were made, but the recipe is not `python: true`: the traces stay pickles".into(),
            ),
        }
        if traces.len() < triggered {
            seen.notes.push(format!(
                "{} of {triggered} NCCL flight-recorder dumps came within {} s",
                traces.len(),
                TRACE_WAIT.as_secs()
            ));
        }
    }
    let mut pipes = fifos(dir, PIPE_PREFIX, "");
    // The youngest process first (a child before its parent), each dump waited for.
    youngest_first(&mut pipes, |p| pid_in(&name_of(p)).unwrap_or(0));
    if pipes.is_empty() {
        seen.notes.push(format!(
            "no CUDA process was found in the target's tree ({} process{} alive, no `{PIPE_PREFIX}*` pipe in the \
             rung's folder): it hangs on the host, or had not initialised CUDA after {} s (raise `--hang-after`); \
             the host stacks are {}",
            tree.len(),
            if tree.len() == 1 { "" } else { "es" },
            running.elapsed().as_secs(),
            if python.is_empty() { "not taken: no Python process (a native target's come from a CPU core only after a GPU dump)" } else { "in `pyspy-<pid>.log`" }
        ));
        return;
    }
    let ours: Vec<u32> = tree.iter().copied().chain(ranks.iter().map(|(r, _)| *r)).collect();
    trigger_dumps(dir, &pipes, &ours, beside, seen);
}

/// Triggers the GPU dump of each process of `ours` that has one of `pipes` (in their order),
/// one at a time, each dump waited for; notes what was triggered and what did not come.
fn trigger_dumps(
    dir: &Path,
    pipes: &[std::path::PathBuf],
    ours: &[u32],
    beside: &mut dyn Beside,
    seen: &mut Seen,
) {
    let mut triggered = Vec::new();
    let mut left = Vec::new();
    // One deadline for every pipe: a tree of many processes, or pipes nobody reads, cannot
    // make the wait grow with their number (the waits for dumps between them do not count).
    let mut until = Instant::now() + OPEN_RETRY;
    let size = |pid: u32| dump_size(dir, pid);
    for p in pipes {
        if beside.interrupted() {
            break;
        }
        let name = name_of(p);
        let Some(pid) = pid_in(&name) else { continue };
        if !alive(pid) {
            seen.notes.push(format!(
                "process {pid} (`{name}`) exited before its pipe was triggered: no dump of it"
            ));
            continue;
        }
        if !ours.contains(&pid) {
            seen.notes.push(format!(
                "the pipe `{name}` is of process {pid}, neither of the target's tree nor a rank it placed: left alone"
            ));
            continue;
        }
        match poke_until(p, b"1", until, &|| beside.interrupted()) {
            Wrote::Done => {
                // One at a time: triggered together on one GPU, one of three ranks wrote no
                // dump in 2 of 3 runs on the H200, even triggered again (docs/validation.md §23).
                triggered.push(pid);
                beside.say(&format!("GPU dump triggered in process {pid}: waiting for it"));
                let t0 = Instant::now();
                left.extend(wait_for_dumps(&[pid], &size, &|| beside.interrupted()));
                until += t0.elapsed();
            }
            Wrote::NoReader if !alive(pid) => seen.notes.push(format!(
                "process {pid} (`{name}`) exited before its pipe was triggered: no dump of it"
            )),
            Wrote::NoReader => seen.notes.push(format!(
                "process {pid} did not read its pipe `{name}` within {} s: no dump of it (is a debugger or \
                 compute-sanitizer attached to it? docs/hangs.md)",
                OPEN_RETRY.as_secs()
            )),
            Wrote::Failed(e) => {
                seen.notes.push(format!("cannot write the pipe `{name}` of process {pid}: {e}"))
            }
        }
    }
    if triggered.is_empty() {
        return;
    }
    seen.notes.push(format!(
        "triggered a GPU coredump of process{} {} (one byte into each pipe, one after the other)",
        if triggered.len() == 1 { "" } else { "es" },
        triggered.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
    ));
    for (pid, state) in left {
        seen.notes.push(format!(
            "process {pid} had not exited {} s after its trigger ({state}); it was killed with the tree",
            DUMP_WAIT.as_secs()
        ));
    }
}

/// Whether process `pid` is rank `task` of the job, on this host: its environment says so
/// (`SLURM_PROCID`, or the ssh launcher's `RANK`), which a process of another host that
/// happens to have the same pid here does not.
fn rank_here(pid: u32, task: u32) -> bool {
    let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else { return false };
    let want = [format!("SLURM_PROCID={task}"), format!("RANK={task}")];
    env.split(|&b| b == 0).any(|v| want.iter().any(|w| v == w.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pids_come_from_the_names_of_pipes_and_dumps() {
        assert_eq!(pid_in("corepipe.vm.584"), Some(584));
        assert_eq!(pid_in("corepipe.node-1.example.org.1163"), Some(1163));
        assert_eq!(pid_in("core.vm.1190.1796145869"), Some(1190));
        assert_eq!(pid_in("core.a.b.7.99"), Some(7));
        assert_eq!(pid_in("core_vm.1190.1796145869"), Some(1190));
        assert_eq!(pid_in("core"), None);
        assert_eq!(pid_in("cpu-core"), None);
        assert_eq!(pid_in("corepipe.vm.x"), None);
    }
}

//! Rung 8, hang: the target run with the driver's user-triggered GPU coredump armed
//! (`CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1`: each CUDA process makes a named pipe
//! `corepipe.<host>.<pid>` in the rung's folder) and, for `torch.distributed`, the NCCL flight
//! recorder. Once `hang_after` seconds have passed since the start and the target still runs,
//! the rung takes the host stacks of every Python process of its tree (`py-spy dump
//! --native`), triggers the NCCL pipes (the traces are converted to JSON), then writes one
//! byte to every GPU pipe: the driver writes a dump and aborts the process (exit 134). The
//! rung waits for that, without signalling a process that writes its dump, then ends the
//! tree, reads each dump with `cuda-gdb` (`info cuda threads` groups the spinning warps by
//! line) and, for a native target, the CPU core the abort left (`thread apply all bt`).
//!
//! Recorded on an H200 (tests/fixtures/h200/hang/README.md): one byte is enough; a cuda-gdb
//! attached before the trigger prevents the dump, so nothing attaches before it.
//!
//! Must not: attach a debugger or signal a process of the target before its dump is written
//! (or the wait for it has run out), read the dumps itself (cuda-gdb does), leave a process or
//! a CPU core behind.

use std::io::Write;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, Result};

use super::api::{step, At, Beside, Ran, Rung, RungIo, Step, StepCx, When, TRACE, TREE_PID};
use super::armed;
use super::build::{from_step, target, with_options, DEFAULT_RUN_TIMEOUT, GDB_TIMEOUT};
use super::coredump;
use super::rebuild;
use crate::launch::container::Access;
use crate::model::{Invocation, Role, RungId};
use crate::process::{Control, Running};
use crate::recipe::Resolved;

pub struct Hang;

pub use super::armed::{NCCL_BUFFER, NCCL_PIPE, NCCL_TRACE, PIPE_PREFIX};
/// The user-triggered dump's name start (`core.<host>.<pid>.<time>`).
pub const DUMP_PREFIX: &str = "core.";
/// Stands for a dump's path in the per-dump step.
pub const HANG_DUMP: &str = "core.<host>.<pid>.<time>";
/// How long a triggered process may take to write its dump and abort (the H200's took
/// 0.3 s native, 1.8 s for two Python processes) before the tree is ended anyway.
pub const DUMP_WAIT: Duration = Duration::from_secs(60);
/// A dump whose size has not changed for this long is taken as written.
const DUMP_STILL: Duration = Duration::from_secs(2);
/// How long an open of a pipe nobody reads yet (ENXIO) is retried.
const OPEN_RETRY: Duration = Duration::from_secs(2);
/// How long the NCCL traces may take to appear once their pipes were written.
const TRACE_WAIT: Duration = Duration::from_secs(10);
/// What the target's time limit adds to `hang_after`: the stacks, the triggers, the wait.
pub const HANG_MARGIN: Duration = Duration::from_secs(300);
/// Converts a flight-recorder pickle (`argv[1]`) to JSON (`argv[2]`); what JSON cannot hold
/// (bytes) is written as its `repr`.
const PICKLE_TO_JSON: &str = "import pickle,json,sys; d=pickle.load(open(sys.argv[1],'rb')); \
json.dump(d,open(sys.argv[2],'w'),indent=1,default=repr)";

/// When the run counts as hung: `hang_after` (`--hang-after`, `run.hang_after`), else the
/// target's own time limit (`run.timeout`, else [`DEFAULT_RUN_TIMEOUT`]): a baseline that
/// timed out ran that long without ending.
pub fn hang_after(r: &Resolved) -> Duration {
    r.hang_after.unwrap_or_else(|| from_step(&r.run).timeout.unwrap_or(DEFAULT_RUN_TIMEOUT))
}

/// The target with the user-triggered coredump armed (pipe and dump in `dir`), the five
/// `skip_*` flags of the coredump rung, and the flight recorder for `torch.distributed`. A
/// native target gets its core limit raised (the abort's CPU core holds the host stacks); a
/// Python target gets it set to 0 (its CPU core is about 1 GB, and py-spy gives its stacks).
pub fn invocation(r: &Resolved, dir: &Path) -> Invocation {
    let mut inv = target(r);
    armed::user_triggered(&mut inv, dir, DUMP_PREFIX);
    if r.python {
        armed::flight_recorder(&mut inv, dir);
    }
    armed::core_limit(&mut inv, r.python);
    let mut inv = with_options(inv, r, RungId::Hang);
    // The run must outlive its `hang_after` and what follows it.
    let least = hang_after(r) + HANG_MARGIN;
    inv.timeout = Some(inv.timeout.map_or(least, |t| t.max(least)));
    inv
}

/// `py-spy dump --native --pid PID`: every thread's Python and native frames.
pub fn pyspy(pid: &str) -> Invocation {
    let argv = ["py-spy", "dump", "--native", "--pid", pid].map(String::from).to_vec();
    Invocation { timeout: Some(Duration::from_secs(60)), ..Invocation::new(argv) }
}

/// `python3 -c PICKLE_TO_JSON DUMP DUMP.json` on a flight-recorder dump in `dir`.
pub fn trace_to_json(dir: &Path) -> Invocation {
    let trace = dir.join(TRACE).display().to_string();
    let argv = vec![
        "python3".to_string(),
        "-c".to_string(),
        PICKLE_TO_JSON.to_string(),
        trace.clone(),
        format!("{trace}.json"),
    ];
    Invocation { timeout: Some(Duration::from_secs(60)), ..Invocation::new(argv) }
}

/// cuda-gdb on a user-triggered dump, with the commands the recordings were made with: the
/// kernels, the focused thread's stack, every thread grouped by PC and line, the warps of the
/// focused SM, the instruction at the PC.
pub fn gdb(dump: &Path) -> Invocation {
    let mut argv: Vec<String> = ["cuda-gdb", "-batch", "-nx"].map(String::from).to_vec();
    for c in [
        "set pagination off".to_string(),
        format!("target cudacore {}", dump.display()),
        "info cuda kernels".to_string(),
        "bt".to_string(),
        "info cuda threads".to_string(),
        "info cuda warps".to_string(),
        "x/i $pc".to_string(),
    ] {
        argv.push("-ex".into());
        argv.push(c);
    }
    Invocation { timeout: Some(GDB_TIMEOUT), ..Invocation::new(argv) }
}

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

/// Whether a command line (`/proc/PID/cmdline`'s first word), an executable or a `comm` is a
/// Python interpreter's: `python`, `python3`, `python3.12`, a venv's `.../bin/python3`.
pub fn is_python_name(name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name);
    base.strip_prefix("python").is_some_and(|v| v.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
}

/// Whether the live process `pid` runs Python: its `comm` (a script run through a `#!`
/// line is named after the script), its executable or its first word.
fn is_python(pid: u32) -> bool {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    let exe =
        std::fs::read_link(format!("/proc/{pid}/exe")).map(|p| p.display().to_string()).unwrap_or_default();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let first = String::from_utf8_lossy(cmdline.split(|&b| b == 0).next().unwrap_or_default()).into_owned();
    [comm.trim(), exe.as_str(), first.as_str()].iter().any(|n| is_python_name(n))
}

/// Whether `pid` is alive and not a zombie.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()) != Some("Z"),
        Err(_) => false,
    }
}

/// The FIFOs in `dir` whose names start with `prefix` (and end with `suffix`), sorted.
fn fifos(dir: &Path, prefix: &str, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_fifo()))
                .map(|e| e.path())
                .filter(|p| {
                    let n = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                    n.starts_with(prefix) && n.ends_with(suffix)
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The regular files in `dir` whose names start with `prefix`, sorted.
fn files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .map(|e| e.path())
                .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(prefix)))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn name_of(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// How a write to a pipe went.
#[derive(Debug, PartialEq, Eq)]
enum Wrote {
    Done,
    /// Nobody opened it for reading within [`OPEN_RETRY`] (ENXIO).
    NoReader,
    Failed(String),
}

/// Writes `byte` to the FIFO `p` without blocking: opened `O_WRONLY|O_NONBLOCK`, retried
/// while nobody reads it yet (ENXIO) for up to [`OPEN_RETRY`].
fn poke(p: &Path, byte: &[u8]) -> Wrote {
    let until = Instant::now() + OPEN_RETRY;
    loop {
        match std::fs::OpenOptions::new().write(true).custom_flags(nix::libc::O_NONBLOCK).open(p) {
            Ok(mut f) => {
                return match f.write_all(byte) {
                    Ok(()) => Wrote::Done,
                    Err(e) => Wrote::Failed(e.to_string()),
                }
            }
            Err(e) if e.raw_os_error() == Some(nix::libc::ENXIO) => {
                if Instant::now() >= until {
                    return Wrote::NoReader;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => return Wrote::Failed(e.to_string()),
        }
    }
}

/// The size of the newest dump of `pid` in `dir`, if it wrote one.
fn dump_size(dir: &Path, pid: u32) -> Option<u64> {
    files(dir, "")
        .into_iter()
        .filter(|p| pid_in(&name_of(p)) == Some(pid))
        .filter_map(|p| std::fs::metadata(p).ok().map(|m| m.len()))
        .max()
}

/// Waits until every triggered process has exited or its dump has stopped growing, up to
/// [`DUMP_WAIT`]; returns those still running at the end with their state.
fn wait_for_dumps(dir: &Path, pids: &[u32], beside: &dyn Beside) -> Vec<(u32, &'static str)> {
    let until = Instant::now() + DUMP_WAIT;
    let mut sizes: Vec<(u32, Option<u64>, Instant)> =
        pids.iter().map(|&p| (p, None, Instant::now())).collect();
    loop {
        let mut pending = Vec::new();
        for (pid, size, since) in &mut sizes {
            if !alive(*pid) {
                continue;
            }
            let now = dump_size(dir, *pid);
            if now != *size {
                *size = now;
                *since = Instant::now();
            }
            let still = size.is_some() && since.elapsed() >= DUMP_STILL;
            if !still {
                pending.push((*pid, if size.is_some() { "writing its dump" } else { "no dump yet" }));
            }
        }
        if pending.is_empty() || Instant::now() >= until || beside.interrupted() {
            return pending;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What the watch found, for the notes after the run.
#[derive(Default)]
pub(super) struct Seen {
    pub(super) hung: bool,
    pub(super) notes: Vec<String>,
    pub(super) error: Option<anyhow::Error>,
}

impl Rung for Hang {
    fn id(&self) -> RungId {
        RungId::Hang
    }

    fn describe(&self) -> &'static str {
        "run with the user-triggered GPU coredump armed; once `hang_after` has passed, take the \
         host stacks (py-spy), the NCCL flight recorder and a GPU dump of every CUDA process \
         (one byte into its pipe), end the tree, read each dump with `cuda-gdb` (one run)"
    }

    fn steps(&self, cx: &StepCx) -> Vec<Step> {
        let r = cx.recipe;
        let mut steps = Vec::new();
        if let Some(b) = &r.build {
            let build = rebuild::invocation(r, b, cx.debug, cx.inherited_prepend.as_deref(), RungId::Hang);
            steps.push(Step::new(Role::Build, build, "build").when(When::BinariesMissing));
        }
        steps.push(Step::target(invocation(r, &cx.dir)).at(At::New(Access::Ptrace)));
        steps.push(
            Step::new(Role::PySpy, pyspy(TREE_PID), "pyspy-{n}")
                .at(At::BesideTarget)
                .when(When::PerPythonProcess),
        );
        if r.python {
            steps.push(
                Step::new(Role::Python, trace_to_json(&cx.dir), "nccl-trace-{n}-json")
                    .at(At::BesideTarget)
                    .when(When::PerNcclTrace),
            );
        }
        steps.push(Step::new(Role::CudaGdb, gdb(&cx.dir.join(HANG_DUMP)), "cudagdb-{n}").when(When::PerDump));
        if !r.python {
            steps.push(
                Step::new(
                    Role::CudaGdb,
                    coredump::cpu_gdb(&coredump::executable(r), &coredump::cpu_core_path(&cx.dir)),
                    "cpucore-gdb",
                )
                .when(When::PerCpuCore),
            );
        }
        steps
    }

    fn run(&self, io: &mut dyn RungIo, steps: &[Step]) -> Result<Ran> {
        super::baseline::build_if_missing(io, steps)?;
        let after = hang_after(io.recipe());
        let dir = io.dir().to_path_buf();
        let started = SystemTime::now();
        let pyspy = step(steps, When::PerPythonProcess)?.clone();
        let convert = steps.iter().find(|s| s.when == When::PerNcclTrace).cloned();
        let mut seen = Seen::default();
        let exit = io.exec_ticking(step(steps, When::Always)?, &mut |running, beside| {
            if seen.hung || running.elapsed() < after {
                return Control::Continue;
            }
            seen.hung = true;
            beside.say(&format!("still running after {} s: taking the hang's evidence", after.as_secs()));
            collect(&dir, running, beside, &pyspy, convert.as_ref(), &mut seen);
            if running.child_exited() {
                Control::Continue
            } else {
                Control::Stop
            }
        })?;
        // The tree has ended: the pipes it left (PyTorch does not remove the NCCL one) are no
        // files a bundle holds, and a flight-recorder pickle turned into JSON is kept only as
        // JSON (text, redacted like every report).
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
            return Err(e);
        }
        if !seen.hung {
            io.note(format!(
                "the target ended by itself ({}) before `hang_after` ({} s): it did not hang in this run",
                exit.text(),
                after.as_secs()
            ));
            return Ok(Ran { faulted: !exit.success(), yielded: false, lineinfo: None, hung: false });
        }
        let dumps = files(&dir, DUMP_PREFIX);
        let placeholder = dir.join(HANG_DUMP).display().to_string();
        let per_dump = step(steps, When::PerDump)?;
        for (i, d) in dumps.iter().enumerate() {
            if io.interrupted() {
                break;
            }
            let name = name_of(d);
            io.say(&format!("cuda-gdb on {name}"));
            let mut s = per_dump.filled(&placeholder, &d.display().to_string(), i + 1);
            if let Some(pid) = pid_in(&name) {
                s.stem = format!("cudagdb-{pid}");
            }
            io.exec(&s)?;
        }
        if let Some(cpu) = steps.iter().find(|s| s.when == When::PerCpuCore) {
            if !dumps.is_empty() && !io.interrupted() {
                coredump::read_cpu_core(io, cpu, started)?;
            }
        }
        Ok(Ran { faulted: !dumps.is_empty(), yielded: !dumps.is_empty(), lineinfo: None, hung: true })
    }
}

/// Everything taken once the run counts as hung, in the order that keeps the evidence: host
/// stacks first (py-spy only reads memory), then the NCCL traces (the processes keep running),
/// then the GPU dumps (the driver aborts each process after its dump), then the wait for them.
pub(super) fn collect(
    dir: &Path,
    running: &Running,
    beside: &mut dyn Beside,
    pyspy: &Step,
    convert: Option<&Step>,
    seen: &mut Seen,
) {
    let tree = running.tree();
    let python: Vec<u32> = tree.iter().copied().filter(|&p| is_python(p)).collect();
    for (i, pid) in python.iter().enumerate() {
        if beside.interrupted() {
            return;
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
        let traces = wait_for_traces(dir, triggered, beside);
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
    let pipes = fifos(dir, PIPE_PREFIX, "");
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
    let mut triggered = Vec::new();
    for p in &pipes {
        let name = name_of(p);
        let Some(pid) = pid_in(&name) else { continue };
        if !alive(pid) {
            seen.notes.push(format!(
                "process {pid} (`{name}`) exited before its pipe was triggered: no dump of it"
            ));
            continue;
        }
        match poke(p, b"1") {
            Wrote::Done => triggered.push(pid),
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
    beside.say(&format!("GPU dump triggered in {} process(es): waiting for the dumps", triggered.len()));
    let left = wait_for_dumps(dir, &triggered, beside);
    seen.notes.push(format!(
        "triggered a GPU coredump of process{} {} (one byte into each pipe)",
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

/// Waits up to [`TRACE_WAIT`] for `want` flight-recorder dumps (`nccl-trace-<rank>`, not the
/// `.json` made from them) to appear and stop growing; returns those there.
fn wait_for_traces(dir: &Path, want: usize, beside: &dyn Beside) -> Vec<PathBuf> {
    let until = Instant::now() + TRACE_WAIT;
    let mut last: Vec<(PathBuf, u64)> = Vec::new();
    loop {
        let now: Vec<(PathBuf, u64)> = files(dir, NCCL_TRACE)
            .into_iter()
            .filter(|p| !name_of(p).ends_with(".json"))
            .map(|p| {
                let n = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
                (p, n)
            })
            .collect();
        let settled = now == last && now.len() >= want && now.iter().all(|(_, n)| *n > 0);
        if settled || Instant::now() >= until || beside.interrupted() {
            return now.into_iter().map(|(p, _)| p).collect();
        }
        last = now;
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Fails, naming the fix, when `hang_after` cannot be honoured: it must be below the run's
/// own time limit, or the run is killed as timed out before it is looked at as hung.
pub fn check(r: &Resolved) -> Result<()> {
    if let (Some(after), Some(t)) = (r.hang_after, r.run.timeout) {
        if after >= t {
            bail!(
                "`--hang-after {}` is not below the recipe's `run.timeout` ({} s): the run would be killed as \
                 timed out before it is looked at as hung; give a smaller `--hang-after`",
                after.as_secs(),
                t.as_secs()
            );
        }
    }
    Ok(())
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

    #[test]
    fn python_interpreters_are_known_by_name() {
        for n in ["python", "python3", "python3.12", "/opt/torch/.venv/bin/python3"] {
            assert!(is_python_name(n), "{n}");
        }
        for n in ["pythonista", "sh", "hang_flag", "", "/usr/bin/ipython"] {
            assert!(!is_python_name(n), "{n}");
        }
    }

    #[test]
    fn the_gdb_command_is_the_recordings() {
        let inv = gdb(Path::new("/b/core.vm.1.2"));
        assert_eq!(
            inv.shell_line(),
            "cuda-gdb -batch -nx -ex 'set pagination off' -ex 'target cudacore /b/core.vm.1.2' -ex 'info cuda \
             kernels' -ex bt -ex 'info cuda threads' -ex 'info cuda warps' -ex 'x/i $pc'"
        );
    }

    #[test]
    fn a_pipe_nobody_reads_is_reported_and_one_read_gets_its_byte() {
        let d = std::env::temp_dir().join(format!("xtask-hang-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("corepipe.h.1");
        let _ = std::fs::remove_file(&p);
        let c = std::ffi::CString::new(p.display().to_string()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { nix::libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(fifos(&d, PIPE_PREFIX, ""), vec![p.clone()]);
        assert_eq!(poke(&p, b"1"), Wrote::NoReader);
        let reader = {
            let p = p.clone();
            std::thread::spawn(move || std::fs::read(&p).unwrap())
        };
        assert_eq!(poke(&p, b"1"), Wrote::Done);
        assert_eq!(reader.join().unwrap(), b"1");
        std::fs::remove_dir_all(&d).unwrap();
    }
}

//! The whole process tree of a run, not only its group. A process that calls `setsid()` (or
//! its own `setpgid`) leaves the group that `killpg` reaches, so every process this tool
//! starts carries a mark in its environment ([`MARK_VAR`], one value per run), which its
//! descendants inherit; and the tool, once [`become_subreaper`] ran (the binary does it at
//! startup), is the child subreaper of everything it starts (`PR_SET_CHILD_SUBREAPER`), so an
//! orphaned descendant re-parents to the tool instead of init. A run's sweep finds, through
//! `/proc`, every live process that carries the run's mark, every orphan re-parented to the
//! tool that no live run claims, and all of their descendants; [`kill_all`] finds every
//! descendant of the tool and every process carrying a mark of this tool. Zombies left by
//! orphans are reaped here, never a child that a live handle still waits on.
//!
//! Must not: start processes, print, signal a process that neither carries a mark of this
//! tool nor descends from it, or reap a child registered in [`super::groups`].
//!
//! Every process the tool starts is also the subreaper of its own descendants (set in the
//! child before `exec`, [`super::spawn`]), so an orphan stays in its run's tree, a child of
//! the run's first process, for as long as that one lives: found by ancestry whatever its
//! environment or session, by the tool and by the guardian after a SIGKILL of the tool.
//!
//! The limits: a descendant that clears its environment (`env -i`) and whose run's first
//! process has exited is found only where the tool is a subreaper (the binary; not a
//! library caller such as a test), and not by the guardian (it is then the tool's child,
//! re-parented to init when the tool dies; the tool kills it at once, so only a SIGKILL of
//! the tool in those milliseconds leaves it); a process found by its mark alone (not a descendant) could in principle have
//! exited and had its pid reused between the look and the signal.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill as send_signal, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag};
use nix::unistd::Pid;

use super::groups;

/// The variable that marks every process a run starts, and what they start in turn.
pub const MARK_VAR: &str = "DEBUG_IMA_RUN";
/// How long a sweep keeps looking for marked processes after SIGKILL (a process caught in a
/// `fork` leaves a child the next look finds) before it gives up for now.
const SWEEP_LIMIT: Duration = Duration::from_secs(2);

/// Set once this process is the subreaper of what it starts.
static SUBREAPER: AtomicBool = AtomicBool::new(false);
static SEQ: AtomicU64 = AtomicU64::new(0);

/// Makes this process the child subreaper of everything it starts: an orphaned descendant
/// (its parent exited, a double fork) re-parents to it, so [`kill_all`] can reach it and it
/// is reaped here.
pub(super) fn become_subreaper() -> anyhow::Result<()> {
    nix::sys::prctl::set_child_subreaper(true).map_err(|e| {
        anyhow::anyhow!("cannot make this process the reaper of the processes it starts (prctl: {e})")
    })?;
    SUBREAPER.store(true, Ordering::SeqCst);
    Ok(())
}

/// This tool's token in every mark: its pid and start time, unique on the machine.
fn token() -> &'static str {
    static TOKEN: OnceLock<String> = OnceLock::new();
    TOKEN.get_or_init(|| {
        let me = std::process::id();
        match own_start() {
            Some(start) => format!("{me}-{start}"),
            None => {
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos());
                format!("{me}-t{nanos}")
            }
        }
    })
}

fn own_start() -> Option<u64> {
    static START: OnceLock<Option<u64>> = OnceLock::new();
    *START.get_or_init(|| {
        std::fs::read_to_string("/proc/self/stat").ok().and_then(|s| parse_stat(&s)).map(|p| p.2)
    })
}

/// A new run's mark: `TOOL-TOKEN.N`.
pub(super) fn new_mark() -> String {
    format!("{}.{}", token(), SEQ.fetch_add(1, Ordering::Relaxed))
}

/// The processes a sweep is about.
#[derive(Debug, Clone)]
pub(super) struct Run {
    pub mark: String,
    /// The start time (clock ticks since boot) of the run's child: its descendants started
    /// no earlier, so older processes need no look at their environment.
    pub since: u64,
}

impl Run {
    /// The run marked `mark` whose child is `pid`.
    pub(super) fn new(mark: String, pid: u32) -> Run {
        let since = i32::try_from(pid).ok().and_then(start_of).unwrap_or(0);
        Run { mark, since }
    }
}

#[derive(Debug, Clone, Copy)]
enum Scope<'a> {
    Run(&'a Run),
    /// Everything this tool started.
    Tool,
}

/// One line of `/proc/PID/stat`, the parts used here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Proc {
    pid: i32,
    ppid: i32,
    zombie: bool,
    start: u64,
}

/// `(ppid, zombie, start time)` from the text of `/proc/PID/stat`: `PID (COMM) STATE PPID ...`,
/// the start time the 22nd field; COMM may hold spaces and parentheses.
fn parse_stat(text: &str) -> Option<(i32, bool, u64)> {
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?;
    let ppid = fields.get(1)?.parse().ok()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((ppid, matches!(*state, "Z" | "X" | "x"), start))
}

fn start_of(pid: i32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().and_then(|s| parse_stat(&s)).map(|p| p.2)
}

/// Every process in `/proc` but this one.
fn list() -> Vec<Proc> {
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter_map(|pid| {
            let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (ppid, zombie, start) = parse_stat(&text)?;
            Some(Proc { pid, ppid, zombie, start })
        })
        .collect()
}

/// The value of [`MARK_VAR`] in the environment of `pid`, if it can be read and has one.
fn mark_of(pid: i32) -> Option<String> {
    match env_mark(pid) {
        EnvMark::Marked(m) => Some(m),
        EnvMark::Unmarked | EnvMark::Unknown => None,
    }
}

/// What the environment of a process says of its run.
enum EnvMark {
    /// It carries a run's mark.
    Marked(String),
    /// It has an environment, without a mark: it cleared what it inherited (`env -i`).
    Unmarked,
    /// Its environment cannot be read, or reads empty: it may be in the middle of an
    /// `execve` (the kernel shows no environment then), or gone.
    Unknown,
}

fn env_mark(pid: i32) -> EnvMark {
    match std::fs::read(format!("/proc/{pid}/environ")) {
        Ok(env) if !env.is_empty() => match mark_in(&env) {
            Some(m) => EnvMark::Marked(String::from_utf8_lossy(m).into_owned()),
            None => EnvMark::Unmarked,
        },
        _ => EnvMark::Unknown,
    }
}

/// [`MARK_VAR`]'s value in a NUL-separated environment block.
fn mark_in(env: &[u8]) -> Option<&[u8]> {
    let key = MARK_VAR.as_bytes();
    env.split(|&b| b == 0).find_map(|entry| entry.strip_prefix(key)?.strip_prefix(b"="))
}

/// The live processes that carry a mark of the tool whose token is `token`, with all their
/// descendants, marked or not (the guardian's look, from outside that tool). A descendant
/// that cleared its environment and left its session (an `env -i setsid` daemon) is found
/// through its ancestry: every process the tool starts is the subreaper of its own
/// descendants ([`super::spawn`]), so such an orphan is the child of its run's first
/// process while that one lives, not of init.
pub(super) fn marked_by(token: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    let procs: Vec<Proc> = list().into_iter().filter(|p| !p.zombie && p.pid != me).collect();
    let roots = procs
        .iter()
        .filter(|p| {
            mark_of(p.pid).is_some_and(|m| m.strip_prefix(token).is_some_and(|rest| rest.starts_with('.')))
        })
        .map(|p| p.pid);
    with_descendants(&procs, roots, me)
}

/// `roots` and every descendant of theirs among `procs` (never `me`), sorted.
fn with_descendants(procs: &[Proc], roots: impl Iterator<Item = i32>, me: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for p in procs.iter().filter(|p| !p.zombie) {
        children.entry(p.ppid).or_default().push(p.pid);
    }
    let mut picked: HashSet<i32> = roots.collect();
    let mut todo: Vec<i32> = picked.iter().copied().collect();
    while let Some(pid) = todo.pop() {
        for &c in children.get(&pid).map(Vec::as_slice).unwrap_or_default() {
            if c != me && picked.insert(c) {
                todo.push(c);
            }
        }
    }
    let mut out: Vec<i32> = picked.into_iter().collect();
    out.sort_unstable();
    out
}

/// The guardian's pid (0: none: `process/guard.rs`), which the tool's own sweeps leave
/// alone: it carries no mark and is a child of the tool, as an orphan of a finished run is.
static GUARD_PID: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Records the guardian's pid.
pub(super) fn set_guardian(pid: i32) {
    GUARD_PID.store(pid, Ordering::SeqCst);
}

fn is_guardian(pid: i32) -> bool {
    pid != 0 && GUARD_PID.load(Ordering::SeqCst) == pid
}

/// This tool's token, as the guardian is given it.
pub(super) fn own_token() -> &'static str {
    token()
}

/// Whether `mark` is one of this tool's.
fn is_ours(mark: &str) -> bool {
    mark.strip_prefix(token()).is_some_and(|rest| rest.starts_with('.'))
}

/// The live processes of `scope`, with their descendants.
fn select(scope: Scope) -> Vec<i32> {
    let me = std::process::id() as i32;
    // The registry and /proc are read while no child can start: a child is either in both
    // or in neither, never seen unregistered (an orphan) between its start and its
    // registration.
    let (procs, (registered, live)) = {
        let _spawning = groups::hold_spawns();
        (list(), groups::snapshot())
    };
    let mut picked: HashSet<i32> = HashSet::new();
    let tool_start = own_start().unwrap_or(0);
    for p in procs.iter().filter(|p| !p.zombie && !is_guardian(p.pid)) {
        let hit = match scope {
            Scope::Run(run) => p.start >= run.since && mark_of(p.pid).is_some_and(|m| m == run.mark),
            Scope::Tool => p.start >= tool_start && mark_of(p.pid).is_some_and(|m| is_ours(&m)),
        };
        if hit {
            picked.insert(p.pid);
        }
    }
    if SUBREAPER.load(Ordering::SeqCst) {
        for p in procs.iter().filter(|p| !p.zombie && p.ppid == me && !is_guardian(p.pid)) {
            let orphan = match scope {
                Scope::Tool => true,
                // An orphan that no other live run claims: its run is over, or it cleared its
                // environment. One whose environment reads empty may be a live run's process
                // caught in an `execve` (a double fork's grandchild starting): it is left to a
                // later sweep, at the latest the tool's own at its end.
                Scope::Run(run) => {
                    !registered.contains(&p.pid)
                        && match env_mark(p.pid) {
                            EnvMark::Marked(m) => m == run.mark || !live.contains(&m),
                            EnvMark::Unmarked => true,
                            EnvMark::Unknown => false,
                        }
                }
            };
            if orphan {
                picked.insert(p.pid);
            }
        }
    }
    // Their descendants, marked or not.
    with_descendants(&procs, picked.into_iter(), me)
}

fn send(pids: &[i32], signal: Signal) {
    for &pid in pids {
        // ESRCH: gone since the look.
        let _ = send_signal(Pid::from_raw(pid), signal);
    }
}

/// Sends `signal` once to every live process of `run` (its group aside, which the caller
/// signals); returns how many there were.
pub(super) fn signal(run: &Run, signal: Signal) -> usize {
    let pids = select(Scope::Run(run));
    send(&pids, signal);
    pids.len()
}

/// The live processes of `run` (its child among them while it lives), with their
/// descendants, sorted.
pub(super) fn members(run: &Run) -> Vec<i32> {
    select(Scope::Run(run))
}

/// Whether a live process of `run` is left.
pub(super) fn any_left(run: &Run) -> bool {
    !select(Scope::Run(run)).is_empty()
}

/// SIGKILLs every process of `run`, looking again until none is left (or [`SWEEP_LIMIT`]),
/// and reaps the orphans' zombies.
pub(super) fn kill(run: &Run) {
    sweep(Scope::Run(run));
}

/// SIGKILLs every process group still registered, every descendant of this tool and every
/// process that carries one of its marks; reaps the orphans. Safe to call from anywhere, at
/// any time (error paths, the signal thread, the end of the tool); each runner reaps its
/// own child.
pub fn kill_all() {
    groups::signal_all(Signal::SIGKILL);
    sweep(Scope::Tool);
}

fn sweep(scope: Scope) {
    let until = Instant::now() + SWEEP_LIMIT;
    let mut pause = Duration::from_millis(2);
    loop {
        let pids = select(scope);
        if pids.is_empty() {
            break;
        }
        send(&pids, Signal::SIGKILL);
        reap_orphans();
        if Instant::now() >= until {
            break;
        }
        thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
    reap_orphans();
}

/// Reaps the zombies among this process's children that no runner waits on: orphans
/// re-parented here. Only in a subreaper: elsewhere (a library caller, a test harness)
/// children this code did not start may be waited on by others.
pub(super) fn reap_orphans() {
    if !SUBREAPER.load(Ordering::SeqCst) {
        return;
    }
    let me = std::process::id() as i32;
    // No child starts (and gets registered) while the registry is read and the zombies reaped.
    let _spawning = groups::hold_spawns();
    let (registered, _) = groups::snapshot();
    for p in list().into_iter().filter(|p| p.zombie && p.ppid == me && !registered.contains(&p.pid)) {
        let _ = waitpid(Pid::from_raw(p.pid), Some(WaitPidFlag::WNOHANG));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_are_read_past_odd_names() {
        let line = "4242 (a) b (c)) S 17 4242 4242 0 -1 4194560 99 0 0 0 1 2 0 0 20 0 1 0 123456 1 2";
        assert_eq!(parse_stat(line), Some((17, false, 123456)));
        let zombie = "7 (sh) Z 1 7 7 0 -1 4194564 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0";
        assert_eq!(parse_stat(zombie), Some((1, true, 99)));
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) S"), None);
    }

    #[test]
    fn descendants_are_found_by_parent_whatever_their_environment() {
        let p = |pid, ppid| Proc { pid, ppid, zombie: false, start: 0 };
        // 10 marked; 11 its child; 12 an orphan it adopted (a daemon, no mark); 13 under 12;
        // 20 a stranger with its child 21; 99 this process, never picked.
        let procs = [p(10, 1), p(11, 10), p(12, 10), p(13, 12), p(20, 1), p(21, 20), p(99, 13)];
        assert_eq!(with_descendants(&procs, [10].into_iter(), 99), [10, 11, 12, 13]);
        assert_eq!(with_descendants(&procs, std::iter::empty(), 99), Vec::<i32>::new());
        let mut zombie = procs;
        zombie[2].zombie = true;
        assert_eq!(with_descendants(&zombie, [10].into_iter(), 99), [10, 11]);
    }

    #[test]
    fn the_mark_is_found_in_an_environment_block() {
        let env = b"HOME=/root\0DEBUG_IMA_RUN=1-2.3\0PATH=/bin\0";
        assert_eq!(mark_in(env), Some(&b"1-2.3"[..]));
        assert_eq!(mark_in(b"XDEBUG_IMA_RUN=1\0DEBUG_IMA_RUNX=2\0"), None);
        assert_eq!(mark_in(b"DEBUG_IMA_RUN=9.9"), Some(&b"9.9"[..]));
        assert_eq!(mark_in(b""), None);
    }

    #[test]
    fn marks_are_this_tools_and_new_each_run() {
        let a = new_mark();
        let b = new_mark();
        assert_ne!(a, b);
        assert!(is_ours(&a) && is_ours(&b));
        assert!(!is_ours(&format!("{}0.1", token())), "a longer token is another tool's");
        assert!(!is_ours("1-2.3"));
    }

    #[test]
    fn this_process_is_listed_by_its_children_only() {
        let me = std::process::id() as i32;
        let procs = list();
        assert!(!procs.is_empty());
        assert!(procs.iter().all(|p| p.pid != me));
        assert!(own_start().is_some());
    }
}

//! Processes this tool did not start (`debug-ima dump PID`): a running program's tree found
//! through `/proc` (the pid and its descendants, each known by pid and start time, so that a
//! pid reused meanwhile is never taken for it), whether one of them is stopped or traced,
//! `SIGCONT` to one a debugger left stopped, what ptrace allows here, and, for `dump --kill`,
//! the end of the tree: SIGTERM, [`TERM_GRACE`](super::TERM_GRACE), SIGKILL.
//!
//! Must not: start processes, print, or signal a process that is not in the tree it was given
//! (checked by pid and start time just before each signal), this tool, or one of its
//! ancestors.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// How long the killed processes of a tree may take to go after SIGKILL (a CUDA process can
/// take seconds to release the device) before [`end_tree`] reports them left.
const GONE_WAIT: Duration = Duration::from_secs(10);
/// `CAP_SYS_PTRACE`'s bit in `CapEff`.
const CAP_SYS_PTRACE: u32 = 19;

/// A process as this module knows it: its pid and its start time (clock ticks since boot).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Proc {
    pub pid: u32,
    pub start: u64,
}

/// One line of `/proc/PID/stat`: (state, ppid, start time); COMM may hold spaces and
/// parentheses, so the fields are counted after its last `)`.
fn parse_stat(text: &str) -> Option<(char, u32, u64)> {
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let ppid = fields.get(1)?.parse().ok()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((state, ppid, start))
}

fn stat(pid: u32) -> Option<(char, u32, u64)> {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().and_then(|s| parse_stat(&s))
}

/// The live process `pid` (not a zombie), if there is one.
pub fn identity(pid: u32) -> Option<Proc> {
    match stat(pid)? {
        ('Z' | 'X' | 'x', _, _) => None,
        (_, _, start) => Some(Proc { pid, start }),
    }
}

/// Whether `p` is still the same live process (not exited, its pid not reused).
pub fn same(p: Proc) -> bool {
    identity(p.pid) == Some(p)
}

/// The state letter of `pid` in `/proc/PID/stat` (`R`, `S`, `T`, `t`, `Z`, ...).
pub fn state(pid: u32) -> Option<char> {
    stat(pid).map(|s| s.0)
}

/// Whether `pid` is this tool or one of its ancestors (its parent, the shell that started it,
/// ...): a tree rooted there holds the tool itself.
pub fn is_self_or_ancestor(pid: u32) -> bool {
    let mut at = std::process::id();
    for _ in 0..4096 {
        if at == pid {
            return true;
        }
        match stat(at) {
            Some((_, ppid, _)) if ppid != 0 && ppid != at => at = ppid,
            _ => return false,
        }
    }
    false
}

/// `root` and its live descendants (through `/proc`'s parent links), `root` first, then by
/// pid; empty when `root` is no longer the same process. This tool and its ancestors are
/// never in it.
pub fn tree(root: Proc) -> Vec<Proc> {
    if !same(root) || is_self_or_ancestor(root.pid) {
        return Vec::new();
    }
    let mut children: HashMap<u32, Vec<Proc>> = HashMap::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
            match stat(pid) {
                Some(('Z' | 'X' | 'x', _, _)) | None => {}
                Some((_, ppid, start)) => children.entry(ppid).or_default().push(Proc { pid, start }),
            }
        }
    }
    let me = std::process::id();
    let mut out = vec![root];
    let mut todo = vec![root.pid];
    while let Some(p) = todo.pop() {
        for c in children.get(&p).map(Vec::as_slice).unwrap_or_default() {
            // A child starts no earlier than its parent; an older one is a reused pid's.
            if c.pid != me && c.start >= root.start && !out.contains(c) {
                out.push(*c);
                todo.push(c.pid);
            }
        }
    }
    out[1..].sort();
    out
}

/// Whether a thread of `pid` is stopped: `T` (a stop signal, or a debugger gone while it was
/// stopped) or `t` (a tracer holds it).
pub fn stopped(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return matches!(state(pid), Some('T' | 't'));
    };
    tasks.flatten().any(|t| {
        std::fs::read_to_string(t.path().join("stat"))
            .ok()
            .and_then(|s| parse_stat(&s))
            .is_some_and(|(st, _, _)| matches!(st, 'T' | 't'))
    })
}

/// The pid of the process tracing `pid` (`TracerPid` in its status), if one does.
pub fn tracer(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    tracer_in(&status)
}

fn tracer_in(status: &str) -> Option<u32> {
    let t: u32 = status.lines().find_map(|l| l.strip_prefix("TracerPid:"))?.trim().parse().ok()?;
    (t != 0).then_some(t)
}

/// Sends `SIGCONT` to `p` when it is still the same process and stopped: a debugger that ended
/// (killed at its time limit, crashed) while the process was stopped leaves it so. Returns
/// whether it was sent.
pub fn resume(p: Proc) -> bool {
    if !same(p) || is_self_or_ancestor(p.pid) || !stopped(p.pid) {
        return false;
    }
    signal(p, Signal::SIGCONT)
}

fn signal(p: Proc, s: Signal) -> bool {
    if !same(p) || is_self_or_ancestor(p.pid) {
        return false;
    }
    let Ok(pid) = i32::try_from(p.pid) else { return false };
    kill(Pid::from_raw(pid), s).is_ok()
}

/// How the end of a tree went.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ended {
    /// Sent SIGTERM.
    pub termed: Vec<u32>,
    /// Still there after the grace: sent SIGKILL.
    pub killed: Vec<u32>,
    /// Still there [`GONE_WAIT`] after SIGKILL.
    pub left: Vec<u32>,
}

/// Ends the tree of `root` as it is now, with the processes of `known` that are still the
/// same (taken earlier: a descendant re-parented since is still ended): SIGTERM to each, up to
/// `grace` for all to go, then SIGKILL to what is left of them and of the tree (a process
/// started meanwhile too). Only those processes are signalled.
pub fn end_tree(root: Proc, known: &[Proc], grace: Duration) -> Ended {
    let members = |extra: &[Proc]| {
        let mut v = tree(root);
        for p in known.iter().chain(extra) {
            if !v.contains(p) && same(*p) && !is_self_or_ancestor(p.pid) {
                v.push(*p);
            }
        }
        v
    };
    let mut ended = Ended::default();
    let first = members(&[]);
    for p in &first {
        if signal(*p, Signal::SIGTERM) {
            ended.termed.push(p.pid);
        }
    }
    let until = Instant::now() + grace;
    while Instant::now() < until && first.iter().any(|p| same(*p)) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let rest: Vec<Proc> = members(&first).into_iter().filter(|p| same(*p)).collect();
    for p in &rest {
        if signal(*p, Signal::SIGKILL) {
            ended.killed.push(p.pid);
        }
    }
    let until = Instant::now() + GONE_WAIT;
    while Instant::now() < until && rest.iter().any(|p| same(*p)) {
        std::thread::sleep(Duration::from_millis(50));
    }
    ended.left = rest.iter().filter(|p| same(**p)).map(|p| p.pid).collect();
    ended
}

/// Why ptrace (py-spy, gdb, cuda-gdb) cannot reach the process `pid` owned by `uid` from here,
/// with what to do; `None` when it can, as far as `/proc` tells.
pub fn ptrace_denied(uid: u32) -> Option<String> {
    let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok());
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let cap = field(&status, "CapEff:").and_then(|c| u64::from_str_radix(c, 16).ok()).unwrap_or(0);
    denied_by(scope, cap & (1 << CAP_SYS_PTRACE) != 0, euid(), uid)
}

/// This tool's effective uid (`Uid:` in its status).
pub fn euid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    field(&status, "Uid:")?.split_whitespace().nth(1)?.parse().ok()
}

fn field<'s>(status: &'s str, name: &str) -> Option<&'s str> {
    status.lines().find_map(|l| l.strip_prefix(name)).map(str::trim)
}

fn denied_by(scope: Option<u32>, cap_ptrace: bool, euid: Option<u32>, uid: u32) -> Option<String> {
    const CONTAINER: &str = "in a container, start it with `--cap-add SYS_PTRACE` (Docker, Podman) \
                             and see that the process is in its PID namespace";
    match scope {
        Some(3) => {
            return Some(
                "`/proc/sys/kernel/yama/ptrace_scope` is 3: no process may attach to another until the next \
                 boot; reboot with a lower value (`kernel.yama.ptrace_scope` in /etc/sysctl.d)"
                    .to_string(),
            )
        }
        Some(2) if !cap_ptrace => {
            return Some(format!(
            "`/proc/sys/kernel/yama/ptrace_scope` is 2: only a process with CAP_SYS_PTRACE may attach; run \
                 as root (`sudo`), or {CONTAINER}"
        ))
        }
        _ => {}
    }
    if cap_ptrace {
        return None;
    }
    if euid.is_some_and(|e| e != uid) {
        return Some(format!(
            "the process belongs to uid {uid}, this tool runs as uid {}: run as that user or as root (`sudo`)",
            euid.unwrap_or_default()
        ));
    }
    if scope == Some(1) {
        return Some(format!(
            "`/proc/sys/kernel/yama/ptrace_scope` is 1: only a parent may attach to its child; run as root \
             (`sudo`), or `sudo sysctl kernel.yama.ptrace_scope=0` (until the next boot), or {CONTAINER}"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_are_read_past_odd_names() {
        let line = "4242 (a) b (c)) T 17 4242 4242 0 -1 4194560 99 0 0 0 1 2 0 0 20 0 1 0 123456 1 2";
        assert_eq!(parse_stat(line), Some(('T', 17, 123456)));
        assert_eq!(parse_stat("4242 (x"), None);
    }

    #[test]
    fn the_tool_is_its_own_ancestor_and_in_no_tree() {
        let me = identity(std::process::id()).unwrap();
        assert!(is_self_or_ancestor(me.pid));
        assert!(tree(me).is_empty());
        let parent = stat(me.pid).unwrap().1;
        assert!(is_self_or_ancestor(parent));
    }

    #[test]
    fn a_tree_holds_the_children_and_a_reused_pid_is_no_process() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id();
        let p = identity(pid).unwrap();
        assert!(same(p));
        assert_eq!(tree(p), vec![p]);
        assert!(!same(Proc { pid, start: p.start + 1 }));
        assert!(tree(Proc { pid, start: p.start + 1 }).is_empty());
        assert!(!stopped(pid));
        let ended = end_tree(p, &[], Duration::from_secs(5));
        let _ = child.wait();
        assert_eq!((ended.termed, ended.killed, ended.left), (vec![pid], vec![], vec![]));
    }

    #[test]
    fn tracers_are_read_from_the_status() {
        assert_eq!(tracer_in("Name:\tx\nTracerPid:\t0\n"), None);
        assert_eq!(tracer_in("Name:\tx\nTracerPid:\t812\n"), Some(812));
    }

    #[test]
    fn ptrace_rules_say_what_to_do() {
        assert_eq!(denied_by(Some(0), false, Some(1000), 1000), None);
        assert_eq!(denied_by(None, false, Some(1000), 1000), None);
        assert_eq!(denied_by(Some(1), true, Some(0), 1000), None);
        let one = denied_by(Some(1), false, Some(1000), 1000).unwrap();
        assert!(one.contains("ptrace_scope` is 1") && one.contains("--cap-add SYS_PTRACE"), "{one}");
        let other = denied_by(Some(0), false, Some(1000), 1001).unwrap();
        assert!(other.contains("uid 1001"), "{other}");
        assert!(denied_by(Some(2), false, Some(0), 0).unwrap().contains("CAP_SYS_PTRACE"));
        assert!(denied_by(Some(3), true, Some(0), 0).unwrap().contains("is 3"));
    }
}

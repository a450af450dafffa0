//! Triage across ranks: which rank of a distributed job faulted first, and what every other
//! rank merely saw. A [`RankParser`] notes, line by line, what the program, NCCL's watchdog,
//! the launcher and the coredump progress stream said about ranks ([`RankNote`]); [`triage`]
//! joins those notes with the faults and symptoms of every input (a rank from `[rankN]:`,
//! torchrun's `[defaultN]:`, `srun -l`'s `N: `, `RANK=` in an environment, or a pid that the
//! launcher's failure summary names) and names the culprit and the collateral ranks.
//!
//! The culprit is the rank with a device fault of its own (a coredump, cuda-gdb, memcheck),
//! the earliest by the coredump progress timestamps when several dumped; a rank that faulted
//! only in a communication kernel while shutting down is a likely false positive and loses to
//! one that faulted during the run. Without a located fault, the one rank that reported a
//! device error and no collective timeout. Every other rank is collateral, with the reason.
//!
//! Pure: reads [`Evidence`] values, returns values. No I/O, no printing.

// `[PG ID 0 PG GUID 0(default_pg) Rank 1]` -> 1, as the host parser reads it.
use super::host::infer_rank as rank_in;
use super::quick;
use std::collections::BTreeMap;

use serde::Serialize;

use super::{
    names, ErrorClass, Evidence, Fault, Frame, LineCtx, LineParser, RankNote, RankSignal as Signal, Symptom,
    Tool,
};

/// `HH:MM:SS.frac` at the start of `s` as nanoseconds since midnight.
fn clock(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() < 8 || b[2] != b':' || b[5] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<u64>().ok();
    let (h, m, sec) = (num(0..2)?, num(3..5)?, num(6..8)?);
    let mut nanos = 0u64;
    if b.get(8) == Some(&b'.') {
        let frac: String = s[9..].chars().take_while(char::is_ascii_digit).take(9).collect();
        nanos = format!("{frac:0<9}").parse().ok()?;
    }
    Some(((h * 60 + m) * 60 + sec) * 1_000_000_000 + nanos)
}

/// A clock as `HH:MM:SS.micro`.
pub fn clock_text(t: u64) -> String {
    let s = t / 1_000_000_000;
    format!("{:02}:{:02}:{:02}.{:06}", s / 3600, s / 60 % 60, s % 60, t % 1_000_000_000 / 1000)
}

/// The number after `key` up to a non-digit (`(pid: 886)` with key `pid: `).
fn number_after(s: &str, key: &str) -> Option<u32> {
    let rest = &s[s.find(key)? + key.len()..];
    let d: String = rest.chars().take_while(char::is_ascii_digit).collect();
    d.parse().ok()
}

/// The host in a dump's `%h.%p.%t` name (`core_vm.886.1796036328` -> `vm`).
fn host_from_dump(path: &str) -> Option<String> {
    let name = names::base_name(path.trim());
    let mut parts = name.rsplitn(3, '.');
    let (t, p, head) = (parts.next()?, parts.next()?, parts.next()?);
    if !t.bytes().all(|c| c.is_ascii_digit()) || !p.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let host =
        ["cuda_coredump_", "core_", "core."].iter().find_map(|pre| head.strip_prefix(pre)).unwrap_or(head);
    (!host.is_empty()).then(|| host.to_string())
}

/// The line parser of [`RankNote`]s.
#[derive(Default)]
pub struct RankParser {
    notes: Vec<RankNote>,
    /// Inside torchrun's failure summary; the entry being read; under `Root Cause`.
    in_summary: bool,
    entry: Option<RankNote>,
    root_cause: bool,
}

impl RankParser {
    fn push(&mut self, n: RankNote) {
        let dup = self.notes.iter().any(|o| o.rank == n.rank && o.signal == n.signal && o.text == n.text);
        if !dup {
            self.notes.push(n);
        }
    }

    fn close_entry(&mut self) {
        if let Some(e) = self.entry.take() {
            if e.rank.is_some() {
                self.notes.push(e);
            }
        }
    }

    fn summary_line(&mut self, t: &str, lineno: u64) {
        if t.starts_with("Root Cause") {
            self.close_entry();
            self.root_cause = true;
        } else if t.starts_with("=====") {
            self.close_entry();
            self.in_summary = false;
        } else if t.starts_with("-----") {
            self.close_entry();
        } else if t.starts_with('[') && t.ends_with("]:") {
            self.close_entry();
            self.entry = Some(RankNote {
                rank: None,
                signal: Signal::Exit,
                text: String::new(),
                pid: None,
                host: None,
                time: None,
                root_cause: self.root_cause,
                log_line: lineno,
            });
        } else if let (Some(e), Some((key, value))) = (self.entry.as_mut(), t.split_once(':')) {
            let value = value.trim();
            match key.trim() {
                "rank" => e.rank = value.split(' ').next().and_then(|r| r.parse().ok()),
                "host" => e.host = Some(value.to_string()),
                "exitcode" => {
                    e.pid = number_after(value, "pid: ");
                    let code = value.split(' ').next().unwrap_or_default();
                    e.text = if e.text.is_empty() {
                        format!("exit {code}")
                    } else {
                        format!("exit {code}; {}", e.text)
                    };
                }
                "traceback" if value.starts_with("Signal ") => {
                    e.text =
                        if e.text.is_empty() { value.to_string() } else { format!("{}; {value}", e.text) };
                }
                _ => {}
            }
        }
    }
}

/// The phrases a line is looked at for (the scanner searches each read for their needles,
/// `scan::PHRASES`, and most lines without one never get here), each searcher built once:
/// `str::split_once` with a string pattern builds its searcher on every call, which cost more
/// than half of `analyze`'s time on a memcheck log (issue 27).
struct Phrases {
    coredump: memchr::memmem::Finder<'static>,
    timeout: memchr::memmem::Finder<'static>,
    watchdog: memchr::memmem::Finder<'static>,
    down: memchr::memmem::Finder<'static>,
}

/// The texts of [`Phrases`], in its order: the scanner searches every line for them
/// ([`LineParser::wants`]).
pub(super) const PHRASES: [&str; 4] = [
    "] coredump: ",
    "Watchdog caught collective operation timeout: ",
    "Process group watchdog thread terminated with exception: ",
    "we are taking the entire process down",
];

static FINDERS: std::sync::LazyLock<Phrases> = std::sync::LazyLock::new(|| Phrases {
    coredump: memchr::memmem::Finder::new(PHRASES[0]),
    timeout: memchr::memmem::Finder::new(PHRASES[1]),
    watchdog: memchr::memmem::Finder::new(PHRASES[2]),
    down: memchr::memmem::Finder::new(PHRASES[3]),
});

/// What follows the first `f` in `t`.
fn after<'a>(t: &'a str, f: &memchr::memmem::Finder<'_>) -> Option<&'a str> {
    f.find(t.as_bytes()).map(|i| &t[i + f.needle().len()..])
}

impl LineParser for RankParser {
    /// Inside torchrun's failure summary; a line with one of [`PHRASES`]; else a line that
    /// starts as the placement line, srun's error or a rank variable does, or ends as the
    /// summary's first line does.
    #[inline]
    fn wants(&self, line: &str, phrase_free: bool) -> bool {
        if self.in_summary || !phrase_free {
            return true;
        }
        let t = quick::trim(line);
        matches!(t.as_bytes().first(), Some(b'd' | b's' | b'R' | b'L' | b'S'))
            || t.ends_with(" FAILED")
            || t == "Failures:"
    }

    fn line(&mut self, line: &str, ctx: LineCtx) {
        let t = quick::trim(line);
        if self.in_summary {
            self.summary_line(t, ctx.lineno);
            return;
        }
        if t.ends_with(" FAILED") || t == "Failures:" {
            self.in_summary = true;
            self.root_cause = false;
            return;
        }
        // `[HH:MM:SS.micro] coredump: ...` and NCCL's `[E1130 01:10:11.502886129 FILE:LINE] ...`.
        let stamp = t.strip_prefix('[').and_then(|r| {
            let r = r
                .strip_prefix(|c: char| c.is_ascii_uppercase())
                .map(|r| r.split_once(' ').map_or(r, |x| x.1))
                .unwrap_or(r);
            clock(r)
        });
        let note = |signal, text: &str, rank: Option<u32>| RankNote {
            rank,
            signal,
            text: text.trim().to_string(),
            pid: None,
            host: None,
            time: stamp,
            root_cause: false,
            log_line: ctx.lineno,
        };
        let phrases = &*FINDERS;
        if let Some(body) = after(t, &phrases.coredump).map(str::trim) {
            if let Some(kind) = body.strip_prefix("Detected an exception of type ") {
                self.push(note(Signal::DeviceException, kind, ctx.rank));
            } else if let Some(path) = body.strip_prefix("Writing ELF file to ") {
                let pid = super::coredump::pid_from_dump_path(path);
                if let Some(n) =
                    self.notes.iter_mut().rev().find(|n| {
                        n.signal == Signal::DeviceException && n.rank == ctx.rank && n.pid.is_none()
                    })
                {
                    n.pid = pid;
                    n.host = host_from_dump(path);
                }
            }
        } else if let Some(work) = after(t, &phrases.timeout) {
            let work = work.split(" ran for ").next().unwrap_or(work);
            self.push(note(Signal::Timeout, work, ctx.rank.or_else(|| rank_in(t))));
        } else if let Some(what) = after(t, &phrases.watchdog) {
            self.push(note(Signal::WatchdogError, what, ctx.rank.or_else(|| rank_in(t))));
        } else if phrases.down.find(t.as_bytes()).is_some() {
            self.push(note(
                Signal::Terminate,
                "ProcessGroupNCCL took the process down",
                ctx.rank.or_else(|| rank_in(t)),
            ));
        } else if let Some((task, node)) = placement(t) {
            // The Slurm launcher's placement line: this task (rank) runs on that node.
            let mut n = note(Signal::Env, t, Some(task));
            n.time = None;
            n.host = Some(node.to_string());
            self.push(n);
        } else if let Some((node, task, what)) = srun_error(t) {
            // srun's own word on a task that ended badly: `srun: error: node2: task 1: Aborted`.
            let signal = match what {
                "Killed" => " (SIGKILL)",
                "Terminated" => " (SIGTERM)",
                _ => "",
            };
            let mut n = note(Signal::Exit, &format!("srun: task {task} {what}{signal}"), Some(task));
            n.time = None;
            n.host = Some(node.to_string());
            self.push(n);
        } else if let Some(v) =
            ["RANK=", "LOCAL_RANK=", "SLURM_PROCID="].iter().find_map(|k| t.strip_prefix(k))
        {
            if let Ok(r) = v.parse::<u32>() {
                let mut n = note(Signal::Env, t, Some(r));
                n.time = None;
                self.push(n);
            }
        }
    }

    fn finish(&mut self, ev: &mut Evidence) {
        self.close_entry();
        ev.rank_notes.append(&mut self.notes);
    }
}

/// A launcher's placement line, its label stripped: `debug-ima: task 1 on node node2 pid 42`.
fn placement(t: &str) -> Option<(u32, String)> {
    crate::model::launcher::placed(t.trim_end()).map(|p| (p.task, p.node))
}

/// `srun: error: NODE: task N: WHAT` (`Aborted`, `Killed`, `Exited with exit code 1`).
fn srun_error(t: &str) -> Option<(&str, u32, &str)> {
    let rest = t.strip_prefix("srun: error: ")?;
    let (node, rest) = rest.split_once(": task ")?;
    let (task, what) = rest.split_once(": ")?;
    Some((node, task.parse().ok()?, what.trim()))
}

/// A kernel of inter-GPU communication: NCCL's, a custom all-reduce (vLLM's `cross_device`).
pub fn is_communication_kernel(kernel: &str) -> bool {
    let k = kernel.to_ascii_lowercase();
    ["nccl", "all_reduce", "allreduce", "all_gather", "allgather", "reduce_scatter", "cross_device"]
        .iter()
        .any(|m| k.contains(m))
}

/// A traceback frame of the program's shutdown path (`destroy_process_group`, `shutdown`,
/// `__del__`, `atexit`'s `_exit_function`, `_run_finalizers`).
pub fn in_shutdown_path(f: &Frame) -> bool {
    f.function.as_deref().is_some_and(|n| {
        matches!(n, "destroy_process_group" | "shutdown" | "__del__" | "_exit_function" | "_run_finalizers")
            || n.ends_with(".shutdown")
    })
}

/// One rank in the triage.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RankEntry {
    pub rank: u32,
    /// The host name, where a tool named it (the wait message, the dump's name, the launcher).
    pub node: Option<String>,
    pub device: Option<u32>,
    pub pid: Option<u32>,
    /// For the culprit: its kernel and error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorClass>,
    /// Why this rank is the culprit, or what it merely saw.
    pub reason: String,
    /// It faulted only in a communication kernel while shutting down: likely a false positive.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shutdown_false_positive: bool,
    /// Where the node came from: `INPUT:LINE` of the line that named it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_from: Option<String>,
    /// Where the reason came from: `INPUT:LINE` of each line it rests on, or the input of each
    /// tool's finding (`coredump/cudagdb-1`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reason_from: Vec<String>,
}

/// Which rank faulted first, and every other rank with what it saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RankTriage {
    pub culprit: RankEntry,
    pub collateral: Vec<RankEntry>,
}

/// What the verdict already established, for the culprit's entry.
pub struct Established<'a> {
    pub kernel: &'a str,
    pub error: &'a ErrorClass,
    pub rank: Option<u32>,
    pub pid: Option<u32>,
    pub device: Option<u32>,
}

/// Everything seen of one rank.
#[derive(Default)]
struct Seen<'a> {
    faults: Vec<&'a Fault>,
    /// The input of each fault, in the same order.
    fault_from: Vec<&'a str>,
    notes: Vec<(&'a str, &'a RankNote)>,
    symptoms: Vec<(&'a str, &'a Symptom)>,
}

impl Seen<'_> {
    fn first(&self, s: Signal) -> Option<&RankNote> {
        self.notes.iter().map(|n| n.1).find(|n| n.signal == s)
    }
    /// `INPUT:LINE` of a note of this rank (found by identity).
    fn at(&self, note: &RankNote) -> Option<String> {
        self.notes.iter().find(|(_, n)| std::ptr::eq(*n, note)).map(|(o, n)| format!("{o}:{}", n.log_line))
    }
    /// The inputs of the rank's faults, each once, in order.
    fn fault_inputs(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for o in &self.fault_from {
            if !out.iter().any(|x| x == o) {
                out.push(o.to_string());
            }
        }
        out
    }
    /// The placement line's node (Slurm's name for it) and where it was said.
    fn placed(&self) -> Option<(String, String)> {
        let (o, n) = self.notes.iter().find(|n| n.1.signal == Signal::Env && n.1.host.is_some())?;
        Some((n.host.clone()?, format!("{o}:{}", n.log_line)))
    }
    /// The first note naming a host other than `localhost`, and where it was said.
    fn hosted(&self) -> Option<(String, String)> {
        let (o, n) = self.notes.iter().find(|n| n.1.host.as_deref().is_some_and(|h| h != "localhost"))?;
        Some((n.host.clone()?, format!("{o}:{}", n.log_line)))
    }
    fn exception_time(&self) -> Option<u64> {
        self.notes.iter().filter(|n| n.1.signal == Signal::DeviceException).filter_map(|n| n.1.time).min()
    }
    fn own_fault(&self) -> bool {
        !self.faults.is_empty() || self.first(Signal::DeviceException).is_some()
    }
    /// Faulted only in communication kernels, and reported it from the shutdown path.
    fn shutdown_only(&self) -> bool {
        !self.faults.is_empty()
            && self.faults.iter().all(|f| f.kernel.as_deref().is_some_and(is_communication_kernel))
            && self.symptoms.iter().any(|s| s.1.python_frames.iter().any(in_shutdown_path))
    }
    fn device_symptom(&self) -> Option<&Symptom> {
        self.symptoms.iter().map(|s| s.1).find(|s| s.error.as_ref().is_some_and(ErrorClass::is_device_fault))
    }

    /// What was seen in one run (`rung`), where anything was; else everything.
    fn in_run(&self, run: Option<&str>) -> Seen<'_> {
        let Some(run) = run else {
            return Seen {
                faults: self.faults.clone(),
                fault_from: self.fault_from.clone(),
                notes: self.notes.clone(),
                symptoms: self.symptoms.clone(),
            };
        };
        let notes: Vec<_> = self.notes.iter().copied().filter(|(o, _)| names::rung_of(o) == run).collect();
        let symptoms: Vec<_> =
            self.symptoms.iter().copied().filter(|(o, _)| names::rung_of(o) == run).collect();
        if notes.is_empty() && symptoms.is_empty() {
            return self.in_run(None);
        }
        Seen { faults: self.faults.clone(), fault_from: self.fault_from.clone(), notes, symptoms }
    }
}

/// Whether an input is a tool's own step in a rung (`attach/cudagdb-1`, `coredump/cpucore-gdb`),
/// not the target's output (`attach`, a rung's `ranks/` logs, a file given to `analyze`).
fn is_tool_step(origin: &str) -> bool {
    origin.split_once('/').is_some_and(|(_, rest)| !rest.starts_with("ranks/"))
}

/// The triage, when the inputs show two ranks or more and one of them can be named the culprit.
pub fn triage(inputs: &[Evidence], v: &Established) -> Option<RankTriage> {
    // The launcher's summary names each rank's pid (per run: pids differ between rungs).
    let mut pid_rank: BTreeMap<u32, Option<u32>> = BTreeMap::new();
    for n in inputs.iter().flat_map(|e| &e.rank_notes).filter(|n| n.signal == Signal::Exit) {
        if let (Some(p), Some(r)) = (n.pid, n.rank) {
            let slot = pid_rank.entry(p).or_insert(Some(r));
            if *slot != Some(r) {
                *slot = None;
            }
        }
    }
    let by_pid = |p: Option<u32>| p.and_then(|p| pid_rank.get(&p).copied().flatten());
    let mut seen: BTreeMap<u32, Seen> = BTreeMap::new();
    for ev in inputs {
        // Only the job's own output speaks of its tasks: a tool's step (cuda-gdb attached
        // through `srun --overlap`, a dump read) is one task of its own, and srun's word on it
        // (`srun: error: node2: task 0: Aborted`) is about that step, not rank 0 of the job.
        let tool_step = is_tool_step(&ev.origin);
        let notes = || ev.rank_notes.iter().filter(move |_| !tool_step);
        let mut env: Vec<u32> = notes().filter(|n| n.signal == Signal::Env).filter_map(|n| n.rank).collect();
        env.dedup();
        let file_rank = (env.len() == 1).then(|| env[0]);
        for f in &ev.faults {
            if let Some(r) = f.rank.or_else(|| by_pid(f.pid)).or(file_rank) {
                let e = seen.entry(r).or_default();
                e.faults.push(f);
                e.fault_from.push(&ev.origin);
            }
        }
        for n in notes() {
            // A placement line (`debug-ima: task 0 on node node1`) says the rank ran, and where.
            let placed = n.signal == Signal::Env && n.host.is_some();
            if n.signal == Signal::Env && !placed {
                continue;
            }
            if let Some(r) = n.rank.or_else(|| by_pid(n.pid)).or(file_rank) {
                seen.entry(r).or_default().notes.push((&ev.origin, n));
            }
        }
        for s in &ev.symptoms {
            if let Some(r) = s.rank.or(file_rank) {
                seen.entry(r).or_default().symptoms.push((&ev.origin, s));
            }
        }
    }
    if seen.len() < 2 {
        return None;
    }
    // The culprit: a device fault of its own (not only at shutdown), the earliest dump first,
    // then the verdict's rank; else the one rank that reported a device error and no timeout.
    let mut own: Vec<(&u32, &Seen)> = seen.iter().filter(|(_, s)| s.own_fault()).collect();
    own.sort_by_key(|(r, s)| {
        (s.shutdown_only(), s.exception_time().unwrap_or(u64::MAX), v.rank != Some(**r), **r)
    });
    let culprit = match own.first() {
        Some((r, _)) => **r,
        None => {
            let mut hosts: Vec<(&u32, &Seen)> = seen
                .iter()
                .filter(|(_, s)| s.first(Signal::Timeout).is_none())
                .filter(|(_, s)| {
                    s.device_symptom().is_some()
                        || s.first(Signal::WatchdogError)
                            .is_some_and(|n| ErrorClass::from_message(&n.text).is_device_fault())
                })
                .collect();
            hosts.sort_by_key(|(r, s)| {
                let t = s.notes.iter().filter_map(|n| n.1.time).min().unwrap_or(u64::MAX);
                (t, !s.notes.iter().any(|n| n.1.root_cause), **r)
            });
            *hosts.first()?.0
        }
    };
    let c = &seen[&culprit];
    let verdict_kernel = names::kernel_key(v.kernel);
    let matches_verdict = |f: &&Fault| {
        f.kernel.as_deref().is_some_and(|k| {
            let key = names::kernel_key(k);
            key == verdict_kernel || key.ends_with(&verdict_kernel) || verdict_kernel.ends_with(&key)
        })
    };
    let on_verdict = c.faults.iter().any(matches_verdict) || (c.faults.is_empty() && v.rank == Some(culprit));
    let exception =
        c.notes.iter().map(|n| n.1).filter(|n| n.signal == Signal::DeviceException).min_by_key(|n| n.time);
    let pid = (v.rank == Some(culprit))
        .then_some(v.pid)
        .flatten()
        .or_else(|| exception.and_then(|n| n.pid))
        .or_else(|| c.faults.iter().find_map(|f| f.pid));
    // The run the culprit's pid belongs to: the other ranks' pids are taken from the same run.
    let culprit_run = pid.and_then(|p| {
        seen.values()
            .flat_map(|s| &s.notes)
            .find(|(_, n)| n.pid == Some(p))
            .map(|(o, _)| names::rung_of(o).to_string())
    });
    let waits_host = {
        let mut hosts: Vec<(&str, Option<u32>)> = Vec::new();
        for ev in inputs {
            for w in &ev.waits {
                hosts.push((&w.host, by_pid(Some(w.pid))));
            }
        }
        let mine = hosts.iter().find(|(_, r)| *r == Some(culprit)).map(|(h, _)| h.to_string());
        let one =
            hosts.iter().all(|(h, r)| *h == hosts[0].0 && r.is_none_or(|r| r == culprit)) && own.len() == 1;
        mine.or_else(|| (one && !hosts.is_empty()).then(|| hosts[0].0.to_string()))
    };
    // The launcher's placement names the node as the job knows it (Slurm's node name); a dump's
    // file name has the machine's own host name.
    let exception_host = exception.and_then(|n| Some((n.host.clone()?, c.at(n)?)));
    let waits_host = waits_host.map(|h| (h, "the wait message cuda-gdb attached on".to_string()));
    let (node, node_from) = c.placed().or(exception_host).or(waits_host).or_else(|| c.hosted()).unzip();
    let device = if on_verdict { v.device } else { None }.or_else(|| c.faults.iter().find_map(|f| f.device));
    let (kernel, error) = if on_verdict {
        (Some(v.kernel.to_string()), Some(v.error.clone()))
    } else {
        let f = c.faults.iter().find(|f| f.kernel.is_some());
        (f.and_then(|f| f.kernel.as_deref()).map(names::display_kernel), f.and_then(|f| f.error.clone()))
    };
    let what = match (&error, &kernel) {
        (Some(e), Some(k)) => format!("{} in {k}", e.as_str()),
        (None, Some(k)) => format!("a fault in {k}"),
        _ => "a device error".to_string(),
    };
    let reason_from: Vec<String> = if c.own_fault() {
        match exception.and_then(|n| c.at(n)) {
            Some(at) => vec![at],
            None => c.fault_inputs(),
        }
    } else {
        c.symptoms
            .iter()
            .find(|(_, sy)| sy.error.as_ref().is_some_and(ErrorClass::is_device_fault))
            .map(|(o, _)| o.to_string())
            .or_else(|| c.first(Signal::WatchdogError).and_then(|n| c.at(n)))
            .into_iter()
            .collect()
    };
    let mut reason = if c.own_fault() {
        match exception {
            Some(n) => format!(
                "faulted on its own device: {what} ({}{})",
                n.text,
                n.time.map(|t| format!(" at {}", clock_text(t))).unwrap_or_default()
            ),
            None => {
                let mut tools: Vec<&str> = c.faults.iter().filter_map(|f| f.tool).map(Tool::as_str).collect();
                tools.dedup();
                format!("faulted on its own device: {what} ({})", tools.join(", "))
            }
        }
    } else {
        let said = c
            .device_symptom()
            .map(|s| s.message.clone())
            .or_else(|| c.first(Signal::WatchdogError).map(|n| n.text.clone()));
        format!("reported a device error with no collective timeout of its own: {}", said.unwrap_or_default())
    };
    let shutdown = c.shutdown_only();
    if shutdown {
        reason.push_str("; only while shutting down: likely a false positive (peer memory already unmapped)");
    }
    let culprit_entry = RankEntry {
        rank: culprit,
        node,
        device,
        pid,
        kernel,
        error,
        reason,
        shutdown_false_positive: shutdown,
        node_from,
        reason_from,
    };

    let culprit_time = c.exception_time();
    let mut collateral = Vec::new();
    for (&r, all) in seen.iter().filter(|(r, _)| **r != culprit) {
        let s = &all.in_run(culprit_run.as_deref());
        let exit = s
            .notes
            .iter()
            .filter(|(_, n)| n.signal == Signal::Exit)
            .find(|(o, _)| culprit_run.as_deref().is_none_or(|run| names::rung_of(o) == run))
            .or_else(|| s.notes.iter().find(|(_, n)| n.signal == Signal::Exit))
            .map(|n| n.1);
        let dumped =
            s.notes.iter().map(|n| n.1).find(|n| n.signal == Signal::DeviceException && n.pid.is_some());
        let shutdown = s.shutdown_only();
        // Each reason with the lines it rests on.
        let one = |n: &RankNote| s.at(n).into_iter().collect::<Vec<_>>();
        let (reason, reason_from) = if shutdown {
            let k = s
                .faults
                .iter()
                .find_map(|f| f.kernel.as_deref())
                .map(names::display_kernel)
                .unwrap_or_default();
            (
                format!("faulted only while shutting down, in {k}: likely a false positive (peer memory already unmapped)"),
                s.fault_inputs(),
            )
        } else if s.own_fault() {
            let from = match s.notes.iter().find(|n| n.1.signal == Signal::DeviceException) {
                Some((_, n)) => one(n),
                None => s.fault_inputs(),
            };
            let reason = match (s.exception_time(), culprit_time) {
                (Some(t), Some(ct)) => format!(
                    "faulted too, later ({} after rank {culprit}'s {})",
                    clock_text(t),
                    clock_text(ct)
                ),
                _ => format!("faulted too (rank {culprit} is named first)"),
            };
            (reason, from)
        } else if let Some(n) = s.first(Signal::WatchdogError).filter(|n| !n.text.contains("timeout")) {
            (format!("NCCL watchdog saw rank {culprit}'s failure ({})", n.text), one(n))
        } else if let Some((o, sy)) =
            s.symptoms.iter().find(|(_, sy)| sy.error.as_ref().is_some_and(ErrorClass::is_device_fault))
        {
            (
                format!(
                    "reported `{}` with no fault of its own: rank {culprit}'s failure reached it",
                    sy.message
                ),
                vec![o.to_string()],
            )
        } else if let Some(n) = s.first(Signal::Timeout) {
            (format!("NCCL watchdog timed out in {} waiting for rank {culprit}", n.text), one(n))
        } else if let Some(n) = s.first(Signal::Terminate) {
            (format!("ProcessGroupNCCL took the process down after rank {culprit}'s failure"), one(n))
        } else if let Some(n) = exit.filter(|n| n.text.contains("SIGTERM") || n.text.contains("SIGKILL")) {
            (format!("stopped by the launcher after rank {culprit} failed ({})", n.text), one(n))
        } else if let Some(n) = exit {
            (format!("exited after rank {culprit} failed ({})", n.text), one(n))
        } else {
            ("no fault of its own seen".to_string(), Vec::new())
        };
        let dumped_host = dumped.and_then(|n| Some((n.host.clone()?, s.at(n)?)));
        let (node, node_from) = s.placed().or(dumped_host).or_else(|| s.hosted()).unzip();
        collateral.push(RankEntry {
            rank: r,
            node,
            device: s.faults.iter().find_map(|f| f.device),
            pid: dumped
                .and_then(|n| n.pid)
                .or_else(|| exit.and_then(|n| n.pid))
                .or_else(|| s.faults.iter().find_map(|f| f.pid)),
            kernel: None,
            error: None,
            reason,
            shutdown_false_positive: shutdown,
            node_from,
            reason_from,
        });
    }
    Some(RankTriage { culprit: culprit_entry, collateral })
}

/// A rank as one line: `rank 1 (device 1, pid 886 on vm)`.
pub fn entry_head(e: &RankEntry) -> String {
    let mut parts = Vec::new();
    if let Some(d) = e.device {
        parts.push(format!("device {d}"));
    }
    match (e.pid, &e.node) {
        (Some(p), Some(n)) => parts.push(format!("pid {p} on {n}")),
        (Some(p), None) => parts.push(format!("pid {p}")),
        (None, Some(n)) => parts.push(format!("on {n}")),
        (None, None) => {}
    }
    if parts.is_empty() {
        format!("rank {}", e.rank)
    } else {
        format!("rank {} ({})", e.rank, parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::{scan::scan_str, verdict::decide};

    /// The triage of the analysis of `inputs`.
    fn triaged(inputs: &[Evidence]) -> RankTriage {
        let a = decide(inputs);
        a.verdict.expect("a verdict").ranks.expect("a triage")
    }

    #[test]
    fn slurm_placement_and_srun_errors_name_ranks_and_nodes() {
        // As srun printed them on CI's one-host cluster (tests/it/slurm.rs).
        assert_eq!(placement("debug-ima: task 1 on node node2"), Some((1, "node2".into())));
        assert_eq!(placement("debug-ima: task x on node node2"), None);
        assert_eq!(srun_error("srun: error: node2: task 1: Aborted"), Some(("node2", 1, "Aborted")));
        assert_eq!(
            srun_error("srun: error: node1: task 0: Exited with exit code 1"),
            Some(("node1", 0, "Exited with exit code 1"))
        );
        assert_eq!(srun_error("srun: error: Unable to allocate resources"), None);
        let text = "1: debug-ima: task 1 on node node2\n0: debug-ima: task 0 on node node1\n\
                    0: clean run finished\n1: launched scale_write\nsrun: error: node1: task 0: Killed\n";
        let ev = scan_str(text, "stderr.log");
        let env: Vec<_> = ev
            .rank_notes
            .iter()
            .filter(|n| n.signal == Signal::Env)
            .map(|n| (n.rank, n.host.clone()))
            .collect();
        assert_eq!(env, [(Some(1), Some("node2".into())), (Some(0), Some("node1".into()))]);
        let exit = ev.rank_notes.iter().find(|n| n.signal == Signal::Exit).unwrap();
        assert_eq!((exit.rank, exit.text.as_str()), (Some(0), "srun: task 0 Killed (SIGKILL)"));
    }

    /// Every line of `text` as `srun -l` prints a task's output under the Slurm launcher:
    /// `N: LINE`, after the placement line each task prints before its program starts.
    fn labelled(task: u32, lines: impl Iterator<Item = &'static str>) -> String {
        let placed = format!("{task}: debug-ima: task {task} on node node{}\n", task + 1);
        std::iter::once(placed).chain(lines.map(|l| format!("{task}: {l}\n"))).collect()
    }

    #[test]
    fn the_recorded_two_gpu_job_names_rank_1_and_rank_0_was_stopped_by_torchrun() {
        // The wait message names PID 833 on `vm`; torchrun's summary says PID 833 is rank 1;
        // cuda-gdb attached to it saw the exception on device 1.
        let t = triaged(&[
            scan_str(recording!("h200/dist_two_gpu/85_dist_waits.log"), "85_dist_waits"),
            scan_str(recording!("h200/dist_two_gpu/86_dist_attach.log"), "86_dist_attach"),
        ]);
        let c = &t.culprit;
        assert_eq!((c.rank, c.device, c.pid, c.node.as_deref()), (1, Some(1), Some(833), Some("vm")));
        assert_eq!(c.error, Some(ErrorClass::IllegalAddress));
        assert!(c.kernel.as_deref().is_some_and(|k| k.contains("FillFunctor")), "{c:?}");
        assert_eq!(t.collateral.len(), 1);
        let r0 = &t.collateral[0];
        assert_eq!((r0.rank, r0.pid), (0, Some(832)));
        assert!(r0.reason.starts_with("stopped by the launcher after rank 1 failed"), "{}", r0.reason);
        assert!(r0.reason.contains("SIGTERM"), "{}", r0.reason);
    }

    #[test]
    fn the_recorded_notes_of_the_watchdog_and_the_summary() {
        let ev = scan_str(recording!("h200/dist_two_gpu/81_dist_plain.log"), "81_dist_plain");
        let watchdog: Vec<_> = ev.rank_notes.iter().filter(|n| n.signal == Signal::WatchdogError).collect();
        assert_eq!(watchdog.len(), 1, "the `what():` copy is the same note: {watchdog:?}");
        assert_eq!(
            (watchdog[0].rank, watchdog[0].text.as_str()),
            (Some(1), "CUDA error: unspecified launch failure")
        );
        assert_eq!(watchdog[0].time.map(clock_text).as_deref(), Some("01:10:11.502886"));
        let exits: Vec<_> = ev
            .rank_notes
            .iter()
            .filter(|n| n.signal == Signal::Exit)
            .map(|n| (n.rank, n.pid, n.root_cause, n.host.as_deref()))
            .collect();
        assert_eq!(
            exits,
            [(Some(0), Some(614), false, Some("localhost")), (Some(1), Some(615), true, Some("localhost"))]
        );
        // No tool located the kernel: no verdict, but the host says which rank failed.
        let v = Established {
            kernel: "",
            error: &ErrorClass::Other("unknown".into()),
            rank: None,
            pid: None,
            device: None,
        };
        let t = triage(&[ev], &v).expect("two ranks");
        assert_eq!(t.culprit.rank, 1);
        assert!(t.culprit.reason.contains("unspecified launch failure"), "{}", t.culprit.reason);
        assert_eq!((t.collateral[0].rank, t.collateral[0].pid), (0, Some(614)));
    }

    #[test]
    fn two_ranks_timing_out_name_no_culprit_whatever_the_launcher_calls_the_root_cause() {
        // Under memcheck NCCL's kernels did not load: both watchdogs timed out, and torchrun's
        // "Root Cause" is rank 0, which only timed out.
        let ev = scan_str(recording!("h200/dist_two_gpu/87_dist_memcheck.log"), "87_dist_memcheck");
        let timeouts: Vec<_> = ev
            .rank_notes
            .iter()
            .filter(|n| n.signal == Signal::Timeout)
            .map(|n| (n.rank, n.text.as_str()))
            .collect();
        let work = "WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, Timeout(ms)=30000)";
        assert_eq!(timeouts, [(Some(1), work), (Some(0), work)]);
        assert!(ev.rank_notes.iter().any(|n| n.signal == Signal::Terminate && n.rank == Some(0)));
        let v = Established {
            kernel: "",
            error: &ErrorClass::Other("unknown".into()),
            rank: None,
            pid: None,
            device: None,
        };
        assert_eq!(triage(&[ev], &v), None);
    }

    #[test]
    fn the_dist_fault_bundle_names_rank_1_on_device_1() {
        let t = triaged(&[
            scan_str(recording!("bundles/dist_fault-full/rungs/01-baseline/stderr.log"), "baseline"),
            scan_str(recording!("bundles/dist_fault-full/rungs/03-coredump/stderr.log"), "coredump"),
        ]);
        let c = &t.culprit;
        assert_eq!((c.rank, c.device, c.pid, c.node.as_deref()), (1, Some(1), Some(886), Some("vm")));
        assert!(
            c.reason.contains("CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS (14) at 10:58:51.169004"),
            "{}",
            c.reason
        );
        // Rank 0's pid is the one of the culprit's run (885), not the baseline's (715).
        assert_eq!((t.collateral[0].rank, t.collateral[0].pid), (0, Some(885)));
    }

    #[test]
    fn srun_labels_are_ranks() {
        // `srun -l` output: rank 1's coredump progress stream as recorded in the dist_fault
        // bundle, rank 0's watchdog lines as recorded under memcheck, each line labelled with
        // its task id as srun does (the `[rank0]:` prefix replaced by the label).
        let dump = recording!("bundles/dist_fault-full/rungs/03-coredump/stderr.log");
        let watchdog = recording!("h200/dist_two_gpu/87_dist_memcheck.log");
        let mut text = labelled(0, watchdog.lines().filter_map(|l| l.strip_prefix("[rank0]:")));
        text.push_str(&labelled(1, dump.lines().filter(|l| l.contains("] coredump: "))));
        let ev = scan_str(&text, "srun.log");
        assert!(ev.faults.iter().all(|f| f.rank == Some(1)), "{:?}", ev.faults);
        let t = triaged(&[ev]);
        let c = &t.culprit;
        // The node srun placed task 1 on, not the dump's host name (`vm`).
        assert_eq!((c.rank, c.device, c.pid, c.node.as_deref()), (1, Some(1), Some(886), Some("node2")));
        assert_eq!(c.kernel.as_deref(), Some("gather_kv_kernel"));
        let r0 = &t.collateral[0];
        assert_eq!((r0.rank, r0.node.as_deref()), (0, Some("node1")));
        assert!(
            r0.reason.starts_with("NCCL watchdog timed out in WorkNCCL(SeqNum=2, OpType=ALLREDUCE"),
            "{}",
            r0.reason
        );
        assert!(r0.reason.ends_with("waiting for rank 1"), "{}", r0.reason);
    }

    #[test]
    fn when_two_ranks_dumped_the_earlier_dump_is_the_culprit() {
        // Two recorded coredump progress streams labelled as two srun tasks: task 0's (a
        // shared-memory fault, dumped at 12:49:26) comes first in the file, task 1's (dumped
        // at 10:58:51) is the earlier by the clock.
        let late = recording!("h200/shared_atomic/merged.log");
        let early = recording!("bundles/dist_fault-full/rungs/03-coredump/stderr.log");
        let mut text = labelled(0, late.lines().filter(|l| l.contains("] coredump: ")));
        text.push_str(&labelled(1, early.lines().filter(|l| l.contains("] coredump: "))));
        let a = decide(&[scan_str(&text, "srun.log")]);
        let v = a.verdict.expect("a verdict");
        let t = v.ranks.as_ref().expect("a triage");
        assert_eq!((t.culprit.rank, t.culprit.device, t.culprit.pid), (1, Some(1), Some(886)));
        assert_eq!(t.culprit.kernel.as_deref(), Some("gather_kv_kernel"));
        let r0 = &t.collateral[0];
        assert_eq!((r0.rank, r0.pid), (0, Some(4196)));
        assert_eq!(r0.reason, "faulted too, later (12:49:26.611975 after rank 1's 10:58:51.169004)");
        if !v.kernel.contains("gather_kv_kernel") {
            assert!(v.remarks.iter().any(|r| r.contains("rank 1 faulted first")), "{:?}", v.remarks);
        }
    }

    /// The CI cluster's two-rank job, as its bundle holds it: the target's labelled output
    /// (both placement lines, rank 1's fault, rank 0's clean end) and the attach step's log, where
    /// srun reported the tool's own single task (`task 0`) ending. Rank 0 is collateral on
    /// node1 with no fault of its own, never "exited after rank 1 failed (srun: task 0
    /// Aborted)"; without its placement line nothing of the job names rank 0 and there is no
    /// triage (one rank), rather than a wrong one.
    #[test]
    fn srun_s_word_on_a_tool_step_is_not_a_rank_of_the_job() {
        let dump = recording!("bundles/dist_fault-full/rungs/03-coredump/stderr.log");
        let mut target = labelled(1, dump.lines().filter(|l| l.contains("] coredump: ")));
        target.push_str("0: debug-ima: task 0 on node node1\n0: clean run finished\n");
        let step = "srun: error: node2: task 0: Aborted\n";
        // Origins as a bundle's inputs name them: the rung, and the rung's step.
        let at = |text: &str, origin: &str| Evidence { origin: origin.into(), ..scan_str(text, "log") };
        let t = triaged(&[at(&target, "attach"), at(step, "attach/cudagdb-1")]);
        // Its node as Slurm placed it (the dump's file name says the machine's `vm`).
        assert_eq!((t.culprit.rank, t.culprit.node.as_deref()), (1, Some("node2")));
        assert_eq!(t.collateral.len(), 1);
        let r0 = &t.collateral[0];
        assert_eq!((r0.rank, r0.node.as_deref()), (0, Some("node1")), "{r0:?}");
        assert_eq!(r0.reason, "no fault of its own seen");
        // Every claim names its line: the placement lines, the dump's exception line.
        let lines = target.lines().count();
        assert_eq!(r0.node_from.as_deref(), Some(format!("attach:{}", lines - 1).as_str()), "{r0:?}");
        assert!(r0.reason_from.is_empty());
        assert_eq!(t.culprit.node_from.as_deref(), Some("attach:1"));
        let exception_line = target.lines().position(|l| l.contains("Detected an exception")).unwrap() + 1;
        assert_eq!(t.culprit.reason_from, [format!("attach:{exception_line}")]);
        // The same line in the target's own output is srun's word on rank 0: then it counts.
        let t = triaged(&[at(&format!("{target}{step}"), "attach")]);
        assert!(t.collateral[0].reason.contains("srun: task 0 Aborted"), "{:?}", t.collateral);
        assert_eq!(t.collateral[0].reason_from, [format!("attach:{}", lines + 1)]);
        // Mutation: without rank 0's placement line, nothing of the job names rank 0.
        let alone =
            target.replace("0: debug-ima: task 0 on node node1\n", "").replace("0: clean run finished\n", "");
        let a = decide(&[at(&alone, "attach"), at(step, "attach/cudagdb-1")]);
        let v = a.verdict.expect("a verdict");
        assert!(v.ranks.is_none(), "{:?}\n{alone}", v.ranks);
        assert!(
            !is_tool_step("attach")
                && !is_tool_step("attach/ranks/rank-1.stderr")
                && is_tool_step("attach/cudagdb-1")
        );
    }

    fn fault(rank: u32, kernel: &str) -> Fault {
        Fault {
            tool: Some(Tool::CudaGdb),
            error: Some(ErrorClass::IllegalAddress),
            kernel: Some(kernel.into()),
            device: Some(rank),
            rank: Some(rank),
            count: 1,
            ..Fault::default()
        }
    }

    fn symptom(rank: u32, functions: &[&str]) -> Symptom {
        Symptom {
            error: Some(ErrorClass::IllegalAddress),
            message: "an illegal memory access was encountered".into(),
            python_frames: functions
                .iter()
                .map(|f| Frame { function: Some(f.to_string()), python: true, ..Frame::default() })
                .collect(),
            rank: Some(rank),
            ..Symptom::default()
        }
    }

    #[test]
    fn a_rank_that_faults_only_while_shutting_down_is_a_likely_false_positive() {
        let nccl = "void ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
        let mut r0 = Evidence::new("r0.log", "r0");
        r0.faults.push(fault(0, nccl));
        r0.symptoms.push(symptom(0, &["<module>", "main", "destroy_process_group"]));
        let mut r1 = Evidence::new("r1.log", "r1");
        r1.faults.push(fault(1, "gather_kv_kernel"));
        r1.symptoms.push(symptom(1, &["<module>", "main", "forward"]));
        let t = triaged(&[r0.clone(), r1.clone()]);
        assert_eq!(t.culprit.rank, 1);
        assert!(!t.culprit.shutdown_false_positive);
        assert!(t.collateral[0].shutdown_false_positive);
        assert!(t.collateral[0].reason.contains("likely a false positive"), "{}", t.collateral[0].reason);
        // Alone among the ranks, it is still the culprit, flagged.
        let mut r1 = Evidence::new("r1.log", "r1");
        r1.symptoms.push(Symptom { rank: Some(1), ..Symptom::default() });
        let t = triaged(&[r0, r1]);
        assert_eq!(t.culprit.rank, 0);
        assert!(t.culprit.shutdown_false_positive, "{:?}", t.culprit);
    }

    #[test]
    fn one_rank_is_no_triage() {
        let a = decide(&[scan_str(
            recording!("bundles/dist_fault-full/rungs/03-coredump/cudagdb-1.log"),
            "coredump/cudagdb-1",
        )]);
        assert_eq!(a.verdict.expect("located").ranks, None);
    }

    #[test]
    fn clocks_and_dump_hosts() {
        assert_eq!(clock("10:58:51.169004] x").map(clock_text).as_deref(), Some("10:58:51.169004"));
        assert_eq!(clock("01:10:11.502886129 P").map(clock_text).as_deref(), Some("01:10:11.502886"));
        assert_eq!(clock("1130 01:10"), None);
        assert_eq!(host_from_dump("/d/core_vm.886.1796036328").as_deref(), Some("vm"));
        assert_eq!(host_from_dump("core.node-3.cluster.12.99").as_deref(), Some("node-3.cluster"));
        assert_eq!(host_from_dump("core"), None);
    }
}

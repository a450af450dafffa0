//! The parts of a verdict of class `hang`: the types (the threads by line, the processes, the
//! host threads' waits, the NCCL collectives not completed) and what builds them from the GPU
//! snapshots, py-spy's stacks and the CPU cores; with the one sentence said of a program that
//! waits on the host with no kernel running.
//!
//! Pure. Must not: read files, print, or decide whether there is a hang (verdict.rs does), nor
//! use verdict.rs (it uses this file).

use serde::Serialize;

use super::verdict_sites::{is_cuda_api, is_runtime_frame, is_users, user_loc};
use super::{names, pyspy, DeviceSnapshot, Dim3, Evidence, Frame, NcclCollective, SourceLoc, Tool};

/// What a hang verdict rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hang {
    /// The verdict's process's threads (`info cuda threads`) by the user's line, most first.
    pub groups: Vec<HangGroup>,
    /// Every process seen stuck: with a GPU dump, or a py-spy stack in the user's code.
    pub processes: Vec<HangProcess>,
    /// Collectives of the NCCL flight recorder enqueued and not completed, per rank and group.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nccl: Vec<NcclStuck>,
    /// Of three or more processes, the one stuck somewhere else than all the others
    /// ([`odd_one_out`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub odd_one_out: Option<OddOneOut>,
}

/// The process of a multi-process hang that is not where the others are: "15 ranks in
/// ncclAllReduce #812, rank 7 in `gemm` at mlp.cu:40".
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OddOneOut {
    /// `rank 7 (pid 9012)`, `pid 9012`.
    pub who: String,
    /// Where it is stuck, as [`stuck_at`] says it.
    pub at: String,
    /// How many processes are stuck where the others are, and where.
    pub others: usize,
    pub others_at: String,
}

/// Where a process is stuck, in words that are equal for processes stuck at the same place:
/// its kernel and line (or "no kernel running"), where its host waits, and its rank's first
/// NCCL collective not completed (op and sequence number).
pub fn stuck_at(p: &HangProcess, nccl: &[NcclStuck]) -> String {
    place(p, nccl, true)
}

/// Where `p` is stuck: its kernel and line, where its host waits (with `host`), its pending
/// NCCL collective.
fn place(p: &HangProcess, nccl: &[NcclStuck], host: bool) -> String {
    let mut s = match (&p.kernel, &p.spinning_at) {
        (Some(k), Some(l)) => {
            format!("`{}` at {}:{}", names::display_kernel(k), names::base_name(&l.file), l.line)
        }
        (Some(k), None) => format!("`{}`", names::display_kernel(k)),
        (None, _) if p.no_kernel => "no kernel running".to_string(),
        (None, _) => "no GPU state".to_string(),
    };
    if let Some(w) = p.host.first().filter(|_| host) {
        let call = w.api.clone().or_else(|| w.waiting_in.as_ref().map(host_frame_text));
        match call {
            Some(c) => s.push_str(&format!(", host waiting in {c}")),
            None => s.push_str(&format!(", host at {}", host_frame_text(&w.frame))),
        }
    }
    let pending =
        nccl.iter().filter(|n| n.rank.is_some() && n.rank == p.rank).find_map(|n| n.pending.first());
    if let Some(c) = pending {
        s.push_str(&format!(", NCCL {}{}", c.op, c.seq.map(|q| format!(" #{q}")).unwrap_or_default()));
    }
    s
}

/// Of three or more stuck processes with a GPU dump, the one alone where it is while every
/// other one is stuck at the same place; `None` when there is no such one (all alike, two groups of
/// several, or fewer than three processes, where which one is odd cannot be told).
pub fn odd_one_out(processes: &[HangProcess], nccl: &[NcclStuck]) -> Option<OddOneOut> {
    // Only the processes with a GPU dump (the CUDA processes: the ranks), not a launcher that
    // waits for them on the host (`mp.spawn`'s parent in `join`).
    let processes: Vec<&HangProcess> = processes.iter().filter(|p| p.dumped).collect();
    // Where the host waits counts only when every one's host stack is known: a native
    // target's comes from the one CPU core the abort left (seen on the H200 through Slurm: the
    // core of one of two alike ranks made them look different, and no rank odd).
    let hosts = processes.iter().all(|p| !p.host.is_empty());
    let keys: Vec<String> = processes.iter().map(|p| place(p, nccl, hosts)).collect();
    let (i, others_at) = lone_place(&keys)?;
    let places: Vec<String> = processes.iter().map(|p| stuck_at(p, nccl)).collect();
    let p = processes[i];
    let who = match (p.rank, p.pid) {
        (Some(r), Some(pid)) => format!("rank {r} (pid {pid})"),
        (Some(r), None) => format!("rank {r}"),
        (None, Some(pid)) => format!("pid {pid}"),
        (None, None) => "a process".to_string(),
    };
    Some(OddOneOut { who, at: places[i].clone(), others: places.len() - 1, others_at })
}

/// Of three or more places, the index of the one alone while all the others are the same
/// place, and that place.
fn lone_place(places: &[String]) -> Option<(usize, String)> {
    if places.len() < 3 {
        return None;
    }
    let odd: Vec<usize> =
        (0..places.len()).filter(|&i| places.iter().filter(|q| **q == places[i]).count() == 1).collect();
    let [i] = odd[..] else { return None };
    let rest: Vec<&String> = places.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, q)| q).collect();
    rest.iter().all(|q| *q == rest[0]).then(|| (i, rest[0].clone()))
}

/// Threads of one kernel at one user line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HangGroup {
    pub kernel: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub threads: u64,
    /// The PCs of the rows merged (hex strings), at most 16.
    pub pcs: Vec<String>,
    pub block_range: [Dim3; 2],
    pub thread_range: [Dim3; 2],
    /// Rows whose own line was in a CUDA header or a library (`device_atomic_functions.hpp:107`),
    /// placed at the user's line of cuda-gdb's focus (its `bt` inline chain), with their threads.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub via: Vec<(SourceLoc, u64)>,
    /// cuda-gdb's focus thread is in this group.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub focus: bool,
}

/// One process of a hang.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HangProcess {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// The command line (py-spy's `Process PID: ...`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// A GPU dump of it was read.
    pub dumped: bool,
    /// The kernel its threads spin in, and the user's line (the focus thread's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spinning_at: Option<SourceLoc>,
    /// Threads on the device (`info cuda threads`); 0 with `no_kernel`.
    pub threads: u64,
    /// Its dump said `No CUDA threads.`: no kernel was running.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub no_kernel: bool,
    /// Where its host threads wait.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub host: Vec<HostWait>,
}

/// A host thread of a stuck process: its innermost frame in the user's code and the call it
/// waits in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostWait {
    pub frame: Frame,
    /// The library call the user's frame is in (`synchronize (torch/cuda/__init__.py:1162)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting_in: Option<Frame>,
    /// The CUDA API the thread is in (`cudaDeviceSynchronize`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    /// The thread (`MainThread`, `LWP 584`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    /// The input (`hang/pyspy-845`, `hang/cpucore-gdb`) and the tool.
    pub from: String,
    pub tool: Tool,
}

/// A process group of one rank with collectives not completed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NcclStuck {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    pub group: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub desc: Option<String>,
    /// How many were enqueued and not completed (`pg_status`, or the entries).
    pub incomplete: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_completed: Option<i64>,
    pub pending: Vec<NcclCollective>,
    pub from: String,
}

/// A dim3 as text, `(4,0,0)`.
pub(super) fn dim_text(d: Dim3) -> String {
    format!("({},{},{})", d[0], d[1], d[2])
}

/// The order of CUDA's linear index: `z`, then `y`, then `x`.
pub(super) fn dim_key(d: Dim3) -> (u32, u32, u32) {
    (d[2], d[1], d[0])
}

/// A frame as py-spy prints it, `main (hang.py:26)`, or as gdb does, `main at hang.cu:31`.
pub fn host_frame_text(f: &Frame) -> String {
    let func = f.function.as_deref().unwrap_or("?");
    match (&f.file, f.line, f.python) {
        (Some(file), Some(line), true) => format!("{func} ({file}:{line})"),
        (Some(file), Some(line), false) => format!("{func} at {file}:{line}"),
        (Some(file), None, _) => format!("{func} in {file}"),
        _ => match &f.module {
            Some(m) => format!("{func} in {m}"),
            None => func.to_string(),
        },
    }
}

/// The host threads of the processes: py-spy's threads with a frame in the user's code, and
/// the CPU core's threads inside a CUDA call with a frame that has a source line. A CPU core's
/// thread belongs to the process whose pid is its LWP (the main thread), else to the only
/// process known; else to none.
pub(super) fn host_waits(inputs: &[Evidence], pids: &[u32]) -> Vec<(Option<u32>, HostWait)> {
    let mut out = Vec::new();
    for ev in inputs {
        for p in &ev.python {
            for t in p.threads.iter().take(64) {
                let Some((_, frame)) = pyspy::user_frame(t) else { continue };
                out.push((
                    Some(p.pid),
                    HostWait {
                        frame: frame.clone(),
                        waiting_in: pyspy::waiting_in(t).cloned(),
                        api: pyspy::cuda_api(t).map(str::to_string),
                        thread: t.name.clone().or_else(|| Some(t.id.to_string())),
                        from: ev.origin.clone(),
                        tool: Tool::PySpy,
                    },
                ));
            }
        }
    }
    for ev in inputs {
        let lwps: Vec<u32> = ev.host_stacks.iter().filter_map(|st| st.lwp).collect();
        let owner = pids.iter().copied().find(|p| lwps.contains(p)).or((pids.len() == 1).then(|| pids[0]));
        for st in ev.host_stacks.iter().filter(|st| st.api.is_some()) {
            let Some(at) =
                st.frames.iter().position(|f| !is_runtime_frame(f) && f.file.is_some() && f.line.is_some())
            else {
                continue;
            };
            // The API the user's code called: the outermost CUDA frame inside it.
            let api = st.frames[..at]
                .iter()
                .filter_map(|f| f.function.as_deref())
                .rfind(|f| is_cuda_api(f))
                .map(str::to_string)
                .or(st.api.clone());
            out.push((
                owner,
                HostWait {
                    frame: st.frames[at].clone(),
                    waiting_in: None,
                    api,
                    thread: st.lwp.map(|l| format!("LWP {l}")),
                    from: ev.origin.clone(),
                    tool: Tool::CudaGdb,
                },
            ));
        }
    }
    out
}

/// The user's line of a snapshot's focus thread (its `bt` chain), and whether it is library
/// code all the way.
pub(super) fn focus_line(s: &DeviceSnapshot, roots: &[String]) -> Option<(SourceLoc, bool)> {
    user_loc(&s.chain, roots).map(|(l, lib)| (l.clone(), lib))
}

/// The threads of a snapshot by user line: a row in the user's code at its own line; a row in
/// a CUDA header or library at the focus thread's user line (the `bt` inline chain, the only
/// chain cuda-gdb printed), recorded in `via`; most threads first.
pub(super) fn hang_groups(
    s: &DeviceSnapshot,
    roots: &[String],
    canonical: &dyn Fn(&SourceLoc) -> SourceLoc,
) -> Vec<HangGroup> {
    let focus = focus_line(s, roots).filter(|(_, lib)| !lib).map(|(l, _)| canonical(&l));
    let kernel_name = |id: Option<u32>| {
        let by_id = s.kernels.iter().find(|k| k.id == id && id.is_some());
        let focus_kernel = by_id.is_none_or(|k| k.focus);
        match (focus_kernel, &s.kernel) {
            (true, Some(k)) => names::display_kernel(k),
            _ => by_id.map(|k| names::display_kernel(&k.invocation)).unwrap_or_else(|| "?".to_string()),
        }
    };
    let mut out: Vec<HangGroup> = Vec::new();
    for g in &s.threads {
        let own = g.file.as_ref().zip(g.line).map(|(f, l)| SourceLoc { file: f.clone(), line: l });
        let kernel = kernel_name(g.kernel_id);
        let same_kernel_as_focus = s.kernel.as_deref().is_some_and(|k| names::display_kernel(k) == kernel);
        let (at, via) = match &own {
            Some(l) if is_users(l, roots) => (Some(canonical(l)), None),
            Some(l) if same_kernel_as_focus && focus.is_some() => (focus.clone(), Some(l.clone())),
            Some(l) => (Some(canonical(l)), None),
            None => (None, None),
        };
        let pc = format!("{:#x}", g.pc);
        let slot = out.iter().position(|h| {
            h.kernel == kernel
                && h.file == at.as_ref().map(|l| l.file.clone())
                && h.line == at.as_ref().map(|l| l.line)
        });
        let h = match slot {
            Some(i) => &mut out[i],
            None => {
                out.push(HangGroup {
                    kernel,
                    file: at.as_ref().map(|l| l.file.clone()),
                    line: at.as_ref().map(|l| l.line),
                    threads: 0,
                    pcs: Vec::new(),
                    block_range: g.block_range,
                    thread_range: g.thread_range,
                    via: Vec::new(),
                    focus: false,
                });
                out.last_mut().expect("pushed")
            }
        };
        h.threads = h.threads.saturating_add(g.count);
        if !h.pcs.contains(&pc) && h.pcs.len() < 16 {
            h.pcs.push(pc);
        }
        let lo = |a: Dim3, b: Dim3| if dim_key(b) < dim_key(a) { b } else { a };
        let hi = |a: Dim3, b: Dim3| if dim_key(b) > dim_key(a) { b } else { a };
        h.block_range = [lo(h.block_range[0], g.block_range[0]), hi(h.block_range[1], g.block_range[1])];
        h.thread_range = [lo(h.thread_range[0], g.thread_range[0]), hi(h.thread_range[1], g.thread_range[1])];
        h.focus |= g.focus;
        if let Some(v) = via {
            let v = SourceLoc { file: names::base_name(&v.file).to_string(), line: v.line };
            match h.via.iter().position(|(l, _)| *l == v) {
                Some(i) => h.via[i].1 = h.via[i].1.saturating_add(g.count),
                None if h.via.len() < 16 => h.via.push((v, g.count)),
                None => {}
            }
        }
    }
    // Most threads first; among equals, the order cuda-gdb listed them.
    out.sort_by_key(|h| std::cmp::Reverse(h.threads));
    out
}

/// `768 threads at hang_flag.cu:18 (blocks (0,0,0)..(7,0,0), threads (32,0,0)..(127,0,0))`.
pub fn group_text(g: &HangGroup, first: bool) -> String {
    let at = match (&g.file, g.line) {
        (Some(f), Some(l)) => format!("{}:{l}", names::base_name(f)),
        _ => "an unknown line".to_string(),
    };
    let range = |r: [Dim3; 2]| {
        if r[0] == r[1] {
            dim_text(r[0])
        } else {
            format!("{}..{}", dim_text(r[0]), dim_text(r[1]))
        }
    };
    let noun = if first { " threads" } else { "" };
    let mut s = format!(
        "{}{noun} at {at} (blocks {}, threads {}",
        g.threads,
        range(g.block_range),
        range(g.thread_range)
    );
    for (l, n) in &g.via {
        s.push_str(&format!("; {n} of them at {l}, a CUDA header inlined there"));
    }
    s.push(')');
    s
}

/// Without a spinning kernel: what the dumps and py-spy say of a program that waits on the host
/// (`No CUDA threads.` in every dump), in one sentence; `None` when no input says anything.
pub(super) fn hang_without_kernel(inputs: &[Evidence]) -> Option<String> {
    let idle: Vec<Option<u32>> = inputs.iter().flat_map(|e| &e.snapshots).map(|s| s.pid).collect();
    let waits: Vec<String> = host_waits(inputs, &[])
        .into_iter()
        .map(|(pid, w)| {
            format!("{}{}", pid.map(|p| format!("pid {p}: ")).unwrap_or_default(), host_frame_text(&w.frame))
        })
        .collect();
    let mut parts = Vec::new();
    if !idle.is_empty() {
        let pids: Vec<String> = idle.iter().map(|p| p.map_or("?".to_string(), |p| p.to_string())).collect();
        parts.push(format!("the GPU dumps of process {} show no kernel running", pids.join(", ")));
    }
    if !waits.is_empty() {
        parts.push(format!("the host waits at {}", waits.join("; ")));
    }
    // The odd one out among the CUDA processes (a GPU dump, or a wait in a CUDA call; not a
    // launcher waiting for them): its first host wait against the others'.
    let mut firsts: Vec<(u32, String)> = Vec::new();
    for (pid, w) in host_waits(inputs, &[]) {
        let Some(pid) = pid else { continue };
        let cuda = idle.contains(&Some(pid)) || w.api.is_some();
        if cuda && !firsts.iter().any(|(p, _)| *p == pid) {
            let call =
                w.waiting_in.as_ref().map(|f| format!(" in {}", host_frame_text(f))).unwrap_or_default();
            firsts.push((pid, format!("{}{call}", host_frame_text(&w.frame))));
        }
    }
    let places: Vec<String> = firsts.iter().map(|(_, p)| p.clone()).collect();
    if let Some((i, others_at)) = lone_place(&places) {
        parts.push(format!(
            "pid {} is stuck elsewhere ({}) while the other {} wait at {others_at}: look at it first",
            firsts[i].0,
            places[i],
            places.len() - 1
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// Whether a source line calls a block barrier: `__syncthreads()` (and its `_count`, `_and`,
/// `_or` forms), `__barrier_sync`, PTX `bar.sync` / `barrier.sync`, or a cooperative group's
/// `.sync()`.
fn is_block_barrier(text: &str) -> bool {
    ["__syncthreads", "__barrier_sync", "bar.sync", "barrier.sync", ".sync()", "::sync("]
        .iter()
        .any(|b| text.contains(b))
}

/// Blocks as one number, for ranges: (z, y, x).
fn block_key(d: Dim3) -> (u32, u32, u32) {
    (d[2], d[1], d[0])
}

/// A hang of barriers in divergent code: cuda-gdb's focus line is a block barrier and the
/// threads of the same blocks wait at two or more different lines (recorded on the H200: the
/// two `__syncthreads()` of an if and its else, tests/fixtures/h200/kinds-pc). The evidence, in
/// words, for the verdict's remark; `None` when the dump does not show it.
pub(super) fn divergent_barrier(primary: &DeviceSnapshot, groups: &[HangGroup]) -> Option<String> {
    let text = primary.source_text.as_deref().filter(|t| is_block_barrier(t))?;
    let focus = groups.iter().find(|g| g.focus)?;
    let (lo, hi) = (block_key(focus.block_range[0]), block_key(focus.block_range[1]));
    let mut lines: Vec<u32> = groups
        .iter()
        .filter(|g| block_key(g.block_range[0]) <= hi && lo <= block_key(g.block_range[1]))
        .filter(|g| g.file == focus.file)
        .filter_map(|g| g.line)
        .collect();
    lines.sort_unstable();
    lines.dedup();
    (lines.len() >= 2).then(|| {
        let at: Vec<String> = lines.iter().map(u32::to_string).collect();
        format!(
            "the threads of the same blocks wait at {} different lines ({}), and cuda-gdb's focus line is a \
             barrier (`{}`): a barrier in divergent code, which the block's threads reach at different calls; \
             `--rungs synccheck` names it",
            lines.len(),
            at.join(", "),
            text
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank(r: u32, kernel: Option<(&str, &str, u32)>, api: &str) -> HangProcess {
        HangProcess {
            pid: Some(9000 + r),
            rank: Some(r),
            dumped: true,
            kernel: kernel.map(|k| k.0.to_string()),
            spinning_at: kernel.map(|k| SourceLoc { file: k.1.to_string(), line: k.2 }),
            threads: if kernel.is_some() { 256 } else { 0 },
            no_kernel: kernel.is_none(),
            host: vec![HostWait {
                frame: Frame {
                    function: Some("step".into()),
                    file: Some("train.py".into()),
                    line: Some(40),
                    python: true,
                    ..Frame::default()
                },
                waiting_in: None,
                api: Some(api.to_string()),
                thread: None,
                from: format!("hang/pyspy-{}", 9000 + r),
                tool: Tool::PySpy,
            }],
            ..HangProcess::default()
        }
    }

    fn stuck(r: u32, op: &str, seq: u64) -> NcclStuck {
        NcclStuck {
            rank: Some(r),
            group: "0".into(),
            desc: None,
            incomplete: 1,
            last_completed: Some(seq as i64 - 1),
            pending: vec![NcclCollective { op: op.into(), seq: Some(seq), ..NcclCollective::default() }],
            from: format!("hang/nccl-trace-{r}"),
        }
    }

    /// Seven ranks waiting in `cudaStreamSynchronize` with no kernel, one still in a GEMM: the
    /// GEMM rank is named, with where the others are.
    #[test]
    fn the_one_rank_in_a_kernel_while_the_others_wait_is_named() {
        let mut ps: Vec<HangProcess> = (0..8).map(|r| rank(r, None, "cudaStreamSynchronize")).collect();
        ps[5] = rank(5, Some(("_Z4gemmPKfS0_Pfiii", "mlp.cu", 40)), "cudaStreamSynchronize");
        // The launcher, waiting for them on the host without a GPU dump, is no rank.
        ps.push(HangProcess { pid: Some(8999), dumped: false, ..rank(9, None, "join") });
        let o = odd_one_out(&ps, &[]).unwrap();
        assert_eq!(o.who, "rank 5 (pid 9005)");
        assert!(
            o.at.starts_with("`gemm(float const*, float const*, float*, int, int, int)` at mlp.cu:40"),
            "{}",
            o.at
        );
        assert_eq!(
            (o.others, o.others_at.as_str()),
            (7, "no kernel running, host waiting in cudaStreamSynchronize")
        );
    }

    /// The same kernel and host everywhere, but one rank's NCCL collective is another: told
    /// apart by the flight recorder's op and sequence number.
    #[test]
    fn a_rank_at_another_collective_is_named_by_its_sequence_number() {
        let ps: Vec<HangProcess> = (0..4).map(|r| rank(r, None, "ncclCommWatchTimeout")).collect();
        let nccl: Vec<NcclStuck> = (0..4)
            .map(|r| if r == 2 { stuck(r, "nccl:all_gather", 811) } else { stuck(r, "nccl:all_reduce", 812) })
            .collect();
        let o = odd_one_out(&ps, &nccl).unwrap();
        assert_eq!(o.who, "rank 2 (pid 9002)");
        assert!(
            o.at.ends_with("NCCL nccl:all_gather #811") && o.others_at.ends_with("NCCL nccl:all_reduce #812"),
            "{o:?}"
        );
    }

    /// A native job's host stack comes from the one CPU core the abort left: known for one rank
    /// only, it does not make two alike ranks differ (three ranks through Slurm on the H200,
    /// tests/fixtures/bundles/slurm_gpu): the rank in the other kernel is still named.
    #[test]
    fn a_host_stack_known_for_one_rank_only_does_not_hide_the_odd_one() {
        let mut ps: Vec<HangProcess> =
            (0..3).map(|r| rank(r, Some(("wait_for_peer", "h.cu", 9)), "x")).collect();
        ps[1] = rank(1, Some(("stuck_tile", "h.cu", 15)), "x");
        for (i, p) in ps.iter_mut().enumerate() {
            if i != 2 {
                p.host.clear();
            }
        }
        let o = odd_one_out(&ps, &[]).unwrap();
        assert_eq!(o.who, "rank 1 (pid 9001)");
        assert_eq!(
            (o.at.as_str(), o.others_at.as_str()),
            ("`stuck_tile` at h.cu:15", "`wait_for_peer` at h.cu:9")
        );
        // The same with the core's rank the odd one: its host wait is shown, not compared.
        let mut ps2 = ps.clone();
        ps2[2].host.clear();
        ps2[1].host = rank(1, None, "cudaDeviceSynchronize").host;
        let o = odd_one_out(&ps2, &[]).unwrap();
        assert!(o.at.ends_with(", host waiting in cudaDeviceSynchronize"), "{o:?}");
    }

    /// No odd one: all alike, two groups of two, or only two processes (either may be odd).
    #[test]
    fn without_a_clear_odd_one_nothing_is_named() {
        let alike: Vec<HangProcess> = (0..4).map(|r| rank(r, None, "cudaDeviceSynchronize")).collect();
        assert_eq!(odd_one_out(&alike, &[]), None);
        let mut halves = alike.clone();
        halves[2] = rank(2, Some(("k", "a.cu", 1)), "cudaDeviceSynchronize");
        halves[3] = rank(3, Some(("k", "a.cu", 1)), "cudaDeviceSynchronize");
        assert_eq!(odd_one_out(&halves, &[]), None);
        let mut two = alike[..2].to_vec();
        two[1] = rank(1, Some(("k", "a.cu", 1)), "cudaDeviceSynchronize");
        assert_eq!(odd_one_out(&two, &[]), None);
        // Two odd ones among four: not one odd one.
        let mut two_odd = alike.clone();
        two_odd[0] = rank(0, Some(("k", "a.cu", 1)), "cudaDeviceSynchronize");
        two_odd[1] = rank(1, Some(("j", "b.cu", 2)), "cudaDeviceSynchronize");
        assert_eq!(odd_one_out(&two_odd, &[]), None);
    }
}

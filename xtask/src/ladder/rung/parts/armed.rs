//! The armed run: the target with everything that costs nothing until something happens
//! (transcripts point 23: no measurable cost on a launch-heavy C++ loop or a PyTorch loop),
//! so that the first occurrence of a fault or a hang leaves its evidence:
//! - the GPU coredump on exception, with the five `skip_*` flags (dumps of megabytes, no
//!   global memory, so no model or user data);
//! - the user-triggered dump pipe (`corepipe.<host>.<pid>`), which `debug-ima dump` and the
//!   hang rung write one byte into;
//! - for a native target the CPU core of the abort that follows the dump (the core limit
//!   raised for the target only); for Python, `PYTHONFAULTHANDLER=1`, whose stack at that
//!   abort replaces the traceback the abort prevents (transcripts point 24), and the NCCL
//!   flight recorder;
//! - `CUDA_LAUNCH_BLOCKING=1` where it is safe ([`blocking_unsafe`]): then the CPU core or the
//!   faulthandler stack names the line that launched the kernel, not where the error
//!   surfaced (transcripts points 20 and 24), and one run gives the whole verdict.
//!
//! Pure: builds invocations and decides from the recipe; must not run or read anything.

use std::path::Path;

use super::build::target;
use crate::bundle::layout::DUMP_PREFIX;
use crate::model::{Invocation, Launcher};
use crate::recipe::Resolved;

/// Everything but the registers and the stack of the faulting warps is skipped: dumps stay
/// megabytes, not gigabytes, and hold no model or user data from global memory.
pub const GENERATION_FLAGS: &str = "skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,\
skip_local_memory,skip_constbank_memory";

/// The bound on the CPU core of a native target, in KiB (`ulimit -c`): 8 GiB.
pub const CPU_CORE_LIMIT_KB: u64 = 8 * 1024 * 1024;

/// The GPU pipe's name start in a rung folder (`corepipe.<host>.<pid>`).
pub const PIPE_PREFIX: &str = "corepipe.";

/// The NCCL flight recorder's pipe prefix: PyTorch makes `nccl-pipe-<rank>.pipe`.
pub const NCCL_PIPE: &str = "nccl-pipe-";
/// The NCCL flight recorder's dump prefix: PyTorch writes `nccl-trace-<rank>` (a pickle).
pub const NCCL_TRACE: &str = "nccl-trace-";
/// The flight recorder's ring size, in entries.
pub const NCCL_BUFFER: &str = "2000";

/// The GPU coredump on exception, written into `dir` as `<prefix>%h.%p.%t`.
pub fn on_exception(inv: &mut Invocation, dir: &Path, prefix: &str) {
    inv.set("CUDA_ENABLE_COREDUMP_ON_EXCEPTION", "1");
    dump_file(inv, dir, prefix);
}

/// Where a dump goes and what it holds (the exception's and the user-triggered one share it).
fn dump_file(inv: &mut Invocation, dir: &Path, prefix: &str) {
    inv.set("CUDA_COREDUMP_SHOW_PROGRESS", "1");
    inv.set("CUDA_COREDUMP_GENERATION_FLAGS", GENERATION_FLAGS);
    inv.set("CUDA_COREDUMP_FILE", format!("{}/{prefix}%h.%p.%t", dir.display()));
}

/// The user-triggered dump: each CUDA process makes its pipe `corepipe.<host>.<pid>` in
/// `dir`; one byte written to it makes the driver dump (as `<prefix>...`) and abort.
pub fn user_triggered(inv: &mut Invocation, dir: &Path, prefix: &str) {
    inv.set("CUDA_ENABLE_USER_TRIGGERED_COREDUMP", "1");
    inv.set("CUDA_COREDUMP_PIPE", format!("{}/{PIPE_PREFIX}%h.%p", dir.display()));
    dump_file(inv, dir, prefix);
}

/// PyTorch's NCCL flight recorder, dumped through its pipe into `dir`.
pub fn flight_recorder(inv: &mut Invocation, dir: &Path) {
    let d = dir.display();
    inv.set("TORCH_NCCL_TRACE_BUFFER_SIZE", NCCL_BUFFER);
    inv.set("TORCH_FR_BUFFER_SIZE", NCCL_BUFFER);
    inv.set("TORCH_NCCL_DEBUG_INFO_PIPE_FILE", format!("{d}/{NCCL_PIPE}"));
    inv.set("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", format!("{d}/{NCCL_TRACE}"));
    inv.set("TORCH_FR_DUMP_TEMP_FILE", format!("{d}/{NCCL_TRACE}"));
}

/// The target's core limit, through a shell that execs it: raised (to the hard limit where
/// that is lower) for a native target, whose CPU core holds the host stacks; 0 for Python,
/// whose core is about 1 GB and whose stacks come from faulthandler or py-spy.
pub fn core_limit(inv: &mut Invocation, python: bool) {
    let limit = if python {
        "ulimit -c 0 2>/dev/null; exec \"$@\"".to_string()
    } else {
        format!("ulimit -c {CPU_CORE_LIMIT_KB} 2>/dev/null || ulimit -c \"$(ulimit -H -c)\"; exec \"$@\"")
    };
    let mut argv = vec!["sh".to_string(), "-c".to_string(), limit, "core-limit".to_string()];
    argv.append(&mut inv.argv);
    inv.argv = argv;
}

/// The armed run of the target (the baseline's): dumps and pipes in `dir`, launch-blocking
/// when `blocking`, the core limit raised for a native target (the CPU core of the abort).
pub fn invocation(r: &Resolved, dir: &Path, blocking: bool) -> Invocation {
    let mut inv = target(r);
    arm(&mut inv, r.python, dir);
    if blocking {
        inv.set("CUDA_LAUNCH_BLOCKING", "1");
    }
    core_limit(&mut inv, r.python);
    inv
}

/// `watch`'s run of a job: armed as [`invocation`], never launch-blocking, no CPU core (a
/// long job's core can be gigabytes) and the job's core limit left as it is. The driver's abort
/// after a dump stays: with `skip_abort` a C++ job on the H200 went on as if nothing had
/// faulted (its `cudaDeviceSynchronize` returned success; it printed `done` and exited 0,
/// docs/validation.md), which hides the fault from the job; aborted, it ends at the fault.
pub fn watched(r: &Resolved, dir: &Path) -> Invocation {
    let mut inv = target(r);
    arm(&mut inv, r.python, dir);
    inv.set("CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION", "0");
    inv
}

/// The dumps on exception and on request into `dir`; for Python, faulthandler (its stack at
/// the driver's abort replaces the traceback the abort prevents) and the flight recorder.
fn arm(inv: &mut Invocation, python: bool, dir: &Path) {
    on_exception(inv, dir, DUMP_PREFIX);
    user_triggered(inv, dir, DUMP_PREFIX);
    if python {
        // Its CPU core would be about 1 GB; faulthandler gives the Python stacks instead.
        inv.set("CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION", "0");
        inv.set("PYTHONFAULTHANDLER", "1");
        flight_recorder(inv, dir);
    }
}

/// Launchers of several processes that talk through collectives: launch-blocking can
/// deadlock them (NVIDIA/nccl#750; a rank blocked in a launch never reaches the collective
/// its peers wait in).
const DISTRIBUTED_LAUNCHERS: &[&str] = &[
    "torchrun",
    "torch.distributed.run",
    "torch.distributed.launch",
    "mpirun",
    "mpiexec",
    "deepspeed",
    "srun",
];

/// Options whose value above 1 means several GPUs in collectives (vLLM, SGLang, torchrun).
const PARALLEL_OPTIONS: &[&str] = &[
    "--nproc-per-node",
    "--nproc_per_node",
    "--nnodes",
    "--tensor-parallel-size",
    "--tensor_parallel_size",
    "-tp",
    "--tp",
    "--tp-size",
    "--tp_size",
    "--pipeline-parallel-size",
    "--pipeline_parallel_size",
    "-pp",
    "--pp-size",
    "--data-parallel-size",
    "-dp",
    "--dp",
    "--dp-size",
    "--world-size",
    "--world_size",
];

/// Why the armed first run must not be launch-blocking, in words; `None` when it may be.
/// The clear case is one process tree without collectives. Not so: the recipe says
/// `run.launch_blocking: false`; the run goes through a launcher of several tasks (`ranks`
/// above 1, or unknown under Slurm); its command starts several ranks (torchrun, mpirun,
/// deepspeed, `accelerate launch`, a tensor/pipeline/data-parallel size above 1); its
/// environment says `WORLD_SIZE` above 1. `run.launch_blocking: true` overrides the guess.
pub fn blocking_unsafe(
    r: &Resolved,
    ranks: Option<u32>,
    launcher: Launcher,
    env_world: Option<&str>,
) -> Option<String> {
    match r.launch_blocking {
        Some(true) => return None,
        Some(false) => return Some("the recipe sets `run.launch_blocking: false`".into()),
        None => {}
    }
    if launcher == Launcher::Ssh && ranks != Some(1) {
        return Some(format!(
            "the job runs {} ranks over ssh, whose collectives launch-blocking can deadlock",
            ranks.map(|n| n.to_string()).unwrap_or_else(|| "several".into())
        ));
    }
    if launcher == Launcher::Slurm && ranks != Some(1) {
        return Some(match ranks {
            Some(n) => {
                format!("the job runs {n} Slurm tasks, whose collectives launch-blocking can deadlock")
            }
            None => {
                "the Slurm allocation may run several tasks, whose collectives launch-blocking can deadlock"
                    .into()
            }
        });
    }
    let argv = &r.run.argv;
    let words: Vec<&str> = argv.iter().flat_map(|a| a.split_whitespace()).collect();
    let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
    if let Some(l) = words.iter().map(|w| base(w)).find(|w| DISTRIBUTED_LAUNCHERS.contains(&w.as_str())) {
        return Some(format!(
            "the command starts ranks through `{l}`, whose collectives launch-blocking can deadlock"
        ));
    }
    if words.windows(2).any(|w| base(w[0]) == "accelerate" && w[1] == "launch") {
        return Some("the command starts ranks through `accelerate launch`".into());
    }
    for (i, w) in words.iter().enumerate() {
        let (name, value) = match w.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (*w, words.get(i + 1).copied()),
        };
        if PARALLEL_OPTIONS.contains(&name)
            && value.and_then(|v| v.parse::<u32>().ok()).is_some_and(|n| n > 1)
        {
            return Some(format!(
                "the command asks for several GPUs in collectives (`{name} {}`)",
                value.unwrap_or_default()
            ));
        }
    }
    let world = r.run.env.get("WORLD_SIZE").map(String::as_str).or(env_world);
    if world.and_then(|v| v.trim().parse::<u32>().ok()).is_some_and(|n| n > 1) {
        return Some(format!("`WORLD_SIZE={}`: several ranks in collectives", world.unwrap_or_default()));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipe::{self, Step};

    fn resolved(argv: &[&str]) -> Resolved {
        let r = recipe::load("cuda").unwrap();
        let sets = [("run", "./app"), ("build", "make")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut res = recipe::resolve(&r, &sets, &Default::default()).unwrap();
        res.run = Step { argv: argv.iter().map(|s| s.to_string()).collect(), ..res.run };
        res
    }

    #[test]
    fn one_process_tree_may_block_and_collectives_may_not() {
        assert_eq!(blocking_unsafe(&resolved(&["./app", "--n", "4"]), None, Launcher::Host, None), None);
        assert_eq!(
            blocking_unsafe(&resolved(&["python3", "serve.py", "--tp", "1"]), None, Launcher::Host, None),
            None
        );
        for argv in [
            &["torchrun", "--nproc-per-node=2", "train.py"][..],
            &["/usr/bin/mpirun", "-np", "4", "./app"],
            &["python3", "-m", "torch.distributed.run", "x.py"],
            &["vllm", "serve", "m", "--tensor-parallel-size", "2"],
            &["python3", "-m", "sglang.launch_server", "--tp=4"],
            &["accelerate", "launch", "x.py"],
            &["sh", "-c", "torchrun --nproc_per_node 8 x.py"],
        ] {
            assert!(blocking_unsafe(&resolved(argv), None, Launcher::Host, None).is_some(), "{argv:?}");
        }
        let app = resolved(&["./app"]);
        assert!(blocking_unsafe(&app, None, Launcher::Host, Some("2")).unwrap().contains("WORLD_SIZE=2"));
        assert_eq!(blocking_unsafe(&app, None, Launcher::Host, Some("1")), None);
        assert!(blocking_unsafe(&app, Some(2), Launcher::Slurm, None).unwrap().contains("2 Slurm tasks"));
        assert!(blocking_unsafe(&app, None, Launcher::Slurm, None).is_some());
        assert_eq!(blocking_unsafe(&app, Some(1), Launcher::Slurm, None), None);
        assert!(blocking_unsafe(&app, Some(2), Launcher::Ssh, None).unwrap().contains("2 ranks over ssh"));
        assert_eq!(blocking_unsafe(&app, Some(1), Launcher::Ssh, None), None);
    }

    #[test]
    fn the_recipe_decides_when_it_says() {
        let mut r = resolved(&["torchrun", "--nproc-per-node=2", "x.py"]);
        r.launch_blocking = Some(true);
        assert_eq!(blocking_unsafe(&r, Some(4), Launcher::Slurm, Some("4")), None);
        let mut r = resolved(&["./app"]);
        r.launch_blocking = Some(false);
        assert!(blocking_unsafe(&r, None, Launcher::Host, None).unwrap().contains("launch_blocking: false"));
    }

    #[test]
    fn the_armed_run_arms_everything_and_blocks_only_when_asked() {
        let r = resolved(&["./app"]);
        let dir = Path::new("/b/rungs/01-baseline");
        let inv = invocation(&r, dir, true);
        let env = |k: &str| inv.env_set.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(env("CUDA_ENABLE_COREDUMP_ON_EXCEPTION"), Some("1"));
        assert_eq!(env("CUDA_ENABLE_USER_TRIGGERED_COREDUMP"), Some("1"));
        assert_eq!(env("CUDA_COREDUMP_PIPE"), Some("/b/rungs/01-baseline/corepipe.%h.%p"));
        assert_eq!(env("CUDA_COREDUMP_FILE"), Some("/b/rungs/01-baseline/core_%h.%p.%t"));
        assert_eq!(env("CUDA_LAUNCH_BLOCKING"), Some("1"));
        assert_eq!(env("PYTHONFAULTHANDLER"), None);
        assert_eq!(&inv.argv[..2], ["sh", "-c"]);
        assert_eq!(inv.argv.last().map(String::as_str), Some("./app"));
        let plain = invocation(&r, dir, false);
        assert!(!plain.env_set.iter().any(|(k, _)| k == "CUDA_LAUNCH_BLOCKING"));
        let mut py = r.clone();
        py.python = true;
        let inv = invocation(&py, dir, true);
        let env = |k: &str| inv.env_set.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(env("PYTHONFAULTHANDLER"), Some("1"));
        assert_eq!(env("CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION"), Some("0"));
        assert!(env("TORCH_NCCL_DEBUG_INFO_PIPE_FILE").is_some());
    }
}

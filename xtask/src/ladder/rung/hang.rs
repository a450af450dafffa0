//! Rung 8, hang: the target run with the driver's user-triggered GPU coredump armed
//! (`CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1`: each CUDA process makes a named pipe
//! `corepipe.<host>.<pid>` in the rung's folder) and, for `torch.distributed`, the NCCL flight
//! recorder. Once `hang_after` seconds have passed since the start and the target still runs,
//! the rung takes the host stacks of every Python process of its tree (`py-spy dump
//! --native`), triggers the NCCL pipes (the traces are converted to JSON), then writes one
//! byte to each GPU pipe, one process at a time and the youngest first, each dump waited for
//! (triggered together on one GPU, not every process dumped; a parent dumped first took a
//! child with it): the driver writes a dump and aborts the process (exit 134). A launcher's
//! ranks (srun's tasks, ssh's ranks: not in the tree) are known by their placement lines and
//! taken the same way when they run on this host. The rung waits for each dump, without
//! signalling a process that writes its dump, then ends the tree, reads each dump with
//! `cuda-gdb` (`info cuda threads` groups the spinning warps by line) and, for a native
//! target, the CPU core the abort left (`thread apply all bt`). A
//! native binary's launch sites are read before the run ([`super::parts::sites`]): a kernel that
//! never ends has no fault to stop at, so its launch line comes from there.
//!
//! Recorded on an H200 (tests/fixtures/h200/hang/README.md): one byte is enough; a cuda-gdb
//! attached before the trigger prevents the dump, so nothing attaches before it. The run until
//! hung and the evidence taken beside it, which the armed baseline and `watch` share, are in
//! `parts/hung.rs`; what it shares with `debug-ima dump PID` (py-spy, the pipes, the waits,
//! cuda-gdb on a dump) is in `parts/evidence.rs`.
//!
//! Must not: attach a debugger or signal a process of the target before its dump is written
//! (or the wait for it has run out), read the dumps itself (cuda-gdb does), leave a process or
//! a CPU core behind.

use std::path::Path;
use std::time::{Duration, SystemTime};

use anyhow::{bail, Result};

use super::api::{step, At, Ran, Rung, RungIo, Step, StepCx, When};
use super::parts::build::{from_step, target, with_options, DEFAULT_RUN_TIMEOUT};
use super::parts::evidence::{files, gdb, name_of};
use super::parts::hung::{beside_steps, pid_in, run_until_hung, DUMP_PREFIX, HANG_MARGIN};
use super::parts::target_build::{build_if_missing, invocation as build_invocation};
use super::parts::{armed, dumps, sites};
use crate::launch::container::Access;
use crate::model::{Invocation, Role, RungId};
use crate::recipe::Resolved;

pub struct Hang;

/// Stands for a dump's path in the per-dump step.
pub const HANG_DUMP: &str = "core.<host>.<pid>.<time>";

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

impl Rung for Hang {
    fn id(&self) -> RungId {
        RungId::Hang
    }

    fn describe(&self) -> &'static str {
        "run with the user-triggered GPU coredump armed; once `hang_after` has passed, take the \
         host stacks (py-spy), the NCCL flight recorder and a GPU dump of every CUDA process \
         (one byte into its pipe), end the tree, read each dump with `cuda-gdb` (one run)"
    }

    /// It runs in the baseline's place when a hang is expected: a run that ended by itself
    /// before `hang_after` is the baseline's.
    fn stands_for_baseline(&self, hung: bool) -> bool {
        !hung
    }

    fn steps(&self, cx: &StepCx) -> Vec<Step> {
        let r = cx.recipe;
        let mut steps = Vec::new();
        if let Some(b) = &r.build {
            let build = build_invocation(r, b, cx.debug, cx.inherited_prepend.as_deref(), RungId::Hang);
            steps.push(Step::new(Role::Build, build, "build").when(When::BinariesMissing));
        }
        // A kernel that never ends has no fault to stop at: a native binary's launch sites,
        // read beside the run, name where it was launched.
        if !r.python && cx.static_sites.is_none() {
            steps.push(sites::step(r));
        }
        steps.push(Step::target(invocation(r, &cx.dir)).at(At::New(Access::Ptrace)));
        steps.extend(beside_steps(cx));
        steps.push(Step::new(Role::CudaGdb, gdb(&cx.dir.join(HANG_DUMP)), "cudagdb-{n}").when(When::PerDump));
        if !r.python {
            steps.push(
                Step::new(
                    Role::CudaGdb,
                    dumps::cpu_gdb(&dumps::executable(r), &dumps::cpu_core_path(&cx.dir)),
                    "cpucore-gdb",
                )
                .when(When::PerCpuCore),
            );
        }
        steps
    }

    fn run(&self, io: &mut dyn RungIo, steps: &[Step]) -> Result<Ran> {
        build_if_missing(io, steps)?;
        let after = hang_after(io.recipe());
        let dir = io.dir().to_path_buf();
        let started = SystemTime::now();
        let why = format!("still running after {} s", after.as_secs());
        // The launch sites need nothing of the run: the disassembly runs beside it.
        let side = sites::beside(io, steps);
        let (ran, exits) = run_until_hung(io, steps, step(steps, When::Always)?, (after, &why), &side);
        let then = "where the hung kernel was launched is not known from the binary";
        let static_sites = sites::taken(io, &side, exits, Some(then))?;
        let (exit, hung) = ran?;
        if !hung {
            io.note(format!(
                "the target ended by itself ({}) before `hang_after` ({} s): it did not hang in this run",
                exit.text(),
                after.as_secs()
            ));
            return Ok(Ran {
                faulted: !exit.success(),
                yielded: false,
                lineinfo: None,
                hung: false,
                static_sites,
            });
        }
        let dumps = files(&dir, DUMP_PREFIX);
        let placeholder = dir.join(HANG_DUMP).display().to_string();
        let per_dump = step(steps, When::PerDump)?;
        let mut readings = Vec::new();
        for (i, d) in dumps.iter().enumerate() {
            let mut s = per_dump.filled(&placeholder, &d.display().to_string(), i + 1);
            if let Some(pid) = pid_in(&name_of(d)) {
                s.stem = format!("cudagdb-{pid}");
            }
            readings.push(s);
        }
        if !dumps.is_empty() && !io.interrupted() {
            let cpu = steps.iter().find(|s| s.when == When::PerCpuCore);
            dumps::read_together(io, &dumps, readings, cpu, started)?;
        }
        Ok(Ran {
            faulted: !dumps.is_empty(),
            yielded: !dumps.is_empty(),
            lineinfo: None,
            hung: true,
            static_sites,
        })
    }
}

/// Fails, naming the fix, when `hang_after` cannot be honoured: it must be below the run's
/// own time limit, or the run is killed as timed out before it is looked at as hung.
pub fn check(r: &Resolved) -> Result<()> {
    if let (Some(after), Some(t)) = (r.hang_after, r.run.timeout) {
        if after >= t {
            bail!(
                "`--hang-after {}` is not below the run's time limit ({} s, `--timeout` or the recipe's \
                 `run.timeout`): the run would be ended at its limit before it is looked at as hung; give a \
                 smaller `--hang-after` or a larger `--timeout`",
                after.as_secs(),
                t.as_secs()
            );
        }
    }
    Ok(())
}

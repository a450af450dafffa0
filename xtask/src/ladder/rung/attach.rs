//! Rung 5, attach: with `CUDA_DEVICE_WAITS_ON_EXCEPTION=1` the faulting process prints
//! `... You can now attach a debugger to the application (PID N) ...` and spins; the ladder
//! attaches `cuda-gdb -batch -p N` (inside the target's container, with one), collects,
//! then ends the whole target. The waiting process never exits by itself. For a Python target
//! cuda-gdb skips the host libraries' symbols (`set auto-solib-add off`): attaching took 12.3 s
//! with them and 2.1 s without on an H200, and the host stack comes from the launch-blocking
//! traceback anyway.
//!
//! Through Slurm the message comes labelled with its task (`1: HOST: The application ...`),
//! and cuda-gdb runs on that task's node (`srun --overlap -w NODE`, see `launch::slurm`).
//!
//! Must not: parse the wait message itself (`findings::waits` does).

use std::collections::BTreeMap;

use anyhow::Result;

use super::api::{exit_of, step, At, Debug, Ran, Run, Rung, RungIo, Step, StepCx, When, PID};
use super::parts::build::{target, with_options};
use crate::findings::verdict::Part;
use crate::findings::waits::wait_notice;
use crate::launch::container::Access;
use crate::launch::labels::{placement, task_of};
use crate::model::{Invocation, Role, RungId};
use crate::process::Control;
use crate::recipe::Resolved;

pub struct Attach;

pub fn invocation(r: &Resolved) -> Invocation {
    let mut inv = target(r);
    inv.set("CUDA_DEVICE_WAITS_ON_EXCEPTION", "1");
    with_options(inv, r, RungId::Attach)
}

/// `cuda-gdb -batch -p PID` with the commands that show the live state; `python` skips the
/// host libraries' symbols.
pub fn gdb(pid: &str, full: bool, locals: bool, python: bool) -> Invocation {
    let mut first = Vec::new();
    if python {
        first.extend(["-iex".to_string(), "set auto-solib-add off".to_string()]);
    }
    first.extend(["-p".to_string(), pid.to_string()]);
    super::parts::build::cuda_gdb(&first, None, full, locals)
}

impl Rung for Attach {
    fn id(&self) -> RungId {
        RungId::Attach
    }

    fn describe(&self) -> &'static str {
        "rerun with `CUDA_DEVICE_WAITS_ON_EXCEPTION=1`, attach `cuda-gdb` to the waiting \
         process, then kill it (one run)"
    }

    fn needs_fault(&self) -> bool {
        true
    }

    fn answers(&self, _python: bool) -> &'static [Part] {
        &[Part::SourceLine, Part::Class]
    }

    /// One run: after the coredump rung; for Python after launch-blocking too, which names
    /// the launching line.
    fn cost_rank(&self, python: bool) -> Option<u32> {
        Some(if python { 30 } else { 20 })
    }

    fn steps(&self, cx: &StepCx) -> Vec<Step> {
        let locals = cx.debug == Debug::Full;
        let py = cx.recipe.python;
        vec![
            Step::target(invocation(cx.recipe)).at(At::New(Access::Ptrace)),
            Step::new(Role::CudaGdb, gdb(PID, true, locals, py), "cudagdb-attach")
                .at(At::BesideTarget)
                .when(When::OnWaitMessage),
            Step::new(Role::CudaGdb, gdb(PID, false, false, py), "cudagdb-attach-retry")
                .at(At::BesideTarget)
                .when(When::OnWaitMessageAfterCrash),
        ]
    }

    fn run(&self, io: &mut dyn RungIo, steps: &[Step]) -> Result<Ran> {
        let target = step(steps, When::Always)?;
        let first = step(steps, When::OnWaitMessage)?;
        let retry = step(steps, When::OnWaitMessageAfterCrash)?;
        let mut attached: Option<u32> = None;
        let mut gdb_error: Option<anyhow::Error> = None;
        let mut notes: Vec<String> = Vec::new();
        // Through Slurm: each task's node, from the line it printed before it started.
        let mut nodes: BTreeMap<u32, String> = BTreeMap::new();
        let ran = io.execute(Run::of(target).watched(&mut |line, beside| {
            if attached.is_some() {
                return Control::Continue;
            }
            if let Some((task, node)) = placement(line) {
                nodes.insert(task, node);
                return Control::Continue;
            }
            let Some(notice) = wait_notice(line) else { return Control::Continue };
            attached = Some(notice.pid);
            // srun labels the line with its task: cuda-gdb runs on that task's node (the host
            // the message names when the task did not say).
            let mut on = String::new();
            if let Some(task) = task_of(line) {
                let node = nodes.get(&task).cloned().unwrap_or_else(|| notice.host.clone());
                beside.on_node(&node);
                on = format!(" (task {task}, node {node})");
            }
            beside.say(&format!("process {} waits for a debugger{on}: attaching cuda-gdb", notice.pid));
            // A crash of the full session is retried with fewer commands while the target
            // still waits.
            let pid = notice.pid.to_string();
            for (gdb, full) in [(first, true), (retry, false)] {
                let gdb = gdb.filled(PID, &pid, 1);
                if let Err(e) = beside.exec(&gdb) {
                    gdb_error = Some(e);
                }
                let log = beside.log(&gdb);
                let crashed = beside.scan(&log).map(|e| e.debugger_crashed).unwrap_or(false);
                if !crashed || !full || gdb_error.is_some() || beside.interrupted() {
                    break;
                }
                beside.say("cuda-gdb crashed: retrying with fewer commands");
                notes.push(
                    "cuda-gdb crashed while attached (kept what it printed); a `-G` rebuild \
                     (`--device-debug`) often avoids that"
                        .to_string(),
                );
            }
            notes.push(format!(
                "attached to PID {} on {}{on}; the target was killed afterwards",
                notice.pid, notice.host
            ));
            Control::Stop
        }));
        exit_of(ran.exit)?;
        for n in notes {
            io.note(n);
        }
        if let Some(e) = gdb_error {
            return Err(e.context("cuda-gdb could not attach"));
        }
        if attached.is_none() {
            io.note("no process announced that it waits for a debugger: nothing faulted in this run".into());
        }
        Ok(Ran {
            faulted: attached.is_some(),
            yielded: attached.is_some(),
            lineinfo: None,
            hung: false,
            static_sites: None,
        })
    }
}

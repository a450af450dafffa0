//! Rung 4, coredump: the driver writes a GPU coredump on the exception (into the rung's
//! folder, one file per faulting process, named `core_%h.%p.%t`), then `cuda-gdb` reads
//! each dump in batch mode (the dumps and the CPU core side by side, one cuda-gdb each), again
//! with fewer commands when it crashed on it after opening it (a crash while opening it is not
//! retried: every such retry recorded crashed the same way).
//!
//! For a native target the run is merged with launch-blocking (recorded on an H200, transcripts
//! point 20): under `CUDA_LAUNCH_BLOCKING=1` the host thread is still inside the faulting
//! launch when the driver aborts the process after the dump, so the CPU core that abort writes
//! (the core limit raised for the target only, bounded at [`armed::CPU_CORE_LIMIT_KB`]) holds the host
//! line of the `<<<>>>` launch, even for unchecked launches. cuda-gdb reads that core in a run
//! of its own (both cores in one session crashed cuda-gdb 13.0), then the core is deleted: it
//! is large and holds the process's memory. A Python target's dump runs without
//! launch-blocking: with the abort there is no traceback, and without it (`skip_abort`) the
//! traceback named the wrong line on the H200; its launch site comes from the launch-blocking
//! rung.
//!
//! The reading (cuda-gdb on the dumps and the CPU core) is shared with the armed baseline and
//! `watch`: it is in `parts/dumps.rs`.
//!
//! Must not: read the dumps itself (cuda-gdb does; `findings` reads its log), or leave a CPU
//! core behind.

use std::path::Path;
use std::time::SystemTime;

use anyhow::Result;

use super::api::{exec, step, Ran, Rung, RungIo, Step, StepCx, When};
use super::parts::armed;
use super::parts::build::{target, with_options};
use super::parts::dumps::{no_dump_note, read_dumps, reading_steps};
use crate::bundle::layout::DUMP_PREFIX;
use crate::findings::verdict::Part;
use crate::model::{Invocation, RungId};
use crate::recipe::Resolved;

pub struct Coredump;

/// The seeds' coredump run: the dump on exception (no user-triggered pipe), launch-blocking
/// and the raised core limit for a native target, none of them for Python.
pub fn invocation(r: &Resolved, dump_dir: &Path) -> Invocation {
    let mut inv = target(r);
    armed::on_exception(&mut inv, dump_dir, DUMP_PREFIX);
    if r.python {
        inv.set("CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION", "0");
    } else {
        inv.set("CUDA_LAUNCH_BLOCKING", "1");
        armed::core_limit(&mut inv, false);
    }
    with_options(inv, r, RungId::Coredump)
}

impl Rung for Coredump {
    fn id(&self) -> RungId {
        RungId::Coredump
    }

    fn describe(&self) -> &'static str {
        "rerun with GPU coredumps on (native targets: under launch-blocking, with the CPU core \
         for the launch line), then read each dump with `cuda-gdb` (one run; dumps are 1 MB to \
         hundreds of MB per process)"
    }

    fn needs_fault(&self) -> bool {
        true
    }

    fn answers(&self, python: bool) -> &'static [Part] {
        if python {
            &[Part::SourceLine, Part::Class]
        } else {
            &[Part::SourceLine, Part::Class, Part::LaunchSite]
        }
    }

    /// The cheapest: one run, and for a native target the launch line too (the CPU core of a
    /// launch-blocking run).
    fn cost_rank(&self, _python: bool) -> Option<u32> {
        Some(10)
    }

    /// The armed baseline arms the same dump and reads it the same way.
    fn covered_by_armed_run(&self) -> bool {
        true
    }

    fn steps(&self, cx: &StepCx) -> Vec<Step> {
        let mut steps = vec![Step::target(invocation(cx.recipe, &cx.dir))];
        steps.extend(reading_steps(cx));
        steps
    }

    fn run(&self, io: &mut dyn RungIo, steps: &[Step]) -> Result<Ran> {
        let started = SystemTime::now();
        let ran = exec(io, step(steps, When::Always)?)?;
        let read = read_dumps(io, steps, When::PerDump, started, ran)?;
        if !read.yielded {
            io.note(no_dump_note(ran));
        }
        Ok(read)
    }
}

//! Rung 4, coredump: the driver writes a GPU coredump on the exception (into the rung's
//! folder, one file per faulting process, named `core_%h.%p.%t`), then `cuda-gdb` reads
//! each dump in batch mode, again with fewer commands when it crashed on it.
//!
//! Must not: read the dumps itself (cuda-gdb does; `findings` reads its log).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::api::{step, Debug, Ran, Rung, RungIo, Step, StepCx, When, DUMP};
use super::build::{target, with_options};
use crate::bundle::inputs::scan_file;
use crate::bundle::layout::{self, DUMP_PREFIX};
use crate::model::{Invocation, Role, RungId};
use crate::recipe::Resolved;

pub struct Coredump;

/// Everything but the registers and the stack of the faulting warps is skipped: dumps stay
/// megabytes, not gigabytes, and hold no model or user data from global memory.
pub const GENERATION_FLAGS: &str = "skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,\
skip_local_memory,skip_constbank_memory";

pub fn invocation(r: &Resolved, dump_dir: &Path) -> Invocation {
    let mut inv = target(r);
    inv.set("CUDA_ENABLE_COREDUMP_ON_EXCEPTION", "1");
    inv.set("CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION", "0");
    inv.set("CUDA_COREDUMP_SHOW_PROGRESS", "1");
    inv.set("CUDA_COREDUMP_GENERATION_FLAGS", GENERATION_FLAGS);
    inv.set("CUDA_COREDUMP_FILE", format!("{}/{DUMP_PREFIX}%h.%p.%t", dump_dir.display()));
    with_options(inv, r, RungId::Coredump)
}

/// `cuda-gdb -batch` on one dump. `full` adds the commands that print more (and that
/// cuda-gdb 13.0 has been seen to crash on); the retry after a crash uses `full = false`.
/// `locals` asks for arguments and locals, which only a `-G` build has.
pub fn gdb(core: &Path, full: bool, locals: bool) -> Invocation {
    super::build::cuda_gdb(&[], Some(format!("target cudacore {}", core.display())), full, locals)
}

/// The dumps in a rung folder, sorted.
fn dumps(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut dumps: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list `{}`", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(DUMP_PREFIX)))
        .collect();
    dumps.sort();
    Ok(dumps)
}

impl Rung for Coredump {
    fn id(&self) -> RungId {
        RungId::Coredump
    }

    fn describe(&self) -> &'static str {
        "rerun with GPU coredumps on, then read each dump with `cuda-gdb` (one run; dumps are \
         1 MB to hundreds of MB per process)"
    }

    fn needs_fault(&self) -> bool {
        true
    }

    fn steps(&self, cx: &StepCx) -> Vec<Step> {
        let core = cx.dir.join(DUMP);
        let locals = cx.debug == Debug::Full;
        vec![
            Step::target(invocation(cx.recipe, &cx.dir)),
            Step::new(Role::CudaGdb, gdb(&core, true, locals), "cudagdb-{n}").when(When::PerDump),
            Step::new(Role::CudaGdb, gdb(&core, false, false), "cudagdb-{n}-retry")
                .when(When::PerDumpAfterCrash),
        ]
    }

    fn run(&self, io: &mut dyn RungIo, steps: &[Step]) -> Result<Ran> {
        let ran = io.exec(step(steps, When::Always)?)?;
        let dumps = dumps(io.dir())?;
        if dumps.is_empty() {
            io.note(format!(
                "no coredump was written ({}): the process may have been aborted before the GPU \
                 exception was handled (an NCCL watchdog does that), or nothing faulted",
                ran.text()
            ));
        }
        let placeholder = io.dir().join(DUMP).display().to_string();
        for (i, core) in dumps.iter().enumerate() {
            if io.interrupted() {
                break;
            }
            io.say(&format!("cuda-gdb on {}", core.display()));
            let core = core.display().to_string();
            let first = step(steps, When::PerDump)?.filled(&placeholder, &core, i + 1);
            io.exec(&first)?;
            let crashed = scan_file(&layout::logs(io.dir(), &first.stem).0)?.debugger_crashed;
            if crashed {
                // What it printed is kept; fewer commands sometimes get further.
                io.say("cuda-gdb crashed: retrying with fewer commands");
                io.exec(&step(steps, When::PerDumpAfterCrash)?.filled(&placeholder, &core, i + 1))?;
                io.note(
                    "cuda-gdb crashed on this dump (kept what it printed); a `-G` rebuild \
                     (`--device-debug`) often avoids that and shows locals"
                        .into(),
                );
            }
        }
        Ok(Ran { faulted: !ran.success() || !dumps.is_empty(), yielded: !dumps.is_empty() })
    }
}

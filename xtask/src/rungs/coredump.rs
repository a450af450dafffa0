//! Rung 4, coredump: the driver writes a GPU coredump on the exception (into the rung's
//! folder, one file per faulting process, named `core_%h.%p.%t`), then `cuda-gdb` reads
//! each dump in batch mode.

use std::path::Path;

use super::{target, with_options, Invocation};
use crate::recipe::Resolved;

/// Everything but the registers and the stack of the faulting warps is skipped: dumps stay
/// megabytes, not gigabytes, and hold no model or user data from global memory.
pub const GENERATION_FLAGS: &str = "skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,\
skip_local_memory,skip_constbank_memory";

/// The prefix of every dump file name in the rung folder.
pub const DUMP_PREFIX: &str = "core_";

pub fn invocation(r: &Resolved, dump_dir: &Path) -> Invocation {
    let mut inv = target(r);
    inv.set("CUDA_ENABLE_COREDUMP_ON_EXCEPTION", "1");
    inv.set("CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION", "0");
    inv.set("CUDA_COREDUMP_SHOW_PROGRESS", "1");
    inv.set("CUDA_COREDUMP_GENERATION_FLAGS", GENERATION_FLAGS);
    inv.set("CUDA_COREDUMP_FILE", format!("{}/{DUMP_PREFIX}%h.%p.%t", dump_dir.display()));
    with_options(inv, r, "coredump")
}

/// `cuda-gdb -batch` on one dump. `full` adds the commands that print more (and that
/// cuda-gdb 13.0 has been seen to crash on); the retry after a crash uses `full = false`.
/// `locals` asks for arguments and locals, which only a `-G` build has.
pub fn gdb(core: &Path, full: bool, locals: bool) -> Invocation {
    super::cuda_gdb(&[], Some(format!("target cudacore {}", core.display())), full, locals)
}

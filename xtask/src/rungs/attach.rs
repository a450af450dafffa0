//! Rung 5, attach: with `CUDA_DEVICE_WAITS_ON_EXCEPTION=1` the faulting process prints
//! `... You can now attach a debugger to the application (PID N) ...` and spins; the ladder
//! attaches `cuda-gdb -batch -p N`, collects, then kills the whole target. The waiting
//! process never exits by itself.

use super::{target, with_options, Invocation};
use crate::recipe::Resolved;

pub fn invocation(r: &Resolved) -> Invocation {
    let mut inv = target(r);
    inv.set("CUDA_DEVICE_WAITS_ON_EXCEPTION", "1");
    with_options(inv, r, "attach")
}

/// `cuda-gdb -batch -p PID` with the commands that show the live state.
pub fn gdb(pid: u32, full: bool, locals: bool) -> Invocation {
    super::cuda_gdb(&["-p".to_string(), pid.to_string()], None, full, locals)
}

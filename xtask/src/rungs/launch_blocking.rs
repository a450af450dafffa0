//! Rung 3, launch-blocking: `CUDA_LAUNCH_BLOCKING=1` makes every launch synchronous, so the
//! error surfaces at the launch that faulted (but not inside a CUDA graph replay).

use super::{target, with_options, Invocation};
use crate::recipe::Resolved;

pub fn invocation(r: &Resolved) -> Invocation {
    let mut inv = target(r);
    inv.set("CUDA_LAUNCH_BLOCKING", "1");
    with_options(inv, r, "launch-blocking")
}

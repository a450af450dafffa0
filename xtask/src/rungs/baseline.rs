//! Rung 1, baseline: the target as it is, to capture the symptom.

use super::{target, with_options, Invocation};
use crate::recipe::Resolved;

pub fn invocation(r: &Resolved) -> Invocation {
    with_options(target(r), r, "baseline")
}

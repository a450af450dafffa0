//! Rung 6, memcheck: `compute-sanitizer --tool memcheck` with the text report on stdout and
//! the XML report saved in the rung's folder, from one run. Every allocation gets
//! [`PADDING`] bytes after it, so that an off-by-one into the next allocation (which plain
//! memcheck takes for a valid address) lands in padding and is reported. For PyTorch targets
//! the caching allocator is turned off, or out-of-bounds accesses land inside cached blocks
//! unseen, and every child process is followed.
//!
//! Must not: parse the reports (`findings::memcheck`, `findings::memcheck_xml` do).

use std::path::Path;

use anyhow::Result;

use super::api::{Ran, Rung, RungIo, Step, StepCx};
use super::parts::sanitizer::{self, Scope};
use crate::findings::verdict::Part;
use crate::model::{Invocation, RungId};
use crate::recipe::Resolved;

pub struct Memcheck;

/// Bytes of padding after each allocation (`--padding`): an off-by-one of any element size up
/// to a 64-byte vector lands in it.
pub const PADDING: &str = "64";

/// memcheck's own options, before the sanitizers' common ones.
const OPTIONS: [&str; 2] = ["--padding", PADDING];

impl Rung for Memcheck {
    fn id(&self) -> RungId {
        RungId::Memcheck
    }

    fn describe(&self) -> &'static str {
        "rerun under `compute-sanitizer --tool memcheck --padding 64`: finds bad accesses that do \
         not fault, even into the next allocation, but is many times slower (often 10-100x)"
    }

    fn answers(&self, _python: bool) -> &'static [Part] {
        &[Part::SourceLine, Part::Class, Part::LaunchSite]
    }

    /// After every rung of one run: 10-100x slower.
    fn cost_rank(&self, _python: bool) -> Option<u32> {
        Some(100)
    }

    fn in_sweep(&self) -> bool {
        true
    }

    /// The sanitizer's steps, and the pass after a fault's complete verdict
    /// ([`sanitizer::PASS_PRINT_LIMIT`] records).
    fn steps(&self, cx: &StepCx) -> Vec<Step> {
        let mut steps = sanitizer::steps(cx, RungId::Memcheck, "memcheck", &OPTIONS, Scope::Every);
        steps.push(sanitizer::pass_step(cx, RungId::Memcheck, "memcheck", &OPTIONS));
        steps
    }

    fn run(&self, io: &mut dyn RungIo, steps: &[Step]) -> Result<Ran> {
        sanitizer::run(io, steps, RungId::Memcheck)
    }
}

/// The target under memcheck with padding, its XML report saved to `xml`.
pub fn invocation(r: &Resolved, xml: &Path) -> Invocation {
    sanitizer::sanitizer(r, RungId::Memcheck, "memcheck", &OPTIONS, xml)
}

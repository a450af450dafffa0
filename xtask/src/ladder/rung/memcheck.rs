//! Rung 6, memcheck: `compute-sanitizer --tool memcheck` with the text report on stdout and
//! the XML report saved in the rung's folder, from one run. For PyTorch targets the caching
//! allocator is turned off, or out-of-bounds accesses land inside cached blocks unseen, and
//! every child process is followed.

use std::path::Path;

use anyhow::Result;

use super::api::{step, Ran, Rung, RungIo, Step, StepCx, When};
use super::build::target;
use crate::bundle::layout::MEMCHECK_XML;
use crate::model::{Invocation, RungId};
use crate::recipe::Resolved;

pub struct Memcheck;

impl Rung for Memcheck {
    fn id(&self) -> RungId {
        RungId::Memcheck
    }

    fn describe(&self) -> &'static str {
        "rerun under `compute-sanitizer --tool memcheck`: finds bad accesses that do not fault, \
         but is many times slower (often 10-100x)"
    }

    fn steps(&self, cx: &StepCx) -> Vec<Step> {
        vec![Step::target(invocation(cx.recipe, &cx.dir.join(MEMCHECK_XML)))]
    }

    fn run(&self, io: &mut dyn RungIo, steps: &[Step]) -> Result<Ran> {
        let ran = io.exec(step(steps, When::Always)?)?;
        let yielded = io.dir().join(MEMCHECK_XML).exists();
        if !yielded {
            io.note("compute-sanitizer wrote no XML report".into());
        }
        Ok(Ran { faulted: !ran.success(), yielded })
    }
}

/// Records printed before compute-sanitizer stops printing (it still counts the rest).
pub const DEFAULT_PRINT_LIMIT: &str = "1000";

pub fn invocation(r: &Resolved, xml: &Path) -> Invocation {
    let t = target(r);
    let mut argv: Vec<String> = vec![
        "compute-sanitizer".into(),
        "--tool".into(),
        "memcheck".into(),
        "--print-limit".into(),
        DEFAULT_PRINT_LIMIT.into(),
        "--target-processes".into(),
        "all".into(),
        "--xml".into(),
        "--save".into(),
        xml.display().to_string(),
    ];
    let opts = r.rungs.get(&RungId::Memcheck);
    if let Some(o) = opts {
        argv.extend(o.args.iter().cloned());
    }
    argv.extend(t.argv.iter().cloned());
    let mut inv = Invocation { argv, ..t };
    if r.python {
        inv.set("PYTORCH_NO_CUDA_MEMORY_CACHING", "1");
        // Expandable segments map memory in big chunks: same problem as the cache.
        inv.remove("PYTORCH_CUDA_ALLOC_CONF");
        inv.remove("PYTORCH_ALLOC_CONF");
    }
    super::build::with_options(inv, r, RungId::Memcheck)
}

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

use super::api::{step, Ran, Rung, RungIo, Step, StepCx, When, KERNEL};
use super::build::target;
use crate::bundle::layout::MEMCHECK_XML;
use crate::findings::verdict::Part;
use crate::model::{Invocation, RungId};
use crate::recipe::Resolved;

pub struct Memcheck;

/// Bytes of padding after each allocation (`--padding`): an off-by-one of any element size up
/// to a 64-byte vector lands in it.
pub const PADDING: &str = "64";

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

    fn steps(&self, cx: &StepCx) -> Vec<Step> {
        let xml = cx.dir.join(MEMCHECK_XML);
        let scoped = sanitizer(
            cx.recipe,
            RungId::Memcheck,
            "memcheck",
            &["--padding", PADDING, KERNEL_NAME, &kns()],
            &xml,
        );
        vec![Step::target(invocation(cx.recipe, &xml)), Step::target(scoped).when(When::KernelKnown)]
    }

    fn run(&self, io: &mut dyn RungIo, steps: &[Step]) -> Result<Ran> {
        run_sanitizer(io, steps, MEMCHECK_XML, RungId::Memcheck)
    }
}

/// The target under memcheck with padding, its XML report saved to `xml`.
pub fn invocation(r: &Resolved, xml: &Path) -> Invocation {
    sanitizer(r, RungId::Memcheck, "memcheck", &["--padding", PADDING], xml)
}

/// compute-sanitizer's kernel filter: only the suspect kernel is checked, which is many times
/// faster on a program that launches thousands of others.
pub const KERNEL_NAME: &str = "--kernel-name";

/// The filter's value for the suspect kernel (a substring of its mangled name).
pub fn kns() -> String {
    format!("kns={KERNEL}")
}

/// Records printed before compute-sanitizer stops printing (it still counts the rest).
pub const DEFAULT_PRINT_LIMIT: &str = "1000";

/// The target under `compute-sanitizer --tool TOOL` with `extra` options, the XML report
/// saved to `xml`, every child process followed, then the rung's recipe arguments.
pub fn sanitizer(r: &Resolved, rung: RungId, tool: &str, extra: &[&str], xml: &Path) -> Invocation {
    let t = target(r);
    let mut argv: Vec<String> = vec!["compute-sanitizer".into(), "--tool".into(), tool.into()];
    argv.extend(extra.iter().map(|s| s.to_string()));
    argv.extend(
        ["--print-limit", DEFAULT_PRINT_LIMIT, "--target-processes", "all", "--xml", "--save"]
            .map(String::from),
    );
    argv.push(xml.display().to_string());
    if let Some(o) = r.rungs.get(&rung) {
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
    super::build::with_options(inv, r, rung)
}

/// Runs a sanitizer's step: scoped to the suspect kernel when the verdict so far names one,
/// else over every kernel; it yielded when its XML report exists.
pub fn run_sanitizer(io: &mut dyn RungIo, steps: &[Step], xml: &str, rung: RungId) -> Result<Ran> {
    let scoped = steps.iter().find(|s| s.when == When::KernelKnown);
    let ran = match (io.suspect(), scoped) {
        (Some(kernel), Some(s)) => {
            io.note(format!(
                "scoped to the suspect kernel (`--kernel-name kns={kernel}`): other kernels were not checked; \
                 `--rungs {rung}` alone checks them all"
            ));
            io.exec(&s.filled(KERNEL, &kernel, 1))?
        }
        _ => io.exec(step(steps, When::Always)?)?,
    };
    let yielded = io.dir().join(xml).exists();
    if !yielded {
        io.note(format!(
            "compute-sanitizer wrote no XML report ({}): it may not have run the target; its log says why",
            ran.text()
        ));
    }
    // A sanitizer that failed without its report did not see the target fault: a fault it saw
    // is in its report (and in its log, which the driver reads as evidence either way).
    Ok(Ran { faulted: !ran.success() && yielded, yielded, lineinfo: None, hung: false, static_sites: None })
}

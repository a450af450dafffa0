//! What the compute-sanitizer rungs share (memcheck, initcheck, racecheck, synccheck): the
//! target under `compute-sanitizer --tool TOOL` with its XML report saved in the rung's
//! folder ([`layout::sanitizer_xml`]), the same again scoped to the suspect kernel, and the
//! run that picks between them.
//!
//! Must not: parse the reports (`findings::memcheck`, `findings::memcheck_xml`,
//! `findings::racecheck` do), or know any one sanitizer rung (each passes its id and tool).

use std::path::Path;

use anyhow::Result;

use super::api::{step, Ran, RungIo, Step, StepCx, When, KERNEL};
use super::build::{target, with_options};
use crate::bundle::layout;
use crate::model::{Invocation, RungId};
use crate::recipe::Resolved;

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
    with_options(inv, r, rung)
}

/// A sanitizer rung's steps: the target under `compute-sanitizer --tool TOOL` with `extra`
/// options over every kernel, and instead, when a suspect kernel is known, scoped to it; the
/// XML report as [`layout::sanitizer_xml`] names it in the rung's folder.
pub fn steps(cx: &StepCx, rung: RungId, tool: &str, extra: &[&str]) -> Vec<Step> {
    let xml = cx.dir.join(layout::sanitizer_xml(rung));
    let kns = kns();
    let scoped: Vec<&str> = extra.iter().copied().chain([KERNEL_NAME, kns.as_str()]).collect();
    vec![
        Step::target(sanitizer(cx.recipe, rung, tool, extra, &xml)),
        Step::target(sanitizer(cx.recipe, rung, tool, &scoped, &xml)).when(When::KernelKnown),
    ]
}

/// Runs a sanitizer's step: scoped to the suspect kernel when the verdict so far names one,
/// else over every kernel; it yielded when its XML report exists.
pub fn run(io: &mut dyn RungIo, steps: &[Step], rung: RungId) -> Result<Ran> {
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
    let xml = layout::sanitizer_xml(rung);
    let yielded = io.dir().join(&xml).exists();
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

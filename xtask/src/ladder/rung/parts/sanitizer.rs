//! What the compute-sanitizer rungs share (memcheck, initcheck, racecheck, synccheck): the
//! target under `compute-sanitizer --tool TOOL` with its XML report saved in the rung's
//! folder ([`layout::sanitizer_xml`]), the same again scoped to the suspect kernel, or, for a
//! tool that checks only some kernels ([`Scope`]), to the native binaries' kernels that its
//! check concerns (their device code's sections, `cuobjdump -elf`), and the run that picks
//! between them.
//!
//! Must not: parse the reports (`findings::memcheck`, `findings::memcheck_xml`,
//! `findings::racecheck` do) or the ELF listings (`findings::cubin`), keep a listing,
//! or know any one sanitizer rung (each passes its id, tool and scope).

use std::path::Path;

use anyhow::{Context, Result};

use super::build::{on_binary, target, with_options};
use super::dumps::executable;
use crate::bundle::layout::{self, ELF_STEM, SCOPE_TABLE};
use crate::files::open_regular;
use crate::findings::cubin;
use crate::ladder::rung::api::{exec, step, Ran, RungIo, Step, StepCx, When, KERNEL, KERNELS, LAUNCHES};
use crate::model::{Exit, Invocation, Role, RungId};
use crate::recipe::Resolved;

/// Which kernels a sanitizer's check concerns, when not every one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every kernel (memcheck, initcheck, synccheck).
    Every,
    /// Those that have shared memory (racecheck), each kernel's first launches: a race on
    /// shared memory is a missing barrier in the code, which every launch that runs the code
    /// shows (tests/fixtures/h200/scope: the four race programs' hazards, all found in their
    /// first launch).
    Shared,
}

/// More kernels than this and the filter is left out (every kernel is checked): an argument
/// list of thousands of names (a library of generated kernels) helps no one.
const MAX_SCOPED: usize = 64;

/// Launches of each scoped kernel that racecheck checks ([`Scope::Shared`]), counted over
/// the scoped kernels' launches together (compute-sanitizer's `--launch-count`).
const LAUNCHES_PER_KERNEL: usize = 2;

/// How long one binary's `cuobjdump -elf` may take.
const ELF_TIMEOUT_S: u64 = 120;

/// compute-sanitizer's kernel filter: only the suspect kernel is checked, which is many times
/// faster on a program that launches thousands of others.
pub const KERNEL_NAME: &str = "--kernel-name";

/// The filter's value for the suspect kernel (a substring of its mangled name).
pub fn kns() -> String {
    format!("kns={KERNEL}")
}

/// Records printed before compute-sanitizer stops printing (it still counts the rest).
pub const DEFAULT_PRINT_LIMIT: &str = "1000";

/// Records the memcheck pass after a complete verdict prints ([`When::Pass`]): records come in
/// the order of the accesses, so an earlier bug's are among the first, and the verdict's own
/// kernel is known already. compute-sanitizer's own default; printing 1,000 records of a
/// fault that 4,097 threads make took 0.45 s more on an H100 (1.6 s against 1.1 s,
/// docs/benchmarks.md, "One occurrence").
pub const PASS_PRINT_LIMIT: &str = "100";

/// The option that sets how many records a sanitizer prints.
const PRINT_LIMIT: &str = "--print-limit";

/// The target under `compute-sanitizer --tool TOOL` with `extra` options, the XML report
/// saved to `xml`, every child process followed, [`DEFAULT_PRINT_LIMIT`] records printed unless
/// `extra` sets the limit, then the rung's recipe arguments.
pub fn sanitizer(r: &Resolved, rung: RungId, tool: &str, extra: &[&str], xml: &Path) -> Invocation {
    let t = target(r);
    let mut argv: Vec<String> = vec!["compute-sanitizer".into(), "--tool".into(), tool.into()];
    argv.extend(extra.iter().map(|s| s.to_string()));
    if !extra.contains(&PRINT_LIMIT) {
        argv.extend([PRINT_LIMIT, DEFAULT_PRINT_LIMIT].map(String::from));
    }
    argv.extend(["--target-processes", "all", "--xml", "--save"].map(String::from));
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
/// XML report as [`layout::sanitizer_xml`] names it in the rung's folder. With a [`Scope`]
/// other than every kernel, for a native target: first each binary's ELF listing, then, instead of
/// the run over every kernel, the run scoped to the kernels of the scope.
pub fn steps(cx: &StepCx, rung: RungId, tool: &str, extra: &[&str], scope: Scope) -> Vec<Step> {
    let xml = cx.dir.join(layout::sanitizer_xml(rung));
    let kns = kns();
    let scoped: Vec<&str> = extra.iter().copied().chain([KERNEL_NAME, kns.as_str()]).collect();
    let mut steps = vec![
        Step::target(sanitizer(cx.recipe, rung, tool, extra, &xml)),
        Step::target(sanitizer(cx.recipe, rung, tool, &scoped, &xml)).when(When::KernelKnown),
    ];
    let binaries = listed_binaries(cx.recipe);
    if scope == Scope::Every || cx.recipe.python || binaries.is_empty() {
        return steps;
    }
    for (i, bin) in binaries.iter().enumerate() {
        steps.push(elf_step(cx.recipe, bin, i + 1));
    }
    let filter = format!("kne={KERNELS}");
    let mut listed: Vec<&str> = extra.iter().copied().chain([KERNEL_NAME, filter.as_str()]).collect();
    if !bounded_by_recipe(cx.recipe, rung) {
        listed.extend(["--launch-count", LAUNCHES]);
    }
    steps.push(Step::target(sanitizer(cx.recipe, rung, tool, &listed, &xml)).when(When::KernelsListed));
    steps
}

/// The [`When::Pass`] step of a sanitizer with `extra` options: every kernel, its first
/// [`PASS_PRINT_LIMIT`] records, the XML report where [`steps`] saves it.
pub fn pass_step(cx: &StepCx, rung: RungId, tool: &str, extra: &[&str]) -> Step {
    let xml = cx.dir.join(layout::sanitizer_xml(rung));
    let limited: Vec<&str> = extra.iter().copied().chain([PRINT_LIMIT, PASS_PRINT_LIMIT]).collect();
    Step::target(sanitizer(cx.recipe, rung, tool, &limited, &xml)).when(When::Pass)
}

/// The binaries whose kernels a scope reads: the build's, else the target's executable.
fn listed_binaries(r: &Resolved) -> Vec<String> {
    match r.build.as_ref().filter(|b| !b.binaries.is_empty()) {
        Some(b) => b.binaries.iter().map(|p| p.display().to_string()).collect(),
        None => vec![executable(r)].into_iter().filter(|e| !e.is_empty()).collect(),
    }
}

/// Whether the recipe's own arguments for the rung already choose its launches.
fn bounded_by_recipe(r: &Resolved, rung: RungId) -> bool {
    r.rungs.get(&rung).is_some_and(|o| {
        o.args.iter().any(|a| {
            ["--launch-count", "-c", "--launch-skip", "-s"]
                .iter()
                .any(|f| a == f || a.starts_with(&format!("{f}=")))
        })
    })
}

/// `cuobjdump -elf BINARY`, found as the run would find it.
fn elf_step(r: &Resolved, binary: &str, n: usize) -> Step {
    let inv = on_binary(
        r,
        "cuobjdump -elf",
        "cuobjdump-elf",
        binary,
        std::time::Duration::from_secs(ELF_TIMEOUT_S),
    );
    Step::new(Role::Cuobjdump, inv, ELF_STEM.replace("{n}", &n.to_string())).when(When::Listing)
}

/// Reads each binary's ELF listing (the [`When::Listing`] steps), writes [`SCOPE_TABLE`] and gives
/// the kernels with shared memory; `None` when a listing could not be read (then every kernel is
/// checked) or there are more than [`MAX_SCOPED`].
fn scoped_kernels(io: &mut dyn RungIo, steps: &[Step]) -> Result<Option<Vec<String>>> {
    let mut listings = Vec::new();
    let mut table = String::from(
        "# debug-ima: the binaries' kernels (cuobjdump -elf): kernel<TAB>shared memory<TAB>binary\n",
    );
    for s in steps.iter().filter(|s| s.when == When::Listing) {
        if io.interrupted() {
            return Ok(None);
        }
        let ran = exec(io, s)?;
        let (log, _) = layout::logs(io.dir(), &s.stem);
        let listing = match open_regular(&log) {
            Ok(f) if ran.success() => Some(cubin::kernels(std::io::BufReader::new(f))),
            _ => None,
        };
        let binary = s.inv.argv.last().cloned().unwrap_or_default();
        match &listing {
            Some(k) => {
                let _ = std::fs::remove_file(&log);
                for (name, shared) in k {
                    table.push_str(&format!("{name}\t{shared}\t{binary}\n"));
                }
            }
            None => io.note(format!(
                "`cuobjdump -elf {binary}` did not list its kernels ({}; `{}`): every kernel is checked",
                ran.text(),
                s.stem
            )),
        }
        listings.push(listing);
    }
    let path = io.dir().join(SCOPE_TABLE);
    std::fs::write(&path, table).with_context(|| format!("cannot write `{}`", path.display()))?;
    Ok(cubin::select(&listings).filter(|k| k.len() <= MAX_SCOPED))
}

/// Runs a sanitizer's step: scoped to the suspect kernel when the verdict so far names one,
/// else, where the steps scope it ([`Scope::Shared`]), to the kernels the binaries' ELF
/// listings name (none: the check is skipped, and found nothing), else over every kernel; it
/// yielded when its XML report exists.
pub fn run(io: &mut dyn RungIo, steps: &[Step], rung: RungId) -> Result<Ran> {
    let scoped = steps.iter().find(|s| s.when == When::KernelKnown);
    let listed = steps.iter().find(|s| s.when == When::KernelsListed);
    let pass = steps.iter().find(|s| s.when == When::Pass).filter(|_| io.pass());
    if let Some(s) = pass {
        io.note(format!(
            "every kernel, the first {PASS_PRINT_LIMIT} records printed (an earlier bug's come first; \
             the ERROR SUMMARY counts them all)"
        ));
        let ran = exec(io, s)?;
        return Ok(sanitizer_ran(io, rung, ran));
    }
    let ran = match (io.suspect(), scoped, listed) {
        (Some(kernel), Some(s), _) => {
            io.note(format!(
                "scoped to the suspect kernel (`--kernel-name kns={kernel}`): other kernels were not checked; \
                 `--rungs {rung}` alone checks them all"
            ));
            exec(io, &s.filled(KERNEL, &kernel, 1))?
        }
        (None, _, Some(s)) => match scoped_kernels(io, steps)? {
            Some(kernels) if kernels.is_empty() => {
                io.note(format!(
                    "no kernel of the binaries does what {rung} checks (have shared memory: `{SCOPE_TABLE}`): it \
                     has nothing to check, and did not run the target"
                ));
                return Ok(Ran { yielded: true, ..Ran::default() });
            }
            Some(kernels) => {
                let launches = kernels.len() * LAUNCHES_PER_KERNEL;
                let bounded = s.inv.argv.iter().any(|a| a == LAUNCHES);
                io.note(format!(
                    "scoped to the {} kernel(s) of the binaries that have shared memory (`{SCOPE_TABLE}`){}: \
                     other kernels (libraries', JIT-compiled ones) were not checked",
                    kernels.len(),
                    if bounded {
                        format!(
                            ", their first {launches} launches (a race is in the code, which one launch of it \
                             shows; `rungs: {{{rung}: {{args: [--launch-count, \"0\"]}}}}` in a recipe checks every one)"
                        )
                    } else {
                        String::new()
                    }
                ));
                exec(io, &s.listed(KERNELS, &kernels).filled(LAUNCHES, &launches.to_string(), 1))?
            }
            None => exec(io, step(steps, When::Always)?)?,
        },
        _ => exec(io, step(steps, When::Always)?)?,
    };
    Ok(sanitizer_ran(io, rung, ran))
}

/// What a sanitizer's run that ended as `ran` gave: it yielded when its XML report exists.
fn sanitizer_ran(io: &mut dyn RungIo, rung: RungId, ran: Exit) -> Ran {
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
    Ran { faulted: !ran.success() && yielded, yielded, lineinfo: None, hung: false, static_sites: None }
}

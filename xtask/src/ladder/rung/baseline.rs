//! Rung 1, baseline: the target's first run, armed ([`armed`]: the GPU coredump on exception,
//! the user-triggered dump pipe, the CPU core or Python's faulthandler, and launch-blocking
//! where it is safe), so that the first occurrence of a fault yields the kernel, the line, the
//! block and thread and, under launch-blocking, the launch site: the coredump rung's reading
//! of the dumps runs here ([`dumps::read_dumps`]). What the program printed is the symptom.
//! A retry of it (a fault that did not come back) alternates launch-blocking off and on, so
//! that a race it hides shows too (the policy says which attempt blocks). When a binary the build
//! makes does not exist yet, the recipe's build runs first, with line info and host debug info
//! (`NVCC_PREPEND_FLAGS="-lineinfo -g"`, which leave the device code as it is), so that no
//! rebuild is needed later; binaries that existed already are checked with `cuobjdump`
//! instead, and the policy rebuilds only when they lack line info. A run still going at its time
//! limit is looked at as hung there ([`hung::collect_after`]: host stacks, a GPU dump of every
//! CUDA process) before it is ended, so a hang needs no second run. A native binary's launch
//! sites ([`sites`]) are read beside the armed run when its symbols hold kernel stubs (the run
//! then goes at full speed), else before it, to decide on launch-blocking.
//!
//! Must not: change the target's environment beyond the armed run's, or leave a pipe or a CPU
//! core behind.

use std::path::Path;
use std::time::{Duration, SystemTime};

use anyhow::Result;

use super::api::{step, ArmedEnd, Ran, Rung, RungIo, Step, StepCx, When, DUMP};
use super::parts::build::{target, with_options, DEFAULT_RUN_TIMEOUT};
use super::parts::{armed, dumps, evidence, hung, lineinfo, sites, target_build};
use crate::findings::verdict::Part;
use crate::model::{Exit, Invocation, Role, RungId};
use crate::recipe::Resolved;

pub struct Baseline;

/// The armed first run, into the rung's folder `dir`; launch-blocking when `blocking`. Its
/// process is given [`hung::HANG_MARGIN`] beyond its time limit ([`limit`]): at the limit the
/// run is looked at as hung, its evidence taken, and only then is it ended.
pub fn invocation(r: &Resolved, dir: &Path, blocking: bool) -> Invocation {
    let mut inv = with_options(armed::invocation(r, dir, blocking), r, RungId::Baseline);
    inv.timeout = Some(limit(r) + hung::HANG_MARGIN);
    inv
}

/// The armed run's time limit: the baseline's `timeout` option, else the run's (`--timeout`,
/// `run.timeout`, else the default).
pub fn limit(r: &Resolved) -> Duration {
    with_options(target(r), r, RungId::Baseline).timeout.unwrap_or(DEFAULT_RUN_TIMEOUT)
}

impl Rung for Baseline {
    fn id(&self) -> RungId {
        RungId::Baseline
    }

    fn describe(&self) -> &'static str {
        "run the target armed (GPU coredump on exception, dump pipe, CPU core or faulthandler, \
         launch-blocking where safe: free until it faults), then read any dump with `cuda-gdb` \
         (one run; a target not built yet is built first, with line info)"
    }

    /// The armed run reads its dumps as the coredump rung does; under launch-blocking the CPU
    /// core or the faulthandler stack names the launch.
    fn answers(&self, _python: bool) -> &'static [Part] {
        &[Part::SourceLine, Part::Class, Part::LaunchSite]
    }

    fn stands_for_baseline(&self, _hung: bool) -> bool {
        true
    }

    fn steps(&self, cx: &StepCx) -> Vec<Step> {
        let mut steps = Vec::new();
        if let Some(b) = &cx.recipe.build {
            let build = target_build::invocation(
                cx.recipe,
                b,
                cx.debug,
                cx.inherited_prepend.as_deref(),
                RungId::Baseline,
            );
            steps.push(Step::new(Role::Build, build, "build").when(When::BinariesMissing));
        }
        // Launch-blocking only for the launch site: a native binary that names its launch
        // sites (read once, with the first armed run: beside it when the binary's symbols hold
        // kernel stubs, else before it) runs at full speed instead. Where launch-blocking is
        // unsafe (collectives), the binary is the only source of them.
        let reads_sites = !cx.recipe.python && cx.static_sites.is_none();
        if reads_sites {
            steps.push(sites::step(cx.recipe));
        }
        steps.push(Step::target(invocation(cx.recipe, &cx.dir, cx.blocking)));
        if reads_sites && cx.blocking {
            steps.push(Step::target(invocation(cx.recipe, &cx.dir, false)).when(When::LaunchSitesKnown));
        }
        // At its time limit the run counts as hung: the hang rung's evidence, taken beside it.
        steps.extend(hung::beside_steps(cx));
        if let Some(b) = &cx.recipe.build {
            steps.extend(lineinfo::lineinfo_checks(b, When::BinariesPresent));
        }
        steps.extend(dumps::reading_steps(cx));
        steps.push(
            Step::new(Role::CudaGdb, evidence::gdb(&cx.dir.join(DUMP)), "cudagdb-{n}")
                .when(When::PerHangDump),
        );
        steps
    }

    fn run(&self, io: &mut dyn RungIo, steps: &[Step]) -> Result<Ran> {
        let build = io.recipe().build.clone();
        let built = target_build::build_if_missing(io, steps)?;
        let unblocked = steps.iter().find(|s| s.when == When::LaunchSitesKnown);
        // The disassembly runs beside the armed run unless the run waits for its answer (to
        // leave launch-blocking off), which symbols holding kernel stubs give at once.
        let disassembles = steps.iter().any(|s| s.when == When::LaunchSites);
        let stubs = disassembles && unblocked.is_some() && sites::has_kernel_stubs(io);
        let (static_sites, side) = if disassembles && (unblocked.is_none() || stubs) {
            (stubs.then_some(true), sites::beside(io, steps))
        } else {
            (sites::read(io, steps, "the armed run is launch-blocking for the launch site")?, Vec::new())
        };
        let target = match (static_sites, unblocked) {
            (Some(true), Some(s)) => {
                io.note(if stubs {
                    "the armed run is not launch-blocking: the binary's symbols hold kernel stubs, so objdump \
                     names their launch sites (read beside the run, which goes at full speed)"
                } else {
                    "the armed run is not launch-blocking: the binary names its launch sites, so it runs at \
                     full speed"
                }
                .into());
                s
            }
            _ => step(steps, When::Always)?,
        };
        let started = SystemTime::now();
        // The pipes the armed run's processes made are removed after it (no files a bundle holds).
        let (ran, hung, taken) = run_to_limit(io, steps, target, &side)?;
        // Symbols with kernel stubs decided the first run's speed, whatever objdump then named.
        let static_sites = static_sites.or(taken);
        if hung {
            // A hang's dumps are read with the hang rung's commands (`info cuda threads`).
            let read = dumps::read_dumps(io, steps, When::PerHangDump, started, ran)?;
            return Ok(Ran {
                faulted: read.yielded,
                yielded: read.yielded,
                lineinfo: None,
                hung: true,
                static_sites,
            });
        }
        // `--device-debug` (`-G`) on binaries that existed: cuobjdump cannot tell `-G` from
        // `-lineinfo`, so they are rebuilt for the locals.
        let wants_g = steps.iter().any(|s| {
            s.when == When::BinariesMissing
                && s.inv
                    .env_set
                    .iter()
                    .any(|(k, v)| k == "NVCC_PREPEND_FLAGS" && v.split_whitespace().any(|f| f == "-G"))
        });
        let lineinfo = match &build {
            Some(_) if built => Some(true),
            Some(b) if wants_g && !b.binaries.is_empty() => {
                io.note(
                    "`--device-debug`: the existing binaries are rebuilt with `-G` for locals and arguments"
                        .into(),
                );
                Some(false)
            }
            Some(b) if !b.binaries.is_empty() && !io.interrupted() => {
                let checks = steps.iter().filter(|s| s.when == When::BinariesPresent);
                // Without cuobjdump the line info is unknown: the policy then rebuilds.
                lineinfo::check_lineinfo(io, &b.binaries, checks, "in the existing binaries").ok()
            }
            _ => None,
        };
        let dumps = dumps::dumps(io.dir())?.len();
        let secs = started.elapsed().map(|d| d.as_secs_f64()).unwrap_or(f64::MAX);
        io.reading_begins(ArmedEnd { dumps, secs, lineinfo });
        let read = dumps::read_dumps(io, steps, When::PerDump, started, ran)?;
        if !read.yielded && !ran.success() && !io.interrupted() {
            io.note(dumps::no_dump_note(ran));
        }
        Ok(Ran { faulted: read.faulted, yielded: true, lineinfo, hung: false, static_sites })
    }
}

/// Runs the armed `target` (one of `steps`), `side` beside it (the disassembly, whose table is
/// taken once both end); at its time limit ([`limit`]) it counts as hung and the hang rung's
/// evidence is taken ([`hung::run_until_hung`]) before it is ended. Its exit, whether it hung,
/// and whether the disassembly beside it named launch sites (`None`: none ran).
fn run_to_limit(
    io: &mut dyn RungIo,
    steps: &[Step],
    target: &Step,
    side: &[Step],
) -> Result<(Exit, bool, Option<bool>)> {
    let limit = limit(io.recipe());
    let why = format!("still running at its time limit ({} s)", limit.as_secs());
    let (ran, exits) = hung::run_until_hung(io, steps, target, (limit, &why), side);
    let then =
        "the armed run went at full speed on the kernel stubs in its symbols, so a fault's launch site \
                needs a launch-blocking run";
    let taken = sites::taken(io, side, exits, Some(then))?;
    let (exit, hung) = ran?;
    if hung {
        io.note(format!(
            "{why}: looked at as hung, its evidence taken (host stacks, a GPU dump of every CUDA process), \
             then ended; give `--hang-after SECS` to look sooner, or `--timeout SECS` if it is only slow"
        ));
    }
    Ok((exit, hung, taken))
}

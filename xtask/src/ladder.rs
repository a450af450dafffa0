//! The ladder's policy, pure: which rungs exist, in which order, what each costs, and —
//! given what the rungs so far found — whether to stop, go on, or change course.
//!
//! Must not: spawn processes, touch files or print. `debug_ima` asks, runs, and asks again.

use serde::Serialize;

use crate::findings::verdict::Analysis;

/// One rung of the escalation ladder, cheapest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Rung {
    /// The target as it is: the symptom.
    Baseline,
    /// Rebuild with `NVCC_PREPEND_FLAGS=-lineinfo` (or `-G`), caches off, line info checked.
    Rebuild,
    /// `CUDA_LAUNCH_BLOCKING=1`: where does the error surface now?
    LaunchBlocking,
    /// GPU coredump on the exception, read with `cuda-gdb`.
    Coredump,
    /// `CUDA_DEVICE_WAITS_ON_EXCEPTION=1`, then `cuda-gdb -p PID` on the live process.
    Attach,
    /// `compute-sanitizer --tool memcheck`, text and XML.
    Memcheck,
}

impl Rung {
    pub const ALL: [Rung; 6] =
        [Rung::Baseline, Rung::Rebuild, Rung::LaunchBlocking, Rung::Coredump, Rung::Attach, Rung::Memcheck];

    pub fn name(self) -> &'static str {
        match self {
            Rung::Baseline => "baseline",
            Rung::Rebuild => "rebuild",
            Rung::LaunchBlocking => "launch-blocking",
            Rung::Coredump => "coredump",
            Rung::Attach => "attach",
            Rung::Memcheck => "memcheck",
        }
    }

    pub fn from_name(s: &str) -> Option<Rung> {
        Rung::ALL.into_iter().find(|r| r.name() == s)
    }

    /// What the rung does and what it costs, for the prompt before it runs.
    pub fn describe(self) -> &'static str {
        match self {
            Rung::Baseline => "run the target as it is, to capture the symptom (one normal run)",
            Rung::Rebuild => {
                "rebuild with `NVCC_PREPEND_FLAGS=-lineinfo`, compilation caches off, and check the \
                 binaries carry line info with `cuobjdump` (one full build)"
            }
            Rung::LaunchBlocking => {
                "rerun with `CUDA_LAUNCH_BLOCKING=1`: the error surfaces at the launch that faulted \
                 (one run, somewhat slower)"
            }
            Rung::Coredump => {
                "rerun with GPU coredumps on, then read each dump with `cuda-gdb` (one run; dumps are \
                 1 MB to hundreds of MB per process)"
            }
            Rung::Attach => {
                "rerun with `CUDA_DEVICE_WAITS_ON_EXCEPTION=1`, attach `cuda-gdb` to the waiting \
                 process, then kill it (one run)"
            }
            Rung::Memcheck => {
                "rerun under `compute-sanitizer --tool memcheck`: finds bad accesses that do not fault, \
                 but is many times slower (often 10-100x)"
            }
        }
    }

    /// Rungs that need the fault to happen to be of any use.
    pub fn needs_fault(self) -> bool {
        matches!(self, Rung::LaunchBlocking | Rung::Coredump | Rung::Attach)
    }
}

/// What the user asked for.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// `--rungs a,b,...`: exactly these, in ladder order.
    pub rungs: Option<Vec<Rung>>,
    /// `--full`: every rung, even after a verdict.
    pub full: bool,
    /// The recipe can rebuild the target.
    pub has_build: bool,
    /// Rungs the recipe disabled.
    pub disabled: Vec<Rung>,
}

/// The plan: the rungs in the order they will run.
pub fn plan(req: &Request) -> Vec<Rung> {
    let mut rungs: Vec<Rung> = match &req.rungs {
        Some(r) => {
            let mut r = r.clone();
            r.sort();
            r.dedup();
            r
        }
        None => Rung::ALL.to_vec(),
    };
    if !req.has_build {
        rungs.retain(|r| *r != Rung::Rebuild);
    }
    if req.rungs.is_none() {
        rungs.retain(|r| !req.disabled.contains(r));
    }
    rungs
}

/// What happened in a rung, as far as the policy cares.
#[derive(Debug, Clone, Default)]
pub struct RungSummary {
    /// The target exited non-zero, died of a signal, or a tool saw a device error.
    pub faulted: bool,
    /// The rung ran its tool and produced the artifact it exists for.
    pub yielded: bool,
}

/// The next step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    Run(Rung),
    /// Stop: the reason, for the user.
    Stop(String),
}

/// Decides the next rung from the plan, the rungs done so far and the merged analysis.
pub fn next(req: &Request, plan: &[Rung], done: &[(Rung, RungSummary)], analysis: &Analysis) -> Next {
    let pending: Vec<Rung> = plan.iter().copied().filter(|r| !done.iter().any(|(d, _)| d == r)).collect();
    let Some(&first) = pending.first() else {
        return Next::Stop(match &analysis.verdict {
            Some(_) => "every planned rung has run".to_string(),
            None => "every planned rung has run and none located a fault".to_string(),
        });
    };
    if !req.full {
        if let Some(v) = &analysis.verdict {
            if v.file.is_some() && v.line.is_some() {
                let by = v.rungs.first().cloned().unwrap_or_default();
                let rest: Vec<&str> = pending.iter().map(|r| r.name()).collect();
                return Next::Stop(format!(
                    "{by} located the fault at {}:{}; skipping {} (`--full` runs them too)",
                    v.file.as_deref().unwrap_or_default(),
                    v.line.unwrap_or_default(),
                    rest.join(", ")
                ));
            }
        }
        // The symptom did not reproduce: rungs that wait for a fault are pointless, but not
        // every bad access faults, so memcheck is still worth its cost.
        let baseline_clean = done.iter().any(|(r, s)| *r == Rung::Baseline && !s.faulted);
        let any_fault = done.iter().any(|(_, s)| s.faulted);
        if baseline_clean && !any_fault {
            if let Some(&r) = pending.iter().find(|r| !r.needs_fault() && **r != Rung::Rebuild) {
                return Next::Run(r);
            }
            let memchecked = done.iter().any(|(r, s)| *r == Rung::Memcheck && s.yielded);
            return Next::Stop(if memchecked {
                "the symptom did not reproduce: the target ran without a CUDA error, and memcheck found no \
                 bad access either"
                    .to_string()
            } else {
                "the symptom did not reproduce: the target ran without a CUDA error. Not every bad access \
                 faults: run `--rungs memcheck` to look for silent ones"
                    .to_string()
            });
        }
    }
    Next::Run(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::verdict::decide;

    fn empty() -> Analysis {
        decide(&[])
    }

    #[test]
    fn plan_is_cheapest_first_and_drops_rebuild_without_build() {
        let req = Request { has_build: false, ..Request::default() };
        assert_eq!(
            plan(&req),
            vec![Rung::Baseline, Rung::LaunchBlocking, Rung::Coredump, Rung::Attach, Rung::Memcheck]
        );
        let req = Request {
            rungs: Some(vec![Rung::Memcheck, Rung::Baseline]),
            has_build: true,
            ..Request::default()
        };
        assert_eq!(plan(&req), vec![Rung::Baseline, Rung::Memcheck]);
    }

    #[test]
    fn runs_in_order_until_a_verdict() {
        let req = Request { has_build: true, ..Request::default() };
        let p = plan(&req);
        assert_eq!(next(&req, &p, &[], &empty()), Next::Run(Rung::Baseline));
        let done = vec![(Rung::Baseline, RungSummary { faulted: true, yielded: true })];
        assert_eq!(next(&req, &p, &done, &empty()), Next::Run(Rung::Rebuild));
    }

    #[test]
    fn no_fault_goes_to_memcheck_only() {
        let req = Request { has_build: true, ..Request::default() };
        let p = plan(&req);
        let done = vec![(Rung::Baseline, RungSummary { faulted: false, yielded: true })];
        assert_eq!(next(&req, &p, &done, &empty()), Next::Run(Rung::Memcheck));
        let done = vec![
            (Rung::Baseline, RungSummary { faulted: false, yielded: true }),
            (Rung::Memcheck, RungSummary { faulted: false, yielded: true }),
        ];
        match next(&req, &p, &done, &empty()) {
            Next::Stop(why) => assert!(why.contains("did not reproduce"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn full_runs_everything() {
        let req = Request { has_build: true, full: true, ..Request::default() };
        let p = plan(&req);
        let done = vec![(Rung::Baseline, RungSummary { faulted: false, yielded: true })];
        assert_eq!(next(&req, &p, &done, &empty()), Next::Run(Rung::Rebuild));
    }
}

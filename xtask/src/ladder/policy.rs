//! The ladder's policy, pure: which rungs exist, in which order, what each costs, and —
//! given what the rungs so far found — whether to stop, go on, or change course.
//!
//! Must not: spawn processes, touch files or print. The driver asks, runs, and asks again.

use super::rung;
use crate::findings::verdict::Analysis;
use crate::model::RungId;

/// What the user asked for.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// `--rungs a,b,...`: exactly these, in ladder order.
    pub rungs: Option<Vec<RungId>>,
    /// `--full`: every rung, even after a verdict.
    pub full: bool,
    /// The recipe can rebuild the target.
    pub has_build: bool,
    /// Rungs the recipe disabled.
    pub disabled: Vec<RungId>,
}

/// The plan: the rungs in the order they will run.
pub fn plan(req: &Request) -> Vec<RungId> {
    let mut rungs: Vec<RungId> = match &req.rungs {
        Some(r) => {
            let mut r = r.clone();
            r.sort();
            r.dedup();
            r
        }
        None => RungId::ALL.to_vec(),
    };
    if !req.has_build {
        rungs.retain(|r| *r != RungId::Rebuild);
    }
    if req.rungs.is_none() {
        rungs.retain(|r| !req.disabled.contains(r));
    }
    rungs
}

/// What happened in a rung, as far as the policy cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RungOutcome {
    /// Not run (skipped at the prompt): it says nothing about the target.
    Skipped,
    /// It could not run to its end (its error is in the bundle): it says nothing either.
    Failed,
    /// The target failed, but not with a CUDA error, a device assert or a fatal signal (a
    /// Python exception without CUDA, a missing file): no rung can locate that.
    FailedWithoutCuda,
    Ran {
        /// The target exited non-zero, died of a signal, or a tool saw a device error.
        faulted: bool,
        /// The rung ran its tool and produced the artifact it exists for.
        yielded: bool,
    },
}

impl RungOutcome {
    pub fn faulted(self) -> bool {
        matches!(self, RungOutcome::Ran { faulted: true, .. })
    }

    pub fn yielded(self) -> bool {
        matches!(self, RungOutcome::Ran { yielded: true, .. })
    }

    /// It ran and the target did not fault.
    pub fn ran_clean(self) -> bool {
        matches!(self, RungOutcome::Ran { faulted: false, .. })
    }
}

/// The next step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    Run(RungId),
    /// Stop: the reason, for the user.
    Stop(String),
}

/// Decides the next rung from the plan, the rungs done so far and the merged analysis.
pub fn next(req: &Request, plan: &[RungId], done: &[(RungId, RungOutcome)], analysis: &Analysis) -> Next {
    let pending: Vec<RungId> = plan.iter().copied().filter(|r| !done.iter().any(|(d, _)| d == r)).collect();
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
        // An ordinary failure is not a GPU fault: climbing would rerun it under every tool.
        // `--rungs` climbs anyway.
        let ordinary =
            done.iter().any(|(r, s)| *r == RungId::Baseline && *s == RungOutcome::FailedWithoutCuda);
        if ordinary && req.rungs.is_none() {
            return Next::Stop(
                "the target failed without a CUDA error (the baseline's note quotes it): that is not a GPU \
                 fault, so no rung can locate it. Fix it first, or pass `--rungs` (e.g. \
                 `--rungs baseline,memcheck`) to climb anyway"
                    .to_string(),
            );
        }
        // The symptom did not reproduce: rungs that wait for a fault are pointless, but not
        // every bad access faults, so memcheck is still worth its cost.
        // A skipped or failed baseline says nothing: the fault rungs still run.
        let baseline_clean = done.iter().any(|(r, s)| *r == RungId::Baseline && s.ran_clean());
        let any_fault = done.iter().any(|(_, s)| s.faulted());
        if baseline_clean && !any_fault {
            if let Some(&r) = pending.iter().find(|r| !rung::get(**r).needs_fault() && **r != RungId::Rebuild)
            {
                return Next::Run(r);
            }
            let memchecked = done.iter().any(|(r, s)| *r == RungId::Memcheck && s.yielded());
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
            vec![
                RungId::Baseline,
                RungId::LaunchBlocking,
                RungId::Coredump,
                RungId::Attach,
                RungId::Memcheck
            ]
        );
        let req = Request {
            rungs: Some(vec![RungId::Memcheck, RungId::Baseline]),
            has_build: true,
            ..Request::default()
        };
        assert_eq!(plan(&req), vec![RungId::Baseline, RungId::Memcheck]);
    }

    #[test]
    fn runs_in_order_until_a_verdict() {
        let req = Request { has_build: true, ..Request::default() };
        let p = plan(&req);
        assert_eq!(next(&req, &p, &[], &empty()), Next::Run(RungId::Baseline));
        let done = vec![(RungId::Baseline, RungOutcome::Ran { faulted: true, yielded: true })];
        assert_eq!(next(&req, &p, &done, &empty()), Next::Run(RungId::Rebuild));
    }

    #[test]
    fn no_fault_goes_to_memcheck_only() {
        let req = Request { has_build: true, ..Request::default() };
        let p = plan(&req);
        let done = vec![(RungId::Baseline, RungOutcome::Ran { faulted: false, yielded: true })];
        assert_eq!(next(&req, &p, &done, &empty()), Next::Run(RungId::Memcheck));
        let done = vec![
            (RungId::Baseline, RungOutcome::Ran { faulted: false, yielded: true }),
            (RungId::Memcheck, RungOutcome::Ran { faulted: false, yielded: true }),
        ];
        match next(&req, &p, &done, &empty()) {
            Next::Stop(why) => assert!(why.contains("did not reproduce"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_skipped_or_failed_baseline_does_not_drop_the_fault_rungs() {
        let req = Request { has_build: false, ..Request::default() };
        let p = plan(&req);
        for outcome in [RungOutcome::Skipped, RungOutcome::Failed] {
            let done = vec![(RungId::Baseline, outcome)];
            assert_eq!(next(&req, &p, &done, &empty()), Next::Run(RungId::LaunchBlocking), "{outcome:?}");
        }
    }

    #[test]
    fn a_failure_without_cuda_stops_after_the_baseline_unless_rungs_are_named() {
        let req = Request { has_build: true, ..Request::default() };
        let p = plan(&req);
        let done = vec![(RungId::Baseline, RungOutcome::FailedWithoutCuda)];
        match next(&req, &p, &done, &empty()) {
            Next::Stop(why) => {
                assert!(why.contains("without a CUDA error") && why.contains("--rungs"), "{why}")
            }
            other => panic!("{other:?}"),
        }
        let req = Request { rungs: Some(vec![RungId::Baseline, RungId::Memcheck]), ..req };
        let p = plan(&req);
        assert_eq!(next(&req, &p, &done, &empty()), Next::Run(RungId::Memcheck));
    }

    #[test]
    fn full_runs_everything() {
        let req = Request { has_build: true, full: true, ..Request::default() };
        let p = plan(&req);
        let done = vec![(RungId::Baseline, RungOutcome::Ran { faulted: false, yielded: true })];
        assert_eq!(next(&req, &p, &done, &empty()), Next::Run(RungId::Rebuild));
    }
}

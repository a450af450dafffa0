//! The schedule as a value: what the climb considers next and how the rungs chosen at the
//! prompts run, folded from the policy's pure decisions ([`policy::next`], [`policy::beside`],
//! [`policy::pass_may_follow`]) into [`Considered`] and [`How`], which the driver asks about
//! and has the executor run. A new way of running rungs is a case of [`How`], not one more
//! predicate the driver consults.
//!
//! Must not: run, ask, or print anything.

use super::policy::{self, Facts, Next, Request, RungOutcome};
use crate::findings::verdict::Analysis;
use crate::model::RungId;

/// Where the climb runs, as far as the schedule cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Here {
    /// Rungs may run side by side here: on the host (a container or a job step each is the
    /// runtime's or Slurm's to place), and not for `watch`.
    pub side_by_side: bool,
    /// Nobody is asked before each rung (a person is asked after the one before it ended, so a
    /// rung cannot start early beside another).
    pub unattended: bool,
}

/// What the climb considers next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Considered {
    /// Stop: the reason, for the user.
    Stop(String),
    /// Ask about these rungs, in order: the one the policy wants first, then those that may
    /// run beside it (the sweep).
    Ask(Vec<RungId>),
}

/// How the rungs chosen at the prompts run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum How {
    /// One rung alone.
    Alone(RungId),
    /// The armed run, and on a thread beside it the pass that starts only if the armed run's
    /// end asks for it ([`policy::pass_beside_reading`]).
    WithPass { armed: RungId, pass: RungId },
    /// Rungs side by side, each on a thread of its own (the sweep).
    SideBySide(Vec<RungId>),
}

/// What the climb considers next, the rungs `done` (as the policy counts them) and the
/// verdict so far (`analysis`) given.
pub fn considered(
    req: &Request,
    plan: &[RungId],
    done: &[(RungId, RungOutcome)],
    analysis: &Analysis,
    facts: Facts,
    here: Here,
) -> Considered {
    let first = match policy::next(req, plan, done, analysis, facts) {
        Next::Stop(why) => return Considered::Stop(why),
        Next::Run(r) => r,
    };
    let others = match here.side_by_side {
        true => policy::beside(req, plan, done, analysis, facts, first),
        false => Vec::new(),
    };
    Considered::Ask(std::iter::once(first).chain(others).collect())
}

/// How the rungs `chosen` at the prompts run; `None` when none was chosen.
pub fn how(
    req: &Request,
    plan: &[RungId],
    done: &[(RungId, RungOutcome)],
    chosen: &[RungId],
    here: Here,
) -> Option<How> {
    match chosen {
        [] => None,
        [one] => {
            let pass = (here.side_by_side && here.unattended)
                .then(|| policy::pass_may_follow(req, plan, done, *one))
                .flatten();
            Some(match pass {
                Some(pass) => How::WithPass { armed: *one, pass },
                None => How::Alone(*one),
            })
        }
        many => Some(How::SideBySide(many.to_vec())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(python: bool) -> Request {
        Request { python, ..Request::default() }
    }

    const HERE: Here = Here { side_by_side: true, unattended: true };

    #[test]
    fn nothing_chosen_runs_nothing() {
        assert_eq!(how(&request(false), &[RungId::Baseline], &[], &[], HERE), None);
    }

    #[test]
    fn the_first_armed_run_of_a_native_target_takes_the_pass_beside_its_reading() {
        let plan = [RungId::Baseline, RungId::Coredump, RungId::Memcheck];
        let got = how(&request(false), &plan, &[], &[RungId::Baseline], HERE);
        assert_eq!(got, Some(How::WithPass { armed: RungId::Baseline, pass: RungId::Memcheck }));
        // Not when a person is asked before each rung, nor where rungs cannot run side by side,
        // nor for a Python target.
        let asked = Here { unattended: false, ..HERE };
        assert_eq!(
            how(&request(false), &plan, &[], &[RungId::Baseline], asked),
            Some(How::Alone(RungId::Baseline))
        );
        let apart = Here { side_by_side: false, ..HERE };
        assert_eq!(
            how(&request(false), &plan, &[], &[RungId::Baseline], apart),
            Some(How::Alone(RungId::Baseline))
        );
        assert_eq!(
            how(&request(true), &plan, &[], &[RungId::Baseline], HERE),
            Some(How::Alone(RungId::Baseline))
        );
    }

    #[test]
    fn several_chosen_run_side_by_side() {
        let chosen = [RungId::Memcheck, RungId::Initcheck];
        let got = how(&request(false), &[RungId::Memcheck, RungId::Initcheck], &[], &chosen, HERE);
        assert_eq!(got, Some(How::SideBySide(chosen.to_vec())));
    }
}

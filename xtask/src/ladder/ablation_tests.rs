//! Tests of the ablation's search on simulated targets: which knob changes make a planted
//! fault go away, deterministic and intermittent, with the number of runs it took.
//!
//! Must not: run anything (the oracles are closures over a seeded generator).

use super::*;

/// A small deterministic generator (xorshift), so that every seed replays.
struct Rng(u64);

impl Rng {
    fn coin(&mut self, p: f64) -> bool {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

/// A target whose fault needs every knob of `needs` as the user had it (no change applied to
/// it), faulting then with probability `p`.
fn target(needs: &'static [usize], p: f64, seed: u64) -> impl FnMut(&Config) -> Option<bool> {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    move |c: &Config| Some(needs.iter().all(|k| !c.contains(k)) && rng.coin(p))
}

#[test]
fn a_deterministic_fault_that_needs_two_of_six_knobs_is_explained_in_twelve_runs_or_fewer() {
    for needs in [&[1usize, 4][..], &[0, 5], &[2, 3]] {
        let needs: &'static [usize] = Box::leak(needs.to_vec().into_boxed_slice());
        let c = search(6, Budget::default(), &mut target(needs, 1.0, 1));
        assert_eq!(c.ending, Ending::Explained, "{c:?}");
        assert_eq!(c.fixes, needs, "{c:?}");
        assert_eq!(c.needs.as_deref(), Some(needs), "{c:?}");
        assert!(c.runs <= 12, "{} runs: {c:?}", c.runs);
    }
}

#[test]
fn an_intermittent_fault_is_explained_in_forty_runs_and_an_innocent_knob_is_rarely_blamed() {
    let (mut over, mut wrong, mut total) = (0, 0, 0);
    for seed in 0..400 {
        let c = search(6, Budget::default(), &mut target(&[1, 4], 0.5, seed));
        total += c.runs;
        if c.ending != Ending::Explained {
            // Out of runs, or (one search in a thousand at this rate) ten runs of the original
            // without the fault.
            assert!(matches!(c.ending, Ending::OutOfRuns | Ending::NoFault), "seed {seed}: {c:?}");
            over += 1;
            continue;
        }
        assert!(c.runs <= 40, "seed {seed}: {c:?}");
        // The culprits are always among the workarounds; a knob that changes nothing is
        // blamed only when its runs missed an intermittent fault more often than the stated
        // chance (`Budget::miss`, at the rate seen) allows.
        assert!(c.fixes.contains(&1) && c.fixes.contains(&4), "seed {seed}: {c:?}");
        if c.fixes != [1, 4] || c.needs.as_deref() != Some(&[1, 4][..]) {
            wrong += 1;
        }
    }
    let figures = format!(
        "400 searches: mean {} runs, {over} out of runs or no fault, {wrong} blamed an innocent knob",
        total / 400
    );
    // Measured (docs/why.md): a mean of 29 runs; 57 of 400 searches reached the budget of 40
    // runs first (they end with what they learnt: `OutOfRuns`), 13 blamed a knob that changes
    // nothing besides the two culprits (a clean streak of an unchanged knob at a rate of one
    // half, or five first runs that all faulted and made the fault look deterministic).
    assert!(over <= 70 && wrong <= 20 && total / 400 <= 31, "{figures}");
}

#[test]
fn a_fault_that_needs_one_knob_and_either_of_two_others_is_narrowed_by_delta_debugging() {
    // Faults when knob 0 is on and knob 2 or knob 4 is: no change alone but knob 0's helps,
    // and keeping only knob 0 on does not fault.
    let mut run = |c: &Config| Some(!c.contains(&0) && (!c.contains(&2) || !c.contains(&4)));
    let c = search(6, Budget::default(), &mut run);
    assert_eq!(c.ending, Ending::Explained, "{c:?}");
    assert_eq!(c.fixes, [0]);
    let needs = c.needs.expect("needs");
    assert!(needs == [0, 2] || needs == [0, 4], "{needs:?}");
}

#[test]
fn a_fault_no_single_change_removes_is_narrowed_from_everything_changed() {
    // Faults unless both knob 1 and knob 3 are changed: either one on is enough.
    let mut run = |c: &Config| Some(!(c.contains(&1) && c.contains(&3)));
    let c = search(5, Budget::default(), &mut run);
    assert_eq!(c.ending, Ending::Explained, "{c:?}");
    assert!(c.fixes.is_empty());
    let needs = c.needs.expect("needs");
    assert!(needs == [1] || needs == [3], "{needs:?}");
}

#[test]
fn a_fault_the_knobs_do_not_touch_is_said_so() {
    let c = search(4, Budget::default(), &mut |_: &Config| Some(true));
    assert_eq!(c.ending, Ending::NotExplained);
    assert!(c.fixes.is_empty());
    assert_eq!(c.needs, None);
}

#[test]
fn a_target_that_never_faults_ends_after_its_first_tries() {
    let budget = Budget { first_tries: 3, ..Budget::default() };
    let c = search(4, budget, &mut |_: &Config| Some(false));
    assert_eq!(c.ending, Ending::NoFault);
    assert_eq!(c.runs, 3);
}

#[test]
fn the_budget_and_a_stop_end_the_search_with_what_was_learnt() {
    let budget = Budget { max_runs: 5, ..Budget::default() };
    let c = search(6, budget, &mut target(&[1, 4], 1.0, 3));
    assert_eq!(c.ending, Ending::OutOfRuns);
    assert_eq!(c.runs, 5);
    assert_eq!(c.tried.len(), 5, "{c:?}");
    let mut n = 0;
    let c = search(6, Budget::default(), &mut |_: &Config| {
        n += 1;
        (n < 3).then_some(true)
    });
    assert_eq!(c.ending, Ending::Stopped);
    assert_eq!(c.runs, 2);
}

#[test]
fn chunks_cover_the_items_in_order() {
    assert_eq!(split(&[1, 2, 3, 4, 5], 2), vec![vec![1, 2], vec![3, 4, 5]]);
    assert_eq!(split(&[1, 2, 3], 3), vec![vec![1], vec![2], vec![3]]);
    assert_eq!(split(&[1, 2], 5), vec![vec![1], vec![2]]);
}

//! Ablation's search (`debug-ima ablate`, docs/why.md): which of a recipe's knobs the fault
//! needs. A configuration is the set of knob changes applied to the user's run (the empty set
//! is the run as the user gave it). The search runs the original until it faults, then each
//! change alone (the changes that make the fault go away are the workarounds), then confirms
//! that keeping only those on still faults (or, where it does not, or where no change alone
//! helps, narrows the set that must stay on by delta debugging). A run that faults decides its
//! configuration at once; a clean verdict needs as many clean runs as make a miss unlikely at
//! the fault's observed rate (`miss`), so an intermittent fault costs repeats and a
//! deterministic one does not. It stops at its budget of runs.
//!
//! Must not: run anything itself (the caller's `run` does, one armed run per call), print, or
//! read files: it is the pure decision, tested on simulated oracles.

use std::collections::{BTreeMap, BTreeSet};

/// A configuration: the indices of the knob changes applied.
pub type Config = BTreeSet<usize>;

/// What the search is allowed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// The most runs in all.
    pub max_runs: u32,
    /// The most runs of the original before giving up on seeing the fault.
    pub first_tries: u32,
    /// The chance of calling a configuration clean while it would still fault, at the fault's
    /// observed rate: a clean verdict needs that many clean runs.
    pub miss: f64,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget { max_runs: 40, first_tries: 10, miss: 0.005 }
    }
}

/// How one configuration's runs went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub runs: u32,
    pub faults: u32,
}

/// How the search ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// The original did not fault in its tries: nothing to explain.
    NoFault,
    /// Every change applied at once still faults: the knobs do not explain it.
    NotExplained,
    /// The fault needs `needs` on (each one's change alone makes it go away when `fixes`
    /// holds it).
    Explained,
    /// The budget ended first; what was learnt so far stands.
    OutOfRuns,
    /// The caller stopped it (an interruption, a run that could not start).
    Stopped,
}

/// What the search found.
#[derive(Debug, Clone, PartialEq)]
pub struct Conclusion {
    pub ending: Ending,
    /// Every configuration tried, in the order first tried, with its runs.
    pub tried: Vec<(Config, Tally)>,
    /// The changes that alone make the fault go away.
    pub fixes: Vec<usize>,
    /// The smallest set of knobs (by change index) that must stay as the user had them for
    /// the fault to appear, once established.
    pub needs: Option<Vec<usize>>,
    /// The fault's rate over the runs of configurations that faulted: (faults, runs).
    pub rate: (u32, u32),
    pub runs: u32,
}

/// Runs the search over `n` changes; `run` makes one armed run of a configuration and says
/// whether it faulted (`None` stops the search: interrupted, or the run could not start).
pub fn search(n: usize, budget: Budget, run: &mut dyn FnMut(&Config) -> Option<bool>) -> Conclusion {
    let mut s = Search {
        budget,
        tallies: BTreeMap::new(),
        order: Vec::new(),
        runs: 0,
        run,
        needs: None,
        decided: BTreeMap::new(),
    };
    let ending = s.climb(n);
    let fixes: Vec<usize> = (0..n).filter(|&i| s.clean(&single(i))).collect();
    let needs = s.needs.take();
    let rate = s.rate();
    let tried = s.order.iter().map(|c| (c.clone(), s.tallies[c])).collect();
    Conclusion { ending, tried, fixes, needs, rate, runs: s.runs }
}

/// Why the search stopped early.
enum Halt {
    OutOfRuns,
    Stopped,
}

struct Search<'r> {
    budget: Budget,
    tallies: BTreeMap<Config, Tally>,
    order: Vec<Config>,
    runs: u32,
    run: &'r mut dyn FnMut(&Config) -> Option<bool>,
    /// The set that must stay on, once established.
    needs: Option<Vec<usize>>,
    /// Each configuration's decision, made once: whether it faults.
    decided: BTreeMap<Config, bool>,
}

fn single(i: usize) -> Config {
    Config::from([i])
}

fn all(n: usize) -> Config {
    (0..n).collect()
}

impl Search<'_> {
    fn climb(&mut self, n: usize) -> Ending {
        match self.steps(n) {
            Ok(e) => e,
            Err(Halt::OutOfRuns) => Ending::OutOfRuns,
            Err(Halt::Stopped) => Ending::Stopped,
        }
    }

    fn steps(&mut self, n: usize) -> Result<Ending, Halt> {
        let original = Config::new();
        while self.tally(&original).faults == 0 {
            if self.tally(&original).runs >= self.budget.first_tries {
                return Ok(Ending::NoFault);
            }
            self.once(&original)?;
        }
        // Each change alone: one run each first (the faulting ones are decided at once and
        // tell the fault's rate), then the repeats the undecided need.
        for i in 0..n {
            self.once(&single(i))?;
        }
        self.decide_all(&(0..n).map(single).collect::<Vec<_>>())?;
        let fixes: Vec<usize> = (0..n).filter(|&i| self.clean(&single(i))).collect();
        let everything = all(n);
        let keep =
            |on: &[usize]| -> Config { everything.iter().copied().filter(|i| !on.contains(i)).collect() };
        if fixes.is_empty() {
            if self.decide(&everything)? {
                return Ok(Ending::NotExplained);
            }
            let rest: Vec<usize> = (0..n).collect();
            self.needs = Some(self.ddmin(&[], rest, &keep)?);
            return Ok(Ending::Explained);
        }
        // Only the workarounds' knobs left as the user had them: does it still fault?
        if self.decide(&keep(&fixes))? {
            let fixes = self.top_up(fixes)?;
            self.needs = Some(fixes);
            return Ok(Ending::Explained);
        }
        let rest: Vec<usize> = (0..n).filter(|i| !fixes.contains(i)).collect();
        let more = self.ddmin(&fixes, rest, &keep)?;
        let mut needs: Vec<usize> = fixes.into_iter().chain(more).collect();
        needs.sort_unstable();
        self.needs = Some(needs);
        Ok(Ending::Explained)
    }
}

impl Search<'_> {
    fn tally(&self, c: &Config) -> Tally {
        self.tallies.get(c).copied().unwrap_or_default()
    }

    /// One more run of `c`.
    fn once(&mut self, c: &Config) -> Result<bool, Halt> {
        if self.runs >= self.budget.max_runs {
            return Err(Halt::OutOfRuns);
        }
        let faulted = (self.run)(c).ok_or(Halt::Stopped)?;
        self.runs += 1;
        if !self.tallies.contains_key(c) {
            self.order.push(c.clone());
        }
        let t = self.tallies.entry(c.clone()).or_default();
        t.runs += 1;
        t.faults += u32::from(faulted);
        Ok(faulted)
    }

    /// The fault's rate over the runs of configurations that faulted: (faults, runs).
    fn rate(&self) -> (u32, u32) {
        self.tallies.values().filter(|t| t.faults > 0).fold((0, 0), |(f, r), t| (f + t.faults, r + t.runs))
    }

    /// Clean runs needed to call a configuration clean: the fewest `r` with
    /// `(1 - p)^r <= miss`. While every configuration that faulted faulted on each of its
    /// runs, `p` is their rate with half a fault and half a clean run added (a few faulting
    /// runs are not taken for certainty). Once one of them also ran clean (the fault is
    /// intermittent), `p` is at most one half: runs that stop at their first fault make a
    /// rate look higher than it is, and a few lucky ones would cut the clean runs asked of
    /// a knob that changes nothing.
    fn needed(&self) -> u32 {
        let (f, n) = self.rate();
        let intermittent = self.tallies.values().any(|t| t.faults > 0 && t.runs > t.faults);
        let smoothed = (f as f64 + 0.5) / (n as f64 + 1.0);
        let p = if intermittent { smoothed.min(0.5) } else { smoothed }.clamp(1e-3, 1.0 - 1e-9);
        let r = (self.budget.miss.ln() / (1.0 - p).ln()).ceil();
        (r.max(1.0) as u32).min(self.budget.max_runs)
    }

    /// Whether `c` was decided clean.
    fn clean(&self, c: &Config) -> bool {
        self.decided.get(c) == Some(&false)
    }

    /// Decides `c` if its runs decide it now (a fault, or enough clean runs); its decision.
    fn settle(&mut self, c: &Config) -> Option<bool> {
        if let Some(&d) = self.decided.get(c) {
            return Some(d);
        }
        let t = self.tally(c);
        let d = if t.faults > 0 {
            true
        } else if t.runs >= self.needed() {
            false
        } else {
            return None;
        };
        self.decided.insert(c.clone(), d);
        Some(d)
    }

    /// Runs `c` until it faults (true) or is clean (false).
    fn decide(&mut self, c: &Config) -> Result<bool, Halt> {
        loop {
            if let Some(d) = self.settle(c) {
                return Ok(d);
            }
            self.once(c)?;
        }
    }

    /// The workarounds `fixes` once more, each run clean as often as the fault's rate asks
    /// now (it may have fallen since they were called clean); those that fault after all are
    /// workarounds no more. The ones that stay.
    fn top_up(&mut self, fixes: Vec<usize>) -> Result<Vec<usize>, Halt> {
        let mut kept = Vec::new();
        for i in fixes {
            let c = single(i);
            while self.tally(&c).faults == 0 && self.tally(&c).runs < self.needed() {
                self.once(&c)?;
            }
            if self.tally(&c).faults > 0 {
                self.decided.insert(c, true);
            } else {
                kept.push(i);
            }
        }
        Ok(kept)
    }

    /// Decides every configuration of `cs`, round by round (one more run of each undecided
    /// per round), until none is left undecided with the rate as it stands at the end.
    fn decide_all(&mut self, cs: &[Config]) -> Result<(), Halt> {
        loop {
            let open: Vec<Config> = cs.iter().filter(|c| self.settle(c).is_none()).cloned().collect();
            if open.is_empty() {
                return Ok(());
            }
            for c in &open {
                self.once(c)?;
            }
        }
    }

    /// Delta debugging: the smallest subset `k` of `items` such that the configuration that
    /// keeps `kept` and `k` as the user had them (`keep`) still faults, knowing that keeping
    /// all of `items` does (the original).
    fn ddmin(
        &mut self,
        kept: &[usize],
        items: Vec<usize>,
        keep: &dyn Fn(&[usize]) -> Config,
    ) -> Result<Vec<usize>, Halt> {
        let on = |k: &[usize]| -> Vec<usize> { kept.iter().chain(k).copied().collect() };
        let mut c = items;
        let mut parts = 2;
        while c.len() >= 2 {
            let chunks: Vec<Vec<usize>> = split(&c, parts);
            let mut next = None;
            for ch in &chunks {
                if self.decide(&keep(&on(ch)))? {
                    next = Some((ch.clone(), 2));
                    break;
                }
            }
            if next.is_none() && parts > 2 {
                for ch in &chunks {
                    let complement: Vec<usize> = c.iter().copied().filter(|i| !ch.contains(i)).collect();
                    if self.decide(&keep(&on(&complement)))? {
                        next = Some((complement, (parts - 1).max(2)));
                        break;
                    }
                }
            }
            match next {
                Some((smaller, p)) => {
                    c = smaller;
                    parts = p;
                }
                None if parts >= c.len() => break,
                None => parts = (parts * 2).min(c.len()),
            }
        }
        Ok(c)
    }
}

/// `items` in `parts` chunks of nearly equal size, in order.
fn split(items: &[usize], parts: usize) -> Vec<Vec<usize>> {
    let parts = parts.clamp(1, items.len().max(1));
    let mut out = Vec::new();
    let mut start = 0;
    for k in 0..parts {
        let end = start + (items.len() - start) / (parts - k);
        out.push(items[start..end].to_vec());
        start = end;
    }
    out
}

#[cfg(test)]
#[path = "ablation_tests.rs"]
mod tests;

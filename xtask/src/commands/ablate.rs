//! `debug-ima ablate`: which of the recipe's knobs (`knobs:`, docs/recipes.md) the fault
//! needs. Doctor's preflight as `run` does, then one parent bundle (`<recipe>-ablate`); each
//! run of a configuration (a set of knob changes applied to the recipe's run) is one armed
//! run (the climb with the baseline alone) into its own bundle under the parent's `runs/`.
//! The search ([`crate::ladder::ablation`]) chooses what runs next; this file runs it, says
//! each run's result, and writes the table and the conclusion (`ablation.md`,
//! `ablation.json`) into the parent bundle, which it seals. Ctrl-C ends it with what was
//! learnt. docs/why.md.
//!
//! Must not: decide which configuration runs next (the search), climb past the armed run,
//! print other than through `ui`, or spawn other than through the climb.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use anyhow::{Context, Result};

use super::{preflight, Outcome};
use crate::bundle::{layout, Bundle};
use crate::doctor;
use crate::findings::verdict::Analysis;
use crate::ladder::ablation::{self, Budget, Conclusion, Config, Ending};
use crate::ladder::driver::{Climb, Stopped};
use crate::ladder::policy::Request;
use crate::ladder::rung::Debug;
use crate::model::{RungId, Usage};
use crate::process::Interrupt;
use crate::recipe::{self, Knob, Resolved};
use crate::ui;

/// The one-line help of `ablate`.
pub const ABOUT: &str = "Find which of the recipe's knobs (settings) the fault needs, by armed runs with \
                         knobs changed";

/// The long help of `ablate`.
pub const LONG_ABOUT: &str = "Find which of the recipe's knobs the fault needs: the settings its `knobs:` \
     declare (torch.compile, CUDA graphs, the caching allocator, vLLM's flags for the built-in \
     `pytorch` and `vllm` recipes). Each run is one armed run (the ladder's baseline: the GPU \
     coredump, the launch site) of the recipe with some knob changes applied, into its own bundle \
     under one parent bundle. It runs the original until it faults, then each change alone (those \
     that make the fault go away are workarounds), then checks that keeping only those as given \
     still faults, narrowing by delta debugging where not. A faulting run decides its \
     configuration at once; a clean verdict takes as many clean runs as make a miss less likely \
     than `--miss` at the fault's observed rate, so an intermittent fault costs repeats. It ends \
     with a table (configuration, faulted k of n, verdicts) and one line naming the knobs the fault \
     needs, also in the parent bundle's `ablation.md` and `ablation.json` (`bundle report` shows \
     it). docs/why.md.\n\n\
     Exit codes: 0 the search ran (whatever it found), 1 it could not (the message says why), 2 \
     usage, 130 interrupted by Ctrl-C (what was learnt is kept and said).";

/// The options of `ablate`.
#[derive(Debug, Clone, clap::Args)]
pub struct AblateArgs {
    #[command(flatten)]
    pub recipe: super::args::RecipeArgs,
    /// A knob to try (repeatable; default: every knob of the recipe), by its name in the
    /// recipe's `knobs:`.
    #[arg(long = "knob", value_name = "NAME")]
    pub knobs: Vec<String>,
    /// The most runs in all; the search ends with what it learnt when they are spent.
    #[arg(long, value_name = "N", default_value_t = 40, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_runs: u32,
    /// The chance allowed of calling a configuration clean while it would still fault, at the
    /// fault's observed rate (default 0.005): a smaller one asks more clean runs of each.
    #[arg(long, value_name = "P")]
    pub miss: Option<f64>,
    /// Each run's time limit (overrides the recipe's `run.timeout`).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=2_592_000))]
    pub timeout: Option<u64>,
    /// Prints the knobs and the run each one's change makes, and runs nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// No prompts (ablate asks none; accepted as `debug-ima run` accepts it).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Where the bundle goes (default: `bundles/` in the current directory).
    #[arg(long, value_name = "DIR")]
    pub bundle_dir: Option<PathBuf>,
    /// With `--recipe`, in place of the recipe's run command: the recipe gives the rest (its
    /// environment, its knobs).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// One run the search asked for.
#[derive(Debug, Clone, serde::Serialize)]
struct RunRecord {
    run: u32,
    knobs: Vec<String>,
    faulted: bool,
    /// The verdict in one line, `clean`, or what the fault was without a verdict.
    result: String,
    /// The run's bundle, relative to the parent bundle.
    bundle: String,
}

/// The recipe resolved, and the knobs chosen by `--knob`.
fn recipe_and_knobs(args: &AblateArgs) -> Result<(Resolved, Vec<Knob>)> {
    let Some(name) = &args.recipe.recipe else {
        return Err(Usage::error(
            "`ablate` needs a recipe with `knobs:` (`--recipe pytorch`, `--recipe vllm`, or a file): \
             they are the settings it changes (docs/why.md)",
        ));
    };
    let mut r = recipe::load(name)?;
    // Each run is the armed run alone: no build (a build needed runs with `debug-ima run` first).
    r.build = None;
    if !args.command.is_empty() {
        r = super::args::with_command(r, &args.command);
    }
    let mut resolved = recipe::resolve(&r, &args.recipe.values()?, &BTreeMap::new())?;
    if let Some(secs) = args.timeout {
        resolved.run.timeout = Some(std::time::Duration::from_secs(secs));
    }
    if resolved.knobs.is_empty() {
        return Err(Usage::error(format!(
            "the recipe `{}` declares no knobs: add a `knobs:` list (docs/recipes.md) of the settings to try",
            resolved.name
        )));
    }
    let knobs = if args.knobs.is_empty() {
        resolved.knobs.clone()
    } else {
        let mut chosen: Vec<Knob> = Vec::new();
        for n in &args.knobs {
            let Some(k) = resolved.knobs.iter().find(|k| &k.name == n) else {
                let names: Vec<String> = resolved.knobs.iter().map(|k| format!("`{}`", k.name)).collect();
                return Err(Usage::error(format!(
                    "`--knob {n}`: the recipe `{}` has no such knob; it has {}",
                    resolved.name,
                    names.join(", ")
                )));
            };
            if !chosen.iter().any(|c| c.name == k.name) {
                chosen.push(k.clone());
            }
        }
        chosen
    };
    Ok((resolved, knobs))
}

/// The budget of the search from `--max-runs` and `--miss`.
fn budget(args: &AblateArgs) -> Result<Budget> {
    let mut b = Budget { max_runs: args.max_runs, ..Budget::default() };
    if let Some(p) = args.miss {
        if !(p > 0.0 && p < 1.0) {
            return Err(Usage::error(format!("`--miss {p}`: give a chance between 0 and 1, e.g. 0.005")));
        }
        b.miss = p;
    }
    b.first_tries = b.first_tries.min(b.max_runs);
    Ok(b)
}

/// Runs `ablate`.
pub fn run(args: AblateArgs) -> Result<Outcome> {
    let interrupt = Interrupt::install()?;
    let (resolved, knobs) = recipe_and_knobs(&args)?;
    let budget = budget(&args)?;
    if args.dry_run {
        let text = dry_run(&resolved, &knobs, &budget);
        ui::out(&crate::redact::redact_text(&text, "plan", &mut Vec::new()))?;
        return Ok(Outcome::Done);
    }
    preflight::check(&resolved, true)?;
    let env = std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
    crate::redact::remember(crate::redact::secret_values(
        env,
        &serde_json::to_value(&resolved).unwrap_or_default(),
    ));
    let plan = vec![RungId::Baseline];
    let req = Request { rungs: Some(plan.clone()), python: resolved.python, ..Request::default() };
    let bundle_root = args.bundle_dir.clone().unwrap_or_else(|| PathBuf::from(layout::DEFAULT_ROOT));
    let report = doctor::run_checks(&doctor::Options {
        coredump_dir: bundle_root.clone(),
        need: plan.clone(),
        container: None,
        wait_for_gpu: true,
    });
    if interrupt.is_set() {
        ui::status("interrupted while checking the machine: nothing ran, no bundle was written");
        return Ok(Outcome::Interrupted);
    }
    let (runnable, _) = doctor::gate(&report, &plan, true, false)?;
    if !runnable.contains(&RungId::Baseline) {
        return Err(anyhow::anyhow!("this machine cannot make the armed run: `debug-ima doctor` says why"));
    }
    let path = super::debug_ima::tool_path(&report)?;
    let recipe_value = serde_json::to_value(&resolved).context("cannot record the recipe")?;
    let mut parent = Bundle::create(&bundle_root, &format!("{}-ablate", resolved.name), &recipe_value)?;
    parent.start(doctor::versions(&report), plan.clone())?;
    parent.write_file(&layout::env_file(layout::DOCTOR), &doctor::render(&report))?;
    ui::status(&format!("bundle: {}", ui::safe(&parent.root().display().to_string(), true)));
    let names: Vec<&str> = knobs.iter().map(|k| k.name.as_str()).collect();
    ui::status(&format!("knobs: {} (at most {} runs)", names.join(", "), budget.max_runs));

    let runs_dir = parent.root().join(layout::ABLATION_RUNS);
    let versions = doctor::versions(&report);
    let mut records: Vec<RunRecord> = Vec::new();
    let mut verdicts: BTreeMap<Config, Vec<String>> = BTreeMap::new();
    let mut failure: Option<anyhow::Error> = None;
    let mut one = |c: &Config| -> Option<bool> {
        if interrupt.is_set() {
            return None;
        }
        let n = records.len() as u32 + 1;
        let label = config_label(&knobs, c);
        let mut r = resolved.clone();
        for &i in c {
            knobs[i].apply(&mut r.run);
        }
        let climb = Climb {
            recipe: &r,
            request: &req,
            plan: &plan,
            debug: Debug::LineInfo,
            inherited_prepend: None,
            inherited_pythonpath: std::env::var("PYTHONPATH").ok(),
            gpus: report.gpus().len(),
            path: path.clone(),
            launchers: Default::default(),
            interrupt: interrupt.clone(),
        };
        let made = child_bundle(&runs_dir, n, c, &knobs, &r, &versions, &plan);
        let child = match made {
            Ok(b) => b,
            Err(e) => {
                failure = Some(e);
                return None;
            }
        };
        let climbed = climb.run(child, &mut ui::NonInteractive, &ui::Terminal);
        let (child, analysis, outcome) = (climbed.bundle, climbed.analysis, climbed.outcome);
        let outcome = super::seal::seal(&child, outcome);
        let rel = child.root().strip_prefix(parent.root()).unwrap_or(child.root()).display().to_string();
        match outcome {
            Ok(Stopped::Interrupted) => return None,
            Ok(_) if interrupt.is_set() => return None,
            Ok(_) => {}
            Err(e) => {
                failure = Some(e.context(format!("run {n} ({label}) could not run; its bundle: {rel}")));
                return None;
            }
        }
        let faulted = faulted(&analysis);
        let result = result_line(&analysis, faulted);
        ui::status(&format!("run {n}/≤{}: {label}: {}", budget.max_runs, ui::safe(&result, true)));
        if faulted {
            verdicts.entry(c.clone()).or_default().push(result.clone());
        }
        let knobs_on = c.iter().map(|&i| knobs[i].name.clone()).collect();
        records.push(RunRecord { run: n, knobs: knobs_on, faulted, result, bundle: rel });
        Some(faulted)
    };
    let conclusion = ablation::search(knobs.len(), budget, &mut one);

    let text = render_md(&knobs, &conclusion, &verdicts, &budget);
    let json = render_json(&knobs, &conclusion, &records, &budget);
    parent.write_file(layout::ABLATION_MD, &text)?;
    parent.write_file(layout::ABLATION_JSON, &(serde_json::to_string_pretty(&json)? + "\n"))?;
    parent.set_stopped(conclusion_line(&knobs, &conclusion, &budget));
    parent.write_manifest()?;
    let sealed = super::seal::seal(&parent, Ok(()));
    ui::out(&format!("{text}bundle: {}\n", ui::safe(&parent.root().display().to_string(), true)))?;
    sealed?;
    if let Some(e) = failure {
        return Err(e);
    }
    if conclusion.ending == Ending::Stopped || interrupt.is_set() {
        return Ok(Outcome::Interrupted);
    }
    Ok(Outcome::Done)
}

/// `--dry-run`: the original run, then each knob with its change and the run it makes; what
/// the search may run (each configuration is one armed run: `debug-ima run --rungs baseline
/// --dry-run` shows its exact steps).
fn dry_run(r: &Resolved, knobs: &[Knob], budget: &Budget) -> String {
    let env = |s: &recipe::Step| -> String {
        let mut parts: Vec<String> =
            s.env.iter().map(|(k, v)| format!("{k}={}", recipe::join_words(&[v]))).collect();
        parts.extend(s.env_remove.iter().map(|k| format!("-u {k}")));
        parts.join(" ")
    };
    let line = |s: &recipe::Step| -> String {
        let e = env(s);
        let cmd = recipe::join_words(&s.argv);
        if e.is_empty() {
            cmd
        } else {
            format!("{e} {cmd}")
        }
    };
    let mut out = format!(
        "ablation of the recipe `{}`: at most {} runs, a clean verdict at a miss under {} %; each run is one \
         armed run (`debug-ima run --rungs baseline`) into its own bundle\n\noriginal:\n  {}\n",
        r.name,
        budget.max_runs,
        percent(budget.miss),
        line(&r.run)
    );
    for k in knobs {
        let mut run = r.run.clone();
        k.apply(&mut run);
        out.push_str(&format!("{} ({}): {}\n  {}\n", k.name, k.description, k.change(), line(&run)));
    }
    out
}

/// The bundle of run `n`, under the parent's `runs/`, named by the knobs applied.
fn child_bundle(
    runs_dir: &std::path::Path,
    n: u32,
    c: &Config,
    knobs: &[Knob],
    r: &Resolved,
    versions: &BTreeMap<String, String>,
    plan: &[RungId],
) -> Result<Bundle> {
    let applied: Vec<&str> = c.iter().map(|&i| knobs[i].name.as_str()).collect();
    let name = if applied.is_empty() {
        format!("run{n:02}-original")
    } else {
        format!("run{n:02}-{}", applied.join("+"))
    };
    let value = serde_json::to_value(r).context("cannot record the recipe")?;
    let mut b = Bundle::create(runs_dir, &name, &value)?;
    b.start(versions.clone(), plan.to_vec())?;
    Ok(b)
}

/// Whether the armed run faulted: a verdict, or a run of the target in which a fault showed
/// (a device error in its exit or output, a dump).
fn faulted(a: &Analysis) -> bool {
    a.verdict.is_some() || a.reproduced.is_some_and(|r| r.faulted > 0)
}

/// A run's result in one line: the verdict (`illegal-address in `k` at x.py:12`), what a
/// fault without one showed, or `clean`.
fn result_line(a: &Analysis, faulted: bool) -> String {
    match &a.verdict {
        Some(v) => {
            let at = match (&v.file, v.line) {
                (Some(f), Some(l)) => format!("{f}:{l}"),
                _ => "an unknown line".to_string(),
            };
            format!("faulted ({} in `{}` at {at})", v.error.as_str(), v.kernel)
        }
        None if faulted => "faulted (no verdict)".to_string(),
        None => "clean".to_string(),
    }
}

/// A configuration as the table says it: the knobs applied, or `original`.
fn config_label(knobs: &[Knob], c: &Config) -> String {
    if c.is_empty() {
        return "original".to_string();
    }
    c.iter().map(|&i| knobs[i].name.as_str()).collect::<Vec<_>>().join(" + ")
}

/// `a`, `a and b`, `a, b and c`, each in backquotes.
fn and_list(names: &[&str]) -> String {
    let q: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match q.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// A percentage with at most one decimal: `100`, `47.5`.
fn percent(x: f64) -> String {
    let s = format!("{:.1}", x * 100.0);
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

/// The conclusion in one line.
fn conclusion_line(knobs: &[Knob], c: &Conclusion, budget: &Budget) -> String {
    let name = |i: &usize| knobs[*i].name.as_str();
    let fixes: Vec<&str> = c.fixes.iter().map(name).collect();
    let (f, n) = c.rate;
    let rate = if n > 0 { percent(f as f64 / n as f64) } else { "?".into() };
    let clean: (u32, u32) = c
        .tried
        .iter()
        .filter(|(cfg, _)| cfg.len() == 1 && cfg.iter().all(|i| c.fixes.contains(i)))
        .fold((0, 0), |(k, m), (_, t)| (k + t.runs - t.faults, m + t.runs));
    let chance =
        format!("a miss at the fault's rate of {rate} % has a chance under {} %", percent(budget.miss));
    match (&c.ending, &c.needs) {
        (Ending::NoFault, _) => format!(
            "the fault did not show in {} runs of the original configuration: nothing to explain",
            c.runs
        ),
        (Ending::NotExplained, _) => format!(
            "the fault does not need any of the knobs ({}): with every change applied it still faults",
            and_list(&knobs.iter().map(|k| k.name.as_str()).collect::<Vec<_>>())
        ),
        (Ending::Explained, Some(needs)) if !fixes.is_empty() => {
            let needs: Vec<&str> = needs.iter().map(name).collect();
            let which = match fixes.len() {
                1 => "applying it",
                2 => "applying either",
                _ => "applying any one",
            };
            format!(
                "the fault needs what {} change left as given: {which}: clean in {} of {} runs ({chance})",
                and_list(&needs),
                clean.0,
                clean.1
            )
        }
        (Ending::Explained, Some(needs)) => format!(
            "no single knob makes the fault go away, every change at once does; it still faults with only {} \
             left as given",
            and_list(&needs.iter().map(name).collect::<Vec<_>>())
        ),
        (ending, _) => {
            let why = if *ending == Ending::OutOfRuns {
                format!("the budget of {} runs ended first", budget.max_runs)
            } else {
                format!("stopped after {} run{}", c.runs, if c.runs == 1 { "" } else { "s" })
            };
            if fixes.is_empty() {
                format!("{why}: no knob was found to make the fault go away yet")
            } else {
                format!(
                    "{why}: so far applying {} alone made the fault go away (not confirmed)",
                    and_list(&fixes)
                )
            }
        }
    }
}

/// `ablation.md`: the table of the configurations tried and the conclusion; whether the
/// verdicts differ between faulting configurations.
fn render_md(
    knobs: &[Knob],
    c: &Conclusion,
    verdicts: &BTreeMap<Config, Vec<String>>,
    budget: &Budget,
) -> String {
    let cell = |s: &str| ui::safe(s, true).replace('|', "\\|");
    let mut s = String::from("| configuration | faulted | verdict |\n|---|---|---|\n");
    for (cfg, t) in &c.tried {
        let mut seen: Vec<&str> = Vec::new();
        for v in verdicts.get(cfg).into_iter().flatten() {
            if !seen.contains(&v.as_str()) {
                seen.push(v);
            }
        }
        let shown = if seen.is_empty() { "clean".to_string() } else { seen.join("; ") };
        s.push_str(&format!(
            "| {} | {}/{} | {} |\n",
            cell(&config_label(knobs, cfg)),
            t.faults,
            t.runs,
            cell(&shown)
        ));
    }
    s.push('\n');
    let distinct: BTreeSet<&String> = verdicts.values().flatten().collect();
    if distinct.len() > 1 {
        s.push_str("the verdicts differ between faulting configurations:\n");
        for (cfg, vs) in verdicts {
            let mut seen: Vec<&str> = vs.iter().map(String::as_str).collect();
            seen.dedup();
            s.push_str(&format!("- {}: {}\n", config_label(knobs, cfg), ui::safe(&seen.join("; "), true)));
        }
        s.push('\n');
    }
    s.push_str(&conclusion_line(knobs, c, budget));
    s.push_str(&format!(" [{} runs]\n", c.runs));
    s
}

fn ending_name(e: &Ending) -> &'static str {
    match e {
        Ending::NoFault => "no-fault",
        Ending::NotExplained => "not-explained",
        Ending::Explained => "explained",
        Ending::OutOfRuns => "out-of-runs",
        Ending::Stopped => "stopped",
    }
}

/// `ablation.json`: the same for machines.
fn render_json(knobs: &[Knob], c: &Conclusion, records: &[RunRecord], budget: &Budget) -> serde_json::Value {
    let names = |ix: &[usize]| -> Vec<&str> { ix.iter().map(|&i| knobs[i].name.as_str()).collect() };
    let configurations: Vec<serde_json::Value> = c
        .tried
        .iter()
        .map(|(cfg, t)| {
            let applied: Vec<usize> = cfg.iter().copied().collect();
            serde_json::json!({ "knobs": names(&applied), "runs": t.runs, "faults": t.faults })
        })
        .collect();
    serde_json::json!({
        "ending": ending_name(&c.ending),
        "conclusion": conclusion_line(knobs, c, budget),
        "knobs": knobs.iter().map(|k| serde_json::json!({
            "name": k.name, "description": k.description, "change": k.change()
        })).collect::<Vec<_>>(),
        "needs": c.needs.as_deref().map(names),
        "fixes": names(&c.fixes),
        "rate": { "faults": c.rate.0, "runs": c.rate.1 },
        "budget": { "max_runs": budget.max_runs, "first_tries": budget.first_tries, "miss": budget.miss },
        "runs": c.runs,
        "configurations": configurations,
        "run_records": records,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ladder::ablation::Tally;

    fn knob(name: &str) -> Knob {
        Knob {
            name: name.into(),
            description: String::new(),
            env: BTreeMap::from([(name.to_uppercase(), "1".into())]),
            env_remove: Vec::new(),
            args_add: Vec::new(),
            args_remove: Vec::new(),
        }
    }

    #[test]
    fn the_conclusion_names_the_culprits_and_the_clean_runs() {
        let knobs: Vec<Knob> = ["a", "b", "c"].map(knob).to_vec();
        let t = |runs, faults| Tally { runs, faults };
        let c = Conclusion {
            ending: Ending::Explained,
            tried: vec![
                (Config::new(), t(1, 1)),
                (Config::from([0]), t(3, 0)),
                (Config::from([1]), t(1, 1)),
                (Config::from([2]), t(3, 0)),
                (Config::from([1]), t(1, 1)),
            ],
            fixes: vec![0, 2],
            needs: Some(vec![0, 2]),
            rate: (3, 3),
            runs: 9,
        };
        let line = conclusion_line(&knobs, &c, &Budget::default());
        assert_eq!(
            line,
            "the fault needs what `a` and `c` change left as given: applying either: clean in 6 of 6 runs \
             (a miss at the fault's rate of 100 % has a chance under 0.5 %)"
        );
        let verdicts = BTreeMap::from([
            (Config::new(), vec!["faulted (x in `k` at a.py:1)".to_string()]),
            (Config::from([1]), vec!["faulted (y in `k` at a.py:2)".to_string()]),
        ]);
        let md = render_md(&knobs, &c, &verdicts, &Budget::default());
        assert!(md.contains("| original | 1/1 | faulted (x in `k` at a.py:1) |"), "{md}");
        assert!(md.contains("| a | 0/3 | clean |"), "{md}");
        assert!(md.contains("the verdicts differ between faulting configurations"), "{md}");
        let json = render_json(&knobs, &c, &[], &Budget::default());
        assert_eq!(json["needs"], serde_json::json!(["a", "c"]));
        assert_eq!(json["ending"], "explained");
    }
}

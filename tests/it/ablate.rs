//! `debug-ima ablate` run as the real binary against the stand-ins (tests/standins/): the
//! target is `knobbed`, which replays the recorded out-of-bounds write of an H200 (the stand-in
//! target) only while the variables of two of its recipe's five knobs are unset, and runs
//! clean otherwise. The search must name those two, never an innocent knob, within the runs
//! the issue allows; the parent bundle holds the table and the conclusion.
//!
//! Must not: run a real GPU program, or leave a stand-in running.

use crate::support;
use support::run::Run;
use support::{fixture, path_with, standins, Scratch};

/// A recipe whose run is the `knobbed` stand-in, with five knobs that each set a variable.
fn recipe() -> String {
    let mut s = String::from(
        "version: 1\nname: knobbed\ndescription: \"a stand-in that faults unless knob a or c is applied\"\n\
         run:\n  command: [\"knobbed\"]\n  timeout: 30\nknobs:\n",
    );
    for k in ["a", "b", "c", "d", "e"] {
        let var = format!("STANDIN_KNOB_{}", k.to_uppercase());
        s.push_str(&format!(
            "  - name: knob-{k}\n    description: sets {var}\n    env: {{ {var}: \"1\" }}\n"
        ));
    }
    s
}

fn ablate<'a>(s: &'a Scratch, recipe: &std::path::Path) -> Run<'a> {
    let args = ["ablate", "--recipe", &recipe.display().to_string(), "--yes", "--bundle-dir"]
        .into_iter()
        .map(String::from)
        .chain([s.bundles().display().to_string()])
        .collect();
    let env = vec![
        ("STANDIN_CASE".to_string(), fixture("oob_write").display().to_string()),
        ("STANDIN_PIDS".to_string(), s.pids_file().display().to_string()),
        ("STANDIN_KNOBS_LOG".to_string(), s.path("knobs.log").display().to_string()),
    ];
    Run { scratch: s, args, env, path: path_with(&[&standins()]), stdin: None }
}

#[test]
fn a_fault_that_needs_two_of_five_knobs_is_blamed_on_those_two_in_twelve_runs_or_fewer() {
    let s = Scratch::for_run("ablate-two-of-five");
    let recipe = s.write_recipe(&recipe());
    let out = ablate(&s, &recipe).run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let last = out.stdout.lines().rev().find(|l| l.starts_with("the fault")).unwrap_or_default().to_string();
    assert!(last.contains("`knob-a` and `knob-c`"), "{last}\n{}", out.both());
    for innocent in ["knob-b", "knob-d", "knob-e"] {
        assert!(!last.contains(innocent), "{innocent} blamed: {last}");
    }
    // Each run said its result as it ended, with the verdict of a faulting one.
    assert!(out.stderr.contains("run 1/≤40: original: faulted ("), "{}", out.both());

    let b = s.only_bundle();
    assert!(
        b.root.file_name().unwrap().to_string_lossy().ends_with("_knobbed-ablate"),
        "{}",
        b.root.display()
    );
    let md = b.read("ablation.md");
    assert!(
        md.contains("| configuration | faulted | verdict |") && md.contains("| original | 1/1 |"),
        "{md}"
    );
    let json: serde_json::Value = serde_json::from_str(&b.read("ablation.json")).unwrap();
    assert_eq!(json["ending"], "explained", "{json:#}");
    assert_eq!(json["needs"], serde_json::json!(["knob-a", "knob-c"]), "{json:#}");
    assert_eq!(json["fixes"], serde_json::json!(["knob-a", "knob-c"]), "{json:#}");
    let runs = json["runs"].as_u64().unwrap();
    assert!(runs <= 12, "{runs} runs:\n{md}");
    // Every run is a bundle of its own under the parent's `runs/`, and ran as its configuration.
    assert_eq!(b.files_in("runs").len() as u64, runs, "{md}");
    let log = std::fs::read_to_string(s.path("knobs.log")).unwrap();
    assert_eq!(log.lines().count() as u64, runs, "{log}");
    assert!(b.exists("SHA256SUMS"), "the parent bundle is sealed");
    // `bundle report` of the parent is the ablation's.
    let report = std::process::Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["bundle", "report"])
        .arg(&b.root)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(report.status.success() && text.contains("`knob-a` and `knob-c`"), "{text}");
    s.assert_no_standin_left();
}

/// Ctrl-C while a configuration runs: the search ends with what it learnt (the original
/// faulted), said and written into the parent bundle, which is sealed; exit 130.
#[test]
fn ctrl_c_ends_the_search_with_what_was_learnt() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let s = Scratch::for_run("ablate-ctrl-c");
    let recipe = s.write_recipe(&recipe());
    let run = ablate(&s, &recipe).env("STANDIN_HANG_ON_A", "1");
    let start = std::time::Instant::now();
    let child = run.spawn();
    let log = s.path("knobs.log");
    let second = support::wait_for(std::time::Duration::from_secs(30), || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.lines().count() >= 2)
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let out = run.finish(child, start);
    assert!(second, "the second run never started:\n{}", out.both());
    assert_eq!(out.code(), Some(130), "{}", out.both());
    assert!(out.stdout.contains("stopped after 1 run:"), "{}", out.both());
    let b = s.only_bundle();
    let md = b.read("ablation.md");
    assert!(md.contains("| original | 1/1 |") && !md.contains("| knob-a |"), "{md}");
    let json: serde_json::Value = serde_json::from_str(&b.read("ablation.json")).unwrap();
    assert_eq!(json["ending"], "stopped", "{json:#}");
    assert!(b.exists("SHA256SUMS"), "the parent bundle is sealed");
    s.assert_no_standin_left();
}

/// `--dry-run`: every knob with its change and the run it makes; nothing runs, no bundle.
#[test]
fn the_dry_run_shows_each_knob_s_run_and_runs_nothing() {
    let s = Scratch::for_run("ablate-dry-run");
    let recipe = s.write_recipe(&recipe());
    let out = ablate(&s, &recipe).arg("--dry-run").run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    assert!(out.stdout.contains("original:\n  knobbed\n"), "{}", out.both());
    assert!(
        out.stdout.contains("knob-c (sets STANDIN_KNOB_C): STANDIN_KNOB_C=1\n  STANDIN_KNOB_C=1 knobbed\n"),
        "{}",
        out.both()
    );
    assert!(!s.bundles().exists() && !s.path("knobs.log").exists(), "nothing ran");
}

#[test]
fn a_recipe_without_knobs_or_an_unknown_knob_is_a_usage_error() {
    let s = Scratch::for_run("ablate-usage");
    let recipe = s.write_recipe(&recipe());
    let out = ablate(&s, &recipe).arg("--knob").arg("knob-z").run();
    assert_eq!(out.code(), Some(2), "{}", out.both());
    assert!(out.stderr.contains("no such knob") && out.stderr.contains("`knob-a`"), "{}", out.both());
    let plain = s.write_recipe("version: 1\nname: p\ndescription: d\nrun:\n  command: [knobbed]\n");
    let out = ablate(&s, &plain).run();
    assert_eq!(out.code(), Some(2), "{}", out.both());
    assert!(out.stderr.contains("declares no knobs"), "{}", out.both());
    assert!(!s.bundles().exists(), "no bundle for a usage error");
}

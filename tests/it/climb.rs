//! The climb in-process: `ladder::driver` with a scripted prompter, a recording progress sink
//! and the stand-ins on PATH (replaying the H200 recordings of tests/fixtures/h200), without
//! the binary. And the dry-run's steps against what a run records: the plan shows what runs.
//!
//! The stand-ins are found through PATH and `STANDIN_CASE`, which the climb's steps inherit
//! from the process: a test that climbs on them runs alone in a copy of the test binary
//! started with both set (every test here replays the same case), never setting them in the
//! test binary itself, whose other tests (of every module) must not see them.

use crate::support;

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::Command;

use support::{fixture, path_with, standins, Scratch};
use xtask::bundle::{layout, Bundle, RungStatus};
use xtask::findings::verdict::Part;
use xtask::ladder::driver::{Climb, Stopped};
use xtask::ladder::plan;
use xtask::ladder::policy::{self, Request};
use xtask::ladder::rung::{Debug, When, DUMP, PID};
use xtask::model::{Role, RungId};
use xtask::process::Interrupt;
use xtask::recipe::{self, Resolved};
use xtask::ui::{Choice, Progress, Prompter, RungBar};

const CASE: &str = "oob_read";

/// Set in the copy of the test binary that runs one test on the stand-ins.
const COPY_ENV: &str = "XTASK_CLIMB_STANDINS";

/// Whether this process is the copy that runs the test `name` with the stand-ins first on
/// PATH and `STANDIN_CASE` set. Elsewhere, runs `name` alone in such a copy of this binary,
/// fails with its output when it failed (or ran no test), and returns `false`.
fn in_standin_copy(name: &str) -> bool {
    in_standin_copy_of(name, CASE, &[])
}

/// [`in_standin_copy`] replaying `case`, with `env` set too (the stand-ins' switches).
fn in_standin_copy_of(name: &str, case: &str, env: &[(&str, &str)]) -> bool {
    if std::env::var_os(COPY_ENV).is_some() {
        return true;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .arg(support::test_name(module_path!(), name))
        .args(["--exact", "--test-threads=1"])
        .env(COPY_ENV, "1")
        .env("PATH", path_with(&[&standins()]))
        .env("STANDIN_CASE", fixture(case))
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{name} in a copy of the test binary: {:?}\n--- stdout\n{stdout}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    false
}

/// Answers the prompts before each rung from a script; `Run` once it runs out.
struct Scripted {
    answers: Vec<Choice>,
    asked: Vec<String>,
}

impl Prompter for Scripted {
    fn choose_recipe(&mut self, _: &[&str]) -> anyhow::Result<String> {
        anyhow::bail!("the test gives the recipe")
    }

    fn variable(&mut self, name: &str, _: &str, _: Option<&str>) -> anyhow::Result<String> {
        anyhow::bail!("the test gives `{name}`")
    }

    fn before_rung(&mut self, rung: &str, _: &str) -> anyhow::Result<Choice> {
        self.asked.push(rung.to_string());
        Ok(if self.answers.is_empty() { Choice::Run } else { self.answers.remove(0) })
    }
}

/// Keeps what the climb would have shown.
#[derive(Default)]
struct Recorder {
    lines: RefCell<Vec<String>>,
}

struct Bar<'a>(&'a RefCell<Vec<String>>, String);

impl RungBar for Bar<'_> {
    fn line(&self, _: &str) {}
    fn sm(&self, _: u32, _: u32) {}
    fn note(&self, text: &str) {
        self.0.borrow_mut().push(format!("{}: note: {text}", self.1));
    }
    fn finish(&self, outcome: &str) {
        self.0.borrow_mut().push(format!("{}: {outcome}", self.1));
    }
}

impl Progress for Recorder {
    fn status(&self, text: &str) {
        self.lines.borrow_mut().push(text.to_string());
    }

    fn rung(&self, _: usize, _: usize, rung: &str, _: &str) -> Box<dyn RungBar + '_> {
        Box::new(Bar(&self.lines, rung.to_string()))
    }
}

fn resolved(s: &Scratch) -> Resolved {
    let target = standins().join("target");
    let text = format!(
        "version: 1\nname: climb\ndescription: the stand-in target\nrun:\n  command: [\"{}\"]\n",
        target.display()
    );
    let r = recipe::parse(&text, recipe::RecipeSource::File(s.path("recipe.yaml")), s.path(".")).unwrap();
    recipe::resolve_in(&r, &Default::default(), &s.path(".")).unwrap()
}

fn climb<'a>(r: &'a Resolved, req: &'a Request, plan: &'a [RungId]) -> Climb<'a> {
    Climb {
        recipe: r,
        request: req,
        plan,
        debug: Debug::LineInfo,
        inherited_prepend: None,
        inherited_pythonpath: None,
        gpus: 1,
        path: None,
        launchers: Default::default(),
        interrupt: Interrupt::manual(),
    }
}

/// Tools doctor found outside the tool's own `PATH` reach every process of the climb
/// through each step's environment (what the dry-run shows), not a process-wide variable.
#[test]
fn the_tools_path_is_given_to_every_step() {
    let s = Scratch::create("climb", "path");
    let r = resolved(&s);
    let req = Request::default();
    let plan = policy::plan(&req);
    let mut c = climb(&r, &req, &plan);
    c.path = Some("/usr/local/cuda/bin:/usr/bin".into());
    for id in &plan {
        for step in c.steps(*id, s.path("rungs/x"), 0, Default::default()) {
            assert!(
                step.inv.env_set.contains(&("PATH".to_string(), "/usr/local/cuda/bin:/usr/bin".to_string())),
                "{id}: {:?}",
                step.inv
            );
        }
    }
    assert_ne!(std::env::var("PATH").ok().as_deref(), Some("/usr/local/cuda/bin:/usr/bin"));
}

fn bundle(s: &Scratch, r: &Resolved) -> Bundle {
    Bundle::create(&s.bundles(), &r.name, &serde_json::to_value(r).unwrap()).unwrap()
}

/// Skipping the baseline at the prompt says nothing about the target: the fault rungs still
/// run, cheapest first for a native target: the coredump rung locates the fault, and memcheck
/// (launch-blocking gives a native target no launch site) names the launching function, `main`,
/// but no line (the recording's binary has no `-g`): no rung is left that could, so the climb
/// stops there and says so.
#[test]
fn a_skipped_baseline_still_climbs_until_no_rung_can_add() {
    if !in_standin_copy("a_skipped_baseline_still_climbs_until_no_rung_can_add") {
        return;
    }
    let s = Scratch::for_run("climb-skip");
    let r = resolved(&s);
    let req = Request::default();
    let plan = policy::plan(&req);
    let mut prompter = Scripted { answers: vec![Choice::Skip], asked: vec![] };
    let progress = Recorder::default();
    let climbed = climb(&r, &req, &plan).run(bundle(&s, &r), &mut prompter, &progress);
    let stopped = climbed.outcome.unwrap();
    match &stopped {
        Stopped::Done(why) => {
            assert!(
                why.starts_with("no remaining rung can establish the launch site of `gather_rows"),
                "{why}"
            );
            assert!(why.contains("skipping launch-blocking, attach, initcheck"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    let m = climbed.bundle.manifest();
    let statuses: Vec<(RungId, RungStatus)> = m.rungs.iter().map(|r| (r.rung, r.status)).collect();
    assert_eq!(
        statuses,
        [
            (RungId::Baseline, RungStatus::Skipped),
            (RungId::Coredump, RungStatus::Ran),
            (RungId::Memcheck, RungStatus::Ran)
        ]
    );
    assert_eq!(prompter.asked, ["baseline", "coredump", "memcheck"]);
    let v = climbed.analysis.verdict.expect("a verdict");
    assert_eq!((v.file.as_deref(), v.line), (Some("/tmp/ima-record/oob_read.cu"), Some(8)));
    assert_eq!(v.unknown, [Part::LaunchSite], "the function, not the line: {v:?}");
    let launch = v.launch_site.as_ref().expect("a launch site");
    assert_eq!(launch.frame.function.as_deref(), Some("main"));
    assert_eq!(launch.frame.line, None);
    assert!(launch.from.starts_with("memcheck"), "{launch:?}");
    // The baseline did not run: the program's own `CUDA error at oob_read.cu:26` under
    // memcheck says where the error surfaced.
    let surfaced = v.surfaced_at.as_ref().expect("where it surfaced");
    assert_eq!((surfaced.frame.file.as_deref(), surfaced.frame.line), (Some("oob_read.cu"), Some(26)));
    assert_eq!(surfaced.from, "memcheck");
    assert!(progress.lines.borrow().iter().any(|l| l.starts_with("coredump: ")), "{:?}", progress.lines);
    s.assert_no_standin_left();
}

/// With a person answering the prompts, no rung starts beside another: a binary that names its
/// launch sites (oob_write, its H200 disassembly replayed) gets the whole verdict from its armed
/// run, and the memcheck pass after it, asked for like any rung, runs over every kernel and
/// prints its first 100 records (an earlier bug's come first).
#[test]
fn the_memcheck_pass_after_a_complete_verdict_prints_its_first_records() {
    if !in_standin_copy_of(
        "the_memcheck_pass_after_a_complete_verdict_prints_its_first_records",
        "oob_write",
        &[("STANDIN_OBJDUMP", "1")],
    ) {
        return;
    }
    let s = Scratch::for_run("climb-pass");
    let r = resolved(&s);
    let req = Request::default();
    let plan = policy::plan(&req);
    let mut prompter = Scripted { answers: vec![], asked: vec![] };
    let climbed = climb(&r, &req, &plan).run(bundle(&s, &r), &mut prompter, &Recorder::default());
    let stopped = climbed.outcome.unwrap();
    assert!(
        matches!(&stopped, Stopped::Done(why) if why.starts_with("the verdict is complete")),
        "{stopped:?}"
    );
    assert_eq!(prompter.asked, ["baseline", "memcheck"]);
    let m = climbed.bundle.manifest();
    let memcheck = &m.rungs[1];
    assert_eq!(memcheck.rung, RungId::Memcheck);
    let command = &memcheck.commands[0].command;
    assert!(command.contains("--print-limit 100 ") && !command.contains("--kernel-name"), "{command}");
    let notes = memcheck.notes.join("\n");
    assert!(notes.contains("every kernel, the first 100 records printed"), "{notes}");
    assert!(!notes.contains("beside the armed run's reading"), "{notes}");
    let v = climbed.analysis.verdict.expect("a verdict");
    let launch = v.launch_site.expect("a launch site");
    assert_eq!((launch.frame.function.as_deref(), launch.frame.line), (Some("main"), Some(15)));
    s.assert_no_standin_left();
}

/// A target that fails without any CUDA error (a real Python `FileNotFoundError`) stops the
/// climb after the baseline, quoting the error; `--rungs` climbs anyway.
#[test]
fn a_failure_without_cuda_stops_after_the_baseline() {
    if !in_standin_copy("a_failure_without_cuda_stops_after_the_baseline") {
        return;
    }
    let s = Scratch::for_run("climb-no-cuda");
    let script = support::root().join("tests/gpu/programs/no_cuda_failure.py");
    let text = format!(
        "version: 1\nname: nocuda\ndescription: fails without CUDA\nrun:\n  command: [\"python3\", \"{}\"]\n",
        script.display()
    );
    let rec = recipe::parse(&text, recipe::RecipeSource::File(s.path("recipe.yaml")), s.path(".")).unwrap();
    let r = recipe::resolve_in(&rec, &Default::default(), &s.path(".")).unwrap();
    let req = Request::default();
    let plan = policy::plan(&req);
    let climbed = climb(&r, &req, &plan).run(
        bundle(&s, &r),
        &mut Scripted { answers: vec![], asked: vec![] },
        &Recorder::default(),
    );
    let stopped = climbed.outcome.unwrap();
    assert!(matches!(&stopped, Stopped::Done(why) if why.contains("without a CUDA error")), "{stopped:?}");
    let m = climbed.bundle.manifest();
    assert_eq!(m.rungs.iter().map(|r| r.rung).collect::<Vec<_>>(), [RungId::Baseline]);
    let notes = m.rungs[0].notes.join("\n");
    assert!(notes.contains("FileNotFoundError") && notes.contains("exit 1"), "{notes}");
    assert!(climbed.analysis.verdict.is_none());
    // The conclusion agrees with the stop: no advice to sweep for a Python exception.
    let c = &climbed.analysis.conclusion;
    assert!(
        c.contains("failed without a CUDA error") && !c.contains("sweep") && !c.contains("memcheck"),
        "{c}"
    );

    // Named rungs run whatever the baseline said.
    let s = Scratch::for_run("climb-no-cuda-forced");
    let req = Request { rungs: Some(vec![RungId::Baseline, RungId::LaunchBlocking]), ..Request::default() };
    let plan = policy::plan(&req);
    let climbed = climb(&r, &req, &plan).run(
        bundle(&s, &r),
        &mut Scripted { answers: vec![], asked: vec![] },
        &Recorder::default(),
    );
    climbed.outcome.unwrap();
    assert_eq!(climbed.bundle.manifest().rungs.len(), 2);
}

/// Stop at the first prompt: nothing runs, and the climb says so.
#[test]
fn stop_at_the_prompt_runs_nothing() {
    if !in_standin_copy("stop_at_the_prompt_runs_nothing") {
        return;
    }
    let s = Scratch::for_run("climb-stop");
    let r = resolved(&s);
    let req = Request::default();
    let plan = policy::plan(&req);
    let mut prompter = Scripted { answers: vec![Choice::Stop], asked: vec![] };
    let climbed = climb(&r, &req, &plan).run(bundle(&s, &r), &mut prompter, &Recorder::default());
    assert_eq!(climbed.outcome.unwrap(), Stopped::Done("stopped at the prompt before baseline".into()));
    assert!(climbed.bundle.manifest().rungs.is_empty());
}

/// The plan's steps are the commands the run records: with `--full` every rung's target and
/// every tool it ran appears in the plan (placeholders filled in as the run fills them), and
/// every step of the plan that always runs was run.
#[test]
fn the_dry_run_shows_the_commands_the_run_records() {
    if !in_standin_copy("the_dry_run_shows_the_commands_the_run_records") {
        return;
    }
    let s = Scratch::for_run("climb-plan");
    let r = resolved(&s);
    let req = Request { full: true, ..Request::default() };
    let plan = policy::plan(&req);
    let c = climb(&r, &req, &plan);
    let b = bundle(&s, &r);
    let root = b.root().to_path_buf();
    let planned = plan::steps(&c, &root);
    let climbed = c.run(b, &mut Scripted { answers: vec![], asked: vec![] }, &Recorder::default());
    climbed.outcome.unwrap();
    let m = climbed.bundle.manifest();
    assert_eq!(m.rungs.iter().map(|r| r.rung).collect::<Vec<_>>(), plan);
    for rec in &m.rungs {
        let dir = root.join(&rec.dir);
        let mine: Vec<&plan::Planned> = planned.iter().filter(|p| p.rung == rec.rung).collect();
        for cmd in &rec.commands {
            // The run's dump paths and pids stand for the plan's placeholders.
            let generic = generalise(&cmd.command, &dir);
            let found = mine.iter().any(|p| p.inv.shell_line() == generic && p.step.role == cmd.role);
            assert!(found, "{}: `{generic}` ({}) is not in the plan:\n{:#?}", rec.rung, cmd.role, mine);
        }
        for p in mine.iter().filter(|p| p.step.when == When::Always) {
            let ran = rec.commands.iter().any(|c| generalise(&c.command, &dir) == p.inv.shell_line());
            assert!(ran, "{}: planned `{}` did not run", rec.rung, p.inv.shell_line());
        }
    }
    // The tools the fault rungs exist for did run.
    let roles = |id: RungId| {
        m.rungs.iter().find(|r| r.rung == id).unwrap().commands.iter().map(|c| c.role).collect::<Vec<_>>()
    };
    assert!(roles(RungId::Coredump).contains(&Role::CudaGdb));
    assert!(roles(RungId::Attach).contains(&Role::CudaGdb));
    s.assert_no_standin_left();
}

/// A recorded command with this run's dump file and attached pid put back as the plan's
/// placeholders.
fn generalise(command: &str, dir: &Path) -> String {
    let mut out = command.to_string();
    let dumps: Vec<PathBuf> =
        std::fs::read_dir(dir).map(|rd| rd.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    for d in dumps
        .iter()
        .filter(|d| d.file_name().is_some_and(|n| n.to_string_lossy().starts_with(layout::DUMP_PREFIX)))
    {
        out = out.replace(&d.display().to_string(), &dir.join(DUMP).display().to_string());
    }
    if let Some(i) = out.find(" -p ") {
        let rest = &out[i + 4..];
        let end = rest.find(' ').unwrap_or(rest.len());
        if rest[..end].bytes().all(|b| b.is_ascii_digit()) {
            out = format!("{} -p {}{}", &out[..i], xtask::model::quote(PID), &rest[end..]);
        }
    }
    out
}

/// A Python target's runs load the launch recorder: real `python3` running a program that
/// launches through a stand-in `triton` package (`triton.runtime.jit.JITFunction.run`, the
/// method the recorder wraps) and a stand-in `torch.cuda.graphs.CUDAGraph`, both found through
/// the recipe's own `PYTHONPATH`, which stays behind the recorder's folder. The log names the
/// program's launching lines, the capture's start, and the launch made inside it; the program's
/// own `sitecustomize` still runs.
#[test]
fn a_python_target_records_where_it_launched_its_kernels() {
    let s = Scratch::for_run("climb-recorder");
    let put = |rel: &str, text: &str| {
        let p = s.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    put("pkg/triton/__init__.py", "from .runtime.jit import JITFunction\n");
    put("pkg/triton/runtime/__init__.py", "");
    put(
        "pkg/triton/runtime/jit.py",
        "class JITFunction:\n    def __init__(self, fn):\n        self.fn = fn\n    def __getitem__(self, grid):\n        \
         return lambda *a, **k: self.run(*a, grid=grid, warmup=False, **k)\n    def run(self, *a, grid, warmup, **k):\n        \
         return self.fn(*a)\n",
    );
    put("pkg/torch/__init__.py", "from . import cuda\n");
    put("pkg/torch/cuda/__init__.py", "from .graphs import CUDAGraph\n");
    put(
        "pkg/torch/cuda/graphs.py",
        "class CUDAGraph:\n    def capture_begin(self):\n        pass\n    def capture_end(self):\n        pass\n",
    );
    put("own/sitecustomize.py", "import os\nprint('own sitecustomize ran', flush=True)\n");
    put(
        "app.py",
        "import torch, triton\n\
         def gather_kv(x):\n    return x\n\
         gather = triton.JITFunction(gather_kv)\n\
         def step(i):\n    return gather[(1,)](i)\n\
         for i in range(1000):\n    step(i)\n\
         g = torch.cuda.CUDAGraph()\n\
         g.capture_begin()\n\
         gather[(1,)](3)\n\
         g.capture_end()\n\
         print('done', flush=True)\n",
    );
    let text = format!(
        "version: 1\nname: recorded\ndescription: a Python target\npython: true\nrun:\n  command: [\"python3\", \"{}\"]\n  \
         env:\n    PYTHONPATH: \"{}:{}\"\n",
        s.path("app.py").display(),
        s.path("pkg").display(),
        s.path("own").display()
    );
    let rec = recipe::parse(&text, recipe::RecipeSource::File(s.path("recipe.yaml")), s.path(".")).unwrap();
    let r = recipe::resolve_in(&rec, &Default::default(), &s.path(".")).unwrap();
    let req = Request { rungs: Some(vec![RungId::Baseline]), python: true, ..Request::default() };
    let plan = policy::plan(&req);
    let climbed = climb(&r, &req, &plan).run(
        bundle(&s, &r),
        &mut Scripted { answers: vec![], asked: vec![] },
        &Recorder::default(),
    );
    climbed.outcome.unwrap();
    let root = climbed.bundle.root().to_path_buf();
    assert!(root.join(layout::RECORDER_FILE).is_file());
    let dir = root.join(&climbed.bundle.manifest().rungs[0].dir);
    let out = std::fs::read_to_string(dir.join(layout::STDOUT)).unwrap();
    assert!(out.contains("own sitecustomize ran") && out.contains("done"), "{out}");
    let log = std::fs::read_to_string(dir.join(layout::LAUNCHES)).unwrap();
    let ev = xtask::findings::scan::scan_str(&log, "baseline/launches.log");
    let app = s.path("app.py").display().to_string();
    let mut places: Vec<(u32, Option<u32>)> = ev
        .recorded_launches
        .iter()
        .map(|l| (l.site.line.unwrap(), l.capture.as_ref().and_then(|c| c.line)))
        .collect();
    places.sort();
    // One record per place (1,000 launches from line 6), and the launch inside the capture
    // begun at line 10.
    assert_eq!(places, [(6, None), (11, Some(10))], "{log}");
    assert!(ev
        .recorded_launches
        .iter()
        .all(|l| l.kernel == "gather_kv" && l.site.file.as_deref() == Some(&app)));
    let eager = ev.recorded_launches.iter().find(|l| l.capture.is_none()).unwrap();
    assert_eq!(eager.stack.len(), 2, "step <- <module>: {log}");
    assert_eq!(ev.recorded_captures.len(), 1);
    assert_eq!(ev.recorded_captures[0].site.line, Some(10));
    assert!(!ev.recorder_pids.is_empty(), "{log}");
}

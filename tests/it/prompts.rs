//! The prompts of `xtask debug-ima` on a real terminal: the real binary runs on a
//! pseudo-terminal (rexpect) and the test answers its dialoguer questions with keys, as a
//! person would: the recipe choice, a recipe variable without a value, and the
//! run/skip/stop question before each rung; Ctrl-C at each of them (exit 130, the cursor
//! shown again, the manifest saying interrupted), Esc and `q` at the recipe choice, a blank
//! answer asked again. The same commands without a terminal (plain
//! pipes, as in CI) ask nothing and fail naming the flag that answers the question.
//!
//! The ladder's logic behind the prompts is tested through the `Prompter` trait; these few
//! tests only check that the questions reach a terminal, that the answers reach the ladder,
//! and that the progress display between two questions does not swallow the next one. The
//! rungs run the stand-ins of tests/standins/ (see tests/it/ladder.rs), so no GPU is needed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rexpect::process::{Signal as PtySignal, WaitStatus};
use rexpect::session::{spawn_with_options, Options, PtySession};

use crate::support;
use support::{has_real_nvidia_smi, path_with, root, standins, Scratch};

/// How long one expected piece of output may take to appear (generous: a loaded CI
/// machine, a debug build).
const EXPECT_MS: u64 = 10_000;
/// How long a run without a terminal may take before the test kills it and fails.
const RUN_LIMIT: Duration = Duration::from_secs(20);

/// Keys as a terminal sends them.
const DOWN: &str = "\x1b[B";
const ENTER: &str = "\r";
const CTRL_C: &str = "\x03";
const ESC: &str = "\x1b";
/// The cursor hidden (dialoguer, while it asks) and shown again.
const HIDE_CURSOR: &str = "\x1b[?25l";
const SHOW_CURSOR: &str = "\x1b[?25h";

/// The manifest's `stopped` of a bundle.
fn manifest_stopped(bundle: &Path) -> String {
    let text = std::fs::read_to_string(bundle.join("manifest.yaml")).unwrap();
    let m: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    m["stopped"].as_str().unwrap_or_else(|| panic!("no `stopped` in the manifest:\n{text}")).to_string()
}

/// Whether the cursor is shown at the end of `raw` (the terminal's bytes): shown again after
/// it was last hidden.
fn cursor_shown_at_the_end(raw: &str) -> bool {
    match raw.rfind(HIDE_CURSOR) {
        Some(hidden) => raw[hidden..].contains(SHOW_CURSOR),
        None => true,
    }
}

/// PATH with the stand-ins first.
fn standin_path() -> String {
    path_with(&[&standins()])
}

/// A recipe that runs the stand-in target with one required variable, `label`, as its
/// argument.
const VARIABLE_RECIPE: &str = "version: 1\nname: standin\n\
    description: \"the stand-in target, replaying an H200 recording\"\n\
    variables:\n  label:\n    description: \"a word the target gets as its argument\"\n\
    run:\n  command: [\"target\", \"{label}\"]\n  timeout: 30\n";

impl Scratch {
    /// A scratch folder holding the recipe with one required variable.
    fn new(name: &str) -> Scratch {
        let s = Scratch::create("prompts", name);
        std::fs::write(s.path("recipe.yaml"), VARIABLE_RECIPE).unwrap();
        s
    }

    fn recipe(&self) -> String {
        self.path("recipe.yaml").display().to_string()
    }

    /// The bundles the run created.
    /// The run stopped before it made a bundle or started anything.
    fn assert_nothing_started(&self) {
        assert!(self.bundle_dirs().is_empty(), "a bundle was created");
        assert!(self.standin_pids().is_empty(), "something ran: {:?}", self.standin_pids());
    }

    fn bundle_dirs(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.bundles())
            .map(|rd| rd.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default()
    }

    /// The one bundle the run created.
    fn bundle(&self) -> PathBuf {
        let dirs = self.bundle_dirs();
        assert_eq!(dirs.len(), 1, "one bundle expected: {dirs:?}");
        dirs[0].clone()
    }

    /// `debug-ima ARGS --bundle-dir SCRATCH/bundles` in this folder, the stand-ins first on
    /// PATH replaying the out-of-bounds write.
    fn command(&self, args: &[&str], path: &str) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
        cmd.arg("debug-ima")
            .args(args)
            .arg("--bundle-dir")
            .arg(self.bundles())
            .current_dir(&self.dir)
            .env("PATH", path)
            .env("STANDIN_CASE", root().join("tests/fixtures/h200/oob_write"))
            .env("STANDIN_PIDS", self.pids_file())
            .env_remove("NVCC_PREPEND_FLAGS")
            .env_remove("STANDIN_HANG")
            .env_remove("STANDIN_CHILD")
            .env_remove("STANDIN_NO_DUMP")
            // The terminal's own settings, not the test runner's, decide how it looks.
            .env("TERM", "xterm-256color")
            .env_remove("NO_COLOR")
            .env_remove("CLICOLOR_FORCE");
        cmd
    }

    /// The command on a pseudo-terminal of 120 columns and 40 rows, escape codes removed.
    fn tty(&self, args: &[&str], path: &str) -> Tty {
        self.tty_with(args, path, true)
    }

    /// The command on a pseudo-terminal, escape codes kept (to see the cursor's state).
    fn tty_raw(&self, args: &[&str], path: &str) -> Tty {
        self.tty_with(args, path, false)
    }

    fn tty_with(&self, args: &[&str], path: &str, strip: bool) -> Tty {
        let inner = self.command(args, path);
        // A fresh pseudo-terminal has no size: `stty` gives it one, then the shell becomes
        // the binary (same PID), keeping the environment and folder set above.
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg("stty cols 120 rows 40 && exec \"$0\" \"$@\"").arg(inner.get_program());
        cmd.args(inner.get_args());
        cmd.current_dir(&self.dir);
        for (k, v) in inner.get_envs() {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        let session = spawn_with_options(
            cmd,
            Options::default().timeout_ms(Some(EXPECT_MS)).strip_ansi_escape_codes(strip),
        )
        .expect("cannot start the xtask binary on a pseudo-terminal");
        Tty { session, seen: String::new() }
    }

    /// The command with plain pipes (stdin open but silent, as in CI): returns the exit
    /// code, stdout and stderr.
    fn piped(&self, args: &[&str], path: &str) -> (Option<i32>, String, String) {
        let mut child = self
            .command(args, path)
            .stdin(Stdio::piped())
            .stdout(std::fs::File::create(self.path("xtask.stdout")).unwrap())
            .stderr(std::fs::File::create(self.path("xtask.stderr")).unwrap())
            .spawn()
            .expect("cannot start the xtask binary");
        // Stdin stays open: a prompt waiting for it would hang until the limit.
        let _stdin = child.stdin.take();
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed() > RUN_LIMIT {
                let _ = child.kill();
                let _ = child.wait();
                panic!("`xtask debug-ima {}` without a terminal waited past {RUN_LIMIT:?}", args.join(" "));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        (
            status.code(),
            std::fs::read_to_string(self.path("xtask.stdout")).unwrap(),
            std::fs::read_to_string(self.path("xtask.stderr")).unwrap(),
        )
    }
}

/// The binary on a pseudo-terminal: what it wrote (escape codes removed) is read up to
/// each expected text; keys are written as typed.
struct Tty {
    session: PtySession,
    /// Everything read so far, for failure messages.
    seen: String,
}

impl Tty {
    /// Reads until `text` appears; returns what came before it. Fails with everything seen.
    fn expect(&mut self, text: &str) -> String {
        match self.session.exp_string(text) {
            Ok(before) => {
                self.seen.push_str(&before);
                self.seen.push_str(text);
                before
            }
            Err(e) => panic!("`{text}` did not appear on the terminal: {e}\n--- seen before\n{}", self.seen),
        }
    }

    fn keys(&mut self, keys: &str) {
        self.session.send(keys).unwrap();
        self.session.flush().unwrap();
    }

    /// Like [`Tty::finish`], with everything the terminal showed: (exit code, all of it).
    fn finish_all(self) -> (i32, String) {
        let mut seen = self.seen.clone();
        let (code, rest) = self.finish();
        seen.push_str(&rest);
        (code, seen)
    }

    /// Reads to the end of the output and waits for the exit: (exit code, the rest).
    fn finish(mut self) -> (i32, String) {
        let rest = match self.session.exp_eof() {
            Ok(rest) => rest,
            Err(e) => panic!("the binary did not end: {e}\n--- seen before\n{}", self.seen),
        };
        self.seen.push_str(&rest);
        let start = Instant::now();
        loop {
            match self.session.process().status() {
                Some(WaitStatus::Exited(_, code)) => return (code, rest),
                Some(WaitStatus::StillAlive) if start.elapsed() < Duration::from_millis(EXPECT_MS) => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                other => panic!("the binary did not exit normally: {other:?}\n--- output\n{}", self.seen),
            }
        }
    }
}

impl Drop for Tty {
    fn drop(&mut self) {
        // A failed test leaves no binary waiting at a prompt (rexpect's own drop would send
        // SIGTERM, which the ladder's handler only notes while a prompt waits for a key).
        if let Some(WaitStatus::StillAlive) = self.session.process().status() {
            let _ = self.session.process_mut().signal(PtySignal::SIGKILL);
            let _ = self.session.process().wait();
        }
    }
}

/// On a machine without `nvidia-smi` (known at once), nothing is asked: the binary fails at
/// once naming the GPU, before the recipe choice.
#[test]
fn without_a_gpu_nothing_is_asked() {
    if has_real_nvidia_smi() {
        support::skipped("this machine has an nvidia-smi");
        return;
    }
    let s = Scratch::new("no-gpu");
    let start = Instant::now();
    let t = s.tty(&[], &std::env::var("PATH").unwrap_or_default());
    let (code, rest) = t.finish();
    assert_eq!(code, 1, "{rest}");
    assert!(rest.contains("no usable GPU"), "the failure does not name the GPU:\n{rest}");
    assert!(rest.contains("nvidia-smi"), "{rest}");
    assert!(!rest.contains("which recipe"), "a question was asked first:\n{rest}");
    assert!(s.bundle_dirs().is_empty(), "a bundle was created");
    assert!(start.elapsed() < Duration::from_secs(10), "took {:?}", start.elapsed());
}

/// A mistyped `--recipe` is said first on a terminal too, before the missing GPU, with the
/// name it was likely meant to be.
#[test]
fn a_mistyped_recipe_is_said_before_the_gpu_check_on_a_terminal() {
    if has_real_nvidia_smi() {
        support::skipped("this machine has an nvidia-smi");
        return;
    }
    let s = Scratch::new("typo-recipe");
    let t = s.tty(&["--recipe", "cdua"], &std::env::var("PATH").unwrap_or_default());
    let (code, rest) = t.finish();
    assert_ne!(code, 0, "{rest}");
    assert!(rest.contains("unknown recipe `cdua` (did you mean `cuda`?)"), "{rest}");
    assert!(!rest.contains("no usable GPU"), "the GPU check came first:\n{rest}");
}

/// Without `--recipe` on a terminal, the binary asks which recipe; Enter takes the first
/// (`demo`), whose plan `--dry-run` prints.
#[test]
fn the_recipe_is_asked_for_and_enter_takes_the_demo() {
    let s = Scratch::new("choose-recipe");
    let mut t = s.tty(&["--dry-run"], &standin_path());
    t.expect("which recipe describes your target?");
    // The built-in recipes, the first one marked.
    t.expect("> demo");
    t.expect("cuda");
    t.keys(ENTER);
    t.expect("which recipe describes your target? (Esc or q: cancel): demo");
    let (code, rest) = t.finish();
    assert_eq!(code, 0, "{rest}");
    assert!(rest.contains("ima_demo"), "the demo's plan was not printed:\n{rest}");
    assert!(s.bundle_dirs().is_empty(), "a bundle was created");
}

/// The recipe picker offers the recipe files of the current folder after the built-in ones
/// (here the scratch's `recipe.yaml`); picking one loads it.
#[test]
fn the_recipe_picker_offers_the_folder_s_own_recipes() {
    let s = Scratch::new("choose-local-recipe");
    let mut t = s.tty(&["--dry-run"], &standin_path());
    t.expect("which recipe describes your target?");
    t.expect("./recipe.yaml");
    t.keys(&DOWN.repeat(recipe_count()));
    t.keys(ENTER);
    t.expect("which recipe describes your target? (Esc or q: cancel): ./recipe.yaml");
    // Its own variable is asked for: the recipe was loaded.
    t.expect("label (a word the target gets as its argument)");
    t.keys("hello\r");
    let (code, rest) = t.finish();
    assert_eq!(code, 0, "{rest}");
    assert!(rest.contains("recipe: ") && rest.contains("hello"), "{rest}");
}

/// How many built-in recipes the picker lists first.
fn recipe_count() -> usize {
    xtask::recipe::builtin_names().len()
}

/// Ctrl-C at the recipe choice: an interruption (exit 130), nothing runs, no bundle, and the
/// cursor dialoguer hid is shown again.
#[test]
fn ctrl_c_at_the_recipe_choice_interrupts_and_shows_the_cursor() {
    let s = Scratch::new("ctrl-c-recipe");
    let mut t = s.tty_raw(&[], &standin_path());
    t.expect("which recipe describes your target?");
    t.expect("demo");
    t.keys(CTRL_C);
    let (code, all) = t.finish_all();
    assert_eq!(code, 130, "{all}");
    assert!(all.contains(HIDE_CURSOR), "dialoguer did not hide the cursor: {all:?}");
    assert!(cursor_shown_at_the_end(&all), "the cursor stays hidden: {all:?}");
    assert!(all.contains("interrupted at the prompt (Ctrl-C): nothing ran"), "{all}");
    assert!(!all.contains("IO error"), "{all}");
    assert!(s.bundle_dirs().is_empty(), "a bundle was created");
}

/// Esc, and `q`, at the recipe choice cancel it: exit 130, nothing runs, the cursor shown.
#[test]
fn esc_or_q_at_the_recipe_choice_cancels() {
    for key in [ESC, "q"] {
        let s = Scratch::new("cancel-recipe");
        let mut t = s.tty_raw(&[], &standin_path());
        t.expect("which recipe describes your target?");
        t.expect("demo");
        t.keys(key);
        let (code, all) = t.finish_all();
        assert_eq!(code, 130, "{key:?}: {all}");
        assert!(all.contains("cancelled at the prompt (Esc or `q`): nothing ran"), "{key:?}: {all}");
        assert!(cursor_shown_at_the_end(&all), "{key:?}: the cursor stays hidden: {all:?}");
        assert!(s.bundle_dirs().is_empty(), "{key:?}: a bundle was created");
    }
}

/// Ctrl-C at a variable's prompt: exit 130, no bundle, the cursor shown.
#[test]
fn ctrl_c_at_a_variable_prompt_interrupts() {
    let s = Scratch::new("ctrl-c-variable");
    let recipe = s.recipe();
    let mut t = s.tty_raw(&["--recipe", &recipe], &standin_path());
    t.expect("label (a word the target gets as its argument)");
    t.keys("half-typed");
    t.keys(CTRL_C);
    let (code, all) = t.finish_all();
    assert_eq!(code, 130, "{all}");
    assert!(cursor_shown_at_the_end(&all), "the cursor stays hidden: {all:?}");
    assert!(all.contains("interrupted at the prompt (Ctrl-C)"), "{all}");
    s.assert_nothing_started();
}

/// SIGINT while a prompt waits for a key (`kill -INT`, or a Ctrl-C the terminal turned into
/// the signal because it came between two of the prompt's raw-mode reads): the prompt ends as
/// at the key, with exit 130 and the cursor shown, instead of waiting for a key for ever.
#[test]
fn sigint_while_a_prompt_waits_ends_it() {
    let s = Scratch::new("sigint-prompt");
    let recipe = s.recipe();
    for answer_first in [false, true] {
        let mut t = s.tty_raw(&["--recipe", &recipe], &standin_path());
        t.expect("label (a word the target gets as its argument)");
        if answer_first {
            // At the run/skip/stop selection instead.
            t.keys("word");
            t.keys(ENTER);
            t.expect("stop here");
        }
        std::thread::sleep(Duration::from_millis(200));
        t.session.process_mut().signal(PtySignal::SIGINT).unwrap();
        let (code, all) = t.finish_all();
        assert_eq!(code, 130, "{all}");
        assert!(cursor_shown_at_the_end(&all), "the cursor stays hidden: {all:?}");
        assert!(!all.contains("IO error"), "{all}");
    }
    assert!(s.standin_pids().is_empty(), "something ran: {:?}", s.standin_pids());
}

/// A blank answer (spaces only) is refused at the prompt, which asks again; Ctrl-C at the
/// first run/skip/stop question then ends the run before any rung ran: exit 130, the
/// manifest says interrupted, the output that nothing was learned, the cursor shown.
#[test]
fn a_blank_answer_is_asked_again_and_ctrl_c_before_the_baseline_learns_nothing() {
    let s = Scratch::new("blank");
    let recipe = s.recipe();
    let mut t = s.tty_raw(&["--recipe", &recipe], &standin_path());
    t.expect("label (a word the target gets as its argument)");
    t.keys("   ");
    t.keys(ENTER);
    t.expect("a value is needed (not only spaces)");
    t.keys("word");
    t.keys(ENTER);
    t.expect("next: baseline: run the target armed");
    t.expect("stop here");
    t.keys(CTRL_C);
    let (code, all) = t.finish_all();
    assert_eq!(code, 130, "{all}");
    assert!(cursor_shown_at_the_end(&all), "the cursor stays hidden: {all:?}");
    assert!(all.contains("nothing was learned"), "{all}");
    assert!(!all.contains("no verdict"), "a conclusion from nothing: {all}");
    assert!(!all.contains("IO error"), "{all}");
    let stopped = manifest_stopped(&s.bundle());
    assert!(stopped.starts_with("interrupted"), "{stopped}");
    assert!(s.standin_pids().is_empty(), "the target ran: {:?}", s.standin_pids());
}

/// `stop here` before the baseline: nothing ran, so nothing is concluded, and the exit is
/// 130 (the ladder did not run), not 0.
#[test]
fn stop_before_the_baseline_concludes_nothing() {
    let s = Scratch::new("stop-first");
    let recipe = s.recipe();
    let mut t = s.tty(&["--recipe", &recipe, "--set", "label=x"], &standin_path());
    t.expect("next: baseline: run the target armed");
    t.expect("stop here");
    t.keys(DOWN);
    t.expect("> skip it");
    t.keys(DOWN);
    t.expect("> stop here");
    t.keys(ENTER);
    let (code, rest) = t.finish();
    assert_eq!(code, 130, "{rest}");
    assert!(rest.contains("nothing was learned"), "{rest}");
    assert!(rest.contains("stopped: stopped at the prompt before baseline"), "{rest}");
    assert!(!rest.contains("no verdict"), "{rest}");
}

/// Ctrl-C at the run/skip/stop question after the baseline: exit 130, the manifest says
/// interrupted (not an IO error), the baseline kept, the cursor shown.
#[test]
fn ctrl_c_at_the_rung_prompt_interrupts_and_keeps_the_bundle() {
    let s = Scratch::new("ctrl-c-rung");
    let recipe = s.recipe();
    let mut t = s.tty_raw(&["--recipe", &recipe, "--set", "label=x"], &standin_path());
    t.expect("next: baseline: run the target armed");
    t.expect("stop here");
    t.keys(ENTER);
    t.expect("next: memcheck: rerun under");
    t.expect("stop here");
    t.keys(CTRL_C);
    let (code, all) = t.finish_all();
    assert_eq!(code, 130, "{all}");
    assert!(cursor_shown_at_the_end(&all), "the cursor stays hidden: {all:?}");
    assert!(!all.contains("IO error"), "{all}");
    let stopped = manifest_stopped(&s.bundle());
    // The key is read by the prompt in raw mode (`interrupted (Ctrl-C): ...`), or, when it
    // comes before the prompt has taken the terminal, the terminal sends SIGINT
    // (`interrupted: ...`): both are the same interruption.
    assert!(stopped.starts_with("interrupted"), "{stopped}");
    assert!(!stopped.contains("IO error"), "{stopped}");
    assert!(s.bundle().join("rungs/01-baseline/stderr.log").is_file());
    s.assert_no_standin_left();
}

/// A required variable without `--set` is asked for with its name and description; the
/// typed value reaches the target's command. Then the ladder asks before the baseline.
#[test]
fn a_missing_variable_is_asked_for_and_the_typed_value_is_used() {
    let s = Scratch::new("variable");
    let recipe = s.recipe();
    let mut t = s.tty(&["--recipe", &recipe, "--rungs", "baseline"], &standin_path());
    t.expect("label (a word the target gets as its argument):");
    t.keys("hello-prompt");
    t.keys(ENTER);
    t.expect("next: baseline: run the target armed");
    t.expect("stop here");
    t.keys(ENTER);
    t.expect("[1/1] baseline: signal 6, device error seen");
    let (code, rest) = t.finish();
    assert_eq!(code, 0, "{rest}");
    assert!(rest.contains("stopped: every planned rung has run"), "{rest}");
    let command = std::fs::read_to_string(s.bundle().join("rungs/01-baseline/command.txt")).unwrap();
    assert!(command.contains("target hello-prompt"), "the typed value did not reach the target: {command}");
    s.assert_no_standin_left();
}

/// Before each rung: run it, skip it or stop here. The baseline runs (its progress drawn
/// on the terminal), the next question still appears whole after it: the coredump rung, the
/// next of the three rungs asked for, is skipped (down, Enter); the climb turns to attach,
/// and stops before it (down, down, Enter): exit 0, the bundle keeps what ran and says where
/// it stopped.
#[test]
fn run_skip_and_stop_at_the_rung_prompts() {
    let s = Scratch::new("run-skip-stop");
    let recipe = s.recipe();
    let start = Instant::now();
    let mut t = s.tty(
        &["--recipe", &recipe, "--set", "label=x", "--rungs", "baseline,coredump,attach"],
        &standin_path(),
    );
    t.expect("next: baseline: run the target armed (GPU coredump on exception, dump pipe");
    t.expect("> run it");
    t.expect("skip it");
    t.expect("stop here");
    t.keys(ENTER);
    t.expect("baseline: run it");
    // The progress of the first rung, then its end line.
    t.expect("[1/3] baseline");
    t.expect("[1/3] baseline: signal 6, device error seen");

    // After the progress display, the second question appears whole, with all its answers.
    let before = t.expect("next: coredump: rerun with GPU coredumps on");
    assert!(!before.contains("next:"), "an extra question before the second one: {before:?}");
    t.expect("(one run; dumps are 1 MB to hundreds of MB per process)");
    t.expect("> run it");
    t.expect("skip it");
    t.expect("stop here");
    t.keys(DOWN);
    t.expect("> skip it");
    t.keys(ENTER);
    t.expect("coredump: skip it");

    t.expect("next: attach: ");
    t.expect("stop here");
    t.keys(DOWN);
    t.expect("> skip it");
    t.keys(DOWN);
    t.expect("> stop here");
    t.keys(ENTER);
    t.expect("attach: stop here");
    let (code, rest) = t.finish();
    assert_eq!(code, 0, "{rest}");
    assert!(rest.contains("stopped: stopped at the prompt before attach"), "{rest}");
    assert!(rest.contains("rungs: baseline ran"), "{rest}");
    assert!(rest.contains("coredump skipped"), "{rest}");
    assert!(!rest.contains("[3/3]"), "a rung ran after `stop here`:\n{rest}");

    let bundle = s.bundle();
    assert!(rest.contains(&format!("bundle: {}", bundle.display())), "{rest}");
    let manifest = std::fs::read_to_string(bundle.join("manifest.yaml")).unwrap();
    assert!(manifest.contains("stopped at the prompt before attach"), "{manifest}");
    assert!(manifest.contains("skipped at the prompt"), "{manifest}");
    assert!(bundle.join("rungs/01-baseline/stderr.log").is_file());
    assert!(bundle.join("findings.json").is_file());
    let rungs: Vec<_> = std::fs::read_dir(bundle.join("rungs")).unwrap().collect();
    assert_eq!(rungs.len(), 1, "only the baseline ran: {rungs:?}");
    s.assert_no_standin_left();
    assert!(start.elapsed() < Duration::from_secs(10), "took {:?}", start.elapsed());
}

/// Without a terminal (plain pipes), nothing is asked: a missing recipe or variable is an
/// error naming the flag that gives it, before anything runs.
#[test]
fn without_a_terminal_nothing_is_asked_and_the_error_names_the_flag() {
    let s = Scratch::new("no-tty");
    let (code, stdout, stderr) = s.piped(&[], &standin_path());
    assert_eq!(code, Some(2), "a usage error: {stdout}\n{stderr}");
    assert!(stderr.contains("--recipe NAME"), "{stderr}");
    assert!(stderr.contains("demo, cuda"), "the built-in recipes are named: {stderr}");
    assert!(!stderr.contains("which recipe"), "a prompt was shown: {stderr}");

    let recipe = s.recipe();
    let (code, stdout, stderr) = s.piped(&["--recipe", &recipe], &standin_path());
    assert_eq!(code, Some(2), "a usage error: {stdout}\n{stderr}");
    assert!(stderr.contains("--set label=VALUE"), "{stderr}");
    assert!(stderr.contains("a word the target gets as its argument"), "{stderr}");
    s.assert_nothing_started();
}

/// `--yes` on a terminal asks nothing either: the same error as without one.
#[test]
fn yes_on_a_terminal_asks_nothing() {
    let s = Scratch::new("yes");
    let recipe = s.recipe();
    let t = s.tty(&["--recipe", &recipe, "--yes"], &standin_path());
    let (code, rest) = t.finish();
    assert_eq!(code, 2, "a usage error: {rest}");
    assert!(rest.contains("--set label=VALUE"), "{rest}");
    assert!(!rest.contains("label (a word"), "a prompt was shown: {rest}");
    assert!(s.bundle_dirs().is_empty(), "a bundle was created");
}

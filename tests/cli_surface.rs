//! The command line's surface through the real binary: `--version` names the commit of this
//! checkout, `--color` and `NO_COLOR` decide whether escape bytes are written (on pipes and
//! on a pseudo-terminal), help is wrapped to the terminal's width, and `bench` exits 1 on
//! `result FAIL`.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use rexpect::session::{spawn_with_options, Options};

mod support;
use support::root;

const ESC: u8 = 0x1b;

fn xtask(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
    cmd.args(args).env_remove("NO_COLOR").env("TERM", "xterm-256color");
    cmd
}

fn output(cmd: &mut Command) -> Output {
    cmd.output().expect("cannot run the xtask binary")
}

fn has_escape(bytes: &[u8]) -> bool {
    bytes.contains(&ESC)
}

/// `xtask ARGS` on a pseudo-terminal of `cols` columns with `env` set: (exit code, what it
/// showed, escapes kept).
fn on_tty(args: &[&str], env: &[(&str, &str)], cols: u32) -> (i32, String) {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("stty cols {cols} rows 40 && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .env_remove("NO_COLOR")
        .env("TERM", "xterm-256color")
        .env_remove("COLUMNS");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut s =
        spawn_with_options(cmd, Options::default().timeout_ms(Some(20_000)).strip_ansi_escape_codes(false))
            .expect("cannot start the xtask binary on a pseudo-terminal");
    let seen = s.exp_eof().expect("the binary did not end");
    let start = std::time::Instant::now();
    loop {
        match s.process().status() {
            Some(rexpect::process::WaitStatus::Exited(_, code)) => return (code, seen),
            Some(rexpect::process::WaitStatus::StillAlive) if start.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(20))
            }
            other => panic!("the binary did not exit normally: {other:?}\n{seen}"),
        }
    }
}

#[test]
fn version_names_the_commit_of_this_checkout() {
    let out = output(&mut xtask(&["--version"]));
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(root())
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let expected =
        match (git(&["rev-parse", "--short", "HEAD"]), git(&["log", "-1", "--format=%cd", "--date=short"])) {
            (Some(commit), Some(date)) => format!("{commit} {date}"),
            // A copy without git (a tarball): the build says so.
            _ => "unknown commit".to_string(),
        };
    assert_eq!(text, format!("xtask {} ({expected})\n", env!("CARGO_PKG_VERSION")));
}

#[test]
fn color_never_and_a_pipe_write_no_escapes_and_always_does() {
    // A usage error (clap's) and an error of a command (the tool's own `error:`).
    for args in [&["doctr"][..], &["recipe", "check", "/nonexistent/recipe.yaml"][..]] {
        let auto = output(&mut xtask(args));
        assert!(!auto.status.success());
        assert!(String::from_utf8_lossy(&auto.stderr).starts_with("error:"), "{auto:?}");
        assert!(!has_escape(&auto.stderr), "auto into a pipe: {auto:?}");

        let never = output(&mut xtask(&[&["--color", "never"][..], args].concat()));
        assert!(!has_escape(&never.stderr), "--color never: {never:?}");

        let always = output(xtask(&[&["--color=always"][..], args].concat()).env("NO_COLOR", "1"));
        let err = String::from_utf8_lossy(&always.stderr);
        assert!(err.starts_with("\x1b[1;31merror:\x1b[0m "), "--color always wins over NO_COLOR: {err:?}");
        assert_eq!(always.status.code(), auto.status.code());
    }
    // Help on stdout, `--color` after the subcommand (a global option).
    let help = output(&mut xtask(&["doctor", "--help", "--color", "always"]));
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("\x1b[1;4mUsage:\x1b[0m"), "{help:?}");
    assert!(!has_escape(&output(&mut xtask(&["doctor", "--help"])).stdout));
    let bad = output(&mut xtask(&["--color", "sometimes", "doctor"]));
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("[possible values: auto, always, never]"));
}

#[test]
fn on_a_terminal_auto_colours_unless_no_color_or_a_dumb_terminal() {
    let (code, seen) = on_tty(&["doctr"], &[], 120);
    assert_eq!(code, 2);
    assert!(seen.contains("\x1b[1;31merror:\x1b[0m"), "{seen:?}");
    for env in [[("NO_COLOR", "1")], [("TERM", "dumb")]] {
        let (code, seen) = on_tty(&["doctr"], &env, 120);
        assert_eq!(code, 2);
        assert!(seen.contains("error:") && !seen.contains('\x1b'), "{env:?}: {seen:?}");
    }
    let (_, seen) = on_tty(&["--color", "never", "doctr"], &[], 120);
    assert!(!seen.contains('\x1b'), "{seen:?}");
}

#[test]
fn help_is_wrapped_to_the_terminal() {
    let (code, seen) = on_tty(&["--color", "never", "doctor", "--help"], &[], 60);
    assert_eq!(code, 0);
    // Past 60 columns only where one word is longer than the room left of the description
    // column (left whole, as clap's own wrapping does).
    let long: Vec<&str> = seen
        .lines()
        .map(str::trim_end)
        .filter(|l| l.chars().count() > 60)
        .filter(|l| l.rsplit_once(' ').is_none_or(|(before, _word)| before.chars().count() > 30))
        .collect();
    assert!(long.is_empty(), "lines past 60 columns: {long:#?}");
    assert!(seen.contains("--rungs <RUNG>"), "{seen}");
    // Into a pipe: 100 columns, as clap's own wrapping would.
    let piped = output(&mut xtask(&["doctor", "--help"]));
    let text = String::from_utf8_lossy(&piped.stdout);
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    assert!(text.lines().any(|l| l.chars().count() > 60), "not wrapped narrower than asked: {text}");
}

#[test]
fn bench_exits_1_when_its_result_is_fail() {
    // A log of a few bytes: `analyze` cannot start, read and exit in the 0.2 µs that
    // 300 MB/s allows, so the speed goal fails whatever the machine.
    let out_file =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("bench-fail-{}.log", std::process::id()));
    let records = root().join("tests/fixtures/h200/triton_worker/memcheck.log");
    let out = output(&mut xtask(&[
        "bench",
        "--size-mib",
        "0",
        "--records",
        records.to_str().unwrap(),
        "--out",
        out_file.to_str().unwrap(),
    ]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("result     FAIL"), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(!out_file.exists(), "the generated log is removed");
}

/// `completions bash` prints a script Bash accepts, made from the command line itself: sourced,
/// it completes subcommands (nested too), options, and the values of a value option, and
/// options before any subcommand as the ladder's (its default command).
#[test]
fn completions_for_bash_complete_commands_options_and_values() {
    let out = Command::new(env!("CARGO_BIN_EXE_xtask")).args(["completions", "bash"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let script = String::from_utf8(out.stdout).unwrap();
    assert!(script.contains("complete -o filenames -F _xtask xtask"), "{script}");
    assert!(!script.contains("\"bench"), "the hidden `bench` is offered");
    let file =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("completions-{}.bash", std::process::id()));
    std::fs::write(&file, &script).unwrap();
    let probe = format!(
        "source '{}'; t() {{ COMP_WORDS=(\"$@\"); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); _xtask; echo \"$*|${{COMPREPLY[*]}}\"; }}; \
         t xtask bundle p; t xtask bundle pack --an; t xtask --rungs sy; t xtask run --hang; t xtask recipe i",
        file.display()
    );
    let got = Command::new("bash").arg("-c").arg(&probe).output().unwrap();
    let _ = std::fs::remove_file(&file);
    let got = String::from_utf8_lossy(&got.stdout).into_owned();
    for want in [
        "xtask bundle p|pack prune",
        "xtask bundle pack --an|--anonymize",
        "xtask --rungs sy|synccheck",
        "xtask run --hang|--hang-after",
        "xtask recipe i|init",
    ] {
        assert!(got.lines().any(|l| l == want), "`{want}` not in:\n{got}");
    }
}

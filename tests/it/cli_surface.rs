//! The command line's surface through the real binary: `--version` names the commit of this
//! checkout, `--color` and `NO_COLOR` decide whether escape bytes are written (on pipes and
//! on a pseudo-terminal), help is wrapped to the terminal's width, `bench` exits 1 on
//! `result FAIL`, the completion scripts (bash, zsh, fish) complete in the real shells, and the
//! manual page is roff that groff reads without a warning.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use rexpect::session::{spawn_with_options, Options};

use crate::support;
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
    // A log of a few bytes: `analyze` cannot start, read and exit in the 0.06 µs that
    // 1 GB/s allows, so the speed goal fails whatever the machine.
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
         t xtask bundle p; t xtask bundle pack --an; t xtask --rungs sy; t xtask run --hang; t xtask recipe i; \
         t xtask completions ''",
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
        "xtask completions |bash zsh fish",
    ] {
        assert!(got.lines().any(|l| l == want), "`{want}` not in:\n{got}");
    }
}

/// Whether `tool` runs here; if not, says so and the test skips its real work (with CI set it
/// fails: `.ci/run` installs it).
fn have(tool: &str, version_arg: &str, package: &str) -> bool {
    if Command::new(tool).arg(version_arg).output().is_ok_and(|o| o.status.success()) {
        return true;
    }
    let why = format!("`{tool}` is not on PATH (`apt-get install {package}`)");
    if std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false" && v != "0") {
        panic!("{why}; CI must run this test (`.ci/run` installs it)");
    }
    support::skipped(&why);
    false
}

/// `xtask completions SHELL` (or the other binary's), checked to have succeeded.
fn completions(bin: &str, shell: &str) -> String {
    let out = Command::new(bin).args(["completions", shell]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The cases every shell's script must complete: a command line typed so far, and exactly
/// the words offered for its last word (sorted). `bench` is hidden: `b` is `bundle` only.
const PROBES: &[(&str, &[&str])] = &[
    ("xtask bundle p", &["pack", "prune"]),
    ("xtask bundle pack --an", &["--anonymize"]),
    ("xtask --rungs sy", &["synccheck"]),
    ("xtask run --hang", &["--hang-after"]),
    ("xtask recipe i", &["init"]),
    ("xtask completions ", &["bash", "fish", "zsh"]),
    ("xtask --color ", &["always", "auto", "never"]),
    ("xtask doctor --rungs base", &["baseline"]),
    ("xtask b", &["bundle"]),
    ("xtask -C /tmp bu", &["bundle"]),
    ("xtask --rungs synccheck --fu", &["--full"]),
    ("xtask r", &["recipe", "run"]),
];

fn check_probes(shell: &str, offered: impl Fn(&str) -> Vec<String>) {
    let mut wrong = Vec::new();
    for (line, want) in PROBES {
        let mut got = offered(line);
        got.sort();
        got.dedup();
        if got != *want {
            wrong.push(format!("`{line}`: {got:?}, not {want:?}"));
        }
    }
    assert!(wrong.is_empty(), "{shell} completes wrongly:\n{}", wrong.join("\n"));
}

/// A file in this test run's scratch folder holding `text`.
fn scratch_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("completions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    file
}

/// What zsh's completion system offers after `line` (a TAB typed at its end), in an
/// interactive zsh on a pseudo-terminal (`zpty`), with the script autoloaded from `fpath` as an
/// installed one is: every match `compadd` adds, as zsh's own matching left them.
fn zsh_offers(fpath: &Path, line: &str) -> Vec<String> {
    // The marker is spelt in two halves, so that the shell's echo of this code cannot match it.
    const PROBE: &str = r#"
zmodload zsh/zpty || exit 3
zpty z zsh -f -i
zpty -w z "PS1=; fpath=(${(q)1} \$fpath); autoload -U compinit; compinit -u -D; bindkey '^I' complete-word; comppostfuncs=(exit)"
zpty -w z 'compadd() { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return; fi; local -a h; local p=MA w; builtin compadd -A h "$@"; for w in $h; do print -r -- "${p}TCH:$w"; done; builtin compadd "$@" }'
zpty -n -w z "$2"$'\t'
local line
while zpty -r z line; do print -rn -- $line; done
"#;
    let out = Command::new("timeout")
        .args(["30", "zsh", "-f", "-c", PROBE, "probe"])
        .arg(fpath)
        .arg(line)
        .env("HOME", fpath)
        .output()
        .unwrap();
    assert!(out.status.success(), "the zsh probe of `{line}` ended with {:?}", out.status);
    String::from_utf8_lossy(&out.stdout)
        .split("MATCH:")
        .skip(1)
        .map(|m| m.split(|c: char| c.is_whitespace()).next().unwrap_or("").to_string())
        .collect()
}

/// `completions zsh` is a `#compdef` function zsh accepts, and zsh's own completion system,
/// with it installed on `fpath`, completes subcommands (nested too), options, the values of a
/// value option (a comma-separated list too), a positional argument's choices, and options
/// before any subcommand as the ladder's.
#[test]
fn completions_for_zsh_complete_commands_options_and_values() {
    let script = completions(env!("CARGO_BIN_EXE_xtask"), "zsh");
    assert!(script.starts_with("#compdef xtask\n"), "{script}");
    assert!(!script.contains("bench"), "the hidden `bench` is in the script");
    if !have("zsh", "--version", "zsh") {
        return;
    }
    let file = scratch_file("_xtask", &script);
    let check = Command::new("zsh").arg("-n").arg(&file).output().unwrap();
    assert!(check.status.success(), "zsh -n: {}", String::from_utf8_lossy(&check.stderr));
    let fpath = file.parent().unwrap().to_path_buf();
    check_probes("zsh", |line| zsh_offers(&fpath, line));
    // Installed under its own name, it is that name's.
    let installed = completions(env!("CARGO_BIN_EXE_debug-ima"), "zsh");
    assert!(
        installed.starts_with("#compdef debug-ima\n") && installed.contains("compdef _debug-ima debug-ima")
    );
}

/// `completions fish` is `complete` lines fish accepts, and fish's `complete -C` with them
/// loaded completes as the other shells do.
#[test]
fn completions_for_fish_complete_commands_options_and_values() {
    let script = completions(env!("CARGO_BIN_EXE_xtask"), "fish");
    assert!(
        script.lines().filter(|l| !l.starts_with('#')).all(|l| l.starts_with("complete -c xtask ")),
        "{script}"
    );
    assert!(!script.contains("bench"), "the hidden `bench` is in the script");
    if !have("fish", "--version", "fish") {
        return;
    }
    let file = scratch_file("xtask.fish", &script);
    let check = Command::new("fish").arg("--no-execute").arg(&file).output().unwrap();
    assert!(check.status.success(), "fish --no-execute: {}", String::from_utf8_lossy(&check.stderr));
    let home = file.parent().unwrap().to_path_buf();
    check_probes("fish", |line| {
        let out = Command::new("fish")
            .args(["--no-config", "-c", "source $argv[1]; complete -C $argv[2]"])
            .arg(&file)
            .arg(line)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", &home)
            .env("XDG_DATA_HOME", &home)
            .output()
            .unwrap();
        assert!(out.status.success(), "fish: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.split('\t').next().unwrap().to_string())
            .collect()
    });
}

/// `xtask man` (or the other binary's): the page, checked to have succeeded.
fn man(bin: &str) -> String {
    let out = Command::new(bin).arg("man").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The page rendered by groff as plain text, after checking that groff, all its warnings on,
/// has nothing to say about it.
fn groff_text(page: &str) -> String {
    let file = scratch_file("page.1", page);
    let lint = Command::new("groff").args(["-man", "-Tutf8", "-ww", "-z"]).arg(&file).output().unwrap();
    let warnings = String::from_utf8_lossy(&lint.stderr);
    assert!(lint.status.success() && warnings.is_empty(), "groff -ww warns:\n{warnings}");
    let out = Command::new("groff").args(["-man", "-Tutf8", "-P-cbou"]).arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The top-level commands `--help` lists (`Commands:` up to the next blank line), `help` aside.
fn listed_commands() -> Vec<String> {
    let help = String::from_utf8(output(&mut xtask(&["--help"])).stdout).unwrap();
    let list = help.split("Commands:\n").nth(1).expect("--help lists commands");
    list.lines()
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| *w != "help")
        .map(str::to_string)
        .collect()
}

/// `man` prints roff that groff reads without a warning, made from the command line: every
/// command `--help` lists has its section, options come with their help and value choices, the
/// exit codes of the help are EXIT STATUS, the hidden `bench` is left out, and every guide SEE
/// ALSO names exists. Under the installed name, the page is that name's; the same binary
/// prints the same page.
#[test]
fn man_page_is_roff_groff_reads_without_warnings() {
    let page = man(env!("CARGO_BIN_EXE_xtask"));
    assert!(page.contains("\n.TH \"XTASK\" 1 "), "{page}");
    assert_eq!(page, man(env!("CARGO_BIN_EXE_xtask")), "not deterministic");
    // No text line is read as a request: each line that starts with `.` or `'` is one of ours.
    for line in page.lines().filter(|l| l.starts_with('.') || l.starts_with('\'')) {
        let request = line[1..].split([' ', '\\']).next().unwrap();
        assert!(["TH", "SH", "SS", "PP", "IP", "TP", "B", "br", "nh", ""].contains(&request), "`{line}`");
    }
    if !have("groff", "--version", "groff-base") {
        return;
    }
    let text = groff_text(&page);
    for command in listed_commands() {
        let heading = if command == "debug-ima" { "run".to_string() } else { command };
        assert!(text.contains(&format!("\n   xtask {heading}\n")), "no section for `{heading}`:\n{text}");
    }
    for nested in ["xtask bundle pack", "xtask recipe init", "xtask container build"] {
        assert!(text.contains(&format!("\n   {nested}\n")), "no section for `{nested}`:\n{text}");
    }
    // An option with its help, a value option with its choices (as `bundle pack --help` has them).
    let pack_help = String::from_utf8(output(&mut xtask(&["bundle", "pack", "--help"])).stdout).unwrap();
    assert!(pack_help.contains("--anonymize"), "{pack_help}");
    let section = text.split("\n   xtask bundle pack\n").nth(1).unwrap().split("\n   xtask ").next().unwrap();
    let anonymize = section.split("--anonymize").nth(1).expect("`bundle pack --anonymize` in the page");
    let words = |s: &str| s.split_whitespace().take(6).collect::<Vec<_>>().join(" ");
    let help_words = words(pack_help.split("--anonymize").nth(1).unwrap());
    assert_eq!(words(anonymize), help_words, "`--anonymize`'s help");
    // Filled text: compared with its spaces and line breaks as one space.
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("--container RUNTIME Runs every rung inside a container"), "{text}");
    assert!(flat.contains("One of: docker, podman, apptainer, none (On the host: no container)."), "{text}");
    assert!(flat.contains("auto: Colour when the stream is a terminal"), "{text}");
    assert!(flat.contains("-C DIR Acts as if started in DIR") && flat.contains("--color WHEN"), "{text}");
    assert!(!text.contains("bench"), "the hidden `bench` is in the page");
    let status = text.split("\nEXIT STATUS\n").nth(1).expect("an EXIT STATUS section");
    let status = status.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        status.contains("130 interrupted (Ctrl-C)") && status.contains("xtask watch the job's own"),
        "{status}"
    );
    // The hyphens of options are typed as written: ASCII, not a hyphen or a minus sign.
    assert!(!text.contains('\u{2010}') && !text.contains('\u{2212}'), "{text}");
    let see_also = text.split("\nSEE ALSO\n").nth(1).expect("a SEE ALSO section");
    let guides: Vec<&str> = see_also
        .split(|c: char| c.is_whitespace() || c == ',' || c == ';' || c == ':')
        .filter(|w| w.ends_with(".md"))
        .collect();
    assert!(guides.len() >= 5, "{see_also}");
    for g in guides {
        assert!(root().join(g).is_file(), "SEE ALSO names `{g}`, which is not in the repository");
    }
    // Installed, it is `debug-ima`'s page, and the ladder is `debug-ima run`.
    let installed = groff_text(&man(env!("CARGO_BIN_EXE_debug-ima")));
    assert!(
        installed.starts_with("DEBUG-IMA(1)") && installed.contains("\n   debug-ima run\n"),
        "{installed}"
    );
    assert!(!installed.contains("debug-ima debug-ima") && !installed.contains("xtask"), "{installed}");
}

/// `run --help` (issue 41): its usage is the synopsis docs/ladder.md shows (one source,
/// `debug_ima::SYNOPSIS`), which names every option of the command and the program after `--`;
/// its description names every rung of the ladder as it is (before, it described the six rungs
/// of the first ladder, and the usage was `[OPTIONS]` without `[-- CMD...]`).
#[test]
fn run_help_shows_the_synopsis_of_docs_ladder_and_the_current_ladder() {
    use clap::CommandFactory;
    use xtask::commands::debug_ima::{usage, SYNOPSIS};
    let doc = std::fs::read_to_string(root().join("docs/ladder.md")).unwrap();
    let block = usage("debug-ima run", 4);
    assert!(doc.contains(&format!("\n    {block}\n\n")), "docs/ladder.md's synopsis is not:\n    {block}");
    let words = SYNOPSIS.join(" ");
    let cli = xtask::cli::Cli::command();
    let run = cli.find_subcommand("debug-ima").unwrap();
    for a in run.get_arguments().filter(|a| !a.is_global_set() && !a.is_hide_set()) {
        if let Some(long) = a.get_long() {
            assert!(words.contains(&format!("[--{long}")), "the synopsis lacks --{long}: {words}");
        }
    }
    assert!(words.contains("[-- CMD ARGS...]"), "{words}");
    for (argv0, command) in [("xtask", "cargo xtask debug-ima"), ("debug-ima", "debug-ima run")] {
        let dir = std::env::temp_dir().join(format!("debug-ima-help-{}-{argv0}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bin = dir.join(argv0);
        let _ = std::fs::remove_file(&bin);
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_xtask"), &bin).unwrap();
        let out = Command::new(&bin).args(["run", "--help"]).env("NO_COLOR", "1").output().unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{help}");
        assert!(help.contains(&format!("Usage: {}\n", usage(command, "Usage: ".len()))), "{help}");
        for rung in xtask::model::RungId::NAMES {
            assert!(help.contains(rung), "`{rung}` not in the help:\n{help}");
        }
        assert!(help.contains("armed") && !help.contains("Stops at the first rung"), "{help}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

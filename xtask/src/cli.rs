//! The command line: clap definitions and a flat dispatch. Thin by design: each command's
//! work lives in its own module; printing goes through `ui`. Around the dispatch, the tool
//! takes charge of what it starts (`process::init`: the subreaper, the signal handler) and
//! kills what is left at the end (`process::end`), also after a panic.
//!
//! Exit codes: 0 success; 1 failure (the message says what to do); 2 usage error; the
//! `--error-exitcode N` of `debug-ima` when it located a fault;
//! 130 interrupted by Ctrl-C (SIGINT), 143 by SIGTERM, 129 by SIGHUP, 128 + N by another
//! signal N that ends a run as SIGTERM does (SIGQUIT 131, SIGUSR1 138, SIGUSR2 140, SIGALRM 142).
//!
//! Must not: do a command's work, or print other than through `ui`.

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::commands::{ablate, analyze, bench, bundle, container, debug_ima, doctor, recipe, watch, Outcome};
use crate::files;
use crate::model::Exit;
use crate::process::{self, Cause, Interrupt};
use crate::redact;
use crate::ui;

/// Exit status for success.
pub const EXIT_OK: i32 = 0;
/// Exit status for a failure the message explains.
pub const EXIT_FAILURE: i32 = 1;
/// Exit status for a malformed command line.
pub const EXIT_USAGE: i32 = 2;
/// Exit status after Ctrl-C (128 + SIGINT, as shells report it), or a stop asked for
/// without a signal.
pub const EXIT_INTERRUPTED: i32 = 130;
/// Exit status after SIGTERM (128 + SIGTERM).
pub const EXIT_TERMINATED: i32 = 143;
/// Exit status after SIGHUP (128 + SIGHUP).
pub const EXIT_HANGUP: i32 = 129;

/// `--version`: the crate's version and the commit it was built from (`xtask/build.rs`).
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("XTASK_COMMIT"), ")");

#[derive(Debug, Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    version = VERSION,
    about = "From `CUDA error: an illegal memory access was encountered` to the faulting kernel and line",
    after_help = "Exit codes: 0 success, 1 failure (the message says what to do next), 2 usage error, \
                  130 interrupted (Ctrl-C), 143 terminated (SIGTERM), 129 hung up (SIGHUP).\n\
                  Each log a run writes is capped at DEBUG_IMA_LOG_CAP bytes (default 1G; K, M, G \
                  suffixes): its head and tail are kept, and a marker line says what was cut."
)]
pub struct Cli {
    /// Acts as if started in DIR (as `git -C`, `make -C`): recipes, relative paths, the
    /// build, `bundles/` and `git describe` are taken from there.
    // Its id is not `dir`: a global argument shares its id with the subcommands' arguments,
    // and `bundle unpack` has a positional `dir`.
    #[arg(short = 'C', id = "start_dir", value_name = "DIR", global = true)]
    pub start_dir: Option<std::path::PathBuf>,
    #[command(subcommand)]
    pub command: Command,
    /// When to colour the tool's own words (`error:`, `warning:`, help): `auto` on a terminal
    /// unless `NO_COLOR` is set
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value = "auto")]
    pub color: ui::ColorChoice,
    /// Only the result (the verdict, the stop reason, the bundle) and errors and warnings: no
    /// progress, rung lines or notes (the bundle has them all)
    #[arg(long, short = 'q', global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Also every command as it ran, with its exit and time (redacted, as the bundle records it)
    #[arg(long, short = 'v', global = true)]
    pub verbose: bool,
}

/// How the user started the tool, for the help: `cargo xtask` in the clone (the binary
/// `xtask`, run by the alias), else the installed binary's own name (`debug-ima`).
fn invoked_as() -> String {
    let argv0 = std::env::args_os().next().unwrap_or_default();
    match std::path::Path::new(&argv0).file_name().and_then(|n| n.to_str()) {
        Some(name) if name != "xtask" && !name.is_empty() => name.to_string(),
        _ => "cargo xtask".to_string(),
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    // Its help is `debug_ima::ABOUT` and `long_about()`, its usage `debug_ima::usage` (the
    // synopsis docs/ladder.md shows too).
    #[command(visible_alias = "run", about = debug_ima::ABOUT, long_about = debug_ima::long_about())]
    DebugIma(debug_ima::Args),
    /// Run a long job (a server, a training run) once, armed but at full speed: its output
    /// passes through, and a device fault or a hang in it gets a bundle with the verdict from
    /// that one occurrence (`watch [--hang-after SECS] -- CMD ARGS...`).
    ///
    /// Exit codes: the job's own (128 + the signal that ended it), 1 when it could not start,
    /// 2 usage, 130 interrupted by Ctrl-C, 143 by SIGTERM.
    Watch(watch::WatchArgs),
    // Its help is `ablate::ABOUT` and `ablate::LONG_ABOUT` (docs/why.md).
    #[command(about = ablate::ABOUT, long_about = ablate::LONG_ABOUT)]
    Ablate(ablate::AblateArgs),
    /// Take the evidence of a process that already runs (a hang): host stacks (py-spy, gdb),
    /// the GPU state through a cuda-gdb attach that leaves it running, the NCCL flight
    /// recorder; with `--kill`, its user-triggered GPU dump, then its tree ended. Into a
    /// bundle, with the verdict (docs/hangs.md).
    ///
    /// Exit codes: 0 done (with or without a verdict), 1 it could not (ptrace not permitted),
    /// 2 usage (no such PID, PID 1, this tool), 130 interrupted by Ctrl-C (the bundle keeps
    /// what was collected).
    Dump(crate::commands::dump::Args),
    /// Check what the ladder needs (GPU, driver, nvcc, cuda-gdb, compute-sanitizer,
    /// cuobjdump, ptrace, disk space) and say how to fix what is missing.
    Doctor(doctor::DoctorArgs),
    /// List, show or check recipes.
    #[command(subcommand)]
    Recipe(recipe::RecipeCommand),
    /// Read logs, compute-sanitizer XML reports or whole directories (a bundle, a folder of
    /// logs) and name the faulting kernel and line.
    ///
    /// The tool that wrote each file is recognised from its content: CUDA runtime errors,
    /// Python tracebacks, PyTorch's device assert line, the coredump progress stream,
    /// cuda-gdb (on a coredump or attached), the CUDA_DEVICE_WAITS_ON_EXCEPTION message,
    /// compute-sanitizer text and XML. Exit 0 whenever the input could be read, with or
    /// without a verdict.
    Analyze(analyze::AnalyzeArgs),
    /// List, show, pack, unpack, verify and report bundles (what `debug-ima` collected).
    ///
    /// Exit codes: 0 done, 1 failure or (`verify`) a file that does not match.
    #[command(subcommand)]
    Bundle(bundle::BundleCommand),
    /// Build the project's container images (containers/, or the copies the tool carries):
    /// `container build cuda`.
    #[command(subcommand)]
    Container(container::ContainerCommand),
    /// Print a shell completion script (bash, zsh, fish): `source <(debug-ima completions bash)`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: crate::commands::completions::Shell,
    },
    /// Print the manual page (roff): `mkdir -p ~/.local/share/man/man1 && debug-ima man >
    /// ~/.local/share/man/man1/debug-ima.1`.
    Man,
    /// Measure the analyzer on a generated 1 GiB memcheck log against `grep -c`
    /// (`bench pack`: `bundle pack` against `tar -I 'zstd -T0'`).
    ///
    /// Exit codes: 0 `result PASS`, 1 `result FAIL` (a goal missed) or it could not run.
    ///
    /// The project's own benchmark (docs/benchmarks.md): left out of the user's help.
    #[command(hide = true)]
    Bench {
        #[command(subcommand)]
        what: Option<BenchCommand>,
        #[command(flatten)]
        args: bench::BenchArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Pack a bundle holding a coredump-sized file with `bundle pack` and with
    /// `tar -I 'zstd -T0'`, and compare time and size.
    Pack(bench::PackBenchArgs),
    /// Write a generated memcheck log through the ladder's process runner with and without
    /// redaction, and compare the throughput.
    Redact(bench::RedactBenchArgs),
}

/// Parses the command line, runs the command and returns the process exit code. Whatever
/// the command started and left alive is killed before this returns (or unwinds).
pub fn main() -> i32 {
    use clap::{CommandFactory, FromArgMatches};
    // Once per run; clap without its `string` feature takes a `&'static str`.
    let name: &'static str = Box::leak(invoked_as().into_boxed_str());
    ui::set_invoked_as(name);
    // Help and clap's errors are printed before the parse could hand over `--color`.
    let raw: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if process::guard::serve_if_asked(&raw) {
        return EXIT_OK;
    }
    let args = with_default_command(raw);
    ui::set_color(color_arg(&args).unwrap_or(ui::ColorChoice::Auto));
    let width = ui::help_width();
    // `--version` says `xtask 0.1.0 (...)` under the alias, `debug-ima 0.1.0 (...)` installed.
    let display = if name == "cargo xtask" { "xtask" } else { name };
    let mut command = Cli::command().name(name).bin_name(name).display_name(display).term_width(width);
    // Installed, the ladder is `debug-ima run` (its alias), not `debug-ima debug-ima`; its usage
    // is the synopsis of docs/ladder.md, under clap's `Usage: `.
    let ladder =
        if name == "cargo xtask" { "cargo xtask debug-ima".to_string() } else { format!("{name} run") };
    command =
        command.mut_subcommand("debug-ima", |s| s.override_usage(debug_ima::usage(&ladder, "Usage: ".len())));
    let parsed = command.try_get_matches_from(&args);
    let cli = match parsed.and_then(|m| Cli::from_arg_matches(&m)) {
        Ok(cli) => cli,
        Err(e) => {
            // clap's message quotes the argument it refused, which can be a token.
            let text = e.render().to_string();
            if e.use_stderr() {
                ui::usage_error(redact::redact_value(text.trim_end()).0.as_ref());
                return EXIT_USAGE;
            }
            let _ = ui::help(&text, width);
            return EXIT_OK;
        }
    };
    ui::set_color(cli.color);
    ui::set_verbosity(match (cli.quiet, cli.verbose) {
        (true, _) => ui::Verbosity::Quiet,
        (_, true) => ui::Verbosity::Verbose,
        _ => ui::Verbosity::Normal,
    });
    if let Err(e) = process::log_cap() {
        error(&e);
        return EXIT_USAGE;
    }
    if let Err(e) = process::init() {
        error(&e);
        return EXIT_FAILURE;
    }
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(cli)));
    process::end();
    let caught = Interrupt::default().cause();
    match result {
        // A signal that came while the command ran is what the exit says, however it ended.
        Ok(Ok(code)) => caught.map_or(code, interrupted_code),
        Ok(Err(e)) => {
            error(&e);
            let code = if crate::model::Usage::is_in(&e) { EXIT_USAGE } else { EXIT_FAILURE };
            caught.map_or(code, interrupted_code)
        }
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// The command line with the ladder's subcommand put in where none is named: the installed
/// tool is named after its main job, so `debug-ima --recipe demo` and `debug-ima -- ./app`
/// are `debug-ima run --recipe demo` and `debug-ima run -- ./app`. Only an option that is
/// neither global (`-C DIR`, `--color WHEN`, `-q`, `-v`) nor the help's or the version's, or a `--`, in
/// the place of the subcommand, does it.
pub fn with_default_command(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut i = 1;
    while i < args.len() {
        let a = args[i].to_string_lossy().into_owned();
        match a.as_str() {
            "-C" | "--color" => i += 2,
            "-q" | "--quiet" | "-v" | "--verbose" => i += 1,
            _ if a.starts_with("--color=") || (a.starts_with("-C") && a.len() > 2) => i += 1,
            "-h" | "--help" | "-V" | "--version" => return args,
            _ if a.starts_with('-') => {
                args.insert(i, "run".into());
                return args;
            }
            _ => return args,
        }
    }
    args
}

/// The last `--color WHEN` or `--color=WHEN` before a `--`, read ahead of the parse so that
/// help and usage errors follow it too. A value clap would refuse counts as not given.
pub fn color_arg(args: &[std::ffi::OsString]) -> Option<ui::ColorChoice> {
    let mut choice = None;
    let mut it = args.iter().skip(1).map(|a| a.to_string_lossy());
    while let Some(a) = it.next() {
        if a == "--" {
            break;
        }
        let value = match a.strip_prefix("--color") {
            Some("") => it.next().map(|v| v.into_owned()),
            Some(v) => match v.strip_prefix('=') {
                Some(v) => Some(v.to_string()),
                None => continue,
            },
            None => continue,
        };
        choice = value.as_deref().and_then(ui::ColorChoice::from_name).or(choice);
    }
    choice
}

/// Prints an error chain with secrets redacted: a message can quote what the user gave (a
/// `--set` value without `=`, a recipe line), and the terminal is shared like the bundle.
/// A full disk gets the same advice wherever the space ran out ([`files::FULL_DISK`]).
fn error(e: &anyhow::Error) {
    let mut text = format!("{e:#}");
    if files::out_of_space(e) {
        text = format!("{text}\n{}", files::FULL_DISK);
    }
    ui::error(redact::redact_value(&text).0.as_ref());
}

/// The exit status of a command's outcome, an interruption numbered by what caused it
/// (the process-wide [`Interrupt`]).
pub fn exit_code(outcome: Outcome) -> i32 {
    exit_code_for(outcome, Interrupt::default().cause())
}

/// The exit status of `outcome`, interrupted by `cause`.
pub fn exit_code_for(outcome: Outcome, cause: Option<Cause>) -> i32 {
    match outcome {
        Outcome::Done | Outcome::Located => EXIT_OK,
        Outcome::Mismatch => EXIT_FAILURE,
        Outcome::Interrupted => interrupted_code(cause.unwrap_or(Cause::Asked)),
        Outcome::Exited(exit) => match exit {
            Exit::Code(c) => c,
            Exit::Signal(s) => 128 + s,
            Exit::Interrupted => interrupted_code(cause.unwrap_or(Cause::Asked)),
            Exit::TimedOut | Exit::Stopped | Exit::NotStarted => EXIT_FAILURE,
        },
    }
}

/// 128 + the signal, as shells report a death by it.
fn interrupted_code(cause: Cause) -> i32 {
    match cause {
        Cause::Terminate => EXIT_TERMINATED,
        Cause::Hangup => EXIT_HANGUP,
        Cause::CtrlC | Cause::Asked => EXIT_INTERRUPTED,
        Cause::Other(signal) => 128 + signal as i32,
    }
}

fn run(cli: Cli) -> Result<i32> {
    if let Some(dir) = &cli.start_dir {
        std::env::set_current_dir(dir).map_err(|e| {
            crate::model::Usage::error(format!("`-C {}`: cannot work in that folder: {e}", dir.display()))
        })?;
    }
    // An installed tool whose clone is gone reads its built-in recipes from its cache folder.
    if matches!(
        cli.command,
        Command::DebugIma(_) | Command::Watch(_) | Command::Ablate(_) | Command::Recipe(_)
    ) {
        crate::commands::builtin_files::ensure()?;
    }
    // Their hints name the container files' README (`launch::images::readme`), which must be
    // there; `container build` fills the folder itself, failing when it cannot. A cache folder
    // that cannot be written fails no run here: it would only leave a hint's file missing.
    if matches!(cli.command, Command::DebugIma(_) | Command::Doctor(_)) {
        let _ = crate::commands::builtin_files::ensure_containers();
    }
    let outcome = match cli.command {
        Command::Analyze(args) => analyze::run(args)?,
        Command::DebugIma(args) => {
            let located_code = args.error_exitcode;
            match (debug_ima::run(args)?, located_code) {
                (Outcome::Located, Some(code)) => return Ok(i32::from(code)),
                (o, _) => o,
            }
        }
        Command::Watch(args) => watch::run(args)?,
        Command::Ablate(args) => ablate::run(args)?,
        Command::Dump(args) => crate::commands::dump::run(args)?,
        Command::Doctor(args) => doctor::run(args)?,
        Command::Recipe(cmd) => recipe::run(cmd)?,
        Command::Bundle(cmd) => bundle::run(cmd)?,
        Command::Container(cmd) => container::run(cmd)?,
        Command::Completions { shell } => {
            let cli = <Cli as clap::CommandFactory>::command();
            crate::commands::completions::run(&cli, shell)?
        }
        Command::Man => crate::commands::man::run(&<Cli as clap::CommandFactory>::command())?,
        Command::Bench { what: None, args } => bench::run(args)?,
        Command::Bench { what: Some(BenchCommand::Pack(args)), .. } => bench::run_pack(args)?,
        Command::Bench { what: Some(BenchCommand::Redact(args)), .. } => bench::run_redact(args)?,
    };
    Ok(exit_code(outcome))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<std::ffi::OsString> {
        args.iter().map(|a| a.into()).collect()
    }

    #[test]
    fn the_ladder_is_the_default_command() {
        let run = |a: &[&str]| with_default_command(os(a));
        assert_eq!(run(&["debug-ima", "--recipe", "demo"]), os(&["debug-ima", "run", "--recipe", "demo"]));
        assert_eq!(run(&["debug-ima", "-C", "/p", "--yes"]), os(&["debug-ima", "-C", "/p", "run", "--yes"]));
        assert_eq!(
            run(&["debug-ima", "--color=never", "--", "./app"]),
            os(&["debug-ima", "--color=never", "run", "--", "./app"])
        );
        for kept in
            [&["debug-ima", "doctor"][..], &["debug-ima", "--help"], &["debug-ima", "-V"], &["debug-ima"]]
        {
            assert_eq!(run(kept), os(kept));
        }
    }

    #[test]
    fn color_is_read_ahead_of_the_parse() {
        use ui::ColorChoice::{Always, Never};
        assert_eq!(color_arg(&os(&["xtask", "--color", "never", "doctor"])), Some(Never));
        assert_eq!(color_arg(&os(&["xtask", "doctor", "--color=always", "--help"])), Some(Always));
        assert_eq!(color_arg(&os(&["xtask", "--color=never", "--color", "always"])), Some(Always));
        assert_eq!(color_arg(&os(&["xtask", "analyze", "--", "--color=never"])), None);
        assert_eq!(color_arg(&os(&["xtask", "--color", "sometimes"])), None);
        assert_eq!(color_arg(&os(&["xtask", "--colour=never"])), None);
    }

    #[test]
    fn color_is_a_global_option_and_version_names_the_commit() {
        use clap::CommandFactory;
        let cli = Cli::try_parse_from(["xtask", "doctor", "--color", "never"]).unwrap();
        assert_eq!(cli.color, ui::ColorChoice::Never);
        assert_eq!(Cli::try_parse_from(["xtask", "doctor"]).unwrap().color, ui::ColorChoice::Auto);
        let err =
            Cli::command().display_name("xtask").try_get_matches_from(["xtask", "--version"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::DisplayVersion);
        assert_eq!(err.render().to_string(), format!("xtask {VERSION}\n"));
        assert!(VERSION.starts_with(concat!(env!("CARGO_PKG_VERSION"), " (")), "{VERSION}");
    }

    #[test]
    fn every_positional_argument_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_positionals() {
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} <{}>", arg.get_id()));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&<Cli as clap::CommandFactory>::command(), "xtask", &mut missing);
        assert!(missing.is_empty(), "positional arguments without a doc comment: {missing:?}");
    }

    #[test]
    fn outcomes_map_to_the_documented_statuses() {
        assert_eq!(exit_code(Outcome::Done), 0);
        assert_eq!(exit_code(Outcome::Mismatch), 1);
        assert_eq!(exit_code(Outcome::Interrupted), 130);
        assert_eq!(exit_code_for(Outcome::Interrupted, Some(Cause::CtrlC)), 130);
        assert_eq!(exit_code_for(Outcome::Interrupted, Some(Cause::Terminate)), 143);
        assert_eq!(exit_code_for(Outcome::Interrupted, Some(Cause::Hangup)), 129);
        assert_eq!(exit_code_for(Outcome::Interrupted, Some(Cause::Asked)), 130);
        assert_eq!(exit_code_for(Outcome::Done, Some(Cause::Terminate)), 0);
        use nix::sys::signal::Signal;
        assert_eq!(exit_code_for(Outcome::Interrupted, Some(Cause::Other(Signal::SIGUSR1))), 138);
        assert_eq!(exit_code_for(Outcome::Interrupted, Some(Cause::Other(Signal::SIGQUIT))), 131);
        assert_eq!(exit_code_for(Outcome::Interrupted, Some(Cause::Other(Signal::SIGALRM))), 142);
        assert_eq!(exit_code_for(Outcome::Exited(Exit::Code(3)), None), 3);
        assert_eq!(exit_code_for(Outcome::Exited(Exit::Signal(6)), None), 134);
    }
}

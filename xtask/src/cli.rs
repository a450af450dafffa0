//! The command line: clap definitions and a flat dispatch. Thin by design: each command's
//! work lives in its own module; printing goes through `ui`.
//!
//! Exit codes: 0 success; 1 failure (the message says what to do); 2 usage error;
//! 130 interrupted.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

use crate::{analyze, bench, ui};

/// Exit status for success.
pub const EXIT_OK: i32 = 0;
/// Exit status for a failure the message explains.
pub const EXIT_FAILURE: i32 = 1;
/// Exit status for a malformed command line.
pub const EXIT_USAGE: i32 = 2;

#[derive(Debug, Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "From `CUDA error: an illegal memory access was encountered` to the faulting kernel and line",
    after_help = "Exit codes: 0 success, 1 failure (the message says what to do next), 2 usage error, 130 interrupted."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Read logs, compute-sanitizer XML reports or whole directories (a bundle, a folder of
    /// logs) and name the faulting kernel and line.
    ///
    /// The tool that wrote each file is recognised from its content: CUDA runtime errors,
    /// Python tracebacks, PyTorch's device assert line, the coredump progress stream,
    /// cuda-gdb (on a coredump or attached), the CUDA_DEVICE_WAITS_ON_EXCEPTION message,
    /// compute-sanitizer text and XML. Exit 0 whenever the input could be read, with or
    /// without a verdict.
    Analyze(AnalyzeArgs),
    /// Measure the analyzer on a generated 1 GiB memcheck log against `grep -c`.
    Bench(bench::BenchArgs),
}

#[derive(Debug, clap::Args)]
pub struct AnalyzeArgs {
    /// Print one JSON object (`verdict`, `findings`, `symptoms`, `inputs`) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Log files, XML reports or directories.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

/// Parses the command line, runs the command and returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
            let _ = e.print();
            return code;
        }
    };
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            ui::error(&e);
            EXIT_FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Analyze(args) => {
            let analysis = analyze::analyze(&args.paths)?;
            let text = if args.json { analyze::render_json(&analysis) } else { analyze::render_text(&analysis) };
            ui::out(&text).context("cannot write to stdout")?;
            Ok(EXIT_OK)
        }
        Command::Bench(args) => {
            bench::run(args)?;
            Ok(EXIT_OK)
        }
    }
}

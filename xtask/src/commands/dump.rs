//! `debug-ima dump PID` (docs/hangs.md): the evidence of a process that already runs. Checks
//! the PID (a [`Usage`] error for one that does not exist, PID 1, this tool or one of its
//! ancestors), says what to do when ptrace is not permitted, asks once on a terminal (unless
//! `--yes`), hands the work to `ladder::dump`, seals the bundle (`SHA256SUMS`) and prints the
//! verdict, or with `--json` the analysis as JSON on stdout.
//!
//! Must not: collect anything itself (`ladder::dump` does), signal the target, or print other
//! than through `ui`.

use std::path::PathBuf;

use anyhow::{bail, Result};

use super::Outcome;
use crate::bundle::layout;
use crate::findings::render::{render_json, render_text, render_verdict};
use crate::ladder::dump::{self, Ended, Options, Target};
use crate::model::{PromptEnd, RungId};
use crate::process::{while_prompting, Interrupt};
use crate::ui::{self, Choice, Prompter};

/// The options of `dump`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The process to dump: a hung program, started with or without this tool; the processes
    /// it started (its tree) are dumped with it.
    #[arg(value_name = "PID")]
    pub pid: u32,
    /// Ends the process's tree at the end (SIGTERM, 5 s, SIGKILL) and, before that, writes the
    /// user-triggered GPU dump of each of its processes armed for one
    /// (`CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1`), which aborts it. Without it, nothing is
    /// triggered and the process is left running.
    #[arg(long)]
    pub kill: bool,
    /// No prompt: do it.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Where bundles go (default: `bundles/` in the current directory).
    #[arg(long, value_name = "DIR")]
    pub bundle_dir: Option<PathBuf>,
    /// Prints the analysis as JSON on stdout (the object of `analyze --json`) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `dump`.
pub fn run(args: Args) -> Result<Outcome> {
    let interrupt = Interrupt::install()?;
    let target = Target::survey(args.pid)?;
    if let Some(why) = &target.ptrace_denied {
        if !(args.kill && target.armed()) {
            bail!(
                "cannot look into process {} (py-spy, gdb and cuda-gdb attach through ptrace): {why}",
                args.pid
            );
        }
        ui::status(&format!(
            "warning: ptrace is not permitted here ({why}): only the user-triggered dump is taken"
        ));
    }
    // Secret values of the tool's and the target's environments are redacted wherever they show
    // up again (a token in a command line py-spy prints).
    let env = std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
    crate::redact::remember(crate::redact::secret_values(
        env.chain(dump::secret_env(&target)),
        &serde_json::Value::Null,
    ));
    // It quotes the target's command line: redacted like everything the tool shows.
    let plan = crate::redact::redact_text(&target.plan(args.kill), "plan", &mut Vec::new());
    if !args.yes && ui::is_tty() {
        let mut prompter = ui::Interactive;
        match while_prompting(|| prompter.before_rung(RungId::Dump.name(), &plan)) {
            Ok(Choice::Run) => {}
            Ok(_) => {
                ui::status("stopped at the prompt: nothing was done, no bundle was written");
                return Ok(Outcome::Interrupted);
            }
            Err(e) => match PromptEnd::of(&e) {
                Some(end) => {
                    if end == PromptEnd::Interrupted {
                        interrupt.trigger();
                    }
                    ui::status(&format!("{end}: nothing was done, no bundle was written"));
                    return Ok(Outcome::Interrupted);
                }
                None => return Err(e),
            },
        }
    } else {
        ui::status(&format!("dump: {plan}"));
    }
    let opts = Options {
        kill: args.kill,
        bundle_root: args.bundle_dir.clone().unwrap_or_else(|| PathBuf::from(layout::DEFAULT_ROOT)),
        interrupt: interrupt.clone(),
    };
    let dumped = dump::run(&target, &opts, &ui::Terminal)?;
    let (bundle, analysis, outcome) = (dumped.bundle, dumped.analysis, dumped.outcome);
    let outcome = super::seal::seal(&bundle, outcome);
    if args.json {
        ui::out(&render_json(&analysis))?;
        ui::status(&format!("bundle: {}", bundle.root().display()));
    } else {
        // `-q`: the verdict and its fields only (the bundle's `summary.md` has the rest).
        let quiet = ui::verbosity() == ui::Verbosity::Quiet;
        let mut text = if quiet { render_verdict(&analysis) } else { render_text(&analysis) } + "\n";
        text.push_str(&format!("stopped: {}\n", bundle.manifest().stopped.clone().unwrap_or_default()));
        text.push_str(&format!("bundle: {}\n", bundle.root().display()));
        ui::out(&text)?;
    }
    match outcome {
        Ok(Ended::Interrupted) => Ok(Outcome::Interrupted),
        Ok(Ended::Done) if interrupt.is_set() => Ok(Outcome::Interrupted),
        Ok(Ended::Done) => Ok(Outcome::Done),
        Err(e) => Err(e.context(format!("the bundle keeps what was collected: {}", bundle.root().display()))),
    }
}

//! `cargo xtask doctor`: runs doctor's checks for the rungs asked for and prints the table
//! or JSON.
//!
//! Must not: check anything itself (that is `doctor`).

use std::path::PathBuf;

use anyhow::{bail, Result};

use super::Outcome;
use crate::doctor::{json_report, render_in, run_checks, ContainerTarget, Options};
use crate::model::{RungId, Runtime};
use crate::ui;

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Print one JSON object instead of the table (fields: docs/doctor.md)
    #[arg(long)]
    pub json: bool,
    /// The directory coredumps will go to; its free space is checked
    #[arg(long, value_name = "DIR", default_value = "bundles")]
    pub coredump_dir: PathBuf,
    /// Check only what these rungs need (comma-separated, as `debug-ima --rungs`); default
    /// every rung
    #[arg(long = "rungs", alias = "rung", value_name = "RUNG", value_delimiter = ',', value_enum)]
    pub rungs: Vec<RungChoice>,
    /// Check running the ladder in a container: the runtime, the GPU plumbing, the image
    /// (`--image`) and the tools inside it
    #[arg(long, value_enum, value_name = "RUNTIME")]
    pub container: Option<Runtime>,
    /// The image for `--container`: a local Docker/Podman image, or an Apptainer `.sif`
    #[arg(
        long,
        value_name = "IMAGE",
        requires = "container",
        required_if_eq_any = [("container", "docker"), ("container", "podman"), ("container", "apptainer")]
    )]
    pub image: Option<String>,
}

/// One `--rungs` value: a rung (parsed and listed as `debug-ima --rungs` does), or `all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RungChoice {
    All,
    One(RungId),
}

impl RungChoice {
    /// The rungs `choices` name, in their order; `None` when one of them is `all`.
    pub fn named(choices: &[RungChoice]) -> Option<Vec<RungId>> {
        choices.iter().map(|c| if let RungChoice::One(r) = c { Some(*r) } else { None }).collect()
    }
}

/// Every rung in ladder order, then `all`.
const CHOICES: [RungChoice; RungId::ALL.len() + 1] = {
    let mut out = [RungChoice::All; RungId::ALL.len() + 1];
    let mut i = 0;
    while i < RungId::ALL.len() {
        out[i] = RungChoice::One(RungId::ALL[i]);
        i += 1;
    }
    out
};

impl clap::ValueEnum for RungChoice {
    fn value_variants<'a>() -> &'a [Self] {
        &CHOICES
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        match self {
            RungChoice::One(r) => r.to_possible_value(),
            RungChoice::All => {
                Some(clap::builder::PossibleValue::new("all").help("Every rung (the default)"))
            }
        }
    }
}

/// Runs `cargo xtask doctor`: prints the table (or JSON); [`Outcome::Mismatch`] when
/// something the chosen rungs need is missing.
pub fn run(args: DoctorArgs) -> Result<Outcome> {
    let container = match (args.container, args.image) {
        (Some(runtime), Some(image)) if runtime != Runtime::None => {
            Some(ContainerTarget { runtime, image, gpus: true })
        }
        (Some(runtime), None) if runtime != Runtime::None => {
            // clap enforces it; kept so that a change there cannot check the host by mistake.
            bail!("`--container {}` needs `--image IMAGE`", runtime.name())
        }
        _ => None,
    };
    // No rung named: every rung's needs.
    let need: Vec<RungId> = RungChoice::named(&args.rungs).unwrap_or_default();
    let opts = Options { coredump_dir: args.coredump_dir, need, container, wait_for_gpu: false };
    let report = run_checks(&opts);
    let text = if args.json {
        let tool = concat!(env!("CARGO_PKG_VERSION"), " (", env!("XTASK_COMMIT"), ")");
        let mut s = serde_json::to_string_pretty(&json_report(&report, &opts.need, tool))?;
        s.push('\n');
        s
    } else {
        render_in(&report, ui::columns())
    };
    ui::out(&text)?;
    Ok(if report.missing_for(&opts.need).is_empty() { Outcome::Done } else { Outcome::Mismatch })
}

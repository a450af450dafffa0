//! `cargo xtask doctor`: runs doctor's checks for the rungs asked for and prints the table
//! or JSON.
//!
//! Must not: check anything itself (that is `doctor`).

use std::path::PathBuf;

use anyhow::{bail, Result};

use super::Outcome;
use crate::doctor::{render, run_checks, ContainerTarget, Options};
use crate::model::{RungId, Runtime};
use crate::ui;

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Print the checks as JSON instead of a table
    #[arg(long)]
    pub json: bool,
    /// The directory coredumps will go to; its free space is checked
    #[arg(long, value_name = "DIR", default_value = "bundles")]
    pub coredump_dir: PathBuf,
    /// Check only what this rung needs (repeatable); default every rung
    #[arg(long = "rung", value_name = "RUNG", value_parser = rung_or_all)]
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

/// One `--rung` value: a rung, or `all` (every rung).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RungChoice {
    All,
    One(RungId),
}

fn rung_or_all(s: &str) -> std::result::Result<RungChoice, String> {
    if s == "all" {
        return Ok(RungChoice::All);
    }
    RungId::from_name(s)
        .map(RungChoice::One)
        .ok_or_else(|| format!("expected one of {}, all", RungId::names()))
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
    let need: Vec<RungId> = if args.rungs.contains(&RungChoice::All) {
        Vec::new()
    } else {
        args.rungs.iter().filter_map(|c| if let RungChoice::One(r) = c { Some(*r) } else { None }).collect()
    };
    let opts = Options { coredump_dir: args.coredump_dir, need, container };
    let report = run_checks(&opts);
    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&report)?;
        s.push('\n');
        s
    } else {
        render(&report)
    };
    ui::out(&text)?;
    Ok(if report.missing_for(&opts.need).is_empty() { Outcome::Done } else { Outcome::Mismatch })
}

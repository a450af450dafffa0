//! `cargo xtask analyze [--json] PATH...`: reads logs, XML reports or whole directories (a
//! bundle, a folder of logs), recognises each file's tool from its content, and prints the
//! verdict and the grouped findings.
//!
//! Must not: parse (that is `findings`) or walk directories itself (`bundle::inputs`).

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::Outcome;
use crate::bundle::inputs::analyze;
use crate::findings::render::{render_json, render_text};
use crate::ui;

#[derive(Debug, clap::Args)]
pub struct AnalyzeArgs {
    /// Print one JSON object (`verdict`, `findings`, `symptoms`, `inputs`) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Log files, XML reports or directories.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

/// Runs `analyze`.
pub fn run(args: AnalyzeArgs) -> Result<Outcome> {
    let analysis = analyze(&args.paths)?;
    let text = if args.json { render_json(&analysis) } else { render_text(&analysis) };
    ui::out(&text).context("cannot write to stdout")?;
    Ok(Outcome::Done)
}

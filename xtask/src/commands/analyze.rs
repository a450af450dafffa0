//! `cargo xtask analyze [--json] PATH...`: reads logs, XML reports or whole directories (a
//! bundle, a folder of logs), an archive of `bundle pack` (the bundle in it, read from a
//! temporary copy that is removed afterwards) or standard input (`-`, streamed), recognises
//! each file's tool from its content, and prints the verdict and the grouped findings.
//!
//! Must not: parse (that is `findings`) or walk directories itself (`bundle::inputs`).

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::bundle::Opened;
use super::Outcome;
use crate::bundle::inputs::{analyze_with_stdin, STDIN};
use crate::findings::render::{render_json, render_text, render_verdict};
use crate::ui;

#[derive(Debug, clap::Args)]
pub struct AnalyzeArgs {
    /// Print one JSON object (`verdict`, `findings`, `symptoms`, `inputs`) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Log files, XML reports, directories, archives of `bundle pack`, or `-` for standard
    /// input.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

/// Runs `analyze`.
pub fn run(args: AnalyzeArgs) -> Result<Outcome> {
    // Archives are read through a temporary copy, kept until the analysis is done.
    let mut opened = Vec::with_capacity(args.paths.len());
    for p in &args.paths {
        if p.as_os_str() == STDIN {
            opened.push(None);
        } else {
            opened.push(Some(Opened::new(p)?));
        }
    }
    let paths: Vec<PathBuf> = args
        .paths
        .iter()
        .zip(&opened)
        .map(|(p, o)| o.as_ref().map(|o| o.dir().to_path_buf()).unwrap_or_else(|| p.clone()))
        .collect();
    let stdin = std::io::stdin();
    let mut lock = stdin.lock();
    let analysis = analyze_with_stdin(&paths, Some(&mut lock))?;
    let text = if args.json {
        render_json(&analysis)
    } else if crate::ui::verbosity() == crate::ui::Verbosity::Quiet {
        // `-q`: the verdict and its fields only.
        render_verdict(&analysis)
    } else {
        render_text(&analysis)
    };
    ui::out(&text).context("cannot write to stdout")?;
    Ok(Outcome::Done)
}

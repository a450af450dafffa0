//! `cargo xtask recipe list|show|check`: the built-in recipes, one recipe's YAML and
//! variables, a recipe file validated without running anything.
//!
//! Must not: parse YAML itself (that is `recipe`).

use anyhow::{Context, Result};
use clap::Subcommand;

use super::Outcome;
use crate::{recipe, ui};

#[derive(Debug, Subcommand)]
pub enum RecipeCommand {
    /// The built-in recipes.
    List,
    /// A recipe's YAML and its variables with their defaults.
    Show {
        /// A built-in name or a path to a recipe file.
        recipe: String,
    },
    /// Validate a recipe file (keys, types, variables) without running anything.
    Check {
        /// A built-in name or a path to a recipe file.
        recipe: String,
    },
    /// Draft a commented recipe for the current folder from its Makefile, CMakeLists.txt or
    /// Python script, and check that it loads.
    Init {
        /// The file to write.
        #[arg(long, short, default_value = "debug-ima.yaml")]
        output: std::path::PathBuf,
        /// Overwrite the file if it exists.
        #[arg(long)]
        force: bool,
    },
}

/// Runs a `recipe` subcommand.
pub fn run(cmd: RecipeCommand) -> Result<Outcome> {
    let text = match cmd {
        RecipeCommand::List => recipe::render_list(),
        RecipeCommand::Show { recipe: r } => recipe::render_show(&recipe::load(&r)?),
        RecipeCommand::Check { recipe: r } => {
            let rec = recipe::load(&r)?;
            let cwd = std::env::current_dir().context("cannot read the current directory")?;
            recipe::check_recipe(&rec, &cwd)?
        }
        RecipeCommand::Init { output, force } => init(&output, force)?,
    };
    ui::out(&text).context("cannot write to stdout")?;
    Ok(Outcome::Done)
}

/// The largest file `recipe init` reads, and how many scripts.
const INIT_READ_MAX: u64 = 256 * 1024;
const INIT_SCRIPTS_MAX: usize = 64;

/// What the current folder holds for [`recipe::init::draft`].
fn project_here(dir: &std::path::Path) -> recipe::init::Project {
    let read = |name: &str| -> Option<String> {
        let p = dir.join(name);
        std::fs::metadata(&p).ok().filter(|m| m.is_file() && m.len() <= INIT_READ_MAX)?;
        std::fs::read_to_string(p).ok()
    };
    let makefile =
        ["GNUmakefile", "makefile", "Makefile"].into_iter().find_map(|n| read(n).map(|t| (n.to_string(), t)));
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.ends_with(".py") && !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let scripts = names.into_iter().take(INIT_SCRIPTS_MAX).filter_map(|n| read(&n).map(|t| (n, t))).collect();
    recipe::init::Project {
        folder: dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        makefile,
        cmake: read("CMakeLists.txt"),
        scripts,
    }
}

/// `recipe init`: the draft written to `output` (refused over an existing file unless
/// `force`), loaded back to check it, and what to do next.
fn init(output: &std::path::Path, force: bool) -> Result<String> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let Some(d) = recipe::init::draft(&project_here(&cwd)) else {
        return Err(crate::model::Usage::error(
            "no Makefile, CMakeLists.txt or Python script in this folder to draft a recipe from: start \
             from a built-in one (`debug-ima recipe show cuda`, or `pytorch`) and fill it in (docs/recipes.md)",
        ));
    };
    if output.exists() && !force {
        return Err(crate::model::Usage::error(format!(
            "`{}` exists: give another `--output`, or `--force` to overwrite it",
            output.display()
        )));
    }
    std::fs::write(output, &d.yaml)
        .with_context(|| format!("cannot write `{}`; check the folder is writable", output.display()))?;
    let shown = if output.is_relative() && !output.starts_with(".") {
        format!("./{}", output.display())
    } else {
        output.display().to_string()
    };
    recipe::load(&shown).with_context(|| {
        format!("the drafted `{shown}` does not load (a bug: please report it); fix it by hand or remove it")
    })?;
    let mut text = format!("wrote {shown}, drafted from {}\n", d.from);
    for g in &d.guesses {
        text.push_str(&format!("guessed: {g}\n"));
    }
    text.push_str(&format!(
        "next: check it (the run's arguments that make it fail), then `debug-ima --recipe {shown} --dry-run`\n"
    ));
    Ok(text)
}

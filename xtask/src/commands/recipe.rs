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
    };
    ui::out(&text).context("cannot write to stdout")?;
    Ok(Outcome::Done)
}

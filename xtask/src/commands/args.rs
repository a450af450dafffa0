//! The options `debug-ima run` and `watch` share: which recipe, and its variables' values.
//!
//! Must not: load or resolve a recipe (the commands do, through `recipe`), or print.

use std::collections::BTreeMap;

use anyhow::Result;

use crate::recipe;

/// `--recipe` and `--set`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RecipeArgs {
    /// A built-in recipe (`demo`, `cuda`, `pytorch`, `vllm`) or a path to a recipe file.
    /// `run` asks for one on a terminal when it is absent; `watch` runs the command after `--`.
    #[arg(long, value_name = "NAME|PATH")]
    pub recipe: Option<String>,
    /// Sets a recipe variable (repeatable): `--set script=repro.py`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
}

impl RecipeArgs {
    /// The `--set` values by name; a `--set` without `=` is a usage error naming it.
    pub fn values(&self) -> Result<BTreeMap<String, String>> {
        let mut sets = BTreeMap::new();
        for s in &self.sets {
            let (k, v) = recipe::parse_set(s)?;
            sets.insert(k, v);
        }
        Ok(sets)
    }
}

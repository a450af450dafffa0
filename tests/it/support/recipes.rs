//! What the recipe-format tests share (recipe.rs, recipes_builtin.rs): a built-in recipe as
//! the tool parses it, a recipe text's error, the smallest recipe, `--set` values and the
//! folder the recipes are resolved in.
//!
//! Must not: read a recipe from disk (each is parsed from its text), or run anything.

use std::collections::BTreeMap;
use std::path::PathBuf;

use xtask::recipe::{builtin_text, parse, Recipe, RecipeSource};

/// The folder the tests resolve recipes in, as the tool's current directory.
pub const CWD: &str = "/work/proj";

/// The smallest recipe the format takes; tests append their keys to it.
pub const MINIMAL: &str = "version: 1\nname: x\ndescription: d\nrun:\n  command: [\"./a\"]\n";

/// The built-in recipe `name`, parsed.
pub fn builtin(name: &str) -> Recipe {
    parse(builtin_text(name).unwrap(), RecipeSource::Builtin(name.into()), PathBuf::from("/repo/recipes"))
        .unwrap()
}

/// `text` parsed as the file `recipes/x.yaml`.
pub fn parse_file(text: &str) -> anyhow::Result<Recipe> {
    parse(text, RecipeSource::File("recipes/x.yaml".into()), PathBuf::from("/repo/recipes"))
}

/// The error of `text` parsed as `recipes/x.yaml`, with its context chain.
pub fn err(text: &str) -> String {
    format!("{:#}", parse_file(text).unwrap_err())
}

/// `--set` values (or any map of names to values).
pub fn sets(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

pub fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

//! The options `debug-ima run` and `watch` share: which recipe, and its variables' values;
//! and a program given after `--` in place of a recipe.
//!
//! Must not: load a recipe file (the commands do, through `recipe`), or print.

use std::collections::BTreeMap;
use std::path::PathBuf;

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

/// Whether a program is a Python one: its first word is an interpreter, or a `.py` file.
pub fn runs_python(argv: &[String]) -> bool {
    argv.first().is_some_and(|a| crate::ladder::rung::evidence::is_python_name(a) || a.ends_with(".py"))
}

/// The recipe of a program given after `--` (`debug-ima run -- ./app ARGS`, as
/// `compute-sanitizer ./app` takes one): its run is the command as given (braces kept as
/// they are, not read as `{variables}`), no build, Python when it runs Python.
pub fn command_recipe(command: &[String], cwd: PathBuf) -> Result<recipe::Recipe> {
    let word = |a: &String| serde_json::to_string(&a.replace('{', "{{").replace('}', "}}"));
    let words = command.iter().map(word).collect::<Result<Vec<_>, _>>()?;
    let text = format!(
        "version: 1\nname: command\ndescription: \"the program given after `--`\"\npython: {}\nrun:\n  command: [{}]\n",
        runs_python(command),
        words.join(", ")
    );
    recipe::parse(&text, recipe::RecipeSource::File(PathBuf::from("(the command after --)")), cwd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_after_the_dashes_is_its_own_recipe() {
        let argv: Vec<String> = ["./app", "--cfg", "{\"a\": 1}", "it's"].map(String::from).to_vec();
        let r = command_recipe(&argv, PathBuf::from("/p")).unwrap();
        assert!(!r.python && r.build.is_none());
        let res = recipe::resolve_in(&r, &BTreeMap::new(), std::path::Path::new("/p")).unwrap();
        // A relative program is taken from the folder it was given in, as a recipe's is.
        assert_eq!(res.run.argv[0], "/p/app");
        assert_eq!(res.run.argv[1..], argv[1..]);
        assert!(command_recipe(&["python3".into(), "x.py".into()], PathBuf::from("/p")).unwrap().python);
        assert!(runs_python(&["train.py".into()]) && !runs_python(&["./serve".into()]));
    }
}

//! The options `debug-ima run` and `watch` share: which recipe, and its variables' values;
//! a program given after `--` in place of a recipe, or in place of a recipe's run command.
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
    /// With a command after `--` too, that command is the run: the recipe gives its
    /// environment, `python:` flag and options.
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
    argv.first()
        .is_some_and(|a| crate::ladder::rung::parts::evidence::is_python_name(a) || a.ends_with(".py"))
}

/// How a recipe made of the program after `--` names its source ([`command_recipe`]).
pub const COMMAND_SOURCE: &str = "(the command after --)";

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
    recipe::parse(&text, recipe::RecipeSource::File(PathBuf::from(COMMAND_SOURCE)), cwd)
}

/// `--recipe NAME -- CMD`: the recipe with the program after `--` as its run command, taken as
/// given (braces are not `{variables}`); Python when the recipe says so or the command's first
/// word does. The recipe still gives its environment (`run.env`, `env_remove`, `cwd`), its
/// options and, for `run`, its build. A variable that nothing in the recipe refers to any more
/// (the `pytorch` recipe's `script`, used only by its run command) needs no value: it gets an
/// empty default, and a `--set` of it is still taken.
pub fn with_command(mut r: recipe::Recipe, command: &[String]) -> recipe::Recipe {
    let words = command.iter().map(|a| a.replace('{', "{{").replace('}', "}}")).collect();
    r.run.command = recipe::Words::List(words);
    r.python = r.python || runs_python(command);
    let unused: Vec<String> = r
        .variables
        .iter()
        .filter(|(k, v)| v.default.is_none() && !recipe::uses_variable(&r, k))
        .map(|(k, _)| k.clone())
        .collect();
    for k in unused {
        if let Some(v) = r.variables.get_mut(&k) {
            v.default = Some(String::new());
        }
    }
    r
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

    /// A recipe with a command after `--`: the command is its run (braces kept), the variables
    /// only the run command used need no value, the others still do, and the recipe's
    /// environment and `python:` stay.
    #[test]
    fn a_command_after_the_dashes_replaces_the_recipe_s_run() {
        let argv: Vec<String> = ["python3", "serve.py", "--cfg", "{\"a\": 1}"].map(String::from).to_vec();
        let r = with_command(recipe::load("pytorch").unwrap(), &argv);
        assert!(r.python);
        let res = recipe::resolve_in(&r, &BTreeMap::new(), std::path::Path::new("/p")).unwrap();
        assert_eq!(res.run.argv, argv);
        assert_eq!(res.run.timeout, Some(std::time::Duration::from_secs(900)), "the recipe's run limit");
        // `--set script=...` is still a variable of the recipe, and taken.
        let sets = BTreeMap::from([("script".to_string(), "x.py".to_string())]);
        assert!(recipe::resolve_in(&r, &sets, std::path::Path::new("/p")).is_ok());
        // vLLM's build still needs its checkout; only `repro` (the run's) is given by the command.
        let v = with_command(recipe::load("vllm").unwrap(), &argv);
        let e = recipe::resolve_in(&v, &BTreeMap::new(), std::path::Path::new("/p")).unwrap_err();
        assert!(format!("{e:#}").contains("`vllm_src`") && !format!("{e:#}").contains("`repro`"), "{e:#}");
        // A native recipe stays native for a native program; a Python one makes it Python.
        let cuda = recipe::load("cuda").unwrap();
        assert!(!with_command(cuda.clone(), &["./app".into()]).python);
        assert!(with_command(cuda, &["python3".into(), "x.py".into()]).python);
    }
}

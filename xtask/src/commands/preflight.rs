//! What `run` and `watch` refuse before anything runs or is created (doctor's probes, the
//! bundle, a build's output folders): a folder the recipe's build works in that does not exist
//! (a checkout a variable names, the `vllm` recipe's `vllm_src`), named with the variables
//! that gave it; and, for a target started on this machine without a build to make it, a run
//! folder, a program or a Python script that does not exist (`-- ./nosuch`, `--set
//! script=nosuch.py`). A program that a build makes is not
//! refused: the build runs first (`Resolved::not_built`, the policy's `Request::not_built`).
//!
//! Must not: create, build or run anything, decide the plan, or print.

use std::path::Path;

use anyhow::{bail, Result};

use super::args::COMMAND_SOURCE;
use crate::recipe::{Resolved, BUILTIN_VARIABLES};

/// Refuses `r` before anything runs. The build's folder is checked wherever the target runs
/// (the build runs on this machine, or in a container from this machine's folders); the run's
/// folder and program only where the target starts on this machine (`here`: no container, no
/// other hosts) and the recipe has no build, which could make them.
pub fn check(r: &Resolved, here: bool) -> Result<()> {
    if let Some(dir) = r.build.as_ref().and_then(|b| b.cwd.as_deref()).filter(|d| !d.is_dir()) {
        bail!("{}", missing_folder(r, "build", dir));
    }
    if !here || r.build.is_some() {
        return Ok(());
    }
    if let Some(dir) = r.run.cwd.as_deref().filter(|d| !d.is_dir()) {
        bail!("{}", missing_folder(r, "run", dir));
    }
    if let Some(program) = r.run.missing_program() {
        let what = if program.contains('/') {
            format!("the program to run, `{program}`, does not exist")
        } else {
            format!("the program to run, `{program}`, is not on PATH (one in the current folder is `./{program}`)")
        };
        if r.source == COMMAND_SOURCE {
            bail!("{what}: nothing was run; check the path");
        }
        let hint = if r.vars.contains_key("build") {
            "give the build that makes it (`--set build=\"make -B\"`)"
        } else {
            "add a `build:` step that makes it to the recipe"
        };
        bail!("{what}, and the recipe `{}` has no build: nothing was run; check the path, or {hint}", r.name);
    }
    if let Some(script) = r.run.missing_script() {
        let shown = match &r.run.cwd {
            Some(dir) if !Path::new(&script).is_absolute() => dir.join(&script).display().to_string(),
            _ => script.clone(),
        };
        let hint = if r.vars.contains_key("script") { " (`--set script=PATH`)" } else { "" };
        bail!("the Python script to run, `{shown}`, does not exist: nothing was run; check the path{hint}");
    }
    Ok(())
}

/// The error for `step`'s folder `dir`, which does not exist, naming the variables whose value
/// is that folder or one above it, so that the `--set` to fix is plain.
fn missing_folder(r: &Resolved, step: &str, dir: &Path) -> String {
    let base = r.vars.get("cwd").map(Path::new).unwrap_or(Path::new("/"));
    let from: Vec<&str> = r
        .vars
        .iter()
        .filter(|(k, v)| !BUILTIN_VARIABLES.contains(&k.as_str()) && !v.is_empty())
        .filter(|(_, v)| {
            let value = base.join(v.as_str());
            value.components().ne(base.components()) && dir.starts_with(&value)
        })
        .map(|(k, _)| k.as_str())
        .collect();
    let shown = dir.display();
    match from.first() {
        None => format!(
            "the {step} of the recipe `{}` works in `{shown}`, which does not exist: nothing was run or created; \
             check the recipe's `{step}.cwd`",
            r.name
        ),
        Some(first) => format!(
            "the {step} of the recipe `{}` works in `{shown}` (from {}), which does not exist: nothing was run or \
             created; give an existing folder (`--set {first}=PATH`)",
            r.name,
            from.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
        ),
    }
}

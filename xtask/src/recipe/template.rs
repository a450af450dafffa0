//! Variables and templates: `{variable}` pieces, expansion, which fields hold templates, and
//! resolving a recipe with its values into a [`Resolved`] run.
//!
//! Must not: read files or parse YAML.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use crate::model::{Runtime, Usage};

use super::errors::nearest;
use super::types::*;
use super::words::*;

// ---------------------------------------------------------------------------------------
// Variables and templates
// ---------------------------------------------------------------------------------------

enum Piece<'a> {
    Text(&'a str),
    Var(&'a str),
}

/// Cuts a template into text and `{name}` references. `{{` and `}}` are literal braces; a
/// lone `}` is kept as is; a `{` that starts no `{name}` is an error.
fn pieces(t: &str) -> std::result::Result<Vec<Piece<'_>>, String> {
    let bytes = t.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' if bytes.get(i + 1) == Some(&b'{') => {
                out.push(Piece::Text(&t[start..i + 1]));
                i += 2;
                start = i;
            }
            b'}' if bytes.get(i + 1) == Some(&b'}') => {
                out.push(Piece::Text(&t[start..i + 1]));
                i += 2;
                start = i;
            }
            b'{' => {
                let close = t[i + 1..].find('}').map(|j| i + 1 + j);
                let name = close.map(|c| &t[i + 1..c]).filter(|n| is_identifier(n));
                let (Some(close), Some(name)) = (close, name) else {
                    let shown: String = t[i..].chars().take(24).collect();
                    return Err(format!(
                        "`{shown}` in `{}`: `{{` starts no variable reference (`{{name}}`); write `{{{{` for a literal brace",
                        t.escape_debug()
                    ));
                };
                out.push(Piece::Text(&t[start..i]));
                out.push(Piece::Var(name));
                i = close + 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    out.push(Piece::Text(&t[start..]));
    out.retain(|p| !matches!(p, Piece::Text("")));
    Ok(out)
}

/// The variables a template refers to, in order, repeats included.
pub(super) fn references(t: &str) -> std::result::Result<Vec<&str>, String> {
    Ok(pieces(t)?
        .into_iter()
        .filter_map(|p| match p {
            Piece::Var(v) => Some(v),
            Piece::Text(_) => None,
        })
        .collect())
}

/// Expands `{name}`s from `vars`; an unknown name is an error that names it.
pub fn expand(t: &str, vars: &BTreeMap<String, String>) -> Result<String> {
    let mut out = String::with_capacity(t.len());
    for p in pieces(t).map_err(|e| anyhow!(e))? {
        match p {
            Piece::Text(s) => out.push_str(s),
            Piece::Var(name) => match vars.get(name) {
                Some(v) => out.push_str(v),
                None => bail!("unknown variable `{{{name}}}`"),
            },
        }
    }
    Ok(out)
}

/// Every template string of a recipe with its field path (`run.command[0]`).
pub(super) fn template_fields(r: &Recipe) -> Vec<(String, &str)> {
    fn push_words<'a>(out: &mut Vec<(String, &'a str)>, field: &str, w: &'a Words) {
        match w {
            Words::List(items) => {
                out.extend(items.iter().enumerate().map(|(i, s)| (format!("{field}[{i}]"), s.as_str())))
            }
            Words::Line(s) => out.push((field.to_string(), s.as_str())),
        }
    }
    fn push_step<'a>(out: &mut Vec<(String, &'a str)>, field: &str, s: &'a StepTemplate) {
        push_words(out, &format!("{field}.command"), &s.command);
        if let Some(c) = &s.cwd {
            out.push((format!("{field}.cwd"), c.as_str()));
        }
        out.extend(s.env.iter().map(|(k, v)| (format!("{field}.env.{k}"), v.as_str())));
        push_words(out, &format!("{field}.binaries"), &s.binaries);
    }
    let mut out = Vec::new();
    for (i, c) in r.collect.iter().enumerate() {
        push_words(&mut out, &format!("collect[{i}].command"), &c.command);
    }
    if let Some(b) = &r.build {
        push_step(&mut out, "build", b);
    }
    push_step(&mut out, "run", &r.run);
    for k in &r.knobs {
        let field = format!("knobs.{}", k.name);
        out.extend(k.env.iter().map(|(e, v)| (format!("{field}.env.{e}"), v.as_str())));
        push_words(&mut out, &format!("{field}.args_add"), &k.args_add);
        push_words(&mut out, &format!("{field}.args_remove"), &k.args_remove);
    }
    for (name, o) in &r.rungs {
        out.extend(o.env.iter().map(|(k, v)| (format!("rungs.{name}.env.{k}"), v.as_str())));
        out.extend(o.args.iter().enumerate().map(|(i, a)| (format!("rungs.{name}.args[{i}]"), a.as_str())));
    }
    if let Some(c) = &r.container {
        if let Some(image) = &c.image {
            out.push(("container.image".to_string(), image.as_str()));
        }
        push_words(&mut out, "container.mounts", &c.mounts);
    }
    out
}

/// The authoritative reference check, after parsing (the in-parser one gives positions).
pub(super) fn check_references(r: &Recipe, text: &str) -> Result<()> {
    let declared: BTreeSet<String> = r.variables.keys().cloned().collect();
    for (field, t) in template_fields(r) {
        let names = references(t).map_err(|e| anyhow!("{}: {field}: {e}", r.label()))?;
        for name in names {
            if BUILTIN_VARIABLES.contains(&name) || declared.contains(name) {
                continue;
            }
            let at = match locate(text, &format!("{{{name}}}")) {
                Some((line, col)) => format!("{}:{line}:{col}", r.label()),
                None => r.label(),
            };
            bail!("{at}: {field}: {}", unknown_variable_message(name, &declared));
        }
    }
    Ok(())
}

/// Whether any string of the recipe (a variable's default included) refers to `{name}`.
pub fn uses_variable(r: &Recipe, name: &str) -> bool {
    let defaults = r.variables.values().filter_map(|v| v.default.as_deref());
    template_fields(r)
        .into_iter()
        .map(|(_, t)| t)
        .chain(defaults)
        .any(|t| references(t).is_ok_and(|refs| refs.contains(&name)))
}

/// A variable both set (`env`) and removed (`env_remove`) by one step is a contradiction.
pub(super) fn check_env_remove(r: &Recipe) -> Result<()> {
    let steps = r.build.iter().map(|b| ("build", b)).chain([("run", &r.run)]);
    for (field, step) in steps {
        if let Some(both) = step.env_remove.iter().find(|k| step.env.contains_key(*k)) {
            bail!(
                "{}: {field}: `{both}` is both in `{field}.env` and in `{field}.env_remove`: a variable is either \
                 set or removed; drop it from one of them",
                r.label()
            );
        }
    }
    Ok(())
}

/// `run.hang_after` must come before `run.timeout`: the run would otherwise be killed as
/// timed out before it is looked at as hung.
pub(super) fn check_hang_after(r: &Recipe) -> Result<()> {
    if let (Some(after), Some(timeout)) = (r.hang_after, r.run.timeout) {
        if after >= timeout {
            bail!(
                "{}: run: `hang_after: {after}` is not below `timeout: {timeout}`: the run would be killed as \
                 timed out before it is looked at as hung; lower `hang_after` or raise `timeout` (docs/hangs.md)",
                r.label()
            );
        }
    }
    Ok(())
}

/// Line and column (1-based, in characters) of the first `needle` outside a comment that
/// is not preceded by another `{` (an escaped brace).
pub(super) fn locate(text: &str, needle: &str) -> Option<(usize, usize)> {
    for (n, line) in text.lines().enumerate() {
        let code = match line.find(" #") {
            Some(i) => &line[..i],
            None if line.trim_start().starts_with('#') => "",
            None => line,
        };
        let mut from = 0;
        while let Some(i) = code[from..].find(needle).map(|i| i + from) {
            if !code[..i].ends_with('{') {
                return Some((n + 1, code[..i].chars().count() + 1));
            }
            from = i + 1;
        }
    }
    None
}

/// Declared variables that have no default and no value in `sets`, in name order.
pub fn missing_variables(r: &Recipe, sets: &BTreeMap<String, String>) -> Vec<(String, Variable)> {
    r.variables
        .iter()
        .filter(|(k, v)| v.default.is_none() && !sets.contains_key(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Fills every variable (from `sets`, else the default) and expands the recipe, in the
/// current directory, with the supplied built-ins (`gpu_arch`, `max_jobs`: see
/// [`SUPPLIED_BUILTINS`]; those not given keep their placeholder text). Errors name what
/// is missing and the `--set NAME=VALUE` that gives it: every missing variable at once, and
/// every unknown `--set`, as [`Usage`] errors.
pub fn resolve(
    r: &Recipe,
    sets: &BTreeMap<String, String>,
    supplied: &BTreeMap<String, String>,
) -> Result<Resolved> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    resolve_in_with(r, sets, &cwd, supplied)
}

/// [`resolve`] with `cwd` as the current directory and no supplied built-ins (their
/// placeholder text stands in): pure.
pub fn resolve_in(r: &Recipe, sets: &BTreeMap<String, String>, cwd: &Path) -> Result<Resolved> {
    resolve_in_with(r, sets, cwd, &BTreeMap::new())
}

/// [`resolve`] with `cwd` as the current directory: pure. `supplied` gives the built-ins
/// only the caller knows (`gpu_arch`, `max_jobs`); any other name in it is an error.
pub fn resolve_in_with(
    r: &Recipe,
    sets: &BTreeMap<String, String>,
    cwd: &Path,
    supplied: &BTreeMap<String, String>,
) -> Result<Resolved> {
    if let Some(k) = supplied.keys().find(|k| !SUPPLIED_BUILTINS.iter().any(|(n, _)| n == k)) {
        bail!(
            "`{k}` is not a built-in variable a caller can supply (those are {}): a bug in the caller of \
             `recipe::resolve`",
            SUPPLIED_BUILTINS.iter().map(|(n, _)| format!("`{n}`")).collect::<Vec<_>>().join(", ")
        );
    }
    let unknown: Vec<&str> =
        sets.keys().filter(|k| !r.variables.contains_key(*k)).map(String::as_str).collect();
    if !unknown.is_empty() {
        let declared = if r.variables.is_empty() {
            "it declares no variables".to_string()
        } else {
            format!(
                "it declares {}",
                r.variables.keys().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
            )
        };
        return Err(Usage::error(format!(
            "recipe `{}` has no variable {}: {declared} (`cargo xtask recipe show {}` lists them)",
            r.name,
            unknown.iter().map(|k| format!("`{k}` (from `--set {k}=...`)")).collect::<Vec<_>>().join(", "),
            show_arg(r)
        )));
    }
    let missing = missing_variables(r, sets);
    if !missing.is_empty() {
        let what = missing
            .iter()
            .map(|(k, v)| {
                if v.description.is_empty() {
                    format!("`{k}`")
                } else {
                    format!("`{k}` ({})", v.description)
                }
            })
            .collect::<Vec<_>>()
            .join(" and ");
        let flags = missing.iter().map(|(k, _)| format!("--set {k}=VALUE")).collect::<Vec<_>>().join(" ");
        let s = if missing.len() == 1 { "" } else { "s" };
        return Err(Usage::error(format!(
            "recipe `{}` needs a value for {what}: pass `{flags}` (no default for {} variable{s})",
            r.name,
            missing.len()
        )));
    }
    let vars = variable_values(r, sets, cwd, supplied)?;
    resolve_with(r, vars, cwd)
}

fn show_arg(r: &Recipe) -> String {
    match &r.source {
        RecipeSource::Builtin(n) => n.clone(),
        RecipeSource::File(p) => p.display().to_string(),
    }
}

/// The built-in variables' values: `recipe_dir`, `cwd`, then each of
/// [`SUPPLIED_BUILTINS`] from `supplied`, else its placeholder text.
pub(super) fn builtin_values(
    r: &Recipe,
    cwd: &Path,
    supplied: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::from([
        ("recipe_dir".to_string(), r.dir.display().to_string()),
        ("cwd".to_string(), cwd.display().to_string()),
    ]);
    for (name, placeholder) in SUPPLIED_BUILTINS {
        let value = supplied.get(name).cloned().unwrap_or_else(|| placeholder.to_string());
        out.insert(name.to_string(), value);
    }
    out
}

/// The built-ins, then each declared variable: its `--set` value (taken literally) or its
/// default (with the built-ins expanded).
fn variable_values(
    r: &Recipe,
    sets: &BTreeMap<String, String>,
    cwd: &Path,
    supplied: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>> {
    let builtins = builtin_values(r, cwd, supplied);
    let mut vars = builtins.clone();
    for (name, v) in &r.variables {
        let value = match (sets.get(name), &v.default) {
            (Some(set), _) => set.clone(),
            (None, Some(d)) => {
                expand(d, &builtins).with_context(|| format!("{}: variables.{name}.default", r.label()))?
            }
            (None, None) => continue,
        };
        if value.contains('\0') {
            bail!("the value of `{name}` contains a NUL character");
        }
        vars.insert(name.clone(), value);
    }
    Ok(vars)
}

fn resolve_with(r: &Recipe, vars: BTreeMap<String, String>, cwd: &Path) -> Result<Resolved> {
    // A build whose command is empty once filled (the `cuda` recipe's `build` left at its
    // empty default) is no build: the program is run as it is, as a prebuilt one.
    let build = match &r.build {
        Some(b) if expand_words(r, "build.command", &b.command, &vars)?.iter().all(|w| w.is_empty()) => None,
        Some(b) => Some(resolve_step(r, "build", b, &vars, cwd)?),
        None => None,
    };
    let run = resolve_step(r, "run", &r.run, &vars, cwd)?;
    let run_dir = run.cwd.clone().unwrap_or_else(|| cwd.to_path_buf());
    let mut collect = Vec::new();
    for (i, c) in r.collect.iter().enumerate() {
        let field = format!("collect[{i}].command");
        let mut argv = expand_words(r, &field, &c.command, &vars)?;
        if argv.first().is_none_or(|p| p.is_empty()) {
            bail!(
                "recipe `{}`: `{field}` (`{}`) is empty once its variables are filled: give the program to run",
                r.name,
                c.name
            );
        }
        if argv[0].contains('/') && Path::new(&argv[0]).is_relative() {
            argv[0] = absolute_in(&run_dir, &argv[0]).display().to_string();
        }
        collect.push(Collect {
            name: c.name.clone(),
            argv,
            timeout: Duration::from_secs(c.timeout.unwrap_or(DEFAULT_COLLECT_TIMEOUT)),
        });
    }
    let mut rungs = BTreeMap::new();
    for (name, o) in &r.rungs {
        let field = format!("rungs.{name}");
        let env = resolve_env(r, &field, &o.env, &vars)?;
        let args = o
            .args
            .iter()
            .enumerate()
            .map(|(i, a)| expand_field(r, &format!("{field}.args[{i}]"), a, &vars))
            .collect::<Result<Vec<_>>>()?;
        rungs.insert(*name, RungOptions { env, args, ..o.clone() });
    }
    let mut knobs = Vec::new();
    for k in &r.knobs {
        let field = format!("knobs.{}", k.name);
        knobs.push(Knob {
            name: k.name.clone(),
            description: k.description.clone(),
            env: resolve_env(r, &field, &k.env, &vars)?,
            env_remove: k.env_remove.clone(),
            args_add: expand_words(r, &format!("{field}.args_add"), &k.args_add, &vars)?,
            args_remove: expand_words(r, &format!("{field}.args_remove"), &k.args_remove, &vars)?,
        });
    }
    let container = resolve_container(r, &vars, cwd)?;
    Ok(Resolved {
        name: r.name.clone(),
        source: r.label(),
        python: r.python,
        vars,
        collect,
        knobs,
        build,
        run,
        hang_after: r.hang_after.map(Duration::from_secs),
        launch_blocking: r.launch_blocking,
        rungs,
        container,
        launch: r.launch,
    })
}

/// `container:` expanded, `mounts` made absolute from `cwd`; the default without one.
fn resolve_container(r: &Recipe, vars: &BTreeMap<String, String>, cwd: &Path) -> Result<ContainerConfig> {
    let Some(c) = &r.container else {
        return Ok(ContainerConfig::default());
    };
    let image = match &c.image {
        Some(t) => Some(expand_field(r, "container.image", t, vars)?),
        None => None,
    };
    let image = match (image, c.runtime) {
        (Some(i), Some(rt)) if i.trim().is_empty() && rt != Runtime::None => bail!(
            "recipe `{}`: `container.image` is empty once its variables are filled, but `runtime: {}` needs \
             an image: give the variable a value (`--set NAME=IMAGE`) or pass `--image IMAGE`",
            r.name,
            rt.name()
        ),
        (Some(i), _) if i.trim().is_empty() => None,
        (image, _) => image,
    };
    let words = expand_words(r, "container.mounts", &c.mounts, vars)?;
    let mut mounts = Vec::new();
    for (i, m) in words.iter().enumerate() {
        let field = match &c.mounts {
            Words::List(_) => format!("container.mounts[{i}]"),
            Words::Line(_) => "container.mounts".to_string(),
        };
        if m.is_empty() {
            bail!(
                "recipe `{}`: `{field}` is an empty path once its variables are filled: give the variable a \
                 folder (`--set NAME=PATH`), or take the entry out of `mounts`",
                r.name
            );
        }
        let path = absolute_in(cwd, m);
        if !path.is_absolute() {
            bail!(
                "recipe `{}`: `{field}` is `{}`, not an absolute path: a mount is a host folder mounted at the \
                 same path; write it from `/` or from `{{cwd}}`",
                r.name,
                path.display()
            );
        }
        if !mounts.contains(&path) {
            mounts.push(path);
        }
    }
    Ok(ContainerConfig { runtime: c.runtime, image, mounts, gpus: c.gpus })
}

/// Folders where a program's own folder is not mounted: mounting the host's over the
/// image's would replace the image's system.
const SYSTEM_DIRS: [&str; 10] =
    ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/usr", "/etc", "/proc", "/sys", "/dev"];

/// The host folders every container of the run mounts at the same path, so that the
/// recipe's absolute paths mean the same inside: `container.mounts`, the run step's `cwd`
/// (the current directory when it has none), the build step's `cwd`, the recipe's directory
/// (`{recipe_dir}`), the parent folders of `build.binaries`, and the folder of the run's
/// program when it is an absolute path outside all of those (and outside the system's own
/// folders, `/usr`, `/bin`, ...). Absolute paths only, sorted, each once. The bundle root is
/// the caller's to add.
pub fn container_mounts(r: &Resolved) -> Vec<PathBuf> {
    let mut set: BTreeSet<PathBuf> = r.container.mounts.iter().cloned().collect();
    set.extend(r.run.cwd.clone().or_else(|| r.vars.get("cwd").map(PathBuf::from)));
    if let Some(b) = &r.build {
        set.extend(b.cwd.clone());
        set.extend(b.binary_dirs());
    }
    set.extend(r.vars.get("recipe_dir").map(PathBuf::from));
    let program = Path::new(r.run.program());
    if let Some(dir) = program.parent().filter(|_| program.is_absolute()) {
        let system = dir.parent().is_none() || SYSTEM_DIRS.iter().any(|s| dir.starts_with(s));
        if !system && !set.iter().any(|m| dir.starts_with(m)) {
            set.insert(dir.to_path_buf());
        }
    }
    set.into_iter().filter(|p| p.is_absolute()).collect()
}

fn expand_field(r: &Recipe, field: &str, t: &str, vars: &BTreeMap<String, String>) -> Result<String> {
    expand(t, vars).with_context(|| format!("recipe `{}` ({}): `{field}`", r.name, r.label()))
}

fn expand_words(r: &Recipe, field: &str, w: &Words, vars: &BTreeMap<String, String>) -> Result<Vec<String>> {
    match w {
        Words::List(items) => items
            .iter()
            .enumerate()
            .map(|(i, t)| expand_field(r, &format!("{field}[{i}]"), t, vars))
            .collect(),
        Words::Line(t) => {
            let line = expand_field(r, field, t, vars)?;
            split_words(&line).with_context(|| {
                format!("recipe `{}`: `{field}` is `{line}` once its variables are filled, and cannot be split into words", r.name)
            })
        }
    }
}

fn resolve_env(
    r: &Recipe,
    field: &str,
    env: &BTreeMap<String, String>,
    vars: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>> {
    env.iter().map(|(k, v)| Ok((k.clone(), expand_field(r, &format!("{field}.env.{k}"), v, vars)?))).collect()
}

fn resolve_step(
    r: &Recipe,
    field: &str,
    t: &StepTemplate,
    vars: &BTreeMap<String, String>,
    cwd: &Path,
) -> Result<Step> {
    let mut argv = expand_words(r, &format!("{field}.command"), &t.command, vars)?;
    if argv.first().is_none_or(|p| p.is_empty()) {
        bail!(
            "recipe `{}`: `{field}.command` is empty once its variables are filled: give the program to run{}",
            r.name,
            if r.variables.is_empty() { String::new() } else { " (`--set NAME=VALUE`)".to_string() }
        );
    }
    let step_cwd = match &t.cwd {
        Some(c) => Some(absolute_in(cwd, &expand_field(r, &format!("{field}.cwd"), c, vars)?)),
        None => None,
    };
    let base = step_cwd.clone().unwrap_or_else(|| cwd.to_path_buf());
    if argv[0].contains('/') && Path::new(&argv[0]).is_relative() {
        argv[0] = absolute_in(&base, &argv[0]).display().to_string();
    }
    let env = resolve_env(r, field, &t.env, vars)?;
    let binaries = expand_words(r, &format!("{field}.binaries"), &t.binaries, vars)?
        .into_iter()
        .filter(|b| !b.is_empty())
        .map(|b| absolute_in(&base, &b))
        .collect();
    Ok(Step {
        argv,
        cwd: step_cwd,
        env,
        env_remove: t.env_remove.clone(),
        timeout: t.timeout.map(Duration::from_secs),
        binaries,
    })
}

/// `p` joined to `base` when relative, with `.` and `..` taken out lexically.
pub(super) fn absolute_in(base: &Path, p: &str) -> PathBuf {
    normalize(&base.join(p))
}

pub(super) fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// The error for `{name}`, which is not among the declared `names`; a near name suggested.
pub(super) fn unknown_variable_message(name: &str, names: &BTreeSet<String>) -> String {
    let declared = if names.is_empty() {
        "the recipe declares no variables".to_string()
    } else {
        format!(
            "the recipe declares {}",
            names.iter().map(|d| format!("`{d}`")).collect::<Vec<_>>().join(", ")
        )
    };
    let near = nearest(name, names.iter().map(String::as_str).chain(BUILTIN_VARIABLES))
        .map(|n| format!(" (did you mean `{{{n}}}`?)"))
        .unwrap_or_default();
    format!(
        "unknown variable `{{{name}}}`{near}: {declared} (built in: {}); declare it under `variables:`, or write `{{{{` for a literal brace",
        builtin_list()
    )
}

pub(super) fn builtin_list() -> String {
    BUILTIN_VARIABLES.iter().map(|b| format!("`{{{b}}}`")).collect::<Vec<_>>().join(", ")
}

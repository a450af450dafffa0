//! The text of `cargo xtask recipe list|show|check`: the built-ins, one recipe with its
//! variables, a recipe checked without running anything.
//!
//! Must not: print (the command does) or parse YAML itself.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::model::RungId;

use super::parse::*;
use super::template::*;
use super::types::*;
use super::words::*;

// ---------------------------------------------------------------------------------------
// recipe list | show | check
// ---------------------------------------------------------------------------------------

/// `cargo xtask recipe list`: the built-in recipes and their descriptions.
pub fn render_list() -> String {
    let width = builtin_names().iter().map(|n| n.len()).max().unwrap_or(0);
    let mut out = String::from("built-in recipes:\n");
    for name in builtin_names() {
        let text = builtin_text(name).unwrap_or_default();
        let description = match parse(text, RecipeSource::Builtin(name.to_string()), PathBuf::from("recipes"))
        {
            Ok(r) => r.description,
            Err(e) => format!("(does not parse: {e:#})"),
        };
        let _ = writeln!(out, "  {name:<width$}  {description}");
    }
    out.push_str(
        "\nuse one with `cargo xtask debug-ima --recipe NAME`, or pass a path to a .yaml file; \
         `cargo xtask recipe show NAME` prints a recipe (the format: docs/recipes.md)\n",
    );
    out
}

/// `cargo xtask recipe show NAME|PATH`: the YAML source, then the variables' values and the
/// commands with the defaults filled in, as YAML comments.
pub fn render_show(r: &Recipe) -> String {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    render_show_in(r, &cwd)
}

/// [`render_show`] with `cwd` as the current directory: pure.
pub fn render_show_in(r: &Recipe, cwd: &Path) -> String {
    let mut out = String::new();
    comment(&mut out, &format!("# recipe `{}` ({})", r.name, r.source));
    out.push_str(&r.text);
    if !r.text.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("\n# ---- with the defaults ----\n# variables:\n");
    let builtins = builtin_values(r, cwd, &BTreeMap::new());
    let width = builtins.keys().chain(r.variables.keys()).map(String::len).max().unwrap_or(0);
    for (name, value) in &builtins {
        comment(&mut out, &format!("#   {name:<width$} = {}  (built in)", quote_word(value)));
    }
    for (name, v) in &r.variables {
        let value = match &v.default {
            Some(d) => match expand(d, &builtins) {
                Ok(value) => quote_word(&value),
                Err(e) => format!("(error: {e:#})"),
            },
            None => format!("(required: `--set {name}=VALUE`)"),
        };
        let description =
            if v.description.is_empty() { String::new() } else { format!("  {}", v.description) };
        comment(&mut out, &format!("#   {name:<width$} = {value}{description}"));
    }
    let required = r.required_variables();
    if !required.is_empty() {
        let flags = required.iter().map(|k| format!("--set {k}=VALUE")).collect::<Vec<_>>().join(" ");
        comment(&mut out, &format!("# commands: give `{flags}` first"));
        return out;
    }
    match resolve_in(r, &BTreeMap::new(), cwd) {
        Ok(res) => {
            for c in &res.collect {
                comment(&mut out, &format!("# collect into env/{}: {}", c.name, join_words(&c.argv)));
            }
            let steps = res.build.iter().map(|b| ("build", b)).chain([("run", &res.run)]);
            for (field, step) in steps {
                comment(&mut out, &format!("# {field}: {}", step.command_line()));
                if let Some(c) = &step.cwd {
                    comment(&mut out, &format!("#   cwd: {}", quote_word(&c.display().to_string())));
                }
                if !step.env_remove.is_empty() {
                    comment(&mut out, &format!("#   env_remove: {}", step.env_remove.join(" ")));
                }
                if !step.binaries.is_empty() {
                    let bins: Vec<String> = step.binaries.iter().map(|b| b.display().to_string()).collect();
                    comment(&mut out, &format!("#   binaries: {}", join_words(&bins)));
                }
            }
            if r.container.is_some() {
                let c = &res.container;
                let runtime = match c.runtime {
                    Some(rt) => rt.name().to_string(),
                    None => "(chosen with `--container`)".to_string(),
                };
                comment(&mut out, &format!("# container: {runtime}"));
                if let Some(image) = &c.image {
                    comment(&mut out, &format!("#   image: {}", quote_word(image)));
                }
                let mounts: Vec<String> =
                    container_mounts(&res).iter().map(|m| m.display().to_string()).collect();
                comment(
                    &mut out,
                    &format!("#   mounted at the same path: {} (and the bundle root)", join_words(&mounts)),
                );
                if !c.gpus {
                    out.push_str("#   gpus: false (the GPUs are not passed in)\n");
                }
            }
        }
        Err(e) => {
            comment(&mut out, &format!("# commands: cannot be resolved: {e:#}"));
        }
    }
    out
}

/// Appends one comment line: control characters in what it shows (a newline in a variable's
/// description, an escape sequence) are written as escapes, so that no value can end the
/// comment and add YAML to a saved `recipe show`.
fn comment(out: &mut String, line: &str) {
    for ch in line.chars() {
        match ch {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push('\t'),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('\n');
}

/// `cargo xtask recipe check PATH|NAME`: parses the recipe, resolves it with its defaults
/// (placeholder values for required variables) and returns a summary with notes.
pub fn check(path: impl AsRef<Path>) -> Result<String> {
    let path = path.as_ref();
    let r = match path.to_str().and_then(|s| builtin_text(s).map(|_| s)) {
        Some(name) => load(name)?,
        None => load_file(path)?,
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    check_recipe(&r, &cwd)
}

/// The summary of [`check`] for a parsed recipe: pure.
pub fn check_recipe(r: &Recipe, cwd: &Path) -> Result<String> {
    let placeholders: BTreeMap<String, String> =
        r.required_variables().into_iter().map(|k| (k.to_string(), format!("VALUE_OF_{k}"))).collect();
    resolve_in(r, &placeholders, cwd)
        .with_context(|| format!("{}: the recipe does not resolve with its defaults", r.label()))?;

    let mut out =
        format!("{}: ok: recipe `{}`{}\n", r.label(), r.name, if r.python { " (python)" } else { "" });
    let variables = r
        .variables
        .iter()
        .map(|(k, v)| match &v.default {
            Some(d) => format!("{k} (default {})", quote_word(d)),
            None => format!("{k} (required)"),
        })
        .collect::<Vec<_>>();
    let _ = writeln!(
        out,
        "  variables: {}",
        if variables.is_empty() { "none".to_string() } else { variables.join(", ") }
    );
    // As the YAML would write it: a flow list, or a quoted string.
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let show = |w: &Words| match w {
        Words::List(items) => format!("[{}]", items.iter().map(|i| quote(i)).collect::<Vec<_>>().join(", ")),
        Words::Line(line) => quote(line),
    };
    for c in &r.collect {
        let _ = writeln!(out, "  collect: env/{}: {}", c.name, show(&c.command));
    }
    match &r.build {
        Some(b) => {
            let _ = writeln!(out, "  build: {}", show(&b.command));
        }
        None => out.push_str("  build: none\n"),
    }
    let _ = writeln!(out, "  run: {}", show(&r.run.command));
    if let Some(c) = &r.container {
        let mut parts = vec![match c.runtime {
            Some(rt) => format!("runtime {}", rt.name()),
            None => "runtime from `--container`".to_string(),
        }];
        if let Some(image) = &c.image {
            parts.push(format!("image {}", quote(image)));
        }
        if !c.mounts.is_empty() {
            parts.push(format!("mounts {}", show(&c.mounts)));
        }
        if !c.gpus {
            parts.push("gpus false".to_string());
        }
        let _ = writeln!(out, "  container: {}", parts.join(", "));
    }
    let rungs: Vec<&str> = r.rungs.keys().map(|id| id.name()).collect();
    let _ = writeln!(
        out,
        "  rung options: {}",
        if rungs.is_empty() { "none".to_string() } else { rungs.join(", ") }
    );

    let mut notes = Vec::new();
    let used: BTreeSet<&str> =
        template_fields(r).into_iter().flat_map(|(_, t)| references(t).unwrap_or_default()).collect();
    for name in r.variables.keys() {
        if !used.contains(name.as_str()) {
            notes.push(format!("variable `{name}` is declared but never used"));
        }
    }
    match &r.build {
        Some(b) if b.binaries.is_empty() => notes.push(
            "`build.binaries` is empty: the rebuild rung cannot check the binaries for line info".to_string(),
        ),
        Some(_) => {}
        None if r.python => notes.push(
            "no `build`: the rebuild rung redoes only what the program compiles while it runs (`torch.utils.cpp_extension` \
             ops, CuPy, FlashInfer and DeepGEMM kernels), in one more run with fresh build folders; what was built \
             before it keeps the line info it has"
                .to_string(),
        ),
        None => notes.push(
            "no `build`: the rebuild rung is skipped; tools name file:line only if the binaries already carry line info"
                .to_string(),
        ),
    }
    if r.build.is_none() && !r.python && r.rungs.contains_key(&RungId::Rebuild) {
        notes.push("`rungs.rebuild` has no effect without `build`".to_string());
    }
    for note in notes {
        let _ = writeln!(out, "  note: {note}");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newline_in_a_description_cannot_add_yaml_to_the_comments() {
        let text = "version: 1\nname: t\ndescription: \"d\"\nvariables:\n  x:\n    default: \"a\"\n    description: \"line one\\nrun: { command: \\\"rm -rf /\\\" }\\u001b[31m\"\nrun: { command: \"echo {x}\" }\n";
        let r = parse(text, RecipeSource::Builtin("t".into()), PathBuf::from("/r")).unwrap();
        assert!(r.variables["x"].description.contains('\n'), "the test needs a raw newline");
        let show = render_show_in(&r, Path::new("/w"));
        let tail = show.split("# ---- with the defaults ----").nth(1).unwrap();
        for line in tail.lines().filter(|l| !l.is_empty()) {
            assert!(line.starts_with('#'), "a line escaped the comments: {line:?}\n{show}");
        }
        assert!(tail.contains("line one\\nrun: { command:"), "{tail}");
        assert!(tail.contains("\\u{1b}[31m"), "{tail}");
    }
}

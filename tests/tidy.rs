//! Tidy: the architecture of xtask/src, checked on every `cargo test`.
//!
//! The crate is a stack of layers (the table in [`LAYERS`]): a module may use modules below
//! it (a greater level) and never one beside or above it, so the pure parts (findings,
//! redact, model) stay pure and the effects stay in one place each. Each rule is a function
//! that walks the sources and returns every violation as `path:line: message`; each rule is
//! its own `#[test]`, which fails listing all of that rule's violations at once, with a hint
//! on how to fix them:
//!
//! 1. layering: `crate::<top>` points down the layer table (or into the file's own module),
//!    and `super::` never climbs out of a top module;
//! 2. only `process/` spawns processes;
//! 3. only `ui/` prints;
//! 4. rung names (`"baseline"`, `"memcheck"`, ...) are spelt only in `model/`;
//! 5. bundle paths and file names are spelt only in `bundle/layout.rs`;
//! 6. exit numbers live only in `cli.rs` (and `std::process::exit` only in `main.rs`);
//! 7. every source file starts with a `//!` doc comment;
//! 8. every `[dependencies]` entry of xtask/Cargo.toml has a `#` reason and is used;
//! 9. no import cycles between files: a file never uses, directly or through others, a file
//!    that uses it (a parent `mod.rs` may use its children, or they it, not both);
//! 10. no file over [`MAX_FILE_LINES`] lines and no function over [`MAX_FN_LINES`], unit
//!     tests not counted, but for the allow-list [`SIZE_ALLOWED`], each entry with its reason.
//!
//! The rules look at non-test code only: comments, doc comments and `#[cfg(test)]` items
//! (normally the `mod tests` at the end of a file, or a file of tests declared
//! `#[cfg(test)] mod tests;`) are left out, and string literals are
//! read by a small lexer (below, with its own tests), so a `println!` in a comment or a
//! `"{"` in a string cannot fool a check. The layer table is the single statement of the
//! layering rule: docs/ARCHITECTURE.md points here rather than repeating it.
//!
//! Std only, so it builds in seconds and can be checked on its own:
//! `rustc --edition 2021 --test tests/tidy.rs -o /tmp/tidy && /tmp/tidy` from the workspace root.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, top (0) to bottom: a module may use modules of a strictly greater level, or
/// itself. Same-level modules are independent of each other (ladder and doctor, bundle and
/// recipe, findings and redact). A top module is `src/<name>.rs` or `src/<name>/`;
/// `lib.rs` and `main.rs` are not layers.
const LAYERS: &[(&str, u32, &str)] = &[
    ("cli", 0, "clap types and dispatch; the only place with exit numbers"),
    ("commands", 1, "one file per subcommand"),
    ("ladder", 2, "policy.rs (pure), driver.rs, plan.rs, collect.rs, rung/ (one file per rung)"),
    ("doctor", 2, "environment checks"),
    ("launch", 3, "host / containers"),
    ("process", 4, "the only code that spawns processes"),
    ("bundle", 5, "layout.rs holds every bundle path and file name"),
    ("recipe", 5, "recipes"),
    ("findings", 6, "parsers of the tools' output (pure)"),
    ("redact", 6, "secret redaction (pure)"),
    ("ui", 7, "the only printer"),
    ("model", 8, "typed identities: rung ids (the only list of rung names), invocation, exit"),
    ("files", 8, "opening user-given files: regular files only"),
];

/// Files in src that belong to no layer.
const EXEMPT: &[&str] = &["lib.rs", "main.rs"];

/// The file whose table names the rung ids ([`rung_names`]): spelt as literals only in `model/`.
const RUNG_TABLE: &str = "model/rung.rs";

/// Literals equal to a rung name that are not the rung id: (file, literal, reason).
const RUNG_NAME_ALLOWED: &[(&str, &str, &str)] = &[
    ("xtask/src/ladder/rung/memcheck.rs", "memcheck", "compute-sanitizer's `--tool` value, not the rung id"),
    (
        "xtask/src/ladder/rung/initcheck.rs",
        "initcheck",
        "compute-sanitizer's `--tool` value, not the rung id",
    ),
    ("xtask/src/findings/cudagdb/parser.rs", "attach", "cuda-gdb's `attach PID` command, not the rung id"),
    (
        "xtask/src/ladder/rung/parts/evidence.rs",
        "dump",
        "py-spy's `dump` subcommand, not the dump's folder id",
    ),
    ("xtask/src/findings/mod.rs", "coredump", "the name of the tool whose output was read, not the rung id"),
    ("xtask/src/findings/mod.rs", "memcheck", "the name of the tool whose output was read, not the rung id"),
    ("xtask/src/findings/mod.rs", "hang", "the error class of a verdict, not the rung id"),
];

/// The most lines a file under src may have, its `#[cfg(test)]` items not counted.
const MAX_FILE_LINES: usize = 1200;

/// The most lines a function may have, from its `fn` to its closing `}`.
const MAX_FN_LINES: usize = 150;

/// Files (`xtask/src/x.rs`) and functions (`xtask/src/x.rs::name`) allowed over the caps, each
/// with its ceiling (the most lines it may grow to) and its reason. An entry that is no longer
/// over its cap is a violation (remove it); so is one over its ceiling.
const SIZE_ALLOWED: &[(&str, usize, &str)] = &[
    ("xtask/src/bundle/archive/read.rs::scan", 216, "one streaming pass over the archive's entries whose checks share the pass's running state; not yet split into per-check helpers (issue 27)"),
    ("xtask/src/findings/ranks.rs::triage", 260, "the rank triage's steps read and narrow the same maps of ranks and pids; not yet split into named steps (issue 27)"),
];

/// Bundle file names: a literal containing one of them is spelt only in `bundle/layout.rs`.
const BUNDLE_NAMES: &[&str] = &[
    "manifest.yaml",
    "summary.md",
    "findings.json",
    "replay.sh",
    "SHA256SUMS",
    "LEFT_OUT.tsv",
    "ARCHIVE.sha256",
    "command.txt",
    "stdout.log",
    "stderr.log",
];

/// Bundle folders: a literal starting with one of them is a bundle path.
const BUNDLE_DIRS: &[&str] = &["rungs/", "env/"];

/// The one file that spells bundle paths.
const BUNDLE_LAYOUT: &str = "bundle/layout.rs";

// ---------------------------------------------------------------------------------------------
// The rules, one test each, over the real tree.
// ---------------------------------------------------------------------------------------------

#[test]
fn layering() {
    let table: Vec<String> =
        LAYERS.iter().map(|(name, level, what)| format!("      {level}  {name:<9} {what}")).collect();
    let hint = format!(
        "a module uses only modules of a greater level (or itself); move the code down, pass \
         the value in as an argument, or move the shared type into a lower module. A new top \
         module goes into the layer table in tests/tidy.rs. Reach sibling modules with \
         `crate::<top>`, not a chain of `super::`. The table:\n{}",
        table.join("\n")
    );
    assert_tidy("layering", &hint, check_layering(&sources()));
}

#[test]
fn only_process_spawns() {
    assert_tidy(
        "process-spawn",
        "start processes through `crate::process` (the only module that spawns, so timeouts, \
         process groups and Ctrl-C are handled in one place)",
        check_spawns(&sources()),
    );
}

#[test]
fn only_ui_prints() {
    assert_tidy(
        "printing",
        "return the text (or a typed value) and let `crate::ui` print it; `ui` is the only \
         module that writes to the terminal",
        check_prints(&sources()),
    );
}

#[test]
fn rung_names_only_in_model() {
    assert_tidy(
        "rung-name",
        "name a rung through the rung id type in `crate::model` (the only list of rung names); \
         a literal that merely looks like a rung name goes into RUNG_NAME_ALLOWED in \
         tests/tidy.rs with its reason",
        check_rung_names(&sources()),
    );
}

#[test]
fn bundle_paths_only_in_layout() {
    assert_tidy(
        "bundle-path",
        "take bundle paths and file names from `crate::bundle::layout` (add a function or a \
         constant there) so the bundle's layout is stated once",
        check_bundle_paths(&sources()),
    );
}

#[test]
fn exit_numbers_only_in_cli() {
    assert_tidy(
        "exit-number",
        "return a typed exit (`crate::model`) and let `cli.rs` map it to a number; only \
         `main.rs` calls `std::process::exit`",
        check_exit_numbers(&sources()),
    );
}

#[test]
fn files_start_with_doc_comment() {
    assert_tidy(
        "module-doc",
        "start the file with a `//!` comment saying what the module is for",
        check_module_docs(&sources()),
    );
}

#[test]
fn files_and_functions_are_not_too_long() {
    assert_tidy(
        "size",
        &format!(
            "split a file over {MAX_FILE_LINES} lines along its seams into a folder (`x/mod.rs` only \
             declaring and re-exporting, each file one idea with its `//!` contract); decompose a \
             function over {MAX_FN_LINES} lines into named helpers. Where that would not help, add \
             the path (or `path::fn`) to SIZE_ALLOWED in tests/tidy.rs with its ceiling and reason"
        ),
        check_sizes(&sources(), MAX_FILE_LINES, MAX_FN_LINES, SIZE_ALLOWED),
    );
}

#[test]
fn dependencies_are_explained_and_used() {
    let path = crate_root().join("Cargo.toml");
    let manifest =
        fs::read_to_string(&path).unwrap_or_else(|e| panic!("tidy: cannot read {}: {e}", path.display()));
    assert_tidy(
        "dependency",
        "give every dependency a `# reason` comment line right above it; remove a dependency \
         that non-test code does not use (or move it to [dev-dependencies])",
        check_dependencies(&manifest, &sources()),
    );
}

#[test]
fn no_import_cycles_between_files() {
    assert_tidy(
        "import-cycle",
        "move what both need into a third file that both import (a parent mod.rs should only \
         declare, register and re-export; the shared types go in a sibling file)",
        check_import_cycles(&sources()),
    );
}

/// Fails with every violation of one rule and the hint on how to fix them.
fn assert_tidy(rule: &str, hint: &str, violations: Vec<String>) {
    if violations.is_empty() {
        return;
    }
    panic!(
        "\n\ntidy: {} {rule} violation(s):\n\n{}\n\nhow to fix: {hint}\n",
        violations.len(),
        violations.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// The source files.
// ---------------------------------------------------------------------------------------------

/// The crate's directory (xtask/). Cargo sets `CARGO_MANIFEST_DIR`; compiled on its own with
/// rustc from the workspace root, it is `xtask`.
fn crate_root() -> PathBuf {
    option_env!("CARGO_MANIFEST_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("xtask"))
}

/// One .rs file under xtask/src, lexed.
struct SourceFile {
    /// The path under src, with `/`: `ladder/rung/memcheck.rs`.
    rel: String,
    /// `xtask/src/<rel>`, as violations name it.
    path: String,
    /// The top module (`ladder` for `ladder.rs` and for `ladder/...`); `None` for lib.rs, main.rs.
    top: Option<String>,
    /// The file as written.
    text: String,
    /// The non-test code: comments, string and char contents and `#[cfg(test)]` items are
    /// blanked (spaces), line breaks kept, so `code.lines()` numbers as the file does.
    code: String,
    /// The string literals of non-test code.
    lits: Vec<Lit>,
    /// The lines of the file that are not `#[cfg(test)]` items.
    code_lines: usize,
}

impl SourceFile {
    fn new(rel: &str, text: &str) -> SourceFile {
        let lexed = lex(text);
        let test_lines: HashSet<usize> = test_lines(&lexed.code).into_iter().collect();
        let code: Vec<&str> = lexed
            .code
            .split('\n')
            .enumerate()
            .map(|(i, line)| if test_lines.contains(&(i + 1)) { "" } else { line })
            .collect();
        let lits = lexed.lits.into_iter().filter(|l| !test_lines.contains(&l.line)).collect();
        let code_lines = text.lines().count().saturating_sub(test_lines.len());
        let top = if EXEMPT.contains(&rel) {
            None
        } else {
            let first = rel.split('/').next().unwrap_or(rel);
            Some(first.strip_suffix(".rs").unwrap_or(first).to_string())
        };
        SourceFile {
            rel: rel.to_string(),
            path: format!("xtask/src/{rel}"),
            top,
            text: text.to_string(),
            code: code.join("\n"),
            lits,
            code_lines,
        }
    }

    /// The same file as test code only (declared `#[cfg(test)] mod x;` by its parent): its
    /// code is all blank and it has no literals, as a `mod tests { .. }` inside a file.
    fn into_test_code(self) -> SourceFile {
        let code = self.code.split('\n').map(|_| "").collect::<Vec<_>>().join("\n");
        SourceFile { code, lits: Vec::new(), code_lines: 0, ..self }
    }

    /// The files this one declares under `#[cfg(test)]` (`#[cfg(test)] mod tests;`), as paths
    /// under src: `x/tests.rs` and `x/tests/mod.rs` for `x/mod.rs` or `x.rs`.
    fn test_children(&self) -> Vec<String> {
        let lexed = lex(&self.text);
        let tests: HashSet<usize> = test_lines(&lexed.code).into_iter().collect();
        let dir = match self.rel.strip_suffix(".rs") {
            Some(_) if EXEMPT.contains(&self.rel.as_str()) => String::new(),
            Some(stem) => match stem.strip_suffix("mod") {
                Some(parent) if parent.is_empty() || parent.ends_with('/') => parent.to_string(),
                _ => format!("{stem}/"),
            },
            None => return Vec::new(),
        };
        let mut out = Vec::new();
        for p in find_word(&lexed.code, "mod") {
            let rest = lexed.code[p + "mod".len()..].trim_start();
            let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
            if !name.is_empty()
                && rest[name.len()..].trim_start().starts_with(';')
                && tests.contains(&line_of(&lexed.code, p))
            {
                out.push(format!("{dir}{name}.rs"));
                out.push(format!("{dir}{name}/mod.rs"));
            }
        }
        out
    }

    fn is_in(&self, top: &str) -> bool {
        self.top.as_deref() == Some(top)
    }

    /// How deep the file's module is below the crate root: `foo.rs` and `foo/mod.rs` are 1,
    /// `foo/bar.rs` is 2.
    fn module_depth(&self) -> usize {
        let parts = self.rel.split('/').count();
        if self.rel.ends_with("/mod.rs") {
            parts - 1
        } else {
            parts
        }
    }

    fn at(&self, line: usize, msg: impl std::fmt::Display) -> String {
        format!("{}:{line}: {msg}", self.path)
    }

    /// The file's module path from the crate root: `[ladder, rung, attach]` for
    /// `ladder/rung/attach.rs`, `[ladder, rung]` for `ladder/rung/mod.rs`.
    fn module_path(&self) -> Vec<String> {
        let stem = self.rel.strip_suffix(".rs").unwrap_or(&self.rel);
        let stem = stem.strip_suffix("/mod").unwrap_or(stem);
        stem.split('/').map(String::from).collect()
    }
}

/// Every .rs file under xtask/src, sorted by path.
fn sources() -> Vec<SourceFile> {
    let src = crate_root().join("src");
    let mut paths = Vec::new();
    walk(&src, &mut paths);
    paths.sort();
    assert!(!paths.is_empty(), "tidy: no .rs files under {}", src.display());
    let files = paths
        .iter()
        .map(|p| {
            let rel = p.strip_prefix(&src).unwrap_or(p);
            let rel: Vec<String> =
                rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
            let text =
                fs::read_to_string(p).unwrap_or_else(|e| panic!("tidy: cannot read {}: {e}", p.display()));
            SourceFile::new(&rel.join("/"), &text)
        })
        .collect();
    mark_test_files(files)
}

/// The files declared `#[cfg(test)] mod x;` (a module's tests in a file of their own, and
/// the files below it) become test code, left out as a `mod tests { .. }` is.
fn mark_test_files(files: Vec<SourceFile>) -> Vec<SourceFile> {
    let mut tests: HashSet<String> = files.iter().flat_map(SourceFile::test_children).collect();
    let under = |rel: &str, tests: &HashSet<String>| {
        tests.iter().any(|t| t.strip_suffix("mod.rs").is_some_and(|dir| rel.starts_with(dir)))
    };
    tests.retain(|t| files.iter().any(|f| f.rel == *t));
    files
        .into_iter()
        .map(|f| if tests.contains(&f.rel) || under(&f.rel, &tests) { f.into_test_code() } else { f })
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("tidy: cannot read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap_or_else(|e| panic!("tidy: cannot read {}: {e}", dir.display())).path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The checks: each takes the files and returns its violations.
// ---------------------------------------------------------------------------------------------

fn level(top: &str) -> Option<u32> {
    LAYERS.iter().find(|(name, _, _)| *name == top).map(|(_, level, _)| *level)
}

/// Rule 1: `crate::<top>` points down the table or into the file's own module; `super::`
/// chains stay inside the file's top module.
fn check_layering(files: &[SourceFile]) -> Vec<String> {
    let mut out = Vec::new();
    for f in files {
        let Some(own) = f.top.as_deref() else { continue };
        let own_level = level(own);
        if own_level.is_none() {
            out.push(f.at(
                1,
                format!(
                    "top module `{own}` is not in the layer table: add it to the layer table in \
                 tests/tidy.rs (or move the file into a module that is)"
                ),
            ));
        }
        for (line, target) in crate_refs(&f.code) {
            if target == own {
                continue;
            }
            match (own_level, level(&target)) {
                (_, None) => out.push(f.at(
                    line,
                    format!(
                        "`crate::{target}` is not a top module in the layer table: add it to the layer \
                     table in tests/tidy.rs"
                    ),
                )),
                (Some(mine), Some(theirs)) if theirs <= mine => {
                    let how = if theirs == mine { "beside" } else { "above" };
                    out.push(f.at(
                        line,
                        format!(
                            "`{own}` (level {mine}) uses `crate::{target}` (level {theirs}), which is {how} \
                         it: dependencies point down the layer table"
                        ),
                    ));
                }
                _ => {}
            }
        }
        // A nested non-test `mod x { .. }` inside a file would allow one more `super::`; the
        // crate has none, so the depth is the file's.
        let allowed = f.module_depth() - 1;
        for (line, n) in super_chains(&f.code) {
            if n > allowed {
                out.push(f.at(
                    line,
                    format!(
                        "{} reaches out of `{own}` (at most {allowed} `super::` here): use \
                     `crate::<top>` so the layer check sees it",
                        "super::".repeat(n)
                    ),
                ));
            }
        }
    }
    dedup(out)
}

/// Rule 2: only `process/` spawns.
fn check_spawns(files: &[SourceFile]) -> Vec<String> {
    const PATTERNS: &[&str] = &["Command::new(", "std::process::Command", "duct::cmd", "cmd!("];
    let mut out = Vec::new();
    for f in files.iter().filter(|f| !f.is_in("process")) {
        // `.spawn()` is also how threads start (`std::thread::spawn(f)`, `Builder::spawn(f)`,
        // `scope.spawn(f)`), but those take a closure; an empty `.spawn()` is a process spawn
        // (`std::process::Command`, duct's `Expression::start` aside) when the file also names
        // `Command`. A heuristic, kept simple: it never flags a thread.
        let names_command = !find_word(&f.code, "Command").is_empty();
        for (i, line) in f.code.lines().enumerate() {
            let hit = PATTERNS.iter().find(|p| !find_token(line, p).is_empty()).copied().or_else(|| {
                (names_command && !find_token(line, ".spawn()").is_empty()).then_some(".spawn()")
            });
            if let Some(p) = hit {
                out.push(
                    f.at(i + 1, format!("`{p}` outside process/: only `crate::process` spawns processes")),
                );
            }
        }
    }
    out
}

/// Rule 3: only `ui/` prints.
fn check_prints(files: &[SourceFile]) -> Vec<String> {
    const PATTERNS: &[&str] = &[
        "println!",
        "eprintln!",
        "print!(",
        "eprint!(",
        "dbg!(",
        "std::io::stdout(",
        "std::io::stderr(",
        "io::stdout(",
        "io::stderr(",
    ];
    let mut out = Vec::new();
    for f in files.iter().filter(|f| !f.is_in("ui")) {
        for (i, line) in f.code.lines().enumerate() {
            if let Some(p) = PATTERNS.iter().find(|p| !find_token(line, p).is_empty()) {
                out.push(f.at(i + 1, format!("`{p}` outside ui/: only `crate::ui` prints")));
            }
        }
    }
    out
}

/// The rung names, read from the table of [`RUNG_TABLE`]: every line `Variant = "name", ...`
/// of its `rung_ids!` invocation (the ladder's rungs and the ids beside them).
fn rung_names() -> Vec<String> {
    let path = crate_root().join("src").join(RUNG_TABLE);
    let text =
        fs::read_to_string(&path).unwrap_or_else(|e| panic!("tidy: cannot read {}: {e}", path.display()));
    let names = table_names(&text);
    assert!(
        names.iter().any(|n| n == "baseline") && names.iter().any(|n| n == "dump"),
        "tidy: no rung table (`Baseline = \"baseline\", needs [...]` lines) in {}: {names:?}",
        path.display()
    );
    names
}

/// The names of a `rung_ids!` table's lines (`    Variant = "name", needs [..], ..;`).
fn table_names(text: &str) -> Vec<String> {
    let Some(start) = text.find("\nrung_ids! {") else { return Vec::new() };
    let mut out = Vec::new();
    // The invocation ends at the first `}` in column 0.
    for line in text[start + 1..].lines().skip(1).take_while(|l| *l != "}").map(str::trim) {
        let Some((variant, rest)) = line.split_once(" = \"") else { continue };
        let Some((name, _)) = rest.split_once("\", needs [") else { continue };
        if variant.chars().all(|c| c.is_ascii_alphanumeric())
            && variant.starts_with(|c: char| c.is_ascii_uppercase())
        {
            out.push(name.to_string());
        }
    }
    out
}

/// Rule 4: rung names are spelt only in `model/`, but for the allow-list.
fn check_rung_names(files: &[SourceFile]) -> Vec<String> {
    let names = rung_names();
    let mut out = Vec::new();
    let mut used = vec![false; RUNG_NAME_ALLOWED.len()];
    for f in files.iter().filter(|f| !f.is_in("model")) {
        for lit in f.lits.iter().filter(|l| names.contains(&l.text)) {
            let allowed = RUNG_NAME_ALLOWED.iter().position(|(p, l, _)| *p == f.path && *l == lit.text);
            match allowed {
                Some(k) => used[k] = true,
                None => out.push(f.at(lit.line, format!("rung name \"{}\" outside model/", lit.text))),
            }
        }
    }
    for ((path, lit, _), _) in RUNG_NAME_ALLOWED.iter().zip(&used).filter(|(_, used)| !**used) {
        out.push(format!(
            "tests/tidy.rs: RUNG_NAME_ALLOWED entry ({path}, \"{lit}\") matches nothing any more: remove it"
        ));
    }
    out
}

/// Rule 5: bundle paths and file names are spelt only in `bundle/layout.rs`.
fn check_bundle_paths(files: &[SourceFile]) -> Vec<String> {
    let mut out = Vec::new();
    for f in files.iter().filter(|f| f.rel != BUNDLE_LAYOUT) {
        for lit in &f.lits {
            let name = BUNDLE_NAMES.iter().find(|n| lit.text.contains(*n));
            let dir = BUNDLE_DIRS.iter().find(|d| lit.text.starts_with(*d));
            if let Some(what) = name.or(dir) {
                out.push(f.at(
                    lit.line,
                    format!("bundle path `{what}` in \"{}\" outside {BUNDLE_LAYOUT}", lit.text),
                ));
            }
        }
    }
    out
}

/// Rule 6: exit numbers only in `cli.rs`, `std::process::exit` only in `main.rs`.
fn check_exit_numbers(files: &[SourceFile]) -> Vec<String> {
    let mut out = Vec::new();
    for f in files {
        let in_cli = f.is_in("cli");
        for (i, line) in f.code.lines().enumerate() {
            let msg = if f.rel != "main.rs" && !find_token(line, "process::exit(").is_empty() {
                Some("`std::process::exit(` outside main.rs: return the exit to `cli::main`")
            } else if !in_cli && !find_token(line, "const EXIT_").is_empty() {
                Some("`const EXIT_` outside cli.rs: exit numbers are defined only in cli.rs")
            } else if !in_cli && has_int(line, 130) {
                Some("exit number 130 outside cli.rs: return a typed exit and let cli.rs number it")
            } else {
                None
            };
            if let Some(msg) = msg {
                out.push(f.at(i + 1, msg));
            }
        }
    }
    out
}

/// Rule 7: every file starts with a `//!` doc comment.
fn check_module_docs(files: &[SourceFile]) -> Vec<String> {
    files
        .iter()
        .filter_map(|f| {
            let first = f.text.lines().enumerate().find(|(_, l)| !l.trim().is_empty());
            match first {
                Some((_, l)) if l.trim_start().starts_with("//!") => None,
                Some((i, _)) => Some(f.at(i + 1, "the file does not start with a `//!` doc comment")),
                None => Some(f.at(1, "the file is empty: it needs at least a `//!` doc comment")),
            }
        })
        .collect()
}

/// Rule 10: no file over `max_file` lines and no function over `max_fn`, test code not
/// counted, but for the `allowed` entries (`path` or `path::fn`, reason); an entry that
/// matches nothing over its cap is reported too, so the list only shrinks.
fn check_sizes(
    files: &[SourceFile],
    max_file: usize,
    max_fn: usize,
    allowed: &[(&str, usize, &str)],
) -> Vec<String> {
    let mut out = Vec::new();
    let mut used = vec![false; allowed.len()];
    let mut over =
        |name: String, len: usize, at: String| match allowed.iter().position(|(a, _, _)| *a == name) {
            Some(k) if len <= allowed[k].1 => used[k] = true,
            Some(k) => {
                used[k] = true;
                out.push(format!(
                    "{at}, and over its SIZE_ALLOWED ceiling of {}: split it, do not raise the ceiling",
                    allowed[k].1
                ));
            }
            None => out.push(at),
        };
    for f in files {
        if f.code_lines > max_file {
            over(
                f.path.clone(),
                f.code_lines,
                f.at(1, format!("{} lines (tests aside), over {max_file}", f.code_lines)),
            );
        }
        for (line, name, len) in fn_lengths(&f.code) {
            if len > max_fn {
                over(
                    format!("{}::{name}", f.path),
                    len,
                    f.at(line, format!("fn `{name}` is {len} lines, over {max_fn}")),
                );
            }
        }
    }
    for ((name, _, _), _) in allowed.iter().zip(&used).filter(|(_, used)| !**used) {
        out.push(format!("tests/tidy.rs: SIZE_ALLOWED entry {name} is not over its cap any more: remove it"));
    }
    out
}

/// Each function with a body in lexed code: the line of its `fn`, its name, and its length in
/// lines from the `fn` to the `}` that closes its body. A nested function is counted on its
/// own too (and inside the outer one); `fn(u8) -> u8` types and bodiless declarations are not
/// functions here.
fn fn_lengths(code: &str) -> Vec<(usize, String, usize)> {
    let mut out = Vec::new();
    for p in find_word(code, "fn") {
        let rest = code[p + 2..].trim_start();
        let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
        if name.is_empty() {
            continue;
        }
        let after = code.len() - rest.len() + name.len();
        // The body's `{`: the first one outside brackets before any `;`.
        let mut depth = 0i32;
        let mut open = None;
        for (k, c) in code[after..].char_indices() {
            match c {
                '(' | '[' | '<' => depth += 1,
                ')' | ']' | '>' if !code[..after + k].ends_with('-') => depth -= 1,
                '{' if depth <= 0 => {
                    open = Some(after + k);
                    break;
                }
                ';' if depth <= 0 => break,
                _ => {}
            }
        }
        let Some(open) = open else { continue };
        let mut depth = 0;
        let close = code[open..].char_indices().find_map(|(k, c)| {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            (depth == 0).then_some(open + k)
        });
        let start = line_of(code, p);
        let end = close.map_or_else(|| code.lines().count(), |c| line_of(code, c));
        out.push((start, name, end - start + 1));
    }
    out
}

/// Rule 8: every `[dependencies]` entry has a `#` reason right above it, and non-test code
/// under src uses it (`name::` or `use name`; for serde, a `Serialize`/`Deserialize` too).
fn check_dependencies(manifest: &str, files: &[SourceFile]) -> Vec<String> {
    let mut out = Vec::new();
    let lines: Vec<&str> = manifest.lines().collect();
    let mut in_deps = false;
    // Open `{` / `[` of a value that continues on the next lines.
    let mut open = 0i32;
    for (i, raw) in lines.iter().enumerate() {
        let line = raw.trim();
        if open > 0 {
            open += brackets(line);
            continue;
        }
        if line.starts_with('[') {
            in_deps = line == "[dependencies]"
                || (line.starts_with("[target.") && line.ends_with(".dependencies]"));
            continue;
        }
        if !in_deps || line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        open = brackets(value);
        let key = key.trim().trim_matches('"');
        let at = format!("xtask/Cargo.toml:{}", i + 1);
        if !(i > 0 && lines[i - 1].trim_start().starts_with('#')) {
            out.push(format!("{at}: dependency `{key}` has no `#` comment line above it giving its reason"));
        }
        let name = key.replace('-', "_");
        let used = files.iter().any(|f| {
            !find_token(&f.code, &format!("{name}::")).is_empty()
                || find_token(&f.code, &format!("use {name}"))
                    .iter()
                    .any(|&p| !f.code[p + 4 + name.len()..].starts_with(is_ident))
                || (name == "serde"
                    && (!find_word(&f.code, "Serialize").is_empty()
                        || !find_word(&f.code, "Deserialize").is_empty()))
        });
        if !used {
            out.push(format!(
                "{at}: dependency `{key}` is not used by non-test code under xtask/src \
                 (no `{name}::`, no `use {name}`)"
            ));
        }
    }
    out
}

/// `{`/`[` opened minus closed in a TOML value (quoted strings skipped).
fn brackets(value: &str) -> i32 {
    let mut n = 0;
    let mut in_str = false;
    for c in value.chars() {
        match c {
            '"' => in_str = !in_str,
            '#' if !in_str => break,
            '{' | '[' if !in_str => n += 1,
            '}' | ']' if !in_str => n -= 1,
            _ => {}
        }
    }
    n
}

/// Rule 9: no import cycles between files. The files under src (lib.rs and main.rs aside)
/// form a graph, [`import_graph`]; each strongly connected component of more than one file
/// is one violation, shown as a shortest cycle through its first file (by path), with the
/// line of the first reference of each step and the component's other files, if any.
fn check_import_cycles(files: &[SourceFile]) -> Vec<String> {
    let (nodes, edges) = import_graph(files);
    let succ: Vec<Vec<usize>> = edges.iter().map(|e| e.iter().map(|(to, _)| *to).collect()).collect();
    let mut out = Vec::new();
    for mut scc in strongly_connected(&succ).into_iter().filter(|c| c.len() > 1) {
        scc.sort_unstable();
        let cycle = shortest_cycle(&succ, &scc);
        let names: Vec<&str> = cycle.iter().map(|&i| nodes[i].path.as_str()).collect();
        let at: Vec<String> = cycle
            .windows(2)
            .map(|w| {
                let line = edges[w[0]].iter().find(|(to, _)| *to == w[1]).map_or(0, |(_, line)| *line);
                format!("{}:{line}", nodes[w[0]].path)
            })
            .collect();
        let mut msg = format!("cycle: {} (at {})", names.join(" -> "), at.join(", "));
        let rest: Vec<&str> =
            scc.iter().filter(|i| !cycle.contains(i)).map(|&i| nodes[i].path.as_str()).collect();
        if !rest.is_empty() {
            msg.push_str(&format!("; also in this tangle: {}", rest.join(", ")));
        }
        out.push(msg);
    }
    out.sort();
    out
}

/// The import graph: the files that are modules (lib.rs and main.rs aside), sorted by path,
/// and for each the files it refers to, each with the line of its first reference, sorted.
/// File A refers to file B when A's non-test code names a path ([`item_paths`]) whose longest
/// prefix naming a module file (`x/y/z.rs`, `x/y/z/mod.rs`, then `x/y.rs`, ...) is B. A
/// `mod b;` declaration is no reference, a path to no file names nothing, and A → A is left
/// out.
fn import_graph(files: &[SourceFile]) -> (Vec<&SourceFile>, Edges) {
    let mut nodes: Vec<&SourceFile> = files.iter().filter(|f| f.top.is_some()).collect();
    nodes.sort_by(|a, b| a.rel.cmp(&b.rel));
    let index: HashMap<&str, usize> = nodes.iter().enumerate().map(|(i, f)| (f.rel.as_str(), i)).collect();
    let resolve = |path: &[String]| {
        (1..=path.len()).rev().find_map(|k| {
            let p = path[..k].join("/");
            index
                .get(format!("{p}.rs").as_str())
                .or_else(|| index.get(format!("{p}/mod.rs").as_str()))
                .copied()
        })
    };
    let edges = nodes
        .iter()
        .enumerate()
        .map(|(from, f)| {
            let mut to: Vec<(usize, usize)> = Vec::new();
            for (line, path) in item_paths(&f.code, &f.module_path()) {
                if let Some(b) = resolve(&path).filter(|&b| b != from && !to.iter().any(|(t, _)| *t == b)) {
                    to.push((b, line));
                }
            }
            to.sort_unstable();
            to
        })
        .collect();
    (nodes, edges)
}

/// For each file of the import graph, the files it refers to: (index, line of the first
/// reference).
type Edges = Vec<Vec<(usize, usize)>>;

/// Tarjan's strongly connected components of the graph with successor lists `succ`.
fn strongly_connected(succ: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct Tarjan<'a> {
        succ: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    impl Tarjan<'_> {
        fn visit(&mut self, v: usize) {
            self.index[v] = Some(self.next);
            self.low[v] = self.next;
            self.next += 1;
            self.stack.push(v);
            self.on_stack[v] = true;
            let succ = self.succ;
            for &w in &succ[v] {
                match self.index[w] {
                    None => {
                        self.visit(w);
                        self.low[v] = self.low[v].min(self.low[w]);
                    }
                    Some(i) if self.on_stack[w] => self.low[v] = self.low[v].min(i),
                    Some(_) => {}
                }
            }
            if self.index[v] == Some(self.low[v]) {
                let mut scc = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack[w] = false;
                    scc.push(w);
                    if w == v {
                        break;
                    }
                }
                self.out.push(scc);
            }
        }
    }
    let n = succ.len();
    let mut t = Tarjan {
        succ,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if t.index[v].is_none() {
            t.visit(v);
        }
    }
    t.out
}

/// A shortest cycle through the first node of the strongly connected component `scc` (sorted),
/// staying inside it, found breadth first: `[a, b, .., a]`.
fn shortest_cycle(succ: &[Vec<usize>], scc: &[usize]) -> Vec<usize> {
    let start = scc[0];
    let mut prev: HashMap<usize, usize> = HashMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for &w in succ[v].iter().filter(|w| scc.contains(w)) {
            if w == start {
                // Back from `v` to `start` (which has no `prev`), then round.
                let mut cycle = vec![start, v];
                let mut at = v;
                while let Some(&p) = prev.get(&at) {
                    cycle.push(p);
                    at = p;
                }
                cycle.reverse();
                return cycle;
            }
            if let std::collections::hash_map::Entry::Vacant(e) = prev.entry(w) {
                e.insert(v);
                queue.push_back(w);
            }
        }
    }
    vec![start]
}

// ---------------------------------------------------------------------------------------------
// Finding things in lexed code.
// ---------------------------------------------------------------------------------------------

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Byte offsets where `pat` starts in `hay`, not in the middle of an identifier (`print!(`
/// does not match inside `eprint!(`).
fn find_token(hay: &str, pat: &str) -> Vec<usize> {
    let starts_ident = pat.starts_with(is_ident);
    hay.match_indices(pat)
        .map(|(p, _)| p)
        .filter(|&p| !starts_ident || !hay[..p].ends_with(is_ident))
        .collect()
}

/// Like [`find_token`], and not followed by an identifier character either.
fn find_word(hay: &str, word: &str) -> Vec<usize> {
    find_token(hay, word).into_iter().filter(|&p| !hay[p + word.len()..].starts_with(is_ident)).collect()
}

/// Whether the line holds the integer literal `n` (`130`, `130u8`, `1_30`; not `1300`,
/// `0.130`, `x.130` or `v130`).
fn has_int(line: &str, n: u64) -> bool {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        // After a single `.` it is a tuple field (`t.130`) or a fraction; after `..`, a range end.
        let field = i > 0 && b[i - 1] == b'.' && !(i > 1 && b[i - 2] == b'.');
        if !b[i].is_ascii_digit() || field || (i > 0 && is_ident(b[i - 1] as char)) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
        let fraction = i + 1 < b.len() && b[i] == b'.' && b[i + 1].is_ascii_digit();
        let digits: String = line[start..i].chars().filter(|c| *c != '_').collect();
        if !fraction && digits.parse::<u64>() == Ok(n) {
            return true;
        }
    }
    false
}

/// Line number (1-based) of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}

/// The top modules that `crate::` paths name, with their lines: `crate::ui::status(..)`,
/// `use crate::ui;` and each item of `use crate::{a, b::{c, d}}` (here `a` and `b`).
fn crate_refs(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for p in find_word(code, "crate") {
        if code[..p].ends_with('$') {
            continue; // `$crate` in a macro.
        }
        let rest = code[p + "crate".len()..].trim_start();
        let Some(rest) = rest.strip_prefix("::") else { continue }; // `pub(crate)`, `crate;`
        let rest = rest.trim_start();
        let at = code.len() - rest.len();
        if let Some(group) = rest.strip_prefix('{') {
            group_items(code, code.len() - group.len(), &mut out);
        } else {
            let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
            if !name.is_empty() {
                out.push((line_of(code, at), name));
            }
        }
    }
    out
}

/// The first identifier of each item of the `{..}` group that starts at byte `start` (just
/// after the `{`); nested groups belong to their item. `self` (the crate root) is skipped.
fn group_items(code: &str, start: usize, out: &mut Vec<(usize, String)>) {
    let mut depth = 1;
    let mut item_start = true;
    let mut chars = code[start..].char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return;
                }
            }
            ',' if depth == 1 => item_start = true,
            c if is_ident(c) && item_start && depth == 1 => {
                item_start = false;
                let mut name = c.to_string();
                while let Some(&(_, c)) = chars.peek() {
                    if !is_ident(c) {
                        break;
                    }
                    name.push(c);
                    chars.next();
                }
                if name != "self" {
                    out.push((line_of(code, start + i), name));
                }
            }
            _ => {}
        }
    }
}

/// The item paths that code names, from the crate root, each with the line of its last
/// segment: `crate::a::b(..)` is `[a, b]`; in `ladder/driver.rs`, `use super::{x, y::{self,
/// z}}` is `[ladder, x]`, `[ladder, y]` and `[ladder, y, z]`; `self::c` and, for a module
/// that the file declares (`mod c;`), `c::d` and `use c::D` start from the file's `module`.
/// Each path is read once, as a whole (a `use` tree with its groups, `as` renames and globs);
/// a path that climbs above the crate root, `$crate::..` and `pub(in crate::x)` name nothing.
fn item_paths(code: &str, module: &[String]) -> Vec<(usize, Vec<String>)> {
    let mut heads: Vec<String> = ["crate", "super", "self"].map(String::from).to_vec();
    heads.extend(declared_mods(code));
    let mut starts: Vec<usize> = heads
        .iter()
        .flat_map(|h| find_word(code, h).into_iter().map(move |p| (p, h.len())))
        .filter(|&(p, len)| {
            let before = code[..p].trim_end();
            let visibility = before.strip_suffix("in").is_some_and(|b| b.trim_end().ends_with('('));
            code[p + len..].trim_start().starts_with("::")
                && !before.ends_with("::")
                && !before.ends_with('$')
                && !visibility
        })
        .map(|(p, _)| p)
        .collect();
    starts.sort_unstable();
    let mut out = Vec::new();
    let mut end = 0;
    for p in starts {
        if p < end {
            continue; // inside the previous path, as in `use super::{a, c::D}`.
        }
        end = p;
        let mut found = Vec::new();
        use_tree(code.as_bytes(), &mut end, module.to_vec(), &mut found);
        out.extend(found.into_iter().map(|(at, path)| (line_of(code, at), path)));
    }
    out
}

/// The modules that code declares with `mod x;` (not inline `mod x { .. }`).
fn declared_mods(code: &str) -> Vec<String> {
    find_word(code, "mod")
        .into_iter()
        .filter_map(|p| {
            let rest = code[p + "mod".len()..].trim_start();
            let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
            (!name.is_empty() && rest[name.len()..].trim_start().starts_with(';')).then_some(name)
        })
        .collect()
}

/// Reads the path or `use` tree at byte `*i` (moved past it) on top of `prefix` (the
/// module it is read in): `crate` starts from the root, `super` climbs one module, `self`
/// stays, a name goes one deeper; `{a, b::c}` reads each item on top of the same prefix.
/// Pushes each complete path with the offset of its last segment.
fn use_tree(b: &[u8], i: &mut usize, mut prefix: Vec<String>, out: &mut Vec<(usize, Vec<String>)>) {
    let skip_ws = |i: &mut usize| {
        while b.get(*i).is_some_and(u8::is_ascii_whitespace) {
            *i += 1;
        }
    };
    loop {
        skip_ws(i);
        let at = *i;
        match b.get(*i) {
            Some(b'{') => {
                *i += 1;
                loop {
                    use_tree(b, i, prefix.clone(), out);
                    // An `as name` rename, then the `,` to the next item or the closing `}`.
                    while b.get(*i).is_some_and(|c| !matches!(c, b',' | b'}' | b'{' | b';')) {
                        *i += 1;
                    }
                    match b.get(*i) {
                        Some(b',') => *i += 1,
                        Some(b'}') => {
                            *i += 1;
                            return;
                        }
                        _ => return,
                    }
                }
            }
            Some(b'*') => {
                *i += 1;
                out.push((at, prefix));
                return;
            }
            _ => {}
        }
        while b.get(*i).is_some_and(|&c| c == b'_' || c.is_ascii_alphanumeric() || c >= 0x80) {
            *i += 1;
        }
        let Ok(name) = std::str::from_utf8(&b[at..*i]) else { return };
        match name {
            "" => return, // `{a, }`, or not a path.
            "crate" => prefix.clear(),
            "super" => {
                if prefix.pop().is_none() {
                    return; // above the crate root.
                }
            }
            "self" => {}
            _ => prefix.push(name.to_string()),
        }
        skip_ws(i);
        let mut next = *i + 2;
        skip_ws(&mut next);
        if !b[*i..].starts_with(b"::") || b.get(next) == Some(&b'<') {
            out.push((at, prefix)); // the end of the path, or a turbofish `f::<T>`.
            return;
        }
        *i += 2;
    }
}

/// Each run of `super::super::..` with its line and length.
fn super_chains(code: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut after_prev = 0;
    for p in find_token(code, "super::") {
        if p < after_prev {
            continue; // inside the previous run.
        }
        let mut n = 0;
        let mut end = p;
        while code[end..].starts_with("super::") {
            n += 1;
            end += "super::".len();
        }
        after_prev = end;
        out.push((line_of(code, p), n));
    }
    out
}

fn dedup(v: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(v.len());
    for s in v {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// The lines (1-based) of `#[cfg(test)]` items in lexed code: from the attribute to the end
/// of the item it is on (the `}` that closes its body, or a `;`/`,` before any body), found
/// by counting brackets, which is reliable once strings, chars and comments are blanked.
/// Usually that is the `mod tests { .. }` to the end of the file; a `#[cfg(test)]` macro or
/// helper at the top of a file does not hide the rest of it.
fn test_lines(code: &str) -> Vec<usize> {
    const ATTR: &str = "#[cfg(test)]";
    let mut out = Vec::new();
    let mut offset = 0;
    let mut skip_to = 0;
    for (i, line) in code.split('\n').enumerate() {
        let line_start = offset;
        offset += line.len() + 1;
        if line_start < skip_to || !line.trim_start().starts_with(ATTR) {
            continue;
        }
        let body = line_start + line.find(ATTR).unwrap_or(0) + ATTR.len();
        let mut depth = 0i32;
        let mut braced = false;
        let mut end = code.len();
        for (k, c) in code[body..].char_indices() {
            match c {
                '{' | '(' | '[' => {
                    braced |= c == '{' && depth == 0;
                    depth += 1;
                }
                '}' | ')' | ']' => depth -= 1,
                ';' | ',' if depth == 0 && !braced => {}
                _ => continue,
            }
            if depth < 0 || (depth == 0 && ((braced && c == '}') || (!braced && (c == ';' || c == ',')))) {
                end = body + k;
                break;
            }
        }
        skip_to = end + 1;
        out.extend(i + 1..=line_of(code, end.min(code.len())));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The lexer: just enough Rust to tell code from comments and string literals.
// ---------------------------------------------------------------------------------------------

/// A string literal: its first line and its text between the quotes, as written (escapes
/// not decoded).
#[derive(Debug, PartialEq)]
struct Lit {
    line: usize,
    text: String,
}

struct Lexed {
    /// The source with comments and the insides of string and char literals replaced by
    /// spaces; the line breaks (and the quotes) stay where they were.
    code: String,
    lits: Vec<Lit>,
}

/// Lexes `//` and nested `/* */` comments, `"..."` with escapes, raw strings `r#"..."#`
/// (also `b`/`c`/`br` prefixed), char literals (`'"'`, `'\''`, `b'x'`) and lifetimes (`'a`,
/// which start nothing).
fn lex(src: &str) -> Lexed {
    let s: Vec<char> = src.chars().collect();
    let at = |i: usize| s.get(i).copied().unwrap_or('\0');
    let mut code = String::with_capacity(src.len());
    let mut lits = Vec::new();
    let mut line = 1;
    // Blanks `s[from..to]` into `code`, keeping line breaks.
    let blank = |code: &mut String, line: &mut usize, from: usize, to: usize| {
        for &c in &s[from..to.min(s.len())] {
            if c == '\n' {
                *line += 1;
                code.push('\n');
            } else {
                code.push(' ');
            }
        }
    };
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let after_ident = i > 0 && is_ident(s[i - 1]);
        if c == '/' && at(i + 1) == '/' {
            let mut j = i;
            while j < s.len() && s[j] != '\n' {
                j += 1;
            }
            blank(&mut code, &mut line, i, j);
            i = j;
        } else if c == '/' && at(i + 1) == '*' {
            let (mut j, mut depth) = (i + 2, 1);
            while j < s.len() && depth > 0 {
                if s[j] == '/' && at(j + 1) == '*' {
                    depth += 1;
                    j += 2;
                } else if s[j] == '*' && at(j + 1) == '/' {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut code, &mut line, i, j);
            i = j;
        } else if c == '"' {
            let mut j = i + 1;
            while j < s.len() && s[j] != '"' {
                j += if s[j] == '\\' { 2 } else { 1 };
            }
            let j = j.min(s.len());
            lits.push(Lit { line, text: s[i + 1..j].iter().collect() });
            code.push('"');
            blank(&mut code, &mut line, i + 1, j);
            if j < s.len() {
                code.push('"');
            }
            i = j + 1;
        } else if let Some((open, hashes)) = raw_string_start(&s, i).filter(|_| !after_ident) {
            // `r##"` .. `"##`: no escapes; ends at a quote followed by as many hashes.
            let mut j = open + 1;
            while j < s.len() && !(s[j] == '"' && (1..=hashes).all(|h| at(j + h) == '#')) {
                j += 1;
            }
            let j = j.min(s.len());
            lits.push(Lit { line, text: s[open + 1..j].iter().collect() });
            code.extend(&s[i..=open]);
            blank(&mut code, &mut line, open + 1, j);
            let close = (j + 1 + hashes).min(s.len());
            code.extend(&s[j.min(close)..close]);
            i = close;
        } else if c == '\'' {
            // A char literal is `'x'` or `'\..'`; otherwise this is a lifetime or a label.
            let end = if at(i + 1) == '\\' {
                let mut j = i + 3;
                while j < s.len() && s[j] != '\'' && s[j] != '\n' && j < i + 12 {
                    j += 1;
                }
                (at(j) == '\'').then_some(j)
            } else if at(i + 1) != '\n' && at(i + 2) == '\'' {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(j) => {
                    code.push('\'');
                    blank(&mut code, &mut line, i + 1, j);
                    code.push('\'');
                    i = j + 1;
                }
                None => {
                    code.push('\'');
                    i += 1;
                }
            }
        } else {
            if c == '\n' {
                line += 1;
            }
            code.push(c);
            i += 1;
        }
    }
    Lexed { code, lits }
}

/// If a raw string starts at `i` (`r"`, `r#"`, `br"`, `cr#"`): the index of its opening quote
/// and its number of hashes. `r#type` (a raw identifier) is not one.
fn raw_string_start(s: &[char], i: usize) -> Option<(usize, usize)> {
    let mut j = i;
    if matches!(s.get(j), Some('b' | 'c')) {
        j += 1;
    }
    if s.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = s[j..].iter().take_while(|c| **c == '#').count();
    (s.get(j + hashes) == Some(&'"')).then_some((j + hashes, hashes))
}

// ---------------------------------------------------------------------------------------------
// Tests of the lexer and of each check on small made-up files, so a check cannot pass by
// seeing nothing.
// ---------------------------------------------------------------------------------------------

mod self_tests {
    use super::*;

    fn lits(src: &str) -> Vec<String> {
        lex(src).lits.into_iter().map(|l| l.text).collect()
    }

    /// A made-up file from its lines.
    fn src(lines: &[&str]) -> String {
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    fn file(rel: &str, text: &str) -> SourceFile {
        SourceFile::new(rel, text)
    }

    #[test]
    fn lexer_strings_with_escapes() {
        let l = lex("let a = \"x\\\"y\"; let b = \"\\\\\"; c");
        assert_eq!(
            l.lits,
            vec![Lit { line: 1, text: "x\\\"y".into() }, Lit { line: 1, text: "\\\\".into() }]
        );
        assert!(l.code.ends_with("; c"), "{}", l.code);
        assert_eq!(l.code.len(), "let a = \"x\\\"y\"; let b = \"\\\\\"; c".len());
    }

    #[test]
    fn lexer_raw_strings() {
        assert_eq!(lits(r###"f(r#"a "quoted" b"#, r"c\", br"d")"###), ["a \"quoted\" b", "c\\", "d"]);
        // A raw identifier is not a raw string.
        assert_eq!(lits("let r#type = 1; let s = \"x\";"), ["x"]);
    }

    #[test]
    fn lexer_chars_and_lifetimes() {
        assert_eq!(lits("let q = '\"'; let s = \"baseline\";"), ["baseline"]);
        assert_eq!(lits("let q = '\\''; let e = '\\u{1F600}'; let s = \"x\";"), ["x"]);
        assert_eq!(
            lits("fn f<'a>(x: &'a str) -> &'a str { 'l: loop {}; \"launch-blocking\" }"),
            ["launch-blocking"]
        );
        assert_eq!(lits("let b = b'\"'; let c = '{';"), Vec::<String>::new());
        assert!(!lex("let c = '{';").code.contains('{'));
    }

    #[test]
    fn lexer_comments() {
        let l = lex("a // println!(\"x\")\n/* outer /* \"inner\" */ still */ b\n/// doc \"d\"\nc");
        assert!(l.lits.is_empty(), "{:?}", l.lits);
        assert!(!l.code.contains("println"));
        assert_eq!(l.code.lines().count(), 4);
        assert!(l.code.ends_with("\nc"));
    }

    #[test]
    fn lexer_lines_of_multiline_strings() {
        let l = lex("\"a\nb\"\nlet x = \"summary.md\";");
        assert_eq!(l.lits[1], Lit { line: 3, text: "summary.md".into() });
        assert_eq!(l.code.lines().count(), 3);
    }

    #[test]
    fn lexer_unterminated_input_does_not_panic() {
        for src in ["\"abc", "r#\"abc", "'", "'\\", "/* x", "b'", "r#"] {
            lex(src);
        }
    }

    #[test]
    fn cfg_test_items_are_left_out() {
        let f = file(
            "findings/mod.rs",
            &src(&[
                "//! x",
                "#[cfg(test)]",
                "macro_rules! m {",
                "    () => { println!(\"{\") };",
                "}",
                "fn f() { eprintln!(\"real\"); }",
                "#[cfg(test)]",
                "mod tests {",
                "    fn g() { println!(\"baseline\"); }",
                "}",
            ]),
        );
        let v = check_prints(&[f]);
        assert_eq!(v, ["xtask/src/findings/mod.rs:6: `eprintln!` outside ui/: only `crate::ui` prints"]);
        let f = file(
            "ladder/driver.rs",
            "//! x\nfn f() {}\n#[cfg(test)]\nmod tests {\n    const R: &str = \"coredump\";\n}\n",
        );
        assert!(check_rung_names(&[f]).iter().all(|v| v.starts_with("tests/tidy.rs")));
    }

    #[test]
    fn function_lengths_are_counted_from_fn_to_its_closing_brace() {
        let code = lex(&src(&[
            "//! x",
            "fn short() -> impl Fn(u8) -> u8 { |x| x }",
            "pub(crate) fn long<T: Into<Vec<u8>>>(",
            "    f: fn(u8) -> u8,",
            ") -> Result<(), String>",
            "where",
            "    T: Clone,",
            "{",
            "    let s = \"}\"; // }",
            "    fn inner() {",
            "        if true { }",
            "    }",
            "}",
            "trait T { fn declared(&self); fn provided(&self) {} }",
        ]))
        .code;
        let lens: Vec<(usize, String, usize)> = fn_lengths(&code);
        let named: Vec<(usize, &str, usize)> = lens.iter().map(|(l, n, k)| (*l, n.as_str(), *k)).collect();
        assert_eq!(named, [(2, "short", 1), (3, "long", 11), (10, "inner", 3), (14, "provided", 1)]);
    }

    #[test]
    fn files_and_functions_over_the_caps_are_reported() {
        let long_fn = format!("//! x\nfn f() {{\n{}}}\n", "    g();\n".repeat(4));
        let tests =
            format!("//! x\nfn f() {{}}\n#[cfg(test)]\nmod tests {{\n{}}}\n", "fn t() {}\n".repeat(20));
        let files = [file("a.rs", &long_fn), file("b.rs", &tests), file("c.rs", &"//! x\n".repeat(8))];
        assert_eq!((files[0].code_lines, files[1].code_lines), (7, 2));
        assert_eq!(
            check_sizes(&files, 7, 5, &[]),
            [
                "xtask/src/a.rs:2: fn `f` is 6 lines, over 5",
                "xtask/src/c.rs:1: 8 lines (tests aside), over 7"
            ]
        );
        // At the caps, nothing; an allowed entry quiets its item, and a stale one is reported.
        assert_eq!(check_sizes(&files, 8, 6, &[]), Vec::<String>::new());
        let allowed =
            [("xtask/src/a.rs::f", 6, "why"), ("xtask/src/c.rs", 8, "why"), ("xtask/src/b.rs", 9, "stale")];
        assert_eq!(
            check_sizes(&files, 7, 5, &allowed),
            ["tests/tidy.rs: SIZE_ALLOWED entry xtask/src/b.rs is not over its cap any more: remove it"]
        );
        // Over its ceiling: reported, the ceiling named.
        let low = [("xtask/src/a.rs::f", 5, "why"), ("xtask/src/c.rs", 8, "why")];
        assert_eq!(
            check_sizes(&files, 7, 5, &low),
            ["xtask/src/a.rs:2: fn `f` is 6 lines, over 5, and over its SIZE_ALLOWED ceiling of 5: split it, do not raise the ceiling"]
        );
    }

    #[test]
    fn files_declared_under_cfg_test_are_left_out() {
        let files = mark_test_files(vec![
            file("findings/gdb/mod.rs", "//! x\nmod parser;\n#[cfg(test)]\nmod tests;\n"),
            file("findings/gdb/parser.rs", "//! x\nfn f() { println!(\"no\"); }\n"),
            file("findings/gdb/tests.rs", "//! x\nfn g() { println!(\"baseline\"); }\n"),
            file("commands/bench.rs", "//! x\n#[cfg(test)]\nmod checks;\n"),
            file("commands/bench/checks/mod.rs", "//! x\nmod deep;\nfn h() { dbg!(1); }\n"),
            file("commands/bench/checks/deep.rs", "//! x\nfn i() { dbg!(1); }\n"),
        ]);
        assert_eq!(
            check_prints(&files),
            ["xtask/src/findings/gdb/parser.rs:2: `println!` outside ui/: only `crate::ui` prints"]
        );
        assert!(files[2].lits.is_empty() && files[2].code.lines().count() == 2);
        assert_eq!(check_module_docs(&files), Vec::<String>::new());
    }

    #[test]
    fn layering_reports_upward_and_sideways_imports() {
        let files = [
            file("model/exit.rs", "//! x\nuse crate::ui;\nuse crate::model::rung::RungId;\n"),
            file(
                "ladder/driver.rs",
                &src(&[
                    "//! x",
                    "use crate::{",
                    "    model::{Exit, RungId},",
                    "    doctor, self,",
                    "};",
                    "fn f() { crate::ui::status(1); crate::foo::bar(); }",
                ]),
            ),
            file("findings/scan.rs", "//! x\n// use crate::redact;\n/// [`crate::redact`]\nfn f() {}\n"),
            file("ui.rs", "//! x\npub(crate) fn f() { let _ = \"crate::cli\"; }\n"),
            file("lib.rs", "//! x\npub use crate::cli::main;\n"),
        ];
        let v = check_layering(&files);
        assert_eq!(v.len(), 3, "{v:#?}");
        assert!(
            v[0].starts_with("xtask/src/model/exit.rs:2: `model` (level 8) uses `crate::ui` (level 7)"),
            "{}",
            v[0]
        );
        assert!(
            v[1].starts_with(
                "xtask/src/ladder/driver.rs:4: `ladder` (level 2) uses `crate::doctor` (level 2), \
             which is beside it"
            ),
            "{}",
            v[1]
        );
        assert!(
            v[2].starts_with("xtask/src/ladder/driver.rs:6: `crate::foo` is not a top module"),
            "{}",
            v[2]
        );
    }

    #[test]
    fn layering_reports_unknown_modules_and_super_chains() {
        let files = [
            file("rungs/mod.rs", "//! x\nuse super::exec;\n"),
            file("ladder/rung/memcheck.rs", "//! x\nuse super::super::plan::Plan;\n"),
            file("ladder/plan.rs", "//! x\nuse super::super::doctor;\n"),
            file("cli.rs", "//! x\nuse super::ladder;\n"),
        ];
        let v = check_layering(&files);
        assert_eq!(v.len(), 4, "{v:#?}");
        assert!(
            v[0].starts_with("xtask/src/rungs/mod.rs:1: top module `rungs` is not in the layer table"),
            "{}",
            v[0]
        );
        assert!(v[1].starts_with("xtask/src/rungs/mod.rs:2: super:: reaches out of `rungs`"), "{}", v[1]);
        assert!(v[2].starts_with("xtask/src/ladder/plan.rs:2: super::super:: reaches out"), "{}", v[2]);
        assert!(v[3].starts_with("xtask/src/cli.rs:2: super:: reaches out"), "{}", v[3]);
    }

    #[test]
    fn spawns_outside_process_are_reported() {
        let files = [
            file(
                "commands/run.rs",
                "//! x\nfn f() {\n    let c = std::process::Command::new(\"ls\");\n    c.spawn();\n}\n",
            ),
            file(
                "doctor/mod.rs",
                "//! x\nfn f() {\n    let o = cmd!(sh, \"nvidia-smi\");\n    let e = duct::cmd(\"x\");\n}\n",
            ),
            file(
                "ladder/driver.rs",
                "//! x\nfn f() { std::thread::spawn(|| {}); s.spawn(|| {}); h.spawn(); }\n",
            ),
            file(
                "process/mod.rs",
                "//! x\nuse std::process::Command;\nfn f() { Command::new(\"x\").spawn(); }\n",
            ),
            file("ui.rs", "//! x\n// Command::new(\nfn f() { let s = \"Command::new(\"; }\n"),
        ];
        let v = check_spawns(&files);
        assert_eq!(v.len(), 4, "{v:#?}");
        assert!(v[0].starts_with("xtask/src/commands/run.rs:3: `Command::new(`"));
        assert!(v[1].starts_with("xtask/src/commands/run.rs:4: `.spawn()`"));
        assert!(v[2].starts_with("xtask/src/doctor/mod.rs:3: `cmd!(`"));
        assert!(v[3].starts_with("xtask/src/doctor/mod.rs:4: `duct::cmd`"));
    }

    #[test]
    fn prints_outside_ui_are_reported() {
        let files = [
            file(
                "commands/analyze.rs",
                &src(&[
                    "//! println! in a doc",
                    "// eprintln!(\"no\")",
                    "fn f() {",
                    "    let s = \"println!\";",
                    "    eprint!(\"x\");",
                    "    writeln!(std::io::stderr(), \"x\");",
                    "    dbg!(1);",
                    "}",
                ]),
            ),
            file("ui/mod.rs", "//! x\nfn f() { println!(\"ok\"); }\n"),
        ];
        let v = check_prints(&files);
        assert_eq!(v.len(), 3, "{v:#?}");
        assert!(v[0].starts_with("xtask/src/commands/analyze.rs:5: `eprint!(`"));
        assert!(v[1].starts_with("xtask/src/commands/analyze.rs:6: `std::io::stderr(`"));
        assert!(v[2].starts_with("xtask/src/commands/analyze.rs:7: `dbg!(`"));
    }

    #[test]
    fn rung_names_are_read_from_the_model_table() {
        let text = src(&[
            "//! x",
            "const X: &str = \"nope\";",
            "rung_ids! {",
            "    ladder {",
            "        /// The target as it is: `{x}`.",
            "        Baseline = \"baseline\", needs [], options [];",
            "        LaunchBlocking = \"launch-blocking\", needs [Nvcc], options [args];",
            "    }",
            "    beside {",
            "        Dump = \"dump\", needs [PySpy];",
            "    }",
            "}",
            "const Y: &str = \"after\", needs [",
        ]);
        assert_eq!(table_names(&text), ["baseline", "launch-blocking", "dump"]);
        let real = rung_names();
        for name in ["baseline", "launch-blocking", "racecheck", "synccheck", "hang", "dump"] {
            assert!(real.iter().any(|n| n == name), "{name} not in {real:?}");
        }
    }

    #[test]
    fn rung_names_outside_model_are_reported() {
        let files = [
            file(
                "ladder/policy.rs",
                &src(&[
                    "//! \"baseline\"",
                    "fn f() -> &'static str {",
                    "    \"launch-blocking\"",
                    "}",
                    "// \"attach\"",
                    "const A: &str = \"attached\";",
                ]),
            ),
            file("ladder/rung/memcheck.rs", "//! x\nconst TOOL: &str = \"memcheck\";\n"),
            file("model/rung.rs", "//! x\nconst NAMES: &[&str] = &[\"baseline\", \"coredump\"];\n"),
        ];
        // Only the memcheck entry's file is among these: the other entries are stale here.
        let (stale, found): (Vec<String>, Vec<String>) =
            check_rung_names(&files).into_iter().partition(|m| m.contains("matches nothing any more"));
        assert_eq!(found, ["xtask/src/ladder/policy.rs:3: rung name \"launch-blocking\" outside model/"]);
        assert_eq!(stale.len(), RUNG_NAME_ALLOWED.len() - 1, "{stale:?}");
        let stale = check_rung_names(&files[2..]);
        assert_eq!(stale.len(), RUNG_NAME_ALLOWED.len());
        assert!(stale.iter().all(|s| s.contains("matches nothing any more")), "{stale:?}");
    }

    #[test]
    fn bundle_paths_outside_layout_are_reported() {
        let files = [
            file(
                "commands/report.rs",
                &src(&[
                    "//! summary.md",
                    "fn f() {",
                    "    let a = \"summary.md\";",
                    "    let b = format!(\"{}/SHA256SUMS\", d);",
                    "    let c = r\"rungs/baseline\";",
                    "    let d = \"my-env/\";",
                    "}",
                ]),
            ),
            file("bundle/layout.rs", "//! x\npub const SUMMARY: &str = \"summary.md\";\n"),
        ];
        let v = check_bundle_paths(&files);
        assert_eq!(v.len(), 3, "{v:#?}");
        assert!(v[0].starts_with("xtask/src/commands/report.rs:3: bundle path `summary.md`"));
        assert!(v[1].starts_with("xtask/src/commands/report.rs:4: bundle path `SHA256SUMS`"));
        assert!(v[2].starts_with("xtask/src/commands/report.rs:5: bundle path `rungs/`"));
    }

    #[test]
    fn exit_numbers_outside_cli_are_reported() {
        let files = [
            file(
                "commands/run.rs",
                &src(&[
                    "//! 130",
                    "pub const EXIT_STOPPED: i32 = 3;",
                    "fn f() {",
                    "    std::process::exit(1);",
                    "    let a = 130u8;",
                    "    let b = (1300, 0.130, t.130, v130, 0..1_30);",
                    "}",
                ]),
            ),
            file("cli.rs", "//! x\npub const EXIT_INTERRUPTED: i32 = 130;\n"),
            file("main.rs", "//! x\nfn main() { std::process::exit(xtask::cli::main()); }\n"),
        ];
        let v = check_exit_numbers(&files);
        assert_eq!(v.len(), 4, "{v:#?}");
        assert!(v[0].starts_with("xtask/src/commands/run.rs:2: `const EXIT_`"));
        assert!(v[1].starts_with("xtask/src/commands/run.rs:4: `std::process::exit(`"));
        assert!(v[2].starts_with("xtask/src/commands/run.rs:5: exit number 130"));
        assert!(v[3].starts_with("xtask/src/commands/run.rs:6: exit number 130"));
        assert!(!has_int("(1300, 0.130, t.130, v130, 1_301)", 130));
    }

    #[test]
    fn files_without_doc_comments_are_reported() {
        let files = [
            file("a.rs", "\n\n//! fine\n"),
            file("b.rs", "// not a doc\n//! late\n"),
            file("c.rs", "/// item doc\nfn f() {}\n"),
            file("d.rs", ""),
        ];
        let v = check_module_docs(&files);
        assert_eq!(v.len(), 3, "{v:#?}");
        assert!(v[0].starts_with("xtask/src/b.rs:1:"));
        assert!(v[1].starts_with("xtask/src/c.rs:1:"));
        assert!(v[2].starts_with("xtask/src/d.rs:1:"));
    }

    #[test]
    fn unexplained_and_unused_dependencies_are_reported() {
        let manifest = src(&[
            "[package]",
            "name = \"xtask\"",
            "",
            "[dependencies]",
            "# Errors.",
            "anyhow = \"1\"",
            "serde = { version = \"1\", features = [",
            "    \"derive\",",
            "] }",
            "# YAML.",
            "serde_yaml = { package = \"yaml_serde\", version = \"0.10\" }",
            "# Unused.",
            "quick-xml = \"0.42\"",
            "# In a comment only.",
            "walkdir = \"2\"",
            "",
            "[dev-dependencies]",
            "insta = \"1\"",
        ]);
        let files = [
            file(
                "a.rs",
                "//! x\nuse anyhow::Context;\n#[derive(Serialize)]\nstruct S;\n// walkdir::WalkDir\n",
            ),
            file(
                "b.rs",
                "//! x\nfn f() { serde_yaml::from_str(\"\"); }\n#[cfg(test)]\nmod tests { use quick_xml; }\n",
            ),
        ];
        let v = check_dependencies(&manifest, &files);
        assert_eq!(
            v,
            [
                "xtask/Cargo.toml:7: dependency `serde` has no `#` comment line above it giving its reason",
                "xtask/Cargo.toml:13: dependency `quick-xml` is not used by non-test code under \
                 xtask/src (no `quick_xml::`, no `use quick_xml`)",
                "xtask/Cargo.toml:15: dependency `walkdir` is not used by non-test code under \
                 xtask/src (no `walkdir::`, no `use walkdir`)",
            ]
        );
    }

    /// The edges of the import graph as `from -> to` (paths under src).
    fn edges(files: &[SourceFile]) -> Vec<String> {
        let (nodes, edges) = import_graph(files);
        let mut out = Vec::new();
        for (from, to) in edges.iter().enumerate() {
            out.extend(to.iter().map(|(to, _)| format!("{} -> {}", nodes[from].rel, nodes[*to].rel)));
        }
        out
    }

    #[test]
    fn import_cycle_of_two_files_through_super_is_reported() {
        let files = [
            file("ladder/mod.rs", "//! x\npub mod driver;\npub mod plan;\n"),
            file("ladder/driver.rs", "//! x\nuse super::plan;\n"),
            file("ladder/plan.rs", &src(&["//! x", "use super::{", "    driver::Climb,", "};"])),
        ];
        assert_eq!(
            check_import_cycles(&files),
            ["cycle: xtask/src/ladder/driver.rs -> xtask/src/ladder/plan.rs -> xtask/src/ladder/driver.rs \
              (at xtask/src/ladder/driver.rs:2, xtask/src/ladder/plan.rs:3)"]
        );
    }

    #[test]
    fn a_parent_and_its_child_are_a_cycle_only_when_both_import() {
        let child = || file("bundle/writer.rs", "//! x\nuse super::Manifest;\npub struct Bundle;\n");
        // Declaring the child is no import; nor are comments, strings and test code.
        let declares = file("bundle/mod.rs", "//! x\nmod writer;\npub struct Manifest;\n");
        assert_eq!(edges(&[declares, child()]), ["bundle/writer.rs -> bundle/mod.rs"]);
        let quiet = file(
            "bundle/mod.rs",
            &src(&[
                "//! x",
                "mod writer;",
                "// pub use writer::Bundle;",
                "const S: &str = \"writer::Bundle\";",
                "pub struct Manifest;",
                "#[cfg(test)]",
                "mod tests {",
                "    use super::writer::Bundle;",
                "}",
            ]),
        );
        assert_eq!(check_import_cycles(&[quiet, child()]), Vec::<String>::new());
        for parent in [
            "//! x\nmod writer;\npub use writer::Bundle;\npub struct Manifest;\n",
            "//! x\npub(crate) mod writer;\nfn f() { writer::Bundle::new(); }\n",
            "//! x\nmod writer;\nuse self::writer::Bundle;\n",
        ] {
            assert_eq!(
                check_import_cycles(&[file("bundle/mod.rs", parent), child()]),
                ["cycle: xtask/src/bundle/mod.rs -> xtask/src/bundle/writer.rs -> xtask/src/bundle/mod.rs \
                  (at xtask/src/bundle/mod.rs:3, xtask/src/bundle/writer.rs:2)"],
                "{parent}"
            );
        }
    }

    #[test]
    fn import_paths_resolve_to_the_longest_prefix_that_is_a_file() {
        let files = [
            file("cli.rs", "//! x\nuse crate::{ui, ladder::{self, rung::{attach::Attach, Step}}};\n"),
            file("ladder/mod.rs", "//! x\npub mod rung;\n"),
            file("ladder/rung/mod.rs", "//! x\nmod attach;\n"),
            file("ladder/rung/attach.rs", "//! x\nfn f() { crate::model::exit::Exit::code(); }\n"),
            file("model/mod.rs", "//! x\npub mod exit;\n"),
            file("model/exit.rs", "//! x\nfn f() { crate::ladder::rung::attach::run::<u8>(); }\n"),
            file("ui.rs", "//! x\n"),
            file("lib.rs", "//! x\npub mod cli;\npub use crate::cli::main;\n"),
        ];
        assert_eq!(
            edges(&files),
            [
                "cli.rs -> ladder/mod.rs",
                "cli.rs -> ladder/rung/attach.rs",
                "cli.rs -> ladder/rung/mod.rs",
                "cli.rs -> ui.rs",
                "ladder/rung/attach.rs -> model/exit.rs",
                "model/exit.rs -> ladder/rung/attach.rs",
            ]
        );
        assert_eq!(
            check_import_cycles(&files),
            ["cycle: xtask/src/ladder/rung/attach.rs -> xtask/src/model/exit.rs -> \
              xtask/src/ladder/rung/attach.rs (at xtask/src/ladder/rung/attach.rs:2, \
              xtask/src/model/exit.rs:2)"]
        );
    }

    #[test]
    fn import_paths_to_no_file_are_ignored() {
        // With no ladder/mod.rs, `super::gone` names no file (with one, it would name that).
        let files = [
            file(
                "ladder/driver.rs",
                &src(&[
                    "//! x",
                    "use crate::nothing::here;",
                    "use super::gone::{Gone, self};",
                    "use super::super::super::above_the_root;",
                    "use anyhow::Result;",
                    "pub(in crate::ladder) fn f() { $crate::ladder::g(); std::process::id(); }",
                    "pub(crate) fn g(self) -> Self { Self::new(self::h()) }",
                    "fn h() {}",
                ]),
            ),
            file("ladder/plan.rs", "//! x\n"),
        ];
        assert_eq!(edges(&files), Vec::<String>::new());
    }

    #[test]
    fn import_cycles_of_more_files_are_reported_once_each() {
        let files = [
            file("a.rs", "//! x\nuse crate::b;\n"),
            file("b.rs", "//! x\nuse crate::c;\nuse crate::d;\n"),
            file("c.rs", "//! x\nuse crate::a;\n"),
            file("d.rs", "//! x\nuse crate::b;\n"),
            file("e.rs", "//! x\nuse crate::f;\n"),
            file("f.rs", "//! x\nuse crate::{e, a};\n"),
        ];
        assert_eq!(
            check_import_cycles(&files),
            [
                "cycle: xtask/src/a.rs -> xtask/src/b.rs -> xtask/src/c.rs -> xtask/src/a.rs (at \
                 xtask/src/a.rs:2, xtask/src/b.rs:2, xtask/src/c.rs:2); also in this tangle: xtask/src/d.rs",
                "cycle: xtask/src/e.rs -> xtask/src/f.rs -> xtask/src/e.rs (at xtask/src/e.rs:2, \
                 xtask/src/f.rs:2)",
            ]
        );
    }
}

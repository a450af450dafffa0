//! Every command README.md and docs/*.md show (issue 24): extracted from their code blocks
//! (`cargo xtask …` and the installed `debug-ima …`, continuation lines joined, `#` comments
//! cut), each is accepted by the command line parser as written; and each that climbs the
//! ladder (`debug-ima [run] …`, `cargo xtask debug-ima …`) also makes its `--dry-run` plan
//! from a scratch project holding the files the examples name (`./app`, `repro.py`, a recipe
//! file, `$HOME/src/vllm`), under a fake Slurm allocation where it asks for the Slurm launcher.
//! A command with a placeholder (`<bundle>`, `...`, `PID`) is parsed with the placeholder
//! filled, never skipped unseen: the test lists what it ran.
//!
//! Must not: run a target, a build or a container (the plan only), or pass without having
//! read at least the README's commands.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;
use support::root;

/// One command of the docs: where it is, and its words.
#[derive(Debug)]
struct Documented {
    place: String,
    words: Vec<String>,
}

/// The lines of fenced code blocks and of indented ones, with their line numbers.
fn code_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || line.starts_with("    ") {
            out.push((i + 1, t.to_string()));
        }
    }
    out
}

/// Shell words of a command line: quotes, backslashes, `$HOME` and `~/` expanded to `home`,
/// a `#` comment cut; `None` for what this small splitter does not take (a pipe, a
/// redirection, a subshell), which the caller reports.
fn words(line: &str, home: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut any = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                any = true;
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                    cur.push(d);
                }
            }
            '"' => {
                any = true;
                while let Some(d) = chars.next() {
                    match d {
                        '"' => break,
                        '\\' => cur.extend(chars.next()),
                        '$' if chars.clone().take(4).collect::<String>() == "HOME" => {
                            chars.nth(3);
                            cur.push_str(home);
                        }
                        d => cur.push(d),
                    }
                }
            }
            '\\' => {
                any = true;
                cur.extend(chars.next());
            }
            '#' if !any => break,
            '|' | '>' | '<' | ';' | '&' | '`' | '(' if !any => return None,
            ' ' | '\t' => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            '$' => {
                let rest: String = chars.clone().take(4).collect();
                any = true;
                if rest == "HOME" {
                    chars.nth(3);
                    cur.push_str(home);
                } else {
                    cur.push('$');
                }
            }
            '~' if !any && chars.peek() == Some(&'/') => {
                any = true;
                cur.push_str(home);
            }
            c => {
                any = true;
                cur.push(c);
            }
        }
    }
    if any {
        out.push(cur);
    }
    Some(out)
}

/// The commands of one document.
fn commands_in(file: &Path, home: &str, unsplit: &mut Vec<String>) -> Vec<Documented> {
    let text = std::fs::read_to_string(file).unwrap();
    let name = file.strip_prefix(root()).unwrap_or(file).display().to_string();
    let mut out = Vec::new();
    let lines = code_lines(&text);
    let mut i = 0;
    while i < lines.len() {
        let (no, first) = &lines[i];
        let mut joined = first.trim_start_matches("$ ").to_string();
        while joined.ends_with('\\') && i + 1 < lines.len() {
            joined.pop();
            i += 1;
            joined.push(' ');
            joined.push_str(lines[i].1.trim());
        }
        i += 1;
        let starts = joined.starts_with("cargo xtask ") || joined.starts_with("debug-ima ");
        // A synopsis (`[--json] PATH...`, `NAME|PATH`) is the help's, not a command to type.
        if !starts || joined.contains('[') || joined.contains('|') && joined.contains("NAME|PATH") {
            continue;
        }
        // `<bundle>` is a placeholder, not a redirection.
        let joined = joined.replace("<bundle>", "BUNDLE");
        match words(&joined, home) {
            Some(w) => out.push(Documented { place: format!("{name}:{no}"), words: w }),
            None if joined.contains(" > ") || joined.contains(" | ") => {
                // `… > issue.md`, `… | jq`: the command before the redirection or the pipe.
                let head = joined.split([' ']).collect::<Vec<_>>();
                let cut = head.iter().position(|w| *w == ">" || *w == "|").unwrap_or(head.len());
                if let Some(w) = words(&head[..cut].join(" "), home) {
                    out.push(Documented { place: format!("{name}:{no}"), words: w });
                }
            }
            None => unsplit.push(format!("{name}:{no}: {joined}")),
        }
    }
    out
}

/// The argument vector the binary gets: `cargo xtask X` runs `xtask X`; the installed
/// `debug-ima X` is the same binary under that name, whose main job is the default command.
fn argv(d: &Documented) -> Vec<String> {
    let rest: Vec<String> = if d.words[0] == "cargo" { d.words[2..].to_vec() } else { d.words[1..].to_vec() };
    let mut v = vec!["debug-ima".to_string()];
    v.extend(rest);
    v
}

/// Placeholders filled with what the scratch project holds.
fn filled(args: &[String], bundle: &str) -> Vec<String> {
    args.iter()
        .filter(|a| a.as_str() != "...")
        .map(|a| {
            a.replace("bundles/BUNDLE", bundle)
                .replace("BUNDLE", bundle)
                .replace("bundles/2026-11-30T10-00-00Z_demo", bundle)
                .replace("PID", "1")
        })
        .collect()
}

/// Whether a parsed command climbs the ladder (and so has a `--dry-run` plan).
fn climbs(args: &[String]) -> bool {
    let mut i = 1;
    while i < args.len() {
        match args[i].as_str() {
            "-C" | "--color" => i += 2,
            "run" | "debug-ima" => return true,
            a => return a.starts_with('-'),
        }
    }
    false
}

/// A scratch project with what the examples name.
fn project(home: &Path) -> PathBuf {
    let p = home.join("project");
    for d in ["path/to", "build"] {
        std::fs::create_dir_all(p.join(d)).unwrap();
    }
    std::fs::create_dir_all(home.join("src/vllm")).unwrap();
    std::fs::create_dir_all(home.join("src/my-cuda-project")).unwrap();
    std::fs::create_dir_all(home.join("src/debug-ima/containers")).unwrap();
    std::fs::copy(
        root().join("containers/vllm-image.yaml"),
        home.join("src/debug-ima/containers/vllm-image.yaml"),
    )
    .unwrap();
    for f in ["app", "flaky", "build/app"] {
        std::fs::write(p.join(f), "#!/bin/sh\nexit 0\n").unwrap();
    }
    for f in ["repro.py", "train.py", "Makefile"] {
        std::fs::write(p.join(f), "\n").unwrap();
    }
    std::fs::copy(root().join("recipes/demo.yaml"), p.join("path/to/recipe.yaml")).unwrap();
    // docs/recipes.md's first recipe, as the reader writes it.
    let doc = std::fs::read_to_string(root().join("docs/recipes.md")).unwrap();
    let first = doc
        .split("```yaml\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .find(|b| b.contains("name: my-app"))
        .expect("docs/recipes.md shows `my-app`");
    std::fs::write(p.join("my-app.yaml"), first).unwrap();
    std::fs::create_dir_all(p.join("recipes")).unwrap();
    std::fs::copy(root().join("recipes/cuda.yaml"), p.join("recipes/cuda.yaml")).unwrap();
    p
}

#[test]
fn every_documented_command_parses_and_every_climb_makes_its_plan() {
    let scratch = support::Scratch::for_run("docs-commands");
    let home = scratch.path("home");
    std::fs::create_dir_all(&home).unwrap();
    let home_s = home.display().to_string();
    let cwd = project(&home);
    let bundle = root().join("tests/fixtures/bundles/armed/unchecked_launch").display().to_string();
    let mut files = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> =
        std::fs::read_dir(root().join("docs")).unwrap().flatten().map(|e| e.path()).collect();
    docs.sort();
    files.extend(docs.into_iter().filter(|p| p.extension().is_some_and(|e| e == "md")));
    let mut unsplit = Vec::new();
    let all: Vec<Documented> = files.iter().flat_map(|f| commands_in(f, &home_s, &mut unsplit)).collect();
    let readme = all.iter().filter(|d| d.place.starts_with("README.md")).count();
    assert!(readme >= 20, "only {readme} commands read from README.md: {all:#?}");
    let mut failures = Vec::new();
    let mut planned = 0;
    for d in &all {
        let args = filled(&argv(d), &bundle);
        let os: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        if let Err(e) = xtask::cli::Cli::try_parse_from(xtask::cli::with_default_command(os)) {
            failures.push(format!("{}: `{}` does not parse: {}", d.place, d.words.join(" "), e.render()));
            continue;
        }
        if !climbs(&args) || args.iter().any(|a| a == "--help") {
            continue;
        }
        // `--dry-run` before a `--`, after which every word is the target's.
        let mut run_args = args[1..].to_vec();
        if !run_args.iter().any(|a| a == "--dry-run") {
            let at = run_args.iter().position(|a| a == "--").unwrap_or(run_args.len());
            run_args.insert(at, "--dry-run".into());
        }
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
        cmd.args(&run_args).current_dir(&cwd).env("HOME", &home).env("NO_COLOR", "1");
        if args.iter().any(|a| a == "slurm") {
            // A fake allocation of two nodes, as a batch script's environment has it.
            cmd.env("SLURM_JOB_ID", "4242")
                .env("SLURM_JOB_NUM_NODES", "2")
                .env("SLURM_NNODES", "2")
                .env("SLURM_JOB_NODELIST", "node[1-2]")
                .env("SLURM_NTASKS", "2");
        }
        let out = cmd.output().unwrap();
        planned += 1;
        if !out.status.success() {
            failures.push(format!(
                "{}: `{}` --dry-run exits {:?}:\n{}{}",
                d.place,
                d.words.join(" "),
                out.status.code(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    eprintln!(
        "{} documented commands parsed, {planned} plans made; not split (pipes, subshells): {unsplit:#?}",
        all.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} documented commands fail as written:\n\n{}",
        failures.len(),
        all.len(),
        failures.join("\n\n")
    );
}

/// The README's lines that install the completion scripts and the manual page, run as written
/// (`sh -e`, comments and all) with the installed name on PATH and a fresh, empty `$HOME`
/// (issue 41: `debug-ima completions zsh > ~/.zfunc/_debug-ima` failed there, no folder); each
/// file they write is there and not empty.
#[test]
fn the_readme_s_install_lines_work_on_a_fresh_home() {
    let scratch = support::Scratch::for_run("install-lines");
    let home = scratch.path("home");
    let bin = scratch.path("bin");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_xtask"), bin.join("debug-ima")).unwrap();
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines: Vec<String> = code_lines(&readme)
        .into_iter()
        .map(|(_, l)| l)
        .filter(|l| l.starts_with("mkdir -p ~") || (l.starts_with("debug-ima ") && l.contains(" > ~/")))
        .collect();
    let written: Vec<String> = lines
        .iter()
        .filter_map(|l| l.split(" > ").nth(1))
        .map(|rest| rest.split_whitespace().next().unwrap().replacen('~', &home.display().to_string(), 1))
        .collect();
    assert!(written.len() >= 3, "the README's zsh, fish and man lines: {lines:?}");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new("sh")
        .args(["-e", "-c", &lines.join("\n")])
        .env("HOME", &home)
        .env("PATH", path)
        .current_dir(&home)
        .output()
        .unwrap();
    assert!(out.status.success(), "{lines:#?}\n{}", String::from_utf8_lossy(&out.stderr));
    for f in written {
        let len = std::fs::metadata(&f).map(|m| m.len()).unwrap_or(0);
        assert!(len > 0, "{f} not written by {lines:#?}");
    }
}

/// The sample outputs of README.md and docs/*.md are the current binary's (issue 41: the
/// README's predated it). A sample is the code block after a line `<!-- output of: debug-ima
/// ARGS -->`; the test runs `ARGS` from the clone's root with the binary and compares what it
/// printed on stdout with the block. `DEBUG_IMA_BLESS=1` writes the output into the documents
/// instead (then review the diff).
#[test]
fn the_documents_sample_outputs_are_the_current_binary_s() {
    const MARK: &str = "<!-- output of: debug-ima ";
    let bless = std::env::var("DEBUG_IMA_BLESS").is_ok_and(|v| v == "1");
    let mut files = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> =
        std::fs::read_dir(root().join("docs")).unwrap().flatten().map(|e| e.path()).collect();
    docs.sort();
    files.extend(docs.into_iter().filter(|p| p.extension().is_some_and(|e| e == "md")));
    let mut checked = 0;
    let mut stale = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut out: Vec<String> = Vec::new();
        let mut i = 0;
        while i < lines.len() {
            out.push(lines[i].to_string());
            let Some(args) = lines[i].strip_prefix(MARK).and_then(|r| r.strip_suffix(" -->")) else {
                i += 1;
                continue;
            };
            // The block: the indented lines that follow.
            let start = i + 1;
            let mut end = start;
            while end < lines.len() && (lines[end].starts_with("    ") || lines[end].is_empty()) {
                end += 1;
            }
            while end > start && lines[end - 1].is_empty() {
                end -= 1;
            }
            let shown: Vec<String> =
                lines[start..end].iter().map(|l| l.strip_prefix("    ").unwrap_or(l).to_string()).collect();
            let o = Command::new(env!("CARGO_BIN_EXE_xtask"))
                .args(args.split_whitespace())
                .current_dir(root())
                .env("NO_COLOR", "1")
                .env_remove("COLUMNS")
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "{}: `{args}`: {}",
                file.display(),
                String::from_utf8_lossy(&o.stderr)
            );
            let printed: Vec<String> = String::from_utf8_lossy(&o.stdout)
                .trim_end()
                .lines()
                .map(|l| l.trim_end().to_string())
                .collect();
            if printed != shown {
                stale.push(format!(
                    "{}:{}: `debug-ima {args}` now prints:\n{}",
                    file.display(),
                    i + 1,
                    printed.join("\n")
                ));
            }
            out.extend(printed.iter().map(|l| if l.is_empty() { String::new() } else { format!("    {l}") }));
            checked += 1;
            i = end;
        }
        if bless {
            let mut new = out.join("\n");
            if text.ends_with('\n') {
                new.push('\n');
            }
            std::fs::write(&file, new).unwrap();
        }
    }
    assert!(checked >= 2, "the README's samples are marked: only {checked} found");
    assert!(
        bless || stale.is_empty(),
        "stale samples (DEBUG_IMA_BLESS=1 rewrites them):\n\n{}",
        stale.join("\n\n")
    );
}

//! `recipe init`: a commented recipe drafted for a project from what its folder holds, a
//! Makefile, a CMakeLists.txt or a Python script, so that a newcomer starts from a file that
//! loads rather than from a blank page. The command reads the folder and writes the file;
//! this file only looks at the texts it is given.
//!
//! Must not: read or write files, or guess silently: every guess is said in the draft's
//! comments and in [`Draft::guesses`].

/// What the command found in the folder: each file's name and text.
#[derive(Debug, Clone, Default)]
pub struct Project {
    /// The folder's name (the recipe's name, cleaned).
    pub folder: String,
    /// `Makefile`, `makefile` or `GNUmakefile`.
    pub makefile: Option<(String, String)>,
    pub cmake: Option<String>,
    /// `*.py` in the folder, sorted.
    pub scripts: Vec<(String, String)>,
}

/// A drafted recipe: its YAML, what it was made from, and what was guessed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draft {
    pub yaml: String,
    pub from: String,
    pub guesses: Vec<String>,
}

/// A recipe name from a folder's name: letters, digits, `-`, `_`, `.`, starting with a letter
/// or digit, at most 64 characters; `project` when nothing is left.
fn recipe_name(folder: &str) -> String {
    let cleaned: String = folder
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '-' })
        .skip_while(|c| !c.is_ascii_alphanumeric())
        .take(64)
        .collect();
    if cleaned.is_empty() {
        "project".into()
    } else {
        cleaned
    }
}

/// A YAML double-quoted string.
fn quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The program a Makefile builds: a `PROG`/`TARGET`/`BIN`/`EXE`/`APP` variable's plain value,
/// else the first rule's target that is a file name (the first prerequisite of `all:`).
pub fn makefile_program(text: &str) -> Option<String> {
    let plain = |v: &str| {
        let v = v.trim();
        (!v.is_empty() && !v.contains(['$', ' ', '%', '(']) && !v.starts_with('.')).then(|| v.to_string())
    };
    for line in text.lines() {
        let Some((name, value)) = line.split_once('=') else { continue };
        let name = name.trim_end_matches([':', '?', '+']).trim();
        if ["PROG", "TARGET", "BIN", "EXE", "APP", "PROGRAM"].contains(&name) {
            if let Some(v) = plain(value) {
                return Some(v);
            }
        }
    }
    for line in text.lines() {
        if line.starts_with(['\t', ' ', '#', '.']) || line.contains('=') {
            continue;
        }
        let Some((target, deps)) = line.split_once(':') else { continue };
        let target = target.split_whitespace().next().unwrap_or("");
        let skip = ["all", "clean", "install", "test", "check", "run", "default"];
        if target == "all" || target == "default" {
            if let Some(first) = deps.split_whitespace().next().and_then(plain) {
                return Some(first);
            }
            continue;
        }
        if !skip.contains(&target) {
            if let Some(t) = plain(target) {
                return Some(t);
            }
        }
    }
    None
}

/// The first `add_executable(NAME ...)` of a CMakeLists.txt.
pub fn cmake_program(text: &str) -> Option<String> {
    let i = text.find("add_executable(")?;
    let rest = &text[i + "add_executable(".len()..];
    let name = rest.split(|c: char| c.is_whitespace() || c == ')').find(|w| !w.is_empty())?;
    (!name.contains('$')).then(|| name.to_string())
}

/// The script to run of several: the first that runs as a program (`__main__`) and uses
/// PyTorch or Triton, else the first that runs as a program, else the first.
fn pick_script(scripts: &[(String, String)]) -> Option<&(String, String)> {
    let main = |t: &str| t.contains("__main__");
    let gpu = |t: &str| t.contains("import torch") || t.contains("import triton") || t.contains("from torch");
    scripts
        .iter()
        .find(|(_, t)| main(t) && gpu(t))
        .or_else(|| scripts.iter().find(|(_, t)| main(t)))
        .or_else(|| scripts.first())
}

const HOW: &str = "# Check it, then:\n\
#   debug-ima --recipe ./debug-ima.yaml --dry-run    # the plan: every command and environment\n\
#   debug-ima --recipe ./debug-ima.yaml              # the climb\n\
# Commands are split into words like a shell would, but never run through one; a word that\n\
# needs spaces is one list item. docs/recipes.md has every field (`rungs:` options, `collect:`).\n";

/// The draft for `p`; `None` when the folder has no Makefile, CMakeLists.txt or Python script.
pub fn draft(p: &Project) -> Option<Draft> {
    let name = recipe_name(&p.folder);
    let mut guesses = Vec::new();
    let (from, body) = if let Some((file, text)) = &p.makefile {
        let prog = makefile_program(text).unwrap_or_else(|| {
            guesses.push(format!("no program name found in {file}: `app` stands for it"));
            "app".into()
        });
        let body = format!(
            "# The build must recompile every CUDA source (`make -B`), so that the rebuild rung's\n\
             # NVCC_PREPEND_FLAGS=\"-lineinfo -g\" reaches every nvcc call.\n\
             version: 1\nname: {name}\ndescription: {}\npython: false\nbuild:\n  command: [\"make\", \"-B\"]\n  \
             timeout: 3600\n  binaries: [{}]\nrun:\n  # Add the arguments that make it fail.\n  command: [{}]\n",
            quoted(&format!("{name}: built with make, run as ./{prog}")),
            quoted(&prog),
            quoted(&format!("./{prog}"))
        );
        (file.clone(), body)
    } else if let Some(text) = &p.cmake {
        let prog = cmake_program(text).unwrap_or_else(|| {
            guesses.push("no add_executable() in CMakeLists.txt: `app` stands for the program".into());
            "app".into()
        });
        let body = format!(
            "# Configured into build/ and rebuilt from scratch (`--clean-first`), so that the rebuild\n\
             # rung's NVCC_PREPEND_FLAGS=\"-lineinfo -g\" reaches every nvcc call.\n\
             version: 1\nname: {name}\ndescription: {}\npython: false\nbuild:\n  command: [\"sh\", \"-c\", \
             \"cmake -S . -B build && cmake --build build --clean-first\"]\n  timeout: 3600\n  binaries: [{}]\n\
             run:\n  # Add the arguments that make it fail.\n  command: [{}]\n",
            quoted(&format!("{name}: built with CMake, run as ./build/{prog}")),
            quoted(&format!("build/{prog}")),
            quoted(&format!("./build/{prog}"))
        );
        ("CMakeLists.txt".to_string(), body)
    } else {
        let (script, _) = pick_script(&p.scripts)?;
        if p.scripts.len() > 1 {
            let others: Vec<&str> =
                p.scripts.iter().map(|(n, _)| n.as_str()).filter(|n| n != script).collect();
            guesses.push(format!(
                "ran {script}, of {} scripts (the others: {})",
                p.scripts.len(),
                others.join(", ")
            ));
        }
        let body = format!(
            "# `python: true`: unbuffered output, and memcheck without PyTorch's caching allocator.\n\
             version: 1\nname: {name}\ndescription: {}\npython: true\nrun:\n  # Add the arguments that make it \
             fail.\n  command: [\"python3\", {}]\n  timeout: 900\n",
            quoted(&format!("{name}: the Python program {script}")),
            quoted(script)
        );
        (script.clone(), body)
    };
    let mut yaml = format!("# A recipe for `{name}`, drafted by `debug-ima recipe init` from {from}.\n");
    for g in &guesses {
        yaml.push_str(&format!("# Guessed: {g}.\n"));
    }
    yaml.push_str(HOW);
    yaml.push_str(&body);
    Some(Draft { yaml, from, guesses })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn makefiles_name_their_program_by_variable_or_first_rule() {
        assert_eq!(
            makefile_program("NVCC ?= nvcc\nPROG := expert_offsets\n$(PROG): x.cu\n").as_deref(),
            Some("expert_offsets")
        );
        assert_eq!(makefile_program("TARGET = paged_kv\n").as_deref(), Some("paged_kv"));
        assert_eq!(
            makefile_program("all: rmsnorm\n\nrmsnorm: rmsnorm.cu\n\tnvcc -o $@ $<\n").as_deref(),
            Some("rmsnorm")
        );
        assert_eq!(makefile_program(".PHONY: clean\napp: a.cu\n").as_deref(), Some("app"));
        assert_eq!(makefile_program("%.o: %.cu\n\tnvcc\nclean:\n").as_deref(), None);
        assert_eq!(
            cmake_program("project(x)\nadd_executable(moe_step src/moe.cu)\n").as_deref(),
            Some("moe_step")
        );
        assert_eq!(cmake_program("add_executable(${NAME} a.cu)").as_deref(), None);
    }

    #[test]
    fn a_draft_says_what_it_guessed_and_names_the_project() {
        let p = Project {
            folder: "my proj".into(),
            scripts: vec![
                ("helpers.py".into(), "def f(): pass\n".into()),
                ("repro.py".into(), "import torch\nif __name__ == \"__main__\":\n    main()\n".into()),
            ],
            ..Project::default()
        };
        let d = draft(&p).unwrap();
        assert!(d.yaml.contains("name: my-proj\n"), "{}", d.yaml);
        assert!(d.yaml.contains("command: [\"python3\", \"repro.py\"]"), "{}", d.yaml);
        assert_eq!(d.guesses, ["ran repro.py, of 2 scripts (the others: helpers.py)"]);
        assert!(draft(&Project::default()).is_none());
    }
}

//! Recipes: the YAML files that say how to build and run a target. Strict parsing with
//! `file:line:column` errors (every one at once: `errors.rs`), `{variable}` expansion,
//! shell-like word splitting (never a shell), the built-in recipes, the text of `cargo xtask
//! recipe list|show|check`, and the drafts of `recipe init` ([`init`]).
//!
//! All YAML code of the project lives here. Must not: spawn processes, print, or write
//! files; it reads files only in [`load`] and [`check`].

mod dirs;
mod errors;
pub mod init;
mod parse;
mod show;
mod template;
mod types;
mod words;

pub use dirs::*;
pub use parse::*;
pub use show::*;
pub use template::*;
pub use types::*;
pub use words::*;

#[cfg(test)]
mod tests {
    use super::parse::*;
    use super::template::*;
    use super::types::*;
    use super::words::*;
    use crate::model::RungId;
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};

    fn words(s: &str) -> Vec<String> {
        split_words(s).unwrap()
    }

    #[test]
    fn split_words_like_a_shell() {
        assert_eq!(words("make -B"), ["make", "-B"]);
        assert_eq!(words("  a\t b \n c  "), ["a", "b", "c"]);
        assert_eq!(words("a 'b c' \"d e\""), ["a", "b c", "d e"]);
        assert_eq!(words("x'y'\"z\"w"), ["xyzw"]);
        assert_eq!(words("'' \"\""), ["", ""]);
        assert_eq!(words(r#"a\ b c\\d"#), ["a b", r"c\d"]);
        assert_eq!(words(r#""a\"b" "c\d" 'e\f'"#), [r#"a"b"#, r"c\d", r"e\f"]);
        assert_eq!(words("a \\\nb"), ["a", "b"]);
        assert_eq!(words("python -c 'print(1); import sys'"), ["python", "-c", "print(1); import sys"]);
        assert_eq!(words("a#b x~y"), ["a#b", "x~y"]);
        assert_eq!(words("'#' '~'"), ["#", "~"]);
        assert_eq!(words("{x}/bin"), ["{x}/bin"]);
        assert!(words("").is_empty());
        assert!(words("   ").is_empty());
    }

    /// The schema's `rungs:` keys are the rung ids' names: a recipe may give options to
    /// every rung, and to nothing else.
    #[test]
    fn every_rung_id_is_a_schema_key() {
        for id in RungId::ALL {
            let text = format!(
                "version: 1\nname: x\ndescription: x\nrun:\n  command: [\"t\"]\nrungs:\n  {}: {{ timeout: 5 }}\n",
                id.name()
            );
            let r = parse(&text, RecipeSource::Builtin("x".into()), PathBuf::from(".")).unwrap();
            assert_eq!(r.rung(id).and_then(|o| o.timeout), Some(5), "{id}");
        }
    }

    /// Every option a rung's line in `model/rung.rs` says it takes is one the parser reads,
    /// and the others are refused for it, naming the ones it takes.
    #[test]
    fn every_rung_takes_the_options_its_id_names() {
        let value = |key: &str| match key {
            "enabled" => "false",
            "timeout" => "7",
            "env" => "{ A: b }",
            "args" => "[x]",
            "debug" => "G",
            other => panic!("no sample value for `{other}`: add one here"),
        };
        let all = ["enabled", "timeout", "env", "args", "debug"];
        for id in RungId::ALL {
            for key in all {
                let text = format!(
                    "version: 1\nname: x\ndescription: x\nrun:\n  command: [\"t\"]\nrungs:\n  {}: {{ {key}: {} }}\n",
                    id.name(),
                    value(key)
                );
                let r = parse(&text, RecipeSource::Builtin("x".into()), PathBuf::from("."));
                if id.options().contains(&key) {
                    assert!(r.unwrap().rung(id).is_some(), "{id}.{key}");
                } else {
                    let e = format!("{:#}", r.unwrap_err());
                    let names: Vec<String> = id.options().iter().map(|k| format!("`{k}`")).collect();
                    assert!(
                        e.contains(&format!("unknown field `{key}`, expected one of {}", names.join(", "))),
                        "{e}"
                    );
                }
            }
            for key in id.options() {
                assert!(all.contains(key), "{id} takes `{key}`, which the parser does not read");
            }
        }
    }

    #[test]
    fn split_words_errors() {
        for (input, want) in [
            ("a 'b", "single quote is not closed"),
            ("a \"b", "double quote is not closed"),
            ("a\\", "backslash ends the line"),
            ("make && ./app", "`&` is shell syntax"),
            ("./app | tee log", "`|` is shell syntax"),
            ("./app > log", "`>` is shell syntax"),
            ("./app 2>&1", "`>` is shell syntax"),
            ("a; b", "`;` is shell syntax"),
            ("echo $HOME", "`$` (expansion)"),
            ("echo \"$HOME\"", "`$` (expansion)"),
            ("echo `date`", "backquote"),
            ("ls ~/x", "`~` at the start of a word"),
            ("make # comment", "`#` at the start of a word"),
            ("cmake -j$(nproc)", "`$` (expansion)"),
        ] {
            let e = format!("{:#}", split_words(input).unwrap_err());
            assert!(e.contains(want), "{input:?}: {e}");
        }
    }

    #[test]
    fn join_words_round_trips() {
        let cases: [&[&str]; 4] =
            [&["a", "b c", ""], &["it's", "\"q\"", "$x"], &["~", "#", "a\\b"], &["plain/path=1"]];
        for ws in cases {
            let line = join_words(ws);
            assert_eq!(split_words(&line).unwrap(), ws, "{line}");
        }
        assert_eq!(join_words(&["nvcc", "-o", "a b"]), "nvcc -o 'a b'");
    }

    #[test]
    fn templates_expand_and_escape() {
        let vars =
            BTreeMap::from([("a".to_string(), "1".to_string()), ("b_2".to_string(), "x y".to_string())]);
        assert_eq!(expand("{a}-{b_2}", &vars).unwrap(), "1-x y");
        assert_eq!(expand("{{a}}", &vars).unwrap(), "{a}");
        assert_eq!(expand("{{{a}}}", &vars).unwrap(), "{1}");
        assert_eq!(expand("x}y", &vars).unwrap(), "x}y");
        assert_eq!(expand("", &vars).unwrap(), "");
        assert!(format!("{:#}", expand("{c}", &vars).unwrap_err()).contains("unknown variable `{c}`"));
        for bad in ["{", "{a", "{}", "{ a }", "{a-b}", "x{1}"] {
            assert!(expand(bad, &vars).is_err(), "{bad}");
        }
    }

    #[test]
    fn locate_skips_comments_and_escapes() {
        let text = "# {x}\na: \"{{x}\" # {x}\nb: \"{x}\"\n";
        assert_eq!(locate(text, "{x}"), Some((3, 5)));
    }

    #[test]
    fn normalize_paths() {
        assert_eq!(absolute_in(Path::new("/w"), "./a/../b"), PathBuf::from("/w/b"));
        assert_eq!(absolute_in(Path::new("/w"), "/abs/x"), PathBuf::from("/abs/x"));
    }

    /// Issue 41: the target is not built yet while a binary of the build, or (from this
    /// machine's files) the program the run names, is not there, whatever `binaries` says;
    /// a program without a `/` is looked for on PATH, the step's own first.
    #[test]
    fn a_missing_binary_or_program_means_not_built_yet() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("xtask-not-built-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("out")).unwrap();
        let text = "version: 1\nname: x\ndescription: x\nbuild:\n  command: [\"make\"]\n  binaries: [\"out/lib.so\"]\n\
                    run:\n  command: [\"./app\"]\n";
        let r = parse(text, RecipeSource::Builtin("x".into()), dir.clone()).unwrap();
        let resolved = |r: &Recipe| resolve_in(r, &BTreeMap::new(), &dir).unwrap();
        let app = dir.join("app").display().to_string();
        assert_eq!(resolved(&r).not_built(true), Some(dir.join("out/lib.so").display().to_string()));
        std::fs::write(dir.join("out/lib.so"), "").unwrap();
        assert_eq!(resolved(&r).not_built(true), Some(app.clone()));
        assert_eq!(resolved(&r).not_built(false), None, "in a container the program is the image's");
        std::fs::write(dir.join("app"), "#!/bin/sh\n").unwrap();
        assert_eq!(resolved(&r).not_built(true), None);
        // Without a build, nothing is "not built": a missing program is the preflight's to refuse.
        let mut no_build = resolved(&r);
        no_build.build = None;
        std::fs::remove_file(dir.join("app")).unwrap();
        assert_eq!(no_build.not_built(true), None);
        assert_eq!(no_build.run.missing_program(), Some(app));
        // Bare names: on PATH (the step's own PATH first), and executable.
        let mut run = no_build.run.clone();
        run.argv = vec!["sh".into()];
        assert_eq!(run.missing_program(), None);
        run.argv = vec!["app".into()];
        run.env.insert("PATH".into(), dir.display().to_string());
        assert_eq!(run.missing_program(), Some("app".into()));
        std::fs::write(dir.join("app"), "#!/bin/sh\n").unwrap();
        assert_eq!(run.missing_program(), Some("app".into()), "not executable");
        std::fs::set_permissions(dir.join("app"), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(run.missing_program(), None);
        // A Python script: the first word after the interpreter and its options; never a
        // module (`-m`), a command (`-c`, `-uc`) or stdin.
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        run.cwd = Some(dir.clone());
        run.argv = words(&["python3", "-u", "-X", "dev", "nosuch.py", "--steps", "3"]);
        assert_eq!(run.missing_script(), Some("nosuch.py".into()));
        std::fs::write(dir.join("nosuch.py"), "").unwrap();
        assert_eq!(run.missing_script(), None);
        for argv in
            [&["python3", "-m", "nosuch"][..], &["python3", "-uc", "pass"], &["python3.12", "-"], &["./app"]]
        {
            run.argv = words(argv);
            assert_eq!(run.missing_script(), None, "{argv:?}");
        }
        run.argv = words(&["/usr/bin/python3.12", "other.py"]);
        assert_eq!(run.missing_script(), Some("other.py".into()));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// `knobs:`: each knob's change resolved with the variables, applied to the run step (its
    /// variables set or removed, its words removed where present and added at the end).
    #[test]
    fn knobs_are_resolved_and_applied_to_the_run() {
        let text = concat!(
            "version: 1\nname: x\ndescription: d\nvariables:\n  flag: { default: --eager }\n",
            "run:\n  command: \"./serve --fast --port 1\"\n  env: { A: a }\n  env_remove: [B]\n",
            "knobs:\n  - name: eager\n    description: e\n    args_add: \"{flag}\"\n    args_remove: [--fast]\n",
            "  - name: env\n    description: v\n    env: { B: b }\n    env_remove: [A]\n",
        );
        let r = parse(text, RecipeSource::Builtin("x".into()), PathBuf::from(".")).unwrap();
        assert_eq!(r.knobs.len(), 2);
        let res = resolve_in(&r, &BTreeMap::new(), Path::new("/p")).unwrap();
        assert_eq!(res.knobs[0].args_add, ["--eager"]);
        let mut run = res.run.clone();
        res.knobs[0].apply(&mut run);
        assert_eq!(run.argv, ["/p/serve", "--port", "1", "--eager"]);
        res.knobs[1].apply(&mut run);
        assert_eq!(run.env, BTreeMap::from([("B".to_string(), "b".to_string())]));
        assert_eq!(run.env_remove, ["A"]);
        assert_eq!(res.knobs[1].change(), "B=b -A (unset)");
    }

    /// A knob without a change, two of one name, an unknown key or a bad name: refused at
    /// their line and column.
    #[test]
    fn a_knob_that_changes_nothing_or_repeats_a_name_is_refused_where_it_stands() {
        let head = "version: 1\nname: x\ndescription: d\nrun:\n  command: [a]\nknobs:\n";
        let err = |knobs: &str| {
            let text = format!("{head}{knobs}");
            format!("{:#}", parse(&text, RecipeSource::Builtin("x".into()), PathBuf::from(".")).unwrap_err())
        };
        let e = err("  - name: k\n    description: d\n");
        assert!(e.contains("recipes/x.yaml:7:") && e.contains("the knob `k` changes nothing"), "{e}");
        let e = err("  - { name: k, description: d, env: { A: b } }\n  - { name: k, description: d, env: { A: c } }\n");
        assert!(e.contains("two knobs are named `k`"), "{e}");
        let e = err("  - { name: k, description: d, colour: red }\n");
        assert!(e.contains("recipes/x.yaml:7:") && e.contains("unknown field `colour`"), "{e}");
        let e = err("  - { name: \"a b\", description: d, env: { A: b } }\n");
        assert!(e.contains("invalid knob name `a b`"), "{e}");
        let e = err("  - { name: k, description: d, env: { A: b }, env_remove: [A] }\n");
        assert!(e.contains("both sets and removes `A`"), "{e}");
        let e = err("  - { name: k, description: d, env: { A: \"{nope}\" } }\n");
        assert!(e.contains("nope"), "{e}");
    }

    /// The built-in recipes ship the usual suspects.
    #[test]
    fn the_built_in_recipes_ship_their_knobs() {
        let names = |n: &str| -> Vec<String> { load(n).unwrap().knobs.into_iter().map(|k| k.name).collect() };
        assert_eq!(
            names("pytorch"),
            ["compile-off", "cudagraphs-off", "caching-allocator-off", "expandable-segments"]
        );
        assert_eq!(
            names("vllm"),
            [
                "enforce-eager",
                "cudagraphs-off",
                "prefix-caching-off",
                "chunked-prefill-off",
                "custom-allreduce-off",
                "flashinfer-sampler-off",
                "caching-allocator-off"
            ]
        );
    }
}

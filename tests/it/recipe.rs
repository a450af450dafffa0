//! The recipe format: the built-in recipes parse and resolve; malformed recipes fail with
//! `file:line:column`; variables, `--set` and word splitting; deterministic `recipe
//! list|show|check` output (snapshots in tests/snapshots/); hostile input fails cleanly.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use proptest::prelude::*;
use xtask::model::{RungId, Runtime};
use xtask::recipe::ContainerConfig;
use xtask::recipe::{
    builtin_names, builtin_text, check, check_recipe, container_mounts, join_words, load, missing_variables,
    parse, parse_set, render_list, render_show_in, resolve_in, split_words, uses_variable, ContainerTemplate,
    DebugInfo, RecipeSource, Words, MAX_RECIPE_BYTES, MAX_RECIPE_ERRORS,
};

use crate::support::recipes::{builtin, err, parse_file, sets, strings, CWD, MINIMAL};
use crate::support::root;

fn snapshot(name: &str, text: &str) {
    insta::with_settings!({snapshot_path => root().join("tests/snapshots"), prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!(name, text);
    });
}

// ---- the built-ins ----------------------------------------------------------------------

#[test]
fn builtins_are_listed_and_embedded() {
    assert_eq!(builtin_names(), ["demo", "cuda", "pytorch", "vllm"]);
    for name in builtin_names() {
        let on_disk = std::fs::read_to_string(root().join(format!("recipes/{name}.yaml"))).unwrap();
        assert_eq!(builtin_text(name).unwrap(), on_disk);
        let r = load(name).unwrap();
        assert_eq!(r.name, *name);
        assert_eq!(r.source, RecipeSource::Builtin(name.to_string()));
        assert!(r.dir.join("demo.yaml").is_file(), "{}", r.dir.display());
    }
}

#[test]
fn demo_builds_and_runs_its_program() {
    let r = builtin("demo");
    assert!(!r.python);
    assert!(missing_variables(&r, &BTreeMap::new()).is_empty());
    let res = resolve_in(&r, &BTreeMap::new(), Path::new(CWD)).unwrap();
    let build = res.build.as_ref().unwrap();
    assert_eq!(
        build.argv,
        strings(&[
            "nvcc",
            "-arch=native",
            "-o",
            "target/debug-ima/demo/ima_demo",
            "/repo/recipes/demo/ima_demo.cu"
        ])
    );
    assert_eq!(build.binaries, [PathBuf::from("/work/proj/target/debug-ima/demo/ima_demo")]);
    assert_eq!(build.binary_dirs(), [PathBuf::from("/work/proj/target/debug-ima/demo")]);
    assert_eq!(build.timeout, Some(Duration::from_secs(600)));
    assert_eq!(res.run.argv, strings(&["/work/proj/target/debug-ima/demo/ima_demo"]));
    assert_eq!(res.run.cwd, None);
    assert_eq!(res.vars["recipe_dir"], "/repo/recipes");
    assert_eq!(res.vars["cwd"], CWD);
    assert_eq!(res.rung(RungId::Memcheck).timeout, Some(600));
    assert!(res.enabled(RungId::LaunchBlocking));
    assert_eq!(res.debug_info(), DebugInfo::Lineinfo);

    let res = resolve_in(&r, &sets(&[("arch", "sm_90")]), Path::new(CWD)).unwrap();
    assert_eq!(res.build.unwrap().argv[1], "-arch=sm_90");
}

#[test]
fn demo_program_is_where_the_recipe_says() {
    let src = std::fs::read_to_string(root().join("recipes/demo/ima_demo.cu")).unwrap();
    assert!(src.contains("// the bad write"));
    assert!(src.contains("CUDA error at %s:%d: %s: %s"));
}

#[test]
fn cuda_needs_run_and_builds_only_when_told_how() {
    let r = builtin("cuda");
    let missing: Vec<String> = missing_variables(&r, &BTreeMap::new()).into_iter().map(|(k, _)| k).collect();
    assert_eq!(missing, ["run"]);
    let e = format!("{:#}", resolve_in(&r, &BTreeMap::new(), Path::new(CWD)).unwrap_err());
    assert!(e.contains("`--set run=VALUE`"), "{e}");
    // A prebuilt program (issue 24): no build, whether `build` is left out or given empty.
    for s in
        [&[("run", "./app")][..], &[("run", "./app"), ("build", "")], &[("run", "./app"), ("build", "  ")]]
    {
        let res = resolve_in(&r, &sets(s), Path::new(CWD)).unwrap();
        assert!(res.build.is_none(), "{s:?}");
        assert!(res.run.argv[0].ends_with("/app"), "{:?}", res.run.argv);
    }

    let res = resolve_in(
        &r,
        &sets(&[
            ("build", "cmake --build build --clean-first"),
            ("run", "./build/app --name 'two words'"),
            ("binaries", "build/app build/libk.so"),
        ]),
        Path::new(CWD),
    )
    .unwrap();
    let build = res.build.unwrap();
    assert_eq!(build.argv, strings(&["cmake", "--build", "build", "--clean-first"]));
    assert_eq!(
        build.binaries,
        [PathBuf::from("/work/proj/build/app"), PathBuf::from("/work/proj/build/libk.so")]
    );
    assert_eq!(build.timeout, Some(Duration::from_secs(3600)));
    assert_eq!(res.run.argv, strings(&["/work/proj/build/app", "--name", "two words"]));
    assert_eq!(res.run.timeout, None);

    // `binaries` is optional.
    let res = resolve_in(&r, &sets(&[("build", "make -B"), ("run", "./app")]), Path::new(CWD)).unwrap();
    assert!(res.build.unwrap().binaries.is_empty());
    // A value that cannot be split says which field and what it became.
    let e = format!(
        "{:#}",
        resolve_in(&r, &sets(&[("build", "make -B && ./app"), ("run", "./app")]), Path::new(CWD))
            .unwrap_err()
    );
    assert!(e.contains("`build.command` is `make -B && ./app`"), "{e}");
    assert!(e.contains("not run through a shell"), "{e}");
    // An empty command is refused.
    let e = format!(
        "{:#}",
        resolve_in(&r, &sets(&[("build", "make"), ("run", "  ")]), Path::new(CWD)).unwrap_err()
    );
    assert!(e.contains("`run.command` is empty"), "{e}");
}

// ---- errors with file:line:column --------------------------------------------------------

#[test]
fn unknown_key_has_line_and_column() {
    let e = err(&format!("{MINIMAL}colour: red\n"));
    assert!(e.starts_with("recipes/x.yaml:6:1: unknown field `colour`, expected one of `version`"), "{e}");

    let e = err(&format!("{MINIMAL}  cwd: .\n  binaries: [a]\n"));
    assert!(e.starts_with("recipes/x.yaml:7:3: run: unknown field `binaries`"), "{e}");

    let e = err(&format!("{MINIMAL}rungs:\n  memchek: {{}}\n"));
    assert!(e.starts_with("recipes/x.yaml:7:3: rungs: unknown field `memchek`"), "{e}");

    let e = err(&format!("{MINIMAL}rungs:\n  rebuild: {{ args: [] }}\n"));
    assert!(e.starts_with("recipes/x.yaml:7:14: rungs.rebuild: unknown field `args`"), "{e}");

    let e = err(&format!("{MINIMAL}variables:\n  a: {{ default: x, help: y }}\n"));
    assert!(e.starts_with("recipes/x.yaml:7:20: variables.a: unknown field `help`"), "{e}");
}

#[test]
fn wrong_type_has_line_and_column() {
    let e = err(&format!("{MINIMAL}python: yes\n"));
    assert_eq!(e, "recipes/x.yaml:6:9: python: invalid type: string \"yes\", expected a boolean");

    let e = err(&format!("{MINIMAL}  timeout: soon\n"));
    assert!(e.starts_with("recipes/x.yaml:6:12: run.timeout: invalid type: string \"soon\""), "{e}");

    let e = err(&format!("{MINIMAL}rungs:\n  memcheck: {{ timeout: 0 }}\n"));
    assert!(e.starts_with("recipes/x.yaml:7:24: rungs.memcheck.timeout: invalid value: integer `0`"), "{e}");

    let e = err("version: 1\nname: x\ndescription: d\nrun:\n  command: 5\n");
    assert!(
        e.starts_with("recipes/x.yaml:5:12: run.command: invalid type: integer `5`, expected a command"),
        "{e}"
    );

    let e = err("version: 1\nname: x\ndescription: d\nrun: ./a\n");
    assert!(
        e.starts_with(
            "recipes/x.yaml:4:6: run: invalid type: string \"./a\", expected a mapping with `command`"
        ),
        "{e}"
    );

    let e = err(&format!("{MINIMAL}rungs:\n  rebuild: {{ debug: g }}\n"));
    assert!(e.starts_with("recipes/x.yaml:7:21: rungs.rebuild.debug: unknown variant `g`"), "{e}");

    let e = err("[1, 2]\n");
    assert!(
        e.starts_with("recipes/x.yaml:1:1: invalid type: sequence, expected a mapping with `version`"),
        "{e}"
    );
}

#[test]
fn missing_fields_have_line_and_column() {
    let e = err("version: 1\nname: x\ndescription: d\n");
    assert_eq!(e, "recipes/x.yaml:1:1: missing field `run`");
    let e = err("# a comment\nversion: 1\nname: x\ndescription: d\nbuild:\n  command: make\n");
    assert_eq!(e, "recipes/x.yaml:2:1: missing field `run`");
    let e = err("version: 1\nname: x\ndescription: d\nrun:\n  cwd: .\n");
    assert_eq!(e, "recipes/x.yaml:5:3: run: missing field `command`");
    let e = err("name: x\ndescription: d\nrun: { command: [a] }\n");
    assert_eq!(e, "recipes/x.yaml:1:1: missing field `version`");
}

#[test]
fn version_name_and_commands_are_checked() {
    let e = err("version: 2\nname: x\n");
    assert!(e.starts_with("recipes/x.yaml:1:10: version: unsupported recipe version 2"), "{e}");
    let e = err("version: 1\nname: \"a b\"\ndescription: d\nrun: { command: [a] }\n");
    assert!(e.starts_with("recipes/x.yaml:2:7: name: invalid recipe name `a b`"), "{e}");
    let e = err("version: 1\nname: x\ndescription: d\nrun:\n  command: []\n");
    assert!(e.starts_with("recipes/x.yaml:5:12: run.command: the command is an empty list"), "{e}");
    let e = err("version: 1\nname: x\ndescription: d\nrun:\n  command: \"./a 'b\"\n");
    assert!(e.starts_with("recipes/x.yaml:5:12: run.command: `./a 'b`: a single quote is not closed"), "{e}");
    let e = err("version: 1\nname: x\ndescription: d\nrun:\n  command: [a]\n  env: { A: 1, A: 2 }\n");
    assert!(e.starts_with("recipes/x.yaml:6:8: run.env: duplicate key `A`"), "{e}");
    let e = err("version: 1\nname: x\ndescription: d\nrun:\n  command: [a]\n  env: { 1A: x }\n");
    assert!(e.starts_with("recipes/x.yaml:6:10: run.env: invalid environment variable name `1A`"), "{e}");
    let e = err(&format!("{MINIMAL}variables:\n  cwd: {{ default: x }}\n"));
    assert!(e.starts_with("recipes/x.yaml:7:3: variables: `cwd` is a built-in variable"), "{e}");
    assert!(err("").starts_with("recipes/x.yaml: the file is empty"));
    assert!(err("# only a comment\n").starts_with("recipes/x.yaml: the file is empty"));
}

// ---- every error at once (issue 24) ------------------------------------------------------

const TOP_KEYS: &str = "expected one of `version`, `name`, `description`, `python`, `variables`, `collect`, \
                        `knobs`, `build`, `run`, `rungs`, `container`, `launch`";

/// The last line of an error with several: how many, and the command to check again.
fn summary(n: usize) -> String {
    format!("{n} errors in recipes/x.yaml: fix them and run `cargo xtask recipe check recipes/x.yaml` again")
}

#[test]
fn three_mistakes_in_three_blocks_are_all_reported_in_file_order() {
    let text =
        "version: 1\nname: x\ndescription: d\nvariables:\n  arch: { default: sm_90, help: y }\nrun:\n  \
                command: [\"./a\", \"{arch}\"]\nrungs:\n  memcheck: { timeot: 5 }\ncolour: red\n";
    let e = err(text);
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(lines.len(), 4, "{e}");
    assert!(lines[0].starts_with("recipes/x.yaml:5:27: variables.arch: unknown field `help`"), "{e}");
    assert!(lines[1].starts_with("recipes/x.yaml:9:15: rungs.memcheck: unknown field `timeot`"), "{e}");
    assert!(lines[1].ends_with(" (did you mean `timeout`?)"), "{e}");
    assert_eq!(lines[2], format!("recipes/x.yaml:10:1: unknown field `colour`, {TOP_KEYS}"));
    assert_eq!(lines[3], summary(3));
}

#[test]
fn one_mistake_reads_as_before() {
    assert_eq!(
        err(&format!("{MINIMAL}colour: red\n")),
        format!("recipes/x.yaml:6:1: unknown field `colour`, {TOP_KEYS}")
    );
    assert_eq!(err("version: 1\nname: x\ndescription: d\n"), "recipes/x.yaml:1:1: missing field `run`");
    let e = err(&format!("{MINIMAL}rungs:\n  memchek: {{}}\n"));
    assert_eq!(e.lines().count(), 1, "{e}");
}

/// The declared names come from the whole text: a `variables` with an error, blanked to read
/// the rest, does not make its names unknown where they are used.
#[test]
fn a_blanked_variables_block_makes_no_unknown_references() {
    let text = "version: 1\nname: x\ndescription: d\nvariables:\n  arch: { default: sm_90, help: y }\n  \
                size: { default: \"1\" }\nrun:\n  command: [\"./a\", \"{arch}\", \"{size}\"]\nrungs:\n  \
                memcheck: { args: [\"{size}\"] }\n";
    let e = err(text);
    assert!(e.starts_with("recipes/x.yaml:5:27: variables.arch: unknown field `help`"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    // An unknown one is still reported, besides the other error.
    let e = err(&text.replace("[\"{size}\"]", "[\"{sise}\"]"));
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(lines.len(), 3, "{e}");
    assert!(lines[1].starts_with("recipes/x.yaml:10:22: rungs.memcheck.args[0]: unknown variable `{sise}` (did you mean `{size}`?)"), "{e}");
}

/// A key missing from the text is reported with the other errors (last); one missing only
/// because its block was blanked is not.
#[test]
fn a_missing_key_is_reported_with_the_others_and_a_blanked_one_is_not() {
    let e = err("version: 1\nname: x\ndescription: d\ncolour: red\n");
    assert_eq!(
        e,
        format!("recipes/x.yaml:4:1: unknown field `colour`, {TOP_KEYS}\nrecipes/x.yaml:1:1: missing field `run`\n{}", summary(2))
    );
    let e = err("version: 1\nname: x\ndescription: d\nrun:\n  command: []\ncolour: red\n");
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(lines.len(), 3, "{e}");
    assert!(lines[0].starts_with("recipes/x.yaml:5:12: run.command: the command is an empty list"), "{e}");
    assert!(lines[1].starts_with("recipes/x.yaml:6:1: unknown field `colour`"), "{e}");
    let e = err("version: 2\nname: x\n");
    let lines: Vec<&str> = e.lines().collect();
    assert!(lines[0].starts_with("recipes/x.yaml:1:10: version: unsupported recipe version 2"), "{e}");
    assert_eq!(
        lines[1..],
        [
            "recipes/x.yaml:1:1: missing field `description`",
            "recipes/x.yaml:1:1: missing field `run`",
            &summary(3)
        ]
    );
}

/// A YAML syntax error blanks from where the construct it was reading began, so the blocks
/// after it are read as they are.
#[test]
fn a_syntax_error_and_a_later_mistake() {
    let e = err("version: 1\nname: x\ndescription: d\nrun:\n  command: [\"./a\"\nrungs:\n  memcheck: { timeout: 5 }\ncolour: red\n");
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(lines.len(), 3, "{e}");
    assert!(lines[0].contains("while parsing a flow sequence at line 5 column 12"), "{e}");
    assert!(lines[1].starts_with("recipes/x.yaml:8:1: unknown field `colour`"), "{e}");
}

#[test]
fn the_checks_after_parsing_report_every_failure() {
    let e = err(
        "version: 1\nname: x\ndescription: d\nrun:\n  command: [a]\n  env: { A: x }\n  env_remove: [A]\n  \
                 timeout: 5\n  hang_after: 10\n",
    );
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(lines.len(), 3, "{e}");
    assert!(
        lines[0].starts_with("recipes/x.yaml: run: `A` is both in `run.env` and in `run.env_remove`"),
        "{e}"
    );
    assert!(lines[1].starts_with("recipes/x.yaml: run: `hang_after: 10` is not below `timeout: 5`"), "{e}");
    assert_eq!(lines[2], summary(2));
}

#[test]
fn errors_stop_at_the_bound() {
    let many: String = (0..30).map(|i| format!("k{i}: x\n")).collect();
    let e = err(&format!("{MINIMAL}{many}"));
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(lines.len(), MAX_RECIPE_ERRORS + 1, "{e}");
    assert!(lines[0].starts_with("recipes/x.yaml:6:1: unknown field `k0`"), "{e}");
    assert!(
        lines[MAX_RECIPE_ERRORS]
            .starts_with("20 errors in recipes/x.yaml (the first 20; there may be more): "),
        "{e}"
    );
}

#[test]
fn near_names_are_suggested_and_far_ones_are_not() {
    let e = err(&format!("{MINIMAL}rugns:\n  memcheck: {{}}\n"));
    assert_eq!(e, format!("recipes/x.yaml:6:1: unknown field `rugns`, {TOP_KEYS} (did you mean `rungs`?)"));
    let e = err(&format!("{MINIMAL}rungs:\n  memchek: {{}}\n"));
    assert!(e.starts_with("recipes/x.yaml:7:3: rungs: unknown field `memchek`, expected one of"), "{e}");
    assert!(e.ends_with(" (did you mean `memcheck`?)"), "{e}");
    let e = err(&format!("{MINIMAL}rungs:\n  rebuild: {{ debug: g }}\n"));
    assert!(e.ends_with(" (did you mean `G`?)"), "{e}");
    let e = err(&format!("{MINIMAL}colour: red\n"));
    assert!(!e.contains("did you mean"), "{e}");
    let e = err(&format!("{MINIMAL}rungs:\n  sanitizer: {{}}\n"));
    assert!(!e.contains("did you mean"), "{e}");
    let vars =
        "version: 1\nname: x\ndescription: d\nvariables:\n  arch: { default: sm_90 }\nrun:\n  command: ";
    let e = err(&format!("{vars}[\"./a\", \"{{arc}}\"]\n"));
    assert!(e.starts_with("recipes/x.yaml:7:20: run.command[1]: unknown variable `{arc}` (did you mean `{arch}`?): the recipe declares `arch`"), "{e}");
    let e = err(&format!("{vars}[\"./a\", \"{{cdw}}\"]\n"));
    assert!(e.contains("unknown variable `{cdw}` (did you mean `{cwd}`?)"), "{e}");
    let e = err(&format!("{vars}[\"./a\", \"{{outdir}}\"]\n"));
    assert!(!e.contains("did you mean"), "{e}");
}

// ---- variables ---------------------------------------------------------------------------

#[test]
fn unknown_variable_reference_is_located() {
    let text = "version: 1\nname: x\ndescription: d\nvariables:\n  arch: { default: sm_90 }\nrun:\n  command: [\"./a\", \"--out={outdir}/x\"]\n";
    let e = err(text);
    assert!(e.starts_with("recipes/x.yaml:7:20: run.command[1]: unknown variable `{outdir}`"), "{e}");
    assert!(e.contains("the recipe declares `arch`"), "{e}");

    // Variables may be declared after they are used.
    let text = "version: 1\nname: x\ndescription: d\nrun:\n  command: \"./a {n}\"\nvariables:\n  n: { default: \"3\" }\n";
    let r = parse_file(text).unwrap();
    assert_eq!(
        resolve_in(&r, &BTreeMap::new(), Path::new(CWD)).unwrap().run.argv,
        strings(&["/work/proj/a", "3"])
    );

    // In rung options too.
    let e = err(&format!("{MINIMAL}rungs:\n  memcheck:\n    args: [\"--log-file={{logdir}}\"]\n"));
    assert!(e.starts_with("recipes/x.yaml:8:12: rungs.memcheck.args[0]: unknown variable `{logdir}`"), "{e}");

    // A default may use the built-ins only.
    let e = err(&format!(
        "{MINIMAL}variables:\n  a: {{ default: \"{{recipe_dir}}/x\" }}\n  b: {{ default: \"{{a}}\" }}\n"
    ));
    assert!(
        e.starts_with("recipes/x.yaml:8:17: variables.b.default: `{a}`: a default can only use the built-in"),
        "{e}"
    );

    // A `{` that starts no reference.
    let e = err("version: 1\nname: x\ndescription: d\nrun:\n  command: [\"./a\", \"{ x }\"]\n");
    assert!(
        e.starts_with(
            "recipes/x.yaml:5:20: run.command[1]: `{ x }` in `{ x }`: `{` starts no variable reference"
        ),
        "{e}"
    );
}

#[test]
fn braces_escape() {
    let text = "version: 1\nname: x\ndescription: d\nvariables:\n  n: { default: \"7\" }\nrun:\n  command: [\"./a\", \"{{n}}={n}\", \"{{{n}}}\", \"a}b\"]\n  env: { JSON: '{{\"k\": {n}}}' }\n";
    let r = parse_file(text).unwrap();
    let res = resolve_in(&r, &BTreeMap::new(), Path::new(CWD)).unwrap();
    assert_eq!(res.run.argv, strings(&["/work/proj/a", "{n}=7", "{7}", "a}b"]));
    assert_eq!(res.run.env["JSON"], "{\"k\": 7}");
}

#[test]
fn set_values_are_literal_and_checked() {
    let r = builtin("demo");
    let res = resolve_in(&r, &sets(&[("build_dir", "out dir/{x}")]), Path::new(CWD)).unwrap();
    assert_eq!(res.build.unwrap().argv[3], "out dir/{x}/ima_demo");
    let e = format!("{:#}", resolve_in(&r, &sets(&[("buld_dir", "x")]), Path::new(CWD)).unwrap_err());
    assert!(e.contains("recipe `demo` has no variable `buld_dir`"), "{e}");
    assert!(e.contains("it declares `arch`, `build_dir`"), "{e}");
}

#[test]
fn everything_resolves_with_cwd_and_rungs() {
    let text = r#"
version: 1
name: torch-script
description: "a Python script"
python: true
variables:
  script: { description: "the script" }
  steps: { default: "10", description: "how many steps" }
run:
  command: "python {script} --steps {steps}"
  cwd: "{recipe_dir}/../work"
  env: { CUDA_VISIBLE_DEVICES: 0, STEPS: "{steps}" }
  timeout: 900
rungs:
  baseline: { enabled: true }
  rebuild: { debug: G, enabled: false }
  launch-blocking: { enabled: false }
  coredump: { env: { EXTRA: "{steps}" } }
  memcheck: { timeout: 3000, args: ["--print-limit", "{steps}"], env: {} }
"#;
    let r = parse_file(text).unwrap();
    assert!(r.python);
    assert_eq!(r.run.command, Words::Line("python {script} --steps {steps}".into()));
    let res = resolve_in(&r, &sets(&[("script", "train.py")]), Path::new(CWD)).unwrap();
    assert_eq!(res.run.argv, strings(&["python", "train.py", "--steps", "10"]));
    assert_eq!(res.run.cwd, Some(PathBuf::from("/repo/work")));
    assert_eq!(res.run.env, sets(&[("CUDA_VISIBLE_DEVICES", "0"), ("STEPS", "10")]));
    assert_eq!(res.run.timeout, Some(Duration::from_secs(900)));
    assert!(!res.enabled(RungId::LaunchBlocking));
    assert!(res.enabled(RungId::Attach));
    assert_eq!(res.debug_info(), DebugInfo::G);
    assert_eq!(res.rung(RungId::Coredump).env, sets(&[("EXTRA", "10")]));
    assert_eq!(res.rung(RungId::Memcheck).args, strings(&["--print-limit", "10"]));
    assert_eq!(res.rung(RungId::Memcheck).timeout, Some(3000));
    assert!(res.build.is_none());
}

#[test]
fn resolved_serializes_for_the_manifest() {
    let res = resolve_in(&builtin("demo"), &BTreeMap::new(), Path::new(CWD)).unwrap();
    snapshot("recipe_resolved_demo", &serde_json::to_string_pretty(&res).unwrap());
}

// ---- container ---------------------------------------------------------------------------

fn paths(v: &[&str]) -> Vec<PathBuf> {
    v.iter().map(PathBuf::from).collect()
}

#[test]
fn container_section_resolves() {
    let text = r#"version: 1
name: x
description: d
variables:
  vllm_src: { description: "the checkout" }
  tag: { default: "13.0.1" }
run:
  command: ["./a"]
container:
  runtime: docker
  image: "debug-ima/cuda:{tag}@sha256:abc"
  mounts: ["{vllm_src}", data/models, /data/x/../cache]
"#;
    let r = parse_file(text).unwrap();
    assert_eq!(
        r.container,
        Some(ContainerTemplate {
            runtime: Some(Runtime::Docker),
            image: Some("debug-ima/cuda:{tag}@sha256:abc".into()),
            mounts: Words::List(strings(&["{vllm_src}", "data/models", "/data/x/../cache"])),
            gpus: true,
        })
    );
    assert!(uses_variable(&r, "vllm_src") && uses_variable(&r, "tag"));
    let out = check_recipe(&r, Path::new(CWD)).unwrap();
    assert!(!out.contains("never used"), "{out}");
    assert!(
        out.contains(
            "  container: runtime docker, image \"debug-ima/cuda:{tag}@sha256:abc\", mounts [\"{vllm_src}\", \"data/models\", \"/data/x/../cache\"]\n"
        ),
        "{out}"
    );

    let res = resolve_in(&r, &sets(&[("vllm_src", "/src/vllm")]), Path::new(CWD)).unwrap();
    assert_eq!(
        res.container,
        ContainerConfig {
            runtime: Some(Runtime::Docker),
            image: Some("debug-ima/cuda:13.0.1@sha256:abc".into()),
            mounts: paths(&["/src/vllm", "/work/proj/data/models", "/data/cache"]),
            gpus: true,
        }
    );
    let json = serde_json::to_value(&res).unwrap();
    assert_eq!(
        json["container"],
        serde_json::json!({
            "runtime": "docker",
            "image": "debug-ima/cuda:13.0.1@sha256:abc",
            "mounts": ["/src/vllm", "/work/proj/data/models", "/data/cache"],
            "gpus": true,
        })
    );

    // `mounts` as one line; `gpus: false`; only an image (the runtime comes from `--container`).
    let text = format!(
        "{MINIMAL}variables:\n  extra: {{ default: \"/opt/a /opt/b\" }}\ncontainer:\n  image: ./cuda.sif\n  mounts: \"{{extra}} 'with space'\"\n  gpus: false\n"
    );
    let r = parse_file(&text).unwrap();
    let res = resolve_in(&r, &BTreeMap::new(), Path::new(CWD)).unwrap();
    assert_eq!(
        res.container,
        ContainerConfig {
            runtime: None,
            image: Some("./cuda.sif".into()),
            mounts: paths(&["/opt/a", "/opt/b", "/work/proj/with space"]),
            gpus: false,
        }
    );
    // `runtime: none` needs no image.
    let r = parse_file(&format!("{MINIMAL}container:\n  runtime: none\n")).unwrap();
    let res = resolve_in(&r, &BTreeMap::new(), Path::new(CWD)).unwrap();
    assert_eq!(res.container, ContainerConfig { runtime: Some(Runtime::None), ..ContainerConfig::default() });
}

#[test]
fn no_container_section_is_the_default() {
    let r = parse_file(MINIMAL).unwrap();
    assert_eq!(r.container, None);
    let res = resolve_in(&r, &BTreeMap::new(), Path::new(CWD)).unwrap();
    assert_eq!(res.container, ContainerConfig::default());
    // An empty section is no section.
    let r = parse_file(&format!("{MINIMAL}container:\n")).unwrap();
    assert_eq!(r.container, None);
    for name in builtin_names() {
        let r = builtin(name);
        let required: Vec<(&str, &str)> = r.required_variables().into_iter().map(|k| (k, "x")).collect();
        let res = resolve_in(&r, &sets(&required), Path::new(CWD)).unwrap();
        assert_eq!(res.container, ContainerConfig::default(), "{name}");
    }
}

#[test]
fn container_errors_have_line_and_column() {
    let e = err(&format!("{MINIMAL}container:\n  runtime: dockr\n  image: x\n"));
    assert_eq!(
        e,
        "recipes/x.yaml:7:12: container.runtime: unknown container runtime `dockr`: use `docker`, `podman`, \
         `apptainer` or `none`"
    );

    let e = err(&format!("{MINIMAL}container:\n  runtime: docker\n  gpus: true\n"));
    assert_eq!(
        e,
        "recipes/x.yaml:7:3: container: `runtime: docker` needs an image: add `image:` (a pinned reference such \
         as `debug-ima/cuda:13.0.1@sha256:...`, or an Apptainer `.sif` file), or leave `runtime` out and pass \
         `--container docker --image IMAGE`"
    );
    let e = err(&format!("{MINIMAL}container: {{ runtime: apptainer }}\n"));
    assert!(e.starts_with("recipes/x.yaml:6:12: container: `runtime: apptainer` needs an image"), "{e}");

    let e = err(&format!("{MINIMAL}container:\n  image: x\n  gpus: yes\n"));
    assert_eq!(e, "recipes/x.yaml:8:9: container.gpus: invalid type: string \"yes\", expected a boolean");

    let e = err(&format!("{MINIMAL}container:\n  image: x\n  mounts: [/a, \"\"]\n"));
    assert_eq!(
        e,
        "recipes/x.yaml:8:16: container.mounts[1]: an empty path: each entry of `mounts` is a host folder \
         mounted at the same path in the container"
    );
    let e = err(&format!("{MINIMAL}container:\n  image: x\n  mounts: \"/a ''\"\n"));
    assert_eq!(
        e,
        "recipes/x.yaml:8:11: container.mounts: `/a ''`: an empty path: each entry of `mounts` is a host \
         folder mounted at the same path in the container"
    );

    let e = err(&format!("{MINIMAL}container:\n  image: \"\"\n"));
    assert!(e.starts_with("recipes/x.yaml:7:10: container.image: the image is empty"), "{e}");

    let e = err(&format!("{MINIMAL}container:\n  image: \"cuda:{{tag}}\"\n"));
    assert!(
        e.starts_with(
            "recipes/x.yaml:7:10: container.image: unknown variable `{tag}`: the recipe declares no variables"
        ),
        "{e}"
    );
    let e = err(&format!(
        "{MINIMAL}variables:\n  src: {{ default: /s }}\ncontainer:\n  image: x\n  mounts: [\"{{src}}\", \"{{data}}/m\"]\n"
    ));
    assert!(
        e.starts_with(
            "recipes/x.yaml:10:21: container.mounts[1]: unknown variable `{data}`: the recipe declares `src`"
        ),
        "{e}"
    );

    let e = err(&format!("{MINIMAL}container:\n  image: x\n  volumes: [/a]\n"));
    assert_eq!(
        e,
        "recipes/x.yaml:8:3: container: unknown field `volumes`, expected one of `runtime`, `image`, `mounts`, \
         `gpus`"
    );
    let e = err(&format!("{MINIMAL}container: docker\n"));
    assert_eq!(
        e,
        "recipes/x.yaml:6:12: container: invalid type: string \"docker\", expected a mapping with `runtime`, \
         `image`, `mounts` or `gpus`"
    );

    // A mount whose variable is empty is refused when the recipe is resolved.
    let r = parse_file(&format!(
        "{MINIMAL}variables:\n  src: {{ default: \"\" }}\ncontainer:\n  image: x\n  mounts: [\"{{src}}\"]\n"
    ))
    .unwrap();
    let e = format!("{:#}", resolve_in(&r, &BTreeMap::new(), Path::new(CWD)).unwrap_err());
    assert_eq!(
        e,
        "recipe `x`: `container.mounts[0]` is an empty path once its variables are filled: give the variable a \
         folder (`--set NAME=PATH`), or take the entry out of `mounts`"
    );
    // An image whose variable is empty, with a runtime that needs one.
    let r = parse_file(&format!(
        "{MINIMAL}variables:\n  img: {{ default: \"\" }}\ncontainer:\n  runtime: podman\n  image: \"{{img}}\"\n"
    ))
    .unwrap();
    let e = format!("{:#}", resolve_in(&r, &BTreeMap::new(), Path::new(CWD)).unwrap_err());
    assert!(e.starts_with("recipe `x`: `container.image` is empty once its variables are filled"), "{e}");
}

#[test]
fn container_mounts_are_what_the_run_needs() {
    let text = r#"version: 1
name: x
description: d
variables:
  src: { default: "/src/proj" }
build:
  command: make -B
  cwd: "{src}"
  binaries: [build/app, lib/libk.so]
run:
  command: ["/opt/tools/bin/runner", "x"]
  cwd: "{src}/run"
container:
  image: img
  mounts: [/data, "{src}"]
"#;
    let res = resolve_in(&parse_file(text).unwrap(), &BTreeMap::new(), Path::new(CWD)).unwrap();
    assert_eq!(
        container_mounts(&res),
        paths(&[
            "/data",
            "/opt/tools/bin",
            "/repo/recipes",
            "/src/proj",
            "/src/proj/build",
            "/src/proj/lib",
            "/src/proj/run"
        ])
    );

    // No section: the current directory (the run has no `cwd`) and the recipe's directory; the
    // program is inside the current directory.
    let res = resolve_in(&parse_file(MINIMAL).unwrap(), &BTreeMap::new(), Path::new(CWD)).unwrap();
    assert_eq!(res.run.argv, strings(&["/work/proj/a"]));
    assert_eq!(container_mounts(&res), paths(&["/repo/recipes", "/work/proj"]));

    // A program in the system's folders is the image's own: not mounted over it.
    let text = MINIMAL.replace("./a", "/usr/bin/python3");
    let res = resolve_in(&parse_file(&text).unwrap(), &BTreeMap::new(), Path::new(CWD)).unwrap();
    assert_eq!(container_mounts(&res), paths(&["/repo/recipes", "/work/proj"]));

    // The demo: its build's output folder too.
    let res = resolve_in(&builtin("demo"), &BTreeMap::new(), Path::new(CWD)).unwrap();
    assert_eq!(
        container_mounts(&res),
        paths(&["/repo/recipes", "/work/proj", "/work/proj/target/debug-ima/demo"])
    );
}

#[test]
fn container_is_shown() {
    let text = format!(
        "{MINIMAL}variables:\n  tag: {{ default: \"13.0\" }}\ncontainer:\n  runtime: docker\n  image: \"cuda:{{tag}}\"\n  mounts: [/data]\n  gpus: false\n"
    );
    let r = parse_file(&text).unwrap();
    let show = render_show_in(&r, Path::new(CWD));
    assert!(
        show.ends_with(
            "# run: /work/proj/a\n# container: docker\n#   image: cuda:13.0\n#   mounted at the same path: /data \
             /repo/recipes /work/proj (and the bundle root)\n#   gpus: false (the GPUs are not passed in)\n"
        ),
        "{show}"
    );
    let again =
        parse(&show, RecipeSource::File("recipes/x.yaml".into()), PathBuf::from("/repo/recipes")).unwrap();
    assert_eq!(again.container, r.container);
    let out = check_recipe(&r, Path::new(CWD)).unwrap();
    assert!(
        out.contains("  container: runtime docker, image \"cuda:{tag}\", mounts [\"/data\"], gpus false\n"),
        "{out}"
    );
    // Without a runtime, the command line chooses it.
    let r = parse_file(&format!("{MINIMAL}container:\n  image: img\n")).unwrap();
    assert!(render_show_in(&r, Path::new(CWD)).contains("# container: (chosen with `--container`)\n"));
    assert!(check_recipe(&r, Path::new(CWD))
        .unwrap()
        .contains("  container: runtime from `--container`, image \"img\"\n"));
    // No section, no line.
    assert!(!check_recipe(&parse_file(MINIMAL).unwrap(), Path::new(CWD)).unwrap().contains("container"));
}

// ---- --set and words ---------------------------------------------------------------------

#[test]
fn parse_set_cases() {
    assert_eq!(parse_set("arch=sm_90").unwrap(), ("arch".into(), "sm_90".into()));
    assert_eq!(parse_set("run=./a --x=1").unwrap(), ("run".into(), "./a --x=1".into()));
    assert_eq!(parse_set("binaries=").unwrap(), ("binaries".into(), "".into()));
    for bad in ["arch", "=x", "a b=1", "1a=x", "a-b=1"] {
        let e = format!("{:#}", parse_set(bad).unwrap_err());
        assert!(e.contains("NAME=VALUE"), "{bad}: {e}");
    }
}

#[test]
fn split_words_cases() {
    assert_eq!(split_words("make -B").unwrap(), ["make", "-B"]);
    assert_eq!(
        split_words("cmake --build build --clean-first").unwrap(),
        ["cmake", "--build", "build", "--clean-first"]
    );
    assert_eq!(
        split_words(r#"python -c "import x; x.run()" 'a b'"#).unwrap(),
        ["python", "-c", "import x; x.run()", "a b"]
    );
    assert_eq!(split_words(r"a\ b").unwrap(), ["a b"]);
    assert!(split_words("a 'b").is_err());
    assert!(split_words("a \"b").is_err());
    assert!(split_words("make && ./a").is_err());
}

// ---- load and check ------------------------------------------------------------------------

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("xtask-recipe-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn load_names_and_paths() {
    let e = format!("{:#}", load("tensorrt").unwrap_err());
    assert_eq!(
        e,
        "unknown recipe `tensorrt`: built-in recipes are demo, cuda, pytorch, vllm; or pass a path to a .yaml file"
    );
    let e = format!("{:#}", load("nowhere/x.yaml").unwrap_err());
    assert!(e.starts_with("cannot read recipe `nowhere/x.yaml`"), "{e}");

    let d = temp_dir("load");
    let path = d.join("mine.yaml");
    std::fs::write(&path, MINIMAL).unwrap();
    let r = load(path.to_str().unwrap()).unwrap();
    assert_eq!(r.dir, d);
    assert_eq!(r.source, RecipeSource::File(path.clone()));

    std::fs::write(&path, format!("{MINIMAL}extra: 1\n")).unwrap();
    let e = format!("{:#}", load(path.to_str().unwrap()).unwrap_err());
    assert_eq!(e, format!("{}:6:1: unknown field `extra`, expected one of `version`, `name`, `description`, `python`, `variables`, `collect`, `knobs`, `build`, `run`, `rungs`, `container`, `launch`", path.display()));

    std::fs::write(&path, "a: ".repeat(MAX_RECIPE_BYTES)).unwrap();
    let e = format!("{:#}", load(path.to_str().unwrap()).unwrap_err());
    assert!(e.contains("larger than 1024 KiB"), "{e}");

    std::fs::write(&path, b"version: 1\nname: \xff\n").unwrap();
    let e = format!("{:#}", load(path.to_str().unwrap()).unwrap_err());
    assert!(e.contains("not UTF-8"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn check_reports_notes() {
    let d = temp_dir("check");
    let path = d.join("r.yaml");
    std::fs::write(
        &path,
        "version: 1\nname: r\ndescription: d\nvariables:\n  unused: { default: x }\nbuild:\n  command: make\nrun:\n  command: ./a\n",
    )
    .unwrap();
    let out = check(&path).unwrap();
    assert!(out.starts_with(&format!("{}: ok: recipe `r`", path.display())), "{out}");
    assert!(out.contains("note: variable `unused` is declared but never used"), "{out}");
    assert!(out.contains("note: `build.binaries` is empty"), "{out}");
    assert!(check("demo").unwrap().starts_with("recipes/demo.yaml: ok: recipe `demo`"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn examples_in_the_docs_parse_and_resolve() {
    let doc = std::fs::read_to_string(root().join("docs/recipes.md")).unwrap();
    let mut count = 0;
    for block in doc.split("```yaml\n").skip(1) {
        let yaml = &block[..block.find("```").unwrap()];
        if !yaml.starts_with("version:") {
            continue;
        }
        let r = parse(yaml, RecipeSource::File("docs/recipes.md".into()), PathBuf::from("/repo/docs"))
            .unwrap_or_else(|e| panic!("{e:#}\n{yaml}"));
        resolve_in(&r, &BTreeMap::new(), Path::new(CWD)).unwrap();
        check_recipe(&r, Path::new(CWD)).unwrap();
        count += 1;
    }
    assert_eq!(count, 3);
}

// ---- rendering ------------------------------------------------------------------------------

#[test]
fn render_is_deterministic() {
    snapshot("recipe_list", &render_list());
    assert_eq!(render_list(), render_list());
    for name in builtin_names() {
        let r = builtin(name);
        let show = render_show_in(&r, Path::new(CWD));
        assert_eq!(show, render_show_in(&r, Path::new(CWD)));
        snapshot(&format!("recipe_show_{name}"), &show);
        snapshot(&format!("recipe_check_{name}"), &check_recipe(&r, Path::new(CWD)).unwrap());
        // `recipe show` prints valid YAML: the same recipe again.
        let again =
            parse(&show, RecipeSource::Builtin(name.to_string()), PathBuf::from("/repo/recipes")).unwrap();
        assert_eq!(again.variables, r.variables);
        assert_eq!(again.run, r.run);
    }
}

// ---- hostile input --------------------------------------------------------------------------

#[test]
fn hostile_input_errors_cleanly() {
    let huge = "x".repeat(MAX_RECIPE_BYTES + 1);
    assert!(err(&huge).contains("larger than"));
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(err(&deep).starts_with("recipes/x.yaml:"));
    let deep = format!("{}1{}", "{a: ".repeat(5_000), "}".repeat(5_000));
    assert!(err(&deep).starts_with("recipes/x.yaml:"));
    // libyaml is quadratic in flow nesting: deep nesting is refused before it is parsed.
    let started = std::time::Instant::now();
    let deep = "{a: ".repeat(200_000);
    assert_eq!(
        err(&deep),
        "recipes/x.yaml:1:257: brackets nested deeper than 64 levels; a recipe needs a few"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // Braces in quoted strings and comments do not count.
    let braces = format!(
        "{MINIMAL}# {}\n  env: {{ A: \"{}\", B: '{}' }}\n",
        "{".repeat(100),
        "{{".repeat(100),
        "[".repeat(100)
    );
    parse_file(&braces).unwrap();
    // A huge value is not quoted whole in the message.
    let long = format!("{}\n", "x".repeat(MAX_RECIPE_BYTES - 10));
    assert!(err(&long).len() < 600);
    // Alias expansion ("billion laughs") is bounded.
    let mut laughs = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 0..12 {
        let (p, n) = (char::from(b'a' + i), char::from(b'a' + i + 1));
        laughs.push_str(&format!("{n}: &{n} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"));
    }
    assert!(err(&laughs).starts_with("recipes/x.yaml"));
    let laughs_in_variables = laughs.replace('\n', "\n  ").replacen("a: &a", "variables:\n  a: &a", 1);
    assert!(err(&laughs_in_variables).starts_with("recipes/x.yaml"));
    assert!(err("\t\0\u{feff}:::").starts_with("recipes/x.yaml"));
    assert!(err("version: 1\n---\nversion: 1\n").starts_with("recipes/x.yaml"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn garbage_never_panics(text in "\\PC{0,400}") {
        let _ = parse_file(&text);
    }

    #[test]
    fn yamlish_garbage_never_panics(text in "[a-z:{}\\[\\],'\"\\- \n#&*!|>%@`0-9]{0,300}") {
        if let Err(e) = parse_file(&text) {
            let msg = format!("{:#}", e);
            prop_assert!(msg.starts_with("recipes/x.yaml"), "{}", msg);
        }
    }

    #[test]
    fn mutated_builtin_never_panics(cut in 0usize..2000, insert in "\\PC{0,8}") {
        let text = builtin_text("demo").unwrap();
        let mut cut = cut.min(text.len());
        while !text.is_char_boundary(cut) { cut -= 1; }
        let mutated = format!("{}{}{}", &text[..cut], insert, &text[cut..]);
        if let Ok(r) = parse_file(&mutated) {
            let _ = resolve_in(&r, &BTreeMap::new(), Path::new(CWD));
            let _ = render_show_in(&r, Path::new(CWD));
        }
    }

    /// Whole lines deleted, repeated, garbled, dedented or added to a built-in: never a panic
    /// or a hang, every error a line of its own naming the file, at most the bound of them,
    /// and the count line right.
    #[test]
    fn mutated_lines_report_bounded_errors(
        which in 0usize..4,
        edits in prop::collection::vec((0u8..5, 0usize..400, "[a-z_:{}\\[\\] \"'#&*|>-]{0,12}"), 1..8),
    ) {
        let text = builtin_text(builtin_names()[which]).unwrap();
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        for (op, at, s) in edits {
            if lines.is_empty() {
                break;
            }
            let i = at % lines.len();
            match op {
                0 => { lines.remove(i); }
                1 => { let l = lines[i].clone(); lines.insert(i, l); }
                2 => {
                    let l = &mut lines[i];
                    let mut c = (at / 7).min(l.len());
                    while !l.is_char_boundary(c) { c -= 1; }
                    l.insert_str(c, &s);
                }
                3 => { lines[i] = lines[i].trim_start().to_string(); }
                _ => lines.insert(i, s),
            }
        }
        let started = std::time::Instant::now();
        let result = parse_file(&lines.join("\n"));
        prop_assert!(started.elapsed() < Duration::from_secs(5));
        if let Err(e) = result {
            let msg = format!("{e:#}");
            let all: Vec<&str> = msg.lines().collect();
            if all.len() > 1 {
                let (last, errors) = all.split_last().unwrap();
                let n: usize = last.split(' ').next().unwrap().parse().unwrap();
                prop_assert_eq!(n, errors.len(), "{}", msg);
                prop_assert!(n <= MAX_RECIPE_ERRORS, "{}", msg);
                prop_assert!(last.contains(" errors in recipes/x.yaml"), "{}", msg);
                for line in errors {
                    prop_assert!(line.starts_with("recipes/x.yaml"), "{}", msg);
                }
            } else {
                prop_assert!(msg.starts_with("recipes/x.yaml"), "{}", msg);
            }
        }
    }

    #[test]
    fn split_words_never_panics(s in "\\PC{0,200}") {
        let _ = split_words(&s);
    }

    #[test]
    fn join_then_split_round_trips(words in prop::collection::vec("\\PC{0,12}", 0..6)) {
        let line = join_words(&words);
        prop_assert_eq!(split_words(&line).unwrap(), words);
    }
}

// ---- bombs and special files -------------------------------------------------------------

/// A scratch folder for recipe files.
fn recipe_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("recipe-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The billion laughs: `levels` levels of ten aliases each, in a recipe's `variables`.
fn laughs(levels: usize) -> String {
    let mut s =
        format!("{MINIMAL}variables:\n  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for l in 1..levels {
        let refs = vec![format!("*l{}", l - 1); 10].join(", ");
        s.push_str(&format!("  l{l}: &l{l} [{refs}]\n"));
    }
    s
}

#[test]
fn alias_bombs_are_refused_before_parsing_naming_the_file() {
    let d = recipe_dir("bomb");
    let path = d.join("laughs.yaml");
    // Ten levels of ten: 10^10 `lol`s from under 1 KiB. (How fast: docs/benchmarks.md.)
    let bomb = laughs(10);
    assert!(bomb.len() < 1024);
    std::fs::write(&path, &bomb).unwrap();
    let e = format!("{:#}", load(path.to_str().unwrap()).unwrap_err());
    // Refused at line 12, where `l5` first names `l4` (10^5 `lol`s).
    let want = format!("{}:12:", path.display());
    assert!(e.starts_with(&want), "{e}");
    assert!(e.contains("its aliases expand it by more than 1.0 MiB (at `*l4`)"), "{e}");
    assert!(e.ends_with("a recipe needs few or no aliases: write the values out, or share them through `variables` and `{name}` templates (see docs/recipes.md)"), "{e}");
    // In block style, and with the sequences at their keys' indentation.
    let mut block = format!("{MINIMAL}variables:\n  l0: &l0\n");
    block.push_str(&"  - lol\n".repeat(10));
    for l in 1..10 {
        block.push_str(&format!("  l{l}: &l{l}\n"));
        block.push_str(&format!("  - *l{}\n", l - 1).repeat(10));
    }
    assert!(err(&block).contains("its aliases expand it by more than"), "{}", err(&block));
    // Too many aliases, or anchors, however small their nodes.
    let many = format!("{MINIMAL}variables:\n  a: &a x\n  b: [{}]\n", vec!["*a"; 10_001].join(", "));
    assert!(err(&many).contains("more than 10000 aliases"), "{}", err(&many));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn recipes_with_a_few_aliases_still_load() {
    // An environment shared by two rungs through an anchor, as a person might write it.
    let text = format!(
        "{MINIMAL}rungs:\n  memcheck:\n    env: &env {{ PYTORCH_NO_CUDA_MEMORY_CACHING: \"1\" }}\n  initcheck:\n    env: *env\n"
    );
    let r = parse_file(&text).unwrap();
    let _ = r;
    for name in builtin_names() {
        let text = builtin_text(name).unwrap();
        xtask::findings::yaml_bounds::check(text, &xtask::findings::yaml_bounds::Limits::RECIPE)
            .unwrap_or_else(|r| panic!("{name}: {r}"));
        load(name).unwrap();
    }
    for e in std::fs::read_dir(root().join("recipes")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "yaml") {
            load(p.to_str().unwrap()).unwrap_or_else(|e| panic!("{}: {e:#}", p.display()));
        }
    }
}

#[test]
fn a_fifo_or_device_as_the_recipe_is_refused_without_blocking() {
    use std::os::unix::ffi::OsStrExt;
    let d = recipe_dir("fifo");
    let fifo = d.join("recipe.yaml");
    let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // Safe: a valid NUL-terminated path.
    assert_eq!(unsafe { nix::libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for (path, what) in
        [(fifo.display().to_string(), "a named pipe (FIFO)"), ("/dev/zero".to_string(), "a character device")]
    {
        let (tx, rx) = std::sync::mpsc::channel();
        let p = path.clone();
        std::thread::spawn(move || {
            let _ = tx.send(format!("{:#}", load(&p).unwrap_err()));
        });
        let e = rx.recv_timeout(Duration::from_secs(20)).unwrap_or_else(|_| panic!("loading {path} blocked"));
        assert!(e.contains(&format!("cannot read recipe `{path}`")), "{e}");
        assert!(e.contains(&format!("it is {what}, not a regular file")), "{e}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A recipe saved with a UTF-8 byte-order mark (as Windows editors write one) reads as the
/// same recipe: the mark is no part of its first key (issue 22: `version` was "missing").
#[test]
fn a_byte_order_mark_is_not_part_of_the_first_key() {
    let text = "\u{feff}version: 1\nname: bom\ndescription: \"x\"\nrun:\n  command: [\"true\"]\n";
    let r = parse(text, RecipeSource::File("bom.yaml".into()), PathBuf::from("/repo")).unwrap();
    assert_eq!(r.name, "bom");
}

/// Issue 22: a number or boolean where a string is expected is taken as the text it was
/// written as, never read back from a number (`010` stays `010`, `1e3` stays `1e3`, `~` in a
/// list is the text `~`), as docs/recipes.md says; a list or mapping where a string is
/// expected, a string where a number or boolean is, or a list where a mapping is, is refused
/// naming the field, its line and the type expected.
#[test]
fn scalars_are_taken_as_written_and_other_types_are_refused_by_field() {
    let r = parse_file(
        "version: 1\nname: 012\ndescription: 1e3\nrun:\n  command: [echo, true, 3, 010, 1e3, 0x1F, .inf, -0, ~]\n  \
         env: {A: 010, B: no, C: 1.50, D: true}\n  cwd: 0755\n",
    )
    .unwrap();
    assert_eq!((r.name.as_str(), r.description.as_str()), ("012", "1e3"));
    assert_eq!(
        r.run.command,
        Words::List(strings(&["echo", "true", "3", "010", "1e3", "0x1F", ".inf", "-0", "~"]))
    );
    assert_eq!(r.run.env, sets(&[("A", "010"), ("B", "no"), ("C", "1.50"), ("D", "true")]));
    assert_eq!(r.run.cwd.as_deref(), Some("0755"));
    let head = "version: 1\nname: x\ndescription: d\n";
    for (yaml, says) in [
        ("run:\n  command: [t]\n  timeout: \"ten\"\n", "recipes/x.yaml:6:12: run.timeout: invalid type: string \"ten\", expected a whole number of seconds"),
        ("run:\n  command: [t]\n  timeout: 10.5\n", "run.timeout: invalid type: floating point `10.5`, expected a whole number"),
        ("run:\n  command: [t]\n  launch_blocking: 1\n", "run.launch_blocking: invalid type: integer `1`, expected a boolean"),
        ("python: \"yes\"\nrun:\n  command: [t]\n", "python: invalid type: string \"yes\", expected a boolean"),
        ("run:\n  command: [t, [a]]\n", "run.command[1]: invalid type: sequence, expected a string"),
        ("run:\n  command: [t, {a: 1}]\n", "run.command[1]: invalid type: map, expected a string"),
        ("run:\n  command: 3\n", "run.command: invalid type: integer `3`, expected a command"),
        ("run:\n  command: [t]\n  env: [A, B]\n", "run.env: invalid type: sequence, expected a mapping"),
        ("run:\n  command: [t]\n  env: {A: [1]}\n", "run.env.A: invalid type: sequence, expected a string"),
        ("run:\n  command: [t]\n  cwd: {a: b}\n", "run.cwd: invalid type: map, expected a string"),
        ("rungs: [memcheck]\nrun:\n  command: [t]\n", "rungs: invalid type: sequence, expected a mapping"),
        ("run: [t]\n", "run: invalid type: sequence, expected a mapping with `command`"),
    ] {
        let e = err(&format!("{head}{yaml}"));
        assert!(e.contains(says), "{yaml}: {e}");
    }
    // A time limit with its unit, as people write them.
    for (t, secs) in [("\"2m\"", 120), ("90s", 90), ("1h30m", 5400), ("1d", 86_400), ("45", 45)] {
        let r = parse_file(&format!("{head}run:\n  command: [t]\n  timeout: {t}\n")).unwrap();
        assert_eq!(r.run.timeout, Some(secs), "{t}");
    }
    for bad in ["2x", "m", "1h30", "-5m", "0"] {
        let e = err(&format!("{head}run:\n  command: [t]\n  timeout: {bad}\n"));
        assert!(e.contains("run.timeout: invalid"), "{bad}: {e}");
    }
    // `name: [a]` names the field too.
    let e = err("version: 1\nname: [a]\ndescription: d\nrun:\n  command: [t]\n");
    assert!(e.contains("name: invalid type: sequence, expected a recipe name"), "{e}");
}

/// `recipe init` in the folders of the GPU suite's own programs (tests/gpu/kinds: each with its
/// Makefile, and the Python ones with their script): the drafted recipe loads, names the
/// program the Makefile builds (`make -B`, `./PROG`) or the script, says what it guessed, and
/// makes a plan; a second init refuses to overwrite it; a folder with nothing to draft from
/// says where to start instead.
#[test]
fn recipe_init_drafts_a_recipe_that_loads_for_the_suite_s_programs() {
    let kinds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/gpu/kinds");
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("recipe-init-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let xtask = |dir: &Path, args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_xtask")).args(args).current_dir(dir).output().unwrap()
    };
    for (case, want) in [
        ("paged_kv_trap", "[\"./paged_kv\"]"),
        ("syncwarp_tail_mask", "[\"./expert_offsets\"]"),
        ("rmsnorm_block_race", "[\"./rmsnorm\"]"),
        ("triton_rope_graph", "[\"python3\", \"rope_decode.py\"]"),
    ] {
        let dir = tmp.join(case);
        std::fs::create_dir_all(&dir).unwrap();
        for e in std::fs::read_dir(kinds.join(case)).unwrap().flatten() {
            std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
        }
        let o = xtask(&dir, &["recipe", "init"]);
        let said = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{case}: {said}");
        assert!(said.contains("wrote ./debug-ima.yaml") && said.contains("next: "), "{case}: {said}");
        let yaml = std::fs::read_to_string(dir.join("debug-ima.yaml")).unwrap();
        assert!(yaml.contains(want), "{case}: {yaml}");
        assert_eq!(yaml.contains("[\"make\", \"-B\"]"), !case.starts_with("triton"), "{case}: {yaml}");
        let plan = xtask(&dir, &["debug-ima", "--recipe", "./debug-ima.yaml", "--dry-run"]);
        assert!(plan.status.success(), "{case}: {}", String::from_utf8_lossy(&plan.stderr));
        let again = xtask(&dir, &["recipe", "init"]);
        assert_eq!(again.status.code(), Some(2), "{case}");
        assert!(String::from_utf8_lossy(&again.stderr).contains("--force"), "{case}");
    }
    let empty = tmp.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let o = xtask(&empty, &["recipe", "init"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("recipe show cuda"));
    let _ = std::fs::remove_dir_all(&tmp);
}

/// The case proptest found (`mutated_lines_report_bounded_errors`): lines of the demo recipe
/// repeated and a `{"` inserted run the comment lines into one quoted key, whose name holds
/// line breaks; the error still takes one line, the breaks shown as `\n`.
#[test]
fn an_error_quoting_a_name_with_line_breaks_stays_one_line() {
    let text = builtin_text("demo").unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    for (op, at, s) in [(1, 0, ""), (1, 0, ""), (4, 29, ""), (4, 196, "{\"")] {
        let i = at % lines.len();
        if op == 1 {
            let l = lines[i].clone();
            lines.insert(i, l);
        } else {
            lines.insert(i, s.to_string());
        }
    }
    let msg = format!("{:#}", parse_file(&lines.join("\n")).unwrap_err());
    assert_eq!(msg.lines().count(), 1, "{msg}");
    assert!(msg.starts_with("recipes/x.yaml") && msg.contains("\\n"), "{msg}");
}

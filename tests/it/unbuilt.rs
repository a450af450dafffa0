//! A project not built yet, and mistakes in what to run (issue 41, item 1): the program the
//! run names is built before the first rung that runs it whenever it is missing, whatever the
//! recipe's `binaries` and `--rungs` say; a missing program with no build to make it, or a
//! checkout a variable names that does not exist, is refused before anything runs, with exit
//! 1 and the path, and nothing is created (no bundle, no folder of the recipe's).
//!
//! The GPU tools are the stand-ins of tests/standins/; the "project" is a scratch folder whose
//! build writes `./app` (a script that runs the stand-in target, which replays a recording).

use std::path::Path;

use crate::support;
use support::plant::write_exec;
use support::run::{Output, Run};
use support::{path_with, root, standins, Scratch};

/// A Makefile whose default target writes `app`: the stand-in target, run from the project.
const MAKEFILE: &str = "app:\n\tprintf '#!/bin/sh\\nexec target \"$$@\"\\n' > app\n\tchmod +x app\n";

/// The entries of `dir`, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// `debug-ima ARGS` in the scratch folder, the stand-ins first on PATH (without `--recipe`,
/// `--yes` or `--bundle-dir` unless `args` gives them).
fn debug_ima(s: &Scratch, args: &[&str]) -> Output {
    let mut run = Run::new(s, Path::new("cuda"), "oob_write");
    run.args = args.iter().map(|a| a.to_string()).collect();
    run.run()
}

/// The README's line for one's own project, on a project not built yet: `--recipe cuda --set
/// build="make -B" --set run="./app"` names no `binaries`, so before issue 41 nothing counted
/// as "not built yet": `./app` was run missing, and the run ended "no GPU fault" with exit 0.
/// Now the baseline builds first (`./app` does not exist) and the verdict comes from the
/// program the build made.
#[test]
fn the_readme_s_cuda_line_builds_an_unbuilt_project_first() {
    let s = Scratch::for_run("unbuilt-cuda");
    std::fs::write(s.path("Makefile"), MAKEFILE).unwrap();
    let bundles = s.bundles().display().to_string();
    let out = debug_ima(
        &s,
        &[
            "run",
            "--recipe",
            "cuda",
            "--set",
            "build=make -B",
            "--set",
            "run=./app",
            "--yes",
            "--bundle-dir",
            &bundles,
        ],
    );
    assert_eq!(out.code(), Some(0), "{}", out.both());
    assert!(s.path("app").is_file(), "the build did not run:\n{}", out.both());
    let b = s.only_bundle();
    assert!(b.exists("rungs/01-baseline/build.log"), "{:?}", b.files_in("rungs/01-baseline"));
    let cmd = b.read("rungs/01-baseline/build.command.txt");
    assert!(cmd.contains("NVCC_PREPEND_FLAGS=-lineinfo -g") && cmd.contains("make -B"), "{cmd}");
    assert!(out.stderr.contains("does not exist yet: building the target first"), "{}", out.both());
    assert_eq!(b.exit_of("baseline", "target"), "signal 6");
    assert!(out.stdout.contains("verdict: "), "{}", out.both());
    assert!(b.findings()["verdict"]["kernel"].is_string(), "{}", b.read("findings.json"));
    s.assert_no_standin_left();
}

/// `--rungs` without the baseline (`--recipe demo --rungs coredump,memcheck` on a fresh
/// clone): before issue 41 only the baseline built, so the coredump rung ran a program that did
/// not exist. Now the rebuild is put first and builds it; the rungs asked for then run it.
/// The build here makes `out/app` and the recipe names no `binaries`: the program is what is
/// missing. The rebuild rung needs nvcc: a stand-in answers doctor's `nvcc --version` with
/// the real one's recorded text (the build itself never calls it).
#[test]
fn rungs_without_the_baseline_build_the_target_first() {
    let s = Scratch::for_run("unbuilt-rungs");
    let shims = s.path("shims");
    std::fs::create_dir_all(&shims).unwrap();
    let version = root().join("tests/fixtures/toolchain/nvcc-version.txt");
    write_exec(
        &shims.join("nvcc"),
        &format!(
            "#!/bin/sh\n[ \"$1\" = --version ] && exec cat '{}'\necho 'stand-in nvcc: only --version' >&2\nexit 1\n",
            version.display()
        ),
    );
    let recipe = s.write_recipe(
        "version: 1\nname: unbuilt\ndescription: \"a build that makes the program\"\n\
         build:\n  command: [\"sh\", \"-c\", \"mkdir -p out && printf '#!/bin/sh\\\\nexec target \\\"$@\\\"\\\\n' > out/app && chmod +x out/app\"]\n\
         run:\n  command: [\"out/app\"]\n  timeout: 30\n",
    );
    let out = Run::new(&s, &recipe, "oob_write")
        .path(path_with(&[&shims, &standins()]))
        .arg("--rungs")
        .arg("coredump,memcheck")
        .run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    assert!(s.path("out/app").is_file(), "the build did not run:\n{}", out.both());
    assert!(out.stderr.contains("does not exist yet: the rebuild runs first"), "{}", out.both());
    let b = s.only_bundle();
    assert_eq!(b.rung_dirs(), ["01-rebuild", "02-coredump", "03-memcheck"], "{}", out.both());
    assert_eq!(b.rung("rebuild")["status"].as_str(), Some("ran"), "{}", b.read("manifest.yaml"));
    assert_eq!(b.exit_of("coredump", "target"), "signal 6");
    assert!(b.findings()["verdict"]["kernel"].is_string(), "{}", b.read("findings.json"));

    // The demo on a fresh clone, as its plan says (the dry run needs no nvcc): the rebuild
    // first, then the rungs asked for.
    let fresh = Scratch::for_run("unbuilt-demo");
    let plan = debug_ima(&fresh, &["run", "--recipe", "demo", "--rungs", "coredump,memcheck", "--dry-run"]);
    assert_eq!(plan.code(), Some(0), "{}", plan.both());
    assert!(plan.stdout.contains("plan: rebuild, coredump, memcheck\n"), "{}", plan.both());
    assert_eq!(entries(&fresh.dir), ["xtask.stderr", "xtask.stdout"], "the dry run created something");
    s.assert_no_standin_left();
}

/// A program that does not exist and no build to make it: a typo, refused with exit 1 and the
/// path before anything runs (before issue 41: "the target failed without a CUDA error",
/// exit 0, even with `--error-exitcode`), for `run` and `watch` alike, a path or a bare name.
#[test]
fn a_missing_program_without_a_build_is_refused_before_anything_runs() {
    let s = Scratch::for_run("nosuch");
    let bundles = s.bundles().display().to_string();
    let nosuch = s.dir.canonicalize().unwrap().join("nosuch").display().to_string();
    let cases: [&[&str]; 5] = [
        &["run", "--yes", "--bundle-dir", &bundles, "--", "./nosuch", "--n", "4"],
        &["run", "--yes", "--bundle-dir", &bundles, "--error-exitcode", "3", "--", "./nosuch"],
        &["run", "--recipe", "cuda", "--set", "run=./nosuch", "--yes", "--bundle-dir", &bundles],
        &["watch", "--bundle-dir", &bundles, "--", "./nosuch"],
        &["run", "--yes", "--bundle-dir", &bundles, "--", "nosuch-program-of-issue-41"],
    ];
    for args in cases {
        let out = debug_ima(&s, args);
        let shown = args.join(" ");
        assert_eq!(out.code(), Some(1), "`{shown}`: {}", out.both());
        let named = if args.contains(&"nosuch-program-of-issue-41") {
            "`nosuch-program-of-issue-41`, is not on PATH"
        } else if args[0] == "watch" {
            "`./nosuch`, does not exist"
        } else {
            &format!("`{nosuch}`, does not exist")
        };
        assert!(out.stderr.contains(named), "`{shown}`: no {named}:\n{}", out.both());
        assert!(out.stderr.contains("nothing was run"), "`{shown}`: {}", out.both());
        if args.contains(&"cuda") {
            assert!(out.stderr.contains("--set build="), "`{shown}`: {}", out.both());
        }
        assert!(s.standin_pids().is_empty(), "`{shown}` ran something: {:?}", s.standin_pids());
        assert_eq!(entries(&s.dir), ["xtask.stderr", "xtask.stdout"], "`{shown}` created something");
    }
}

/// The `vllm` recipe with a checkout that does not exist: before issue 41 the build's output
/// folder was created (`<vllm_src>/vllm/`, and with it `<vllm_src>`) and `pip install -e .` ran
/// in the empty folder. Now it is refused before anything runs, naming the variable and the
/// path, and nothing is created. A run folder that does not exist, with no build, likewise.
#[test]
fn a_checkout_or_folder_that_does_not_exist_is_refused_and_nothing_is_created() {
    let s = Scratch::for_run("no-checkout");
    let bundles = s.bundles().display().to_string();
    let checkout = s.path("src/vllm");
    let set = format!("vllm_src={}", checkout.display());
    let out = debug_ima(
        &s,
        &[
            "run",
            "--recipe",
            "vllm",
            "--set",
            &set,
            "--set",
            "repro=python3 repro.py",
            "--yes",
            "--bundle-dir",
            &bundles,
        ],
    );
    assert_eq!(out.code(), Some(1), "{}", out.both());
    let said = format!("works in `{}` (from `vllm_src`), which does not exist", checkout.display());
    assert!(out.stderr.contains(&said), "{}", out.both());
    assert!(out.stderr.contains("--set vllm_src=PATH"), "{}", out.both());
    assert!(!s.path("src").exists(), "the checkout's folder was created");
    assert!(s.standin_pids().is_empty(), "{:?}", s.standin_pids());
    assert_eq!(entries(&s.dir), ["xtask.stderr", "xtask.stdout"]);

    let recipe = s.write_recipe(
        &support::run::target_recipe("").replace("  timeout: 30\n", "  timeout: 30\n  cwd: nowhere\n"),
    );
    let out = Run::new(&s, &recipe, "oob_write").run();
    assert_eq!(out.code(), Some(1), "{}", out.both());
    let nowhere = s.path("nowhere");
    assert!(
        out.stderr.contains(&format!("works in `{}`, which does not exist", nowhere.display())),
        "{}",
        out.both()
    );
    assert!(out.stderr.contains("`run.cwd`"), "{}", out.both());
    assert!(!nowhere.exists() && !s.bundles().exists(), "{:?}", entries(&s.dir));
}

/// A Python script that does not exist (`--recipe pytorch --set script=nosuch.py`): before,
/// the interpreter was found on PATH, so the climb ran `python3 nosuch.py` under every rung and
/// called it "the target failed without a CUDA error". Now it is refused as a missing program
/// is: exit 1, the path, nothing run or created; `-m MODULE` is never taken for a script.
#[test]
fn a_missing_python_script_is_refused_before_anything_runs() {
    let s = Scratch::for_run("nosuch-script");
    let bundles = s.bundles().display().to_string();
    let cases: [&[&str]; 3] = [
        &["run", "--recipe", "pytorch", "--set", "script=nosuch.py", "--yes", "--bundle-dir", &bundles],
        &["run", "--yes", "--bundle-dir", &bundles, "--", "python3", "-u", "nosuch.py", "--steps", "3"],
        &["watch", "--bundle-dir", &bundles, "--", "python3", "nosuch.py"],
    ];
    for args in cases {
        let out = debug_ima(&s, args);
        let shown = args.join(" ");
        assert_eq!(out.code(), Some(1), "`{shown}`: {}", out.both());
        assert!(out.stderr.contains("nosuch.py`, does not exist"), "`{shown}`: {}", out.both());
        assert!(out.stderr.contains("nothing was run"), "`{shown}`: {}", out.both());
        if args.contains(&"pytorch") {
            assert!(out.stderr.contains("--set script=PATH"), "`{shown}`: {}", out.both());
        }
        assert!(s.standin_pids().is_empty(), "`{shown}` ran something: {:?}", s.standin_pids());
        assert_eq!(entries(&s.dir), ["xtask.stderr", "xtask.stdout"], "`{shown}` created something");
    }
}

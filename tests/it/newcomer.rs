//! A newcomer's first contact, as the README tells it: the tool installed with `cargo
//! install --path xtask --locked --bin debug-ima` (here into a scratch root, a debug build,
//! offline), then run from a separate folder holding a small project (a Makefile, an `app`
//! and a git repository with a tag): its relative paths (`--recipe mine.yaml`, `./app`,
//! `make`, `bundles/`) resolve there and `git describe` names that project, not this clone;
//! `-C DIR` does the same from elsewhere. And `cargo xtask --help` keeps working in the clone.
//! Installed from a copy of the clone that is deleted afterwards, the tool writes the files
//! it carries (the built-in recipes, the container files) into its cache folder and
//! `container build` builds from there.
//!
//! The GPU tools are the stand-ins of tests/standins/ (first on PATH): `./app` runs the
//! stand-in target, which replays a recording of tests/fixtures/h200/; `docker` is a stand-in
//! the test writes, which records what it is given.
//!
//! Each test here builds the tool once more (a nested `cargo install`, or `cargo xtask` in a
//! target folder of its own): they run with `DEBUG_IMA_SLOW_TESTS=1`, which `.ci/run` sets,
//! and a developer's test command skips them, saying so (`support::slow_tests`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support;
use support::{copy_dir, fixture, path_with, root, standins, Scratch};

/// The project's recipe: its build is `make` (which writes `built-here.txt` where it runs,
/// and the binary the baseline builds when it is missing, `out/app.bin`),
/// its run `./app` (which writes the folder it runs in), both relative to the start folder.
const RECIPE: &str = "version: 1\nname: newcomer\ndescription: \"a small CUDA project with a Makefile\"\n\
    build:\n  command: \"make\"\n  timeout: 60\n  binaries: [\"out/app.bin\"]\n\
    run:\n  command: \"./app\"\n  timeout: 30\n";

const MAKEFILE: &str = "all:\n\tpwd > built-here.txt\n\tmkdir -p out\n\tcp app out/app.bin\n";

/// `./app`: notes where it runs, then is the stand-in target (replaying the recording).
const APP: &str = "#!/bin/sh\npwd > ran-here.txt\nexec target \"$@\"\n";

/// The tag the project's `git describe` names.
const TAG: &str = "v0.3.1-newcomer";

/// cargo, as the test runner was started by it.
fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

fn run_ok(cmd: &mut Command, what: &str) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({:?}):\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Installs the tool as the README says, into `root/bin`, building in a target folder of
/// its own (the test runner's is locked by the `cargo test` that runs this): the first time
/// it builds the dependencies, later times only link. Returns the binary.
fn install(root_dir: &Path) -> PathBuf {
    install_from(&root(), root_dir)
}

/// [`install`] from the workspace at `src` (the clone, or a copy of it).
fn install_from(src: &Path, root_dir: &Path) -> PathBuf {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("newcomer-target");
    std::fs::create_dir_all(root_dir).unwrap();
    run_ok(
        cargo()
            .args(["install", "--path"])
            .arg(src.join("xtask"))
            .args(["--locked", "--bin", "debug-ima", "--debug", "--offline", "--root"])
            .arg(root_dir)
            .env("CARGO_TARGET_DIR", &target)
            .current_dir(root_dir),
        "cargo install --path xtask --locked --bin debug-ima",
    );
    let bin = root_dir.join("bin/debug-ima");
    assert!(bin.is_file(), "{} was not installed", bin.display());
    bin
}

/// The small project: a Makefile, `./app`, the recipe, committed and tagged in git.
fn project(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("Makefile"), MAKEFILE).unwrap();
    std::fs::write(dir.join("mine.yaml"), RECIPE).unwrap();
    std::fs::write(dir.join(".gitignore"), "bundles/\nout/\n*-here.txt\n").unwrap();
    let app = dir.join("app");
    std::fs::write(&app, APP).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&app, std::fs::Permissions::from_mode(0o755)).unwrap();
    let git = |args: &[&str]| {
        run_ok(
            Command::new("git")
                .args(["-c", "user.name=Newcomer", "-c", "user.email=newcomer@example.com"])
                .args(args)
                .current_dir(dir)
                .env_remove("GIT_DIR")
                .env_remove("GIT_WORK_TREE"),
            &format!("git {}", args.join(" ")),
        )
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "a small CUDA project"]);
    git(&["tag", TAG]);
}

/// The installed binary, started in `cwd`, with `args`, the stand-ins first on PATH.
fn debug_ima(s: &Scratch, bin: &Path, cwd: &Path, args: &[&str]) -> Output {
    let out = Command::new(bin)
        .args(args)
        .current_dir(cwd)
        .env("PATH", path_with(&[&standins()]))
        .env("STANDIN_CASE", fixture("oob_write"))
        .env("STANDIN_PIDS", s.pids_file())
        .env_remove("NVCC_PREPEND_FLAGS")
        .env_remove("STANDIN_HANG")
        .env_remove("STANDIN_CHILD")
        .env_remove("STANDIN_NO_DUMP")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .expect("cannot run the installed debug-ima");
    s.assert_no_standin_left();
    out
}

fn both(out: &Output) -> String {
    format!(
        "--- exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The bundles under `dir/bundles`, sorted.
fn bundles(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("bundles"))
        .map(|rd| rd.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// Checks one run of the project: it built and ran in the project, the bundle is in the
/// project's `bundles/`, and its `git describe` is the project's tag, not the clone's.
fn assert_ran_in_project(project: &Path, out: &Output, bundles_before: usize) {
    assert_eq!(out.status.code(), Some(0), "{}", both(out));
    let canonical = project.canonicalize().unwrap();
    for (file, what) in [("built-here.txt", "`make`"), ("ran-here.txt", "`./app`")] {
        let at = std::fs::read_to_string(project.join(file))
            .unwrap_or_else(|e| panic!("{what} did not run in the project ({file}: {e}):\n{}", both(out)));
        assert_eq!(Path::new(at.trim()).canonicalize().unwrap(), canonical, "{what} ran elsewhere");
    }
    let found = bundles(project);
    assert_eq!(
        found.len(),
        bundles_before + 1,
        "no new bundle in the project's bundles/: {found:?}\n{}",
        both(out)
    );
    let bundle = found.iter().max_by_key(|p| std::fs::metadata(p).unwrap().modified().unwrap()).unwrap();
    let describe = std::fs::read_to_string(bundle.join("env/git-describe.txt")).unwrap();
    assert!(describe.contains(TAG), "git describe does not name the project's tag: {describe:?}");
    let clone = Command::new("git")
        .args(["describe", "--always", "--dirty", "--tags"])
        .current_dir(root())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    if !clone.is_empty() {
        assert!(!describe.contains(&clone), "git describe named the clone ({clone}): {describe:?}");
    }
}

#[test]
fn installed_as_the_readme_says_it_runs_in_the_users_project_and_with_dash_c() {
    if !support::slow_tests(
        "newcomer::installed_as_the_readme_says_it_runs_in_the_users_project_and_with_dash_c",
    ) {
        return;
    }
    let s = Scratch::create("newcomer", "project");
    let bin = install(&s.path("install"));
    let project_dir = s.path("my-cuda-project");
    project(&project_dir);

    // From the project's folder: every relative path is the project's.
    let out = debug_ima(
        &s,
        &bin,
        &project_dir,
        &["run", "--recipe", "mine.yaml", "--rungs", "baseline", "--yes", "--bundle-dir", "bundles"],
    );
    assert_ran_in_project(&project_dir, &out, 0);
    // The bundle records the tool by the name it was started under, as its messages do.
    let bundle = bundles(&project_dir).pop().unwrap();
    let manifest = std::fs::read_to_string(bundle.join("manifest.yaml")).unwrap();
    assert!(manifest.starts_with("tool: debug-ima\n"), "{manifest}");
    let replay = std::fs::read_to_string(bundle.join("replay.sh")).unwrap();
    assert!(replay.contains("# Written by debug-ima "), "{replay}");
    let report = debug_ima(&s, &bin, &project_dir, &["bundle", "report", bundle.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&report.stdout).contains("### `debug-ima` report"), "{}", both(&report));
    for f in ["built-here.txt", "ran-here.txt"] {
        std::fs::remove_file(project_dir.join(f)).unwrap();
    }
    std::fs::remove_dir_all(project_dir.join("out")).unwrap();

    // From elsewhere with `-C DIR`: the same, as if started there.
    let elsewhere = s.path("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let dir = project_dir.display().to_string();
    let out = debug_ima(
        &s,
        &bin,
        &elsewhere,
        &["-C", &dir, "run", "--recipe", "mine.yaml", "--rungs", "baseline", "--yes"],
    );
    assert_ran_in_project(&project_dir, &out, 1);
    assert!(!elsewhere.join("bundles").exists(), "a bundle went to the start folder, not `-C DIR`");

    // A `-C` folder that does not exist is a usage error.
    let out = debug_ima(&s, &bin, &elsewhere, &["-C", "no-such-folder", "doctor"]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`-C no-such-folder`"), "{}", both(&out));

    // The help names the tool as it was started.
    let out = debug_ima(&s, &bin, &elsewhere, &["--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("Usage: debug-ima "), "{help}");
    assert!(help.contains("-C <DIR>"), "{help}");

    // And so do the commands its messages suggest.
    let empty = elsewhere.join("no-bundles-yet");
    std::fs::create_dir_all(&empty).unwrap();
    let out = debug_ima(&s, &bin, &elsewhere, &["bundle", "list", "--bundle-dir", empty.to_str().unwrap()]);
    let said = both(&out);
    assert!(said.contains("`debug-ima run --recipe demo`"), "{said}");
    assert!(!said.contains("cargo xtask"), "{said}");

    // It uninstalls by the same name (the package is named after the tool).
    run_ok(
        cargo().args(["uninstall", "debug-ima", "--root"]).arg(s.path("install")).current_dir(&elsewhere),
        "cargo uninstall debug-ima",
    );
    assert!(!bin.exists(), "`cargo uninstall debug-ima` left {}", bin.display());
}

/// Inside the clone, `cargo xtask` (the alias) keeps working, and its help says so.
#[test]
fn cargo_xtask_still_works_inside_the_clone() {
    if !support::slow_tests("newcomer::cargo_xtask_still_works_inside_the_clone") {
        return;
    }
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("newcomer-target");
    let out = run_ok(
        cargo().args(["xtask", "--help"]).current_dir(root()).env("CARGO_TARGET_DIR", &target),
        "cargo xtask --help",
    );
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("Usage: cargo xtask "), "{help}");
    assert!(help.contains("debug-ima"), "{help}");

    // The README's main job, as pasted from it: on a machine without a GPU (CI) it stops at
    // once naming the GPU, with exit 1 and no bundle, through the alias too.
    if support::has_real_nvidia_smi() {
        eprintln!("the README's main job not run: this machine has an nvidia-smi (it would run the demo)");
        return;
    }
    let bundles = target.join("readme-bundles");
    let out = cargo()
        .args(["xtask", "debug-ima", "--recipe", "demo", "--bundle-dir", bundles.to_str().unwrap()])
        .current_dir(root())
        .env("CARGO_TARGET_DIR", &target)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let err = String::from_utf8_lossy(&out.stderr).to_lowercase();
    assert!(err.contains("gpu") && (err.contains("nvidia-smi") || err.contains("driver")), "{}", both(&out));
    assert!(!bundles.exists(), "a bundle was created without a GPU");
}

/// A folder outside the clone (the system's temporary folder, not `CARGO_TARGET_TMPDIR`,
/// which is inside it), removed at the end unless the test failed.
struct Outside(PathBuf);

impl Outside {
    fn create(name: &str) -> Outside {
        let dir = std::env::temp_dir().join(format!("debug-ima-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let dir = dir.canonicalize().unwrap();
        assert!(!dir.starts_with(root().canonicalize().unwrap()), "{} is inside the clone", dir.display());
        Outside(dir)
    }
}

impl Drop for Outside {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A stand-in `docker` for `container build`: `build -f FILE -t TAG CONTEXT` appends its
/// argv, the context's file names and a copy of FILE to `log/`, and remembers TAG; `image
/// inspect --format ... TAG` prints what Docker prints for a local build (`sha256:<64 hex>|`,
/// no repo digests) for a remembered tag, else fails as Docker does for a missing image.
fn standin_docker(dir: &Path, log: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::create_dir_all(log).unwrap();
    let script = format!(
        r##"#!/bin/sh
export LC_ALL=C
log='{log}'
printf 'argv:' >> "$log/calls.txt"
for a in "$@"; do printf ' %s' "$a" >> "$log/calls.txt"; done
echo >> "$log/calls.txt"
if [ "$1" = build ] && [ "$2" = -f ] && [ "$4" = -t ] && [ $# -eq 6 ]; then
    echo "context: $(ls -A "$6" | tr '\n' ' ')" >> "$log/calls.txt"
    cp "$3" "$log/$(basename "$3")"
    echo "$5" >> "$log/tags.txt"
    echo "#1 [internal] load build definition from $(basename "$3")"
    echo "#2 naming to docker.io/$5 done"
    exit 0
fi
if [ "$1" = image ] && [ "$2" = inspect ] && [ "$3" = --format ] && [ $# -eq 5 ]; then
    if grep -qxF "$5" "$log/tags.txt" 2>/dev/null; then
        echo "sha256:$(printf %s "$5" | sha256sum | cut -d' ' -f1)|"
        exit 0
    fi
    echo "Error: No such image: $5" >&2
    exit 1
fi
echo "stand-in docker: unexpected call: $*" >&2
exit 99
"##,
        log = log.display()
    );
    support::plant::write_exec(&dir.join("docker"), &script);
}

/// The clone copied (what `cargo install --path xtask` reads), installed from, then deleted:
/// the binary's own idea of its clone (`CARGO_MANIFEST_DIR`, the copy) is gone, and it runs
/// from a folder outside any clone with a home and a cache of the test's. `container build
/// pytorch` writes the container files it carries into the cache folder, beside the built-in
/// recipes', and builds `cuda` (missing) then `pytorch` from there, the files byte for byte
/// the clone's; the README its hint names is that folder's.
#[test]
fn installed_without_its_clone_it_builds_the_images_from_the_files_it_carries() {
    if !support::slow_tests(
        "newcomer::installed_without_its_clone_it_builds_the_images_from_the_files_it_carries",
    ) {
        return;
    }
    let s = Scratch::create("newcomer", "no-clone");
    let out = Outside::create("no-clone");
    let copy = out.0.join("clone-copy");
    for f in ["Cargo.toml", "Cargo.lock"] {
        std::fs::create_dir_all(&copy).unwrap();
        std::fs::copy(root().join(f), copy.join(f)).unwrap();
    }
    for d in ["xtask", "recipes", "containers"] {
        copy_dir(&root().join(d), &copy.join(d));
    }
    let bin = install_from(&copy, &s.path("install"));
    std::fs::remove_dir_all(&copy).unwrap();

    let home = out.0.join("home");
    let cache = out.0.join("cache");
    let work = out.0.join("work");
    for d in [&home, &cache, &work] {
        std::fs::create_dir_all(d).unwrap();
    }
    assert!(
        !work.ancestors().any(|d| d.join("containers/cuda.Containerfile").exists()),
        "a containers/ above {}",
        work.display()
    );
    let standins_dir = out.0.join("standin-bin");
    let log = out.0.join("docker-log");
    standin_docker(&standins_dir, &log);
    let run = |args: &[&str]| -> Output {
        Command::new(&bin)
            .args(args)
            .current_dir(&work)
            .env("PATH", path_with(&[&standins_dir]))
            .env("HOME", &home)
            .env("XDG_CACHE_HOME", &cache)
            .env_remove("CARGO_MANIFEST_DIR")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .output()
            .expect("cannot run the installed debug-ima")
    };

    let built = run(&["container", "build", "pytorch"]);
    assert_eq!(built.status.code(), Some(0), "{}", both(&built));
    // The one cache folder of this build: debug-ima/VERSION-COMMIT/containers.
    let versions: Vec<PathBuf> =
        std::fs::read_dir(cache.join("debug-ima")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(versions.len(), 1, "{versions:?}");
    let folder = versions[0].join("containers");
    let calls = std::fs::read_to_string(log.join("calls.txt")).unwrap();
    let inspect =
        "image inspect --format {{.Id}}|{{range $i, $d := .RepoDigests}}{{if $i}},{{end}}{{$d}}{{end}}";
    let f = folder.display();
    let expected = format!(
        "argv: {inspect} debug-ima/cuda:13.0\n\
         argv: build -f {f}/cuda.Containerfile -t debug-ima/cuda:13.0 {f}\n\
         context: README.md cuda.Containerfile pytorch.Containerfile vllm-image.yaml vllm.Containerfile \n\
         argv: {inspect} debug-ima/cuda:13.0\n\
         argv: build -f {f}/pytorch.Containerfile -t debug-ima/pytorch:2.11.0 {f}\n\
         context: README.md cuda.Containerfile pytorch.Containerfile vllm-image.yaml vllm.Containerfile \n\
         argv: {inspect} debug-ima/pytorch:2.11.0\n"
    );
    assert_eq!(calls, expected, "{}", both(&built));
    // What the builds were given is what the clone has (and the binary carries: the unit test).
    for name in ["cuda.Containerfile", "pytorch.Containerfile"] {
        let given = std::fs::read(log.join(name)).unwrap();
        assert!(given == std::fs::read(root().join("containers").join(name)).unwrap(), "{name} differs");
    }
    let id = String::from_utf8_lossy(&built.stdout).to_string();
    let (tag, id) = id.trim_end().split_once(' ').unwrap_or_else(|| panic!("{}", both(&built)));
    assert_eq!(tag, "debug-ima/pytorch:2.11.0");
    assert!(id.starts_with("sha256:") && id.len() == 71, "{id}");

    // The hint names the README of that folder, which is there.
    let apptainer = run(&["container", "build", "cuda", "--runtime", "apptainer"]);
    assert_eq!(apptainer.status.code(), Some(1), "{}", both(&apptainer));
    let readme = folder.join("README.md");
    assert!(
        String::from_utf8_lossy(&apptainer.stderr).contains(&readme.display().to_string()),
        "{}",
        both(&apptainer)
    );
    assert!(std::fs::read(&readme).unwrap() == std::fs::read(root().join("containers/README.md")).unwrap());

    // The built-in recipes went beside it, under the same version.
    let shown = run(&["recipe", "show", "demo"]);
    assert_eq!(shown.status.code(), Some(0), "{}", both(&shown));
    assert!(versions[0].join("recipes/demo/ima_demo.cu").is_file(), "{}", both(&shown));
}

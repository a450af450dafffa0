//! The bundle commands through the real binary: planted secrets never reach a bundle or its
//! archive, `replay.sh` reruns a rung with the recorded environment and asks for what was
//! redacted, a bundle from an interrupted run can still be verified, packed and reported,
//! a tampered bundle is caught, and `list`, `show` and `report` read the bundles the GPU
//! suite wrote (tests/fixtures/bundles/).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::support;
use support::plant::contains;
use support::run::{target_recipe, Run};
use support::{path_with, root, standins, Scratch};

/// `xtask ARGS` in `dir`, with the stand-ins first on PATH.
fn xtask(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .current_dir(dir)
        .env("PATH", path_with(&[&standins()]))
        .stdin(Stdio::null())
        .output()
        .expect("cannot run the xtask binary")
}

fn text(o: &Output) -> String {
    format!(
        "--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Secrets made at run time, so that no token-shaped literal sits in the source.
struct Planted {
    hf: String,
    ghp: String,
    bearer: String,
    api_key: String,
    password: String,
    var_token: String,
    inherited_key: String,
    not_allowed: String,
}

impl Planted {
    fn new() -> Planted {
        Planted {
            hf: format!("hf_{}", "Zq8Lm2".repeat(6)),
            ghp: format!("ghp_{}", "Wd4".repeat(12)),
            bearer: format!("tok{}", "Rr7".repeat(8)),
            api_key: format!("apikey{}", "Vn3".repeat(6)),
            password: format!("pw{}", "Hx5".repeat(5)),
            var_token: format!("vartok{}", "Jk2".repeat(6)),
            inherited_key: format!("inh{}", "Pp9".repeat(6)),
            not_allowed: format!("wandb{}", "Qq1".repeat(6)),
        }
    }

    fn all(&self) -> [&str; 8] {
        [
            &self.hf,
            &self.ghp,
            &self.bearer,
            &self.api_key,
            &self.password,
            &self.var_token,
            &self.inherited_key,
            &self.not_allowed,
        ]
    }
}

/// A recipe whose command line, environment, variable and output carry secrets: the target
/// (through `sh`) prints a GitHub token, a bearer header and the Hugging Face token it got
/// from the environment, and gets an API key and a password in a URL as arguments.
fn secret_recipe() -> String {
    "version: 1\nname: secrets\ndescription: \"a target with secrets everywhere\"\n\
     variables:\n  token:\n    description: \"a token passed with --set\"\n\
     run:\n  command: [\"sh\", \"-c\", \"echo \\\"using $GH_PAT\\\"; echo \\\"Authorization: Bearer $BEARER\\\" >&2; \
     echo \\\"hf is $HF_TOKEN\\\" >&2; exec target\", \"sh\", \"--api-key\", \"$API_KEY_VALUE\", \
     \"--url\", \"https://user:$URL_PASSWORD@example.com/models\"]\n  timeout: 30\n  \
     env:\n    MY_TOKEN: \"{token}\"\n"
        .to_string()
}

/// Secrets planted in the environment, on the command line, in a variable and in the
/// target's output appear nowhere in the bundle, nor in the archive `bundle pack` makes (the
/// decompressed tar stream is searched, headers included); the manifest says what was
/// redacted, by name and place.
#[test]
fn planted_secrets_reach_neither_the_bundle_nor_the_archive() {
    let s = Scratch::for_run("secrets");
    let p = Planted::new();
    // The recipe names the secrets through the environment so its own file holds none.
    let recipe = secret_recipe()
        .replace("$API_KEY_VALUE", &p.api_key)
        .replace("$URL_PASSWORD", &p.password)
        .replace("$GH_PAT", &p.ghp)
        .replace("$BEARER", &p.bearer);
    let recipe = s.write_recipe(&recipe);
    let out = Run::new(&s, &recipe, "oob_write")
        .arg("--full")
        .arg("--set")
        .arg(&format!("token={}", p.var_token))
        .env("HF_TOKEN", &p.hf)
        .env("VLLM_API_KEY", &p.inherited_key)
        .env("WANDB_API_KEY", &p.not_allowed)
        .run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();

    for (path, bytes) in support::every_file(&b.root) {
        for secret in p.all() {
            assert!(!contains(&bytes, secret), "{} holds a planted secret {secret}", path.display());
        }
    }
    // The target did print them: the logs hold the marks.
    assert!(b.read("rungs/01-baseline/stdout.log").contains("using ghp_[REDACTED]"));
    assert!(b.read("rungs/01-baseline/stderr.log").contains("Authorization: [REDACTED]"));
    assert!(b.read("rungs/01-baseline/command.txt").contains("--api-key '[REDACTED]'"));

    let m = b.read("manifest.yaml");
    let manifest = b.manifest();
    let redactions: Vec<String> = manifest["redactions"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|r| format!("{}: {}", r["place"].as_str().unwrap(), r["what"].as_str().unwrap()))
        .collect();
    for want in [
        "environment: HF_TOKEN (by name)",
        "environment: VLLM_API_KEY (by name)",
        "recipe: token (by name)",
        "recipe: MY_TOKEN (by name)",
        "rungs/01-baseline/command.txt: MY_TOKEN (by name)",
        "rungs/01-baseline/command.txt: value of --api-key (by name)",
        "rungs/01-baseline/stdout.log: GitHub token (1 line)",
    ] {
        assert!(redactions.iter().any(|r| r == want), "`{want}` not among the redactions:\n{redactions:#?}");
    }
    // Not allow-listed: not recorded at all, not even by name.
    assert!(!m.contains("WANDB_API_KEY"), "{m}");
    assert!(manifest["environment"]["PATH"].as_str().is_some());

    // The archive: searched decompressed, tar headers and all.
    let pack = xtask(&s.dir, &["bundle", "pack", b.root.to_str().unwrap()]);
    assert!(pack.status.success(), "{}", text(&pack));
    let archive = b.root.with_extension("tar.zst");
    let mut tar = Vec::new();
    zstd::stream::read::Decoder::new(std::fs::File::open(&archive).unwrap())
        .unwrap()
        .read_to_end(&mut tar)
        .unwrap();
    assert!(tar.len() > 10_000, "{} bytes", tar.len());
    for secret in p.all() {
        assert!(!contains(&tar, secret), "the archive holds a planted secret {secret}");
    }
    assert!(contains(&tar, "manifest.yaml") && contains(&tar, "SHA256SUMS"));
    s.assert_no_standin_left();
}

/// `replay.sh RUNG` reruns the rung's command with its recorded environment, from anywhere:
/// paths into the bundle follow the bundle (`replay/<rung>/`), and each redacted value is
/// asked for (here answered on stdin) or taken from the environment.
#[test]
fn replay_reruns_a_rung_with_its_environment_and_asks_for_redacted_values() {
    let s = Scratch::for_run("replay");
    let key = format!("apikey{}", "Vn3".repeat(6));
    let recipe = s.write_recipe(&format!(
        "version: 1\nname: replayed\ndescription: \"prints what it got\"\n\
         run:\n  command: [\"sh\", \"-c\", \"echo MY_TOKEN=$MY_TOKEN; echo KEY=$2; echo DUMP=$CUDA_COREDUMP_FILE; \
         echo PWD=$(pwd); exec target\", \"sh\", \"--api-key\", \"{key}\"]\n  \
         cwd: \"{}\"\n  timeout: 30\n  env:\n    MY_TOKEN: \"{key}\"\n",
        s.dir.display()
    ));
    let out = Run::new(&s, &recipe, "oob_write").arg("--rungs").arg("baseline,coredump").run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    let script = b.root.join("replay.sh");
    let body = b.read("replay.sh");
    assert!(!body.contains(&key), "{body}");
    assert!(body.contains("ask MY_TOKEN"), "{body}");

    // Moved elsewhere, as a colleague would unpack it.
    let moved = s.path("elsewhere/bundle");
    std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
    std::fs::rename(&b.root, &moved).unwrap();
    let script = moved.join(script.file_name().unwrap());

    let list = Command::new(&script).arg("--list").output().unwrap();
    assert!(list.status.success(), "{}", text(&list));
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(listed.contains("baseline:\n") && listed.contains("coredump:\n"), "{listed}");

    let sums_before = std::fs::read_to_string(moved.join("SHA256SUMS")).unwrap();
    let out = s.path("replay-out");
    let mut child = Command::new(&script)
        .arg("coredump")
        .current_dir(root())
        .env("DEBUG_IMA_REPLAY_DIR", &out)
        .env("PATH", path_with(&[&standins()]))
        .env("STANDIN_CASE", support::fixture("oob_write"))
        .env_remove("MY_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(format!("token-typed\n{key}\n").as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("MY_TOKEN=token-typed\n"), "{}", text(&o));
    assert!(stdout.contains(&format!("KEY={key}\n")), "{}", text(&o));
    let dump = format!("DUMP={}/coredump/core_%h.%p.%t\n", out.display());
    assert!(stdout.contains(&dump), "want {dump}{}", text(&o));
    assert!(stdout.contains(&format!("PWD={}\n", s.dir.display())), "{}", text(&o));
    // The stand-in target died as recorded, after writing its dump where it was told.
    assert_eq!(o.status.code(), Some(134), "{}", text(&o));
    let dumps: Vec<_> = std::fs::read_dir(out.join("coredump")).unwrap().collect();
    assert_eq!(dumps.len(), 1, "{dumps:?}");
    // Nothing was written into the bundle: it still verifies, and no `replay/` appeared.
    assert!(!moved.join("replay").exists());
    assert_eq!(std::fs::read_to_string(moved.join("SHA256SUMS")).unwrap(), sums_before);
    let v =
        Command::new(env!("CARGO_BIN_EXE_xtask")).args(["bundle", "verify"]).arg(&moved).output().unwrap();
    assert!(v.status.success(), "{}", text(&v));

    // A value set in the environment is not asked for.
    let o = Command::new(&script)
        .arg("baseline")
        .env("PATH", path_with(&[&standins()]))
        .env("STANDIN_CASE", support::fixture("oob_write"))
        .env("MY_TOKEN", "from-env")
        .env("REDACTED_1", "k")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("MY_TOKEN=from-env\n"), "{}", text(&o));

    let o = Command::new(&script).arg("nonsense").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("usage: ./replay.sh RUNG (one of: baseline coredump)")
    );
    s.assert_no_standin_left();
}

/// `replay.sh rebuild` runs the build where it ran: a build recorded without a `cwd` ran in
/// the tool's own working directory (the recipe's `cwd` variable), not the caller's folder.
/// `--list` names each rung, its folder and its recorded command, not the script's code.
#[test]
fn replay_runs_the_build_where_it_ran_and_lists_commands_not_code() {
    let s = Scratch::create("replay", "build-dir");
    let src = s.path("checkout");
    let caller = s.path("somewhere/else");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::create_dir_all(&caller).unwrap();
    // The GPU suite's real manifest, with a build that says where it runs instead of nvcc.
    let fixture = root().join("tests/fixtures/bundles/inlined-full");
    let mut m = xtask::bundle::Bundle::load(&fixture).unwrap();
    m.recipe["vars"]["cwd"] = serde_json::Value::String(src.display().to_string());
    let rebuild = m.rungs.iter_mut().find(|r| r.rung.name() == "rebuild").expect("a rebuild rung");
    let build = rebuild.commands.iter_mut().find(|c| c.role.name() == "build").unwrap();
    assert!(build.cwd.is_none(), "the recording ran its build in the tool's folder");
    build.argv = ["sh", "-c", "pwd > built-in.txt"].map(String::from).to_vec();
    build.command = "sh -c 'pwd > built-in.txt'".into();
    // A target that leaves a CPU core in its working directory, as the armed run's does.
    let baseline = m.rungs.iter_mut().find(|r| r.rung.name() == "baseline").expect("a baseline");
    let target = baseline.commands.iter_mut().find(|c| c.role.name() == "target").unwrap();
    target.argv = ["sh", "-c", "echo not-a-real-core > core.4242; exit 3"].map(String::from).to_vec();
    target.cwd = Some(src.clone());
    let bundle = s.path("bundle");
    std::fs::create_dir_all(&bundle).unwrap();
    let script = bundle.join("replay.sh");
    std::fs::write(&script, xtask::bundle::replay::script(&m)).unwrap();
    let out = s.path("replay-out");
    let o = Command::new("bash")
        .arg(&script)
        .arg("baseline")
        .current_dir(&caller)
        .env("DEBUG_IMA_REPLAY_DIR", &out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "the target's own exit status: {}", text(&o));
    assert!(out.join("baseline/core.4242").is_file(), "{}", text(&o));
    assert!(!src.join("core.4242").exists(), "the core was left in the working directory");
    assert!(String::from_utf8_lossy(&o.stderr).contains("moved the CPU core core.4242"), "{}", text(&o));
    assert_eq!(std::fs::read_dir(&bundle).unwrap().count(), 1, "the replay wrote into the bundle");

    let o = Command::new("bash").arg(&script).arg("rebuild").current_dir(&caller).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let built = std::fs::read_to_string(src.join("built-in.txt")).expect("the build ran in the checkout");
    assert_eq!(built.trim(), src.display().to_string());
    assert!(!caller.join("built-in.txt").exists(), "the build ran in the caller's folder");

    let o = Command::new("bash").arg(&script).arg("--list").current_dir(&caller).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let listed = String::from_utf8_lossy(&o.stdout);
    assert!(listed.starts_with("baseline:\n"), "{listed}");
    assert!(
        listed.contains(&format!("rebuild:\n  in {}\n  sh -c 'pwd > built-in.txt'\n", src.display())),
        "{listed}"
    );
    assert!(listed.contains("coredump:\n"), "{listed}");
    for code in ["need_dir", "out_dir", "keep_cores", "cd ", ";;", "ask ", "$OUT"] {
        assert!(!listed.contains(code), "`{code}` of the script's code in --list:\n{listed}");
    }
}

/// Ctrl-C in the middle of a rung: the bundle it leaves has its SHA256SUMS, verifies, packs
/// and reports (which says it was interrupted).
#[test]
fn a_bundle_from_an_interrupted_run_verifies_packs_and_reports() {
    let s = Scratch::for_run("interrupted");
    // The coredump rung, the second of the two asked for, hangs.
    let recipe = s.write_recipe(&target_recipe("rungs:\n  coredump:\n    env: { STANDIN_HANG: \"1\" }\n"));
    let run = Run::new(&s, &recipe, "oob_write").arg("--rungs").arg("baseline,coredump");
    let start = Instant::now();
    let child = run.spawn();
    // Wait for the hanging rung to start, then interrupt.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !s.bundles().exists()
        || std::fs::read_dir(s.bundles())
            .unwrap()
            .flatten()
            .all(|b| !b.path().join("rungs/02-coredump/stderr.log").exists())
    {
        assert!(Instant::now() < deadline, "the coredump rung never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let out = run.finish(child, start);
    assert_eq!(out.code(), Some(130), "{}", out.both());
    let b = s.only_bundle();
    let dir = b.root.to_str().unwrap();

    let v = xtask(&s.dir, &["bundle", "verify", dir]);
    assert!(v.status.success(), "{}", text(&v));
    let r = xtask(&s.dir, &["bundle", "report", dir]);
    assert!(r.status.success(), "{}", text(&r));
    let report = String::from_utf8_lossy(&r.stdout);
    assert!(report.contains("| coredump | interrupted |"), "{report}");
    assert!(report.contains("Stopped: interrupted"), "{report}");
    let p = xtask(&s.dir, &["bundle", "pack", dir]);
    assert!(p.status.success(), "{}", text(&p));
    let archive = format!("{dir}.tar.zst");
    let v = xtask(&s.dir, &["bundle", "verify", &archive]);
    assert!(v.status.success(), "{}", text(&v));
    s.assert_no_standin_left();
}

/// A copy of a bundle the GPU suite wrote on the H200.
fn fixture_bundle(s: &Scratch, name: &str, into: &str) -> PathBuf {
    let from = root().join("tests/fixtures/bundles").join(name);
    let to = s.path(into);
    for (path, bytes) in support::every_file(&from) {
        let dest = to.join(path.strip_prefix(&from).unwrap());
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::write(dest, bytes).unwrap();
    }
    to
}

/// `bundle show` and `report` and `analyze` read an archive of `bundle pack` (the H200's real
/// `.tar.zst`, and a `.tar.gz` packed here) through a temporary copy that is gone afterwards;
/// `analyze -` reads standard input.
#[test]
fn show_report_and_analyze_read_archives_and_analyze_reads_stdin() {
    let s = Scratch::create("bundle", "archives");
    let tmp = s.path("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let zst = root().join("tests/fixtures/bundles/2026-11-30T13-39-22Z_demo.tar.zst");
    let b = fixture_bundle(&s, "oob_read-full", "bundles/2026-11-30T10-34-30Z_cuda");
    let gz = s.path("oob_read.tar.gz");
    let p = xtask(&s.dir, &["bundle", "pack", "--gzip", b.to_str().unwrap(), "-o", gz.to_str().unwrap()]);
    assert!(p.status.success(), "{}", text(&p));
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args(args)
            .current_dir(&s.dir)
            .env("TMPDIR", &tmp)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    for (archive, verdict) in [
        (&zst, "illegal-address in `offset_store(int*, int, long long)` at /work/main/recipes/demo/ima_demo.cu:23"),
        (
            &gz,
            "illegal-address in `gather_rows(float const*, long long const*, float*, int)` at /work/main/tests/gpu/programs/oob_read.cu:8",
        ),
    ] {
        let a = archive.to_str().unwrap();
        let o = run(&["bundle", "show", a]);
        assert!(o.status.success(), "{}", text(&o));
        let show = String::from_utf8_lossy(&o.stdout);
        assert!(show.contains(&format!("bundle:   {a}\n")) && show.contains("rungs:\n  baseline"), "{show}");
        let o = run(&["bundle", "show", "--json", a]);
        let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("show --json is JSON");
        assert_eq!(json["path"], a);
        assert_eq!(json["rungs"][0]["rung"], "baseline");
        assert!(json["files"].as_array().unwrap().iter().any(|f| f["path"] == "manifest.yaml"), "{json}");
        let o = run(&["bundle", "report", a]);
        assert!(o.status.success(), "{}", text(&o));
        assert!(String::from_utf8_lossy(&o.stdout).contains("**Verdict:** illegal-address"), "{}", text(&o));
        let o = run(&["analyze", a]);
        assert!(o.status.success(), "{}", text(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.starts_with(&format!("verdict: {verdict}\n")), "{out}");
        let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
        assert!(left.is_empty(), "temporary copies left behind: {left:?}");
    }
    // A file that only looks like an archive is refused with the way to see why.
    let fake = s.path("fake.tar.zst");
    let mut bytes = vec![0x28, 0xB5, 0x2F, 0xFD];
    bytes.extend_from_slice(b"not a zstd frame");
    std::fs::write(&fake, bytes).unwrap();
    let o = run(&["bundle", "show", fake.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("bundle unpack"), "{}", text(&o));
    assert!(std::fs::read_dir(&tmp).unwrap().next().is_none());

    // `analyze -`: the H200's memcheck log on standard input.
    let log = std::fs::read(root().join("tests/fixtures/h200/oob_write/memcheck.log")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["analyze", "--json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(&log).unwrap();
    });
    let o = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["verdict"]["kernel"], "scale_write(float*, int, long long)");
    assert_eq!(json["inputs"][0]["origin"], "stdin");
    assert_eq!(json["inputs"][0]["path"], "-");
}

/// `bundle report` of an archive, from the installed name (issue 41): before, it suggested
/// `debug-ima bundle pack --gzip shared.tar.gz`, which fails (pack takes a folder), and titled the
/// report `debug-ima debug-ima`. Now a `.tar.gz` is to be attached as it is, a `.tar.zst` unpacked
/// and packed again, a folder packed; the command it names for a `.tar.zst` works as written.
#[test]
fn report_of_an_archive_suggests_what_works_under_the_installed_name() {
    let s = Scratch::create("bundle", "report-hint");
    let bin = s.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_xtask"), bin.join("debug-ima")).unwrap();
    let b = fixture_bundle(&s, "oob_read-full", "shared");
    let gz = s.path("shared.tar.gz");
    let zst = s.path("shared.tar.zst");
    let run = |args: &[&str]| {
        Command::new(bin.join("debug-ima"))
            .args(args)
            .current_dir(&s.dir)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    for (archive, flag) in [(&gz, "--gzip"), (&zst, "--zstd")] {
        let mut args = vec!["bundle", "pack", b.to_str().unwrap(), "-o", archive.to_str().unwrap()];
        if flag == "--gzip" {
            args.insert(2, flag);
        }
        let o = run(&args);
        assert!(o.status.success(), "{}", text(&o));
    }
    let o = run(&["bundle", "report", "shared.tar.gz"]);
    assert!(o.status.success(), "{}", text(&o));
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(!out.contains("debug-ima debug-ima") && out.starts_with("### `debug-ima` report"), "{out}");
    assert!(
        err.contains("attach `shared.tar.gz` itself") && !err.contains("pack --gzip shared.tar.gz"),
        "{err}"
    );
    let o = run(&["bundle", "report", "shared.tar.zst"]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(err.contains("`debug-ima bundle unpack shared.tar.zst DIR`"), "{err}");
    let o = run(&["bundle", "unpack", "shared.tar.zst", "unpacked"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = run(&["bundle", "report", "shared"]);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("`debug-ima bundle pack --gzip shared`"),
        "{}",
        text(&o)
    );
}

/// `bundle list --json`: the documented fields, newest first.
#[test]
fn list_json_has_the_documented_fields() {
    let s = Scratch::create("bundle", "list-json");
    fixture_bundle(&s, "oob_read-full", "bundles/2026-11-30T10-34-30Z_cuda");
    fixture_bundle(&s, "triton_worker", "bundles/2026-11-30T10-33-54Z_python");
    let o = xtask(&s.dir, &["bundle", "list", "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["root"], "bundles");
    let rows = json["bundles"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["created"], "2026-11-30T10-34-30Z");
    assert_eq!(rows[0]["recipe"], "cuda");
    assert!(rows[0]["bytes"].as_u64().unwrap() > 0);
    assert!(rows[0]["path"].as_str().unwrap().ends_with("_cuda"));
    assert!(rows[0]["verdict"].as_str().unwrap().ends_with("at oob_read.cu:8"));
    assert_eq!(rows[1]["verdict"], "illegal-address in `gather_kv_kernel` at vllm_shaped.py:22");
}

/// A changed, a missing and an extra file are each named by `bundle verify`, which exits 1;
/// the untouched bundle verifies.
#[test]
fn verify_names_changed_missing_and_extra_files() {
    let s = Scratch::create("bundle", "tampered");
    let b = fixture_bundle(&s, "oob_read-full", "bundles/b");
    let dir = b.to_str().unwrap();
    let p = xtask(&s.dir, &["bundle", "pack", dir]);
    assert!(p.status.success(), "{}", text(&p));
    let ok = xtask(&s.dir, &["bundle", "verify", dir]);
    assert!(ok.status.success(), "{}", text(&ok));

    std::fs::write(b.join("rungs/01-baseline/stderr.log"), "edited\n").unwrap();
    std::fs::remove_file(b.join("summary.md")).unwrap();
    std::fs::write(b.join("rungs/extra.txt"), "planted\n").unwrap();
    let v = xtask(&s.dir, &["bundle", "verify", dir]);
    assert_eq!(v.status.code(), Some(1), "{}", text(&v));
    let out = String::from_utf8_lossy(&v.stdout);
    for want in ["rungs/01-baseline/stderr.log", "summary.md", "rungs/extra.txt"] {
        assert!(out.contains(want), "`{want}` not named:\n{out}");
    }
}

/// `list` finds bundles newest first; `show` gives the verdict, the rungs and the files;
/// `report` is Markdown with the symptom, the verdict, the environment and the logs, and stays
/// under GitHub's limit even with a 3 MB log.
#[test]
fn list_show_and_report_read_real_bundles() {
    let s = Scratch::create("bundle", "list");
    let a = fixture_bundle(&s, "oob_read-full", "bundles/2026-11-30T10-34-30Z_cuda");
    fixture_bundle(&s, "dist_fault-full", "bundles/2026-11-30T11-00-00Z_dist");
    std::fs::create_dir_all(s.path("bundles/not-a-bundle")).unwrap();

    let l = xtask(&s.dir, &["bundle", "list"]);
    assert!(l.status.success(), "{}", text(&l));
    let list = String::from_utf8_lossy(&l.stdout);
    let first = list.find("_dist").expect("the dist bundle is listed");
    let second = list.find("_cuda").expect("the cuda bundle is listed");
    assert!(first < second, "newest first:\n{list}");
    assert!(list.contains("gather_rows"), "{list}");
    assert!(!list.contains("not-a-bundle"), "{list}");

    let sh = xtask(&s.dir, &["bundle", "show", a.to_str().unwrap()]);
    assert!(sh.status.success(), "{}", text(&sh));
    let show = String::from_utf8_lossy(&sh.stdout);
    for want in [
        "verdict:  illegal-address in `gather_rows",
        "coredump",
        "memcheck",
        "rungs/04-coredump/",
        "redactions: none",
    ] {
        assert!(show.contains(want), "`{want}` missing:\n{show}");
    }

    // A 3 MB log in the memcheck rung.
    let big: String = (0..60_000).map(|i| format!("========= line {i} of a long log\n")).collect();
    std::fs::write(a.join("rungs/06-memcheck/stdout.log"), &big).unwrap();
    let r = xtask(&s.dir, &["bundle", "report", a.to_str().unwrap()]);
    assert!(r.status.success(), "{}", text(&r));
    let report = String::from_utf8_lossy(&r.stdout);
    assert!(report.chars().count() <= 65_536, "{} characters", report.chars().count());
    for want in [
        "**Symptom:** `an illegal memory access was encountered`",
        "**Verdict:** illegal-address in `gather_rows",
        "| GPU | NVIDIA H200",
        "| driver | 580.159.04 |",
        "#### Reproduce",
        "<details><summary><code>rungs/06-memcheck/stdout.log</code> (last ",
        "========= line 59999 of a long log",
    ] {
        assert!(report.contains(want), "`{want}` missing:\n{report}");
    }
    // What a reader needs: cuda-gdb's log, not cuobjdump's listing of the binary.
    assert!(report.contains("<code>rungs/04-coredump/cudagdb-1.log</code>"), "{report}");
    assert!(!report.contains("cuobjdump-1.log"), "{report}");
    let missing = xtask(&s.dir, &["bundle", "show", s.path("bundles/not-a-bundle").to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("is `"), "{}", text(&missing));
}

/// The archive `bundle pack` made on the H200 host (16 cores, 16 zstd workers) of the demo's
/// `--full` bundle (tests/gpu/bundle_suite.sh): it verifies here, unpacks, and packing the
/// unpacked copy on this machine (other CPUs, other worker count) gives the same bytes, so an
/// archive can be checked by rebuilding it; `sha256sum -c` accepts both lists, and `report`
/// reads the real bundle.
#[test]
fn an_archive_packed_on_the_h200_unpacks_verifies_and_packs_to_the_same_bytes() {
    let s = Scratch::create("bundle", "h200-archive");
    let name = "2026-11-30T13-39-22Z_demo";
    let fixture = root().join("tests/fixtures/bundles").join(format!("{name}.tar.zst"));
    let archive = s.path(&format!("{name}.tar.zst"));
    std::fs::copy(&fixture, &archive).unwrap();
    std::fs::copy(fixture.with_extension("zst.sha256"), s.path(&format!("{name}.tar.zst.sha256"))).unwrap();

    let v = xtask(&s.dir, &["bundle", "verify", archive.to_str().unwrap()]);
    assert!(v.status.success(), "{}", text(&v));
    assert!(
        String::from_utf8_lossy(&v.stdout).contains(&format!("the archive matches {name}.tar.zst.sha256"))
    );
    let sidecar = Command::new("sha256sum")
        .args(["-c", &format!("{name}.tar.zst.sha256")])
        .current_dir(&s.dir)
        .output()
        .unwrap();
    assert!(sidecar.status.success(), "{}", text(&sidecar));

    let into = s.path("here");
    let u = xtask(&s.dir, &["bundle", "unpack", archive.to_str().unwrap(), into.to_str().unwrap()]);
    assert!(u.status.success(), "{}", text(&u));
    let bundle = into.join(name);
    let sums = Command::new("sha256sum")
        .args(["-c", "--quiet", "SHA256SUMS"])
        .current_dir(&bundle)
        .output()
        .unwrap();
    assert!(sums.status.success(), "{}", text(&sums));
    let v = xtask(&s.dir, &["bundle", "verify", bundle.to_str().unwrap()]);
    assert!(v.status.success(), "{}", text(&v));
    // The coredump stayed out on the H200, and stays listed as left out.
    assert!(String::from_utf8_lossy(&v.stdout).contains("left out rungs/04-coredump/core_vm.3911.1796045966"));

    let p = xtask(
        &s.dir,
        &["bundle", "pack", "-o", s.path("again.tar.zst").to_str().unwrap(), bundle.to_str().unwrap()],
    );
    assert!(p.status.success(), "{}", text(&p));
    assert!(
        std::fs::read(s.path("again.tar.zst")).unwrap() == std::fs::read(&fixture).unwrap(),
        "packing the unpacked bundle gave other bytes"
    );

    // The same bundle as a `.tar.gz` for a GitHub attachment: it verifies too.
    let gz = s.path("attach.tar.gz");
    let p =
        xtask(&s.dir, &["bundle", "pack", "--gzip", "-o", gz.to_str().unwrap(), bundle.to_str().unwrap()]);
    assert!(p.status.success(), "{}", text(&p));
    let v = xtask(&s.dir, &["bundle", "verify", gz.to_str().unwrap()]);
    assert!(v.status.success(), "{}", text(&v));

    let r = xtask(&s.dir, &["bundle", "report", bundle.to_str().unwrap()]);
    assert!(r.status.success(), "{}", text(&r));
    assert!(String::from_utf8_lossy(&r.stderr).contains("`cargo xtask bundle pack --gzip "), "{}", text(&r));
    let report = String::from_utf8_lossy(&r.stdout);
    for want in [
        "**Verdict:** illegal-address in `offset_store(int*, int, long long)` at /work/main/recipes/demo/ima_demo.cu:23",
        "| nvcc | Cuda compilation tools, release 13.0, V13.0.88 |",
        "<code>rungs/05-attach/cudagdb-attach.log</code>",
    ] {
        assert!(report.contains(want), "`{want}` missing:\n{report}");
    }
    let sh = xtask(&s.dir, &["bundle", "show", bundle.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&sh.stdout).contains("environment: HF_TOKEN (by name)"), "{}", text(&sh));
}

/// The README's showcase bundle, written by `debug-ima` on an H200, is in the current format
/// and verifies: its GPU coredump is left out as `bundle pack` leaves one out (listed in
/// `LEFT_OUT.tsv`), and its verdict is the one the README quotes.
#[test]
fn the_readme_showcase_bundle_verifies_and_gives_the_quoted_verdict() {
    let b = root().join("tests/fixtures/bundles/armed/unchecked_launch");
    let dir = root();
    let v = xtask(&dir, &["bundle", "verify", b.to_str().unwrap()]);
    assert!(v.status.success(), "{}", text(&v));
    assert!(
        String::from_utf8_lossy(&v.stdout).contains("1 left out, listed in LEFT_OUT.tsv"),
        "{}",
        text(&v)
    );
    for f in ["replay.sh", "SHA256SUMS", "manifest.yaml", "summary.md", "findings.json"] {
        assert!(b.join(f).is_file(), "{f} missing from the showcase bundle");
    }
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let a = xtask(&dir, &["analyze", b.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&a.stdout);
    let verdict = out.lines().next().unwrap();
    let launched = out.lines().find(|l| l.trim_start().starts_with("launched:")).unwrap();
    assert!(readme.contains(verdict), "the README does not quote `{verdict}`");
    assert!(readme.contains(launched.trim()), "the README does not quote `{launched}`");
}

/// What a target leaves in a rung folder (issue 22): a text file is redacted in place like
/// every log, a file whose name holds a token is renamed without it (so the manifest,
/// `SHA256SUMS`, `LEFT_OUT.tsv` and the archive's member names never carry it), and a binary
/// file, which nothing reads, stays out of the archive with the reason in `LEFT_OUT.tsv`.
#[test]
fn files_the_target_leaves_are_redacted_renamed_or_left_out() {
    let s = Scratch::for_run("left-files");
    let token = "ghp_Zq8vN2xLw4Rt6Yp0Bc3Dk5Fm7Hj9Gs1AeQ0u";
    let hf = "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";
    let script = format!(
        "d=$(dirname \"$CUDA_COREDUMP_FILE\"); echo 'HF_TOKEN={hf}' > \"$d/notes.txt\"; \
         printf '\\000\\001\\002 {hf}' > \"$d/blob.bin\"; echo plain > \"$d/{token}.txt\"; exit 0"
    );
    let recipe = s.write_recipe(&format!(
        "version: 1\nname: left\ndescription: \"a target that leaves files\"\nrun:\n  command: [\"sh\", \"-c\", {}]\n",
        serde_json::to_string(&script.replace('{', "{{").replace('}', "}}")).unwrap()
    ));
    let out =
        Run::new(&s, &recipe, "oob_write").arg("--rungs").arg("baseline").arg("--retries").arg("0").run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    let notes = b.read("rungs/01-baseline/notes.txt");
    assert!(!notes.contains(hf) && notes.contains("[REDACTED]"), "{notes}");
    let names = b.files_in("rungs/01-baseline");
    assert!(!names.iter().any(|n| n.contains(token)), "{names:?}");
    assert!(names.iter().any(|n| n.contains("REDACTED")), "{names:?}");
    for f in ["manifest.yaml", "SHA256SUMS", "findings.json"] {
        assert!(!b.read(f).contains(token) && !b.read(f).contains(hf), "{f} holds a secret");
    }
    let p = xtask(&s.dir, &["bundle", "pack", b.root.to_str().unwrap()]);
    assert!(p.status.success(), "{}", text(&p));
    let archive = format!("{}.tar.zst", b.root.display());
    let listed = std::process::Command::new("tar").args(["--zstd", "-tf", &archive]).output().unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(!listed.contains("blob.bin") && !listed.contains(token), "{listed}");
    let unpacked = s.path("unpacked");
    std::fs::create_dir_all(&unpacked).unwrap();
    let u = xtask(&s.dir, &["bundle", "unpack", &archive, unpacked.to_str().unwrap()]);
    assert!(u.status.success(), "{}", text(&u));
    let left = walk_text(&unpacked, "LEFT_OUT.tsv");
    assert!(left.contains("blob.bin") && left.contains("binary file the tool did not write"), "{left}");
}

/// The text of the first file named `name` under `dir`.
fn walk_text(dir: &Path, name: &str) -> String {
    for e in walkdir::WalkDir::new(dir).into_iter().flatten() {
        if e.file_name() == name {
            return std::fs::read_to_string(e.path()).unwrap();
        }
    }
    panic!("no {name} under {}", dir.display())
}

/// A received manifest's strings rewritten to end in `\nverdict: FORGED` (YAML's `"…\n…"`):
/// every `KEY: plain value` line whose key is one of `keys` (a list item's too).
fn forge_manifest(text: &str, keys: &[&str]) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let (dash, body) = match body.strip_prefix("- ") {
            Some(rest) => ("- ", rest),
            None => ("", body),
        };
        let forged = body.split_once(": ").filter(|(k, v)| {
            keys.contains(k) && !v.is_empty() && !v.starts_with(['"', '\'', '!', '{', '[', '|', '>'])
        });
        match forged {
            Some((k, v)) => {
                let v = v.replace('\\', "\\\\").replace('"', "\\\"");
                out.push_str(&format!("{indent}{dash}{k}: \"{v}\\nverdict: FORGED\\n\"\n"));
            }
            None => out.push_str(&format!("{line}\n")),
        }
        if body == "notes:" || body == "notes: []" {
            // One more note on every rung (and the run), forged as well.
            if body == "notes: []" {
                out.truncate(out.len() - line.len() - 1);
                out.push_str(&format!("{indent}{dash}notes:\n"));
            }
            out.push_str(&format!("{indent}- \"a note\\nverdict: FORGED\\n\"\n"));
        }
    }
    out
}

/// Issue 22: newlines in a received bundle's folder name, its manifest's strings (the recipe's
/// name and source, a rung's notes, a command, a file's path, `stopped`, `verdict`, the
/// redactions, the host) and a log's name forge no `verdict:` line in `bundle show`, `list`,
/// `report` (stdout and `-o` file) or `analyze`: each is shown on its line, its newline as `\n`.
#[test]
fn newlines_in_a_received_bundle_forge_no_verdict_line() {
    let s = Scratch::create("bundle", "forge");
    let b = fixture_bundle(&s, "oob_read-full", "in/b\nverdict: FORGED");
    let m = std::fs::read_to_string(b.join("manifest.yaml")).unwrap();
    let keys = [
        "name", "source", "command", "path", "stopped", "verdict", "place", "what", "hostname", "gpu",
        "created",
    ];
    let forged = forge_manifest(&m, &keys);
    assert!(forged.matches("verdict: FORGED").count() > 20, "{forged}");
    std::fs::write(b.join("manifest.yaml"), &forged).unwrap();
    std::fs::copy(b.join("rungs/01-baseline/stderr.log"), b.join("rungs/01-baseline/x\nverdict: FORGED.log"))
        .unwrap();
    let bs = b.to_str().unwrap();
    let report = s.path("report.md");
    let root = s.path("in");
    let runs: Vec<Vec<&str>> = vec![
        vec!["bundle", "show", bs],
        vec!["bundle", "list", "--bundle-dir", root.to_str().unwrap()],
        vec!["bundle", "report", bs],
        vec!["bundle", "report", bs, "-o", report.to_str().unwrap()],
        vec!["analyze", bs],
    ];
    for args in &runs {
        let out = xtask(&s.dir, args);
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        let both = text(&out);
        let forged_line = both.lines().find(|l| l.trim_start().starts_with("verdict: FORGED"));
        assert!(forged_line.is_none(), "{args:?} printed a forged line:\n{both}");
    }
    let show = text(&xtask(&s.dir, &["bundle", "show", bs]));
    assert!(show.contains("cuda\\nverdict: FORGED\\n"), "the recipe's name is shown, escaped: {show}");
    let md = std::fs::read_to_string(&report).unwrap();
    assert!(!md.lines().any(|l| l.trim_start().starts_with("verdict: FORGED")), "{md}");
    assert!(md.contains("verdict: FORGED"), "the report shows the values: {md}");
}

/// Issue 22: a received manifest saved with a byte-order mark, a number where a string is
/// expected (`name: 12`, `created: 2026`) reads as its text; a list where a string is expected
/// is refused naming the field and the type expected.
#[test]
fn a_manifest_with_a_bom_and_numbers_reads_and_a_list_for_a_string_is_refused() {
    let s = Scratch::create("bundle", "scalars");
    let b = fixture_bundle(&s, "oob_read-full", "b");
    let m = std::fs::read_to_string(b.join("manifest.yaml")).unwrap();
    let created = m.lines().find(|l| l.starts_with("created: ")).unwrap().to_string();
    let edited = format!(
        "\u{feff}{}",
        m.replacen("  name: cuda\n", "  name: 12\n", 1).replacen(&created, "created: 2026", 1)
    );
    std::fs::write(b.join("manifest.yaml"), &edited).unwrap();
    let out = xtask(&s.dir, &["bundle", "show", b.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("recipe:   12 (") && shown.contains("created:  2026 by"), "{shown}");
    let listed = edited.replacen("stopped: ", "stopped: [a]\nx_was: ", 1);
    std::fs::write(b.join("manifest.yaml"), &listed).unwrap();
    let out = xtask(&s.dir, &["bundle", "show", b.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(err.contains("stopped: invalid type: sequence, expected a string at line"), "{err}");
}

/// `bundle pack --anonymize`: the archive holds the bundle with its home folders, user names
/// and host names replaced the same way in every file and name (the H200 bundle's host `vm` in
/// the manifest, a home and a `user@host` prompt added to a log), verifies once unpacked, and
/// the bundle itself is left as it was; with `--with-coredumps` it is refused (a dump is not
/// text).
#[test]
fn pack_anonymize_replaces_homes_users_and_hosts_in_the_archive_only() {
    let s = Scratch::create("bundle", "pack-anonymize");
    let b = fixture_bundle(&s, "kinds/transpose_race", "2026-12-02T18-10-32Z_cuda");
    let log = b.join("rungs/01-baseline/stdout.log");
    let mut logged = std::fs::read_to_string(&log).unwrap();
    logged.push_str("alice@gpu-node-17:/home/alice/proj$ ./transpose\n");
    std::fs::write(&log, &logged).unwrap();
    let out = s.path("shared.tar.gz");
    let o = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["bundle", "pack", "--anonymize", "--gzip", "-o"])
        .arg(&out)
        .arg(&b)
        .env("HOME", "/home/alice")
        .env("USER", "alice")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let said = text(&o);
    assert!(said.contains("anonymized: ") && said.contains("`/home/alice` -> `/home/user`"), "{said}");
    assert!(said.contains("`vm` -> `host"), "{said}");
    let into = s.path("unpacked");
    let u = xtask(&s.dir, &["bundle", "unpack", out.to_str().unwrap(), into.to_str().unwrap()]);
    assert!(u.status.success(), "{}", text(&u));
    let top = into.join("2026-12-02T18-10-32Z_cuda");
    let v = xtask(&s.dir, &["bundle", "verify", top.to_str().unwrap()]);
    assert!(v.status.success(), "{}", text(&v));
    for (path, bytes) in support::every_file(&top) {
        let t = String::from_utf8_lossy(&bytes);
        assert!(!t.contains("alice") && !t.contains("gpu-node-17"), "{path:?} still names them");
        assert!(!t.contains("hostname: vm"), "{path:?}");
    }
    let log = std::fs::read_to_string(top.join("rungs/01-baseline/stdout.log")).unwrap();
    assert!(log.ends_with("user@host2:/home/user/proj$ ./transpose\n"), "{log}");
    // The bundle is as it was.
    assert_eq!(std::fs::read_to_string(b.join("rungs/01-baseline/stdout.log")).unwrap(), logged);
    assert!(std::fs::read_to_string(b.join("manifest.yaml")).unwrap().contains("hostname: vm"));
    // No scratch copy is left beside the archive.
    let left: Vec<_> = std::fs::read_dir(&s.dir).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(!left.iter().any(|n| n.to_string_lossy().starts_with(".debug-ima-anonymize")), "{left:?}");
    let r = xtask(&s.dir, &["bundle", "pack", "--anonymize", "--with-coredumps", b.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(2), "{}", text(&r));
}

//! `debug-ima --container docker` against the machine's real Docker engine. No registry is
//! reachable, so the test image is built here `FROM scratch`: Debian's static busybox, the
//! stand-ins (tests/standins/, and tests/standins/image/cuobjdump) and the recordings they
//! replay. The tests show that every rung's command runs inside the container, that the
//! recipe's variables and mounts arrive, that the artifacts land in the bundle on the host,
//! that cuda-gdb attaches inside the target's container, that a hanging container is
//! killed and removed, that the manifest records the image id, and that `container build`
//! builds an image and prints its id.
//!
//! With `CI` set, a missing Docker engine or `/bin/busybox` fails the tests (`.ci/run`
//! installs busybox-static); elsewhere they say so and pass without running.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::support;
use support::run::Run;
use support::{copy_dir, root, standins, Scratch};

/// The test image, built once per run of the test binary (its first container test).
const IMAGE: &str = "debug-ima-test/standins:latest";

/// Whether the engine and busybox are here; with `CI` set their absence is a failure.
fn engine_ready() -> bool {
    let docker = Command::new("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .output()
        .is_ok_and(|o| o.status.success());
    let busybox = Path::new("/bin/busybox").is_file();
    if docker && busybox {
        return true;
    }
    let why = format!("docker engine answering: {docker}, /bin/busybox: {busybox}");
    if std::env::var_os("CI").is_some() {
        panic!("the container tests need the Docker engine and Debian's busybox-static ({why})");
    }
    support::skipped(&why);
    false
}

fn docker(args: &[&str]) -> std::process::Output {
    Command::new("docker").args(args).output().expect("cannot run docker")
}

/// Builds the test image (once): busybox, the stand-ins and their recordings. The tools
/// in a container see only what the ladder passes them, so the image's environment names the
/// recording they replay (the target gets it from the recipe too).
fn test_image() -> &'static str {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let ctx = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("container-image-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&ctx);
        std::fs::create_dir_all(ctx.join("standins")).unwrap();
        std::fs::copy("/bin/busybox", ctx.join("busybox")).unwrap();
        for dir in [standins(), standins().join("image")] {
            for e in std::fs::read_dir(&dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_file() {
                    std::fs::copy(&p, ctx.join("standins").join(p.file_name().unwrap())).unwrap();
                }
            }
        }
        for case in ["h200/oob_write", "toolchain"] {
            copy_dir(&root().join("tests/fixtures").join(case), &ctx.join("fixtures").join(case));
        }
        std::fs::write(
            ctx.join("Containerfile"),
            "FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n\
             RUN mkdir -p /tmp && chmod 1777 /tmp\nCOPY standins/ /standins/\nCOPY fixtures/ /fixtures/\n\
             ENV PATH=/standins:/bin STANDIN_TOOLCHAIN=/fixtures/toolchain STANDIN_CASE=oob_write\n",
        )
        .unwrap();
        let out = Command::new("docker")
            .args(["build", "-q", "-t", IMAGE, "-f"])
            .arg(ctx.join("Containerfile"))
            .arg(&ctx)
            .output()
            .unwrap();
        assert!(out.status.success(), "docker build failed: {}", String::from_utf8_lossy(&out.stderr));
        let _ = std::fs::remove_dir_all(&ctx);
    });
    IMAGE
}

/// Containers whose name starts with `prefix`, running or not.
fn containers_named(prefix: &str) -> Vec<String> {
    let out = docker(&["ps", "-a", "--format", "{{.Names}}"]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|n| n.starts_with(prefix))
        .map(str::to_string)
        .collect()
}

/// The container name prefix of a bundle (`debug-ima-<bundle name, lowercased>`).
fn prefix_of(bundle: &Path) -> String {
    format!("debug-ima-{}", bundle.file_name().unwrap().to_string_lossy().to_ascii_lowercase())
}

/// A recipe whose target first shows where it runs and what it got, then replays the
/// out-of-bounds write of the H200 recording. Each test names its own, so that the
/// containers of tests running at the same time are told apart by name.
fn recipe(s: &Scratch, name: &str, extra: &str) -> PathBuf {
    let data = s.path("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("hello.txt"), "hello from a mounted folder\n").unwrap();
    s.write_recipe(&format!(
        "version: 1\nname: {name}\ndescription: \"the stand-in target in a container\"\n\
         run:\n  command: [\"sh\", \"-c\", \"test -f /.dockerenv && echo INSIDE-A-CONTAINER; \
         echo SETTING=$MY_SETTING TMPDIR=$TMPDIR PWD=$(pwd); cat {data}/hello.txt; exec target\"]\n  \
         timeout: 60\n  env: {{ MY_SETTING: x, STANDIN_CASE: oob_write }}\n\
         container:\n  runtime: docker\n  image: {IMAGE}\n  mounts: [\"{data}\"]\n  gpus: false\n{extra}",
        data = data.display()
    ))
}

/// Every rung of `--full` runs inside the image: the target's lines say so, the recipe's
/// variable and the mounted folder arrive, the dump, cuda-gdb's logs and the XML report land
/// in the bundle on the host, cuda-gdb attaches with `docker exec` inside the target's
/// container, the verdict is the recording's, and no container is left.
#[test]
fn every_rung_runs_inside_the_container_and_its_artifacts_come_back() {
    if !engine_ready() {
        return;
    }
    let image = test_image();
    let s = Scratch::for_run("in-docker");
    // A build, so that the rebuild rung runs too: it "compiles" by copying the stand-in
    // target, and says where it ran and with which flags.
    let r = recipe(
        &s,
        "everyrung",
        "build:\n  command: [\"sh\", \"-c\", \"test -f /.dockerenv && echo BUILD-INSIDE \
         NVCC_PREPEND_FLAGS=$NVCC_PREPEND_FLAGS; mkdir -p bin && cp /standins/target bin/app\"]\n  \
         binaries: [bin/app]\n",
    );
    // The plan first, while the binary does not exist yet (as the run will find it).
    let plan = Run::new(&s, &r, "oob_write").arg("--full").arg("--dry-run").run();
    assert_eq!(plan.code(), Some(0), "{}", plan.both());
    let out = Run::new(&s, &r, "oob_write").arg("--full").run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    assert_the_plan_shows_what_ran(&plan.stdout, &b.root, &b.manifest());

    let rungs = [
        "01-baseline",
        "02-rebuild",
        "03-launch-blocking",
        "04-coredump",
        "05-attach",
        "06-memcheck",
        "07-initcheck",
        "08-racecheck",
        "09-synccheck",
    ];
    assert_eq!(b.rung_dirs(), rungs, "{}", out.both());
    // The build, with line info both before the baseline (the binary did not exist yet) and
    // in the rebuild rung (`--full` runs it anyway), and cuobjdump's check of the binary: all
    // inside.
    assert!(b.read("rungs/01-baseline/build.log").contains("BUILD-INSIDE NVCC_PREPEND_FLAGS=-lineinfo -g\n"));
    assert!(b.read("rungs/01-baseline/build.command.txt").contains(" docker run --rm --name debug-ima-"));
    assert!(b.read("rungs/02-rebuild/stdout.log").contains("BUILD-INSIDE NVCC_PREPEND_FLAGS=-lineinfo -g\n"));
    let check = b.read("rungs/02-rebuild/cuobjdump-1.command.txt");
    assert!(check.contains(&format!(" {image} cuobjdump -elf {}/bin/app", s.dir.display())), "{check}");
    let lineinfo = b.read("rungs/02-rebuild/lineinfo.tsv");
    assert!(
        lineinfo.contains("line-info sections\texit 0") && !lineinfo.contains("\t0 line-info"),
        "{lineinfo}"
    );
    assert!(s.path("bin/app").is_file(), "the build's output is not on the host");
    // racecheck's listing of the binary's kernels ran inside too; the recorded listing
    // (tests/fixtures/toolchain, oob_write's) has no kernel with shared memory, so the
    // sanitizer had nothing to check and did not run.
    let listing = b.read("rungs/08-racecheck/elf-1.command.txt");
    assert!(listing.contains(&format!(" {image} sh -c ")) && listing.contains("cuobjdump -elf"), "{listing}");
    assert!(b.notes("racecheck").contains("nothing to check"), "{}", b.notes("racecheck"));
    for rung in rungs.into_iter().filter(|r| *r != "02-rebuild" && *r != "08-racecheck") {
        let command = b.read(&format!("rungs/{rung}/command.txt"));
        assert!(command.contains(" docker run --rm --name debug-ima-"), "{rung}: {command}");
        assert!(command.contains(" -e MY_SETTING "), "{rung}: {command}");
        assert!(
            command.contains(&format!(" -e TMPDIR {image} env -u TRITON_DISABLE_LINE_INFO ")),
            "{rung}: {command}"
        );
        assert!(command.contains(&format!(" -w {} ", s.dir.display())), "{rung}: {command}");
        if let Some(tool) = ["06-", "07-", "08-", "09-"].iter().find_map(|p| rung.strip_prefix(p)) {
            // The stand-in compute-sanitizer replays its recording instead of starting the
            // target; its command and memcheck's XML (below) show it ran inside.
            assert!(command.contains(&format!(" compute-sanitizer --tool {tool} ")), "{command}");
            continue;
        }
        let stdout = b.read(&format!("rungs/{rung}/stdout.log"));
        assert!(stdout.contains("INSIDE-A-CONTAINER\n"), "{rung} did not run in a container:\n{stdout}");
        assert!(
            stdout.contains(&format!("SETTING=x TMPDIR=/tmp PWD={}\n", s.dir.display())),
            "{rung}: the variable, TMPDIR or the working directory did not arrive:\n{stdout}"
        );
        assert!(
            stdout.contains("hello from a mounted folder\n"),
            "{rung}: the mount did not arrive:\n{stdout}"
        );
    }
    // Artifacts written inside land in the bundle on the host.
    let dumps: Vec<String> =
        b.files_in("rungs/04-coredump").into_iter().filter(|f| f.starts_with("core_")).collect();
    assert_eq!(dumps.len(), 1, "{:?}", b.files_in("rungs/04-coredump"));
    assert!(b.read("rungs/04-coredump/cudagdb-1.command.txt").contains("docker run"));
    assert!(b.read("rungs/04-coredump/cudagdb-1.log").contains("(oob_write.cu:7)"));
    assert!(b.exists("rungs/06-memcheck/memcheck.xml"), "{:?}", b.files_in("rungs/06-memcheck"));
    // oob_write has no initcheck recording: the stand-in said so, inside the container.
    assert!(b.read("rungs/07-initcheck/stderr.log").contains("no recording of initcheck"));
    // The attach rung: cuda-gdb ran inside the waiting target's container.
    let attach = b.read("rungs/05-attach/cudagdb-attach.command.txt");
    assert!(attach.contains(" docker exec -e TMPDIR debug-ima-"), "{attach}");
    assert!(b
        .read("rungs/05-attach/command.txt")
        .contains("--cap-add SYS_PTRACE --security-opt seccomp=unconfined"));
    assert!(b.notes("attach").contains("attached to PID"), "{}", b.notes("attach"));
    assert!(out.stdout.contains("oob_write.cu:7"), "{}", out.both());

    // The manifest records the runtime, its version and the image's id.
    let m = b.manifest();
    let c = &m["container"];
    assert_eq!(c["runtime"].as_str(), Some("docker"));
    assert_eq!(c["image"].as_str(), Some(image));
    let id = String::from_utf8_lossy(&docker(&["image", "inspect", "--format", "{{.Id}}", image]).stdout)
        .trim()
        .to_string();
    assert!(id.starts_with("sha256:"), "{id}");
    assert_eq!(c["image_id"].as_str(), Some(id.as_str()), "{}", b.read("manifest.yaml"));
    assert!(!c["version"].as_str().unwrap_or("").is_empty());
    assert_eq!(c["gpus"].as_bool(), Some(false));
    // Doctor looked inside the image.
    assert!(
        b.read("env/doctor.txt").contains("in debug-ima-test/standins:latest"),
        "{}",
        b.read("env/doctor.txt")
    );

    assert_eq!(containers_named(&prefix_of(&b.root)), Vec::<String>::new(), "containers left behind");
}

/// Every command the run recorded (the rungs' and the `collect` commands') is in the plan
/// `--dry-run` printed for the same rung, in the same container: container names without
/// their run-specific prefix and number, the bundle's path, the dump and the attached pid
/// put back as the plan's placeholders. And every rung of the plan ran.
fn assert_the_plan_shows_what_ran(plan: &str, bundle: &Path, m: &serde_yaml::Value) {
    let planned_bundle =
        bundle.with_file_name(format!("<UTC time>_{}", m["recipe"]["name"].as_str().unwrap()));
    let generic = |cmd: &str, dir: Option<&Path>| -> String {
        let mut out = cmd.replace(&bundle.display().to_string(), &planned_bundle.display().to_string());
        if let Some(dir) = dir {
            for f in std::fs::read_dir(dir).map(|rd| rd.flatten().collect::<Vec<_>>()).unwrap_or_default() {
                let name = f.file_name().to_string_lossy().into_owned();
                if name.starts_with("core_") {
                    out = out.replace(&name, "core_<host>.<pid>.<time>");
                }
            }
        }
        let words: Vec<String> = out
            .split(' ')
            .map(|w| match w.find("debug-ima-") {
                // `debug-ima-<prefix>-NN-<what>` -> `debug-ima-*-<what>`
                Some(0) => match (0..w.len().saturating_sub(3)).rev().find(|&i| {
                    let b = w.as_bytes();
                    b[i] == b'-'
                        && b[i + 1].is_ascii_digit()
                        && b[i + 2].is_ascii_digit()
                        && b.get(i + 3) == Some(&b'-')
                }) {
                    Some(i) => format!("debug-ima-*{}", &w[i + 3..]),
                    None => w.to_string(),
                },
                _ => w.to_string(),
            })
            .collect();
        // The plan's placeholders make the shell quote words the run's paths did not need.
        let mut out = words.join(" ").replace('\'', "");
        if let Some(i) = out.find(" -p ") {
            let rest = &out[i + 4..];
            let end = rest.find(' ').unwrap_or(rest.len());
            if !rest[..end].is_empty() && rest[..end].bytes().all(|b| b.is_ascii_digit()) {
                out = format!("{} -p <PID from the message>{}", &out[..i], &rest[end..]);
            }
        }
        out
    };
    // The plan's commands by section: `collect` and each rung.
    let mut sections: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    let mut current = String::new();
    for line in plan.lines() {
        if line.starts_with("collect (") {
            current = "collect".into();
        } else if let Some((n, rest)) = line.split_once(". ") {
            if n.bytes().all(|b| b.is_ascii_digit()) && !n.is_empty() {
                current = rest.split(':').next().unwrap().to_string();
            }
        } else if let Some(cmd) = line.strip_prefix("   ").and_then(|l| l.split_once(": ")).map(|(_, c)| c) {
            if !line.starts_with("      ") && !current.is_empty() {
                sections.entry(current.clone()).or_default().push(generic(cmd, None));
            }
        }
    }
    let find = |section: &str, cmd: &str| sections.get(section).is_some_and(|v| v.iter().any(|c| c == cmd));
    for c in m["collected"].as_sequence().unwrap() {
        let cmd = generic(c["command"].as_str().unwrap(), None);
        assert!(find("collect", &cmd), "collect: `{cmd}` is not in the plan:\n{plan}");
    }
    let mut ran = Vec::new();
    for r in m["rungs"].as_sequence().unwrap() {
        let rung = r["rung"].as_str().unwrap().to_string();
        let dir = bundle.join(r["dir"].as_str().unwrap());
        for c in r["commands"].as_sequence().unwrap() {
            let cmd = generic(c["command"].as_str().unwrap(), Some(&dir));
            assert!(find(&rung, &cmd), "{rung}: `{cmd}` is not in the plan:\n{:#?}", sections.get(&rung));
        }
        ran.push(rung);
    }
    let planned: Vec<&String> = sections.keys().filter(|k| *k != "collect").collect();
    assert_eq!(planned.len(), ran.len(), "planned {planned:?}, ran {ran:?}");
}

/// Files a root container writes are given back: the coredump in the bundle to the owner of
/// the bundle folder (here user 4242), the build's output to the owner of the build's tree
/// (here 4343). The tests run as root, like the ladder under `sudo`.
#[test]
fn files_written_in_the_container_are_given_back() {
    if !engine_ready() {
        return;
    }
    test_image();
    let s = Scratch::for_run("give-back");
    let src = s.path("src");
    std::fs::create_dir_all(&src).unwrap();
    let r = recipe(
        &s,
        "giveback",
        &format!(
            "build:\n  command: [\"sh\", \"-c\", \"mkdir -p bin && cp /standins/target bin/app\"]\n  \
             cwd: \"{0}\"\n  binaries: [\"{0}/bin/app\"]\n",
            src.display()
        ),
    );
    std::fs::create_dir_all(s.bundles()).unwrap();
    std::os::unix::fs::chown(s.bundles(), Some(4242), Some(4242)).unwrap();
    std::os::unix::fs::chown(&src, Some(4343), Some(4343)).unwrap();
    let out = Run::new(&s, &r, "oob_write").arg("--rungs").arg("baseline,rebuild,coredump").run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    use std::os::unix::fs::MetadataExt;
    let owner = |p: &Path| std::fs::metadata(p).map(|m| (m.uid(), m.gid())).unwrap();
    let dump = b.files_in("rungs/03-coredump").into_iter().find(|f| f.starts_with("core_")).expect("no dump");
    assert_eq!(owner(&b.root.join("rungs/03-coredump").join(dump)), (4242, 4242));
    assert_eq!(owner(&src.join("bin/app")), (4343, 4343), "the build's output is not the tree owner's");
}

/// A target that hangs in its container past the rung's timeout: looked at as hung at its
/// limit (no CUDA process in it), then ended, the container killed and removed, within
/// seconds.
#[test]
fn a_hanging_container_is_killed_and_removed() {
    if !engine_ready() {
        return;
    }
    test_image();
    let s = Scratch::for_run("hang-in-docker");
    let r = recipe(&s, "hang", "rungs:\n  baseline:\n    timeout: 3\n    env: { STANDIN_HANG: \"1\" }\n");
    let start = Instant::now();
    let out = Run::new(&s, &r, "oob_write").arg("--rungs").arg("baseline").run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    assert!(start.elapsed() < Duration::from_secs(40), "took {:?}", start.elapsed());
    let b = s.only_bundle();
    assert_eq!(b.exit_of("baseline", "target"), "stopped", "{}", b.read("manifest.yaml"));
    assert!(b.notes("baseline").contains("still running at its time limit (3 s)"), "{}", b.notes("baseline"));
    assert_eq!(
        containers_named(&prefix_of(&b.root)),
        Vec::<String>::new(),
        "the hanging container is still there"
    );
}

/// `container build NAME` builds `containers/NAME.Containerfile` (here a folder of the test's
/// own, holding a tiny `cuda.Containerfile`) and prints the tag and the image id.
#[test]
fn container_build_prints_the_image_id() {
    if !engine_ready() {
        return;
    }
    let s = Scratch::create("container", "build");
    let dir = s.path("containers");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy("/bin/busybox", dir.join("busybox")).unwrap();
    std::fs::write(
        dir.join("cuda.Containerfile"),
        "FROM scratch\nCOPY busybox /bin/busybox\nLABEL test=debug-ima-container-build\n",
    )
    .unwrap();
    let tag = "debug-ima-test/built:latest";
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["container", "build", "cuda", "--tag", tag, "--containers-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let id = String::from_utf8_lossy(&docker(&["image", "inspect", "--format", "{{.Id}}", tag]).stdout)
        .trim()
        .to_string();
    assert!(id.starts_with("sha256:"), "{id}");
    assert_eq!(stdout, format!("{tag} {id}\n"));

    // A name that is not one of the images is refused before anything runs.
    let bad = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["container", "build", "nonsense", "--containers-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2), "{}", String::from_utf8_lossy(&bad.stderr));
}

/// Ctrl-C while a target hangs in its container: exit 130, and the container is killed and
/// removed, not left running.
#[test]
fn ctrl_c_kills_and_removes_the_running_container() {
    if !engine_ready() {
        return;
    }
    test_image();
    let s = Scratch::for_run("ctrl-c-in-docker");
    let r = recipe(&s, "ctrlc", "rungs:\n  baseline:\n    env: { STANDIN_HANG: \"1\" }\n");
    let run = Run::new(&s, &r, "oob_write").arg("--rungs").arg("baseline");
    let start = Instant::now();
    let child = run.spawn();
    // Wait until the container runs, then interrupt the ladder.
    let deadline = Instant::now() + Duration::from_secs(30);
    let prefix = loop {
        let running: Vec<String> = containers_named("debug-ima-")
            .into_iter()
            // The second container: the first is the disassembly of the target's binary.
            .filter(|n| n.contains("_ctrlc-") && n.ends_with("-02-target"))
            .filter(|n| n.contains(&format!("-{}-", child.id())))
            .collect();
        if let Some(n) = running.first() {
            break n.trim_end_matches("-02-target").to_string();
        }
        assert!(Instant::now() < deadline, "the container never started");
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(300));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT)
        .unwrap();
    let out = run.finish(child, start);
    assert_eq!(out.code(), Some(130), "{}", out.both());
    assert_eq!(containers_named(&prefix), Vec::<String>::new(), "the container outlived Ctrl-C");
    let b = s.only_bundle();
    assert_eq!(b.exit_of("baseline", "target"), "interrupted", "{}", b.read("manifest.yaml"));
}

/// `--dry-run` with `--container podman` shows every command as it will run: in Podman with
/// the CDI GPU device, the native coredump rung's CPU-core cuda-gdb in a container of its own,
/// ptrace for the attach rung, cuda-gdb through `podman exec` in the target's container (the
/// tenth command: the armed baseline and the coredump rung have four each). Needs no engine.
#[test]
fn the_dry_run_shows_every_command_in_its_container() {
    let s = Scratch::for_run("dry-run-podman");
    let r = s.write_recipe(
        "version: 1\nname: planned\ndescription: \"a plan\"\nrun:\n  command: [\"target\"]\n  \
         env: { HF_TOKEN: \"hf_abcdefghijklmnopqrstuvwxyz012345\" }\n",
    );
    let out = Run::new(&s, &r, "oob_write")
        .arg("--dry-run")
        .arg("--container")
        .arg("podman")
        .arg("--image")
        .arg("debug-ima/cuda:13.0")
        .run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let o = &out.stdout;
    for want in [
        "container: podman image debug-ima/cuda:13.0 (GPUs passed in)",
        "podman run --rm --name debug-ima-utc-time_planned-0-02-target --init --ipc=host --device \
         nvidia.com/gpu=all --security-opt label=disable -v ",
        "--name debug-ima-utc-time_planned-0-01-objdump ",
        "objdump -d -l --inlines -w --no-show-raw-insn",
        "--cap-add SYS_PTRACE --security-opt seccomp=unconfined",
        "--name debug-ima-utc-time_planned-0-12-cpucore-gdb ",
        "debug-ima/cuda:13.0 cuda-gdb -batch -nx target ",
        "/rungs/<NN>-coredump/cpu-core' -ex 'set pagination off' -ex 'thread apply all bt'",
        "podman run --rm --name debug-ima-utc-time_planned-0-13-target ",
        "podman exec -e TMPDIR debug-ima-utc-time_planned-0-13-target cuda-gdb -batch -nx -p '<PID from the message>'",
        "debug-ima/cuda:13.0 env -u TRITON_DISABLE_LINE_INFO compute-sanitizer --tool initcheck ",
        "-e HF_TOKEN -e CUDA_LAUNCH_BLOCKING -e TMPDIR debug-ima/cuda:13.0 env -u TRITON_DISABLE_LINE_INFO target",
    ] {
        assert!(o.contains(want), "`{want}` missing from the plan:\n{o}");
    }
    assert!(!o.contains("abcdefghijklmnopqrstuvwxyz012345"), "a secret in the plan:\n{o}");
    assert!(!s.bundles().exists());

    // An image without a runtime is a mistake, not the host.
    let out = Run::new(&s, &r, "oob_write").arg("--dry-run").arg("--image").arg("debug-ima/cuda:13.0").run();
    assert_eq!(out.code(), Some(2), "{}", out.both());
    assert!(
        out.stderr.contains("`--image` needs a container runtime: add `--container docker`"),
        "{}",
        out.both()
    );
}

/// `containers/vllm-image.yaml`, the recipe docs/containers.md runs vLLM with: it checks, and
/// its plan runs every rung in the image given with the Hugging Face cache mounted. Needs no
/// engine.
#[test]
fn the_vllm_image_recipe_plans_every_rung_in_its_image() {
    let s = Scratch::for_run("vllm-image");
    // Outside the scratch folder (the working directory, mounted anyway).
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("hf-cache-{}", std::process::id()));
    std::fs::create_dir_all(&cache).unwrap();
    let recipe = root().join("containers/vllm-image.yaml");
    let out = Run::new(&s, &recipe, "oob_write")
        .arg("--dry-run")
        .arg("--set")
        .arg("image=debug-ima/vllm:v0.11.0")
        .arg("--set")
        .arg(&format!("hf_cache={}", cache.display()))
        .arg("--set")
        .arg("repro=python3 repro.py")
        .run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let o = &out.stdout;
    assert!(
        o.starts_with(
            "recipe: vllm-image\nplan: baseline, rebuild, launch-blocking, coredump, attach, memcheck, initcheck, racecheck, synccheck\n"
        ),
        "{o}"
    );
    assert!(o.contains("container: docker image debug-ima/vllm:v0.11.0 (GPUs passed in)"), "{o}");
    let mount = format!("-v {0}:{0} ", cache.display());
    assert!(o.contains(&mount), "{o}");
    assert!(o.contains("-e HF_HOME -e PYTHONUNBUFFERED"), "{o}");
    assert!(o.contains("-e VLLM_ENABLE_V1_MULTIPROCESSING "), "{o}");
    assert!(
        o.contains(
            "debug-ima/vllm:v0.11.0 env -u TRITON_DISABLE_LINE_INFO -u PYTORCH_CUDA_ALLOC_CONF -u \
             PYTORCH_ALLOC_CONF compute-sanitizer --tool memcheck"
        ),
        "{o}"
    );
    assert!(
        o.contains(
            "debug-ima/vllm:v0.11.0 env -u TRITON_DISABLE_LINE_INFO -u PYTORCH_CUDA_ALLOC_CONF -u \
             PYTORCH_ALLOC_CONF compute-sanitizer --tool initcheck"
        ),
        "{o}"
    );
    // A Python target: no CPU-core step (its core limit is 0, faulthandler gives its stacks),
    // and cuda-gdb attaches without the host libraries.
    assert!(!o.contains("cpucore-gdb") && !o.contains("ulimit -c 8388608"), "{o}");
    assert!(o.contains("PYTHONFAULTHANDLER"), "{o}");
    assert!(
        o.contains("cuda-gdb -batch -nx -iex 'set auto-solib-add off' -p '<PID from the message>'"),
        "{o}"
    );

    // Without the cache folder, the run stops before anything starts, naming it.
    std::fs::remove_dir(&cache).unwrap();
    let out = Run::new(&s, &recipe, "oob_write")
        .arg("--set")
        .arg("image=debug-ima/vllm:v0.11.0")
        .arg("--set")
        .arg(&format!("hf_cache={}", cache.display()))
        .arg("--set")
        .arg("repro=python3 repro.py")
        .run();
    assert_eq!(out.code(), Some(1), "{}", out.both());
    assert!(
        out.stderr.contains(&format!(
            "`{}` is to be mounted in the container but is not a folder",
            cache.display()
        )),
        "{}",
        out.both()
    );
    assert!(!s.bundles().exists());
}

/// `container build --runtime none` (no engine needed): says that `none` has no image to
/// build and how to build one, not the Apptainer advice.
#[test]
fn container_build_with_runtime_none_says_none_builds_nothing() {
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["container", "build", "cuda", "--runtime", "none"])
        .output()
        .expect("cannot run the xtask binary");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("`--runtime none` has no image to build"), "{err}");
    assert!(err.contains("`cargo xtask container build cuda`"), "{err}");
    assert!(!err.contains("apptainer"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["container", "build", "cuda", "--runtime", "apptainer"])
        .output()
        .expect("cannot run the xtask binary");
    assert!(String::from_utf8_lossy(&out.stderr).contains("apptainer build debug-ima-cuda.sif"));
}

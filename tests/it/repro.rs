//! The reproducer (issue 26, docs/repro.md) on what the H200 recorded
//! (tests/fixtures/bundles/repro: six Triton faults, each with its verified `repro.py`):
//! every reproducer compiles with the real Python, `bundle report` presents it as the minimal
//! reproducer, and `analyze` of such a bundle reads no evidence from `repro/` (the
//! reproducer's own dump is not the target's). The writer writing these very programs from
//! their captures is the unit test `the_writer_writes_the_programs_the_h200_verified`. And
//! `--repro` end to end on the stand-ins (issue 41): a reproducer that faults as the verdict says
//! is verified, one that runs clean is not.
//!
//! Must not: write into the fixtures (bundles are copied first) or need a GPU.

use std::path::{Path, PathBuf};
use std::process::Command;

fn bundles() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/bundles/repro");
    let mut out = Vec::new();
    for case in std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()) {
        out.extend(std::fs::read_dir(case).unwrap().map(|e| e.unwrap().path()));
    }
    out.sort();
    out
}

#[test]
fn every_recorded_reproducer_compiles() {
    let b = bundles();
    assert_eq!(b.len(), 8);
    for bundle in b {
        let script = bundle.join("repro/repro.py");
        let out = Command::new("python3")
            .args(["-c", "import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])"])
            .arg(&script)
            .output()
            .expect("python3 runs");
        assert!(out.status.success(), "{}: {}", script.display(), String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn the_report_presents_the_verified_reproducer_and_the_analysis_ignores_its_dump() {
    let bundle = bundles().into_iter().find(|p| p.to_string_lossy().contains("/graph/")).unwrap();
    let scratch = tempfile_dir("report");
    let copy = scratch.join(bundle.file_name().unwrap());
    let status = Command::new("cp").arg("-r").arg(&bundle).arg(&copy).status().unwrap();
    assert!(status.success());
    let report =
        Command::new(env!("CARGO_BIN_EXE_xtask")).args(["bundle", "report"]).arg(&copy).output().unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(report.status.success(), "{}", String::from_utf8_lossy(&report.stderr));
    let section = text.split("#### Minimal reproducer").nth(1).expect("the section");
    assert!(section.contains("**Verified:**") && section.contains("gather_kv_kernel"), "{section}");
    assert!(section.contains("CUDA graph capture"), "the graph note: {section}");
    // The script holds the block table's values (the program's input): named, not shown.
    assert!(
        section.contains("**User data:**") && !section.contains("-67108864"),
        "the script named with what it holds, not shown: {section}"
    );
    // The reproducer's dump (repro/cudagdb-1.log) is no input of the analysis.
    let analyzed =
        Command::new(env!("CARGO_BIN_EXE_xtask")).args(["analyze", "--json"]).arg(&copy).output().unwrap();
    let json = String::from_utf8_lossy(&analyzed.stdout);
    assert!(json.contains("rungs/01-baseline"), "{json}");
    assert!(!json.contains("\"repro/"), "an input from repro/: {json}");
    std::fs::remove_dir_all(&scratch).unwrap();
}

fn tempfile_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("debug-ima-repro-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A CUDA C++ reproducer from the H200's native capture of oob_write.cu builds with the real
/// nvcc (the PyPI wheel, no GPU needed): the kernel's source file into `kernel.cubin`, and the
/// generated driver, which opens libcuda at run time, into `repro`.
#[test]
fn a_native_reproducer_builds_with_the_real_nvcc() {
    use xtask::findings::repro::{native, Expected};
    let Some(bin) = crate::ladder::nvcc_or_skip() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(
        root.join("tests/fixtures/h200/capture_native/oob_write/native-capture-915.json"),
    )
    .unwrap();
    let c = native::parse(&text).unwrap();
    let expected = Expected {
        kernel: "scale_write(float*, int, long long)".into(),
        file: None,
        line: None,
        error: "illegal-address".into(),
    };
    let dir = tempfile_dir("native");
    std::fs::write(dir.join("repro_driver.cu"), native::write(&c, &expected).script).unwrap();
    let source = root.join("tests/gpu/programs/oob_write.cu").canonicalize().unwrap();
    std::fs::write(dir.join("build.sh"), native::build_script(&source.display().to_string())).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new("sh")
        .arg(dir.join("build.sh"))
        .env("PATH", path)
        .env("DEBUG_IMA_ARCH", "sm_90")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.join("repro").is_file() && dir.join("kernel.cubin").is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A C++ reproducer in the report: how to build and run it, and the program named, not shown:
/// it holds its allocations' recorded bytes, the program's input values (issue 42).
#[test]
fn the_report_says_how_to_build_a_native_reproducer() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/bundles/repro_native/oob_read");
    let bundle = std::fs::read_dir(&root).unwrap().next().unwrap().unwrap().path();
    let report =
        Command::new(env!("CARGO_BIN_EXE_xtask")).args(["bundle", "report"]).arg(&bundle).output().unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    let section = text.split("#### Minimal reproducer").nth(1).expect("the section");
    let section = section.split("#### ").next().unwrap();
    assert!(
        section.contains("**Verified:**") && section.contains("sh build.sh") && section.contains("./repro"),
        "{section}"
    );
    assert!(
        section.contains("**User data:**")
            && section.contains("repro/repro_driver.cu")
            && section.contains("`param ")
            && !section.contains("```cpp"),
        "{section}"
    );
}

/// `debug-ima --repro` end to end on the stand-ins, replaying the H200's Triton fault
/// (tests/fixtures/h200/triton_eager) and its launch capture (tests/fixtures/h200/capture/eager):
/// the capture run writes the capture, `repro/repro.py` is written from it and run by the
/// `python3` first on PATH, a stub that, with `REPRO_FAULTS=1`, faults as the recorded program
/// did (it runs the stand-in target, whose GPU dump the stand-in cuda-gdb reads), and otherwise
/// ends cleanly. Only the run that faulted the same way is called verified: before issue 41 no
/// test ran `--repro` on the stand-ins, so a reproducer forced to "verified" passed every test.
#[test]
fn a_reproducer_is_verified_only_when_it_faults_as_the_verdict_says() {
    use crate::support::run::Run;
    use crate::support::{path_with, standins, Scratch};
    for faults in [true, false] {
        let s = Scratch::for_run(if faults { "repro-faults" } else { "repro-clean" });
        let bin = s.path("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let stub = format!(
            "#!/bin/sh\n# python3 for the test: `-m`/`-c` (the environment snapshot) print a line; a script\n\
             # (the reproducer) is noted, then faults as the recording did or ends cleanly.\n\
             case $1 in -m|-c) echo \"python3 $* (stand-in)\"; exit 0 ;; esac\n\
             echo \"$*\" >> {ran}\n\
             if [ \"${{REPRO_FAULTS:-}}\" = 1 ]; then exec target; fi\n\
             exit 0\n",
            ran = s.path("repro-ran.log").display()
        );
        crate::support::plant::write_exec(&bin.join("python3"), &stub);
        let recipe = s.write_recipe(
            "version: 1\nname: standin-py\ndescription: \"the stand-in target as a Python program\"\n\
             python: true\nrun:\n  command: [\"target\"]\n  timeout: 30\n",
        );
        let capture = crate::support::fixture("capture/eager/capture-510.json");
        let out = Run::new(&s, &recipe, "triton_eager")
            .path(path_with(&[&bin, &standins()]))
            .env("STANDIN_CAPTURE", capture.to_str().unwrap())
            .env("REPRO_FAULTS", if faults { "1" } else { "0" })
            .arg("--repro")
            .run();
        assert_eq!(out.code(), Some(0), "{}", out.both());
        let b = s.only_bundle();
        assert!(b.files_in("repro").iter().any(|f| f.starts_with("capture-")), "{:?}", b.files_in("repro"));
        assert!(
            b.exists("repro/repro.py"),
            "no reproducer written: {:?}\n{}",
            b.files_in("repro"),
            out.both()
        );
        let ran = std::fs::read_to_string(s.path("repro-ran.log")).unwrap_or_default();
        assert!(ran.contains("repro/repro.py"), "the reproducer did not run: {ran:?}\n{}", out.both());
        // The capture run is the reproducer's: `seen in` counts the climb's runs only.
        let runs = b.rung_dirs().iter().filter(|d| !d.ends_with("-rebuild")).count();
        let seen = format!(" of {runs} run{} of the target", if runs == 1 { "" } else { "s" });
        assert!(out.stdout.contains(&seen), "not `{seen}`: {}", out.both());
        let result: serde_json::Value = serde_json::from_str(&b.read("repro/result.json")).unwrap();
        let notes = b.notes("repro");
        let report = Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args(["bundle", "report"])
            .arg(&b.root)
            .output()
            .unwrap();
        let report = String::from_utf8_lossy(&report.stdout).into_owned();
        if faults {
            assert_eq!(result["status"], "verified", "{result:#}\n{}", out.both());
            assert!(notes.contains("reproducer verified"), "{notes}");
            assert!(report.contains("**Verified:**"), "{report}");
        } else {
            assert_eq!(result["status"], "did-not-reproduce", "{result:#}\n{}", out.both());
            assert!(notes.contains("did not reproduce") && !notes.contains("verified"), "{notes}");
            assert!(!report.contains("**Verified:**"), "{report}");
            assert!(!out.both().contains("reproducer verified"), "{}", out.both());
        }
        s.assert_no_standin_left();
    }
}

/// A prompt planted as token ids in a reproducer's integer storage (the capture's recorded
/// bytes and the list `repro.py` holds) leaves through neither archive nor the report by
/// default: `pack` lists both files in `LEFT_OUT.tsv`, the report names the script and says
/// what it holds; `--with-inputs` packs them.
#[test]
fn a_prompt_planted_as_token_ids_is_not_in_packs_output_by_default() {
    use std::io::Read;
    let bundle = bundles().into_iter().find(|p| p.to_string_lossy().contains("/graph/")).unwrap();
    let scratch = tempfile_dir("inputs");
    let copy = scratch.join(bundle.file_name().unwrap());
    assert!(Command::new("cp").arg("-r").arg(&bundle).arg(&copy).status().unwrap().success());
    // The prompt as token ids: four-digit ids, one per byte.
    let ids: Vec<i32> = "tell me the launch codes".bytes().map(|b| 7000 + i32::from(b) * 13).collect();
    let listed = ids.iter().map(i32::to_string).collect::<Vec<_>>().join(", ");
    let script = copy.join("repro/repro.py");
    let text = std::fs::read_to_string(&script).unwrap();
    let old = "115, 89, 36, 221, 43, 126";
    assert!(text.contains(old), "the fixture's block table changed");
    std::fs::write(&script, text.replacen(old, &listed, 1)).unwrap();
    let capture = std::fs::read_dir(copy.join("repro"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("capture-"))
        .unwrap();
    let mut c: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&capture).unwrap()).unwrap();
    let storage = c["storages"].as_array_mut().unwrap().iter_mut().find(|s| s["values"].is_string()).unwrap();
    let mut bytes: Vec<u8> = ids.iter().flat_map(|i| i.to_le_bytes()).collect();
    bytes.resize(storage["bytes"].as_u64().unwrap() as usize, 0);
    let b64 = crate::support::corpus::base64_bytes(&bytes);
    storage["values"] = serde_json::Value::String(b64.clone());
    std::fs::write(&capture, serde_json::to_string(&c).unwrap()).unwrap();
    let needles = [listed.clone(), b64[..40].to_string()];

    let xtask = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_xtask")).args(args).arg(&copy).output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        [o.stdout, o.stderr].concat()
    };
    let tar_of = |archive: &Path| {
        let mut tar = Vec::new();
        let f = std::fs::File::open(archive).unwrap();
        zstd::stream::read::Decoder::new(f).unwrap().read_to_end(&mut tar).unwrap();
        tar
    };
    let has = |hay: &[u8], n: &str| memchr::memmem::find(hay, n.as_bytes()).is_some();
    let archive = copy.with_extension("tar.zst");
    let said = xtask(&["bundle", "pack"]);
    let tar = tar_of(&archive);
    for n in &needles {
        assert!(!has(&tar, n), "the planted prompt is in the archive");
        assert!(!has(&said, n), "the planted prompt is on pack's terminal");
    }
    let left = String::from_utf8_lossy(&tar).to_string();
    assert!(left.contains("repro/repro.py") && left.contains("--with-inputs"), "LEFT_OUT.tsv names it");
    let report = xtask(&["bundle", "report"]);
    let report_text = String::from_utf8_lossy(&report);
    assert!(!has(&report, &listed), "the planted prompt is in the report");
    assert!(
        report_text.contains("**User data:**") && report_text.contains("block_table_ptr"),
        "{report_text}"
    );
    // Asked for, they are packed.
    xtask(&["bundle", "pack", "--with-inputs"]);
    let tar = tar_of(&archive);
    assert!(has(&tar, &listed) && has(&tar, &needles[1]), "--with-inputs packs them");
    std::fs::remove_dir_all(&scratch).unwrap();
}

//! `cargo xtask analyze` on the recordings of the GPU suite (tests/fixtures/h200/<case>/,
//! recorded on an H200 by tests/gpu/record.sh): every case gets the verdict written in
//! tests/gpu/expected.tsv, the rendered text is snapshot-tested, and the binary's JSON and
//! exit codes are checked for good and bad input.

use std::path::{Path, PathBuf};
use std::process::Command;

use xtask::bundle::inputs::analyze;
use xtask::findings::render::{render_json, render_text};
use xtask::findings::{names, verdict::same_kernel};

use crate::support::{copy_dir, mkfifo, root};

struct Expected {
    case: String,
    kernel: Option<String>,
    file: String,
    line: u32,
    error: String,
    /// The host line that launched the kernel (`file:line`), `-` for none.
    launch: String,
    /// What `analyze` of the recording names as the launch site: `=` the same `file:line`,
    /// `function:NAME` the function only (the recording's binary has no host line info: a
    /// plain `nvcc` build, memcheck's host backtrace names `main`), `-` none.
    recorded_launch: String,
}

fn expected() -> Vec<Expected> {
    let text = std::fs::read_to_string(root().join("tests/gpu/expected.tsv")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            Expected {
                case: c[0].into(),
                kernel: (c[1] != "-").then(|| c[1].to_string()),
                file: c[2].into(),
                line: c[3].parse().unwrap_or(0),
                error: c[4].into(),
                launch: c[5].into(),
                recorded_launch: c[6].into(),
            }
        })
        .collect()
}

#[test]
fn every_recorded_case_gets_the_expected_verdict() {
    let cases = expected();
    assert!(cases.len() >= 14, "expected.tsv lists the suite");
    let mut failures = Vec::new();
    for e in &cases {
        let dir = root().join("tests/fixtures/h200").join(&e.case);
        let a = analyze(&[dir]).unwrap();
        match (&e.kernel, &a.verdict) {
            (None, None) => {}
            (None, Some(v)) => failures.push(format!("{}: expected no verdict, got {v:?}", e.case)),
            (Some(_), None) => failures.push(format!("{}: no verdict: {}", e.case, a.conclusion)),
            (Some(k), Some(v)) => {
                let file = v.file.as_deref().map(names::base_name);
                if !same_kernel(k, &v.kernel)
                    || file != Some(e.file.as_str())
                    || v.line != Some(e.line)
                    || v.error.as_str() != e.error
                {
                    failures.push(format!(
                        "{}: expected {k} at {}:{} ({}), got {} at {:?}:{:?} ({})",
                        e.case,
                        e.file,
                        e.line,
                        e.error,
                        v.kernel,
                        v.file,
                        v.line,
                        v.error.as_str()
                    ));
                }
                if v.block.is_none() || v.thread.is_none() {
                    failures.push(format!("{}: verdict without block/thread", e.case));
                }
                // Every faulting case's launch site, as expected.tsv says the recording names it:
                // the true line, or (binaries without host line info) the function only.
                let got = match &v.launch_site {
                    Some(h) => match (&h.frame.file, h.frame.line, &h.frame.function) {
                        (Some(f), Some(l), _) => {
                            let at = format!("{}:{l}", names::base_name(f));
                            if at == e.launch {
                                "=".to_string()
                            } else {
                                at
                            }
                        }
                        (_, _, Some(func)) => format!("function:{func}"),
                        _ => "-".to_string(),
                    },
                    None => "-".to_string(),
                };
                if got != e.recorded_launch {
                    failures.push(format!(
                        "{}: launch site {got}, expected {} (the GPU's: {})",
                        e.case, e.recorded_launch, e.launch
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The patterns of a complete verdict, on the recordings of their own programs
/// (tests/gpu/record_verdict.sh on an H200): the user's line behind an inlined CUDA-header
/// function with the class and space cuda-gdb gave; the true launch line of an unchecked
/// launch and of an ATen assert whose plain traceback names a later line.
#[test]
fn complete_verdicts_on_the_pattern_recordings() {
    let a = |case: &str| analyze(&[root().join("tests/fixtures/h200").join(case)]).unwrap().verdict.unwrap();
    let v = a("shared_atomic");
    // The most complete spelling of the file any tool printed for the kernel: memcheck's path
    // where cuda-gdb printed only the name.
    assert_eq!((v.file.as_deref(), v.line), (Some("/tmp/ima-record-verdict/shared_atomic.cu"), Some(16)));
    assert_eq!(
        v.inlined.first().map(|l| l.file.as_str()),
        Some("/usr/local/cuda/targets/x86_64-linux/include/device_atomic_functions.hpp")
    );
    assert_eq!(v.error.as_str(), "out-of-range-address");
    assert!(
        v.access.as_ref().and_then(|x| x.space.as_deref()).is_some_and(|s| s.contains("shared")),
        "{v:?}"
    );
    assert!(v.unknown.is_empty(), "{v:?}");
    let v = a("aten_async");
    assert!(v.library_line, "{v:?}");
    let launched = v.launch_site.as_ref().unwrap();
    assert_eq!(launched.frame.line, Some(11), "{v:?}");
    assert_eq!(launched.how, "the launch-blocking traceback");
    assert_eq!(v.surfaced_at.as_ref().unwrap().frame.line, Some(12), "{v:?}");
    let v = a("unchecked_launch");
    assert_eq!(v.launch_site.as_ref().unwrap().frame.line, Some(34), "{v:?}");
    assert!(a("stencil_neighbour").access.unwrap().nearest.is_some());
}

#[test]
fn rendered_analyses_are_stable() {
    for e in expected() {
        let dir = root().join("tests/fixtures/h200").join(&e.case);
        let a = analyze(&[dir]).unwrap();
        insta::with_settings!({snapshot_path => root().join("tests/snapshots"), prepend_module_to_snapshot => false}, {
            insta::assert_snapshot!(format!("analyze_{}", e.case), render_text(&a));
        });
    }
}

#[test]
fn each_rung_alone_names_what_it_can() {
    // The coredump rung's cuda-gdb output alone is enough for a verdict with a line,
    // even when cuda-gdb crashed after printing it (oob_write, -lineinfo build).
    let dir = root().join("tests/fixtures/h200/oob_write");
    let a = analyze(&[dir.join("cudagdb-core-1.log")]).unwrap();
    let v = a.verdict.expect("cuda-gdb's line survives its crash");
    assert_eq!(v.line, Some(7));
    assert!(v.remarks.iter().any(|r| r.contains("crashed")), "{:?}", v.remarks);
    // The baseline alone only has the symptom: no verdict, and the tool says what to run.
    let a = analyze(&[dir.join("baseline.log")]).unwrap();
    assert!(a.verdict.is_none());
    assert!(a.conclusion.contains("coredump or memcheck"), "{}", a.conclusion);
    // The XML report alone.
    let a = analyze(&[dir.join("memcheck.xml")]).unwrap();
    assert_eq!(a.verdict.unwrap().line, Some(7));
}

fn xtask() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
}

#[test]
fn json_has_the_documented_shape() {
    let out = xtask()
        .args(["analyze", "--json"])
        .arg(root().join("tests/fixtures/h200/oob_read"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let verdict = &v["verdict"];
    assert!(verdict["kernel"].as_str().unwrap().starts_with("gather_rows"));
    assert_eq!(verdict["line"], 8);
    assert_eq!(verdict["error"], "illegal-address");
    assert_eq!(verdict["block"], serde_json::json!([3, 0, 0]));
    assert_eq!(verdict["thread"].as_array().unwrap().len(), 3);
    assert!(!verdict["rungs"].as_array().unwrap().is_empty());
    assert!(!v["findings"].as_array().unwrap().is_empty());
    // And the same through the library, byte for byte (deterministic output).
    let a = analyze(&[root().join("tests/fixtures/h200/oob_read")]).unwrap();
    assert_eq!(render_json(&a).as_bytes(), &out.stdout[..]);
}

/// The recorded two-GPU job (tests/fixtures/h200/dist_two_gpu): of all its logs, the attach
/// names the kernel on device 1, torchrun's summary of the same run makes pid 833 rank 1, and
/// rank 0 was stopped by torchrun; the memcheck run's timeouts (another run) are not its reason.
#[test]
fn the_two_gpu_recordings_name_the_faulting_rank() {
    let a = analyze(&[root().join("tests/fixtures/h200/dist_two_gpu")]).unwrap();
    let v = a.verdict.expect("the attach located the kernel");
    assert_eq!((v.rank, v.device, v.pid), (Some(1), Some(1), Some(833)));
    let t = v.ranks.as_ref().expect("triaged");
    assert_eq!((t.culprit.rank, t.culprit.node.as_deref()), (1, Some("vm")));
    assert_eq!((t.collateral[0].rank, t.collateral[0].pid), (0, Some(832)));
    assert!(t.collateral[0].reason.starts_with("stopped by the launcher after rank 1 failed"), "{t:?}");
}

#[test]
fn clean_program_has_null_verdict_and_exit_zero() {
    let out =
        xtask().args(["analyze", "--json"]).arg(root().join("tests/fixtures/h200/clean")).output().unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["verdict"].is_null());
}

#[test]
fn unreadable_input_names_the_file_and_fails() {
    let out = xtask().args(["analyze", "/nonexistent/ima.log"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/ima.log"), "{err}");
    assert!(err.starts_with("error: "), "{err}");
}

#[test]
fn garbage_input_is_read_and_said_to_be_unknown() {
    let dir = std::env::temp_dir().join(format!("xtask-garbage-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("core.bin");
    let bytes: Vec<u8> = (0..100_000u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    std::fs::write(&bin, bytes).unwrap();
    std::fs::write(dir.join("empty.log"), b"").unwrap();
    let out = xtask().arg("analyze").arg(&dir).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("binary content"), "{text}");
    assert!(text.contains("empty: empty"), "{text}");
    assert!(text.contains("no verdict"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn usage_errors_exit_two() {
    let out = xtask().arg("analyze").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn bundles_written_by_debug_ima_on_the_gpu_are_read_whole() {
    // Bundles that `cargo xtask debug-ima --yes` wrote on an H200 (tests/gpu/suite.sh),
    // coredumps over 1 MB removed. A bundle directory is read through its rungs' logs.
    let b = root().join("tests/fixtures/bundles");
    let a = analyze(&[b.join("oob_read-full")]).unwrap();
    let v = a.verdict.expect("oob_read is located");
    assert_eq!((v.file.as_deref(), v.line), (Some("/work/main/tests/gpu/programs/oob_read.cu"), Some(8)));
    // memcheck saw the one bad thread: block 3, thread 9 (index 777).
    assert_eq!((v.block, v.thread), (Some([3, 0, 0]), Some([9, 0, 0])));
    assert!(v.rungs.iter().any(|r| r.starts_with("coredump")), "{:?}", v.rungs);
    assert!(v.rungs.iter().any(|r| r.starts_with("attach")), "{:?}", v.rungs);
    assert!(a.inputs.iter().all(|i| !i.path.ends_with("command.txt")));

    let a = analyze(&[b.join("triton_worker")]).unwrap();
    let v = a.verdict.expect("the worker's fault is located");
    assert_eq!((v.file.as_deref(), v.line), (Some("vllm_shaped.py"), Some(22)));
    assert!(v.pid.is_some(), "the faulting worker's PID is known");

    // The inlined case did not fault in this run: only memcheck saw it.
    let a = analyze(&[b.join("inlined-full")]).unwrap();
    let v = a.verdict.expect("memcheck located it");
    assert_eq!(v.line, Some(5));
    assert!(v.inlined.iter().any(|l| l.line == 8), "{:?}", v.inlined);
    // Two ranks under torchrun on two H200s, rank 1 faulting on device 1.
    let a = analyze(&[b.join("dist_fault-full")]).unwrap();
    let v = a.verdict.clone().expect("the faulting rank is located");
    assert_eq!((v.file.as_deref(), v.line), (Some("/work/main/tests/gpu/programs/vllm_shaped.py"), Some(22)));
    assert_eq!((v.rank, v.device), (Some(1), Some(1)));
    // Triage across ranks: rank 1 faulted (its dump, pid 886 on `vm`); rank 0 was only
    // stopped by torchrun, in the same run (the coredump rung's pid 885).
    assert_eq!(v.culprit_rank(), Some(1));
    let t = v.ranks.as_ref().expect("two ranks are triaged");
    let c = &t.culprit;
    assert_eq!((c.rank, c.device, c.pid, c.node.as_deref()), (1, Some(1), Some(886), Some("vm")));
    assert_eq!(c.kernel.as_deref(), Some("gather_kv_kernel"));
    assert_eq!(t.collateral.len(), 1);
    assert_eq!((t.collateral[0].rank, t.collateral[0].pid), (0, Some(885)));
    assert_eq!(
        t.collateral[0].reason,
        "stopped by the launcher after rank 1 failed (exit -15; Signal 15 (SIGTERM) received by PID 885)"
    );
    let json: serde_json::Value = serde_json::from_str(&render_json(&a)).unwrap();
    let ranks = &json["verdict"]["ranks"];
    assert_eq!(ranks["culprit"]["rank"], 1);
    assert_eq!(ranks["culprit"]["node"], "vm");
    assert_eq!(ranks["culprit"]["device"], 1);
    assert_eq!(ranks["culprit"]["pid"], 886);
    assert!(ranks["culprit"]["reason"].as_str().unwrap().contains("CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS"));
    assert_eq!(ranks["collateral"][0]["rank"], 0);
    assert!(ranks["collateral"][0]["node"].is_null());
    let text = render_text(&a);
    assert!(
        text.contains(
            "\n  culprit:  rank 1 (device 1, pid 886 on vm): illegal-address in gather_kv_kernel\n"
        ),
        "{text}"
    );
    // A single-rank job has no triage.
    let a = analyze(&[b.join("oob_read-full")]).unwrap();
    assert_eq!(a.verdict.expect("located").ranks, None);
    // An unchecked launch, default policy (issue 11): the coredump rung ran under launch-blocking
    // (its command.txt says so) and the CPU core's launching thread names the launch line, the
    // baseline's own check the line where it surfaced.
    let a = analyze(&[b.join("unchecked_launch")]).unwrap();
    let v = a.verdict.expect("located");
    assert_eq!((v.file.as_deref(), v.line), (Some("unchecked_launch.cu"), Some(20)));
    let launched = v.launch_site.as_ref().unwrap();
    assert_eq!((launched.frame.function.as_deref(), launched.frame.line), (Some("main"), Some(34)));
    assert_eq!(launched.from, "coredump/cpucore-gdb");
    assert!(launched.how.contains("launch-blocking"), "{launched:?}");
    assert!(v.unknown.is_empty(), "{v:?}");
    for name in ["oob_read-full", "triton_worker", "inlined-full", "dist_fault-full", "unchecked_launch"] {
        let a = analyze(&[b.join(name)]).unwrap();
        insta::with_settings!({snapshot_path => root().join("tests/snapshots"), prepend_module_to_snapshot => false}, {
            insta::assert_snapshot!(format!("bundle_{name}"), render_text(&a));
        });
    }
}

/// A scratch folder under `CARGO_TARGET_TMPDIR`.
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("analyze-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `analyze(paths)` on a thread, failing the test if it blocks for 20 s.
fn analyze_within(paths: Vec<PathBuf>) -> anyhow::Result<xtask::findings::verdict::Analysis> {
    let (tx, rx) = std::sync::mpsc::channel();
    let shown = format!("{paths:?}");
    std::thread::spawn(move || {
        let _ = tx.send(analyze(&paths));
    });
    rx.recv_timeout(std::time::Duration::from_secs(20)).unwrap_or_else(|_| panic!("analyze {shown} blocked"))
}

#[test]
fn a_fifo_or_device_given_as_input_is_refused_without_blocking() {
    let dir = scratch("fifo");
    let fifo = dir.join("memcheck.log");
    mkfifo(&fifo);
    let e = format!("{:#}", analyze_within(vec![fifo.clone()]).unwrap_err());
    assert_eq!(
        e,
        format!(
            "cannot read `{}`: it is a named pipe (FIFO), not a file: pass log files, XML reports or a bundle directory",
            fifo.display()
        )
    );
    let e = format!("{:#}", analyze_within(vec![PathBuf::from("/dev/zero")]).unwrap_err());
    assert!(e.contains("it is a character device"), "{e}");
    // Inside a directory, what is not a regular file is not read (a note says so); the
    // recording beside it is read.
    std::fs::copy(root().join("tests/fixtures/h200/oob_write/memcheck.log"), dir.join("real.log")).unwrap();
    let a = analyze_within(vec![dir.clone()]).unwrap();
    assert_eq!(a.inputs.len(), 2);
    assert!(
        a.inputs
            .iter()
            .any(|i| i.lines == 0
                && i.notes.iter().any(|n| n.contains("named pipe (FIFO), not a regular file")))
    );
    assert_eq!(a.verdict.unwrap().line, Some(7));
    // The binary says the same and exits 1.
    let out = xtask().arg("analyze").arg(&fifo).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("named pipe (FIFO)"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Kernel names with 2-, 3- and 4-byte characters, raw in the text log and as character
/// references in the XML report (where they once panicked in `names::kernel_key`).
#[test]
fn kernel_names_of_any_utf8_are_analyzed() {
    let dir = scratch("utf8");
    let src = root().join("tests/fixtures/h200/oob_write");
    let name = "核心_😀_é";
    let log = std::fs::read_to_string(src.join("memcheck.log")).unwrap().replace("scale_write", name);
    std::fs::write(dir.join("memcheck.log"), log).unwrap();
    let xml = std::fs::read_to_string(src.join("memcheck.xml"))
        .unwrap()
        .replace("<func>scale_write</func>", "<func>&#x6838;&#24515;_&#x1F600;_&#233;</func>");
    std::fs::write(dir.join("memcheck.xml"), xml).unwrap();
    for file in ["memcheck.log", "memcheck.xml"] {
        let out = xtask().args(["analyze", "--json"]).arg(dir.join(file)).output().unwrap();
        assert!(out.status.success(), "{file}: {}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let kernel = v["verdict"]["kernel"].as_str().unwrap();
        assert!(kernel.starts_with(name), "{file}: {kernel}");
        assert_eq!(names::kernel_key(kernel), name);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Thousands of distinct long kernel names cluster into as many kernels (each name its own),
/// the first one's records winning the tie: the clustering's result, which the index keeps
/// (its speed is `bench --names`, in docs/benchmarks.md).
#[test]
fn many_distinct_long_kernel_names_cluster_one_each() {
    let records = std::fs::read_to_string(root().join("tests/fixtures/h200/oob_write/memcheck.log")).unwrap();
    let t = &xtask::commands::bench::extract_records(&records)[0];
    let text = xtask::commands::bench::names_log(t, 300, 5_000);
    let ev = xtask::findings::scan::scan_str(&text, "names.log");
    let a = xtask::findings::verdict::decide(&[ev]);
    assert_eq!(a.findings.len(), 300);
    let v = a.verdict.unwrap();
    assert!(v.kernel.starts_with("k00000_"), "{}", &v.kernel[..40]);
    assert_eq!(v.disagreements.len(), 299);
    assert!(same_kernel(&v.kernel, &xtask::commands::bench::distinct_name(0, 5_000)));
}

/// One kernel, one spelling: compute-sanitizer prints `gather_rows(const float *, ...)` and a
/// bare file name where cuda-gdb prints `gather_rows(float const*, ...)`; analysed alone,
/// each names it the same way, and together the finding lines agree too (the H200
/// recordings of oob_read, misaligned and device_assert).
#[test]
fn the_same_kernel_from_memcheck_and_from_cuda_gdb_renders_identically() {
    for (case, gdb, kernel) in [
        ("oob_read", "cudagdb-core-1.log", "gather_rows(float const*, long long const*, float*, int)"),
        ("misaligned", "cudagdb-core-1.log", "sum_pairs(char const*, double*, int)"),
        ("graph_fault", "attach.log", "shift_copy(float const*, float*, int, long long)"),
    ] {
        let dir = root().join("tests/fixtures/h200").join(case);
        let memcheck_text = std::fs::read_to_string(dir.join("memcheck.log")).unwrap();
        assert!(memcheck_text.contains("const "), "{case}: memcheck spells `const T*`");
        let alone = |file: &str| analyze(&[dir.join(file)]).unwrap().verdict.expect("located").kernel;
        assert_eq!(alone("memcheck.log"), kernel, "{case}");
        assert_eq!(alone(gdb), kernel, "{case}");
        let both = analyze(&[dir.join("memcheck.log"), dir.join(gdb)]).unwrap();
        let text = render_text(&both);
        let lines: Vec<&str> = text.lines().filter(|l| l.contains(" in `")).collect();
        assert!(lines.len() >= 3, "{text}");
        let mut files = Vec::new();
        for l in &lines {
            let named = l.split('`').nth(1).unwrap();
            assert_eq!(named, kernel, "{case}: {l}");
            files.extend(l.split("` at ").nth(1).map(|r| r.split(',').next().unwrap()));
        }
        files.dedup();
        assert_eq!(files.len(), 1, "{case}: one spelling of the file: {files:?}\n{text}");
    }
}

/// A folder holding two unrelated recordings: oob_write's cuda-gdb reading of its coredump
/// and unchecked_launch's launch-blocking run with its CPU core. The verdict is oob_write's
/// kernel, and neither the launch site nor where it surfaced comes from the other program.
#[test]
fn a_host_frame_is_never_joined_from_an_unrelated_recording() {
    let h200 = root().join("tests/fixtures/h200");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("mixed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (from, to) in [
        ("oob_write/cudagdb-core-1.log", "cudagdb-core-1.log"),
        ("unchecked_launch/launch-blocking.log", "launch-blocking.log"),
        ("unchecked_launch/cpucore-gdb.log", "launch-blocking-cpucore.log"),
        ("unchecked_launch/baseline.log", "baseline.log"),
    ] {
        std::fs::copy(h200.join(from), dir.join(to)).unwrap();
    }
    let a = analyze(std::slice::from_ref(&dir)).unwrap();
    let v = a.verdict.as_ref().expect("oob_write's fault is located");
    assert_eq!(v.kernel, "scale_write(float*, int, long long)");
    assert!(v.launch_site.is_none(), "joined from another program: {:?}", v.launch_site);
    assert!(v.surfaced_at.is_none(), "joined from another program: {:?}", v.surfaced_at);
    assert!(v.unknown.iter().any(|p| p.as_str() == "launch site"), "{v:?}");
    // The other program's output is still reported, as its own symptom.
    assert!(a.symptoms.iter().any(|s| s.origin == "launch-blocking"), "{:?}", a.symptoms);

    // With its own program's recordings beside it, unchecked_launch's kernel gets its launch
    // line from the launch-blocking CPU core, as in its own folder.
    std::fs::copy(h200.join("unchecked_launch/cudagdb-merged-1.log"), dir.join("cudagdb-merged-1.log"))
        .unwrap();
    std::fs::remove_file(dir.join("cudagdb-core-1.log")).unwrap();
    let a = analyze(std::slice::from_ref(&dir)).unwrap();
    let v = a.verdict.expect("located");
    assert!(v.kernel.starts_with("scatter_rows"), "{}", v.kernel);
    assert_eq!(v.launch_site.as_ref().and_then(|h| h.frame.line), Some(34), "{v:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The hang recordings (tests/fixtures/h200/hang/, README.md there): a user-triggered GPU dump
/// read by cuda-gdb, py-spy's stacks and the CPU core; named as the recording script named them
/// (`cudagdb_1.log`, `pyspy_845.log`, `cpucore_1.log`), not as the hang rung does: every file
/// is recognised by its content.
fn hang(case: &str) -> xtask::findings::verdict::Analysis {
    analyze(&[root().join("tests/fixtures/h200/hang").join(case)]).unwrap()
}

#[test]
fn a_kernel_spinning_on_a_flag_is_a_hang_at_the_user_line_through_the_inline_chain() {
    use xtask::findings::ErrorClass;
    let a = hang("hang_flag");
    let v = a.verdict.as_ref().expect("a hang verdict");
    assert_eq!(v.error, ErrorClass::Hang);
    assert_eq!(v.error.as_str(), "hang");
    assert!(a.findings.is_empty(), "a snapshot is not a fault: {:?}", a.findings);
    assert_eq!(v.kernel, "consume");
    assert_eq!((v.file.as_deref().map(names::base_name), v.line), (Some("hang_flag.cu"), Some(8)));
    let chain: Vec<(String, u32)> =
        v.inlined.iter().map(|l| (names::base_name(&l.file).to_string(), l.line)).collect();
    assert_eq!(chain, [("hang_flag.cu".to_string(), 8), ("hang_flag.cu".to_string(), 15)]);
    assert_eq!((v.pid, v.block, v.thread), (Some(584), Some([4, 0, 0]), Some([0, 0, 0])));
    assert!(v.unknown.is_empty(), "{:?}", v.unknown);
    let h = v.hang.as_ref().unwrap();
    // The rows: 32 threads of every block spin (at line 8, or inside atomicAdd's header for
    // some blocks), 96 wait at the barrier of line 18.
    let snap = &a.inputs.iter().find(|i| !i.snapshots.is_empty()).unwrap().snapshots[0];
    let rows: Vec<(u64, u64, Option<u32>)> = snap.threads.iter().map(|g| (g.count, g.rows, g.line)).collect();
    assert_eq!(rows, [(128, 4, Some(107)), (768, 8, Some(18)), (128, 4, Some(8))]);
    let groups: Vec<(u64, Option<u32>)> = h.groups.iter().map(|g| (g.threads, g.line)).collect();
    assert_eq!(groups, [(768, Some(18)), (256, Some(8))]);
    assert_eq!(h.groups[1].thread_range, [[0, 0, 0], [31, 0, 0]]);
    assert_eq!(h.groups[1].block_range, [[0, 0, 0], [7, 0, 0]]);
    assert_eq!(h.groups[1].via[0].0.to_string(), "device_atomic_functions.hpp:107");
    assert!(h.groups[1].focus);
    // The CPU core's main thread (LWP 584 = the dump's pid).
    assert_eq!(h.processes.len(), 1);
    let host = &h.processes[0].host[0];
    assert_eq!(host.frame.function.as_deref(), Some("main"));
    assert_eq!(
        (host.frame.file.as_deref().map(names::base_name), host.frame.line),
        (Some("hang_flag.cu"), Some(31))
    );
    assert_eq!(host.api.as_deref(), Some("cudaDeviceSynchronize"));
    let text = render_text(&a);
    assert!(text.starts_with("verdict: hang in `consume` at /tmp/ima-hang_flag/hang_flag.cu:8\n"), "{text}");
    assert!(
        text.contains("256 at hang_flag.cu:8 (blocks (0,0,0)..(7,0,0), threads (0,0,0)..(31,0,0)"),
        "{text}"
    );
    assert!(
        text.contains("host: main at /tmp/ima-hang_flag/hang_flag.cu:31 in cudaDeviceSynchronize"),
        "{text}"
    );
    assert_eq!(
        a.conclusion,
        "hang: `consume` spins at /tmp/ima-hang_flag/hang_flag.cu:8 (1024 threads on the device)"
    );
}

#[test]
fn a_triton_kernel_spinning_and_the_python_host_stack() {
    let a = hang("hang_triton");
    let v = a.verdict.as_ref().unwrap();
    assert_eq!((v.error.as_str(), v.kernel.as_str()), ("hang", "wait_then_copy"));
    assert_eq!((v.file.as_deref().map(names::base_name), v.line), (Some("hang_triton.py"), Some(12)));
    let p = &v.hang.as_ref().unwrap().processes[0];
    assert_eq!((p.pid, p.threads), (Some(845), 512));
    let w = &p.host[0];
    assert_eq!(
        (w.frame.function.as_deref(), w.frame.file.as_deref(), w.frame.line),
        (Some("main"), Some("hang_triton.py"), Some(26))
    );
    assert_eq!(w.waiting_in.as_ref().and_then(|f| f.function.as_deref()), Some("synchronize"));
    assert!(render_text(&a)
        .contains("host: main (hang_triton.py:26) in synchronize (torch/cuda/__init__.py:1162)"));
}

#[test]
fn two_processes_say_which_spins_on_the_gpu_and_which_waits_on_the_host() {
    let a = hang("hang_two_procs");
    let v = a.verdict.as_ref().unwrap();
    assert_eq!((v.error.as_str(), v.kernel.as_str(), v.pid), ("hang", "wait_for_peer", Some(1163)));
    // The focus thread's `bt` is at line 15 (the loop's condition), as are 448 of the 512
    // threads; the other 64 are at line 16 (the load in the loop's body).
    assert_eq!((v.file.as_deref().map(names::base_name), v.line), (Some("hang_two_procs.py"), Some(15)));
    let h = v.hang.as_ref().unwrap();
    let groups: Vec<(u64, Option<u32>)> = h.groups.iter().map(|g| (g.threads, g.line)).collect();
    assert_eq!(groups, [(448, Some(15)), (64, Some(16))]);
    let pids: Vec<Option<u32>> = h.processes.iter().map(|p| p.pid).collect();
    assert_eq!(pids, [Some(1163), Some(1190)]);
    let worker = &h.processes[1];
    assert!(worker.no_kernel && worker.dumped && worker.kernel.is_none());
    let w = &worker.host[0];
    assert_eq!((w.frame.function.as_deref(), w.frame.line), (Some("worker"), Some(21)));
    assert_eq!(w.waiting_in.as_ref().and_then(|f| f.function.as_deref()), Some("Queue.get"));
    let text = render_text(&a);
    assert!(
        text.contains("pid 1163: `wait_for_peer` spinning at hang_two_procs.py:15 (512 threads)"),
        "{text}"
    );
    assert!(
        text.contains("pid 1190: no kernel running; host: worker (hang_two_procs.py:21) in Queue.get"),
        "{text}"
    );
    assert!(text.contains("no frame of your code in process 1189"), "{text}");
}

#[test]
fn a_flight_recorder_dump_alone_is_read_and_is_no_verdict() {
    let a = hang("nccl_trace");
    assert!(a.verdict.is_none());
    let t = a.inputs.iter().find_map(|i| i.nccl.as_ref()).expect("the JSON is recognised");
    assert_eq!((t.rank, t.entries, t.groups[0].incomplete()), (Some(0), 4, 0));
    assert!(
        render_text(&a).contains("NCCL flight recorder of rank 0, 4 entries; process group 0 (default_pg)")
    );
}

#[test]
fn hang_analyses_are_stable_in_text_and_json() {
    for case in ["hang_flag", "hang_triton", "hang_two_procs", "nccl_trace"] {
        let a = hang(case);
        let json: serde_json::Value = serde_json::from_str(&render_json(&a)).unwrap();
        if case != "nccl_trace" {
            assert_eq!(json["verdict"]["error"], "hang", "{case}");
            assert!(json["verdict"]["hang"]["groups"].as_array().is_some_and(|g| !g.is_empty()), "{case}");
        }
        insta::with_settings!({snapshot_path => root().join("tests/snapshots"), prepend_module_to_snapshot => false}, {
            insta::assert_snapshot!(format!("analyze_hang_{case}"), render_text(&a));
            insta::assert_snapshot!(format!("analyze_hang_{case}_verdict_json"), serde_json::to_string_pretty(&json["verdict"]).unwrap());
        });
    }
}

/// Bundles `debug-ima` wrote on an H200 with the armed first run (issue 21,
/// tests/gpu/one_occurrence.sh; dumps left out): one run gives the whole verdict, the launch
/// site from the CPU core (native) or Python's faulthandler stack at the driver's abort
/// (Triton, a spawned worker, an ATen assert, a graph replay), each under launch-blocking; an
/// intermittent fault that did not come back in the first run took the sweep, a rerun without
/// launch-blocking and the coredump rung, and the verdict counts the runs it showed in.
#[test]
fn armed_first_runs_recorded_on_the_gpu_give_the_whole_verdict() {
    let b = root().join("tests/fixtures/bundles/armed");
    // case, kernel, file and line, launch file and line, how the launch was known
    let cases = [
        (
            "late_fault",
            "scatter_tail",
            "late_fault.cu",
            31,
            "late_fault.cu",
            74,
            "the launching thread, under launch-blocking",
        ),
        (
            "unchecked_launch",
            "scatter_rows",
            "unchecked_launch.cu",
            20,
            "unchecked_launch.cu",
            34,
            "under launch-blocking",
        ),
        ("triton_eager", "gather_kv_kernel", "vllm_shaped.py", 22, "vllm_shaped.py", 27, "faulthandler"),
        ("triton_worker", "gather_kv_kernel", "vllm_shaped.py", 22, "vllm_shaped.py", 27, "faulthandler"),
        ("triton_graph", "gather_kv_kernel", "vllm_shaped.py", 22, "vllm_shaped.py", 44, "faulthandler"),
        ("aten_async", "indexSelectSmallIndex", "Indexing.cu", 1515, "aten_async.py", 11, "faulthandler"),
        ("intermittent", "gather", "intermittent.cu", 12, "intermittent.cu", 40, "under launch-blocking"),
    ];
    for (case, kernel, file, line, launch_file, launch_line, how) in cases {
        let a = analyze(&[b.join(case)]).unwrap();
        let v = a.verdict.unwrap_or_else(|| panic!("{case}: no verdict"));
        assert!(v.kernel.contains(kernel), "{case}: {}", v.kernel);
        assert!(v.file.as_deref().is_some_and(|f| f.ends_with(file)), "{case}: {:?}", v.file);
        assert_eq!(v.line, Some(line), "{case}");
        assert!(v.unknown.is_empty(), "{case}: {:?} unknown", v.unknown);
        let site = v.launch_site.as_ref().unwrap_or_else(|| panic!("{case}: no launch site"));
        assert!(site.frame.file.as_deref().is_some_and(|f| f.ends_with(launch_file)), "{case}: {site:?}");
        assert_eq!(site.frame.line, Some(launch_line), "{case}: {site:?}");
        let said = format!("{} {}", site.how, site.from);
        assert!(
            said.contains(how)
                || (how == "faulthandler" && said.contains("the Python stack at the driver's abort")),
            "{case}: {said}"
        );
        // One run of the target gave it, except the intermittent fault's climb.
        let rungs = std::fs::read_dir(b.join(case).join("rungs")).unwrap().count();
        assert_eq!(rungs == 1, case != "intermittent", "{case}: {rungs} rung folders");
    }
    // The intermittent climb: the armed baseline did not fault, nor the sweep; its rerun
    // without launch-blocking did, and the coredump rung (launch-blocking) gave the launch.
    let m = std::fs::read_to_string(b.join("intermittent/manifest.yaml")).unwrap();
    assert!(m.contains("run 2 of baseline (`--retries 3`)"), "{m}");
    assert!(m.contains("launch-blocking hides it") || m.contains("without launch-blocking"), "{m}");
    let findings = std::fs::read_to_string(b.join("intermittent/findings.json")).unwrap();
    assert!(findings.contains("\"reproduced\": {\n    \"faulted\": 2,\n    \"runs\": 5"), "{findings}");
}

/// Bundles of runs with the launch recorder on an H200 (tests/fixtures/bundles/recorder): the
/// recorder's own frame, innermost in the faulthandler stack under launch-blocking, is never
/// the launch site; a kernel replayed in a CUDA graph is named with the replay (the launch) and
/// the launch the recorder saw inside the capture, with where the capture began.
#[test]
fn recorder_bundles_recorded_on_the_gpu_name_the_launch_and_the_capture() {
    let b = root().join("tests/fixtures/bundles/recorder");
    for (case, launch, captured) in [("eager", 27, None), ("worker", 27, None), ("graph", 44, Some(27))] {
        let a = analyze(&[b.join(case)]).unwrap();
        let v = a.verdict.as_ref().unwrap_or_else(|| panic!("{case}: no verdict"));
        assert!(v.kernel.contains("gather_kv_kernel"), "{case}: {}", v.kernel);
        assert_eq!(v.line, Some(22), "{case}");
        assert!(v.unknown.is_empty(), "{case}: {:?} unknown", v.unknown);
        let site = v.launch_site.as_ref().unwrap_or_else(|| panic!("{case}: no launch site"));
        assert!(
            site.frame.file.as_deref().is_some_and(|f| f.ends_with("vllm_shaped.py")),
            "{case}: {site:?}"
        );
        assert_eq!(site.frame.line, Some(launch), "{case}: {site:?}");
        match captured {
            Some(line) => {
                let c = v.captured_at.as_ref().unwrap_or_else(|| panic!("{case}: no capture site"));
                assert!(c.frame.file.as_deref().is_some_and(|f| f.ends_with("vllm_shaped.py")), "{c:?}");
                assert_eq!(c.frame.line, Some(line), "{c:?}");
                assert!(c.how.contains("launch recorder") && c.how.ends_with("vllm_shaped.py:41)"), "{c:?}");
                assert_eq!(c.from, "baseline/launches");
                let text = render_text(&a);
                assert!(text.contains("  captured: gather at "), "{text}");
                assert!(
                    v.remarks.iter().any(|r| r.contains("captured into the graph at")),
                    "{:?}",
                    v.remarks
                );
            }
            None => assert!(v.captured_at.is_none(), "{case}: {:?}", v.captured_at),
        }
    }
}

/// Bundles of a full-speed armed run on an H200 (tests/fixtures/bundles/static): the launch
/// site is the binary's only launch of the kernel (`launch-sites.log`), not a stack of the run;
/// the run was not launch-blocking, so the ladder's CPU core says where the error surfaced.
#[test]
fn static_launch_sites_recorded_on_the_gpu_give_the_launch_without_launch_blocking() {
    let b = root().join("tests/fixtures/bundles/static");
    for (case, kernel, line, launch, surfaced) in [
        ("oob_write", "scale_write", 7, 15, Some(18)),
        ("late_fault", "scatter_tail", 31, 74, Some(76)),
        ("watch_late_fault", "scatter_tail", 31, 74, None),
    ] {
        let command = std::fs::read_to_string(b.join(case).join("rungs/01-baseline/command.txt")).unwrap();
        assert!(!command.contains("CUDA_LAUNCH_BLOCKING"), "{case}: {command}");
        let a = analyze(&[b.join(case)]).unwrap();
        let v = a.verdict.unwrap_or_else(|| panic!("{case}: no verdict"));
        assert!(v.kernel.contains(kernel), "{case}: {}", v.kernel);
        assert_eq!(v.line, Some(line), "{case}");
        assert!(v.unknown.is_empty(), "{case}: {:?} unknown", v.unknown);
        let site = v.launch_site.as_ref().unwrap_or_else(|| panic!("{case}: no launch site"));
        assert_eq!((site.frame.function.as_deref(), site.frame.line), (Some("main"), Some(launch)), "{case}");
        assert!(site.how.contains("the only launch of this kernel in the binary"), "{case}: {site:?}");
        assert_eq!(site.from, "baseline/launch-sites", "{case}");
        if let Some(line) = surfaced {
            let s = v.surfaced_at.as_ref().unwrap_or_else(|| panic!("{case}: where it surfaced"));
            assert_eq!(s.frame.line, Some(line), "{case}: {s:?}");
        }
    }
}

/// Bundles of the default climb with the memcheck pass beside the armed run's reading, written
/// on an H100 (tests/fixtures/bundles/pass, docs/validation.md section 25): each fault's
/// kernel, line and class from the armed run, the launch line known (memcheck's host backtrace
/// and the binary's only launch agree), the pass's record saying it started beside the reading,
/// and no disagreement between the two runs. The silent `inlined` (no fault in the armed run)
/// gets its verdict from the sweep, whose four sanitizers ran side by side.
#[test]
fn the_pass_beside_the_reading_recorded_on_the_gpu_keeps_the_armed_run_s_verdict() {
    let b = root().join("tests/fixtures/bundles/pass");
    for (case, kernel, file, line, launch) in [
        ("oob_read", "gather_rows", "oob_read.cu", 8, ("oob_read.cu", 24)),
        ("device_assert", "check_labels", "device_assert.cu", 10, ("device_assert.cu", 25)),
        ("unchecked_launch", "scatter_rows", "unchecked_launch.cu", 20, ("unchecked_launch.cu", 34)),
        ("inlined", "apply_offsets", "store_helpers.cuh", 5, ("inlined.cu", 22)),
    ] {
        let a = analyze(&[b.join(case)]).unwrap();
        let v = a.verdict.as_ref().unwrap_or_else(|| panic!("{case}: no verdict"));
        assert!(v.kernel.starts_with(kernel), "{case}: {}", v.kernel);
        assert_eq!((v.file.as_deref().map(names::base_name), v.line), (Some(file), Some(line)), "{case}");
        assert!(v.unknown.is_empty(), "{case}: {:?} unknown", v.unknown);
        let site = v.launch_site.as_ref().unwrap_or_else(|| panic!("{case}: no launch site"));
        let at = (site.frame.file.as_deref().map(names::base_name), site.frame.line);
        assert_eq!(at, (Some(launch.0), Some(launch.1)), "{case}: {site:?}");
        assert!(v.disagreements.is_empty(), "{case}: {:?}", v.disagreements);
        let manifest = std::fs::read_to_string(b.join(case).join("manifest.yaml")).unwrap();
        let beside = manifest.contains("started beside the armed run''s reading of its dumps");
        if case == "inlined" {
            assert!(!beside && v.rungs.contains(&"memcheck".to_string()), "{case}: {:?}", v.rungs);
            for rung in ["02-memcheck", "03-initcheck", "04-racecheck", "05-synccheck"] {
                assert!(b.join(case).join("rungs").join(rung).is_dir(), "{case}: {rung}");
            }
        } else {
            assert!(beside, "{case}: the pass's note");
            assert_eq!(v.rungs.first().map(String::as_str), Some("baseline"), "{case}: {:?}", v.rungs);
            let command =
                std::fs::read_to_string(b.join(case).join("rungs/01-baseline/command.txt")).unwrap();
            assert!(!command.contains("CUDA_LAUNCH_BLOCKING"), "{case}: {command}");
        }
    }
}

/// Bundles the default climb and the hang rung wrote on an H100 with the disassembly run
/// beside the target and every dump read side by side (tests/fixtures/bundles/beside,
/// docs/validation.md section 26): the native fault's whole verdict from the armed run, its
/// launch line from the disassembly that ran beside it (the note says so) without
/// launch-blocking, also where cuda-gdb crashed opening the dump and was not retried; a C++
/// hang's spinning line with its launch site; a two-process Python hang
/// with both processes' dumps read and each one's host stack.
#[test]
fn bundles_with_the_disassembly_and_the_dumps_read_beside_the_run_give_their_verdicts() {
    let b = root().join("tests/fixtures/bundles/beside");
    // unchecked_launch: cuda-gdb crashed while opening the dump, so it was not retried; the
    // verdict is whole all the same.
    for (case, kernel, file, line, launch) in [
        ("oob_read", "gather_rows", "oob_read.cu", 8, 24),
        ("unchecked_launch", "scatter_rows", "unchecked_launch.cu", 20, 34),
    ] {
        let a = analyze(&[b.join(case)]).unwrap();
        let v = a.verdict.unwrap_or_else(|| panic!("{case}: no verdict"));
        assert!(v.kernel.starts_with(kernel), "{case}: {}", v.kernel);
        assert_eq!((v.file.as_deref().map(names::base_name), v.line), (Some(file), Some(line)), "{case}");
        assert!(v.unknown.is_empty() && v.disagreements.is_empty(), "{case}: {v:?}");
        let site = v.launch_site.as_ref().unwrap_or_else(|| panic!("{case}: no launch site"));
        let at = (site.frame.file.as_deref().map(names::base_name), site.frame.line);
        assert_eq!(at, (Some(file), Some(launch)), "{case}: {site:?}");
        let manifest = std::fs::read_to_string(b.join(case).join("manifest.yaml")).unwrap();
        assert!(manifest.contains("read beside the run, which goes at full speed"), "{case}: {manifest}");
        let command = std::fs::read_to_string(b.join(case).join("rungs/01-baseline/command.txt")).unwrap();
        assert!(!command.contains("CUDA_LAUNCH_BLOCKING"), "{case}: {command}");
        let crashed = v.remarks.iter().any(|r| r.contains("cuda-gdb crashed"));
        let retried = b.join(case).join("rungs/01-baseline/cudagdb-1-retry.log").exists();
        let not_retried = manifest.contains("not retried, as opening it again crashes the same way");
        assert_eq!(
            (crashed, not_retried, retried),
            (case == "unchecked_launch", case == "unchecked_launch", false),
            "{case}"
        );
    }

    let a = analyze(&[b.join("hang_flag")]).unwrap();
    let text = render_text(&a);
    let v = a.verdict.expect("hang_flag: a verdict");
    assert_eq!((v.kernel.as_str(), v.line, v.error.as_str()), ("consume", Some(8), "hang"));
    let site = v.launch_site.as_ref().expect("hang_flag: the launch site");
    assert_eq!(
        (site.frame.file.as_deref().map(names::base_name), site.frame.line),
        (Some("hang_flag.cu"), Some(30))
    );
    assert!(b.join("hang_flag/rungs/01-hang/launch-sites.log").is_file(), "the disassembly's log");
    assert!(text.contains("hang_flag.cu:31"), "the host stack from the CPU core: {text}");

    let a = analyze(&[b.join("hang_two_procs")]).unwrap();
    let text = render_text(&a);
    let v = a.verdict.expect("hang_two_procs: a verdict");
    assert_eq!((v.kernel.as_str(), v.line, v.error.as_str()), ("wait_for_peer", Some(15), "hang"));
    let hang = v.hang.as_ref().expect("the hang's processes");
    let dumped: Vec<bool> = hang.processes.iter().map(|p| p.dumped).collect();
    assert_eq!(dumped, [true, true], "both processes' dumps were read: {:?}", hang.processes);
    assert!(hang.processes.iter().all(|p| !p.host.is_empty()), "each process's host stack: {text}");
    assert!(text.contains("hang_two_procs.py:35"), "the parent's line: {text}");
    assert!(text.contains("hang_two_procs.py:21"), "the worker's line: {text}");
}

/// Bundles `debug-ima watch` wrote on an H200 (tests/gpu/one_occurrence.sh, part C; dumps
/// left out): a job that faulted after 35 s of running, never launch-blocking, gets the
/// kernel, line and access from its one run and says where the error surfaced (its launch
/// site unknown, as without launch-blocking it must be); a C++ job and a PyTorch/Triton job
/// that went silent with the GPU busy get a hang verdict with the spinning line and each
/// process's host stack (the CPU core; py-spy).
#[test]
fn watch_bundles_recorded_on_the_gpu_give_their_verdicts() {
    let b = root().join("tests/fixtures/bundles/watch");
    let a = analyze(&[b.join("late_fault")]).unwrap();
    let v = a.verdict.expect("the late fault is located");
    assert!(v.kernel.contains("scatter_tail"), "{}", v.kernel);
    assert_eq!(v.line, Some(31));
    assert!(v.launch_site.is_none(), "{:?}", v.launch_site);
    let surfaced = v.surfaced_at.as_ref().expect("where it surfaced");
    assert_eq!(surfaced.frame.line, Some(76), "{surfaced:?}");
    assert!(surfaced.how.starts_with("asynchronous"), "{surfaced:?}");
    let text = render_text(&analyze(&[b.join("late_fault")]).unwrap());
    assert!(text.contains("access:   write (global)"), "{text}");

    for (case, kernel, line, host) in [
        ("hang_flag", "consume", 8, "hang_flag.cu:31"),
        ("hang_serving", "wait_then_copy", 23, "hang_serving.py:54"),
    ] {
        let a = analyze(&[b.join(case)]).unwrap();
        let text = render_text(&a);
        let v = a.verdict.unwrap_or_else(|| panic!("{case}: no verdict"));
        assert_eq!(v.kernel, kernel, "{case}");
        assert_eq!(v.line, Some(line), "{case}");
        assert_eq!(v.error.as_str(), "hang", "{case}");
        assert!(text.contains(host), "{case}: {text}");
    }
}

/// Issue 22: files `analyze` cannot read inside a bundle or a folder (a dangling link, a FIFO,
/// a folder named like a log in a rung folder, a file of mode 000 when not root) do not stop the analysis:
/// the rest is analysed, to the same verdict, and each is a note naming it and why; a file
/// of invalid UTF-8 is read.
#[test]
fn unreadable_files_are_notes_and_the_rest_is_analysed() {
    let tmp =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("analyze-unreadable-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let bundle = tmp.join("bundle");
    copy_dir(&root().join("tests/fixtures/bundles/oob_read-full"), &bundle);
    let logs = tmp.join("logs");
    copy_dir(&root().join("tests/fixtures/h200/oob_read"), &logs);
    let root_user = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0;
    for (dir, want) in [(bundle.join("rungs/01-baseline"), &bundle), (logs.clone(), &logs)] {
        let before = analyze(std::slice::from_ref(want)).unwrap();
        std::os::unix::fs::symlink("/nonexistent/target", dir.join("dangling.log")).unwrap();
        assert!(Command::new("mkfifo").arg(dir.join("pipe.log")).status().unwrap().success());
        std::fs::create_dir(dir.join("folder.log")).unwrap();
        std::fs::write(dir.join("latin1.log"), b"caf\xe9 \xff\xfe not UTF-8\n").unwrap();
        if !root_user {
            std::fs::write(dir.join("locked.log"), b"x\n").unwrap();
            std::fs::set_permissions(
                dir.join("locked.log"),
                std::os::unix::fs::PermissionsExt::from_mode(0o000),
            )
            .unwrap();
        }
        let a = analyze(std::slice::from_ref(want)).unwrap();
        assert_eq!(a.verdict, before.verdict, "{}", render_text(&a));
        let text = render_text(&a);
        let mut reasons = vec![
            ("dangling.log", "it is a symbolic link, not a regular file"),
            ("pipe.log", "it is a named pipe (FIFO), not a regular file"),
        ];
        // In a bundle's rung folder a `.log` is a log; in a plain folder a folder is a folder.
        if dir != logs {
            reasons.push(("folder.log", "it is a directory, not a regular file"));
        }
        if !root_user {
            reasons.push(("locked.log", "not read: Permission denied"));
        }
        for (name, why) in reasons {
            let note = format!("{}` not read", dir.join(name).display());
            let line = text
                .lines()
                .find(|l| l.contains(&note))
                .unwrap_or_else(|| panic!("no note for {name}:\n{text}"));
            assert!(line.contains(why), "{name}: {line}");
        }
        assert!(a.inputs.iter().any(|i| i.path.ends_with("latin1.log") && i.lines == 1), "{text}");
        if !root_user {
            std::fs::set_permissions(
                dir.join("locked.log"),
                std::os::unix::fs::PermissionsExt::from_mode(0o644),
            )
            .unwrap();
        }
    }
    // Through the binary too: exit 0 and the notes in the JSON.
    let out = xtask().args(["analyze", "--json"]).arg(&bundle).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("pipe.log` not read"));
    let _ = std::fs::remove_dir_all(&tmp);
}

/// The bug kinds of issue 23 recorded on the H200 (tests/fixtures/h200/kinds/): a trap, a
/// fault in cuBLAS's precompiled kernel, two bugs in one program; each verdict says what its
/// class means, in the text and in findings.json.
#[test]
fn the_kinds_of_issue_23_get_their_verdicts() {
    let kinds = root().join("tests/fixtures/h200/kinds");
    let a = analyze(&[kinds.join("trap")]).unwrap();
    let v = a.verdict.as_ref().unwrap();
    assert_eq!((v.error.as_str(), v.line), ("trap", Some(11)));
    assert!(render_text(&a).contains("  means:    the kernel executed a trap"), "{}", render_text(&a));

    let dir = kinds.join("cublas_fault");
    for input in [dir.join("memcheck.log"), dir.join("memcheck.xml")] {
        let a = analyze(std::slice::from_ref(&input)).unwrap();
        let v = a.verdict.as_ref().unwrap();
        assert_eq!((v.file.as_deref(), v.line), (None, None), "{input:?}");
        assert_eq!(v.library.as_deref(), Some("cuBLAS (libcublasLt.so.13, libcublas.so.13)"), "{input:?}");
        assert_eq!(v.not_applicable, vec![xtask::findings::verdict::Part::SourceLine], "{input:?}");
        assert!(v.unknown.is_empty(), "{input:?}: {:?}", v.unknown);
        let site = &v.launch_site.as_ref().unwrap().frame;
        assert_eq!((site.function.as_deref(), site.line), (Some("main"), Some(18)), "{input:?}");
        // The buffer overrun: the text log says the nearest allocation (the XML reader does not).
        if input.extension().is_some_and(|e| e == "log") {
            let n = v.access.as_ref().unwrap().nearest.as_ref().unwrap();
            assert_eq!(
                (n.distance, n.before, n.allocation, n.allocation_size),
                (97, false, 0x7f7be8800000, 262_144)
            );
        }
        let text = render_text(&a);
        assert!(!text.contains("-lineinfo"), "{text}");
        assert!(text.contains("is a precompiled kernel of cuBLAS"), "{text}");
    }

    let a = analyze(&[kinds.join("two_bugs")]).unwrap();
    let v = a.verdict.as_ref().unwrap();
    assert!(v.kernel.starts_with("bias_add"), "{}", v.kernel);
    assert_eq!(v.line, Some(8));
    assert!(v.others.iter().any(|o| o.kernel.starts_with("gather") && o.line == Some(13)), "{:?}", v.others);
    let text = render_text(&a);
    assert!(text.contains("  also:     illegal-address in `gather("), "{text}");
    let json: serde_json::Value = serde_json::from_str(&render_json(&a)).unwrap();
    assert_eq!(json["verdict"]["others"][0]["line"], 13);
    assert!(json["verdict"]["meaning"].as_str().is_some_and(|m| m.contains("outside any allocation")));
}

/// Issue 23, recorded on the H200 (tests/fixtures/h200/kinds-pc): a trap's PC is past its
/// `BPT.TRAP`, so `bt` names the next line; the instruction before the PC and `info line` of it
/// (the ladder's coredump commands) give the trap's own line. An illegal instruction inside
/// `__syncwarp` is a barrier error at the user's line (cuda-gdb crashed right after the line
/// that says so).
#[test]
fn a_trap_is_at_its_own_line_and_a_bad_warp_mask_is_a_barrier_error() {
    let pc = root().join("tests/fixtures/h200/kinds-pc");
    for (case, file, line, bt_line) in [("paged_kv_trap", "paged_kv.cu", 26, 28), ("trap", "trap.cu", 10, 11)]
    {
        let a = analyze(&[pc.join(case).join("cudagdb-1-pc.log")]).unwrap();
        let v = a.verdict.as_ref().unwrap();
        assert_eq!(v.error.as_str(), "trap", "{case}");
        assert!(v.file.as_deref().is_some_and(|f| f.ends_with(file)), "{case}: {v:?}");
        assert_eq!(v.line, Some(line), "{case}");
        let text = render_text(&a);
        assert!(text.contains(&format!("showed the next line ({bt_line})")), "{case}: {text}");
        // Without the commands that read the instruction before the PC, the line stays `bt`'s.
        let a = analyze(&[pc.join(case).join("cudagdb-1.log")]).unwrap();
        assert_eq!(a.verdict.as_ref().unwrap().line, Some(bt_line), "{case}");
    }
    let a = analyze(&[pc.join("syncwarp_tail_mask/cudagdb-1.log")]).unwrap();
    let v = a.verdict.as_ref().unwrap();
    assert_eq!(v.error.as_str(), "barrier-error", "{v:?}");
    assert!(
        v.file.as_deref().is_some_and(|f| f.ends_with("expert_offsets.cu")) && v.line == Some(17),
        "{v:?}"
    );
    assert!(render_text(&a).contains("a warp-synchronous intrinsic"), "{}", render_text(&a));
    // synccheck on the same program says the same.
    let v = analyze(&[pc.join("syncwarp_tail_mask/synccheck.log")]).unwrap().verdict.unwrap();
    assert_eq!((v.error.as_str(), v.line), ("barrier-error", Some(17)));
    // A block hung in the two `__syncthreads()` of an if and its else (a dump the tool
    // triggered): a barrier error at the focus's barrier, the other barrier's line named.
    let a = analyze(&[pc.join("syncthreads_divergent/cudagdb-1-hang.log")]).unwrap();
    let v = a.verdict.as_ref().unwrap();
    assert_eq!((v.error.as_str(), v.line), ("barrier-error", Some(26)), "{v:?}");
    assert!(v.hang.is_some());
    assert!(render_text(&a).contains("wait at 2 different lines (23, 26)"), "{}", render_text(&a));
}

/// Issue 23: racecheck's analysis report (text and XML) gives a verdict of class `race` that
/// names both lines, the memory and the hazard count; synccheck's a `barrier-error` at the
/// user's line (not CUDA's header) with the kind and the launch site from the host frame.
#[test]
fn race_and_barrier_recordings_name_both_lines_and_the_user_line() {
    let kinds = root().join("tests/fixtures/h200/kinds");
    let v =
        |f: &str| analyze(&[kinds.join(f)]).unwrap().verdict.unwrap_or_else(|| panic!("no verdict for {f}"));
    for (f, first, second, kinds_of, count) in [
        ("race_shared/racecheck.log", 9, 11, ("Write", "Read"), 262_144),
        ("race_shared/racecheck.xml", 9, 11, ("Write", "Read"), 262_144),
        ("race_reduce/racecheck.log", 13, 13, ("Read", "Write"), 132_864),
        ("race_reduce/racecheck.xml", 13, 13, ("Read", "Write"), 132_864),
    ] {
        let v = v(f);
        assert_eq!(v.error.as_str(), "race", "{f}");
        assert_eq!(v.line, Some(first), "{f}");
        let h = v.hazard.as_ref().unwrap();
        let o = h.other_side.as_ref().unwrap();
        assert_eq!(o.at.line, second, "{f}");
        assert_eq!((h.access.as_deref(), o.kind.as_deref()), (Some(kinds_of.0), Some(kinds_of.1)), "{f}");
        assert_eq!((h.memory.as_deref(), h.count), (Some("shared"), count), "{f}");
        assert!(h.check.is_some_and(|c| c.contains("barrier")), "{f}");
        let text = render_text(&analyze(&[kinds.join(f)]).unwrap());
        assert!(
            text.contains(&format!(":{first} against "))
                && text.contains(&format!(":{second} of shared memory")),
            "{text}"
        );
    }
    for f in ["barrier/synccheck.log", "barrier/synccheck.xml"] {
        let v = v(f);
        assert_eq!(v.error.as_str(), "barrier-error", "{f}");
        assert!(
            v.file.as_deref().is_some_and(|p| p.ends_with("barrier.cu")) && v.line == Some(19),
            "{f}: {v:?}"
        );
        assert_eq!(v.hazard.as_ref().and_then(|h| h.kind.as_deref()), Some("invalid arguments"), "{f}");
        let site = &v.launch_site.as_ref().unwrap().frame;
        assert_eq!((site.function.as_deref(), site.line), (Some("main"), Some(30)), "{f}");
        assert!(v.unknown.is_empty(), "{f}: {:?}", v.unknown);
    }
    assert!(analyze(&[kinds.join("barrier/racecheck.log")]).unwrap().verdict.is_none());
}

/// The bundles of `tests/gpu/kinds_suite.sh` on an H200 (13 of 13 right there, 2026-12-02:
/// tests/fixtures/h200/kinds-suite/kinds.md), read again without a GPU: every verdict still
/// matches tests/gpu/kinds/expected.tsv in every field the suite checks (kernel, file, line,
/// class, launch site, the race's other line, the capture site, the library, the other bugs).
/// memcheck's XML reports over 400 KB were left out of the fixtures; the text reports hold the
/// same records.
#[test]
fn the_kinds_suite_bundles_still_get_their_verdicts() {
    let expected = std::fs::read_to_string(root().join("tests/gpu/kinds/expected.tsv")).unwrap();
    let base = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
    let mut checked = 0;
    for row in expected.lines().filter(|l| !l.starts_with('#') && !l.starts_with("case\t")) {
        let f: Vec<&str> = row.split('\t').collect();
        let [case, _recipe, kernel, file, line, class, launch, extra] = f[..] else { panic!("row {row:?}") };
        let a = analyze(&[root().join("tests/fixtures/bundles/kinds").join(case)]).unwrap();
        let v = a.verdict.as_ref().unwrap_or_else(|| panic!("{case}: no verdict: {}", a.conclusion));
        let extras: Vec<(&str, &str)> =
            extra.split(';').filter(|e| *e != "-").filter_map(|e| e.split_once('=')).collect();
        let extra_of = |k: &str| extras.iter().find(|(n, _)| *n == k).map(|(_, v)| *v);
        let k = v.kernel.to_lowercase();
        assert!(kernel.split('|').any(|w| k.contains(&w.to_lowercase())), "{case}: kernel {}", v.kernel);
        match file {
            "-" => assert_eq!(v.file, None, "{case}"),
            f => assert_eq!(v.file.as_deref().map(base).as_deref(), Some(f), "{case}"),
        }
        match line {
            "-" => assert_eq!(v.line, None, "{case}"),
            "*" => assert!(v.line.is_some(), "{case}"),
            l => {
                let ok: Vec<u32> =
                    std::iter::once(l).chain(extra_of("alt-line")).map(|n| n.parse().unwrap()).collect();
                assert!(
                    v.line.is_some_and(|got| ok.contains(&got)),
                    "{case}: line {:?}, want {ok:?}",
                    v.line
                );
            }
        }
        assert_eq!(v.error.as_str(), class, "{case}");
        let site = v.launch_site.as_ref().unwrap_or_else(|| panic!("{case}: no launch site"));
        let at = format!(
            "{}:{}",
            site.frame.file.as_deref().map(base).unwrap_or_default(),
            site.frame.line.unwrap_or(0)
        );
        assert_eq!(at, launch, "{case}");
        if let Some(n) = extra_of("race-other-line") {
            let other = v.hazard.as_ref().and_then(|h| h.other_side.as_ref()).map(|o| o.at.line);
            assert_eq!(other, Some(n.parse().unwrap()), "{case}");
        }
        if let Some(want) = extra_of("captured") {
            let c = v.captured_at.as_ref().unwrap_or_else(|| panic!("{case}: no capture site"));
            let got = format!(
                "{}:{}",
                c.frame.file.as_deref().map(base).unwrap_or_default(),
                c.frame.line.unwrap_or(0)
            );
            assert!(want.split('|').any(|w| w == got), "{case}: captured {got}, want {want}");
        }
        if let Some(lib) = extra_of("library") {
            assert!(v.library.as_deref().is_some_and(|l| l.contains(lib)), "{case}: {:?}", v.library);
        }
        if let Some(others) = extra_of("others") {
            for o in others.split(',') {
                assert!(v.others.iter().any(|x| x.kernel.contains(o)), "{case}: others {:?}", v.others);
            }
        }
        checked += 1;
    }
    assert_eq!(checked, 13);
}

/// Four ranks on one H200 (tests/gpu/programs/hang_odd_rank.py under the hang rung, recorded
/// by tests/gpu/odd_rank.sh; the GPU dumps left out of the fixture, their cuda-gdb logs kept):
/// three waiting on the host with no kernel, one in `torch.cuda.synchronize` behind a long
/// kernel, whose own GPU dump did not come before the tree was ended. The conclusion names that
/// one as the odd one out, with where the other three wait.
#[test]
fn the_odd_rank_of_a_hang_is_named() {
    let dir = root().join("tests/fixtures/bundles/odd_rank/2026-12-03T17-28-16Z_pytorch");
    let a = analyze(&[dir]).unwrap();
    assert!(a.verdict.is_none(), "{:?}", a.verdict);
    let c = &a.conclusion;
    assert!(
        c.contains(
            "pid 620 is stuck elsewhere (rank_main (hang_odd_rank.py:19) in synchronize \
             (torch/cuda/__init__.py:1162)) while the other 3 wait at rank_main (hang_odd_rank.py:21)"
        ),
        "{c}"
    );
}

/// The same four `mp.Process` ranks after the dumps were triggered one at a time, youngest
/// first (the H200, later the same day): all four dumps came, and the odd one is named from
/// the GPU state, the rank in ATen's `spin_kernel`, not only from host stacks.
#[test]
fn the_odd_rank_of_a_hang_is_named_from_its_kernel_once_every_dump_came() {
    let dir = root().join("tests/fixtures/bundles/odd_rank/2026-12-03T20-32-11Z_pytorch");
    let a = analyze(&[dir]).unwrap();
    let v = a.verdict.as_ref().unwrap();
    let h = v.hang.as_ref().unwrap();
    assert_eq!(h.processes.iter().filter(|p| p.dumped).count(), 4, "{h:?}");
    let odd = h.odd_one_out.as_ref().unwrap();
    assert_eq!(odd.who, "pid 626", "{odd:?}");
    assert!(odd.at.contains("spin_kernel") && odd.at.contains("cudaDeviceSynchronize"), "{odd:?}");
    assert_eq!(odd.others, 3, "{odd:?}");
    assert!(odd.others_at.starts_with("no kernel running, host waiting in Event.wait"), "{odd:?}");
}

/// The ladder through a real Slurm cluster on the H200 (tests/fixtures/bundles/slurm_gpu):
/// the faulting rank with its node, device and pid, rank 0 as collateral with the true reason
/// (srun ended it after rank 1 failed, on node1), the launch line; and the hang of three ranks
/// whose odd one out is rank 1, in its own kernel at its own line.
#[test]
fn the_slurm_job_on_the_gpu_names_its_ranks_and_the_odd_one() {
    let dir = root().join("tests/fixtures/bundles/slurm_gpu");
    let a = analyze(&[dir.join("fault")]).unwrap();
    let v = a.verdict.as_ref().unwrap();
    assert_eq!((v.file.as_deref().map(names::base_name), v.line), (Some("rank_fault.cu"), Some(12)), "{v:?}");
    let t = v.ranks.as_ref().unwrap();
    let culprit = &t.culprit;
    assert_eq!((culprit.rank, culprit.node.as_deref(), culprit.device), (1, Some("node2"), Some(0)), "{t:?}");
    assert!(culprit.pid.is_some(), "{t:?}");
    assert_eq!(t.collateral.len(), 1, "{t:?}");
    assert_eq!((t.collateral[0].rank, t.collateral[0].node.as_deref()), (0, Some("node1")), "{t:?}");
    assert!(t.collateral[0].reason.contains("after rank 1 failed"), "{t:?}");
    let launched = v.launch_site.as_ref().unwrap();
    assert_eq!(launched.frame.line, Some(30), "{launched:?}");
    let h = analyze(&[dir.join("hang")]).unwrap();
    let v = h.verdict.as_ref().unwrap();
    let odd = v.hang.as_ref().and_then(|h| h.odd_one_out.as_ref()).unwrap();
    assert!(odd.who.starts_with("rank 1 (pid "), "{odd:?}");
    assert!(odd.at.contains("stuck_tile") && odd.at.contains("rank_hang.cu:15"), "{odd:?}");
    assert_eq!(odd.others, 2, "{odd:?}");
    assert!(odd.others_at.contains("wait_for_peer"), "{odd:?}");
}

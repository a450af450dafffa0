//! Tests of the benchmarks' pure parts: the records found in a recording, the generated
//! logs, the names logs, the coredump bytes, the tables and the medians.
//!
//! Must not: run a process or time anything.

use super::analyzer::*;
use super::common::*;
use super::pack::*;
use super::records::*;
use crate::commands::Outcome;
use crate::model::Exit;
use crate::ui;
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

/// tests/fixtures/h200/oob_write/memcheck.log (the project's own recording, H200, CUDA
/// 13.0): 200 records of one write site, the program's own lines and the summary.
const OOB_WRITE: &str =
    include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/h200/oob_write/memcheck.log"));

#[test]
fn extracts_records() {
    let t = extract_records(OOB_WRITE);
    assert_eq!(t.len(), 200);
    assert!(t[0].head.starts_with("========= Invalid __global__ write of size 4 bytes\n"));
    assert!(t[0].head.ends_with("in oob_write.cu:7\n"));
    assert_eq!(t[0].by_prefix, "=========     by thread ");
    assert_eq!((t[1].thread, t[1].block), ([1, 0, 0], [8, 0, 0]));
    assert_eq!((t[199].thread, t[199].block), ([199, 0, 0], [8, 0, 0]));
    assert!(t[0].tail.ends_with("Host Frame: main [0x8d9c] in oob_write\n========= \n"));
    // The program's own lines (`launched scale_write`, `CUDA error at ...`) are not records.
    assert!(t.iter().all(|r| !r.head.contains("launched") && !r.tail.contains("CUDA error")));
    assert!(extract_records("launched scale_write\n").is_empty());
}

#[test]
fn generates_one_mib() {
    let t = extract_records(OOB_WRITE);
    let mut out = Vec::new();
    let stats = generate(&t, 1 << 20, &mut out).unwrap();
    assert_eq!(stats.bytes, out.len() as u64);
    assert!(stats.bytes >= 1 << 20);
    assert!(stats.bytes < (1 << 20) + 1024);
    let text = String::from_utf8(out).unwrap();
    let invalid = text.lines().filter(|l| l.starts_with("========= Invalid ")).count() as u64;
    assert_eq!(invalid, stats.records);
    assert!(text.ends_with(&format!("========= ERROR SUMMARY: {} errors\n", stats.records)));
    // Only the thread/block numbers vary.
    assert!(text.contains("=========     by thread (1023,0,0) in block (8,0,0)\n"));
    assert!(text.contains("=========     by thread (0,0,0) in block (9,0,0)\n"));
    let rec_len = (t[0].head.len() + t[0].tail.len()) as u64;
    assert!(stats.records > (1 << 20) / (rec_len + 60));
    // Re-extracting finds every record again.
    assert_eq!(extract_records(&text).len() as u64, stats.records);
}

#[test]
fn generation_is_fast() {
    let t = extract_records(OOB_WRITE);
    let start = Instant::now();
    let stats = generate(&t, 64 << 20, io::sink()).unwrap();
    let secs = start.elapsed().as_secs_f64();
    let mb_s = stats.bytes as f64 / 1e6 / secs;
    ui::status(&format!("generated {} MiB in {secs:.2} s: {mb_s:.0} MB/s", stats.bytes >> 20));
    // Loose, so that a debug build on a busy machine passes too.
    assert!(mb_s > 20.0, "{mb_s} MB/s");
}

#[test]
fn table_says_pass_or_fail() {
    let r = BenchReport {
        file: "x".into(),
        bytes: 1_000_000_000,
        records: 10,
        templates: 5,
        generate: Duration::from_secs(1),
        grep: Duration::from_millis(500),
        grep_count: Some(10),
        analyze: Duration::from_millis(800),
        analyze_exit: None,
        analyze_rss_kib: 20 * 1024,
        analyze_rss_sampled: false,
        cpus: 2,
        cpu_model: "test".into(),
        debug_build: false,
    };
    assert!(r.passed());
    assert!(r.table().contains("1250 MB/s   PASS"));
    let slow = BenchReport { analyze: Duration::from_secs(2), ..r };
    assert!(!slow.passed());
    assert!(slow.table().contains("result     FAIL"));
}

#[test]
fn names_logs_rename_every_record() {
    let t = &extract_records(OOB_WRITE)[0];
    assert_eq!(distinct_name(7, 40), "k00007_abcdefghijklmnopqrstuv::abcdefghi");
    assert_eq!(distinct_name(7, 30).chars().count(), 30);
    assert!(!distinct_name(1, 31).ends_with(':'));
    let log = names_log(t, 3, 100);
    assert!(
        log.starts_with("========= COMPUTE-SANITIZER\n========= Invalid __global__ write of size 4 bytes\n")
    );
    assert!(log.contains(&format!(
        "=========     at {}(float *, int, long long)+0x110 in oob_write.cu:7\n",
        distinct_name(2, 100)
    )));
    assert!(log.ends_with("========= ERROR SUMMARY: 3 errors\n"));
    let ev = crate::findings::scan::scan_str(&log, "names.log");
    assert_eq!(ev.faults.len(), 3);
    let rows = [
        NamesRow { names: 500, bytes: 3_000_000, analyze: Duration::from_millis(100), exit: Exit::Code(0) },
        NamesRow { names: 1000, bytes: 6_000_000, analyze: Duration::from_millis(200), exit: Exit::Code(0) },
    ];
    let table = names_table(&rows, 5000);
    assert!(table.contains("  1000       6.0     0.200        0.200  2.00 (N x2.0)\n"), "{table}");
}

#[test]
fn coredump_is_deterministic_and_compresses_like_one() {
    let mut a = Vec::new();
    write_coredump(&mut a, 4_000_123).unwrap();
    assert_eq!(a.len(), 4_000_123);
    assert_eq!(&a[..4], b"\x7fELF");
    assert_eq!(&a[18..20], &190u16.to_le_bytes(), "EM_CUDA");
    let mut b = Vec::new();
    write_coredump(&mut b, 4_000_123).unwrap();
    assert!(a == b, "the fixed seed gives the same bytes");
    let zeros = a.iter().filter(|&&x| x == 0).count() as f64 / a.len() as f64;
    assert!((0.4..0.75).contains(&zeros), "{zeros}");
    let ratio = zstd::encode_all(&a[..], 3).unwrap().len() as f64 / a.len() as f64;
    assert!((0.2..0.5).contains(&ratio), "compresses to {ratio}");
}

#[test]
fn median_of_runs() {
    let s = Duration::from_secs;
    assert_eq!(median(&[s(3), s(1), s(2)]), s(2));
    assert_eq!(median(&[s(4), s(1), s(2), s(3)]), Duration::from_millis(2500));
    assert_eq!(median(&[]), Duration::ZERO);
}

#[test]
fn pack_table_says_pass_or_fail() {
    let r = PackBenchReport {
        input_bytes: 150_000_500,
        dump_bytes: 150_000_000,
        files: 11,
        ours: vec![Duration::from_millis(900), Duration::from_secs(1), Duration::from_secs(3)],
        theirs: vec![Duration::from_millis(1100), Duration::from_millis(1200), Duration::from_millis(1000)],
        ours_cpu: vec![Duration::from_millis(1800)],
        theirs_cpu: vec![Duration::from_millis(1700)],
        ours_bytes: 50_000_000,
        theirs_bytes: 50_000_100,
        same_files: true,
        workers: 2,
        zstd_version: "Zstandard CLI (64-bit) v1.5.4".into(),
        cpus: 2,
        cpu_model: "test".into(),
        debug_build: false,
    };
    assert!(r.passed());
    let t = r.table();
    assert!(
        t.contains("bundle pack (zstd -3, 2 workers)     1.00       150    1.80        50000000   0.333\n"),
        "{t}"
    );
    assert!(
        t.contains("tar -I 'zstd -T0'                    1.10       136    1.70        50000100   0.333\n"),
        "{t}"
    );
    assert!(t.contains("result       PASS (at least as fast: PASS, no larger: PASS)\n"), "{t}");
    let larger = PackBenchReport { ours_bytes: 50_000_101, ..r.clone() };
    assert!(larger.table().contains("result       FAIL (at least as fast: PASS, no larger: FAIL)"));
    let slower = PackBenchReport { ours: vec![Duration::from_secs(2)], ..r.clone() };
    assert!(!slower.passed());
    let different = PackBenchReport { same_files: false, ..r };
    assert!(!different.passed());
}

#[test]
fn a_fail_is_a_mismatch() {
    assert_eq!(verdict_outcome(true), Outcome::Done);
    assert_eq!(verdict_outcome(false), Outcome::Mismatch);
}

#[test]
fn pack_bench_removes_what_it_wrote() {
    if zstd_version().is_err() {
        // `.ci/run` installs it: in CI its absence is a failure, not a skip.
        assert!(std::env::var_os("CI").is_none(), "`zstd` is not installed (`apt install zstd`)");
        eprintln!("skipped: `zstd` is not installed");
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/tmp/bench-pack-small");
    let _ = std::fs::remove_dir_all(&dir);
    let args = PackBenchArgs { size_mb: 3, dir: Some(dir.clone()), keep: false, runs: 1 };
    let r = measure_pack(&args).unwrap();
    assert!(r.same_files, "{r:?}");
    assert_eq!(r.files, pack_small_files().len() + 2, "the small files, the dump and SHA256SUMS");
    assert!(r.input_bytes > 3_000_000 && r.ours_bytes < r.input_bytes / 2);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "left behind in {}", dir.display());
    std::fs::remove_dir(&dir).unwrap();
}

/// The benchmark itself (150 MB, 3 runs); run on a release build:
/// `cargo test --release -p debug-ima --lib bench::tests::pack_bench -- --ignored --nocapture`.
#[test]
#[ignore]
fn pack_bench() {
    let size_mb = std::env::var("PACK_BENCH_MB").ok().and_then(|s| s.parse().ok()).unwrap_or(150);
    let runs = std::env::var("PACK_BENCH_RUNS").ok().and_then(|s| s.parse().ok()).unwrap_or(3);
    let keep = std::env::var_os("PACK_BENCH_KEEP").is_some();
    let r = measure_pack(&PackBenchArgs { size_mb, dir: None, keep, runs }).unwrap();
    eprintln!("{}", r.table());
    eprintln!("ours   {:?} cpu {:?}\ntheirs {:?} cpu {:?}", r.ours, r.ours_cpu, r.theirs, r.theirs_cpu);
}

//! `bench`: how fast, and in how much memory, `analyze` reads a gigabyte compute-sanitizer
//! log. The log is generated from a real recording's records, repeated with only the
//! `by thread (x,y,z) in block (x,y,z)` numbers varied (many records of few sites, as a
//! real run prints), then `analyze --json` (this executable) and `grep -c` read it.
//!
//! Must not: run anything but `grep` and this executable's own `analyze`; hold the
//! generated log in memory (it is written through a buffer); or leave it on disk unless
//! `--keep` was given (also when a step fails).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::sys::resource::{getrusage, UsageWho};

/// Throughput goal for `analyze`, in MB/s (10^6 bytes).
pub const GOAL_MB_PER_S: f64 = 300.0;
/// Peak-memory goal for `analyze`, in MiB.
pub const GOAL_RSS_MIB: f64 = 64.0;

#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Size of the generated log in MiB (default 1024)
    #[arg(long, default_value_t = 1024)]
    pub size_mib: u64,
    /// A real memcheck log whose records are repeated to fill the file (default: the
    /// Triton worker's, recorded on an H200, with host and Python frames)
    #[arg(long, default_value = "tests/fixtures/h200/triton_worker/memcheck.log")]
    pub records: PathBuf,
    /// Where to write the generated log (default: target/bench/memcheck-1g.log)
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Keep the generated file afterwards
    #[arg(long)]
    pub keep: bool,
}

/// One record of a real log (`========= Invalid ...` to the next `========= ` line), split
/// around its `by thread (..) in block (..)` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordTemplate {
    /// Lines before the `by thread` line, each with its newline.
    pub head: String,
    /// The `by thread` line up to `by thread ` (its prefix and indentation).
    pub by_prefix: String,
    pub thread: [u32; 3],
    pub block: [u32; 3],
    /// Lines after the `by thread` line, ending with the blank `========= ` line.
    pub tail: String,
}

/// Finds the records of a compute-sanitizer text log: each from an `========= Invalid ...`
/// line to the next blank `========= ` line, keeping only `=========` lines (the program's
/// own output interleaved with them is left out). Records without a parsable `by thread`
/// line are skipped.
pub fn extract_records(log: &str) -> Vec<RecordTemplate> {
    let mut out = Vec::new();
    let mut cur: Option<Vec<&str>> = None;
    for line in log.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.starts_with("========= Invalid ") {
            cur = Some(vec![line]);
            continue;
        }
        let Some(lines) = cur.as_mut() else { continue };
        if !line.starts_with("=========") {
            continue;
        }
        lines.push(line);
        if line.trim_end() == "=========" {
            if let Some(t) = template(lines) {
                out.push(t);
            }
            cur = None;
        }
    }
    out
}

fn template(lines: &[&str]) -> Option<RecordTemplate> {
    let by = lines.iter().position(|l| l.contains("by thread ("))?;
    let line = lines[by];
    let start = line.find("by thread ")?;
    let (t, b) = line[start + "by thread ".len()..].split_once(" in block ")?;
    let join = |ls: &[&str]| ls.iter().map(|l| format!("{l}\n")).collect::<String>();
    Some(RecordTemplate {
        head: join(&lines[..by]),
        by_prefix: line[..start + "by thread ".len()].to_string(),
        thread: dim3(t)?,
        block: dim3(b)?,
        tail: join(&lines[by + 1..]),
    })
}

fn dim3(s: &str) -> Option<[u32; 3]> {
    let inner = s.trim().strip_prefix('(')?.strip_suffix(')')?;
    let mut it = inner.split(',').map(|p| p.trim().parse::<u32>().ok());
    let d = [it.next()??, it.next()??, it.next()??];
    it.next().is_none().then_some(d)
}

/// What [`generate`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenStats {
    pub bytes: u64,
    pub records: u64,
}

/// Threads per block used when numbering generated records.
const THREADS: u64 = 1024;

/// Writes a sanitizer log of at least `target_bytes`: the banner, the templates in turn
/// (record `i` gets thread x `i % 1024` and block x = the template's + `i / 1024`, other
/// components as recorded), and an `ERROR SUMMARY` with the number of records.
pub fn generate<W: Write>(templates: &[RecordTemplate], target_bytes: u64, w: W) -> io::Result<GenStats> {
    if templates.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "no records to repeat"));
    }
    let mut w = BufWriter::with_capacity(1 << 20, w);
    let banner = b"========= COMPUTE-SANITIZER\n";
    w.write_all(banner)?;
    let mut bytes = banner.len() as u64;
    let mut records = 0u64;
    let mut line = Vec::with_capacity(256);
    while bytes < target_bytes {
        let t = &templates[(records % templates.len() as u64) as usize];
        let tx = (records % THREADS) as u32;
        let bx = t.block[0].wrapping_add((records / THREADS) as u32);
        line.clear();
        line.extend_from_slice(t.by_prefix.as_bytes());
        push_dim3(&mut line, [tx, t.thread[1], t.thread[2]]);
        line.extend_from_slice(b" in block ");
        push_dim3(&mut line, [bx, t.block[1], t.block[2]]);
        line.push(b'\n');
        w.write_all(t.head.as_bytes())?;
        w.write_all(&line)?;
        w.write_all(t.tail.as_bytes())?;
        bytes += (t.head.len() + line.len() + t.tail.len()) as u64;
        records += 1;
    }
    let summary = format!("========= ERROR SUMMARY: {records} errors\n");
    w.write_all(summary.as_bytes())?;
    bytes += summary.len() as u64;
    w.flush()?;
    Ok(GenStats { bytes, records })
}

/// `(x,y,z)`, as compute-sanitizer prints a thread or block index.
fn push_dim3(out: &mut Vec<u8>, d: [u32; 3]) {
    out.push(b'(');
    for (i, v) in d.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_u32(out, v);
    }
    out.push(b')');
}

fn push_u32(out: &mut Vec<u8>, mut v: u32) {
    let mut buf = [0u8; 10];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// The measurements of one run.
#[derive(Debug, Clone)]
pub struct BenchReport {
    pub file: PathBuf,
    pub bytes: u64,
    pub records: u64,
    pub templates: usize,
    pub generate: Duration,
    pub grep: Duration,
    /// What `grep -c Invalid` counted (one per record).
    pub grep_count: Option<u64>,
    pub analyze: Duration,
    /// `analyze`'s exit status, where it was not 0.
    pub analyze_exit: Option<i32>,
    /// Peak resident memory of `analyze`, in KiB.
    pub analyze_rss_kib: u64,
    /// The peak came from sampling `/proc/PID/status` (VmHWM) while `analyze` ran, not from
    /// getrusage (which cannot see a child's peak below this process's own).
    pub analyze_rss_sampled: bool,
    pub cpus: usize,
    pub cpu_model: String,
    pub debug_build: bool,
}

impl BenchReport {
    pub fn mb_per_s(&self, d: Duration) -> f64 {
        self.bytes as f64 / 1e6 / d.as_secs_f64().max(1e-9)
    }

    pub fn rss_mib(&self) -> f64 {
        self.analyze_rss_kib as f64 / 1024.0
    }

    pub fn speed_ok(&self) -> bool {
        self.mb_per_s(self.analyze) >= GOAL_MB_PER_S
    }

    pub fn memory_ok(&self) -> bool {
        self.rss_mib() < GOAL_RSS_MIB
    }

    pub fn passed(&self) -> bool {
        self.speed_ok() && self.memory_ok()
    }

    /// The table `run` prints.
    pub fn table(&self) -> String {
        let verdict = |ok: bool| if ok { "PASS" } else { "FAIL" };
        let mut s = String::new();
        s.push_str(&format!("machine    {} CPU(s), {}\n", self.cpus, self.cpu_model));
        s.push_str(&format!(
            "file       {:.1} MiB, {} records from {} real record(s), written in {:.2} s ({:.0} MB/s)\n",
            self.bytes as f64 / (1024.0 * 1024.0),
            self.records,
            self.templates,
            self.generate.as_secs_f64(),
            self.mb_per_s(self.generate),
        ));
        s.push_str(&format!(
            "grep -c    {:>7.2} s {:>8.0} MB/s\n",
            self.grep.as_secs_f64(),
            self.mb_per_s(self.grep)
        ));
        s.push_str(&format!(
            "analyze    {:>7.2} s {:>8.0} MB/s   {} (goal >= {GOAL_MB_PER_S:.0} MB/s)\n",
            self.analyze.as_secs_f64(),
            self.mb_per_s(self.analyze),
            verdict(self.speed_ok()),
        ));
        s.push_str(&format!(
            "peak RSS   {:>7.1} MiB               {} (goal < {GOAL_RSS_MIB:.0} MiB){}\n",
            self.rss_mib(),
            verdict(self.memory_ok()),
            if self.analyze_rss_sampled { ", sampled" } else { "" },
        ));
        s.push_str(&format!("result     {}\n", verdict(self.passed())));
        if let Some(code) = self.analyze_exit {
            s.push_str(&format!("note: `analyze` exited with status {code}\n"));
        }
        if let Some(n) = self.grep_count {
            if n != self.records {
                s.push_str(&format!(
                    "note: grep counted {n} `Invalid` lines for {} records written\n",
                    self.records
                ));
            }
        }
        if self.debug_build {
            s.push_str(
                "note: this is a debug build; measure a release one: \
                 cargo run --release -p xtask -- bench --records FILE\n",
            );
        }
        s
    }
}

/// Removes the generated file when dropped, unless it is to be kept.
struct Cleanup {
    path: PathBuf,
    keep: bool,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn default_out() -> PathBuf {
    // The workspace root is the parent of this crate's directory.
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).join("target").join("bench").join("memcheck-1g.log")
}

fn peak_rss_kib(who: UsageWho) -> Result<u64> {
    let usage = getrusage(who).context("reading peak memory (getrusage)")?;
    Ok(u64::try_from(usage.max_rss()).unwrap_or(0))
}

/// The peak resident memory of a running process (`VmHWM` in `/proc/PID/status`), in KiB.
fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line["VmHWM:".len()..].trim().trim_end_matches("kB").trim().parse().ok()
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string())
}

/// Generates the log, runs `analyze --json` then `grep -c`, and measures both.
pub fn measure(args: &BenchArgs) -> Result<BenchReport> {
    let text = std::fs::read(&args.records).with_context(|| {
        format!(
            "reading {}: pass --records with a compute-sanitizer text log that has \
             `========= Invalid ...` records",
            args.records.display()
        )
    })?;
    let templates = extract_records(&String::from_utf8_lossy(&text));
    if templates.is_empty() {
        bail!(
            "{} has no `========= Invalid ...` records with a `by thread` line: pass a \
             memcheck log of a faulting run (`compute-sanitizer --tool memcheck ./prog > log`)",
            args.records.display()
        );
    }
    let file = args.out.clone().unwrap_or_else(default_out);
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating {}: choose another place with --out", dir.display()))?;
    }
    let _cleanup = Cleanup { path: file.clone(), keep: args.keep };
    let target = args.size_mib.saturating_mul(1024 * 1024);
    let t0 = Instant::now();
    let out = File::create(&file)
        .with_context(|| format!("creating {}: choose another place with --out", file.display()))?;
    let stats = generate(&templates, target, out).with_context(|| {
        format!(
            "writing {} ({} MiB): free some disk space, lower --size-mib or choose --out",
            file.display(),
            args.size_mib
        )
    })?;
    let generate_time = t0.elapsed();

    // `analyze` first: RUSAGE_CHILDREN's peak is a maximum over all waited-for children,
    // so it is read before grep runs.
    let exe = std::env::current_exe().context("finding this executable to run `analyze`")?;
    let own_peak_kib = peak_rss_kib(UsageWho::RUSAGE_SELF)?;
    let t0 = Instant::now();
    let mut child = Command::new(&exe)
        .arg("analyze")
        .arg("--json")
        .arg(&file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("running `{} analyze --json {}`", exe.display(), file.display()))?;
    // Linux hands a spawned child its parent's peak RSS (at exec), so RUSAGE_CHILDREN
    // cannot tell a child's peak below this process's own; the child's VmHWM is sampled too.
    let mut sampled_kib: Option<u64> = None;
    let status = loop {
        if let Some(st) = child.try_wait().context("waiting for `analyze`")? {
            break st;
        }
        if let Some(hwm) = vm_hwm_kib(child.id()) {
            sampled_kib = Some(sampled_kib.map_or(hwm, |s| s.max(hwm)));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let analyze_time = t0.elapsed();
    let Some(code) = status.code() else {
        bail!(
            "`analyze --json {}` was killed ({status}); run it by hand to see why (add --keep \
             to keep the file)",
            file.display()
        );
    };
    let children_kib = peak_rss_kib(UsageWho::RUSAGE_CHILDREN)?;
    let (rss_kib, rss_sampled) = match sampled_kib {
        Some(s) if children_kib <= own_peak_kib => (s, true),
        _ => (children_kib, false),
    };

    let t0 = Instant::now();
    let grep = Command::new("grep")
        .arg("-c")
        .arg("Invalid")
        .arg(&file)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .context("running `grep -c Invalid` for comparison: is grep installed?")?;
    let grep_time = t0.elapsed();
    let grep_count = String::from_utf8_lossy(&grep.stdout).trim().parse().ok();

    Ok(BenchReport {
        file,
        bytes: stats.bytes,
        records: stats.records,
        templates: templates.len(),
        generate: generate_time,
        grep: grep_time,
        grep_count,
        analyze: analyze_time,
        analyze_exit: (code != 0).then_some(code),
        analyze_rss_kib: rss_kib,
        analyze_rss_sampled: rss_sampled,
        cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        cpu_model: cpu_model(),
        debug_build: cfg!(debug_assertions),
    })
}

/// `bench`: measures and prints the table.
pub fn run(args: BenchArgs) -> Result<()> {
    let report = measure(&args)?;
    print!("{}", report.table());
    if args.keep {
        println!("kept       {}", report.file.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        eprintln!("generated {} MiB in {secs:.2} s: {mb_s:.0} MB/s", stats.bytes >> 20);
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
            analyze: Duration::from_secs(2),
            analyze_exit: None,
            analyze_rss_kib: 20 * 1024,
            analyze_rss_sampled: false,
            cpus: 2,
            cpu_model: "test".into(),
            debug_build: false,
        };
        assert!(r.passed());
        assert!(r.table().contains("500 MB/s   PASS"));
        let slow = BenchReport { analyze: Duration::from_secs(5), ..r };
        assert!(!slow.passed());
        assert!(slow.table().contains("result     FAIL"));
    }
}

//! `bench`: how fast, and in how much memory, `analyze` reads a gigabyte compute-sanitizer
//! log. The log is generated from a real recording's records, repeated with only the
//! `by thread (x,y,z) in block (x,y,z)` numbers varied (many records of few sites, as a
//! real run prints), then `analyze --json` (this executable) and `grep -c` read it.
//!
//! `bench --names 500,1000,2000,4000`: how `analyze` grows with the number of distinct kernel
//! names (of 5,000 characters each, as a hostile or generated log may hold): a log of N
//! records, each a real record with its own kernel name, for each N; linear, not quadratic.
//!
//! `bench pack`: how fast `bundle pack` ([`crate::bundle::archive::pack`]) writes a bundle with a
//! coredump-sized file, against `tar -I 'zstd -T0'` on the same folder.
//!
//! `bench` and `bench pack` end with `result PASS` or `result FAIL`; a FAIL is
//! [`Outcome::Mismatch`] (exit 1), so a script sees the goal missed.
//!
//! Must not: run anything but `grep`, `tar`, `zstd` and this executable's own `analyze`;
//! hold a generated file in memory (they are written through buffers); or leave them on disk
//! unless `--keep` was given (also when a step fails).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::sys::resource::{getrusage, UsageWho};

use super::Outcome;
use crate::bundle::{archive, layout};
use crate::model::{Exit, RungId};
use crate::process::short;
use crate::ui;

/// The longest a reference command (`grep`, `tar`) or the measured `analyze` may run.
const COMMAND_LIMIT: Duration = Duration::from_secs(3600);

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
    /// Instead of the gigabyte log: time `analyze` on logs of N records with N distinct kernel
    /// names, for each N given (`--names 500,1000,2000,4000`; the first record of `--records`
    /// with its kernel renamed), written to target/bench/names-N.log
    #[arg(long, value_delimiter = ',')]
    pub names: Vec<usize>,
    /// Characters in each kernel name for `--names`
    #[arg(long, default_value_t = 5000)]
    pub name_chars: usize,
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
                 cargo run --release -p debug-ima -- bench --records FILE\n",
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
    // Linux hands a spawned child its parent's peak RSS (at exec), so RUSAGE_CHILDREN
    // cannot tell a child's peak below this process's own; the child's VmHWM is sampled too.
    let mut sampled_kib: Option<u64> = None;
    let file_arg = file.display().to_string();
    let out = short::run_watching(&exe, &["analyze", "--json", &file_arg], None, COMMAND_LIMIT, &mut |pid| {
        if let Some(hwm) = vm_hwm_kib(pid) {
            sampled_kib = Some(sampled_kib.map_or(hwm, |s| s.max(hwm)));
        }
    });
    let analyze_time = t0.elapsed();
    let Exit::Code(code) = out.exit else {
        bail!(
            "`{} analyze --json {}` ended with {} {}; run it by hand to see why (add --keep to keep the file)",
            exe.display(),
            file.display(),
            out.exit.text(),
            out.stderr.trim()
        );
    };
    let children_kib = peak_rss_kib(UsageWho::RUSAGE_CHILDREN)?;
    let (rss_kib, rss_sampled) = match sampled_kib {
        Some(s) if children_kib <= own_peak_kib => (s, true),
        _ => (children_kib, false),
    };

    let t0 = Instant::now();
    let grep = short::run(Path::new("grep"), &["-c", "Invalid", &file_arg], COMMAND_LIMIT);
    if grep.exit == Exit::NotStarted {
        bail!("cannot run `grep -c Invalid` for comparison ({}): is grep installed?", grep.stderr.trim());
    }
    let grep_time = t0.elapsed();
    let grep_count = grep.stdout.trim().parse().ok();

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
pub fn run(args: BenchArgs) -> Result<Outcome> {
    if !args.names.is_empty() {
        return run_names(&args);
    }
    let report = measure(&args)?;
    let mut text = report.table();
    if args.keep {
        text.push_str(&format!("kept       {}\n", report.file.display()));
    }
    ui::out(&text)?;
    Ok(verdict_outcome(report.passed()))
}

/// `result PASS` is [`Outcome::Done`]; `result FAIL` is [`Outcome::Mismatch`], so that a
/// script (or CI) running the benchmark sees the goal missed in the exit status (1).
pub fn verdict_outcome(passed: bool) -> Outcome {
    if passed {
        Outcome::Done
    } else {
        Outcome::Mismatch
    }
}

// ---------------------------------------------------------------------------------------------
// `bench --names`

/// Kernel name `i` of `chars` characters: `k00042_` then identifier text with a `::` every 24
/// characters (so that the comparison of qualified names is exercised), ending in a letter.
pub fn distinct_name(i: usize, chars: usize) -> String {
    const FILL: &str = "abcdefghijklmnopqrstuv::";
    let mut s = format!("k{i:05}_");
    s.extend(FILL.chars().cycle().take(chars.saturating_sub(s.len())));
    if s.ends_with(':') {
        s.pop();
        s.push('z');
    }
    s
}

/// `t` with the kernel of its `at KERNEL(...)+0x.. in f:l` line renamed to `name`.
fn renamed(t: &RecordTemplate, name: &str) -> Option<RecordTemplate> {
    let mut head = String::with_capacity(t.head.len() + name.len());
    let mut done = false;
    for line in t.head.split_inclusive('\n') {
        let at = line.find("     at ").map(|p| p + "     at ".len());
        match at.filter(|_| !done) {
            Some(start) => {
                let rest = &line[start..];
                let end = rest.find(['(', '+']).unwrap_or(rest.len());
                head.push_str(&line[..start]);
                head.push_str(name);
                head.push_str(&rest[end..]);
                done = true;
            }
            None => head.push_str(line),
        }
    }
    done.then(|| RecordTemplate { head, ..t.clone() })
}

/// Writes a memcheck log of `n` records of `t`, each with its own kernel name of `chars`
/// characters ([`distinct_name`]), and the `ERROR SUMMARY`. Returns the bytes written.
pub fn write_names_log<W: Write>(t: &RecordTemplate, n: usize, chars: usize, w: W) -> io::Result<u64> {
    let mut w = BufWriter::with_capacity(1 << 20, w);
    let mut bytes = 0u64;
    let mut put = |w: &mut BufWriter<W>, s: &str| -> io::Result<()> {
        bytes += s.len() as u64;
        w.write_all(s.as_bytes())
    };
    put(&mut w, "========= COMPUTE-SANITIZER\n")?;
    for i in 0..n {
        let r = renamed(t, &distinct_name(i, chars)).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "the record has no `at KERNEL` line")
        })?;
        let by = format!(
            "{}({},{},{}) in block ({},{},{})\n",
            r.by_prefix, r.thread[0], r.thread[1], r.thread[2], r.block[0], r.block[1], r.block[2]
        );
        put(&mut w, &r.head)?;
        put(&mut w, &by)?;
        put(&mut w, &r.tail)?;
    }
    put(&mut w, &format!("========= ERROR SUMMARY: {n} errors\n"))?;
    w.flush()?;
    Ok(bytes)
}

/// A names log in memory (tests).
pub fn names_log(t: &RecordTemplate, n: usize, chars: usize) -> String {
    let mut out = Vec::new();
    write_names_log(t, n, chars, &mut out).expect("writing to memory");
    String::from_utf8(out).expect("UTF-8")
}

/// One `--names` measurement.
#[derive(Debug, Clone)]
pub struct NamesRow {
    pub names: usize,
    pub bytes: u64,
    pub analyze: Duration,
    pub exit: Exit,
}

/// The `--names` table: per N, the file, the time, the time per name, and how much longer
/// than the row before (2.0 for linear when N doubles, 4.0 for quadratic).
pub fn names_table(rows: &[NamesRow], chars: usize) -> String {
    let mut s = format!(
        "analyze on N distinct kernel names of {chars} characters (one memcheck record each)\n\
         {:>6} {:>9} {:>9} {:>12} {:>14}\n",
        "N", "MB", "seconds", "ms per name", "x previous"
    );
    for (i, r) in rows.iter().enumerate() {
        let secs = r.analyze.as_secs_f64();
        let growth = match i {
            0 => "-".to_string(),
            _ => format!(
                "{:.2} (N x{:.1})",
                secs / rows[i - 1].analyze.as_secs_f64().max(1e-9),
                r.names as f64 / rows[i - 1].names.max(1) as f64
            ),
        };
        s.push_str(&format!(
            "{:>6} {:>9.1} {:>9.3} {:>12.3} {:>14}\n",
            r.names,
            r.bytes as f64 / 1e6,
            secs,
            secs * 1e3 / r.names.max(1) as f64,
            growth
        ));
        if r.exit != Exit::Code(0) {
            s.push_str(&format!("note: `analyze` ended with {} for N = {}\n", r.exit.text(), r.names));
        }
    }
    if cfg!(debug_assertions) {
        s.push_str("note: this is a debug build; measure a release one: cargo run --release -p debug-ima -- bench --names ...\n");
    }
    s
}

/// `bench --names N,...`: writes each log, times `analyze --json` (this executable) on it,
/// prints the table; removes the logs unless `--keep`.
pub fn run_names(args: &BenchArgs) -> Result<Outcome> {
    let text = std::fs::read(&args.records).with_context(|| {
        format!("reading {}: pass --records with a compute-sanitizer text log", args.records.display())
    })?;
    let templates = extract_records(&String::from_utf8_lossy(&text));
    let Some(t) = templates.first() else {
        bail!(
            "{} has no `========= Invalid ...` records: pass a memcheck log of a faulting run",
            args.records.display()
        );
    };
    let exe = std::env::current_exe().context("finding this executable to run `analyze`")?;
    let mut rows = Vec::new();
    for &n in &args.names {
        let file = default_out().with_file_name(format!("names-{n}.log"));
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let _cleanup = Cleanup { path: file.clone(), keep: args.keep };
        let out = File::create(&file).with_context(|| format!("creating {}", file.display()))?;
        let bytes = write_names_log(t, n, args.name_chars, out)
            .with_context(|| format!("writing {}: free some disk space", file.display()))?;
        let file_arg = file.display().to_string();
        let start = Instant::now();
        let o =
            short::run_watching(&exe, &["analyze", "--json", &file_arg], None, COMMAND_LIMIT, &mut |_| {});
        rows.push(NamesRow { names: n, bytes, analyze: start.elapsed(), exit: o.exit });
    }
    ui::out(&names_table(&rows, args.name_chars))?;
    Ok(Outcome::Done)
}

// ---------------------------------------------------------------------------------------------
// `bench pack`

#[derive(Debug, clap::Args)]
pub struct PackBenchArgs {
    /// Size of the generated coredump in MB (10^6 bytes)
    #[arg(long, default_value_t = 150)]
    pub size_mb: u64,
    /// Where to write the bundle and both archives (default: target/bench/pack)
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep the bundle and the archives afterwards
    #[arg(long)]
    pub keep: bool,
    /// Timed runs of each, alternating (the median is reported)
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
}

/// The generated bundle's folder name, as `debug-ima` names them.
pub const PACK_BUNDLE: &str = "2026-11-30T00-00-00Z_bench";
/// Bytes per segment of the generated coredump.
const SEGMENT: usize = 64 * 1024;

/// xorshift64: fixed seed, same bytes on every machine.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

/// SASS-like 128-bit instruction words: a few opcodes (the high bits) used over and over,
/// as in a cubin's `.text` sections.
const OPCODES: [u64; 12] = [
    0x0000_0a00_ff00_7b82, // MOV
    0x0000_0000_0000_7919, // S2R
    0x0000_0002_0000_7224, // IMAD
    0x0000_0004_0200_7c25, // IMAD.WIDE
    0x0000_0004_0200_7981, // LDG.E
    0x0000_0004_0200_7986, // STG.E
    0x0000_0000_0000_794d, // EXIT
    0x0000_0000_00fc_7947, // BRA
    0x0000_0003_0000_720c, // ISETP.GE.AND
    0x0000_0000_0000_7918, // NOP
    0x0000_0002_0000_7221, // FADD
    0x0000_0002_0000_7223, // FFMA
];

/// Writes `bytes` bytes that compress like a GPU coredump. After an ELF64 core header for
/// `EM_CUDA` (as the driver writes), the file is 64 KiB segments whose kind a fixed-seed
/// xorshift draws:
/// - 45 % zero runs (device memory that was allocated but never written, padding between
///   sections);
/// - 25 % pseudo-random pages (memory holding floats or other high-entropy data; zstd cannot
///   shrink them and must notice that quickly);
/// - 30 % cubin-like blocks: ELF section headers with growing offsets, then SASS-like
///   16-byte instruction words from a dozen opcodes with varying registers and immediates
///   (compress several times, as the relocated ELF images of a real dump do).
///
/// On zstd level 3 the whole compresses to about a third of its size; the real (small) dump in
/// `tests/fixtures/bundles/oob_read-full` compresses to 13 %, as it holds no device memory.
pub fn write_coredump<W: Write>(mut w: W, bytes: u64) -> io::Result<()> {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut seg = vec![0u8; SEGMENT];
    let mut elf = [0u8; 64];
    elf[..8].copy_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0x33]);
    elf[16..18].copy_from_slice(&4u16.to_le_bytes()); // ET_CORE
    elf[18..20].copy_from_slice(&190u16.to_le_bytes()); // EM_CUDA
    elf[20..24].copy_from_slice(&1u32.to_le_bytes());
    elf[52..54].copy_from_slice(&64u16.to_le_bytes());
    elf[58..60].copy_from_slice(&64u16.to_le_bytes());
    let mut left = bytes;
    let mut first = true;
    let mut offset = 0u64;
    while left > 0 {
        let kind = rng.next() % 100;
        if kind < 45 {
            seg.fill(0);
        } else if kind < 70 {
            for chunk in seg.chunks_exact_mut(8) {
                chunk.copy_from_slice(&rng.next().to_le_bytes());
            }
        } else {
            // 32 section headers (2 KiB), then instructions.
            let (headers, text) = seg.split_at_mut(2048);
            for (i, h) in headers.chunks_exact_mut(64).enumerate() {
                h.fill(0);
                h[..4].copy_from_slice(&(0x100 + i as u32 * 24).to_le_bytes());
                h[4..8].copy_from_slice(&(0x7000_0007u32 + (i as u32 % 4)).to_le_bytes());
                h[8..16].copy_from_slice(&2u64.to_le_bytes());
                h[24..32].copy_from_slice(&offset.to_le_bytes());
                let size = 0x200 + (rng.next() % 0x4000);
                h[32..40].copy_from_slice(&size.to_le_bytes());
                offset += size;
            }
            for word in text.chunks_exact_mut(16) {
                let r = rng.next();
                let op = OPCODES[(r % OPCODES.len() as u64) as usize];
                let regs = ((r >> 8) & 0x1f) << 16 | ((r >> 16) & 0x1f) << 24 | ((r >> 24) & 0x1f) << 32;
                let imm = if r >> 60 == 0 { (r >> 32) & 0xffff } else { 0 };
                word[..8].copy_from_slice(&(op | regs).to_le_bytes());
                word[8..].copy_from_slice(&(0x000f_c000_0000_0000 | imm).to_le_bytes());
            }
        }
        if first {
            seg[..64].copy_from_slice(&elf);
            first = false;
        }
        let n = left.min(SEGMENT as u64) as usize;
        w.write_all(&seg[..n])?;
        left -= n as u64;
    }
    w.flush()
}

/// Small text files of a bundle (paths as `debug-ima` lays them out), and whether each is
/// executable.
fn pack_small_files() -> Vec<(PathBuf, &'static str, bool)> {
    let baseline = layout::rung_dir(1, RungId::Baseline, 0);
    let coredump = layout::rung_dir(4, RungId::Coredump, 0);
    vec![
        (
            layout::MANIFEST.into(),
            "tool: cargo xtask debug-ima\nrecipe: bench\nrungs: [baseline, coredump]\n",
            false,
        ),
        (layout::SUMMARY.into(), "# bench\n\nA generated bundle for `cargo xtask bench pack`.\n", false),
        (layout::FINDINGS.into(), "{\"verdict\":null,\"evidence\":[]}\n", false),
        (layout::env_file(layout::DOCTOR).into(), "gpu: none (generated by the benchmark)\n", false),
        (baseline.join(layout::COMMAND), "./oob_read\n", false),
        (baseline.join(layout::STDOUT), "", false),
        (baseline.join(layout::STDERR), "CUDA error: an illegal memory access was encountered\n", false),
        (coredump.join(layout::STDERR), "coredump: Writing out to core_bench.4242.1796034874\n", false),
        (layout::REPLAY.into(), "#!/bin/sh\nexec ./oob_read \"$@\"\n", true),
    ]
}

/// The generated coredump, named as the driver names them (`core_%h.%p.%t`).
pub fn pack_dump() -> PathBuf {
    layout::rung_dir(4, RungId::Coredump, 0).join(format!("{}bench.4242.1796034874", layout::DUMP_PREFIX))
}

/// Writes the bundle; returns its total size.
pub fn write_pack_bundle(root: &Path, dump_bytes: u64) -> Result<u64> {
    let mut total = 0;
    for (rel, text, exec) in pack_small_files() {
        let p = root.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))?;
        if exec {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))
                .with_context(|| format!("making {} executable", p.display()))?;
        }
        total += text.len() as u64;
    }
    let dump = root.join(pack_dump());
    let f = File::create(&dump).with_context(|| format!("creating {}", dump.display()))?;
    write_coredump(BufWriter::with_capacity(1 << 20, f), dump_bytes).with_context(|| {
        format!(
            "writing {} ({dump_bytes} bytes): free some disk space, lower --size-mb or choose --dir",
            dump.display()
        )
    })?;
    Ok(total + dump_bytes)
}

/// The measurements of `bench pack`.
#[derive(Debug, Clone)]
pub struct PackBenchReport {
    /// Every file of the bundle as packed (its `SHA256SUMS` included).
    pub input_bytes: u64,
    /// The generated coredump's size.
    pub dump_bytes: u64,
    pub files: usize,
    pub ours: Vec<Duration>,
    pub theirs: Vec<Duration>,
    /// CPU time (user + system, all threads) of each run: this process's for `pack`, the
    /// children's (tar and its zstd) for tar.
    pub ours_cpu: Vec<Duration>,
    pub theirs_cpu: Vec<Duration>,
    pub ours_bytes: u64,
    pub theirs_bytes: u64,
    /// Both archives verify against the same `SHA256SUMS`, with the same number of files.
    pub same_files: bool,
    /// zstd workers of `pack` (one per CPU).
    pub workers: u32,
    /// `zstd --version`.
    pub zstd_version: String,
    pub cpus: usize,
    pub cpu_model: String,
    pub debug_build: bool,
}

/// The median of a non-empty list (the mean of the middle two for an even count).
pub fn median(times: &[Duration]) -> Duration {
    let mut t = times.to_vec();
    t.sort();
    match t.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => t[n / 2],
        n => (t[n / 2 - 1] + t[n / 2]) / 2,
    }
}

impl PackBenchReport {
    pub fn mb_per_s(&self, d: Duration) -> f64 {
        self.input_bytes as f64 / 1e6 / d.as_secs_f64().max(1e-9)
    }

    pub fn fast_enough(&self) -> bool {
        median(&self.ours) <= median(&self.theirs)
    }

    pub fn small_enough(&self) -> bool {
        self.ours_bytes <= self.theirs_bytes
    }

    pub fn passed(&self) -> bool {
        self.fast_enough() && self.small_enough() && self.same_files
    }

    /// The table `run_pack` prints.
    pub fn table(&self) -> String {
        let verdict = |ok: bool| if ok { "PASS" } else { "FAIL" };
        let mut s = String::new();
        s.push_str(&format!("machine      {} CPU(s), {}\n", self.cpus, self.cpu_model));
        s.push_str(&format!(
            "bundle       {:.1} MB in {} files, one {}-byte coredump (zero runs, xorshift pages, cubin-like blocks)\n",
            self.input_bytes as f64 / 1e6,
            self.files,
            self.dump_bytes,
        ));
        s.push_str(&format!(
            "runs         {} of each, alternating; median\n",
            self.ours.len().min(self.theirs.len())
        ));
        s.push_str("                                 median s      MB/s   CPU s   archive bytes   ratio\n");
        for (label, times, cpu, bytes) in [
            (
                format!("bundle pack (zstd -3, {} workers)", self.workers),
                &self.ours,
                &self.ours_cpu,
                self.ours_bytes,
            ),
            ("tar -I 'zstd -T0'".to_string(), &self.theirs, &self.theirs_cpu, self.theirs_bytes),
        ] {
            let m = median(times);
            s.push_str(&format!(
                "{label:<33}{:>8.2} {:>9.0} {:>7.2} {:>15} {:>7.3}\n",
                m.as_secs_f64(),
                self.mb_per_s(m),
                median(cpu).as_secs_f64(),
                bytes,
                bytes as f64 / self.input_bytes.max(1) as f64
            ));
        }
        s.push_str(&format!(
            "same files   {}\n",
            if self.same_files {
                format!("yes: both archives match the bundle's {}", layout::SUMS)
            } else {
                "NO".into()
            }
        ));
        s.push_str(&format!(
            "result       {} (at least as fast: {}, no larger: {})\n",
            verdict(self.passed()),
            verdict(self.fast_enough()),
            verdict(self.small_enough())
        ));
        s.push_str(&format!("zstd         {}\n", self.zstd_version));
        if self.debug_build {
            s.push_str(
                "note: this is a debug build; measure a release one: \
                 cargo build --release && target/release/xtask bench pack\n",
            );
        }
        s
    }
}

fn default_pack_dir() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).join("target").join("bench").join("pack")
}

/// Removes what the benchmark wrote when dropped, unless it is to be kept.
struct PackCleanup {
    paths: Vec<PathBuf>,
    keep: bool,
}

impl Drop for PackCleanup {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        for p in &self.paths {
            if p.is_dir() {
                let _ = std::fs::remove_dir_all(p);
            } else {
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

/// User plus system time of this process (all its threads) or of its waited-for children.
fn cpu_time(who: UsageWho) -> Result<Duration> {
    let u = getrusage(who).context("reading CPU time (getrusage)")?;
    let tv = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(t.tv_sec().max(0) as u64) + Duration::from_micros(t.tv_usec().max(0) as u64)
    };
    Ok(tv(u.user_time()) + tv(u.system_time()))
}

fn zstd_version() -> Result<String> {
    let out = short::run(Path::new("zstd"), &["--version"], Duration::from_secs(10));
    if out.exit == Exit::NotStarted {
        bail!(
            "cannot run `zstd` ({}): the comparison runs `tar -I 'zstd -T0'`; install it: `apt install zstd`",
            out.stderr.trim()
        );
    }
    Ok(out.stdout.trim().trim_matches('*').trim().to_string())
}

/// Builds the bundle, then times `pack` and `tar -I 'zstd -T0'`, alternating, `runs` times each.
pub fn measure_pack(args: &PackBenchArgs) -> Result<PackBenchReport> {
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let zstd_version = zstd_version()?;
    let dir = args.dir.clone().unwrap_or_else(default_pack_dir);
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("creating {}: choose another place with --dir", dir.display()))?;
    let dir = dir.canonicalize().with_context(|| format!("resolving {}", dir.display()))?;
    let bundle = dir.join(PACK_BUNDLE);
    let ours = dir.join("ours.tar.zst");
    let theirs = dir.join("theirs.tar.zst");
    let cleanup = PackCleanup {
        paths: vec![bundle.clone(), ours.clone(), dir.join("ours.tar.zst.sha256"), theirs.clone()],
        keep: args.keep,
    };
    for p in &cleanup.paths {
        // What an earlier `--keep` run left.
        if p.is_dir() {
            std::fs::remove_dir_all(p).with_context(|| format!("removing the old {}", p.display()))?;
        } else if p.exists() {
            std::fs::remove_file(p).with_context(|| format!("removing the old {}", p.display()))?;
        }
    }
    let dump_bytes = args.size_mb.saturating_mul(1_000_000);
    write_pack_bundle(&bundle, dump_bytes)?;

    let opts = archive::PackOptions { with_coredumps: true, ..archive::PackOptions::default() };
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let mut ours_t = Vec::new();
    let mut theirs_t = Vec::new();
    let mut ours_cpu = Vec::new();
    let mut theirs_cpu = Vec::new();
    let mut packed = None;
    for _ in 0..args.runs {
        let _ = std::fs::remove_file(&ours);
        let c0 = cpu_time(UsageWho::RUSAGE_SELF)?;
        let t0 = Instant::now();
        let p = archive::pack(&bundle, &ours, &opts).context("packing the generated bundle")?;
        ours_t.push(t0.elapsed());
        ours_cpu.push(cpu_time(UsageWho::RUSAGE_SELF)?.saturating_sub(c0));
        packed = Some(p);

        let _ = std::fs::remove_file(&theirs);
        let c0 = cpu_time(UsageWho::RUSAGE_CHILDREN)?;
        let t0 = Instant::now();
        let (dir_arg, theirs_arg) = (dir.display().to_string(), theirs.display().to_string());
        let args = ["-C", dir_arg.as_str(), "-I", "zstd -T0", "-cf", theirs_arg.as_str(), PACK_BUNDLE];
        let out = short::run(Path::new("tar"), &args, COMMAND_LIMIT);
        theirs_t.push(t0.elapsed());
        theirs_cpu.push(cpu_time(UsageWho::RUSAGE_CHILDREN)?.saturating_sub(c0));
        if !out.success() {
            bail!(
                "`tar -I 'zstd -T0' -cf {} {PACK_BUNDLE}` failed ({}): {}; is GNU tar installed?",
                theirs.display(),
                out.exit.text(),
                out.stderr.trim()
            );
        }
    }
    let packed = packed.expect("runs >= 1");
    let theirs_bytes =
        std::fs::metadata(&theirs).with_context(|| format!("reading {}", theirs.display()))?.len();
    let v_ours = archive::verify(&ours).context("verifying our archive")?;
    let v_theirs = archive::verify(&theirs).context("verifying tar's archive")?;
    let same_files = v_ours.ok() && v_theirs.ok() && v_ours.checked == v_theirs.checked;
    drop(cleanup);
    Ok(PackBenchReport {
        input_bytes: packed.input_bytes,
        dump_bytes,
        files: packed.files,
        ours: ours_t,
        theirs: theirs_t,
        ours_cpu,
        theirs_cpu,
        ours_bytes: packed.bytes,
        theirs_bytes,
        same_files,
        workers,
        zstd_version,
        cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        cpu_model: cpu_model(),
        debug_build: cfg!(debug_assertions),
    })
}

/// `bench pack`: measures and prints the table.
pub fn run_pack(args: PackBenchArgs) -> Result<Outcome> {
    let report = measure_pack(&args)?;
    let mut text = report.table();
    if args.keep {
        text.push_str(&format!(
            "kept         {}\n",
            args.dir.clone().unwrap_or_else(default_pack_dir).display()
        ));
    }
    ui::out(&text)?;
    Ok(verdict_outcome(report.passed()))
}

#[derive(Debug, clap::Args)]
pub struct RedactBenchArgs {
    /// Size of the generated log in MiB
    #[arg(long, default_value_t = 512)]
    pub size_mib: u64,
    /// The real memcheck log whose records fill it (as for `bench`)
    #[arg(long, default_value = "tests/fixtures/h200/triton_worker/memcheck.log")]
    pub records: PathBuf,
    /// Timed runs of each, alternating (the median is reported)
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
}

/// `bench redact`: what redacting the logs as they are written costs. A log of real
/// compute-sanitizer records (no secrets in it) is written by `cat` through `exec` into a
/// log file, with and without `Spec::redact`, alternating; the redacted log must be the
/// same bytes. Prints the medians; removes what it wrote.
pub fn run_redact(args: RedactBenchArgs) -> Result<Outcome> {
    let text = std::fs::read(&args.records).with_context(|| {
        format!("reading {}: pass --records with a memcheck text log", args.records.display())
    })?;
    let templates = extract_records(&String::from_utf8_lossy(&text));
    if templates.is_empty() {
        bail!(
            "{} has no `========= Invalid ...` records: pass a memcheck log of a faulting run",
            args.records.display()
        );
    }
    let dir = default_out().with_file_name("redact");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let input = dir.join("input.log");
    let _keep_input = Cleanup { path: input.clone(), keep: false };
    let _keep_output = Cleanup { path: dir.join("output.log"), keep: false };
    let stats =
        generate(&templates, args.size_mib << 20, BufWriter::with_capacity(1 << 20, File::create(&input)?))?;
    let mut plain = Vec::new();
    let mut redacted = Vec::new();
    for _ in 0..args.runs.max(1) {
        for redact in [false, true] {
            let out = dir.join("output.log");
            let mut spec = crate::process::Spec::new("cat", [input.as_os_str()], &out, &out);
            spec.redact = redact;
            let start = Instant::now();
            let o = crate::process::run(&spec, &mut |_, _| crate::process::Control::Continue)?;
            let took = start.elapsed();
            if o.exit != crate::model::Exit::Code(0) {
                bail!("`cat {}` ended with {:?}", input.display(), o.exit);
            }
            if redact && std::fs::read(&out)? != std::fs::read(&input)? {
                bail!("the redacted log differs from its input, which holds no secret: a redaction bug");
            }
            if redact {
                redacted.push(took)
            } else {
                plain.push(took)
            }
        }
    }
    let mb = stats.bytes as f64 / 1e6;
    let (p, r) = (median(&plain), median(&redacted));
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let text = format!(
        "log          {:.0} MB of {} real memcheck records ({})\n\
         machine      {cpus} CPU(s), {}\n\
         runs         {} of each, alternating; median; the callback gets every line in both\n\
         plain        {:>6.2} s  {:>6.0} MB/s\n\
         redacted     {:>6.2} s  {:>6.0} MB/s  (same bytes out)\n",
        mb,
        stats.records,
        args.records.display(),
        cpu_model(),
        args.runs.max(1),
        p.as_secs_f64(),
        mb / p.as_secs_f64(),
        r.as_secs_f64(),
        mb / r.as_secs_f64()
    );
    ui::out(&text)?;
    Ok(Outcome::Done)
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

    #[test]
    fn names_logs_rename_every_record() {
        let t = &extract_records(OOB_WRITE)[0];
        assert_eq!(distinct_name(7, 40), "k00007_abcdefghijklmnopqrstuv::abcdefghi");
        assert_eq!(distinct_name(7, 30).chars().count(), 30);
        assert!(!distinct_name(1, 31).ends_with(':'));
        let log = names_log(t, 3, 100);
        assert!(log.starts_with(
            "========= COMPUTE-SANITIZER\n========= Invalid __global__ write of size 4 bytes\n"
        ));
        assert!(log.contains(&format!(
            "=========     at {}(float *, int, long long)+0x110 in oob_write.cu:7\n",
            distinct_name(2, 100)
        )));
        assert!(log.ends_with("========= ERROR SUMMARY: 3 errors\n"));
        let ev = crate::findings::scan::scan_str(&log, "names.log");
        assert_eq!(ev.faults.len(), 3);
        let rows = [
            NamesRow {
                names: 500,
                bytes: 3_000_000,
                analyze: Duration::from_millis(100),
                exit: Exit::Code(0),
            },
            NamesRow {
                names: 1000,
                bytes: 6_000_000,
                analyze: Duration::from_millis(200),
                exit: Exit::Code(0),
            },
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
            theirs: vec![
                Duration::from_millis(1100),
                Duration::from_millis(1200),
                Duration::from_millis(1000),
            ],
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
            t.contains(
                "bundle pack (zstd -3, 2 workers)     1.00       150    1.80        50000000   0.333\n"
            ),
            "{t}"
        );
        assert!(
            t.contains(
                "tar -I 'zstd -T0'                    1.10       136    1.70        50000100   0.333\n"
            ),
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
}

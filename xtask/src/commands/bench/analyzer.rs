//! `bench` and `bench --names`: the gigabyte log generated, `analyze --json` (this
//! executable) and `grep -c` timed on it with their peak memory, against the goals; and
//! how `analyze` grows with the number of distinct kernel names.
//!
//! Must not: run anything but `grep`, `tar`, `zstd` and this executable's own `analyze`;
//! hold a generated file in memory (they are written through buffers); or leave them on disk
//! unless `--keep` was given (also when a step fails).

use super::common::{cpu_model, peak_rss_kib, verdict_outcome, vm_hwm_kib, COMMAND_LIMIT};
use super::records::{extract_records, generate, write_names_log};
use crate::commands::Outcome;
use crate::model::Exit;
use crate::process::short;
use crate::ui;
use anyhow::{bail, Context, Result};
use nix::sys::resource::UsageWho;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Throughput goal for `analyze`, in MB/s (10^6 bytes).
pub const GOAL_MB_PER_S: f64 = 1000.0;
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
pub(super) struct Cleanup {
    pub(super) path: PathBuf,
    pub(super) keep: bool,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

pub(super) fn default_out() -> PathBuf {
    // The workspace root is the parent of this crate's directory.
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).join("target").join("bench").join("memcheck-1g.log")
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

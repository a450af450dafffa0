//! `bench redact`: what redacting the logs as they are written costs, on a log of real
//! lines.
//!
//! Must not: run anything but `cat` (through `process`, as a target's logs are written);
//! hold the generated log or its copy in memory (written through a buffer, compared in
//! chunks); or leave them on disk (also when a step fails).

use super::analyzer::{default_out, Cleanup};
use super::common::{cpu_model, median};
use super::records::{extract_records, generate};
use crate::commands::Outcome;
use crate::ui;
use anyhow::{bail, Context, Result};
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::time::Instant;

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
            if redact && !same_bytes(&out, &input)? {
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

/// Whether files `a` and `b` hold the same bytes, read in chunks.
fn same_bytes(a: &std::path::Path, b: &std::path::Path) -> Result<bool> {
    use std::io::Read;
    let open = |p: &std::path::Path| File::open(p).with_context(|| format!("reading {}", p.display()));
    let (mut a, mut b) = (std::io::BufReader::new(open(a)?), std::io::BufReader::new(open(b)?));
    let (mut x, mut y) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let n = a.read(&mut x)?;
        if n == 0 {
            return Ok(b.read(&mut y)? == 0);
        }
        if b.read_exact(&mut y[..n]).is_err() || x[..n] != y[..n] {
            return Ok(false);
        }
    }
}

//! `bench pack`: a bundle with a coredump-sized file that compresses like one, written;
//! then `bundle pack` and `tar -I 'zstd -T0'` timed on it, alternating, with their CPU time.
//!
//! Must not: run anything but `grep`, `tar`, `zstd` and this executable's own `analyze`;
//! hold a generated file in memory (they are written through buffers); or leave them on disk
//! unless `--keep` was given (also when a step fails).

use super::common::{cpu_model, cpu_time, median, verdict_outcome, COMMAND_LIMIT};
use crate::bundle::{archive, layout};
use crate::commands::Outcome;
use crate::model::{Exit, RungId};
use crate::process::short;
use crate::ui;
use anyhow::{bail, Context, Result};
use nix::sys::resource::UsageWho;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
pub(super) const SEGMENT: usize = 64 * 1024;

/// xorshift64: fixed seed, same bytes on every machine.
pub(super) struct XorShift(u64);

impl XorShift {
    pub(super) fn next(&mut self) -> u64 {
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
pub(super) const OPCODES: [u64; 12] = [
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
pub(super) fn pack_small_files() -> Vec<(PathBuf, &'static str, bool)> {
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

pub(super) fn default_pack_dir() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).join("target").join("bench").join("pack")
}

/// Removes what the benchmark wrote when dropped, unless it is to be kept.
pub(super) struct PackCleanup {
    pub(super) paths: Vec<PathBuf>,
    pub(super) keep: bool,
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

pub(super) fn zstd_version() -> Result<String> {
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

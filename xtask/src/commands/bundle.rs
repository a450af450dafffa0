//! `cargo xtask bundle list|show|pack|unpack|verify|report|rm|prune`: what a user does with a bundle
//! after the ladder: find it, read it, check it, share it. Reading manifests and logs is
//! here; archives are `archive`'s, the report's text is `report`'s; the output goes through
//! `ui`.
//!
//! `show` and `report` read an archive through a temporary copy (`archive::unpack_temp`, the
//! limits of `unpack`), removed when they end.
//!
//! Must not: run processes or change a bundle, except `pack`, which first redacts in place
//! what the tool did not write and renames the names that hold a secret (`bundle::leaves`),
//! and writes `SHA256SUMS` (and `LEFT_OUT.tsv`) into it so that the directory and the archive
//! agree, and `rm`/`prune` (`bundle_prune`), which remove whole bundles and nothing else; or
//! show a file's name unredacted.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

pub use super::bundle_files::{files, human, list, Listed};
use super::Outcome;
use crate::bundle::archive::{self, Limits, PackOptions};
use crate::bundle::leaves::{self, Fate};
use crate::bundle::report::{self, ReportInput};
use crate::bundle::{layout, Bundle, Manifest};
use crate::process::Interrupt;
use crate::ui;

#[derive(Debug, clap::Subcommand)]
pub enum BundleCommand {
    /// The bundles under the bundle root, newest first: created, recipe, verdict, size.
    List {
        /// Where the bundles are (`debug-ima --bundle-dir`).
        #[arg(long, default_value = crate::bundle::layout::DEFAULT_ROOT)]
        bundle_dir: PathBuf,
        /// Print one JSON object (`root`, `bundles`) instead of the table (docs/bundles.md).
        #[arg(long)]
        json: bool,
    },
    /// A bundle's verdict, its rungs with status and timings, and its files. PATH is a bundle
    /// folder or an archive of `bundle pack` (`.tar.zst`, `.tar.gz`), read from a temporary
    /// copy that is removed afterwards.
    Show {
        /// The bundle folder, or an archive of `bundle pack`.
        path: PathBuf,
        /// Print one JSON object instead of text (docs/bundles.md).
        #[arg(long)]
        json: bool,
    },
    /// A deterministic `.tar.zst` (or `--gzip`: `.tar.gz`) of a bundle, with SHA256SUMS inside
    /// and a `.sha256` beside it. Only what may leave goes in: the tool's own files, and every
    /// other text redacted first (in the bundle too), wherever it lies; coredumps and binary
    /// files are left out, listed in LEFT_OUT.tsv, unless `--with-coredumps` or `--include`.
    Pack {
        /// The bundle folder to pack.
        path: PathBuf,
        /// Include the GPU coredumps and CPU cores (told by their content; often hundreds of
        /// MB each, and they can hold model or user data).
        #[arg(long)]
        with_coredumps: bool,
        /// Include the files that hold the program's input values (a reproducer's integer
        /// storages copied from the faulting launch, which may be a prompt's token ids; the
        /// manifest's `inputs` says how many and from which arguments).
        #[arg(long)]
        with_inputs: bool,
        /// Include a file that would be left out (a binary file, a coredump, a text too large
        /// to read), as it is: a path relative to the bundle as LEFT_OUT.tsv names it, or a
        /// folder for the files under it. Repeat it for more.
        #[arg(long, value_name = "PATH")]
        include: Vec<String>,
        /// A `.tar.gz` instead of a `.tar.zst`: GitHub takes it as an issue attachment (up to
        /// 25 MB); single-threaded, larger.
        #[arg(long)]
        gzip: bool,
        /// The archive to write (default: `<bundle>.tar.zst` beside the bundle).
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// Replace home folders, user names and host names (the same way in every file and
        /// file name) in what is packed, for a public issue; the bundle itself is not changed.
        #[arg(long, conflicts_with_all = ["with_coredumps", "include"])]
        anonymize: bool,
    },
    /// Unpack an archive made by `bundle pack` into DIR (default: the current directory),
    /// refusing links, devices, absolute or `..` paths and oversized entries.
    Unpack {
        /// The archive (`.tar.zst` or `.tar.gz`) that `bundle pack` wrote.
        archive: PathBuf,
        /// Where to unpack it (default: the current directory).
        dir: Option<PathBuf>,
        /// Refuse archives that unpack to more than this many bytes.
        #[arg(long, default_value_t = Limits::default().max_total_bytes)]
        max_bytes: u64,
        /// Refuse archives that unpack to more than this many times their size (past the
        /// first 256 MiB): a decompression bomb; raise it for an archive you trust.
        #[arg(long, default_value_t = Limits::default().max_ratio, value_parser = clap::value_parser!(u64).range(1..))]
        max_ratio: u64,
        /// Refuse archives of more than this many entries (files and folders): a bundle holds
        /// a few hundred; raise it for an archive you trust.
        #[arg(long, default_value_t = Limits::default().max_entries, value_parser = clap::value_parser!(u64).range(1..))]
        max_entries: u64,
    },
    /// Check a bundle directory or archive against its SHA256SUMS: names every changed,
    /// missing or extra file. Exit 1 when anything does not match.
    Verify {
        /// The bundle folder or archive to check.
        path: PathBuf,
    },
    /// Remove bundles: each PATH must be a bundle folder (a readable manifest.yaml); anything
    /// else is refused and left as it is.
    Rm {
        /// The bundle folders to remove.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Remove old bundles under the bundle root: all but the newest `--keep`, and with
    /// `--older-than` every one older than that. A bundle a run may still be writing is kept.
    Prune {
        /// Where the bundles are (`debug-ima --bundle-dir`).
        #[arg(long, default_value = crate::bundle::layout::DEFAULT_ROOT)]
        bundle_dir: PathBuf,
        /// How many of the newest bundles to keep.
        #[arg(long, default_value_t = 20)]
        keep: usize,
        /// Also remove bundles older than this (`7d`, `12h`, `30m`; a bare number is days).
        #[arg(long, value_name = "AGE", value_parser = super::bundle_prune::parse_age)]
        older_than: Option<std::time::Duration>,
        /// Say what would be removed, and remove nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Markdown for a GitHub issue: symptom, verdict, environment, the commands that
    /// reproduce it, logs folded in `<details>`, under GitHub's size limit. PATH is a bundle
    /// folder or an archive of `bundle pack`.
    Report {
        /// The bundle folder, or an archive of `bundle pack`.
        path: PathBuf,
        /// Write the report to this file instead of stdout.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
}

/// Runs a `bundle` command; returns the exit code.
pub fn run(cmd: BundleCommand) -> Result<Outcome> {
    match cmd {
        BundleCommand::List { bundle_dir, json } => {
            let bundles = list(&bundle_dir)?;
            if json {
                out(&render_list_json(&bundles, &bundle_dir))
            } else {
                out(&render_list(&bundles, &bundle_dir, list_width()))
            }
        }
        BundleCommand::Show { path, json } => {
            let opened = Opened::new(&path)?;
            let m = Bundle::load(opened.dir())?;
            let files = files(opened.dir())?;
            let fates = leaves::fates(opened.dir(), &files, &leaves::tool_files(&m));
            let mut files: Vec<(String, u64, Fate)> =
                files.into_iter().zip(fates).map(|((f, bytes), fate)| (f, bytes, fate)).collect();
            // What holds the program's input values, as `pack` leaves it out.
            let inputs = crate::bundle::user_data::inputs_in(opened.dir(), Some(&m));
            for (f, _, fate) in files.iter_mut() {
                if inputs.iter().any(|r| r.file == *f) {
                    *fate = Fate::Left { why: leaves::INPUTS_WHY, coredump: false };
                }
            }
            if json {
                out(&render_show_json(&path, &m, &files))
            } else {
                out(&render_show(&path, &m, &files))
            }
        }
        BundleCommand::Pack { path, with_coredumps, with_inputs, include, gzip, output, anonymize } => {
            let m = Bundle::load(&path)?;
            let compression = if gzip { archive::Compression::Gzip } else { archive::Compression::Zstd };
            let archive = output.unwrap_or_else(|| archive::default_archive_path_for(&path, compression));
            let opts =
                PackOptions { with_coredumps, with_inputs, include, compression, ..PackOptions::default() };
            // Ctrl-C stops the packing and removes the partial archive.
            let interrupt = Interrupt::install()?;
            let mut s = String::new();
            let p = if anonymize {
                let (p, said) = pack_anonymized(&path, &m, &archive, &opts, &|| interrupt.is_set())?;
                s.push_str(&said);
                p
            } else {
                archive::pack_until(&path, &archive, &opts, &|| interrupt.is_set())
                    .with_context(|| format!("cannot pack `{}`", path.display()))?
            };
            write!(
                s,
                "packed {} files ({}) into {} ({})\nsha256 {}  (also in {}.sha256)\n",
                p.files,
                human(p.input_bytes),
                line(&p.archive.display().to_string()),
                human(p.bytes),
                p.sha256,
                line(&p.archive.display().to_string())
            )
            .unwrap();
            s.push_str(&render_packed(&p));
            if gzip && p.bytes > GITHUB_ATTACHMENT_BYTES {
                writeln!(
                    s,
                    "note: over GitHub's {} MB limit for an attachment: leave the coredumps and binary files out, or share it elsewhere",
                    GITHUB_ATTACHMENT_BYTES / 1_000_000
                )
                .unwrap();
            }
            if !m.redactions.is_empty() {
                writeln!(
                    s,
                    "{} redaction(s) were made while the bundle was written: see `bundle show`",
                    m.redactions.len()
                )
                .unwrap();
            }
            out(&s)
        }
        BundleCommand::Unpack { archive, dir, max_bytes, max_ratio, max_entries } => {
            let into = dir.unwrap_or_else(|| PathBuf::from("."));
            let limits = Limits { max_total_bytes: max_bytes, max_ratio, max_entries, ..Limits::default() };
            // Ctrl-C stops the unpacking and removes the hidden partial folder.
            let interrupt = Interrupt::install()?;
            let u = archive::unpack_until(&archive, &into, &limits, &|| interrupt.is_set())?;
            out(&format!(
                "unpacked {} files ({}) into {}\ncheck it with `cargo xtask bundle verify {}`\n",
                u.files,
                human(u.bytes),
                line(&u.root.display().to_string()),
                line(&u.root.display().to_string())
            ))
        }
        BundleCommand::Rm { paths } => {
            // Every path is checked first: a typo among them removes nothing.
            for p in &paths {
                Bundle::load(p).with_context(|| {
                    format!(
                        "`{}` is not a bundle (no readable {}): nothing was removed",
                        p.display(),
                        layout::MANIFEST
                    )
                })?;
            }
            let mut s = String::new();
            for p in &paths {
                let bytes = super::bundle_prune::remove(p)?;
                writeln!(s, "removed {} ({})", line(&p.display().to_string()), human(bytes)).unwrap();
            }
            out(&s)
        }
        BundleCommand::Prune { bundle_dir, keep, older_than, dry_run } => {
            out(&super::bundle_prune::prune(&bundle_dir, keep, older_than, dry_run)?)
        }
        BundleCommand::Verify { path } => {
            let v = archive::verify(&path)?;
            ui::out(&archive::render_verification(&v, &path)).context("cannot write to stdout")?;
            Ok(if v.ok() { Outcome::Done } else { Outcome::Mismatch })
        }
        BundleCommand::Report { path, output } => {
            let opened = Opened::new(&path)?;
            let text = report_of(opened.dir())?;
            ui::status(&attach_hint(&path, opened.temp.is_some()));
            match output {
                Some(o) => {
                    std::fs::write(&o, &text).with_context(|| format!("cannot write `{}`", o.display()))?;
                    ui::status(&format!(
                        "wrote {} ({} characters)",
                        line(&o.display().to_string()),
                        text.chars().count()
                    ));
                    Ok(Outcome::Done)
                }
                None => out(&text),
            }
        }
    }
}

/// What `pack` did beyond the archive: what it redacted and renamed in the bundle first, what
/// it left out (how many of each kind, their size, where they are listed), its notes.
fn render_packed(p: &archive::Packed) -> String {
    let mut s = String::new();
    if !p.redactions.is_empty() {
        let mut places: Vec<&str> = p
            .redactions
            .iter()
            .map(|r| r.place.rsplit_once(':').map_or(r.place.as_str(), |(f, _)| f))
            .collect();
        places.sort_unstable();
        places.dedup();
        writeln!(
            s,
            "redacted in the bundle before packing: {} secret(s) in {} file(s) or name(s) the tool did not \
             write through its redactor:",
            p.redactions.len(),
            places.len()
        )
        .unwrap();
        const SHOWN: usize = 10;
        for r in p.redactions.iter().take(SHOWN) {
            writeln!(s, "  {}: {}", line(&r.place), line(&r.what)).unwrap();
        }
        if p.redactions.len() > SHOWN {
            writeln!(s, "  ... and {} more", p.redactions.len() - SHOWN).unwrap();
        }
    }
    for n in &p.notes {
        writeln!(s, "note: {}", short(&line(n), 200)).unwrap();
    }
    if p.left_out.is_empty() {
        return s;
    }
    let total: u64 = p.left_out.iter().map(|(_, b, _)| b).sum();
    let mut kinds: Vec<(&str, usize)> = Vec::new();
    for (_, _, why) in &p.left_out {
        let kind = why.split([':', ';']).next().unwrap_or(why);
        match kinds.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => kinds.push((kind, 1)),
        }
    }
    let kinds: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {}", line(k))).collect();
    let cores = p.left_out.iter().any(|(_, _, why)| why == leaves::COREDUMP_WHY);
    let inputs = p.left_out.iter().any(|(_, _, why)| why == leaves::INPUTS_WHY);
    writeln!(
        s,
        "left out {} file{}, {} (listed in {}: {}): not read, memory images that can hold model or user \
         data, or the program's input values; {}{}`--include PATH` adds one",
        p.left_out.len(),
        if p.left_out.len() == 1 { "" } else { "s" },
        human(total),
        layout::LEFT_OUT,
        kinds.join(", "),
        if cores { "`--with-coredumps` includes the coredumps, " } else { "" },
        if inputs { "`--with-inputs` the input values, " } else { "" }
    )
    .unwrap();
    s
}

/// A bundle to read: the folder given, or an archive unpacked into a temporary folder (with
/// the checks and limits of `bundle unpack`), removed when this is dropped.
pub struct Opened {
    given: PathBuf,
    temp: Option<archive::TempUnpacked>,
}

impl Opened {
    pub fn new(path: &Path) -> Result<Opened> {
        if path.is_dir() || !archive::is_archive(path) {
            return Ok(Opened { given: path.to_path_buf(), temp: None });
        }
        // Ctrl-C stops the unpacking; the temporary folder goes either way.
        let interrupt = Interrupt::install()?;
        let temp =
            archive::unpack_temp(path, &Limits::default(), &|| interrupt.is_set()).with_context(|| {
                format!(
                    "cannot read the archive `{}`: unpack it with `cargo xtask bundle unpack {}` to see why",
                    path.display(),
                    path.display()
                )
            })?;
        Ok(Opened { given: path.to_path_buf(), temp: Some(temp) })
    }

    /// The bundle folder to read.
    pub fn dir(&self) -> &Path {
        self.temp.as_ref().map(|t| t.root.as_path()).unwrap_or(&self.given)
    }
}

/// How to attach the whole bundle to the issue, after `bundle report PATH`: a folder is packed
/// with `--gzip`; a `.tar.gz` is attached as it is; another archive (`.tar.zst`, which GitHub does
/// not take) is unpacked first, since `bundle pack` takes a folder.
pub fn attach_hint(path: &Path, archive: bool) -> String {
    let shown = line(&path.display().to_string());
    let gzip = path.to_string_lossy().ends_with(".tar.gz");
    match (archive, gzip) {
        (false, _) => format!(
            "to attach the whole bundle to the issue: `cargo xtask bundle pack --gzip {shown}` (GitHub takes a \
             .tar.gz up to 25 MB, not a .tar.zst)"
        ),
        (true, true) => format!("to attach the whole bundle to the issue: attach `{shown}` itself (GitHub takes a \
             .tar.gz up to 25 MB)"),
        (true, false) => format!(
            "to attach the whole bundle to the issue (GitHub takes a .tar.gz up to 25 MB, not a .tar.zst): \
             `cargo xtask bundle unpack {shown} DIR`, then `cargo xtask bundle pack --gzip DIR/<bundle>`"
        ),
    }
}

/// An untrusted string (a received manifest's, a file's name) for a one-line field: a newline
/// in it must not forge a `verdict:` line ([`ui::safe`]).
fn line(v: &str) -> String {
    ui::safe(v, true).into_owned()
}

fn out(text: &str) -> Result<Outcome> {
    ui::out(text).context("cannot write to stdout")?;
    Ok(Outcome::Done)
}

/// GitHub's limit for a file attached to an issue (25 MB).
pub const GITHUB_ATTACHMENT_BYTES: u64 = 25_000_000;

/// The width `bundle list` fits its verdict lines to: `COLUMNS` when the session is at a
/// terminal; none (nothing is cut) when the output goes to a file or a pipe of a script.
fn list_width() -> Option<usize> {
    if !ui::is_tty() {
        return None;
    }
    std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse().ok()).filter(|&w: &usize| w >= 20)
}

/// `bundle list`: one row per bundle, the columns aligned to their widest cell, and the
/// verdict on the line below. With a `width` (a terminal's), what fits it: a row too wide for
/// it keeps only the size and the path (whose name holds the time and the recipe), and a
/// verdict too long is shortened as [`fit_verdict`] says, never in its class or its kernel's
/// name; without one, nothing is shortened.
pub fn render_list(bundles: &[Listed], root: &Path, width: Option<usize>) -> String {
    if bundles.is_empty() {
        return format!(
            "no bundles under `{}`: `cargo xtask debug-ima --recipe demo` makes one, or pass `--bundle-dir`\n",
            line(&root.display().to_string())
        );
    }
    let rows: Vec<[String; 4]> = bundles
        .iter()
        .map(|b| [line(&b.created), line(&b.recipe), human(b.bytes), line(&b.path.display().to_string())])
        .collect();
    let head = ["created", "recipe", "size", "path"].map(String::from);
    let w =
        |i: usize| rows.iter().chain(std::iter::once(&head)).map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (w0, w1, w2, w3) = (w(0), w(1), w(2), w(3));
    let narrow = width.is_some_and(|width| w0 + w1 + w2 + w3 + 6 > width);
    let mut s = String::new();
    let row = |s: &mut String, r: &[String; 4]| {
        if narrow {
            writeln!(s, "{:>w2$}  {}", r[2], r[3]).unwrap();
        } else {
            writeln!(s, "{:<w0$}  {:<w1$}  {:>w2$}  {}", r[0], r[1], r[2], r[3]).unwrap();
        }
    };
    row(&mut s, &head);
    for (b, r) in bundles.iter().zip(&rows) {
        row(&mut s, r);
        let verdict = line(b.verdict.as_deref().unwrap_or("no verdict"));
        let shown = match width {
            Some(w) => fit_verdict(&verdict, w.saturating_sub(4)),
            None => vec![verdict],
        };
        for (i, l) in shown.iter().enumerate() {
            writeln!(s, "{}{l}", if i == 0 { "    " } else { "      " }).unwrap();
        }
    }
    s
}

/// A verdict line (`CLASS in `KERNEL` at FILE:LINE`) in lines of at most `max` characters where
/// it can be: as it is when it fits; else the kernel without its parameters (`scatter_rows(…)`);
/// else on two lines, `CLASS in `KERNEL`` and `at FILE:LINE` (the second `max - 2` wide, the
/// file's folders cut first: `at …/oob_read.cu:8`). The class and the kernel's name are never
/// cut: a name longer than the room is left whole.
pub fn fit_verdict(verdict: &str, max: usize) -> Vec<String> {
    let fits = |t: &str| t.chars().count() <= max;
    if fits(verdict) {
        return vec![verdict.to_string()];
    }
    let (Some(open), Some(close)) = (verdict.find('`'), verdict.rfind('`')) else {
        return vec![verdict.to_string()];
    };
    if close <= open {
        return vec![verdict.to_string()];
    }
    let (head, kernel, tail) = (&verdict[..open], &verdict[open + 1..close], &verdict[close + 1..]);
    let short = match kernel.find('(') {
        Some(p) if p > 0 && kernel.ends_with(')') && p + 1 < kernel.len() - 1 => {
            format!("{}(…)", &kernel[..p])
        }
        _ => kernel.to_string(),
    };
    let one = format!("{head}`{short}`{tail}");
    if fits(&one) {
        return vec![one];
    }
    let first = if fits(&format!("{head}`{kernel}`")) {
        format!("{head}`{kernel}`")
    } else {
        format!("{head}`{short}`")
    };
    let rest = tail.trim_start();
    if rest.is_empty() {
        return vec![first];
    }
    let room = max.saturating_sub(2);
    let second = if rest.chars().count() <= room {
        rest.to_string()
    } else {
        // `at /a/b/file.cu:8` -> `at …/file.cu:8`: the file's name and line stay whole.
        match rest.rfind('/') {
            Some(slash) => {
                let word_start = rest[..slash].rfind(' ').map(|i| i + 1).unwrap_or(0);
                format!("{}…{}", &rest[..word_start], &rest[slash..])
            }
            None => rest.to_string(),
        }
    };
    vec![first, second]
}

/// `bundle list --json`: `{"root": ..., "bundles": [{path, created, recipe, bytes, verdict}]}`,
/// newest first, `verdict` `null` when the run gave none (docs/bundles.md).
pub fn render_list_json(bundles: &[Listed], root: &Path) -> String {
    #[derive(serde::Serialize)]
    struct Row<'a> {
        path: String,
        created: &'a str,
        recipe: &'a str,
        bytes: u64,
        verdict: Option<&'a str>,
    }
    #[derive(serde::Serialize)]
    struct List<'a> {
        root: String,
        bundles: Vec<Row<'a>>,
    }
    let list = List {
        root: root.display().to_string(),
        bundles: bundles
            .iter()
            .map(|b| Row {
                path: b.path.display().to_string(),
                created: &b.created,
                recipe: &b.recipe,
                bytes: b.bytes,
                verdict: b.verdict.as_deref(),
            })
            .collect(),
    };
    serde_json::to_string_pretty(&list).expect("the list serialises") + "\n"
}

/// `bundle show`: the manifest's view of the bundle, and every file with its size and, for
/// those `bundle pack` leaves out, why (`files`: path, size, [`Fate`]); names that hold a
/// secret are shown redacted.
pub fn render_show(path: &Path, m: &Manifest, files: &[(String, u64, Fate)]) -> String {
    let mut s = String::new();
    writeln!(s, "bundle:   {}", line(&path.display().to_string())).unwrap();
    writeln!(
        s,
        "recipe:   {} ({})",
        m.recipe_name(),
        line(m.recipe.get("source").and_then(|v| v.as_str()).unwrap_or("?"))
    )
    .unwrap();
    writeln!(s, "created:  {} by {} {}", line(&m.created), line(&m.tool), line(&m.version)).unwrap();
    writeln!(s, "verdict:  {}", line(m.verdict.as_deref().unwrap_or("none"))).unwrap();
    match &m.stopped {
        Some(st) => writeln!(s, "stopped:  {}", line(st)).unwrap(),
        None => writeln!(s, "status:   {}", crate::bundle::manifest::UNFINISHED).unwrap(),
    }
    writeln!(s, "\nrungs:").unwrap();
    for r in &m.rungs {
        let exit = r.exit_text();
        writeln!(s, "  {:<16} {:<12} {:>8.1} s  {}", r.rung, r.status, r.duration_s, exit).unwrap();
        for n in &r.notes {
            writeln!(s, "      note: {}", short(&line(n), 160)).unwrap();
        }
    }
    writeln!(s, "\nfiles:").unwrap();
    for (f, bytes, fate) in files {
        let tag = fate.short().map(|why| format!("  ({why}: left out by `bundle pack`)")).unwrap_or_default();
        writeln!(s, "  {:>10}  {}{tag}", human(*bytes), line(&leaves::shown(f))).unwrap();
    }
    if m.redactions.is_empty() {
        writeln!(s, "\nredactions: none").unwrap();
    } else {
        writeln!(s, "\nredactions ({}; values are not kept):", m.redactions.len()).unwrap();
        for r in &m.redactions {
            writeln!(s, "  {}: {}", line(&r.place), line(&r.what)).unwrap();
        }
    }
    s
}

/// `bundle show --json`: the bundle as `render_show` tells it, as one object (docs/bundles.md).
pub fn render_show_json(path: &Path, m: &Manifest, files: &[(String, u64, Fate)]) -> String {
    #[derive(serde::Serialize)]
    struct Rung<'a> {
        rung: String,
        dir: &'a str,
        status: &'a str,
        duration_s: f64,
        exit: Option<String>,
        notes: &'a [String],
    }
    #[derive(serde::Serialize)]
    struct File<'a> {
        path: Cow<'a, str>,
        bytes: u64,
        coredump: bool,
        left_out: Option<&'static str>,
    }
    #[derive(serde::Serialize)]
    struct Redaction<'a> {
        place: &'a str,
        what: &'a str,
    }
    #[derive(serde::Serialize)]
    struct Show<'a> {
        path: String,
        recipe: &'a str,
        recipe_source: Option<&'a str>,
        created: &'a str,
        tool: &'a str,
        version: &'a str,
        verdict: Option<&'a str>,
        stopped: Option<&'a str>,
        /// Whether the run that wrote it ended ([`Manifest::finished`]).
        finished: bool,
        rungs: Vec<Rung<'a>>,
        files: Vec<File<'a>>,
        redactions: Vec<Redaction<'a>>,
    }
    let show = Show {
        path: path.display().to_string(),
        // JSON escapes a newline: the value as the manifest holds it.
        recipe: m.recipe.get("name").and_then(|v| v.as_str()).unwrap_or("?"),
        recipe_source: m.recipe.get("source").and_then(|v| v.as_str()),
        created: &m.created,
        tool: &m.tool,
        version: &m.version,
        verdict: m.verdict.as_deref(),
        stopped: m.stopped.as_deref(),
        finished: m.finished(),
        rungs: m
            .rungs
            .iter()
            .map(|r| {
                let exit = r.exit_text();
                Rung {
                    rung: r.rung.to_string(),
                    dir: &r.dir,
                    status: r.status.name(),
                    duration_s: r.duration_s,
                    exit: (exit != "-").then_some(exit),
                    notes: &r.notes,
                }
            })
            .collect(),
        files: files
            .iter()
            .map(|(f, bytes, fate)| File {
                path: leaves::shown(f),
                bytes: *bytes,
                coredump: matches!(fate, Fate::Left { coredump: true, .. }),
                left_out: match fate {
                    Fate::Left { why, .. } => Some(why),
                    _ => None,
                },
            })
            .collect(),
        redactions: m.redactions.iter().map(|r| Redaction { place: &r.place, what: &r.what }).collect(),
    };
    serde_json::to_string_pretty(&show).expect("the bundle serialises") + "\n"
}

/// The report of a bundle directory.
pub fn report_of(path: &Path) -> Result<String> {
    let m = Bundle::load(path)?;
    // `debug-ima ablate`'s parent bundle: its conclusion is the report (each run's bundle,
    // under it, has its own).
    let ablation = path.join(layout::ABLATION_MD);
    if ablation.is_file() {
        let text = read_tail(&ablation, 256 * 1024)
            .with_context(|| format!("cannot read `{}`", ablation.display()))?;
        return Ok(report::render_ablation(&m, &text));
    }
    let analysis = crate::bundle::inputs::analyze(&[path.to_path_buf()])?;
    let mut env_lines = Vec::new();
    // `git describe` only when it succeeded (outside a checkout it prints `fatal: ...`).
    let described_file = layout::env_file(layout::GIT_DESCRIBE);
    let described =
        m.collected.iter().any(|c| c.stdout == described_file && c.exit == Some(crate::model::Exit::Code(0)));
    if described {
        if let Ok(t) = read_tail(&path.join(&described_file), 64 * 1024) {
            if let Some(first) = t.lines().next().filter(|l| !l.trim().is_empty()) {
                env_lines.push(("source (`git describe`)".to_string(), first.trim().to_string()));
            }
        }
    }
    // The logs a reader of the issue needs: what the target and cuda-gdb printed, and a
    // build's only when it failed; not cuobjdump's listing of the binary.
    let mut logs = Vec::new();
    for r in &m.rungs {
        for c in &r.commands {
            let wanted = match c.role.name() {
                "cuobjdump" => false,
                "build" => c.exit != Some(crate::model::Exit::Code(0)),
                _ => true,
            };
            if !wanted {
                continue;
            }
            for log in [&c.stdout, &c.stderr] {
                if logs.iter().any(|(p, _): &(String, String)| p == log) {
                    continue;
                }
                if let Ok(t) = read_tail(&path.join(log), 256 * 1024) {
                    logs.push((log.clone(), t));
                }
            }
        }
    }
    if m.rungs.is_empty() {
        bail!(
            "`{}` has no rungs yet: the run stopped before the baseline; see its {}",
            path.display(),
            layout::MANIFEST
        );
    }
    let reproducer = reproducer_of(path);
    let inputs = crate::bundle::user_data::inputs_in(path, Some(&m));
    Ok(report::render(&ReportInput {
        manifest: &m,
        analysis: &analysis,
        env_lines,
        logs,
        reproducer,
        inputs,
    }))
}

/// The repro rung's result and script (`repro/result.json`, `repro/repro.py`), when the run
/// wrote them; a result that does not read is left out of the report.
fn reproducer_of(bundle: &Path) -> Option<(crate::findings::repro::Outcome, Option<String>)> {
    let dir = bundle.join(layout::repro_dir());
    let text = crate::files::read_bounded(&dir.join(layout::REPRO_RESULT), 1 << 20).ok()?;
    let outcome: crate::findings::repro::Outcome = serde_json::from_str(&text).ok()?;
    // The file the result names (`repro/repro.py`, `repro/repro_driver.cu`), inside the bundle.
    let script = outcome
        .script
        .as_deref()
        .and_then(|s| Path::new(s).file_name())
        .and_then(|name| crate::files::read_bounded(&dir.join(name), 8 << 20).ok());
    Some((outcome, script))
}

/// The last `max` bytes of a file, from a line start, lossily decoded; a received bundle's
/// FIFO or device is refused ([`crate::files::open_regular`]), not waited on.
fn read_tail(p: &Path, max: u64) -> std::io::Result<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = crate::files::open_regular(p)?;
    let len = f.metadata()?.len();
    let start = len.saturating_sub(max);
    f.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf)?;
    let from = if start > 0 { memchr::memchr(b'\n', &buf).map(|i| i + 1).unwrap_or(0) } else { 0 };
    Ok(String::from_utf8_lossy(&buf[from..]).into_owned())
}

fn short(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        s.chars().take(max - 1).collect::<String>() + "…"
    }
}

/// `bundle pack --anonymize`: the bundle copied with its names replaced
/// ([`crate::bundle::anonymize`]) into a scratch folder beside the archive, packed from there,
/// the copy removed; what was replaced, for the user (on this terminal only: the names are
/// the user's own).
fn pack_anonymized(
    path: &Path,
    m: &Manifest,
    archive: &Path,
    opts: &PackOptions,
    stop: &dyn Fn() -> bool,
) -> Result<(archive::Packed, String)> {
    use crate::bundle::anonymize::{self, Names};
    let canon = std::fs::canonicalize(path).with_context(|| {
        format!("cannot read the bundle {}; check the path (`ls bundles/`)", path.display())
    })?;
    let top = canon.file_name().map(PathBuf::from).context("the bundle has no folder name")?;
    let parent = archive.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let scratch = parent.join(format!(".debug-ima-anonymize-{}", std::process::id()));
    let _gone = archive::RemoveDir::new(&scratch);
    let texts = anonymize::texts_of(path);
    let here = std::fs::read_to_string("/proc/sys/kernel/hostname").ok();
    let names = Names::find(
        texts.values().map(String::as_str),
        m.host.get("hostname").map(String::as_str),
        std::env::var("HOME").ok().as_deref(),
        std::env::var("USER").ok().as_deref(),
        here.as_deref().map(str::trim),
    );
    let copy = scratch.join(&top);
    let done = anonymize::copy(path, &copy, &texts, &names).with_context(|| {
        format!("cannot write the anonymized copy in {}; check the space there", parent.display())
    })?;
    let p = archive::pack_until(&copy, archive, opts, stop)
        .with_context(|| format!("cannot pack the anonymized copy of `{}`", path.display()))?;
    let mut said = String::new();
    let pairs: Vec<String> = names
        .homes
        .iter()
        .chain(&names.users)
        .chain(&names.hosts)
        .map(|(f, t)| format!("`{}` -> `{t}`", ui::safe(f, true)))
        .collect();
    writeln!(
        said,
        "anonymized: {} replacement(s) in {} files ({}); the bundle itself is unchanged",
        done.replaced,
        done.files,
        if pairs.is_empty() { "no home, user or host name found".to_string() } else { pairs.join(", ") }
    )
    .unwrap();
    if !done.binary.is_empty() {
        let names: Vec<String> = done.binary.iter().map(|n| line(&leaves::shown(n))).collect();
        writeln!(said, "copied as they are (not text, so not anonymized): {}", names.join(", ")).unwrap();
    }
    Ok((p, said))
}

#[cfg(test)]
mod tests {
    use super::*;

    // The verdict `bundle list` showed for the GPU suite's oob_read bundle
    // (tests/fixtures/bundles/oob_read-full/manifest.yaml).
    const VERDICT: &str =
        "illegal-address in `gather_rows(float const*, long long const*, float*, int)` at oob_read.cu:8";

    /// At a terminal's width the verdict fits without losing its class or its kernel's name
    /// (issue 41: at 60 columns `bundle list` showed `illegal-address in `scat…int)``): the
    /// parameters go first, then the `file:line` moves to a line of its own, its folders cut.
    #[test]
    fn a_fitted_verdict_keeps_its_class_kernel_and_file_and_line() {
        assert_eq!(fit_verdict(VERDICT, 200), [VERDICT]);
        assert_eq!(fit_verdict(VERDICT, 60), ["illegal-address in `gather_rows(…)` at oob_read.cu:8"]);
        let narrow = fit_verdict(VERDICT, 40);
        assert_eq!(narrow, ["illegal-address in `gather_rows(…)`", "at oob_read.cu:8"]);
        let long = "illegal-address in `scatter_rows(float*, int const*, int)` at \
                    /work/main/tests/gpu/programs/unchecked_launch.cu:20";
        let fitted = fit_verdict(long, 56);
        assert_eq!(fitted, ["illegal-address in `scatter_rows(…)`", "at …/unchecked_launch.cu:20"]);
        assert!(fitted.iter().all(|l| l.chars().count() <= 56), "{fitted:?}");
        // A name longer than the room is left whole.
        let huge = format!("trap in `{}` at k.cu:1", "k".repeat(80));
        assert!(fit_verdict(&huge, 30)[0].contains(&"k".repeat(80)));
    }

    #[test]
    fn list_columns_line_up_and_nothing_is_cut_without_a_width() {
        let bundles = [
            ("2026-11-30T10-33-54Z", "gpu-suite-python", 28_877, None),
            ("2026-11-30T10-34-30Z", "cuda", 330_444, Some(VERDICT)),
        ]
        .map(|(created, recipe, bytes, verdict)| Listed {
            path: PathBuf::from(format!("bundles/{created}_{recipe}")),
            created: created.into(),
            recipe: recipe.into(),
            verdict: verdict.map(String::from),
            bytes,
        });
        let text = render_list(&bundles, Path::new("bundles"), None);
        let rows: Vec<&str> = text.lines().filter(|l| !l.starts_with("    ")).collect();
        assert_eq!(rows.len(), 3, "{text}");
        let at = |l: &str| l.find("bundles/").or_else(|| l.find("path")).unwrap();
        assert!(rows.iter().all(|r| at(r) == at(rows[0])), "ragged:\n{text}");
        assert!(text.contains(&format!("    {VERDICT}\n")), "{text}");
        assert!(text.contains("    no verdict\n"), "{text}");
        // At 60 columns every line fits, the class and the kernel's name whole.
        let narrow = render_list(&bundles, Path::new("bundles"), Some(60));
        assert!(narrow.lines().all(|l| l.chars().count() <= 60), "{narrow}");
        assert!(narrow.contains("illegal-address in `gather_rows(…)`"), "{narrow}");
        assert!(narrow.contains("at oob_read.cu:8\n"), "{narrow}");
        assert!(narrow.contains("bundles/2026-11-30T10-34-30Z_cuda\n"), "{narrow}");
    }
}

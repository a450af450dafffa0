//! `cargo xtask analyze [--json] PATH...`: reads logs, XML reports or whole directories
//! (a bundle, a folder of logs), recognises each file's tool from its content, and
//! renders the verdict and the grouped findings.
//!
//! Reading files and walking directories happens here; parsing is `findings`' job and
//! printing is `ui`'s: [`render_text`] and [`render_json`] return strings.

use std::fmt::Write as _;
use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::findings::{
    names,
    scan::{scan_reader, EMPTY, NOT_RECOGNISED},
    verdict::{decide, Analysis},
    Evidence, Fault, Frame,
};

/// Collects the files to read: each path as given, directories walked in sorted order.
/// Hidden files and directories (`.git`) are skipped inside directories.
pub fn collect_inputs(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).with_context(|| {
            format!("cannot read `{}`: check the path (a log, an XML report or a directory)", p.display())
        })?;
        if meta.is_dir() && p.join("manifest.yaml").is_file() && p.join("rungs").is_dir() {
            // A bundle: the rungs' logs and reports, not the bundle's own files.
            for entry in walkdir::WalkDir::new(p.join("rungs")).sort_by_file_name() {
                let entry = entry.with_context(|| format!("cannot walk `{}`", p.display()))?;
                if entry.file_type().is_file() && is_rung_output(entry.path()) {
                    out.push(entry.into_path());
                }
            }
        } else if meta.is_dir() {
            let walker = walkdir::WalkDir::new(p)
                .sort_by_file_name()
                .into_iter()
                .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
            for entry in walker {
                let entry = entry.with_context(|| format!("cannot walk `{}`", p.display()))?;
                if entry.file_type().is_file() {
                    out.push(entry.into_path());
                }
            }
        } else {
            out.push(p.clone());
        }
    }
    if out.is_empty() {
        bail!("no files to analyze under the given paths: pass log files, XML reports or a bundle directory");
    }
    Ok(out)
}

/// True for the files of a rung folder that hold tool output: logs and XML reports (not
/// `command.txt`, not coredumps, which only cuda-gdb reads).
pub fn is_rung_output(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    name.ends_with(".log") || name.ends_with(".xml")
}

/// A short name for an input: the rung name for a file inside a bundle's
/// `rungs/NN-<rung>/` folder (`coredump`, or `coredump/cudagdb-core-1` for its other
/// files), otherwise the file name without a `.log` suffix.
pub fn origin_of(path: &Path) -> String {
    let file = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    let stem = file.strip_suffix(".log").unwrap_or(&file);
    // A tool's stderr (`cudagdb-1.stderr.log`) belongs with its stdout (`cudagdb-1.log`).
    let stem = stem.strip_suffix(".stderr").unwrap_or(stem).to_string();
    let parent = path.parent().and_then(|p| p.file_name()).map(|p| p.to_string_lossy().into_owned());
    let grand = path.parent().and_then(|p| p.parent()).and_then(|p| p.file_name());
    if let (Some(dir), Some(g)) = (parent, grand) {
        if g == "rungs" {
            let rung = match dir.split_once('-') {
                Some((n, rest)) if n.bytes().all(|b| b.is_ascii_digit()) => rest.to_string(),
                _ => dir.clone(),
            };
            return if matches!(stem.as_str(), "stdout" | "stderr" | "output") {
                rung
            } else {
                format!("{rung}/{stem}")
            };
        }
    }
    stem
}

/// Reads and scans one file.
pub fn scan_file(path: &Path) -> Result<Evidence> {
    let f = File::open(path).with_context(|| format!("cannot open `{}`", path.display()))?;
    Ok(scan_reader(f, &path.display().to_string(), &origin_of(path)))
}

/// Scans every input and merges the findings.
pub fn analyze(paths: &[PathBuf]) -> Result<Analysis> {
    let files = collect_inputs(paths)?;
    let mut evidence = Vec::with_capacity(files.len());
    for f in &files {
        evidence.push(scan_file(f)?);
    }
    Ok(decide(&evidence))
}

/// The analysis as one JSON object (`verdict`, `findings`, `symptoms`, `inputs`, ...).
pub fn render_json(a: &Analysis) -> String {
    serde_json::to_string_pretty(a).expect("analysis serialises") + "\n"
}

fn dim(d: [u32; 3]) -> String {
    format!("({},{},{})", d[0], d[1], d[2])
}

fn frame_text(f: &Frame) -> String {
    let mut s = f.function.clone().unwrap_or_else(|| "?".into());
    match (&f.file, f.line) {
        (Some(file), Some(line)) => write!(s, " at {file}:{line}").unwrap(),
        (Some(file), None) => write!(s, " in {file}").unwrap(),
        _ => {}
    }
    if let Some(m) = &f.module {
        if f.file.is_none() {
            write!(s, " in {m}").unwrap();
        }
    }
    s
}

/// `n` with thousands separators, as compute-sanitizer prints byte counts.
pub fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn fault_line(f: &Fault) -> String {
    let mut s = String::new();
    if let Some(e) = &f.error {
        s.push_str(e.as_str());
    }
    if let Some(k) = &f.kernel {
        write!(s, " in `{}`", names::compact_signature(k)).unwrap();
    }
    if let Some(l) = &f.location {
        write!(s, " at {l}").unwrap();
    }
    if f.count > 1 {
        write!(s, ", {} records", grouped(f.count)).unwrap();
    }
    match (f.block_range, f.thread_range) {
        (Some(b), Some(t)) if f.count > 1 => {
            write!(s, ", blocks {}..{}, threads {}..{}", dim(b[0]), dim(b[1]), dim(t[0]), dim(t[1])).unwrap()
        }
        _ => {
            if let Some(b) = f.block {
                write!(s, ", block {}", dim(b)).unwrap();
            }
            if let Some(t) = f.thread {
                write!(s, " thread {}", dim(t)).unwrap();
            }
        }
    }
    if let Some(d) = &f.detail {
        write!(s, " ({d})").unwrap();
    }
    s
}

/// Describes a memory access in words: `write of 4 bytes at 0x.. (__global__), 34,359,738,368
/// bytes before the nearest allocation at 0x.. of 16,384 bytes`.
pub fn access_text(a: &crate::findings::Access) -> String {
    let mut s = String::new();
    if let Some(k) = &a.kind {
        s.push_str(k);
    } else {
        s.push_str("access");
    }
    if let Some(sz) = a.size {
        write!(s, " of {sz} bytes").unwrap();
    }
    if let Some(addr) = a.address {
        write!(s, " at {addr:#x}").unwrap();
    }
    if let Some(sp) = &a.space {
        write!(s, " ({sp})").unwrap();
    }
    if let Some(n) = &a.nearest {
        write!(
            s,
            ", {} bytes {} the nearest allocation at {:#x} of {} bytes",
            grouped(n.distance),
            if n.before { "before" } else { "after" },
            n.allocation,
            grouped(n.allocation_size)
        )
        .unwrap();
    }
    s
}

/// The analysis for a human: verdict first, then the evidence, then what could not be read.
pub fn render_text(a: &Analysis) -> String {
    let mut s = String::new();
    match &a.verdict {
        Some(v) => {
            let at = match (&v.file, v.line) {
                (Some(f), Some(l)) => format!("{f}:{l}"),
                _ => "an unknown line".to_string(),
            };
            writeln!(s, "verdict: {} in `{}` at {at}", v.error.as_str(), v.kernel).unwrap();
            let mut who = Vec::new();
            if let Some(b) = v.block {
                who.push(format!("block {}", dim(b)));
            }
            if let Some(t) = v.thread {
                who.push(format!("thread {}", dim(t)));
            }
            if let Some(d) = v.device {
                who.push(format!("device {d}"));
            }
            if let Some(r) = v.rank {
                who.push(format!("rank {r}"));
            }
            if let Some(p) = v.pid {
                who.push(format!("pid {p}"));
            }
            if !who.is_empty() {
                writeln!(s, "  where:    {}", who.join(", ")).unwrap();
            }
            if let Some(acc) = &v.access {
                writeln!(s, "  access:   {}", access_text(acc)).unwrap();
            }
            if !v.inlined.is_empty() {
                let chain: Vec<String> = v.inlined.iter().map(|l| l.to_string()).collect();
                writeln!(s, "  inlined:  {}", chain.join(" <- ")).unwrap();
            }
            if let Some(h) = &v.host_frame {
                writeln!(s, "  host:     {}", frame_text(h)).unwrap();
            }
            writeln!(s, "  found by: {}", v.rungs.join(", ")).unwrap();
            for d in &v.disagreements {
                writeln!(s, "  differs:  {d}").unwrap();
            }
            for r in &v.remarks {
                writeln!(s, "  note:     {r}").unwrap();
            }
        }
        None => writeln!(s, "{}", a.conclusion).unwrap(),
    }
    if !a.symptoms.is_empty() {
        writeln!(s, "\nsymptoms (what the program reported):").unwrap();
        for sy in &a.symptoms {
            let mut line = format!("  {}: {}", sy.origin, sy.item.message);
            if let Some(e) = &sy.item.exception {
                line = format!("  {}: {e}: {}", sy.origin, sy.item.message);
            }
            if let Some(r) = &sy.item.reported_at {
                write!(line, " (reported at {r})").unwrap();
            } else if let Some(f) = sy.item.user_frame() {
                write!(line, " (raised at {})", frame_text(f)).unwrap();
            }
            if let Some(r) = sy.item.rank {
                write!(line, " [rank {r}]").unwrap();
            }
            writeln!(s, "{line}").unwrap();
        }
    }
    if !a.findings.is_empty() {
        writeln!(s, "\nfindings:").unwrap();
        for f in &a.findings {
            writeln!(s, "  {}: {}", f.origin, fault_line(&f.item)).unwrap();
        }
    }
    let mut extra = String::new();
    let unknown: Vec<&str> = a
        .inputs
        .iter()
        .filter(|i| i.tools.is_empty() && i.notes.iter().any(|n| n.starts_with(NOT_RECOGNISED)))
        .map(|i| i.origin.as_str())
        .collect();
    if !unknown.is_empty() {
        writeln!(extra, "  no known tool's output in: {}", unknown.join(", ")).unwrap();
    }
    let empty: Vec<&str> = a
        .inputs
        .iter()
        .filter(|i| i.bytes == 0 && i.notes.iter().any(|n| n.starts_with(EMPTY)))
        .map(|i| i.origin.as_str())
        .collect();
    if !empty.is_empty() {
        writeln!(extra, "  empty: {}", empty.join(", ")).unwrap();
    }
    for i in &a.inputs {
        for w in &i.waits {
            writeln!(extra, "  {}: process {} on {} waits for a debugger", i.origin, w.pid, w.host).unwrap();
        }
        for c in &i.coredumps {
            writeln!(extra, "  {}: coredump written to {}", i.origin, c.path).unwrap();
        }
        for e in &i.api_errors {
            writeln!(extra, "  {}: {} on `{}` ({}) x{}", i.origin, e.error, e.api, e.message, e.count)
                .unwrap();
        }
        if let Some(n) = i.error_summary {
            writeln!(extra, "  {}: compute-sanitizer ERROR SUMMARY: {} errors", i.origin, grouped(n))
                .unwrap();
        }
        for n in i.notes.iter().filter(|n| !n.starts_with(NOT_RECOGNISED) && !n.starts_with(EMPTY)) {
            writeln!(extra, "  {}: {n}", i.origin).unwrap();
        }
    }
    if !extra.is_empty() {
        writeln!(s, "\nalso seen:").unwrap();
        s.push_str(&extra);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        assert_eq!(origin_of(Path::new("b/rungs/04-coredump/stderr.log")), "coredump");
        assert_eq!(origin_of(Path::new("b/rungs/04-coredump/cudagdb-1.log")), "coredump/cudagdb-1");
        assert_eq!(origin_of(Path::new("fixtures/oob/memcheck.xml")), "memcheck.xml");
        assert_eq!(origin_of(Path::new("fixtures/oob/memcheck.log")), "memcheck");
    }

    #[test]
    fn thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(4096), "4,096");
        assert_eq!(grouped(34_359_738_368), "34,359,738,368");
    }
}

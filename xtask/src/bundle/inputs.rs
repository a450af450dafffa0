//! The files an analysis reads: each path as given, directories walked in sorted order, a
//! bundle through its rungs' logs and reports; each file scanned by `findings` in bounded
//! memory. Every file a user named is opened through [`open_regular`] (`crate::files`);
//! standard input (`-`) is read as a stream, like a file.
//!
//! Must not: parse (that is `findings`), render or print (`findings::render`, `ui`); or open
//! for reading anything but a regular file (a FIFO or a device would block or never end).

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::layout;

use crate::findings::{
    scan::scan_reader,
    verdict::{decide, Analysis},
    Evidence,
};

pub use crate::files::{kind_of, open_regular};

/// Collects the files to read: each path as given, directories walked in sorted order.
/// Hidden files and directories (`.git`) are skipped inside directories, and so is what is
/// not a regular file there (links, FIFOs, devices, sockets); a path given that is neither a
/// directory nor a regular file is refused.
pub fn collect_inputs(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    collect_into(paths, &mut out, &mut Vec::new())?;
    if out.is_empty() {
        bail!("{NO_FILES}");
    }
    Ok(out)
}

const NO_FILES: &str =
    "no files to analyze under the given paths: pass log files, XML reports or a bundle directory";

/// A file inside a folder given to `analyze` that was not read, and why (a note of the
/// analysis: the rest is read).
type Skipped = (PathBuf, String);

/// [`collect_inputs`] into `out`, without refusing an empty result. What a walk finds but
/// cannot read (an unreadable folder, a link, a FIFO, a folder named like a log) goes to
/// `skipped` with the reason; a path given that cannot be read is an error.
fn collect_into(paths: &[PathBuf], out: &mut Vec<PathBuf>, skipped: &mut Vec<Skipped>) -> Result<()> {
    let walk_error = |e: walkdir::Error, top: &Path| -> Skipped {
        let p = e.path().unwrap_or(top).to_path_buf();
        let why = e.io_error().map(ToString::to_string).unwrap_or_else(|| e.to_string());
        (p, format!("not read: {why}"))
    };
    for p in paths {
        let meta = std::fs::metadata(p).with_context(|| {
            format!("cannot read `{}`: check the path (a log, an XML report or a directory)", p.display())
        })?;
        if meta.is_dir() && layout::is_bundle(p) {
            // A bundle whose run did not end says so (a note of the analysis).
            if super::manifest::read(p).is_ok_and(|m| !m.finished()) {
                skipped.push((p.clone(), format!("is {}", super::manifest::UNFINISHED)));
            }
            // A bundle: the rungs' logs and reports, not the bundle's own files.
            for entry in walkdir::WalkDir::new(p.join(layout::RUNGS_DIR)).sort_by_file_name() {
                let entry = match entry {
                    Ok(e) => e,
                    Err(e) => {
                        skipped.push(walk_error(e, p));
                        continue;
                    }
                };
                if !is_rung_output(entry.path()) || entry.depth() == 0 {
                    continue;
                }
                let ft = entry.file_type();
                if ft.is_file() {
                    out.push(entry.into_path());
                } else {
                    skipped.push((entry.path().to_path_buf(), not_a_file(ft)));
                }
            }
        } else if meta.is_dir() {
            let walker = walkdir::WalkDir::new(p)
                .sort_by_file_name()
                .into_iter()
                .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
            for entry in walker {
                let entry = match entry {
                    Ok(e) => e,
                    Err(e) => {
                        skipped.push(walk_error(e, p));
                        continue;
                    }
                };
                let ft = entry.file_type();
                if ft.is_file() {
                    out.push(entry.into_path());
                } else if !ft.is_dir() {
                    skipped.push((entry.path().to_path_buf(), not_a_file(ft)));
                }
            }
        } else if meta.is_file() {
            out.push(p.clone());
        } else {
            bail!(
                "cannot read `{}`: it is {}, not a file: pass log files, XML reports or a bundle directory",
                p.display(),
                kind_of(meta.file_type())
            );
        }
    }
    Ok(())
}

/// Why an entry of a walked folder is not read: what it is.
fn not_a_file(ft: std::fs::FileType) -> String {
    let why = if ft.is_symlink() { "links are not followed" } else { "only regular files are read" };
    format!("not read: it is {}, not a regular file ({why})", kind_of(ft))
}

/// True for the files of a rung folder that hold tool output: logs, XML reports and JSON
/// dumps (the NCCL flight recorder's; what is inside is recognised by content, not by name);
/// not `command.txt`, not coredumps, which only cuda-gdb reads; not what a JIT build wrote into
/// the rebuild's fresh build folders (`jit/`: `.ninja_log`, FlashInfer's logs).
pub fn is_rung_output(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    // The per-rank views (`ranks/rank-N.stderr.log`) are copies of the combined logs.
    let copy = path.parent().and_then(|p| p.file_name()).is_some_and(|p| p == super::ranks::RANKS_DIR);
    !copy
        && !layout::is_jit_build(path)
        && (name.ends_with(".log") || name.ends_with(".xml") || name.ends_with(".json"))
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
        if g == layout::RUNGS_DIR {
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

/// The last non-blank line of a log (read from its last 64 KiB; cut at 300 characters), for
/// quoting a program's own error; `None` when there is none or it cannot be read.
pub fn last_line(path: &Path) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = open_regular(path).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(64 * 1024))).ok()?;
    let mut tail = Vec::new();
    f.take(64 * 1024).read_to_end(&mut tail).ok()?;
    let text = String::from_utf8_lossy(&tail);
    let line = text.lines().map(str::trim).rfind(|l| !l.is_empty())?;
    Some(line.chars().take(300).collect())
}

/// Reads and scans one file.
pub fn scan_file(path: &Path) -> Result<Evidence> {
    let f = open_regular(path).with_context(|| format!("cannot open `{}`", path.display()))?;
    // Names from the file system go on one line (a folder named `x\nverdict: FORGED` must
    // not forge a line of the analysis or the summary).
    let one = |v: &str| crate::ui::safe(v, true).into_owned();
    let mut ev = scan_reader(f, &one(&path.display().to_string()), &one(&origin_of(path)));
    ev.launch_blocking = launch_blocking(path);
    ev.group = bundle_of(path).map(|b| one(&b.display().to_string()));
    Ok(ev)
}

/// The evidence of a file that could not be read: no findings, a note naming it and why.
fn unread(path: &Path, why: String) -> Evidence {
    let one = |v: &str| crate::ui::safe(v, true).into_owned();
    let mut ev = Evidence::new(one(&path.display().to_string()), one(&origin_of(path)));
    ev.notes.push(format!("`{}` {}", one(&path.display().to_string()), one(&why)));
    ev.group = bundle_of(path).map(|b| one(&b.display().to_string()));
    ev
}

/// The bundle a file of a rung folder (`<bundle>/rungs/NN-<rung>/FILE`) belongs to.
pub fn bundle_of(path: &Path) -> Option<&Path> {
    let rung_dir = path.parent()?;
    let rungs = rung_dir.parent()?;
    (rungs.file_name()? == layout::RUNGS_DIR).then(|| rungs.parent()).flatten()
}

/// Whether the run that wrote `path` had `CUDA_LAUNCH_BLOCKING=1`: its rung folder's
/// `command.txt` (the target's command) sets it; a loose recording counts when it is named
/// after the rung (`launch-blocking.log`, as tests/gpu/record.sh names it).
pub fn launch_blocking(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if name.starts_with(crate::model::RungId::LaunchBlocking.name()) {
        return true;
    }
    let Some(dir) = path.parent() else { return false };
    let Ok(mut f) = open_regular(&dir.join(layout::COMMAND)) else { return false };
    // The command is one line; its head holds the environment.
    let mut head = Vec::new();
    if f.by_ref().take(64 * 1024).read_to_end(&mut head).is_err() {
        return false;
    }
    String::from_utf8_lossy(&head).split_whitespace().any(|w| w == "CUDA_LAUNCH_BLOCKING=1")
}

/// Scans every input and merges the findings.
pub fn analyze(paths: &[PathBuf]) -> Result<Analysis> {
    analyze_with_stdin(paths, None)
}

/// The path that stands for standard input among `analyze`'s paths.
pub const STDIN: &str = "-";

/// [`analyze`], where a path `-` ([`STDIN`]) is `stdin`, read as a stream (a log of any size
/// is never held whole) and named `stdin`. Without a `stdin`, `-` is a file of that name.
pub fn analyze_with_stdin(paths: &[PathBuf], mut stdin: Option<&mut dyn Read>) -> Result<Analysis> {
    let mut evidence = Vec::new();
    let mut read_stdin = false;
    let mut files = Vec::new();
    for p in paths {
        if p.as_os_str() == STDIN && stdin.is_some() {
            if read_stdin {
                bail!("`-` (standard input) is given twice: it can be read once");
            }
            read_stdin = true;
            files.push(None);
        } else {
            files.push(Some(p.clone()));
        }
    }
    for f in files {
        match f {
            None => {
                let input = stdin.as_mut().expect("stdin was given");
                evidence.push(scan_reader(input, STDIN, "stdin"));
            }
            Some(p) => {
                let mut found = Vec::new();
                let mut skipped = Vec::new();
                collect_into(std::slice::from_ref(&p), &mut found, &mut skipped)?;
                for file in found {
                    // One file that cannot be opened or read is a note; the rest is read.
                    match scan_file(&file) {
                        Ok(ev) => evidence.push(ev),
                        Err(e) => skipped.push((file, format!("not read: {}", e.root_cause()))),
                    }
                }
                skipped.sort();
                for (file, why) in skipped {
                    evidence.push(unread(&file, why));
                }
            }
        }
    }
    if evidence.is_empty() {
        bail!("{NO_FILES}");
    }
    Ok(decide(&evidence))
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
}

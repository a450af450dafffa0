//! The false-positive measure: every text recorded under `tests/fixtures/` (real cuda-gdb,
//! compute-sanitizer, nvcc, PyTorch and Triton output from an H200, the bundles `debug-ima`
//! wrote, transcripts) goes through the redactor, whole and line by line as `process` writes a
//! log, and must come out byte for byte: every line it would change is listed.
//!
//! Must not: hold a token-shaped literal; skip a fixture that is text.

use super::line::*;
use super::structured::*;

/// Lines of recorded fixtures the redactor may change, each with the reason (none today).
const EXCEPTIONS: &[(&str, &str)] = &[];

#[test]
fn no_recorded_fixture_changes_under_redaction() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    let (mut files, mut lines, mut changed) = (0, 0usize, Vec::new());
    for e in walkdir::WalkDir::new(&root).into_iter().flatten().filter(|e| e.file_type().is_file()) {
        let Ok(text) = std::fs::read_to_string(e.path()) else { continue };
        let rel = e.path().strip_prefix(&root).unwrap().display().to_string();
        files += 1;
        let mut out = Vec::new();
        let whole = redact_text(&text, &rel, &mut out);
        let mut stream = Lines::new();
        for (n, line) in text.lines().enumerate() {
            lines += 1;
            let (red, labels) = stream.line(line);
            if red != line && !EXCEPTIONS.iter().any(|(p, l)| rel == *p && line.contains(l)) {
                changed.push(format!("{rel}:{}: {labels:?}\n  {line}\n  {red}", n + 1));
            }
        }
        let mut marks = Vec::new();
        candidates(text.as_bytes(), &mut marks);
        if (whole != text || !marks.is_empty()) && changed.is_empty() {
            changed.push(format!("{rel}: changed as a whole ({out:?}) or a candidate at {marks:?}"));
        }
    }
    eprintln!("{files} fixtures, {lines} lines, {} changed", changed.len());
    assert!(files > 100 && lines > 10_000, "{files} files, {lines} lines");
    assert!(
        changed.is_empty(),
        "{} of {lines} lines of {files} fixtures changed:\n{}",
        changed.len(),
        changed.join("\n")
    );
}

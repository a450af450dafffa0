//! The bundles on disk, for `bundle list`, `rm` and `prune`: which folders under a root are
//! bundles (newest first), a bundle's files with their sizes, and sizes in words.
//!
//! Must not: change or remove anything, print, or run processes.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::bundle::Bundle;

/// One bundle of `bundle list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub path: PathBuf,
    pub created: String,
    pub recipe: String,
    /// The manifest's one-line verdict; `None` when the run gave none.
    pub verdict: Option<String>,
    pub bytes: u64,
}

/// The bundles directly under `root` (folders with a readable `manifest.yaml`), newest first.
pub fn list(root: &Path) -> Result<Vec<Listed>> {
    let entries = match std::fs::read_dir(root) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot list `{}`", root.display())),
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        if !path.is_dir() {
            continue;
        }
        let Ok(m) = Bundle::load(&path) else { continue };
        let bytes = files(&path).map(|f| f.iter().map(|(_, b)| b).sum()).unwrap_or(0);
        out.push(Listed {
            created: m.created.clone(),
            recipe: m.recipe_name().to_string(),
            verdict: m.verdict.clone(),
            bytes,
            path,
        });
    }
    out.sort_by(|a, b| b.created.cmp(&a.created).then_with(|| b.path.cmp(&a.path)));
    Ok(out)
}

/// Every regular file of a bundle, relative and sorted, with its size.
pub fn files(dir: &Path) -> Result<Vec<(String, u64)>> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let e = e.with_context(|| format!("cannot walk `{}`", dir.display()))?;
        if e.file_type().is_file() {
            let rel = e.path().strip_prefix(dir).unwrap_or(e.path()).display().to_string();
            out.push((rel, e.metadata().map(|m| m.len()).unwrap_or(0)));
        }
    }
    Ok(out)
}

/// `1.5 MiB`.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

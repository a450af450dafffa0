//! `bundle rm` and `bundle prune`: removing bundles the user no longer needs. Only folders that
//! are bundles (a readable `manifest.yaml`) are removed, never anything else a path names; a
//! bundle that may still be written (no `SHA256SUMS` yet, its manifest changed in the last
//! hour: a climb that runs) is kept by `prune` and named.
//!
//! Must not: remove anything that is not a bundle, remove without saying what and how much, or
//! choose exit numbers.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context, Result};

use super::bundle_files::{files, human, list, Listed};
use crate::bundle::{layout, Bundle};

/// A bundle's manifest changed this recently and it has no `SHA256SUMS`: it may be a climb's
/// that still runs.
const IN_USE: Duration = Duration::from_secs(3600);

/// What `prune` chose.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pruning {
    pub remove: Vec<PathBuf>,
    pub kept: usize,
    /// Kept because they may still be written: their paths.
    pub in_use: Vec<PathBuf>,
}

/// `7d`, `12h`, `30m`, `90s`, `1d12h`, or a number of days ([`crate::model::duration::secs`]).
pub fn parse_age(s: &str) -> Result<Duration> {
    let s = s.trim();
    match crate::model::duration::secs(s, 86_400) {
        Some(secs) => Ok(Duration::from_secs(secs)),
        None => bail!("`{s}` is no age (or too long a one): write it as 7d, 12h, 30m or 90s"),
    }
}

/// Chooses what `prune` removes from `bundles` (newest first, as `bundle list` gives them): all
/// but the newest `keep`, and with `older_than` every one older than it too; never one
/// `in_use` says may still be written.
pub fn choose(
    bundles: &[Listed],
    keep: usize,
    older_than: Option<Duration>,
    now: SystemTime,
    in_use: impl Fn(&Path) -> bool,
) -> Pruning {
    let mut p = Pruning::default();
    for (i, b) in bundles.iter().enumerate() {
        let old = older_than.is_some_and(|age| {
            crate::bundle::writer::parse_utc_stamp(&b.created)
                .is_some_and(|t| now.duration_since(t).unwrap_or_default() > age)
        });
        if i < keep && !old {
            p.kept += 1;
        } else if in_use(&b.path) {
            p.in_use.push(b.path.clone());
        } else {
            p.remove.push(b.path.clone());
        }
    }
    p
}

/// Whether a bundle may still be written: no `SHA256SUMS` and a manifest changed within the hour.
pub fn may_be_running(dir: &Path) -> bool {
    if dir.join(layout::SUMS).exists() {
        return false;
    }
    let changed = std::fs::metadata(dir.join(layout::MANIFEST)).and_then(|m| m.modified());
    changed.is_ok_and(|t| SystemTime::now().duration_since(t).unwrap_or_default() < IN_USE)
}

/// Removes one bundle after checking that it is one; returns its size.
pub fn remove(dir: &Path) -> Result<u64> {
    Bundle::load(dir).with_context(|| {
        format!("`{}` is not a bundle (no readable {}): not removed", dir.display(), layout::MANIFEST)
    })?;
    let bytes = files(dir).map(|f| f.iter().map(|(_, b)| b).sum()).unwrap_or(0);
    std::fs::remove_dir_all(dir)
        .with_context(|| format!("cannot remove `{}`: check its permissions", dir.display()))?;
    Ok(bytes)
}

/// `bundle prune`: the report of what was (or, `dry_run`, would be) removed.
pub fn prune(root: &Path, keep: usize, older_than: Option<Duration>, dry_run: bool) -> Result<String> {
    let bundles = list(root)?;
    let p = choose(&bundles, keep, older_than, SystemTime::now(), may_be_running);
    let mut s = String::new();
    let mut total = 0u64;
    for dir in &p.remove {
        // `list` measured each bundle already.
        let listed = bundles.iter().find(|b| &b.path == dir).map_or(0, |b| b.bytes);
        let bytes = if dry_run { listed } else { remove(dir)? };
        total += bytes;
        s.push_str(&format!(
            "{} {} ({})\n",
            if dry_run { "would remove" } else { "removed" },
            crate::ui::safe(&dir.display().to_string(), true),
            human(bytes)
        ));
    }
    for dir in &p.in_use {
        s.push_str(&format!(
            "kept {}: it has no {} yet and changed within the hour (a run may still write it); `bundle rm` removes it\n",
            crate::ui::safe(&dir.display().to_string(), true),
            layout::SUMS
        ));
    }
    s.push_str(&format!(
        "{} {} bundle(s), {}; kept {} under `{}`{}\n",
        if dry_run { "would remove" } else { "removed" },
        p.remove.len(),
        human(total),
        p.kept + p.in_use.len(),
        crate::ui::safe(&root.display().to_string(), true),
        if dry_run { " (`--dry-run`: nothing was removed)" } else { "" }
    ));
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(created: &str) -> Listed {
        Listed {
            path: PathBuf::from(format!("/b/{created}_demo")),
            created: created.into(),
            recipe: "demo".into(),
            verdict: None,
            bytes: 1,
        }
    }

    #[test]
    fn ages_are_parsed_and_nonsense_refused_with_the_forms() {
        assert_eq!(parse_age("7d").unwrap(), Duration::from_secs(7 * 86_400));
        assert_eq!(parse_age("3").unwrap(), Duration::from_secs(3 * 86_400));
        assert_eq!(parse_age("12h").unwrap(), Duration::from_secs(12 * 3600));
        assert_eq!(parse_age("90s").unwrap(), Duration::from_secs(90));
        for bad in ["", "d", "7w", "-1d", "99999999999999999999d", "1.5d"] {
            assert!(parse_age(bad).unwrap_err().to_string().contains("7d, 12h"), "{bad}");
        }
    }

    #[test]
    fn prune_keeps_the_newest_and_what_may_still_run() {
        let bundles: Vec<Listed> =
            ["2026-12-02T08-00-00Z", "2026-12-01T08-00-00Z", "2026-11-01T08-00-00Z", "2026-10-01T08-00-00Z"]
                .map(listed)
                .to_vec();
        let now = crate::bundle::writer::parse_utc_stamp("2026-12-02T09-00-00Z").unwrap();
        let p = choose(&bundles, 2, None, now, |_| false);
        assert_eq!(p.kept, 2);
        assert_eq!(p.remove, [bundles[2].path.clone(), bundles[3].path.clone()]);
        // Older than 7 days goes even within the newest `keep`.
        let p = choose(&bundles, 10, Some(Duration::from_secs(7 * 86_400)), now, |_| false);
        assert_eq!(p.remove, [bundles[2].path.clone(), bundles[3].path.clone()]);
        let p = choose(&bundles, 0, None, now, |d| d == bundles[0].path);
        assert_eq!(p.in_use, [bundles[0].path.clone()]);
        assert_eq!(p.remove.len(), 3);
    }
}

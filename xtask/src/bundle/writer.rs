//! The bundle as the ladder writes it: created with its folders, the manifest rewritten after
//! every change (with `replay.sh` beside it), texts the tool made written redacted, the
//! analysis (`findings.json`, `summary.md`) after every rung.
//!
//! Must not: run processes, decide policy, or write anything unredacted (logs come redacted
//! from the runner; what the tool writes goes through [`Bundle::write_file`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::layout;
use super::manifest::{CommandRecord, ContainerRecord, FileRecord, Manifest, RungRecord};
use super::recorded::recorded_environment;
use crate::findings::render::{render_json, render_text};
use crate::findings::verdict::Analysis;
use crate::model::RungId;
use crate::redact::{redact_json, Redaction};

/// An open bundle directory, written as the ladder goes: every change to the manifest goes
/// through a method, and the methods that record something write the manifest again.
pub struct Bundle {
    root: PathBuf,
    manifest: Manifest,
}

/// `2026-11-30T10-04-05Z` from seconds since the epoch (UTC; `-` instead of `:` so the
/// name is valid everywhere).
pub fn utc_stamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}-{m:02}-{d:02}T{:02}-{:02}-{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// The time a [`utc_stamp`] names (a bundle's `created`); `None` for anything else.
pub fn parse_utc_stamp(s: &str) -> Option<std::time::SystemTime> {
    let b = s.as_bytes();
    if b.len() != 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b'-'
        || b[16] != b'-'
        || b[19] != b'Z'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Howard Hinnant's days_from_civil, the inverse of the civil_from_days above.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = u64::try_from(days * 86_400 + hh * 3600 + mm * 60 + ss).ok()?;
    Some(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
}

fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

impl Bundle {
    /// Creates `<root>/<UTC time>_<recipe>/` (with a numeric suffix if it exists). The folder
    /// is claimed atomically (`mkdir`, which fails if it exists): two runs started at once never
    /// share one, and an existing folder is never reused. The recipe is recorded redacted
    /// ([`redact_json`]).
    pub fn create(root: &Path, recipe: &str, recipe_value: &serde_json::Value) -> Result<Bundle> {
        let stamp = utc_stamp(now_secs());
        let safe: String = recipe
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
            .collect();
        std::fs::create_dir_all(root).with_context(|| {
            format!("cannot create the bundle root `{}`: choose another with `--bundle-dir`", root.display())
        })?;
        // Absolute: commands get paths into the bundle (the coredump pattern, `--save`) and
        // may run in another working directory.
        let root = &std::path::absolute(root)
            .with_context(|| format!("cannot resolve the bundle root `{}`", root.display()))?;
        let mut dir = root.join(format!("{stamp}_{safe}"));
        let mut n = 1;
        loop {
            match std::fs::create_dir(&dir) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 10_000 => {
                    n += 1;
                    dir = root.join(format!("{stamp}_{safe}-{n}"));
                }
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!(
                            "cannot create the bundle `{}`: choose another root with `--bundle-dir`",
                            dir.display()
                        )
                    })
                }
            }
        }
        for sub in [layout::RUNGS_DIR, layout::ENV_DIR] {
            std::fs::create_dir_all(dir.join(sub))
                .with_context(|| format!("cannot create `{}`", dir.display()))?;
        }
        let mut host = BTreeMap::new();
        if let Ok(h) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
            host.insert("hostname".into(), h.trim().to_string());
        }
        if let Ok(os) = std::fs::read_to_string("/etc/os-release") {
            if let Some(p) = os.lines().find_map(|l| l.strip_prefix("PRETTY_NAME=")) {
                host.insert("os".into(), p.trim_matches('"').to_string());
            }
        }
        if let Ok(k) = std::fs::read_to_string("/proc/sys/kernel/osrelease") {
            host.insert("kernel".into(), k.trim().to_string());
        }
        let mut redactions = Vec::new();
        let recipe = redact_json(recipe_value, "recipe", &mut redactions);
        let environment = recorded_environment(
            std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
            &mut redactions,
        );
        let manifest = Manifest {
            tool: crate::ui::tool_name(),
            version: env!("CARGO_PKG_VERSION").into(),
            created: stamp,
            root: dir.display().to_string(),
            recipe,
            host,
            versions: BTreeMap::new(),
            environment,
            container: None,
            redactions,
            plan: Vec::new(),
            collected: Vec::new(),
            notes: Vec::new(),
            rungs: Vec::new(),
            stopped: None,
            verdict: None,
        };
        let b = Bundle { root: dir, manifest };
        b.write_manifest()?;
        Ok(b)
    }

    /// The bundle's folder (absolute).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The manifest so far.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// `rungs/NN-<rung>/`, created.
    pub fn rung_dir(&self, index: usize, rung: RungId, attempt: usize) -> Result<PathBuf> {
        let d = self.root.join(layout::rung_dir(index, rung, attempt));
        std::fs::create_dir_all(&d).with_context(|| format!("cannot create `{}`", d.display()))?;
        Ok(d)
    }

    /// Writes `SHA256SUMS`, reusing the hashes the manifest has of every rung's files (taken
    /// as each rung ended). Done last, so that `bundle verify` can tell later edits (also
    /// after Ctrl-C).
    pub fn seal(&self) -> Result<()> {
        let known = self
            .manifest()
            .rungs
            .iter()
            .flat_map(|r| &r.files)
            .map(|f| (f.path.clone(), (f.bytes, f.sha256.clone())))
            .collect();
        super::archive::write_sums_reusing(self.root(), &known).map(|_| ())
    }

    /// Removes the bundle from disk (`watch` of a job in which nothing happened).
    pub fn discard(self) -> Result<()> {
        std::fs::remove_dir_all(&self.root)
            .with_context(|| format!("cannot remove `{}`", self.root.display()))
    }

    /// A path relative to the bundle root, for the manifest.
    pub fn rel(&self, p: &Path) -> String {
        p.strip_prefix(&self.root).unwrap_or(p).display().to_string()
    }

    /// Lists the files of a rung folder, sorted, with their sizes and hashes.
    pub fn files_of(&self, dir: &Path) -> Vec<FileRecord> {
        let mut out = Vec::new();
        for e in walkdir::WalkDir::new(dir).sort_by_file_name().into_iter().flatten() {
            if e.file_type().is_file() {
                let bytes = e.metadata().map(|m| m.len()).unwrap_or(0);
                let sha256 = super::archive::sha256_file(e.path()).unwrap_or_default();
                out.push(FileRecord { path: self.rel(e.path()), bytes, sha256 });
            }
        }
        out
    }

    /// The tools' versions doctor found, and the plan, before the first rung.
    pub fn start(&mut self, versions: BTreeMap<String, String>, plan: Vec<RungId>) -> Result<()> {
        self.manifest.versions = versions;
        self.manifest.plan = plan;
        self.write_manifest()
    }

    /// The container every rung runs in.
    pub fn set_container(&mut self, record: ContainerRecord) -> Result<()> {
        self.manifest.container = Some(record);
        self.write_manifest()
    }

    /// A rung's record, once it has ended (or was skipped).
    pub fn push_rung(&mut self, record: RungRecord) -> Result<()> {
        self.manifest.rungs.push(record);
        self.write_manifest()
    }

    /// What a `collect` command ran, and a note about it when it failed.
    pub fn push_collected(&mut self, record: CommandRecord, note: Option<String>) -> Result<()> {
        self.manifest.collected.push(record);
        self.manifest.notes.extend(note);
        self.write_manifest()
    }

    /// Why the ladder stopped (written with the analysis that follows).
    pub fn set_stopped(&mut self, why: String) {
        self.manifest.stopped = Some(why);
    }

    /// Adds redactions to the manifest's list (kept sorted and without repeats).
    pub fn note_redactions(&mut self, found: impl IntoIterator<Item = Redaction>) {
        self.manifest.redactions.extend(found);
        self.manifest.redactions.sort();
        self.manifest.redactions.dedup();
    }

    /// Writes a text the tool made (not a log) into the bundle, redacted.
    pub fn write_file(&mut self, rel: &str, text: &str) -> Result<()> {
        let mut found = Vec::new();
        let text = crate::redact::redact_text(text, rel, &mut found);
        self.note_redactions(found);
        self.write_raw(rel, &text)
    }

    /// Writes whole or not at all ([`super::archive::write_atomic`]): the manifest rewritten
    /// on a full disk keeps its last version.
    fn write_raw(&self, rel: &str, text: &str) -> Result<()> {
        let path = self.root.join(rel);
        if let Some(dir) = path.parent().filter(|d| !d.exists()) {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create `{}`", dir.display()))?;
        }
        super::archive::write_atomic(&path, text.as_bytes())
    }

    /// Writes `manifest.yaml` and `replay.sh` (both built from the redacted records).
    pub fn write_manifest(&self) -> Result<()> {
        let text = serde_yaml::to_string(&self.manifest).context("cannot serialise the manifest")?;
        self.write_raw(layout::MANIFEST, &text)?;
        let replay = self.root.join(layout::REPLAY);
        super::archive::write_atomic(&replay, super::replay::script(&self.manifest).as_bytes())?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&replay, std::fs::Permissions::from_mode(0o755))
            .with_context(|| format!("cannot make `{}` executable", replay.display()))
    }

    /// Reads a bundle's manifest ([`super::manifest::read`]: bounded, a received bundle is not
    /// trusted).
    pub fn load(dir: &Path) -> Result<Manifest> {
        super::manifest::read(dir)
    }

    /// Writes the analysis so far: `findings.json` and `summary.md`, then the manifest.
    pub fn write_analysis(&mut self, a: &Analysis) -> Result<()> {
        self.manifest.verdict = a.verdict.as_ref().map(|_| a.conclusion.clone());
        // The generated and cached sources the verdict names, so that the bundle stands alone.
        let found = super::sources::keep(&self.root, a, &super::sources::Roots::from_env());
        self.note_redactions(found);
        // Both are built from logs that were redacted as they were written.
        self.write_raw(layout::FINDINGS, &render_json(a))?;
        self.write_raw(layout::SUMMARY, &summary_md(&self.manifest, a))?;
        self.write_manifest()
    }
}

/// The bundle's `summary.md`: verdict, the rungs with what each did, the full analysis.
pub fn summary_md(m: &Manifest, a: &Analysis) -> String {
    let mut s = String::new();
    writeln!(s, "# debug-ima: {}\n", m.recipe_name()).unwrap();
    match &a.verdict {
        Some(_) => writeln!(s, "**Verdict:** {}\n", crate::ui::safe(&a.conclusion, true)).unwrap(),
        None => writeln!(
            s,
            "**No verdict:** {}\n",
            crate::ui::safe(a.conclusion.trim_start_matches("no verdict: "), true)
        )
        .unwrap(),
    }
    if let Some(st) = &m.stopped {
        writeln!(s, "Stopped: {}\n", crate::ui::safe(st, true)).unwrap();
    }
    writeln!(s, "| rung | status | time | exit |").unwrap();
    writeln!(s, "|---|---|---|---|").unwrap();
    for r in &m.rungs {
        let exit = r.exit_text();
        writeln!(s, "| {} | {} | {:.1} s | {} |", r.rung, r.status, r.duration_s, exit).unwrap();
    }
    writeln!(s, "\n## Analysis\n\n```text\n{}```", render_text(a)).unwrap();
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_started_at_once_never_share_a_bundle() {
        let root = std::env::temp_dir().join(format!("xtask-bundles-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let value = serde_json::json!({"name": "t"});
        let dirs: Vec<PathBuf> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| Bundle::create(&root, "t", &value).unwrap().root().to_path_buf()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut unique = dirs.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 8, "{dirs:?}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// A bundle where no rung ran (each skipped, or stopped before the first): its summary
    /// says nothing was looked at, not that no fault was seen, and suggests no command (issue 41:
    /// it said "no CUDA error and no device fault was seen" and named the sweep's command).
    #[test]
    fn the_summary_of_a_bundle_where_nothing_ran_claims_nothing() {
        let root = std::env::temp_dir().join(format!("xtask-nothing-ran-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let mut b = Bundle::create(&root, "t", &serde_json::json!({"name": "t"})).unwrap();
        b.write_analysis(&crate::findings::verdict::decide(&[])).unwrap();
        let summary = std::fs::read_to_string(b.root().join(layout::SUMMARY)).unwrap();
        assert!(summary.contains("**No verdict:** nothing was looked at (no rung ran"), "{summary}");
        assert!(!summary.contains("was seen") && !summary.contains("cargo xtask"), "{summary}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn stamps() {
        assert_eq!(utc_stamp(0), "1970-01-01T00-00-00Z");
        assert_eq!(utc_stamp(1_796_031_885), "2026-11-30T09-44-45Z");
        assert_eq!(utc_stamp(951_782_400), "2000-02-29T00-00-00Z");
    }
}

//! `bundle verify`: a bundle folder or archive checked against its `SHA256SUMS` (and an
//! archive against its `.sha256`), naming every changed, missing or extra file.
//!
//! Must not: write anything; open anything outside the bundle but the archive's `.sha256`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, Read};
use std::path::Path;

use anyhow::{anyhow, bail, Result};
use sha2::{Digest, Sha256};

use crate::bundle::inputs::open_regular;

use super::read::{read_up_to, scan, Limits, Visit};
use super::shared::{
    compression_of, parse_left_out, parse_sums, read_capped, sha256_file, sha256_hex, with_suffix, BUF,
    LEFT_OUT, LIST_MAX, SIDECAR_MAX, SUMS,
};

/// What `verify` found. Paths are relative to the bundle root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verification {
    /// Files listed in `SHA256SUMS`.
    pub checked: usize,
    /// Listed files whose content differs (or that are no longer regular files).
    pub changed: Vec<String>,
    /// Listed files that are not there.
    pub missing: Vec<String>,
    /// Regular files (or anything else) that are neither listed nor in `LEFT_OUT.tsv`.
    pub extra: Vec<String>,
    /// Files in `LEFT_OUT.tsv` (left out of an archive; a directory may hold them).
    pub left_out: Vec<String>,
    /// For an archive with a `<archive>.sha256` beside it: whether the archive matches it.
    pub archive_sum: Option<bool>,
}

impl Verification {
    pub fn ok(&self) -> bool {
        self.changed.is_empty()
            && self.missing.is_empty()
            && self.extra.is_empty()
            && self.archive_sum != Some(false)
    }
}

/// Compares the files found (path → hash; `None` for something that is not a regular file)
/// with the lists.
pub(super) fn compare(
    sums: &[(String, String)],
    left: &[String],
    found: &BTreeMap<String, Option<String>>,
    extra_sum_file: impl Fn(&str) -> bool,
) -> Verification {
    let mut v = Verification { checked: sums.len(), ..Verification::default() };
    let listed: BTreeSet<&str> = sums.iter().map(|(p, _)| p.as_str()).collect();
    let left_set: BTreeSet<&str> = left.iter().map(String::as_str).collect();
    for (path, want) in sums {
        match found.get(path) {
            None => v.missing.push(path.clone()),
            Some(Some(got)) if got == want => {}
            Some(_) => v.changed.push(path.clone()),
        }
    }
    for path in found.keys() {
        if !listed.contains(path.as_str()) && !left_set.contains(path.as_str()) && !extra_sum_file(path) {
            v.extra.push(path.clone());
        }
    }
    v.left_out = left_set.iter().map(|s| s.to_string()).collect();
    v.changed.sort();
    v.missing.sort();
    v
}

pub(super) fn verify_dir(dir: &Path) -> Result<Verification> {
    let sums_path = dir.join(SUMS);
    match fs::symlink_metadata(&sums_path) {
        Err(_) => bail!(
            "{} has no {SUMS}: the run did not finish, or the bundle was written by hand; \
             `cargo xtask bundle pack {}` writes one",
            dir.display(),
            dir.display()
        ),
        Ok(m) if !m.is_file() => {
            bail!("{} is not a regular file; get a fresh copy of the bundle", sums_path.display())
        }
        Ok(_) => {}
    }
    let sums = parse_sums(&read_capped(&sums_path, LIST_MAX)?, SUMS)?;
    let left_path = dir.join(LEFT_OUT);
    let left = match fs::symlink_metadata(&left_path) {
        Err(_) => Vec::new(),
        Ok(m) if !m.is_file() => {
            bail!("{} is not a regular file; get a fresh copy of the bundle", left_path.display())
        }
        Ok(_) => parse_left_out(&read_capped(&left_path, LIST_MAX)?, LEFT_OUT)?,
    };
    let listed: BTreeSet<&str> = sums.iter().map(|(p, _)| p.as_str()).collect();
    let mut found = BTreeMap::new();
    let mut entries =
        walkdir::WalkDir::new(dir).min_depth(1).follow_links(false).sort_by_file_name().into_iter();
    while let Some(entry) = entries.next() {
        let entry = entry.map_err(|e| {
            anyhow!("cannot read {}: {e}; check permissions", e.path().unwrap_or(dir).display())
        })?;
        let ft = entry.file_type();
        // A name no list can hold is looked for as `LEFT_OUT.tsv` names it: a folder so named
        // stands for everything under it.
        let rel = match super::shared::rel_of(dir, entry.path()) {
            Ok(rel) => rel,
            Err(listed) => {
                if ft.is_dir() {
                    entries.skip_current_dir();
                }
                found.insert(listed, None);
                continue;
            }
        };
        if ft.is_dir() {
            continue;
        }
        let hash = if ft.is_file() && listed.contains(rel.as_str()) {
            Some(sha256_file(entry.path())?)
        } else if ft.is_file() {
            Some(String::new())
        } else {
            None
        };
        found.insert(rel, hash);
    }
    Ok(compare(&sums, &left, &found, |p| p == SUMS))
}

/// Hashes every file of an archive without writing anything.
#[derive(Default)]
pub(super) struct Hasher {
    found: BTreeMap<String, Option<String>>,
    sums: Option<Vec<u8>>,
    left: Option<Vec<u8>>,
    /// The read buffer, shared by every file (not 1 MiB zeroed per entry).
    buf: Vec<u8>,
}

impl Visit for Hasher {
    fn top(&mut self, _top: &str) -> Result<()> {
        Ok(())
    }

    fn dir(&mut self, _rel: &str) -> Result<()> {
        Ok(())
    }

    fn file(&mut self, rel: &str, _exec: bool, data: &mut dyn Read) -> Result<u64> {
        let keep = rel == SUMS || rel == LEFT_OUT;
        let mut kept = Vec::new();
        let mut h = Sha256::new();
        if self.buf.is_empty() {
            self.buf = vec![0u8; BUF];
        }
        let buf = &mut self.buf;
        let mut n = 0u64;
        loop {
            let got = match data.read(buf) {
                Ok(0) => break,
                Ok(got) => got,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            h.update(&buf[..got]);
            n += got as u64;
            if keep {
                if n > LIST_MAX {
                    bail!("`{rel}` in the archive is over {} MiB; it is not a bundle's list", LIST_MAX >> 20);
                }
                kept.extend_from_slice(&buf[..got]);
            }
        }
        if rel == SUMS {
            self.sums = Some(kept);
        } else if rel == LEFT_OUT {
            self.left = Some(kept);
        }
        self.found.insert(rel.to_string(), Some(sha256_hex(h)));
        Ok(n)
    }
}

pub(super) fn verify_archive(archive: &Path) -> Result<Verification> {
    let sidecar = with_suffix(archive, ".sha256");
    let expected = if fs::symlink_metadata(&sidecar).is_ok() {
        let text = read_capped(&sidecar, SIDECAR_MAX)?;
        let text = String::from_utf8_lossy(&text);
        let line = text.lines().next().unwrap_or("");
        let hash = line
            .get(..64)
            .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
            .filter(|_| line[64..].starts_with("  ") || line[64..].starts_with(" *"))
            .ok_or_else(|| {
                anyhow!(
                    "{} is not a `sha256sum` line (`<sha256>  <file>`); remove it or get a fresh copy",
                    sidecar.display()
                )
            })?;
        Some(hash.to_ascii_lowercase())
    } else {
        None
    };
    let mut hasher = Hasher::default();
    let scan =
        scan(archive, &Limits::default(), expected.is_some(), "it was not checked", &mut hasher, &|| false)?;
    let Some(sums) = hasher.sums.take() else {
        bail!(
            "{} has no {}/{SUMS}: it was not written by `cargo xtask bundle pack`; unpack it and \
             run `cargo xtask bundle pack DIR` to write one",
            archive.display(),
            scan.top
        );
    };
    let sums = parse_sums(&sums, SUMS)?;
    let left = match hasher.left.take() {
        Some(l) => parse_left_out(&l, LEFT_OUT)?,
        None => Vec::new(),
    };
    let mut v = compare(&sums, &left, &hasher.found, |p| p == SUMS);
    v.archive_sum = expected.map(|want| scan.sha256.as_deref() == Some(want.as_str()));
    Ok(v)
}

/// Checks a bundle directory, or a `.tar.zst` (recognised by its content), against its
/// `SHA256SUMS`; for an archive with `<archive>.sha256` beside it, checks the archive too.
/// Reads only: nothing is written, and nothing outside the bundle is opened.
pub fn verify(path: &Path) -> Result<Verification> {
    let meta = fs::metadata(path).map_err(|e| {
        anyhow!(
            "cannot read {}: {e}; pass a bundle folder or a .tar.zst written by `bundle pack`",
            path.display()
        )
    })?;
    if meta.is_dir() {
        return verify_dir(path);
    }
    let mut magic = [0u8; 4];
    let mut f = open_regular(path).map_err(|e| {
        anyhow!(
            "cannot read {}: {e}; pass a bundle folder or a .tar.zst written by `bundle pack`",
            path.display()
        )
    })?;
    let got = read_up_to(&mut f, &mut magic).map_err(|e| anyhow!("cannot read {}: {e}", path.display()))?;
    if compression_of(&magic[..got]).is_some() {
        verify_archive(path)
    } else {
        bail!(
            "{} is neither a bundle folder nor a .tar.zst or .tar.gz (no zstd or gzip magic number); pass \
             a folder under `bundles/` or an archive written by `cargo xtask bundle pack`",
            path.display()
        )
    }
}

/// The terminal text for a verification: one line per problem (`changed  PATH`, `missing  PATH`,
/// `extra    PATH`), the left-out files, and a final `ok: ...` or `FAILED: ...` line.
pub fn render_verification(v: &Verification, what: &Path) -> String {
    let mut s = String::new();
    // A name that holds a secret is shown redacted, as in a log.
    let shown = |p: &str| crate::bundle::leaves::shown(p).escape_debug().to_string();
    for (label, list) in [("changed", &v.changed), ("missing", &v.missing), ("extra", &v.extra)] {
        for p in list {
            s.push_str(&format!("{label:<9}{}\n", shown(p)));
        }
    }
    for p in &v.left_out {
        s.push_str(&format!("{:<9}{} (listed in {LEFT_OUT})\n", "left out", shown(p)));
    }
    let sidecar = format!("{}.sha256", what.file_name().map(|n| n.to_string_lossy()).unwrap_or_default());
    if v.archive_sum == Some(false) {
        s.push_str(&format!("{:<9}{} does not match {sidecar}\n", "archive", what.display()));
    }
    let noun = |n: usize| if n == 1 { "file" } else { "files" };
    if v.ok() {
        s.push_str(&format!("ok: {} {} match {SUMS} in {}", v.checked, noun(v.checked), what.display()));
        if !v.left_out.is_empty() {
            s.push_str(&format!("; {} left out, listed in {LEFT_OUT}", v.left_out.len()));
        }
        if v.archive_sum == Some(true) {
            s.push_str(&format!("; the archive matches {sidecar}"));
        }
        s.push('\n');
    } else {
        let mut parts = Vec::new();
        for (label, list) in [("changed", &v.changed), ("missing", &v.missing), ("extra", &v.extra)] {
            if !list.is_empty() {
                parts.push(format!("{} {label}", list.len()));
            }
        }
        if v.archive_sum == Some(false) {
            parts.push(format!("the archive does not match {sidecar}"));
        }
        s.push_str(&format!(
            "FAILED: {}: {} (of {} {} in {SUMS}); it was changed after it was written: get a fresh copy\n",
            what.display(),
            parts.join(", "),
            v.checked,
            noun(v.checked)
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_lines() {
        let h = "a".repeat(64);
        let ok = format!("{h}  a/b\n{}  c\n", "B".repeat(64));
        let p = parse_sums(ok.as_bytes(), SUMS).unwrap();
        assert_eq!(p, vec![("a/b".to_string(), h.clone()), ("c".to_string(), "b".repeat(64))]);
        for bad in [
            format!("{h} a\n"),
            format!("{}  a\n", "g".repeat(64)),
            format!("{h}  ../a\n"),
            format!("{h}  /etc/passwd\n"),
            format!("{h}  a//b\n"),
            format!("{h}  a\n{h}  a\n"),
            "short  a\n".to_string(),
        ] {
            let e = parse_sums(bad.as_bytes(), SUMS).unwrap_err().to_string();
            assert!(e.contains("line "), "{e}");
        }
        let e = parse_sums(format!("{h}  a\n\n").as_bytes(), SUMS).unwrap_err().to_string();
        assert!(e.contains("line 2"), "{e}");
    }

    #[test]
    fn left_out_lines() {
        let p = parse_left_out(b"rungs/04-coredump/core_x\t12\tcoredump: why\n", LEFT_OUT).unwrap();
        assert_eq!(p, vec!["rungs/04-coredump/core_x"]);
        assert!(parse_left_out(b"a\tx\twhy\n", LEFT_OUT).unwrap_err().to_string().contains("line 1"));
        assert!(parse_left_out(b"a\t1\tw\n../b\t1\tw\n", LEFT_OUT)
            .unwrap_err()
            .to_string()
            .contains("line 2"));
    }

    #[test]
    fn render_ok_and_failed() {
        let v = Verification {
            checked: 3,
            left_out: vec!["rungs/04-coredump/core_h.1.2".into()],
            archive_sum: Some(true),
            ..Verification::default()
        };
        assert!(v.ok());
        assert_eq!(
            render_verification(&v, Path::new("b.tar.zst")),
            "left out rungs/04-coredump/core_h.1.2 (listed in LEFT_OUT.tsv)\n\
             ok: 3 files match SHA256SUMS in b.tar.zst; 1 left out, listed in LEFT_OUT.tsv; \
             the archive matches b.tar.zst.sha256\n"
        );
        let bad = Verification {
            checked: 3,
            changed: vec!["rungs/01-baseline/stderr.log".into()],
            missing: vec!["env/doctor.txt".into()],
            extra: vec!["notes.txt".into()],
            archive_sum: Some(false),
            ..Verification::default()
        };
        assert!(!bad.ok());
        assert_eq!(
            render_verification(&bad, Path::new("b.tar.zst")),
            "changed  rungs/01-baseline/stderr.log\n\
             missing  env/doctor.txt\n\
             extra    notes.txt\n\
             archive  b.tar.zst does not match b.tar.zst.sha256\n\
             FAILED: b.tar.zst: 1 changed, 1 missing, 1 extra, the archive does not match \
             b.tar.zst.sha256 (of 3 files in SHA256SUMS); it was changed after it was written: get a fresh copy\n"
        );
        let only_sum = Verification { checked: 1, archive_sum: Some(false), ..Verification::default() };
        assert!(!only_sum.ok());
    }
}

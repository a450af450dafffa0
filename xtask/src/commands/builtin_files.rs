//! The built-in files for an installed tool whose clone is gone: the recipes' (the demo's
//! source with them, [`recipe::EMBEDDED`]) and the container files ([`images::EMBEDDED`]),
//! written from the copies embedded in the binary into their cache folders
//! ([`recipe::cached_builtin_dir`], [`images::cached_containers_dir`], siblings under
//! `$XDG_CACHE_HOME/debug-ima/VERSION-COMMIT/`) before a command reads them, so that
//! `debug-ima --recipe demo` builds the demo's source and `debug-ima container build cuda`
//! builds the image from there.
//!
//! Must not: write anywhere but those cache folders, overwrite a file that is already there
//! with the same content, or write into a clone's folder (where the clone's folder is the one
//! used, nothing is written).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::launch::images;
use crate::recipe;

/// Writes `files` (path relative to `dir`, content) into `dir` where one is missing or
/// differs, each through a temporary name and a rename; how many it wrote.
pub fn write_into(dir: &Path, files: &[(&str, &str)]) -> Result<usize> {
    let mut wrote = 0;
    for (rel, text) in files {
        let path = dir.join(rel);
        if fs::read(&path).is_ok_and(|b| b == text.as_bytes()) {
            continue;
        }
        let parent = path.parent().unwrap_or(dir);
        fs::create_dir_all(parent).with_context(|| {
            format!("cannot create {} for the built-in files; check that it is writable", parent.display())
        })?;
        let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
        fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
        fs::rename(&tmp, &path).with_context(|| format!("cannot write {}", path.display()))?;
        wrote += 1;
    }
    Ok(wrote)
}

/// `dir`, filled with `files` when it is the cache folder `cached` (a clone's is left alone).
fn fill(dir: PathBuf, cached: Option<PathBuf>, files: &[(&str, &str)]) -> Result<PathBuf> {
    if Some(&dir) == cached.as_ref() {
        write_into(&dir, files)?;
    }
    Ok(dir)
}

/// Makes sure the built-in recipes' folder holds their files: a no-op where it is a clone's
/// `recipes/`; the cache folder filled where the recipes would be read from it.
pub fn ensure() -> Result<()> {
    fill(recipe::builtin_dir(), recipe::cached_builtin_dir(), &recipe::EMBEDDED).map(drop)
}

/// The folder the images are built from ([`images::containers_dir`]), holding their files:
/// a clone's `containers/` as it is, the cache folder filled from the embedded copies.
pub fn ensure_containers() -> Result<PathBuf> {
    fill(images::containers_dir(), images::cached_containers_dir(), &images::EMBEDDED)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both sets: written byte for byte as the clone has them, then not again.
    #[test]
    fn the_embedded_files_are_the_clone_s_and_are_written_once() {
        let sets: [(&str, &[(&str, &str)]); 2] =
            [("recipes", &recipe::EMBEDDED), ("containers", &images::EMBEDDED)];
        for (sub, files) in sets {
            let dir = std::env::temp_dir().join(format!("builtin-files-{sub}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            assert_eq!(write_into(&dir, files).unwrap(), files.len());
            let clone = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join(sub);
            for (rel, _) in files {
                assert_eq!(
                    fs::read(dir.join(rel)).unwrap(),
                    fs::read(clone.join(rel)).unwrap(),
                    "{sub}/{rel}"
                );
            }
            assert_eq!(write_into(&dir, files).unwrap(), 0, "nothing changed, nothing written");
            let (last, _) = files[files.len() - 1];
            fs::write(dir.join(last), "changed").unwrap();
            assert_eq!(write_into(&dir, files).unwrap(), 1);
            let _ = fs::remove_dir_all(&dir);
        }
    }
}

//! The built-in recipes' files for an installed tool whose clone is gone: written from the
//! copies embedded in the binary ([`recipe::EMBEDDED`]) into its cache folder
//! ([`recipe::cached_builtin_dir`]) before a command reads a built-in recipe, so that
//! `debug-ima --recipe demo` builds the demo's source from there.
//!
//! Must not: write anywhere but that cache folder, overwrite a file that is already there with
//! the same content, or fail a command that needs no built-in file (an error is returned only
//! when the folder is the one the recipes will use).

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use crate::recipe;

/// Writes the embedded files into `dir` where one is missing or differs, each through a
/// temporary name and a rename; how many it wrote.
pub fn write_into(dir: &Path) -> Result<usize> {
    let mut wrote = 0;
    for (rel, text) in recipe::EMBEDDED {
        let path = dir.join(rel);
        if fs::read(&path).is_ok_and(|b| b == text.as_bytes()) {
            continue;
        }
        let parent = path.parent().unwrap_or(dir);
        fs::create_dir_all(parent).with_context(|| {
            format!("cannot create {} for the built-in recipes; check that it is writable", parent.display())
        })?;
        let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
        fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
        fs::rename(&tmp, &path).with_context(|| format!("cannot write {}", path.display()))?;
        wrote += 1;
    }
    Ok(wrote)
}

/// Makes sure the built-in recipes' folder holds their files: a no-op where it is a clone's
/// `recipes/`; the cache folder filled where the recipes would be read from it.
pub fn ensure() -> Result<()> {
    let dir = recipe::builtin_dir();
    if Some(&dir) == recipe::cached_builtin_dir().as_ref() {
        write_into(&dir)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_files_are_the_clone_s_and_are_written_once() {
        let dir = std::env::temp_dir().join(format!("builtin-files-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        assert_eq!(write_into(&dir).unwrap(), recipe::EMBEDDED.len());
        let clone = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join("recipes");
        for (rel, _) in recipe::EMBEDDED {
            assert_eq!(fs::read(dir.join(rel)).unwrap(), fs::read(clone.join(rel)).unwrap(), "{rel}");
        }
        assert_eq!(write_into(&dir).unwrap(), 0, "nothing changed, nothing written");
        fs::write(dir.join("demo/ima_demo.cu"), "changed").unwrap();
        assert_eq!(write_into(&dir).unwrap(), 1);
        let _ = fs::remove_dir_all(&dir);
    }
}

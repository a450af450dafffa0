//! Where the tool's built-in files are read from: a folder of the clone (`recipes/`,
//! `containers/`), found from the current directory upwards or beside this crate, else, for
//! an installed tool whose clone is gone, its cache folder
//! (`$XDG_CACHE_HOME/debug-ima/VERSION-COMMIT/<folder>`), which `commands::builtin_files`
//! fills from the copies embedded in the binary before use.
//!
//! Must not: read or write files (it only asks whether a file is there), spawn or print.

use std::path::{Path, PathBuf};

use super::types::EMBEDDED;

/// The folder `sub` of this repository: found by looking for `sub/marker` from the current
/// directory upwards, else beside this crate (the clone it was built from) when every one of
/// `files` (paths relative to the folder, as embedded) is there, else its cache folder
/// ([`cache_dir`]).
pub fn clone_or_cache_dir(sub: &str, marker: &str, files: &[(&str, &str)]) -> PathBuf {
    if let Ok(cwd) = std::env::current_dir() {
        for dir in cwd.ancestors() {
            let candidate = dir.join(sub);
            if candidate.join(marker).is_file() {
                return candidate;
            }
        }
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let beside = manifest.parent().unwrap_or(manifest).join(sub);
    if files.iter().all(|(rel, _)| beside.join(rel).is_file()) {
        return beside;
    }
    cache_dir(sub).unwrap_or(beside)
}

/// Where an installed tool keeps the built-in folder `sub` when its clone is gone:
/// `$XDG_CACHE_HOME/debug-ima/VERSION-COMMIT/<sub>` (or `~/.cache/...`); `None` without a
/// home.
pub fn cache_dir(sub: &str) -> Option<PathBuf> {
    let base =
        std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()).map(PathBuf::from).or_else(|| {
            std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".cache"))
        })?;
    let version = concat!(env!("CARGO_PKG_VERSION"), "-", env!("XTASK_COMMIT"));
    let version: String =
        version.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' { c } else { '-' }).collect();
    Some(base.join("debug-ima").join(version).join(sub))
}

/// `{recipe_dir}` of the built-in recipes: the repository's `recipes/` (`recipes/demo.yaml`
/// marks it), else the cache folder ([`cached_builtin_dir`]); see [`clone_or_cache_dir`].
pub fn builtin_dir() -> PathBuf {
    clone_or_cache_dir("recipes", "demo.yaml", &EMBEDDED)
}

/// Where an installed tool keeps the built-in recipes' files when its clone is gone:
/// `$XDG_CACHE_HOME/debug-ima/VERSION-COMMIT/recipes` (or `~/.cache/...`).
pub fn cached_builtin_dir() -> Option<PathBuf> {
    cache_dir("recipes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_folders_are_siblings_under_one_version() {
        let (Some(recipes), Some(containers)) = (cached_builtin_dir(), cache_dir("containers")) else {
            return; // no home: nothing to compare
        };
        assert_eq!(recipes.parent(), containers.parent());
        assert!(
            recipes.ends_with("recipes") && containers.ends_with("containers"),
            "{recipes:?} {containers:?}"
        );
        assert!(recipes.parent().unwrap().parent().unwrap().ends_with("debug-ima"), "{recipes:?}");
    }
}

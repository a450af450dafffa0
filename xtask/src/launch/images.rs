//! The project's images' files: the folder `container build` builds from (the clone's
//! `containers/`, else, for an installed tool whose clone is gone, its cache folder
//! `$XDG_CACHE_HOME/debug-ima/VERSION-COMMIT/containers`), the copies of that folder's files
//! embedded in the binary ([`EMBEDDED`], written there by `commands::builtin_files`), and the
//! name of its README that hints give the user.
//!
//! Must not: read or write files (it only asks whether a file is there), spawn or print.

use std::path::{Path, PathBuf};

use crate::recipe;

/// The folder's name in the clone.
const FOLDER: &str = "containers";

/// The files of the clone's `containers/`, by path relative to it, as this binary was built
/// with them: every Containerfile of [`super::container::IMAGES`], the README the hints name
/// and the `vllm-image` recipe docs/containers.md runs. An installed tool whose clone is gone
/// writes them into its cache folder ([`cached_containers_dir`]) and builds from there.
pub const EMBEDDED: [(&str, &str); 5] = [
    ("README.md", include_str!("../../../containers/README.md")),
    ("cuda.Containerfile", include_str!("../../../containers/cuda.Containerfile")),
    ("pytorch.Containerfile", include_str!("../../../containers/pytorch.Containerfile")),
    ("vllm.Containerfile", include_str!("../../../containers/vllm.Containerfile")),
    ("vllm-image.yaml", include_str!("../../../containers/vllm-image.yaml")),
];

/// The folder the images are built from: the repository's `containers/` (found by its
/// `cuda.Containerfile` from the current directory upwards, else beside this crate), else the
/// cache folder ([`cached_containers_dir`]); the same rule as the built-in recipes'.
pub fn containers_dir() -> PathBuf {
    recipe::clone_or_cache_dir(FOLDER, "cuda.Containerfile", &EMBEDDED)
}

/// Where an installed tool keeps the container files when its clone is gone, beside the
/// built-in recipes' cache folder.
pub fn cached_containers_dir() -> Option<PathBuf> {
    recipe::cache_dir(FOLDER)
}

/// The README that says what each image holds, as a hint names it: `containers/README.md`
/// in the clone, the full path of the cache folder's copy otherwise.
pub fn readme() -> String {
    readme_in(&containers_dir())
}

/// [`readme`] for the folder `dir` the images are built from.
pub fn readme_in(dir: &Path) -> String {
    if Some(dir) == cached_containers_dir().as_deref() {
        dir.join("README.md").display().to_string()
    } else {
        format!("{FOLDER}/README.md")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_files_are_the_clone_s_byte_for_byte_and_all_of_them() {
        let clone = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join(FOLDER);
        for (rel, text) in EMBEDDED {
            let on_disk = std::fs::read(clone.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
            assert!(on_disk == text.as_bytes(), "the embedded {rel} differs from the clone's");
        }
        // Every file of the clone's folder is embedded: a new one cannot be forgotten.
        let mut in_clone: Vec<String> = std::fs::read_dir(&clone)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        in_clone.sort();
        let mut embedded: Vec<String> = EMBEDDED.iter().map(|(rel, _)| rel.to_string()).collect();
        embedded.sort();
        assert_eq!(embedded, in_clone);
        // And every image has its Containerfile among them.
        for def in crate::launch::container::IMAGES {
            let name = format!("{}.Containerfile", def.name);
            assert!(EMBEDDED.iter().any(|(rel, _)| *rel == name), "{name} is not embedded");
        }
    }

    #[test]
    fn the_readme_is_named_by_its_real_path_only_in_the_cache() {
        assert_eq!(readme_in(Path::new("/src/debug-ima/containers")), "containers/README.md");
        if let Some(cache) = cached_containers_dir() {
            assert_eq!(readme_in(&cache), cache.join("README.md").display().to_string());
        }
    }
}

//! The sources a verdict names that live in a cache or a temporary folder (torch.compile's
//! generated kernels and output code, a JIT extension built in `TORCH_EXTENSIONS_DIR`, a
//! library's JIT cache), copied into the bundle's `sources/` so that the bundle stands alone
//! once those folders are gone or elsewhere: `sources/index.tsv` maps each original path to
//! its copy (`N-<file name>`, the name kept). Text only, redacted like every text the bundle
//! keeps, at most [`MAX_FILE`] each and [`MAX_FILES`] in all.
//!
//! Must not: copy a file from inside the bundle, read anything but a regular file, copy a file
//! twice, copy a user's own source tree (only cache and temporary folders), or fail the
//! analysis: a copy that cannot be made is a `#` line of the index saying why.

use std::path::{Path, PathBuf};

use super::layout;
use crate::findings::verdict::Analysis;
use crate::redact::Redaction;

/// The largest file copied.
pub const MAX_FILE: u64 = 4 << 20;
/// The most files copied into one bundle.
pub const MAX_FILES: usize = 64;

/// The folders whose files do not outlive the run or the machine: temporary folders and the
/// caches that compilers at run time write into.
#[derive(Debug, Clone, Default)]
pub struct Roots(Vec<String>);

/// The variables that name a cache of code compiled at run time (docs/provenance.md).
const CACHE_VARS: &[&str] = &[
    "TMPDIR",
    "XDG_CACHE_HOME",
    "TORCHINDUCTOR_CACHE_DIR",
    "TRITON_CACHE_DIR",
    "TORCH_EXTENSIONS_DIR",
    "VLLM_CACHE_ROOT",
    "CUPY_CACHE_DIR",
    "DG_JIT_CACHE_DIR",
    "FLASHINFER_WORKSPACE_BASE",
    "PYTORCH_KERNEL_CACHE_PATH",
    "TORCH_COMPILE_DEBUG_DIR",
];

impl Roots {
    /// `/tmp`, `/var/tmp`, `~/.cache`, `~/.triton`, `~/.cupy`, `~/.deep_gemm` and the folders
    /// the [`CACHE_VARS`] name, as this process sees them (the target inherits them).
    pub fn from_env() -> Roots {
        let home = std::env::var("HOME").ok().filter(|h| h.starts_with('/'));
        let mut v: Vec<String> = vec!["/tmp".into(), "/var/tmp".into(), "/dev/shm".into()];
        if let Some(h) = &home {
            for d in [".cache", ".triton", ".cupy", ".deep_gemm", ".nv/ComputeCache"] {
                v.push(format!("{}/{d}", h.trim_end_matches('/')));
            }
        }
        v.extend(CACHE_VARS.iter().filter_map(|k| std::env::var(k).ok()).filter(|p| p.starts_with('/')));
        Roots::of(v)
    }

    /// These folders (absolute; others are ignored).
    pub fn of(dirs: Vec<String>) -> Roots {
        let mut v: Vec<String> = dirs
            .into_iter()
            .filter(|d| d.starts_with('/') && d.len() > 1)
            .map(|d| d.trim_end_matches('/').to_string())
            .collect();
        v.sort();
        v.dedup();
        Roots(v)
    }

    /// Whether `path` lies in one of them (or is torch.compile's output, wherever its cache is).
    pub fn holds(&self, path: &str) -> bool {
        crate::findings::provenance::is_inductor_output(path)
            || self.0.iter().any(|r| path.strip_prefix(r.as_str()).is_some_and(|rest| rest.starts_with('/')))
    }
}

/// The files the analysis names: the verdict's line, its origin's files, its host sites, the
/// other kernels' lines and every finding's.
fn named(a: &Analysis) -> Vec<String> {
    let Some(v) = &a.verdict else { return Vec::new() };
    let mut out: Vec<String> = v.file.iter().cloned().collect();
    if let Some(o) = &v.origin {
        out.extend(o.generated.iter().map(|g| g.file.clone()));
        out.extend(o.files.iter().cloned());
        out.extend(o.built_at.iter().filter_map(|f| f.file.clone()));
    }
    for h in [&v.launch_site, &v.captured_at, &v.surfaced_at].into_iter().flatten() {
        out.extend(h.frame.file.clone());
    }
    out.extend(v.others.iter().filter_map(|o| o.file.clone()));
    // What every finding names: its line and the lines it was inlined from.
    for f in &a.findings {
        out.extend(f.item.location.iter().chain(&f.item.inlined).map(|l| l.file.clone()));
    }
    out
}

/// Copies what `a` names under `roots` into `root`'s `sources/` (what is there already is kept),
/// and returns what redaction found in the copies.
pub fn keep(root: &Path, a: &Analysis, roots: &Roots) -> Vec<Redaction> {
    let index_path = root.join(layout::SOURCES_INDEX);
    let mut index = std::fs::read_to_string(&index_path).unwrap_or_default();
    let listed = |index: &str, p: &str| {
        index.lines().any(|l| l.split('\t').next() == Some(p) || l == format!("# {p}"))
    };
    let mut found = Vec::new();
    let mut changed = false;
    let root_text = root.display().to_string();
    for p in named(a) {
        if !p.starts_with('/') || !roots.holds(&p) || p.starts_with(&root_text) || listed(&index, &p) {
            continue;
        }
        let n = index.lines().filter(|l| !l.starts_with('#')).count();
        if n >= MAX_FILES {
            break;
        }
        changed = true;
        match copy(root, &p, n + 1, &mut found) {
            Ok(rel) => index.push_str(&format!("{p}\t{rel}\n")),
            Err(why) => index.push_str(&format!("# {p}\n#   not copied: {why}\n")),
        }
    }
    if changed {
        let _ = super::archive::write_atomic(&index_path, index.as_bytes());
    }
    found
}

/// One copy, redacted: its path relative to the bundle, or why it was not made.
fn copy(root: &Path, path: &str, n: usize, found: &mut Vec<Redaction>) -> Result<String, String> {
    use std::io::Read;

    let mut f = crate::files::open_regular(Path::new(path)).map_err(|e| format!("{e:#}"))?;
    let mut bytes = Vec::new();
    f.by_ref().take(MAX_FILE + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(format!("larger than {} MiB", MAX_FILE >> 20));
    }
    let text = String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())?;
    let name = crate::findings::names::base_name(path);
    let rel =
        format!("{}/{n}-{}", layout::SOURCES_DIR, crate::ui::safe(name, true).replace(['/', '\\'], "_"));
    let text = crate::redact::redact_text(&text, &rel, found);
    let dest: PathBuf = root.join(&rel);
    if let Some(d) = dest.parent() {
        std::fs::create_dir_all(d).map_err(|e| e.to_string())?;
    }
    super::archive::write_atomic(&dest, text.as_bytes()).map_err(|e| format!("{e:#}"))?;
    Ok(rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caches_and_temporary_folders_hold_and_the_users_tree_does_not() {
        // `Roots::from_env` always holds the temporary folders.
        assert!(Roots::from_env().holds("/tmp/torchinductor_u/ab/x.py"));
        let r = Roots::of(vec!["/tmp".into(), "/home/u/.cache/".into(), "rel".into(), "/".into()]);
        assert!(r.holds("/tmp/torchinductor_u/ab/x.py"));
        assert!(r.holds("/home/u/.cache/torch_extensions/py312_cu130/op/cuda.cu"));
        assert!(!r.holds("/tmpfoo/x.py"));
        assert!(!r.holds("/home/u/src/model.py"));
        assert!(r.holds("/data/cache/j2/cj2bb7oloszmvp746xw2xvetmctsursybt4s4g7bt7r7nuxxurem.py"));
    }

    /// The recorded verdict of a torch.compile fault, its origin's files pointed at files of a
    /// cache made here: they are copied once, redacted, indexed; a file gone is said, not fatal;
    /// the user's own tree and the bundle's own files are not copied.
    #[test]
    fn the_cached_sources_a_verdict_names_are_copied_once_and_redacted() {
        let tmp = std::env::temp_dir().join(format!("debug-ima-sources-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let (cache, bundle, user) = (tmp.join("cache"), tmp.join("bundle"), tmp.join("src"));
        for d in [&cache, &bundle, &user] {
            std::fs::create_dir_all(d).unwrap();
        }
        let kernel = cache.join("k.py");
        std::fs::write(
            &kernel,
            "tmp0 = tl.load(in_ptr0)\ntoken = 'ghp_0123456789abcdefghijABCDEFGHIJ012345'\n",
        )
        .unwrap();
        std::fs::write(user.join("model.py"), "x = 1\n").unwrap();
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/bundles/real_stack/ind_write");
        let mut a = crate::bundle::inputs::analyze(&[fixture]).unwrap();
        let v = a.verdict.as_mut().unwrap();
        let o = v.origin.as_mut().unwrap();
        o.files = vec![
            kernel.display().to_string(),
            cache.join("gone.py").display().to_string(),
            user.join("model.py").display().to_string(),
            bundle.join("rungs/x.cu").display().to_string(),
        ];
        o.generated = None;
        o.built_at = None;
        v.file = None;
        let roots = Roots::of(vec![cache.display().to_string(), bundle.display().to_string()]);
        let found = keep(&bundle, &a, &roots);
        assert!(!found.is_empty(), "the token was redacted");
        let index = std::fs::read_to_string(bundle.join(layout::SOURCES_INDEX)).unwrap();
        assert!(index.starts_with(&format!("{}\tsources/1-k.py\n", kernel.display())), "{index}");
        assert!(index.contains("gone.py\n#   not copied:"), "{index}");
        assert!(!index.contains("model.py") && !index.contains("x.cu"), "{index}");
        let copy = std::fs::read_to_string(bundle.join("sources/1-k.py")).unwrap();
        assert!(copy.contains("tl.load") && !copy.contains("ghp_0123456789"), "{copy}");
        keep(&bundle, &a, &roots);
        assert_eq!(
            std::fs::read_to_string(bundle.join(layout::SOURCES_INDEX)).unwrap(),
            index,
            "copied once"
        );
        let _ = std::fs::remove_dir_all(&tmp);
    }
}

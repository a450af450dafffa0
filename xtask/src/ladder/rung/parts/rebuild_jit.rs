//! The rebuild rung's half for a Python target without a `build:` step: its kernels were
//! compiled while it ran (a `torch.utils.cpp_extension.load`/`load_inline` op, a CuPy
//! `RawKernel` through NVRTC, FlashInfer's and DeepGEMM's JIT modules), and a cached build is
//! reused as it is: `NVCC_PREPEND_FLAGS` alone does not rebuild a cached extension (ninja sees
//! no change: docs/ladder.md). So its "build" is one more armed run of the target, as the
//! baseline's, whose run-time builds go into fresh, empty folders inside the rung's folder
//! (`jit/`), with line info asked of each library: the run both rebuilds and leaves the dump,
//! read by cuda-gdb as the armed run's is. Then `cuobjdump -elf` on each extension library the
//! run built there says whether the line info is really in it.
//!
//! Must not: read, change or delete anything of the user's own caches
//! (`~/.cache/torch_extensions`, `~/.cupy/kernel_cache`, FlashInfer's and DeepGEMM's): every
//! folder the run builds into is new, inside the bundle.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};

use super::build::{target, with_options};
use super::lineinfo::{check_lineinfo, lineinfo_check, prepend_flags};
use super::{armed, dumps};
use crate::bundle::layout;
use crate::ladder::rung::api::{exec, step, Debug, Ran, RungIo, Step, StepCx, When, EXTENSION};
use crate::model::{Invocation, Role, RungId};
use crate::recipe::Resolved;

/// What the run adds to its time limit for the builds when the recipe sets no
/// `rungs.rebuild.timeout`: a chosen bound, not a measurement (on the H100 the run of
/// tests/gpu/programs/real_stack/jit_op_fault.py that built its op took 52.9 s, the armed run
/// with it cached 4.7 s; a library's JIT modules built from nothing were not measured).
pub const BUILD_MARGIN: Duration = Duration::from_secs(30 * 60);

/// The fresh build folders in the rung's [`layout::JIT_DIR`], each with the variable that
/// points the library there.
pub const FOLDERS: [(&str, &str); 4] = [
    ("TORCH_EXTENSIONS_DIR", layout::JIT_TORCH_EXTENSIONS),
    ("CUPY_CACHE_DIR", layout::JIT_CUPY),
    ("FLASHINFER_WORKSPACE_BASE", layout::JIT_FLASHINFER),
    ("DG_JIT_CACHE_DIR", layout::JIT_DEEP_GEMM),
];

/// The rung's description in this mode, at the debug level (`-G -g` under `--device-debug`).
pub fn describe(debug: Debug) -> String {
    format!(
        "rerun the target armed, its run-time builds redone with line info into fresh, empty folders in \
         the rung's folder (`jit/`): `torch.utils.cpp_extension` ops into a new TORCH_EXTENSIONS_DIR with \
         `NVCC_PREPEND_FLAGS=\"{}\"`, CuPy kernels with `CUPY_CUDA_COMPILE_WITH_DEBUG=1` into a new \
         CUPY_CACHE_DIR (their sources saved there), FlashInfer with `FLASHINFER_JIT_LINEINFO=1`, \
         DeepGEMM with `DG_JIT_WITH_LINEINFO=1`; nothing of your own caches is read, changed or \
         deleted. Then read the dump with `cuda-gdb` and check the extension libraries it built with \
         `cuobjdump` (one run, plus its builds: a minute or more)",
        debug.flags()
    )
}

/// The target's armed run in the rung's folder `dir` (launch-blocking when `blocking`), its
/// run-time builds sent to fresh folders in `dir/jit/` with line info: the rebuild's recipe
/// options apply, and its time limit is the run's plus [`BUILD_MARGIN`] unless the recipe's
/// `rungs.rebuild.timeout` says.
pub fn invocation(
    r: &Resolved,
    dir: &Path,
    blocking: bool,
    debug: Debug,
    inherited_prepend: Option<&str>,
) -> Invocation {
    let run_limit = target(r).timeout.unwrap_or(super::build::DEFAULT_RUN_TIMEOUT);
    let mut inv = armed::invocation(r, dir, blocking);
    let jit = dir.join(layout::JIT_DIR);
    for (var, folder) in FOLDERS {
        inv.set(var, jit.join(folder).display().to_string());
    }
    // nvcc, as ninja starts it for a `load()` in a folder with nothing built yet.
    inv.set("NVCC_PREPEND_FLAGS", prepend_flags(debug, inherited_prepend));
    // A compiler cache would hand back objects built without line info (as for a `build`).
    inv.set("CCACHE_DISABLE", "1");
    inv.set("SCCACHE_RECACHE", "1");
    // CuPy has no switch for line info alone: this one adds `--device-debug --generate-line-info`.
    inv.set("CUPY_CUDA_COMPILE_WITH_DEBUG", "1");
    inv.set("CUPY_CACHE_SAVE_CUDA_SOURCE", "1");
    // Kept in memory, the cache writes no source into the folder.
    inv.remove("CUPY_CACHE_IN_MEMORY");
    inv.set("FLASHINFER_JIT_LINEINFO", "1");
    inv.set("DG_JIT_WITH_LINEINFO", "1");
    let own = r.rungs.get(&RungId::Rebuild).and_then(|o| o.timeout);
    let mut inv = with_options(inv, r, RungId::Rebuild);
    inv.timeout = Some(own.map(Duration::from_secs).unwrap_or(run_limit + BUILD_MARGIN));
    inv
}

/// The run, the reading of its dumps, and the line-info check of each extension library it
/// built (a placeholder: [`EXTENSION`] under the fresh `TORCH_EXTENSIONS_DIR`).
pub fn steps(cx: &StepCx) -> Vec<Step> {
    let inv = invocation(cx.recipe, &cx.dir, cx.blocking, cx.debug, cx.inherited_prepend.as_deref());
    let mut steps = vec![Step::target(inv)];
    steps.extend(dumps::reading_steps(cx));
    let library = library_placeholder(&cx.dir);
    steps.push(
        Step::new(Role::Cuobjdump, lineinfo_check(&library), "cuobjdump-{n}").when(When::PerJitLibrary),
    );
    steps
}

/// Where [`EXTENSION`] stands in the line-info check's argument.
fn library_placeholder(dir: &Path) -> PathBuf {
    dir.join(layout::JIT_DIR).join(layout::JIT_TORCH_EXTENSIONS).join(EXTENSION)
}

/// Makes the fresh folders, runs the target, reads its dumps, checks the libraries it built and
/// says what it found: the libraries' line info, the sources CuPy saved.
pub fn run(io: &mut dyn RungIo, steps: &[Step]) -> Result<Ran> {
    let jit = io.dir().join(layout::JIT_DIR);
    for (_, folder) in FOLDERS {
        let d = jit.join(folder);
        std::fs::create_dir_all(&d).with_context(|| format!("cannot create `{}`", d.display()))?;
    }
    let started = SystemTime::now();
    let ran = exec(io, step(steps, When::Always)?)?;
    // The armed run's pipes are no files a bundle can hold.
    dumps::remove_fifos(io.dir());
    let read = dumps::read_dumps(io, steps, When::PerDump, started, ran)?;
    if io.interrupted() {
        return Ok(read);
    }
    if !read.yielded {
        io.note(dumps::no_dump_note(ran));
    }
    let lineinfo = check_libraries(io, steps)?;
    let sources = files_ending(&jit.join(layout::JIT_CUPY), layout::CUPY_SOURCE_SUFFIX);
    if !sources.is_empty() {
        io.note(format!(
            "CuPy compiled {} kernel source(s) in this run and saved them in `{}/{}/{}` (`<sha1>{}`): a line \
             such a kernel's dump names (`<sha1>{}:LINE`) is in that file",
            sources.len(),
            io.shown_dir(),
            layout::JIT_DIR,
            layout::JIT_CUPY,
            layout::CUPY_SOURCE_SUFFIX,
            layout::CUPY_SOURCE_SUFFIX
        ));
    }
    Ok(Ran { lineinfo, ..read })
}

/// `cuobjdump -elf` on each extension library the run built into the fresh
/// `TORCH_EXTENSIONS_DIR` (`<name>/<name>.so`, `<name>/<name>_v1.so`, ...), the table written and
/// a note either way: whether each has line info (`None`: it built none).
fn check_libraries(io: &mut dyn RungIo, steps: &[Step]) -> Result<Option<bool>> {
    let root = io.dir().join(layout::JIT_DIR).join(layout::JIT_TORCH_EXTENSIONS);
    let libraries = libraries_in(&root);
    let shown = format!("{}/{}/{}", io.shown_dir(), layout::JIT_DIR, layout::JIT_TORCH_EXTENSIONS);
    if libraries.is_empty() {
        io.note(format!(
            "the run built no extension library into the fresh TORCH_EXTENSIONS_DIR (`{shown}`): no \
             `torch.utils.cpp_extension` build ran, so the kernel came from elsewhere (CuPy, FlashInfer or \
             DeepGEMM, built in their own folders under `jit/`; or code built before the run, which this \
             rebuild cannot redo)"
        ));
        return Ok(None);
    }
    let per = step(steps, When::PerJitLibrary)?;
    let placeholder = library_placeholder(io.dir()).display().to_string();
    let checks: Vec<Step> = libraries
        .iter()
        .enumerate()
        .map(|(i, l)| per.filled(&placeholder, &l.display().to_string(), i + 1))
        .collect();
    let all = check_lineinfo(io, &libraries, checks.iter(), "after the rebuild of its run-time builds")?;
    if all {
        let names: Vec<String> =
            libraries.iter().map(|l| format!("`{}`", l.strip_prefix(&root).unwrap_or(l).display())).collect();
        io.note(format!(
            "the extension libraries this run built into `{shown}` carry line info (`cuobjdump -elf`, \
             `{}`): {}",
            layout::LINEINFO_TABLE,
            names.join(", ")
        ));
    }
    Ok(Some(all))
}

/// The extension libraries under a `TORCH_EXTENSIONS_DIR`: `<name>/*.so`, sorted.
fn libraries_in(root: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(root) else { return Vec::new() };
    let mut dirs: Vec<PathBuf> =
        rd.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())).map(|e| e.path()).collect();
    dirs.sort();
    dirs.iter().flat_map(|d| files_ending(d, ".so")).collect()
}

/// The regular files directly in `dir` whose names end with `suffix`, sorted.
fn files_ending(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| e.file_name().to_string_lossy().ends_with(suffix))
        .map(|e| e.path())
        .collect();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pytorch(sets: &[(&str, &str)]) -> Resolved {
        let r = crate::recipe::load("pytorch").unwrap();
        let sets = sets.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        crate::recipe::resolve_in(&r, &sets, Path::new("/work/app")).unwrap()
    }

    fn env<'a>(inv: &'a Invocation, k: &str) -> Option<&'a str> {
        inv.env_set.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }

    /// The run is the armed run with every library's JIT builds sent to a fresh folder in the
    /// rung's folder and line info asked of each; no path it gives is under the user's home or
    /// outside the rung's folder, and the rebuild's own options come last.
    #[test]
    fn the_run_builds_into_fresh_folders_in_the_rung_folder_with_line_info() {
        let r = pytorch(&[("script", "jit_op_fault.py"), ("args", "load")]);
        let dir = Path::new("/b/2026_pytorch/rungs/02-rebuild");
        let inv = invocation(&r, dir, true, Debug::LineInfo, None);
        assert_eq!(
            env(&inv, "TORCH_EXTENSIONS_DIR"),
            Some("/b/2026_pytorch/rungs/02-rebuild/jit/torch_extensions")
        );
        assert_eq!(env(&inv, "CUPY_CACHE_DIR"), Some("/b/2026_pytorch/rungs/02-rebuild/jit/cupy"));
        assert_eq!(
            env(&inv, "FLASHINFER_WORKSPACE_BASE"),
            Some("/b/2026_pytorch/rungs/02-rebuild/jit/flashinfer")
        );
        assert_eq!(env(&inv, "DG_JIT_CACHE_DIR"), Some("/b/2026_pytorch/rungs/02-rebuild/jit/deep_gemm"));
        assert_eq!(env(&inv, "NVCC_PREPEND_FLAGS"), Some("-lineinfo -g"));
        for (k, v) in [
            ("CUPY_CUDA_COMPILE_WITH_DEBUG", "1"),
            ("CUPY_CACHE_SAVE_CUDA_SOURCE", "1"),
            ("FLASHINFER_JIT_LINEINFO", "1"),
            ("DG_JIT_WITH_LINEINFO", "1"),
            ("CCACHE_DISABLE", "1"),
            ("SCCACHE_RECACHE", "1"),
        ] {
            assert_eq!(env(&inv, k), Some(v), "{k}");
        }
        assert!(inv.env_remove.iter().any(|k| k == "CUPY_CACHE_IN_MEMORY"), "{:?}", inv.env_remove);
        // Nothing under $HOME, `~` or a cache of the user's: every path is in the rung folder.
        let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
        for (k, v) in &inv.env_set {
            assert!(!v.contains('~') && !v.contains(".cache") && !v.contains(".cupy"), "{k}={v}");
            if v.starts_with('/') {
                assert!(v.starts_with(dir.to_str().unwrap()) && !v.starts_with(&home), "{k}={v}");
            }
        }
        // It is the armed run: the dump on exception and the pipe into the rung's folder,
        // faulthandler, launch-blocking as the policy says; the target's own command last.
        assert_eq!(env(&inv, "CUDA_ENABLE_COREDUMP_ON_EXCEPTION"), Some("1"));
        assert_eq!(env(&inv, "CUDA_COREDUMP_FILE"), Some("/b/2026_pytorch/rungs/02-rebuild/core_%h.%p.%t"));
        assert_eq!(env(&inv, "PYTHONFAULTHANDLER"), Some("1"));
        assert_eq!(env(&inv, "CUDA_LAUNCH_BLOCKING"), Some("1"));
        assert!(env(&invocation(&r, dir, false, Debug::LineInfo, None), "CUDA_LAUNCH_BLOCKING").is_none());
        assert_eq!(inv.argv[inv.argv.len() - 3..], ["python3", "jit_op_fault.py", "load"]);
        // The run's limit (the recipe's 900 s) plus the builds'.
        assert_eq!(inv.timeout, Some(Duration::from_secs(900) + BUILD_MARGIN));
        // `--device-debug`, and NVCC_PREPEND_FLAGS the ladder was started with, kept after ours.
        let g = invocation(&r, dir, true, Debug::Full, Some("-allow-unsupported-compiler"));
        assert_eq!(env(&g, "NVCC_PREPEND_FLAGS"), Some("-G -g -allow-unsupported-compiler"));
    }

    /// The recipe's `rungs.rebuild` options: its timeout replaces the bound, its variables come
    /// last (a user who wants a folder of their own says so there).
    #[test]
    fn the_rebuild_s_recipe_options_apply() {
        let mut r = pytorch(&[("script", "x.py")]);
        let o = crate::recipe::RungOptions {
            timeout: Some(60),
            env: [("FLASHINFER_JIT_LINEINFO".to_string(), "0".to_string())].into(),
            ..Default::default()
        };
        r.rungs.insert(RungId::Rebuild, o);
        let inv = invocation(&r, Path::new("/b/r"), false, Debug::LineInfo, None);
        assert_eq!(inv.timeout, Some(Duration::from_secs(60)));
        assert_eq!(env(&inv, "FLASHINFER_JIT_LINEINFO"), Some("0"));
    }

    /// The steps: the run, cuda-gdb on each dump (no CPU core for Python), and the line-info
    /// check of each library, whose placeholder the run fills with the library's path.
    #[test]
    fn the_steps_read_the_dump_and_check_each_library_built() {
        let r = pytorch(&[("script", "x.py")]);
        let cx = StepCx {
            recipe: &r,
            debug: Debug::LineInfo,
            dir: PathBuf::from("/b/r"),
            inherited_prepend: None,
            blocking: true,
            static_sites: None,
        };
        let steps = steps(&cx);
        let whens: Vec<When> = steps.iter().map(|s| s.when).collect();
        assert_eq!(whens, [When::Always, When::PerDump, When::PerDumpAfterCrash, When::PerJitLibrary]);
        let check = steps.last().unwrap();
        assert_eq!(check.inv.argv, ["cuobjdump", "-elf", "/b/r/jit/torch_extensions/<NAME>/<NAME>.so"]);
        let filled = check.filled(
            &library_placeholder(Path::new("/b/r")).display().to_string(),
            "/b/r/jit/torch_extensions/op/op.so",
            1,
        );
        assert_eq!(filled.inv.argv[2], "/b/r/jit/torch_extensions/op/op.so");
        assert_eq!(filled.stem, "cuobjdump-1");
    }

    #[test]
    fn the_libraries_are_the_so_files_of_each_extension_folder() {
        let root = std::env::temp_dir().join(format!("debug-ima-jit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for f in ["b_op/b_op.so", "a_op/a_op.so", "a_op/a_op_v1.so", "a_op/build.ninja", "a_op/x.cuda.o"] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, b"").unwrap();
        }
        let found: Vec<String> = libraries_in(&root)
            .iter()
            .map(|p| p.strip_prefix(&root).unwrap().display().to_string())
            .collect();
        assert_eq!(found, ["a_op/a_op.so", "a_op/a_op_v1.so", "b_op/b_op.so"]);
        assert!(libraries_in(&root.join("none")).is_empty());
        std::fs::remove_dir_all(&root).unwrap();
    }
}

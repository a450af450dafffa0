//! The bundle's layout: every path and file name in it, in one place. Everything else asks
//! here (tests/tidy.rs holds bundle path literals to this file).
//!
//! ```text
//! bundles/<UTC time>_<recipe>/
//!   manifest.yaml   tool, recipe (resolved), host, versions, every command with its
//!                   environment changes, exit, duration, files with sha256, redactions
//!   summary.md      the verdict and the evidence, for a human or an issue
//!   findings.json   the same for machines (the `analyze --json` object)
//!   replay.sh       reruns one rung's target with its recorded environment
//!   SHA256SUMS      every file's hash, written when the run ends (and by `bundle pack`)
//!   LEFT_OUT.tsv    what an archive left out (coredumps, binary files), with sizes and why
//!   recorder/       sitecustomize.py: the launch recorder a Python target loads
//!   env/            doctor's report, git describe, pip freeze, what `collect` commands printed
//!   rungs/NN-<rung>/  stdout.log, stderr.log, command.txt, artifacts (dumps, XML, cuda-gdb logs)
//!     jit/            (the rebuild of a Python target without a build) the fresh, empty JIT
//!                     build folders its run compiled into: torch_extensions/, cupy/,
//!                     flashinfer/, deep_gemm/ (build files, not tool output)
//!   repro/          (`--repro`) repro.py (or repro_driver.cu, build.sh, capture_native.c),
//!                   result.json, capture-<pid>.json (native-capture-<pid>.json), the capture
//!                   run's stdout.log/stderr.log, repro-run.log and cuda-gdb on its dump: the
//!                   reproducer's folder, outside `rungs/` since its runs are no evidence of
//!                   the target's
//!   ablation.md     (`debug-ima ablate`, its parent bundle) the configurations tried, each
//!                   faulted k of n and its verdicts, and the one-line conclusion
//!   ablation.json   the same for machines
//!   runs/<UTC time>_run<NN>-<knobs>/  (`debug-ima ablate`) each run's own bundle
//!   rungs/01-dump/    (`debug-ima dump PID`) pyspy-<pid>.log, gdb-<pid>.log,
//!                     cudagdb-attach-<pid>.log, nccl-trace-<rank>.json, cudagdb-<pid>.log and
//!                     the GPU dump it read (`--kill`: core_<host>.<pid>.<time>), each tool's
//!                     `<stem>.command.txt`
//! ```
//!
//! Must not: read or write files.

use std::path::{Path, PathBuf};

use crate::model::RungId;

/// Where bundles go when `--bundle-dir` is not given: `bundles/` in the current directory.
pub const DEFAULT_ROOT: &str = "bundles";
pub const MANIFEST: &str = "manifest.yaml";
pub const SUMMARY: &str = "summary.md";
pub const FINDINGS: &str = "findings.json";
pub const REPLAY: &str = "replay.sh";
/// `debug-ima ablate`'s conclusion in its parent bundle, for a human (`bundle report` shows it).
pub const ABLATION_MD: &str = "ablation.md";
/// The same for machines.
pub const ABLATION_JSON: &str = "ablation.json";
/// `debug-ima ablate`'s runs, each a bundle of its own, in its parent bundle.
pub const ABLATION_RUNS: &str = "runs";
/// Every file's SHA-256, in `sha256sum -c` form.
pub const SUMS: &str = "SHA256SUMS";
/// What an archive left out, with sizes and reasons.
pub const LEFT_OUT: &str = "LEFT_OUT.tsv";
/// Beside an archive: its own SHA-256.
pub const ARCHIVE_SUMS: &str = "ARCHIVE.sha256";
/// The folder of the environment snapshot and the `collect` outputs.
pub const ENV_DIR: &str = "env";
/// The folder of the rungs' folders.
pub const RUNGS_DIR: &str = "rungs";
/// The repro rung's folder (docs/repro.md), named as the rung, beside `rungs/`: what its runs
/// print is about the reproducer, so the analysis of the bundle does not read it.
pub fn repro_dir() -> &'static str {
    RungId::Repro.name()
}
/// In [`repro_dir`]: the reproducer, what its run showed, and the recorder's captures
/// (`capture-<pid>.json`).
pub const REPRO_SCRIPT: &str = "repro.py";
pub const REPRO_RESULT: &str = "result.json";
pub const CAPTURE_PREFIX: &str = "capture-";
/// In [`repro_dir`], for a native target: the capture library's source and build, its
/// captures (`native-capture-<pid>.json`), the reproducer and its build script.
pub const CAPTURE_LIBRARY_SOURCE: &str = "capture_native.c";
pub const CAPTURE_LIBRARY: &str = "libdebugima-capture.so";
pub const NATIVE_CAPTURE_PREFIX: &str = "native-capture-";
pub const REPRO_DRIVER: &str = "repro_driver.cu";
pub const REPRO_BUILD: &str = "build.sh";
/// What `build.sh` makes there: the kernel's source file compiled to a cubin.
pub const REPRO_CUBIN: &str = "kernel.cubin";

/// The native reproducer's executable in [`repro_dir`], named as the rung (`repro/repro`).
pub fn repro_binary() -> &'static str {
    RungId::Repro.name()
}
/// Inside a rung's folder, under the Slurm launcher: one rank's lines per file
/// ([`rank_log`]; `bundle/ranks.rs`).
pub const RANKS_DIR: &str = "ranks";

/// `rank-N.stdout.log` (`stream`: `stdout` or `stderr`) under [`RANKS_DIR`].
pub fn rank_log(rank: u32, stream: &str) -> String {
    format!("rank-{rank}.{stream}.log")
}
/// `git describe` of the target's source, in [`ENV_DIR`].
pub const GIT_DESCRIBE: &str = "git-describe.txt";
/// doctor's report, in [`ENV_DIR`].
pub const DOCTOR: &str = "doctor.txt";
/// A rung's target's streams and command.
pub const STDOUT: &str = "stdout.log";
pub const STDERR: &str = "stderr.log";
pub const COMMAND: &str = "command.txt";
/// The rebuild's line-info table.
pub const LINEINFO_TABLE: &str = "lineinfo.tsv";
/// The rebuild of a Python target without a `build:` step (`ladder/rung/parts/rebuild_jit.rs`): the
/// folder in its rung folder that holds the fresh, empty JIT build folders its run compiles
/// into, one per library: `TORCH_EXTENSIONS_DIR`, `CUPY_CACHE_DIR`, `FLASHINFER_WORKSPACE_BASE`,
/// `DG_JIT_CACHE_DIR`. What is inside is build output, not tool output ([`is_jit_build`]).
pub const JIT_DIR: &str = "jit";
pub const JIT_TORCH_EXTENSIONS: &str = "torch_extensions";
pub const JIT_CUPY: &str = "cupy";
pub const JIT_FLASHINFER: &str = "flashinfer";
pub const JIT_DEEP_GEMM: &str = "deep_gemm";
/// What CuPy names a kernel's source it saves beside the cubin (`<sha1>.cubin.cu`, with
/// `CUPY_CACHE_SAVE_CUDA_SOURCE`).
pub const CUPY_SOURCE_SUFFIX: &str = ".cubin.cu";

/// Whether `path` lies in a rung folder's [`JIT_DIR`] (`rungs/NN-rebuild/jit/...`): what a
/// JIT build wrote there (`.ninja_log`, FlashInfer's logs) is no tool's output.
pub fn is_jit_build(path: &Path) -> bool {
    path.ancestors().any(|a| {
        a.file_name().is_some_and(|n| n == JIT_DIR)
            && a.parent().and_then(Path::parent).and_then(Path::file_name).is_some_and(|g| g == RUNGS_DIR)
    })
}
/// The static launch sites read from the target's disassembly (`findings::launch_sites`).
pub const LAUNCH_SITES: &str = "launch-sites.log";
/// The stem of the disassembly's log, removed once read (megabytes of code).
pub const OBJDUMP_STEM: &str = "objdump";
/// The binaries' kernels and which have shared memory, from `cuobjdump -elf` (racecheck's scope).
pub const SCOPE_TABLE: &str = "scope.txt";
/// The stem of a binary's `cuobjdump -elf` log in racecheck's folder (`elf-1.log`), removed
/// once read.
pub const ELF_STEM: &str = "elf-{n}";
/// The launch recorder a Python target loads (`recorder/sitecustomize.py`), written once per
/// bundle; its folder goes first on the target's `PYTHONPATH`.
pub const RECORDER_DIR: &str = "recorder";
pub const RECORDER_FILE: &str = "recorder/sitecustomize.py";
/// Copies of the sources a verdict names that lived in a cache or temporary folder
/// (`bundle::sources`), and their index (original path, TAB, copy).
pub const SOURCES_DIR: &str = "sources";
pub const SOURCES_INDEX: &str = "sources/index.tsv";
/// The launch recorder's log in a rung's folder (`findings::launch_log`).
pub const LAUNCHES: &str = "launches.log";
/// The prefix of every coredump's file name in a rung folder (`core_%h.%p.%t`).
pub const DUMP_PREFIX: &str = "core_";
/// Where `replay.sh` puts what a replay writes (`replay/<rung>/`).
pub const REPLAY_DIR: &str = "replay";

/// `debug-ima dump`: the stem of py-spy's log of process `pid` (`pyspy-<pid>.log`).
pub fn pyspy_stem(pid: u32) -> String {
    format!("pyspy-{pid}")
}

/// `debug-ima dump`: the stem of gdb's host stacks of the native process `pid`.
pub fn host_stacks_stem(pid: u32) -> String {
    format!("gdb-{pid}")
}

/// `debug-ima dump`: the stem of cuda-gdb's log attached to the live process `pid`.
pub fn attach_stem(pid: u32) -> String {
    format!("cudagdb-attach-{pid}")
}

/// `debug-ima dump --kill`: the stem of cuda-gdb's log on the user-triggered dump of `pid`.
pub fn dump_read_stem(pid: u32) -> String {
    format!("cudagdb-{pid}")
}

/// A flight-recorder dump as JSON (`nccl-trace-<rank>.json`), or `None` when its file name
/// (`nccl_trace_rank_0`, PyTorch's `TORCH_NCCL_DEBUG_INFO_TEMP_FILE` plus the rank) does not
/// end in a rank.
pub fn nccl_json(trace_name: &str) -> Option<String> {
    let digits = trace_name.bytes().rev().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 9 {
        return None;
    }
    Some(format!("nccl-trace-{}.json", &trace_name[trace_name.len() - digits..]))
}

/// The name a user-triggered GPU dump gets in `debug-ima dump`'s folder, whatever the driver
/// named it (`core_<time>_<host>_<pid>.nvcudmp` by default): `core_<host>.<pid>.<time>`, the
/// coredump rung's, which names the pid for cuda-gdb's log and which `bundle pack` leaves out
/// like every coredump.
pub fn dump_file(host: &str, pid: u32, time: u64) -> String {
    format!("{DUMP_PREFIX}{host}.{pid}.{time}")
}

/// `rungs/NN-<rung>` (relative); a rung's later run (`attempt` 1, 2, ...: a retry) is
/// `rungs/NN-<rung>-<attempt + 1>`, so that each run's files keep an origin of their own.
pub fn rung_dir(index: usize, rung: RungId, attempt: usize) -> PathBuf {
    if rung == RungId::Repro {
        return PathBuf::from(match attempt {
            0 => repro_dir().to_string(),
            a => format!("{}-{}", repro_dir(), a + 1),
        });
    }
    let name = match attempt {
        0 => format!("{index:02}-{}", rung.name()),
        a => format!("{index:02}-{}-{}", rung.name(), a + 1),
    };
    Path::new(RUNGS_DIR).join(name)
}

/// A rung's folder as a plan names it before the climb has decided which rungs run:
/// `rungs/<NN>-<rung>`, NN standing for its place among those that do.
pub fn rung_dir_unnumbered(rung: RungId) -> PathBuf {
    if rung == RungId::Repro {
        return rung_dir(0, rung, 0);
    }
    Path::new(RUNGS_DIR).join(format!("<NN>-{}", rung.name()))
}

/// The bundle a rung's folder (`<bundle>/rungs/NN-<rung>`) belongs to; `None` for a folder that
/// is no rung's.
pub fn bundle_of_rung_dir(dir: &Path) -> Option<&Path> {
    let name = dir.file_name()?.to_str()?;
    let again = name.strip_prefix(repro_dir()).and_then(|r| r.strip_prefix('-'));
    if name == repro_dir() || again.is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) {
        return dir.parent();
    }
    let rungs = dir.parent()?;
    (rungs.file_name()? == RUNGS_DIR).then(|| rungs.parent()).flatten()
}

/// A sanitizer rung's compute-sanitizer `--save` report in its folder: `<rung>.xml`
/// (`memcheck.xml`, `initcheck.xml`, `racecheck.xml`, `synccheck.xml`).
pub fn sanitizer_xml(rung: RungId) -> String {
    format!("{}.xml", rung.name())
}

/// `env/NAME` (relative), as the manifest names it.
pub fn env_file(name: &str) -> String {
    format!("{ENV_DIR}/{name}")
}

/// A process's two logs in `dir`: the target's streams apart (`stdout.log`, `stderr.log`)
/// when `stem` is empty; a tool's both in one `<stem>.log`, read as one (cuda-gdb prints the
/// fault on stdout and its own crash on stderr).
pub fn logs(dir: &Path, stem: &str) -> (PathBuf, PathBuf) {
    if stem.is_empty() {
        (dir.join(STDOUT), dir.join(STDERR))
    } else {
        (dir.join(format!("{stem}.log")), dir.join(format!("{stem}.log")))
    }
}

/// The file with the command of a process whose stdout log is `stdout_log`:
/// `command.txt` for the target, `<stem>.command.txt` for a tool.
pub fn command_file(dir: &Path, stdout_log: &Path) -> PathBuf {
    let stem = stdout_log.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    if stdout_log.file_name().is_some_and(|n| n == STDOUT) {
        dir.join(COMMAND)
    } else {
        dir.join(format!("{stem}.{COMMAND}"))
    }
}

/// Whether `dir` looks like a bundle (a manifest and a rungs folder).
pub fn is_bundle(dir: &Path) -> bool {
    dir.join(MANIFEST).is_file() && dir.join(RUNGS_DIR).is_dir()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(rung_dir(3, RungId::LaunchBlocking, 0), Path::new("rungs/03-launch-blocking"));
        assert_eq!(rung_dir(5, RungId::Baseline, 1), Path::new("rungs/05-baseline-2"));
        assert_eq!(env_file("pip-freeze.txt"), "env/pip-freeze.txt");
        let (o, e) = logs(Path::new("/b/r"), "");
        assert_eq!((o.as_path(), e.as_path()), (Path::new("/b/r/stdout.log"), Path::new("/b/r/stderr.log")));
        assert_eq!(command_file(Path::new("/b/r"), &o), Path::new("/b/r/command.txt"));
        let (g, _) = logs(Path::new("/b/r"), "cudagdb-1");
        assert_eq!(command_file(Path::new("/b/r"), &g), Path::new("/b/r/cudagdb-1.command.txt"));
        assert_eq!(rung_dir(1, RungId::Dump, 0), Path::new("rungs/01-dump"));
        assert_eq!(rung_dir(4, RungId::Repro, 0), Path::new("repro"));
        assert_eq!(bundle_of_rung_dir(Path::new("/b/x/repro")), Some(Path::new("/b/x")));
        assert_eq!(bundle_of_rung_dir(Path::new("/b/x/repro-2")), Some(Path::new("/b/x")));
        assert_eq!(bundle_of_rung_dir(Path::new("/tmp/reproducer")), None);
        assert_eq!(sanitizer_xml(RungId::Memcheck), "memcheck.xml");
        assert_eq!(sanitizer_xml(RungId::Synccheck), "synccheck.xml");
        assert_eq!(nccl_json("nccl_trace_rank_12").as_deref(), Some("nccl-trace-12.json"));
        assert_eq!(nccl_json("nccl_trace_rank_"), None);
        assert_eq!(dump_file("vm", 738, 1796162904), "core_vm.738.1796162904");
    }

    /// Only a rung folder's own `jit/` is build output: a `jit` folder above the bundle, or a
    /// rung's log named so, is not.
    #[test]
    fn the_jit_build_folder_is_told_from_the_rungs_files() {
        let b = Path::new("/home/u/jit/bundles/2026_x");
        assert!(is_jit_build(&b.join("rungs/02-rebuild/jit/torch_extensions/op/.ninja_log")));
        assert!(is_jit_build(&b.join("rungs/02-rebuild/jit/cupy/00fb.cubin.cu")));
        assert!(!is_jit_build(&b.join("rungs/02-rebuild/cudagdb-1.log")));
        assert!(!is_jit_build(&b.join("rungs/02-rebuild/stderr.log")));
        assert!(!is_jit_build(Path::new("/tmp/jit/x.log")));
    }
}

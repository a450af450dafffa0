//! Reading what an armed run left in its rung's folder: the GPU dumps (cuda-gdb on each, again
//! with fewer commands after a crash) and, for a native target, the CPU core of the abort
//! (found through `core_pattern`, moved into the folder, read by its own cuda-gdb, then
//! deleted). The coredump rung, the armed baseline, `watch`, the hang rung and the rebuild's
//! run-time half share it; the steps' commands (`cuda-gdb -batch ...`) are built here too.
//!
//! Must not: read the dumps itself (cuda-gdb does; `findings` reads its log), arm a run (that
//! is `armed`), or leave a CPU core behind.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Context, Result};

use super::evidence::name_of;
use crate::bundle::layout::{self, DUMP_PREFIX};
use crate::ladder::rung::api::{step, together, Debug, Ran, RungIo, Step, StepCx, When, DUMP};
use crate::model::{Exit, Invocation, Role};
use crate::recipe::Resolved;

/// The CPU core's name in the rung folder while cuda-gdb reads it.
const CPU_CORE_FILE: &str = "cpu-core";

/// `cuda-gdb -batch` on one dump. `full` adds the commands that print more (and that
/// cuda-gdb 13.0 has been seen to crash on); the retry after a crash uses `full = false`.
/// `locals` asks for arguments and locals, which only a `-G` build has.
pub fn gdb(core: &Path, full: bool, locals: bool) -> Invocation {
    super::build::cuda_gdb(&[], Some(format!("target cudacore {}", core.display())), full, locals)
}

/// `cuda-gdb -batch BINARY CORE -ex "thread apply all bt"`: every host thread's stack.
pub fn cpu_gdb(binary: &str, core: &str) -> Invocation {
    let mut inv = super::build::cuda_gdb(&[binary.to_string(), core.to_string()], None, false, false);
    inv.argv.extend(["-ex".to_string(), "thread apply all bt".to_string()]);
    inv
}

/// Where the CPU core lies in a rung folder while cuda-gdb reads it.
pub fn cpu_core_path(dir: &Path) -> String {
    dir.join(CPU_CORE_FILE).display().to_string()
}

/// Removes the named pipes in `dir` (the armed run's `corepipe.*`, PyTorch's NCCL pipe):
/// left by the target's processes, they are no files a bundle can hold.
pub fn remove_fifos(dir: &Path) {
    use std::os::unix::fs::FileTypeExt;
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        if e.file_type().is_ok_and(|t| t.is_fifo()) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// The dumps in a rung folder, sorted.
pub fn dumps(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut dumps: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list `{}`", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(DUMP_PREFIX)))
        .collect();
    dumps.sort();
    Ok(dumps)
}

/// The executable cuda-gdb loads with the CPU core: the run's first word, against the run's
/// folder when it is a relative path (a bare name cuda-gdb finds on `PATH`).
pub fn executable(r: &Resolved) -> String {
    let first = r.run.argv.first().cloned().unwrap_or_default();
    match (&r.run.cwd, first.contains('/') && !first.starts_with('/')) {
        (Some(cwd), true) => cwd.join(&first).display().to_string(),
        _ => first,
    }
}

/// Where the kernel writes a core, from `/proc/sys/kernel/core_pattern`: the folder and the
/// name's fixed start (`core` for `core` or `core.%p`). `Err` with the reason when cores go
/// to a program (`|/usr/lib/systemd/systemd-coredump ...`) or nowhere.
pub fn core_place(pattern: &str, cwd: &Path) -> std::result::Result<(PathBuf, String), String> {
    let p = pattern.trim();
    if p.is_empty() {
        return Err("core_pattern is empty: the kernel writes no core".into());
    }
    if p.starts_with('|') {
        return Err(format!(
            "core_pattern sends cores to a program (`{}`), not to a file the ladder can read",
            p.chars().take(80).collect::<String>()
        ));
    }
    let path = Path::new(p);
    let dir = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) if d.is_absolute() => d.to_path_buf(),
        Some(d) => cwd.join(d),
        None => cwd.to_path_buf(),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let prefix = name.split('%').next().unwrap_or_default().to_string();
    if prefix.is_empty() || dir.to_string_lossy().contains('%') {
        return Err(format!("core_pattern `{p}` has no fixed name to find the core by"));
    }
    Ok((dir, prefix))
}

/// Whether a file name is a core of the pattern whose fixed start is `prefix`, of one of the
/// processes `pids` (those that wrote a GPU dump): the name itself (`core`, a pattern that
/// names no pid: only the timing tells), the name with the `.PID` that `core_uses_pid` adds
/// (`core.4461`), or, for a pattern with `%` specifiers, a name that starts with it and holds
/// one of the pids as a number of its own (`core.python3.4461`). A user's `core.77` or
/// `core.txt` is never taken for the target's.
fn is_core_name(name: &str, prefix: &str, exact: bool, pids: &[u32]) -> bool {
    let has_pid = |rest: &str| {
        rest.split(|c: char| !c.is_ascii_digit())
            .filter_map(|n| n.parse::<u32>().ok())
            .any(|n| pids.contains(&n))
    };
    match name.strip_prefix(prefix) {
        Some("") => true,
        Some(rest) if exact => rest
            .strip_prefix('.')
            .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && has_pid(p)),
        Some(rest) => has_pid(rest),
        None => false,
    }
}

/// The pids of the processes whose GPU dumps lie in `dir` (`core_<host>.<pid>.<time>`).
fn dump_pids(dir: &Path) -> Vec<u32> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    rd.flatten()
        .filter_map(|e| crate::findings::coredump::pid_from_dump_path(&e.file_name().to_string_lossy()))
        .collect()
}

/// The newest regular file in `dir` named as a core of the pattern and of one of `pids`
/// (`prefix`, `exact` as [`is_core_name`] takes them) that was modified since `since`: the core
/// the target's abort wrote.
fn find_core(dir: &Path, prefix: &str, exact: bool, pids: &[u32], since: SystemTime) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| is_core_name(&e.file_name().to_string_lossy(), prefix, exact, pids))
        .filter_map(|e| {
            let m = e.metadata().ok().filter(|m| m.is_file())?;
            let t = m.modified().ok().filter(|t| *t >= since)?;
            Some((t, e.path()))
        })
        .max()
        .map(|(_, p)| p)
}

/// Moves the core into the rung's folder (copying across filesystems).
fn take_core(core: &Path, to: &Path) -> std::io::Result<()> {
    if std::fs::rename(core, to).is_ok() {
        return Ok(());
    }
    std::fs::copy(core, to)?;
    std::fs::remove_file(core)
}

/// The steps that read what an armed run left in `cx.dir`: cuda-gdb on each dump (again with
/// fewer commands after a crash) and, for a native target, on the CPU core. The coredump rung,
/// the armed baseline and `watch` share them.
pub fn reading_steps(cx: &StepCx) -> Vec<Step> {
    let core = cx.dir.join(DUMP);
    let locals = cx.debug == Debug::Full;
    let mut steps = vec![
        Step::new(Role::CudaGdb, gdb(&core, true, locals), "cudagdb-{n}").when(When::PerDump),
        Step::new(Role::CudaGdb, gdb(&core, false, false), "cudagdb-{n}-retry").when(When::PerDumpAfterCrash),
    ];
    if !cx.recipe.python {
        let cpu = cpu_core_path(&cx.dir);
        steps.push(
            Step::new(Role::CudaGdb, cpu_gdb(&executable(cx.recipe), &cpu), "cpucore-gdb")
                .when(When::PerCpuCore),
        );
    }
    steps
}

/// Why a run that was armed left no dump, for its notes.
pub fn no_dump_note(ran: Exit) -> String {
    format!(
        "no coredump was written ({}): the process may have been aborted before the GPU exception was \
         handled (an NCCL watchdog does that), or nothing faulted",
        ran.text()
    )
}

/// What a crash of cuda-gdb on a dump suggests: it did not crash on `-G` builds in the recordings.
const DEVICE_DEBUG_HINT: &str = "A `-G` rebuild (`--device-debug`) often avoids that and shows locals";

/// After the target's run (`ran`, started at `started`): each dump it left in the rung's
/// folder read with cuda-gdb through the `per_dump` step, and the CPU core of the abort when the
/// steps read one, all at once (each cuda-gdb reads its own file: a server's many dumps cost one
/// reading's time, not their sum); then, again with fewer commands, each dump cuda-gdb crashed
/// on. The coredump rung, the armed baseline and `watch` (a hang's dumps with the hang rung's
/// commands) share it.
pub fn read_dumps(
    io: &mut dyn RungIo,
    steps: &[Step],
    per_dump: When,
    started: SystemTime,
    ran: Exit,
) -> Result<Ran> {
    let dumps = dumps(io.dir())?;
    let read = Ran {
        faulted: !ran.success() || !dumps.is_empty(),
        yielded: !dumps.is_empty(),
        lineinfo: None,
        hung: false,
        static_sites: None,
    };
    if dumps.is_empty() || io.interrupted() {
        return Ok(read);
    }
    let placeholder = io.dir().join(DUMP).display().to_string();
    let fill = |when: When, i: usize, core: &Path| -> Result<Step> {
        Ok(step(steps, when)?.filled(&placeholder, &core.display().to_string(), i + 1))
    };
    let mut first = Vec::new();
    for (i, core) in dumps.iter().enumerate() {
        first.push(fill(per_dump, i, core)?);
    }
    let cpu = steps.iter().find(|s| s.when == When::PerCpuCore);
    read_together(io, &dumps, first.clone(), cpu, started)?;
    let mut again = Vec::new();
    for (i, (core, s)) in dumps.iter().zip(&first).enumerate() {
        let ev = io.scan(&layout::logs(io.dir(), &s.stem).0)?;
        if ev.debugger_crashed_opening {
            // Fewer commands still open it: every such retry recorded crashed the same way.
            io.note(format!(
                "cuda-gdb crashed while opening `{}` (kept what it printed: the exception's kernel and \
                 line); not retried, as opening it again crashes the same way. {DEVICE_DEBUG_HINT}",
                name_of(core)
            ));
        } else if ev.debugger_crashed {
            again.push(fill(When::PerDumpAfterCrash, i, core)?);
        }
    }
    if !again.is_empty() && !io.interrupted() {
        // What it printed is kept; fewer commands sometimes get further.
        io.say("cuda-gdb crashed: retrying with fewer commands");
        for r in together(io, &again) {
            r?;
        }
        for _ in &again {
            io.note(format!("cuda-gdb crashed on this dump (kept what it printed). {DEVICE_DEBUG_HINT}"));
        }
    }
    Ok(read)
}

/// The CPU core moved into a rung's folder for cuda-gdb ([`take_cpu_core`]); [`CpuCore::finish`]
/// deletes it and says what was read.
struct CpuCore {
    /// Where the kernel wrote it.
    from: PathBuf,
    /// Where it lies while cuda-gdb reads it.
    at: PathBuf,
    size: u64,
}

impl CpuCore {
    /// Deletes the core; the note for the rung's record.
    fn finish(&self) -> String {
        let removed = std::fs::remove_file(&self.at);
        format!(
            "read the CPU core (`{}`, {} MB) for the host stacks{}",
            self.from.display(),
            self.size / 1_000_000,
            match removed {
                Ok(()) => ", then deleted it".to_string(),
                Err(e) =>
                    format!("; deleting it failed ({e}): remove `{}` before sharing", self.at.display()),
            }
        )
    }
}

/// Finds the CPU core the target's abort wrote (since `started`) and moves it into the rung's
/// folder for cuda-gdb; `None` with a note saying why there is none (the host stacks then stay
/// unknown).
fn take_cpu_core(io: &mut dyn RungIo, started: SystemTime) -> Result<Option<CpuCore>> {
    let cwd = match &io.recipe().run.cwd {
        Some(c) => c.clone(),
        None => std::env::current_dir().context("cannot read the current folder")?,
    };
    let pattern = std::fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap_or_default();
    let (dir, prefix) = match core_place(&pattern, &cwd) {
        Ok(p) => p,
        Err(why) => {
            io.note(format!("no CPU core to read, so the host launch line stays unknown here: {why}"));
            return Ok(None);
        }
    };
    let exact = !pattern.contains('%');
    let pids = dump_pids(io.dir());
    let Some(core) = find_core(&dir, &prefix, exact, &pids, started) else {
        io.note(format!(
            "no CPU core was found in `{}` (`{prefix}*`): the core limit may be 0 for this user or \
                 the process was not aborted; the host launch line stays unknown here",
            dir.display()
        ));
        return Ok(None);
    };
    let size = std::fs::metadata(&core).map(|m| m.len()).unwrap_or(0);
    let to = io.dir().join(CPU_CORE_FILE);
    if let Err(e) = take_core(&core, &to) {
        io.note(format!("could not move the CPU core `{}` into the bundle: {e}", core.display()));
        return Ok(None);
    }
    Ok(Some(CpuCore { from: core, at: to, size }))
}

/// Runs `readings` (cuda-gdb, one per dump of `dumps`) and, with `cpu` (the step that reads a
/// CPU core), the reading of the CPU core the target's abort wrote since `started`, all at once:
/// each cuda-gdb reads its own file, so eight ranks' dumps cost one reading's time, not their
/// sum. The CPU core is deleted afterwards whatever cuda-gdb did. [`read_dumps`] and the hang
/// rung share it.
pub fn read_together(
    io: &mut dyn RungIo,
    dumps: &[PathBuf],
    mut readings: Vec<Step>,
    cpu: Option<&Step>,
    started: SystemTime,
) -> Result<()> {
    let core = match cpu {
        Some(_) => take_cpu_core(io, started)?,
        None => None,
    };
    if let (Some(s), Some(_)) = (cpu, &core) {
        readings.push(s.clone());
    }
    io.say(&match (dumps, core.is_some()) {
        ([d], false) => format!("cuda-gdb on {}", name_of(d)),
        ([d], true) => format!("cuda-gdb on {} and on the CPU core, side by side", name_of(d)),
        (_, false) => format!("cuda-gdb on {} dumps, side by side", dumps.len()),
        (_, true) => format!("cuda-gdb on {} dumps and on the CPU core, side by side", dumps.len()),
    });
    let results = together(io, &readings);
    if let Some(core) = core {
        // Deleted whatever cuda-gdb did: it is large and holds the process's memory.
        let note = core.finish();
        io.note(note);
    }
    // The bundle's errors (a log it could not write) end the reading; a process's are its log's.
    for r in results {
        r?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_pattern_gives_the_folder_and_the_name_or_why_not() {
        let cwd = Path::new("/work/app");
        assert_eq!(core_place("core\n", cwd), Ok((cwd.to_path_buf(), "core".into())));
        assert_eq!(core_place("core.%e.%p", cwd), Ok((cwd.to_path_buf(), "core.".into())));
        assert_eq!(core_place("/var/crash/core-%p", cwd), Ok((PathBuf::from("/var/crash"), "core-".into())));
        assert_eq!(core_place("dumps/core", cwd), Ok((PathBuf::from("/work/app/dumps"), "core".into())));
        assert!(core_place("|/usr/lib/systemd/systemd-coredump %P %u", cwd).unwrap_err().contains("program"));
        assert!(core_place("", cwd).is_err());
        assert!(core_place("%e.core", cwd).is_err());
    }

    #[test]
    fn the_newest_core_since_the_run_is_taken() {
        let d = std::env::temp_dir().join(format!("xtask-core-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let before = SystemTime::now() - std::time::Duration::from_secs(5);
        std::fs::write(d.join("core"), b"x").unwrap();
        std::fs::write(d.join("cores.txt"), b"x").unwrap();
        assert_eq!(find_core(&d, "core", true, &[4461], before), Some(d.join("core")));
        let later = SystemTime::now() + std::time::Duration::from_secs(60);
        assert_eq!(find_core(&d, "core", true, &[4461], later), None);
        assert!(is_core_name("core.4461", "core", true, &[4461]));
        assert!(!is_core_name("cores.txt", "core", true, &[4461]));
        assert!(!is_core_name("core.txt", "core", true, &[4461]));
        assert!(is_core_name("core.python3.77", "core.", false, &[77]));
        // A user's own cores (another pid), and a `core/` folder, are never the target's.
        assert!(!is_core_name("core.4462", "core", true, &[4461]));
        assert!(!is_core_name("core.python3.78", "core.", false, &[77]));
        assert!(!is_core_name("core.python3.177", "core.", false, &[77]));
        std::fs::write(d.join("core.12"), b"a user's").unwrap();
        std::fs::create_dir_all(d.join("core.4461")).unwrap();
        assert_eq!(find_core(&d, "core", true, &[4461], before), Some(d.join("core")));
        std::fs::remove_file(d.join("core")).unwrap();
        assert_eq!(
            find_core(&d, "core", true, &[4461], before),
            None,
            "a folder or another pid's core was taken"
        );
        assert!(d.join("core.12").is_file());
        std::fs::remove_dir_all(&d).unwrap();
    }
}

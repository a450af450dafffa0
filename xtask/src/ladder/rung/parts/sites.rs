//! The static launch sites of a native target: one `objdump -d -l` of its executable, read
//! into `launch-sites.log` ([`crate::findings::launch_sites`]). When it names where the host
//! code launches the kernels, the armed run need not be launch-blocking (which slows a
//! launch-heavy program 2.5 times, docs/benchmarks.md): a kernel launched from one place has
//! that launch site whichever run faults, and only a fault in a kernel launched from several
//! places asks for a launch-blocking run. The armed baseline, the hang rung and `watch` share
//! it.
//!
//! The disassembly runs beside the target ([`beside`], then [`take`]) wherever the run does
//! not wait for its answer: always for the hang rung and `watch` (never launch-blocking), and
//! for the armed baseline when the executable's symbols hold kernel stubs
//! ([`has_kernel_stubs`]), which is when objdump names launches. Only a binary whose symbols
//! cannot be read is disassembled first ([`read`]), to decide on launch-blocking.
//!
//! Must not: keep the disassembly (megabytes of code, nothing the verdict needs beyond the
//! table), or fail the rung: without objdump or host symbols the climb goes on launch-blocking.

use std::io::BufReader;
use std::time::Duration;

use anyhow::{Context, Result};

use super::build::on_binary;
use super::dumps::executable;
use crate::bundle::layout::{self, LAUNCH_SITES, OBJDUMP_STEM};
use crate::files::open_regular;
use crate::findings::launch_sites;
use crate::ladder::rung::api::{exec, RungIo, Step, When};
use crate::model::{Exit, Role};
use crate::recipe::Resolved;

/// How long the disassembly may take: a binary of hundreds of megabytes takes a minute.
const OBJDUMP_TIMEOUT_S: u64 = 120;

/// The disassembly of the target's executable, with source lines (`-l`) and where each was
/// inlined (`--inlines`: a kernel's host function inlined into its caller), one instruction a
/// line (`-w`). Through a shell that finds a bare name on `PATH` as the run would, and exits 127
/// when objdump is missing.
pub fn step(r: &Resolved) -> Step {
    let tool = "objdump -d -l --inlines -w --no-show-raw-insn --";
    let inv =
        on_binary(r, tool, "objdump-launch-sites", &executable(r), Duration::from_secs(OBJDUMP_TIMEOUT_S));
    Step::new(Role::Objdump, inv, OBJDUMP_STEM).when(When::LaunchSites)
}

/// Runs the [`When::LaunchSites`] step when `steps` have one, before the target, and
/// [`take`]s its table (`then`: what follows when it names none). `None` when there is no such step.
pub fn read(io: &mut dyn RungIo, steps: &[Step], then: &str) -> Result<Option<bool>> {
    let Some(step) = steps.iter().find(|s| s.when == When::LaunchSites) else { return Ok(None) };
    if io.interrupted() {
        return Ok(None);
    }
    let ran = exec(io, step);
    take(io, step, ran, Some(then)).map(Some)
}

/// The [`When::LaunchSites`] step of `steps`, to run beside the target (none when there is
/// no such step or the run was interrupted); its result goes to [`take`].
pub fn beside(io: &dyn RungIo, steps: &[Step]) -> Vec<Step> {
    steps.iter().filter(|s| s.when == When::LaunchSites && !io.interrupted()).cloned().collect()
}

/// What the disassembly run beside the target ([`beside`]: `side`, with their `exits`) named,
/// as [`take`] says; `None` when none ran.
pub fn taken(
    io: &mut dyn RungIo,
    side: &[Step],
    exits: Vec<Result<Exit>>,
    then: Option<&str>,
) -> Result<Option<bool>> {
    match side.iter().zip(exits).find(|(s, _)| s.when == When::LaunchSites) {
        Some((step, ran)) => take(io, step, ran, then).map(Some),
        None => Ok(None),
    }
}

/// Whether the target's executable, as this host sees it, has kernels' host stubs in its
/// symbol table ([`crate::findings::elf`]): then objdump names their launches, and the armed
/// run can go at full speed while it runs. `false` in a container (its files are not this
/// host's), for a name not found, and for what is not a readable ELF file.
pub fn has_kernel_stubs(io: &dyn RungIo) -> bool {
    if io.in_container() {
        return false;
    }
    let exe = executable(io.recipe());
    let path = if exe.contains('/') {
        Some(std::path::PathBuf::from(&exe))
    } else {
        std::env::var_os("PATH")
            .and_then(|p| std::env::split_paths(&p).map(|d| d.join(&exe)).find(|f| f.is_file()))
    };
    let Some(mut f) = path.and_then(|p| open_regular(&p).ok()) else { return false };
    crate::findings::elf::kernel_stubs(&mut f) == Some(true)
}

/// What the disassembly `step` (run to `ran`) named: writes the table into the rung's folder,
/// removes the disassembly, and notes what it found, or that it named nothing and `then` (what
/// follows for the launch site); with `then` `None`, notes nothing (a watched job that ended
/// clean). `true` when the binary names at least one kernel launch (the
/// armed run may then run at full speed), `false` when it names none.
pub fn take(io: &mut dyn RungIo, step: &Step, ran: Result<Exit>, then: Option<&str>) -> Result<bool> {
    let ran = ran?;
    let (log, err) = layout::logs(io.dir(), &step.stem);
    let sites = match open_regular(&log) {
        Ok(f) if ran.success() => launch_sites::from_objdump(BufReader::new(f), &executable(io.recipe())),
        _ => Vec::new(),
    };
    let _ = std::fs::remove_file(&log);
    let _ = std::fs::remove_file(&err);
    if sites.is_empty() {
        let Some(then) = then else { return Ok(false) };
        io.note(format!(
            "objdump named no kernel launch in `{}` ({}): no host code with kernels, or objdump \
             missing; {then}",
            executable(io.recipe()),
            ran.text()
        ));
        return Ok(false);
    }
    let table = io.dir().join(LAUNCH_SITES);
    std::fs::write(&table, launch_sites::table(&sites))
        .with_context(|| format!("cannot write `{}`", table.display()))?;
    if then.is_none() {
        return Ok(true);
    }
    let kernels = launch_sites::places(&sites);
    let several = launch_sites::ambiguous(&sites);
    io.note(format!(
        "the binary launches {} kernel(s) from {} place(s) (`{LAUNCH_SITES}`): a kernel launched \
         from one place has that launch site without launch-blocking{}",
        kernels.len(),
        sites.len(),
        if several.is_empty() {
            String::new()
        } else {
            format!(
                "; {} {} launched from several places, which only a launch-blocking run tells apart",
                several.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", "),
                if several.len() == 1 { "is" } else { "are" }
            )
        }
    ));
    Ok(true)
}

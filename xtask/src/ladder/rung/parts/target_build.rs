//! The recipe's build of the target, with line info: its invocation (`NVCC_PREPEND_FLAGS`, the
//! compilation caches unable to serve stale objects, the rung's recipe options), the folders
//! it writes into, its run when the binaries are missing, and the note of a failed build (its
//! log's last lines). The rebuild, the armed baseline and the hang rung (which replaces the
//! baseline) build so.
//!
//! Must not: check the binaries' line info (that is `lineinfo`), or read a build's log whole (a
//! log may be a gigabyte).

use anyhow::{Context, Result};

use super::build::{from_step, with_options};
use super::lineinfo::prepend_flags;
use crate::ladder::rung::api::{exec, step, Debug, RungIo, Step, When};
use crate::model::{Exit, Invocation, RungId};
use crate::recipe::{Resolved, Step as RecipeStep};

/// `nvcc -o DIR/FILE` does not create `DIR`: the build's output folders are made first.
pub fn create_binary_dirs(b: &RecipeStep) -> Result<()> {
    for d in b.binary_dirs() {
        std::fs::create_dir_all(&d)
            .with_context(|| format!("cannot create `{}` for the build's output", d.display()))?;
    }
    Ok(())
}

/// The build, as the recipe has it, with line info (and host debug info) added and caches
/// bypassed; `rung`'s recipe options apply (the baseline's when it builds the target first).
pub fn invocation(
    r: &Resolved,
    build: &RecipeStep,
    debug: Debug,
    inherited_prepend: Option<&str>,
    rung: RungId,
) -> Invocation {
    let mut inv = from_step(build);
    inv.set("NVCC_PREPEND_FLAGS", prepend_flags(debug, inherited_prepend));
    // ccache would hand back the objects built without line info.
    inv.set("CCACHE_DISABLE", "1");
    // sccache cannot be disabled by a variable, but it can be told to recompile and re-cache.
    inv.set("SCCACHE_RECACHE", "1");
    with_options(inv, r, rung)
}

/// How many of a failed build's last lines its note shows, and how many of its error lines
/// from before them.
const BUILD_TAIL: usize = 10;
const BUILD_ERRORS: usize = 6;

/// The error of a failed build (`what`: "the rebuild"), after a note with its last lines
/// ([`build_tail`]) from the first of `logs` that has any; `shown` names the log in the rung's
/// folder. The end of each log is read, never the whole of it (a log may be a gigabyte).
pub fn build_failed(
    io: &mut dyn RungIo,
    what: &str,
    ran: Exit,
    logs: &[std::path::PathBuf],
    shown: &str,
) -> anyhow::Error {
    use std::io::{Read, Seek, SeekFrom};
    let shown = format!("{}/{shown}", io.shown_dir());
    for log in logs {
        let Ok(mut f) = std::fs::File::open(log) else { continue };
        let mut bytes = Vec::new();
        let tail = f.seek(SeekFrom::End(0)).map_or(0, |len| len.saturating_sub(256 * 1024));
        if f.seek(SeekFrom::Start(tail)).is_err() || f.read_to_end(&mut bytes).is_err() {
            continue;
        }
        if let Some(lines) = build_tail(&String::from_utf8_lossy(&bytes)) {
            io.note(format!("the build's last lines (`{shown}`):\n{lines}"));
            break;
        }
    }
    anyhow::anyhow!(
        "{what} failed ({}): the notes above show its last lines, `{shown}` all of them; fix the build, then run again",
        ran.text()
    )
}

/// The lines of a failed build's log worth showing, indented and made safe for a terminal:
/// its last error lines (`error`, `fatal`, `undefined reference`; the compiler writes them to
/// stderr, which may come before its other output in the log), then its last lines, in the
/// log's order; `None` for an empty log.
fn build_tail(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return None;
    }
    let is_error = |l: &str| {
        let l = l.to_ascii_lowercase();
        l.contains("error") || l.contains("fatal") || l.contains("undefined reference")
    };
    let tail_from = lines.len().saturating_sub(BUILD_TAIL);
    let mut keep: Vec<usize> = (0..tail_from).filter(|&i| is_error(lines[i])).collect();
    keep.drain(..keep.len().saturating_sub(BUILD_ERRORS));
    keep.extend(tail_from..lines.len());
    let shown: Vec<String> = keep
        .iter()
        .map(|&i| format!("    {}", crate::ui::safe(&lines[i].chars().take(300).collect::<String>(), true)))
        .collect();
    Some(shown.join("\n"))
}

/// Builds the target when it is not built yet (the `BinariesMissing` step, with line info):
/// a binary of the recipe's build, or the program its run names, does not exist
/// (`Resolved::not_built`). True when it built. A failed build is the rung's error, naming its
/// log. The baseline and the hang rung (which replaces the baseline) both start so.
pub fn build_if_missing(io: &mut dyn RungIo, steps: &[Step]) -> Result<bool> {
    let Some(b) = io.recipe().build.clone() else { return Ok(false) };
    let Some(missing) = io.recipe().not_built(!io.in_container()) else { return Ok(false) };
    io.say(&format!(
        "`{missing}` does not exist yet: building the target first, with line info (`-lineinfo -g`)"
    ));
    create_binary_dirs(&b)?;
    let build = step(steps, When::BinariesMissing)?;
    let ran = exec(io, build)?;
    if !ran.success() {
        let log = format!("{}.log", build.stem);
        let logs = [io.dir().join(&log)];
        return Err(build_failed(io, "the recipe's build", ran, &logs, &log));
    }
    Ok(true)
}

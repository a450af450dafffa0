//! What the repro rung's two halves share (`repro` for Python, `repro_native` for C++): the
//! placeholder of the verdict's kernel, the reproducer's checked run ([`verify`]: under the GPU
//! coredump, its dump read and compared with the verdict) and the result it ends with
//! ([`finish`]: `repro/result.json` and the rung's note).
//!
//! Must not: run a step but through [`RungIo`], print, or decide when the rung runs.

use std::path::Path;
use std::time::{Instant, SystemTime};

use anyhow::{Context, Result};

use super::dumps::read_dumps;
use crate::bundle::inputs::scan_file;
use crate::bundle::{layout, InputsRecord};
use crate::findings::repro::{check, Expected, Outcome, Status};
use crate::findings::verdict::decide;
use crate::ladder::rung::api::{exec, step, Ran, RungIo, Step, When};

/// Stands for the verdict's kernel (a Triton function's name, or an operator's kernel) in the
/// capture run's environment.
pub const SUSPECT_KERNEL: &str = "<the verdict's kernel>";

/// Runs the reproducer under the GPU coredump, reads its dump and checks it against the
/// verdict (`outcome.expected`); `clean_why`: what to say when it ran clean.
pub fn verify(
    io: &mut dyn RungIo,
    steps: &[Step],
    dir: &Path,
    outcome: &mut Outcome,
    clean_why: Option<String>,
) -> Result<()> {
    let started = SystemTime::now();
    let clock = Instant::now();
    let repro_ran = exec(io, step(steps, When::Reproducer)?)?;
    outcome.seconds = Some((clock.elapsed().as_secs_f64() * 10.0).round() / 10.0);
    read_dumps(io, steps, When::PerDump, started, repro_ran)?;
    outcome.seen = seen_in(dir);
    match check(&outcome.expected, outcome.seen.as_ref()) {
        Ok(()) => outcome.status = Status::Verified,
        Err(why) => {
            outcome.status = Status::DidNotReproduce;
            if outcome.seen.is_none() {
                if let Some(floats) = clean_why {
                    outcome.notes.insert(0, floats);
                }
            }
            outcome.notes.insert(0, format!("{why} ({})", repro_ran.text()));
        }
    }
    Ok(())
}

/// What the reproducer's dump says: the verdict of cuda-gdb's logs on it.
fn seen_in(dir: &Path) -> Option<Expected> {
    let mut evidence = Vec::new();
    for entry in std::fs::read_dir(dir).ok()? {
        let path = entry.ok()?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name.starts_with("cudagdb-") && name.ends_with(".log") {
            evidence.extend(scan_file(&path).ok());
        }
    }
    decide(&evidence).verdict.as_ref().map(Expected::of)
}

/// Writes `result.json` and says what the rung came to.
pub fn finish(io: &mut dyn RungIo, dir: &Path, outcome: Outcome, capture_clean: bool) -> Result<Ran> {
    let line = match outcome.status {
        Status::Verified => format!(
            "reproducer verified: {} faults alone with {} ({} s)",
            outcome.script.as_deref().unwrap_or_default(),
            outcome.expected.text(),
            outcome.seconds.unwrap_or_default()
        ),
        Status::DidNotReproduce => format!(
            "reproducer written ({}) but it did not reproduce: {}",
            outcome.script.as_deref().unwrap_or_default(),
            outcome.notes.first().map(String::as_str).unwrap_or("see result.json")
        ),
        Status::NotWritten => format!(
            "no reproducer: {}",
            outcome.notes.last().map(String::as_str).unwrap_or("nothing was captured")
        ),
    };
    let json = serde_json::to_string_pretty(&outcome).context("cannot serialise the reproducer's result")?;
    let path = dir.join(layout::REPRO_RESULT);
    std::fs::write(&path, json + "\n").with_context(|| format!("cannot write {}", path.display()))?;
    io.note(line);
    Ok(Ran { faulted: !capture_clean, yielded: outcome.status == Status::Verified, ..Ran::default() })
}

/// The capture of the process that faulted among a run's (`<prefix><pid>.json` in `dir`, one
/// file per process that launched the kernel): the one written last, since the faulting process
/// stops launching at its fault; with how many others there were. A file that does not read is
/// a note.
pub fn latest_capture<T>(
    dir: &Path,
    prefix: &str,
    parse: fn(&str) -> Result<T>,
    notes: &mut Vec<String>,
) -> Result<Option<(T, usize)>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if !(name.starts_with(prefix) && name.ends_with(".json")) {
            continue;
        }
        match crate::files::read_bounded(&path, 64 << 20).and_then(|t| parse(&t)) {
            Ok(c) => {
                let at =
                    std::fs::metadata(&path).and_then(|m| m.modified()).unwrap_or(SystemTime::UNIX_EPOCH);
                found.push((c, at));
            }
            Err(e) => notes.push(format!("{} was not read: {e:#}", path.display())),
        }
    }
    Ok(crate::findings::repro::capture::choose(found))
}

/// Says that the reproducer `script` and the capture files (`prefix*.json`) in `dir` hold the
/// program's input values (`values`: how many, from which arguments), when they do: on the
/// terminal, in the rung's notes and in the manifest, where `bundle pack` finds what to leave
/// out unless `--with-inputs`.
pub fn holds_inputs(
    io: &mut dyn RungIo,
    dir: &Path,
    prefix: &str,
    script: &str,
    values: Option<(u64, Vec<String>)>,
) {
    let Some((values, from)) = values else { return };
    let mut files = vec![script.to_string()];
    if let Ok(entries) = std::fs::read_dir(dir) {
        let mut names: Vec<String> = entries
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|n| n.starts_with(prefix) && n.ends_with(".json"))
            .collect();
        names.sort();
        files.extend(names);
    }
    for f in files {
        let file = format!("{}/{f}", layout::repro_dir());
        io.holds_inputs(InputsRecord { file, values, from: from.clone() });
    }
}

/// The note for a capture chosen among `others + 1` processes'.
pub fn others_note(others: usize, pid: u32) -> Option<String> {
    (others > 0).then(|| {
        format!(
            "{} processes launched the kernel; the reproducer is written from the one whose launch came last \
             (pid {pid})",
            others + 1
        )
    })
}

//! The files of a bundle that hold the program's input values (issue 42): a reproducer's
//! integer storages copied from the faulting launch and the captures they came from, which can
//! be a prompt's token ids. What the manifest's `inputs` records, and for a bundle written
//! before it did, what the captures in the repro folder hold, told by reading them.
//!
//! Must not: print, or quote a value (only counts and argument names leave this file).

use std::path::Path;

use super::layout;
use super::manifest::{InputsRecord, Manifest};
use crate::findings::repro::{capture, native};

/// The captures this reads, at most, and the largest it reads.
const MAX_CAPTURES: usize = 64;
const MAX_CAPTURE_BYTES: u64 = 64 << 20;

/// Every file of the bundle at `root` that holds input values: the manifest's records, then
/// the captures in the repro folder that hold values and the reproducer written from them.
/// Sorted by file, each once.
pub fn inputs_in(root: &Path, m: Option<&Manifest>) -> Vec<InputsRecord> {
    let mut out: Vec<InputsRecord> = m.iter().flat_map(|m| &m.rungs).flat_map(|r| r.inputs.clone()).collect();
    let dir = root.join(layout::repro_dir());
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|r| r.flatten().filter_map(|e| e.file_name().to_str().map(str::to_string)).collect())
        .unwrap_or_default();
    names.sort();
    for name in names.iter().filter(|n| n.ends_with(".json")).take(MAX_CAPTURES) {
        let native = name.starts_with(layout::NATIVE_CAPTURE_PREFIX);
        if !native && !name.starts_with(layout::CAPTURE_PREFIX) {
            continue;
        }
        let Ok(text) = crate::files::read_bounded(&dir.join(name), MAX_CAPTURE_BYTES) else { continue };
        let values = if native {
            native::parse(&text).ok().and_then(|c| c.input_values())
        } else {
            capture::parse(&text).ok().and_then(|c| c.input_values())
        };
        let Some((values, from)) = values else { continue };
        let script = if native { layout::REPRO_DRIVER } else { layout::REPRO_SCRIPT };
        for f in [name.as_str(), script] {
            let file = format!("{}/{f}", layout::repro_dir());
            if dir.join(f).is_file() && !out.iter().any(|r| r.file == file) {
                out.push(InputsRecord { file, values, from: from.clone() });
            }
        }
    }
    out.sort_by(|a, b| a.file.cmp(&b.file));
    out.dedup_by(|a, b| a.file == b.file);
    out
}

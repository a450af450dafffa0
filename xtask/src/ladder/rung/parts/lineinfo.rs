//! What the rungs that build with line info share: the `NVCC_PREPEND_FLAGS` such a build gets,
//! and the check that its binaries really carry line info (`cuobjdump -elf` on each, the
//! line-info sections counted, the table written into the rung's folder). The rebuild, the
//! armed baseline (binaries that existed already) and the rebuild of a Python target's
//! run-time builds (the extension libraries its run built) use it.
//!
//! Must not: build anything, or read a `cuobjdump` log whole (a large library's is far more
//! than should be held in memory).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::bundle::layout;
use crate::ladder::rung::api::{exec, Debug, RungIo, Step, When};
use crate::model::{Invocation, Role};
use crate::recipe::Step as RecipeStep;

/// `NVCC_PREPEND_FLAGS` of a build with line info: the debug level's flags, then those the
/// ladder was started with.
pub fn prepend_flags(debug: Debug, inherited_prepend: Option<&str>) -> String {
    match inherited_prepend.filter(|s| !s.trim().is_empty()) {
        Some(prev) => format!("{} {prev}", debug.flags()),
        None => debug.flags(),
    }
}

/// `cuobjdump -elf BINARY`.
pub fn lineinfo_check(binary: &Path) -> Invocation {
    Invocation {
        timeout: Some(std::time::Duration::from_secs(120)),
        ..Invocation::new(vec!["cuobjdump".into(), "-elf".into(), binary.display().to_string()])
    }
}

/// Line-info sections in `cuobjdump -elf` output (`.nv_debug_line_sass`, `.debug_line`), read
/// line by line: `cuobjdump -elf` of a large library (vLLM's `_C.abi3.so`) prints far more than
/// should be held in memory.
fn count_line_sections_in(reader: impl std::io::BufRead) -> usize {
    reader.split(b'\n').map_while(Result::ok).filter(|l| l.windows(10).any(|w| w == b"debug_line")).count()
}

/// Runs the `cuobjdump` steps (one per binary of `binaries`, in order), writes the line-info
/// table into the rung's folder and says whether every binary has line info; a binary without
/// is noted.
pub fn check_lineinfo<'s>(
    io: &mut dyn RungIo,
    binaries: &[PathBuf],
    checks: impl Iterator<Item = &'s Step>,
    when: &str,
) -> Result<bool> {
    let mut table = String::new();
    let mut all_ok = true;
    for (bin, check) in binaries.iter().zip(checks) {
        let ran = exec(io, check)?;
        let n = std::fs::File::open(layout::logs(io.dir(), &check.stem).0)
            .map(|f| count_line_sections_in(std::io::BufReader::new(f)))
            .unwrap_or(0);
        table.push_str(&format!("{}\t{n} line-info sections\t{}\n", bin.display(), ran.text()));
        if n == 0 {
            all_ok = false;
            io.note(format!(
                "`{}` has no line info {when}: the build may not use nvcc, may ignore \
                     NVCC_PREPEND_FLAGS, or may not have rebuilt it",
                bin.display()
            ));
        }
    }
    let table_path = io.dir().join(layout::LINEINFO_TABLE);
    std::fs::write(&table_path, table).with_context(|| format!("cannot write `{}`", table_path.display()))?;
    Ok(all_ok)
}

/// The `cuobjdump -elf` step of each binary, run `when`.
pub fn lineinfo_checks(b: &RecipeStep, when: When) -> Vec<Step> {
    b.binaries
        .iter()
        .enumerate()
        .map(|(i, bin)| {
            Step::new(Role::Cuobjdump, lineinfo_check(bin), format!("cuobjdump-{}", i + 1)).when(when)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count_line_sections(cuobjdump_elf: &str) -> usize {
        count_line_sections_in(cuobjdump_elf.as_bytes())
    }

    #[test]
    fn counts_line_sections_in_real_cuobjdump_output() {
        // Recorded with cuobjdump 13.5 from PyPI (tests/fixtures/toolchain/README.md).
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/toolchain");
        let plain = std::fs::read_to_string(format!("{dir}/cuobjdump-elf-plain.txt")).unwrap();
        let li = std::fs::read_to_string(format!("{dir}/cuobjdump-elf-lineinfo.txt")).unwrap();
        assert_eq!(count_line_sections(&plain), 0);
        assert_eq!(count_line_sections(&li), 10);
    }
}

//! Rung 2, rebuild: the recipe's build with `NVCC_PREPEND_FLAGS=-lineinfo` (or `-G`) and
//! compilation caches unable to serve stale objects; then `cuobjdump -elf` on each binary
//! to check that line info is really there.

use std::path::Path;

use super::{from_step, with_options, Invocation};
use crate::recipe::{Resolved, Step};

/// The debug information asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Debug {
    /// `-lineinfo`: source lines, optimised code (the default).
    LineInfo,
    /// `-G`: full device debug info, locals and arguments, unoptimised code.
    Full,
}

impl Debug {
    pub fn flag(self) -> &'static str {
        match self {
            Debug::LineInfo => "-lineinfo",
            Debug::Full => "-G",
        }
    }
}

/// The build, as the recipe has it, with line info added and caches bypassed.
pub fn invocation(r: &Resolved, build: &Step, debug: Debug, inherited_prepend: Option<&str>) -> Invocation {
    let mut inv = from_step(build);
    let flags = match inherited_prepend.filter(|s| !s.trim().is_empty()) {
        Some(prev) => format!("{} {prev}", debug.flag()),
        None => debug.flag().to_string(),
    };
    inv.set("NVCC_PREPEND_FLAGS", flags);
    // ccache would hand back the objects built without line info.
    inv.set("CCACHE_DISABLE", "1");
    // sccache cannot be disabled by a variable, but it can be told to recompile and re-cache.
    inv.set("SCCACHE_RECACHE", "1");
    with_options(inv, r, "rebuild")
}

/// The plain build that makes the target exist before the baseline, when it does not yet.
pub fn plain_build(build: &Step) -> Invocation {
    from_step(build)
}

/// `cuobjdump -elf BINARY`.
pub fn lineinfo_check(binary: &Path) -> Invocation {
    Invocation {
        argv: vec!["cuobjdump".into(), "-elf".into(), binary.display().to_string()],
        cwd: None,
        env_set: vec![],
        env_remove: vec![],
        timeout: Some(std::time::Duration::from_secs(120)),
    }
}

/// Line-info sections in `cuobjdump -elf` output (`.nv_debug_line_sass`, `.debug_line`).
pub fn count_line_sections(cuobjdump_elf: &str) -> usize {
    count_line_sections_in(cuobjdump_elf.as_bytes())
}

/// The same, read line by line: `cuobjdump -elf` of a large library (vLLM's `_C.abi3.so`)
/// prints far more than should be held in memory.
pub fn count_line_sections_in(reader: impl std::io::BufRead) -> usize {
    reader.split(b'\n').map_while(Result::ok).filter(|l| l.windows(10).any(|w| w == b"debug_line")).count()
}

#[cfg(test)]
mod tests {
    use super::*;

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

//! Per-rank views of a rung's logs under the Slurm launcher: `srun --label` interleaves every
//! task's lines as `N: LINE`; after the rung, each task's lines (label stripped) are also
//! written to `ranks/rank-N.stdout.log` and `.stderr.log` in the rung's folder, so that a
//! reader opens one rank's output. The combined logs stay what the analysis reads: files under
//! `ranks/` are copies ([`super::inputs::is_rung_output`] skips them).
//!
//! Must not: change the combined logs, or take a program's own `N: ` lines for labels before
//! the launcher's placement line (`N: debug-ima: task N on node NODE`) of that task.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};

use super::layout;
use crate::model::launcher::PLACED;

pub use super::layout::RANKS_DIR;
/// The most ranks given a file of their own; the lines of others stay in the combined log.
const MAX_RANKS: usize = 1024;

/// The task label `N: ` at the start of `line`, and the rest (`srun --label` pads the id
/// with spaces to the widest).
fn label(line: &str) -> Option<(u32, &str)> {
    let t = line.trim_start_matches(' ');
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 6 || line.len() - t.len() > 6 {
        return None;
    }
    let rest = t[digits..].strip_prefix(": ")?;
    Some((t[..digits].parse().ok()?, rest))
}

/// Splits the rung's `stdout.log` and `stderr.log` in `dir` by task label into
/// `dir/ranks/rank-N.{stdout,stderr}.log`, from each task's placement line on. Returns how
/// many ranks got files (0: no placement line, nothing written).
pub fn split(dir: &Path) -> Result<usize> {
    let mut ranks = std::collections::BTreeSet::new();
    for (log, stream) in [(layout::STDOUT, "stdout"), (layout::STDERR, "stderr")] {
        let path = dir.join(log);
        let Ok(f) = crate::files::open_regular(&path) else { continue };
        let mut placed = std::collections::BTreeSet::new();
        let mut out: BTreeMap<u32, BufWriter<std::fs::File>> = BTreeMap::new();
        let mut reader = BufReader::new(f);
        let mut raw = Vec::new();
        loop {
            raw.clear();
            let n = reader
                .read_until(b'\n', &mut raw)
                .with_context(|| format!("cannot read `{}`", path.display()))?;
            if n == 0 {
                break;
            }
            let line = String::from_utf8_lossy(&raw);
            let Some((task, rest)) = label(&line) else { continue };
            if rest.starts_with(&format!("{PLACED}{task} on node ")) {
                placed.insert(task);
            }
            if !placed.contains(&task) {
                continue;
            }
            if !out.contains_key(&task) {
                if out.len() >= MAX_RANKS {
                    continue;
                }
                let folder = dir.join(RANKS_DIR);
                std::fs::create_dir_all(&folder)
                    .with_context(|| format!("cannot create `{}`", folder.display()))?;
                let p = folder.join(layout::rank_log(task, stream));
                let w =
                    std::fs::File::create(&p).with_context(|| format!("cannot write `{}`", p.display()))?;
                out.insert(task, BufWriter::new(w));
            }
            let w = out.get_mut(&task).expect("inserted above");
            w.write_all(rest.as_bytes()).context("cannot write a per-rank log")?;
            ranks.insert(task);
        }
        for (_, mut w) in out {
            w.flush().context("cannot write a per-rank log")?;
        }
    }
    Ok(ranks.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_read_as_srun_pads_them() {
        assert_eq!(label("1: launched"), Some((1, "launched")));
        assert_eq!(label(" 7: x"), Some((7, "x")));
        assert_eq!(label("12:34: x"), None);
        assert_eq!(label("x: y"), None);
    }

    #[test]
    fn each_task_gets_its_lines_from_its_placement_line_on() {
        let dir = std::env::temp_dir().join(format!("debug-ima-ranks-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // As srun printed a run of the stand-in on CI's cluster (tests/it/slurm.rs).
        std::fs::write(
            dir.join(layout::STDERR),
            "0: 3: a line of the program before its task was placed\n1: debug-ima: task 1 on node node2\n\
             0: debug-ima: task 0 on node node1\n0: clean run finished\n1: launched scale_write\n\
             srun: error: node2: task 1: Aborted\n",
        )
        .unwrap();
        assert_eq!(split(&dir).unwrap(), 2);
        let read = |n: &str| std::fs::read_to_string(dir.join(RANKS_DIR).join(n)).unwrap();
        assert_eq!(read("rank-0.stderr.log"), "debug-ima: task 0 on node node1\nclean run finished\n");
        assert_eq!(read("rank-1.stderr.log"), "debug-ima: task 1 on node node2\nlaunched scale_write\n");
        assert!(!dir.join(RANKS_DIR).join("rank-0.stdout.log").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

//! The labelled output of a launcher of several ranks (Slurm's `srun --label`, the ssh
//! fan-out's own labels, both `N: text`) and the placement line each rank prints first
//! ([`PLACED`]): which rank a line is, and on which node a rank runs.
//!
//! Must not: know which launcher labelled the lines, or read anything but the line given.

use crate::model::launcher::PLACED;

/// The task of a line srun labelled (`--label`): `1: text` is task 1's.
pub fn task_of(line: &str) -> Option<u32> {
    let (head, _) = line.split_once(": ")?;
    head.trim().parse().ok()
}

/// The task and node a labelled placement line names (`1: debug-ima: task 1 on node node2`).
pub fn placement(line: &str) -> Option<(u32, String)> {
    let task = task_of(line)?;
    let (_, rest) = line.split_once(PLACED)?;
    let (n, node) = rest.trim_end().split_once(" on node ")?;
    let n: u32 = n.parse().ok()?;
    (n == task && !node.is_empty() && !node.contains(char::is_whitespace)).then(|| (task, node.to_string()))
}

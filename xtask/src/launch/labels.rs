//! The labelled output of a launcher of several ranks (Slurm's `srun --label`, the ssh
//! fan-out's own labels, both `N: text`) and the placement line each rank prints first
//! ([`PLACED`]): which rank a line is, and on which node a rank runs.
//!
//! Must not: know which launcher labelled the lines, or read anything but the line given.

use crate::model::launcher::{placed, Placed};

/// The task of a line srun labelled (`--label`): `1: text` is task 1's.
pub fn task_of(line: &str) -> Option<u32> {
    let (head, _) = line.split_once(": ")?;
    head.trim().parse().ok()
}

/// The task and node a labelled placement line names (`1: debug-ima: task 1 on node node2
/// pid 42`).
pub fn placement(line: &str) -> Option<(u32, String)> {
    placed_at(line).map(|p| (p.task, p.node))
}

/// All a labelled placement line says, its pid too; its label must be its task.
pub fn placed_at(line: &str) -> Option<Placed> {
    let task = task_of(line)?;
    let (_, rest) = line.split_once(": ")?;
    let p = placed(rest.trim_end())?;
    (p.task == task).then_some(p)
}

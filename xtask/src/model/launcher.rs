//! The launchers by name: how the target's runs are started, on this host, through Slurm's
//! `srun` inside an allocation, or through `ssh` on a list of hosts (what `--launcher` and a
//! recipe's `launch:` say). The commands each launcher is given are `launch::slurm`'s and
//! `launch::ssh`'s.
//!
//! Must not: build or run commands.

use serde::{Deserialize, Serialize};

/// What each task prints (to stderr, labelled by srun) before it becomes the command, as
/// `debug-ima: task N on node NODE pid PID`: the launcher writes it, the triage, the per-rank
/// logs and the hang rung read it ([`placed`]; a program's own `N: ` lines before it are no
/// task labels).
pub const PLACED: &str = "debug-ima: task ";

/// Where a rank runs, as its placement line says (`debug-ima: task 1 on node node2 pid 4242`,
/// its label stripped; lines written before the pid was added end after the node).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    pub task: u32,
    pub node: String,
    /// The rank's process (the command `exec`s in the shell that printed the line).
    pub pid: Option<u32>,
}

/// The placement line `t` (label stripped), if it is one: the task, a node name without
/// whitespace, and the pid when the line has one.
pub fn placed(t: &str) -> Option<Placed> {
    let rest = t.strip_prefix(PLACED)?;
    let (task, place) = rest.split_once(" on node ")?;
    let mut words = place.split_whitespace();
    let node = words.next()?.to_string();
    let pid = match (words.next(), words.next(), words.next()) {
        (None, ..) => None,
        (Some("pid"), Some(p), None) => Some(p.parse().ok()?),
        _ => return None,
    };
    Some(Placed { task: task.parse().ok()?, node, pid })
}

/// How the target's runs are started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Launcher {
    /// On this host (or in its container), as a child of the tool.
    #[default]
    Host,
    /// Through `srun` in the Slurm allocation the tool runs in (salloc, sbatch).
    Slurm,
    /// One rank per host of `--hosts`, each through `ssh` (a cluster without Slurm).
    Ssh,
}

impl Launcher {
    pub const ALL: [Launcher; 3] = [Launcher::Host, Launcher::Slurm, Launcher::Ssh];

    pub fn name(self) -> &'static str {
        match self {
            Launcher::Host => "host",
            Launcher::Slurm => "slurm",
            Launcher::Ssh => "ssh",
        }
    }

    pub fn parse(s: &str) -> Option<Launcher> {
        Launcher::ALL.into_iter().find(|l| l.name() == s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_lines_with_and_without_the_pid() {
        let p = |t: &str| placed(t).map(|p| (p.task, p.node, p.pid));
        assert_eq!(p("debug-ima: task 1 on node node2 pid 4242"), Some((1, "node2".into(), Some(4242))));
        assert_eq!(p("debug-ima: task 0 on node 127.0.0.1:2201"), Some((0, "127.0.0.1:2201".into(), None)));
        for bad in [
            "debug-ima: task x on node n",
            "debug-ima: task 1 on node ",
            "debug-ima: task 1 on node n pid x",
            "debug-ima: task 1 on node n pid 1 more",
            "debug-ima: task 1 on node two words",
            "task 1 on node n",
        ] {
            assert_eq!(p(bad), None, "{bad}");
        }
    }
}

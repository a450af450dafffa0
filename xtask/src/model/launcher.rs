//! The launchers by name: how the target's runs are started, on this host, through Slurm's
//! `srun` inside an allocation, or through `ssh` on a list of hosts (what `--launcher` and a
//! recipe's `launch:` say). The commands each launcher is given are `launch::slurm`'s and
//! `launch::ssh`'s.
//!
//! Must not: build or run commands.

use serde::{Deserialize, Serialize};

/// What each task prints (to stderr, labelled by srun) before it becomes the command, as
/// `debug-ima: task N on node NODE`: the launcher writes it, the triage and the per-rank logs
/// read it (a program's own `N: ` lines before it are no task labels).
pub const PLACED: &str = "debug-ima: task ";

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

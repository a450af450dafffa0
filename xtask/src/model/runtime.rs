//! The container runtimes by name: what recipes, the command line and the manifest say.
//! The commands each runtime is given are `launch::container`'s.
//!
//! Must not: build or run commands.

use serde::{Deserialize, Serialize};

/// The container runtimes the ladder can wrap its commands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Runtime {
    Docker,
    Podman,
    Apptainer,
    /// On the host: no container.
    None,
}

impl Runtime {
    pub const ALL: [Runtime; 4] = [Runtime::Docker, Runtime::Podman, Runtime::Apptainer, Runtime::None];

    pub fn name(self) -> &'static str {
        match self {
            Runtime::Docker => "docker",
            Runtime::Podman => "podman",
            Runtime::Apptainer => "apptainer",
            Runtime::None => "none",
        }
    }

    pub fn parse(s: &str) -> Option<Runtime> {
        Runtime::ALL.into_iter().find(|r| r.name() == s)
    }
}

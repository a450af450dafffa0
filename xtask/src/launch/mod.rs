//! Where a process runs: on the host, or in the layers the run's launchers put around it
//! (`stack`: a container, and around it Slurm's job steps or ssh's ranks), each launcher one
//! value of its own file (`container`, `slurm`, `ssh`), the ranks' labels read by `labels`
//! for Slurm and ssh.
//!
//! Must not: decide what runs (the ladder) or write the bundle; hold code of its own (it
//! declares the launchers and re-exports).

pub mod container;
pub mod images;
pub mod labels;
pub mod slurm;
pub mod ssh;
pub mod stack;

pub use stack::{run_short, Access, Launch, Launchers, Layer, Place, CLEANUP_TIMEOUT};

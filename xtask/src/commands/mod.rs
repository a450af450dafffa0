//! One file per subcommand: each takes its parsed arguments, does its work through the
//! layers below, and returns an [`Outcome`] for `cli` to turn into an exit status.
//!
//! Must not: choose exit numbers (that is `cli`), print other than through `ui`, or spawn
//! processes other than through `process`.

pub mod ablate;
pub mod analyze;
pub mod args;
pub mod bench;
pub mod builtin_files;
pub mod bundle;
pub mod bundle_files;
pub mod bundle_prune;
pub mod completions;
pub mod container;
pub mod debug_ima;
pub mod doctor;
pub mod dump;
pub mod man;
pub mod preflight;
pub mod recipe;
pub mod seal;
pub mod watch;

/// How a command ended, for `cli` to map to an exit status. Errors are `Err`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It did what was asked (the ladder ran, with or without a verdict).
    Done,
    /// The ladder ran and located a fault (a verdict): success, or the status
    /// `--error-exitcode` asks for, as compute-sanitizer's option does.
    Located,
    /// It ran, and what it checked does not hold (`bundle verify` found a changed file).
    Mismatch,
    /// Ctrl-C or SIGTERM stopped it; what was collected is kept.
    Interrupted,
    /// It ran a job whose exit status is its own (`watch`): the job's code, or 128 + the
    /// signal that ended it.
    Exited(crate::model::Exit),
}

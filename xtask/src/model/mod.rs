//! Typed identities and values every layer shares: rung ids, process invocations and exits,
//! container runtimes, and the errors whose kind decides the exit (usage, a prompt ended).
//! The bottom of the house: it imports nothing of the crate.
//!
//! Must not: run processes, read files, print or decide anything.

pub mod duration;
pub mod error;
pub mod exit;
pub mod invocation;
pub mod launcher;
pub mod need;
pub mod rung;
pub mod runtime;
pub mod text;

pub use error::{PromptEnd, Usage};
pub use exit::{Exit, Role, Stream};
pub use invocation::{quote, Invocation};
pub use launcher::Launcher;
pub use need::Need;
pub use rung::RungId;
pub use runtime::Runtime;

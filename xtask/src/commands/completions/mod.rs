//! `completions bash|zsh|fish`: shell completion scripts for the tool, made from the command
//! line's own definition (every subcommand, nested ones and their aliases, each one's options
//! and value choices), so that they cannot drift from what the parser accepts: one walk of the
//! clap `Command` ([`walk`], which `man` reads too), one file per shell.
//!
//! Must not: hold code (it declares and re-exports).

pub mod bash;
pub mod fish;
pub mod script;
pub mod walk;
pub mod zsh;

pub use script::{run, Shell};

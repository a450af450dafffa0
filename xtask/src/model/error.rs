//! The errors whose kind decides the exit, as types: a [`Usage`] error (the command line or
//! the recipe's variables were wrong: `cli` exits 2), and the end of a prompt by the user
//! ([`PromptEnd`]: Ctrl-C, or Esc / `q` at a selection), which the command treats as an
//! interruption. Commands return them inside `anyhow::Error`; `cli` finds them in the chain.
//!
//! Must not: hold exit numbers (only `cli.rs` does), print or decide anything.

use std::fmt;

/// A usage error: what the user typed (or left out) cannot work, and the message says what
/// to type instead. `cli` exits with the usage status for it, wherever it is in the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usage(pub String);

impl Usage {
    /// A usage error as an `anyhow::Error`, ready to return.
    pub fn error(message: impl Into<String>) -> anyhow::Error {
        anyhow::Error::new(Usage(message.into()))
    }

    /// Whether `e`, or an error it wraps, is a usage error.
    pub fn is_in(e: &anyhow::Error) -> bool {
        e.chain().any(|c| c.is::<Usage>())
    }
}

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// How the user ended a prompt without answering it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptEnd {
    /// Ctrl-C at the prompt (the terminal was in raw mode, so no SIGINT came).
    Interrupted,
    /// Esc or `q` at a selection.
    Cancelled,
}

impl PromptEnd {
    /// The prompt's end in `e`'s chain, if the error is one.
    pub fn of(e: &anyhow::Error) -> Option<PromptEnd> {
        e.chain().find_map(|c| c.downcast_ref::<PromptEnd>().copied())
    }
}

impl fmt::Display for PromptEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PromptEnd::Interrupted => "interrupted at the prompt (Ctrl-C)",
            PromptEnd::Cancelled => "cancelled at the prompt (Esc or `q`)",
        })
    }
}

impl std::error::Error for PromptEnd {}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn kinds_are_found_through_context() {
        let e =
            Err::<(), _>(Usage::error("`--set x`: expected NAME=VALUE")).context("debug-ima").unwrap_err();
        assert!(Usage::is_in(&e));
        assert_eq!(format!("{e:#}"), "debug-ima: `--set x`: expected NAME=VALUE");
        assert!(!Usage::is_in(&anyhow::anyhow!("plain")));
        let p = Err::<(), _>(anyhow::Error::new(PromptEnd::Cancelled)).context("recipe").unwrap_err();
        assert_eq!(PromptEnd::of(&p), Some(PromptEnd::Cancelled));
        assert_eq!(PromptEnd::of(&e), None);
    }
}

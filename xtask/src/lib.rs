//! The xtask library: every command of `cargo xtask`. `main.rs` only calls [`cli::main`].
//!
//! The layers, each importing only those below it (tests/tidy.rs enforces the table):
//! `cli` → `commands` → `ladder`, `doctor` → `launch` → `process` → `bundle`, `recipe` →
//! `findings`, `redact` → `ui` → `model`, `files`. docs/ARCHITECTURE.md has the map.
pub mod bundle;
pub mod cli;
pub mod commands;
pub mod doctor;
pub mod files;
pub mod findings;
pub mod ladder;
pub mod launch;
pub mod model;
pub mod process;
pub mod recipe;
pub mod redact;
pub mod ui;

/// docs/ARCHITECTURE.md, compiled by `cargo test --doc`: its "Adding a rung" example is a rung
/// written against the crate's public paths, so the page cannot drift from the `Rung` trait.
#[cfg(doctest)]
#[doc = include_str!("../../docs/ARCHITECTURE.md")]
mod architecture_doc {}

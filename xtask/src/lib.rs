//! The xtask library: every command of `cargo xtask`. `main.rs` only calls [`cli::main`].
//!
//! The layers, each importing only those below it (tests/tidy.rs enforces the table):
//! `cli` → `commands` → `ladder`, `doctor` → `launch` → `process` → `bundle`, `recipe` →
//! `findings`, `redact` → `ui` → `model`, `files`. docs/ARCHITECTURE.md has the codemap.
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

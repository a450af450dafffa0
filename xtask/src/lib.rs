//! The xtask library: every command of `cargo xtask`. `main.rs` only calls [`cli::main`].
pub mod analyze;
pub mod bench;
pub mod cli;
pub mod findings;
pub mod ui;

//! The xtask library: every command of `cargo xtask`. `main.rs` only calls [`cli::main`].
pub mod analyze;
pub mod archive;
pub mod bench;
pub mod bundle;
pub mod bundle_cmd;
pub mod cli;
pub mod debug_ima;
pub mod doctor;
pub mod exec;
pub mod findings;
pub mod ladder;
pub mod recipe;
pub mod redact;
pub mod replay;
pub mod report;
pub mod rungs;
pub mod ui;

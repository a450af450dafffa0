//! `debug-ima`: the installed entry point (`cargo install --path xtask --locked --bin
//! debug-ima`), the same tool as `cargo xtask` in the clone, run from any folder. Exactly
//! `src/main.rs` under another name; the help names the tool as it was started.
//!
//! Must not: do anything but hand over to `xtask::cli::main` and exit with its status.
fn main() {
    std::process::exit(xtask::cli::main());
}

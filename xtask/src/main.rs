//! `cargo xtask`: entry point. Parses the command line and dispatches; nothing else lives here.
fn main() {
    std::process::exit(xtask::cli::main());
}

//! `completions SHELL`: the script for that shell on stdout, for the name the tool was started
//! under. `source <(debug-ima completions bash)`, or save it where the shell looks:
//! `~/.local/share/bash-completion/completions/debug-ima`, `_debug-ima` in a folder on zsh's
//! `$fpath`, `~/.config/fish/completions/debug-ima.fish`.
//!
//! Must not: print other than the script (through `ui`), or read anything.

use super::{bash, fish, walk, zsh};
use crate::commands::Outcome;
use crate::ui;

/// The shells a script is made for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// The script for `shell`, for the binary `name`, whose command line is `cli`.
pub fn script(cli: &clap::Command, shell: Shell, name: &str) -> String {
    let root = walk::tree(cli);
    match shell {
        Shell::Bash => bash::script(&root, name),
        Shell::Zsh => zsh::script(&root, name),
        Shell::Fish => fish::script(&root, name),
    }
}

/// `completions SHELL`: the script on stdout; `cli` is the command line's definition (`cli`
/// passes it: commands do not use `cli`).
pub fn run(cli: &clap::Command, shell: Shell) -> anyhow::Result<Outcome> {
    let text = script(cli, shell, &walk::binary_name(&ui::tool_name()));
    ui::out(&text).map_err(|e| anyhow::anyhow!("cannot write to stdout: {e}"))?;
    Ok(Outcome::Done)
}

//! The command line's definition as plain data, for what is generated from it (`completions
//! bash|zsh|fish`, `man`): every visible command, nested, with its aliases, its options (short
//! and long, the values a value option takes) and its positional arguments, read from the clap
//! `Command` that `cli` passes down. Read built, so that the global options (`-C`, `--color`,
//! `-q`, `-v`) are every command's too, each marked global. Hidden commands, options and values
//! are left out; clap's own `help` command and `--help`/`--version` are kept, marked.
//!
//! Must not: print, read anything, or know one shell's or one format's syntax.

/// One command: its name, its words and its subcommands.
#[derive(Debug, Clone)]
pub struct Node {
    /// Its name (the root's: whatever the `Command` is called; the generators use the tool's).
    pub name: String,
    /// Every alias the parser accepts for it (`run` for `debug-ima`).
    pub aliases: Vec<String>,
    /// Its lead ([`summary`]), on one line (for a completion menu).
    pub about: String,
    /// Its whole description: paragraphs separated by a blank line.
    pub long_about: String,
    /// What its help prints after the options (the root's exit codes).
    pub after_help: String,
    pub options: Vec<Opt>,
    pub positionals: Vec<Positional>,
    pub subcommands: Vec<Node>,
    /// clap's own `help` command (`help bundle pack`), not one of the tool's.
    pub is_help_command: bool,
}

/// An option: `-s`, `--long` or both.
#[derive(Debug, Clone)]
pub struct Opt {
    pub short: Option<char>,
    pub long: Option<String>,
    /// Its lead ([`summary`]), on one line.
    pub help: String,
    /// Its whole help: paragraphs separated by a blank line.
    pub long_help: String,
    /// What it takes, when it takes a value.
    pub value: Option<Value>,
    /// Given more than once (`--set`, each one counts).
    pub repeatable: bool,
    /// Every command's (`global = true`).
    pub global: bool,
    /// clap's own `--help` or `--version`.
    pub builtin: bool,
}

/// What an option or a positional argument takes.
#[derive(Debug, Clone)]
pub struct Value {
    /// `DIR`, `WHEN`, `N`.
    pub name: String,
    /// The values it accepts, when it is one of a list (`auto always never`); else empty.
    pub choices: Vec<String>,
    /// Each choice's help (`""` where it has none), in the order of `choices`.
    pub choice_help: Vec<String>,
    /// A file or folder name.
    pub path: bool,
    /// Several values in one word, separated by it (`--rungs coredump,memcheck`).
    pub delimiter: Option<char>,
    /// What it is when not given.
    pub defaults: Vec<String>,
}

/// A positional argument.
#[derive(Debug, Clone)]
pub struct Positional {
    pub value: Value,
    pub help: String,
    pub long_help: String,
    pub required: bool,
    /// It takes any number of words (`bundle rm BUNDLE...`).
    pub many: bool,
    /// Only after `--` (`run -- ./app --n 4`): a command and its arguments.
    pub last: bool,
}

impl Node {
    /// Its name and aliases: every word that selects it.
    pub fn words(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.name.as_str()).chain(self.aliases.iter().map(String::as_str))
    }

    /// The subcommand that the tool runs when none is named (`debug-ima`, alias `run`): the
    /// options given before any subcommand are its.
    pub fn default_command(&self) -> Option<&Node> {
        self.subcommands.iter().find(|c| c.aliases.iter().any(|a| a == DEFAULT_ALIAS))
    }
}

impl Opt {
    /// Its option words, the long one first: `--quiet`, `-q`.
    pub fn flags(&self) -> Vec<String> {
        self.long.iter().map(|l| format!("--{l}")).chain(self.short.map(|s| format!("-{s}"))).collect()
    }
}

/// The alias under which the default command is known (`with_default_command` puts it in).
pub const DEFAULT_ALIAS: &str = "run";

/// The name the scripts and the page are for: the binary the user types, `debug-ima` once
/// installed, `xtask` in the clone (what `cargo xtask` runs).
pub fn binary_name(tool_name: &str) -> String {
    match tool_name {
        "cargo xtask debug-ima" => "xtask".to_string(),
        n => n.to_string(),
    }
}

/// The definition `cli` read into a tree, built so that global options are every command's.
pub fn tree(cli: &clap::Command) -> Node {
    let mut cli = cli.clone();
    cli.build();
    node(&cli)
}

fn node(cmd: &clap::Command) -> Node {
    let mut options = Vec::new();
    let mut positionals = Vec::new();
    for a in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        let long_help = text(a.get_long_help().or(a.get_help()));
        let help = summary(&text(a.get_help().or(a.get_long_help())));
        let action = a.get_action();
        let takes = action.takes_values();
        let many =
            matches!(action, clap::ArgAction::Append) || a.get_num_args().is_some_and(|r| r.max_values() > 1);
        let value = takes.then(|| Value {
            name: a
                .get_value_names()
                .and_then(|n| n.first())
                .map_or_else(|| a.get_id().as_str().to_uppercase(), |n| n.to_string()),
            choices: a
                .get_possible_values()
                .iter()
                .filter(|v| !v.is_hide_set())
                .map(|v| v.get_name().to_string())
                .collect(),
            choice_help: a
                .get_possible_values()
                .iter()
                .filter(|v| !v.is_hide_set())
                .map(|v| text(v.get_help()))
                .collect(),
            path: matches!(
                a.get_value_hint(),
                clap::ValueHint::AnyPath | clap::ValueHint::FilePath | clap::ValueHint::DirPath
            ),
            delimiter: a.get_value_delimiter(),
            defaults: a.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect(),
        });
        if a.is_positional() {
            let Some(value) = value else { continue };
            positionals.push(Positional {
                value,
                help,
                long_help,
                required: a.is_required_set(),
                many,
                last: a.is_last_set(),
            });
        } else {
            options.push(Opt {
                short: a.get_short(),
                long: a.get_long().map(str::to_string),
                help,
                long_help,
                value,
                repeatable: many || matches!(action, clap::ArgAction::Count),
                global: a.is_global_set(),
                builtin: matches!(
                    action,
                    clap::ArgAction::Help
                        | clap::ArgAction::HelpShort
                        | clap::ArgAction::HelpLong
                        | clap::ArgAction::Version
                ),
            });
        }
    }
    let subcommands = cmd.get_subcommands().filter(|c| !c.is_hide_set()).map(node).collect();
    let long_about = text(cmd.get_long_about().or(cmd.get_about()));
    Node {
        name: cmd.get_name().to_string(),
        aliases: cmd.get_all_aliases().map(str::to_string).collect(),
        about: summary(&text(cmd.get_about().or(cmd.get_long_about()))),
        long_about,
        after_help: text(cmd.get_after_long_help().or(cmd.get_after_help())),
        options,
        positionals,
        subcommands,
        is_help_command: cmd.get_name() == "help",
    }
}

fn text(s: Option<&clap::builder::StyledStr>) -> String {
    s.map(|s| s.to_string().trim().to_string()).unwrap_or_default()
}

/// The first paragraph's lead, on one line, for a menu: up to its first `. `, `: ` or `; `
/// outside brackets and backticks, without a full stop.
pub fn summary(text: &str) -> String {
    let para = text.split("\n\n").next().unwrap_or("");
    let line = para.split_whitespace().collect::<Vec<_>>().join(" ");
    let (mut depth, mut code) = (0i32, false);
    let mut cut = line.len();
    let bytes = line.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'`' => code = !code,
            b'(' | b'[' if !code => depth += 1,
            b')' | b']' if !code => depth -= 1,
            b'.' | b':' | b';' if !code && depth <= 0 && bytes.get(i + 1) == Some(&b' ') => {
                cut = i;
                break;
            }
            _ => {}
        }
    }
    line[..cut].trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_are_one_line_up_to_the_first_stop_outside_brackets() {
        assert_eq!(summary("List bundles.\n\nMore."), "List bundles");
        assert_eq!(summary("Check what\nis needed. And how."), "Check what is needed");
        assert_eq!(
            summary("Runs these (comma-separated; `all`: every rung): more"),
            "Runs these (comma-separated; `all`: every rung)"
        );
        assert_eq!(summary("Sets it: `--set a=b. c`"), "Sets it");
        assert_eq!(summary(""), "");
    }
}

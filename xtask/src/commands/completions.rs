//! `completions bash`: a Bash completion script for the tool, made from the command line's own
//! definition (every subcommand, nested ones, and each one's options and value choices), so that
//! it cannot drift from what the parser accepts. `source <(debug-ima completions bash)`, or save
//! it under `~/.local/share/bash-completion/completions/debug-ima`.
//!
//! Must not: print other than the script (through `ui`), or read anything.

use super::Outcome;
use crate::ui;

/// The shells a script is made for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    Bash,
}

/// One command's words: its path of subcommand names, its subcommands, its options (and
/// which of them take one of a list of values).
struct Node {
    path: Vec<String>,
    subcommands: Vec<String>,
    options: Vec<String>,
    choices: Vec<(String, Vec<String>)>,
}

fn walk(cmd: &clap::Command, path: Vec<String>, out: &mut Vec<Node>) {
    let mut options = Vec::new();
    let mut choices = Vec::new();
    for a in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        let values: Vec<String> = a
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| v.get_name().to_string())
            .collect();
        for flag in
            a.get_long().map(|l| format!("--{l}")).into_iter().chain(a.get_short().map(|s| format!("-{s}")))
        {
            if !values.is_empty() {
                choices.push((flag.clone(), values.clone()));
            }
            options.push(flag);
        }
    }
    options.extend(["--help".to_string(), "-h".to_string()]);
    let subs: Vec<&clap::Command> = cmd.get_subcommands().filter(|c| !c.is_hide_set()).collect();
    let subcommands = subs
        .iter()
        .flat_map(|c| {
            std::iter::once(c.get_name().to_string()).chain(c.get_all_aliases().map(str::to_string))
        })
        .collect();
    out.push(Node { path: path.clone(), subcommands, options, choices });
    for c in subs {
        let mut p = path.clone();
        p.push(c.get_name().to_string());
        walk(c, p, out);
        for alias in c.get_all_aliases() {
            let mut p = path.clone();
            p.push(alias.to_string());
            walk(c, p, out);
        }
    }
}

/// The Bash script for the binary `name` (`debug-ima`, or `xtask`) whose command line is `cli`.
pub fn bash(cli: &clap::Command, name: &str) -> String {
    let mut nodes = Vec::new();
    // Built, so that the global options (`-C`, `--color`, `-q`, `-v`) are every command's too.
    let mut cli = cli.clone();
    cli.build();
    walk(&cli, Vec::new(), &mut nodes);
    let func = format!("_{}", name.replace(|c: char| !c.is_ascii_alphanumeric(), "_"));
    let mut s = format!(
        "# Bash completion for {name} (`{name} completions bash`), made from its command line.\n\
         {func}() {{\n    local cur=\"${{COMP_WORDS[COMP_CWORD]}}\" prev=\"${{COMP_WORDS[COMP_CWORD-1]}}\" path=\"\" w i\n    \
         for ((i = 1; i < COMP_CWORD; i++)); do\n        w=\"${{COMP_WORDS[i]}}\"\n        \
         [[ $w == -- ]] && return 0\n        [[ $w == -* ]] && continue\n        \
         case \"$path $w\" in\n"
    );
    // `"$path $w"`: the words so far, then this one (a first word comes after a space).
    for n in nodes.iter().filter(|n| !n.path.is_empty()) {
        let (last, parent) = n.path.split_last().expect("not empty");
        let pattern = format!("{} {last}", parent.join(" "));
        s.push_str(&format!("            \"{pattern}\") path=\"{}\" ;;\n", n.path.join(" ")));
    }
    // The ladder is the default command: options before any subcommand are its.
    s.push_str("        esac\n    done\n    [[ -z $path && ( $cur == -* || $prev == -* ) ]] && path=run\n");
    s.push_str("    case \"$path\" in\n");
    for n in &nodes {
        let key = n.path.join(" ");
        s.push_str(&format!("        \"{key}\")\n            case \"$prev\" in\n"));
        for (flag, values) in &n.choices {
            s.push_str(&format!(
                "                {flag}) COMPREPLY=($(compgen -W \"{}\" -- \"$cur\")); return 0 ;;\n",
                values.join(" ")
            ));
        }
        s.push_str("            esac\n");
        s.push_str(&format!(
            "            if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W \"{}\" -- \"$cur\"));\n            \
             else COMPREPLY=($(compgen -W \"{}\" -- \"$cur\")); [[ ${{#COMPREPLY[@]}} -eq 0 ]] && COMPREPLY=($(compgen -f -- \"$cur\")); fi ;;\n",
            n.options.join(" "),
            if n.subcommands.is_empty() { String::new() } else { n.subcommands.join(" ") }
        ));
    }
    s.push_str(&format!("    esac\n}}\ncomplete -o filenames -F {func} {name}\n"));
    s
}

/// `completions SHELL`: the script on stdout, for the name the tool was started under; `cli` is
/// the command line's definition (`cli` passes it: commands do not use `cli`).
pub fn run(cli: &clap::Command, shell: Shell) -> anyhow::Result<Outcome> {
    let name = match ui::tool_name().as_str() {
        "cargo xtask debug-ima" => "xtask".to_string(),
        n => n.to_string(),
    };
    let text = match shell {
        Shell::Bash => bash(cli, &name),
    };
    ui::out(&text).map_err(|e| anyhow::anyhow!("cannot write to stdout: {e}"))?;
    Ok(Outcome::Done)
}

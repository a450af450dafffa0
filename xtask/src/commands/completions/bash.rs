//! `completions bash`: a Bash completion script made from the command line's tree
//! ([`walk`](super::walk)): each command path, its subcommands (or the choices of its first
//! positional argument), its options, and the values of its value options; options before any
//! subcommand are the ladder's (its default command).
//!
//! Must not: print or read anything (it returns the script).

use super::walk::Node;

/// One command's words, flat: its path of subcommand words (an alias as its own path), the
/// words after it, its options, and which of them take one of a list of values.
struct Flat {
    path: Vec<String>,
    words: Vec<String>,
    options: Vec<String>,
    choices: Vec<(String, Vec<String>)>,
}

fn flatten(n: &Node, path: Vec<String>, out: &mut Vec<Flat>) {
    let mut options = Vec::new();
    let mut choices = Vec::new();
    for o in &n.options {
        for flag in o.flags() {
            if let Some(v) = o.value.as_ref().filter(|v| !v.choices.is_empty()) {
                choices.push((flag.clone(), v.choices.clone()));
            }
            options.push(flag);
        }
    }
    let words = if n.subcommands.is_empty() {
        n.positionals.first().filter(|p| !p.last).map(|p| p.value.choices.clone()).unwrap_or_default()
    } else {
        n.subcommands.iter().flat_map(|c| c.words().map(str::to_string)).collect()
    };
    out.push(Flat { path: path.clone(), words, options, choices });
    for c in &n.subcommands {
        for word in c.words() {
            let mut p = path.clone();
            p.push(word.to_string());
            flatten(c, p, out);
        }
    }
}

/// The Bash script for the binary `name` (`debug-ima`, or `xtask`) whose tree is `root`.
pub fn script(root: &Node, name: &str) -> String {
    let mut nodes = Vec::new();
    flatten(root, Vec::new(), &mut nodes);
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
    s.push_str("        esac\n    done\n");
    if let Some(default) = root.default_command() {
        s.push_str(&format!(
            "    [[ -z $path && ( $cur == -* || $prev == -* ) ]] && path={}\n",
            default.name
        ));
    }
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
            n.words.join(" ")
        ));
    }
    s.push_str(&format!("    esac\n}}\ncomplete -o filenames -F {func} {name}\n"));
    s
}

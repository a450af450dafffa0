//! `completions zsh`: a zsh completion function (`#compdef NAME`) made from the command line's
//! tree ([`walk`](super::walk)): one function per command, its options and positional
//! arguments through `_arguments` (short and long, help, the values of a value option), its
//! subcommands and their aliases through `_describe`; options before any subcommand are the
//! ladder's (its default command). Works autoloaded from a folder on `$fpath` (a file named
//! `_NAME`) and sourced after `compinit`.
//!
//! Must not: print or read anything (it returns the script).

use super::walk::{Node, Opt, Positional, Value};

/// The zsh script for the binary `name` (`debug-ima`, or `xtask`) whose tree is `root`.
pub fn script(root: &Node, name: &str) -> String {
    let main = format!("_{name}");
    let mut s = format!(
        "#compdef {name}\n# zsh completion for {name} (`{name} completions zsh`), made from its command line.\n\
         # Saved as `_{name}` in a folder on $fpath (before `compinit`), or sourced.\n\n"
    );
    // Before any subcommand: the root's own options and the default command's.
    let mut first = root.clone();
    if let Some(default) = root.default_command() {
        let own: Vec<Opt> = root
            .options
            .iter()
            .filter(|o| !default.options.iter().any(|d| d.flags() == o.flags()))
            .cloned()
            .collect();
        first.options = default.options.iter().cloned().chain(own).collect();
    }
    function(&first, &main, &[name.to_string()], &mut s);
    s.push_str(&format!(
        "if [ \"$funcstack[1]\" = \"{main}\" ]; then\n    {main} \"$@\"\nelse\n    compdef {main} {name}\nfi\n"
    ));
    s
}

/// The function `func` for the command at `path` (its words from the binary on), then those
/// of its subcommands.
fn function(n: &Node, func: &str, path: &[String], s: &mut String) {
    let mut specs: Vec<String> = n.options.iter().map(option_spec).collect();
    if n.subcommands.is_empty() {
        specs.extend(positional_specs(&n.positionals));
    } else {
        specs.push(format!("'1: :{func}_commands'"));
        specs.push("'*:: :->args'".to_string());
    }
    s.push_str(&format!("{func}() {{\n"));
    if !n.subcommands.is_empty() {
        s.push_str(
            "    local curcontext=\"$curcontext\" state state_descr line ret=1\n    local -A opt_args\n",
        );
    }
    let flags = if n.subcommands.is_empty() { "-s -S" } else { "-s -S -C" };
    s.push_str(&format!("    _arguments {flags}"));
    for spec in &specs {
        s.push_str(&format!(" \\\n        {spec}"));
    }
    if n.subcommands.is_empty() {
        s.push_str("\n}\n\n");
        return;
    }
    s.push_str(" && ret=0\n    case $state in\n        (args)\n");
    s.push_str(&format!(
        "            curcontext=\"${{curcontext%:*:*}}:{}-$words[1]:\"\n            case $words[1] in\n",
        path.join("-")
    ));
    for c in &n.subcommands {
        let words: Vec<&str> = c.words().collect();
        s.push_str(&format!("                ({}) {func}__{} && ret=0 ;;\n", words.join("|"), c.name));
    }
    s.push_str("            esac ;;\n    esac\n    return ret\n}\n\n");
    // The subcommands, with their descriptions, an alias as its own entry.
    s.push_str(&format!("{func}_commands() {{\n    local -a commands\n    commands=(\n"));
    for c in &n.subcommands {
        for word in c.words() {
            let about = if word == c.name { c.about.clone() } else { format!("{} (= {})", c.about, c.name) };
            s.push_str(&format!("        {}\n", quote(&format!("{}:{}", word.replace(':', "\\:"), about))));
        }
    }
    s.push_str(&format!(
        "    )\n    _describe -t commands {} commands\n}}\n\n",
        quote(&format!("{} command", path.join(" ")))
    ));
    for c in &n.subcommands {
        let mut p = path.to_vec();
        p.push(c.name.clone());
        function(c, &format!("{func}__{}", c.name), &p, s);
    }
}

/// `_arguments`' spec of an option: `'(-q --quiet)'{-q,--quiet}'[help]'`,
/// `'--color=[help]:WHEN:(auto always never)'`, `'*--set=[help]:KEY=VALUE: '`.
fn option_spec(o: &Opt) -> String {
    let words: Vec<String> = o
        .short
        .map(|c| format!("-{c}{}", if o.value.is_some() { "+" } else { "" }))
        .into_iter()
        .chain(o.long.as_ref().map(|l| format!("--{l}{}", if o.value.is_some() { "=" } else { "" })))
        .collect();
    let help = format!("[{}]", escape(&o.help));
    let value = o.value.as_ref().map_or(String::new(), |v| format!(":{}:{}", escape(&v.name), action(v)));
    let head = if o.repeatable {
        "*".to_string()
    } else if words.len() > 1 {
        // Either spelling once: the other is no longer offered.
        format!("({})", o.flags().join(" "))
    } else {
        String::new()
    };
    match words.as_slice() {
        [one] => quote(&format!("{head}{one}{help}{value}")),
        many => format!("{}{{{}}}{}", quote(&head), many.join(","), quote(&format!("{help}{value}"))),
    }
}

/// `_arguments`' specs of the positional arguments: `'1:SHELL:(bash zsh fish)'`,
/// `'*:BUNDLE:_files'`, and after `--` a command line of its own.
fn positional_specs(ps: &[Positional]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, p) in ps.iter().enumerate() {
        let name = escape(&p.value.name);
        if p.last {
            out.push(quote(&format!("*::{name}:_normal")));
        } else if p.many {
            out.push(quote(&format!("*:{name}:{}", action(&p.value))));
        } else {
            let colon = if p.required { ":" } else { "::" };
            out.push(quote(&format!("{}{colon}{name}:{}", i + 1, action(&p.value))));
        }
    }
    out
}

/// What completes a value: its choices (`_values` for a comma-separated list of them), file
/// names, or nothing but its name as the message.
fn action(v: &Value) -> String {
    if !v.choices.is_empty() {
        let choices: Vec<String> = v.choices.iter().map(|c| escape(c).replace(' ', "\\ ")).collect();
        return match v.delimiter {
            Some(d) => format!("_values -s {d} {} {}", escape(&v.name), choices.join(" ")),
            None => format!("({})", choices.join(" ")),
        };
    }
    if v.path {
        "_files".to_string()
    } else {
        " ".to_string()
    }
}

/// Text inside an `_arguments` spec: its own specials (`[` `]` `:` `\`) escaped, one line.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '[' | ']' | ':' | '$' | '`' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' | '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// `text` as one single-quoted shell word.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

//! `completions fish`: fish completions (`complete -c NAME ...` lines) made from the command
//! line's tree ([`walk`](super::walk)): each command's subcommands and their aliases where
//! `__fish_seen_subcommand_from` says it is the one typed (its path, and none of its
//! subcommands yet; at the top, no subcommand), its options (short, long, help, the values of a value option), the
//! choices of a positional argument; options before any subcommand are the ladder's (its
//! default command).
//!
//! Must not: print or read anything (it returns the script).

use super::walk::{Node, Opt};

/// The fish script for the binary `name` (`debug-ima`, or `xtask`) whose tree is `root`.
pub fn script(root: &Node, name: &str) -> String {
    let mut s = format!(
        "# fish completion for {name} (`{name} completions fish`), made from its command line.\n\
         # Saved as ~/.config/fish/completions/{name}.fish, or sourced.\n\
         complete -c {name} -e\n"
    );
    let default = root.default_command();
    // At the top, until a subcommand is typed (`__fish_use_subcommand` would also end there at
    // an option's value, `-C DIR`): the subcommands, and the root's options that are not the
    // default command's too.
    let words: Vec<&str> = root.subcommands.iter().flat_map(Node::words).collect();
    let top = format!("not __fish_seen_subcommand_from {}", words.join(" "));
    subcommand_lines(root, name, &top, &mut s);
    for o in root
        .options
        .iter()
        .filter(|o| default.is_none_or(|d| !d.options.iter().any(|x| x.flags() == o.flags())))
    {
        s.push_str(&option_line(o, name, &top));
    }
    for c in &root.subcommands {
        let at_top = default.is_some_and(|d| std::ptr::eq(d, c)).then_some(top.as_str());
        node_lines(c, name, &[c], at_top, &mut s);
    }
    s
}

/// The lines of the command `n` at `path` (its ancestors below the root, then itself); the
/// default command's options also where `at_top` holds.
fn node_lines(n: &Node, name: &str, path: &[&Node], at_top: Option<&str>, s: &mut String) {
    let mut seen: Vec<String> = path
        .iter()
        .map(|c| format!("__fish_seen_subcommand_from {}", c.words().collect::<Vec<_>>().join(" ")))
        .collect();
    let inside = seen.join("; and ");
    if !n.subcommands.is_empty() {
        let children: Vec<&str> = n.subcommands.iter().flat_map(Node::words).collect();
        subcommand_lines(
            n,
            name,
            &format!("{inside}; and not __fish_seen_subcommand_from {}", children.join(" ")),
            s,
        );
        seen.push(format!("not __fish_seen_subcommand_from {}", children.join(" ")));
    }
    let mut here = seen.join("; and ");
    if let Some(top) = at_top {
        // Its options also come before any subcommand (`NAME --rungs memcheck`).
        here = format!("{top}; or {here}");
    }
    for o in &n.options {
        s.push_str(&option_line(o, name, &here));
    }
    if n.subcommands.is_empty() {
        if let Some(p) = n.positionals.first().filter(|p| !p.last && !p.value.choices.is_empty()) {
            s.push_str(&format!(
                "complete -c {name} -n {} -f -a {} -d {}\n",
                quote(&here),
                quote(&p.value.choices.join(" ")),
                quote(&p.help)
            ));
        }
    }
    for c in &n.subcommands {
        let mut p = path.to_vec();
        p.push(c);
        node_lines(c, name, &p, None, s);
    }
}

/// The subcommands of `n`, each with its description, offered where `condition` holds.
fn subcommand_lines(n: &Node, name: &str, condition: &str, s: &mut String) {
    for c in &n.subcommands {
        for word in c.words() {
            let about = if word == c.name { c.about.clone() } else { format!("{} (= {})", c.about, c.name) };
            s.push_str(&format!(
                "complete -c {name} -n {} -f -a {} -d {}\n",
                quote(condition),
                quote(word),
                quote(&about)
            ));
        }
    }
}

/// `complete` of one option: `-s q -l quiet -d '...'`; a value option requires its value
/// (`-r`), offered from its choices without file names (`-x -a '...'`), or any word but a
/// file name when it is not a path (`-x`).
fn option_line(o: &Opt, name: &str, condition: &str) -> String {
    let mut line = format!("complete -c {name} -n {}", quote(condition));
    if let Some(c) = o.short {
        line.push_str(&format!(" -s {c}"));
    }
    if let Some(l) = &o.long {
        line.push_str(&format!(" -l {l}"));
    }
    if let Some(v) = &o.value {
        if !v.choices.is_empty() {
            line.push_str(&format!(" -x -a {}", quote(&v.choices.join(" "))));
        } else if v.path {
            line.push_str(" -r -F");
        } else {
            line.push_str(" -x");
        }
    }
    line.push_str(&format!(" -d {}\n", quote(&o.help)));
    line
}

/// `text` as one single-quoted fish word (fish escapes `\` and `'` in them).
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

//! `man`: the tool's manual page, in roff with the man(7) macros, made from the command line's
//! own definition (the tree of [`walk`](super::completions::walk)): NAME, SYNOPSIS,
//! DESCRIPTION, the global OPTIONS, COMMANDS (each visible subcommand, nested, with its
//! description, aliases, options and arguments and their help), EXIT STATUS (from the help's
//! `Exit codes:` paragraphs) and SEE ALSO. `debug-ima man > ~/.local/share/man/man1/debug-ima.1`.
//! The same definition, the same page: no date, nothing read.
//!
//! Must not: print other than the page (through `ui`), or read anything.

use super::completions::walk::{self, Node, Opt, Positional, Value};
use super::Outcome;
use crate::ui;

/// The project's guides the page points to (SEE ALSO), paths in its repository.
pub const GUIDES: &[&str] = &[
    "README.md",
    "docs/ladder.md",
    "docs/recipes.md",
    "docs/bundles.md",
    "docs/analyze.md",
    "docs/doctor.md",
    "docs/hangs.md",
    "docs/watch.md",
    "docs/containers.md",
    "docs/slurm.md",
    "docs/ssh.md",
    "docs/security.md",
];

/// What starts an exit-code paragraph of a help text.
const CODES_LEAD: &str = "Exit codes:";

/// `man`: the page on stdout, for the name the tool was started under; `cli` is the command
/// line's definition (`cli` passes it: commands do not use `cli`).
pub fn run(cli: &clap::Command) -> anyhow::Result<Outcome> {
    let text = page(cli, &walk::binary_name(&ui::tool_name()), &|t| ui::named(t).into_owned());
    ui::out(&text).map_err(|e| anyhow::anyhow!("cannot write to stdout: {e}"))?;
    Ok(Outcome::Done)
}

/// The page of the binary `name` whose command line is `cli`; `named` writes the help's
/// `` `cargo xtask X` `` commands as the user runs the tool.
pub fn page(cli: &clap::Command, name: &str, named: &dyn Fn(&str) -> String) -> String {
    let root = walk::tree(cli);
    let r = Roff { named };
    let version = cli.get_version().unwrap_or("");
    let mut s = format!(
        ".\\\" The manual page of {name} (`{name} man`), made from its command line.\n\
         .TH {} 1 \"\" {} \"User Commands\"\n.nh\n.SH NAME\n{} \\- {}\n",
        arg(&r.code(&name.to_uppercase())),
        arg(&r.code(&format!("{name} {version}"))),
        r.plain(name),
        r.plain(&root.about)
    );
    s.push_str(&format!(".SH SYNOPSIS\n.B {}\n[\\fIOPTIONS\\fR] \\fICOMMAND\\fR ...\n", arg(name)));
    let default = root.default_command();
    if let Some(d) = default {
        s.push_str(&format!(".br\n{}\n", usage(d, &[name, walk::DEFAULT_ALIAS], &r)));
    }
    s.push_str(".SH DESCRIPTION\n");
    // Its description when it says more than NAME does.
    if root.long_about.trim_end_matches('.') != root.about {
        s.push_str(&r.paragraphs(&without_exit_codes(&root.long_about)));
        s.push_str(".PP\n");
    }
    if default.is_some() {
        let alias = walk::DEFAULT_ALIAS;
        s.push_str(&format!(
            "{}\n",
            r.text(&format!(
                "Its main job, the ladder, `{name} {alias}`, is the default command: a first word that \
                 is an option other than the global ones, or `--`, starts it, so `{name} --dry-run` \
                 is `{name} {alias} --dry-run`."
            ))
        ));
    }
    for line in root.after_help.lines().filter(|l| !l.starts_with(CODES_LEAD) && !l.trim().is_empty()) {
        s.push_str(&format!(".PP\n{}\n", r.text(line)));
    }
    // Those that not every command takes (`--version`) are named.
    let own: Vec<String> = root
        .options
        .iter()
        .filter(|o| {
            !root
                .subcommands
                .iter()
                .filter(|c| !c.is_help_command)
                .all(|c| c.options.iter().any(|x| x.flags() == o.flags()))
        })
        .map(|o| format!("`{}`", o.flags()[0]))
        .collect();
    let but = if own.is_empty() { String::new() } else { format!(" but {}", own.join(", ")) };
    s.push_str(&format!(".SH OPTIONS\n{}\n", r.text(&format!("Every command takes these{but}."))));
    for o in &root.options {
        s.push_str(&option(o, &r));
    }
    s.push_str(".SH COMMANDS\n");
    for c in root.subcommands.iter().filter(|c| !c.is_help_command) {
        command(c, &[name], &r, &mut s);
    }
    s.push_str(&exit_status(&root, name, &r));
    s.push_str(&format!(
        ".SH SEE ALSO\n{}\n",
        r.text(&format!(
            "The guides in the project's repository: {}; `{name} COMMAND --help`.",
            GUIDES.iter().map(|g| format!("`{g}`")).collect::<Vec<_>>().join(", ")
        ))
    ));
    s
}

/// The section of the command `n` below `parents` (the binary's name first), then its
/// subcommands'.
fn command(n: &Node, parents: &[&str], r: &Roff, s: &mut String) {
    let mut path = parents.to_vec();
    let (word, others) = called(n);
    path.push(word);
    s.push_str(&format!(".SS {}\n{}\n", arg(&r.code(&path.join(" "))), usage(n, &path, r)));
    let about = without_exit_codes(&n.long_about);
    if !about.is_empty() {
        s.push_str(".PP\n");
        s.push_str(&r.paragraphs(&about));
    }
    if !others.is_empty() {
        let aliases: Vec<String> = others.iter().map(|a| format!("`{a}`")).collect();
        s.push_str(&format!(".PP\n{}\n", r.text(&format!("Also: {}.", aliases.join(", ")))));
    }
    for o in n.options.iter().filter(|o| !o.global && !o.builtin) {
        s.push_str(&option(o, r));
    }
    for p in &n.positionals {
        s.push_str(&positional(p, r));
    }
    for c in n.subcommands.iter().filter(|c| !c.is_help_command) {
        command(c, &path, r, s);
    }
}

/// The word a command is shown under and its other words: the default command under its
/// alias (`debug-ima run`, as its usage says, not `debug-ima debug-ima`).
fn called(n: &Node) -> (&str, Vec<&str>) {
    let word = if n.aliases.iter().any(|a| a == walk::DEFAULT_ALIAS) {
        walk::DEFAULT_ALIAS
    } else {
        n.name.as_str()
    };
    (word, n.words().filter(|w| *w != word).collect())
}

/// `.B NAME bundle pack` and its words: `[OPTIONS]`, the arguments, `COMMAND`.
fn usage(n: &Node, path: &[&str], r: &Roff) -> String {
    let mut words = Vec::new();
    if n.options.iter().any(|o| !o.global && !o.builtin) {
        words.push("[\\fIOPTIONS\\fR]".to_string());
    }
    for p in &n.positionals {
        let name =
            format!("\\fI{}\\fR{}", r.code(&p.value.name), if p.many && !p.last { " ..." } else { "" });
        words.push(match (p.last, p.required) {
            (true, _) => format!("[\\fB\\-\\-\\fR {name} ...]"),
            (false, true) => name,
            (false, false) => format!("[{name}]"),
        });
    }
    if !n.subcommands.is_empty() {
        words.push("\\fICOMMAND\\fR".to_string());
    }
    format!(".B {}\n{}", arg(&r.code(&path.join(" "))), words.join(" "))
}

/// `.TP`, `\fB\-q\fR, \fB\-\-quiet\fR`, then its help, its values and its default.
fn option(o: &Opt, r: &Roff) -> String {
    let mut tag: Vec<String> = Vec::new();
    if let Some(c) = o.short {
        tag.push(format!("\\fB\\-{}\\fR", r.code(&c.to_string())));
    }
    if let Some(l) = &o.long {
        tag.push(format!("\\fB\\-\\-{}\\fR", r.code(l)));
    }
    let mut tag = tag.join(", ");
    let mut body = r.paragraphs_in_list(&o.long_help);
    if let Some(v) = &o.value {
        tag.push_str(&format!(" \\fI{}\\fR", r.code(&v.name)));
        body.push_str(&values(v, r));
    }
    format!(".TP\n{tag}\n{body}")
}

/// `.TP`, `\fIBUNDLE\fR`, then its help and its values.
fn positional(p: &Positional, r: &Roff) -> String {
    let name = if p.last {
        format!("\\fB\\-\\-\\fR \\fI{}\\fR ...", r.code(&p.value.name))
    } else {
        format!("\\fI{}\\fR", r.code(&p.value.name))
    };
    let mut body = r.paragraphs_in_list(&p.long_help);
    body.push_str(&values(&p.value, r));
    format!(".TP\n{name}\n{body}")
}

/// `One of: ...` (`Any of, separated by `,`: ...`), each choice with its help when they have
/// one, and `Default: ...`, if any.
fn values(v: &Value, r: &Roff) -> String {
    let mut s = String::new();
    if !v.choices.is_empty() {
        let lead = match v.delimiter {
            Some(d) => format!("Any of, separated by \\fB{}\\fR:", r.code(&d.to_string())),
            None => "One of:".to_string(),
        };
        if v.choice_help.iter().any(String::is_empty) {
            // Inline, a help in brackets where there is one.
            let items: Vec<String> = v
                .choices
                .iter()
                .zip(&v.choice_help)
                .map(|(c, h)| match h.as_str() {
                    "" => format!("\\fB{}\\fR", r.code(c)),
                    h => format!("\\fB{}\\fR ({})", r.code(c), r.text(h.trim_end_matches('.'))),
                })
                .collect();
            s.push_str(&format!(".IP\n{lead} {}.\n", items.join(", ")));
        } else {
            s.push_str(&format!(".IP\n{lead}\n"));
            for (c, help) in v.choices.iter().zip(&v.choice_help) {
                s.push_str(&format!(".IP\n\\fB{}\\fR: {}\n", r.code(c), r.text(help)));
            }
        }
    }
    if !v.defaults.is_empty() {
        let defaults: Vec<String> = v.defaults.iter().map(|d| format!("\\fB{}\\fR", r.code(d))).collect();
        s.push_str(&format!(".IP\nDefault: {}.\n", defaults.join(", ")));
    }
    s
}

/// EXIT STATUS: the root's `Exit codes:` line, then each command's paragraph.
fn exit_status(root: &Node, name: &str, r: &Roff) -> String {
    let mut s = String::from(".SH EXIT STATUS\n");
    for line in root.after_help.lines().filter(|l| l.starts_with(CODES_LEAD)) {
        s.push_str(&format!("{}\n", r.text(line[CODES_LEAD.len()..].trim())));
    }
    fn walk_exits(n: &Node, path: &str, r: &Roff, s: &mut String) {
        let path = format!("{path} {}", called(n).0);
        for p in n.long_about.split("\n\n").filter(|p| p.trim_start().starts_with(CODES_LEAD)) {
            let text = p.trim_start()[CODES_LEAD.len()..].trim();
            s.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", r.code(&path), r.text(text)));
        }
        for c in n.subcommands.iter().filter(|c| !c.is_help_command) {
            walk_exits(c, &path, r, s);
        }
    }
    for c in root.subcommands.iter().filter(|c| !c.is_help_command) {
        walk_exits(c, name, r, &mut s);
    }
    s
}

/// A description without its `Exit codes:` paragraphs (EXIT STATUS has them).
fn without_exit_codes(text: &str) -> String {
    text.split("\n\n").filter(|p| !p.trim_start().starts_with(CODES_LEAD)).collect::<Vec<_>>().join("\n\n")
}

/// A macro's argument: in double quotes, a double quote inside as `\(dq`.
fn arg(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\\(dq"))
}

/// Text into roff: escaped so that nothing in it is read as a request or an escape, with the
/// help's `` `code` `` in bold.
struct Roff<'a> {
    named: &'a dyn Fn(&str) -> String,
}

impl Roff<'_> {
    /// Paragraphs (blank-line separated) as `.PP`-separated text.
    fn paragraphs(&self, text: &str) -> String {
        self.paras(text, ".PP")
    }

    /// Paragraphs inside a `.TP` item: the later ones `.IP`, indented as the first.
    fn paragraphs_in_list(&self, text: &str) -> String {
        self.paras(text, ".IP")
    }

    fn paras(&self, text: &str, sep: &str) -> String {
        let mut out = String::new();
        for (i, p) in text.split("\n\n").map(str::trim).filter(|p| !p.is_empty()).enumerate() {
            if i > 0 {
                out.push_str(sep);
                out.push('\n');
            }
            out.push_str(&self.text(p));
            out.push('\n');
        }
        out
    }

    /// One paragraph: each of its lines a text line (roff fills them), `` `code` `` bold.
    fn text(&self, text: &str) -> String {
        let text = (self.named)(text);
        let lines: Vec<String> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(|line| {
                let parts: Vec<&str> = line.split('`').collect();
                let mut out = String::new();
                for (i, part) in parts.iter().enumerate() {
                    // Inside backticks when odd, unless that backtick is never closed.
                    if i % 2 == 1 && i + 1 < parts.len() {
                        out.push_str(&format!("\\fB{}\\fR", self.code(part)));
                    } else {
                        if i % 2 == 1 {
                            out.push_str("\\(ga");
                        }
                        out.push_str(&escape(part, false));
                    }
                }
                line_start(out)
            })
            .collect();
        lines.join("\n")
    }

    /// Text without fonts (the NAME line, which `whatis` reads): `` `code` `` in quotes.
    fn plain(&self, text: &str) -> String {
        let text = (self.named)(text);
        let parts: Vec<String> = text.split('`').map(|p| escape(p, false)).collect();
        let mut out = String::new();
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                out.push_str(if i % 2 == 1 { "\\(lq" } else { "\\(rq" });
            }
            out.push_str(part);
        }
        line_start(out)
    }

    /// A command, an option, a value: every hyphen a minus sign (`\-`), so that it can be
    /// copied and typed.
    fn code(&self, text: &str) -> String {
        escape(text, true)
    }
}

/// A text line that would start with `.` or `'` (a request) starts with `\&` instead.
fn line_start(line: String) -> String {
    if line.starts_with('.') || line.starts_with('\'') {
        format!("\\&{line}")
    } else {
        line
    }
}

/// `text` escaped for roff: `\` as `\e`, a hyphen as `\-` (in `code`, or where it does not
/// join two words), anything not ASCII as `\[uXXXX]`, control characters left out.
fn escape(text: &str, code: bool) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '\\' => out.push_str("\\e"),
            '`' => out.push_str("\\(ga"),
            '\'' if code => out.push_str("\\(aq"),
            '-' => {
                let joins = i > 0
                    && chars[i - 1].is_alphanumeric()
                    && chars.get(i + 1).is_some_and(|n| n.is_alphanumeric());
                out.push_str(if code || !joins { "\\-" } else { "-" });
            }
            c if c.is_control() => out.push(' '),
            c if !c.is_ascii() => out.push_str(&format!("\\[u{:04X}]", c as u32)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roff_escapes_requests_escapes_hyphens_and_non_ascii() {
        let r = Roff { named: &|t| t.to_string() };
        assert_eq!(r.text(".hidden request\n'another"), "\\&.hidden request\n\\&'another");
        assert_eq!(
            r.text("a\\b user-triggered -x `--hang-after` 0.2 µs"),
            "a\\eb user-triggered \\-x \\fB\\-\\-hang\\-after\\fR 0.2 \\[u00B5]s"
        );
        assert_eq!(r.text("an odd ` backtick"), "an odd \\(ga backtick");
        assert_eq!(r.text("`tar -I 'zstd'`, it's"), "\\fBtar \\-I \\(aqzstd\\(aq\\fR, it's");
        assert_eq!(arg("say \"hi\""), "\"say \\(dqhi\\(dq\"");
    }
}

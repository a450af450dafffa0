//! `replay.sh`: the script in every bundle that reruns one rung's target (or the rebuild's
//! build) with the environment the manifest recorded, from any directory, on the same host or
//! another one with the same checkout. Paths into the rung's folder become the replay's own
//! folder (`$DEBUG_IMA_REPLAY_DIR/<rung>`, by default a new folder under `$TMPDIR`), so dumps
//! and reports of a replay land there: a replay never writes into the bundle (which then still
//! verifies) nor leaves a CPU core in the working directory (one the run dropped there is moved
//! into the replay's folder). Values the bundle
//! redacted are asked for at the terminal (not echoed), or taken from the environment when a
//! variable of that name is set (`HF_TOKEN=... ./replay.sh memcheck`).
//!
//! Pure: builds the text from a [`Manifest`] (already redacted); must not read or write files.

use std::fmt::Write as _;

use super::layout;
use super::manifest::Manifest;
use crate::model::{quote, Role, RungId};
use crate::redact::MARK;

/// The script's name at the bundle root.
pub const FILE: &str = layout::REPLAY;

/// Builds `replay.sh` for a manifest.
pub fn script(m: &Manifest) -> String {
    // Commands hold absolute paths into the bundle (`CUDA_COREDUMP_FILE`, `--save`).
    let bundle = m.root.clone();
    // A command without a `cwd` ran in the tool's own working directory, which the recipe's
    // built-in `cwd` variable holds: the replay goes there too, not the caller's folder.
    let started_in = m.started_in();
    let mut cases = String::new();
    let mut listing: Vec<String> = Vec::new();
    let mut names = Vec::new();
    let mut asks = 0usize;
    for r in &m.rungs {
        let Some(cmd) = r
            .commands
            .iter()
            .find(|c| c.role == Role::Target)
            .or_else(|| r.commands.iter().find(|c| c.role == Role::Build))
        else {
            continue;
        };
        if names.contains(&r.rung.name()) {
            continue;
        }
        names.push(r.rung.name());
        let mut body = String::new();
        let mut words = Words { bundle: &bundle, asks: &mut asks, ask_lines: Vec::new() };
        let mut line: Vec<String> = vec!["env".into()];
        for k in &cmd.env_remove {
            line.push(format!("-u {}", quote(k)));
        }
        for (k, v) in &cmd.env_set {
            let value = if v == MARK {
                words.ask_named(k);
                format!("\"${{{k}}}\"")
            } else {
                words.word(v, &format!("a value in {k}"))
            };
            line.push(format!("{}={value}", quote(k)));
        }
        for (i, a) in cmd.argv.iter().enumerate() {
            line.push(words.word(a, &format!("argument {i} of the command")));
        }
        for a in &words.ask_lines {
            writeln!(body, "    {a}").unwrap();
        }
        writeln!(body, "    out_dir {}", r.rung).unwrap();
        let cwd = cmd.cwd.as_ref().map(|c| c.display().to_string()).or_else(|| started_in.clone());
        listing.push(format!("{}:", r.rung));
        if let Some(cwd) = &cwd {
            let dir = words.word(cwd, "the working directory");
            writeln!(body, "    need_dir {dir}").unwrap();
            writeln!(body, "    cd {dir}").unwrap();
            listing.push(format!("  in {}", crate::ui::safe(cwd, true)));
        }
        if r.rung == RungId::Attach {
            writeln!(
                body,
                "    echo 'the target waits for a debugger when it faults: attach with `cuda-gdb -p PID` \
                 (the PID is in its message), then kill it' >&2"
            )
            .unwrap();
        }
        writeln!(body, "    rc=0").unwrap();
        writeln!(body, "    {} || rc=$?", line.join(" ")).unwrap();
        writeln!(body, "    keep_cores {}", r.rung).unwrap();
        writeln!(body, "    exit \"$rc\"").unwrap();
        // `--list` shows the command as recorded (redacted), not the script's code.
        listing.push(format!("  {}", crate::ui::safe(&cmd.command, true)));
        write!(cases, "  {})\n{body}    ;;\n", r.rung).unwrap();
    }

    let mut s = String::new();
    write_header(&mut s, m, &names);
    s.push_str(&FUNCTIONS.replace("REPLAY_SH", FILE));
    s.push_str("case \"${1:-}\" in\n");
    s.push_str("  --list)\n");
    if listing.is_empty() {
        listing.push("no rung ran a command".to_string());
    }
    let quoted: Vec<String> = listing.iter().map(|l| quote(l)).collect();
    writeln!(s, "    printf '%s\\n' {}", quoted.join(" ")).unwrap();
    s.push_str("    ;;\n");
    s.push_str(&cases);
    s.push_str("  *)\n");
    writeln!(
        s,
        "    echo \"usage: ./{FILE} RUNG (one of: {}) or --list\" >&2",
        if names.is_empty() { "none ran".to_string() } else { names.join(" ") }
    )
    .unwrap();
    s.push_str("    exit 2\n    ;;\nesac\n");
    s
}

/// The script's opening comment: what it is, who wrote it for which recipe, its usage with
/// the rungs `names`, and where the replay's values and files come from and go.
fn write_header(s: &mut String, m: &Manifest, names: &[&str]) {
    writeln!(s, "#!/usr/bin/env bash").unwrap();
    writeln!(s, "# {FILE}: reruns one rung of this bundle with the environment it recorded.").unwrap();
    let one = |v: &str| crate::ui::safe(v, true).into_owned();
    writeln!(
        s,
        "# Written by {} {} for recipe `{}` ({}).",
        one(&m.tool),
        one(&m.version),
        m.recipe_name(),
        one(&m.created)
    )
    .unwrap();
    writeln!(s, "#").unwrap();
    writeln!(
        s,
        "#   ./{FILE} RUNG      rungs: {}",
        if names.is_empty() { "(none ran)".into() } else { names.join(" ") }
    )
    .unwrap();
    writeln!(s, "#   ./{FILE} --list    the rungs, where they ran and their commands").unwrap();
    writeln!(s, "#").unwrap();
    writeln!(s, "# Values redacted in the bundle are asked for at the terminal (not echoed), or taken from")
        .unwrap();
    writeln!(s, "# the environment when a variable of the name asked for is set. Dumps and reports go")
        .unwrap();
    writeln!(
        s,
        "# to $DEBUG_IMA_REPLAY_DIR/RUNG/ (default: a new folder under $TMPDIR, printed), never into"
    )
    .unwrap();
    writeln!(s, "# the bundle or the working directory. The inherited environment is yours, not the")
        .unwrap();
    writeln!(s, "# recorded one: {} `environment` lists what the run had.", layout::MANIFEST).unwrap();
}

/// The shell functions of the script (`ask`, `out_dir`, `keep_cores`, `need_dir`), with
/// `REPLAY_SH` standing for its file name.
const FUNCTIONS: &str = r#"set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

ask() {
    # ask VAR DESCRIPTION: a redacted value, from the environment or the terminal.
    if [ -z "${!1+x}" ]; then
        local value=""
        if [ -t 0 ]; then
            read -r -s -p "$2 was redacted in the bundle; its value (not shown): " value
            echo >&2
        else
            IFS= read -r value || true
        fi
        printf -v "$1" '%s' "$value"
    fi
}

out_dir() {
    # out_dir RUNG: the replay's own folder, outside the bundle.
    if [ -z "${DEBUG_IMA_REPLAY_DIR:-}" ]; then
        DEBUG_IMA_REPLAY_DIR="$(mktemp -d "${TMPDIR:-/tmp}/debug-ima-replay.XXXXXX")"
    fi
    OUT="$DEBUG_IMA_REPLAY_DIR/$1"
    mkdir -p "$OUT"
    STARTED="$OUT/.replay-started"
    : > "$STARTED"
    echo "REPLAY_SH: dumps, reports and cores of this replay go to $OUT" >&2
}

keep_cores() {
    # keep_cores RUNG: a CPU core the run left in the working directory moves to its folder.
    local f
    for f in core core.[0-9]*; do
        # Not older than the replay's start (one written in the same second counts as its).
        if [ -f "$f" ] && ! [ "$STARTED" -nt "$f" ]; then
            mv -- "$f" "$OUT/" && echo "REPLAY_SH: moved the CPU core $f to $OUT/" >&2
        fi
    done
    rm -f "$STARTED"
}

need_dir() {
    if [ ! -d "$1" ]; then
        echo "REPLAY_SH: the recorded working directory \`$1\` does not exist here: run on the" >&2
        echo "same checkout, or edit the \`cd\` line of this rung in $HERE/REPLAY_SH" >&2
        exit 1
    fi
}

"#;

/// Turns recorded words into shell words: `MARK` becomes an asked-for variable, and the rung's
/// own folder (`<root>/rungs/NN-<rung>`) becomes the replay's folder, `$OUT`.
struct Words<'a> {
    bundle: &'a str,
    asks: &'a mut usize,
    ask_lines: Vec<String>,
}

impl Words<'_> {
    fn ask_named(&mut self, name: &str) {
        self.ask_lines.push(format!("ask {} {}", quote(name), quote(name)));
    }

    fn word(&mut self, w: &str, what: &str) -> String {
        let mut out = String::new();
        let mut rest = w;
        while !rest.is_empty() {
            let mark = rest.find(MARK);
            let root =
                if self.bundle.is_empty() { None } else { rest.find(&format!("{}/rungs/", self.bundle)) };
            match (mark, root) {
                (Some(m), r) if r.is_none_or(|r| m < r) => {
                    out.push_str(&lit(&rest[..m]));
                    *self.asks += 1;
                    let var = format!("REDACTED_{}", self.asks);
                    self.ask_lines.push(format!("ask {var} {}", quote(&format!("{var} ({what})"))));
                    out.push_str(&format!("\"${{{var}}}\""));
                    rest = &rest[m + MARK.len()..];
                }
                (_, Some(r)) => {
                    out.push_str(&lit(&rest[..r]));
                    // `<root>/rungs/NN-rung/...` -> `$OUT/...`
                    let after = &rest[r + self.bundle.len() + "/rungs/".len()..];
                    let tail = after.find('/').map(|i| &after[i..]).unwrap_or("");
                    out.push_str("\"$OUT\"");
                    let end = tail.find(MARK).unwrap_or(tail.len());
                    out.push_str(&lit(&tail[..end]));
                    rest =
                        &rest[r + self.bundle.len() + "/rungs/".len() + (after.len() - tail.len()) + end..];
                }
                _ => {
                    out.push_str(&lit(rest));
                    rest = "";
                }
            }
        }
        if out.is_empty() {
            "''".into()
        } else {
            out
        }
    }
}

/// A literal piece of a word, quoted when it needs it.
fn lit(s: &str) -> String {
    if s.is_empty() {
        String::new()
    } else {
        quote(s)
    }
}

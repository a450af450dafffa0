//! Words: shell-like splitting of a command string (never a shell), joining for display,
//! and `--set KEY=VALUE`.
//!
//! Must not: expand variables or run anything.

use anyhow::{anyhow, bail, Result};

use crate::model::Usage;

// ---------------------------------------------------------------------------------------
// Words and `--set`
// ---------------------------------------------------------------------------------------

/// Parses `--set NAME=VALUE` (the value may be empty and may contain `=`).
/// Its errors are [`Usage`] errors: the command line is wrong.
pub fn parse_set(s: &str) -> Result<(String, String)> {
    let Some((name, value)) = s.split_once('=') else {
        return Err(Usage::error(format!("`--set {s}`: expected NAME=VALUE, e.g. `--set arch=sm_90`")));
    };
    if !is_identifier(name) {
        return Err(Usage::error(format!(
            "`--set {s}`: `{name}` is not a variable name (letters, digits and `_`); expected NAME=VALUE"
        )));
    }
    if value.contains('\0') {
        return Err(Usage::error(format!("`--set {name}=...`: the value contains a NUL character")));
    }
    Ok((name.to_string(), value.to_string()))
}

/// Splits a command line into words as a POSIX shell would, without running one: blanks
/// separate words; `'...'` is literal; in `"..."` a backslash escapes `"`, `\`, `$` and a
/// backquote; elsewhere a backslash escapes any character. What only a shell could do
/// (`|`, `&`, `;`, `<`, `>`, `(`, `)`, `$`, backquotes, `~` or `#` starting a word) is
/// an error asking to quote it; unbalanced quotes are errors. Globs are not expanded.
pub fn split_words(s: &str) -> Result<Vec<String>> {
    let shell = |what: &str| {
        anyhow!(
            "`{s}`: {what} is shell syntax, but commands are not run through a shell: quote it to pass it as an \
             argument, or run a shell explicitly (`sh -c '...'`)"
        )
    };
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' | '\r' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => bail!("`{s}`: a single quote is not closed"),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(e @ ('"' | '\\' | '$' | '`')) => word.push(e),
                            Some('\n') => {}
                            Some(e) => {
                                word.push('\\');
                                word.push(e);
                            }
                            None => bail!("`{s}`: a double quote is not closed"),
                        },
                        Some('$') => return Err(shell("`$` (expansion)")),
                        Some('`') => return Err(shell("a backquote")),
                        Some(c) => word.push(c),
                        None => bail!("`{s}`: a double quote is not closed"),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(e) => {
                    in_word = true;
                    word.push(e);
                }
                None => bail!("`{s}`: a backslash ends the line; escape it as `\\\\` or quote it"),
            },
            '|' | '&' | ';' | '<' | '>' | '(' | ')' => return Err(shell(&format!("`{c}`"))),
            '$' => return Err(shell("`$` (expansion)")),
            '`' => return Err(shell("a backquote")),
            '~' | '#' if !in_word => return Err(shell(&format!("`{c}` at the start of a word"))),
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// Joins words into one line that [`split_words`] splits back into the same words.
pub fn join_words<S: AsRef<str>>(words: &[S]) -> String {
    words.iter().map(|w| quote_word(w.as_ref())).collect::<Vec<_>>().join(" ")
}

pub(super) fn quote_word(w: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c);
    if !w.is_empty() && w.chars().all(safe) {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

pub(super) fn is_identifier(s: &str) -> bool {
    let mut bytes = s.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

//! The terminal: the only module that writes to stdout or stderr. Commands build strings
//! (pure, snapshot-tested) and hand them here. What reaches the terminal is made safe
//! ([`safe`]): text from a target's output, a log or a file name cannot move the cursor, change
//! colours, set the window title or fake lines; the bundle's logs keep the bytes as they were.
//!
//! Must not: decide anything. A closed stdout (`| head`) is not an error.

use std::borrow::Cow;
use std::io::{self, Write};

/// `text` for the terminal: escape sequences and other control characters (a carriage return
/// too, which can overwrite a line) shown as `\u{1b}` escapes; newlines and tabs kept unless
/// `one_line`, which shows a newline as `\n` (a progress line, a spinner message).
pub fn safe(text: &str, one_line: bool) -> Cow<'_, str> {
    let bad = |c: char| c.is_control() && !(c == '\t' || (c == '\n' && !one_line));
    if !text.chars().any(bad) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' if one_line => out.push_str("\\n"),
            c if bad(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Writes a command's result to stdout. A broken pipe ends quietly.
pub fn out(text: &str) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    let text = safe(text, false);
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Prints an error chain once (`outer: inner: ...`, as `{e:#}` formats it) as `error: ...`.
pub fn error(chain: &str) {
    let _ = writeln!(io::stderr().lock(), "error: {}", safe(chain, false));
}

/// A progress or status line on stderr (never mixed into stdout's results).
pub fn status(text: &str) {
    let _ = writeln!(io::stderr().lock(), "{}", safe(text, false));
}

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use indicatif::{ProgressBar, ProgressStyle};

/// True when a person is at the terminal: stdin and stderr are both terminals.
pub fn is_tty() -> bool {
    io::stdin().is_terminal() && io::stderr().is_terminal()
}

/// What the user decided before a rung.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Run,
    Skip,
    Stop,
}

/// The questions the ladder asks. Behind a trait so the ladder's logic is tested without a
/// terminal; `Interactive` asks with dialoguer, `NonInteractive` takes defaults.
pub trait Prompter {
    /// Which recipe, when `--recipe` was not given.
    fn choose_recipe(&mut self, names: &[&str]) -> Result<String>;
    /// A recipe variable without a value.
    fn variable(&mut self, name: &str, description: &str, default: Option<&str>) -> Result<String>;
    /// Before each rung: run it, skip it, or stop the ladder.
    fn before_rung(&mut self, rung: &str, what: &str) -> Result<Choice>;
}

/// dialoguer prompts on the terminal.
pub struct Interactive;

impl Prompter for Interactive {
    fn choose_recipe(&mut self, names: &[&str]) -> Result<String> {
        let i = dialoguer::Select::new()
            .with_prompt("which recipe describes your target?")
            .items(names)
            .default(0)
            .interact()?;
        Ok(names[i].to_string())
    }

    fn variable(&mut self, name: &str, description: &str, default: Option<&str>) -> Result<String> {
        status(&format!("the recipe needs `{name}`: {description}"));
        let mut input = dialoguer::Input::<String>::new().with_prompt(name);
        if let Some(d) = default {
            input = input.default(d.to_string());
        }
        Ok(input.interact_text()?)
    }

    fn before_rung(&mut self, rung: &str, what: &str) -> Result<Choice> {
        // The description goes on its own line: dialoguer erases a wrapped prompt badly.
        status(&format!("next: {rung}: {what}"));
        let items = ["run it", "skip it", "stop here"];
        let i = dialoguer::Select::new().with_prompt(rung).items(items).default(0).interact()?;
        Ok([Choice::Run, Choice::Skip, Choice::Stop][i])
    }
}

/// No terminal, or `--yes`: defaults are taken; a question without a default is an error
/// naming the flag that answers it.
pub struct NonInteractive;

impl Prompter for NonInteractive {
    fn choose_recipe(&mut self, names: &[&str]) -> Result<String> {
        bail!(
            "no recipe given: pass `--recipe NAME` (built in: {}) or `--recipe path/to/recipe.yaml`",
            names.join(", ")
        )
    }

    fn variable(&mut self, name: &str, description: &str, default: Option<&str>) -> Result<String> {
        match default {
            Some(d) => Ok(d.to_string()),
            None => bail!("the recipe needs `{name}` ({description}): pass `--set {name}=VALUE`"),
        }
    }

    fn before_rung(&mut self, _rung: &str, _what: &str) -> Result<Choice> {
        Ok(Choice::Run)
    }
}

/// Where the ladder's progress goes: the terminal ([`Terminal`]) or, in tests, a recorder.
pub trait Progress {
    /// A status line (a note, the bundle's path).
    fn status(&self, text: &str);
    /// A rung starts: its bar until [`RungBar::finish`].
    fn rung(&self, index: usize, total: usize, rung: &str, what: &str) -> Box<dyn RungBar + '_>;
}

/// The progress of one running rung.
pub trait RungBar {
    /// The latest line the rung printed.
    fn line(&self, line: &str);
    /// Coredump collection: `SM k/N has finished state collection`.
    fn sm(&self, k: u32, n: u32);
    /// A remark while the rung runs (a crash, a retry).
    fn note(&self, text: &str);
    /// The rung ended so.
    fn finish(&self, outcome: &str);
}

/// Progress on stderr: indicatif bars on a terminal, plain lines otherwise.
pub struct Terminal;

impl Progress for Terminal {
    fn status(&self, text: &str) {
        status(text);
    }

    fn rung(&self, index: usize, total: usize, rung: &str, what: &str) -> Box<dyn RungBar + '_> {
        Box::new(RungProgress::start(index, total, rung, what))
    }
}

/// The progress of one rung: a spinner with elapsed time and the latest output line on a
/// terminal (a bar for the coredump's `SM k/N`), plain start and end lines otherwise.
pub struct RungProgress {
    bar: Option<ProgressBar>,
    label: String,
    started: Instant,
}

impl RungProgress {
    pub fn start(index: usize, total: usize, rung: &str, what: &str) -> RungProgress {
        let label = format!("[{index}/{total}] {rung}");
        let bar = if io::stderr().is_terminal() {
            let pb = ProgressBar::new_spinner();
            pb.set_style(
                ProgressStyle::with_template("{spinner} {prefix} {elapsed:>4} {wide_msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            pb.set_prefix(label.clone());
            pb.enable_steady_tick(Duration::from_millis(120));
            Some(pb)
        } else {
            status(&format!("==> {label}: {what}"));
            None
        };
        RungProgress { bar, label, started: Instant::now() }
    }
}

impl RungBar for RungProgress {
    /// The latest line the rung printed.
    fn line(&self, line: &str) {
        if let Some(pb) = &self.bar {
            let short: String = line.chars().take(120).collect();
            pb.set_message(safe(&short, true).into_owned());
        }
    }

    /// Coredump collection: `SM k/N has finished state collection` becomes a bar.
    fn sm(&self, k: u32, n: u32) {
        if let Some(pb) = &self.bar {
            if pb.length() != Some(n as u64) {
                pb.set_length(n as u64);
                pb.set_style(
                    ProgressStyle::with_template(
                        "{prefix} {elapsed:>4} [{bar:30}] SM {pos}/{len} {wide_msg}",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
                );
            }
            pb.set_position(k as u64);
        }
    }

    /// A remark while the rung runs (a crash, a retry).
    fn note(&self, text: &str) {
        match &self.bar {
            Some(pb) => pb.suspend(|| status(&format!("    {text}"))),
            None => status(&format!("    {text}")),
        }
    }

    fn finish(&self, outcome: &str) {
        let secs = self.started.elapsed().as_secs_f64();
        if let Some(pb) = &self.bar {
            pb.finish_and_clear();
        }
        status(&format!("    {}: {outcome} ({secs:.1} s)", self.label));
    }
}

#[cfg(test)]
mod safe_tests {
    use super::safe;

    #[test]
    fn control_bytes_are_shown_not_obeyed() {
        assert_eq!(safe("plain text\n\tindented", false), "plain text\n\tindented");
        assert_eq!(safe("\x1b[2J\x1b]0;title\x07red", false), "\\u{1b}[2J\\u{1b}]0;title\\u{7}red");
        assert_eq!(safe("fake\rline", false), "fake\\u{d}line");
        assert_eq!(safe("two\nlines", true), "two\\nlines");
        assert_eq!(safe("\u{85}next-line \u{9b}csi", false), "\\u{85}next-line \\u{9b}csi");
        assert_eq!(safe("ünïcödé 😀 漢字", true), "ünïcödé 😀 漢字");
    }
}

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

/// How the user started the tool, when not as `cargo xtask` (the installed `debug-ima`): the
/// commands the messages suggest (`` `cargo xtask doctor` ``) are shown under that name.
static INVOKED_AS: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Sets the name the messages' commands are shown under ([`named`]); once, at the start.
pub fn set_invoked_as(name: &str) {
    let _ = INVOKED_AS.set(name.to_string());
}

/// The tool's name as the user started it, for what the bundle records (`tool:` in the
/// manifest, `replay.sh`, the report): `debug-ima` for the installed binary, `cargo xtask
/// debug-ima` under the alias.
pub fn tool_name() -> String {
    match INVOKED_AS.get() {
        Some(name) if name != "cargo xtask" => name.clone(),
        _ => "cargo xtask debug-ima".to_string(),
    }
}

/// `text` with every `` `cargo xtask `` command written as the user started the tool
/// (`` `debug-ima doctor` `` for the installed binary); unchanged under the alias.
pub fn named(text: &str) -> Cow<'_, str> {
    match INVOKED_AS.get() {
        Some(name) if name != "cargo xtask" && text.contains("`cargo xtask ") => Cow::Owned(
            // `debug-ima debug-ima` reads as a stutter: the tool is `debug-ima`, its ladder `run`.
            text.replace("`cargo xtask debug-ima`", &format!("`{name}`"))
                .replace("`cargo xtask debug-ima ", &format!("`{name} run "))
                .replace("`cargo xtask ", &format!("`{name} ")),
        ),
        _ => Cow::Borrowed(text),
    }
}

/// Writes a command's result to stdout. A broken pipe ends quietly.
pub fn out(text: &str) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    let text = named(text);
    let text = safe(&text, false);
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Prints an error chain once (`outer: inner: ...`, as `{e:#}` formats it) as `error: ...`,
/// the prefix coloured when stderr takes colour ([`set_color`]).
pub fn error(chain: &str) {
    let prefix = paint(Paint::Error, "error:", colour_on(Sink::Stderr));
    let _ = writeln!(io::stderr().lock(), "{prefix} {}", safe(&named(chain), false));
}

/// How much the tool says besides its result: `-q` only the result, errors and warnings;
/// `-v` every command too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verbosity {
    Quiet,
    Normal,
    Verbose,
}

/// The process-wide [`Verbosity`]: 0 normal, 1 quiet, 2 verbose; `cli` sets it once.
static VERBOSITY: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

pub fn set_verbosity(v: Verbosity) {
    let n = match v {
        Verbosity::Normal => 0,
        Verbosity::Quiet => 1,
        Verbosity::Verbose => 2,
    };
    VERBOSITY.store(n, std::sync::atomic::Ordering::Relaxed);
}

pub fn verbosity() -> Verbosity {
    match VERBOSITY.load(std::sync::atomic::Ordering::Relaxed) {
        1 => Verbosity::Quiet,
        2 => Verbosity::Verbose,
        _ => Verbosity::Normal,
    }
}

/// A progress or status line on stderr (never mixed into stdout's results). A leading
/// `warning:` is coloured when stderr takes colour. With `-q` only warnings are printed.
pub fn status(text: &str) {
    if verbosity() == Verbosity::Quiet && !text.trim_start().starts_with("warning:") {
        return;
    }
    let text = named(text);
    let text = safe(&text, false);
    let _ = writeln!(io::stderr().lock(), "{}", paint_warning(&text, colour_on(Sink::Stderr)));
}

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};

use crate::model::{PromptEnd, Stream, Usage};

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
    /// Whether a person answers (then each rung is asked for after the one before it ended,
    /// so none starts beside another's reading).
    fn asks(&self) -> bool {
        true
    }
}

/// dialoguer prompts on the terminal. Ctrl-C at any of them is an interruption
/// ([`PromptEnd::Interrupted`]) and Esc or `q` at a selection a cancel: the recipe choice
/// ends with [`PromptEnd::Cancelled`], the run/skip/stop question answers [`Choice::Stop`].
/// dialoguer hides the cursor while it asks and shows it again only after an answer, so an
/// interrupted prompt shows it here.
pub struct Interactive;

/// The ANSI sequence that shows the terminal's cursor again.
pub const SHOW_CURSOR: &str = "\x1b[?25h";

/// Shows the cursor again and ends the line the interrupted prompt was drawn on.
fn show_cursor() {
    let mut err = io::stderr().lock();
    let _ = err.write_all(format!("{SHOW_CURSOR}\n").as_bytes()).and_then(|()| err.flush());
}

/// A prompt's error: Ctrl-C (which the terminal in raw mode gives as a read error, not a
/// signal) becomes [`PromptEnd::Interrupted`], with the cursor shown again; anything else
/// says that the terminal could not be read.
fn prompt_error(e: dialoguer::Error, what: &str) -> anyhow::Error {
    let dialoguer::Error::IO(io) = e;
    show_cursor();
    if io.kind() == io::ErrorKind::Interrupted {
        return anyhow::Error::new(PromptEnd::Interrupted);
    }
    anyhow::Error::new(io).context(format!(
        "cannot read the answer to {what} from the terminal: answer on the command line instead (`--yes` \
         with `--recipe` and `--set`)"
    ))
}

/// The variable's prompt: its name and, when it has one, its description.
pub fn variable_prompt(name: &str, description: &str) -> String {
    if description.trim().is_empty() {
        name.to_string()
    } else {
        format!("{name} ({})", description.trim())
    }
}

/// Why an answer to a variable's prompt is refused: a blank one says nothing.
pub fn blank_answer(answer: &str) -> Option<String> {
    answer
        .trim()
        .is_empty()
        .then(|| "a value is needed (not only spaces): type it, or Ctrl-C to stop".to_string())
}

impl Prompter for Interactive {
    fn choose_recipe(&mut self, names: &[&str]) -> Result<String> {
        let i = dialoguer::Select::new()
            .with_prompt("which recipe describes your target? (Esc or q: cancel)")
            .items(names)
            .default(0)
            .interact_opt()
            .map_err(|e| prompt_error(e, "the recipe choice"))?;
        match i {
            Some(i) => Ok(names[i].to_string()),
            None => Err(anyhow::Error::new(PromptEnd::Cancelled)),
        }
    }

    fn variable(&mut self, name: &str, description: &str, default: Option<&str>) -> Result<String> {
        let mut input = dialoguer::Input::<String>::new()
            .with_prompt(variable_prompt(name, description))
            .validate_with(|answer: &String| blank_answer(answer).map_or(Ok(()), Err));
        if let Some(d) = default {
            input = input.default(d.to_string());
        }
        input.interact_text().map_err(|e| prompt_error(e, &format!("`{name}`")))
    }

    fn before_rung(&mut self, rung: &str, what: &str) -> Result<Choice> {
        // The description goes on its own line: dialoguer erases a wrapped prompt badly.
        status(&format!("next: {rung}: {what}"));
        let items = ["run it", "skip it", "stop here"];
        let i = dialoguer::Select::new()
            .with_prompt(rung)
            .items(items)
            .default(0)
            .interact_opt()
            .map_err(|e| prompt_error(e, &format!("the question before {rung}")))?;
        // Esc or `q`: as `stop here`.
        Ok(i.map_or(Choice::Stop, |i| [Choice::Run, Choice::Skip, Choice::Stop][i]))
    }
}

/// No terminal, or `--yes`: defaults are taken; a question without a default is a usage
/// error naming the flag that answers it.
pub struct NonInteractive;

impl Prompter for NonInteractive {
    fn choose_recipe(&mut self, names: &[&str]) -> Result<String> {
        Err(Usage::error(format!(
            "no recipe given: pass `--recipe NAME` (built in: {}) or `--recipe path/to/recipe.yaml`",
            names.join(", ")
        )))
    }

    fn variable(&mut self, name: &str, description: &str, default: Option<&str>) -> Result<String> {
        match default {
            Some(d) => Ok(d.to_string()),
            None => Err(Usage::error(format!(
                "the recipe needs `{name}` ({description}): pass `--set {name}=VALUE`"
            ))),
        }
    }

    fn before_rung(&mut self, _rung: &str, _what: &str) -> Result<Choice> {
        Ok(Choice::Run)
    }

    fn asks(&self) -> bool {
        false
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
    /// Whether the target's output passes through byte for byte as it comes
    /// ([`pass_through`], `watch`), its input too; the others show its lines through
    /// [`RungBar::line`] only.
    fn passes_through(&self) -> bool {
        false
    }
}

/// `watch`'s job's output, as its bytes come: to this process's stdout or stderr unchanged
/// (no line cut, no UTF-8 repair, no redaction: it is the user's own terminal, as if the job
/// ran alone). A closed or failing output is ignored: it must not end the job, and the
/// bundle's log has the bytes.
pub fn pass_through(stream: Stream, bytes: &[u8]) {
    let _ = match stream {
        Stream::Stdout => {
            let mut out = io::stdout().lock();
            out.write_all(bytes).and_then(|()| out.flush())
        }
        Stream::Stderr => io::stderr().lock().write_all(bytes),
    };
}

/// `watch`'s progress: the job's output passes through byte for byte as it was printed (stdout
/// to stdout, stderr to stderr, unredacted: it is the user's own terminal; [`pass_through`]),
/// its input too; the tool's own lines go to stderr, prefixed, and only when something
/// happens.
pub struct Echo;

impl Progress for Echo {
    fn status(&self, text: &str) {
        status(&format!("debug-ima: {text}"));
    }

    fn rung(&self, _index: usize, _total: usize, _rung: &str, _what: &str) -> Box<dyn RungBar + '_> {
        Box::new(EchoBar)
    }
}

/// The one rung of `watch`: its target's bytes passed through, its notes prefixed.
struct EchoBar;

impl RungBar for EchoBar {
    fn line(&self, _line: &str) {}

    fn sm(&self, _k: u32, _n: u32) {}

    fn note(&self, text: &str) {
        status(&format!("debug-ima: {text}"));
    }

    fn finish(&self, _outcome: &str) {}

    /// The job's bytes pass through as they come ([`pass_through`]), not its lines.
    fn passes_through(&self) -> bool {
        true
    }
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
        let bar = if io::stderr().is_terminal() && verbosity() != Verbosity::Quiet {
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

// ---------------------------------------------------------------------------------------------
// Colour: `--color auto|always|never`, `NO_COLOR`, and the tool's own words only.

use std::sync::atomic::{AtomicU8, Ordering};

/// `--color`: whether the tool colours its own words (`error:`, `warning:`, help headings).
/// Text from a target, a log or a file is never coloured and its escapes never pass: colour is
/// added after [`safe`] has escaped it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when the stream is a terminal, `NO_COLOR` is unset or empty and `TERM` is not
    /// `dumb`.
    Auto,
    /// Always colour, also into a pipe or a file, and despite `NO_COLOR`.
    Always,
    /// Never colour.
    Never,
}

impl ColorChoice {
    /// The `--color` value as typed.
    pub fn from_name(name: &str) -> Option<ColorChoice> {
        match name {
            "auto" => Some(ColorChoice::Auto),
            "always" => Some(ColorChoice::Always),
            "never" => Some(ColorChoice::Never),
            _ => None,
        }
    }
}

/// The process-wide choice: 0 auto, 1 always, 2 never. `cli` sets it once, before anything
/// is printed.
static COLOR: AtomicU8 = AtomicU8::new(0);

/// Sets `--color` for everything printed from now on.
pub fn set_color(choice: ColorChoice) {
    let v = match choice {
        ColorChoice::Auto => 0,
        ColorChoice::Always => 1,
        ColorChoice::Never => 2,
    };
    COLOR.store(v, Ordering::Relaxed);
}

fn color_choice() -> ColorChoice {
    match COLOR.load(Ordering::Relaxed) {
        1 => ColorChoice::Always,
        2 => ColorChoice::Never,
        _ => ColorChoice::Auto,
    }
}

/// Which stream a text goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sink {
    Stdout,
    Stderr,
}

/// Pure: whether to colour a stream, from `--color`, the `NO_COLOR` and `TERM` variables
/// (<https://no-color.org>: any non-empty `NO_COLOR` turns colour off) and whether the
/// stream is a terminal. `--color always` wins over `NO_COLOR`, as the convention asks of
/// an explicit flag.
pub fn colour_wanted(
    choice: ColorChoice,
    no_color: Option<&str>,
    term: Option<&str>,
    terminal: bool,
) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => no_color.is_none_or(str::is_empty) && term != Some("dumb") && terminal,
    }
}

/// Whether `sink` takes colour now.
pub fn colour_on(sink: Sink) -> bool {
    let terminal = match sink {
        Sink::Stdout => io::stdout().is_terminal(),
        Sink::Stderr => io::stderr().is_terminal(),
    };
    let var = |name: &str| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
    colour_wanted(color_choice(), var("NO_COLOR").as_deref(), var("TERM").as_deref(), terminal)
}

/// The tool's own kinds of words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paint {
    /// `error:`: bold red.
    Error,
    /// `warning:`: bold yellow.
    Warning,
    /// `tip:` in clap's errors: green.
    Tip,
    /// Help headings (`Usage:`, `Options:`): bold and underlined.
    Heading,
    /// Flags and command names in help: bold.
    Literal,
}

/// `text` wrapped in the SGR sequence of `p` when `on`; `text` as it is otherwise. Give it
/// only text that [`safe`] has escaped or the tool's own literals.
pub fn paint(p: Paint, text: &str, on: bool) -> Cow<'_, str> {
    if !on || text.is_empty() {
        return Cow::Borrowed(text);
    }
    let sgr = match p {
        Paint::Error => "1;31",
        Paint::Warning => "1;33",
        Paint::Tip => "32",
        Paint::Heading => "1;4",
        Paint::Literal => "1",
    };
    Cow::Owned(format!("\x1b[{sgr}m{text}\x1b[0m"))
}

/// An escaped line with a leading `warning:` (after indentation) painted.
fn paint_warning(text: &str, on: bool) -> Cow<'_, str> {
    let body = text.trim_start_matches(' ');
    match body.strip_prefix("warning:") {
        Some(rest) if on => {
            let indent = &text[..text.len() - body.len()];
            Cow::Owned(format!("{indent}{}{rest}", paint(Paint::Warning, "warning:", true)))
        }
        _ => Cow::Borrowed(text),
    }
}

/// clap's refusal of a command line (already redacted) on stderr: escaped, then `error:`,
/// `tip:` and `Usage:` painted when stderr takes colour.
pub fn usage_error(text: &str) {
    let on = colour_on(Sink::Stderr);
    let text = paint_clap(&safe(text, false), on);
    let _ = writeln!(io::stderr().lock(), "{text}");
}

/// Help or the version on stdout: escaped, wrapped to `width` columns (see [`wrap_help`]),
/// headings and flags painted when stdout takes colour. A broken pipe ends quietly.
pub fn help(text: &str, width: usize) -> io::Result<()> {
    let on = colour_on(Sink::Stdout);
    let text = paint_clap(&wrap_help(&safe(text, false), width), on);
    let mut stdout = io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// The width help is wrapped to: the terminal's columns when stdout is one (else `COLUMNS`,
/// else 100), at most 100, at least 40, as clap's own `wrap_help` would.
pub fn help_width() -> usize {
    columns().unwrap_or(100).clamp(40, 100)
}

/// The columns output has: the terminal's when stdout is one, else `COLUMNS`; `None` when
/// neither says (a pipe, a file: no width to fit).
pub fn columns() -> Option<usize> {
    let term = if io::stdout().is_terminal() {
        console::Term::stdout().size_checked().map(|(_rows, cols)| usize::from(cols))
    } else {
        None
    };
    term.or_else(|| std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse().ok()))
}

/// Pure: clap's help (or error) text with every line longer than `width` columns wrapped at
/// spaces. A continuation line starts where the line's description started: after the first
/// gap of two or more spaces behind the line's indentation (the column clap aligns
/// descriptions to), or at the line's own indentation when there is no such gap. A word
/// longer than the room is left whole.
pub fn wrap_help(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if body.chars().count() <= width {
            out.push_str(line);
            continue;
        }
        let lead = body.len() - body.trim_start_matches(' ').len();
        // Entries are indented; prose (the about, after-help) starts at column 0.
        let hang = body[lead..].find("  ").filter(|_| lead >= 2).map(|gap| {
            let after = &body[lead + gap..];
            lead + gap + (after.len() - after.trim_start_matches(' ').len())
        });
        // The part before the description (the flag, its gap) is kept as it is.
        let head_end = hang.unwrap_or(lead);
        // A description starting too far right continues a little right of the flag.
        let indent = match hang {
            Some(h) if h + 20 <= width => h,
            Some(_) => lead + 4,
            None => lead,
        };
        let pad = " ".repeat(indent);
        let mut first = true;
        out.push_str(&body[..head_end]);
        let mut col = body[..head_end].chars().count();
        for word in body[head_end..].split(' ').filter(|w| !w.is_empty()) {
            let w = word.chars().count();
            if !first && col + 1 + w > width {
                out.push('\n');
                out.push_str(&pad);
                col = indent;
            } else if !first {
                out.push(' ');
                col += 1;
            }
            out.push_str(word);
            col += w;
            first = false;
        }
        out.push_str(nl);
    }
    out
}

/// Pure: clap's escaped text with its own words painted: `error:` and `tip:` where a line
/// starts with them, heading lines (`Usage:`, `Options:`, `Commands:`, ...) and, in the
/// lines of a section, the flags and command names before their description.
pub fn paint_clap(text: &str, on: bool) -> String {
    if !on {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        let trimmed = body.trim_start_matches(' ');
        let indent = &body[..body.len() - trimmed.len()];
        if let Some(rest) = body.strip_prefix("error:") {
            out.push_str(&paint(Paint::Error, "error:", true));
            out.push_str(rest);
        } else if let Some(rest) = trimmed.strip_prefix("tip:") {
            out.push_str(indent);
            out.push_str(&paint(Paint::Tip, "tip:", true));
            out.push_str(rest);
        } else if let Some((head, rest)) = heading(body) {
            out.push_str(&paint(Paint::Heading, head, true));
            out.push_str(rest);
        } else if (indent.len() == 2 && !trimmed.is_empty())
            || (indent.len() == 6 && trimmed.starts_with("--"))
        {
            // An entry: `  -j, --json  Print ...`, `      --json  Print ...`, `  doctor  Check ...`.
            let spec_end = trimmed.find("  ").unwrap_or(trimmed.len());
            out.push_str(indent);
            out.push_str(&paint_literals(&trimmed[..spec_end]));
            out.push_str(&trimmed[spec_end..]);
        } else {
            out.push_str(body);
        }
        out.push_str(nl);
    }
    out
}

/// `Usage:`, `Options:`, `Commands:` at the start of a line: the heading and what follows.
fn heading(body: &str) -> Option<(&str, &str)> {
    let colon = body.find(':')?;
    let head = &body[..colon];
    let is_heading = !head.is_empty()
        && head.starts_with(|c: char| c.is_ascii_uppercase())
        && head.chars().all(|c| c.is_ascii_alphabetic() || c == ' ')
        && (head == "Usage" || colon + 1 == body.len());
    is_heading.then(|| body.split_at(colon + 1))
}

/// In an entry's spec, the flags and names bold; `<VALUE>` and `[...]` placeholders plain.
fn paint_literals(spec: &str) -> String {
    spec.split(' ')
        .map(|w| {
            let (core, comma) = w.strip_suffix(',').map_or((w, ""), |c| (c, ","));
            if core.is_empty() || core.starts_with(['<', '[']) {
                w.to_string()
            } else {
                format!("{}{comma}", paint(Paint::Literal, core, true))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod colour_tests {
    use super::*;

    #[test]
    fn no_color_a_pipe_and_a_dumb_terminal_turn_auto_off() {
        let auto = ColorChoice::Auto;
        assert!(colour_wanted(auto, None, Some("xterm-256color"), true));
        assert!(colour_wanted(auto, Some(""), None, true), "an empty NO_COLOR is as unset");
        assert!(!colour_wanted(auto, Some("1"), Some("xterm"), true));
        assert!(!colour_wanted(auto, None, Some("xterm"), false));
        assert!(!colour_wanted(auto, None, Some("dumb"), true));
        assert!(colour_wanted(ColorChoice::Always, Some("1"), Some("dumb"), false));
        assert!(!colour_wanted(ColorChoice::Never, None, Some("xterm"), true));
        assert_eq!(ColorChoice::from_name("always"), Some(ColorChoice::Always));
        assert_eq!(ColorChoice::from_name("yes"), None);
    }

    #[test]
    fn paint_adds_sequences_only_when_on_and_after_escaping() {
        assert_eq!(paint(Paint::Error, "error:", false), "error:");
        assert_eq!(paint(Paint::Error, "error:", true), "\x1b[1;31merror:\x1b[0m");
        // A target's escape is shown, never obeyed, also in a painted warning.
        let line = paint_warning(&safe("    warning: \x1b[2Jcleared", false), true).into_owned();
        assert_eq!(line, "    \x1b[1;33mwarning:\x1b[0m \\u{1b}[2Jcleared");
        assert_eq!(paint_warning("no warning: here", true), "no warning: here");
    }

    #[test]
    fn clap_text_gets_headings_flags_and_prefixes_painted() {
        let help = "Check things\n\nUsage: cargo xtask doctor [OPTIONS]\n\nOptions:\n      --json  Print JSON\n  -h, --help  Print help\n";
        let painted = paint_clap(help, true);
        assert!(painted.contains("\x1b[1;4mUsage:\x1b[0m cargo xtask doctor [OPTIONS]\n"), "{painted}");
        assert!(painted.contains("\x1b[1;4mOptions:\x1b[0m\n"), "{painted}");
        assert!(painted.contains("      \x1b[1m--json\x1b[0m  Print JSON\n"), "{painted}");
        assert!(painted.contains("  \x1b[1m-h\x1b[0m, \x1b[1m--help\x1b[0m  Print help\n"), "{painted}");
        assert!(painted.starts_with("Check things\n"), "prose is left alone: {painted}");
        let err = "error: unexpected argument '--jsn' found\n\n  tip: a similar argument exists: '--json'\n";
        let painted = paint_clap(err, true);
        assert!(painted.starts_with("\x1b[1;31merror:\x1b[0m unexpected"), "{painted}");
        assert!(painted.contains("  \x1b[32mtip:\x1b[0m a similar"), "{painted}");
        assert_eq!(paint_clap(err, false), err);
    }

    #[test]
    fn long_help_lines_wrap_under_their_description() {
        let line = "      --coredump-dir <DIR>  The directory coredumps will go to; its free space is checked [default: bundles]\n";
        let wrapped = wrap_help(line, 60);
        let lines: Vec<&str> = wrapped.lines().collect();
        assert_eq!(lines[0], "      --coredump-dir <DIR>  The directory coredumps will go");
        assert!(lines[1..].iter().all(|l| l.starts_with(&" ".repeat(28)) && l.len() <= 60), "{wrapped}");
        assert_eq!(
            wrapped.split_whitespace().collect::<Vec<_>>(),
            line.split_whitespace().collect::<Vec<_>>()
        );
        // Prose wraps under its own indentation; short lines stay as they are.
        let prose = "Exit codes: 0 success, 1 failure (the message says what to do next), 2 usage error\n";
        assert!(wrap_help(prose, 40).lines().all(|l| l.chars().count() <= 40));
        assert_eq!(wrap_help("  short  line\n", 40), "  short  line\n");
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

//! `bundle report`: Markdown to paste into a GitHub issue. The symptom, the verdict, an
//! environment table, the rungs, the commands that reproduce the run, then the logs' last
//! lines folded in `<details>`, as many as fit under GitHub's limit on an issue body
//! ([`GITHUB_LIMIT`] characters): the fixed part always goes in, logs are cut to fit, and
//! the ones left out are named.
//!
//! Pure: everything it shows is handed in ([`ReportInput`]); the text is redacted once more
//! as a last guard (bundles written before redaction existed). Must not read files or print.

use std::fmt::Write as _;

use crate::bundle::{InputsRecord, Manifest};
use crate::findings::render::render_text;
use crate::findings::repro::{Outcome, Status};
use crate::findings::verdict::Analysis;
use crate::model::Role;

/// GitHub refuses an issue or comment body over 65,536 characters.
pub const GITHUB_LIMIT: usize = 65_536;
/// What the report aims at, leaving room for the user's own words.
pub const BUDGET: usize = 60_000;
/// At most this many last lines of one log.
const TAIL_LINES: usize = 60;

/// What a report shows.
pub struct ReportInput<'a> {
    pub manifest: &'a Manifest,
    pub analysis: &'a Analysis,
    /// `env/git-describe.txt` and the like: (file, first line).
    pub env_lines: Vec<(String, String)>,
    /// Logs in bundle order: (path relative to the bundle, text).
    pub logs: Vec<(String, String)>,
    /// What the repro rung wrote (`repro/result.json`) and its script, when it ran.
    pub reproducer: Option<(Outcome, Option<String>)>,
    /// The files that hold the program's input values ([`super::user_data::inputs_in`]): a
    /// reproducer among them is named, not shown.
    pub inputs: Vec<InputsRecord>,
}

/// The longest reproducer the report shows whole; a longer one is named, not shown.
const SCRIPT_SHOWN: usize = 16_000;

/// The "Minimal reproducer" section: what it showed, how to run it, what it needs and does
/// not contain, and the script itself when it is short enough.
fn reproducer_section(outcome: &Outcome, script: Option<&str>, inputs: &[InputsRecord]) -> String {
    let mut s = String::from("#### Minimal reproducer\n\n");
    let at = outcome.script.as_deref().unwrap_or(super::layout::repro_dir());
    let native = at.ends_with(".cu");
    match outcome.status {
        Status::Verified => writeln!(
            s,
            "**Verified:** `{}` {} alone and faults with {}{}. {}\n",
            one(at),
            if native { "launches the kernel" } else { "runs the kernel" },
            one(&outcome.expected.text()),
            outcome.seconds.map(|t| format!(" ({t} s)")).unwrap_or_default(),
            if native {
                "Build it with `sh build.sh` beside it and run `./repro`: it needs nvcc and the kernel's source \
                 file, nothing else of the program."
            } else {
                "Run it with `python3 repro.py`: it needs PyTorch (and Triton for a Triton kernel), one GPU and \
                 the kernel's source file, nothing else of the program."
            }
        ),
        Status::DidNotReproduce => writeln!(
            s,
            "**Not verified:** `{}` was written for {} but did not reproduce it; it is kept for reference.\n",
            one(at),
            one(&outcome.expected.text())
        ),
        Status::NotWritten => writeln!(s, "**None written** for {}.\n", one(&outcome.expected.text())),
    }
    .unwrap();
    for n in &outcome.notes {
        writeln!(s, "- {}", one(n)).unwrap();
    }
    if !outcome.notes.is_empty() {
        s.push('\n');
    }
    // A script that holds the program's input values is named, not shown: the report is what
    // gets pasted into an issue.
    if let Some(rec) = inputs.iter().find(|r| r.file == at) {
        writeln!(s, "**User data:** {}; not shown here.\n", one(&rec.text())).unwrap();
        return s;
    }
    if let Some(text) = script.filter(|t| t.len() > SCRIPT_SHOWN) {
        writeln!(
            s,
            "The program ({} characters, too long to show here) is `{}` in the bundle.\n",
            text.len(),
            one(at)
        )
        .unwrap();
    }
    if let Some(text) = script.filter(|t| t.len() <= SCRIPT_SHOWN) {
        let summary = at.rsplit('/').next().unwrap_or(at);
        let lang = if native { "cpp" } else { "python" };
        writeln!(s, "<details><summary>{}</summary>\n\n{}\n</details>\n", one(summary), fenced(lang, text))
            .unwrap();
    }
    s
}

/// The report of `debug-ima ablate`'s parent bundle: its `ablation.md` (the table and the
/// conclusion), cut to [`BUDGET`] characters.
pub fn render_ablation(m: &Manifest, ablation: &str) -> String {
    let mut s = String::new();
    let tool = if m.tool.is_empty() { "cargo xtask debug-ima" } else { m.tool.as_str() };
    writeln!(s, "### `{}` ablation report: recipe `{}`\n", crate::ui::safe(tool, true), m.recipe_name())
        .unwrap();
    let room = BUDGET.saturating_sub(s.len() + 64);
    if ablation.len() <= room {
        s.push_str(ablation);
    } else {
        let mut cut = room;
        while !ablation.is_char_boundary(cut) {
            cut -= 1;
        }
        s.push_str(&ablation[..cut]);
        writeln!(s, "\n\n(cut: `{}` in the bundle has it whole)", super::layout::ABLATION_MD).unwrap();
    }
    if !s.ends_with('\n') {
        s.push('\n');
    }
    s
}

/// Renders the report; never longer than [`BUDGET`] characters.
pub fn render(input: &ReportInput) -> String {
    let m = input.manifest;
    let a = input.analysis;
    let mut head = String::new();
    let tool = if m.tool.is_empty() { "cargo xtask debug-ima" } else { m.tool.as_str() };
    writeln!(head, "### `{}` report: recipe `{}`\n", crate::ui::safe(tool, true), m.recipe_name()).unwrap();
    if let Some(s) = a.symptoms.first() {
        let mut line = format!("**Symptom:** `{}`", one(&s.item.message));
        if let Some(at) = &s.item.reported_at {
            write!(line, " (reported at `{}:{}`)", one(&at.file), at.line).unwrap();
        }
        write!(line, " in {}", one(&s.origin)).unwrap();
        writeln!(head, "{line}\n").unwrap();
    }
    match &a.verdict {
        Some(_) => writeln!(head, "**Verdict:** {}\n", one(&a.conclusion)).unwrap(),
        None => writeln!(head, "**No verdict:** {}\n", one(a.conclusion.trim_start_matches("no verdict: ")))
            .unwrap(),
    }
    match &m.stopped {
        Some(st) => writeln!(head, "Stopped: {}\n", one(st)).unwrap(),
        None => writeln!(head, "**Unfinished:** {}\n", super::manifest::UNFINISHED).unwrap(),
    }
    if let Some((outcome, script)) = &input.reproducer {
        head.push_str(&reproducer_section(outcome, script.as_deref(), &input.inputs));
    }

    writeln!(head, "#### Environment\n\n| | |\n|---|---|").unwrap();
    let mut row = |k: &str, v: &str| {
        if !v.is_empty() {
            writeln!(head, "| {} | {} |", cell(k), cell(v)).unwrap();
        }
    };
    for (k, label) in [
        ("gpu", "GPU"),
        ("driver", "driver"),
        ("nvcc", "nvcc"),
        ("cuda-gdb", "cuda-gdb"),
        ("compute-sanitizer", "compute-sanitizer"),
    ] {
        row(label, m.versions.get(k).map(String::as_str).unwrap_or(""));
    }
    let os = [m.host.get("os"), m.host.get("kernel")]
        .into_iter()
        .flatten()
        .cloned()
        .collect::<Vec<_>>()
        .join(", kernel ");
    row("OS", &os);
    for (file, line) in &input.env_lines {
        row(file, line);
    }
    row("tool", &format!("{} {}", m.tool, m.version));
    head.push('\n');

    writeln!(head, "#### Rungs\n\n| rung | status | time | exit |\n|---|---|---|---|").unwrap();
    for r in &m.rungs {
        let exit = r.exit_text();
        writeln!(head, "| {} | {} | {:.1} s | {} |", r.rung, r.status, r.duration_s, exit).unwrap();
    }
    head.push('\n');

    let mut repro = String::new();
    for r in &m.rungs {
        for c in r.commands.iter().filter(|c| c.role == Role::Target || c.role == Role::Build) {
            writeln!(repro, "# {} ({})", r.rung, c.role).unwrap();
            writeln!(repro, "{}", one(&c.command)).unwrap();
        }
    }
    if !repro.is_empty() {
        writeln!(head, "#### Reproduce\n").unwrap();
        writeln!(
            head,
            "Every rung's command as it ran (the bundle's `{} RUNG` reruns one):\n",
            super::layout::REPLAY
        )
        .unwrap();
        head.push_str(&fenced("sh", &repro));
        head.push('\n');
    }
    let analysis = fenced("text", &render_text(a));
    let details = format!("<details><summary>Full analysis</summary>\n\n{analysis}\n</details>\n\n");
    if head.len() + details.len() < BUDGET / 2 {
        head.push_str(&details);
    }

    // Logs: each gets its last lines, cut to what is left of the budget.
    let mut logs = String::new();
    let mut left_out = Vec::new();
    let nonempty: Vec<&(String, String)> = input.logs.iter().filter(|(_, t)| !t.trim().is_empty()).collect();
    let footer_room = 200 + nonempty.iter().map(|(p, _)| p.len() + 4).sum::<usize>();
    for (i, (path, text)) in nonempty.iter().enumerate() {
        let room = BUDGET.saturating_sub(head.len() + logs.len() + footer_room);
        // Share what is left among the logs still to come.
        let share = room / (nonempty.len() - i);
        match folded_log(path, text, share) {
            Some(block) => logs.push_str(&block),
            None => left_out.push(path.as_str()),
        }
    }
    let mut s = head;
    if !logs.is_empty() {
        s.push_str("#### Logs\n\n");
        s.push_str(&logs);
    }
    if !left_out.is_empty() {
        let left_out: Vec<String> = left_out.iter().map(|p| one(p)).collect();
        writeln!(s, "Left out to stay under GitHub's size limit (in the bundle): {}.", left_out.join(", "))
            .unwrap();
    }
    let mut found = Vec::new();
    let s = crate::redact::redact_text(&s, "report", &mut found);
    cut_to(s, BUDGET)
}

/// A log's last lines in `<details>`, no longer than `room`; `None` when not even a few lines
/// fit.
fn folded_log(path: &str, text: &str, room: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut n = lines.len().min(TAIL_LINES);
    loop {
        if n == 0 {
            return None;
        }
        let tail = lines[lines.len() - n..].join("\n") + "\n";
        let what = match (n == lines.len(), n) {
            (true, 1) => "1 line".to_string(),
            (true, _) => format!("{n} lines"),
            (false, _) => format!("last {n} of {} lines", lines.len()),
        };
        let block = format!(
            "<details><summary><code>{}</code> ({what})</summary>\n\n{}\n</details>\n\n",
            one(path),
            fenced("text", &tail)
        );
        if block.len() <= room {
            return Some(block);
        }
        if n <= 3 {
            return None;
        }
        n = (n * room / block.len()).min(n - 1).max(3);
    }
}

/// A fenced code block whose fence is longer than any run of backticks in the text.
fn fenced(lang: &str, text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let body = if text.ends_with('\n') { text.to_string() } else { format!("{text}\n") };
    format!("{fence}{lang}\n{body}{fence}\n")
}

/// A table cell: no pipes, one line ([`one`]).
fn cell(v: &str) -> String {
    one(v).replace('|', "\\|")
}

/// An untrusted string (a received manifest's, a file's name, a program's message) for a
/// one-line field: a newline in it must not forge a line of the report ([`crate::ui::safe`]).
fn one(v: &str) -> String {
    crate::ui::safe(v, true).into_owned()
}

/// Cuts at a character boundary, with a note, when over `max` (only reachable when the fixed
/// part alone is that long).
fn cut_to(mut s: String, max: usize) -> String {
    const NOTE: &str = "\n\n(cut to stay under GitHub's size limit; the bundle has everything)\n";
    if s.len() <= max {
        return s;
    }
    let end = crate::model::text::cut(&s, max - NOTE.len()).len();
    s.truncate(end);
    s.push_str(NOTE);
    s
}

//! The held-out corpus of issue 42 (`support::corpus`: secrets drawn from the families of the
//! public rule sets, random values, names from word parts) placed in every place the tool
//! writes text: first through the redactor's entry points as the tool calls them (an
//! environment, an argv, a `--set` value, a log line, a traceback, memcheck's text and XML,
//! cuda-gdb's output, a JSON log, a file name), then planted in a real run on the stand-ins
//! (the target's stdout and stderr, a file it writes and its name, the recipe's environment
//! and argv, `--set`, a `collect` command's output, the debugger's and the sanitizer's logs
//! and XML) and read back from the bundle, both archives, `report`, `show` and the terminal.
//! At most 1 % of the values may leak in any one output.
//!
//! Must not: hold a token-shaped literal; drop a family or a place because it leaks (the
//! figures are the measure); need a GPU.

use std::collections::BTreeMap;

use crate::support::corpus::{corpus, survives, Item};

/// The JSON string of `s`, without its quotes.
fn json(s: &str) -> String {
    let q = serde_json::to_string(s).unwrap();
    q[1..q.len() - 1].to_string()
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The text places: how a line of the target's (or a tool's) output is written there.
pub const TEXT_PLACES: [(&str, fn(&str) -> String); 7] = [
    ("log line", |l| format!("{l}\n")),
    ("traceback", |l| {
        format!("Traceback (most recent call last):\n  File \"/app/run.py\", line 12, in <module>\n    {l}\nRuntimeError: {l}\n")
    }),
    ("memcheck text", |l| l.lines().map(|x| format!("========= {x}\n")).collect()),
    ("memcheck XML", |l| format!("  <text>{}</text>\n", xml(l))),
    ("cuda-gdb", |l| format!("(cuda-gdb) info locals\nmsg = 0x5555555592a0 \"{}\"\n", json(l))),
    ("JSON log", |l| format!("{{\"level\": \"info\", \"msg\": \"{}\"}}\n", json(l))),
    ("collect output", |l| format!("{l}\n")),
];

/// Values leaked per place through the library's entry points, and how many were placed.
fn measure(items: &[Item]) -> BTreeMap<&'static str, (usize, usize, Vec<String>)> {
    use xtask::redact::{redact_args, redact_env, redact_text};
    let mut out: BTreeMap<&'static str, (usize, usize, Vec<String>)> = BTreeMap::new();
    let mut tally = |place: &'static str, it: &Item, hay: &str| {
        let e = out.entry(place).or_default();
        e.1 += 1;
        if survives(hay.as_bytes(), &it.secret) {
            e.0 += 1;
            e.2.push(format!("{}: {}\n    -> {}", it.family, it.line, hay.trim_end()));
        }
    };
    for it in items {
        for (place, write) in TEXT_PLACES {
            let red = redact_text(&write(&it.line), place, &mut Vec::new());
            tally(place, it, &red);
        }
        let env = match &it.kv {
            Some((k, v)) => vec![(k.clone(), v.clone())],
            None => vec![("PLANTED".to_string(), it.line.clone())],
        };
        let red = redact_env(&env, "env", &mut Vec::new());
        tally("environment", it, &format!("{red:?}"));
        // A command's words, or the text as one argument of a program.
        let argv = it.argv.clone().unwrap_or_else(|| vec!["prog".into(), "--input".into(), it.line.clone()]);
        let red = redact_args(&argv, "argv", &mut Vec::new());
        tally("argv", it, &red.join(" "));
        let set = vec!["debug-ima".into(), "--set".into(), format!("s0={}", it.line)];
        let red = redact_args(&set, "--set", &mut Vec::new());
        tally("--set", it, &red.join(" "));
        // A file name holds no `/` and no newline: a text with neither, as a name.
        if !it.line.contains(['\n', '/']) {
            let red = xtask::bundle::leaves::clean_name(&it.line).unwrap_or_else(|| it.line.clone());
            tally("file name", it, &red);
        }
    }
    out
}

/// The figures: every place at most 1 % of its values leaked.
#[test]
fn held_out_corpus_leaks_at_most_one_percent_per_place() {
    let items = corpus(4242, 1200);
    let got = measure(&items);
    let mut report = String::new();
    let mut bad = false;
    for (place, (leaked, n, examples)) in &got {
        report.push_str(&format!("{place}: {leaked} of {n} leaked\n"));
        bad |= *leaked * 100 > *n;
        if *leaked > 0 {
            for e in examples.iter().take(12) {
                report.push_str(&format!("  {e}\n"));
            }
        }
    }
    eprintln!("{report}");
    assert!(!bad, "{report}");
}

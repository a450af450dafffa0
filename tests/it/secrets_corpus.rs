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

/// How a line of the target's (or a tool's) output is written in one place.
type Writer = fn(&str) -> String;

/// The text places: how a line of the target's (or a tool's) output is written there.
pub const TEXT_PLACES: [(&str, Writer); 7] = [
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
    // `DEBUG_IMA_CORPUS=SEED,N` draws another corpus (a held-out check of the rules as they
    // are; the seed here is the one they were measured on).
    let (seed, n) = std::env::var("DEBUG_IMA_CORPUS")
        .ok()
        .and_then(|v| v.split_once(',').and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?))))
        .unwrap_or((4242, 1200));
    let items = corpus(seed, n);
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

/// A YAML double-quoted string that a recipe template keeps literally (braces doubled).
fn literal(s: &str) -> String {
    serde_json::to_string(&s.replace('{', "{{").replace('}', "}}")).unwrap()
}

/// Which items' secrets survive in `bytes`.
fn survivors(bytes: &[u8], items: &[Item]) -> Vec<usize> {
    (0..items.len()).filter(|&k| survives(bytes, &items[k].secret)).collect()
}

/// The corpus planted in a real run on the stand-ins: every item in every text place, as the
/// target (stdout, stderr, a traceback, a file it leaves, files named with it), a `collect`
/// command, cuda-gdb and compute-sanitizer (its text and its XML report) print it; the items
/// with a name in the recipe's environment (which the target prints) and the tool's; some as
/// `--set` values and the target's arguments. Each output (the bundle's files, each archive,
/// `report`, `show`, the terminal) may hold at most 1 % of them.
#[test]
fn held_out_corpus_planted_in_a_run_leaks_at_most_one_percent_per_output() {
    use crate::support::plant::{write_exec, write_tool_shims, xtask};
    use crate::support::run::Run;
    use crate::support::{every_file, path_with, standins, Scratch};
    use std::io::Read;

    let s = Scratch::for_run("secrets-corpus");
    let items = corpus(90_210, 240);
    let shims = s.path("shims");
    write_tool_shims(&shims);
    write_exec(
        &shims.join("plant-target"),
        "#!/bin/sh\necho 'planted: target stdout'\ncat \"$PLANT_FILE\"\ncat \"$PLANT_FILE\" >&2\nenv\n\
         printf 'arg: %s\\n' \"$@\" >&2\nd=$(dirname \"${CUDA_COREDUMP_FILE:-./x}\")\n\
         cp \"$PLANT_FILE\" \"$d/left-by-target.txt\"\n\
         while IFS= read -r n; do : > \"$d/$n\"; done < \"$PLANT_NAMES\"\nexec target\n",
    );
    let mut printed = String::new();
    let mut xml_lines = String::new();
    for it in &items {
        for (place, write) in TEXT_PLACES {
            if place == "memcheck XML" {
                xml_lines.push_str(&write(&it.line));
            } else {
                printed.push_str(&write(&it.line));
            }
        }
    }
    // (A backslash in a name makes `pack` refuse the bundle today: issue 42's item 5.)
    let names: String = items
        .iter()
        .filter(|it| !it.line.contains(['\n', '/', '\\']) && it.line.len() < 200)
        .map(|it| format!("{}\n", it.line))
        .collect();
    for (f, text) in [("plant.txt", &printed), ("plant.xml", &xml_lines), ("names.txt", &names)] {
        std::fs::write(s.path(f), text).unwrap();
    }
    let mut recipe = String::from(
        "version: 1\nname: corpus\ndescription: \"the held-out corpus\"\nvariables:\n  \
         s0: { description: \"a value\" }\n  s1: { description: \"a value\" }\n\
         collect:\n  - name: planted.txt\n    command: [\"sh\", \"-c\", \"cat \\\"$PLANT_FILE\\\"\"]\n\
         run:\n  command: [\"plant-target\", \"{s0}\", \"{s1}\"]\n  timeout: 30\n  env:\n",
    );
    let mut seen = std::collections::BTreeSet::new();
    for (i, it) in items.iter().enumerate() {
        if let Some((k, v)) = &it.kv {
            // A name drawn twice gets the item's number (`MYSQL_PWD_17`).
            let k = if seen.insert(k.clone()) { k.clone() } else { format!("{k}_{i}") };
            recipe.push_str(&format!("    {k}: {}\n", literal(v)));
        }
    }
    let recipe = s.write_recipe(&recipe);
    let path = path_with(&[&shims, &standins()]);
    let one_line: Vec<&Item> = items.iter().filter(|it| !it.line.contains('\n')).collect();
    let mut run = Run::new(&s, &recipe, "oob_write")
        .path(path.clone())
        .arg("--full")
        .env("PLANT_FILE", s.path("plant.txt").to_str().unwrap())
        .env("PLANT_XML", s.path("plant.xml").to_str().unwrap())
        .env("PLANT_NAMES", s.path("names.txt").to_str().unwrap())
        .arg("--set")
        .arg(&format!("s0={}", one_line[0].line))
        .arg("--set")
        .arg(&format!("s1={}", one_line[1].line));
    for (i, it) in one_line.iter().enumerate().take(60) {
        run = run.env(&format!("CUDA_PLANT_{i:02}"), &it.line);
    }
    let out = run.run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    let root = b.root.clone();

    // Each output, and what of the corpus it holds.
    let mut outputs: Vec<(String, Vec<u8>)> = Vec::new();
    outputs.push(("terminal of debug-ima".into(), format!("{}{}", out.stdout, out.stderr).into_bytes()));
    let mut files = Vec::new();
    for (p, bytes) in every_file(&root) {
        files.extend_from_slice(p.to_string_lossy().as_bytes());
        files.push(b'\n');
        files.extend_from_slice(&bytes);
    }
    let ran = |w: &str| memchr::memmem::find(&files, w.as_bytes()).is_some();
    assert!(ran("planted: target stdout") && ran("planted: cuda-gdb"), "the shims did not run");
    outputs.push(("the bundle's files and names".into(), files));
    let r = root.to_str().unwrap();
    for (args, ext) in
        [(vec!["bundle", "pack", r], "tar.zst"), (vec!["bundle", "pack", "--gzip", r], "tar.gz")]
    {
        let (ok, o, e) = xtask(&s.dir, &path, &args);
        assert!(ok, "{}", String::from_utf8_lossy(&e));
        outputs.push((format!("terminal of bundle pack ({ext})"), [o, e].concat()));
        let file = std::fs::File::open(root.with_extension(ext)).unwrap();
        let mut tar = Vec::new();
        if ext == "tar.zst" {
            zstd::stream::read::Decoder::new(file).unwrap().read_to_end(&mut tar).unwrap();
        } else {
            flate2::read::GzDecoder::new(file).read_to_end(&mut tar).unwrap();
        }
        outputs.push((format!("the .{ext}"), tar));
    }
    for cmd in ["report", "show"] {
        let (ok, o, e) = xtask(&s.dir, &path, &["bundle", cmd, r]);
        assert!(ok, "bundle {cmd}: {}", String::from_utf8_lossy(&e));
        outputs.push((format!("bundle {cmd}"), [o, e].concat()));
    }
    let mut report = format!("{} values planted\n", items.len());
    let mut bad = false;
    for (name, bytes) in &outputs {
        let leaked = survivors(bytes, &items);
        report.push_str(&format!("{name}: {} leaked\n", leaked.len()));
        for &k in leaked.iter().take(8) {
            report.push_str(&format!("  {}: {}\n", items[k].family, items[k].line));
        }
        bad |= leaked.len() * 100 > items.len();
    }
    eprintln!("{report}");
    assert!(!bad, "{report}");
    s.assert_no_standin_left();
}

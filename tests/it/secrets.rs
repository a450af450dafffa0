//! The adversarial suite for secrets (issue 12), run by CI without a GPU: more than 25 shapes of
//! secret from the public rule sets of gitleaks and trufflehog are planted in every place a
//! secret can enter a run — the tool's environment, its argv and `--set` values, the recipe
//! file, the target's stdout and stderr, the tools' logs (the stand-ins of
//! `compute-sanitizer` and `cuda-gdb`, cuda-gdb's locals among them), compute-sanitizer's XML
//! report and a `collect` command's output — then `debug-ima --full` runs on the stand-ins,
//! and `bundle pack` (`.tar.zst` and `--gzip`), `bundle report` and `bundle show` read what it
//! wrote. No planted value may appear in any file of the bundle, in either archive
//! (decompressed, tar headers included), in the report, in `show`'s output, or on the
//! terminal of any of these commands.
//!
//! Must not: need a GPU, hold a token-shaped literal (every secret is made at run time, so
//! that no scanner trips on this file), or write outside its scratch folder.

use std::path::Path;

use crate::support;
use support::plant::{contains, shape, write_exec, write_tool_shims, xtask, Leaks, Rng, Shape};
use support::run::Run;
use support::{path_with, standins, Scratch};

fn pem(rng: &mut Rng, label: &str) -> (String, Vec<String>) {
    let body = format!("MIIEow{}", rng.b64(1500));
    let mut lines: Vec<String> =
        body.as_bytes().chunks(64).map(|c| String::from_utf8(c.to_vec()).unwrap()).collect();
    // A last line as base64 ends, padded (and long enough to be told from a word alone).
    lines.push(format!("{}==", rng.alnum(30)));
    let open = format!("-----BEGIN {label}PRIVATE KEY-----");
    let close = format!("-----END {label}PRIVATE KEY-----");
    (format!("{open}\n{}\n{close}", lines.join("\n")), lines)
}

/// The shapes, 35 of them, each with fresh values.
fn shapes(seed: u64) -> Vec<Shape> {
    let mut r = Rng(seed);
    let mut v = Vec::new();
    let (key, lines) = pem(&mut r, "RSA ");
    v.push(Shape { name: "PEM private key, multi-line", text: key, secrets: lines });
    let (key, lines) = pem(&mut r, "");
    let escaped = key.replace('\n', "\\n");
    v.push(Shape {
        name: "PEM private key in a service-account JSON",
        text: format!(
            "{{\"type\": \"service_account\", \"project_id\": \"proj\", \"private_key\": \"{escaped}\\n\", \"client_email\": \"ci@proj.iam.gserviceaccount.com\"}}"
        ),
        secrets: lines,
    });
    let (a, b) = (r.alnum(40), r.alnum(43));
    v.push(shape("JWT", format!("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ{a}.{b}"), &[&a, &b]));
    let (a, b) = (r.digits(12), r.alnum(24));
    v.push(shape("Slack token", format!("xoxb-{a}-{}-{b}", r.digits(13)), &[&b]));
    let a = r.alnum(20);
    v.push(shape("GitLab token", format!("glpat-{a}"), &[&a]));
    let a = r.alnum(36);
    v.push(shape("GitHub token", format!("ghp_{a}"), &[&a]));
    let (a, b) = (r.alnum(22), r.alnum(59));
    v.push(shape("GitHub fine-grained token", format!("github_pat_{a}_{b}"), &[&a, &b]));
    let a = r.alnum(24);
    v.push(shape("Stripe live key", format!("sk_live_{a}"), &[&a]));
    let a = r.alnum(24);
    v.push(shape("Stripe restricted key", format!("rk_live_{a}"), &[&a]));
    let a = r.upper(16);
    v.push(shape("AWS access key id", format!("AKIA{a}"), &[&a]));
    let a = r.b64(40);
    v.push(shape("AWS secret key with spaces", format!("aws_secret_access_key = {a}"), &[&a]));
    let a = r.alnum(35);
    v.push(shape("Google API key", format!("AIza{a}"), &[&a]));
    let a = r.alnum(48);
    v.push(shape("OpenAI project key", format!("sk-proj-{a}"), &[&a]));
    let a = r.alnum(80);
    v.push(shape("Anthropic key", format!("sk-ant-api03-{a}"), &[&a]));
    let a = r.alnum(34);
    v.push(shape("Hugging Face token", format!("hf_{a}"), &[&a]));
    let a = r.alnum(36);
    v.push(shape("npm token", format!("npm_{a}"), &[&a]));
    let a = r.alnum(60);
    v.push(shape("PyPI token", format!("pypi-AgEIcHlwaS5vcmc{a}"), &[&a]));
    let a = r.b64(86);
    v.push(shape(
        "Azure storage connection string",
        format!("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={a}==;EndpointSuffix=core.windows.net"),
        &[&a],
    ));
    let a = r.alnum(16);
    v.push(shape("password in a URL", format!("https://deploy:{a}@git.example.com/org/repo.git"), &[&a]));
    let a = r.alnum(32);
    v.push(shape("Authorization: Bearer", format!("Authorization: Bearer {a}"), &[&a]));
    let a = r.b64(24);
    v.push(shape("Authorization: Basic", format!("Authorization: Basic {a}"), &[&a]));
    let a = r.alnum(32);
    v.push(shape("X-Api-Key header", format!("X-Api-Key: {a}"), &[&a]));
    let a = r.alnum(32);
    v.push(shape("Cookie header", format!("Cookie: session={a}; theme=dark"), &[&a]));
    let a = r.alnum(32);
    v.push(shape("Set-Cookie header", format!("Set-Cookie: sid={a}; Path=/; HttpOnly"), &[&a]));
    let a = r.alnum(20);
    v.push(shape(".netrc password", format!("machine api.example.com login ci password {a}"), &[&a]));
    let a = r.alnum(32);
    v.push(shape("secret-named YAML key", format!("api_key: {a}"), &[&a]));
    let a = r.alnum(32);
    v.push(shape("secret-named JSON key", format!("{{\"token\": \"{a}\", \"max_tokens\": 16}}"), &[&a]));
    let a = r.alnum(32);
    v.push(shape("secret-named Python dict key", format!("{{'secret': '{a}', 'retries': 3}}"), &[&a]));
    let a = r.alnum(24);
    v.push(shape("secret-named assignment", format!("MY_SECRET={a}"), &[&a]));
    let a = r.alnum(36);
    v.push(shape("token after a terminal colour", format!("\x1b[31mghp_{a}\x1b[0m"), &[&a]));
    let a = r.alnum(16);
    v.push(shape("cuda-gdb local (-G)", format!("password = 0x5555555592a0 \"{a}\""), &[&a]));
    let a = r.alnum(20);
    v.push(shape("curl -u user:password", format!("curl -u ci:{a} https://x.example.com"), &[&a]));
    let a = r.alnum(64);
    v.push(shape("NVIDIA API key", format!("nvapi-{a}"), &[&a]));
    let a = r.alnum(27);
    v.push(shape("Docker Hub token", format!("dckr_pat_{a}"), &[&a]));
    let a = r.alnum(60);
    v.push(shape("Google OAuth token", format!("ya29.{a}"), &[&a]));
    let a = r.alnum(18);
    v.push(shape(
        "secret-named XML element",
        format!("<server><id>hub</id><password>{a}</password></server>"),
        &[&a],
    ));
    let a = r.alnum(18);
    v.push(shape(
        "mysql -pPASSWORD attached",
        format!("mysql -h db.internal -uroot -p{a} -e 'select 1'"),
        &[&a],
    ));
    v
}

/// A value passed as the separate argument of a flag: `-p X`, `--password X`, ...
struct FlagValue {
    flag: &'static str,
    var: &'static str,
    value: String,
}

fn flag_values(seed: u64) -> Vec<FlagValue> {
    let mut r = Rng(seed);
    [("-p", "pw_short"), ("--password", "pw_long"), ("--token", "tok"), ("--api-key", "key")]
        .into_iter()
        .map(|(flag, var)| FlagValue { flag, var, value: format!("pw{}", r.alnum(14)) })
        .collect()
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// Stand-ins in front of the stand-ins: a target that prints the planted file (stdout and
/// stderr), its environment and its arguments before it becomes the stand-in target; a
/// `compute-sanitizer` and a `cuda-gdb` that print it before the real stand-ins, the first
/// also planting it in its `--save` XML report.
fn write_shims(dir: &Path) {
    write_tool_shims(dir);
    write_exec(
        &dir.join("plant-target"),
        "#!/bin/sh\necho 'planted: target stdout'\ncat \"$PLANT_FILE\"\necho 'planted: target stderr' >&2\n\
         cat \"$PLANT_FILE\" >&2\nenv\nprintf 'arg: %s\\n' \"$@\" >&2\necho \"db: $DB_PASSWORD\"\nexec target\n",
    );
}

/// A YAML double-quoted string (JSON's escapes are YAML's).
fn yaml(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// A recipe string that holds `s` literally: braces doubled, as templates want.
fn literal(s: &str) -> String {
    yaml(&s.replace('{', "{{").replace('}', "}}"))
}

/// Plants every shape in every place, runs the ladder on the stand-ins, packs, reports and
/// shows the bundle, and finds none of them anywhere.
#[test]
fn no_planted_secret_reaches_the_bundle_its_archives_the_report_or_the_terminal() {
    let s = Scratch::for_run("secrets");
    let shapes = shapes(12);
    let flags = flag_values(34);
    assert!(shapes.len() >= 25, "{}", shapes.len());
    let shims = s.path("shims");
    write_shims(&shims);

    // What the target and the tools print: every shape, one after the other.
    let plant_file = s.path("plant.txt");
    let mut printed: String = shapes.iter().map(|sh| format!("{}\n", sh.text)).collect();
    printed.push_str(&flags.iter().map(|f| format!("{} {}\n", f.flag, f.value)).collect::<String>());
    std::fs::write(&plant_file, &printed).unwrap();
    let plant_xml = s.path("plant.xml");
    let xml: String = shapes
        .iter()
        .filter(|sh| !sh.text.contains('\x1b'))
        .map(|sh| format!("  <planted>{}</planted>\n", xml_escape(&sh.text)))
        .collect();
    std::fs::write(&plant_xml, xml).unwrap();

    // The recipe file: every shape in its run step's environment, one as a variable's
    // default, the flags' values through `--set`, and a `collect` command printing them.
    let n = shapes.len();
    let mut recipe =
        String::from("version: 1\nname: secrets\ndescription: \"secrets planted everywhere\"\nvariables:\n");
    for i in 0..n {
        recipe.push_str(&format!("  s{i}: {{ description: \"shape {i}\" }}\n"));
    }
    for f in &flags {
        recipe.push_str(&format!("  {}: {{ description: \"after {}\" }}\n", f.var, f.flag));
    }
    recipe.push_str(&format!(
        "  def: {{ default: {}, description: \"a default\" }}\n",
        literal(&shapes[19].text)
    ));
    recipe.push_str(
        "collect:\n  - name: planted.txt\n    command: [\"sh\", \"-c\", \"cat \\\"$PLANT_FILE\\\"\"]\n",
    );
    let mut argv = vec![yaml("plant-target")];
    for f in &flags {
        argv.push(yaml(f.flag));
        argv.push(yaml(&format!("{{{}}}", f.var)));
    }
    // A value given after `--password` is also passed alone: redacted there too.
    argv.push(yaml(&format!("{{{}}}", flags[1].var)));
    argv.extend((0..n).map(|i| yaml(&format!("{{s{i}}}"))));
    argv.push(yaml("{def}"));
    recipe.push_str(&format!("run:\n  command: [{}]\n  timeout: 30\n  env:\n", argv.join(", ")));
    for (i, sh) in shapes.iter().enumerate() {
        recipe.push_str(&format!("    RECIPE_PLANT_{i:02}: {}\n", literal(&sh.text)));
    }
    let recipe = s.write_recipe(&recipe);

    let db_password = format!("db{}", Rng(56).alnum(18));
    let path = path_with(&[&shims, &standins()]);
    let mut run = Run::new(&s, &recipe, "oob_write")
        .path(path.clone())
        .arg("--full")
        .env("PLANT_FILE", plant_file.to_str().unwrap())
        .env("PLANT_XML", plant_xml.to_str().unwrap())
        .env("DB_PASSWORD", &db_password);
    for (i, sh) in shapes.iter().enumerate() {
        run = run.arg("--set").arg(&format!("s{i}={}", sh.text));
        // The tool's environment: allow-listed names are recorded in the manifest.
        run = run.env(&format!("CUDA_PLANT_{i:02}"), &sh.text);
    }
    for f in &flags {
        run = run.arg("--set").arg(&format!("{}={}", f.var, f.value));
    }
    // The plan first (`--dry-run` prints every command and environment): no bundle.
    let mut dry =
        Run { scratch: &s, args: run.args.clone(), env: run.env.clone(), path: path.clone(), stdin: None };
    dry.args.push("--dry-run".into());
    let planned = dry.run();
    assert_eq!(planned.code(), Some(0), "{}", planned.both());
    assert!(planned.stdout.contains("plant-target"), "{}", planned.both());
    let out = run.run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();

    // The values planted went where they were meant to: the test would prove nothing else.
    let baseline = b.read("rungs/01-baseline/stdout.log");
    assert!(baseline.contains("planted: target stdout"), "{baseline}");
    assert!(baseline.contains("CUDA_PLANT_00="), "{baseline}");
    assert!(b.read("rungs/01-baseline/stderr.log").contains("arg: [REDACTED]"));
    assert!(b.read("env/planted.txt").contains("machine api.example.com login ci password [REDACTED]"));
    let files = support::every_file(&b.root);
    let found = |what: &str| files.iter().any(|(_, bytes)| contains(bytes, what));
    assert!(
        found("planted: compute-sanitizer") && found("planted: cuda-gdb"),
        "the tools' shims did not run"
    );
    assert!(found("<planted>"), "no XML report was planted");
    let manifest = b.read("manifest.yaml");
    assert!(manifest.contains("CUDA_PLANT_00") && manifest.contains("RECIPE_PLANT_00"), "{manifest}");

    let planted: Vec<(String, String)> = shapes
        .iter()
        .flat_map(|sh| sh.secrets.iter().map(|x| (sh.name.to_string(), x.clone())))
        .chain(flags.iter().map(|f| (format!("value of {}", f.flag), f.value.clone())))
        .chain([("inherited DB_PASSWORD".to_string(), db_password.clone())])
        .collect();
    let mut leaks = Leaks::default();
    leaks.check(
        "terminal of debug-ima --dry-run",
        format!("{}{}", planned.stdout, planned.stderr).as_bytes(),
        &planted,
    );
    leaks.check("terminal of debug-ima", format!("{}{}", out.stdout, out.stderr).as_bytes(), &planted);
    for (p, bytes) in &files {
        leaks.check(&p.strip_prefix(&b.root).unwrap().display().to_string(), bytes, &planted);
    }

    leaks.check_shared(&s.dir, &path, &b.root, &planted);
    assert!(leaks.0.is_empty(), "{} planted values leaked:\n{}", leaks.0.len(), leaks.0.join("\n"));
    s.assert_no_standin_left();
}

// The two tests below hold `process`'s log writer to cutting a line longer than it holds where
// `xtask::redact::cut_point` says, and to feeding every line of a stream through one
// `xtask::redact::Lines` (every line while `Lines::in_block`).

/// Runs the baseline of a stand-in target that first prints the file `planted` holds (on
/// stderr with `to_stderr`), and returns the bundle's log of that stream.
fn planted_baseline_log(s: &Scratch, planted: &str, to_stderr: bool) -> String {
    let shims = s.path("shims");
    std::fs::create_dir_all(&shims).unwrap();
    std::fs::write(s.path("planted.txt"), planted).unwrap();
    let redirect = if to_stderr { " >&2" } else { "" };
    write_exec(
        &shims.join("plant-target"),
        &format!("#!/bin/sh\ncat \"$PLANT_FILE\"{redirect}\nexec target\n"),
    );
    let recipe =
        s.write_recipe(&support::run::target_recipe("").replace("[\"target\"]", "[\"plant-target\"]"));
    let out = Run::new(s, &recipe, "oob_write")
        .path(path_with(&[&shims, &standins()]))
        .arg("--rungs")
        .arg("baseline")
        .env("PLANT_FILE", s.path("planted.txt").to_str().unwrap())
        .run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let stream = if to_stderr { "stderr" } else { "stdout" };
    s.only_bundle().read(&format!("rungs/01-baseline/{stream}.log"))
}

/// A target that prints one line of several MiB, dense with tokens: the log writer holds at
/// most 1 MiB of a line and writes the rest in pieces, and no token may be split by a cut
/// into two halves that each pass as harmless.
#[test]
fn a_token_straddling_the_long_line_cut_never_reaches_the_log() {
    let s = Scratch::for_run("straddle");
    // Tokens of 44 bytes one after the other: a cut anywhere splits one or falls on a blank.
    let mut r = Rng(78);
    let body = r.alnum(24);
    let line: String = (0..70_000).map(|n| format!("ghp_{body}{n:012} ")).collect();
    let log = planted_baseline_log(&s, &format!("{line}\n"), false);
    // Every token's body, or any 12 bytes of one, is gone.
    assert!(!log.contains(&body[..12]) && !log.contains(&body[12..]), "a piece of a token is in the log");
    assert_eq!(log.matches("ghp_[REDACTED]").count(), 70_000);
}

/// A PEM private key printed by the target whose last line is short (a few bytes of base64,
/// which alone read as a word): every line between its header and its footer is redacted in
/// the stream's log, as `Lines` follows the block.
#[test]
fn every_line_of_a_pem_block_is_redacted_in_a_streamed_log() {
    let s = Scratch::for_run("pem-stream");
    let mut r = Rng(90);
    let (key, mut lines) = pem(&mut r, "OPENSSH ");
    let short = "Zx9q";
    let key = key.replace("\n-----END", &format!("\n{short}\n-----END"));
    lines.push(short.to_string());
    let log = planted_baseline_log(&s, &format!("{key}\n"), true);
    assert!(log.contains("-----BEGIN OPENSSH PRIVATE KEY-----\n[REDACTED]\n"), "{log}");
    for l in &lines {
        assert!(!log.lines().any(|x| x == l), "`{l}` is in the log:\n{log}");
    }
}

/// An error message quotes what the user typed: a `--set` without `=`, an argument clap
/// refuses, a recipe variable that is not declared. The terminal gets it redacted, every time.
#[test]
fn error_messages_quoting_a_secret_are_redacted_on_the_terminal() {
    let s = Scratch::for_run("secret-errors");
    let path = path_with(&[&standins()]);
    let mut r = Rng(78);
    let (gh, hf) = (format!("ghp_{}", r.alnum(36)), format!("hf_{}", r.alnum(34)));
    let recipe = s.write_recipe(&support::run::target_recipe(""));
    let recipe = recipe.to_str().unwrap();
    let bundles = s.bundles();
    let bundles = bundles.to_str().unwrap();
    let cases: Vec<Vec<String>> = vec![
        vec![
            "debug-ima".into(),
            "--recipe".into(),
            recipe.into(),
            "--bundle-dir".into(),
            bundles.into(),
            "--set".into(),
            gh.clone(),
        ],
        vec![
            "debug-ima".into(),
            "--recipe".into(),
            recipe.into(),
            "--bundle-dir".into(),
            bundles.into(),
            "--set".into(),
            format!("undeclared={hf}"),
        ],
        vec!["debug-ima".into(), format!("--no-such-flag={gh}")],
        vec!["analyze".into(), format!("/nonexistent/{hf}/log.txt")],
    ];
    for args in cases {
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let (ok, o, e) = xtask(&s.dir, &path, &argv);
        let both = [o, e].concat();
        let text = String::from_utf8_lossy(&both);
        assert!(!ok, "`{}` should fail: {text}", argv.join(" "));
        assert!(text.contains("error"), "`{}`: {text}", argv.join(" "));
        let secret_part = |t: &str| t.split_once('_').map(|(_, b)| b.to_string()).unwrap();
        for secret in [secret_part(&gh), secret_part(&hf)] {
            assert!(!contains(&both, &secret), "`{}` printed the secret: {text}", argv.join(" "));
        }
    }
}

//! The planted-secret matrix of issue 22 ("redaction that generalises"): 45 shapes of secret
//! that no list of prefixes named before (webhook URLs, data-platform and cloud refresh
//! tokens, encryption keys, a token as a URL's user name, CLI logins that take the key as an
//! argument, long base64 blobs, cuda-gdb's `std::string` locals, `-p` in echoed commands),
//! each written in six forms — a log line, a JSON string (`\/` escapes), a YAML single-quoted
//! string, XML with entities (`&quot;`, `&#x2F;`), URL percent-encoding and a cuda-gdb local —
//! are planted in the target's stdout and stderr, a file the target writes, the tools' logs
//! (the stand-ins of compute-sanitizer and cuda-gdb, its `--save` XML), the tool's environment
//! and `--set` values. `debug-ima --full` runs on the stand-ins, then `bundle pack` (both
//! archives), `bundle report` and `bundle show`: no planted value, in any of its forms, may
//! appear in any file, archive, report, `findings.json` or on the terminal.
//!
//! Must not: need a GPU, hold a token-shaped literal (every secret is made at run time), or
//! write outside its scratch folder.

use std::path::Path;

use crate::support;
use support::plant::{contains, shape, write_exec, write_tool_shims, Leaks, Rng, Shape};
use support::run::Run;
use support::{path_with, standins, Scratch};

/// The 45 shapes, each with fresh values.
fn shapes(seed: u64) -> Vec<Shape> {
    let mut r = Rng(seed);
    let mut v = Vec::new();
    let a = r.alnum(24);
    v.push(shape(
        "Slack webhook",
        format!("https://hooks.slack.com/services/T0AB12CD3/B0EF45GH6/{a}"),
        &[&a],
    ));
    let (id, a) = (r.from(b"0123456789", 18), r.urlsafe(68));
    v.push(shape("Discord webhook", format!("https://discord.com/api/webhooks/{id}/{a}"), &[&a]));
    let a = r.hex(32);
    v.push(shape(
        "Teams webhook",
        format!("https://acme.webhook.office.com/webhookb2/0f1e2d3c-aaaa-bbbb-cccc-111122223333@9a8b7c6d-1111-2222-3333-444455556666/IncomingWebhook/{a}/0a1b2c3d-0000-1111-2222-333344445555"),
        &[&a],
    ));
    let a = format!("AA{}", r.urlsafe(33));
    v.push(shape(
        "Telegram bot URL",
        format!("https://api.telegram.org/bot712345678:{a}/sendMessage"),
        &[&a],
    ));
    let a = format!("AA{}", r.urlsafe(33));
    v.push(shape("Telegram bot token", format!("bot token 712345679:{a} set"), &[&a]));
    let a = r.urlsafe(40);
    v.push(shape("Zapier webhook", format!("https://hooks.zapier.com/hooks/catch/123456/{a}/"), &[&a]));
    let a = r.hex(32);
    v.push(shape("Databricks token", format!("databricks configure --host h dapi{a}"), &[&a]));
    let a = format!("0g{}", r.urlsafe(90));
    v.push(shape("Google refresh token", format!("refresh: 1//{a}"), &[&a]));
    let a = r.urlsafe(31);
    v.push(shape("Azure AD client secret", format!("client abc8Q~{a}"), &[&a]));
    let a = r.urlsafe(400);
    v.push(shape("Azure AD refresh token", format!("got refresh 0.AR{a}"), &[&a]));
    let a = r.from(b"QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58);
    v.push(shape("age secret key", format!("# created\nAGE-SECRET-KEY-1{a}"), &[&a]));
    let a = r.urlsafe(43);
    v.push(shape("Fernet key", format!("fernet {a}="), &[&a]));
    let a = r.b64_token(43);
    v.push(shape("base64 AES-256 key", format!("aes256 {a}= loaded"), &[&a]));
    let a = r.b64_token(76);
    v.push(shape("PGP armour line in prose", format!("block {a} end"), &[&a]));
    let a = format!("b3BlbnNzaC1rZXktdjEAAAAA{}", r.b64_token(120));
    v.push(shape("OpenSSH key blob", format!("key blob: {a}"), &[&a]));
    let a = r.alnum(40);
    v.push(shape(
        "token as a URL's user name",
        format!("git clone https://{a}@github.com/org/repo.git"),
        &[&a],
    ));
    let a = format!("ghX{}", r.alnum(37));
    v.push(shape(
        "unknown-prefix token as a URL's user",
        format!("remote: https://{a}@git.example.com/r"),
        &[&a],
    ));
    let a = r.hex(40);
    v.push(shape("wandb login KEY", format!("+ wandb login {a}"), &[&a]));
    let a = r.word(12);
    v.push(shape("docker login -p WORD", format!("running: docker login -u ci -p {a} registry.io"), &[&a]));
    let a = r.alnum(36);
    v.push(shape("echo KEY | gh auth login", format!("echo {a} | gh auth login --with-token"), &[&a]));
    let a = r.alnum(20);
    v.push(shape(
        "echo KEY | docker login --password-stdin",
        format!("echo '{a}' | docker login --password-stdin ghcr.io"),
        &[&a],
    ));
    let a = r.alnum(36);
    v.push(shape("npm _authToken", format!("npm config set //registry.npmjs.org/:_authToken={a}"), &[&a]));
    let a = r.word(14);
    v.push(shape("az login -p", format!("$ az login --service-principal -u app -p {a} --tenant t"), &[&a]));
    let a = r.alnum(24);
    v.push(shape("vercel --token", format!("+ vercel deploy --token {a} --prod"), &[&a]));
    let a = r.alnum(32);
    v.push(shape("export of a random value", format!("export WANDB={a}"), &[&a]));
    let a = r.alnum(24);
    v.push(shape("vault login", format!("vault login s.{a}"), &[&a]));
    let a = r.word(10);
    v.push(shape("mysql -p WORD echoed by set -x", format!("+ mysql -u root -p {a} appdb"), &[&a]));
    let a = r.alnum(30);
    v.push(shape("percent-encoded token query", format!("GET /cb?state=1&token%3D{a}%26x%3D1"), &[&a]));
    let a = r.alnum(18);
    v.push(shape(
        "JSON-escaped URL password",
        format!("{{\"u\": \"https:\\/\\/deploy:{a}@host\\/r\"}}"),
        &[&a],
    ));
    let a = r.alnum(18);
    v.push(shape("escaped XML element", format!("&lt;password&gt;{a}&lt;/password&gt;"), &[&a]));
    let a = r.alnum(22);
    v.push(shape("XML-escaped JSON key", format!("{{&quot;api_key&quot;: &quot;{a}&quot;}}"), &[&a]));
    let a = r.alnum(18);
    v.push(shape(
        "cuda-gdb std::string local",
        format!("password = {{_M_dataplus = {{<std::allocator<char>> = {{<No data fields>}}, _M_p = 0x7ffd5c3e9a10 \"{a}\"}}, _M_string_length = 18, {{_M_local_buf = \"x\", _M_allocated_capacity = 7}}}}"),
        &[&a],
    ));
    let a = r.alnum(18);
    v.push(shape("cuda-gdb api_key local", format!("api_key = \"{a}\""), &[&a]));
    let a = r.alnum(18);
    v.push(shape("cuda-gdb print of a secret", format!("(cuda-gdb) print password\n$1 = \"{a}\""), &[&a]));
    let a = r.alnum(43);
    v.push(shape("PlanetScale token", format!("pscale_tkn_{a}"), &[&a]));
    let a = r.hex(64);
    v.push(shape("Sentry user token", format!("sntryu_{a}"), &[&a]));
    let a = r.alnum(43);
    v.push(shape("Doppler token", format!("dp.pt.{a}"), &[&a]));
    let a = r.urlsafe(43);
    v.push(shape("Square secret", format!("sq0csp-{a}"), &[&a]));
    let (a, b) = (r.hex(24), r.hex(34));
    v.push(shape("Postman key", format!("PMAK-{a}-{b}"), &[&a, &b]));
    let a = r.alnum(40);
    v.push(shape("Tailscale key", format!("tskey-auth-{a}"), &[&a]));
    let a = r.alnum(46);
    v.push(shape("Notion token", format!("ntn_{a}"), &[&a]));
    let a = r.alnum(48);
    v.push(shape("Perplexity key", format!("pplx-{a}"), &[&a]));
    let a = r.hex(40);
    v.push(shape("Supabase token", format!("sbp_{a}"), &[&a]));
    let a = r.alnum(16);
    v.push(shape("YAML '' inside a secret", format!("password: 'it''s-{a}'"), &[&a]));
    let a = r.alnum(16);
    v.push(shape(
        "JSON escaped quote inside a secret",
        format!("{{\"password\": \"a\\\"b-{a}\", \"n\": 1}}"),
        &[&a],
    ));
    v
}

/// How a shape is written in one form, and how its secrets then read.
struct Form {
    name: &'static str,
    write: fn(&str) -> String,
}

fn json(s: &str) -> String {
    serde_json::to_string(s).unwrap().replace('/', "\\/")
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('/', "&#x2F;")
}

fn percent(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

const FORMS: [Form; 6] = [
    Form { name: "line", write: |s| s.to_string() },
    Form { name: "JSON", write: |s| format!("{{\"log\": {}}}", json(s)) },
    Form { name: "YAML", write: |s| format!("msg: '{}'", s.replace('\'', "''")) },
    Form { name: "XML", write: |s| format!("  <planted>{}</planted>", xml(s)) },
    Form { name: "URL-encoded", write: |s| format!("GET /log?q={}", percent(s)) },
    Form {
        name: "cuda-gdb local",
        write: |s| format!("msg = 0x5555555592a0 {}", json(s).replace("\\/", "/")),
    },
];

/// Whether `shape` is written in `form`: a shape of two lines, or one that is itself escaped
/// (`%3D`, `\\/`, `&quot;`, `\\\"`, `''`), only as it is (escapes of escapes are not decoded).
fn applies(shape: &Shape, form: &Form) -> bool {
    let encoded = ["%3D", "\\/", "&quot;", "&lt;", "\\\"", "''"].iter().any(|e| shape.text.contains(e));
    form.name == "line" || !(encoded || shape.text.contains('\n'))
}

/// A target that prints the planted file on stdout and stderr and leaves a copy in its rung
/// folder, and one in a folder it makes there named with a token,
/// then becomes the stand-in target; a compute-sanitizer and a cuda-gdb that print it before
/// the stand-ins, the first also planting the XML lines in its `--save` report.
fn write_shims(dir: &Path) {
    write_tool_shims(dir);
    write_exec(
        &dir.join("plant-target"),
        "#!/bin/sh\necho 'planted: target stdout'\ncat \"$PLANT_FILE\"\ncat \"$PLANT_FILE\" >&2\n\
         d=$(dirname \"${CUDA_COREDUMP_FILE:-./x}\")\ncp \"$PLANT_FILE\" \"$d/left-by-target.txt\"\n\
         mkdir -p \"$d/$PLANT_DIR\" && cp \"$PLANT_FILE\" \"$d/$PLANT_DIR/left.txt\"\nprintf 'arg: %s\\n' \"$@\" >&2\nexec target\n",
    );
}

#[test]
fn no_shape_of_the_matrix_leaks_in_any_form_or_place() {
    let s = Scratch::for_run("secrets-matrix");
    let shapes = shapes(22);
    assert!(shapes.len() >= 45, "{}", shapes.len());
    let shims = s.path("shims");
    write_shims(&shims);

    // Every shape in every form it takes, as the target and the tools print it.
    let mut printed = String::new();
    let mut xml_lines = String::new();
    let mut planted: Vec<(String, String)> = Vec::new();
    for sh in &shapes {
        for form in FORMS.iter().filter(|f| applies(sh, f)) {
            let text = (form.write)(&sh.text);
            if form.name == "XML" {
                xml_lines.push_str(&text);
                xml_lines.push('\n');
            }
            printed.push_str(&text);
            printed.push('\n');
            for secret in &sh.secrets {
                // A secret as this form writes it (the percent-encoding of `+` and `/`).
                let as_written = match form.name {
                    "URL-encoded" => percent(secret),
                    "XML" => xml(secret),
                    "JSON" => json(secret).trim_matches('"').to_string(),
                    _ => secret.clone(),
                };
                planted.push((format!("{} ({})", sh.name, form.name), as_written));
                planted.push((format!("{} ({})", sh.name, form.name), secret.clone()));
            }
        }
    }
    let plant_file = s.path("plant.txt");
    std::fs::write(&plant_file, &printed).unwrap();
    let plant_xml = s.path("plant.xml");
    std::fs::write(&plant_xml, &xml_lines).unwrap();

    let recipe = s.write_recipe(
        "version: 1\nname: matrix\ndescription: \"the matrix planted\"\nvariables:\n  \
         s0: { description: \"a shape\" }\n  s1: { description: \"a shape\" }\n\
         run:\n  command: [\"plant-target\", \"{s0}\", \"{s1}\"]\n  timeout: 30\n",
    );
    let path = path_with(&[&shims, &standins()]);
    let mut run = Run::new(&s, &recipe, "oob_write")
        .path(path.clone())
        .arg("--full")
        .env("PLANT_FILE", plant_file.to_str().unwrap())
        .env("PLANT_XML", plant_xml.to_str().unwrap())
        // A folder the target makes, named with a token.
        .env("PLANT_DIR", &shapes.iter().find(|sh| sh.name == "PlanetScale token").unwrap().text)
        .arg("--set")
        .arg(&format!("s0={}", shapes[15].text))
        .arg("--set")
        .arg(&format!("s1={}", shapes[12].text));
    for (i, sh) in shapes.iter().enumerate().filter(|(_, sh)| !sh.text.contains('\n')) {
        run = run.env(&format!("CUDA_PLANT_{i:02}"), &sh.text);
    }
    let out = run.run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    let files = support::every_file(&b.root);
    let found = |what: &str| files.iter().any(|(_, bytes)| contains(bytes, what));
    assert!(found("planted: target stdout") && found("planted: cuda-gdb"), "the shims did not run");
    assert!(found("<planted>"), "no XML report was planted");
    let left =
        files.iter().filter(|(p, _)| p.ends_with("left-by-target.txt") || p.ends_with("left.txt")).count();
    assert!(left >= 2, "the target left no file in its rung folder");
    // The folder named with a token was renamed: no path holds it, the manifest says so.
    let dir_token = &shapes.iter().find(|sh| sh.name == "PlanetScale token").unwrap().secrets[0];
    assert!(
        !files.iter().any(|(p, _)| p.to_string_lossy().contains(dir_token.as_str())),
        "a path holds the token"
    );
    assert!(b.read("manifest.yaml").contains("in a folder name"), "no folder was renamed");
    assert!(b.read("manifest.yaml").contains("CUDA_PLANT_00"), "the environment was not recorded");

    let mut leaks = Leaks::default();
    leaks.check("terminal of debug-ima", format!("{}{}", out.stdout, out.stderr).as_bytes(), &planted);
    for (p, bytes) in &files {
        leaks.check(&p.strip_prefix(&b.root).unwrap().display().to_string(), bytes, &planted);
    }
    leaks.check_shared(&s.dir, &path, &b.root, &planted);
    assert!(leaks.0.is_empty(), "{} planted values leaked:\n{}", leaks.0.len(), leaks.0.join("\n"));
    s.assert_no_standin_left();
}

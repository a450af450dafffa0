//! Tests of the redaction of values, names, environments, command lines and texts, with the
//! property tests over fragment soups and the recorded fixtures.
//!
//! Must not: hold a token-shaped literal.

use super::line::*;
use super::names::*;
use super::structured::*;
use super::test_util::*;
use proptest::prelude::*;
use std::borrow::Cow;

/// A redaction record names the kind and the place, never the text: not when the "flag"
/// before a value is a PEM block, a key passed after a secret-named flag starts with
/// `-----`, or a variable's name is itself a token (issue 22).
#[test]
fn a_file_and_its_position_are_no_secret() {
    for line in [
        "error: recipes/unknown-key.yaml:3:1: run.commnd: unknown field",
        "src/secret_key.rs:42:5: warning: unused variable",
        "  File \"/x/token.py\", line 3; at token.py:12",
    ] {
        let (red, _) = redact_line(line);
        assert_eq!(red, line, "a position was taken for a secret");
    }
    // A secret-named key's value is still a secret.
    for line in ["api_key:Zq8vN2xLw4Rt6Yp0Bc3D", "password: hunter2hunter2", "secret_key.rs: hunter2hunter2"]
    {
        let (red, _) = redact_line(line);
        assert!(red.contains(MARK), "{line} -> {red}");
    }
}

#[test]
fn a_quoted_value_runs_to_its_real_closing_quote() {
    for (line, kept) in [
        (r#"{"password": "ab\"cd-the-rest-of-it", "user": "u"}"#, r#""user": "u""#),
        (r#"cfg = {'api_key': 'x\'y-the-rest-of-it', 'n': 1}"#, "'n': 1"),
        (r#"auto token = "s3\"cr3t-the-rest-of-it"; // C++"#, "// C++"),
    ] {
        let (red, _) = redact_line(line);
        assert!(!red.contains("the-rest-of-it"), "{line} -> {red}");
        assert!(red.contains(kept), "{line} -> {red}");
    }
}

#[test]
fn many_secret_variables_take_time_in_proportion() {
    // 20,000 values learned by name (a run's secret-named variables), each also inside
    // another string of the invocation: every one redacted there, without comparing every
    // value with every string (issue 22: the time grew as the square of the variables).
    let n = 20_000;
    let learned: Vec<String> = (0..n).map(|i| format!("v{i:06}-{}", "x".repeat(20))).collect();
    let mut homes: Vec<String> = learned.iter().map(|v| format!("/data/{v}/home")).collect();
    let started = std::time::Instant::now();
    let mut out = Vec::new();
    spread(&mut homes.iter_mut().collect::<Vec<_>>(), &learned, "command", &mut out);
    assert!(homes.iter().all(|h| h == "/data/[REDACTED]/home"), "{:?}", &homes[..2]);
    assert_eq!(out.len(), n);
    // Quadratic, this was minutes; a generous bound that only catches that.
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "{:?}", started.elapsed());
}

#[test]
fn records_never_quote_what_they_redact() {
    let pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----";
    for argv in [
        vec!["tool", "--private-key", pem],
        vec!["tool", pem, "next"],
        vec!["tool", "--token", "ghp_Zq8vN2xLw4Rt6Yp0Bc3Dk5Fm7Hj9Gs1AeQ0u"],
    ] {
        let args: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let mut out = Vec::new();
        let red = redact_args(&args, "command", &mut out);
        let joined = red.join(" ");
        assert!(!joined.contains("MIIEvQ") && !joined.contains("Zq8vN2"), "{joined}");
        for r in &out {
            assert!(
                !r.what.contains("MIIEvQ") && !r.what.contains("BEGIN") && !r.what.contains("Zq8vN2"),
                "{r:?}"
            );
        }
        assert!(!out.is_empty(), "{argv:?}");
    }
    let mut out = Vec::new();
    let vars =
        vec![("ghp_Zq8vN2xLw4Rt6Yp0Bc3Dk5Fm7Hj9Gs1AeQ0u_TOKEN".to_string(), "s3cr3t-value-1".to_string())];
    let _ = redact_env(&vars, "env", &mut out);
    assert!(out.iter().all(|r| !r.what.contains("Zq8vN2")), "{out:?}");
    assert_eq!(record_name("HF_TOKEN", "x"), "HF_TOKEN");
    assert_eq!(record_name("--hf-token", "x"), "--hf-token");
}

#[test]
fn secret_names() {
    for name in [
        "HF_TOKEN",
        "GITHUB_TOKEN",
        "hf_token",
        "authToken",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "OPENAI_API_KEY",
        "api-key",
        "--api-key",
        "apiKey",
        "DB_PASSWORD",
        "MYSQL_PASSWD",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "AUTH",
        "OAUTH_CLIENT_SECRET",
        "Authorization",
        "KEY",
        "key",
        "SSH_AUTH_SOCK",
        "REDIS_PASS",
    ] {
        assert!(secret_name(name), "{name}");
    }
    for name in [
        "PATH",
        "HOME",
        "PWD",
        "CUDA_VISIBLE_DEVICES",
        "CUDA_LAUNCH_BLOCKING",
        "TOKENIZERS_PARALLELISM",
        "max_tokens",
        "max_num_batched_tokens",
        "prompt_token_ids",
        "key_cache",
        "KEYBOARD",
        "DispatchKeySet",
        "AUTHOR",
        "MONKEY",
        "",
    ] {
        assert!(!secret_name(name), "{name}");
    }
}

#[test]
fn every_value_pattern_is_redacted_and_the_line_kept() {
    let f = fakes();
    let cases = [
        (format!("loading with {} from cache", f.hf), "loading with hf_[REDACTED] from cache"),
        (
            format!("git clone https://{}@github.com/o/r", f.ghp),
            "git clone https://ghp_[REDACTED]@github.com/o/r",
        ),
        (format!("token {} ok", f.ghs), "token ghs_[REDACTED] ok"),
        (format!("pat={} ", f.pat), "pat=github_pat_[REDACTED] "),
        (format!("key: {}.", f.sk), "key: sk-[REDACTED]."),
        (format!("({})", f.sk_proj), "(sk-[REDACTED])"),
        (format!("aws {} {}\tend", f.akia, f.asia), "aws AKIA[REDACTED] ASIA[REDACTED]\tend"),
        (
            format!("pip install --index-url https://alice:{}@pypi.example.com/simple x", f.password),
            "pip install --index-url https://alice:[REDACTED]@pypi.example.com/simple x",
        ),
        (
            format!("curl -H 'Authorization: Bearer {}' https://x", f.bearer),
            "curl -H 'Authorization: [REDACTED]' https://x",
        ),
        (format!("sent bearer {} upstream", f.bearer), "sent bearer [REDACTED] upstream"),
        (format!("authorization: Basic {}", f.plain), "authorization: [REDACTED]"),
        (format!("env HF_TOKEN={} python3 x.py", f.plain), "env HF_TOKEN=[REDACTED] python3 x.py"),
        (format!("run --api-key={} --port 8000", f.plain), "run --api-key=[REDACTED] --port 8000"),
        (format!("run --token {} --port 8000", f.plain), "run --token [REDACTED] --port 8000"),
        (format!("run --password \"{} x\" -v", f.plain), "run --password \"[REDACTED]\" -v"),
        (format!("GET /v1?access_token={}&page=2", f.plain), "GET /v1?access_token=[REDACTED]&page=2"),
        (format!("client(api_key='{}', timeout=3)", f.plain), "client(api_key='[REDACTED]', timeout=3)"),
        (format!("HF_TOKEN={}", f.hf), "HF_TOKEN=[REDACTED]"),
    ];
    for (line, want) in cases {
        let (got, labels) = redact_line(&line);
        assert_eq!(got, want, "{line}");
        assert!(!labels.is_empty());
    }
}

#[test]
fn labels_name_the_kind() {
    let f = fakes();
    let line = format!("{} https://u:{}@h", f.hf, f.password);
    let (_, labels) = redact_line(&line);
    assert_eq!(labels, ["hf_ token", "password in a URL"]);
}

#[test]
fn near_misses_are_kept() {
    for line in [
        "mask_hf_thing and hf_short",
        "_Z11scatter_farPii at 0x7f4b50802000",
        "/home/u/sk-learn-experiments-folder/x.py",
        "AKIAEXAMPLE0EXAMPLE0X AKIA123 xAKIAEXAMPLE0EXAMPLE0",
        "TOKENIZERS_PARALLELISM=false max_tokens=512 CUDA_LAUNCH_BLOCKING=1",
        "SamplingParams(max_tokens=16, prompt_token_ids=[1, 2])",
        "at::_ops::sum::redispatch(c10::DispatchKeySet, at::Tensor const&)",
        "Search in https://docs.nvidia.com/cuda/x.html for more information.",
        "ssh user@host, git@github.com:o/r.git",
        "if token == other and key != 3",
        "the bearer of bad news; Bearer short",
        "task-aaaaaaaaaaaaaaaaaaaaaaaaaaa ghp_tooshort",
        "",
    ] {
        assert!(matches!(redact_line(line).0, Cow::Borrowed(_)), "{line}");
    }
}

#[test]
fn shell_references_are_not_secrets() {
    for line in [
        "echo MY_TOKEN=$MY_TOKEN; echo next",
        "export HF_TOKEN=${HF_TOKEN}",
        "serve --api-key $OPENAI_API_KEY --port 1",
        "HF_TOKEN=\"$HF_TOKEN\" python3 x.py",
    ] {
        assert_eq!(red(line), line);
    }
    // A literal value before `;` is one, and the `;` stays.
    assert_eq!(red("HF_TOKEN=abc123; run"), "HF_TOKEN=[REDACTED]; run");
    assert_eq!(red("HF_TOKEN=$abc-def"), "HF_TOKEN=[REDACTED]");
}

#[test]
fn no_match_is_borrowed() {
    let line = "=========     Access to 0x7f4b50802000 is out of bounds";
    let (got, labels) = redact_line(line);
    assert!(matches!(got, Cow::Borrowed(s) if std::ptr::eq(s, line)));
    assert!(labels.is_empty());
}

#[test]
fn env_by_name_then_by_value() {
    let f = fakes();
    let vars: Vec<(String, String)> = [
        ("HF_TOKEN", f.hf.as_str()),
        ("OPENAI_API_KEY", f.sk.as_str()),
        ("DB_PASSWORD", f.plain.as_str()),
        ("PIP_INDEX_URL", &format!("https://bob:{}@pypi.example.com/simple", f.password)),
        ("SOME_CONFIG", &format!("--flag {}", f.ghp)),
        ("EMPTY_TOKEN", ""),
        ("CUDA_VISIBLE_DEVICES", "0"),
        ("TOKENIZERS_PARALLELISM", "false"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let mut out = Vec::new();
    let got = redact_env(&vars, "env", &mut out);
    let values: Vec<&str> = got.iter().map(|(_, v)| v.as_str()).collect();
    assert_eq!(
        values,
        [
            MARK,
            MARK,
            MARK,
            "https://bob:[REDACTED]@pypi.example.com/simple",
            "--flag ghp_[REDACTED]",
            "",
            "0",
            "false"
        ]
    );
    let whats: Vec<&str> = out.iter().map(|r| r.what.as_str()).collect();
    assert_eq!(
        whats,
        [
            "HF_TOKEN (by name)",
            "OPENAI_API_KEY (by name)",
            "DB_PASSWORD (by name)",
            "PIP_INDEX_URL: password in a URL (by value)",
            "SOME_CONFIG: GitHub token (by value)",
        ]
    );
    assert!(out.iter().all(|r| r.place == "env"));
    assert_no_secret(&format!("{got:?} {out:?}"), &f);
}

#[test]
fn command_lines_never_keep_planted_secrets() {
    let f = fakes();
    let line = format!(
        "HF_TOKEN={} python3 serve.py --api-key {} --hf-token={} --upstream https://u:{}@h/x -H \"Authorization: Bearer {}\" --aws {}",
        f.plain, f.sk_proj, f.hf, f.password, f.bearer, f.akia
    );
    let mut out = Vec::new();
    let got = redact_text(&line, "command", &mut out);
    assert!(got.starts_with("HF_TOKEN=[REDACTED] python3 serve.py --api-key [REDACTED] "));
    assert_no_secret(&got, &f);
    assert_no_secret(&format!("{out:?}"), &f);
    assert!(out.iter().all(|r| r.place == "command:1"));

    let args: Vec<String> = [
        "python3",
        "serve.py",
        "--api-key",
        &f.plain,
        "--token",
        "--port",
        "8000",
        "--url",
        &format!("https://u:{}@h", f.password),
        "--gh",
        &f.ghp,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut out = Vec::new();
    let got = redact_args(&args, "command", &mut out);
    assert_eq!(got[3], MARK);
    assert_eq!(got[5..7], ["--port", "8000"]);
    assert_no_secret(&format!("{got:?} {out:?}"), &f);
    let whats: Vec<&str> = out.iter().map(|r| r.what.as_str()).collect();
    assert_eq!(
        whats,
        ["value of --api-key (by name)", "password in a URL (by value)", "GitHub token (by value)"]
    );
}

#[test]
fn logs_never_keep_planted_secrets() {
    let f = fakes();
    let log = format!(
        "starting\r\nusing token {}\nclean line\nrequest headers {{'Authorization': 'Bearer {}'}}\nkeys {} {} {} {}\nno newline at end --password {}",
        f.hf, f.bearer, f.ghs, f.pat, f.sk, f.asia, f.plain
    );
    let mut out = Vec::new();
    let got = redact_text(&log, "logs/err.txt", &mut out);
    assert_no_secret(&got, &f);
    assert_no_secret(&format!("{out:?}"), &f);
    assert!(got.starts_with("starting\r\nusing token hf_[REDACTED]\nclean line\n"));
    assert!(got.ends_with("no newline at end --password [REDACTED]"));
    let places: Vec<&str> = out.iter().map(|r| r.place.as_str()).collect();
    assert_eq!(
        places,
        [
            "logs/err.txt:2",
            "logs/err.txt:4",
            "logs/err.txt:4",
            "logs/err.txt:5",
            "logs/err.txt:5",
            "logs/err.txt:5",
            "logs/err.txt:5",
            "logs/err.txt:6",
        ]
    );
}

fn assert_no_secret(text: &str, f: &Fakes) {
    for secret in [
        &f.hf[3..],
        &f.ghp[4..],
        &f.ghs[4..],
        &f.pat[11..],
        &f.sk[3..],
        &f.sk_proj[3..],
        &f.akia[4..],
        &f.asia[4..],
        &f.password,
        &f.bearer,
    ] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    assert!(!text.contains(&f.plain), "{text}");
}

#[test]
fn real_tool_output_is_unchanged() {
    for log in [
        include_str!("../../../tests/fixtures/h200/oob_write/memcheck.log"),
        include_str!("../../../tests/fixtures/h200/triton_worker/baseline.log"),
        include_str!("../../../tests/fixtures/h200/oob_write/coredump.log"),
        include_str!("../../../tests/fixtures/h200/torch_assert/cudagdb-core-1.log"),
        include_str!("../../../tests/fixtures/h200/torch_assert/memcheck.log"),
        include_str!("../../../tests/fixtures/h200/env.log"),
    ] {
        let mut out = Vec::new();
        assert_eq!(redact_text(log, "log", &mut out), log);
        assert!(out.is_empty(), "{out:?}");
    }
}

#[test]
fn every_recorded_log_is_unchanged() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/h200");
    let mut checked = 0;
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap().path();
        let files = if dir.is_dir() {
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect()
        } else {
            vec![dir]
        };
        for file in files {
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            let mut out = Vec::new();
            assert!(redact_text(&text, "log", &mut out) == text, "{}: {out:?}", file.display());
            checked += 1;
        }
    }
    assert!(checked > 50, "{checked}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn random_text_never_panics_and_is_idempotent(s in any::<String>()) {
        let once = red(&s);
        prop_assert_eq!(red(&once), once);
    }

    #[test]
    fn a_line_redact_line_changes_holds_a_candidate(parts in proptest::collection::vec(proptest::sample::select(fragments()), 0..24)) {
        let line: String = parts.concat().replace('\n', " ");
        let mut marks = Vec::new();
        candidates(line.as_bytes(), &mut marks);
        if marks.is_empty() {
            prop_assert!(matches!(redact_line(&line).0, Cow::Borrowed(_)), "{line}");
        }
    }

    #[test]
    fn random_lines_without_a_candidate_are_unchanged(s in any::<String>()) {
        let line = s.replace('\n', " ");
        let mut marks = Vec::new();
        candidates(line.as_bytes(), &mut marks);
        if marks.is_empty() {
            prop_assert!(matches!(redact_line(&line).0, Cow::Borrowed(_)), "{line}");
        }
    }

    #[test]
    fn fragment_soup_is_idempotent(parts in proptest::collection::vec(proptest::sample::select(fragments()), 0..24)) {
        let line = parts.concat();
        let once = red(&line);
        let (twice, labels) = redact_line(&once);
        prop_assert!(matches!(twice, Cow::Borrowed(_)), "{:?} -> {:?} -> {:?} {:?}", line, once, twice, labels);
        let mut out = Vec::new();
        let text = redact_text(&line, "p", &mut out);
        prop_assert_eq!(redact_text(&text, "p", &mut Vec::new()), text);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn every_shape_soup_line_redact_line_changes_holds_a_candidate(parts in proptest::collection::vec(proptest::sample::select(more_fragments()), 0..24)) {
        let line: String = parts.concat().replace('\n', " ");
        let mut marks = Vec::new();
        candidates(line.as_bytes(), &mut marks);
        if marks.is_empty() {
            prop_assert!(matches!(redact_line(&line).0, Cow::Borrowed(_)), "{line:?}");
        }
    }

    #[test]
    fn every_shape_soup_is_idempotent(parts in proptest::collection::vec(proptest::sample::select(more_fragments()), 0..32)) {
        let text = parts.concat();
        let line = text.replace('\n', " ");
        let once = red(&line);
        let (twice, labels) = redact_line(&once);
        prop_assert!(matches!(twice, Cow::Borrowed(_)), "{:?} -> {:?} -> {:?} {:?}", line, once, twice, labels);
        let once = redact_text(&text, "p", &mut Vec::new());
        prop_assert_eq!(redact_text(&once, "p", &mut Vec::new()), once.clone());
        prop_assert_eq!(once.matches('\n').count(), text.matches('\n').count());
        let (value, _) = redact_value(&text);
        prop_assert_eq!(redact_value(&value).0, value.clone());
    }

    #[test]
    fn a_cut_is_inside_the_piece(piece in proptest::collection::vec(any::<u8>(), 1..512), soup in proptest::collection::vec(proptest::sample::select(more_fragments()), 1..24)) {
        let at = cut_point(&piece);
        prop_assert!(at >= 1 && at <= piece.len());
        let soup = soup.concat();
        let at = cut_point(soup.as_bytes());
        prop_assert!(at >= 1 && at <= soup.len());
    }

    #[test]
    fn lines_in_a_buffer_are_seen_as_alone(parts in proptest::collection::vec(proptest::sample::select(more_fragments()), 0..32)) {
        // `candidates` over many lines finds what it finds in each line alone.
        let text = parts.concat();
        let mut all = Vec::new();
        candidates(text.as_bytes(), &mut all);
        let mut offset = 0;
        let mut alone = Vec::new();
        for line in text.split_inclusive('\n') {
            let mut marks = Vec::new();
            candidates(line.as_bytes(), &mut marks);
            alone.extend(marks.into_iter().map(|m| m + offset));
            offset += line.len();
        }
        alone.sort_unstable();
        prop_assert_eq!(all, alone);
    }
}

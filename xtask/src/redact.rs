//! Redaction of secrets before anything is written into a bundle: environment variables by
//! name (`*TOKEN`, `*SECRET*`, `*PASSWORD*`, `KEY`, credentials, auth) and by value, and command
//! lines and captured logs by value (`hf_…`, `ghp_…`, `github_pat_…`, `sk-…`, `AKIA…`, passwords
//! in URLs, bearer tokens, `Authorization:` headers, `SECRET_NAME=value` and `--secret-flag value`).
//! The secret part becomes [`MARK`]; the rest of the line is kept. What was redacted is reported as
//! [`Redaction`]s that name the variable or place and the kind of secret, never the value.
//!
//! Pure: this module must do no I/O and print nothing, and it must never copy a secret value into
//! a [`Redaction`]. Matching is hand-written (no regex crate); a line with nothing to redact costs
//! no allocation ([`redact_line`] returns `Cow::Borrowed`), since captured logs can be large.

use crate::model::Invocation;
use std::borrow::Cow;

/// What was redacted, for the manifest: names and places, never values.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Redaction {
    /// Where: `"env"`, `"command"`, `"rungs/01-baseline/stderr.log:12"` (a 1-based line).
    pub place: String,
    /// What: `"HF_TOKEN (by name)"`, `"hf_ token"`, `"password in a URL"`.
    pub what: String,
}

/// What a secret is replaced with.
pub const MARK: &str = "[REDACTED]";

/// A last name part that makes a secret-looking name a count, an id or a layout, not a secret:
/// `max_token_len`, `prompt_token_ids`, `key_cache`.
const NOT_SECRET_LAST: &[&str] =
    &["ID", "IDS", "COUNT", "LEN", "LENGTH", "SIZE", "NUM", "TYPE", "DTYPE", "CACHE"];

/// Whether a variable, flag or key name names a secret, case-insensitively, by its parts (split at
/// anything not ASCII alphanumeric): a part ending in `TOKEN` (`HF_TOKEN`, `authToken`, but not
/// `TOKENIZERS_PARALLELISM` or `max_tokens`), holding `SECRET`, `PASSWORD`, `PASSWD` or
/// `CREDENTIAL`, ending in `AUTH` or starting with `AUTHORIZ`, or `KEY`, `KEYS`, `PASS`, `*APIKEY`,
/// `*ACCESSKEY`, `*PRIVATEKEY` (`API_KEY`, `--api-key`, but not `KEYBOARD` or `DispatchKeySet`);
/// unless the last part is a count or an id ([`NOT_SECRET_LAST`]).
pub fn secret_name(name: &str) -> bool {
    let mut any = false;
    let mut last = "";
    for part in name.split(|c: char| !c.is_ascii_alphanumeric()).filter(|p| !p.is_empty()) {
        any |= secret_part(part.as_bytes());
        last = part;
    }
    any && !NOT_SECRET_LAST.iter().any(|w| last.eq_ignore_ascii_case(w))
}

fn secret_part(p: &[u8]) -> bool {
    ends_ci(p, b"TOKEN")
        || contains_ci(p, b"SECRET")
        || contains_ci(p, b"PASSWORD")
        || contains_ci(p, b"PASSWD")
        || contains_ci(p, b"CREDENTIAL")
        || ends_ci(p, b"AUTH")
        || starts_ci(p, b"AUTHORIZ")
        || p.eq_ignore_ascii_case(b"KEY")
        || p.eq_ignore_ascii_case(b"KEYS")
        || p.eq_ignore_ascii_case(b"PASS")
        || ends_ci(p, b"APIKEY")
        || ends_ci(p, b"ACCESSKEY")
        || ends_ci(p, b"PRIVATEKEY")
}

fn ends_ci(s: &[u8], pat: &[u8]) -> bool {
    s.len() >= pat.len() && s[s.len() - pat.len()..].eq_ignore_ascii_case(pat)
}

fn starts_ci(s: &[u8], pat: &[u8]) -> bool {
    s.len() >= pat.len() && s[..pat.len()].eq_ignore_ascii_case(pat)
}

fn contains_ci(s: &[u8], pat: &[u8]) -> bool {
    s.windows(pat.len()).any(|w| w.eq_ignore_ascii_case(pat))
}

/// Redacts environment variables: by name ([`secret_name`]: the whole value), then by value
/// ([`redact_line`]). Empty values are kept. One [`Redaction`] at `place` per finding.
pub fn redact_env(vars: &[(String, String)], place: &str, out: &mut Vec<Redaction>) -> Vec<(String, String)> {
    vars.iter()
        .map(|(name, value)| {
            if secret_name(name) && !value.is_empty() && value != MARK {
                out.push(Redaction { place: place.to_string(), what: format!("{name} (by name)") });
                return (name.clone(), MARK.to_string());
            }
            match redact_line(value) {
                (Cow::Borrowed(_), _) => (name.clone(), value.clone()),
                (Cow::Owned(new), labels) => {
                    out.extend(labels.into_iter().map(|label| Redaction {
                        place: place.to_string(),
                        what: format!("{name}: {label} (by value)"),
                    }));
                    (name.clone(), new)
                }
            }
        })
        .collect()
}

/// Redacts a command line given as arguments: the argument after a secret-named flag without a
/// value of its own (`--api-key`, `--token`) whole, and every argument by value ([`redact_line`]).
pub fn redact_args(args: &[String], place: &str, out: &mut Vec<Redaction>) -> Vec<String> {
    let mut after_secret_flag: Option<&str> = None;
    args.iter()
        .map(|arg| {
            let flag = after_secret_flag.take();
            if arg.starts_with("--") && !arg.contains('=') && secret_name(arg) {
                after_secret_flag = Some(arg.as_str());
            }
            if let Some(flag) = flag {
                if !arg.is_empty() && !arg.starts_with('-') && arg != MARK {
                    out.push(Redaction {
                        place: place.to_string(),
                        what: format!("value of {flag} (by name)"),
                    });
                    return MARK.to_string();
                }
            }
            match redact_line(arg) {
                (Cow::Borrowed(_), _) => arg.clone(),
                (Cow::Owned(new), labels) => {
                    out.extend(labels.into_iter().map(|label| Redaction {
                        place: place.to_string(),
                        what: format!("{label} (by value)"),
                    }));
                    new
                }
            }
        })
        .collect()
}

/// Redacts a text (a log, a command file) by value, line by line; line endings are kept. Each
/// finding is reported at `place:LINE` (1-based).
pub fn redact_text(text: &str, place: &str, out: &mut Vec<Redaction>) -> String {
    let mut result: Option<String> = None;
    let mut offset = 0;
    for (index, chunk) in text.split_inclusive('\n').enumerate() {
        let body = chunk.strip_suffix('\n').unwrap_or(chunk);
        match redact_line(body) {
            (Cow::Owned(new), labels) => {
                let result = result.get_or_insert_with(|| {
                    let mut s = String::with_capacity(text.len());
                    s.push_str(&text[..offset]);
                    s
                });
                result.push_str(&new);
                result.push_str(&chunk[body.len()..]);
                out.extend(labels.into_iter().map(|label| Redaction {
                    place: format!("{place}:{}", index + 1),
                    what: label.to_string(),
                }));
            }
            (Cow::Borrowed(_), _) => {
                if let Some(result) = result.as_mut() {
                    result.push_str(chunk);
                }
            }
        }
        offset += chunk.len();
    }
    result.unwrap_or_else(|| text.to_string())
}

/// Redacts a JSON value (the resolved recipe): a string under a secret-named key ([`secret_name`])
/// whole, an array of strings as a command line ([`redact_args`]), every other string by value.
pub fn redact_json(value: &serde_json::Value, place: &str, out: &mut Vec<Redaction>) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(s) => match redact_line(s) {
            (Cow::Borrowed(_), _) => value.clone(),
            (Cow::Owned(new), labels) => {
                out.extend(labels.into_iter().map(|label| Redaction {
                    place: place.to_string(),
                    what: format!("{label} (by value)"),
                }));
                Value::String(new)
            }
        },
        Value::Array(items) if items.iter().all(Value::is_string) => {
            let words: Vec<String> = items.iter().filter_map(|v| v.as_str().map(str::to_string)).collect();
            Value::Array(redact_args(&words, place, out).into_iter().map(Value::String).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| redact_json(v, place, out)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let redacted = match v {
                        Value::String(s) if secret_name(k) && !s.is_empty() && s != MARK => {
                            out.push(Redaction { place: place.to_string(), what: format!("{k} (by name)") });
                            Value::String(MARK.to_string())
                        }
                        _ => redact_json(v, place, out),
                    };
                    (k.clone(), redacted)
                })
                .collect(),
        ),
        _ => value.clone(),
    }
}

/// Offsets in `text` where something [`redact_line`] takes out could begin, sorted: a
/// superset, found with a few SIMD searches over a whole buffer, so that a caller redacts only
/// the lines holding one (every literal the scanners look for, a `=` after a name, `bearer`
/// and `authorization` in any case). A line without any is left unchanged by [`redact_line`].
pub fn candidates(text: &[u8], out: &mut Vec<usize>) {
    for literal in LITERALS {
        out.extend(finder(literal).find_iter(text));
    }
    out.extend(memchr::memchr_iter(b'=', text).filter(|&i| i > 0 && is_name_byte(text[i - 1])));
    out.extend(memchr::memchr2_iter(b'b', b'B', text).filter(|&i| starts_ci(&text[i..], b"bearer")));
    out.extend(memchr::memchr2_iter(b'a', b'A', text).filter(|&i| starts_ci(&text[i..], b"authorization")));
    out.sort_unstable();
}

/// Redacts one line by value, and names the kinds of secret found (each once). Borrowed, with no
/// allocation, when nothing matches. Redacting the result again changes nothing.
pub fn redact_line(line: &str) -> (Cow<'_, str>, Vec<&'static str>) {
    let mut spans = Vec::new();
    scan(line, &mut spans);
    if spans.is_empty() {
        return (Cow::Borrowed(line), Vec::new());
    }
    let mut labels = Vec::new();
    let mut current = apply(line, &mut spans, &mut labels);
    // A redaction can give a neighbour the boundary that it lacked; rescan to a fixed point so
    // that redacting twice is the same as once.
    for _ in 0..8 {
        spans.clear();
        scan(&current, &mut spans);
        if spans.is_empty() {
            break;
        }
        let next = apply(&current, &mut spans, &mut labels);
        if next == current {
            break;
        }
        current = next;
    }
    (Cow::Owned(current), labels)
}

/// A byte range of a line to replace with [`MARK`], and the kind of secret.
type Span = (usize, usize, &'static str);

/// Replaces the spans (merged where they overlap or touch) with [`MARK`].
fn apply(line: &str, spans: &mut [Span], labels: &mut Vec<&'static str>) -> String {
    spans.sort_unstable_by_key(|&(start, end, _)| (start, end));
    let mut out = String::with_capacity(line.len() + MARK.len());
    let mut copied = 0;
    let mut i = 0;
    while i < spans.len() {
        let (start, mut end, _) = spans[i];
        while i < spans.len() && spans[i].0 <= end {
            end = end.max(spans[i].1);
            if !labels.contains(&spans[i].2) {
                labels.push(spans[i].2);
            }
            i += 1;
        }
        let start = start.max(copied);
        out.push_str(&line[copied..start]);
        out.push_str(MARK);
        copied = end.max(start);
    }
    out.push_str(&line[copied..]);
    out
}

fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn is_quote(b: u8) -> bool {
    matches!(b, b'"' | b'\'' | b'`')
}

/// Whether nothing alphanumeric comes right before `i`.
fn left_ok(s: &[u8], i: usize) -> bool {
    i == 0 || !is_alnum(s[i - 1])
}

/// The end of the run of bytes from `start` that satisfy `ok`.
fn run(s: &[u8], start: usize, ok: impl Fn(u8) -> bool) -> usize {
    start + s[start..].iter().take_while(|&&b| ok(b)).count()
}

fn scan(line: &str, spans: &mut Vec<Span>) {
    let s = line.as_bytes();
    prefixed(line, "hf_", 20, is_alnum, |_| true, "hf_ token", spans);
    for prefix in ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"] {
        prefixed(line, prefix, 30, is_alnum, |_| true, "GitHub token", spans);
    }
    prefixed(line, "github_pat_", 20, is_word, |_| true, "GitHub fine-grained token", spans);
    // Paths like `sk-learn-experiments` are not keys: a key's random body has a digit and a letter.
    prefixed(
        line,
        "sk-",
        20,
        |b| is_word(b) || b == b'-',
        |body| body.iter().any(u8::is_ascii_digit) && body.iter().any(u8::is_ascii_alphabetic),
        "sk- API key",
        spans,
    );
    for prefix in ["AKIA", "ASIA"] {
        for i in finder(prefix).find_iter(s) {
            let start = i + prefix.len();
            let end = run(s, start, |b| b.is_ascii_uppercase() || b.is_ascii_digit());
            let bounded = (i == 0 || !is_word(s[i - 1])) && (end == s.len() || !is_word(s[end]));
            if end - start == 16 && bounded {
                spans.push((start, end, "AWS access key id"));
            }
        }
    }
    url_passwords(line, spans);
    headers(s, spans);
    assignments(line, spans);
    flags(line, spans);
}

/// Every literal the scanners search for, with its searcher built once: building a
/// `memmem::Finder` per line cost more than the search itself.
const LITERALS: [&str; 12] =
    ["hf_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "sk-", "AKIA", "ASIA", "://", "--"];

fn finder(literal: &str) -> &'static memchr::memmem::Finder<'static> {
    static FINDERS: std::sync::LazyLock<Vec<memchr::memmem::Finder<'static>>> =
        std::sync::LazyLock::new(|| {
            LITERALS.iter().map(|l| memchr::memmem::Finder::new(l.as_bytes())).collect()
        });
    let i = LITERALS.iter().position(|l| *l == literal).expect("a literal of LITERALS");
    &FINDERS[i]
}

/// `prefix` (after no alphanumeric) and a body of at least `min` bytes in `class` that `extra`
/// accepts: the body is the secret, the prefix is kept to say what it was.
fn prefixed(
    line: &str,
    prefix: &str,
    min: usize,
    class: impl Fn(u8) -> bool + Copy,
    extra: impl Fn(&[u8]) -> bool,
    label: &'static str,
    spans: &mut Vec<Span>,
) {
    let s = line.as_bytes();
    for i in finder(prefix).find_iter(s) {
        if !left_ok(s, i) {
            continue;
        }
        let start = i + prefix.len();
        let end = run(s, start, class);
        if end - start >= min && extra(&s[start..end]) {
            spans.push((start, end, label));
        }
    }
}

/// `scheme://user:password@host`: the password.
fn url_passwords(line: &str, spans: &mut Vec<Span>) {
    let s = line.as_bytes();
    for i in finder("://").find_iter(s) {
        let start = i + 3;
        let end = run(s, start, |b| {
            !(b.is_ascii_whitespace() || is_quote(b) || matches!(b, b'/' | b'?' | b'#' | b'<' | b'>'))
        });
        let authority = &s[start..end];
        let Some(at) = authority.iter().rposition(|&b| b == b'@') else {
            continue;
        };
        let Some(colon) = authority[..at].iter().position(|&b| b == b':') else {
            continue;
        };
        let (pw_start, pw_end) = (start + colon + 1, start + at);
        if pw_start < pw_end && &s[pw_start..pw_end] != MARK.as_bytes() {
            spans.push((pw_start, pw_end, "password in a URL"));
        }
    }
}

/// `Bearer TOKEN` (a token of at least 8 bytes) and `Authorization: VALUE` (to the end of the
/// line or a quote), case-insensitively.
fn headers(s: &[u8], spans: &mut Vec<Span>) {
    // Only where a `b` or an `a` starts: memchr finds those fast.
    for i in memchr::memchr2_iter(b'b', b'B', s).chain(memchr::memchr2_iter(b'a', b'A', s)) {
        let rest = &s[i..];
        if starts_ci(rest, b"bearer") && left_ok(s, i) {
            let after = i + 6;
            if after < s.len() && matches!(s[after], b' ' | b'\t') {
                let start = run(s, after, |b| b == b' ' || b == b'\t');
                let end = run(s, start, |b| !b.is_ascii_whitespace() && !is_quote(b));
                if end - start >= 8 && &s[start..end] != MARK.as_bytes() {
                    spans.push((start, end, "bearer token"));
                }
            }
        } else if starts_ci(rest, b"authorization") && left_ok(s, i) {
            let mut j = run(s, i + 13, is_quote);
            j = run(s, j, |b| b == b' ' || b == b'\t');
            if j >= s.len() || s[j] != b':' {
                continue;
            }
            j = run(s, j + 1, |b| b == b' ' || b == b'\t');
            let quote = s.get(j).copied().filter(|&b| is_quote(b));
            let start = j + usize::from(quote.is_some());
            let mut end = run(s, start, |b| !is_quote(b) && b != b'\n');
            while end > start && s[end - 1].is_ascii_whitespace() {
                end -= 1;
            }
            if start < end && &s[start..end] != MARK.as_bytes() {
                spans.push((start, end, "Authorization header"));
            }
        }
    }
}

fn is_name_byte(b: u8) -> bool {
    is_word(b) || b == b'.' || b == b'-'
}

/// The value that starts at `v`: inside quotes, or up to whitespace, a quote, `&` or `;`. A
/// shell variable reference (`$HF_TOKEN`, `${HF_TOKEN}`) is not a value: scripts pass secrets
/// along that way without holding them.
fn value_span(s: &[u8], v: usize) -> Option<(usize, usize)> {
    let first = *s.get(v)?;
    let (start, end) = if is_quote(first) {
        let start = v + 1;
        (start, run(s, start, |b| b != first))
    } else {
        (v, run(s, v, |b| !b.is_ascii_whitespace() && !is_quote(b) && b != b'&' && b != b';'))
    };
    let value = &s[start..end];
    let reference = value.first() == Some(&b'$')
        && value[1..].iter().all(|&b| is_word(b) || b == b'{' || b == b'}')
        && value.len() > 1;
    (start < end && value != MARK.as_bytes() && !reference).then_some((start, end))
}

/// `NAME=value` where NAME is a [`secret_name`] (`HF_TOKEN=…`, `--api-key=…`, `?access_token=…`).
fn assignments(line: &str, spans: &mut Vec<Span>) {
    let s = line.as_bytes();
    for i in memchr::memchr_iter(b'=', s) {
        if i == 0 || matches!(s[i - 1], b'=' | b'!' | b'<' | b'>') || s.get(i + 1) == Some(&b'=') {
            continue;
        }
        let name_start = i - s[..i].iter().rev().take_while(|&&b| is_name_byte(b)).count();
        if !secret_name(&line[name_start..i]) {
            continue;
        }
        if let Some((start, end)) = value_span(s, i + 1) {
            spans.push((start, end, "secret-named assignment"));
        }
    }
}

/// `--secret-flag value` (`--api-key sk-…`, `--token xyz`, `--password "a b"`).
fn flags(line: &str, spans: &mut Vec<Span>) {
    let s = line.as_bytes();
    for i in finder("--").find_iter(s) {
        if i > 0 && !s[i - 1].is_ascii_whitespace() && !is_quote(s[i - 1]) {
            continue;
        }
        let name_end = run(s, i + 2, is_name_byte);
        if name_end >= s.len() || !matches!(s[name_end], b' ' | b'\t') {
            continue;
        }
        if !secret_name(&line[i..name_end]) {
            continue;
        }
        let v = run(s, name_end, |b| b == b' ' || b == b'\t');
        if s.get(v) == Some(&b'-') {
            continue;
        }
        if let Some((start, end)) = value_span(s, v) {
            spans.push((start, end, "secret-named flag value"));
        }
    }
}

/// An invocation as a bundle may record it: arguments and variables redacted, each
/// redaction reported at `place`. Running it is not the same.
pub fn invocation(inv: &Invocation, place: &str, out: &mut Vec<Redaction>) -> Invocation {
    Invocation {
        argv: redact_args(&inv.argv, place, out),
        cwd: inv.cwd.clone(),
        env_set: redact_env(&inv.env_set, place, out),
        env_remove: inv.env_remove.clone(),
        timeout: inv.timeout,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Fake but well-formed secrets, built at run time so that no scanner trips on this file.
    struct Fakes {
        hf: String,
        ghp: String,
        ghs: String,
        pat: String,
        sk: String,
        sk_proj: String,
        akia: String,
        asia: String,
        password: String,
        bearer: String,
        plain: String,
    }

    fn fakes() -> Fakes {
        Fakes {
            hf: format!("hf_{}", "aB3".repeat(12)),
            ghp: format!("ghp_{}", "x9Y".repeat(12)),
            ghs: format!("ghs_{}", "Q7r".repeat(12)),
            pat: format!("github_pat_{}", "11AB_cd".repeat(5)),
            sk: format!("sk-{}", "Fk9z".repeat(12)),
            sk_proj: format!("sk-proj-{}", "Ab1_-".repeat(10)),
            akia: format!("AKIA{}", "EXAMPLE0".repeat(2)),
            asia: format!("ASIA{}", "FAKE".repeat(4)),
            password: format!("hunter{}", "2".repeat(6)),
            bearer: format!("tok{}", "En5".repeat(6)),
            plain: format!("plain{}", "value".repeat(2)),
        }
    }

    fn red(line: &str) -> String {
        redact_line(line).0.into_owned()
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
        let got = redact_text(&log, "rungs/01-baseline/stderr.log", &mut out);
        assert_no_secret(&got, &f);
        assert_no_secret(&format!("{out:?}"), &f);
        assert!(got.starts_with("starting\r\nusing token hf_[REDACTED]\nclean line\n"));
        assert!(got.ends_with("no newline at end --password [REDACTED]"));
        let places: Vec<&str> = out.iter().map(|r| r.place.as_str()).collect();
        assert_eq!(
            places,
            [
                "rungs/01-baseline/stderr.log:2",
                "rungs/01-baseline/stderr.log:4",
                "rungs/01-baseline/stderr.log:4",
                "rungs/01-baseline/stderr.log:5",
                "rungs/01-baseline/stderr.log:5",
                "rungs/01-baseline/stderr.log:5",
                "rungs/01-baseline/stderr.log:5",
                "rungs/01-baseline/stderr.log:6",
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
            include_str!("../../tests/fixtures/h200/oob_write/memcheck.log"),
            include_str!("../../tests/fixtures/h200/triton_worker/baseline.log"),
            include_str!("../../tests/fixtures/h200/oob_write/coredump.log"),
            include_str!("../../tests/fixtures/h200/torch_assert/cudagdb-core-1.log"),
            include_str!("../../tests/fixtures/h200/torch_assert/memcheck.log"),
            include_str!("../../tests/fixtures/h200/env.log"),
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

    fn fragments() -> Vec<String> {
        let f = fakes();
        let mut v: Vec<String> = [
            "hf_",
            "ghp_",
            "github_pat_",
            "sk-",
            "sk-proj-",
            "AKIA",
            "ASIA",
            "EXAMPLE0",
            "aB3",
            "a1",
            "_",
            "-",
            "--",
            "=",
            "==",
            " ",
            "\t",
            "\n",
            "\"",
            "'",
            ":",
            "@",
            "://",
            "/",
            "&",
            "?",
            "#",
            "[",
            "]",
            MARK,
            "HF_TOKEN",
            "token",
            "--api-key",
            "api_key",
            "Bearer",
            "bearer ",
            "Authorization",
            ": ",
            "user",
            "é",
            "0x7f",
            "_Z11scatter_farPii",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        v.extend([f.hf, f.ghp, f.pat, f.sk, f.sk_proj, f.akia, f.asia, f.password, f.bearer, f.plain]);
        v
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
}

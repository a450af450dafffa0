//! Redaction of secrets before anything is written into a bundle, with the shapes of the public
//! rule sets of gitleaks and trufflehog (docs/security.md lists them). By name: environment
//! variables, recipe keys, flags and `NAME=value`, `name: value`, `"name": "value"` pairs whose
//! name says secret (`*TOKEN`, `*SECRET*`, `*PASSWORD*`, `KEY`, credentials, auth), HTTP
//! headers (`Authorization:`, `X-Api-Key:`, `Cookie:`), `-p`/`--password` arguments, `.netrc`
//! passwords and cuda-gdb's locals. By value: tokens with a known prefix (`ghp_…`, `glpat-…`,
//! `xoxb-…`, `sk_live_…`, `AKIA…`, `AIza…`, `eyJ…` JWTs, ...), passwords in URLs, PEM private
//! keys (one line at a time, or a whole block with [`Lines`]), and the values [`remember`]ed
//! for the run. The secret part becomes [`MARK`]; what says what it was (the prefix, the name,
//! the header) is kept, so a bundle stays readable. What was redacted is reported as
//! [`Redaction`]s that name the place and the kind, never the value.
//!
//! Pure: this module must do no I/O and print nothing, and it must never copy a secret value into
//! a [`Redaction`]; its one state is what [`remember`] keeps, set once per process. Matching is hand-written (no regex crate) around a few SIMD byte searches
//! (`memchr`), each hit checked in a few byte comparisons; a line with nothing to redact costs no
//! allocation ([`redact_line`] returns `Cow::Borrowed`), since captured logs can be large.

use crate::model::Invocation;
use std::borrow::Cow;
use std::sync::{LazyLock, OnceLock};

use memchr::memmem::Finder;

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

/// A name (a variable's, a flag's, a key's) as a redaction record may quote it: as it is when
/// it is a plain name (letters, digits, `_`, `-`, `.`, at most 64 of them), else only what it
/// is, since a "name" that is not one can be the secret itself (`-----BEGIN PRIVATE KEY...`
/// taken for a flag, a key of a JSON object that is a token). A record names the kind and the
/// place, never the text.
fn record_name<'a>(name: &'a str, kind: &'a str) -> &'a str {
    let plain = !name.is_empty()
        && name.len() <= 64
        && name.trim_start_matches('-').bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
        && redact_line(name).1.is_empty();
    if plain {
        name
    } else {
        kind
    }
}

/// The kind of the lines of a PEM private key (and of what a one-line key holds).
const PEM: &str = "PEM private key";
/// The kind of a value [`remember`]ed for the run, found again.
const KNOWN: &str = "value of a secret-named variable";

/// A last name part that makes a secret-looking name a count, an id, a layout or a place, not a
/// secret: `max_token_len`, `prompt_token_ids`, `key_cache`, `--password-file`.
const NOT_SECRET_LAST: &[&str] = &[
    "ID", "IDS", "COUNT", "LEN", "LENGTH", "SIZE", "NUM", "TYPE", "DTYPE", "CACHE", "FILE", "FILES", "PATH",
    "DIR",
];

/// Whether a variable, flag or key name names a secret, case-insensitively, by its parts (split at
/// anything not ASCII alphanumeric): a part ending in `TOKEN` (`HF_TOKEN`, `authToken`, but not
/// `TOKENIZERS_PARALLELISM` or `max_tokens`), holding `SECRET`, `PASSWORD`, `PASSWD`,
/// `PASSPHRASE` or `CREDENTIAL`, ending in `CREDS` or `AUTH` or starting with `AUTHORIZ`, or
/// `KEY`, `KEYS`, `PASS`, `*APIKEY`, `*ACCESSKEY`, `*PRIVATEKEY`, `*ACCOUNTKEY` or a camel-case
/// `…Key` (`API_KEY`, `--api-key`, `AccountKey`, `signingKey`, but not `KEYBOARD`, `MONKEY` or
/// `DispatchKeySet`); unless the last part is a count or an id ([`NOT_SECRET_LAST`]).
pub fn secret_name(name: &str) -> bool {
    secret_name_bytes(name.as_bytes())
}

fn secret_name_bytes(name: &[u8]) -> bool {
    let mut any = false;
    let mut last: &[u8] = b"";
    for part in name.split(|b| !b.is_ascii_alphanumeric()).filter(|p| !p.is_empty()) {
        any = any || secret_part(part);
        last = part;
    }
    any && !NOT_SECRET_LAST.iter().any(|w| last.eq_ignore_ascii_case(w.as_bytes()))
}

fn secret_part(p: &[u8]) -> bool {
    ends_ci(p, b"TOKEN")
        || contains_ci(p, b"SECRET")
        || contains_ci(p, b"PASSWORD")
        || contains_ci(p, b"PASSWD")
        || contains_ci(p, b"PASSPHRASE")
        || contains_ci(p, b"CREDENTIAL")
        || ends_ci(p, b"CREDS")
        || ends_ci(p, b"AUTH")
        || starts_ci(p, b"AUTHORIZ")
        || p.eq_ignore_ascii_case(b"KEY")
        || p.eq_ignore_ascii_case(b"KEYS")
        || p.eq_ignore_ascii_case(b"PASS")
        || ends_ci(p, b"APIKEY")
        || ends_ci(p, b"ACCESSKEY")
        || ends_ci(p, b"PRIVATEKEY")
        || ends_ci(p, b"ACCOUNTKEY")
        || (p.len() > 3 && p.ends_with(b"Key") && p[p.len() - 4].is_ascii_lowercase())
}

/// A necessary condition of [`secret_name`], in one pass over the name: every word it looks for
/// holds a `k`, `ss`, `cr` or `th`. Most names a log puts before a `:` or `=` have none.
fn maybe_secret_name(name: &[u8]) -> bool {
    let mut prev = 0u8;
    for &b in name {
        let b = b.to_ascii_lowercase();
        if b == b'k'
            || (prev == b's' && b == b's')
            || (prev == b'c' && b == b'r')
            || (prev == b't' && b == b'h')
        {
            return true;
        }
        prev = b;
    }
    false
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
/// ([`redact_value`]). Empty values are kept. One [`Redaction`] at `place` per finding.
pub fn redact_env(vars: &[(String, String)], place: &str, out: &mut Vec<Redaction>) -> Vec<(String, String)> {
    redact_env_learning(vars, place, out, &mut Vec::new())
}

fn redact_env_learning(
    vars: &[(String, String)],
    place: &str,
    out: &mut Vec<Redaction>,
    learned: &mut Vec<String>,
) -> Vec<(String, String)> {
    vars.iter()
        .map(|(name, value)| {
            if secret_name(name) && !value.is_empty() && value != MARK {
                let name_ = record_name(name, "a secret-named variable");
                out.push(Redaction { place: place.to_string(), what: format!("{name_} (by name)") });
                learned.push(value.clone());
                return (name.clone(), MARK.to_string());
            }
            match redact_value(value) {
                (Cow::Borrowed(_), _) => (name.clone(), value.clone()),
                (Cow::Owned(new), labels) => {
                    out.extend(labels.into_iter().map(|label| Redaction {
                        place: place.to_string(),
                        what: format!("{}: {label} (by value)", record_name(name, "a variable")),
                    }));
                    (name.clone(), new)
                }
            }
        })
        .collect()
}

/// Programs and subcommands whose `-p` is a switch or takes no password: `mkdir -p build`,
/// `git log -p HEAD`, `python -m pytest -p no:cacheprovider`, `gdb -p PID`. (A port, as for
/// `ssh -p 22` and `docker run -p 8000:8000`, is told by its digits.)
const P_IS_A_SWITCH: &[&str] = &[
    "gdb", "cuda-gdb", "mkdir", "cp", "install", "ls", "rsync", "tar", "patch", "ps", "pgrep", "pkill",
    "xargs", "perl", "sed", "git", "log", "show", "diff", "add", "stash", "checkout", "reset", "commit",
    "restore", "pytest", "time", "readlink", "realpath",
];

/// Programs that take a password attached to `-p` (`mysql -uroot -pSECRET`, `sshpass -pSECRET`).
/// Elsewhere an attached `-p…` is a compiler or linker switch (`-pthread`, `-pg`, `-pipe`).
const P_ATTACHED: &[&str] = &[
    "mysql",
    "mysqldump",
    "mysqladmin",
    "mysqlimport",
    "mysqlshow",
    "mysqlcheck",
    "mariadb",
    "mariadb-dump",
    "mariadb-admin",
    "sshpass",
];

/// What an argument asks of the next one.
enum Asks<'a> {
    /// The value of a secret-named flag (`--api-key`, `--token`).
    Secret(&'a str),
    /// The value of `-p`: a password, unless it reads as a port, a path or a switch.
    Password,
    /// The value of `-u`/`--user`: `user:password` (curl).
    UserPass(&'a str),
}

/// Redacts a command line given as arguments: the argument after a secret-named flag without a
/// value of its own (`--api-key`, `--token`) whole; the one after `-p`, unless it reads as a
/// port, a path or another switch, or the program's or the subcommand's `-p` is a switch
/// ([`P_IS_A_SWITCH`]); the password of `-u user:password`; and every argument by value
/// ([`redact_value`]). A value redacted by name is redacted in the other arguments too.
pub fn redact_args(args: &[String], place: &str, out: &mut Vec<Redaction>) -> Vec<String> {
    let mut learned = Vec::new();
    let mut got = redact_args_learning(args, place, out, &mut learned);
    spread(&mut got.iter_mut().collect::<Vec<_>>(), &learned, place, out);
    got
}

fn redact_args_learning(
    args: &[String],
    place: &str,
    out: &mut Vec<Redaction>,
    learned: &mut Vec<String>,
) -> Vec<String> {
    let mut asks: Option<Asks> = None;
    let mut last_word = "";
    let mut got = Vec::with_capacity(args.len());
    for arg in args {
        let asked = asks.take();
        if arg.starts_with("--") && !arg.starts_with("-----") && !arg.contains('=') && secret_name(arg) {
            asks = Some(Asks::Secret(arg.as_str()));
        } else if arg == "-p"
            && ![base_name(last_word), base_name(args.first().map_or("", String::as_str))]
                .iter()
                .any(|w| P_IS_A_SWITCH.contains(w))
        {
            asks = Some(Asks::Password);
        } else if arg == "-u" || arg == "--user" {
            asks = Some(Asks::UserPass(arg.as_str()));
        }
        let program = [base_name(last_word), base_name(args.first().map_or("", String::as_str))];
        if arg.len() > 2 && arg.starts_with("-p") && program.iter().any(|w| P_ATTACHED.contains(w)) {
            out.push(Redaction { place: place.to_string(), what: "value of -p (by name)".to_string() });
            learned.push(arg[2..].to_string());
            got.push(format!("-p{MARK}"));
            continue;
        }
        // A PEM block (`-----BEGIN ...`) is a value, not a flag, though it starts with `-`.
        let whole = !arg.is_empty() && (!arg.starts_with('-') || arg.starts_with("-----")) && arg != MARK;
        match asked {
            Some(Asks::Secret(flag)) if whole => {
                let flag = record_name(flag, "a secret-named flag");
                out.push(Redaction { place: place.to_string(), what: format!("value of {flag} (by name)") });
                learned.push(arg.clone());
                got.push(MARK.to_string());
                continue;
            }
            Some(Asks::Password) if whole && p_value(arg.as_bytes(), false) => {
                out.push(Redaction { place: place.to_string(), what: "value of -p (by name)".to_string() });
                learned.push(arg.clone());
                got.push(MARK.to_string());
                continue;
            }
            Some(Asks::UserPass(flag)) if whole => {
                if let Some((a, b)) = user_pass(arg.as_bytes()) {
                    out.push(Redaction {
                        place: place.to_string(),
                        what: format!(
                            "password of {} user:password (by name)",
                            record_name(flag, "a user flag")
                        ),
                    });
                    learned.push(arg[a..b].to_string());
                    got.push(format!("{}{MARK}{}", &arg[..a], &arg[b..]));
                    continue;
                }
            }
            _ => {}
        }
        if !arg.starts_with('-') {
            last_word = arg;
        }
        match redact_value(arg) {
            (Cow::Borrowed(_), _) => got.push(arg.clone()),
            (Cow::Owned(new), labels) => {
                out.extend(labels.into_iter().map(|label| Redaction {
                    place: place.to_string(),
                    what: format!("{label} (by value)"),
                }));
                got.push(new);
            }
        }
    }
    got
}

fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Replaces, in every string, the values `learned` (redacted by name elsewhere: a `--set`
/// variable that is also a `--password` argument), longest first; one [`Redaction`] per string.
fn spread(strings: &mut [&mut String], learned: &[String], place: &str, out: &mut Vec<Redaction>) {
    let mut values: Vec<&str> = learned.iter().map(String::as_str).filter(|v| worth_remembering(v)).collect();
    if values.is_empty() {
        return;
    }
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    values.dedup();
    // The values by their first four bytes (each has at least six), longest first: each string
    // is read once, and only the values that start where it has their first bytes are
    // compared, so many variables do not make the work grow as their square.
    let mut by_head: std::collections::HashMap<&[u8], Vec<&str>> = std::collections::HashMap::new();
    for v in &values {
        by_head.entry(&v.as_bytes()[..4]).or_default().push(v);
    }
    for s in strings.iter_mut() {
        let b = s.as_bytes();
        let mut hits: Vec<&str> = Vec::new();
        for i in 0..b.len().saturating_sub(3) {
            if let Some(vs) = by_head.get(&b[i..i + 4]) {
                for v in vs {
                    if b[i..].starts_with(v.as_bytes()) && !hits.contains(v) {
                        hits.push(v);
                    }
                }
            }
        }
        if hits.is_empty() {
            continue;
        }
        hits.sort_by_key(|v| std::cmp::Reverse(v.len()));
        for v in hits {
            **s = s.replace(v, MARK);
        }
        out.push(Redaction { place: place.to_string(), what: format!("{KNOWN} (by value)") });
    }
}

/// Whether a value redacted by name is worth looking for elsewhere: 6 bytes at least, on one line,
/// not a number or a word that is no secret anywhere (`true`, a bare `0`).
fn worth_remembering(v: &str) -> bool {
    v.len() >= 6
        && !MARK.contains(v)
        && !v.contains('\n')
        && !v.bytes().all(|b| b.is_ascii_digit())
        && !["true", "false", "null", "none"].iter().any(|w| v.eq_ignore_ascii_case(w))
}

/// Redacts a text (a log, a command file) by value, line by line ([`Lines`], so a PEM block is
/// redacted whole); line endings are kept. Each finding is reported at `place:LINE` (1-based).
pub fn redact_text(text: &str, place: &str, out: &mut Vec<Redaction>) -> String {
    let mut lines = Lines::new();
    let mut result: Option<String> = None;
    let mut offset = 0;
    for (index, chunk) in text.split_inclusive('\n').enumerate() {
        let body = chunk.strip_suffix('\n').unwrap_or(chunk);
        match lines.line(body) {
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

/// Redacts one value (an argument, a variable, a recipe string) by value: [`redact_line`], or
/// line by line ([`Lines`]) when it holds newlines (a PEM key in a variable).
pub fn redact_value(value: &str) -> (Cow<'_, str>, Vec<&'static str>) {
    if !value.contains('\n') {
        return redact_line(value);
    }
    let mut lines = Lines::new();
    let mut labels: Vec<&'static str> = Vec::new();
    let mut result = String::with_capacity(value.len());
    let mut changed = false;
    for chunk in value.split_inclusive('\n') {
        let body = chunk.strip_suffix('\n').unwrap_or(chunk);
        let (new, found) = lines.line(body);
        changed |= matches!(new, Cow::Owned(_));
        result.push_str(&new);
        result.push_str(&chunk[body.len()..]);
        for l in found {
            if !labels.contains(&l) {
                labels.push(l);
            }
        }
    }
    if changed {
        (Cow::Owned(result), labels)
    } else {
        (Cow::Borrowed(value), Vec::new())
    }
}

/// Redacts a JSON value (the resolved recipe): a string under a secret-named key ([`secret_name`])
/// whole, an array of strings as a command line ([`redact_args`]), every other string by value;
/// then a value redacted by name anywhere (a `--set` variable that a command passes as
/// `--password`) wherever else it appears.
pub fn redact_json(value: &serde_json::Value, place: &str, out: &mut Vec<Redaction>) -> serde_json::Value {
    let mut learned = Vec::new();
    let mut got = json_learning(value, place, out, &mut learned);
    let mut strings = Vec::new();
    json_strings(&mut got, &mut strings);
    spread(&mut strings, &learned, place, out);
    got
}

fn json_strings<'a>(value: &'a mut serde_json::Value, into: &mut Vec<&'a mut String>) {
    use serde_json::Value;
    match value {
        Value::String(s) => into.push(s),
        Value::Array(items) => items.iter_mut().for_each(|v| json_strings(v, into)),
        Value::Object(map) => map.values_mut().for_each(|v| json_strings(v, into)),
        _ => {}
    }
}

fn json_learning(
    value: &serde_json::Value,
    place: &str,
    out: &mut Vec<Redaction>,
    learned: &mut Vec<String>,
) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(s) => match redact_value(s) {
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
            let got = redact_args_learning(&words, place, out, learned);
            Value::Array(got.into_iter().map(Value::String).collect())
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| json_learning(v, place, out, learned)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let redacted = match v {
                        Value::String(s) if secret_name(k) && !s.is_empty() && s != MARK => {
                            let k_ = record_name(k, "a secret-named key");
                            out.push(Redaction { place: place.to_string(), what: format!("{k_} (by name)") });
                            learned.push(s.clone());
                            Value::String(MARK.to_string())
                        }
                        _ => json_learning(v, place, out, learned),
                    };
                    (k.clone(), redacted)
                })
                .collect(),
        ),
        _ => value.clone(),
    }
}

/// The values a run should [`remember`]: those of the secret-named variables of `env` (the
/// tool's own environment, which its processes inherit) and those the recipe's redaction takes
/// out by name (secret-named variables and keys, `--password` arguments).
pub fn secret_values(
    env: impl IntoIterator<Item = (String, String)>,
    recipe: &serde_json::Value,
) -> Vec<String> {
    let mut learned: Vec<String> =
        env.into_iter().filter(|(k, v)| secret_name(k) && !v.is_empty()).map(|(_, v)| v).collect();
    json_learning(recipe, "", &mut Vec::new(), &mut learned);
    learned.retain(|v| worth_remembering(v));
    learned.sort();
    learned.dedup();
    learned
}

/// The values remembered for this process ([`remember`]), longest first.
static REMEMBERED: OnceLock<Vec<Finder<'static>>> = OnceLock::new();

/// Remembers secret values for the rest of the process ([`secret_values`]: a `--set password=…`,
/// an inherited `HF_TOKEN`), so that they are redacted wherever they show up again: in a
/// positional argument, in what the target prints. Set once per process (by `debug-ima`); a
/// second call changes nothing and returns false. Values shorter than 6 bytes, numbers and
/// multi-line values are not kept.
pub fn remember(values: impl IntoIterator<Item = String>) -> bool {
    let mut values: Vec<String> = values.into_iter().filter(|v| worth_remembering(v)).collect();
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    values.dedup();
    REMEMBERED.set(values.iter().map(|v| Finder::new(v.as_bytes()).into_owned()).collect()).is_ok()
}

/// Offsets in `text` where [`redact_line`] takes something out, sorted: the same scanners run
/// over the whole buffer (each rule stops at a newline), a few SIMD searches whose hits are
/// checked in a few byte comparisons, so that a caller redacts only the lines holding one. A
/// line without any is left unchanged by [`redact_line`]. A PEM private-key header is one too,
/// for a [`Lines`] to follow its block, whose lines must all reach it while
/// [`Lines::in_block`].
pub fn candidates(text: &[u8], out: &mut Vec<usize>) {
    static BEGIN: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"-----BEGIN "));
    let mut spans = Vec::new();
    scan(text, &mut spans);
    out.extend(spans.iter().map(|&(start, _, _)| start));
    // A PEM header alone changes nothing, but a [`Lines`] must see it to follow its block.
    out.extend(BEGIN.find_iter(text).filter(|&i| pem_header_end(text, i).is_some()));
    out.sort_unstable();
}

/// Redacts one line by value, and names the kinds of secret found (each once). Borrowed, with no
/// allocation, when nothing matches. Redacting the result again changes nothing.
pub fn redact_line(line: &str) -> (Cow<'_, str>, Vec<&'static str>) {
    redact_spans(line, Vec::new())
}

/// The lines of a PEM block that a [`Lines`] redacts after its `BEGIN` line, at most: a key
/// that never ends stops being one.
const PEM_LINES: u32 = 400;

/// Line-by-line redaction that follows a PEM private key over its lines: after a
/// `-----BEGIN … PRIVATE KEY-----` line, every line of the block (base64, `Proc-Type:`
/// headers, blank) up to its `-----END` line is redacted whole, whatever its length. Use one
/// per stream, in order; [`redact_line`] is the same without the memory of a block.
#[derive(Debug, Default, Clone)]
pub struct Lines {
    /// Lines left in the block; 0 outside one.
    left: u32,
}

impl Lines {
    pub fn new() -> Lines {
        Lines::default()
    }

    /// Whether the next line is inside a PEM block: it must reach [`Lines::line`] even when
    /// [`candidates`] finds nothing in it.
    pub fn in_block(&self) -> bool {
        self.left > 0
    }

    /// Redacts one line (without its newline), as [`redact_line`] does, and the lines of a PEM
    /// block.
    pub fn line<'a>(&mut self, line: &'a str) -> (Cow<'a, str>, Vec<&'static str>) {
        let s = line.as_bytes();
        let mut extra = Vec::new();
        if self.left > 0 {
            match find(s, b"-----END") {
                Some(e) => {
                    self.left = 0;
                    push_trimmed(s, 0, e, &mut extra);
                }
                None if pem_body(s) => {
                    self.left -= 1;
                    push_trimmed(s, 0, s.len(), &mut extra);
                }
                None => self.left = 0,
            }
        }
        if self.left == 0 && opens_block(s) {
            self.left = PEM_LINES;
        }
        redact_spans(line, extra)
    }
}

/// `s[a..b]` without its blanks as a PEM span, unless empty or already redacted.
fn push_trimmed(s: &[u8], a: usize, b: usize, spans: &mut Vec<Span>) {
    let a = run(s, a, |c| c.is_ascii_whitespace()).min(b);
    let mut b = b;
    while b > a && s[b - 1].is_ascii_whitespace() {
        b -= 1;
    }
    if a < b && &s[a..b] != MARK.as_bytes() {
        spans.push((a, b, PEM));
    }
}

/// A line that can be inside a PEM block: base64 (with `=` padding), a header of an encrypted
/// key or an armour (`Proc-Type: 4,ENCRYPTED`, `DEK-Info: …`, `Comment: …`), blank, or already
/// redacted.
fn pem_body(s: &[u8]) -> bool {
    const HEADERS: [&[u8]; 5] = [b"Proc-Type:", b"DEK-Info:", b"Comment:", b"Version:", b"Hash:"];
    let (a, b) = trim(s);
    let t = &s[a..b];
    t.is_empty()
        || t == MARK.as_bytes()
        || t.iter().all(|&c| is_b64(c) || c == b'=')
        || HEADERS.iter().any(|h| t.starts_with(h))
}

/// A line whose PEM private-key header ends it: the block follows on the next lines.
fn opens_block(s: &[u8]) -> bool {
    let Some(i) = find(s, b"-----BEGIN ") else { return false };
    match pem_header_end(s, i) {
        Some(h) => s[h..].iter().all(|b| b.is_ascii_whitespace() || is_quote(*b)),
        None => false,
    }
}

fn trim(s: &[u8]) -> (usize, usize) {
    let a = run(s, 0, |c| c.is_ascii_whitespace());
    let mut b = s.len();
    while b > a && s[b - 1].is_ascii_whitespace() {
        b -= 1;
    }
    (a, b)
}

fn find(s: &[u8], pat: &[u8]) -> Option<usize> {
    memchr::memmem::find(s, pat)
}

/// Where a line too long to be held whole ([`crate::process`] holds 1 MiB) may be cut, so that
/// each piece is redacted alone without a secret straddling the cut: after the last blank of
/// the last 64 KiB whose words before do not take a value (`Bearer`, `--token`, `password:`),
/// else after the last byte that no token holds, else the whole piece. The result is in
/// `1..=piece.len()` for a piece that is not empty.
pub fn cut_point(piece: &[u8]) -> usize {
    const WINDOW: usize = 64 << 10;
    let floor = piece.len().saturating_sub(WINDOW);
    let mut end = piece.len();
    let mut first = None;
    for _ in 0..16 {
        let Some(k) = memchr::memrchr2(b' ', b'\t', &piece[floor..end]) else { break };
        let p = floor + k;
        first.get_or_insert(p + 1);
        if !takes_value(piece, p) {
            return p + 1;
        }
        end = p;
    }
    if let Some(p) = first {
        return p;
    }
    let token_byte = |b: u8| b.is_ascii_alphanumeric() || b"_-./+=:@%~".contains(&b) || b >= 0x80;
    match piece[floor..].iter().rposition(|&b| !token_byte(b)) {
        Some(k) => floor + k + 1,
        None => piece.len(),
    }
}

/// Whether the words before the blank at `p` would take what follows as a secret.
fn takes_value(piece: &[u8], p: usize) -> bool {
    const FILLER: &[u8] = b"Zq3Wv8Lm2Xc7Rt5Yb4";
    let from = p.saturating_sub(256);
    let mut probe = piece[from..=p].to_vec();
    probe.extend_from_slice(FILLER);
    let mut spans = Vec::new();
    scan(&probe, &mut spans);
    spans.iter().any(|&(_, end, _)| end > p + 1 - from)
}

/// Redacts `line`: the spans the scanners find, with `extra` (a PEM block's), then again to a
/// fixed point.
fn redact_spans(line: &str, mut spans: Vec<Span>) -> (Cow<'_, str>, Vec<&'static str>) {
    scan(line.as_bytes(), &mut spans);
    if spans.is_empty() {
        return (Cow::Borrowed(line), Vec::new());
    }
    let mut labels = Vec::new();
    let mut current = apply(line, &mut spans, &mut labels);
    // A redaction can give a neighbour the boundary that it lacked; rescan to a fixed point so
    // that redacting twice is the same as once.
    for _ in 0..8 {
        spans.clear();
        scan(current.as_bytes(), &mut spans);
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

/// Replaces the spans (merged where they overlap or touch) with [`MARK`]. Span ends are moved
/// to character boundaries (outwards), so that a lossy line stays valid.
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
        let mut start = start.max(copied);
        while !line.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = end.min(line.len());
        while !line.is_char_boundary(end) {
            end += 1;
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

fn is_word_dash(b: u8) -> bool {
    is_word(b) || b == b'-'
}

fn is_b64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'+' || b == b'/'
}

fn is_hex(b: u8) -> bool {
    b.is_ascii_hexdigit()
}

fn is_quote(b: u8) -> bool {
    matches!(b, b'"' | b'\'' | b'`')
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Whether a token may start at `i`: nothing alphanumeric right before it, or the end of a
/// terminal escape (`\x1b[31m`), which a coloured log puts right before a token.
fn left_ok(s: &[u8], i: usize) -> bool {
    i == 0 || !is_alnum(s[i - 1]) || after_escape(s, i)
}

/// Like [`left_ok`], and no `_` either (an AWS key id inside a longer word is none).
fn left_ok_word(s: &[u8], i: usize) -> bool {
    i == 0 || !is_word(s[i - 1]) || after_escape(s, i)
}

/// Whether `s[..i]` ends with a CSI escape sequence: ESC `[`, parameters, a final letter.
fn after_escape(s: &[u8], i: usize) -> bool {
    if i < 3 || !s[i - 1].is_ascii_alphabetic() {
        return false;
    }
    let mut k = i - 1;
    while k > 0 && i - 1 - k < 16 && (s[k - 1].is_ascii_digit() || s[k - 1] == b';' || s[k - 1] == b'?') {
        k -= 1;
    }
    k >= 2 && s[k - 1] == b'[' && s[k - 2] == 0x1b
}

/// The end of the run of bytes from `start` that satisfy `ok`.
fn run(s: &[u8], start: usize, ok: impl Fn(u8) -> bool) -> usize {
    start + s[start..].iter().take_while(|&&b| ok(b)).count()
}

/// The start of the run of at most `max` bytes ending at `end` that satisfy `ok`; `None` when
/// the run is longer.
fn back(s: &[u8], end: usize, ok: impl Fn(u8) -> bool, max: usize) -> Option<usize> {
    let mut k = end;
    while k > 0 && ok(s[k - 1]) {
        if end - k == max {
            return None;
        }
        k -= 1;
    }
    Some(k)
}

/// Every scanner over `s` (a line, or many lines: no rule crosses a newline).
fn scan(s: &[u8], spans: &mut Vec<Span>) {
    punctuation(s, spans);
    separators(s, spans);
    capitals(s, spans);
    bearer(s, spans);
    netrc(s, spans);
    key_lines(s, spans);
    xml_elements(s, spans);
    remembered(s, spans);
}

/// A token with a fixed prefix: the prefix is kept (it says what the token was), a body of at
/// least `min` bytes of `class` that `check` accepts is the secret.
struct Token {
    prefix: &'static [u8],
    min: usize,
    class: fn(u8) -> bool,
    check: fn(&[u8]) -> bool,
    label: &'static str,
}

const fn tok(prefix: &'static [u8], min: usize, class: fn(u8) -> bool, label: &'static str) -> Token {
    Token { prefix, min, class, check: |_| true, label }
}

fn is_gitlab(b: u8) -> bool {
    is_word_dash(b) || b == b'.'
}

fn is_sendgrid(b: u8) -> bool {
    is_word_dash(b) || b == b'.'
}

fn is_grafana(b: u8) -> bool {
    is_b64(b) || b == b'=' || b == b'_'
}

/// A key's random body has a digit and a letter: paths like `sk-learn-experiments` are none.
fn digit_and_letter(body: &[u8]) -> bool {
    body.iter().any(u8::is_ascii_digit) && body.iter().any(u8::is_ascii_alphabetic)
}

/// The tokens with a prefix ending in `_`, `-` or `.` (the byte that triggers the check), from
/// gitleaks' and trufflehog's rules. A more specific prefix comes before a shorter one that
/// shares its trigger (`sk-ant-` before `sk-`): the first that matches is taken. Every
/// `check` holds for a body only if it holds for the whole run the body ends ([`punctuation`]
/// scans each run once).
/// How many [`TOKENS`] there are.
const N_TOKENS: usize = 55;

static TOKENS: [Token; N_TOKENS] = [
    tok(b"hf_", 20, is_alnum, "hf_ token"),
    tok(b"api_org_", 20, is_alnum, "Hugging Face org token"),
    tok(b"ghp_", 30, is_alnum, "GitHub token"),
    tok(b"gho_", 30, is_alnum, "GitHub token"),
    tok(b"ghu_", 30, is_alnum, "GitHub token"),
    tok(b"ghs_", 30, is_alnum, "GitHub token"),
    tok(b"ghr_", 30, is_alnum, "GitHub token"),
    tok(b"github_pat_", 20, is_word, "GitHub fine-grained token"),
    tok(b"glpat-", 20, is_gitlab, "GitLab token"),
    tok(b"gldt-", 20, is_gitlab, "GitLab token"),
    tok(b"glrt-", 20, is_gitlab, "GitLab token"),
    tok(b"glptt-", 20, is_gitlab, "GitLab token"),
    tok(b"glcbt-", 20, is_gitlab, "GitLab token"),
    tok(b"glft-", 20, is_gitlab, "GitLab token"),
    tok(b"glimt-", 20, is_gitlab, "GitLab token"),
    tok(b"glsoat-", 20, is_gitlab, "GitLab token"),
    tok(b"xoxb-", 10, is_word_dash, "Slack token"),
    tok(b"xoxp-", 10, is_word_dash, "Slack token"),
    tok(b"xoxa-", 10, is_word_dash, "Slack token"),
    tok(b"xoxr-", 10, is_word_dash, "Slack token"),
    tok(b"xoxs-", 10, is_word_dash, "Slack token"),
    tok(b"xoxe-", 10, is_word_dash, "Slack token"),
    tok(b"xoxo-", 10, is_word_dash, "Slack token"),
    tok(b"xapp-", 10, is_word_dash, "Slack token"),
    tok(b"sk_live_", 10, is_alnum, "Stripe key"),
    tok(b"sk_test_", 10, is_alnum, "Stripe key"),
    tok(b"sk_prod_", 10, is_alnum, "Stripe key"),
    tok(b"rk_live_", 10, is_alnum, "Stripe key"),
    tok(b"rk_test_", 10, is_alnum, "Stripe key"),
    tok(b"rk_prod_", 10, is_alnum, "Stripe key"),
    tok(b"whsec_", 24, is_alnum, "Stripe webhook secret"),
    Token {
        prefix: b"sk-ant-",
        min: 20,
        class: is_word_dash,
        check: digit_and_letter,
        label: "Anthropic API key",
    },
    Token { prefix: b"sk-", min: 20, class: is_word_dash, check: digit_and_letter, label: "sk- API key" },
    tok(b"npm_", 36, is_alnum, "npm token"),
    tok(b"pypi-AgE", 47, is_word_dash, "PyPI token"),
    tok(b"dckr_pat_", 20, is_word_dash, "Docker Hub token"),
    tok(b"nvapi-", 40, is_word_dash, "NVIDIA API key"),
    tok(b"GOCSPX-", 20, is_word_dash, "Google OAuth client secret"),
    tok(b"ya29.", 20, is_word_dash, "Google OAuth token"),
    tok(b"xai-", 50, is_word, "xAI API key"),
    tok(b"gsk_", 40, is_alnum, "Groq API key"),
    tok(b"r8_", 30, is_alnum, "Replicate token"),
    tok(b"lin_api_", 30, is_alnum, "Linear API key"),
    tok(b"glc_", 32, is_grafana, "Grafana token"),
    tok(b"glsa_", 32, is_word, "Grafana token"),
    tok(b"dop_v1_", 64, is_hex, "DigitalOcean token"),
    tok(b"doo_v1_", 64, is_hex, "DigitalOcean token"),
    tok(b"dor_v1_", 64, is_hex, "DigitalOcean token"),
    tok(b"shpat_", 32, is_hex, "Shopify token"),
    tok(b"shpss_", 32, is_hex, "Shopify token"),
    tok(b"shpca_", 32, is_hex, "Shopify token"),
    tok(b"shppa_", 32, is_hex, "Shopify token"),
    tok(b"hvs.", 24, is_word_dash, "Vault token"),
    tok(b"hvb.", 24, is_word_dash, "Vault token"),
    Token {
        prefix: b"SG.",
        min: 60,
        class: is_sendgrid,
        check: |b| b.contains(&b'.'),
        label: "SendGrid key",
    },
];

/// Where the trigger byte (the first `_`, `-` or `.`) of each token's prefix is, and the two
/// bytes before it, by which a hit finds its tokens: `TRIGGERS[hash]` lists token indexes.
static TRIGGERS: LazyLock<Vec<Vec<(usize, usize)>>> = LazyLock::new(|| {
    let mut t = vec![Vec::new(); 256];
    for (n, tk) in TOKENS.iter().enumerate() {
        let at = tk.prefix.iter().position(|&b| matches!(b, b'_' | b'-' | b'.')).expect("a trigger");
        t[trigger_hash(tk.prefix[at], tk.prefix[at - 2], tk.prefix[at - 1])].push((n, at));
    }
    t
});

fn trigger_hash(trigger: u8, a: u8, b: u8) -> usize {
    (trigger as usize).wrapping_mul(7).wrapping_add((a as usize).wrapping_mul(31)).wrapping_add(b as usize)
        & 255
}

/// Hits of `_`, `-` and `.`: the tokens whose prefix has its trigger there, `--flag value`,
/// `-p password`, `-u user:password`, PEM private keys.
fn punctuation(s: &[u8], spans: &mut Vec<Span>) {
    let triggers = &*TRIGGERS;
    // Where each token's body run was scanned to: a later hit inside it ends there too, with a
    // shorter body, so it is not scanned again (a line of `sk-sk-sk-…` stays linear).
    let mut scanned = [0usize; N_TOKENS];
    let mut pem_scanned = 0;
    for i in memchr::memchr3_iter(b'_', b'-', b'.', s) {
        if i >= 2 {
            for &(n, at) in &triggers[trigger_hash(s[i], s[i - 2], s[i - 1])] {
                if i < at || i - at + TOKENS[n].prefix.len() < scanned[n] {
                    continue;
                }
                if let Some((end, taken)) = token(s, i - at, &TOKENS[n], spans) {
                    scanned[n] = end;
                    if taken {
                        break;
                    }
                }
            }
        }
        if s[i] != b'-' || (i > 0 && s[i - 1] == b'-') {
            continue;
        }
        if s[i..].starts_with(b"-----BEGIN ") {
            if i >= pem_scanned {
                pem_scanned = pem_line(s, i, spans);
            }
        } else if i == 0 || is_blank(s[i - 1]) || is_quote(s[i - 1]) || s[i - 1] == b'\n' {
            match s.get(i + 1) {
                Some(b'-') => long_flag(s, i, spans),
                Some(b'p' | b'u') if s.get(i + 2).is_some_and(|&b| is_blank(b)) => short_flag(s, i, spans),
                Some(b'p') => attached_p(s, i, spans),
                _ => {}
            }
        }
    }
}

/// The token `t` starting at `start`: where its body's run ends and whether it was taken, when
/// its prefix is there.
fn token(s: &[u8], start: usize, t: &Token, spans: &mut Vec<Span>) -> Option<(usize, bool)> {
    if !s[start..].starts_with(t.prefix) || !left_ok(s, start) {
        return None;
    }
    let body = start + t.prefix.len();
    let end = run(s, body, t.class);
    let taken = end - body >= t.min && (t.check)(&s[body..end]);
    if taken {
        spans.push((body, end, t.label));
    }
    Some((end, taken))
}

/// `--secret-flag value` (`--api-key sk-…`, `--token xyz`, `--password "a b"`), and
/// `--user user:password`.
fn long_flag(s: &[u8], i: usize, spans: &mut Vec<Span>) {
    let name_end = run(s, i + 2, is_name_byte);
    if name_end >= s.len() || !is_blank(s[name_end]) {
        return;
    }
    let v = run(s, name_end, is_blank);
    if s.get(v) == Some(&b'-') {
        return;
    }
    let name = &s[i..name_end];
    if secret_name_bytes(name) {
        if let Some((start, end)) = value_span(s, v, Mode::Flag) {
            spans.push((start, end, "secret-named flag value"));
        }
    } else if name == b"--user" {
        user_pass_span(s, v, spans);
    }
}

/// `-p password` (not a port, a path, a switch, a plain word, nor a `-p` of a program earlier
/// on the line that takes it as a switch: [`P_IS_A_SWITCH`]) and `-u user:password`.
fn short_flag(s: &[u8], i: usize, spans: &mut Vec<Span>) {
    let v = run(s, i + 2, is_blank);
    if s[i + 1] == b'u' {
        user_pass_span(s, v, spans);
        return;
    }
    // The words before on the line: the program or subcommand whose flag this is.
    let from = i.saturating_sub(512);
    let line_start = memchr::memrchr(b'\n', &s[from..i]).map_or(from, |k| from + k + 1);
    let switch = s[line_start..i].split(|&b| b.is_ascii_whitespace() || is_quote(b)).any(|w| {
        let base = w.rsplit(|&b| b == b'/').next().unwrap_or(w);
        P_IS_A_SWITCH.iter().any(|p| p.as_bytes() == base)
    });
    if switch {
        return;
    }
    if let Some((start, end)) = value_span(s, v, Mode::Flag) {
        if p_value(&s[start..end], true) {
            spans.push((start, end, "password after -p"));
        }
    }
}

/// `-pSECRET` after a program that takes its password so ([`P_ATTACHED`]), earlier on the line.
fn attached_p(s: &[u8], i: usize, spans: &mut Vec<Span>) {
    let start = i + 2;
    let end = run(s, start, |b| !b.is_ascii_whitespace() && !is_quote(b));
    if start == end || s[start] == b'$' || s[start..].starts_with(MARK.as_bytes()) {
        return;
    }
    let from = i.saturating_sub(512);
    let line_start = memchr::memrchr(b'\n', &s[from..i]).map_or(from, |k| from + k + 1);
    // Words are split at what no program name holds: `CUDA_PLANT=mysql …` (an environment
    // printed) and `<planted>mysql …` (an XML report) name the program too.
    let program = s[line_start..i].split(|&b| !(is_name_byte(b) || b == b'/')).any(|w| {
        let base = w.rsplit(|&b| b == b'/').next().unwrap_or(w);
        P_ATTACHED.iter().any(|p| p.as_bytes() == base)
    });
    if program {
        spans.push((start, end, "password after -p"));
    }
}

/// Whether the value of `-p` reads as a password: not a port or a number (`8000:8000/tcp`), a
/// path, a shell reference, a placeholder (`<PID>`), a plugin (`no:cacheprovider`), a revision
/// (`HEAD~2`); in text (not an argument) also not a plain word ([`plain_word`]: `mkdir -p
/// build` when the program is unseen).
fn p_value(v: &[u8], in_text: bool) -> bool {
    !v.is_empty()
        && !v.iter().any(|b| b.is_ascii_whitespace() || b"<>".contains(b))
        && !matches!(v[0], b'-' | b'$' | b'.' | b'~')
        && v != MARK.as_bytes()
        && !v.iter().all(|&b| b.is_ascii_digit() || b":./-".contains(&b))
        && !v.iter().any(|&b| b"/:~^=".contains(&b))
        && !(in_text && plain_word(v))
}

/// A word of one case (`build`, `PID`, `my_dir`): in text, what follows `-p` is one more often
/// than a password.
fn plain_word(v: &[u8]) -> bool {
    v.iter().all(|b| b.is_ascii_lowercase() || *b == b'_')
        || v.iter().all(|b| b.is_ascii_uppercase() || *b == b'_')
}

/// `user:password` (not `1000:1000`): the password's range.
fn user_pass(v: &[u8]) -> Option<(usize, usize)> {
    let colon = v.iter().position(|&b| b == b':')?;
    let user = &v[..colon];
    (!user.is_empty()
        && !user.iter().all(u8::is_ascii_digit)
        && colon + 1 < v.len()
        && &v[colon + 1..] != MARK.as_bytes())
    .then_some((colon + 1, v.len()))
}

fn user_pass_span(s: &[u8], v: usize, spans: &mut Vec<Span>) {
    if let Some((start, end)) = value_span(s, v, Mode::Flag) {
        if let Some((a, b)) = user_pass(&s[start..end]) {
            spans.push((start + a, start + b, "password of -u user:password"));
        }
    }
}

/// The end of a PEM private-key header that starts at `i`
/// (`-----BEGIN RSA PRIVATE KEY-----`, `OPENSSH`, `ENCRYPTED`, `PGP … KEY BLOCK`).
fn pem_header_end(s: &[u8], i: usize) -> Option<usize> {
    let label = i + b"-----BEGIN ".len();
    let label_end = run(s, label, |b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b' ');
    let name = &s[label..label_end];
    let key = name.ends_with(b"PRIVATE KEY") || name.ends_with(b"PRIVATE KEY BLOCK");
    (label_end - label <= 48 && key && s[label_end..].starts_with(b"-----")).then_some(label_end + 5)
}

/// A PEM private key on one line (a JSON string with `\n` escapes, as in a cloud
/// service-account file): what is between its header and its `-----END` line, or the closing
/// quote or the end of the line (64 KiB at most: keys are smaller). A header alone starts a
/// block ([`Lines`]). Returns how far it looked.
fn pem_line(s: &[u8], i: usize, spans: &mut Vec<Span>) -> usize {
    let Some(h) = pem_header_end(s, i) else { return i + 1 };
    let bound = s.len().min(h + (64 << 10));
    let eol = memchr::memchr(b'\n', &s[h..bound]).map_or(bound, |k| h + k);
    let rest = &s[h..eol];
    let end = match find(rest, b"-----END") {
        Some(e) => h + e,
        None => rest.iter().position(|&b| is_quote(b)).map_or(eol, |q| h + q),
    };
    let body = &s[h..end];
    let escapes_only = body.split(|&b| b == b'\\').all(|p| {
        let p = p.strip_prefix(b"n").or_else(|| p.strip_prefix(b"r")).unwrap_or(p);
        p.iter().all(|b| b.is_ascii_whitespace())
    });
    if !escapes_only && body != MARK.as_bytes() {
        spans.push((h, end, PEM));
    }
    end
}

/// Hits of `=` and `:`: `scheme://user:password@host`, and secret-named values
/// ([`name_value`]). A run of either (`=========`, `::`) is no separator.
fn separators(s: &[u8], spans: &mut Vec<Span>) {
    let mut from = 0;
    // The end of the last header's value (to the end of its line): nothing inside is looked at
    // again (a line of `Cookie: Cookie: …` stays linear).
    let mut header_end = 0;
    while let Some(k) = memchr::memchr2(b'=', b':', &s[from..]) {
        let i = from + k;
        let end = run(s, i, |b| b == s[i]);
        if end == i + 1 && i >= header_end {
            if s[i] == b':' && s[i + 1..].starts_with(b"//") {
                url_password(s, i + 3, spans);
            } else if !(s[i] == b':' && s.get(i + 1) == Some(&b'=')) {
                if let Some(e) = name_value(s, i, spans) {
                    header_end = e;
                }
            }
        }
        from = end;
    }
}

/// `scheme://user:password@host` (the authority starts at `start`): the password.
fn url_password(s: &[u8], start: usize, spans: &mut Vec<Span>) {
    let end = run(s, start, |b| {
        !(b.is_ascii_whitespace() || is_quote(b) || matches!(b, b'/' | b'?' | b'#' | b'<' | b'>'))
    });
    let authority = &s[start..end];
    let Some(at) = authority.iter().rposition(|&b| b == b'@') else { return };
    let Some(colon) = authority[..at].iter().position(|&b| b == b':') else { return };
    let (pw_start, pw_end) = (start + colon + 1, start + at);
    if pw_start < pw_end && &s[pw_start..pw_end] != MARK.as_bytes() {
        spans.push((pw_start, pw_end, "password in a URL"));
    }
}

/// A quote: a byte, or an XML entity (`&quot;`, `&apos;`), as compute-sanitizer's XML writes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quote {
    Byte(u8),
    Entity(&'static [u8]),
}

impl Quote {
    fn len(self) -> usize {
        match self {
            Quote::Byte(_) => 1,
            Quote::Entity(e) => e.len(),
        }
    }
}

const ENTITIES: [&[u8]; 4] = [b"&quot;", b"&apos;", b"&#34;", b"&#39;"];

/// The quote that ends at `j`.
fn quote_before(s: &[u8], j: usize) -> Option<Quote> {
    if j > 0 && is_quote(s[j - 1]) {
        return Some(Quote::Byte(s[j - 1]));
    }
    if j > 0 && s[j - 1] == b';' {
        return ENTITIES.into_iter().find(|e| s[..j].ends_with(e)).map(Quote::Entity);
    }
    None
}

/// The quote that starts at `j`.
fn quote_at(s: &[u8], j: usize) -> Option<Quote> {
    match s.get(j) {
        Some(&b) if is_quote(b) => Some(Quote::Byte(b)),
        Some(b'&') => ENTITIES.into_iter().find(|e| s[j..].starts_with(e)).map(Quote::Entity),
        _ => None,
    }
}

/// The end of a quoted value that starts at `start`: its closing quote (one a backslash
/// escapes, as JSON, Python and C++ literals write a quote inside a string, does not close
/// it), the end of the line, or (after an XML entity) the next tag.
fn closing(s: &[u8], start: usize, q: Quote) -> usize {
    match q {
        Quote::Byte(b) => {
            let mut k = start;
            while k < s.len() && s[k] != b'\n' && s[k] != b {
                k += if s[k] == b'\\' && s.get(k + 1).is_some_and(|&n| n != b'\n') { 2 } else { 1 };
            }
            k.min(s.len())
        }
        Quote::Entity(e) => {
            let mut k = start;
            while k < s.len() && s[k] != b'\n' && s[k] != b'<' && !s[k..].starts_with(e) {
                k += 1;
            }
            k
        }
    }
}

fn is_name_byte(b: u8) -> bool {
    is_word(b) || b == b'.' || b == b'-'
}

/// How a value is written, which says where a bare one ends and what is no secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `NAME=value` (an environment, a query, a keyword argument) and `--flag value`: a bare
    /// value ends at a blank, a quote, `&`, `;` or `<`.
    Flag,
    /// `name: value` (YAML, JSON, a Python dict, a header without its own rule) and
    /// `name = value` (INI, cuda-gdb's locals): also at `,`, `)`, `]` or `}`; `true`, `null`,
    /// short numbers and addresses are no secrets.
    Loose,
    /// `name = value` with a bare value: only a single word that ends its line, not an
    /// expression (`key = torch.randn(3)`).
    Spaced,
}

/// The value that starts at `v`: inside quotes, or bare (see [`Mode`]). A shell variable
/// reference (`$HF_TOKEN`, `${HF_TOKEN}`) is not a value: scripts pass secrets along that way
/// without holding them; nor is the start of a structure (`{`, `[`, a YAML `|`).
fn value_span(s: &[u8], v: usize, mode: Mode) -> Option<(usize, usize)> {
    let quote = quote_at(s, v);
    let (start, end) = match quote {
        Some(q) => {
            let start = v + q.len();
            (start, closing(s, start, q))
        }
        None => {
            let stop = |b: u8| {
                b.is_ascii_whitespace()
                    || is_quote(b)
                    || matches!(b, b'&' | b';' | b'<')
                    || (mode != Mode::Flag && matches!(b, b',' | b')' | b']' | b'}'))
            };
            (v, run(s, v, |b| !stop(b)))
        }
    };
    let value = &s[start..end];
    let reference = value.first() == Some(&b'$')
        && value.len() > 1
        && value[1..].iter().all(|&b| is_word(b) || b == b'{' || b == b'}');
    // Already redacted, maybe around a token's prefix (`sk-[REDACTED]`): a bare value stops at
    // the mark's `]`.
    let marked = find(&s[start..s.len().min(end + 1)], b"[REDACTED").is_some();
    if start >= end || marked || reference {
        return None;
    }
    if quote.is_none() {
        if matches!(value[0], b'{' | b'[' | b'|' | b'>' | b'(') {
            return None;
        }
        if mode != Mode::Flag {
            let word = ["true", "false", "null", "none", "nil", "undefined", "yes", "no"]
                .iter()
                .any(|w| value.eq_ignore_ascii_case(w.as_bytes()));
            let number = value.len() <= 4 && value.iter().all(u8::is_ascii_digit);
            let address =
                value.len() > 2 && value.starts_with(b"0x") && value[2..].iter().all(|&b| is_hex(b));
            if word || number || address {
                return None;
            }
        }
        if mode == Mode::Spaced {
            // The rest of the line: nothing, a comment, a closing quote or tag.
            let rest = &s[run(s, end, is_blank)..];
            let rest_blank =
                matches!(rest.first(), None | Some(b'\n' | b'\r' | b'#' | b'<' | b'"' | b'\'' | b'`'));
            if !rest_blank || value.iter().any(|b| b"()[]{}".contains(b)) {
                return None;
            }
        }
    }
    Some((start, end))
}

/// Query parameters that hold a signature or a credential in a signed URL (Azure SAS, S3 and
/// GCS presigned URLs), after `?` or `&`.
const QUERY_SECRETS: &[&str] = &["sig", "signature", "x-amz-signature", "x-goog-signature"];

/// What a name before a separator says of its value.
enum Kind {
    /// A secret (the value as [`value_span`] reads it), with the label.
    Secret(&'static str),
    /// A header whose whole value is secret, to the end of the line or a quote.
    Header(&'static str),
}

/// The separator at `i` (`=` or `:`) after a secret-named name: `HF_TOKEN=…`, `--api-key=…`,
/// `?access_token=…`, `api_key: …` (YAML), `"token": "…"` (JSON), `'secret': '…'` (a Python
/// dict), `os.environ["HF_TOKEN"] = "…"`, `aws_secret_access_key = …` (INI), cuda-gdb's
/// `password = 0x… "hunter2"`, `X-Api-Key: …`, `Authorization: …` and `Cookie: …` (to the
/// end of the line), `;AccountKey=…;` and `;Pwd=…;` (connection strings), `&sig=…` (signed
/// URLs). Returns where a header's value ends.
fn name_value(s: &[u8], i: usize, spans: &mut Vec<Span>) -> Option<usize> {
    let equals = s[i] == b'=';
    let mut j = i;
    if equals
        && j > 0
        && matches!(s[j - 1], b'!' | b'<' | b'>' | b'+' | b'*' | b'/' | b'%' | b'|' | b'^' | b'~')
    {
        return None;
    }
    if equals && j > 1 && s[j - 1] == b'-' && is_blank(s[j - 2]) {
        return None;
    }
    if equals && j > 0 && s[j - 1] == b':' {
        j -= 1;
    }
    let before_blanks = j;
    while j > 0 && is_blank(s[j - 1]) && before_blanks - j < 4 {
        j -= 1;
    }
    let spaced = j < before_blanks;
    let bracket = j > 0 && s[j - 1] == b']';
    if bracket {
        j -= 1;
    }
    let quote = quote_before(s, j);
    match quote {
        Some(q) => j -= q.len(),
        None if bracket => return None,
        None => {}
    }
    let name_end = j;
    let name_start = back(s, name_end, is_name_byte, 128)?;
    if name_start == name_end || (!equals && spaced && quote.is_none()) {
        return None;
    }
    let mut left = name_start;
    if let Some(q) = quote {
        if quote_before(s, left) != Some(q) {
            return None;
        }
        left -= q.len();
    }
    if bracket && (left == 0 || s[left - 1] != b'[') {
        return None;
    }
    let name = &s[name_start..name_end];
    let kind = name_kind(s, left, name, equals)?;
    let mut v = run(s, i + 1, is_blank);
    let value_spaced = v > i + 1;
    if !equals && !value_spaced && file_position(name, &s[v..]) {
        // `unknown-key.yaml:3:1:`, `secret_key.rs:42:5: warning`: a file name and a position,
        // which a compiler or a parser prints; no secret.
        return None;
    }
    // cuda-gdb prints a `char *` as its address and its string: `password = 0x5555… "hunter2"`.
    if s[v..].starts_with(b"0x") {
        let h = run(s, v + 2, is_hex);
        if h > v + 2 && s.get(h) == Some(&b' ') && quote_at(s, h + 1).is_some() {
            v = h + 1;
        }
    }
    match kind {
        Kind::Header(label) => return Some(header_value(s, v, label, spans)),
        Kind::Secret(label) => {
            let mode = if equals && (spaced || value_spaced) {
                if quote_at(s, v).is_some() {
                    Mode::Loose
                } else {
                    Mode::Spaced
                }
            } else if equals {
                Mode::Flag
            } else {
                Mode::Loose
            };
            if let Some((start, end)) = value_span(s, v, mode) {
                // After a `:` a token whose prefix says what it is keeps it: `key: sk-[REDACTED]`
                // (`NAME=value` takes the whole value, as an environment is redacted).
                if equals || !starts_with_token(s, start) {
                    spans.push((start, end, label));
                }
            }
        }
    }
    None
}

/// Whether `name` followed by `:` and `rest` is a file and a position (`x.yaml:3:1`,
/// `a.rs:42`): a name with an extension, then a line number, a column or not, and the end of
/// the token.
fn file_position(name: &[u8], rest: &[u8]) -> bool {
    let extension = name.iter().rposition(|&b| b == b'.').is_some_and(|d| {
        let ext = &name[d + 1..];
        (1..=8).contains(&ext.len()) && ext.iter().all(u8::is_ascii_alphanumeric) && d > 0
    });
    if !extension {
        return false;
    }
    let line = run(rest, 0, |b| b.is_ascii_digit());
    if line == 0 || line > 9 {
        return false;
    }
    let mut k = line;
    if rest.get(k) == Some(&b':') {
        let col = run(rest, k + 1, |b| b.is_ascii_digit());
        if col > k + 1 && col - k - 1 <= 9 {
            k = col;
        }
    }
    rest.get(k).is_none_or(|&b| b == b':' || b.is_ascii_whitespace() || b == b',' || b == b')')
}

/// Whether a token that a prefix scanner redacts (keeping its prefix) starts at `i`.
fn starts_with_token(s: &[u8], i: usize) -> bool {
    let mut found = Vec::new();
    for t in TOKENS.iter().filter(|t| s[i..].starts_with(t.prefix)) {
        if token(s, i, t, &mut found).is_some_and(|(_, taken)| taken) {
            return true;
        }
    }
    if s[i..].starts_with(b"eyJ") {
        jwt(s, i, &mut found);
    }
    if s[i..].starts_with(b"A") {
        capitals(&s[i..s.len().min(i + 128)], &mut found);
        found.retain(|&(start, _, _)| start == 4);
    }
    !found.is_empty()
}

fn name_kind(s: &[u8], left: usize, name: &[u8], equals: bool) -> Option<Kind> {
    let label = if equals { "secret-named assignment" } else { "secret-named key" };
    let before = left.checked_sub(1).map(|k| s[k]);
    if maybe_secret_name(name) {
        let last = name.rsplit(|b| !b.is_ascii_alphanumeric()).find(|p| !p.is_empty()).unwrap_or(b"");
        if name.eq_ignore_ascii_case(b"cookie") || name.eq_ignore_ascii_case(b"set-cookie") {
            return Some(Kind::Header("Cookie header"));
        }
        if starts_ci(last, b"AUTHORIZ") {
            return Some(Kind::Header("Authorization header"));
        }
        if secret_name_bytes(name) {
            return Some(Kind::Secret(label));
        }
    }
    let query = equals
        && matches!(before, Some(b'?' | b'&'))
        && QUERY_SECRETS.iter().any(|q| name.eq_ignore_ascii_case(q.as_bytes()));
    let connection = equals && before == Some(b';') && name.eq_ignore_ascii_case(b"pwd");
    (query || connection).then_some(Kind::Secret(label))
}

/// A header's value, to the end of the line, a quote or a tag (`Authorization: Basic …`,
/// `Cookie: a=b; c=d`); where it ends.
fn header_value(s: &[u8], v: usize, label: &'static str, spans: &mut Vec<Span>) -> usize {
    let quoted = quote_at(s, v);
    let start = v + quoted.map_or(0, Quote::len);
    let mut end = match quoted {
        Some(q) => closing(s, start, q),
        None => run(s, start, |b| !is_quote(b) && b != b'\n' && b != b'<'),
    };
    while end > start && s[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    if start < end && &s[start..end] != MARK.as_bytes() {
        spans.push((start, end, label));
    }
    end
}

/// Hits of `A` and `J`: AWS access key ids (`AKIA`, `ASIA`, `ABIA`, `ACCA` and 16 capitals
/// or digits), Google API keys (`AIza` and 35 more), JWTs (`eyJ…`, two or three dot-separated
/// base64url parts, the second one `ey…` too).
fn capitals(s: &[u8], spans: &mut Vec<Span>) {
    // As in [`punctuation`]: a run scanned once (`-eyJ-eyJ-…`, `-AIza-AIza-…`).
    let (mut jwt_scanned, mut aiza_scanned, mut aws_scanned) = (0, 0, 0);
    for i in memchr::memchr2_iter(b'A', b'J', s) {
        if s[i] == b'J' {
            if i >= 2 && s[i - 2] == b'e' && s[i - 1] == b'y' && i - 2 >= jwt_scanned {
                jwt_scanned = jwt(s, i - 2, spans);
            }
            continue;
        }
        let Some(four) = s.get(i..i + 4) else { continue };
        if matches!(four, b"AKIA" | b"ASIA" | b"ABIA" | b"ACCA") && i >= aws_scanned {
            let start = i + 4;
            let end = run(s, start, |b| b.is_ascii_uppercase() || b.is_ascii_digit());
            aws_scanned = end;
            if end - start == 16 && left_ok_word(s, i) && (end == s.len() || !is_word(s[end])) {
                spans.push((start, end, "AWS access key id"));
            }
        } else if four == b"AIza" && i + 4 >= aiza_scanned && left_ok(s, i) {
            let end = run(s, i + 4, is_word_dash);
            if end - (i + 4) >= 35 {
                spans.push((i + 4, end, "Google API key"));
            }
            aiza_scanned = end;
        }
    }
}

/// A JWT starting at `i` (`eyJ`): everything after its `eyJ`. Returns where its header's run
/// ends.
fn jwt(s: &[u8], i: usize, spans: &mut Vec<Span>) -> usize {
    if !left_ok(s, i) {
        return i + 1;
    }
    let header = run(s, i, is_word_dash);
    if header - i < 10 || s.get(header) != Some(&b'.') || !s[header + 1..].starts_with(b"ey") {
        return header;
    }
    let payload = run(s, header + 1, is_word_dash);
    if payload - header - 1 < 10 {
        return header;
    }
    let mut end = payload;
    if s.get(end) == Some(&b'.') {
        end = run(s, end + 1, |b| is_word_dash(b) || b == b'=');
    }
    spans.push((i + 3, end, "JWT"));
    header
}

/// `Bearer TOKEN` (a token of at least 8 bytes), case-insensitively, wherever it is.
fn bearer(s: &[u8], spans: &mut Vec<Span>) {
    for i in memchr::memchr2_iter(b'b', b'B', s) {
        if !starts_ci(&s[i..], b"bearer") || !left_ok(s, i) {
            continue;
        }
        let after = i + 6;
        if after < s.len() && is_blank(s[after]) {
            let start = run(s, after, is_blank);
            let end = run(s, start, |b| !b.is_ascii_whitespace() && !is_quote(b) && b != b'<');
            if end - start >= 8 && &s[start..end] != MARK.as_bytes() {
                spans.push((start, end, "bearer token"));
            }
        }
    }
}

/// `.netrc`: `machine HOST login USER password SECRET`, or `password SECRET` alone on its line.
fn netrc(s: &[u8], spans: &mut Vec<Span>) {
    static PASSWORD: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"password"));
    for i in PASSWORD.find_iter(s) {
        if i > 0 && !s[i - 1].is_ascii_whitespace() {
            continue;
        }
        let after = i + 8;
        if !s.get(after).is_some_and(|&b| is_blank(b)) {
            continue;
        }
        let v = run(s, after, is_blank);
        let end = run(s, v, |b| !b.is_ascii_whitespace());
        if v == end || &s[v..end] == MARK.as_bytes() || s[v] == b'$' {
            continue;
        }
        let line_start = memchr::memrchr(b'\n', &s[i.saturating_sub(512)..i])
            .map_or(i.saturating_sub(512), |k| i.saturating_sub(512) + k + 1);
        let before = &s[line_start..i];
        let alone = before.iter().all(|b| b.is_ascii_whitespace())
            && s[end..].iter().take_while(|&&b| b != b'\n').all(|b| b.is_ascii_whitespace());
        let netrc = find(before, b"machine ").is_some()
            || find(before, b"login ").is_some()
            || find(before, b"default ").is_some();
        if alone || netrc {
            spans.push((v, end, ".netrc password"));
        }
    }
}

/// Lines that are base64 key material (the body of a PEM private key, printed without its
/// header in view): at the end of a line (or alone on it, when shorter than 40), 16 to 128
/// bytes of base64 that looks random ([`random_enough`]). A hex digest has no uppercase, a
/// UUID and a mangled name have `-` or `_`.
fn key_lines(s: &[u8], spans: &mut Vec<Span>) {
    let mut check = |end: usize| {
        let mut e = end;
        while e > 0 && matches!(s[e - 1], b'\r' | b' ' | b'\t') {
            e -= 1;
        }
        let mut k = e;
        while k > 0 && s[k - 1] == b'=' && e - k < 2 {
            k -= 1;
        }
        let Some(start) = back(s, k, is_b64, 128) else { return };
        let len = e - start;
        if len < 16 || start == k {
            return;
        }
        let body = &s[start..k];
        // A path alone on its line (`/opt/Qt5/lib/QtCore5`) changes case rarely.
        if !random_enough(body, if len >= 40 || body[0] == b'/' { 3 } else { 1 }) {
            return;
        }
        let alone = match back(s, start, is_blank, 64) {
            Some(ls) => ls == 0 || s[ls - 1] == b'\n',
            None => false,
        };
        let own_word = start == 0 || s[start - 1].is_ascii_whitespace();
        if alone || (len >= 40 && own_word) {
            spans.push((start, e, PEM));
        }
    };
    for i in memchr::memchr_iter(b'\n', s) {
        check(i);
    }
    if s.last() != Some(&b'\n') {
        check(s.len());
    }
}

/// Whether base64 looks random rather than like words or a path (`/home/Alex/Miniconda3/bin`):
/// upper- and lowercase letters and digits, and at least `changes` lowercase letters followed
/// by an uppercase one (random base64 has one every six bytes or so).
fn random_enough(body: &[u8], changes: usize) -> bool {
    let (mut upper, mut lower, mut digit, mut n) = (false, false, false, 0);
    let mut prev = 0u8;
    for &b in body {
        upper |= b.is_ascii_uppercase();
        lower |= b.is_ascii_lowercase();
        digit |= b.is_ascii_digit();
        n += usize::from(prev.is_ascii_lowercase() && b.is_ascii_uppercase());
        prev = b;
    }
    upper && lower && digit && n >= changes
}

/// XML elements named as secrets, on one line: `<password>hunter2</password>`,
/// `<ApiKey type="x">…</ApiKey>` (a Maven `settings.xml`, a NuGet config), also escaped as
/// compute-sanitizer's XML report quotes what a program printed (`&lt;password&gt;…`): the
/// text between the opening and the closing tag. Found by the closing tag, whose name
/// [`secret_name`] judges; the opening tag of the same name must be on the line before it.
fn xml_elements(s: &[u8], spans: &mut Vec<Span>) {
    static CLOSE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"</"));
    static CLOSE_ESCAPED: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"&lt;/"));
    let forms: [(&Finder<'static>, &[u8], &[u8]); 2] =
        [(&CLOSE, b"<", b">"), (&CLOSE_ESCAPED, b"&lt;", b"&gt;")];
    for (close, lt, gt) in forms {
        for i in close.find_iter(s) {
            let name_start = i + lt.len() + 1;
            let name_end = run(s, name_start, is_name_byte);
            let name = &s[name_start..name_end];
            if name.is_empty() || !s[name_end..].starts_with(gt) || !secret_name_bytes(name) {
                continue;
            }
            let from = i.saturating_sub(64 * 1024);
            let line_start = memchr::memrchr(b'\n', &s[from..i]).map_or(from, |k| from + k + 1);
            // The last `<name>` or `<name …>` before the closing tag.
            let open = memchr::memrchr_iter(lt[0], &s[line_start..i]).map(|k| line_start + k).find(|&o| {
                let n = o + lt.len();
                s[o..].starts_with(lt)
                    && s[n..].starts_with(name)
                    && (s[n + name.len()..].starts_with(gt)
                        || matches!(s.get(n + name.len()), Some(b' ' | b'\t')))
            });
            let Some(open) = open else { continue };
            let Some(content) = find(&s[open..i], gt).map(|k| open + k + gt.len()) else { continue };
            if s[..content - gt.len()].ends_with(b"/") {
                continue; // `<password/>`: empty
            }
            let (a, b) = trim(&s[content..i]);
            let (start, end) = (content + a, content + b);
            if start < end && &s[start..end] != MARK.as_bytes() && s[start] != b'$' {
                spans.push((start, end, "secret-named XML element"));
            }
        }
    }
}

/// The values [`remember`]ed for this process.
fn remembered(s: &[u8], spans: &mut Vec<Span>) {
    let Some(known) = REMEMBERED.get() else { return };
    for f in known {
        let n = f.needle().len();
        spans.extend(f.find_iter(s).map(|i| (i, i + n, KNOWN)));
    }
}

/// An invocation as a bundle may record it: arguments and variables redacted, each
/// redaction reported at `place`; a value redacted by name in one (`--password X`, `DB_PASSWORD=X`)
/// is redacted in the others. Running it is not the same.
pub fn invocation(inv: &Invocation, place: &str, out: &mut Vec<Redaction>) -> Invocation {
    let mut learned = Vec::new();
    let mut argv = redact_args_learning(&inv.argv, place, out, &mut learned);
    let mut env_set = redact_env_learning(&inv.env_set, place, out, &mut learned);
    let mut strings: Vec<&mut String> = argv.iter_mut().collect();
    strings.extend(env_set.iter_mut().map(|(_, v)| v));
    spread(&mut strings, &learned, place, out);
    Invocation {
        argv,
        cwd: inv.cwd.clone(),
        env_set,
        env_remove: inv.env_remove.clone(),
        timeout: inv.timeout,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        for line in
            ["api_key:Zq8vN2xLw4Rt6Yp0Bc3D", "password: hunter2hunter2", "secret_key.rs: hunter2hunter2"]
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
        let vars = vec![(
            "ghp_Zq8vN2xLw4Rt6Yp0Bc3Dk5Fm7Hj9Gs1AeQ0u_TOKEN".to_string(),
            "s3cr3t-value-1".to_string(),
        )];
        let _ = redact_env(&vars, "env", &mut out);
        assert!(out.iter().all(|r| !r.what.contains("Zq8vN2")), "{out:?}");
        assert_eq!(record_name("HF_TOKEN", "x"), "HF_TOKEN");
        assert_eq!(record_name("--hf-token", "x"), "--hf-token");
    }
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

    /// The fragments of the new shapes too, and lines.
    fn more_fragments() -> Vec<String> {
        let mut v = fragments();
        v.extend(
            [
                "xoxb-",
                "glpat-",
                "sk_live_",
                "sk-ant-",
                "npm_",
                "pypi-AgE",
                "AIza",
                "eyJ",
                "eyJhbGciOi",
                ".",
                "nvapi-",
                "ya29.",
                "SG.",
                "-----BEGIN ",
                "RSA ",
                "PRIVATE KEY-----",
                "-----END ",
                "MIIEow",
                "Zx9qAbC3dEf5GhI7",
                "\\n",
                "password",
                "password ",
                "machine ",
                "login ",
                "-p ",
                "-u ",
                "--user ",
                "bob:",
                " = ",
                "0x5555 ",
                "Cookie",
                "Set-Cookie",
                "X-Api-Key",
                "AccountKey",
                ";",
                "Pwd",
                "?sig",
                "&quot;",
                "&apos;",
                "\x1b[31m",
                "\x1b[0m",
                "{",
                "}",
                "(",
                ")",
                ",",
                "mkdir",
                "<",
                ">",
                "\n",
                "\r",
            ]
            .iter()
            .map(|s| s.to_string()),
        );
        v
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

    // Shapes from gitleaks' and trufflehog's rules: each planted value is gone, what says what
    // it was stays, and a near miss beside it is kept as it was.

    /// Deterministic base64 of `n` pseudo-random bytes (a fake key body, made at run time).
    fn fake_b64(n: usize, seed: u64) -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let mut bytes = Vec::with_capacity(n);
        for _ in 0..n {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            bytes.push((x >> 33) as u8);
        }
        let mut out = String::new();
        for c in bytes.chunks(3) {
            let v = (u32::from(c[0]) << 16)
                | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
                | u32::from(*c.get(2).unwrap_or(&0));
            for k in 0..4 {
                if k <= c.len() {
                    out.push(A[(v >> (18 - 6 * k) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    /// A fake PEM private key: header, 64-column body, footer.
    fn fake_pem(label: &str, seed: u64) -> (String, Vec<String>) {
        let body = fake_b64(1190, seed);
        let lines: Vec<String> =
            body.as_bytes().chunks(64).map(|c| String::from_utf8(c.to_vec()).unwrap()).collect();
        let key = format!(
            "-----BEGIN {label}PRIVATE KEY-----\n{}\n-----END {label}PRIVATE KEY-----\n",
            lines.join("\n")
        );
        (key, lines)
    }

    fn assert_gone(got: &str, secret: &str) {
        assert!(!got.contains(secret), "`{secret}` still in:\n{got}");
    }

    /// `line` with `secret` in it is redacted to `want`; `near` is kept whole.
    fn shape(line: &str, secret: &str, want: &str, near: &str) {
        let got = red(line);
        assert_gone(&got, secret);
        assert_eq!(got, want, "{line}");
        assert_eq!(red(&got), got, "twice is once: {line}");
        let mut marks = Vec::new();
        candidates(line.as_bytes(), &mut marks);
        assert!(!marks.is_empty(), "no candidate in {line}");
        assert_eq!(red(near), near, "near miss changed");
    }

    #[test]
    fn pem_private_key_blocks_are_redacted_line_by_line() {
        for label in ["", "RSA ", "EC ", "OPENSSH ", "ENCRYPTED "] {
            let (key, lines) = fake_pem(label, label.len() as u64 + 7);
            let text = format!("loading the key\n{key}done\n");
            let mut out = Vec::new();
            let got = redact_text(&text, "log", &mut out);
            for l in &lines {
                assert_gone(&got, l);
            }
            assert!(got.contains(&format!("-----BEGIN {label}PRIVATE KEY-----\n[REDACTED]\n")), "{got}");
            assert!(got.ends_with(&format!("[REDACTED]\n-----END {label}PRIVATE KEY-----\ndone\n")), "{got}");
            assert_eq!(got.lines().count(), text.lines().count());
            assert!(out.iter().all(|r| r.what == "PEM private key"), "{out:?}");
            assert_eq!(redact_text(&got, "log", &mut Vec::new()), got);
        }
        // A header with a value, as a PGP armour and an encrypted PEM key have.
        let body = fake_b64(300, 3);
        let text = format!(
            "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0A1B2C3D\n\n{}\n{}\n-----END RSA PRIVATE KEY-----\n",
            &body[..64],
            &body[64..100]
        );
        let got = redact_text(&text, "log", &mut Vec::new());
        assert_gone(&got, &body[..64]);
        assert_gone(&got, &body[64..100]);
        assert_gone(&got, "0A1B2C3D");
        // Near misses: a header named in prose, a public key's header with nothing after it,
        // a certificate request line.
        for line in [
            "PEM files start with -----BEGIN and a label",
            "-----BEGIN PUBLIC KEY-----",
            "-----END PRIVATE KEY-----",
            "grep -c -- '-----BEGIN' certs.pem",
        ] {
            assert_eq!(red(line), line);
        }
    }

    #[test]
    fn pem_lines_are_caught_one_at_a_time_too() {
        // As `process` redacts a stream without a `Lines`: every full body line and a last line
        // of 16 or more bytes, each alone.
        let (_, lines) = fake_pem("", 11);
        for l in &lines[..lines.len() - 1] {
            assert_eq!(red(l), MARK, "{l}");
            assert_eq!(red(&format!("  {l}  ")), format!("  {MARK}  "));
            assert_eq!(red(&format!("[rank0]: {l}")), format!("[rank0]: {MARK}"));
        }
        let last = lines.last().unwrap();
        assert!(last.len() >= 16);
        assert_eq!(red(last), MARK, "{last}");
        // Near misses: digests, UUIDs, mangled names, paths, words.
        for line in [
            "3f3d217c0a9e8b2d4c6f1e0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c",
            "GPU-5b6c2f8e-1a2b-4c3d-9e8f-0a1b2c3d4e5f",
            "_Z11scatter_farPiiS_",
            "/home/Alex/Miniconda3/envs/Torch2/lib/python3.12/site-packages",
            "    /opt/Qt5/lib/QtCore5/Foo2Bar",
            "CUDA_ERROR_ILLEGAL_ADDRESS",
            "cudaErrorIllegalAddress",
            "MyKernel2",
            "0000:19:00.0",
            "ABCDEFGHIJKLMNOP",
            "aaaaaaaaaaaaaaaaaaaaaaaa1",
        ] {
            assert_eq!(red(line), line);
        }
    }

    #[test]
    fn lines_follow_a_block_that_candidates_would_skip() {
        // What `process` needs: the header line is a candidate (it opens the block), and while
        // `in_block` every line goes through the same `Lines`, whatever its length.
        let body = fake_b64(200, 5);
        let short_last = &body[..12];
        let header = "-----BEGIN OPENSSH PRIVATE KEY-----";
        let mut marks = Vec::new();
        candidates(header.as_bytes(), &mut marks);
        assert_eq!(marks, [0]);
        let mut lines = Lines::new();
        assert!(!lines.in_block());
        assert_eq!(lines.line(header).0, header);
        assert!(lines.in_block());
        assert_eq!(lines.line(&body[..70]).0, MARK);
        assert_eq!(lines.line(short_last).0, MARK);
        assert!(lines.in_block());
        assert_eq!(lines.line("-----END OPENSSH PRIVATE KEY-----").0, "-----END OPENSSH PRIVATE KEY-----");
        assert!(!lines.in_block());
        assert_eq!(lines.line("plain text after it").0, "plain text after it");
        // A block that turns into prose ends there.
        let mut lines = Lines::new();
        lines.line(header);
        assert_eq!(lines.line("Traceback (most recent call last):").0, "Traceback (most recent call last):");
        assert!(!lines.in_block());
    }

    #[test]
    fn pem_keys_escaped_in_json_on_one_line() {
        let (key, lines) = fake_pem("", 21);
        let escaped = key.replace('\n', "\\n");
        let sa = format!(
            "{{\"type\": \"service_account\", \"project_id\": \"p\", \"private_key_id\": \"0a1b2c\", \"private_key\": \"{escaped}\", \"client_email\": \"x@p.iam.gserviceaccount.com\"}}"
        );
        let got = red(&sa);
        for l in &lines {
            assert_gone(&got, l);
        }
        assert!(got.contains("\"private_key\": \"[REDACTED]\""), "{got}");
        assert!(got.contains("\"private_key_id\": \"0a1b2c\""), "{got}");
        // The same key under a name that says nothing: the PEM shape alone.
        let got = red(&format!("{{\"blob\": \"{escaped}\"}}"));
        assert_eq!(got, "{\"blob\": \"-----BEGIN PRIVATE KEY-----[REDACTED]-----END PRIVATE KEY-----\\n\"}");
        // Pretty-printed, one key per line.
        let pretty = format!("{{\n  \"type\": \"service_account\",\n  \"private_key\": \"{escaped}\",\n  \"client_id\": \"123\"\n}}\n");
        let got = redact_text(&pretty, "f", &mut Vec::new());
        for l in &lines {
            assert_gone(&got, l);
        }
        assert!(got.contains("\"client_id\": \"123\""));
    }

    #[test]
    fn jwts() {
        let jwt = format!(
            "eyJhbGciOiJIUzI1NiJ9.eyJ{}.{}",
            "zdWIiOiIxMjM0NTY3ODkwIn0".repeat(2),
            "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
        );
        shape(
            &format!("Authorization token={jwt} expired"),
            &jwt[3..],
            "Authorization token=[REDACTED] expired",
            "eyJhbGciOiJIUzI1NiJ9 alone, eyJ.short.x",
        );
        shape(&format!("jwt {jwt}"), &jwt[3..], "jwt eyJ[REDACTED]", "heyJude.eyJ is a word");
    }

    #[test]
    fn prefixed_tokens_keep_their_prefix() {
        let body = |n: usize| "aB3dE5gH7jK9mN1pQ2".repeat(8)[..n].to_string();
        let hex = |n: usize| "0a1b2c3d4e5f6789".repeat(8)[..n].to_string();
        let cases: Vec<(String, &str)> = vec![
            (format!("xoxb-{}-{}", "1234567890", body(24)), "xoxb-"),
            (format!("xoxp-{}", body(40)), "xoxp-"),
            (format!("xapp-1-{}", body(30)), "xapp-"),
            (format!("glpat-{}", body(20)), "glpat-"),
            (format!("gldt-{}", body(20)), "gldt-"),
            (format!("gho_{}", body(36)), "gho_"),
            (format!("ghu_{}", body(36)), "ghu_"),
            (format!("ghr_{}", body(36)), "ghr_"),
            (format!("sk_live_{}", body(24)), "sk_live_"),
            (format!("rk_live_{}", body(24)), "rk_live_"),
            (format!("sk_test_{}", body(24)), "sk_test_"),
            (format!("whsec_{}", body(32)), "whsec_"),
            (format!("sk-ant-api03-{}", body(60)), "sk-ant-"),
            (format!("npm_{}", body(36)), "npm_"),
            (format!("pypi-AgEIcHlwaS5vcmc{}", body(60)), "pypi-AgE"),
            (format!("AIza{}", body(35)), "AIza"),
            (format!("ya29.{}", body(40)), "ya29."),
            (format!("GOCSPX-{}", body(28)), "GOCSPX-"),
            (format!("nvapi-{}", body(64)), "nvapi-"),
            (format!("dckr_pat_{}", body(27)), "dckr_pat_"),
            (format!("gsk_{}", body(52)), "gsk_"),
            (format!("r8_{}", body(37)), "r8_"),
            (format!("xai-{}", body(80)), "xai-"),
            (format!("hvs.{}", body(90)), "hvs."),
            (format!("SG.{}.{}", body(22), body(43)), "SG."),
            (format!("dop_v1_{}", hex(64)), "dop_v1_"),
            (format!("shpat_{}", hex(32)), "shpat_"),
            (format!("glc_{}", body(40)), "glc_"),
            (format!("lin_api_{}", body(40)), "lin_api_"),
            (format!("api_org_{}", body(34)), "api_org_"),
            (format!("ABIA{}", "EXAMPLE0".repeat(2)), "ABIA"),
        ];
        for (secret, prefix) in &cases {
            let line = format!("got {secret} from the vault");
            let want = format!("got {prefix}[REDACTED] from the vault");
            shape(&line, &secret[prefix.len()..], &want, &format!("got {prefix}short from the vault"));
            // Right after a terminal colour, and quoted.
            let got = red(&format!("\x1b[31m{secret}\x1b[0m '{secret}'"));
            assert_eq!(got, format!("\x1b[31m{prefix}[REDACTED]\x1b[0m '{prefix}[REDACTED]'"));
        }
        // Near misses that share a prefix.
        for line in [
            "npm_config_cache=/tmp/npm npm_install",
            "pk_live_abcdefghijklmnop is publishable",
            "pypi-simple-index-mirror-of-the-python-package-index-for-the-lab",
            "AIzaShort",
            "a task-sk-learn-run1 and hf_hub_download",
            "triton_poi_fused_add_0 _PyEval_EvalFrameDefault glsa_x",
            "ya29.short hvs.short SG.a.b",
        ] {
            assert_eq!(red(line), line);
        }
    }

    #[test]
    fn tokens_after_a_terminal_colour() {
        let f = fakes();
        for (line, want) in [
            (format!("\x1b[31m{}\x1b[0m", f.ghp), "\x1b[31mghp_[REDACTED]\x1b[0m"),
            (format!("\x1b[1;33m{}", f.hf), "\x1b[1;33mhf_[REDACTED]"),
            (format!("\x1b[32m{}\x1b[m", f.akia), "\x1b[32mAKIA[REDACTED]\x1b[m"),
            (format!("\x1b[0mHF_TOKEN={}", f.plain), "\x1b[0mHF_TOKEN=[REDACTED]"),
        ] {
            assert_eq!(red(&line), want);
        }
        // Not an escape: a word that ends in `m` before the prefix.
        assert_eq!(red(&format!("xm{}", f.ghp)), format!("xm{}", f.ghp));
        assert_eq!(red("\x1b[31mERROR\x1b[0m: CUDA error"), "\x1b[31mERROR\x1b[0m: CUDA error");
    }

    #[test]
    fn aws_keys() {
        let f = fakes();
        let secret = format!("wJalrXUtnFEMI/K7MDENG/{}", "bPxRfiCY".repeat(2));
        for (line, want) in [
            (format!("aws_secret_access_key = {secret}"), "aws_secret_access_key = [REDACTED]".to_string()),
            (format!("aws_secret_access_key={secret}"), "aws_secret_access_key=[REDACTED]".to_string()),
            (format!("AWS_SECRET_ACCESS_KEY: {secret}"), "AWS_SECRET_ACCESS_KEY: [REDACTED]".to_string()),
            (
                format!("\"SecretAccessKey\": \"{secret}\","),
                "\"SecretAccessKey\": \"[REDACTED]\",".to_string(),
            ),
            (format!("aws_access_key_id = {}", f.akia), "aws_access_key_id = AKIA[REDACTED]".to_string()),
        ] {
            assert_eq!(red(&line), want, "{line}");
        }
        assert_eq!(
            red("aws_access_key_id = none, region = us-east-1"),
            "aws_access_key_id = none, region = us-east-1"
        );
    }

    #[test]
    fn connection_strings() {
        let key = format!("{}==", "Eby8vdM02x+NOcq/Flq".repeat(4));
        shape(
            &format!("DefaultEndpointsProtocol=https;AccountName=devstore;AccountKey={key};EndpointSuffix=core.windows.net"),
            &key,
            "DefaultEndpointsProtocol=https;AccountName=devstore;AccountKey=[REDACTED];EndpointSuffix=core.windows.net",
            "DefaultEndpointsProtocol=https;AccountName=devstore;EndpointSuffix=core.windows.net",
        );
        shape(
            "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=k3y+Val/ue=",
            "k3y+Val/ue=",
            "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=[REDACTED]",
            "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root",
        );
        shape(
            "Server=db;Database=x;Uid=sa;Pwd=S3cret!x;",
            "S3cret!x",
            "Server=db;Database=x;Uid=sa;Pwd=[REDACTED];",
            "PWD=/home/u/src OLDPWD=/tmp",
        );
        shape(
            "postgresql://admin:S3cretPw@db.example.com:5432/app",
            "S3cretPw",
            "postgresql://admin:[REDACTED]@db.example.com:5432/app",
            "postgresql://db.example.com:5432/app",
        );
        shape(
            "redis://:R3disPass@cache:6379/0",
            "R3disPass",
            "redis://:[REDACTED]@cache:6379/0",
            "redis://cache:6379/0",
        );
        shape(
            "GET https://acct.blob.core.windows.net/c/b?sv=2022-11-02&se=2026&sig=AbCd%2Bef123&sp=r",
            "AbCd%2Bef123",
            "GET https://acct.blob.core.windows.net/c/b?sv=2022-11-02&se=2026&sig=[REDACTED]&sp=r",
            "#3 handler (sig=11) at signals.c:42",
        );
    }

    #[test]
    fn http_headers() {
        let f = fakes();
        shape(
            &format!("-H 'Authorization: Basic {}'", f.plain),
            &f.plain,
            "-H 'Authorization: [REDACTED]'",
            "authorization failed for user bob",
        );
        shape(
            &format!("Proxy-Authorization: Bearer {}", f.bearer),
            &f.bearer,
            "Proxy-Authorization: [REDACTED]",
            "no Authorization header was sent",
        );
        shape(
            &format!("X-Api-Key: {}", f.plain),
            &f.plain,
            "X-Api-Key: [REDACTED]",
            "X-Request-Id: 4f1c X-Api-Version: 2",
        );
        shape(
            &format!("headers: {{'x-auth-token': '{}', 'accept': 'json'}}", f.plain),
            &f.plain,
            "headers: {'x-auth-token': '[REDACTED]', 'accept': 'json'}",
            "headers: {'accept': 'json'}",
        );
        shape(
            &format!("Cookie: session={}; theme=dark", f.plain),
            &f.plain,
            "Cookie: [REDACTED]",
            "cookies are enabled; cookie jar at /tmp/c",
        );
        shape(
            &format!("< Set-Cookie: sid={}; Path=/; HttpOnly", f.plain),
            &f.plain,
            "< Set-Cookie: [REDACTED]",
            "< Content-Type: text/html",
        );
        shape(
            &format!("Private-Token: {}", f.plain),
            &f.plain,
            "Private-Token: [REDACTED]",
            "Private-Network-Access: v1",
        );
    }

    #[test]
    fn passwords_after_short_and_long_flags() {
        let f = fakes();
        shape(
            &format!("sshpass -p {} ssh host", f.password),
            &f.password,
            "sshpass -p [REDACTED] ssh host",
            "mkdir -p build && ssh -p 2222 host && docker run -p 8000:8000 img",
        );
        shape(
            &format!("./app --password {} -v", f.password),
            &f.password,
            "./app --password [REDACTED] -v",
            "./app --password-file /run/pw -v",
        );
        shape(
            &format!("curl -u alice:{} https://x", f.password),
            &f.password,
            "curl -u alice:[REDACTED] https://x",
            "docker run -u 1000:1000 img && python -u x.py",
        );
        shape(
            &format!("curl --user alice:{} https://x", f.password),
            &f.password,
            "curl --user alice:[REDACTED] https://x",
            "curl --user alice https://x",
        );
        for line in [
            "cuda-gdb -p PID",
            "git log -p HEAD~2",
            "python -m pytest -p no:cacheprovider tests",
            "cp -p a.txt b.txt",
            "mkdir -p out/dir",
            "tool -p build",
        ] {
            assert_eq!(red(line), line);
        }
        let args: Vec<String> =
            ["target", "-p", &f.password, "--token", &f.plain, "-u", &format!("bob:{}", f.bearer)]
                .map(String::from)
                .to_vec();
        let mut out = Vec::new();
        let got = redact_args(&args, "command", &mut out);
        assert_eq!(got, ["target", "-p", MARK, "--token", MARK, "-u", "bob:[REDACTED]"]);
        let whats: Vec<&str> = out.iter().map(|r| r.what.as_str()).collect();
        assert_eq!(
            whats,
            ["value of -p (by name)", "value of --token (by name)", "password of -u user:password (by name)"]
        );
        for args in [
            ["mkdir", "-p", "build"],
            ["ssh", "-p", "2222"],
            ["docker", "-p", "8000:8000"],
            ["pytest", "-p", "xdist"],
            ["tool", "-p", "/etc/x"],
            ["tool", "-p", "$PASS"],
        ] {
            let args: Vec<String> = args.map(String::from).to_vec();
            assert_eq!(redact_args(&args, "c", &mut Vec::new()), args);
        }
    }

    #[test]
    fn netrc_passwords() {
        let f = fakes();
        shape(
            &format!("machine api.example.com login bob password {}", f.password),
            &f.password,
            "machine api.example.com login bob password [REDACTED]",
            "machine api.example.com login bob",
        );
        let text = format!("machine h\n  login bob\n  password {}\n", f.password);
        let got = redact_text(&text, ".netrc", &mut Vec::new());
        assert_eq!(got, "machine h\n  login bob\n  password [REDACTED]\n");
        for line in ["the password is wrong", "password expired for bob today", "password"] {
            assert_eq!(red(line), line);
        }
    }

    #[test]
    fn secret_named_xml_elements() {
        let f = fakes();
        shape(
            &format!("<server><id>hub</id><password>{}</password></server>", f.password),
            &f.password,
            "<server><id>hub</id><password>[REDACTED]</password></server>",
            "<server><id>hub</id><username>bob</username></server>",
        );
        shape(
            &format!("  <ApiKey kind=\"nuget\"> {} </ApiKey>", f.plain),
            &f.plain,
            "  <ApiKey kind=\"nuget\"> [REDACTED] </ApiKey>",
            "  <KeyboardLayout>us</KeyboardLayout><max_tokens>16</max_tokens>",
        );
        // compute-sanitizer's XML: kernel names and frames are no secrets.
        for line in [
            "<password/>",
            "<password>$DB_PASSWORD</password>",
            "<kernel>token_kernel</kernel><key_cache>0x7f00</key_cache>",
            "<password></password>",
            "&lt;kernel&gt;token_kernel&lt;/kernel&gt;",
        ] {
            assert_eq!(red(line), line);
        }
        shape(
            &format!("    <text>&lt;password&gt;{}&lt;/password&gt;</text>", f.password),
            &f.password,
            "    <text>&lt;password&gt;[REDACTED]&lt;/password&gt;</text>",
            "    <text>&lt;username&gt;bob&lt;/username&gt;</text>",
        );
    }

    #[test]
    fn passwords_attached_to_p_for_the_programs_that_take_them_so() {
        let f = fakes();
        shape(
            &format!("mysql -h db -uroot -p{} -e 'select 1'", f.password),
            &f.password,
            "mysql -h db -uroot -p[REDACTED] -e 'select 1'",
            "nvcc -pthread -pg -o x x.cu",
        );
        shape(
            &format!("sshpass -p{} ssh node1", f.password),
            &f.password,
            "sshpass -p[REDACTED] ssh node1",
            "g++ -pipe -pedantic x.cc",
        );
        shape(
            &format!("DB_CMD=mysql -uroot -p{}", f.password),
            &f.password,
            "DB_CMD=mysql -uroot -p[REDACTED]",
            "CFLAGS=-pthread -pg",
        );
        let args: Vec<String> =
            ["/usr/bin/mysqldump", "-uroot", &format!("-p{}", f.password), "db"].map(String::from).to_vec();
        let mut found = Vec::new();
        let got = redact_args(&args, "c", &mut found);
        assert_eq!(got, ["/usr/bin/mysqldump", "-uroot", "-p[REDACTED]", "db"]);
        assert_eq!(found.len(), 1);
        let compile: Vec<String> = ["nvcc", "-pthread", "-pg", "x.cu"].map(String::from).to_vec();
        assert_eq!(redact_args(&compile, "c", &mut Vec::new()), compile);
    }

    #[test]
    fn secret_named_keys_in_yaml_json_and_python() {
        let f = fakes();
        shape(&format!("api_key: {}", f.plain), &f.plain, "api_key: [REDACTED]", "api_version: 2");
        shape(
            &format!("  client_secret: \"{}\"", f.plain),
            &f.plain,
            "  client_secret: \"[REDACTED]\"",
            "  client_id: \"abc\"",
        );
        shape(
            &format!("{{\"token\": \"{}\", \"max_tokens\": 16}}", f.plain),
            &f.plain,
            "{\"token\": \"[REDACTED]\", \"max_tokens\": 16}",
            "{\"token_type\": \"Bearer\", \"max_tokens\": 16, \"key\": null}",
        );
        shape(
            &format!("{{'secret': '{}', 'n': 3}}", f.plain),
            &f.plain,
            "{'secret': '[REDACTED]', 'n': 3}",
            "{'secret': None, 'secrets': [], 'n': 3}",
        );
        shape(
            &format!("{{password:{} user:bob}}", f.plain),
            &f.plain,
            "{password:[REDACTED] user:bob}",
            "{user:bob}",
        );
        shape(
            &format!("os.environ[\"HF_TOKEN\"] = \"{}\"", f.plain),
            &f.plain,
            "os.environ[\"HF_TOKEN\"] = \"[REDACTED]\"",
            "os.environ[\"HF_HOME\"] = \"/data\"",
        );
        shape(&format!("MY_SECRET={}", f.plain), &f.plain, "MY_SECRET=[REDACTED]", "MY_SETTING=plainvalue");
        shape(
            &format!("&lt;arg&gt;&quot;api_key&quot;: &quot;{}&quot;&lt;/arg&gt;", f.plain),
            &f.plain,
            "&lt;arg&gt;&quot;api_key&quot;: &quot;[REDACTED]&quot;&lt;/arg&gt;",
            "&quot;kernel&quot;: &quot;scale_write&quot;",
        );
        // A token keeps its prefix after `:`; `NAME=` takes the whole value.
        assert_eq!(red(&format!("hf_token: {}", f.hf)), "hf_token: hf_[REDACTED]");
        // Near misses from real logs: counts and ids, comparisons, expressions, C++ scopes.
        for line in [
            "keys: 3",
            "key_cache: torch.Size([2, 16])",
            "num_key_value_heads: 8",
            "if key != 3 and token == other:",
            "    key = torch.randn(3, device='cuda')",
            "    token = tokens[i] if i else None",
            "at::_ops::sum::redispatch(c10::DispatchKeySet, at::Tensor const&)",
            "KeyError: 'weight'",
            "tokenizer: loaded 32000 tokens",
            "bypass: true",
        ] {
            assert_eq!(red(line), line);
        }
    }

    #[test]
    fn cuda_gdb_locals() {
        let f = fakes();
        shape(
            &format!("password = 0x5555555592a0 \"{}\"", f.password),
            &f.password,
            "password = 0x5555555592a0 \"[REDACTED]\"",
            "key = 42",
        );
        shape(
            &format!(
                "$1 = {{user = 0x5555555592c0 \"bob\", api_key = 0x5555555592a0 \"{}\", len = 7}}",
                f.plain
            ),
            &f.plain,
            "$1 = {user = 0x5555555592c0 \"bob\", api_key = 0x5555555592a0 \"[REDACTED]\", len = 7}",
            "$2 = {user = 0x5555555592c0 \"bob\", len = 7}",
        );
        shape(
            &format!("secret = \"{}\", '\\000' <repeats 40 times>", f.plain),
            &f.plain,
            "secret = \"[REDACTED]\", '\\000' <repeats 40 times>",
            "token_count = 3",
        );
        for line in ["key = 0x7ffd4b2c", "token = 0x0", "passwd_len = 12", "auth = true"] {
            assert_eq!(red(line), line);
        }
    }

    #[test]
    fn values_redacted_by_name_are_redacted_elsewhere() {
        let f = fakes();
        // `--set pw=...` that the command passes after `--password`: the variable too.
        let recipe = serde_json::json!({
            "vars": {"pw": f.password, "size": "1024"},
            "run": {"argv": ["./app", "--password", f.password, "--size", "1024"], "env": {"DB": format!("u:{}", f.password)}},
        });
        let mut out = Vec::new();
        let got = redact_json(&recipe, "recipe", &mut out);
        assert_gone(&got.to_string(), &f.password);
        assert_eq!(got["vars"]["size"], "1024");
        assert_eq!(got["vars"]["pw"], MARK);
        assert!(out.iter().any(|r| r.what == "value of --password (by name)"), "{out:?}");
        // An environment variable's value passed on as an argument.
        let inv = Invocation {
            argv: ["app", "--db-pass-file", &f.plain].map(String::from).to_vec(),
            cwd: None,
            env_set: vec![("DB_PASSWORD".into(), f.plain.clone())],
            env_remove: vec![],
            timeout: None,
        };
        let mut out = Vec::new();
        let shown = invocation(&inv, "command", &mut out);
        assert_eq!(shown.argv[2], MARK);
        assert_eq!(shown.env_set[0].1, MARK);
        // What a run remembers: secret-named variables of the environment and of the recipe.
        let values = secret_values(
            [
                ("HF_TOKEN".to_string(), f.hf.clone()),
                ("HOME".to_string(), "/home/u".to_string()),
                ("KEY".to_string(), "1".to_string()),
            ],
            &recipe,
        );
        assert_eq!(values, [f.hf.clone(), f.password.clone()]);
    }

    #[test]
    fn a_token_straddling_a_cut_of_a_long_line_stays_whole() {
        // `process` writes a line longer than it holds (1 MiB) in pieces: cut where
        // `cut_point` says, no piece ends in the middle of a token or after a word that takes
        // the next one.
        let f = fakes();
        let mut line = String::new();
        let mut planted = Vec::new();
        let mut n = 0;
        while line.len() < 3 << 20 {
            let t = format!("ghp_{}{:08}", "Ab9".repeat(10), n % 100_000);
            planted.push(t.clone());
            line.push_str(&format!(
                "{t} Bearer {} --token {} password: {}{n} ",
                f.bearer, f.plain, f.password
            ));
            n += 1;
        }
        let hold = 1 << 20;
        let redact_pieces = |line: &str, cut: &dyn Fn(&[u8]) -> usize| {
            let mut out = String::new();
            let mut rest = line.as_bytes();
            while rest.len() > hold {
                let at = cut(&rest[..hold]);
                assert!(at > 0 && at <= hold);
                out.push_str(&red(std::str::from_utf8(&rest[..at]).unwrap()));
                rest = &rest[at..];
            }
            out.push_str(&red(std::str::from_utf8(rest).unwrap()));
            out
        };
        let got = redact_pieces(&line, &|p| cut_point(p));
        // No piece of any of them: the bodies repeat, so one search each.
        assert_gone(&got, "Ab9Ab9");
        assert_gone(&got, "222222");
        assert_gone(&got, "En5En5");
        assert_gone(&got, "valuevalue");
        assert_eq!(got.matches("ghp_[REDACTED]").count(), planted.len());
        // The cut that `process` makes today, at the hold wherever it falls, splits a token.
        let t = &planted[0];
        let line = format!("{} {t} and more", "x".repeat(hold - 10));
        assert!(redact_pieces(&line, &|p| p.len()).contains(&t[10..]));
        assert!(!redact_pieces(&line, &|p| cut_point(p)).contains(&t[10..]));
        // Without a blank, after the last byte no token holds; else the whole piece.
        assert_eq!(cut_point(b"abc,def"), 4);
        assert_eq!(cut_point(b"abcdef"), 6);
        assert_eq!(cut_point(b"x Bearer "), 2);
    }

    #[test]
    fn hostile_lines_cost_linear_time() {
        // A line of 256 KiB that repeats what a rule looks for: each rule scans a run, a header's
        // value or a key's body once, not once per hit.
        let t = std::time::Instant::now();
        for unit in [
            "sk-",
            "-sk-x",
            "xoxb-",
            "-eyJ",
            "-AIza",
            "Cookie: ",
            "Authorization: ",
            "X-Api-Key: ",
            "password x ",
            "-----BEGIN PRIVATE KEY----- ",
            "a://b:c@",
            "token: '",
            "token: &quot;",
            "key = 0x1 ",
            "-p x1 ",
            "--token ",
            "machine h login u ",
            "Bearer ",
            "eyJ.",
            "ghp_",
            "=",
            "::",
            "\x1b[31m",
            "AKIA",
            "  ",
        ] {
            let line = unit.repeat((256 << 10) / unit.len());
            let one = std::time::Instant::now();
            let once = red(&line);
            assert_eq!(red(&once), once, "{unit}");
            let mut marks = Vec::new();
            candidates(line.as_bytes(), &mut marks);
            assert!(one.elapsed().as_secs() < 20, "`{unit}`: {:?}", one.elapsed());
            let _ = cut_point(line.as_bytes());
        }
        assert!(t.elapsed().as_secs() < 120, "{:?}", t.elapsed());
    }

    #[test]
    fn every_fixture_is_unchanged() {
        // Every recorded text under tests/fixtures (logs, XML, bundles, transcripts), as a log
        // and line by line as `process` would write it.
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
        let mut checked = 0;
        for e in walkdir::WalkDir::new(&root).into_iter().flatten().filter(|e| e.file_type().is_file()) {
            let Ok(text) = std::fs::read_to_string(e.path()) else { continue };
            let mut out = Vec::new();
            assert!(redact_text(&text, "f", &mut out) == text, "{}: {out:?}", e.path().display());
            let mut marks = Vec::new();
            candidates(text.as_bytes(), &mut marks);
            assert!(marks.is_empty(), "{}: a line to redact at {marks:?}", e.path().display());
            checked += 1;
        }
        assert!(checked > 100, "{checked}");
    }
}

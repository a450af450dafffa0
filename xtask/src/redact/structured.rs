//! Redaction of structured values: environments, argument vectors, JSON (the recipe), texts
//! and invocations; a value redacted by name in one place is redacted wherever else it is.
//!
//! Must not: quote a value in a [`Redaction`] (a name that is not a plain one is named by its
//! kind: [`record_name`]).

use super::flags::*;
use super::generic::*;
use super::line::*;
use super::names::*;
use crate::model::Invocation;
use std::borrow::Cow;

/// A name (a variable's, a flag's, a key's) as a redaction record may quote it: as it is when
/// it is a plain name (letters, digits, `_`, `-`, `.`, at most 64 of them), else only what it
/// is, since a "name" that is not one can be the secret itself (`-----BEGIN PRIVATE KEY...`
/// taken for a flag, a key of a JSON object that is a token). A record names the kind and the
/// place, never the text.
pub(super) fn record_name<'a>(name: &'a str, kind: &'a str) -> &'a str {
    let plain = !name.is_empty()
        && name.len() <= 64
        && name.trim_start_matches('-').bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
        && redact_line(name).1.is_empty()
        && !random_token(name.trim_start_matches('-').as_bytes());
    if plain {
        name
    } else {
        kind
    }
}

/// Redacts environment variables: by name ([`secret_name`]: the whole value), then by value
/// ([`redact_value`]). Empty values are kept. One [`Redaction`] at `place` per finding.
pub fn redact_env(vars: &[(String, String)], place: &str, out: &mut Vec<Redaction>) -> Vec<(String, String)> {
    redact_env_learning(vars, place, out, &mut Vec::new())
}

pub(super) fn redact_env_learning(
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

/// What an argument asks of the next one.
pub(super) enum Asks<'a> {
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

pub(super) fn redact_args_learning(
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
        } else if (arg == "-p"
            && ![base_name(last_word), base_name(args.first().map_or("", String::as_str))]
                .iter()
                .any(|w| P_IS_A_SWITCH.contains(w)))
            || (arg == "-a"
                && [base_name(last_word), base_name(args.first().map_or("", String::as_str))]
                    .iter()
                    .any(|w| A_IS_PASSWORD.contains(w)))
        {
            // `-p` unless the program's is a switch; `-a` after `redis-cli`.
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
        // `wandb login KEY`, `vault login TOKEN`: a random-looking word after a login word.
        let after_login = LOGIN_WORDS.iter().any(|w| base_name(last_word).as_bytes() == *w);
        if asked.is_none() && whole && after_login && random_token(arg.as_bytes()) {
            out.push(Redaction {
                place: place.to_string(),
                what: "secret after a login command (by place)".to_string(),
            });
            learned.push(arg.clone());
            got.push(MARK.to_string());
            continue;
        }
        match asked {
            Some(Asks::Secret(flag)) if whole => {
                let flag = record_name(flag, "a secret-named flag");
                out.push(Redaction { place: place.to_string(), what: format!("value of {flag} (by name)") });
                learned.push(arg.clone());
                got.push(MARK.to_string());
                continue;
            }
            Some(Asks::Password)
                if whole
                    && (p_value(arg.as_bytes(), false)
                        || (password_program(args.first().map_or("", String::as_str))
                            && any_password(arg.as_bytes()))) =>
            {
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

/// Whether `program` (a path or a name) takes a password after `-p` or `-a` (`sshpass`,
/// `mysql`, `redis-cli`): what follows is one whatever it reads as.
pub(super) fn password_program(program: &str) -> bool {
    let base = base_name(program);
    P_ATTACHED.contains(&base) || A_IS_PASSWORD.contains(&base)
}

pub(super) fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Replaces, in every string, the values `learned` (redacted by name elsewhere: a `--set`
/// variable that is also a `--password` argument), longest first; one [`Redaction`] per string.
pub(super) fn spread(strings: &mut [&mut String], learned: &[String], place: &str, out: &mut Vec<Redaction>) {
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

pub(super) fn json_strings<'a>(value: &'a mut serde_json::Value, into: &mut Vec<&'a mut String>) {
    use serde_json::Value;
    match value {
        Value::String(s) => into.push(s),
        Value::Array(items) => items.iter_mut().for_each(|v| json_strings(v, into)),
        Value::Object(map) => map.values_mut().for_each(|v| json_strings(v, into)),
        _ => {}
    }
}

pub(super) fn json_learning(
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

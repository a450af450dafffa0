//! What a redaction is ([`Redaction`], [`MARK`]) and which names say secret ([`secret_name`]):
//! a variable's, a flag's, a key's, a header's.
//!
//! Must not: look at values (only names), or build a record that quotes a value.

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

/// The kind of the lines of a PEM private key (and of what a one-line key holds).
pub(super) const PEM: &str = "PEM private key";
/// The kind of a value [`remember`]ed for the run, found again.
pub(super) const KNOWN: &str = "value of a secret-named variable";

/// A last name part that makes a secret-looking name a count, an id, a layout or a place, not a
/// secret: `max_token_len`, `prompt_token_ids`, `key_cache`, `--password-file`.
pub(super) const NOT_SECRET_LAST: &[&str] = &[
    "ID", "IDS", "COUNT", "LEN", "LENGTH", "SIZE", "NUM", "TYPE", "DTYPE", "CACHE", "FILE", "FILES", "PATH",
    "DIR", "STDIN",
];

/// Whether a variable, flag or key name names a secret, case-insensitively, by its parts (split at
/// anything not ASCII alphanumeric): a part ending in `TOKEN` (`HF_TOKEN`, `authToken`, but not
/// `TOKENIZERS_PARALLELISM` or `max_tokens`), holding `SECRET`, `PASSWORD`, `PASSWD`,
/// `PASSPHRASE` or `CREDENTIAL`, ending in `CREDS` or `AUTH` or starting with `AUTHORIZ`, or
/// `KEY`, `KEYS`, `PASS`, `*APIKEY`, `*ACCESSKEY`, `*PRIVATEKEY`, `*ACCOUNTKEY` or a camel-case
/// `…Key`, `…Pwd`, `…Pass`, `…Psk` (`API_KEY`, `--api-key`, `AccountKey`, `signingKey`,
/// `dbPwd`, but not `KEYBOARD`, `MONKEY` or `DispatchKeySet`), or `PWD`, `PSK`, `PW` after
/// another part (`MYSQL_PWD`, not `PWD`); unless the last part is a count or an id
/// ([`NOT_SECRET_LAST`]).
pub fn secret_name(name: &str) -> bool {
    secret_name_bytes(name.as_bytes())
}

pub(super) fn secret_name_bytes(name: &[u8]) -> bool {
    let mut any = false;
    let mut last: &[u8] = b"";
    for (n, part) in name.split(|b| !b.is_ascii_alphanumeric()).filter(|p| !p.is_empty()).enumerate() {
        // `PWD` alone is the shell's working folder; after an owner (`MYSQL_PWD`, `DB_PWD`) a
        // password. `PSK` is a pre-shared key.
        any = any || secret_part(part) || (n > 0 && short_part(part));
        last = part;
    }
    any && !NOT_SECRET_LAST.iter().any(|w| last.eq_ignore_ascii_case(w.as_bytes()))
}

/// The short words that say secret only after another part (`MYSQL_PWD`, not `PWD` or
/// `OLDPWD`).
fn short_part(p: &[u8]) -> bool {
    p.eq_ignore_ascii_case(b"PWD") || p.eq_ignore_ascii_case(b"PSK") || p.eq_ignore_ascii_case(b"PW")
}

/// Whether `p` ends with the camel-case word `w` after a lowercase letter or a digit
/// (`dbPwd`, `redisPass`, `wifiPsk`).
fn ends_camel(p: &[u8], w: &[u8]) -> bool {
    p.len() > w.len() && p.ends_with(w) && {
        let b = p[p.len() - w.len() - 1];
        b.is_ascii_lowercase() || b.is_ascii_digit()
    }
}

pub(super) fn secret_part(p: &[u8]) -> bool {
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
        || ends_camel(p, b"Pwd")
        || ends_camel(p, b"Pass")
        || ends_camel(p, b"Psk")
}

/// A necessary condition of [`secret_name`], in one pass over the name: every word it looks for
/// holds a `k`, `ss`, `cr`, `th` or `pw`. Most names a log puts before a `:` or `=` have none.
pub(super) fn maybe_secret_name(name: &[u8]) -> bool {
    let mut prev = 0u8;
    for &b in name {
        let b = b.to_ascii_lowercase();
        if b == b'k'
            || (prev == b's' && b == b's')
            || (prev == b'c' && b == b'r')
            || (prev == b't' && b == b'h')
            || (prev == b'p' && b == b'w')
        {
            return true;
        }
        prev = b;
    }
    false
}

pub(super) fn ends_ci(s: &[u8], pat: &[u8]) -> bool {
    s.len() >= pat.len() && s[s.len() - pat.len()..].eq_ignore_ascii_case(pat)
}

pub(super) fn starts_ci(s: &[u8], pat: &[u8]) -> bool {
    s.len() >= pat.len() && s[..pat.len()].eq_ignore_ascii_case(pat)
}

pub(super) fn contains_ci(s: &[u8], pat: &[u8]) -> bool {
    s.windows(pat.len()).any(|w| w.eq_ignore_ascii_case(pat))
}

/// Whether a value redacted by name is worth looking for elsewhere: 6 bytes at least, on one line,
/// not a number or a word that is no secret anywhere (`true`, a bare `0`).
pub(super) fn worth_remembering(v: &str) -> bool {
    v.len() >= 6
        && !MARK.contains(v)
        && !v.contains('\n')
        && !v.bytes().all(|b| b.is_ascii_digit())
        && !["true", "false", "null", "none"].iter().any(|w| v.eq_ignore_ascii_case(w))
}

//! Rules that need no list of prefixes: a secret told by its randomness (Shannon entropy and the
//! mix of character classes) where it stands, and the families whose shape has no `_`, `-` or
//! `.` trigger. Long standalone base64 blobs anywhere; random-looking words where a secret
//! goes: a URL's user name, the path of a webhook URL (Slack, Discord, Teams, Zapier, any
//! `…hook…`), Telegram bot tokens, the words after `login`, `auth` or `token` in a command,
//! what `echo` pipes into a login, `export NAME=…`; Databricks `dapi…`, Google `1//…`
//! refresh tokens, Azure AD client secrets (`…8Q~…`).
//!
//! Must not: take a hex digest, a git SHA, an address, a UUID, a mangled or Triton kernel
//! name, a path or a `file:line:col` for a secret (every recording under `tests/fixtures/`
//! comes out unchanged); look at a byte more than a bounded number of times.

use std::sync::LazyLock;

use super::bytes::*;
use super::names::*;
use memchr::memmem::Finder;

/// Shannon entropy of `v` in bits per byte.
pub(super) fn entropy(v: &[u8]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in v {
        counts[b as usize] += 1;
    }
    let n = v.len() as f64;
    counts.iter().filter(|&&c| c > 0).map(|&c| -(f64::from(c) / n) * (f64::from(c) / n).log2()).sum()
}

/// Whether a word where a secret goes (a URL's user name, the argument after `login`) reads as
/// a random token rather than a name: 32 hex digits or more with 3 bits of entropy a byte, or
/// 20 bytes or more with digits and letters and 3.5 bits a byte (`deploy`, `my-registry.io`,
/// `user@example.com` are none).
pub(super) fn random_token(v: &[u8]) -> bool {
    if v.len() < 16 || v.starts_with(b"_Z") || !v.iter().all(|&b| is_alnum(b) || b"-_.~+/=".contains(&b)) {
        return false;
    }
    if v.iter().all(|&b| is_hex(b)) {
        return v.len() >= 32 && entropy(v) >= 3.0;
    }
    let digit = v.iter().any(u8::is_ascii_digit);
    let letter = v.iter().any(u8::is_ascii_alphabetic);
    v.len() >= 20 && digit && letter && entropy(v) >= 3.5
}

/// The bytes of a base64 or base64url blob.
fn blob_byte(b: u8) -> bool {
    is_alnum(b) || matches!(b, b'+' | b'/' | b'-' | b'_')
}

/// The least length of a standalone blob.
const BLOB_MIN: usize = 40;

/// The least length of a standalone token told by its randomness alone ([`short_token`]).
const TOKEN_MIN: usize = 20;

/// Long standalone base64 (or base64url) blobs anywhere: a run of 40 bytes or more (its `=`
/// padding too) with upper- and lowercase letters and digits, 4.4 bits of entropy a byte or
/// more (random base64 of 40 bytes has 4.9; words, paths and identifiers 3.5 to 4.1), few
/// `-`, `_` or `/` (identifiers and paths have many), and not a mangled name (`_Z…`); a
/// shorter run of 20 bytes or more when it reads as a random token ([`short_token`]). Runs are
/// found by looking at every 20th byte first, so text of short words costs little.
pub(super) fn blobs(s: &[u8], spans: &mut Vec<Span>) {
    let n = s.len();
    let mut i = 0;
    // `s[i..known]` are known to be blob bytes: no byte is looked at backwards twice.
    let mut known = 0;
    while i + TOKEN_MIN <= n {
        let last = i + TOKEN_MIN - 1;
        if !blob_byte(s[last]) {
            i = last + 1;
            known = i;
            continue;
        }
        let floor = known.max(i);
        let mut k = last;
        while k > floor && blob_byte(s[k - 1]) {
            k -= 1;
        }
        if k > floor {
            i = k;
            known = last + 1;
            continue;
        }
        let end = run(s, last + 1, blob_byte);
        if i == 0 || !blob_byte(s[i - 1]) {
            if end - i >= BLOB_MIN {
                blob(s, i, end, spans);
            } else {
                short_token(s, i, end, spans);
            }
        }
        i = end + 1;
        known = i;
    }
}

/// The run `s[a..e]` as a blob, when it reads as one.
fn blob(s: &[u8], a: usize, e: usize, spans: &mut Vec<Span>) {
    let v = &s[a..e];
    let len = v.len();
    if v.starts_with(b"_Z") || (a > 0 && matches!(s[a - 1], b'$' | b'%' | b'\\')) {
        return;
    }
    let (mut upper, mut lower, mut digit, mut marks, mut slashes) = (0, 0, 0, 0, 0);
    for &b in v {
        upper += usize::from(b.is_ascii_uppercase());
        lower += usize::from(b.is_ascii_lowercase());
        digit += usize::from(b.is_ascii_digit());
        marks += usize::from(b == b'-' || b == b'_');
        slashes += usize::from(b == b'/');
    }
    if upper < 2 || lower < 2 || digit < 2 || marks * 12 > len || slashes * 12 > len {
        return;
    }
    // A path (`cache/HY5VK…/x`, `tmp/ab.cBCQwK/D/suite`): a segment of 5 bytes or more in
    // one case, where random base64 mixes them.
    let one_case = |w: &[u8]| {
        w.len() >= 5 && (!w.iter().any(u8::is_ascii_uppercase) || !w.iter().any(u8::is_ascii_lowercase))
    };
    if (slashes > 0 && v.split(|&b| b == b'/').any(one_case)) || entropy(v) < 4.4 || wordy(v) {
        return;
    }
    let mut end = e;
    while end < s.len() && s[end] == b'=' && end - e < 2 {
        end += 1;
    }
    // A token another rule found (`xoxb-…` keeps its prefix, a PEM line its kind) is theirs.
    if &s[a..end] != MARK.as_bytes() && !spans.iter().any(|&(x, y, _)| x < end && a < y) {
        spans.push((a, end, "base64 blob"));
    }
}

/// A run `s[a..e]` of 20 to 39 bytes that reads as a random token, not as a name: upper- and
/// lowercase letters and digits, two of each at least, case changing inside words, few `-` or
/// `_` (one in 8 bytes: `ab_live_…` is a prefixed token, `cutlass_80_tensorop_s1688gemm` an
/// identifier), no `/` (a path), 3.6 bits of entropy a byte (4.0 from 32 bytes: random
/// alphanumerics of 20 bytes have about 4.0, of 32 about 4.5), not mostly words
/// ([`wordy`]); or 2 to 4 capitals before 32 hex digits or more (`SK…`, `AC…`: a telephony
/// API's key and account ids). A hex digest, an address, a UUID, a base32 hash of one case, a
/// mangled name and a kernel's name are none.
fn short_token(s: &[u8], a: usize, e: usize, spans: &mut Vec<Span>) {
    let v = &s[a..e];
    let len = v.len();
    // `eyJ…` is base64 of JSON: a JWT's header alone, which the JWT rule judges whole.
    if v.starts_with(b"_Z")
        || v.starts_with(b"eyJ")
        || (a > 0 && matches!(s[a - 1], b'$' | b'%' | b'\\' | b'.' | b'@' | b'#'))
    {
        return;
    }
    let next = s.get(e + 1).copied().unwrap_or(b' ');
    if e < s.len() && (matches!(s[e], b'@' | b'(' | b'<' | b'\\') || (s[e] == b'.' && is_alnum(next))) {
        return; // a file name, a host, a call, a template
    }
    let caps = run(v, 0, |b| b.is_ascii_uppercase());
    let hex = &v[caps..];
    if (2..=4).contains(&caps)
        && hex.len() >= 32
        && hex.iter().all(|&b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        && entropy(hex) >= 3.0
    {
        spans.push((a + caps, e, "hex key after a prefix"));
        return;
    }
    let (mut upper, mut lower, mut digit, mut marks) = (0, 0, 0, 0);
    for &b in v {
        match b {
            b'A'..=b'Z' => upper += 1,
            b'a'..=b'z' => lower += 1,
            b'0'..=b'9' => digit += 1,
            b'-' | b'_' => {
                marks += 1;
                // An identifier (`triton_poi_fused_add_0`): no need to read on.
                if marks * 8 > len {
                    return;
                }
            }
            b'/' => return,
            _ => {}
        }
    }
    if upper < 2 || lower < 2 || marks * 8 > len || (digit == 0 && (len < 24 || !random_enough(v, 4))) {
        return;
    }
    // Random text changes class (capital, small letter, digit) at most bytes; a name at its
    // words' edges.
    let changes = v.windows(2).filter(|w| class(w[0]) != class(w[1])).count();
    let floor = if len >= 32 { 4.0 } else { 3.6 };
    if changes * 4 < len {
        return;
    }
    if entropy(v) < floor || wordy(v) {
        return;
    }
    if find(&s[a..e], MARK.as_bytes()).is_none() && !spans.iter().any(|&(x, y, _)| x < e && a < y) {
        spans.push((a, e, "random token"));
    }
}

/// Whether base64 looks random rather than like words or a path (`/home/Alex/Miniconda3/bin`):
/// upper- and lowercase letters and digits, and at least `changes` lowercase letters followed
/// by an uppercase one (random base64 has one every six bytes or so).
pub(super) fn random_enough(body: &[u8], changes: usize) -> bool {
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

/// A byte's class for [`short_token`]: capital, small letter, digit, other.
fn class(b: u8) -> u8 {
    match b {
        b'A'..=b'Z' => 0,
        b'a'..=b'z' => 1,
        b'0'..=b'9' => 2,
        _ => 3,
    }
}

/// Whether 70 % of `v` or more is words (`Kernel`, `launch`: an optional capital and three
/// lowercase letters or more), as in a long CamelCase identifier; in random base64 of 40
/// bytes it is under 60 % 999 times in 1,000.
pub(super) fn wordy(v: &[u8]) -> bool {
    let (mut covered, mut k) = (0, 0);
    while k < v.len() {
        let a = k + usize::from(v[k].is_ascii_uppercase());
        let e = run(v, a, |b| b.is_ascii_lowercase());
        if e - a >= 3 {
            covered += e - k;
            k = e;
        } else {
            k = e.max(k + 1);
        }
    }
    covered * 10 >= v.len() * 7
}

/// A URL's authority starting at `start` (after `scheme://`): a random-looking user name
/// (`https://TOKEN@github.com/…`, `https://TOKEN:x-oauth-basic@…`), and the path of a webhook.
/// Returns where the URL ends.
pub(super) fn url_parts(s: &[u8], start: usize, spans: &mut Vec<Span>) -> usize {
    let url_byte =
        |b: u8| !(b.is_ascii_whitespace() || is_quote(b) || matches!(b, b'<' | b'>' | b'\\' | b')' | b']'));
    let end = run(s, start, url_byte);
    let auth_end =
        start + s[start..end].iter().position(|&b| matches!(b, b'/' | b'?' | b'#')).unwrap_or(end - start);
    let authority = &s[start..auth_end];
    let host_start = match authority.iter().rposition(|&b| b == b'@') {
        Some(at) => {
            let user_end = authority[..at].iter().position(|&b| b == b':').unwrap_or(at);
            let user = &authority[..user_end];
            if random_token(user) && !user.starts_with(MARK.as_bytes()) {
                spans.push((start, start + user_end, "token as a URL's user name"));
            }
            start + at + 1
        }
        None => start,
    };
    webhook_path(s, host_start, auth_end, end, spans);
    end
}

/// The path of a webhook URL (`hooks.slack.com/services/…`, `discord.com/api/webhooks/ID/…`,
/// `….webhook.office.com/webhookb2/…`, `api.telegram.org/bot…/`): after the host or the path
/// segment that names a hook (or `bot…` at Telegram), the rest of the path is the secret, when
/// it is 16 bytes or more with a digit (`…/settings/hooks/42` is kept).
fn webhook_path(s: &[u8], host: usize, path: usize, end: usize, spans: &mut Vec<Span>) {
    let hook = |w: &[u8]| contains_ci(w, b"hook");
    let mut from = None;
    if hook(&s[host..path]) {
        // The first segment (`services/`, `webhookb2/`) says what it is.
        let first = path
            + 1
            + s.get(path + 1..end).map_or(0, |r| r.iter().position(|&b| b == b'/').unwrap_or(r.len()));
        from = Some(first + 1);
    } else if contains_ci(&s[host..path], b"telegram.org") && s[path..end].starts_with(b"/bot") {
        from = Some(path + 4);
    } else {
        let mut k = path;
        while k < end && s[k] == b'/' {
            let seg_end = k
                + 1
                + s[k + 1..end].iter().position(|&b| matches!(b, b'/' | b'?' | b'#')).unwrap_or(end - k - 1);
            if hook(&s[k + 1..seg_end]) {
                from = Some(seg_end + 1);
                break;
            }
            k = seg_end;
        }
    }
    let Some(from) = from.filter(|&f| f < end) else { return };
    let to = from + s[from..end].iter().position(|&b| matches!(b, b'?' | b'#')).unwrap_or(end - from);
    let rest = &s[from..to];
    if rest.len() >= 16 && rest.iter().any(u8::is_ascii_digit) && find(rest, MARK.as_bytes()).is_none() {
        spans.push((from, to, "webhook URL"));
    }
}

/// A Telegram bot token around the `:` at `i`: 5 to 16 digits, `:`, `A` and 34 more
/// (gitleaks' shape); the part after the `:`.
pub(super) fn telegram(s: &[u8], i: usize, spans: &mut Vec<Span>) {
    let Some(d) = back(s, i, |b| b.is_ascii_digit(), 16) else { return };
    if i - d < 5 || (d > 0 && is_alnum(s[d - 1]) && !s[..d].ends_with(b"bot")) {
        return;
    }
    if s.get(i + 1) != Some(&b'A') {
        return;
    }
    let end = run(s, i + 1, is_word_dash);
    if end - i > 35 && (end == s.len() || !is_word_dash(s[end])) {
        spans.push((i + 1, end, "Telegram bot token"));
    }
}

/// Families with no trigger byte: Databricks `dapi` + 32 hex, Google refresh tokens `1//0…`,
/// Azure AD client secrets (`abc8Q~…`).
pub(super) fn anchored(s: &[u8], spans: &mut Vec<Span>) {
    static DAPI: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"dapi"));
    static REFRESH: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"1//0"));
    for i in DAPI.find_iter(s) {
        let end = run(s, i + 4, |b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if left_ok(s, i) && end - i - 4 == 32 && (end == s.len() || !is_alnum(s[end])) {
            spans.push((i + 4, end, "Databricks token"));
        }
    }
    for i in REFRESH.find_iter(s) {
        let end = run(s, i + 3, is_word_dash);
        if (i == 0 || !(is_alnum(s[i - 1]) || s[i - 1] == b'/' || s[i - 1] == b':')) && end - i - 3 >= 30 {
            spans.push((i + 3, end, "Google refresh token"));
        }
    }
    for i in memchr::memchr_iter(b'~', s) {
        if i < 5 || s[i - 1] != b'Q' || !s[i - 2].is_ascii_digit() {
            continue;
        }
        let ok = |b: u8| is_word(b) || b == b'~' || b == b'.';
        let start = i - 5;
        if !s[start..i - 2].iter().all(|&b| ok(b)) || (start > 0 && ok(s[start - 1])) {
            continue;
        }
        let end = run(s, i + 1, |b| ok(b) || b == b'-');
        if (31..=34).contains(&(end - i - 1)) {
            spans.push((start, end, "Azure AD client secret"));
        }
    }
}

/// The words after which a command takes a secret as an argument.
pub(super) const LOGIN_WORDS: [&[u8]; 3] = [b"login", b"auth", b"token"];

/// Commands that take the secret as a word: `wandb login KEY`, `vault login TOKEN`,
/// `heroku auth:token`, `gh auth login --with-token` fed by `echo KEY |`; what `echo` or
/// `printf` pipes into a command with `login`, `auth`, `token` or `stdin`; and a
/// random-looking value `export`ed under any name (`export WANDB=…`).
pub(super) fn logins(s: &[u8], spans: &mut Vec<Span>) {
    static FINDERS: LazyLock<[Finder<'static>; 3]> = LazyLock::new(|| LOGIN_WORDS.map(Finder::new));
    static STDIN: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"-stdin"));
    static EXPORT: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"export "));
    for (f, word) in FINDERS.iter().zip(LOGIN_WORDS) {
        for i in f.find_iter(s) {
            let e = i + word.len();
            let left =
                i == 0 || matches!(s[i - 1], b' ' | b'\t' | b'\n' | b':' | b'-' | b'"' | b'\'' | b';' | b'(');
            if !left || !(e == s.len() || matches!(s[e], b' ' | b'\t' | b'\n' | b'\r' | b'"' | b'\'')) {
                continue;
            }
            after_login(s, e, spans);
            piped_in(s, i, spans);
        }
    }
    for i in STDIN.find_iter(s) {
        piped_in(s, i, spans);
    }
    for i in EXPORT.find_iter(s) {
        if i == 0 || !(is_word(s[i - 1]) || matches!(s[i - 1], b'-' | b'.' | b'/')) {
            exported(s, i + 7, spans);
        }
    }
}

/// The words after a login word on its line (6 at most, flags skipped): each that reads as a
/// random token.
fn after_login(s: &[u8], mut k: usize, spans: &mut Vec<Span>) {
    for _ in 0..6 {
        k = run(s, k, is_blank);
        if k >= s.len() || matches!(s[k], b'\n' | b'|' | b';' | b'&' | b'#') {
            return;
        }
        let q = usize::from(is_quote(s[k]));
        let end = run(s, k + q, |b| !(b.is_ascii_whitespace() || is_quote(b) || b"|;<>&,)]}\\".contains(&b)));
        let word = &s[k + q..end];
        if s[k] != b'-' && random_token(word) {
            spans.push((k + q, end, "secret after a login command"));
        }
        k = end + usize::from(end < s.len() && is_quote(s[end]));
    }
}

/// `echo SECRET | … login` (or `printf`, and `--password-stdin`): what `echo` prints into the
/// command whose word is at `i`, when the pipe is on the same line before it.
fn piped_in(s: &[u8], i: usize, spans: &mut Vec<Span>) {
    let from = i.saturating_sub(512);
    let line_start = memchr::memrchr(b'\n', &s[from..i]).map_or(from, |k| from + k + 1);
    let Some(pipe) = memchr::memrchr(b'|', &s[line_start..i]).map(|k| line_start + k) else { return };
    if pipe > line_start && s[pipe - 1] == b'|' {
        return;
    }
    let seg = &s[line_start..pipe];
    let command_start =
        |k: usize| k == 0 || !(is_word(seg[k - 1]) || matches!(seg[k - 1], b'-' | b'.' | b'/'));
    let found = [&b"echo "[..], b"printf "]
        .iter()
        .filter_map(|w| memchr::memmem::rfind(seg, w).filter(|&k| command_start(k)).map(|k| k + w.len()))
        .max();
    let Some(at) = found else { return };
    let mut a = line_start + at;
    loop {
        a = run(s, a, is_blank);
        if s[a..pipe].starts_with(b"-n ") || s[a..pipe].starts_with(b"-e ") {
            a += 3;
        } else {
            break;
        }
    }
    let mut b = pipe;
    while b > a && is_blank(s[b - 1]) {
        b -= 1;
    }
    if b > a && is_quote(s[a]) && s[b - 1] == s[a] {
        a += 1;
        b -= 1;
    }
    let v = &s[a..b];
    if v.len() >= 6 && v[0] != b'$' && find(v, MARK.as_bytes()).is_none() && !v.contains(&b'$') {
        spans.push((a, b, "secret piped into a login"));
    }
}

/// `export NAME=VALUE` at `k` (after `export `): the value when it reads as a random token.
fn exported(s: &[u8], k: usize, spans: &mut Vec<Span>) {
    let name_end = run(s, k, is_word);
    if name_end == k || s.get(name_end) != Some(&b'=') {
        return;
    }
    let mut a = name_end + 1;
    let q = s.get(a).copied().filter(|&b| is_quote(b));
    a += usize::from(q.is_some());
    let end = run(s, a, |b| match q {
        Some(q) => b != q && b != b'\n',
        None => !(b.is_ascii_whitespace() || is_quote(b) || b"|;<>&,)]}\\".contains(&b)),
    });
    if random_token(&s[a..end]) {
        spans.push((a, end, "random value exported"));
    }
}

//! Secrets after a separator (`=`, `:`): secret-named keys and assignments in every syntax
//! (environment, YAML, JSON, Python, INI, cuda-gdb locals), headers, connection strings,
//! signed URLs, and the password of a URL.
//!
//! Must not: take a file position (`x.yaml:3:1`), a comparison or an expression for a value.

use super::bytes::*;
use super::generic::*;
use super::names::*;
use super::quoted::*;
use super::tokens::*;

/// Hits of `=` and `:`: `scheme://user:password@host`, and secret-named values
/// ([`name_value`]). A run of either (`=========`, `::`) is no separator.
pub(super) fn separators(s: &[u8], spans: &mut Vec<Span>) {
    let mut from = 0;
    // The end of the last header's value (to the end of its line): nothing inside is looked at
    // again (a line of `Cookie: Cookie: …` stays linear).
    let mut header_end = 0;
    // The end of the last URL looked at: one inside it (`a://a://…`) is not followed again.
    let mut url_end = 0;
    while let Some(k) = memchr::memchr2(b'=', b':', &s[from..]) {
        let i = from + k;
        let end = run(s, i, |b| b == s[i]);
        if end == i + 1 && i >= header_end {
            if s[i] == b':' && s[i + 1..].starts_with(b"//") {
                url_password(s, i + 3, spans);
                if i >= url_end {
                    url_end = url_parts(s, i + 3, spans);
                }
            } else if s[i] == b':' && i > 0 && s[i - 1].is_ascii_digit() && s.get(i + 1) == Some(&b'A') {
                telegram(s, i, spans);
            } else if !(s[i] == b':' && s.get(i + 1) == Some(&b'=')) {
                if let Some(e) = name_value(s, i, spans) {
                    header_end = e;
                }
            }
        }
        from = end;
    }
}

/// `scheme://user:password@host` (the authority starts at `start`): the password, whatever it
/// holds: when the authority read to its first `/`, `?` or `#` has a `user:` and no host, a
/// password with one of those (`p#ss`, `a/b`) ends at the last `@` of the word that a host
/// follows (not after a port: `host:8080/a@b` is a path).
pub(super) fn url_password(s: &[u8], start: usize, spans: &mut Vec<Span>) {
    let end = run(s, start, |b| {
        !(b.is_ascii_whitespace() || is_quote(b) || matches!(b, b'/' | b'?' | b'#' | b'<' | b'>'))
    });
    let mut authority = &s[start..end];
    // No `@` before the first `/`, `?` or `#`, or one right before it (`user:p@#ss@host`): the
    // password may go on.
    if !authority.contains(&b'@') || authority.last() == Some(&b'@') {
        let Some(colon) = authority.iter().position(|&b| b == b':') else { return };
        if authority[colon + 1..].iter().all(u8::is_ascii_digit) {
            return;
        }
        // The rest of the word, 256 bytes at most (a password is shorter): a line of
        // `a://u:p#a://u:p#…` stays linear.
        let bound = s.len().min(end + 256);
        let word =
            run(&s[..bound], end, |b| !(b.is_ascii_whitespace() || is_quote(b) || matches!(b, b'<' | b'>')));
        let Some(at) = s[end..word].iter().rposition(|&b| b == b'@').map(|k| end + k) else { return };
        let host = run(s, at + 1, |b| is_alnum(b) || b == b'.' || b == b'-');
        if host == at + 1 || !(host == word || matches!(s[host], b':' | b'/' | b'?' | b'#')) {
            return;
        }
        authority = &s[start..at + 1];
    }
    let Some(at) = authority.iter().rposition(|&b| b == b'@') else { return };
    let Some(colon) = authority[..at].iter().position(|&b| b == b':') else { return };
    let (pw_start, pw_end) = (start + colon + 1, start + at);
    if pw_start < pw_end && &s[pw_start..pw_end] != MARK.as_bytes() {
        spans.push((pw_start, pw_end, "password in a URL"));
    }
}

/// Query parameters that hold a signature or a credential in a signed URL (Azure SAS, S3 and
/// GCS presigned URLs), after `?` or `&`.
pub(super) const QUERY_SECRETS: &[&str] = &["sig", "signature", "x-amz-signature", "x-goog-signature"];

/// What a name before a separator says of its value.
pub(super) enum Kind {
    /// A secret (the value as [`value_span`] reads it), with the label.
    Secret(&'static str),
    /// A header whose whole value is secret, to the end of the line or a quote.
    Header(&'static str),
    /// A list whose items are secrets when they read as such (`access_tokens: [...]`, where
    /// `max_tokens: 16384` is a count): only a tuple or list value, each item with letters and
    /// digits.
    List(&'static str),
}

/// The separator at `i` (`=` or `:`) after a secret-named name: `HF_TOKEN=…`, `--api-key=…`,
/// `?access_token=…`, `api_key: …` (YAML), `"token": "…"` (JSON), `'secret': '…'` (a Python
/// dict), `os.environ["HF_TOKEN"] = "…"`, `aws_secret_access_key = …` (INI), cuda-gdb's
/// `password = 0x… "hunter2"`, `X-Api-Key: …`, `Authorization: …` and `Cookie: …` (to the
/// end of the line), `;AccountKey=…;` and `;Pwd=…;` (connection strings), `&sig=…` (signed
/// URLs). Returns where a header's value ends.
pub(super) fn name_value(s: &[u8], i: usize, spans: &mut Vec<Span>) -> Option<usize> {
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
    if s.get(v) == Some(&b'{') && matches!(kind, Kind::Secret(_)) {
        std_string(s, v, spans);
        return None;
    }
    match (s.get(v), &kind) {
        (Some(b'(' | b'['), Kind::Secret(label)) => {
            sequence(s, v, label, false, spans);
            return None;
        }
        (Some(b'(' | b'['), Kind::List(label)) => {
            sequence(s, v, label, true, spans);
            return None;
        }
        (_, Kind::List(_)) => return None,
        _ => {}
    }
    match kind {
        Kind::Header(label) => return Some(header_value(s, v, label, spans)),
        Kind::List(_) => {}
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

/// A tuple or a list under a secret-named name, starting at `v` (`auth=("user", "pw")`,
/// `api_keys: ['a', 'b']`, `tokens = [a1b2, c3d4]`): every quoted item, and in a list every
/// bare one that is no number or plain word, to the bracket that closes it on the line (16
/// items at most).
pub(super) fn sequence(s: &[u8], v: usize, label: &'static str, strict: bool, spans: &mut Vec<Span>) {
    // A list that is a secret by its items only: each of 8 bytes or more with letters and digits.
    let token = |t: &[u8]| {
        !strict || (t.len() >= 8 && t.iter().any(u8::is_ascii_digit) && t.iter().any(u8::is_ascii_alphabetic))
    };
    let list = s[v] == b'[';
    let mut k = v + 1;
    for _ in 0..16 {
        k = run(s, k, is_blank);
        let Some(&b) = s.get(k) else { return };
        if matches!(b, b')' | b']' | b'\n' | b'\r') {
            return;
        }
        let next = match quote_at(s, k) {
            Some(q) => {
                let start = k + q.len();
                let end = closing(s, start, q);
                if start < end && find(&s[start..end], b"[REDACTED").is_none() && token(&s[start..end]) {
                    spans.push((start, end, label));
                }
                end + q.len()
            }
            None => {
                let end = run(s, k, |c| !(c.is_ascii_whitespace() || b",)]\n".contains(&c)));
                let item = &s[k..end];
                let plain = item.iter().all(|c| c.is_ascii_digit() || c == &b'.' || c == &b'-')
                    || super::flags::plain_word(item)
                    || item.starts_with(b"$")
                    || find(item, b"[REDACTED").is_some();
                if list && !item.is_empty() && !plain && token(item) {
                    spans.push((k, end, label));
                }
                end.max(k + 1)
            }
        };
        k = run(s, next.min(s.len()), is_blank);
        match s.get(k) {
            Some(b',') => k += 1,
            _ => return,
        }
    }
}

/// Whether `name` followed by `:` and `rest` is a file and a position (`x.yaml:3:1`,
/// `a.rs:42`): a name with an extension, then a line number, a column or not, and the end of
/// the token.
pub(super) fn file_position(name: &[u8], rest: &[u8]) -> bool {
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

pub(super) fn name_kind(s: &[u8], left: usize, name: &[u8], equals: bool) -> Option<Kind> {
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
    if ends_ci(name, b"TOKENS") && !secret_name_bytes(name) {
        return Some(Kind::List("secret-named list"));
    }
    let query = equals
        && matches!(before, Some(b'?' | b'&'))
        && QUERY_SECRETS.iter().any(|q| name.eq_ignore_ascii_case(q.as_bytes()));
    let connection = equals && before == Some(b';') && name.eq_ignore_ascii_case(b"pwd");
    (query || connection).then_some(Kind::Secret(label))
}

/// A header's value, to the end of the line, a quote or a tag (`Authorization: Basic …`,
/// `Cookie: a=b; c=d`); where it ends.
pub(super) fn header_value(s: &[u8], v: usize, label: &'static str, spans: &mut Vec<Span>) -> usize {
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

/// A `std::string` as cuda-gdb prints one without a pretty printer, under a secret-named name
/// (`password = {_M_dataplus = {<std::allocator<char>> = {…}, _M_p = 0x7ffd… "hunter2"},
/// _M_string_length = 7, …}`), the structure starting at `v`: the string after `_M_p = 0x…`
/// (libstdc++) or `__data_ = 0x…` (libc++), on the line.
pub(super) fn std_string(s: &[u8], v: usize, spans: &mut Vec<Span>) {
    let eol = v + memchr::memchr(b'\n', &s[v..]).unwrap_or(s.len() - v);
    let bound = eol.min(v + 4096);
    for field in [&b"_M_p = 0x"[..], b"__data_ = 0x"] {
        let Some(k) = find(&s[v..bound], field) else { continue };
        let h = run(s, v + k + field.len(), is_hex);
        if s.get(h) == Some(&b' ') {
            // A quote or, inside an enclosing string, an escaped one (`\"`).
            if let Some(q) = quote_at(s, h + 1) {
                let start = h + 1 + q.len();
                let end = closing(s, start, q);
                if start < end && &s[start..end] != MARK.as_bytes() {
                    spans.push((start, end, "secret-named std::string"));
                }
            }
        }
    }
}

/// Whether a line is a debugger's `print` of a secret-named expression (`(cuda-gdb) print
/// password`, `p creds.api_key`, `output token`, `+print secret` traced): the value history
/// line after it (`$1 = "…"`) holds the secret, though it names nothing.
pub(super) fn prints_secret(line: &[u8]) -> bool {
    let (a, b) = trim(line);
    let mut l = &line[a..b];
    if let Some(k) = find(l, b"gdb) ") {
        l = &l[k + 5..];
    }
    let l = l.strip_prefix(b"+").unwrap_or(l);
    let Some(expr) = [&b"print "[..], b"p ", b"output ", b"print/x ", b"p/x ", b"print/s ", b"p/s "]
        .iter()
        .find_map(|c| l.strip_prefix(*c))
    else {
        return false;
    };
    let name_end = run(expr, 0, |b| is_name_byte(b) || matches!(b, b'*' | b'&' | b'>' | b'[' | b']' | b':'));
    name_end > 0 && name_end + 2 >= expr.len() && secret_name_bytes(&expr[..name_end])
}

/// The value of a debugger's value-history line (`$1 = "hunter2"`, `$2 = 0x55… "hunter2"`, a
/// `std::string`'s structure) after a [`prints_secret`] line.
pub(super) fn printed_value(s: &[u8], spans: &mut Vec<Span>) {
    let (a, _) = trim(s);
    if s.get(a) != Some(&b'$') {
        return;
    }
    let d = run(s, a + 1, |b| b.is_ascii_digit());
    if d == a + 1 || !s[d..].starts_with(b" = ") {
        return;
    }
    let mut v = d + 3;
    if s[v..].starts_with(b"0x") {
        let h = run(s, v + 2, is_hex);
        if s.get(h) == Some(&b' ') && quote_at(s, h + 1).is_some() {
            v = h + 1;
        }
    }
    if s.get(v) == Some(&b'{') {
        std_string(s, v, spans);
    } else if let Some((start, end)) = value_span(s, v, Mode::Loose) {
        spans.push((start, end, "secret-named value printed by a debugger"));
    }
}

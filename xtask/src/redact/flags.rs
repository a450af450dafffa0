//! Flags that take a secret in a command line written as text: `--token X`, `-p X`,
//! `-pSECRET` after the MySQL clients, `-u user:password`.
//!
//! Must not: take a port, a path or a switch for a password (`ssh -p 22`, `mkdir -p d`).

use super::bytes::*;
use super::names::*;
use super::quoted::*;

/// Programs and subcommands whose `-p` is a switch or takes no password: `mkdir -p build`,
/// `git log -p HEAD`, `python -m pytest -p no:cacheprovider`, `gdb -p PID`. (A port, as for
/// `ssh -p 22` and `docker run -p 8000:8000`, is told by its digits.)
pub(super) const P_IS_A_SWITCH: &[&str] = &[
    "gdb", "cuda-gdb", "mkdir", "cp", "install", "ls", "rsync", "tar", "patch", "ps", "pgrep", "pkill",
    "xargs", "perl", "sed", "git", "log", "show", "diff", "add", "stash", "checkout", "reset", "commit",
    "restore", "pytest", "time", "readlink", "realpath",
];

/// Programs that take a password attached to `-p` (`mysql -uroot -pSECRET`, `sshpass -pSECRET`).
/// Elsewhere an attached `-p…` is a compiler or linker switch (`-pthread`, `-pg`, `-pipe`).
pub(super) const P_ATTACHED: &[&str] = &[
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

/// Programs whose `-a` takes the password (`redis-cli -a PW`); elsewhere `-a` is a switch
/// (`ls -a`, `cp -a`) or takes no secret.
pub(super) const A_IS_PASSWORD: &[&str] = &["redis-cli", "redis-benchmark", "valkey-cli", "keydb-cli"];

/// Whether one of `programs` is a word of `s[line_start..i]` (its base name: `/usr/bin/mysql`).
fn program_before(s: &[u8], i: usize, programs: &[&str]) -> bool {
    let from = i.saturating_sub(512);
    let line_start = memchr::memrchr(b'\n', &s[from..i]).map_or(from, |k| from + k + 1);
    // Words are split at what no program name holds: `CUDA_PLANT=mysql …` (an environment
    // printed) and `<planted>mysql …` (an XML report) name the program too.
    s[line_start..i].split(|&b| !(is_name_byte(b) || b == b'/')).any(|w| {
        let base = w.rsplit(|&b| b == b'/').next().unwrap_or(w);
        programs.iter().any(|p| p.as_bytes() == base)
    })
}

/// `-a PASSWORD` after a program whose `-a` takes one ([`A_IS_PASSWORD`]) earlier on the line.
pub(super) fn a_flag(s: &[u8], i: usize, spans: &mut Vec<Span>) {
    let v = run(s, i + 2, is_blank);
    if !program_before(s, i, A_IS_PASSWORD) {
        return;
    }
    if let Some((start, end)) = value_span(s, v, Mode::Flag) {
        if any_password(&s[start..end]) {
            spans.push((start, end, "password after -a"));
        }
    }
}

/// `--secret-flag value` (`--api-key sk-…`, `--token xyz`, `--password "a b"`), and
/// `--user user:password`.
pub(super) fn long_flag(s: &[u8], i: usize, spans: &mut Vec<Span>) {
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
pub(super) fn short_flag(s: &[u8], i: usize, spans: &mut Vec<Span>, seen: &mut Before) {
    let v = run(s, i + 2, is_blank);
    if s[i + 1] == b'u' {
        user_pass_span(s, v, spans);
        return;
    }
    // The words before on the line (512 bytes before the first `-p` of the line, then up to
    // each next one: a line of `-p x -p x …` reads each word once): the program or subcommand
    // whose flag this is.
    let from = i.saturating_sub(512);
    let line_start = memchr::memrchr(b'\n', &s[from..i]).map_or(from, |k| from + k + 1);
    let from = if seen.upto > line_start && seen.upto <= i && !s[seen.upto..i].contains(&b'\n') {
        seen.upto
    } else {
        *seen = Before::default();
        line_start
    };
    for w in s[from..i].split(|&b| b.is_ascii_whitespace()) {
        // A key (`{"log": "… -p X"}`, `msg:`) names no program.
        if w.ends_with(b":") {
            continue;
        }
        let base = base_of(w.trim_ascii_start().strip_prefix(b"\"").unwrap_or(w));
        let base = base.iter().position(|&b| is_quote(b)).map_or(base, |q| &base[..q]);
        let base = base.strip_prefix(b"'").unwrap_or(base);
        seen.switch |= P_IS_A_SWITCH.iter().any(|p| p.as_bytes() == base);
        // After `login` (`docker login -p X`, `az login -p X`) or a database client, what
        // follows `-p` is the password even when it reads as a word (`+ mysql -u root -p PW`);
        // a program glued to what came before it (`s0=sshpass`, `<text>sshpass`) names it too.
        seen.login |= base == b"login"
            || w.split(|&b| !(is_name_byte(b) || b == b'/'))
                .any(|p| P_ATTACHED.iter().any(|a| a.as_bytes() == base_of(p)));
    }
    seen.upto = i;
    if seen.switch {
        return;
    }
    if let Some((start, end)) = value_span(s, v, Mode::Flag) {
        // After `login` or a program whose `-p` takes a password, any value is one
        // (`sshpass -p a:b^c`); elsewhere not what reads as a port, a path or a revision.
        let v = &s[start..end];
        if (seen.login && any_password(v)) || p_value(v, !seen.login) {
            spans.push((start, end, "password after -p"));
        }
    }
}

/// What the words before a `-p` on its line said, as far as they were read.
#[derive(Debug, Default)]
pub(super) struct Before {
    /// Where the words were read to.
    upto: usize,
    /// A program or subcommand whose `-p` is a switch ([`P_IS_A_SWITCH`]).
    switch: bool,
    /// `login` or a program that takes a password after `-p` ([`P_ATTACHED`]).
    login: bool,
}

/// The last part of a path (`/usr/bin/mysql`: `mysql`).
fn base_of(w: &[u8]) -> &[u8] {
    w.rsplit(|&b| b == b'/').next().unwrap_or(w)
}

/// `-pSECRET` after a program that takes its password so ([`P_ATTACHED`]), earlier on the line.
pub(super) fn attached_p(s: &[u8], i: usize, spans: &mut Vec<Span>) {
    let start = i + 2;
    let end = run(s, start, |b| !b.is_ascii_whitespace() && !is_quote(b));
    if start == end || s[start] == b'$' || s[start..].starts_with(MARK.as_bytes()) {
        return;
    }
    if program_before(s, i, P_ATTACHED) {
        spans.push((start, end, "password after -p"));
    }
}

/// Whether the value of a flag that takes a password after a program known to take one
/// (`sshpass -p`, `redis-cli -a`) is one: anything but a shell reference, a placeholder or a
/// value already redacted.
pub(super) fn any_password(v: &[u8]) -> bool {
    !v.is_empty()
        && v[0] != b'$'
        && !v.iter().any(|b| b.is_ascii_whitespace() || b"<>".contains(b))
        && find(v, b"[REDACTED").is_none()
}

/// Whether the value of `-p` reads as a password: not a port or a number (`8000:8000/tcp`), a
/// path, a shell reference, a placeholder (`<PID>`), a plugin (`no:cacheprovider`), a revision
/// (`HEAD~2`); in text (not an argument) also not a plain word ([`plain_word`]: `mkdir -p
/// build` when the program is unseen).
pub(super) fn p_value(v: &[u8], in_text: bool) -> bool {
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
pub(super) fn plain_word(v: &[u8]) -> bool {
    v.iter().all(|b| b.is_ascii_lowercase() || *b == b'_')
        || v.iter().all(|b| b.is_ascii_uppercase() || *b == b'_')
}

/// `user:password` (not `1000:1000`): the password's range.
pub(super) fn user_pass(v: &[u8]) -> Option<(usize, usize)> {
    let colon = v.iter().position(|&b| b == b':')?;
    let user = &v[..colon];
    (!user.is_empty()
        && !user.iter().all(u8::is_ascii_digit)
        && colon + 1 < v.len()
        && &v[colon + 1..] != MARK.as_bytes())
    .then_some((colon + 1, v.len()))
}

pub(super) fn user_pass_span(s: &[u8], v: usize, spans: &mut Vec<Span>) {
    if let Some((start, end)) = value_span(s, v, Mode::Flag) {
        if let Some((a, b)) = user_pass(&s[start..end]) {
            spans.push((start + a, start + b, "password of -u user:password"));
        }
    }
}

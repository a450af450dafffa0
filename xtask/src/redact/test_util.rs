//! Helpers of the redaction tests: fake secrets built at run time (so that no scanner trips on
//! the sources), fragments for the property tests, and the `shape` check.
//!
//! Must not: hold a token-shaped literal.

use super::line::*;
use super::names::*;

/// Fake but well-formed secrets, built at run time so that no scanner trips on this file.
pub(super) struct Fakes {
    pub(super) hf: String,
    pub(super) ghp: String,
    pub(super) ghs: String,
    pub(super) pat: String,
    pub(super) sk: String,
    pub(super) sk_proj: String,
    pub(super) akia: String,
    pub(super) asia: String,
    pub(super) password: String,
    pub(super) bearer: String,
    pub(super) plain: String,
}

pub(super) fn fakes() -> Fakes {
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

pub(super) fn red(line: &str) -> String {
    redact_line(line).0.into_owned()
}

pub(super) fn fragments() -> Vec<String> {
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

/// The fragments of the new shapes too, and lines.
pub(super) fn more_fragments() -> Vec<String> {
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

// Shapes from gitleaks' and trufflehog's rules: each planted value is gone, what says what
// it was stays, and a near miss beside it is kept as it was.

/// Deterministic base64 of `n` pseudo-random bytes (a fake key body, made at run time).
pub(super) fn fake_b64(n: usize, seed: u64) -> String {
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
pub(super) fn fake_pem(label: &str, seed: u64) -> (String, Vec<String>) {
    let body = fake_b64(1190, seed);
    let lines: Vec<String> =
        body.as_bytes().chunks(64).map(|c| String::from_utf8(c.to_vec()).unwrap()).collect();
    let key = format!(
        "-----BEGIN {label}PRIVATE KEY-----\n{}\n-----END {label}PRIVATE KEY-----\n",
        lines.join("\n")
    );
    (key, lines)
}

pub(super) fn assert_gone(got: &str, secret: &str) {
    assert!(!got.contains(secret), "`{secret}` still in:\n{got}");
}

/// `line` with `secret` in it is redacted to `want`; `near` is kept whole.
pub(super) fn shape(line: &str, secret: &str, want: &str, near: &str) {
    let got = red(line);
    assert_gone(&got, secret);
    assert_eq!(got, want, "{line}");
    assert_eq!(red(&got), got, "twice is once: {line}");
    let mut marks = Vec::new();
    candidates(line.as_bytes(), &mut marks);
    assert!(!marks.is_empty(), "no candidate in {line}");
    assert_eq!(red(near), near, "near miss changed");
}

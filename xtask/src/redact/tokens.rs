//! Tokens found by their shape alone: a known prefix (`ghp_`, `glpat-`, `sk-`, ... [`TOKENS`]),
//! AWS and Google keys, JWTs, `Bearer` tokens.
//!
//! Must not: redact a token's prefix (it says what it was), or scan a run twice (a hostile
//! line of `sk-sk-sk-…` stays linear).

use super::bytes::*;
use super::names::*;
use std::sync::LazyLock;

/// A token with a fixed prefix: the prefix is kept (it says what the token was), a body of at
/// least `min` bytes of `class` that `check` accepts is the secret.
pub(super) struct Token {
    pub(super) prefix: &'static [u8],
    pub(super) min: usize,
    pub(super) class: fn(u8) -> bool,
    pub(super) check: fn(&[u8]) -> bool,
    pub(super) label: &'static str,
}

pub(super) const fn tok(
    prefix: &'static [u8],
    min: usize,
    class: fn(u8) -> bool,
    label: &'static str,
) -> Token {
    Token { prefix, min, class, check: |_| true, label }
}

pub(super) fn is_upper_digit(b: u8) -> bool {
    b.is_ascii_uppercase() || b.is_ascii_digit()
}

pub(super) fn is_hex_dash(b: u8) -> bool {
    is_hex(b) || b == b'-'
}

pub(super) fn is_gitlab(b: u8) -> bool {
    is_word_dash(b) || b == b'.'
}

pub(super) fn is_sendgrid(b: u8) -> bool {
    is_word_dash(b) || b == b'.'
}

pub(super) fn is_grafana(b: u8) -> bool {
    is_b64(b) || b == b'=' || b == b'_'
}

/// A key's random body has a digit and a letter: paths like `sk-learn-experiments` are none.
pub(super) fn digit_and_letter(body: &[u8]) -> bool {
    body.iter().any(u8::is_ascii_digit) && body.iter().any(u8::is_ascii_alphabetic)
}

/// The tokens with a prefix ending in `_`, `-` or `.` (the byte that triggers the check), from
/// gitleaks' and trufflehog's rules. A more specific prefix comes before a shorter one that
/// shares its trigger (`sk-ant-` before `sk-`): the first that matches is taken. Every
/// `check` holds for a body only if it holds for the whole run the body ends ([`punctuation`]
/// scans each run once).
/// How many [`TOKENS`] there are.
pub(super) const N_TOKENS: usize = 81;

pub(super) static TOKENS: [Token; N_TOKENS] = [
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
    tok(b"AGE-SECRET-KEY-1", 50, is_upper_digit, "age secret key"),
    tok(b"pscale_tkn_", 32, is_gitlab, "PlanetScale token"),
    tok(b"pscale_pw_", 32, is_gitlab, "PlanetScale password"),
    tok(b"pscale_oauth_", 32, is_gitlab, "PlanetScale token"),
    tok(b"sntrys_", 40, is_grafana, "Sentry token"),
    tok(b"sntryu_", 64, is_hex, "Sentry token"),
    tok(b"pnu_", 36, is_alnum, "Prefect token"),
    tok(b"rubygems_", 48, is_hex, "RubyGems token"),
    tok(b"figd_", 40, is_word_dash, "Figma token"),
    tok(b"PMAK-", 24, is_hex_dash, "Postman key"),
    tok(b"tskey-", 20, is_word_dash, "Tailscale key"),
    tok(b"dp.pt.", 40, is_alnum, "Doppler token"),
    tok(b"dp.st.", 40, is_word_dash, "Doppler token"),
    tok(b"dp.sa.", 40, is_alnum, "Doppler token"),
    tok(b"dp.ct.", 40, is_alnum, "Doppler token"),
    tok(b"sbp_", 40, is_hex, "Supabase token"),
    tok(b"ntn_", 40, is_alnum, "Notion token"),
    tok(b"pplx-", 40, is_alnum, "Perplexity key"),
    tok(b"sq0atp-", 22, is_word_dash, "Square token"),
    tok(b"sq0csp-", 40, is_word_dash, "Square secret"),
    tok(b"CFPAT-", 43, is_word_dash, "Contentful token"),
    tok(b"rdme_", 70, is_alnum, "ReadMe key"),
    tok(b"fo1_", 43, is_word_dash, "Fly.io token"),
    tok(b"xkeysib-", 64, is_hex_dash, "Brevo key"),
    tok(b"dckr_oat_", 20, is_word_dash, "Docker Hub token"),
    tok(b"ops_eyJ", 40, is_grafana, "1Password service token"),
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
pub(super) static TRIGGERS: LazyLock<Vec<Vec<(usize, usize)>>> = LazyLock::new(|| {
    let mut t = vec![Vec::new(); 256];
    for (n, tk) in TOKENS.iter().enumerate() {
        let at = tk.prefix.iter().position(|&b| matches!(b, b'_' | b'-' | b'.')).expect("a trigger");
        t[trigger_hash(tk.prefix[at], tk.prefix[at - 2], tk.prefix[at - 1])].push((n, at));
    }
    t
});

pub(super) fn trigger_hash(trigger: u8, a: u8, b: u8) -> usize {
    (trigger as usize).wrapping_mul(7).wrapping_add((a as usize).wrapping_mul(31)).wrapping_add(b as usize)
        & 255
}

/// The token `t` starting at `start`: where its body's run ends and whether it was taken, when
/// its prefix is there.
pub(super) fn token(s: &[u8], start: usize, t: &Token, spans: &mut Vec<Span>) -> Option<(usize, bool)> {
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

/// Whether a token that a prefix scanner redacts (keeping its prefix) starts at `i`.
pub(super) fn starts_with_token(s: &[u8], i: usize) -> bool {
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

/// Hits of `A` and `J`: AWS access key ids (`AKIA`, `ASIA`, `ABIA`, `ACCA` and 16 capitals
/// or digits), Google API keys (`AIza` and 35 more), JWTs (`eyJ…`, two or three dot-separated
/// base64url parts, the second one `ey…` too).
pub(super) fn capitals(s: &[u8], spans: &mut Vec<Span>) {
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
pub(super) fn jwt(s: &[u8], i: usize, spans: &mut Vec<Span>) -> usize {
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
pub(super) fn bearer(s: &[u8], spans: &mut Vec<Span>) {
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

//! Tests of the rules that generalise (issue 22): one test per class of leak an attack pass
//! found with shapes nobody listed (token families, escapes, quotes, cuda-gdb's `std::string`,
//! `-p` in text, records), each planted value gone and its near misses kept.
//!
//! Must not: hold a token-shaped literal (every secret is made at run time).

use super::generic::*;
use super::line::*;
use super::names::*;
use super::structured::*;
use super::test_util::*;

/// Pseudo-random text from `alphabet`, the same for a seed.
fn rand(alphabet: &[u8], n: usize, seed: u64) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(7);
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            alphabet[(x >> 33) as usize % alphabet.len()] as char
        })
        .collect()
}

const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const HEX: &[u8] = b"0123456789abcdef";
const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URLSAFE: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// `Q7` + random letters and digits: every rule's body accepts it.
fn alnum(n: usize, seed: u64) -> String {
    format!("Q7{}", rand(ALNUM, n - 2, seed))
}

/// Every `(line, secret)` is redacted, twice is once, and the line holds a candidate.
fn all_gone(cases: &[(String, String)]) {
    for (line, secret) in cases {
        let got = red(line);
        assert!(!got.contains(secret.as_str()), "`{secret}` kept in `{got}` (from `{line}`)");
        assert!(got.contains(MARK), "{line}");
        assert_eq!(red(&got), got, "twice is once: {line}");
        let mut marks = Vec::new();
        candidates(line.as_bytes(), &mut marks);
        assert!(!marks.is_empty(), "no candidate in {line}");
    }
}

fn all_kept(lines: &[&str]) {
    for line in lines {
        assert_eq!(red(line), *line, "a near miss changed");
    }
}

#[test]
fn token_families_with_no_prefix_listed_before() {
    let (slack, discord, teams) = (alnum(24, 1), rand(URLSAFE, 68, 2), rand(HEX, 32, 3));
    let tg = format!("A{}", rand(URLSAFE, 34, 4));
    let (dapi, google, azure) =
        (rand(HEX, 32, 5), format!("0g{}", rand(URLSAFE, 60, 6)), rand(URLSAFE, 31, 7));
    let (age, fernet, aes) =
        (rand(b"QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58, 8), rand(URLSAFE, 43, 9), rand(B64, 43, 10));
    let (user, wandb, echoed) = (alnum(40, 11), rand(HEX, 40, 12), alnum(24, 13));
    let (exported, vault, aad) = (alnum(32, 14), format!("s.{}", alnum(24, 15)), rand(URLSAFE, 300, 16));
    let pscale = alnum(43, 17);
    let cases: Vec<(String, String)> = vec![
        (format!("posting to https://hooks.slack.com/services/T0AB12CD3/B0EF45GH6/{slack}"), slack),
        (format!("url: https://discord.com/api/webhooks/112233445566778899/{discord}"), discord.clone()),
        (format!("\"https://discord.com/api/webhooks/112233445566778899/{discord}\""), "112233445566778899".into()),
        (
            format!("https://acme.webhook.office.com/webhookb2/0f1e2d3c-aaaa-bbbb-cccc-111122223333@9a8b7c6d-1111-2222-3333-444455556666/IncomingWebhook/{teams}/0a1b2c3d"),
            teams,
        ),
        (format!("GET https://api.telegram.org/bot123456789:{tg}/sendMessage"), tg.clone()),
        (format!("TELEGRAM={}", format_args!("123456789:{tg}")), tg.clone()),
        (format!("bot = 123456789:{tg}"), tg),
        (format!("databricks host=x dapi{dapi}"), dapi),
        (format!("refresh {}", format_args!("1//{google}")), google),
        (format!("client secret abc8Q~{azure}"), azure),
        (format!("AGE-SECRET-KEY-1{age}"), age),
        (format!("key {fernet}="), fernet),
        (format!("aes: {aes}="), aes.clone()),
        (format!("{aes}="), aes),
        (format!("git clone https://{user}@github.com/org/repo.git"), user.clone()),
        (format!("https://{user}:x-oauth-basic@github.com/org/repo"), user),
        (format!("+ wandb login {wandb}"), wandb.clone()),
        (format!("running: vault login {vault}"), vault),
        (format!("echo {echoed} | gh auth login --with-token"), echoed.clone()),
        (format!("echo \"{echoed}\" | docker login -u ci --password-stdin ghcr.io"), echoed),
        (format!("export WANDB={exported}"), exported),
        (format!("refresh_tok 0.A{aad}"), aad),
        (format!("pscale_tkn_{pscale}"), pscale),
    ];
    all_gone(&cases);
    all_kept(&[
        "https://github.com/org/repo/settings/hooks/12345",
        "https://hooks.slack.com/services/",
        "git clone https://git@github.com/org/repo.git",
        "docker login -u ci registry.example.com",
        "echo done | tee log.txt",
        "export CUDA_VISIBLE_DEVICES=0,1",
        "export PATH=/usr/local/cuda-12.4/bin:$PATH",
        "token 151643 decoded",
        "login succeeded for user admin",
    ]);
}

#[test]
fn long_base64_blobs_anywhere_and_what_is_no_blob() {
    let (a, b) = (rand(B64, 64, 21), rand(URLSAFE, 88, 22));
    all_gone(&[(format!("data {a} end"), a.clone()), (format!("[{b}]"), b), (format!("k={a}"), a.clone())]);
    let sha = rand(HEX, 64, 23);
    let sums = format!("{sha}  logs/out.txt");
    let mangled = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5ArrayIPcLi1EEEEEvT_T0_T1_";
    let triton = "/root/.triton/cache/HY5VK2LW4U4BV6PXJDC7LZ6QCX5ZXJT2FWTVIWEPHZUWB7JHAP2A/triton_poi_fused_add_0.cubin";
    let path = "/tmp/one-occurrence.cBCQwK/D/suite/bundles/stencil_neighbour-default/2026-12-01T22-02-10Z_cuda/rungs";
    all_kept(&[
        &sums,
        mangled,
        triton,
        path,
        "GPU-5f1c2b3a-4d5e-6f70-8192-a3b4c5d6e7f8",
        "at 0x7f3a5c000000 in ThreadBlockReduceKernelWithSomeLongCamelCaseNameFor2DTensors",
        "PyTorchDistributedBackendGlooOptionsAndMoreWords12345",
    ]);
    // The measure the blob rule stands on.
    assert!(entropy(a.as_bytes()) > 4.4 && entropy(b"PyTorchDistributedBackendGlooOptions") < 4.4);
}

#[test]
fn secrets_written_encoded_are_found_and_stay_encoded() {
    let gh = format!("ghp_{}", alnum(36, 31));
    let body = &gh[4..];
    let pw = alnum(20, 32);
    let cases: Vec<(String, String)> = vec![
        (format!("url=https://h/x?token%3D{gh}%26a%3Db"), body.to_string()),
        (format!("q=token%3D{pw}"), pw.clone()),
        (format!("&lt;password&gt;{pw}&lt;/password&gt;"), pw.clone()),
        (format!("<msg>{{&quot;api_key&quot;: &quot;{pw}&quot;}}</msg>"), pw.clone()),
        (format!("<msg>https:&#x2F;&#x2F;deploy:{pw}@h&#47;r</msg>"), pw.clone()),
        (format!("{{\"log\": \"https:\\/\\/deploy:{pw}@host\\/r\"}}"), pw.clone()),
        (format!("{{\"log\": \"\\u0070assword=\\u0022{pw}\\u0022\"}}"), pw.clone()),
        (format!("a=1&amp;sig={pw}&amp;b=2"), pw),
    ];
    all_gone(&cases);
    // The output keeps its encoding: only the secret's bytes became the mark.
    assert_eq!(red(&format!("q=token%3D{}", alnum(20, 32))), "q=token%3D[REDACTED]");
    assert_eq!(
        red(&format!("<m>&quot;token&quot;: &quot;{}&quot;</m>", alnum(20, 33))),
        "<m>&quot;token&quot;: &quot;[REDACTED]&quot;</m>"
    );
    all_kept(&["100%3D full", "a &amp; b", "C:\\\\u0041 path", "x &#47; y", "%s%d %2F"]);
}

#[test]
fn a_quoted_value_runs_to_its_real_closing_quote_in_every_syntax() {
    for (line, kept) in [
        (r#"{"password": "ab\"cd the-rest-of-it", "user": "u"}"#, r#""user": "u""#),
        (r#"{"password": "ab\\", "user": "u"}"#, r#""user": "u""#),
        ("password: 'it''s the-rest-of-it'  # yaml", "# yaml"),
        ("password: ''", "''"),
        (r#"cfg = {'api_key': 'x\'y the-rest-of-it', 'n': 1}"#, "'n': 1"),
        (r#"auto token = "s3\"cr3t the-rest-of-it"; // C++"#, "// C++"),
    ] {
        let got = red(line);
        assert!(!got.contains("the-rest-of-it"), "{line} -> {got}");
        assert!(got.contains(kept), "{line} -> {got}");
    }
}

#[test]
fn cuda_gdb_std_strings_under_a_secret_name() {
    let pw = alnum(16, 41);
    let line = format!(
        "password = {{_M_dataplus = {{<std::allocator<char>> = {{<__gnu_cxx::new_allocator<char>> = {{<No data fields>}}, <No data fields>}}, _M_p = 0x7ffd5c3e9a10 \"{pw}\"}}, _M_string_length = 16, {{_M_local_buf = \"x\", _M_allocated_capacity = 7}}}}"
    );
    let got = red(&line);
    assert!(!got.contains(&pw) && got.contains("_M_p = 0x7ffd5c3e9a10 \"[REDACTED]\""), "{got}");
    all_gone(&[(format!("api_key = \"{pw}\""), pw.clone())]);
    // Not secret-named: kept.
    all_kept(&["name = {_M_dataplus = {_M_p = 0x7ffd5c3e9a10 \"resnet50\"}, _M_string_length = 8}"]);
    // `print password` then its value, in a transcript.
    let text =
        format!("(cuda-gdb) print password\n$1 = \"{pw}\"\n(cuda-gdb) print n\n$2 = \"resnet50-v1\"\n");
    let got = redact_text(&text, "t", &mut Vec::new());
    assert!(
        !got.contains(&pw) && got.contains("$1 = \"[REDACTED]\"") && got.contains("resnet50-v1"),
        "{got}"
    );
    let mut marks = Vec::new();
    candidates(text.as_bytes(), &mut marks);
    assert_eq!(marks, [0], "the print line is a candidate, for the stream's Lines to see it");
}

#[test]
fn secret_flags_in_text_that_echoes_a_command() {
    let cases: Vec<(String, String)> = vec![
        ("+ mysql -u root -p SECRETWORD db".into(), "SECRETWORD".into()),
        ("running: docker login -p XYZQWERTY registry.io".into(), "XYZQWERTY".into()),
        ("$ az login --service-principal -u app -p hunterpass --tenant t".into(), "hunterpass".into()),
        (format!("+ vercel deploy --token {}", alnum(24, 51)), alnum(24, 51)),
    ];
    all_gone(&cases);
    all_kept(&[
        "+ mkdir -p build",
        "ssh -p 2222 host",
        "docker run -p 8000:8000 image",
        "echo x | docker login --password-stdin registry.io",
        "pytest -p no:cacheprovider",
    ]);
    let argv: Vec<String> = ["docker", "login", "-p", "XYZQWERTY"].iter().map(|s| s.to_string()).collect();
    assert_eq!(redact_args(&argv, "c", &mut Vec::new())[3], MARK);
    let key = rand(HEX, 40, 52);
    let argv: Vec<String> = ["wandb".into(), "login".into(), key.clone()].to_vec();
    let mut out = Vec::new();
    assert_eq!(redact_args(&argv, "c", &mut out)[2], MARK);
    assert!(format!("{out:?}").find(&key).is_none());
}

#[test]
fn records_name_the_kind_never_a_random_name() {
    let name = alnum(32, 61);
    let vars = vec![
        (format!("X_{name}_TOKEN"), "value-123456".to_string()),
        (name.clone(), format!("hf_{}", alnum(30, 62))),
    ];
    let mut out = Vec::new();
    let _ = redact_env(&vars, "env", &mut out);
    assert_eq!(out.len(), 2, "{out:?}");
    for r in &out {
        assert!(!r.what.contains(&name) && !r.place.contains(&name), "{r:?}");
    }
    let args: Vec<String> = vec!["tool".into(), format!("--{name}-token"), "v-123456".into()];
    let mut out = Vec::new();
    let _ = redact_args(&args, "command", &mut out);
    assert!(out.iter().all(|r| !r.what.contains(&name)), "{out:?}");
    let json = serde_json::json!({ name.clone(): "hf_".to_string() + &alnum(30, 63), "api_key": "v-123456" });
    let mut out = Vec::new();
    let _ = redact_json(&json, "recipe", &mut out);
    assert!(out.iter().all(|r| !r.what.contains(&name)), "{out:?}");
    assert_eq!(record_name("CUDA_VISIBLE_DEVICES", "x"), "CUDA_VISIBLE_DEVICES");
}

//! Tests of the shapes from gitleaks' and trufflehog's rules: each planted value is gone, what
//! says what it was stays, and a near miss beside it is kept as it was.
//!
//! Must not: hold a token-shaped literal.

use super::line::*;
use super::names::*;
use super::structured::*;
use super::test_util::*;
use crate::model::Invocation;

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
        (format!("\"SecretAccessKey\": \"{secret}\","), "\"SecretAccessKey\": \"[REDACTED]\",".to_string()),
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
        &format!("$1 = {{user = 0x5555555592c0 \"bob\", api_key = 0x5555555592a0 \"{}\", len = 7}}", f.plain),
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
        line.push_str(&format!("{t} Bearer {} --token {} password: {}{n} ", f.bearer, f.plain, f.password));
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
        "login ",
        "echo x | login ",
        "echo ",
        "| token ",
        "export A=",
        "1//0",
        "dapi",
        "0Q~",
        "https://h/hooks/",
        "://hooks.x/",
        "1234567:A",
        "%3D",
        "&#47;",
        "&amp;",
        "\\u002F",
        "Q7abcdefghijklmnopqrstuvwxyz0123456789ABC ",
        "Q7abcdefghijklmnopqrstuvwxyz0123456789AB/",
        // Issue 42's rules: tuples and lists under a secret key, URL passwords that go on past
        // `#`, escapes of escapes, `-a` after redis-cli, tokens of 20 to 39 bytes.
        "auth=('x', ",
        "api_keys: [a1b2c3d4e5, ",
        "access_tokens = [",
        "https://u:p#",
        "a://u:p@#",
        "\\\"",
        "%25",
        "redis-cli -a x ",
        "Q7abcdEFGHij23klmnoPQ ",
        "SKa1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7 ",
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

//! The held-out corpus of issue 42: secrets generated from the FAMILIES of the public rule sets
//! of gitleaks, trufflehog and detect-secrets (a service's prefixed token of a service no list
//! names, generic high-entropy keys under any secret-looking key in any syntax, chat-bot and
//! telephony tokens, JWTs, PEM blocks, basic-auth headers, connection strings, password flags of
//! common CLIs, credentials in code structures), every value random and every name built from
//! word parts. Nothing here was written to pass the redactor: names and values are drawn, and
//! the families are those of the rule sets, not of `xtask/src/redact/`.
//!
//! Must not: hold a token-shaped literal (every value is made at run time); be tuned to what the
//! redactor does (a family that leaks is a finding, not something to drop).

use super::plant::Rng;

/// One planted value: the family, how it is written in a line of text, the secret part (what
/// must not survive), and, for a value under a name, the name and the value as an environment
/// or an argument would hold them.
pub struct Item {
    pub family: &'static str,
    pub line: String,
    pub secret: String,
    pub kv: Option<(String, String)>,
    /// The words of the command that holds it, for an argv.
    pub argv: Option<Vec<String>>,
}

impl Rng {
    pub fn below(&mut self, n: usize) -> usize {
        self.next() as usize % n
    }

    pub fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str {
        v[self.below(v.len())]
    }

    /// A random password with punctuation a shell and a URL care about (`#`, `@`, `%`, `!`).
    pub fn password(&mut self, n: usize) -> String {
        let mut s = self.from(b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnpqrstuvwxyz23456789", n - 2);
        let p = self.from(b"#@%!^*+=~.:,-_", 2);
        let at = 1 + self.below(n - 3);
        s.insert_str(at, &p);
        s
    }

    /// A value of one of the alphabets keys come in.
    pub fn value(&mut self) -> String {
        match self.below(6) {
            0 => {
                let n = 12 + self.below(30);
                self.alnum(n)
            }
            1 => {
                let n = [32, 40, 64][self.below(3)];
                self.hex(n)
            }
            2 => {
                let n = 20 + self.below(40);
                self.b64_token(n)
            }
            3 => {
                let n = 10 + self.below(14);
                self.password(n)
            }
            4 => {
                let n = 20 + self.below(30);
                self.urlsafe(n)
            }
            _ => format!("{}{}", self.from(b"abcdefghijklmnopqrstuvwxyz", 6), self.digits(6)),
        }
    }
}

/// Words a secret's name is made of (the last part says what it is).
const SECRET_PARTS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "pass",
    "passphrase",
    "secret",
    "secret_key",
    "token",
    "access_token",
    "refresh_token",
    "auth_token",
    "api_key",
    "apikey",
    "access_key",
    "private_key",
    "client_secret",
    "credentials",
    "creds",
    "auth",
    "signing_key",
    "encryption_key",
    "master_key",
    "webhook_secret",
    "secret_access_key",
    "session_token",
    "app_password",
    "db_pass",
    "psk",
    "key",
];

/// What a name may start with: a service, a role, a place.
const OWNERS: &[&str] = &[
    "db", "app", "svc", "mysql", "redis", "smtp", "mail", "ldap", "proxy", "admin", "root", "service",
    "client", "deploy", "backup", "vault", "ci", "registry", "queue", "cache", "search", "payments",
    "storage", "billing", "grafana", "sentry", "kafka", "mongo", "pg", "minio", "openai", "wandb",
];

/// A secret-looking name in one case style: `MYSQL_PWD`, `redis-password`, `clientSecret`,
/// `ApiKey`.
pub fn name(r: &mut Rng, style: usize) -> String {
    let owner = r.pick(OWNERS);
    let part = r.pick(SECRET_PARTS);
    let words: Vec<&str> = owner.split('_').chain(part.split('_')).collect();
    match style % 4 {
        0 => words.join("_").to_uppercase(),
        1 => words.join("_"),
        2 => words.join("-"),
        _ => {
            let mut s = String::new();
            for (i, w) in words.iter().enumerate() {
                if i == 0 {
                    s.push_str(w);
                } else {
                    s.push_str(&w[..1].to_uppercase());
                    s.push_str(&w[1..]);
                }
            }
            s
        }
    }
}

fn item(family: &'static str, line: String, secret: String) -> Item {
    Item { family, line, secret, kv: None, argv: None }
}

fn words(s: &str) -> Option<Vec<String>> {
    Some(s.split(' ').map(str::to_string).collect())
}

/// The corpus: `n` items drawn over the families, with fresh values.
pub fn corpus(seed: u64, n: usize) -> Vec<Item> {
    let mut r = Rng(seed);
    (0..n).map(|k| draw(&mut r, k)).collect()
}

fn lower(r: &mut Rng, n: usize) -> String {
    r.from(b"abcdefghijklmnopqrstuvwxyz", n)
}

/// How many families there are.
pub const FAMILIES: usize = 32;

/// One item of family `k % FAMILIES`.
fn draw(r: &mut Rng, k: usize) -> Item {
    if k % FAMILIES >= 24 {
        return draw_more(r, k % FAMILIES);
    }
    match k % FAMILIES {
        0 => {
            // A service's prefixed token, of a service no list names.
            let prefix = format!(
                "{}{}",
                {
                    let n = 2 + r.below(4);
                    lower(r, n)
                },
                r.pick(&["_", "-", "_live_", "_pat_"])
            );
            let body = {
                let n = 32 + r.below(16);
                r.alnum(n)
            };
            item("prefixed token (unknown service)", format!("using {prefix}{body} for upload"), body)
        }
        1 => {
            let body = format!("AA{}", r.urlsafe(33));
            let id = {
                let n = 8 + r.below(3);
                r.digits(n)
            };
            let mut it =
                item("chat-bot token (id:AA...)", format!("bot = Bot(\"{id}:{body}\")"), body.clone());
            it.kv = Some(("NOTIFY_BOT".into(), format!("{id}:{body}")));
            it
        }
        2 => {
            let body = r.from(b"0123456789abcdef", 32);
            let p = r.pick(&["SK", "AC"]);
            let mut it = item(
                "telephony key (SK/AC + 32 hex)",
                format!("client = Client(\"{p}{body}\", sid)"),
                body.clone(),
            );
            it.kv = Some(("SMS_SID".into(), format!("{p}{body}")));
            it
        }
        3 => {
            let h = format!("eyJ{}", r.urlsafe(20));
            let p = format!("eyJ{}", r.urlsafe(40));
            let s = r.urlsafe(43);
            let jwt = format!("{h}.{p}.{s}");
            item("JWT", format!("session restored from {jwt}"), s)
        }
        4 => {
            let user = lower(r, 6);
            let pw = {
                let n = 12 + r.below(8);
                r.password(n)
            };
            let b = base64(&format!("{user}:{pw}"));
            item("basic-auth header", format!("> Authorization: Basic {b}"), b)
        }
        5 => {
            let (user, pw, host) = (
                lower(r, 5),
                {
                    let n = 10 + r.below(10);
                    r.password(n)
                },
                lower(r, 6),
            );
            let scheme = r.pick(&["postgresql", "mysql", "mongodb+srv", "redis", "amqp", "https"]);
            item(
                "URL password (any character)",
                format!("connecting to {scheme}://{user}:{pw}@{host}.internal:5432/app"),
                pw,
            )
        }
        6 => {
            let pw = {
                let n = 10 + r.below(8);
                r.password(n)
            };
            let host = lower(r, 6);
            item(
                "connection string (Password=)",
                format!("Server={host}.db;Database=app;User Id=sa;Password={pw};Encrypt=true"),
                pw,
            )
        }
        7 => {
            let pw = r.value();
            let (line, argv) = match r.below(6) {
                0 => (format!("redis-cli -h cache -a {pw} ping"), true),
                1 => (format!("mysql -u root -p{pw} app"), true),
                2 => (format!("psql --password {pw} -h db"), true),
                3 => (format!("sshpass -p {pw} ssh deploy@host"), true),
                4 => (format!("curl -u admin:{pw} https://example.org/api"), true),
                _ => (format!("mongo --username admin --password {pw} db"), true),
            };
            let mut it = item("password flag of a CLI", line.clone(), pw);
            if argv {
                it.argv = words(&line);
            }
            it
        }
        8 => {
            let n = name(r, 0);
            let v = r.value();
            let mut it = item("environment K=V (name by word parts)", format!("{n}={v}"), v.clone());
            it.kv = Some((n, v));
            it
        }
        9 => {
            let n = name(r, 1);
            let v = r.value();
            item("k=v in text", format!("config: {n}={v} retries=3"), v)
        }
        10 => {
            let n = name(r, 3);
            let v = r.value();
            item(
                "JSON",
                format!("{{\"user\": \"ci\", \"{n}\": \"{}\", \"n\": 1}}", v.replace('\\', "\\\\")),
                v,
            )
        }
        11 => {
            let n = name(r, 1);
            let v = r.value();
            item("YAML", format!("  {n}: {v}"), v)
        }
        _ => draw_mid(r, k % FAMILIES),
    }
}

/// Families 12 to 23: keys in every syntax, escapes, random tokens, PEM blocks, flags.
fn draw_mid(r: &mut Rng, family: usize) -> Item {
    match family {
        12 => {
            let n = name(r, 1);
            let v = r.value();
            item("INI", format!("{n} = {v}"), v)
        }
        13 => {
            let n = name(r, 3);
            let ns = {
                let n = 2 + r.below(3);
                lower(r, n)
            };
            let v = r.value().replace(['&', '<'], "");
            item("XML with a namespace", format!("<{ns}:{n}>{v}</{ns}:{n}>"), v)
        }
        14 => {
            let (u, pw) = (lower(r, 6), r.value());
            item("Python auth tuple", format!("requests.get(url, auth=(\"{u}\", \"{pw}\"))"), pw)
        }
        15 => {
            let n = name(r, 1);
            let v = r.value();
            item("Python call keyword", format!("client = Client(host=\"h\", {n}='{v}')"), v)
        }
        16 => {
            let n = name(r, 1);
            let (a, b) = (r.value(), r.alnum(24));
            item("a list under a secret key", format!("{{'{n}s': ['{a}', '{b}']}}"), b)
        }
        17 => {
            let n = name(r, 1);
            let v = {
                let n = 16 + r.below(16);
                r.alnum(n)
            };
            let inner = format!("{{\"{n}\": \"{v}\"}}");
            let once = serde_json::to_string(&inner).unwrap();
            let twice = serde_json::to_string(&once).unwrap();
            item("two levels of escaping", format!("{{\"payload\": {twice}}}"), v)
        }
        18 => {
            let n = name(r, 1);
            let v = {
                let n = 16 + r.below(16);
                r.alnum(n)
            };
            let q = percent(&percent(&format!("{n}={v}")));
            item("percent-encoded twice", format!("GET /cb?state={q}"), v)
        }
        19 => {
            let v = {
                let n = 24 + r.below(24);
                r.alnum(n)
            };
            let n = r.pick(&["value", "id", "arg", "payload", "x"]);
            item("high-entropy token, no key", format!("registered {n} {v} ok"), v)
        }
        20 => {
            let body: Vec<String> = (0..6).map(|_| r.b64(64)).collect();
            let kind = r.pick(&["RSA ", "EC ", "OPENSSH ", ""]);
            let line = format!(
                "-----BEGIN {kind}PRIVATE KEY-----\n{}\n-----END {kind}PRIVATE KEY-----",
                body.join("\n")
            );
            item("PEM block", line, body[2].clone())
        }
        21 => {
            let n = name(r, 2);
            let v = r.value();
            let line = format!("python train.py --{n} {v} --epochs 3");
            let mut it = item("--flag value", line.clone(), v);
            it.argv = words(&line);
            it
        }
        22 => {
            let v = {
                let n = 40 + r.below(24);
                r.urlsafe(n)
            };
            item("escaped unicode JSON", format!("{{\"auth\": \"\\u0042earer {v}\"}}"), v)
        }
        23 => {
            let n = name(r, 0);
            let v = r.value();
            let mut it = item("export NAME=V", format!("export {n}='{v}'"), v.clone());
            it.kv = Some((n, v));
            it
        }
        _ => unreachable!("family {family}"),
    }
}

/// Families 24 to 31: cloud and registry credentials in their files' syntax.
fn draw_more(r: &mut Rng, family: usize) -> Item {
    match family {
        24 => {
            let v = r.b64_token(40);
            item("AWS secret key (credentials file)", format!("aws_secret_access_key = {v}"), v)
        }
        25 => {
            let v = r.b64_token(86);
            let a = lower(r, 8);
            item(
                "storage connection string (AccountKey=)",
                format!("DefaultEndpointsProtocol=https;AccountName={a};AccountKey={v}==;EndpointSuffix=core.windows.net"),
                v,
            )
        }
        26 => {
            let (u, pw) = (lower(r, 6), r.password(14));
            let v = base64(&format!("{u}:{pw}"));
            let host = lower(r, 7);
            item(
                "registry auth (docker config)",
                format!("{{\"auths\": {{\"{host}.io\": {{\"auth\": \"{v}\"}}}}}}"),
                v,
            )
        }
        27 => {
            let v = r.urlsafe(36);
            let host = lower(r, 6);
            item("registry token (.npmrc)", format!("//{host}.example.org/:_authToken={v}"), v)
        }
        28 => {
            let n = name(r, 2);
            let v = r.alnum(32);
            let line = format!("curl -sS -H 'X-{n}: {v}' https://api.example.org/v1");
            let mut it = item("custom secret header", line.clone(), v);
            it.argv = Some(vec![
                "curl".into(),
                "-sS".into(),
                "-H".into(),
                format!("X-{n}: {}", it.secret),
                "https://api.example.org/v1".into(),
            ]);
            it
        }
        29 => {
            let prefix = r.pick(&["ghp_", "glpat-", "xoxb-", "sk_live_", "hf_", "npm_", "AKIA", "SG."]);
            let body = if prefix == "AKIA" { r.upper(16) } else { r.alnum(36) };
            item("token of a listed service", format!("token={prefix}{body}"), body)
        }
        30 => {
            let body: String = (0..3).map(|_| r.b64(64)).collect::<Vec<_>>().join("\\n");
            let line = format!(
                "{{\"type\": \"service_account\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\n{body}\\n-----END PRIVATE KEY-----\\n\"}}"
            );
            let secret = body[70..110].to_string();
            item("private key in a JSON file", line, secret)
        }
        _ => {
            let n = name(r, 0);
            let v = r.value();
            item("os.environ assignment", format!("os.environ[\"{n}\"] = \"{v}\""), v)
        }
    }
}

pub fn percent(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

pub fn base64(s: &str) -> String {
    base64_bytes(s.as_bytes())
}

pub fn base64_bytes(b: &[u8]) -> String {
    const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in b.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Whether `secret` survives in `hay`: whole, or its first or last 8 bytes (a rule that cut
/// the value at a punctuation mark left the rest).
pub fn survives(hay: &[u8], secret: &str) -> bool {
    let s = secret.as_bytes();
    let found = |n: &[u8]| memchr::memmem::find(hay, n).is_some();
    if s.len() < 16 {
        return found(s);
    }
    found(s) || found(&s[..8]) || found(&s[s.len() - 8..])
}

//! `bundle pack --anonymize`: a copy of a bundle with the home folders, user names and host
//! names replaced, the same way in every file and file name (`/home/alice` is `/home/user`
//! everywhere, the second user found `user2`, the host `host`), so that a bundle can go on a
//! public issue without saying who ran it where. Secrets were already kept out when the bundle
//! was written ([`crate::redact`]); this is about names.
//!
//! Which names: the homes the bundle's own texts show (`/home/NAME/`, `/Users/NAME/`, `/root/`)
//! and the packer's `$HOME`; the users of those homes and the packer's `$USER`; the host the
//! manifest records (`host.hostname`, and its short form) and the packer's. A name of 4
//! characters or more is replaced wherever it stands as a word; a shorter one (`vm`, `bob`)
//! only where it is surely that name: in a home path, in `user@host`, in `USER=`/`HOSTNAME=`,
//! in the manifest's `hostname:` and in the GPU dumps' and pipes' names (`core_vm.977.`).
//!
//! Must not: change the bundle it reads (it writes a copy), read or replace inside binary files
//! and coredumps (they are linked or copied as they are, and counted), or run anything.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::leaves::Content;

/// The names to replace, each with what replaces it, longest first (a home before its user).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    /// Home folders, `/home/alice` -> `/home/user`.
    pub homes: Vec<(String, String)>,
    /// User names, `alice` -> `user`.
    pub users: Vec<(String, String)>,
    /// Host names, `gpu-node-17.cluster.example` -> `host`.
    pub hosts: Vec<(String, String)>,
}

/// Below this many characters a name is replaced only where its context says what it is.
const SHORT: usize = 4;

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// The user names of the homes in `text` (`/home/NAME/`, `/Users/NAME/`), in order.
fn homes_in(text: &str, out: &mut Vec<String>) {
    for prefix in ["/home/", "/Users/"] {
        let mut from = 0;
        while let Some(i) = text[from..].find(prefix) {
            let start = from + i + prefix.len();
            let name: String =
                text[start..].bytes().take_while(|&b| is_word_byte(b) || b == b'.').map(char::from).collect();
            from = start;
            let bounded = text.as_bytes().get(start + name.len()).is_none_or(|&b| !is_word_byte(b));
            if !name.is_empty() && bounded && !out.contains(&name) && out.len() < 16 {
                out.push(name);
            }
        }
    }
}

impl Names {
    /// The names of `texts` (the bundle's text files), the manifest's `hostname` and the
    /// packer's own (`home`, `user`, `host`: `$HOME`, `$USER`, the machine's name).
    pub fn find<'a>(
        texts: impl IntoIterator<Item = &'a str>,
        hostname: Option<&str>,
        home: Option<&str>,
        user: Option<&str>,
        host: Option<&str>,
    ) -> Names {
        let texts: Vec<&str> = texts.into_iter().collect();
        let mut users: Vec<String> = Vec::new();
        let mut root = false;
        for t in &texts {
            homes_in(t, &mut users);
            root |= t.contains("/root/");
        }
        if let Some(u) = user.filter(|u| !u.is_empty() && *u != "root") {
            if !users.iter().any(|x| x == u) {
                users.push(u.to_string());
            }
        }
        // A known user's `user@HOST` (a shell prompt, an ssh line) names a host too.
        let mut prompted: Vec<String> = Vec::new();
        for t in &texts {
            for u in users.iter().map(String::as_str).chain(root.then_some("root")) {
                let at = format!("{u}@");
                for (i, _) in t.match_indices(&at) {
                    let bounded = i == 0 || !is_word_byte(t.as_bytes()[i - 1]);
                    let h: String = t[i + at.len()..]
                        .bytes()
                        .take_while(|&b| is_word_byte(b) || b == b'.')
                        .map(char::from)
                        .collect();
                    let h = h.trim_end_matches('.').to_string();
                    if bounded && !h.is_empty() && !prompted.contains(&h) && prompted.len() < 16 {
                        prompted.push(h);
                    }
                }
            }
        }
        let mut n = Names::default();
        for (i, u) in users.iter().enumerate() {
            let to = if i == 0 { "user".to_string() } else { format!("user{}", i + 1) };
            n.homes.push((format!("/home/{u}"), format!("/home/{to}")));
            n.homes.push((format!("/Users/{u}"), format!("/home/{to}")));
            n.users.push((u.clone(), to));
        }
        if root || home == Some("/root") {
            n.homes.push(("/root".into(), "/home/user".into()));
        }
        if let Some(h) = home.filter(|h| h.len() > 1 && !n.homes.iter().any(|(f, _)| f == h)) {
            n.homes.push((h.trim_end_matches('/').to_string(), "/home/user".into()));
        }
        let mut hosts: Vec<String> = Vec::new();
        let named = [hostname, host].into_iter().flatten().map(str::trim);
        for h in named.chain(prompted.iter().map(String::as_str)).filter(|h| !h.is_empty()) {
            for form in [h, h.split('.').next().unwrap_or(h)] {
                if !hosts.iter().any(|x| x == form) && form != "localhost" {
                    hosts.push(form.to_string());
                }
            }
        }
        for (i, h) in hosts.iter().enumerate() {
            n.hosts.push((h.clone(), if i == 0 { "host".into() } else { format!("host{}", i + 1) }));
        }
        for list in [&mut n.homes, &mut n.users, &mut n.hosts] {
            list.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        }
        n
    }

    /// Nothing to replace.
    pub fn is_empty(&self) -> bool {
        self.homes.is_empty() && self.users.is_empty() && self.hosts.is_empty()
    }

    /// `text` with every name replaced; how many replacements.
    pub fn apply(&self, text: &str) -> (String, usize) {
        let mut out = text.to_string();
        let mut count = 0;
        for (from, to) in &self.homes {
            count += replace_bounded(&mut out, from, to, &|_, after| after.is_none_or(|b| !is_word_byte(b)));
        }
        for (list, contexts) in [(&self.users, USER_CONTEXTS), (&self.hosts, HOST_CONTEXTS)] {
            for (from, to) in list {
                let word = |before: Option<u8>, after: Option<u8>| {
                    before.is_none_or(|b| !is_word_byte(b)) && after.is_none_or(|b| !is_word_byte(b))
                };
                if from.len() >= SHORT {
                    count += replace_bounded(&mut out, from, to, &word);
                } else {
                    for (pre, post) in contexts {
                        let (f, t) = (format!("{pre}{from}{post}"), format!("{pre}{to}{post}"));
                        count += replace_bounded(&mut out, &f, &t, &|b, a| {
                            (pre.is_empty() && b.is_none_or(|b| !is_word_byte(b)) || !pre.is_empty())
                                && (post.is_empty() && a.is_none_or(|a| !is_word_byte(a)) || !post.is_empty())
                        });
                    }
                }
            }
        }
        (out, count)
    }
}

/// Where a short user name is surely one: `alice@`, `USER=`, `LOGNAME=`, `user: `.
const USER_CONTEXTS: &[(&str, &str)] = &[("", "@"), ("USER=", ""), ("LOGNAME=", ""), ("USER: ", "")];
/// Where a short host name is surely one: `@vm`, `hostname: vm`, `HOSTNAME=vm`, and the dumps'
/// and pipes' names (`core_vm.`, `core.vm.`, `corepipe.vm.`).
const HOST_CONTEXTS: &[(&str, &str)] =
    &[("@", ""), ("hostname: ", ""), ("HOSTNAME=", ""), ("core_", "."), ("core.", "."), ("corepipe.", ".")];

/// Replaces each `from` in `s` whose neighbours (the bytes before and after) `ok` accepts.
fn replace_bounded(
    s: &mut String,
    from: &str,
    to: &str,
    ok: &dyn Fn(Option<u8>, Option<u8>) -> bool,
) -> usize {
    if from.is_empty() || !s.contains(from) {
        return 0;
    }
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let (mut last, mut n) = (0, 0);
    for (i, _) in s.match_indices(from) {
        if i < last {
            continue;
        }
        let before = i.checked_sub(1).map(|j| b[j]);
        let after = b.get(i + from.len()).copied();
        if ok(before, after) {
            out.push_str(&s[last..i]);
            out.push_str(to);
            last = i + from.len();
            n += 1;
        }
    }
    out.push_str(&s[last..]);
    *s = out;
    n
}

/// The text files of a bundle, by path relative to it (each up to 64 MiB; larger ones, the
/// coredumps and what is not UTF-8 are not kept), read once for [`Names::find`] and [`copy`].
pub fn texts_of(bundle: &Path) -> BTreeMap<PathBuf, String> {
    walkdir::WalkDir::new(bundle)
        .sort_by_file_name()
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file() && e.metadata().is_ok_and(|m| m.len() <= 64 << 20))
        .filter_map(|e| {
            let rel = e.path().strip_prefix(bundle).ok()?.to_path_buf();
            // A coredump, told by its content: not read whole.
            if matches!(super::leaves::content(e.path()), Ok(Content::GpuCore | Content::CpuCore)) {
                return None;
            }
            Some((rel, String::from_utf8(fs::read(e.path()).ok()?).ok()?))
        })
        .collect()
}

/// What [`copy`] did.
#[derive(Debug, Default)]
pub struct Copied {
    pub files: usize,
    pub replaced: usize,
    /// Files copied as they were: not text.
    pub binary: Vec<String>,
}

/// Copies the bundle `from` into `to` (a folder that must not exist), every name anonymized
/// with `names` and every text of `texts` ([`texts_of`]) written anonymized; other files (not
/// text, or too large to read) are linked or copied as they are.
pub fn copy(from: &Path, to: &Path, texts: &BTreeMap<PathBuf, String>, names: &Names) -> Result<Copied> {
    let mut done = Copied::default();
    for e in walkdir::WalkDir::new(from).sort_by_file_name() {
        let e = e.with_context(|| format!("cannot read the bundle {}", from.display()))?;
        let rel = e.path().strip_prefix(from).unwrap_or(e.path());
        let (rel_anon, n) = names.apply(&rel.to_string_lossy());
        done.replaced += n;
        let dest: PathBuf = to.join(rel_anon.as_str());
        let t = e.file_type();
        if t.is_dir() {
            fs::create_dir_all(&dest).with_context(|| format!("cannot create {}", dest.display()))?;
        } else if t.is_file() {
            let wrote = match texts.get(rel) {
                Some(text) => {
                    let (anon, n) = names.apply(text);
                    done.replaced += n;
                    fs::write(&dest, anon)
                }
                None => {
                    done.binary.push(rel_anon.clone());
                    fs::hard_link(e.path(), &dest).or_else(|_| fs::copy(e.path(), &dest).map(|_| ()))
                }
            };
            wrote.with_context(|| format!("cannot write {}", dest.display()))?;
            done.files += 1;
        }
        // Links and other kinds are not copied: a bundle holds none (pack refuses them).
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Names {
        let texts = ["cwd: /home/alice/proj\nsource: /Users/bob/x.yaml\n"];
        Names::find(
            texts,
            Some("gpu-node-17.cluster.example"),
            Some("/home/alice"),
            Some("alice"),
            Some("vm"),
        )
    }

    #[test]
    fn homes_users_and_hosts_are_found_and_numbered_in_order() {
        let n = names();
        assert!(n.homes.contains(&("/home/alice".into(), "/home/user".into())), "{n:?}");
        assert!(n.homes.contains(&("/Users/bob".into(), "/home/user2".into())), "{n:?}");
        assert!(n.users.contains(&("alice".into(), "user".into())));
        assert!(n.users.contains(&("bob".into(), "user2".into())));
        assert!(n.hosts.contains(&("gpu-node-17.cluster.example".into(), "host".into())), "{n:?}");
        assert!(n.hosts.contains(&("gpu-node-17".into(), "host2".into())), "{n:?}");
        assert!(n.hosts.contains(&("vm".into(), "host3".into())), "{n:?}");
    }

    #[test]
    fn names_are_replaced_as_words_and_short_ones_only_in_their_contexts() {
        let n = names();
        let text = "cd /home/alice/proj && ssh alice@gpu-node-17 ls /home/alicex\n\
                    hostname: vm\ncore_vm.977.1796 corepipe.vm.977\nthe vm booted; malice; bob ran; bob@vm\n\
                    gpu-node-17.cluster.example gpu-node-170\n";
        let (out, count) = n.apply(text);
        assert!(out.contains("cd /home/user/proj && ssh user@host2 ls /home/alicex"), "{out}");
        assert!(out.contains("hostname: host3\ncore_host3.977.1796 corepipe.host3.977"), "{out}");
        // `vm` and `bob` as plain words stay: too short to be sure.
        assert!(out.contains("the vm booted; malice; bob ran; user2@host3"), "{out}");
        assert!(out.contains("host gpu-node-170"), "{out}");
        assert!(count >= 8, "{count}");
        // Idempotent: nothing left to replace.
        assert_eq!(n.apply(&out).1, 0, "{out}");
    }

    #[test]
    fn a_copy_is_anonymized_in_names_and_texts_and_the_bundle_stays() {
        let tmp = std::env::temp_dir().join(format!("anon-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        let b = tmp.join("b");
        fs::create_dir_all(b.join("rungs/01-baseline")).unwrap();
        fs::write(b.join("manifest.yaml"), "host:\n  hostname: vm\nroot: /home/alice/b\n").unwrap();
        fs::write(b.join("rungs/01-baseline/core_vm.12.34"), [0xff, 0xfe, b'v', b'm']).unwrap();
        fs::write(b.join("rungs/01-baseline/stdout.log"), "alice@vm:/home/alice$ ./app\n").unwrap();
        let n = Names::find(["root: /home/alice/b"], Some("vm"), None, None, None);
        let c = copy(&b, &tmp.join("out"), &texts_of(&b), &n).unwrap();
        assert_eq!(c.files, 3);
        assert_eq!(c.binary, ["rungs/01-baseline/core_host.12.34"]);
        let log = fs::read_to_string(tmp.join("out/rungs/01-baseline/stdout.log")).unwrap();
        assert_eq!(log, "user@host:/home/user$ ./app\n");
        assert!(fs::read_to_string(tmp.join("out/manifest.yaml")).unwrap().contains("hostname: host\n"));
        assert!(fs::read_to_string(b.join("manifest.yaml")).unwrap().contains("hostname: vm"));
        let _ = fs::remove_dir_all(&tmp);
    }
}

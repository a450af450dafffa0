//! What the planted-secret tests share (tests/it/secrets.rs, tests/it/secrets_matrix.rs):
//! values made at run time (no token-shaped literal in the sources), the shims in front of the
//! stand-ins that print the planted file, and the check of every place a bundle is shared from
//! (both archives, decompressed and entry by entry, `bundle report`, `bundle show`).
//!
//! Must not: hold a token-shaped literal, or write outside a test's scratch folder.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

use super::standins;

/// A pseudo-random generator, so that every planted value is distinct and the same each run.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    pub fn from(&mut self, alphabet: &[u8], n: usize) -> String {
        (0..n).map(|_| alphabet[self.next() as usize % alphabet.len()] as char).collect()
    }

    /// Letters and digits, starting with an uppercase letter and a digit (every key's rule
    /// accepts that body).
    pub fn alnum(&mut self, n: usize) -> String {
        format!("Q7{}", self.from(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", n - 2))
    }

    pub fn upper(&mut self, n: usize) -> String {
        self.from(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", n)
    }

    pub fn digits(&mut self, n: usize) -> String {
        self.from(b"0123456789", n)
    }

    pub fn b64(&mut self, n: usize) -> String {
        self.from(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", n)
    }

    /// [`Rng::b64`] starting `Q7` (a case change and a digit).
    pub fn b64_token(&mut self, n: usize) -> String {
        format!("Q7{}", self.b64(n - 2))
    }

    pub fn hex(&mut self, n: usize) -> String {
        format!("a{}", self.from(b"0123456789abcdef", n - 1))
    }

    pub fn urlsafe(&mut self, n: usize) -> String {
        format!("Q7{}", self.from(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", n - 2))
    }

    pub fn word(&mut self, n: usize) -> String {
        self.from(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", n)
    }
}

/// One planted shape: the text as it is planted, and the secret parts that must not survive.
pub struct Shape {
    pub name: &'static str,
    pub text: String,
    pub secrets: Vec<String>,
}

pub fn shape(name: &'static str, text: String, secrets: &[&str]) -> Shape {
    Shape { name, text, secrets: secrets.iter().map(|s| s.to_string()).collect() }
}

pub fn write_exec(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A `compute-sanitizer` and a `cuda-gdb` in `dir` that print `$PLANT_FILE` before the
/// stand-ins, the first also planting `$PLANT_XML`'s lines in its `--save` report.
pub fn write_tool_shims(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let standins = standins().display().to_string();
    write_exec(
        &dir.join("compute-sanitizer"),
        &format!(
            "#!/bin/sh\ncase ${{1:-}} in --version | -v) exec '{standins}/compute-sanitizer' \"$@\" ;; esac\n\
             echo 'planted: compute-sanitizer'\ncat \"$PLANT_FILE\"\n\
             save=\nprev=\nfor a in \"$@\"; do\n  [ \"$prev\" = --save ] && save=$a\n  case $a in --save=*) save=${{a#--save=}} ;; esac\n  prev=$a\ndone\n\
             '{standins}/compute-sanitizer' \"$@\"\ncode=$?\n\
             if [ -n \"$save\" ] && [ -f \"$save\" ]; then\n  \
             awk -v f=\"$PLANT_XML\" '/<\\/ComputeSanitizerOutput>/ {{ while ((getline l < f) > 0) print l }} {{ print }}' \"$save\" >\"$save.plant\" && mv \"$save.plant\" \"$save\"\n\
             fi\nexit $code\n"
        ),
    );
    write_exec(
        &dir.join("cuda-gdb"),
        &format!(
            "#!/bin/sh\ncase ${{1:-}} in --version | -version) exec '{standins}/cuda-gdb' \"$@\" ;; esac\n\
             echo 'planted: cuda-gdb'\ncat \"$PLANT_FILE\"\nexec '{standins}/cuda-gdb' \"$@\"\n"
        ),
    );
}

pub fn contains(hay: &[u8], needle: &str) -> bool {
    memchr::memmem::find(hay, needle.as_bytes()).is_some()
}

/// `xtask ARGS` in `dir`, with `path` as PATH: (status, stdout, stderr).
pub fn xtask(dir: &Path, path: &str, args: &[&str]) -> (bool, Vec<u8>, Vec<u8>) {
    let o = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .current_dir(dir)
        .env("PATH", path)
        .stdin(Stdio::null())
        .output()
        .expect("cannot run the xtask binary");
    (o.status.success(), o.stdout, o.stderr)
}

/// Where each planted value was found: `place: shape (value)`.
#[derive(Default)]
pub struct Leaks(pub Vec<String>);

impl Leaks {
    pub fn check(&mut self, place: &str, bytes: &[u8], planted: &[(String, String)]) {
        for (name, secret) in planted {
            if contains(bytes, secret) {
                self.0.push(format!("{place}: {name} (`{secret}`)"));
            }
        }
    }

    /// Packs the bundle at `root` both ways and reads both archives (decompressed, tar
    /// headers and all, then entry by entry), then `bundle report` and `bundle show`.
    pub fn check_shared(&mut self, dir: &Path, path: &str, root: &Path, planted: &[(String, String)]) {
        let r = root.to_str().unwrap();
        for (args, ext) in
            [(vec!["bundle", "pack", r], "tar.zst"), (vec!["bundle", "pack", "--gzip", r], "tar.gz")]
        {
            let (ok, o, e) = xtask(dir, path, &args);
            assert!(ok, "{}{}", String::from_utf8_lossy(&o), String::from_utf8_lossy(&e));
            self.check(&format!("terminal of bundle pack ({ext})"), &[o, e].concat(), planted);
            let archive = root.with_extension(ext);
            let file = std::fs::File::open(&archive).unwrap_or_else(|e| panic!("{}: {e}", archive.display()));
            let mut tar = Vec::new();
            if ext == "tar.zst" {
                zstd::stream::read::Decoder::new(file).unwrap().read_to_end(&mut tar).unwrap();
            } else {
                flate2::read::GzDecoder::new(file).read_to_end(&mut tar).unwrap();
            }
            assert!(contains(&tar, "manifest.yaml") && contains(&tar, "rungs/01-baseline/stdout.log"));
            self.check(&format!("the .{ext}"), &tar, planted);
            let mut entries = tar::Archive::new(&tar[..]);
            for entry in entries.entries().unwrap() {
                let mut entry = entry.unwrap();
                let name = entry.path().unwrap().display().to_string();
                let mut bytes = Vec::new();
                entry.read_to_end(&mut bytes).unwrap();
                self.check(&format!("{name} in the .{ext}"), &bytes, planted);
            }
        }
        for cmd in ["report", "show"] {
            let (ok, o, e) = xtask(dir, path, &["bundle", cmd, r]);
            assert!(ok, "bundle {cmd}: {}{}", String::from_utf8_lossy(&o), String::from_utf8_lossy(&e));
            assert!(!o.is_empty(), "bundle {cmd} printed nothing");
            self.check(&format!("bundle {cmd}"), &[o, e].concat(), planted);
        }
    }
}

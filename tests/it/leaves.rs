//! What leaves the machine (issue 42, "allow-list what leaves"): the placement holes. A target
//! run by `debug-ima` on the stand-ins writes a GitHub token (a shape the redactor knows, made
//! at run time) where the tool did not look before: a file six levels deep in its rung folder
//! (and in the rung's `jit/` folder), a file in `rungs/` itself, one at the bundle root, a text
//! file named like a coredump (`core_x`), one under `sources/`, and file and folder names that
//! hold the token. Beside each it leaves a binary file holding the token. `bundle pack` (both
//! archives, decompressed, headers and entries), `bundle report` and `bundle show` (before and
//! after packing) must not carry the token; a text file goes into the archive redacted, and
//! what is left out is listed in `LEFT_OUT.tsv` with its size and why. A GPU coredump and a CPU
//! core are told by their content, whatever their names, and `--include` brings back a file
//! that was left out.
//!
//! Must not: need a GPU, hold a token-shaped literal (every token is made at run time), or
//! write outside its scratch folder.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use crate::support;
use support::plant::{contains, xtask, Leaks, Rng};
use support::run::{Bundle, Run};
use support::{path_with, standins, Scratch};

/// A real GPU coredump, written by the driver on an H200.
const REAL_DUMP: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/bundles/oob_read-full/rungs/04-coredump/core_vm.4013.1796034874"
);

/// The token planted (`ghp_` and 36 letters and digits) and the part that must not leave.
fn token(seed: u64) -> (String, String) {
    let body = Rng(seed).alnum(36);
    (format!("ghp_{body}"), body)
}

/// Runs the baseline on the stand-ins, the target being `sh -c SCRIPT` with `$d` its rung
/// folder, `$r` the `rungs/` folder, `$b` the bundle root and `$PLANT` the token; `env` more
/// variables for it. Returns the bundle it wrote.
fn run_planting(s: &Scratch, script: &str, token: &str, env: &[(&str, &str)]) -> Bundle {
    let script = format!(
        "d=$(dirname \"$CUDA_COREDUMP_FILE\"); r=$(dirname \"$d\"); b=$(dirname \"$r\"); {script}; exit 0"
    );
    let recipe = s.write_recipe(&format!(
        "version: 1\nname: leaves\ndescription: \"a target that leaves files\"\nrun:\n  command: [\"sh\", \"-c\", {}]\n",
        serde_json::to_string(&script.replace('{', "{{").replace('}', "}}")).unwrap()
    ));
    let mut run = Run::new(s, &recipe, "oob_write")
        .arg("--rungs")
        .arg("baseline")
        .arg("--retries")
        .arg("0")
        .env("PLANT", token);
    for (k, v) in env {
        run = run.env(k, v);
    }
    let out = run.run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    s.only_bundle()
}

/// The entries of an archive (`.tar.zst` or `.tar.gz`): path inside the bundle → bytes.
fn entries(archive: &Path) -> BTreeMap<String, Vec<u8>> {
    let file = std::fs::File::open(archive).unwrap_or_else(|e| panic!("{}: {e}", archive.display()));
    let mut tar = Vec::new();
    if archive.to_string_lossy().ends_with(".tar.zst") {
        zstd::stream::read::Decoder::new(file).unwrap().read_to_end(&mut tar).unwrap();
    } else {
        flate2::read::GzDecoder::new(file).read_to_end(&mut tar).unwrap();
    }
    let mut out = BTreeMap::new();
    for e in tar::Archive::new(&tar[..]).entries().unwrap() {
        let mut e = e.unwrap();
        let path = e.path().unwrap().display().to_string();
        let mut bytes = Vec::new();
        e.read_to_end(&mut bytes).unwrap();
        let rel = path.split_once('/').map(|(_, r)| r.to_string()).unwrap_or_default();
        out.insert(rel, bytes);
    }
    out
}

/// Every place a bundle is shared from carries no `secret`: `bundle show` and `bundle report`
/// on the folder as the run left it, then both archives (decompressed, and entry by entry),
/// the terminal of `pack`, and `show` and `report` again. Returns the `.tar.zst`'s entries.
fn nothing_leaves(s: &Scratch, b: &Bundle, secret: &str) -> BTreeMap<String, Vec<u8>> {
    let path = path_with(&[&standins()]);
    let planted = [("the planted token".to_string(), secret.to_string())];
    let mut leaks = Leaks::default();
    let r = b.root.to_str().unwrap();
    for cmd in ["show", "report"] {
        let (ok, o, e) = xtask(&s.dir, &path, &["bundle", cmd, r]);
        assert!(ok, "bundle {cmd}: {}{}", String::from_utf8_lossy(&o), String::from_utf8_lossy(&e));
        leaks.check(&format!("bundle {cmd} before pack"), &[o, e].concat(), &planted);
    }
    leaks.check_shared(&s.dir, &path, &b.root, &planted);
    assert!(leaks.0.is_empty(), "the token left:\n{}", leaks.0.join("\n"));
    entries(&b.root.with_extension("tar.zst"))
}

/// `LEFT_OUT.tsv` of an archive as `path → (bytes, why)`.
fn left_out(archive: &BTreeMap<String, Vec<u8>>) -> BTreeMap<String, (u64, String)> {
    let text =
        archive.get("LEFT_OUT.tsv").map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
    text.lines()
        .map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            assert_eq!(c.len(), 3, "not path, bytes, why: {l:?}");
            (c[0].to_string(), (c[1].parse().unwrap(), c[2].to_string()))
        })
        .collect()
}

/// `rel` is in the archive, redacted (the token's body gone: `nothing_leaves`).
fn redacted_in(archive: &BTreeMap<String, Vec<u8>>, rel: &str) {
    let names: Vec<&String> = archive.keys().collect();
    let bytes = archive.get(rel).unwrap_or_else(|| panic!("{rel} is not in the archive: {names:?}"));
    assert!(contains(bytes, "[REDACTED]"), "{rel}: {}", String::from_utf8_lossy(bytes));
}

/// `rel` is left out of the archive as a binary file, listed with its size.
fn left_out_as_binary(archive: &BTreeMap<String, Vec<u8>>, b: &Bundle, rel: &str) {
    assert!(!archive.contains_key(rel), "{rel} is in the archive");
    let left = left_out(archive);
    let (bytes, why) = left.get(rel).unwrap_or_else(|| panic!("LEFT_OUT.tsv does not list {rel}: {left:?}"));
    assert_eq!(*bytes, std::fs::metadata(b.root.join(rel)).unwrap().len(), "{rel}");
    assert!(why.starts_with("binary file"), "{rel}: {why}");
}

/// A binary file holding the token, as `printf` writes it.
const BINARY: &str = "printf '\\000\\001\\002 %s\\n' \"$PLANT\"";

/// A text file six levels deep in the rung folder (and one as deep in the rung's `jit/`
/// folder, where a run-time build writes) is redacted like a log; a binary one beside it is
/// left out and listed. Before, the walk stopped four levels down and both archives carried
/// the token as the target wrote it.
#[test]
fn a_file_six_levels_deep_in_a_rung_folder() {
    let s = Scratch::for_run("leaves-deep");
    let (t, secret) = token(1);
    let b = run_planting(
        &s,
        &format!(
            "mkdir -p \"$d/a/b/c/d/e\" \"$d/jit/torch_extensions/py312/op/build/x\" && \
             echo \"token=$PLANT\" > \"$d/a/b/c/d/e/deep.txt\" && \
             echo \"gh $PLANT\" > \"$d/jit/torch_extensions/py312/op/build/x/build.ninja\" && \
             {BINARY} > \"$d/a/b/c/d/e/deep.bin\""
        ),
        &t,
        &[],
    );
    let archive = nothing_leaves(&s, &b, &secret);
    redacted_in(&archive, "rungs/01-baseline/a/b/c/d/e/deep.txt");
    redacted_in(&archive, "rungs/01-baseline/jit/torch_extensions/py312/op/build/x/build.ninja");
    left_out_as_binary(&archive, &b, "rungs/01-baseline/a/b/c/d/e/deep.bin");
}

/// A file the target writes into `rungs/` itself, no rung's folder: text is redacted, a binary
/// file left out. Before, the text went into both archives unredacted.
#[test]
fn a_file_in_the_rungs_folder_itself() {
    let s = Scratch::for_run("leaves-rungs");
    let (t, secret) = token(2);
    let b = run_planting(
        &s,
        &format!("echo \"token $PLANT\" > \"$r/leak.txt\" && {BINARY} > \"$r/leak.bin\""),
        &t,
        &[],
    );
    let archive = nothing_leaves(&s, &b, &secret);
    redacted_in(&archive, "rungs/leak.txt");
    left_out_as_binary(&archive, &b, "rungs/leak.bin");
}

/// A file the target writes at the bundle root, beside the manifest: text is redacted, a
/// binary file left out. Before, both went into the archives as they were.
#[test]
fn a_file_at_the_bundle_root() {
    let s = Scratch::for_run("leaves-root");
    let (t, secret) = token(3);
    let b = run_planting(
        &s,
        &format!("echo \"token $PLANT\" > \"$b/notes.txt\" && {BINARY} > \"$b/blob.dat\""),
        &t,
        &[],
    );
    let archive = nothing_leaves(&s, &b, &secret);
    redacted_in(&archive, "notes.txt");
    left_out_as_binary(&archive, &b, "blob.dat");
}

/// A file under `sources/` (the folder the tool fills with copies of cached sources) that the
/// tool did not write: text is redacted, a binary file left out. Before, both went into the
/// archives as they were.
#[test]
fn a_file_under_sources() {
    let s = Scratch::for_run("leaves-sources");
    let (t, secret) = token(4);
    let b = run_planting(
        &s,
        &format!(
            "mkdir -p \"$b/sources/deeper\" && echo \"API = '$PLANT'\" > \"$b/sources/deeper/kernel.py\" && \
             {BINARY} > \"$b/sources/kernel.so\""
        ),
        &t,
        &[],
    );
    let archive = nothing_leaves(&s, &b, &secret);
    redacted_in(&archive, "sources/deeper/kernel.py");
    left_out_as_binary(&archive, &b, "sources/kernel.so");
}

/// An ELF core header (`ET_CORE`) for `machine`, then `body`: what a CPU core starts with.
fn elf_core(machine: u16, body: &[u8]) -> Vec<u8> {
    let mut v = b"\x7fELF\x02\x01\x01\x00".to_vec();
    v.resize(16, 0);
    v.extend_from_slice(&4u16.to_le_bytes());
    v.extend_from_slice(&machine.to_le_bytes());
    v.resize(64, 0);
    v.extend_from_slice(body);
    v
}

/// A text file named like a coredump (`core_x`) is read and redacted like any text: its name
/// makes it no coredump. Before, it was taken for one, never read, and `--with-coredumps`
/// packed the token as the target wrote it. Coredumps are told by content instead: the real
/// GPU dump renamed, and a CPU core under a name of its own, are left out as coredumps and
/// come in with `--with-coredumps`.
#[test]
fn a_text_file_named_like_a_coredump() {
    let s = Scratch::for_run("leaves-core");
    let (t, secret) = token(5);
    let cpu = s.path("a-cpu-core");
    std::fs::write(&cpu, elf_core(62, b"\0\0\0 host memory")).unwrap();
    let b = run_planting(
        &s,
        "echo \"token $PLANT\" > \"$d/core_x\" && cp \"$GPU_DUMP\" \"$d/renamed.dump\" && \
         cp \"$CPU_DUMP\" \"$d/state.bin\"",
        &t,
        &[("GPU_DUMP", REAL_DUMP), ("CPU_DUMP", cpu.to_str().unwrap())],
    );
    let archive = nothing_leaves(&s, &b, &secret);
    redacted_in(&archive, "rungs/01-baseline/core_x");
    let left = left_out(&archive);
    for rel in ["rungs/01-baseline/renamed.dump", "rungs/01-baseline/state.bin"] {
        let (_, why) = left.get(rel).unwrap_or_else(|| panic!("LEFT_OUT.tsv does not list {rel}: {left:?}"));
        assert!(why.starts_with("coredump"), "{rel}: {why}");
    }
    // With the coredumps: the dumps go in, the text as redacted as before.
    let with = s.path("with.tar.zst");
    let (ok, o, e) = xtask(
        &s.dir,
        &path_with(&[&standins()]),
        &["bundle", "pack", "--with-coredumps", "-o", with.to_str().unwrap(), b.root.to_str().unwrap()],
    );
    assert!(ok, "{}{}", String::from_utf8_lossy(&o), String::from_utf8_lossy(&e));
    let archive = entries(&with);
    assert!(
        archive.contains_key("rungs/01-baseline/renamed.dump")
            && archive.contains_key("rungs/01-baseline/state.bin")
    );
    redacted_in(&archive, "rungs/01-baseline/core_x");
    let raw = std::fs::read(&with).unwrap();
    let mut tar = Vec::new();
    zstd::stream::read::Decoder::new(&raw[..]).unwrap().read_to_end(&mut tar).unwrap();
    assert!(!contains(&tar, &secret), "--with-coredumps packed the token");
}

/// File and folder names that hold the token, six levels deep in the rung folder, in `rungs/`,
/// at the root and under `sources/`, text and binary: no archive member name, `SHA256SUMS`,
/// `LEFT_OUT.tsv` line, report or `show` line carries it. Before, only names four levels
/// deep or less in a rung folder were renamed.
#[test]
fn names_that_hold_the_token() {
    let s = Scratch::for_run("leaves-names");
    let (t, secret) = token(6);
    let b = run_planting(
        &s,
        &format!(
            "mkdir -p \"$d/a/b/c/d/$PLANT\" \"$d/a/b/c/d/e\" \"$b/sources\" && \
             echo plain > \"$d/a/b/c/d/$PLANT/x.txt\" && echo plain > \"$d/a/b/c/d/e/$PLANT.txt\" && \
             echo plain > \"$r/$PLANT.log\" && echo plain > \"$b/$PLANT.txt\" && \
             echo plain > \"$b/sources/$PLANT.py\" && {BINARY} > \"$b/$PLANT.bin\""
        ),
        &t,
        &[],
    );
    let archive = nothing_leaves(&s, &b, &secret);
    let names: Vec<&String> = archive.keys().collect();
    assert!(names.iter().filter(|n| n.contains("ghp_REDACTED")).count() >= 5, "{names:?}");
    let left = left_out(&archive);
    assert!(left.keys().any(|p| p.starts_with("ghp_REDACTED") && p.ends_with(".bin")), "{left:?}");
}

/// `--include PATH` packs a file (or a folder's files) that would be left out, and
/// `LEFT_OUT.tsv` no longer lists it; the others stay out.
#[test]
fn include_brings_back_what_was_left_out() {
    let s = Scratch::for_run("leaves-include");
    let (t, _) = token(7);
    let b = run_planting(
        &s,
        &format!(
            "mkdir -p \"$d/a/b\" && {BINARY} > \"$d/a/b/one.bin\" && {BINARY} > \"$d/a/two.bin\" && \
             {BINARY} > \"$b/three.bin\""
        ),
        &t,
        &[],
    );
    let out = s.path("inc.tar.gz");
    let (ok, o, e) = xtask(
        &s.dir,
        &path_with(&[&standins()]),
        &[
            "bundle",
            "pack",
            "--gzip",
            "--include",
            "rungs/01-baseline/a",
            "-o",
            out.to_str().unwrap(),
            b.root.to_str().unwrap(),
        ],
    );
    let said = format!("{}{}", String::from_utf8_lossy(&o), String::from_utf8_lossy(&e));
    assert!(ok, "{said}");
    let archive = entries(&out);
    assert!(
        archive.contains_key("rungs/01-baseline/a/b/one.bin")
            && archive.contains_key("rungs/01-baseline/a/two.bin")
    );
    let left = left_out(&archive);
    assert_eq!(left.keys().collect::<Vec<_>>(), ["three.bin"], "{left:?}");
    assert!(said.contains("left out 1 file"), "{said}");
}

//! Packing, unpacking and verifying bundle archives through the library API: determinism,
//! `sha256sum -c` on what `pack` writes, round trips, tampered bundles and archives, hostile
//! archives built by hand (each refused, nothing written outside the destination), arbitrary
//! or mutated input; decompression bombs (the ratio limit and its flag), interrupted packs and
//! unpacks (nothing partial left), FIFOs and devices given as paths, and alias-bomb manifests.
//!
//! Must not: write outside `CARGO_TARGET_TMPDIR`, or need a GPU or the network.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use tar::{EntryType, Header};
use xtask::bundle::archive::{
    default_archive_path, default_archive_path_for, pack, pack_until, render_verification, sha256_file,
    unpack, unpack_until, verify, write_sums, write_sums_reusing, Compression, Limits, PackOptions,
    Verification, LEFT_OUT, SUMS,
};

use xtask::bundle::leaves::{content, Content, COREDUMP_WHY};

use crate::support::{copy_dir, mkfifo};

/// A real bundle written by `debug-ima` on an H200 (with a real GPU coredump).
const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/bundles/oob_read-full");
const NAME: &str = "2026-11-30T12-50-00Z_demo";
const REAL_DUMP: &str = "rungs/04-coredump/core_vm.4013.1796034874";
const OUR_DUMP: &str = "rungs/04-coredump/core_host.123.456";
/// Over 100 bytes with the top folder, so the tar needs a GNU long name.
const LONG: &str =
    "rungs/06-memcheck/a-file-name-long-enough-that-the-tar-header-needs-a-gnu-long-name-entry.log";

/// An empty folder of its own under `CARGO_TARGET_TMPDIR`, removed when the test passes (kept
/// for a look when it fails).
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}

fn scratch(name: &str) -> Scratch {
    static SEQ: AtomicUsize = AtomicUsize::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "archive-{name}-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

fn chmod(p: &Path, mode: u32) {
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

/// A few hundred KiB that look like a coredump: zero runs, xorshift noise, repeated records.
fn mixed_bytes(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut block = 0u64;
    while out.len() < len {
        match block % 3 {
            0 => out.extend(std::iter::repeat_n(0u8, 4096)),
            1 => {
                for _ in 0..512 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    out.extend_from_slice(&x.to_le_bytes());
                }
            }
            _ => {
                for i in 0..256u64 {
                    out.extend_from_slice(&(0x7f45_4c46_0000_0000 | (block << 8) | i).to_le_bytes());
                    out.extend_from_slice(b"SASS");
                    out.extend_from_slice(&(i as u32).to_le_bytes());
                }
            }
        }
        block += 1;
    }
    out.truncate(len);
    out
}

/// A GPU coredump of `len` bytes: the ELF core header the driver writes (`ET_CORE`, `EM_CUDA`),
/// then [`mixed_bytes`].
fn gpu_dump(len: usize) -> Vec<u8> {
    let mut v = b"\x7fELF\x02\x01\x01\x33\x07".to_vec();
    v.resize(16, 0);
    v.extend_from_slice(&4u16.to_le_bytes());
    v.extend_from_slice(&190u16.to_le_bytes());
    v.resize(64, 0);
    v.extend(mixed_bytes(len - 64));
    v
}

/// `dir/NAME`: the real bundle, plus an executable `replay.sh`, a second (synthetic) coredump,
/// a file whose path needs a GNU long name, and odd modes (0600, 0700) that pack normalises.
fn make_bundle(dir: &Path) -> PathBuf {
    let b = dir.join(NAME);
    copy_dir(Path::new(FIXTURE), &b);
    fs::write(b.join("replay.sh"), "#!/bin/sh\n# reruns one rung\nexec ./oob_read \"$@\"\n").unwrap();
    chmod(&b.join("replay.sh"), 0o755);
    fs::write(b.join(OUR_DUMP), gpu_dump(300 * 1024)).unwrap();
    fs::write(b.join(LONG), "long name\n").unwrap();
    chmod(&b.join("findings.json"), 0o600);
    chmod(&b.join("env/doctor.txt"), 0o700);
    b
}

/// Every path under `dir` with its kind, mode and size (or link target): what a test compares
/// before and after.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(dir).min_depth(1).sort_by_file_name() {
        let e = e.unwrap();
        let rel = e.path().strip_prefix(dir).unwrap().display().to_string();
        let m = fs::symlink_metadata(e.path()).unwrap();
        let kind = if m.is_dir() {
            "d".to_string()
        } else if m.file_type().is_symlink() {
            format!("l->{}", fs::read_link(e.path()).unwrap().display())
        } else {
            format!("f{}", m.len())
        };
        out.push(format!("{rel} {kind} {:o}", m.permissions().mode() & 0o7777));
    }
    out
}

fn files_of(dir: &Path) -> Vec<(String, Vec<u8>, u32)> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(dir).min_depth(1).sort_by_file_name() {
        let e = e.unwrap();
        let rel = e.path().strip_prefix(dir).unwrap().display().to_string();
        if e.file_type().is_file() {
            out.push((rel, fs::read(e.path()).unwrap(), mode(e.path())));
        } else {
            out.push((rel, Vec::new(), mode(e.path())));
        }
    }
    out
}

/// The paths of an archive's entries, in order.
fn entry_names(archive: &Path) -> Vec<String> {
    let data = zstd::decode_all(fs::File::open(archive).unwrap()).unwrap();
    let mut ar = tar::Archive::new(&data[..]);
    ar.entries().unwrap().map(|e| String::from_utf8(e.unwrap().path_bytes().into_owned()).unwrap()).collect()
}

fn sha256sum_check(dir: &Path, list: &str) -> (bool, String) {
    let out = Command::new("sha256sum")
        .args(["--check", "--strict", list])
        .current_dir(dir)
        .output()
        .expect("running `sha256sum` (coreutils)");
    (
        out.status.success(),
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
    )
}

fn with_coredumps() -> PackOptions {
    PackOptions { with_coredumps: true, ..PackOptions::default() }
}

#[test]
fn defaults_are_as_documented() {
    let o = PackOptions::default();
    assert_eq!((o.with_coredumps, o.level, o.threads), (false, 3, 0));
    assert!(o.include.is_empty());
    let l = Limits::default();
    assert_eq!((l.max_total_bytes, l.max_file_bytes, l.max_entries), (64 << 30, 32 << 30, 100_000));
    assert_eq!((l.max_ratio, l.ratio_floor_bytes), (1_000, 256 << 20));
    assert_eq!(default_archive_path(Path::new("bundles/x")), PathBuf::from("bundles/x.tar.zst"));
    assert_eq!(default_archive_path(Path::new("bundles/x/")), PathBuf::from("bundles/x.tar.zst"));
}

#[test]
fn pack_is_deterministic() {
    let dir = scratch("determinism");
    let b = make_bundle(&dir);
    let a1 = dir.join("one.tar.zst");
    let p1 = pack(&b, &a1, &PackOptions::default()).unwrap();
    let first = fs::read(&a1).unwrap();
    // The second pack sees the SHA256SUMS and LEFT_OUT.tsv the first one wrote.
    assert!(b.join(SUMS).is_file() && b.join(LEFT_OUT).is_file());
    let p2 = pack(&b, &a1, &PackOptions::default()).unwrap();
    assert_eq!(fs::read(&a1).unwrap(), first, "packing twice gave different bytes");
    assert_eq!(p1, p2);
    assert_eq!(p1.bytes, first.len() as u64);
    assert_eq!(p1.sha256, sha256_file(&a1).unwrap());

    // 1 and 3 zstd workers (and 0 = one per CPU) give the same bytes.
    for threads in [1, 3] {
        let a = dir.join(format!("t{threads}.tar.zst"));
        pack(&b, &a, &PackOptions { threads, ..PackOptions::default() }).unwrap();
        assert_eq!(fs::read(&a).unwrap(), first, "{threads} worker(s) gave different bytes");
    }
    let t1 = dir.join("c1.tar.zst");
    let t3 = dir.join("c3.tar.zst");
    pack(&b, &t1, &PackOptions { threads: 1, ..with_coredumps() }).unwrap();
    pack(&b, &t3, &PackOptions { threads: 3, ..with_coredumps() }).unwrap();
    assert_eq!(fs::read(&t1).unwrap(), fs::read(&t3).unwrap());
    assert_ne!(fs::read(&t1).unwrap(), first);

    // A copy elsewhere (new mtimes, other owner-only modes) packs to the same bytes.
    let other = scratch("determinism-copy");
    let copy = other.join(NAME);
    copy_dir(&b, &copy);
    chmod(&copy.join("summary.md"), 0o600);
    chmod(&copy.join("replay.sh"), 0o700);
    fs::remove_file(copy.join(SUMS)).unwrap();
    let a2 = other.join("copy.tar.zst");
    pack(&copy, &a2, &PackOptions::default()).unwrap();
    assert_eq!(fs::read(&a2).unwrap(), first, "mtimes or modes leaked into the archive");
    assert!(!dir.join("one.tar.zst.partial").exists());
}

#[test]
fn coredumps_are_left_out_unless_asked() {
    let dir = scratch("coredumps");
    let b = make_bundle(&dir);
    let archive = default_archive_path(&b);
    assert_eq!(archive, dir.join(format!("{NAME}.tar.zst")));
    // Coredumps are told by their content, not their names.
    for (rel, is) in [(REAL_DUMP, Content::GpuCore), (OUR_DUMP, Content::GpuCore), (LONG, Content::Text)] {
        assert_eq!(content(&b.join(rel)).unwrap(), is, "{rel}");
    }
    let p = pack(&b, &archive, &PackOptions::default()).unwrap();
    let real = fs::metadata(b.join(REAL_DUMP)).unwrap().len();
    let why = "coredump: may hold model or user data; pack with --with-coredumps to include";
    assert_eq!(why, COREDUMP_WHY);
    assert_eq!(
        p.left_out,
        vec![
            (OUR_DUMP.to_string(), 300 * 1024, why.to_string()),
            (REAL_DUMP.to_string(), real, why.to_string())
        ]
    );
    assert_eq!(
        fs::read_to_string(b.join(LEFT_OUT)).unwrap(),
        format!("{OUR_DUMP}\t{}\t{why}\n{REAL_DUMP}\t{real}\t{why}\n", 300 * 1024)
    );
    let names = entry_names(&archive);
    assert_eq!(names[0], format!("{NAME}/"));
    assert!(names.iter().all(|n| n.starts_with(&format!("{NAME}/"))));
    assert!(!names.iter().any(|n| n.contains("core_")), "{names:?}");
    assert!(names.contains(&format!("{NAME}/{LONG}")));
    assert!(names.contains(&format!("{NAME}/rungs/04-coredump/")));
    // The generated lists come last, SHA256SUMS at the very end.
    assert_eq!(names[names.len() - 2..], [format!("{NAME}/{LEFT_OUT}"), format!("{NAME}/{SUMS}")]);
    let sums = fs::read_to_string(b.join(SUMS)).unwrap();
    assert!(sums.contains(&format!("  {LEFT_OUT}\n")));
    assert!(!sums.contains("core_"));
    assert!(!sums.contains(&format!("  {SUMS}\n")));
    let listed: Vec<&str> = sums.lines().map(|l| &l[66..]).collect();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(listed, sorted, "SHA256SUMS is sorted by path");
    // Every regular file in the archive but SHA256SUMS is listed, nothing else.
    let mut archived: Vec<String> = names
        .iter()
        .filter(|n| !n.ends_with('/'))
        .map(|n| n[NAME.len() + 1..].to_string())
        .filter(|n| n != SUMS)
        .collect();
    archived.sort();
    assert_eq!(archived, sorted);
    assert_eq!(p.files, archived.len() + 1);

    // The input is every file now in the folder (SHA256SUMS and LEFT_OUT.tsv as archived)
    // but the dumps.
    assert_eq!(p.input_bytes, folder_bytes(&b) - real - 300 * 1024);

    let with = pack(&b, &archive, &with_coredumps()).unwrap();
    assert!(with.left_out.is_empty());
    assert!(!b.join(LEFT_OUT).exists(), "a stale LEFT_OUT.tsv stayed");
    let names = entry_names(&archive);
    assert!(names.contains(&format!("{NAME}/{REAL_DUMP}")) && names.contains(&format!("{NAME}/{OUR_DUMP}")));
    assert!(!names.iter().any(|n| n.ends_with(LEFT_OUT)));
    assert!(with.bytes > p.bytes);
    assert_eq!(with.input_bytes, folder_bytes(&b));
    assert_eq!(with.files, p.files + 2 - 1, "two dumps in, LEFT_OUT.tsv out");
}

/// The size of every regular file under `dir`.
fn folder_bytes(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

#[test]
fn sha256sum_accepts_what_pack_writes() {
    let dir = scratch("sha256sum");
    let b = make_bundle(&dir);
    let archive = dir.join("b.tar.zst");
    pack(&b, &archive, &PackOptions::default()).unwrap();
    let (ok, out) = sha256sum_check(&b, SUMS);
    assert!(ok, "sha256sum -c in the bundle: {out}");
    assert!(out.contains("replay.sh: OK") && out.contains(&format!("{LEFT_OUT}: OK")), "{out}");
    let (ok, out) = sha256sum_check(&dir, "b.tar.zst.sha256");
    assert!(ok, "sha256sum -c of the sidecar: {out}");
    assert_eq!(out.trim(), "b.tar.zst: OK");

    let into = dir.join("out");
    let u = unpack(&archive, &into, &Limits::default()).unwrap();
    let (ok, out) = sha256sum_check(&u.root, SUMS);
    assert!(ok, "sha256sum -c in the unpacked bundle: {out}");

    // A changed byte makes sha256sum fail: the check is real.
    let log = u.root.join("rungs/01-baseline/stderr.log");
    let mut data = fs::read(&log).unwrap();
    data[0] ^= 1;
    fs::write(&log, data).unwrap();
    let (ok, out) = sha256sum_check(&u.root, SUMS);
    assert!(!ok && out.contains("rungs/01-baseline/stderr.log: FAILED"), "{out}");
}

#[test]
fn write_sums_lists_every_file_and_drops_left_out() {
    let dir = scratch("write-sums");
    let b = make_bundle(&dir);
    pack(&b, &dir.join("b.tar.zst"), &PackOptions::default()).unwrap();
    assert!(b.join(LEFT_OUT).exists());
    let n = write_sums(&b).unwrap();
    assert!(!b.join(LEFT_OUT).exists());
    let files =
        walkdir::WalkDir::new(&b).into_iter().filter(|e| e.as_ref().unwrap().file_type().is_file()).count();
    assert_eq!(n, files - 1, "every file but SHA256SUMS");
    let sums = fs::read_to_string(b.join(SUMS)).unwrap();
    assert_eq!(sums.lines().count(), n);
    assert!(sums.contains(&format!("  {REAL_DUMP}\n")) && sums.contains(&format!("  {OUR_DUMP}\n")));
    let (ok, out) = sha256sum_check(&b, SUMS);
    assert!(ok, "{out}");
    let v = verify(&b).unwrap();
    assert!(v.ok() && v.left_out.is_empty() && v.checked == n, "{v:?}");

    // A symbolic link (the target's, say) is left out, never followed and never a reason to
    // refuse: write_sums and pack list it in LEFT_OUT.tsv, and verify names it as left out.
    std::os::unix::fs::symlink("/etc/passwd", b.join("env/passwd")).unwrap();
    write_sums(&b).unwrap();
    let left = fs::read_to_string(b.join(LEFT_OUT)).unwrap();
    assert!(left.contains("env/passwd\t0\ta symbolic link"), "{left}");
    let v = verify(&b).unwrap();
    assert!(v.ok() && v.left_out.contains(&"env/passwd".to_string()), "{v:?}");
    pack(&b, &dir.join("c.tar.zst"), &PackOptions::default()).unwrap();
    assert!(!entry_names(&dir.join("c.tar.zst")).iter().any(|e| e.ends_with("env/passwd")));
    assert!(verify(&dir.join("c.tar.zst")).unwrap().ok());
}

/// A file or folder the target wrote with a name no list can hold (a backslash, a newline,
/// bytes that are not UTF-8) is left out of the archive and of SHA256SUMS and listed in
/// LEFT_OUT.tsv, its odd characters shown as `?`; the rest is packed (issue 42: one backslash
/// made `pack` refuse the whole bundle). An archive inside the bundle is still refused.
#[test]
fn pack_leaves_odd_names_out_and_refuses_an_archive_inside_the_bundle() {
    use std::os::unix::ffi::OsStrExt;
    let dir = scratch("pack-odd-names");
    let b = make_bundle(&dir);
    let e = format!("{:#}", pack(&b, &b.join("rungs/x.tar.zst"), &PackOptions::default()).unwrap_err());
    assert!(e.contains("inside the bundle"), "{e}");
    assert!(!b.join("rungs/x.tar.zst.partial").exists());
    fs::write(b.join("env/bad\nname"), "x").unwrap();
    fs::write(b.join("rungs/01-baseline/back\\slash.txt"), "yz").unwrap();
    fs::create_dir_all(b.join("rungs/01-baseline/dir\\x/deeper")).unwrap();
    fs::write(b.join("rungs/01-baseline/dir\\x/deeper/inner.log"), "1234").unwrap();
    fs::write(b.join(std::ffi::OsStr::from_bytes(b"rungs/01-baseline/latin\xe9.txt")), "abc").unwrap();
    let packed = pack(&b, &dir.join("x.tar.zst"), &PackOptions::default()).unwrap();
    let left = fs::read_to_string(b.join(LEFT_OUT)).unwrap();
    for line in [
        "env/bad?name\t1\t",
        "rungs/01-baseline/back?slash.txt\t2\t",
        "rungs/01-baseline/dir?x\t4\t",
        "rungs/01-baseline/latin\u{fffd}.txt\t3\t",
    ] {
        assert!(left.contains(line), "{line:?} not in {left}");
    }
    assert!(packed.left_out.iter().any(|(p, _, _)| p == "rungs/01-baseline/dir?x"), "{:?}", packed.left_out);
    let names = entry_names(&dir.join("x.tar.zst"));
    assert!(
        !names.iter().any(|n| n.contains("slash") || n.contains("inner") || n.contains("bad")),
        "{names:?}"
    );
    assert!(names.iter().any(|n| n.ends_with("/manifest.yaml")), "{names:?}");
    assert!(verify(&dir.join("x.tar.zst")).unwrap().ok());
    // Sealed as the ladder seals it: the folder verifies, the odd names listed as left out.
    write_sums(&b).unwrap();
    let v = verify(&b).unwrap();
    assert!(v.ok() && v.left_out.len() == 4, "{v:?}");
}

#[test]
fn round_trip_keeps_files_and_modes() {
    let dir = scratch("round-trip");
    let b = make_bundle(&dir);
    let archive = dir.join("b.tar.zst");
    let p = pack(&b, &archive, &PackOptions::default()).unwrap();
    let into = dir.join("out/nested");
    let u = unpack(&archive, &into, &Limits::default()).unwrap();
    assert_eq!(u.root, into.join(NAME));
    assert_eq!((u.files, u.bytes), (p.files, p.input_bytes));
    assert_eq!(fs::read_dir(&into).unwrap().count(), 1, "a temporary folder was left");

    let mut expected: Vec<(String, Vec<u8>, u32)> = files_of(&b)
        .into_iter()
        .filter(|(rel, _, _)| rel != OUR_DUMP && rel != REAL_DUMP)
        .map(|(rel, data, m)| {
            let m =
                if m & 0o111 != 0 || fs::metadata(b.join(&rel)).unwrap().is_dir() { 0o755 } else { 0o644 };
            (rel, data, m)
        })
        .collect();
    expected.sort();
    let mut got = files_of(&u.root);
    got.sort();
    assert_eq!(got.len(), expected.len());
    for (g, e) in got.iter().zip(&expected) {
        assert_eq!((&g.0, g.2), (&e.0, e.2), "mode of {}", g.0);
        assert!(g.1 == e.1, "content of {}", g.0);
    }
    assert_eq!(mode(&u.root.join("replay.sh")), 0o755);
    assert_eq!(mode(&u.root.join("findings.json")), 0o644, "0600 is normalised");
    assert_eq!(mode(&u.root.join("env/doctor.txt")), 0o755, "0700 keeps its exec bit");
    assert_eq!(mode(&u.root.join("rungs")), 0o755);

    // A second unpack into the same folder is refused and changes nothing.
    let before = tree(&dir);
    let e = format!("{:#}", unpack(&archive, &into, &Limits::default()).unwrap_err());
    assert!(e.contains("already exists"), "{e}");
    assert_eq!(tree(&dir), before);

    // With coredumps, the dumps come back byte for byte.
    let with = dir.join("with.tar.zst");
    pack(&b, &with, &with_coredumps()).unwrap();
    let u = unpack(&with, &dir.join("out2"), &Limits::default()).unwrap();
    assert_eq!(fs::read(u.root.join(OUR_DUMP)).unwrap(), fs::read(b.join(OUR_DUMP)).unwrap());
    assert_eq!(fs::read(u.root.join(REAL_DUMP)).unwrap(), fs::read(b.join(REAL_DUMP)).unwrap());
    assert!(verify(&u.root).unwrap().ok());
}

#[test]
fn gnu_tar_reads_ours_and_we_read_gnu_tars() {
    let dir = scratch("gnu-tar");
    let b = make_bundle(&dir);
    let archive = dir.join("b.tar.zst");
    pack(&b, &archive, &PackOptions::default()).unwrap();
    // GNU tar extracts ours without a warning.
    let out = dir.join("gnu");
    fs::create_dir(&out).unwrap();
    let mut child = Command::new("tar")
        .arg("-C")
        .arg(&out)
        .arg("-xf")
        .arg("-")
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&zstd::decode_all(fs::File::open(&archive).unwrap()).unwrap())
        .unwrap();
    let res = child.wait_with_output().unwrap();
    assert!(res.status.success() && res.stderr.is_empty(), "{}", String::from_utf8_lossy(&res.stderr));
    let (ok, msg) = sha256sum_check(&out.join(NAME), SUMS);
    assert!(ok, "{msg}");
    assert_eq!(mode(&out.join(NAME).join("replay.sh")) & 0o111, 0o111);

    // A GNU tar of the bundle (names, mtimes, owners of its own) verifies and unpacks.
    let res = Command::new("tar").arg("-C").arg(&dir).args(["-cf", "-", NAME]).output().unwrap();
    assert!(res.status.success());
    let theirs = dir.join("theirs.tar.zst");
    fs::write(&theirs, zstd::encode_all(&res.stdout[..], 3).unwrap()).unwrap();
    let v = verify(&theirs).unwrap();
    assert!(v.ok() && v.archive_sum.is_none(), "{v:?}");
    assert_eq!(v.left_out, vec![OUR_DUMP.to_string(), REAL_DUMP.to_string()]);
    let u = unpack(&theirs, &dir.join("from-gnu"), &Limits::default()).unwrap();
    assert!(verify(&u.root).unwrap().ok());
}

#[test]
fn verify_passes_clean_bundles_and_archives() {
    let dir = scratch("verify-clean");
    let b = make_bundle(&dir);
    let archive = dir.join("b.tar.zst");
    let p = pack(&b, &archive, &PackOptions::default()).unwrap();
    let v = verify(&b).unwrap();
    assert!(v.ok(), "{v:?}");
    assert_eq!(v.checked, p.files - 1);
    assert_eq!(v.left_out, vec![OUR_DUMP.to_string(), REAL_DUMP.to_string()]);
    assert!(v.extra.is_empty() && v.archive_sum.is_none());
    let text = render_verification(&v, &b);
    assert!(text.ends_with(&format!(
        "ok: {} files match SHA256SUMS in {}; 2 left out, listed in LEFT_OUT.tsv\n",
        p.files - 1,
        b.display()
    )));
    let a = verify(&archive).unwrap();
    assert_eq!(a, Verification { archive_sum: Some(true), ..v.clone() });
    assert!(render_verification(&a, &archive).contains("the archive matches b.tar.zst.sha256"));
    // Without the sidecar the archive is still checked against its SHA256SUMS.
    fs::remove_file(dir.join("b.tar.zst.sha256")).unwrap();
    assert_eq!(verify(&archive).unwrap(), v);
}

/// A tar of `dir` written by the tar crate's own builder (not `pack`), compressed with zstd.
fn hand_tar(dir: &Path, name: &str) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    b.append_dir_all(name, dir).unwrap();
    zstd::encode_all(&b.into_inner().unwrap()[..], 3).unwrap()
}

#[test]
fn verify_names_exactly_the_tampered_files() {
    let dir = scratch("tampered");
    let b = make_bundle(&dir);
    pack(&b, &dir.join("b.tar.zst"), &PackOptions::default()).unwrap();
    let log = b.join("rungs/01-baseline/stderr.log");
    let mut data = fs::read(&log).unwrap();
    data[10] ^= 0x20;
    fs::write(&log, data).unwrap();
    fs::remove_file(b.join("env/doctor.txt")).unwrap();
    fs::write(b.join("rungs/notes.txt"), "added later\n").unwrap();
    // A left-out coredump may be present or not: neither is a problem.
    fs::remove_file(b.join(OUR_DUMP)).unwrap();

    let v = verify(&b).unwrap();
    assert_eq!(v.changed, vec!["rungs/01-baseline/stderr.log"]);
    assert_eq!(v.missing, vec!["env/doctor.txt"]);
    assert_eq!(v.extra, vec!["rungs/notes.txt"]);
    assert_eq!(v.left_out, vec![OUR_DUMP.to_string(), REAL_DUMP.to_string()]);
    assert!(!v.ok());
    let text = render_verification(&v, &b);
    assert!(text.starts_with(
        "changed  rungs/01-baseline/stderr.log\nmissing  env/doctor.txt\nextra    rungs/notes.txt\n"
    ));
    assert!(text
        .lines()
        .last()
        .unwrap()
        .starts_with(&format!("FAILED: {}: 1 changed, 1 missing, 1 extra", b.display())));

    let archive = dir.join("tampered.tar.zst");
    fs::write(&archive, hand_tar(&b, NAME)).unwrap();
    let a = verify(&archive).unwrap();
    assert_eq!(a, v, "the archive of the tampered folder reads the same");

    // A listed path that became a symbolic link is changed, and is never followed.
    fs::remove_file(&log).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", &log).unwrap();
    assert_eq!(verify(&b).unwrap().changed, vec!["rungs/01-baseline/stderr.log"]);
}

#[test]
fn verify_refuses_broken_lists() {
    let dir = scratch("broken-lists");
    let b = make_bundle(&dir);
    let e = format!("{:#}", verify(&b).unwrap_err());
    assert!(e.contains("has no SHA256SUMS") && e.contains("`cargo xtask bundle pack"), "{e}");
    write_sums(&b).unwrap();
    let sums = fs::read_to_string(b.join(SUMS)).unwrap();
    fs::write(b.join(SUMS), format!("{sums}{}  ../outside\n", "0".repeat(64))).unwrap();
    let n = sums.lines().count() + 1;
    let e = format!("{:#}", verify(&b).unwrap_err());
    assert!(e.contains(&format!("line {n}")) && e.contains("`../outside`"), "{e}");
    fs::write(b.join(SUMS), format!("{sums}not a line\n")).unwrap();
    let e = format!("{:#}", verify(&b).unwrap_err());
    assert!(e.contains(&format!("line {n} is not")), "{e}");
    // A SHA256SUMS that is a link to a list outside the bundle is not read.
    let outside = dir.join("outside-sums");
    fs::write(&outside, sums.clone()).unwrap();
    fs::remove_file(b.join(SUMS)).unwrap();
    std::os::unix::fs::symlink(&outside, b.join(SUMS)).unwrap();
    let e = format!("{:#}", verify(&b).unwrap_err());
    assert!(e.contains("SHA256SUMS is not a regular file"), "{e}");
    let e = format!("{:#}", verify(&b.join("summary.md")).unwrap_err());
    assert!(e.contains("neither a bundle folder nor a .tar.zst"), "{e}");
}

#[test]
fn flipped_bytes_in_an_archive_are_caught() {
    let dir = scratch("flipped");
    let b = make_bundle(&dir);
    let archive = dir.join("b.tar.zst");
    pack(&b, &archive, &with_coredumps()).unwrap();
    let good = fs::read(&archive).unwrap();
    for at in [5, good.len() / 10, good.len() / 3, good.len() / 2, good.len() * 9 / 10, good.len() - 1] {
        let mut bad = good.clone();
        bad[at] ^= 0x01;
        fs::write(&archive, &bad).unwrap();
        match verify(&archive) {
            Ok(v) => assert_eq!(v.archive_sum, Some(false), "byte {at}: {v:?}"),
            Err(e) => assert!(format!("{e:#}").contains("damaged"), "byte {at}: {e:#}"),
        }
        // Past the frame header (where byte 5, the window size, can change without changing
        // what decodes), the zstd checksum or SHA256SUMS catch it without the sidecar too.
        if at < 16 {
            continue;
        }
        let sidecar = fs::read(dir.join("b.tar.zst.sha256")).unwrap();
        fs::remove_file(dir.join("b.tar.zst.sha256")).unwrap();
        let caught = match verify(&archive) {
            Ok(v) => !v.ok(),
            Err(_) => true,
        };
        assert!(caught, "byte {at} flipped went unnoticed");
        let into = dir.join(format!("out-{at}"));
        if let Ok(u) = unpack(&archive, &into, &Limits::default()) {
            panic!("byte {at}: a damaged archive unpacked to {}", u.root.display());
        }
        assert!(!into.exists(), "byte {at}: {into:?} was left");
        fs::write(dir.join("b.tar.zst.sha256"), sidecar).unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// Hostile archives, built by hand

/// One raw tar entry; the name bytes go straight into the header, bypassing the tar crate's
/// path checks.
struct Raw {
    name: Vec<u8>,
    ty: EntryType,
    data: Vec<u8>,
    /// The header's size when it is not the data's.
    size: Option<u64>,
    link: Vec<u8>,
}

fn raw(name: &str, ty: EntryType, data: &[u8]) -> Raw {
    Raw { name: name.as_bytes().to_vec(), ty, data: data.to_vec(), size: None, link: Vec::new() }
}

fn link(name: &str, ty: EntryType, target: &str) -> Raw {
    Raw { link: target.as_bytes().to_vec(), ..raw(name, ty, b"") }
}

fn raw_tar(entries: &[Raw]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries {
        let mut h = Header::new_gnu();
        h.as_old_mut().name[..e.name.len()].copy_from_slice(&e.name);
        h.as_old_mut().linkname[..e.link.len()].copy_from_slice(&e.link);
        h.set_entry_type(e.ty);
        h.set_mode(if e.ty == EntryType::Directory { 0o755 } else { 0o644 });
        h.set_size(e.size.unwrap_or(e.data.len() as u64));
        h.set_mtime(0);
        h.set_cksum();
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(&e.data);
        out.resize(out.len().next_multiple_of(512), 0);
    }
    out.extend_from_slice(&[0u8; 1024]);
    out
}

fn zst(data: &[u8]) -> Vec<u8> {
    zstd::encode_all(data, 3).unwrap()
}

/// A pax extended header entry (`x`) carrying `key=value`.
fn pax(key: &str, value: &str) -> Raw {
    let body = format!(" {key}={value}\n");
    let mut len = body.len() + 1;
    while format!("{len}{body}").len() != len {
        len += 1;
    }
    raw("././@PaxHeader", EntryType::XHeader, format!("{len}{body}").as_bytes())
}

/// A GNU long-name entry (`L`) for the next entry.
fn long_name(name: &str) -> Raw {
    let mut data = name.as_bytes().to_vec();
    data.push(0);
    raw("././@LongLink", EntryType::GNULongName, &data)
}

struct Case {
    label: &'static str,
    archive: Vec<u8>,
    limits: Limits,
    /// What the error must say (each).
    says: Vec<&'static str>,
}

fn case(label: &'static str, entries: Vec<Raw>, says: Vec<&'static str>) -> Case {
    Case { label, archive: zst(&raw_tar(&entries)), limits: Limits::default(), says }
}

fn hostile_cases() -> Vec<Case> {
    let dir = || raw("top/", EntryType::Directory, b"");
    let file = |n: &str| raw(n, EntryType::Regular, b"data\n");
    let small = Limits { max_total_bytes: 6, max_file_bytes: 5, max_entries: 3, ..Limits::default() };
    let valid = raw_tar(&[dir(), file("top/a")]);
    let mut cases = vec![
        case("dotdot", vec![file("../evil")], vec!["entry `../evil` has `..` in its path"]),
        case("dotdot-inside", vec![dir(), file("top/../../evil")], vec!["entry `top/../../evil` has `..`"]),
        case("absolute", vec![file("/abs/evil")], vec!["entry `/abs/evil` has an absolute path"]),
        case(
            "symlink",
            vec![dir(), link("top/link", EntryType::Symlink, "/etc")],
            vec!["entry `top/link` is a symbolic link; a bundle holds only regular files and directories"],
        ),
        case(
            "through-symlink",
            vec![dir(), link("top/link", EntryType::Symlink, "../../victim"), file("top/link/x")],
            vec!["entry `top/link` is a symbolic link"],
        ),
        case(
            "file-through-file",
            vec![dir(), file("top/f"), file("top/f/x")],
            vec!["entry `top/f/x` is under a file"],
        ),
        case(
            "hard-link",
            vec![dir(), link("top/hard", EntryType::Link, "/etc/passwd")],
            vec!["entry `top/hard` is a hard link"],
        ),
        case(
            "char-device",
            vec![dir(), raw("top/null", EntryType::Char, b"")],
            vec!["entry `top/null` is a character device"],
        ),
        case(
            "block-device",
            vec![dir(), raw("top/sda", EntryType::Block, b"")],
            vec!["entry `top/sda` is a block device"],
        ),
        case(
            "fifo",
            vec![dir(), raw("top/fifo", EntryType::Fifo, b"")],
            vec!["entry `top/fifo` is a named pipe"],
        ),
        case(
            "sparse-damaged",
            vec![dir(), raw("top/sparse", EntryType::GNUSparse, b"")],
            vec!["damaged", "real_size"],
        ),
        case(
            "unknown-type",
            vec![dir(), raw("top/odd", EntryType::new(b'Q'), b"")],
            vec!["entry `top/odd` has the unknown type `Q`"],
        ),
        case("two-tops", vec![file("a/x"), file("b/y")], vec!["entry `b/y` is outside the top folder `a`"]),
        case("file-at-top", vec![file("top")], vec!["entry `top` is a file beside the top folder"]),
        case("twice", vec![dir(), file("top/a"), file("top/a")], vec!["entry `top/a` appears twice"]),
        case(
            "pax-path",
            vec![dir(), pax("path", "../evil"), file("top/ok")],
            vec!["entry `../evil` has `..`"],
        ),
        case(
            "pax-symlink",
            vec![dir(), pax("linkpath", "/etc"), link("top/l", EntryType::Symlink, "x")],
            vec!["symbolic link"],
        ),
        case(
            "long-name",
            vec![dir(), long_name(&format!("top/{}/../../../evil", "d".repeat(120))), file("top/short")],
            vec!["/../../../evil` has `..`"],
        ),
        case(
            "huge-long-name",
            vec![dir(), Raw { data: vec![b'a'; 3 << 20], ..long_name("") }, file("top/x")],
            vec!["entry 2 has over 1 MiB of headers"],
        ),
        case(
            "dir-with-data",
            vec![raw("top/", EntryType::Directory, b"0123456789")],
            vec!["entry `top/` is a directory with data"],
        ),
        case(
            "empty",
            vec![],
            vec!["the archive is damaged or not a .tar.zst or .tar.gz: it holds no entries"],
        ),
        Case {
            label: "over-file-limit",
            archive: zst(&raw_tar(&[dir(), raw("top/ten", EntryType::Regular, b"0123456789")])),
            limits: small,
            says: vec![
                "entry `top/ten` is larger than the limit of 5 bytes per file (its header says 10 bytes)",
            ],
        },
        Case {
            label: "over-total-limit",
            archive: zst(&raw_tar(&[
                dir(),
                raw("top/a", EntryType::Regular, b"1234"),
                raw("top/b", EntryType::Regular, b"5678"),
            ])),
            limits: small,
            says: vec!["entry `top/b` takes the archive past the limit of 6 bytes in all"],
        },
        Case {
            label: "too-many-entries",
            archive: zst(&raw_tar(&[
                dir(),
                raw("top/1/", EntryType::Directory, b""),
                raw("top/2/", EntryType::Directory, b""),
                raw("top/3/", EntryType::Directory, b""),
            ])),
            limits: small,
            says: vec!["more than 3 entries (the limit), at entry `top/3/`"],
        },
        Case {
            label: "not-zstd",
            archive: valid.clone(),
            limits: Limits::default(),
            says: vec!["damaged or not a .tar.zst or .tar.gz", "neither the zstd nor the gzip magic number"],
        },
        Case {
            label: "truncated",
            archive: {
                let big = raw_tar(&[dir(), raw("top/big", EntryType::Regular, &mixed_bytes(200_000))]);
                let z = zst(&big);
                z[..z.len() / 2].to_vec()
            },
            limits: Limits::default(),
            says: vec!["the archive is damaged or not a .tar.zst"],
        },
        Case {
            label: "truncated-tar",
            archive: zst(&raw_tar(&[dir(), raw("top/big", EntryType::Regular, &[7u8; 5000])])[..1024 + 2048]),
            limits: Limits::default(),
            says: vec!["damaged", "top/big"],
        },
        Case {
            label: "trailing-garbage",
            archive: [zst(&valid), b"not zstd at all".to_vec()].concat(),
            limits: Limits::default(),
            says: vec!["damaged"],
        },
    ];
    // A header size that lies: 10 bytes claimed, the stream ends after 3.
    let mut lie = raw_tar(&[dir()]);
    let mut h = Header::new_gnu();
    h.as_old_mut().name[..7].copy_from_slice(b"top/lie");
    h.set_entry_type(EntryType::Regular);
    h.set_size(10);
    h.set_mode(0o644);
    h.set_cksum();
    lie.truncate(512);
    lie.extend_from_slice(h.as_bytes());
    lie.extend_from_slice(b"abc");
    // A well-formed GNU sparse file (the tar crate reads its map, then we refuse it).
    let mut sparse = raw_tar(&[dir()]);
    sparse.truncate(512);
    let mut h = Header::new_gnu();
    h.as_old_mut().name[..10].copy_from_slice(b"top/sparse");
    h.set_entry_type(EntryType::GNUSparse);
    h.set_size(0);
    h.set_mode(0o644);
    h.as_gnu_mut().unwrap().set_real_size(0);
    h.set_cksum();
    sparse.extend_from_slice(h.as_bytes());
    sparse.extend_from_slice(&[0u8; 1024]);
    cases.push(Case {
        label: "sparse",
        archive: zst(&sparse),
        limits: Limits::default(),
        says: vec!["entry `top/sparse` is a GNU sparse file"],
    });
    cases.push(Case {
        label: "short-data",
        archive: zst(&lie),
        limits: Limits::default(),
        says: vec!["damaged", "top/lie"],
    });
    cases
}

#[test]
fn hostile_archives_are_refused_and_leave_nothing() {
    for c in hostile_cases() {
        for into_exists in [false, true] {
            let case = scratch(&format!("hostile-{}", c.label));
            fs::create_dir(case.join("victim")).unwrap();
            let archive = case.join("evil.tar.zst");
            fs::write(&archive, &c.archive).unwrap();
            let into = case.join("into");
            if into_exists {
                fs::create_dir(&into).unwrap();
            }
            let before = tree(&case);
            let err = match unpack(&archive, &into, &c.limits) {
                Ok(u) => panic!("{}: unpacked to {}", c.label, u.root.display()),
                Err(e) => format!("{e:#}"),
            };
            for s in &c.says {
                assert!(err.contains(s), "{}: {err:?} does not say {s:?}", c.label);
            }
            assert!(err.contains("nothing was unpacked"), "{}: {err}", c.label);
            assert!(err.contains(&format!("`{}`", archive.display())), "{}: {err}", c.label);
            assert_eq!(tree(&case), before, "{}: something was written", c.label);
            assert!(!Path::new("/abs").exists());
            // verify reads the same entries: it refuses them too, or finds no SHA256SUMS.
            match verify(&archive) {
                Ok(v) => panic!("{}: verify passed {v:?}", c.label),
                Err(e) => assert!(!format!("{e:#}").is_empty()),
            }
            assert_eq!(tree(&case), before, "{}: verify wrote something", c.label);
            fs::remove_dir_all(&case).unwrap();
        }
    }
}

#[test]
fn a_valid_hand_written_archive_unpacks() {
    // The same builder as the hostile cases, with nothing hostile: proves they fail for the
    // reason they name.
    let case = scratch("hand-valid");
    let entries = vec![
        raw("top/", EntryType::Directory, b""),
        raw("./top/./a", EntryType::Regular, b"data\n"),
        raw("top/sub/b", EntryType::Continuous, b"more\n"),
        pax("path", "top/from-pax"),
        raw("top/ignored-name", EntryType::Regular, b"pax\n"),
        long_name(&format!("top/{}", "l".repeat(150))),
        raw("top/truncated", EntryType::Regular, b"long\n"),
    ];
    fs::write(case.join("ok.tar.zst"), zst(&raw_tar(&entries))).unwrap();
    let u = unpack(&case.join("ok.tar.zst"), &case.join("into"), &Limits::default()).unwrap();
    assert_eq!((u.files, u.bytes), (4, 19));
    assert_eq!(fs::read(u.root.join("a")).unwrap(), b"data\n");
    assert_eq!(fs::read(u.root.join("sub/b")).unwrap(), b"more\n");
    assert_eq!(fs::read(u.root.join("from-pax")).unwrap(), b"pax\n");
    assert_eq!(fs::read(u.root.join("l".repeat(150))).unwrap(), b"long\n");
    // Exactly at the limits is fine.
    let limits = Limits {
        max_total_bytes: 19,
        max_file_bytes: 5,
        max_entries: entries.len() as u64 - 2,
        ..Limits::default()
    };
    unpack(&case.join("ok.tar.zst"), &case.join("into2"), &limits).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Arbitrary and mutated input

fn small_bundle_tar() -> &'static [u8] {
    static TAR: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    TAR.get_or_init(|| {
        let dir = scratch("prop-base");
        let b = dir.join("b");
        fs::create_dir_all(b.join("rungs/01-baseline")).unwrap();
        fs::write(b.join("manifest.yaml"), "tool: debug-ima\n").unwrap();
        fs::write(b.join("rungs/01-baseline/stderr.log"), "CUDA error: an illegal memory access\n").unwrap();
        fs::write(b.join("replay.sh"), "#!/bin/sh\n").unwrap();
        chmod(&b.join("replay.sh"), 0o755);
        let a = dir.join("b.tar.zst");
        pack(&b, &a, &PackOptions::default()).unwrap();
        let mut data = Vec::new();
        zstd::stream::read::Decoder::new(fs::File::open(&a).unwrap())
            .unwrap()
            .read_to_end(&mut data)
            .unwrap();
        fs::remove_dir_all(&dir).unwrap();
        data
    })
}

/// Unpacks and verifies `archive` in a fresh folder: nothing may panic, and nothing may
/// appear outside `into` but what was there.
fn never_escapes(archive: &[u8]) -> Result<(), TestCaseError> {
    let case = scratch("prop");
    let path = case.join("x.tar.zst");
    fs::write(&path, archive).unwrap();
    let into = case.join("into");
    let before = tree(&case);
    let limits =
        Limits { max_total_bytes: 1 << 20, max_file_bytes: 1 << 19, max_entries: 1000, ..Limits::default() };
    let res = unpack(&path, &into, &limits);
    let _ = verify(&path);
    let after = tree(&case);
    for p in &after {
        let inside = p.starts_with("into/") || p.starts_with("into ");
        prop_assert!(before.contains(p) || inside, "{p} appeared outside `into`");
        prop_assert!(!p.contains(".partial-"), "{p} was left");
    }
    match res {
        Ok(u) => prop_assert!(u.root.parent() == Some(into.as_path())),
        Err(_) => prop_assert!(!into.exists(), "a refused unpack left {into:?}"),
    }
    fs::remove_dir_all(&case).unwrap();
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn arbitrary_bytes_never_escape(bytes in proptest::collection::vec(any::<u8>(), 0..4096), how in 0u8..3) {
        let archive = match how {
            0 => bytes,
            1 => [&[0x28, 0xB5, 0x2F, 0xFD][..], &bytes].concat(),
            _ => zst(&bytes),
        };
        never_escapes(&archive)?;
    }

    #[test]
    fn mutated_archives_never_escape(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in proptest::option::of(any::<prop::sample::Index>()),
        compressed in any::<bool>(),
    ) {
        let mut tar = small_bundle_tar().to_vec();
        if compressed {
            let mut z = zst(&tar);
            for (at, b) in &flips {
                let i = at.index(z.len());
                z[i] = *b;
            }
            if let Some(c) = cut {
                z.truncate(c.index(z.len()));
            }
            never_escapes(&z)?;
        } else {
            for (at, b) in &flips {
                let i = at.index(tar.len());
                tar[i] = *b;
            }
            if let Some(c) = cut {
                tar.truncate(c.index(tar.len()));
            }
            never_escapes(&zst(&tar))?;
        }
    }
}

/// `.tar.gz` (for GitHub attachments): the same bytes twice and on any thread count, the same
/// tar inside as the `.tar.zst`, GNU tar reads it, it verifies and unpacks; a hostile entry in
/// a gzip archive is refused like one in a zstd archive, and a damaged gzip stream is caught.
#[test]
fn gzip_archives_are_deterministic_verified_and_unpacked_safely() {
    let dir = scratch("gzip");
    let b = make_bundle(&dir);
    let gz = PackOptions { compression: Compression::Gzip, ..PackOptions::default() };
    assert_eq!(default_archive_path_for(&b, Compression::Gzip), dir.join(format!("{NAME}.tar.gz")));
    let (one, two, zst_path) = (dir.join("one.tar.gz"), dir.join("two.tar.gz"), dir.join("b.tar.zst"));
    pack(&b, &one, &gz).unwrap();
    pack(&b, &two, &PackOptions { threads: 3, ..gz }).unwrap();
    assert!(fs::read(&one).unwrap() == fs::read(&two).unwrap(), "two gzip packs differ");
    assert_eq!(&fs::read(&one).unwrap()[..3], &[0x1F, 0x8B, 0x08]);
    pack(&b, &zst_path, &PackOptions::default()).unwrap();
    let mut tar_of_gz = Vec::new();
    flate2::read::GzDecoder::new(fs::File::open(&one).unwrap()).read_to_end(&mut tar_of_gz).unwrap();
    assert!(
        tar_of_gz == zstd::decode_all(fs::File::open(&zst_path).unwrap()).unwrap(),
        "not the same tar inside"
    );

    let listed = Command::new("tar").arg("-tzf").arg(&one).output().unwrap();
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
    assert!(String::from_utf8_lossy(&listed.stdout).contains(&format!("{NAME}/SHA256SUMS")));

    let v = verify(&one).unwrap();
    assert!(v.ok(), "{}", render_verification(&v, &one));
    let into = dir.join("out");
    let u = unpack(&one, &into, &Limits::default()).unwrap();
    let (ok, msg) = sha256sum_check(&u.root, SUMS);
    assert!(ok, "{msg}");

    // A traversal entry behind gzip is refused, and nothing is written.
    let evil = dir.join("evil.tar.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&raw_tar(&[
        raw("top/", EntryType::Directory, b""),
        raw("top/../../evil", EntryType::Regular, b"x"),
    ]))
    .unwrap();
    fs::write(&evil, enc.finish().unwrap()).unwrap();
    let target = dir.join("evil-out");
    let err = unpack(&evil, &target, &Limits::default()).unwrap_err().to_string();
    assert!(err.contains("top/../../evil"), "{err}");
    assert!(!dir.join("evil").exists() && !target.join("top").exists());

    // A flipped byte in the deflate data: an error or a mismatch, never a silent pass.
    let mut bytes = fs::read(&one).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    let bad = dir.join("bad.tar.gz");
    fs::write(&bad, bytes).unwrap();
    match verify(&bad) {
        Ok(v) => assert!(!v.ok(), "a damaged gzip archive verified"),
        Err(e) => assert!(e.to_string().contains("bad.tar.gz"), "{e}"),
    }
}

/// At the end of a run the rungs' hashes come from the manifest: a file whose size is the
/// recorded one is not read again (a planted hash shows it was taken), one whose size changed
/// is hashed anew.
#[test]
fn write_sums_reuses_known_hashes_of_unchanged_sizes() {
    let dir = scratch("sums-reuse");
    let b = make_bundle(&dir);
    let rel = "rungs/01-baseline/stderr.log";
    let size = fs::metadata(b.join(rel)).unwrap().len();
    let planted = "ab".repeat(32);
    let mut known = std::collections::BTreeMap::new();
    known.insert(rel.to_string(), (size, planted.clone()));
    known.insert("manifest.yaml".to_string(), (1, planted.clone()));
    write_sums_reusing(&b, &known).unwrap();
    let sums = fs::read_to_string(b.join(SUMS)).unwrap();
    assert!(sums.contains(&format!("{planted}  {rel}\n")), "{sums}");
    let manifest = sha256_file(&b.join("manifest.yaml")).unwrap();
    assert!(
        sums.contains(&format!("{manifest}  manifest.yaml\n")),
        "a changed size must be hashed anew: {sums}"
    );
}

// ---------------------------------------------------------------------------------------------
// Bombs, interrupts and special files

/// A `.tar.zst` of one bundle folder `top` holding `file` of `len` zero bytes, streamed (the
/// zeros are never in memory at once): a few KB that unpack to `len`.
fn zero_bomb(path: &Path, len: u64) {
    let out = fs::File::create(path).unwrap();
    let mut enc = zstd::stream::write::Encoder::new(out, 3).unwrap();
    let mut dir = Header::new_gnu();
    dir.set_entry_type(EntryType::Directory);
    dir.set_mode(0o755);
    dir.set_size(0);
    dir.set_path("top/").unwrap();
    dir.set_cksum();
    enc.write_all(dir.as_bytes()).unwrap();
    let mut h = Header::new_gnu();
    h.set_entry_type(EntryType::Regular);
    h.set_mode(0o644);
    h.set_size(len);
    h.set_path("top/zeros.log").unwrap();
    h.set_cksum();
    enc.write_all(h.as_bytes()).unwrap();
    let chunk = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        enc.write_all(&chunk[..n]).unwrap();
        left -= n as u64;
    }
    enc.write_all(&vec![0u8; ((512 - len % 512) % 512) as usize + 1024]).unwrap();
    enc.finish().unwrap();
}

#[test]
fn decompression_bombs_are_refused_and_the_limit_can_be_raised() {
    let dir = scratch("bomb");
    let bomb = dir.join("bomb.tar.zst");
    zero_bomb(&bomb, 64 << 20);
    let size = fs::metadata(&bomb).unwrap().len();
    assert!(size < 64 << 10, "{size} bytes");
    // A floor of 1 MiB and a ratio of 100, so that 64 MiB shows what 10 GiB would.
    let tight = Limits { max_ratio: 100, ratio_floor_bytes: 1 << 20, ..Limits::default() };
    let into = dir.join("out");
    let e = format!("{:#}", unpack(&bomb, &into, &tight).unwrap_err());
    assert!(e.contains("it unpacks to more than 100 times its size"), "{e}");
    assert!(
        e.contains("nothing was unpacked; if you trust it, raise the limit: `bundle unpack --max-ratio N`"),
        "{e}"
    );
    assert!(!into.exists(), "{into:?} was left");
    // Raised, it unpacks.
    let raised = Limits { max_ratio: 1_000_000, ..tight };
    let u = unpack(&bomb, &into, &raised).unwrap();
    assert_eq!(fs::metadata(u.root.join("zeros.log")).unwrap().len(), 64 << 20);
    // Under the default floor (256 MiB), any ratio passes: small archives are never refused.
    let u = unpack(&bomb, &dir.join("default"), &Limits::default()).unwrap();
    assert_eq!(u.bytes, 64 << 20);
}

/// The command line: `bundle unpack` and `bundle verify` refuse a bomb past the default floor
/// (300 MiB of zeros in some KB) with what to do; `--max-ratio` lets `unpack` through.
#[test]
fn the_command_refuses_a_bomb_and_takes_max_ratio() {
    let dir = scratch("bomb-cli");
    let bomb = dir.join("bomb.tar.zst");
    zero_bomb(&bomb, 300 << 20);
    let xtask =
        |args: &[&std::ffi::OsStr]| Command::new(env!("CARGO_BIN_EXE_xtask")).args(args).output().unwrap();
    let into = dir.join("out");
    let out = xtask(&["bundle".as_ref(), "unpack".as_ref(), bomb.as_os_str(), into.as_os_str()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("it unpacks to more than 1000 times its size"), "{err}");
    assert!(err.contains("--max-ratio"), "{err}");
    assert_eq!(fs::read_dir(&into).map(|d| d.count()).unwrap_or(0), 0, "something was left in {into:?}");
    let out = xtask(&["bundle".as_ref(), "verify".as_ref(), bomb.as_os_str()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("times its size"), "{err}");
    let out = xtask(&[
        "bundle".as_ref(),
        "unpack".as_ref(),
        bomb.as_os_str(),
        into.as_os_str(),
        "--max-ratio".as_ref(),
        "100000".as_ref(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(fs::metadata(into.join("top/zeros.log")).unwrap().len(), 300 << 20);
}

/// A stop check that says stop from its `n`-th call on.
fn stop_after(n: usize) -> impl Fn() -> bool {
    let calls = std::cell::Cell::new(0usize);
    move || {
        calls.set(calls.get() + 1);
        calls.get() > n
    }
}

#[test]
fn an_interrupted_unpack_leaves_nothing() {
    let dir = scratch("unpack-stop");
    let b = make_bundle(&dir);
    let archive = dir.join("b.tar.zst");
    pack(&b, &archive, &with_coredumps()).unwrap();
    let into = dir.join("out");
    fs::create_dir(&into).unwrap();
    for n in [0, 1, 3, 10, 30] {
        let e =
            format!("{:#}", unpack_until(&archive, &into, &Limits::default(), &stop_after(n)).unwrap_err());
        assert!(e.starts_with("interrupted while reading"), "after {n}: {e}");
        assert!(e.ends_with("nothing was unpacked"), "{e}");
        assert_eq!(fs::read_dir(&into).unwrap().count(), 0, "after {n} checks, left: {:?}", tree(&into));
    }
    // Not stopped, the same archive unpacks.
    unpack_until(&archive, &into, &Limits::default(), &|| false).unwrap();
}

#[test]
fn an_interrupted_pack_leaves_no_partial_archive() {
    let dir = scratch("pack-stop");
    let b = make_bundle(&dir);
    let before = files_of(&b);
    let archive = dir.join("b.tar.zst");
    for n in [0, 1, 5, 20] {
        let e =
            format!("{:#}", pack_until(&b, &archive, &PackOptions::default(), &stop_after(n)).unwrap_err());
        assert!(e.contains("interrupted while packing"), "after {n}: {e}");
        assert!(e.contains("the partial archive was removed"), "{e}");
        let left: Vec<_> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from(NAME)], "after {n} checks");
        assert!(files_of(&b) == before, "the bundle changed");
    }
    pack_until(&b, &archive, &PackOptions::default(), &|| false).unwrap();
}

/// Waits until `f` holds (up to 60 s), polling every millisecond.
fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !f() {
        assert!(start.elapsed() < std::time::Duration::from_secs(60), "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Ctrl-C (SIGINT) to the real command while it unpacks 1 GiB, then while it packs it: the
/// hidden partial folder and the `.partial` archive are removed, and it says it was interrupted.
#[test]
fn ctrl_c_during_unpack_and_pack_cleans_up() {
    let dir = scratch("ctrl-c");
    let b = dir.join(NAME);
    copy_dir(Path::new(FIXTURE), &b);
    // A sparse gigabyte: a GPU dump's ELF header, then zeros that take no disk. Packed with
    // `--with-coredumps`, for it is a dump by its content: zeros alone are a binary file, which
    // stays out of every archive (it would be packed in no time).
    let big = b.join("rungs/04-coredump/core_big.1.2");
    fs::write(&big, gpu_dump(64)).unwrap();
    fs::OpenOptions::new().write(true).open(&big).unwrap().set_len(1 << 30).unwrap();
    let archive = dir.join("b.tar.zst");
    let sigint = |child: &std::process::Child| {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        )
        .unwrap()
    };
    let spawn = |args: &[&std::ffi::OsStr]| {
        Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let partial = dir.join("b.tar.zst.partial");
    let child = spawn(&[
        "bundle".as_ref(),
        "pack".as_ref(),
        "--with-coredumps".as_ref(),
        b.as_os_str(),
        "-o".as_ref(),
        archive.as_os_str(),
    ]);
    wait_for("the partial archive", || partial.exists());
    sigint(&child);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("interrupted while packing"), "{err}");
    assert!(
        !partial.exists() && !archive.exists(),
        "left: {:?}",
        fs::read_dir(&dir).unwrap().collect::<Vec<_>>()
    );

    pack(&b, &archive, &with_coredumps()).unwrap();
    let into = dir.join("out");
    fs::create_dir(&into).unwrap();
    let child = spawn(&[
        "bundle".as_ref(),
        "unpack".as_ref(),
        archive.as_os_str(),
        into.as_os_str(),
        "--max-ratio".as_ref(),
        "1000000000".as_ref(),
    ]);
    wait_for("the hidden partial folder", || fs::read_dir(&into).unwrap().next().is_some());
    sigint(&child);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("interrupted while reading"), "{err}");
    assert_eq!(fs::read_dir(&into).unwrap().count(), 0, "left: {:?}", tree(&into));
}

/// Runs `f` on a thread and fails if it has not returned within 20 s: a read that blocks on a
/// FIFO fails the test instead of hanging it.
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(20)).unwrap_or_else(|_| panic!("{what} blocked"))
}

#[test]
fn fifos_and_devices_are_refused_without_blocking() {
    let dir = scratch("fifo");
    let fifo = dir.join("b.tar.zst");
    mkfifo(&fifo);
    for path in [fifo.clone(), PathBuf::from("/dev/zero")] {
        let (p, into) = (path.clone(), dir.join("out"));
        let e = within("unpack", move || format!("{:#}", unpack(&p, &into, &Limits::default()).unwrap_err()));
        assert!(e.contains("not a regular file"), "{e}");
        let p = path.clone();
        let e = within("verify", move || format!("{:#}", verify(&p).unwrap_err()));
        assert!(e.contains("not a regular file"), "{e}");
    }
    let e = within("unpack", {
        let (p, into) = (fifo.clone(), dir.join("out"));
        move || format!("{:#}", unpack(&p, &into, &Limits::default()).unwrap_err())
    });
    assert!(e.contains("it is a named pipe (FIFO)"), "{e}");
    assert!(!dir.join("out").exists());
    // A bundle whose manifest is a FIFO (made by hand: an archive cannot hold one).
    let b = dir.join("bundle");
    copy_dir(Path::new(FIXTURE), &b);
    fs::remove_file(b.join("manifest.yaml")).unwrap();
    mkfifo(&b.join("manifest.yaml"));
    let e = within("Bundle::load", move || format!("{:#}", xtask::bundle::Bundle::load(&b).unwrap_err()));
    assert!(e.contains("manifest.yaml") && e.contains("named pipe (FIFO)"), "{e}");
}

/// The billion laughs as a manifest: nine levels of nine aliases, about 400 MB once expanded,
/// from under 1 KB.
fn laughing_manifest() -> String {
    let mut s =
        String::from("tool: cargo xtask debug-ima\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for l in 1..9 {
        let refs = vec![format!("*l{}", l - 1); 9].join(", ");
        s.push_str(&format!("l{l}: &l{l} [{refs}]\n"));
    }
    s
}

/// A received bundle whose `manifest.yaml` is an alias bomb: every command that reads it
/// (`show`, `report`, `pack`) refuses it, naming the file and saying what to do; `list` leaves
/// it out. (How long the refusal takes is in docs/benchmarks.md.)
#[test]
fn alias_bomb_manifests_are_refused() {
    let dir = scratch("manifest-bomb");
    let b = dir.join(NAME);
    copy_dir(Path::new(FIXTURE), &b);
    let bomb = laughing_manifest();
    assert!(bomb.len() < 1024);
    fs::write(b.join("manifest.yaml"), &bomb).unwrap();
    let e = format!("{:#}", xtask::bundle::Bundle::load(&b).unwrap_err());
    let file = b.join("manifest.yaml").display().to_string();
    assert!(e.starts_with(&format!("`{file}`:")), "{e}");
    assert!(e.contains("its aliases expand it by more than 1.0 MiB"), "{e}");
    assert!(e.contains("get the bundle again from its author"), "{e}");
    for cmd in ["show", "report", "pack"] {
        let out = Command::new(env!("CARGO_BIN_EXE_xtask")).args(["bundle", cmd]).arg(&b).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {err}");
        assert!(err.contains(&file) && err.contains("aliases expand"), "{cmd}: {err}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["bundle", "list", "--bundle-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stdout).contains(NAME));
    // Deep nesting and a huge file are refused the same way.
    fs::write(b.join("manifest.yaml"), format!("tool: {}{}\n", "[".repeat(100), "]".repeat(100))).unwrap();
    let e = format!("{:#}", xtask::bundle::Bundle::load(&b).unwrap_err());
    assert!(e.contains("brackets nested deeper than 64 levels"), "{e}");
    fs::write(b.join("manifest.yaml"), "#".repeat((16 << 20) + 1)).unwrap();
    let e = format!("{:#}", xtask::bundle::Bundle::load(&b).unwrap_err());
    assert!(e.contains("larger than 16 MiB"), "{e}");
}

/// Every manifest the project recorded passes the bounds and loads.
#[test]
fn every_fixture_manifest_still_loads() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    let mut n = 0;
    for e in walkdir::WalkDir::new(&fixtures).sort_by_file_name() {
        let e = e.unwrap();
        if e.file_name() == "manifest.yaml" {
            let text = fs::read_to_string(e.path()).unwrap();
            xtask::findings::yaml_bounds::check(&text, &xtask::findings::yaml_bounds::Limits::MANIFEST)
                .unwrap_or_else(|r| panic!("{}: {r}", e.path().display()));
            xtask::bundle::Bundle::load(e.path().parent().unwrap())
                .unwrap_or_else(|err| panic!("{}: {err:#}", e.path().display()));
            n += 1;
        }
    }
    assert!(n >= 5, "{n} manifests");
}

/// An archive cut short is a damaged archive, not a full disk (issue 22: a truncated `.gz`
/// was reported as "check the free space").
#[test]
fn a_truncated_archive_is_damaged_not_a_full_disk() {
    let s = scratch("truncated");
    let b = make_bundle(&s.0);
    for compression in [Compression::Gzip, Compression::Zstd] {
        let a = s.0.join(format!("{NAME}.{compression:?}"));
        pack(&b, &a, &PackOptions { compression, ..with_coredumps() }).unwrap();
        let bytes = fs::read(&a).unwrap();
        // Cut in its header, in the middle of a file, and a few bytes before the end.
        for at in [20, bytes.len() / 4, bytes.len() / 2, bytes.len() - 9] {
            let cut = s.0.join(format!("cut-{compression:?}-{at}"));
            fs::write(&cut, &bytes[..at]).unwrap();
            let into = s.0.join(format!("into-{compression:?}-{at}"));
            let e = format!("{:#}", unpack(&cut, &into, &Limits::default()).unwrap_err());
            assert!(!e.contains("free space"), "{compression:?} cut at {at}: {e}");
            assert!(e.contains("damaged"), "{compression:?} cut at {at}: {e}");
            assert!(!into.exists(), "{compression:?} cut at {at}: {into:?} was left");
        }
    }
}

/// A `.tar.zst` of a top folder `top` holding `files` empty files in `rungs/` (and the
/// folders), so `files + 2` entries; about 2.7 bytes an entry once compressed.
fn many_entries(path: &Path, files: usize) {
    let mut entries =
        vec![raw("top/", EntryType::Directory, b""), raw("top/rungs/", EntryType::Directory, b"")];
    entries.extend((0..files).map(|i| raw(&format!("top/rungs/f{i:06}.log"), EntryType::Regular, b"")));
    fs::write(path, zst(&raw_tar(&entries))).unwrap();
}

/// Issue 22: an archive of more entries than the limit is refused, naming the limit and
/// `--max-entries`, with nothing left; one at the limit is read.
#[test]
fn an_archive_of_too_many_entries_is_refused_and_one_at_the_limit_is_read() {
    let s = scratch("entries");
    let limits = Limits { max_entries: 2_000, ..Limits::default() };
    let over = s.join("over.tar.zst");
    many_entries(&over, 1_999);
    let e = format!("{:#}", unpack(&over, &s.join("into-over"), &limits).unwrap_err());
    assert!(e.contains("it has more than 2000 entries (the limit), at entry `top/rungs/f001998.log`"), "{e}");
    assert!(
        e.contains("nothing was unpacked; if you trust it, raise the limit: `bundle unpack --max-entries N`"),
        "{e}"
    );
    assert!(!s.join("into-over").exists() || fs::read_dir(s.join("into-over")).unwrap().count() == 0);
    let at = s.join("at.tar.zst");
    many_entries(&at, 1_998);
    let u = unpack(&at, &s.join("into-at"), &limits).unwrap();
    assert_eq!(u.files, 1_998);
    assert!(u.root.join("rungs/f001997.log").is_file());
}

/// Issue 22: the 100,001-entry archive (272 KB) that kept `bundle show` busy for 50 s is
/// refused by `show` and `analyze` with what to do, before anything is written; `unpack
/// --max-entries` sets the limit.
#[test]
fn the_commands_refuse_a_hundred_thousand_entries_and_take_max_entries() {
    let s = scratch("entries-cli");
    let a = s.join("many.tar.zst");
    many_entries(&a, 99_999);
    assert!(fs::metadata(&a).unwrap().len() < 400_000);
    let xtask = |args: &[&std::ffi::OsStr]| {
        Command::new(env!("CARGO_BIN_EXE_xtask")).args(args).env("TMPDIR", &s.0).output().unwrap()
    };
    for cmd in [&["bundle", "show"][..], &["analyze"][..]] {
        let mut args: Vec<&std::ffi::OsStr> = cmd.iter().map(|c| c.as_ref()).collect();
        args.push(a.as_os_str());
        let out = xtask(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{cmd:?}: {err}");
        assert!(err.contains("it has more than 100000 entries (the limit)"), "{cmd:?}: {err}");
        assert!(err.contains("--max-entries N"), "{cmd:?}: {err}");
    }
    // Nothing left in the temporary folder.
    let left: Vec<_> =
        fs::read_dir(&s.0).unwrap().flatten().filter(|e| e.file_name() != "many.tar.zst").collect();
    assert!(left.is_empty(), "{left:?}");
    // `--max-entries` sets the limit both ways (a small archive keeps the test quick).
    let small = s.join("small.tar.zst");
    many_entries(&small, 58);
    let into = s.join("out");
    let unpack_with = |max: &str| {
        xtask(&[
            "bundle".as_ref(),
            "unpack".as_ref(),
            small.as_os_str(),
            into.as_os_str(),
            "--max-entries".as_ref(),
            max.as_ref(),
        ])
    };
    let out = unpack_with("50");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("it has more than 50 entries (the limit)"), "{err}");
    assert!(!into.join("top").exists());
    let out = unpack_with("60");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(into.join("top/rungs/f000057.log").is_file());
}

//! What packing, reading and verifying a bundle archive share: the names and limits, the
//! compression told from the first bytes, SHA-256 helpers, the walk of a bundle folder, and
//! [`write_sums`], which writes `SHA256SUMS` at the end of every ladder run.
//!
//! Must not: print; follow links or open special files; write anything but `SHA256SUMS`,
//! `LEFT_OUT.tsv` and the file given to [`write_atomic`].

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use sha2::{Digest, Sha256};

use crate::bundle::inputs::open_regular;
use crate::bundle::layout;

/// The checksum file at the bundle root: `<sha256>  <path>` per file, sorted by path, as
/// `sha256sum -c SHA256SUMS` reads it from inside the bundle.
pub const SUMS: &str = layout::SUMS;
/// The files `pack` left out, at the bundle root: `path\tbytes\twhy` per file, sorted, no header.
pub const LEFT_OUT: &str = layout::LEFT_OUT;
/// The modification time of every archive entry: the tar crate's `HeaderMode::Deterministic`
/// time (2006-07-24), not 0, which some tools mishandle.
pub const MTIME: u64 = 1_153_704_088;
/// The zstd level of `pack` by default: the `zstd` command's default.
pub const DEFAULT_LEVEL: i32 = 3;

/// Read and write buffers (1 MiB).
pub(super) const BUF: usize = 1 << 20;
/// Every zstd frame starts with these bytes.
pub(super) const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
/// A gzip member starts with these two bytes and deflate (8).
pub(super) const GZIP_MAGIC: [u8; 3] = [0x1F, 0x8B, 0x08];

/// Which compressed stream an archive is, from its first bytes.
pub(super) fn compression_of(magic: &[u8]) -> Option<Compression> {
    if magic.starts_with(&ZSTD_MAGIC) {
        Some(Compression::Zstd)
    } else if magic.starts_with(&GZIP_MAGIC) {
        Some(Compression::Gzip)
    } else {
        None
    }
}

/// The archive's compression: zstd (`.tar.zst`, the default) or gzip (`.tar.gz`, which
/// GitHub takes as an issue attachment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Zstd,
    Gzip,
}

/// How much of the stream may be tar headers, GNU long names and PAX records before one entry
/// (the tar crate reads those into memory).
pub(super) const META_BUDGET: u64 = 1 << 20;
/// The largest `SHA256SUMS` or `LEFT_OUT.tsv` read into memory.
pub(super) const LIST_MAX: u64 = 64 << 20;
/// The most data allowed after the end of the tar (GNU tar pads to 10 KiB).
pub(super) const TRAILING_MAX: u64 = 1 << 20;
/// The largest `.sha256` sidecar read.
pub(super) const SIDECAR_MAX: u64 = 64 << 10;

pub(super) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

pub(super) fn sha256_hex(h: Sha256) -> String {
    hex(&h.finalize())
}

pub(super) fn sha256_bytes(data: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(data);
    sha256_hex(h)
}

/// The SHA-256 of a file, lowercase hex, read through a 1 MiB buffer.
pub fn sha256_file(path: &Path) -> Result<String> {
    let read_err = |e: io::Error| anyhow!("cannot read {}: {e}; check permissions", path.display());
    let mut f = open_regular(path).map_err(read_err)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; BUF];
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_err(e)),
        };
        h.update(&buf[..n]);
    }
    Ok(sha256_hex(h))
}

// ---------------------------------------------------------------------------------------------
// Walking a bundle

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Dir,
    File { bytes: u64, exec: bool },
}

#[derive(Debug)]
pub(super) struct Item {
    /// Relative to the bundle root, '/'-separated.
    pub(super) rel: String,
    pub(super) abs: PathBuf,
    pub(super) kind: Kind,
}

/// Why a name cannot be in a bundle: `sha256sum` escapes `\n` and `\\` (and newer versions
/// `\r`) in its lines, and control characters make paths unreadable in messages.
pub(super) fn bad_name(name: &str) -> bool {
    name.chars().any(|c| c == '\\' || c.is_control())
}

/// The path of `path` relative to `root`, '/'-separated, when every part of it is UTF-8 and
/// holds no character [`bad_name`] refuses; otherwise the name a list gives it
/// ([`listed_name`]).
pub(super) fn rel_of(root: &Path, path: &Path) -> std::result::Result<String, String> {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let mut out = String::new();
    let mut plain = true;
    for c in rel.components() {
        let part = c.as_os_str().to_string_lossy();
        plain &= matches!(part, std::borrow::Cow::Borrowed(_));
        if !out.is_empty() {
            out.push('/');
        }
        out.push_str(&part);
    }
    if plain && !bad_name(&out) {
        Ok(out)
    } else {
        Err(listed_name(&out))
    }
}

/// How `LEFT_OUT.tsv` and `bundle verify` name a file whose name no list can hold (a
/// backslash, a newline or another control character, bytes that are not UTF-8, already
/// read lossily): each such character a `?`.
pub(super) fn listed_name(lossy: &str) -> String {
    lossy.chars().map(|c| if c == '\\' || c.is_control() { '?' } else { c }).collect()
}

/// Why an entry of a bundle stays out of its archive and its `SHA256SUMS` without stopping
/// them (a file the target wrote may have any name and be anything): listed in
/// `LEFT_OUT.tsv` as `(name, bytes, why)`.
pub(super) type Odd = (String, u64, String);

const ODD_NAME: &str = "its name holds a backslash, a control character or bytes that are not UTF-8, which \
     the checksum list and an archive cannot name safely";
const ODD_LINK: &str = "a symbolic link: never followed, never archived";
const ODD_SPECIAL: &str = "not a regular file (a FIFO, socket or device): never read";

/// Every directory and regular file of the bundle, in walk order (sorted by name within each
/// folder), without the root's `SHA256SUMS` and `LEFT_OUT.tsv`; and what no archive or list
/// can hold ([`Odd`]: a link, a special file, a name [`rel_of`] refuses, with everything
/// under such a folder), which is left out, never a reason to refuse the bundle.
pub(super) fn walk(bundle: &Path) -> Result<(Vec<Item>, Vec<Odd>)> {
    let meta = fs::metadata(bundle).with_context(|| {
        format!("cannot read the bundle {}; check the path (`ls bundles/`)", bundle.display())
    })?;
    if !meta.is_dir() {
        bail!("{} is not a bundle directory; pass a folder under `bundles/`", bundle.display());
    }
    let mut items = Vec::new();
    let mut odd = Vec::new();
    let mut entries =
        walkdir::WalkDir::new(bundle).min_depth(1).follow_links(false).sort_by_file_name().into_iter();
    while let Some(entry) = entries.next() {
        let entry = entry.map_err(|e| {
            let p = e.path().unwrap_or(bundle).display().to_string();
            anyhow!("cannot read {p}: {e}; check permissions")
        })?;
        let ft = entry.file_type();
        let rel = match rel_of(bundle, entry.path()) {
            Ok(rel) => rel,
            Err(listed) => {
                let bytes = if ft.is_dir() {
                    entries.skip_current_dir();
                    dir_bytes(entry.path())
                } else {
                    entry.metadata().map_or(0, |m| m.len())
                };
                odd.push((listed, bytes, ODD_NAME.to_string()));
                continue;
            }
        };
        if entry.depth() == 1 && (rel == SUMS || rel == LEFT_OUT) {
            if ft.is_file() {
                continue;
            }
            bail!("`{rel}` in {} is not a regular file; remove it, then try again", bundle.display());
        }
        let kind = if ft.is_dir() {
            Kind::Dir
        } else if ft.is_file() {
            let m = entry.metadata().map_err(|e| anyhow!("cannot read {rel}: {e}; check permissions"))?;
            Kind::File { bytes: m.len(), exec: m.permissions().mode() & 0o111 != 0 }
        } else {
            let why = if ft.is_symlink() { ODD_LINK } else { ODD_SPECIAL };
            odd.push((rel, 0, why.to_string()));
            continue;
        };
        items.push(Item { rel, abs: entry.path().to_path_buf(), kind });
    }
    Ok((items, odd))
}

/// The bytes of the regular files under `dir` (links not followed).
fn dir_bytes(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .follow_links(false)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

pub(super) fn render_sums(sums: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = sums.iter().collect();
    sorted.sort();
    sorted.iter().map(|(path, hash)| format!("{hash}  {path}\n")).collect()
}

pub(super) fn render_left_out(left: &[(String, u64, String)]) -> String {
    left.iter().map(|(path, bytes, why)| format!("{path}\t{bytes}\t{why}\n")).collect()
}

/// `<path><suffix>`, e.g. `x.tar.zst.partial`.
pub(super) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = OsString::from(path.as_os_str());
    s.push(suffix);
    PathBuf::from(s)
}

/// Writes a file through a sibling `.partial` and a rename, so readers never see half of it
/// and a full disk leaves the last whole version in place. The I/O error stays in the chain
/// ([`crate::files::out_of_space`] looks for it).
pub(crate) fn write_atomic(path: &Path, data: &[u8]) -> Result<()> {
    let tmp = with_suffix(path, ".partial");
    let res = fs::write(&tmp, data).and_then(|()| fs::rename(&tmp, path));
    if let Err(e) = res {
        let _ = fs::remove_file(&tmp);
        return Err(anyhow::Error::new(e).context(format!(
            "cannot write {}; check permissions and free space (`df -h`)",
            path.display()
        )));
    }
    Ok(())
}

pub(super) fn remove_if_present(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            bail!("cannot remove the stale {}: {e}; check permissions", path.display())
        }
        _ => Ok(()),
    }
}

/// Writes `SHA256SUMS` at the bundle root for every regular file (coredumps included) but
/// `SHA256SUMS` and `LEFT_OUT.tsv`, and removes a stale `LEFT_OUT.tsv` (a directory holds
/// everything). Returns the number of files listed. Called at the end of every ladder run.
pub fn write_sums(bundle: &Path) -> Result<usize> {
    write_sums_reusing(bundle, &BTreeMap::new())
}

/// [`write_sums`], taking the hash of a file from `known` (path relative to the bundle →
/// size and hash, as the manifest recorded them after each rung) when its size is still the
/// recorded one: a coredump of hundreds of MB is not read again.
pub fn write_sums_reusing(bundle: &Path, known: &BTreeMap<String, (u64, String)>) -> Result<usize> {
    let mut sums = Vec::new();
    let (items, mut odd) = walk(bundle)?;
    for item in items {
        if let Kind::File { bytes, .. } = item.kind {
            let hash = match known.get(&item.rel) {
                Some((size, hash)) if *size == bytes && !hash.is_empty() => hash.clone(),
                _ => sha256_file(&item.abs)?,
            };
            sums.push((item.rel, hash));
        }
    }
    // What no list can name is listed as left out (and the list in SHA256SUMS, as `pack`
    // lists it), so that `bundle verify` of the sealed folder names it as such, not as a file
    // added since.
    if odd.is_empty() {
        remove_if_present(&bundle.join(LEFT_OUT))?;
    } else {
        odd.sort();
        let text = render_left_out(&odd);
        write_atomic(&bundle.join(LEFT_OUT), text.as_bytes())?;
        sums.push((LEFT_OUT.to_string(), sha256_bytes(text.as_bytes())));
    }
    write_atomic(&bundle.join(SUMS), render_sums(&sums).as_bytes())?;
    Ok(sums.len())
}

pub(super) fn safe_list_path(p: &str) -> bool {
    !p.is_empty()
        && !p.starts_with('/')
        && p.split('/').all(|c| !c.is_empty() && c != "." && c != ".." && !bad_name(c))
}

/// Parses `SHA256SUMS`: `(path, lowercase hex)` in file order.
pub(super) fn parse_sums(text: &[u8], what: &str) -> Result<Vec<(String, String)>> {
    let text = std::str::from_utf8(text)
        .map_err(|_| anyhow!("{what} is not UTF-8 text; it is damaged: get a fresh copy of the bundle"))?;
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let malformed = || {
            anyhow!(
                "{what} line {n} is not `<sha256>  <path>`: `{}`; the file is damaged: get a fresh copy of the bundle",
                line.escape_debug()
            )
        };
        let (hash, rest) = line.split_at_checked(64).ok_or_else(malformed)?;
        if !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(malformed());
        }
        let path = rest.strip_prefix("  ").or_else(|| rest.strip_prefix(" *")).ok_or_else(malformed)?;
        if !safe_list_path(path) {
            bail!(
                "{what} line {n} names `{}`, which is not a path inside the bundle; the file is damaged or \
                 was written by hand: get a fresh copy of the bundle",
                path.escape_debug()
            );
        }
        if !seen.insert(path.to_string()) {
            bail!("{what} line {n} lists `{path}` a second time; the file is damaged: get a fresh copy");
        }
        out.push((path.to_string(), hash.to_ascii_lowercase()));
    }
    Ok(out)
}

/// Parses `LEFT_OUT.tsv`: the paths, in file order.
pub(super) fn parse_left_out(text: &[u8], what: &str) -> Result<Vec<String>> {
    Ok(parse_left_out_sizes(text, what)?.into_iter().map(|(p, _, _)| p).collect())
}

/// Parses `LEFT_OUT.tsv`: the paths with their sizes, in file order.
pub(super) fn parse_left_out_sizes(text: &[u8], what: &str) -> Result<Vec<(String, u64, String)>> {
    let text = std::str::from_utf8(text)
        .map_err(|_| anyhow!("{what} is not UTF-8 text; it is damaged: get a fresh copy of the bundle"))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut cols = line.split('\t');
        let ok = match (cols.next(), cols.next(), cols.next()) {
            (Some(p), Some(b), Some(why)) if safe_list_path(p) => b.parse::<u64>().ok().map(|b| (p, b, why)),
            _ => None,
        };
        let Some((p, bytes, why)) = ok else {
            bail!(
                "{what} line {} is not `<path>\\t<bytes>\\t<why>`: `{}`; the file is damaged: get a fresh copy",
                i + 1,
                line.escape_debug()
            );
        };
        out.push((p.to_string(), bytes, why.to_string()));
    }
    Ok(out)
}

pub(super) fn read_capped(path: &Path, cap: u64) -> Result<Vec<u8>> {
    let f =
        open_regular(path).map_err(|e| anyhow!("cannot read {}: {e}; check permissions", path.display()))?;
    let mut v = Vec::new();
    f.take(cap + 1)
        .read_to_end(&mut v)
        .map_err(|e| anyhow!("cannot read {}: {e}; check permissions", path.display()))?;
    if v.len() as u64 > cap {
        bail!("{} is over {} MiB; it is not a bundle's checksum list", path.display(), cap >> 20);
    }
    Ok(v)
}

pub(super) fn interrupted(archive: &Path, doing: &str, tail: &str) -> anyhow::Error {
    anyhow!("interrupted while {doing} `{}`: {tail}", archive.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_and_known_hash() {
        assert_eq!(sha256_bytes(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(hex(&[0, 0xff, 0x1a]), "00ff1a");
    }
}

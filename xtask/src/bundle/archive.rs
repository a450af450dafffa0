//! Bundle archives: `pack` writes a bundle as a deterministic `.tar.zst` with its
//! `SHA256SUMS` (coredumps left out unless asked for, and listed in `LEFT_OUT.tsv`), `unpack`
//! extracts one without trusting it, `verify` checks a bundle directory or archive against
//! its `SHA256SUMS`; [`write_sums`] writes that file at the end of every ladder run.
//! [`pack_until`] and [`unpack_until`] stop when asked (Ctrl-C, through the caller's check)
//! and remove what they had written: the `.partial` archive, the hidden partial folder.
//!
//! Must not: print (it returns values; `ui` and `cli` render them); follow, create or archive
//! links or special files; write anywhere but the archive (and its `.partial` and `.sha256`
//! siblings), the bundle's `SHA256SUMS` and `LEFT_OUT.tsv`, the folder given to `unpack`, and
//! the private temporary folder of [`unpack_temp`] (removed when its value is dropped);
//! or trust an archive's paths, types, sizes, modes, owners or times. Concurrent changes to a
//! bundle or destination while this code runs are outside its threat model.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::{mpsc, Arc};

use anyhow::{anyhow, bail, Context, Result};
use sha2::{Digest, Sha256};
use tar::{EntryType, Header};

use super::inputs::open_regular;
use super::layout::{self, DUMP_PREFIX};

/// The checksum file at the bundle root: `<sha256>  <path>` per file, sorted by path, as
/// `sha256sum -c SHA256SUMS` reads it from inside the bundle.
pub const SUMS: &str = layout::SUMS;
/// The files `pack` left out, at the bundle root: `path\tbytes\twhy` per file, sorted, no header.
pub const LEFT_OUT: &str = layout::LEFT_OUT;
/// Why a coredump is left out of an archive by default (the `why` column of `LEFT_OUT.tsv`).
pub const COREDUMP_WHY: &str = "coredump: may hold model or user data; pack with --with-coredumps to include";
/// Why a binary file the target left in a rung folder is not in an archive: nothing read it,
/// so nothing could take a secret out of it.
pub const BINARY_WHY: &str = "binary file the target left: not read, so not shared";

/// Why `rel` (a file of `bundle`) stays out of an archive, if it does: a coredump, unless
/// `with_coredumps`; a binary file in a rung folder (what the target left there beside the
/// tool's logs and reports, which are text and redacted), always.
fn left_out_why(bundle: &Path, rel: &str, with_coredumps: bool) -> Option<&'static str> {
    if is_coredump(rel) {
        return (!with_coredumps).then_some(COREDUMP_WHY);
    }
    if !rel.starts_with(&format!("{}/", layout::RUNGS_DIR)) {
        return None;
    }
    let mut head = [0u8; 8192];
    let n = File::open(bundle.join(rel)).and_then(|mut f| f.read(&mut head)).ok()?;
    (crate::findings::scan::sniff(&head[..n]) == crate::findings::scan::Content::Binary).then_some(BINARY_WHY)
}
/// The modification time of every archive entry: the tar crate's `HeaderMode::Deterministic`
/// time (2006-07-24), not 0, which some tools mishandle.
pub const MTIME: u64 = 1_153_704_088;
/// The zstd level of `pack` by default: the `zstd` command's default.
pub const DEFAULT_LEVEL: i32 = 3;

/// Read and write buffers (1 MiB).
const BUF: usize = 1 << 20;
/// Every zstd frame starts with these bytes.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
/// A gzip member starts with these two bytes and deflate (8).
const GZIP_MAGIC: [u8; 3] = [0x1F, 0x8B, 0x08];

/// Which compressed stream an archive is, from its first bytes.
fn compression_of(magic: &[u8]) -> Option<Compression> {
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

/// The compressor of [`pack`].
enum Compressor<W: Write> {
    Zstd(zstd::stream::write::Encoder<'static, W>),
    Gzip(flate2::write::GzEncoder<W>),
}

impl<W: Write> Write for Compressor<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Compressor::Zstd(e) => e.write(buf),
            Compressor::Gzip(e) => e.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Compressor::Zstd(e) => e.flush(),
            Compressor::Gzip(e) => e.flush(),
        }
    }
}

impl<W: Write> Compressor<W> {
    /// Ends the stream and gives the writer back.
    fn finish(self) -> io::Result<W> {
        match self {
            Compressor::Zstd(e) => e.finish(),
            Compressor::Gzip(e) => e.finish(),
        }
    }
}

/// The decompressor of [`scan`].
enum Decompressor<R: io::BufRead> {
    Zstd(zstd::stream::read::Decoder<'static, R>),
    Gzip(flate2::bufread::GzDecoder<R>),
}

impl<R: io::BufRead> Read for Decompressor<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Decompressor::Zstd(d) => d.read(buf),
            Decompressor::Gzip(d) => d.read(buf),
        }
    }
}

impl<R: io::BufRead> Decompressor<R> {
    /// The reader underneath, for what follows the compressed stream.
    fn finish(self) -> R {
        match self {
            Decompressor::Zstd(d) => d.finish(),
            Decompressor::Gzip(d) => d.into_inner(),
        }
    }
}
/// How much of the stream may be tar headers, GNU long names and PAX records before one entry
/// (the tar crate reads those into memory).
const META_BUDGET: u64 = 1 << 20;
/// The largest `SHA256SUMS` or `LEFT_OUT.tsv` read into memory.
const LIST_MAX: u64 = 64 << 20;
/// The most data allowed after the end of the tar (GNU tar pads to 10 KiB).
const TRAILING_MAX: u64 = 1 << 20;
/// The largest `.sha256` sidecar read.
const SIDECAR_MAX: u64 = 64 << 10;

/// True for a GPU or CPU coredump: a file name starting with `core_` (the ladder's
/// `core_<host>.<pid>.<time>`), or `core` / `core.<pid>`.
pub fn is_coredump(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name.starts_with(DUMP_PREFIX)
        || name == "core"
        || name.strip_prefix("core.").is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

fn sha256_hex(h: Sha256) -> String {
    hex(&h.finalize())
}

fn sha256_bytes(data: &[u8]) -> String {
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
enum Kind {
    Dir,
    File { bytes: u64, exec: bool },
}

#[derive(Debug)]
struct Item {
    /// Relative to the bundle root, '/'-separated.
    rel: String,
    abs: PathBuf,
    kind: Kind,
}

/// Why a name cannot be in a bundle: `sha256sum` escapes `\n` and `\\` (and newer versions
/// `\r`) in its lines, and control characters make paths unreadable in messages.
fn bad_name(name: &str) -> bool {
    name.chars().any(|c| c == '\\' || c.is_control())
}

fn rel_of(root: &Path, path: &Path) -> Result<String> {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let mut out = String::new();
    for c in rel.components() {
        let s = c.as_os_str().to_str().ok_or_else(|| {
            anyhow!(
                "`{}` has a name that is not UTF-8; rename it, then try again",
                path.display().to_string().escape_debug()
            )
        })?;
        if !out.is_empty() {
            out.push('/');
        }
        out.push_str(s);
    }
    if bad_name(&out) {
        bail!(
            "`{}` has a newline, backslash or other control character in its name, which \
             `sha256sum` would escape; rename it, then try again",
            out.escape_debug()
        );
    }
    Ok(out)
}

/// Every directory and regular file of the bundle, in walk order (sorted by name within each
/// folder), without the root's `SHA256SUMS` and `LEFT_OUT.tsv`. Links and special files are
/// errors.
fn walk(bundle: &Path) -> Result<Vec<Item>> {
    let meta = fs::metadata(bundle).with_context(|| {
        format!("cannot read the bundle {}; check the path (`ls bundles/`)", bundle.display())
    })?;
    if !meta.is_dir() {
        bail!("{} is not a bundle directory; pass a folder under `bundles/`", bundle.display());
    }
    let mut items = Vec::new();
    for entry in walkdir::WalkDir::new(bundle).min_depth(1).follow_links(false).sort_by_file_name() {
        let entry = entry.map_err(|e| {
            let p = e.path().unwrap_or(bundle).display().to_string();
            anyhow!("cannot read {p}: {e}; check permissions")
        })?;
        let rel = rel_of(bundle, entry.path())?;
        let ft = entry.file_type();
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
            let what = if ft.is_symlink() { "a symbolic link" } else { "a special file" };
            bail!(
                "`{rel}` in {} is {what}; a bundle holds only regular files and directories: \
                 remove it (or replace it with a copy of what it points to), then try again",
                bundle.display()
            );
        };
        items.push(Item { rel, abs: entry.path().to_path_buf(), kind });
    }
    Ok(items)
}

fn render_sums(sums: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = sums.iter().collect();
    sorted.sort();
    sorted.iter().map(|(path, hash)| format!("{hash}  {path}\n")).collect()
}

fn render_left_out(left: &[(String, u64, String)]) -> String {
    left.iter().map(|(path, bytes, why)| format!("{path}\t{bytes}\t{why}\n")).collect()
}

/// `<path><suffix>`, e.g. `x.tar.zst.partial`.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
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

fn remove_if_present(path: &Path) -> Result<()> {
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
    for item in walk(bundle)? {
        if let Kind::File { bytes, .. } = item.kind {
            let hash = match known.get(&item.rel) {
                Some((size, hash)) if *size == bytes && !hash.is_empty() => hash.clone(),
                _ => sha256_file(&item.abs)?,
            };
            sums.push((item.rel, hash));
        }
    }
    write_atomic(&bundle.join(SUMS), render_sums(&sums).as_bytes())?;
    remove_if_present(&bundle.join(LEFT_OUT))?;
    Ok(sums.len())
}

// ---------------------------------------------------------------------------------------------
// pack

/// How `pack` writes an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackOptions {
    /// Include coredumps (left out by default: they may hold model or user data).
    pub with_coredumps: bool,
    /// zstd level (3, the `zstd` command's default).
    pub level: i32,
    /// zstd worker threads; 0 = one per available CPU. Always at least one worker, so the
    /// output is the same for any value (zstd's streaming multi-threaded format does not depend
    /// on the number of workers, but differs from single-threaded mode).
    pub threads: u32,
    /// zstd (default) or gzip (single-threaded, level 6, no name and no time in its header).
    pub compression: Compression,
}

impl Default for PackOptions {
    fn default() -> Self {
        PackOptions {
            with_coredumps: false,
            level: DEFAULT_LEVEL,
            threads: 0,
            compression: Compression::Zstd,
        }
    }
}

/// What `pack` wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packed {
    pub archive: PathBuf,
    /// Size of the archive.
    pub bytes: u64,
    /// Regular files in the archive, `SHA256SUMS` and `LEFT_OUT.tsv` included.
    pub files: usize,
    /// Their total size, uncompressed.
    pub input_bytes: u64,
    /// Files left out (paths relative to the bundle, sizes), sorted; also in `LEFT_OUT.tsv`.
    pub left_out: Vec<(String, u64)>,
    /// SHA-256 of the archive, as written to `<archive>.sha256`.
    pub sha256: String,
}

/// `<bundle>.tar.zst` beside the bundle directory.
pub fn default_archive_path(bundle: &Path) -> PathBuf {
    default_archive_path_for(bundle, Compression::Zstd)
}

/// `<bundle>.tar.zst` or `<bundle>.tar.gz` beside the bundle folder.
pub fn default_archive_path_for(bundle: &Path, compression: Compression) -> PathBuf {
    let ext = match compression {
        Compression::Zstd => ".tar.zst",
        Compression::Gzip => ".tar.gz",
    };
    let trimmed = bundle.components().collect::<PathBuf>();
    match trimmed.file_name() {
        Some(_) => with_suffix(&trimmed, ext),
        // `.` or `..`: name the archive after the folder itself.
        None => match fs::canonicalize(bundle) {
            Ok(c) => with_suffix(&c, ext),
            Err(_) => with_suffix(&trimmed, ext),
        },
    }
}

/// Hashes what it passes on, counting bytes.
struct HashWriter<W> {
    inner: W,
    hasher: Sha256,
    bytes: u64,
}

impl<W: Write> Write for HashWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Why appending a file failed: reading it, writing the archive, or a stop.
enum Failed {
    Read(io::Error),
    Write(io::Error),
    Stopped,
}

/// Buffers in flight between reading, hashing and compressing.
const POOL: usize = 4;

enum ToHasher {
    Chunk(Arc<Vec<u8>>, usize),
    /// End of a file: send its digest back.
    Finish,
}

enum FromHasher {
    Buf(Arc<Vec<u8>>),
    Digest(String),
}

/// SHA-256 on a thread of its own, fed the very buffers `pack` reads and compresses (one read
/// pass), so that hashing runs beside reading and compressing instead of before them: with
/// many zstd workers, a hash on the reading thread would be what limits the speed.
struct Hashing {
    to: mpsc::Sender<ToHasher>,
    back: mpsc::Receiver<FromHasher>,
    free: Vec<Vec<u8>>,
}

fn stopped() -> io::Error {
    io::Error::other("the hashing thread stopped")
}

impl Hashing {
    /// Starts the hashing thread in `scope`; it ends when this is dropped.
    fn start<'scope>(scope: &'scope std::thread::Scope<'scope, '_>, buf_len: usize) -> Hashing {
        let (to, rx) = mpsc::channel::<ToHasher>();
        let (tx, back) = mpsc::channel::<FromHasher>();
        scope.spawn(move || {
            let mut h = Sha256::new();
            for msg in rx {
                let reply = match msg {
                    ToHasher::Chunk(buf, n) => {
                        h.update(&buf[..n]);
                        FromHasher::Buf(buf)
                    }
                    ToHasher::Finish => FromHasher::Digest(hex(&h.finalize_reset())),
                };
                if tx.send(reply).is_err() {
                    break;
                }
            }
        });
        Hashing { to, back, free: (0..POOL).map(|_| vec![0u8; buf_len]).collect() }
    }

    /// A free buffer: one never used, or one the hasher is done with (and `pack` too: its own
    /// reference is dropped before it asks for the next buffer).
    fn buffer(&mut self) -> io::Result<Vec<u8>> {
        loop {
            if let Some(b) = self.free.pop() {
                return Ok(b);
            }
            match self.back.recv().map_err(|_| stopped())? {
                FromHasher::Buf(b) => self.free.push(Arc::try_unwrap(b).unwrap_or_else(|b| b.to_vec())),
                FromHasher::Digest(_) => return Err(io::Error::other("a digest came back mid-file")),
            }
        }
    }

    fn hash(&mut self, buf: Vec<u8>, n: usize) -> io::Result<Arc<Vec<u8>>> {
        let shared = Arc::new(buf);
        self.to.send(ToHasher::Chunk(shared.clone(), n)).map_err(|_| stopped())?;
        Ok(shared)
    }

    /// The digest of everything sent since the last one; collects the buffers on the way.
    fn finish(&mut self) -> io::Result<String> {
        self.to.send(ToHasher::Finish).map_err(|_| stopped())?;
        loop {
            match self.back.recv().map_err(|_| stopped())? {
                FromHasher::Buf(b) => self.free.push(Arc::try_unwrap(b).unwrap_or_else(|b| b.to_vec())),
                FromHasher::Digest(d) => return Ok(d),
            }
        }
    }
}

/// Appends a regular file of `bytes` bytes: the header through the tar crate (GNU long names,
/// checksum; with no data, so it writes no padding either), then the data straight from the
/// file in buffer-sized reads, each hashed (on the hashing thread) and compressed from the same
/// memory, then the padding. Returns the file's SHA-256. A file that shrinks or grows while it
/// is read is an error (the header already holds its size).
fn append_file<W: Write>(
    tar: &mut tar::Builder<W>,
    name: &str,
    kind: Kind,
    path: &Path,
    hashing: &mut Hashing,
    stop: &dyn Fn() -> bool,
) -> Result<String, Failed> {
    let bytes = match kind {
        Kind::File { bytes, .. } => bytes,
        Kind::Dir => 0,
    };
    let mut f = open_regular(path).map_err(Failed::Read)?;
    let mut h = header(kind);
    tar.append_data(&mut h, name, io::empty()).map_err(Failed::Write)?;
    let w = tar.get_mut();
    let mut left = bytes;
    while left > 0 {
        if stop() {
            return Err(Failed::Stopped);
        }
        let mut buf = hashing.buffer().map_err(Failed::Write)?;
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = match f.read(&mut buf[..want]) {
            Ok(0) => {
                let e = io::Error::new(io::ErrorKind::UnexpectedEof, "the file shrank while it was packed");
                return Err(Failed::Read(e));
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                hashing.free.push(buf);
                continue;
            }
            Err(e) => return Err(Failed::Read(e)),
        };
        let shared = hashing.hash(buf, n).map_err(Failed::Write)?;
        w.write_all(&shared[..n]).map_err(Failed::Write)?;
        left -= n as u64;
    }
    let mut one = [0u8; 1];
    match f.read(&mut one) {
        Ok(0) => {}
        Ok(_) => return Err(Failed::Read(io::Error::other("the file grew while it was packed"))),
        Err(e) => return Err(Failed::Read(e)),
    }
    let pad = ((512 - bytes % 512) % 512) as usize;
    w.write_all(&[0u8; 512][..pad]).map_err(Failed::Write)?;
    hashing.finish().map_err(Failed::Write)
}

type Tar = tar::Builder<BufWriter<Compressor<HashWriter<BufWriter<File>>>>>;

fn header(kind: Kind) -> Header {
    let mut h = Header::new_gnu();
    let (ty, size, mode) = match kind {
        Kind::Dir => (EntryType::Directory, 0, 0o755),
        Kind::File { bytes, exec } => (EntryType::Regular, bytes, if exec { 0o755 } else { 0o644 }),
    };
    h.set_entry_type(ty);
    h.set_size(size);
    h.set_mode(mode);
    h.set_uid(0);
    h.set_gid(0);
    h.set_mtime(MTIME);
    if let Some(gnu) = h.as_gnu_mut() {
        gnu.set_device_major(0);
        gnu.set_device_minor(0);
    }
    h
}

/// A failed write of the archive, the I/O error (its kind: a full disk) kept in the chain.
fn write_err(archive: &Path, e: &io::Error) -> anyhow::Error {
    anyhow::Error::new(io::Error::new(e.kind(), e.to_string())).context(format!(
        "cannot write {}; free some space (`df -h`) or write the archive elsewhere",
        archive.display()
    ))
}

/// Packs `bundle` into `archive` (a `.tar.zst`): one top folder named like the bundle, entries
/// in walk order with fixed headers, then `LEFT_OUT.tsv` (when something was left out) and
/// `SHA256SUMS`. Both are also written into the bundle, so that the directory and the archive
/// agree. The archive is written to `<archive>.partial` and renamed; `<archive>.sha256` holds
/// its own hash for `sha256sum -c`. Same bundle and options, same bytes. An existing archive
/// at that path is replaced.
pub fn pack(bundle: &Path, archive: &Path, opts: &PackOptions) -> Result<Packed> {
    pack_until(bundle, archive, opts, &|| false)
}

/// [`pack`], stopping when `stop` says so (asked before each file and each read of one): the
/// `.partial` archive is removed, the bundle is left as it was, and the error says so.
pub fn pack_until(
    bundle: &Path,
    archive: &Path,
    opts: &PackOptions,
    stop: &dyn Fn() -> bool,
) -> Result<Packed> {
    let canon = fs::canonicalize(bundle).with_context(|| {
        format!("cannot read the bundle {}; check the path (`ls bundles/`)", bundle.display())
    })?;
    let top = canon
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| !bad_name(n))
        .ok_or_else(|| anyhow!("{} has no usable folder name; rename it, then pack again", bundle.display()))?
        .to_string();
    let archive_name = archive
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| !bad_name(n))
        .ok_or_else(|| {
            anyhow!("{} is not a usable archive file name; choose a plain `NAME.tar.zst`", archive.display())
        })?
        .to_string();
    let parent = match archive.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let parent_canon = fs::canonicalize(&parent).with_context(|| {
        format!("cannot use {} for the archive; create that folder or choose another place", parent.display())
    })?;
    if parent_canon.starts_with(&canon) {
        bail!(
            "{} is inside the bundle it packs; write the archive beside the bundle (the default) or elsewhere",
            archive.display()
        );
    }

    let items = walk(bundle)?;
    let mut left_out = Vec::new();
    let mut kept = Vec::with_capacity(items.len());
    for item in items {
        let why = match item.kind {
            Kind::File { .. } => left_out_why(bundle, &item.rel, opts.with_coredumps),
            _ => None,
        };
        match (item.kind, why) {
            (Kind::File { bytes, .. }, Some(why)) => left_out.push((item.rel, bytes, why.to_string())),
            _ => kept.push(item),
        }
    }
    // A bundle unpacked from an archive lacks what its `LEFT_OUT.tsv` lists: those stay left
    // out (with the sizes they had), so that packing it again gives the same archive.
    let previous = bundle.join(LEFT_OUT);
    if previous.is_file() {
        for (rel, bytes, why) in parse_left_out_sizes(&read_capped(&previous, LIST_MAX)?, LEFT_OUT)? {
            let present = kept.iter().any(|i| i.rel == rel) || left_out.iter().any(|(p, _, _)| *p == rel);
            if !present && fs::symlink_metadata(bundle.join(&rel)).is_err() {
                left_out.push((rel, bytes, why));
            }
        }
    }
    left_out.sort();
    let left_text = render_left_out(&left_out);

    let partial = with_suffix(archive, ".partial");
    let guard = RemoveFile(Some(partial.clone()));
    let file = File::create(&partial).map_err(|e| {
        anyhow!(
            "cannot create {}: {e}; check permissions, or choose another place for the archive",
            partial.display()
        )
    })?;
    let out = HashWriter { inner: BufWriter::with_capacity(BUF, file), hasher: Sha256::new(), bytes: 0 };
    let workers = match opts.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        n => n,
    };
    let zstd_err = |e: io::Error| {
        anyhow!(
            "cannot set up zstd at level {}: {e}; use a level from 1 to 19 (3 is the default)",
            opts.level
        )
    };
    // Deterministic output: always the multi-threaded streaming mode (its frames do not depend
    // on the number of workers, facebook/zstd#2327), no long-distance matching, and no pledged
    // size, so the parameters are those of an unknown size whatever the bundle's size is.
    let enc = match opts.compression {
        Compression::Zstd => {
            let mut enc = zstd::stream::write::Encoder::new(out, opts.level).map_err(zstd_err)?;
            enc.multithread(workers.max(1)).map_err(zstd_err)?;
            enc.long_distance_matching(false).map_err(zstd_err)?;
            enc.include_checksum(true).map_err(zstd_err)?;
            Compressor::Zstd(enc)
        }
        // No file name, time 0 and a fixed system byte in the header: the same bytes anywhere.
        Compression::Gzip => Compressor::Gzip(
            flate2::GzBuilder::new().mtime(0).operating_system(255).write(out, flate2::Compression::new(6)),
        ),
    };
    // As large as the reads of `append_file`, so that they go to the encoder without a copy.
    let mut tar: Tar = tar::Builder::new(BufWriter::with_capacity(BUF, enc));
    tar.mode(tar::HeaderMode::Deterministic);
    tar.follow_symlinks(false);

    let Appended { mut sums, mut files, bytes: mut input_bytes } = std::thread::scope(|scope| {
        append_all(&mut tar, &top, &kept, Hashing::start(scope, BUF), archive, stop)
    })?;
    let mut generated = Vec::new();
    if !left_out.is_empty() {
        sums.push((LEFT_OUT.to_string(), sha256_bytes(left_text.as_bytes())));
        generated.push((LEFT_OUT, left_text.as_bytes()));
    }
    let sums_text = render_sums(&sums);
    generated.push((SUMS, sums_text.as_bytes()));
    for (name, data) in &generated {
        let kind = Kind::File { bytes: data.len() as u64, exec: false };
        append(&mut tar, &format!("{top}/{name}"), kind, &mut &data[..])
            .map_err(|e| write_err(archive, &e))?;
        files += 1;
        input_bytes += data.len() as u64;
    }

    let finish = || -> io::Result<(u64, String)> {
        let enc = tar.into_inner()?.into_inner().map_err(|e| e.into_error())?;
        let out = enc.finish()?;
        let HashWriter { inner, hasher, bytes } = out;
        let file = inner.into_inner().map_err(|e| e.into_error())?;
        drop(file);
        Ok((bytes, sha256_hex(hasher)))
    };
    let (bytes, sha256) = finish().map_err(|e| write_err(archive, &e))?;

    write_atomic(&bundle.join(SUMS), sums_text.as_bytes())?;
    if left_out.is_empty() {
        remove_if_present(&bundle.join(LEFT_OUT))?;
    } else {
        write_atomic(&bundle.join(LEFT_OUT), left_text.as_bytes())?;
    }
    fs::rename(&partial, archive).map_err(|e| {
        anyhow!("cannot rename {} to {}: {e}; check permissions", partial.display(), archive.display())
    })?;
    guard.disarm();
    write_atomic(&with_suffix(archive, ".sha256"), format!("{sha256}  {archive_name}\n").as_bytes())?;
    let left_out = left_out.into_iter().map(|(p, b, _)| (p, b)).collect();
    Ok(Packed { archive: archive.to_path_buf(), bytes, files, input_bytes, left_out, sha256 })
}

/// What [`append_all`] appended.
struct Appended {
    /// `(path, sha256)` of each file.
    sums: Vec<(String, String)>,
    files: usize,
    bytes: u64,
}

/// Appends the top folder and every kept item.
fn append_all(
    tar: &mut Tar,
    top: &str,
    kept: &[Item],
    mut hashing: Hashing,
    archive: &Path,
    stop: &dyn Fn() -> bool,
) -> Result<Appended> {
    let stopped =
        || anyhow!("interrupted while packing into `{}`: the partial archive was removed", archive.display());
    let mut files = 0usize;
    let mut input_bytes = 0u64;
    let mut sums = Vec::with_capacity(kept.len() + 1);
    append(tar, &format!("{top}/"), Kind::Dir, &mut io::empty()).map_err(|e| write_err(archive, &e))?;
    for item in kept {
        if stop() {
            return Err(stopped());
        }
        let name = format!("{top}/{}", item.rel);
        match item.kind {
            Kind::Dir => {
                append(tar, &format!("{name}/"), item.kind, &mut io::empty())
                    .map_err(|e| write_err(archive, &e))?;
            }
            Kind::File { bytes, .. } => {
                let sha =
                    append_file(tar, &name, item.kind, &item.abs, &mut hashing, stop).map_err(
                        |f| match f {
                            Failed::Stopped => stopped(),
                            Failed::Read(e) => anyhow!(
                                "cannot read {}: {e}; check permissions, and pack when the run has ended",
                                item.rel
                            ),
                            Failed::Write(e) => write_err(archive, &e),
                        },
                    )?;
                sums.push((item.rel.clone(), sha));
                files += 1;
                input_bytes += bytes;
            }
        }
    }
    Ok(Appended { sums, files, bytes: input_bytes })
}

fn append(tar: &mut Tar, name: &str, kind: Kind, data: &mut dyn Read) -> io::Result<()> {
    let mut h = header(kind);
    tar.append_data(&mut h, name, data)
}

/// Removes a file when dropped, unless disarmed.
struct RemoveFile(Option<PathBuf>);

impl RemoveFile {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for RemoveFile {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = fs::remove_file(p);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reading archives (unpack and verify)

/// Caps on what an archive may unpack to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// All files together, counted as they are copied (64 GiB).
    pub max_total_bytes: u64,
    /// One file (32 GiB).
    pub max_file_bytes: u64,
    /// Entries of any kind (100,000).
    pub max_entries: u64,
    /// How many times its compressed size an archive may unpack to (1,000), checked as it is
    /// read, on everything read so far, once past [`Limits::ratio_floor_bytes`]. A bundle's
    /// logs and coredumps compress 2 to 200 times; a decompression bomb, thousands of times
    /// (a 355 KB archive of 10 GiB: 30,000).
    pub max_ratio: u64,
    /// Up to this much (256 MiB) may be unpacked at any ratio, so that a small archive of
    /// highly repetitive logs is never refused.
    pub ratio_floor_bytes: u64,
}

/// [`Limits::max_ratio`] by default.
pub const DEFAULT_MAX_RATIO: u64 = 1_000;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_total_bytes: 64 << 30,
            max_file_bytes: 32 << 30,
            max_entries: 100_000,
            max_ratio: DEFAULT_MAX_RATIO,
            ratio_floor_bytes: 256 << 20,
        }
    }
}

/// What `unpack` wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unpacked {
    /// `into/<top folder>`.
    pub root: PathBuf,
    pub files: usize,
    pub bytes: u64,
}

/// Hashes what it reads from the archive file (for the `.sha256` sidecar check), and counts it
/// for the compression ratio.
struct HashRead<R> {
    inner: R,
    hasher: Option<Sha256>,
    meter: Rc<Meter>,
}

impl<R: Read> Read for HashRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(h) = self.hasher.as_mut() {
            h.update(&buf[..n]);
        }
        self.meter.raw.set(self.meter.raw.get() + n as u64);
        Ok(n)
    }
}

/// How far the decompressed stream may be read: set before each entry, so tar headers, GNU
/// long names and PAX records (which the tar crate holds in memory) stay small.
///
/// Also the compression ratio: `pos` (decompressed) against `raw` (compressed bytes read from
/// the file so far, a little ahead of what was decompressed, so the ratio is if anything low).
#[derive(Default)]
struct Meter {
    pos: Cell<u64>,
    limit: Cell<u64>,
    tripped: Cell<bool>,
    raw: Cell<u64>,
    ratio: Cell<u64>,
    floor: Cell<u64>,
    /// The ratio was passed (the read that passed it failed).
    over_ratio: Cell<bool>,
}

impl Meter {
    fn allow(&self, more: u64) {
        self.limit.set(self.pos.get().saturating_add(more));
    }
}

struct Metered<R> {
    inner: R,
    meter: Rc<Meter>,
}

impl<R: Read> Read for Metered<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let m = &self.meter;
        let room = m.limit.get().saturating_sub(m.pos.get());
        if room == 0 && !buf.is_empty() {
            m.tripped.set(true);
            return Err(io::Error::other("entry headers too large"));
        }
        let max = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..max])?;
        let pos = m.pos.get() + n as u64;
        m.pos.set(pos);
        if pos > m.floor.get() && pos > m.raw.get().max(1).saturating_mul(m.ratio.get()) {
            m.over_ratio.set(true);
            return Err(io::Error::other("the archive unpacks to more than its compression ratio limit"));
        }
        Ok(n)
    }
}

/// Remembers whether reading failed, so that an error while copying an entry can be told
/// apart from an error while writing it.
struct Tracked<'a> {
    inner: &'a mut dyn Read,
    failed: bool,
}

impl Read for Tracked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).inspect_err(|_| self.failed = true)
    }
}

/// What the scan of an archive does with each accepted entry.
trait Visit {
    /// The top folder, from the first entry, before anything else.
    fn top(&mut self, top: &str) -> Result<()>;
    /// A directory; `rel` is relative to the top folder ("" for the top folder itself).
    fn dir(&mut self, rel: &str) -> Result<()>;
    /// A regular file: reads `data` to its end and returns the bytes read. An error returned
    /// while `data` had failed is reported as a damaged archive.
    fn file(&mut self, rel: &str, exec: bool, data: &mut dyn Read) -> Result<u64>;
}

/// What a scan saw.
struct Scan {
    top: String,
    files: usize,
    bytes: u64,
    /// The archive file's own SHA-256, when asked for.
    sha256: Option<String>,
}

fn shown(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw).escape_debug().to_string()
}

fn damaged(archive: &Path, e: impl std::fmt::Display, tail: &str) -> anyhow::Error {
    anyhow!(
        "cannot read `{}`: the archive is damaged or not a .tar.zst or .tar.gz: {e}; {tail} (get a fresh copy; \
         `sha256sum -c {}.sha256` checks one)",
        archive.display(),
        archive.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()
    )
}

fn refuse(archive: &Path, what: impl std::fmt::Display, tail: &str) -> anyhow::Error {
    anyhow!("refusing `{}`: {what}; {tail}", archive.display())
}

/// Why an entry's kind is refused, or `None` for a regular file or directory.
fn refused_kind(ty: EntryType) -> Option<String> {
    Some(match ty {
        EntryType::Regular | EntryType::Continuous | EntryType::Directory => return None,
        EntryType::Symlink => "is a symbolic link".into(),
        EntryType::Link => "is a hard link".into(),
        EntryType::Char => "is a character device".into(),
        EntryType::Block => "is a block device".into(),
        EntryType::Fifo => "is a named pipe (fifo)".into(),
        EntryType::GNUSparse => "is a GNU sparse file".into(),
        EntryType::XGlobalHeader => "is a pax global header".into(),
        other => format!("has the unknown type `{}`", (other.as_byte() as char).escape_debug()),
    })
}

/// The components of a safe entry path: UTF-8, relative, no `..`, no odd characters; `.` and
/// empty components are dropped. `Err` says why not.
fn safe_components(raw: &[u8]) -> Result<Vec<&str>, &'static str> {
    let s = std::str::from_utf8(raw).map_err(|_| "has a path that is not UTF-8")?;
    if s.starts_with('/') {
        return Err("has an absolute path");
    }
    let mut parts = Vec::new();
    for c in s.split('/') {
        match c {
            "" | "." => {}
            ".." => return Err("has `..` in its path"),
            c if bad_name(c) => return Err("has a backslash or control character in its path"),
            c => parts.push(c),
        }
    }
    if parts.is_empty() {
        return Err("has an empty path");
    }
    Ok(parts)
}

/// Stops a read when `stop` says so (checked before every read: an atomic load).
struct Stoppable<'a> {
    inner: &'a mut dyn Read,
    stop: &'a dyn Fn() -> bool,
    stopped: bool,
}

impl Read for Stoppable<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if (self.stop)() {
            self.stopped = true;
            // Not `ErrorKind::Interrupted`, which `io::copy` retries.
            return Err(io::Error::other("interrupted"));
        }
        self.inner.read(buf)
    }
}

fn interrupted(archive: &Path, doing: &str, tail: &str) -> anyhow::Error {
    anyhow!("interrupted while {doing} `{}`: {tail}", archive.display())
}

fn over_ratio(archive: &Path, meter: &Meter, tail: &str) -> anyhow::Error {
    refuse(
        archive,
        format_args!(
            "it unpacks to more than {} times its size (over {} MiB from its first {} KiB): a \
             decompression bomb, or data far more repetitive than a bundle's",
            meter.ratio.get(),
            meter.pos.get() >> 20,
            meter.raw.get().div_ceil(1024)
        ),
        &format!("{tail}; if you trust it, raise the limit: `bundle unpack --max-ratio N`"),
    )
}

/// Streams the archive's entries through the checks that make it a bundle, and hands each
/// accepted one to `visit`. Nothing is written here. `tail` ends every refusal ("nothing was
/// unpacked"). `stop` is asked before each entry and each read of one; once it says stop, the
/// scan ends with an error.
fn scan(
    archive: &Path,
    limits: &Limits,
    hash_archive: bool,
    tail: &str,
    visit: &mut dyn Visit,
    stop: &dyn Fn() -> bool,
) -> Result<Scan> {
    let mut f = open_regular(archive)
        .map_err(|e| anyhow!("cannot read {}: {e}; check the path and permissions", archive.display()))?;
    let mut magic = [0u8; 4];
    let got = read_up_to(&mut f, &mut magic)
        .map_err(|e| anyhow!("cannot read {}: {e}; check permissions", archive.display()))?;
    let Some(compression) = compression_of(&magic[..got]) else {
        return Err(damaged(archive, "it starts with neither the zstd nor the gzip magic number", tail));
    };
    let f = open_regular(archive)
        .map_err(|e| anyhow!("cannot read {}: {e}; check the path and permissions", archive.display()))?;
    let meter = Rc::new(Meter::default());
    meter.allow(META_BUDGET);
    meter.ratio.set(limits.max_ratio);
    meter.floor.set(limits.ratio_floor_bytes);
    let raw = HashRead { inner: f, hasher: hash_archive.then(Sha256::new), meter: meter.clone() };
    let buffered = BufReader::with_capacity(BUF, raw);
    let decoder = match compression {
        Compression::Zstd => Decompressor::Zstd(
            zstd::stream::read::Decoder::with_buffer(buffered).map_err(|e| damaged(archive, e, tail))?,
        ),
        Compression::Gzip => Decompressor::Gzip(flate2::bufread::GzDecoder::new(buffered)),
    };
    let mut ar = tar::Archive::new(Metered { inner: decoder, meter: meter.clone() });
    let mut top: Option<String> = None;
    // Every accepted path under the top folder: true for a directory.
    let mut seen: HashMap<String, bool> = HashMap::new();
    let mut count = 0u64;
    let mut files = 0usize;
    let mut total = 0u64;
    {
        let mut entries = ar.entries().map_err(|e| damaged(archive, e, tail))?;
        loop {
            if stop() {
                return Err(interrupted(archive, "reading", tail));
            }
            meter.allow(META_BUDGET);
            let mut entry = match entries.next() {
                None => break,
                Some(Ok(e)) => e,
                Some(Err(_)) if meter.over_ratio.get() => return Err(over_ratio(archive, &meter, tail)),
                Some(Err(e)) if meter.tripped.get() => {
                    return Err(refuse(
                        archive,
                        format_args!(
                            "entry {} has over {} MiB of headers, long names or pax records ({e})",
                            count + 1,
                            META_BUDGET >> 20
                        ),
                        tail,
                    ))
                }
                Some(Err(e)) => return Err(damaged(archive, e, tail)),
            };
            count += 1;
            let raw = entry.path_bytes().into_owned();
            let name = shown(&raw);
            if count > limits.max_entries {
                return Err(refuse(
                    archive,
                    format_args!(
                        "it has more than {} entries (the limit), at entry `{name}`",
                        limits.max_entries
                    ),
                    tail,
                ));
            }
            let ty = entry.header().entry_type();
            if let Some(why) = refused_kind(ty) {
                return Err(refuse(
                    archive,
                    format_args!("entry `{name}` {why}; a bundle holds only regular files and directories"),
                    tail,
                ));
            }
            let parts = safe_components(&raw)
                .map_err(|why| refuse(archive, format_args!("entry `{name}` {why}"), tail))?;
            match &top {
                None => {
                    visit.top(parts[0])?;
                    top = Some(parts[0].to_string());
                }
                Some(t) if t != parts[0] => {
                    return Err(refuse(
                        archive,
                        format_args!(
                        "entry `{name}` is outside the top folder `{t}`; a bundle archive holds one folder"
                    ),
                        tail,
                    ))
                }
                Some(_) => {}
            }
            let rel = parts[1..].join("/");
            let is_dir = ty == EntryType::Directory;
            if rel.is_empty() && !is_dir {
                return Err(refuse(
                    archive,
                    format_args!(
                        "entry `{name}` is a file beside the top folder; a bundle archive holds one folder"
                    ),
                    tail,
                ));
            }
            for i in 1..parts.len() - 1 {
                if seen.get(&parts[1..=i].join("/")) == Some(&false) {
                    return Err(refuse(archive, format_args!("entry `{name}` is under a file"), tail));
                }
            }
            match seen.get(&rel) {
                Some(&was_dir) if !(was_dir && is_dir) => {
                    return Err(refuse(archive, format_args!("entry `{name}` appears twice"), tail))
                }
                _ => {}
            }
            seen.insert(rel.clone(), is_dir);
            if is_dir && entry.size() > 0 {
                return Err(refuse(archive, format_args!("entry `{name}` is a directory with data"), tail));
            }
            if is_dir {
                visit.dir(&rel)?;
                continue;
            }
            let mode = entry
                .header()
                .mode()
                .map_err(|e| damaged(archive, format_args!("entry `{name}`: {e}"), tail))?;
            let allowance = limits.max_file_bytes.min(limits.max_total_bytes.saturating_sub(total));
            let over = |n: u64| {
                if n > limits.max_file_bytes {
                    format!(
                        "entry `{name}` is larger than the limit of {} bytes per file",
                        limits.max_file_bytes
                    )
                } else {
                    format!(
                        "entry `{name}` takes the archive past the limit of {} bytes in all",
                        limits.max_total_bytes
                    )
                }
            };
            let size = entry.size();
            if size > allowance {
                return Err(refuse(
                    archive,
                    format_args!("{} (its header says {size} bytes)", over(size)),
                    tail,
                ));
            }
            meter.allow(size.min(allowance.saturating_add(1)).saturating_add(META_BUDGET));
            let mut limited = (&mut entry).take(allowance.saturating_add(1));
            let mut stoppable = Stoppable { inner: &mut limited, stop, stopped: false };
            let mut data = Tracked { inner: &mut stoppable, failed: false };
            let res = visit.file(&rel, mode & 0o111 != 0, &mut data);
            let failed = data.failed;
            let n = match res {
                Ok(n) => n,
                Err(_) if failed && meter.over_ratio.get() => return Err(over_ratio(archive, &meter, tail)),
                Err(_) if failed && stoppable.stopped => return Err(interrupted(archive, "reading", tail)),
                Err(e) if failed => {
                    return Err(damaged(archive, format_args!("entry `{name}`: {e:#}"), tail))
                }
                Err(e) => return Err(e),
            };
            if n > allowance {
                return Err(refuse(archive, over(total + n), tail));
            }
            if n != size {
                return Err(damaged(
                    archive,
                    format_args!("entry `{name}` holds {n} bytes, its header says {size}"),
                    tail,
                ));
            }
            total += n;
            files += 1;
        }
    }
    let Some(top) = top else {
        return Err(damaged(archive, "it holds no entries", tail));
    };
    // Read to the end of the zstd stream so that its checksum is checked.
    let metered = ar.into_inner();
    let mut decoder = metered.inner;
    let trailing = io::copy(&mut (&mut decoder).take(TRAILING_MAX + 1), &mut io::sink()).map_err(|e| {
        if meter.over_ratio.get() {
            over_ratio(archive, &meter, tail)
        } else {
            damaged(archive, e, tail)
        }
    })?;
    if trailing > TRAILING_MAX {
        return Err(damaged(
            archive,
            format_args!("over {} MiB of data after the end of the tar", TRAILING_MAX >> 20),
            tail,
        ));
    }
    let sha256 = if hash_archive {
        let mut rest = decoder.finish();
        io::copy(&mut rest, &mut io::sink())
            .map_err(|e| anyhow!("cannot read {}: {e}; check permissions", archive.display()))?;
        rest.into_inner().hasher.map(sha256_hex)
    } else {
        None
    };
    Ok(Scan { top, files, bytes: total, sha256 })
}

/// Fills `buf` as far as the reader goes; returns how much was read.
fn read_up_to(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Writes the entries under a temporary folder.
struct Unpacker<'a> {
    archive: &'a Path,
    into: &'a Path,
    /// `into/<top>` and the temporary folder beside it, once the top folder is known.
    dest: Option<(PathBuf, PathBuf)>,
}

impl Unpacker<'_> {
    fn tmp(&self) -> &Path {
        // `top` is always called first by `scan`.
        self.dest.as_ref().map(|(_, tmp)| tmp.as_path()).unwrap_or(self.into)
    }
}

impl Visit for Unpacker<'_> {
    fn top(&mut self, top: &str) -> Result<()> {
        let dest = self.into.join(top);
        if fs::symlink_metadata(&dest).is_ok() {
            bail!(
                "refusing to unpack `{}`: {} already exists; remove it or unpack into another folder",
                self.archive.display(),
                dest.display()
            );
        }
        let tmp = self.into.join(format!(".{top}.partial-{}", std::process::id()));
        fs::create_dir(&tmp).map_err(|e| {
            anyhow!("cannot create {}: {e}; remove it if it is left from an earlier run", tmp.display())
        })?;
        self.dest = Some((dest, tmp));
        Ok(())
    }

    fn dir(&mut self, rel: &str) -> Result<()> {
        if !rel.is_empty() {
            let p = self.tmp().join(rel);
            fs::create_dir_all(&p)
                .map_err(|e| anyhow!("cannot create {}: {e}; check permissions", p.display()))?;
        }
        Ok(())
    }

    fn file(&mut self, rel: &str, exec: bool, data: &mut dyn Read) -> Result<u64> {
        let p = self.tmp().join(rel);
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent)
                .map_err(|e| anyhow!("cannot create {}: {e}; check permissions", parent.display()))?;
        }
        let mode = if exec { 0o755 } else { 0o644 };
        let f = OpenOptions::new().write(true).create_new(true).mode(mode).open(&p).map_err(|e| {
            anyhow!("cannot create {}: {e}; check permissions and free space (`df -h`)", p.display())
        })?;
        let write = |e: io::Error| {
            anyhow::Error::new(e)
                .context(format!("cannot write {}; check the free space (`df -h`)", p.display()))
        };
        let mut w = BufWriter::with_capacity(BUF, f);
        // A read that fails is the archive's fault (cut short, damaged), not the disk's.
        let mut from = ReadSide { inner: data, failed: false };
        let n = io::copy(&mut from, &mut w).map_err(|e| {
            if from.failed {
                anyhow::Error::new(e).context(format!("the data of `{rel}` ends early or is damaged"))
            } else {
                write(e)
            }
        })?;
        let f = w.into_inner().map_err(|e| write(e.into_error()))?;
        f.set_permissions(fs::Permissions::from_mode(mode)).map_err(write)?;
        Ok(n)
    }
}

/// A reader that remembers whether one of its reads failed, so that a copy's error can say
/// which side it came from.
struct ReadSide<'a> {
    inner: &'a mut dyn Read,
    failed: bool,
}

impl Read for ReadSide<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let r = self.inner.read(buf);
        self.failed |= r.is_err();
        r
    }
}

/// Removes a directory tree when dropped, unless disarmed.
struct RemoveDir(Option<PathBuf>);

impl Drop for RemoveDir {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = fs::remove_dir_all(p);
        }
    }
}

/// Unpacks a bundle archive into `into/<top folder>` (`into` is created if missing), through
/// a temporary `into/.<top>.partial-<pid>` renamed at the end: on a refusal or an error,
/// nothing is left. Only regular files and directories with safe relative paths under one
/// top folder are accepted, within `limits`; files get mode 0644 or 0755 (the exec bit from
/// the archive), owners and times are ignored, nothing is overwritten.
pub fn unpack(archive: &Path, into: &Path, limits: &Limits) -> Result<Unpacked> {
    unpack_until(archive, into, limits, &|| false)
}

/// Whether `path` is a regular file that starts as an archive of `bundle pack` does (zstd or
/// gzip, told apart by their first bytes, whatever the file is named).
pub fn is_archive(path: &Path) -> bool {
    let Ok(mut f) = open_regular(path) else { return false };
    let mut magic = [0u8; 4];
    matches!(read_up_to(&mut f, &mut magic), Ok(n) if compression_of(&magic[..n]).is_some())
}

/// An archive unpacked into a private temporary folder so that a command can read the bundle
/// in it (`bundle show|report`, `analyze`); the folder is removed when this is dropped.
#[derive(Debug)]
pub struct TempUnpacked {
    /// The bundle: `<temporary folder>/<top folder>`.
    pub root: PathBuf,
    dir: PathBuf,
}

impl Drop for TempUnpacked {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// The name start of the folders [`unpack_temp`] makes: `.debug-ima-read-<pid>-<n>-<nanos>`.
const READ_DIR_PREFIX: &str = ".debug-ima-read-";

/// Removes the folders earlier readers left in `base` when they were killed (a SIGKILL
/// runs no `Drop`): those whose pid is no live process, and that are this user's.
fn sweep_stale_reads(base: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(rd) = fs::read_dir(base) else { return };
    let Ok(me) = fs::metadata("/proc/self").map(|m| m.uid()) else { return };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) =
            name.strip_prefix(READ_DIR_PREFIX).and_then(|r| r.split('-').next()?.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(m) = fs::symlink_metadata(e.path()) else { continue };
        let gone =
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) == Err(nix::errno::Errno::ESRCH);
        if m.is_dir() && m.uid() == me && gone && pid > 0 {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

/// [`unpack_until`] into a new private folder under the system's temporary folder, with the
/// same checks and limits as `bundle unpack`; removed when the value is dropped, and at once
/// when the archive is refused.
pub fn unpack_temp(archive: &Path, limits: &Limits, stop: &dyn Fn() -> bool) -> Result<TempUnpacked> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static SEQ: AtomicUsize = AtomicUsize::new(0);
    let base = std::env::temp_dir();
    sweep_stale_reads(&base);
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let dir = base.join(format!(
        "{READ_DIR_PREFIX}{}-{}-{nanos}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    fs::DirBuilder::new().mode(0o700).create(&dir).with_context(|| {
        format!(
            "cannot create a temporary folder in {} to read `{}`: set TMPDIR to a writable folder, or \
             `cargo xtask bundle unpack {}` and pass the folder",
            base.display(),
            archive.display(),
            archive.display()
        )
    })?;
    // Dropped on a refusal, which removes the folder.
    let mut out = TempUnpacked { root: dir.clone(), dir };
    out.root = unpack_until(archive, &out.dir, limits, stop)?.root;
    Ok(out)
}

/// [`unpack`], stopping when `stop` says so (asked before each entry and each read): the
/// hidden partial folder is removed and the error says it was interrupted.
pub fn unpack_until(
    archive: &Path,
    into: &Path,
    limits: &Limits,
    stop: &dyn Fn() -> bool,
) -> Result<Unpacked> {
    const TAIL: &str = "nothing was unpacked";
    let created_into = match fs::metadata(into) {
        Ok(m) if m.is_dir() => None,
        Ok(_) => bail!("{} is not a directory; choose a folder to unpack into", into.display()),
        Err(_) => {
            let first_missing = into
                .ancestors()
                .take_while(|a| !a.as_os_str().is_empty() && fs::symlink_metadata(a).is_err())
                .last();
            fs::create_dir_all(into).map_err(|e| {
                anyhow!("cannot create {}: {e}; check permissions or choose another folder", into.display())
            })?;
            first_missing.map(Path::to_path_buf)
        }
    };
    let mut unpacker = Unpacker { archive, into, dest: None };
    let res = scan(archive, limits, false, TAIL, &mut unpacker, stop);
    let guard = RemoveDir(unpacker.dest.as_ref().map(|(_, tmp)| tmp.clone()));
    let finished = res.and_then(|scan| {
        let (dest, tmp) = unpacker.dest.as_ref().expect("scan calls `top` before accepting an entry");
        for e in walkdir::WalkDir::new(tmp).follow_links(false) {
            let e = e.map_err(|e| anyhow!("cannot read {}: {e}; check permissions", tmp.display()))?;
            if e.file_type().is_dir() {
                fs::set_permissions(e.path(), fs::Permissions::from_mode(0o755))
                    .map_err(|err| anyhow!("cannot set the mode of {}: {err}", e.path().display()))?;
            }
        }
        if fs::symlink_metadata(dest).is_ok() {
            bail!("refusing to unpack `{}`: {} already exists; {TAIL}", archive.display(), dest.display());
        }
        fs::rename(tmp, dest).map_err(|e| {
            anyhow!("cannot rename {} to {}: {e}; check permissions", tmp.display(), dest.display())
        })?;
        Ok(Unpacked { root: dest.clone(), files: scan.files, bytes: scan.bytes })
    });
    match finished {
        Ok(u) => {
            let mut guard = guard;
            guard.0 = None;
            Ok(u)
        }
        Err(e) => {
            drop(guard);
            if let Some(first) = created_into {
                // Only removes folders this call created, and only if still empty.
                let mut p = into.to_path_buf();
                while fs::remove_dir(&p).is_ok() && p != first {
                    if !p.pop() {
                        break;
                    }
                }
            }
            Err(e)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// verify

/// What `verify` found. Paths are relative to the bundle root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verification {
    /// Files listed in `SHA256SUMS`.
    pub checked: usize,
    /// Listed files whose content differs (or that are no longer regular files).
    pub changed: Vec<String>,
    /// Listed files that are not there.
    pub missing: Vec<String>,
    /// Regular files (or anything else) that are neither listed nor in `LEFT_OUT.tsv`.
    pub extra: Vec<String>,
    /// Files in `LEFT_OUT.tsv` (left out of an archive; a directory may hold them).
    pub left_out: Vec<String>,
    /// For an archive with a `<archive>.sha256` beside it: whether the archive matches it.
    pub archive_sum: Option<bool>,
}

impl Verification {
    pub fn ok(&self) -> bool {
        self.changed.is_empty()
            && self.missing.is_empty()
            && self.extra.is_empty()
            && self.archive_sum != Some(false)
    }
}

fn safe_list_path(p: &str) -> bool {
    !p.is_empty()
        && !p.starts_with('/')
        && p.split('/').all(|c| !c.is_empty() && c != "." && c != ".." && !bad_name(c))
}

/// Parses `SHA256SUMS`: `(path, lowercase hex)` in file order.
fn parse_sums(text: &[u8], what: &str) -> Result<Vec<(String, String)>> {
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
fn parse_left_out(text: &[u8], what: &str) -> Result<Vec<String>> {
    Ok(parse_left_out_sizes(text, what)?.into_iter().map(|(p, _, _)| p).collect())
}

/// Parses `LEFT_OUT.tsv`: the paths with their sizes, in file order.
fn parse_left_out_sizes(text: &[u8], what: &str) -> Result<Vec<(String, u64, String)>> {
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

fn read_capped(path: &Path, cap: u64) -> Result<Vec<u8>> {
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

/// Compares the files found (path → hash; `None` for something that is not a regular file)
/// with the lists.
fn compare(
    sums: &[(String, String)],
    left: &[String],
    found: &BTreeMap<String, Option<String>>,
    extra_sum_file: impl Fn(&str) -> bool,
) -> Verification {
    let mut v = Verification { checked: sums.len(), ..Verification::default() };
    let listed: BTreeSet<&str> = sums.iter().map(|(p, _)| p.as_str()).collect();
    let left_set: BTreeSet<&str> = left.iter().map(String::as_str).collect();
    for (path, want) in sums {
        match found.get(path) {
            None => v.missing.push(path.clone()),
            Some(Some(got)) if got == want => {}
            Some(_) => v.changed.push(path.clone()),
        }
    }
    for path in found.keys() {
        if !listed.contains(path.as_str()) && !left_set.contains(path.as_str()) && !extra_sum_file(path) {
            v.extra.push(path.clone());
        }
    }
    v.left_out = left_set.iter().map(|s| s.to_string()).collect();
    v.changed.sort();
    v.missing.sort();
    v
}

fn verify_dir(dir: &Path) -> Result<Verification> {
    let sums_path = dir.join(SUMS);
    match fs::symlink_metadata(&sums_path) {
        Err(_) => bail!(
            "{} has no {SUMS}: the run did not finish, or the bundle was written by hand; \
             `cargo xtask bundle pack {}` writes one",
            dir.display(),
            dir.display()
        ),
        Ok(m) if !m.is_file() => {
            bail!("{} is not a regular file; get a fresh copy of the bundle", sums_path.display())
        }
        Ok(_) => {}
    }
    let sums = parse_sums(&read_capped(&sums_path, LIST_MAX)?, SUMS)?;
    let left_path = dir.join(LEFT_OUT);
    let left = match fs::symlink_metadata(&left_path) {
        Err(_) => Vec::new(),
        Ok(m) if !m.is_file() => {
            bail!("{} is not a regular file; get a fresh copy of the bundle", left_path.display())
        }
        Ok(_) => parse_left_out(&read_capped(&left_path, LIST_MAX)?, LEFT_OUT)?,
    };
    let listed: BTreeSet<&str> = sums.iter().map(|(p, _)| p.as_str()).collect();
    let mut found = BTreeMap::new();
    for entry in walkdir::WalkDir::new(dir).min_depth(1).follow_links(false).sort_by_file_name() {
        let entry = entry.map_err(|e| {
            anyhow!("cannot read {}: {e}; check permissions", e.path().unwrap_or(dir).display())
        })?;
        let rel = entry.path().strip_prefix(dir).unwrap_or(entry.path());
        let rel = rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
        let ft = entry.file_type();
        if ft.is_dir() {
            continue;
        }
        let hash = if ft.is_file() && listed.contains(rel.as_str()) {
            Some(sha256_file(entry.path())?)
        } else if ft.is_file() {
            Some(String::new())
        } else {
            None
        };
        found.insert(rel, hash);
    }
    Ok(compare(&sums, &left, &found, |p| p == SUMS))
}

/// Hashes every file of an archive without writing anything.
#[derive(Default)]
struct Hasher {
    found: BTreeMap<String, Option<String>>,
    sums: Option<Vec<u8>>,
    left: Option<Vec<u8>>,
}

impl Visit for Hasher {
    fn top(&mut self, _top: &str) -> Result<()> {
        Ok(())
    }

    fn dir(&mut self, _rel: &str) -> Result<()> {
        Ok(())
    }

    fn file(&mut self, rel: &str, _exec: bool, data: &mut dyn Read) -> Result<u64> {
        let keep = rel == SUMS || rel == LEFT_OUT;
        let mut kept = Vec::new();
        let mut h = Sha256::new();
        let mut buf = vec![0u8; BUF];
        let mut n = 0u64;
        loop {
            let got = match data.read(&mut buf) {
                Ok(0) => break,
                Ok(got) => got,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            h.update(&buf[..got]);
            n += got as u64;
            if keep {
                if n > LIST_MAX {
                    bail!("`{rel}` in the archive is over {} MiB; it is not a bundle's list", LIST_MAX >> 20);
                }
                kept.extend_from_slice(&buf[..got]);
            }
        }
        if rel == SUMS {
            self.sums = Some(kept);
        } else if rel == LEFT_OUT {
            self.left = Some(kept);
        }
        self.found.insert(rel.to_string(), Some(sha256_hex(h)));
        Ok(n)
    }
}

fn verify_archive(archive: &Path) -> Result<Verification> {
    let sidecar = with_suffix(archive, ".sha256");
    let expected = if fs::symlink_metadata(&sidecar).is_ok() {
        let text = read_capped(&sidecar, SIDECAR_MAX)?;
        let text = String::from_utf8_lossy(&text);
        let line = text.lines().next().unwrap_or("");
        let hash = line
            .get(..64)
            .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
            .filter(|_| line[64..].starts_with("  ") || line[64..].starts_with(" *"))
            .ok_or_else(|| {
                anyhow!(
                    "{} is not a `sha256sum` line (`<sha256>  <file>`); remove it or get a fresh copy",
                    sidecar.display()
                )
            })?;
        Some(hash.to_ascii_lowercase())
    } else {
        None
    };
    let mut hasher = Hasher::default();
    let scan =
        scan(archive, &Limits::default(), expected.is_some(), "it was not checked", &mut hasher, &|| false)?;
    let Some(sums) = hasher.sums.take() else {
        bail!(
            "{} has no {}/{SUMS}: it was not written by `cargo xtask bundle pack`; unpack it and \
             run `cargo xtask bundle pack DIR` to write one",
            archive.display(),
            scan.top
        );
    };
    let sums = parse_sums(&sums, SUMS)?;
    let left = match hasher.left.take() {
        Some(l) => parse_left_out(&l, LEFT_OUT)?,
        None => Vec::new(),
    };
    let mut v = compare(&sums, &left, &hasher.found, |p| p == SUMS);
    v.archive_sum = expected.map(|want| scan.sha256.as_deref() == Some(want.as_str()));
    Ok(v)
}

/// Checks a bundle directory, or a `.tar.zst` (recognised by its content), against its
/// `SHA256SUMS`; for an archive with `<archive>.sha256` beside it, checks the archive too.
/// Reads only: nothing is written, and nothing outside the bundle is opened.
pub fn verify(path: &Path) -> Result<Verification> {
    let meta = fs::metadata(path).map_err(|e| {
        anyhow!(
            "cannot read {}: {e}; pass a bundle folder or a .tar.zst written by `bundle pack`",
            path.display()
        )
    })?;
    if meta.is_dir() {
        return verify_dir(path);
    }
    let mut magic = [0u8; 4];
    let mut f = open_regular(path).map_err(|e| {
        anyhow!(
            "cannot read {}: {e}; pass a bundle folder or a .tar.zst written by `bundle pack`",
            path.display()
        )
    })?;
    let got = read_up_to(&mut f, &mut magic).map_err(|e| anyhow!("cannot read {}: {e}", path.display()))?;
    if compression_of(&magic[..got]).is_some() {
        verify_archive(path)
    } else {
        bail!(
            "{} is neither a bundle folder nor a .tar.zst or .tar.gz (no zstd or gzip magic number); pass \
             a folder under `bundles/` or an archive written by `cargo xtask bundle pack`",
            path.display()
        )
    }
}

/// The terminal text for a verification: one line per problem (`changed  PATH`, `missing  PATH`,
/// `extra    PATH`), the left-out files, and a final `ok: ...` or `FAILED: ...` line.
pub fn render_verification(v: &Verification, what: &Path) -> String {
    let mut s = String::new();
    let shown = |p: &str| p.escape_debug().to_string();
    for (label, list) in [("changed", &v.changed), ("missing", &v.missing), ("extra", &v.extra)] {
        for p in list {
            s.push_str(&format!("{label:<9}{}\n", shown(p)));
        }
    }
    for p in &v.left_out {
        s.push_str(&format!("{:<9}{} (listed in {LEFT_OUT})\n", "left out", shown(p)));
    }
    let sidecar = format!("{}.sha256", what.file_name().map(|n| n.to_string_lossy()).unwrap_or_default());
    if v.archive_sum == Some(false) {
        s.push_str(&format!("{:<9}{} does not match {sidecar}\n", "archive", what.display()));
    }
    let noun = |n: usize| if n == 1 { "file" } else { "files" };
    if v.ok() {
        s.push_str(&format!("ok: {} {} match {SUMS} in {}", v.checked, noun(v.checked), what.display()));
        if !v.left_out.is_empty() {
            s.push_str(&format!("; {} left out, listed in {LEFT_OUT}", v.left_out.len()));
        }
        if v.archive_sum == Some(true) {
            s.push_str(&format!("; the archive matches {sidecar}"));
        }
        s.push('\n');
    } else {
        let mut parts = Vec::new();
        for (label, list) in [("changed", &v.changed), ("missing", &v.missing), ("extra", &v.extra)] {
            if !list.is_empty() {
                parts.push(format!("{} {label}", list.len()));
            }
        }
        if v.archive_sum == Some(false) {
            parts.push(format!("the archive does not match {sidecar}"));
        }
        s.push_str(&format!(
            "FAILED: {}: {} (of {} {} in {SUMS}); it was changed after it was written: get a fresh copy\n",
            what.display(),
            parts.join(", "),
            v.checked,
            noun(v.checked)
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader killed by SIGKILL leaves its temporary folder; the next reader removes it,
    /// and leaves a live reader's alone (issue 22: 12,000 files stayed in `$TMPDIR`).
    #[test]
    fn stale_read_folders_are_swept_and_live_ones_kept() {
        let base = std::env::temp_dir().join(format!("xtask-stale-{}", std::process::id()));
        fs::create_dir_all(&base).unwrap();
        // Above any pid_max (4,194,304 at most): no such process.
        let dead_pid = 2_147_483_000u32;
        let stale = base.join(format!("{READ_DIR_PREFIX}{dead_pid}-0-1"));
        let live = base.join(format!("{READ_DIR_PREFIX}{}-0-1", std::process::id()));
        for d in [&stale, &live] {
            fs::create_dir_all(d.join("b/rungs")).unwrap();
            fs::write(d.join("b/rungs/x.log"), b"x").unwrap();
        }
        sweep_stale_reads(&base);
        assert!(!stale.exists(), "a dead reader's folder stayed");
        assert!(live.exists(), "a live reader's folder was removed");
        fs::remove_dir_all(&base).unwrap();
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-archive-unit-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn append_file_streams_hashes_and_pads() {
        let dir = scratch("append");
        let path = dir.join("f");
        let data: Vec<u8> = (0..3000u32).map(|i| (i * 7 % 251) as u8).collect();
        fs::write(&path, &data).unwrap();
        let mut tar = tar::Builder::new(Vec::new());
        let long = format!("top/{}", "n".repeat(120));
        let kind = Kind::File { bytes: 3000, exec: true };
        // Small buffers, so the data goes in several reads, more than the pool holds.
        let sha = std::thread::scope(|s| {
            let mut hashing = Hashing::start(s, 100);
            let a = append_file(&mut tar, &long, kind, &path, &mut hashing, &|| false).ok().unwrap();
            // The next file starts a fresh hash.
            let mut other = tar::Builder::new(Vec::new());
            let b = append_file(&mut other, "top/f", kind, &path, &mut hashing, &|| false).ok().unwrap();
            assert_eq!(a, b);
            a
        });
        assert_eq!(sha, sha256_bytes(&data));
        let out = tar.into_inner().unwrap();
        assert_eq!(out.len() % 512, 0);
        let mut ar = tar::Archive::new(&out[..]);
        let mut entries = ar.entries().unwrap();
        let mut e = entries.next().unwrap().unwrap();
        assert_eq!(e.path_bytes().as_ref(), long.as_bytes());
        assert_eq!((e.header().mode().unwrap(), e.header().mtime().unwrap()), (0o755, MTIME));
        let mut got = Vec::new();
        e.read_to_end(&mut got).unwrap();
        assert!(got == data);
        drop(e);
        assert!(entries.next().is_none());

        // The size from the walk no longer matches the file: an error that says so.
        for (bytes, says) in [(3001, "shrank"), (2999, "grew")] {
            let mut tar = tar::Builder::new(Vec::new());
            let kind = Kind::File { bytes, exec: false };
            let res = std::thread::scope(|s| {
                append_file(&mut tar, "top/f", kind, &path, &mut Hashing::start(s, 1000), &|| false)
            });
            match res {
                Err(Failed::Read(e)) => assert!(e.to_string().contains(says), "{e}"),
                _ => panic!("{bytes}: no read error"),
            }
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn coredump_names() {
        assert!(is_coredump("rungs/04-coredump/core_vm.4013.1796034874"));
        assert!(is_coredump("core_x"));
        assert!(is_coredump("rungs/04-coredump/core"));
        assert!(is_coredump("core.12345"));
        assert!(!is_coredump("core.txt"));
        assert!(!is_coredump("core."));
        assert!(!is_coredump("rungs/04-coredump/cudagdb-1.log"));
        assert!(!is_coredump("rungs/core_dir/stderr.log"));
        assert!(!is_coredump("score_x"));
    }

    #[test]
    fn hex_and_known_hash() {
        assert_eq!(sha256_bytes(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(hex(&[0, 0xff, 0x1a]), "00ff1a");
    }

    #[test]
    fn entry_paths() {
        assert_eq!(safe_components(b"top/a/./b/"), Ok(vec!["top", "a", "b"]));
        assert_eq!(safe_components(b"./top"), Ok(vec!["top"]));
        assert!(safe_components(b"../evil").is_err());
        assert!(safe_components(b"top/../../evil").is_err());
        assert!(safe_components(b"/abs/evil").is_err());
        assert!(safe_components(b"").is_err());
        assert!(safe_components(b"./").is_err());
        assert!(safe_components(b"top/a\\b").is_err());
        assert!(safe_components(b"top/a\nb").is_err());
        assert!(safe_components(b"top/\xff").is_err());
    }

    #[test]
    fn sums_lines() {
        let h = "a".repeat(64);
        let ok = format!("{h}  a/b\n{}  c\n", "B".repeat(64));
        let p = parse_sums(ok.as_bytes(), SUMS).unwrap();
        assert_eq!(p, vec![("a/b".to_string(), h.clone()), ("c".to_string(), "b".repeat(64))]);
        for bad in [
            format!("{h} a\n"),
            format!("{}  a\n", "g".repeat(64)),
            format!("{h}  ../a\n"),
            format!("{h}  /etc/passwd\n"),
            format!("{h}  a//b\n"),
            format!("{h}  a\n{h}  a\n"),
            "short  a\n".to_string(),
        ] {
            let e = parse_sums(bad.as_bytes(), SUMS).unwrap_err().to_string();
            assert!(e.contains("line "), "{e}");
        }
        let e = parse_sums(format!("{h}  a\n\n").as_bytes(), SUMS).unwrap_err().to_string();
        assert!(e.contains("line 2"), "{e}");
    }

    #[test]
    fn left_out_lines() {
        let p = parse_left_out(b"rungs/04-coredump/core_x\t12\tcoredump: why\n", LEFT_OUT).unwrap();
        assert_eq!(p, vec!["rungs/04-coredump/core_x"]);
        assert!(parse_left_out(b"a\tx\twhy\n", LEFT_OUT).unwrap_err().to_string().contains("line 1"));
        assert!(parse_left_out(b"a\t1\tw\n../b\t1\tw\n", LEFT_OUT)
            .unwrap_err()
            .to_string()
            .contains("line 2"));
    }

    #[test]
    fn render_ok_and_failed() {
        let v = Verification {
            checked: 3,
            left_out: vec!["rungs/04-coredump/core_h.1.2".into()],
            archive_sum: Some(true),
            ..Verification::default()
        };
        assert!(v.ok());
        assert_eq!(
            render_verification(&v, Path::new("b.tar.zst")),
            "left out rungs/04-coredump/core_h.1.2 (listed in LEFT_OUT.tsv)\n\
             ok: 3 files match SHA256SUMS in b.tar.zst; 1 left out, listed in LEFT_OUT.tsv; \
             the archive matches b.tar.zst.sha256\n"
        );
        let bad = Verification {
            checked: 3,
            changed: vec!["rungs/01-baseline/stderr.log".into()],
            missing: vec!["env/doctor.txt".into()],
            extra: vec!["notes.txt".into()],
            archive_sum: Some(false),
            ..Verification::default()
        };
        assert!(!bad.ok());
        assert_eq!(
            render_verification(&bad, Path::new("b.tar.zst")),
            "changed  rungs/01-baseline/stderr.log\n\
             missing  env/doctor.txt\n\
             extra    notes.txt\n\
             archive  b.tar.zst does not match b.tar.zst.sha256\n\
             FAILED: b.tar.zst: 1 changed, 1 missing, 1 extra, the archive does not match \
             b.tar.zst.sha256 (of 3 files in SHA256SUMS); it was changed after it was written: get a fresh copy\n"
        );
        let only_sum = Verification { checked: 1, archive_sum: Some(false), ..Verification::default() };
        assert!(!only_sum.ok());
    }
}

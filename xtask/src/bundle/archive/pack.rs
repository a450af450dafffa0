//! `bundle pack`: a bundle folder as a deterministic `.tar.zst` or `.tar.gz` with its
//! `SHA256SUMS` last and a `.sha256` beside it, carrying only what may leave
//! (`bundle::leaves`): first every name that holds a secret is renamed and every text the tool
//! did not write is redacted in place, at any depth; then the tool's files and those texts go
//! in, and coredumps and binary files stay out unless asked for (`--with-coredumps`,
//! `--include`), each listed in `LEFT_OUT.tsv` with its size and why. [`pack_until`] stops when
//! asked and removes the `.partial` archive.
//!
//! Must not: print; follow or archive links or special files; archive a file `leaves` did not
//! read and vouch for unless asked; write anywhere but the archive, its `.partial` and
//! `.sha256` siblings, the bundle's `SHA256SUMS` and `LEFT_OUT.tsv`, and what `leaves` redacts
//! or renames in the bundle.

use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};

use anyhow::{anyhow, bail, Context, Result};
use sha2::{Digest, Sha256};
use tar::{EntryType, Header};

use crate::bundle::inputs::open_regular;
use crate::bundle::leaves::{self, Fate};
use crate::redact::Redaction;

use super::shared::{
    bad_name, hex, parse_left_out_sizes, read_capped, remove_if_present, render_left_out, render_sums,
    sha256_bytes, sha256_hex, walk, with_suffix, write_atomic, Compression, Item, Kind, BUF, DEFAULT_LEVEL,
    LEFT_OUT, LIST_MAX, MTIME, SUMS,
};

/// The compressor of [`pack`].
pub(super) enum Compressor<W: Write> {
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

/// How `pack` writes an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackOptions {
    /// Include coredumps (left out by default: they may hold model or user data).
    pub with_coredumps: bool,
    /// Include the files that hold the program's input values (a reproducer's integer
    /// storages, its captures: the manifest's `inputs`), left out by default.
    pub with_inputs: bool,
    /// Paths relative to the bundle (a file, or a folder: the files under it) to include
    /// although they would be left out (binary files, coredumps, texts too large to read), as
    /// they are.
    pub include: Vec<String>,
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
            with_inputs: false,
            include: Vec::new(),
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
    /// Files left out (paths relative to the bundle, sizes, why), sorted; also in `LEFT_OUT.tsv`.
    pub left_out: Vec<(String, u64, String)>,
    /// What was redacted in the bundle before packing (texts the tool did not write, names):
    /// places and kinds, never values.
    pub redactions: Vec<Redaction>,
    /// What the reading before packing noticed (a name it could not rename, a file it could
    /// not read, files past its limit).
    pub notes: Vec<String>,
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
pub(super) struct HashWriter<W> {
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
pub(super) enum Failed {
    Read(io::Error),
    Write(io::Error),
    Stopped,
}

/// Buffers in flight between reading, hashing and compressing.
pub(super) const POOL: usize = 4;

pub(super) enum ToHasher {
    Chunk(Arc<Vec<u8>>, usize),
    /// End of a file: send its digest back.
    Finish,
}

pub(super) enum FromHasher {
    Buf(Arc<Vec<u8>>),
    Digest(String),
}

/// SHA-256 on a thread of its own, fed the very buffers `pack` reads and compresses (one read
/// pass), so that hashing runs beside reading and compressing instead of before them: with
/// many zstd workers, a hash on the reading thread would be what limits the speed.
pub(super) struct Hashing {
    to: mpsc::Sender<ToHasher>,
    back: mpsc::Receiver<FromHasher>,
    free: Vec<Vec<u8>>,
}

pub(super) fn stopped() -> io::Error {
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
pub(super) fn append_file<W: Write>(
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

pub(super) fn header(kind: Kind) -> Header {
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
pub(super) fn write_err(archive: &Path, e: &io::Error) -> anyhow::Error {
    anyhow::Error::new(io::Error::new(e.kind(), e.to_string())).context(format!(
        "cannot write {}; free some space (`df -h`) or write the archive elsewhere",
        archive.display()
    ))
}

/// Packs `bundle` into `archive` (a `.tar.zst`): first what may leave is made fit to
/// ([`leaves::redact_left`] over the whole bundle: names renamed, texts the tool did not write
/// redacted in place), then one top folder named like the bundle (a secret in that name taken
/// out), entries in walk order with fixed headers (what [`select`] keeps), then `LEFT_OUT.tsv`
/// (when something was left out) and `SHA256SUMS`. Both are also written into the bundle, so
/// that the directory and the archive agree. The archive is written to `<archive>.partial` and
/// renamed; `<archive>.sha256` holds its own hash for `sha256sum -c`. Same bundle and options,
/// same bytes. An existing archive at that path is replaced.
pub fn pack(bundle: &Path, archive: &Path, opts: &PackOptions) -> Result<Packed> {
    pack_until(bundle, archive, opts, &|| false)
}

/// [`pack`], stopping when `stop` says so (asked before each file and each read of one): the
/// `.partial` archive is removed, and the error says so; the bundle keeps what was redacted and
/// renamed in it before packing began, and is otherwise as it was.
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

    // What may leave: names cleaned and texts redacted in place, every file's fate.
    let manifest = crate::bundle::manifest::read(bundle).ok();
    let tool = manifest.as_ref().map(leaves::tool_files).unwrap_or_default();
    let mut redactions = Vec::new();
    let mut sorted = leaves::redact_left(bundle, bundle, &tool, &mut redactions);
    if !opts.with_inputs {
        // What holds the program's input values stays out unless asked for.
        for rec in crate::bundle::user_data::inputs_in(bundle, manifest.as_ref()) {
            if let Some(f) = sorted.fates.get_mut(&rec.file) {
                f.1 = Fate::Left { why: leaves::INPUTS_WHY, coredump: false };
            }
        }
    }
    let top = leaves::clean_name(&top).unwrap_or(top);
    let (items, odd) = walk(bundle)?;
    let (kept, mut left_out) = select(bundle, items, &sorted.fates, opts)?;
    left_out.extend(odd);
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
    Ok(Packed {
        archive: archive.to_path_buf(),
        bytes,
        files,
        input_bytes,
        left_out,
        redactions,
        notes: sorted.notes,
        sha256,
    })
}

/// What [`select`] keeps (folders and files, in walk order) and leaves out (path, size, why).
type Selected = (Vec<Item>, Vec<(String, u64, String)>);

/// Which of the bundle's `items` go into the archive: folders, the tool's files and the texts
/// [`leaves::redact_left`] redacted (`fates`), and of the rest what `opts` asks for
/// (`--with-coredumps`, `--include`); the others left out with their sizes and why, sorted. A
/// file `fates` does not know (it appeared since) stays out. A bundle unpacked from an archive
/// lacks what its `LEFT_OUT.tsv` lists: those stay listed (with the sizes they had, their names
/// cleaned), so that packing it again gives the same archive.
pub(super) fn select(
    bundle: &Path,
    items: Vec<Item>,
    fates: &std::collections::BTreeMap<String, (u64, Fate)>,
    opts: &PackOptions,
) -> Result<Selected> {
    let asked: Vec<&str> =
        opts.include.iter().map(|p| p.trim_start_matches("./").trim_end_matches('/')).collect();
    let included = |rel: &str| asked.iter().any(|p| included_by(rel, p));
    if let Some(p) = asked.iter().find(|p| p.is_empty() || !items.iter().any(|i| included_by(&i.rel, p))) {
        bail!(
            "`--include {p}` names no file of the bundle; {LEFT_OUT} lists what was left out \
             (a file, or a folder for the files under it, relative to the bundle)"
        );
    }
    let mut left_out = Vec::new();
    let mut kept = Vec::with_capacity(items.len());
    for item in items {
        let Kind::File { bytes, .. } = item.kind else {
            kept.push(item);
            continue;
        };
        let fate = fates
            .get(&item.rel)
            .map(|(_, f)| *f)
            .unwrap_or(Fate::Left { why: leaves::UNSEEN_WHY, coredump: false });
        let why = match fate {
            Fate::Tool | Fate::Text => None,
            Fate::Left { coredump: true, .. } if opts.with_coredumps => None,
            Fate::Left { why, .. } => (!included(&item.rel)).then_some(why),
        };
        match why {
            Some(why) => left_out.push((item.rel, bytes, why.to_string())),
            None => kept.push(item),
        }
    }
    let previous = bundle.join(LEFT_OUT);
    if previous.is_file() {
        for (rel, bytes, why) in parse_left_out_sizes(&read_capped(&previous, LIST_MAX)?, LEFT_OUT)? {
            let rel = leaves::clean_path(&rel);
            let present = kept.iter().any(|i| i.rel == rel) || left_out.iter().any(|(p, _, _)| *p == rel);
            if !present && fs::symlink_metadata(bundle.join(&rel)).is_err() {
                left_out.push((rel, bytes, why));
            }
        }
    }
    left_out.sort();
    Ok((kept, left_out))
}

/// Whether `--include p` takes `rel`: the file itself, or a file under the folder `p`.
fn included_by(rel: &str, p: &str) -> bool {
    rel == p || rel.strip_prefix(p).is_some_and(|r| r.starts_with('/'))
}

/// What [`append_all`] appended.
pub(super) struct Appended {
    /// `(path, sha256)` of each file.
    sums: Vec<(String, String)>,
    files: usize,
    bytes: u64,
}

/// Appends the top folder and every kept item.
pub(super) fn append_all(
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

pub(super) fn append(tar: &mut Tar, name: &str, kind: Kind, data: &mut dyn Read) -> io::Result<()> {
    let mut h = header(kind);
    tar.append_data(&mut h, name, data)
}

/// Removes a file when dropped, unless disarmed.
pub(super) struct RemoveFile(Option<PathBuf>);

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

#[cfg(test)]
mod tests {
    use super::*;

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
}

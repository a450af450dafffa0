//! Reading an archive without trusting it: [`scan`] streams its entries through the checks
//! that make it a bundle (types, paths, one top folder, the [`Limits`] on entries, bytes and
//! compression ratio) and hands each accepted one to a [`Visit`]or (`unpack` writes it,
//! `verify` hashes it).
//!
//! Must not: print or write anything (the visitor does); trust an archive's paths, types,
//! sizes, modes, owners or times.

use std::cell::Cell;
use std::collections::HashMap;
use std::io::{self, BufReader, Read};
use std::path::Path;
use std::rc::Rc;

use anyhow::{anyhow, Result};
use sha2::{Digest, Sha256};
use tar::EntryType;

use crate::bundle::inputs::open_regular;

use super::shared::{
    bad_name, compression_of, interrupted, sha256_hex, Compression, BUF, META_BUDGET, TRAILING_MAX,
};

/// The decompressor of [`scan`].
pub(super) enum Decompressor<R: io::BufRead> {
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

/// Hashes what it reads from the archive file (for the `.sha256` sidecar check), and counts it
/// for the compression ratio.
pub(super) struct HashRead<R> {
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
pub(super) struct Meter {
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

pub(super) struct Metered<R> {
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
pub(super) struct Tracked<'a> {
    inner: &'a mut dyn Read,
    failed: bool,
}

impl Read for Tracked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).inspect_err(|_| self.failed = true)
    }
}

/// What the scan of an archive does with each accepted entry.
pub(super) trait Visit {
    /// The top folder, from the first entry, before anything else.
    fn top(&mut self, top: &str) -> Result<()>;
    /// A directory; `rel` is relative to the top folder ("" for the top folder itself).
    fn dir(&mut self, rel: &str) -> Result<()>;
    /// A regular file: reads `data` to its end and returns the bytes read. An error returned
    /// while `data` had failed is reported as a damaged archive.
    fn file(&mut self, rel: &str, exec: bool, data: &mut dyn Read) -> Result<u64>;
}

/// Reads every entry and keeps nothing: a whole [`scan`] of the checks and limits before
/// anything is written, so that a refused archive (100,001 entries, a bad entry at its end)
/// costs one read, not the creation and removal of what came before the refusal.
#[derive(Default)]
pub(super) struct Discard {
    buf: Vec<u8>,
}

impl Visit for Discard {
    fn top(&mut self, _top: &str) -> Result<()> {
        Ok(())
    }

    fn dir(&mut self, _rel: &str) -> Result<()> {
        Ok(())
    }

    fn file(&mut self, _rel: &str, _exec: bool, data: &mut dyn Read) -> Result<u64> {
        if self.buf.is_empty() {
            self.buf = vec![0u8; BUF];
        }
        let mut n = 0u64;
        loop {
            match data.read(&mut self.buf) {
                Ok(0) => return Ok(n),
                Ok(got) => n += got as u64,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// What a scan saw.
pub(super) struct Scan {
    pub(super) top: String,
    pub(super) files: usize,
    pub(super) bytes: u64,
    /// The archive file's own SHA-256, when asked for.
    pub(super) sha256: Option<String>,
}

pub(super) fn shown(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw).escape_debug().to_string()
}

pub(super) fn damaged(archive: &Path, e: impl std::fmt::Display, tail: &str) -> anyhow::Error {
    anyhow!(
        "cannot read `{}`: the archive is damaged or not a .tar.zst or .tar.gz: {e}; {tail} (get a fresh copy; \
         `sha256sum -c {}.sha256` checks one)",
        archive.display(),
        archive.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()
    )
}

pub(super) fn refuse(archive: &Path, what: impl std::fmt::Display, tail: &str) -> anyhow::Error {
    anyhow!("refusing `{}`: {what}; {tail}", archive.display())
}

/// Why an entry's kind is refused, or `None` for a regular file or directory.
pub(super) fn refused_kind(ty: EntryType) -> Option<String> {
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
pub(super) fn safe_components(raw: &[u8]) -> Result<Vec<&str>, &'static str> {
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
pub(super) struct Stoppable<'a> {
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

pub(super) fn over_ratio(archive: &Path, meter: &Meter, tail: &str) -> anyhow::Error {
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
pub(super) fn scan(
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
                        "it has more than {} entries (the limit), at entry `{name}`: a bundle holds a few \
                         hundred files",
                        limits.max_entries
                    ),
                    &format!("{tail}; if you trust it, raise the limit: `bundle unpack --max-entries N`"),
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
            // Each folder above it, as a slice of `rel` (no string built per level).
            let under_file = rel.match_indices('/').any(|(i, _)| seen.get(&rel[..i]) == Some(&false));
            if under_file {
                return Err(refuse(archive, format_args!("entry `{name}` is under a file"), tail));
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
pub(super) fn read_up_to(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}

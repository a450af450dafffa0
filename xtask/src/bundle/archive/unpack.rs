//! `bundle unpack`: an archive written into a hidden `.<top>.partial-<pid>` folder renamed
//! into place at the end, and [`unpack_temp`], the private temporary copy that `bundle show`,
//! `report` and `analyze` read an archive through.
//!
//! Must not: print; write anywhere but the folder given (or the private temporary folder,
//! removed when its value is dropped); overwrite anything or follow links.

use std::collections::HashSet;
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

use crate::bundle::inputs::open_regular;

use super::read::{read_up_to, scan, Discard, Limits, Visit};
use super::shared::{compression_of, BUF};

/// What `unpack` wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unpacked {
    /// `into/<top folder>`.
    pub root: PathBuf,
    pub files: usize,
    pub bytes: u64,
}

/// Writes the entries under a temporary folder.
pub(super) struct Unpacker<'a> {
    archive: &'a Path,
    into: &'a Path,
    /// `into/<top>` and the temporary folder beside it, once the top folder is known.
    dest: Option<(PathBuf, PathBuf)>,
    /// The folders (relative to the top folder) known to exist, so each is made once.
    made: HashSet<String>,
    /// The copy buffer, shared by every file.
    buf: Vec<u8>,
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
        self.made.insert(String::new());
        Ok(())
    }

    fn dir(&mut self, rel: &str) -> Result<()> {
        if !rel.is_empty() {
            let p = self.tmp().join(rel);
            fs::create_dir_all(&p)
                .map_err(|e| anyhow!("cannot create {}: {e}; check permissions", p.display()))?;
        }
        self.made.insert(rel.to_string());
        Ok(())
    }

    fn file(&mut self, rel: &str, exec: bool, data: &mut dyn Read) -> Result<u64> {
        let p = self.tmp().join(rel);
        // One `mkdir -p` per folder, not per file: an archive of 100,000 files in one folder
        // costs 100,000 creations, not 200,000 system calls more.
        let parent_rel = rel.rsplit_once('/').map_or("", |(d, _)| d);
        if !self.made.contains(parent_rel) {
            if let Some(parent) = p.parent() {
                fs::create_dir_all(parent)
                    .map_err(|e| anyhow!("cannot create {}: {e}; check permissions", parent.display()))?;
            }
            self.made.insert(parent_rel.to_string());
        }
        let mode = if exec { 0o755 } else { 0o644 };
        let mut f = OpenOptions::new().write(true).create_new(true).mode(mode).open(&p).map_err(|e| {
            anyhow!("cannot create {}: {e}; check permissions and free space (`df -h`)", p.display())
        })?;
        let write = |e: io::Error| {
            anyhow::Error::new(e)
                .context(format!("cannot write {}; check the free space (`df -h`)", p.display()))
        };
        // One buffer for every file of the archive (not 1 MiB allocated per entry).
        if self.buf.is_empty() {
            self.buf = vec![0u8; BUF];
        }
        let mut n = 0u64;
        loop {
            // A read that fails is the archive's fault (cut short, damaged), not the disk's.
            let got = match data.read(&mut self.buf) {
                Ok(0) => break,
                Ok(got) => got,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(anyhow::Error::new(e)
                        .context(format!("the data of `{rel}` ends early or is damaged")))
                }
            };
            f.write_all(&self.buf[..got]).map_err(write)?;
            n += got as u64;
        }
        f.set_permissions(fs::Permissions::from_mode(mode)).map_err(write)?;
        Ok(n)
    }
}

/// Removes a directory tree when dropped, unless disarmed.
pub struct RemoveDir(Option<PathBuf>);

impl RemoveDir {
    /// Removes `dir` (whether or not it exists yet) when dropped.
    pub fn new(dir: &Path) -> RemoveDir {
        RemoveDir(Some(dir.to_path_buf()))
    }
}

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
pub(super) const READ_DIR_PREFIX: &str = ".debug-ima-read-";

/// Removes the folders earlier readers left in `base` when they were killed (a SIGKILL
/// runs no `Drop`): those whose pid is no live process, and that are this user's.
pub(super) fn sweep_stale_reads(base: &Path) {
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
    // Checked whole first, written after: a refusal writes nothing at all. The archive is
    // decompressed twice, which costs less than writing it once (docs/benchmarks.md).
    scan(archive, limits, false, TAIL, &mut Discard::default(), stop)?;
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
    let mut unpacker = Unpacker { archive, into, dest: None, made: HashSet::new(), buf: Vec::new() };
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
}

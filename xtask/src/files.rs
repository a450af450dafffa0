//! Opening a file the user named, for reading: only a regular file. A FIFO or a socket
//! blocks the read (or the open) forever and a device never ends or acts when opened, so both
//! the bundle code and the recipe loader open user-given paths through [`open_regular`].
//!
//! It also tells a full disk apart from other failures ([`out_of_space`]), so that every
//! place that runs out of space ends the run the same way.
//!
//! Must not: read, write or create files (the callers read what it opens), or print.

use std::fs::{File, FileType, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// What a file that is not a regular file is, in words (`a named pipe (FIFO)`).
pub fn kind_of(t: FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a named pipe (FIFO)"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

fn not_regular(t: FileType) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("it is {}, not a regular file (reading one could block forever)", kind_of(t)),
    )
}

/// Opens a file for reading, refusing anything but a regular file: a FIFO or a socket blocks
/// the read (or the open) forever, a device never ends or acts when opened. The type is
/// checked before opening (so a device is never opened) and again on the open file, which is
/// opened with `O_NONBLOCK`, so that a path swapped for a FIFO in between cannot block either.
/// Symbolic links are followed: a link to a regular file is one.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(not_regular(meta.file_type()));
    }
    let f = OpenOptions::new().read(true).custom_flags(nix::libc::O_NONBLOCK).open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(not_regular(meta.file_type()));
    }
    Ok(f)
}

/// Whether an error chain holds a write that failed for want of space: `ENOSPC` (a full disk)
/// or `EDQUOT` (a quota). Wherever it happens (a rung's log, the manifest, `SHA256SUMS`), the
/// run stops there, keeps what it wrote and fails with one message ([`FULL_DISK`]).
pub fn out_of_space(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>().is_some_and(|io| {
            matches!(io.kind(), io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded)
                || matches!(io.raw_os_error(), Some(nix::libc::ENOSPC | nix::libc::EDQUOT))
        })
    })
}

/// What to do after [`out_of_space`], for the message.
pub const FULL_DISK: &str = "a disk is full (or a quota is reached): the command stopped there and kept what it \
     had written; free space (`df -h` on the folder named above), or for `debug-ima` pass `--bundle-dir` on a \
     larger disk, and run the same command again";

/// A regular file's text, at most `limit` bytes of it (a longer file is an error, not cut),
/// lossily decoded.
pub fn read_bounded(path: &Path, limit: u64) -> anyhow::Result<String> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    open_regular(path)?.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        anyhow::bail!("{} is over {limit} bytes", path.display());
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_is_told_apart_however_deep_in_the_chain() {
        let full = anyhow::Error::new(io::Error::from_raw_os_error(nix::libc::ENOSPC))
            .context("cannot write the log `baseline/stderr.log`")
            .context("rung launch-blocking");
        assert!(out_of_space(&full));
        let quota = anyhow::Error::new(io::Error::from_raw_os_error(nix::libc::EDQUOT));
        assert!(out_of_space(&quota));
        let other =
            anyhow::Error::new(io::Error::from_raw_os_error(nix::libc::EACCES)).context("cannot write");
        assert!(!out_of_space(&other));
        assert!(!out_of_space(&anyhow::anyhow!("no space left on device (only text)")));
    }
}

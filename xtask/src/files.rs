//! Opening a file the user named, for reading: only a regular file. A FIFO or a socket
//! blocks the read (or the open) forever and a device never ends or acts when opened, so both
//! the bundle code and the recipe loader open user-given paths through [`open_regular`].
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

//! A run's pipe read to its end, however slowly its bytes are handled. The reader waits on
//! the pipe ([`Drain::next`]) until the run says its tree is gone ([`Drain`]'s flag); from
//! then on every byte already in the pipe is still read, and the reader stops only once the
//! pipe has been seen empty for a grace while still held open (a process outside the tree
//! holds it), or once more than the pipe's capacity came after the tree was gone (a process
//! outside the tree keeps writing). How long the reader takes over the bytes it read (a log
//! redacted a line at a time, a busy machine) never counts: nothing the tree wrote is left
//! out because its reader was slow.
//!
//! Must not: handle the bytes (the callers log, redact or keep them), spawn, print, or
//! block for longer than [`WAKE`] without looking at the flag.

use std::io::{self, PipeReader, Read};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout};

/// While the tree runs, a reader waiting on an empty pipe looks at the flag this often.
pub(super) const WAKE: Duration = Duration::from_millis(50);

/// What [`Drain::next`] got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Got {
    /// This many bytes, at the start of the buffer.
    Bytes(usize),
    /// The end of the pipe: every writer closed it.
    End,
    /// The tree is gone and all it wrote has been read, but the pipe stays open: held by a
    /// process outside the tree, empty for the grace or past the pipe's capacity. What comes
    /// later is not read.
    HeldOpen,
}

/// Once the tree is gone: how much may still be its, and since when the pipe was empty.
struct After {
    /// Bytes the pipe could have held when the tree was seen gone; any beyond came later.
    left: usize,
    /// When the pipe was first seen empty after the tree was gone.
    empty_since: Option<Instant>,
}

/// The reading end of one pipe, and the flag the run sets once its tree is gone.
pub(super) struct Drain<'a> {
    pipe: PipeReader,
    gone: &'a AtomicBool,
    grace: Duration,
    after: Option<After>,
}

impl<'a> Drain<'a> {
    /// Reads `pipe`; `gone` set means no process of the tree can write any more (the child
    /// reaped, the rest killed); `grace`, how long an empty pipe may then stay open.
    pub(super) fn new(pipe: PipeReader, gone: &'a AtomicBool, grace: Duration) -> Drain<'a> {
        Drain { pipe, gone, grace, after: None }
    }

    /// The next bytes into `buf`, the end of the pipe, or that it is held open after the tree.
    pub(super) fn next(&mut self, buf: &mut [u8]) -> io::Result<Got> {
        loop {
            if self.after.is_none() && self.gone.load(Ordering::Acquire) {
                self.after = Some(After { left: capacity(&self.pipe), empty_since: None });
            }
            let wait = match &self.after {
                None => WAKE,
                // Is anything left? Asked without waiting: the tree cannot add to it.
                Some(After { empty_since: None, .. }) => Duration::ZERO,
                Some(After { empty_since: Some(t), .. }) => match self.grace.checked_sub(t.elapsed()) {
                    Some(left) if !left.is_zero() => left.min(WAKE),
                    _ => return Ok(Got::HeldOpen),
                },
            };
            if !readable(&self.pipe, wait)? {
                if let Some(a) = &mut self.after {
                    a.empty_since.get_or_insert_with(Instant::now);
                }
                continue;
            }
            let room = match &self.after {
                Some(a) if a.left == 0 => return Ok(Got::HeldOpen),
                Some(a) => a.left.min(buf.len()),
                None => buf.len(),
            };
            match self.pipe.read(&mut buf[..room]) {
                Ok(0) => return Ok(Got::End),
                Ok(n) => {
                    if let Some(a) = &mut self.after {
                        a.left -= n;
                    }
                    return Ok(Got::Bytes(n));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

/// Whether `pipe` has bytes or has ended (every writer closed it) within `wait`.
fn readable(pipe: &PipeReader, wait: Duration) -> io::Result<bool> {
    let ms = u16::try_from(wait.as_millis()).unwrap_or(u16::MAX);
    let mut fds = [PollFd::new(pipe.as_fd(), PollFlags::POLLIN)];
    match nix::poll::poll(&mut fds, PollTimeout::from(ms)) {
        Ok(0) => Ok(false),
        Ok(_) => Ok(true),
        Err(nix::errno::Errno::EINTR) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// The pipe's capacity (64 KiB unless its writer changed it); 1 MiB, the most an
/// unprivileged writer may give it, when it cannot be read.
fn capacity(pipe: &PipeReader) -> usize {
    nix::fcntl::fcntl(pipe.as_fd(), nix::fcntl::FcntlArg::F_GETPIPE_SZ)
        .ok()
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n > 0)
        .unwrap_or(1 << 20)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Everything [`Drain`] gives until it ends, read with `pause` between reads.
    fn read_all(d: &mut Drain, pause: Duration) -> (Vec<u8>, Got) {
        let mut got = Vec::new();
        let mut buf = vec![0u8; 4096];
        loop {
            match d.next(&mut buf).unwrap() {
                Got::Bytes(n) => got.extend_from_slice(&buf[..n]),
                end => return (got, end),
            }
            std::thread::sleep(pause);
        }
    }

    /// The bug of issue 41: a reader slower than the grace lost what was still in the pipe
    /// when the run ended. Here the tree is gone before the first read and every read waits
    /// longer than the grace, with the pipe held open throughout: every byte is read all the
    /// same, and only then is the pipe called held open.
    #[test]
    fn bytes_left_in_the_pipe_are_read_however_slowly() {
        let (r, mut w) = std::io::pipe().unwrap();
        let data: Vec<u8> = (0..60_000u32).map(|i| (i % 251) as u8).collect();
        w.write_all(&data).unwrap();
        let gone = AtomicBool::new(true);
        let mut d = Drain::new(r, &gone, Duration::from_millis(5));
        let (got, end) = read_all(&mut d, Duration::from_millis(20));
        assert_eq!(end, Got::HeldOpen);
        assert!(got == data, "{} of {} bytes", got.len(), data.len());
        drop(w);
    }

    /// A pipe whose writers all closed ends, however late the flag comes.
    #[test]
    fn a_closed_pipe_ends_with_all_its_bytes() {
        let (r, mut w) = std::io::pipe().unwrap();
        w.write_all(b"last words\n").unwrap();
        drop(w);
        let gone = AtomicBool::new(false);
        let mut d = Drain::new(r, &gone, Duration::from_millis(5));
        assert_eq!(read_all(&mut d, Duration::ZERO), (b"last words\n".to_vec(), Got::End));
    }

    /// A process outside the tree that keeps writing: once the tree is gone, at most the
    /// pipe's capacity more is read, then the reader stops.
    #[test]
    fn a_writer_outside_the_tree_is_read_up_to_the_pipe_s_capacity() {
        let (r, mut w) = std::io::pipe().unwrap();
        let cap = capacity(&r);
        let writer = std::thread::spawn(move || {
            let chunk = [b'x'; 4096];
            // Until the reading end is gone (EPIPE).
            while w.write_all(&chunk).is_ok() {}
        });
        let gone = AtomicBool::new(true);
        let mut d = Drain::new(r, &gone, Duration::from_secs(3600));
        let (got, end) = read_all(&mut d, Duration::ZERO);
        assert_eq!((got.len(), end), (cap, Got::HeldOpen));
        drop(d);
        writer.join().unwrap();
    }
}

//! A run's log file with a cap ([`log_cap`], [`LOG_CAP_VAR`]): the head is written as the
//! bytes come, up to the cap less the tail's share; past it the last bytes are kept in a
//! ring in memory ([`tail_size`], at most [`TAIL_MAX`]) and written when the log is closed,
//! after a marker line that says how much was cut there. The tail is kept because it holds
//! the error that ended the run; the head holds the banner and the first fault.
//!
//! Must not: redact, parse or split lines (the writer in `mod.rs` hands over bytes already
//! redacted, a line at a time when redacting), hold more than the tail in memory, or print.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The cap of each log when [`LOG_CAP_VAR`] is not set: 1 GiB, above the largest
/// sanitizer log the benchmarks write (`bench redact`, 512 MiB, compares the whole log).
pub const LOG_CAP_DEFAULT: u64 = 1 << 30;
/// The variable that sets the cap of each log: bytes, or with a `K`, `M` or `G` suffix
/// (powers of 1024, `KiB`/`MiB`/`GiB` also taken).
pub const LOG_CAP_VAR: &str = "DEBUG_IMA_LOG_CAP";
/// The smallest cap taken: room for a head, a marker and a tail.
pub const LOG_CAP_MIN: u64 = 4096;
/// The most bytes of a log's tail kept in memory until the log is closed.
pub const TAIL_MAX: u64 = 16 << 20;

/// The cap of each log: [`LOG_CAP_VAR`] when set, else [`LOG_CAP_DEFAULT`].
pub fn log_cap() -> anyhow::Result<u64> {
    match std::env::var_os(LOG_CAP_VAR) {
        None => Ok(LOG_CAP_DEFAULT),
        Some(v) => {
            let text = v.to_string_lossy();
            parse_size(&text).filter(|&n| n >= LOG_CAP_MIN).ok_or_else(|| {
                anyhow::anyhow!(
                    "{LOG_CAP_VAR}={text:?} is not a log cap: give bytes of at least {LOG_CAP_MIN}, or a size \
                     such as 64K, 256M or 2G (the default is {})",
                    size(LOG_CAP_DEFAULT)
                )
            })
        }
    }
}

/// `4096`, `64K`, `256MiB`, `2G` (powers of 1024).
fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let n: u64 = number.parse().ok()?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return None,
    };
    n.checked_mul(1u64 << shift)
}

/// The tail's share of a cap: a quarter, at most [`TAIL_MAX`].
pub fn tail_size(cap: u64) -> u64 {
    (cap / 4).min(TAIL_MAX)
}

/// `512 B`, `64 KiB`, `3.2 GiB`.
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if (v - v.round()).abs() < 0.05 {
        format!("{:.0} {}", v.round(), UNITS[unit])
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// What the cap took out of one log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogCut {
    /// The log file, as the run was given it.
    pub path: PathBuf,
    pub cap: u64,
    /// Bytes kept before the marker and after it.
    pub head: u64,
    pub tail: u64,
    /// Bytes left out, between the two.
    pub cut: u64,
}

impl LogCut {
    /// For the rung's notes: `stderr.log was over its cap of 1 GiB (DEBUG_IMA_LOG_CAP): ...`.
    pub fn note(&self) -> String {
        let name = self
            .path
            .file_name()
            .map_or_else(|| self.path.display().to_string(), |n| n.to_string_lossy().into_owned());
        format!(
            "`{name}` was over its cap of {} ({LOG_CAP_VAR}): {} ({} bytes) cut from its middle, where a marker \
             line says so; its first {} and its last {} are kept",
            size(self.cap),
            size(self.cut),
            self.cut,
            size(self.head),
            size(self.tail)
        )
    }
}

/// The last `cap` bytes pushed.
struct Ring {
    cap: usize,
    buf: Vec<u8>,
    /// Once `buf` is full: where the oldest byte is (and the next one goes).
    pos: usize,
    /// Bytes pushed out.
    dropped: u64,
}

impl Ring {
    fn new(cap: usize) -> Ring {
        Ring { cap, buf: Vec::new(), pos: 0, dropped: 0 }
    }

    fn push(&mut self, mut bytes: &[u8]) {
        if self.cap == 0 {
            self.dropped += bytes.len() as u64;
            return;
        }
        if bytes.len() >= self.cap {
            self.dropped += (self.buf.len() + bytes.len() - self.cap) as u64;
            self.buf.clear();
            self.buf.extend_from_slice(&bytes[bytes.len() - self.cap..]);
            self.pos = 0;
            return;
        }
        if self.buf.len() < self.cap {
            let n = (self.cap - self.buf.len()).min(bytes.len());
            self.buf.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        while !bytes.is_empty() {
            let n = (self.cap - self.pos).min(bytes.len());
            self.buf[self.pos..self.pos + n].copy_from_slice(&bytes[..n]);
            self.dropped += n as u64;
            self.pos = (self.pos + n) % self.cap;
            bytes = &bytes[n..];
        }
    }

    /// The bytes kept, oldest first, in two parts.
    fn parts(&self) -> (&[u8], &[u8]) {
        if self.buf.len() < self.cap {
            (&self.buf, &[])
        } else {
            (&self.buf[self.pos..], &self.buf[..self.pos])
        }
    }

    fn len(&self) -> usize {
        self.buf.len()
    }
}

/// One log file, capped. Shared by both streams when they go to one file.
pub(super) struct CappedLog {
    file: File,
    path: PathBuf,
    cap: u64,
    /// Bytes the head may still take.
    head_left: u64,
    head: u64,
    /// The head's last byte, to end its line before the marker.
    last: Option<u8>,
    tail: Ring,
    closed: bool,
}

impl CappedLog {
    /// Creates (or truncates) `path`, with its directory.
    pub(super) fn create(path: &Path, cap: u64) -> io::Result<CappedLog> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = File::create(path)?;
        let cap = cap.max(LOG_CAP_MIN);
        let tail = tail_size(cap);
        Ok(CappedLog {
            file,
            path: path.to_path_buf(),
            cap,
            head_left: cap - tail,
            head: 0,
            last: None,
            tail: Ring::new(usize::try_from(tail).unwrap_or(usize::MAX)),
            closed: false,
        })
    }

    /// Appends `bytes`: to the file while the head has room, then to the tail's ring.
    pub(super) fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.closed || bytes.is_empty() {
            return Ok(());
        }
        let n = usize::try_from(self.head_left).unwrap_or(usize::MAX).min(bytes.len());
        if n > 0 {
            self.file.write_all(&bytes[..n])?;
            self.head_left -= n as u64;
            self.head += n as u64;
            self.last = Some(bytes[n - 1]);
        }
        if n < bytes.len() {
            self.tail.push(&bytes[n..]);
        }
        Ok(())
    }

    /// Writes the tail (after the marker, if bytes were cut); later writes are dropped.
    /// Returns what was cut, if anything.
    pub(super) fn close(&mut self) -> io::Result<Option<LogCut>> {
        if self.closed {
            return Ok(None);
        }
        self.closed = true;
        let (a, b) = self.tail.parts();
        if self.tail.dropped == 0 {
            self.file.write_all(a)?;
            self.file.write_all(b)?;
            return Ok(None);
        }
        // The tail starts after the first newline in it, on a line of its own.
        let joined: Vec<u8>;
        let whole: &[u8] = if b.is_empty() {
            a
        } else {
            joined = [a, b].concat();
            &joined
        };
        let skip = memchr::memchr(b'\n', whole).map_or(0, |i| i + 1);
        let kept = &whole[skip..];
        let cut = self.tail.dropped + skip as u64;
        let cut_info =
            LogCut { path: self.path.clone(), cap: self.cap, head: self.head, tail: kept.len() as u64, cut };
        let mut marker = Vec::new();
        if self.last.is_some_and(|c| c != b'\n') {
            marker.push(b'\n');
        }
        marker.extend_from_slice(
            format!(
                "[debug-ima] ----- {} ({cut} bytes) cut here: this log is capped at {} ({LOG_CAP_VAR}); its first {} \
                 and its last {} are kept -----\n",
                size(cut),
                size(self.cap),
                size(self.head),
                size(kept.len() as u64)
            )
            .as_bytes(),
        );
        self.file.write_all(&marker)?;
        self.file.write_all(kept)?;
        debug_assert_eq!(self.tail.len(), whole.len());
        Ok(Some(cut_info))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_read_and_written() {
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("64K"), Some(64 << 10));
        assert_eq!(parse_size("256MiB"), Some(256 << 20));
        assert_eq!(parse_size(" 2g "), Some(2 << 30));
        assert_eq!(parse_size("1.5G"), None);
        assert_eq!(parse_size("G"), None);
        assert_eq!(parse_size("-1"), None);
        assert_eq!(parse_size("99999999999T"), None);
        assert_eq!(size(512), "512 B");
        assert_eq!(size(64 << 10), "64 KiB");
        assert_eq!(size(LOG_CAP_DEFAULT), "1 GiB");
        assert_eq!(size(3_500_000_000), "3.3 GiB");
        assert_eq!(tail_size(LOG_CAP_DEFAULT), TAIL_MAX);
        assert_eq!(tail_size(64 << 10), 16 << 10);
    }

    #[test]
    fn the_ring_keeps_the_last_bytes() {
        for chunk in [1, 3, 7, 10, 25] {
            let mut r = Ring::new(10);
            let data: Vec<u8> = (0..=99u8).collect();
            for c in data.chunks(chunk) {
                r.push(c);
            }
            let (a, b) = r.parts();
            assert_eq!([a, b].concat(), &data[90..], "chunks of {chunk}");
            assert_eq!(r.dropped, 90);
        }
        let mut r = Ring::new(10);
        r.push(b"abc");
        assert_eq!(r.parts(), (&b"abc"[..], &b""[..]));
        assert_eq!(r.dropped, 0);
    }

    fn capped(name: &str, cap: u64, chunks: &[&[u8]]) -> (String, Option<LogCut>) {
        let dir = std::env::temp_dir().join(format!("xtask-log-{}-{name}", std::process::id()));
        let path = dir.join("out.log");
        let mut log = CappedLog::create(&path, cap).unwrap();
        for c in chunks {
            log.write(c).unwrap();
        }
        let cut = log.close().unwrap();
        log.write(b"after the close").unwrap();
        let text = String::from_utf8(std::fs::read(&path).unwrap()).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        (text, cut)
    }

    #[test]
    fn a_log_under_its_cap_is_whole() {
        let line = b"0123456789abcdef\n";
        let chunks: Vec<&[u8]> = std::iter::repeat_n(&line[..], 200).collect();
        let (text, cut) = capped("under", 4096, &chunks);
        assert_eq!(text.len(), 3400);
        assert_eq!(cut, None);
        let (text, cut) = capped("exact", 4096, &[&[b'x'; 4096]]);
        assert_eq!((text.len(), cut), (4096, None));
    }

    #[test]
    fn a_log_over_its_cap_keeps_its_head_and_tail_around_a_marker() {
        let lines: Vec<String> = (0..2000).map(|i| format!("line {i:05}\n")).collect();
        let chunks: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
        let total: u64 = lines.iter().map(|l| l.len() as u64).sum();
        let (text, cut) = capped("over", 4096, &chunks);
        let cut = cut.unwrap();
        assert_eq!(cut.cap, 4096);
        assert_eq!(cut.head, 3072);
        assert_eq!(cut.head + cut.cut + cut.tail, total);
        assert!(text.starts_with("line 00000\nline 00001\n"), "{text}");
        assert!(text.ends_with("line 01999\n"), "{text}");
        let (before, after) = text.split_once("[debug-ima] ----- ").unwrap();
        assert!(before.ends_with('\n'));
        assert_eq!(before.len() as u64, cut.head + 1, "the head's last line is ended");
        let (marker, tail) = after.split_once('\n').unwrap();
        assert!(marker.contains(&format!("({} bytes) cut here", cut.cut)), "{marker}");
        assert!(marker.contains("DEBUG_IMA_LOG_CAP"), "{marker}");
        assert!(tail.starts_with("line "), "the tail starts on a whole line: {tail}");
        assert_eq!(tail.len() as u64, cut.tail);
        assert!(cut.note().contains("`out.log` was over its cap of 4 KiB"), "{}", cut.note());
    }

    #[test]
    fn a_log_of_one_huge_line_is_cut_too() {
        let big = vec![b'a'; 100_000];
        let (text, cut) = capped("one-line", 8192, &[&big]);
        let cut = cut.unwrap();
        assert_eq!(cut.head + cut.cut + cut.tail, 100_000);
        assert_eq!(cut.tail, 2048);
        assert!(text.len() < 8192 + 200);
    }
}

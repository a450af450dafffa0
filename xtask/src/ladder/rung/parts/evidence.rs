//! What the hang rung and `debug-ima dump PID` (`ladder/dump.rs`) both take from a process
//! that hangs, in one place: which processes run Python (py-spy's), which are alive, the
//! named pipes of a folder and one byte into one of them (the driver's user-triggered GPU
//! dump, the NCCL flight recorder), the waits for what those pipes make the process write,
//! and the commands that read it: `py-spy dump --native`, the pickle-to-JSON conversion of a
//! flight-recorder dump, cuda-gdb on a user-triggered dump.
//!
//! Must not: signal a process, spawn one (the commands are [`Invocation`]s, run by the caller
//! through `process`), decide which process gets what (the callers do), or print.

use std::io::Write;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::build::GDB_TIMEOUT;
use crate::ladder::rung::api::TRACE;
use crate::model::Invocation;

/// How long a triggered process may take to write its dump and abort (the H200's took
/// 0.3 s native, 1.8 s for two Python processes) before the caller goes on anyway.
pub const DUMP_WAIT: Duration = Duration::from_secs(60);
/// A dump whose size has not changed for this long is taken as written.
const DUMP_STILL: Duration = Duration::from_secs(2);
/// How long an open of a pipe nobody reads yet (ENXIO) is retried.
pub const OPEN_RETRY: Duration = Duration::from_secs(2);
/// How long the NCCL traces may take to appear once their pipes were written.
pub const TRACE_WAIT: Duration = Duration::from_secs(10);
/// Converts a flight-recorder pickle (`argv[1]`) to JSON (`argv[2]`); what JSON cannot hold
/// (bytes) is written as its `repr`.
const PICKLE_TO_JSON: &str = "import pickle,json,sys; d=pickle.load(open(sys.argv[1],'rb')); \
json.dump(d,open(sys.argv[2],'w'),indent=1,default=repr)";

/// `py-spy dump --native --pid PID`: every thread's Python and native frames.
pub fn pyspy(pid: &str) -> Invocation {
    let argv = ["py-spy", "dump", "--native", "--pid", pid].map(String::from).to_vec();
    Invocation { timeout: Some(Duration::from_secs(60)), ..Invocation::new(argv) }
}

/// `python3 -c PICKLE_TO_JSON DUMP DUMP.json` on a flight-recorder dump in `dir`.
pub fn trace_to_json(dir: &Path) -> Invocation {
    let trace = dir.join(TRACE);
    trace_to_json_at(&trace, Path::new(&format!("{}.json", trace.display())))
}

/// `python3 -c PICKLE_TO_JSON FROM TO`: a flight-recorder dump `from` as JSON in `to`.
pub fn trace_to_json_at(from: &Path, to: &Path) -> Invocation {
    let argv = vec![
        "python3".to_string(),
        "-c".to_string(),
        PICKLE_TO_JSON.to_string(),
        from.display().to_string(),
        to.display().to_string(),
    ];
    Invocation { timeout: Some(Duration::from_secs(60)), ..Invocation::new(argv) }
}

/// cuda-gdb on a user-triggered dump, with the commands the recordings were made with: the
/// kernels, the focused thread's stack, every thread grouped by PC and line, the warps of the
/// focused SM, the instruction at the PC.
pub fn gdb(dump: &Path) -> Invocation {
    let mut argv: Vec<String> = ["cuda-gdb", "-batch", "-nx"].map(String::from).to_vec();
    for c in [
        "set pagination off".to_string(),
        format!("target cudacore {}", dump.display()),
        "info cuda kernels".to_string(),
        "bt".to_string(),
        "info cuda threads".to_string(),
        "info cuda warps".to_string(),
        "x/i $pc".to_string(),
    ] {
        argv.push("-ex".into());
        argv.push(c);
    }
    Invocation { timeout: Some(GDB_TIMEOUT), ..Invocation::new(argv) }
}

/// Whether a command line (`/proc/PID/cmdline`'s first word), an executable or a `comm` is a
/// Python interpreter's: `python`, `python3`, `python3.12`, a venv's `.../bin/python3`.
pub fn is_python_name(name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name);
    base.strip_prefix("python").is_some_and(|v| v.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
}

/// Whether the live process `pid` runs Python: its `comm` (a script run through a `#!`
/// line is named after the script), its executable or its first word.
pub fn is_python(pid: u32) -> bool {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    let exe =
        std::fs::read_link(format!("/proc/{pid}/exe")).map(|p| p.display().to_string()).unwrap_or_default();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let first = String::from_utf8_lossy(cmdline.split(|&b| b == 0).next().unwrap_or_default()).into_owned();
    [comm.trim(), exe.as_str(), first.as_str()].iter().any(|n| is_python_name(n))
}

/// When `pid` started (clock ticks since boot, `/proc/PID/stat`'s 22nd field); `None` when it
/// is gone.
pub fn started_at(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// `items` (each with its process's `pid`) in the order their GPU dumps are triggered, one at a time: the youngest process
/// first, so that a child is dumped before its parent (seen on the H200: the parent of
/// `mp.Process` ranks dumped first and aborted, and a rank then exited without its dump);
/// the gone ones last.
pub fn youngest_first<T>(items: &mut [T], pid: impl Fn(&T) -> u32) {
    // Within one clock tick (10 ms), the higher pid is the younger, but for a wrapped pid.
    items.sort_by_cached_key(|i| {
        let p = pid(i);
        std::cmp::Reverse((started_at(p).map(|t| t + 1).unwrap_or(0), p))
    });
}

/// Whether `pid` is alive and not a zombie.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()) != Some("Z"),
        Err(_) => false,
    }
}

/// The FIFOs in `dir` whose names start with `prefix` (and end with `suffix`), sorted.
pub fn fifos(dir: &Path, prefix: &str, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_fifo()))
                .map(|e| e.path())
                .filter(|p| {
                    let n = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                    n.starts_with(prefix) && n.ends_with(suffix)
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The regular files in `dir` whose names start with `prefix`, sorted.
pub fn files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .map(|e| e.path())
                .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(prefix)))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

pub fn name_of(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// How a write to a pipe went.
#[derive(Debug, PartialEq, Eq)]
pub enum Wrote {
    Done,
    /// Nobody opened it for reading within [`OPEN_RETRY`] (ENXIO).
    NoReader,
    Failed(String),
}

/// Writes `byte` to the FIFO `p` without blocking: opened `O_WRONLY|O_NONBLOCK`, retried
/// while nobody reads it yet (ENXIO) for up to [`OPEN_RETRY`].
pub fn poke(p: &Path, byte: &[u8]) -> Wrote {
    poke_until(p, byte, Instant::now() + OPEN_RETRY, &|| false)
}

/// [`poke`], retried until `until` at most (one deadline for every pipe of a tree), and not
/// after `interrupted` says so (Ctrl-C is looked at between tries).
pub fn poke_until(p: &Path, byte: &[u8], until: Instant, interrupted: &dyn Fn() -> bool) -> Wrote {
    loop {
        match std::fs::OpenOptions::new().write(true).custom_flags(nix::libc::O_NONBLOCK).open(p) {
            Ok(mut f) => {
                return match f.write_all(byte) {
                    Ok(()) => Wrote::Done,
                    Err(e) => Wrote::Failed(e.to_string()),
                }
            }
            Err(e) if e.raw_os_error() == Some(nix::libc::ENXIO) => {
                if Instant::now() >= until || interrupted() {
                    return Wrote::NoReader;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => return Wrote::Failed(e.to_string()),
        }
    }
}

/// Waits until every triggered process of `pids` has exited or its dump (`size_of` its
/// size, `None` while there is none) has stopped growing for [`DUMP_STILL`], up to
/// [`DUMP_WAIT`] or until `interrupted`; returns those still running at the end with their
/// state. Callers trigger and wait for one process at a time: several processes on one GPU
/// triggered at once did not all dump (seen on the H200: of three ranks, one wrote no dump in
/// 60 s in 2 of 3 runs, and a second byte into its pipe did not help; one at a time, all three
/// dumped in 3 of 3).
pub fn wait_for_dumps(
    pids: &[u32],
    size_of: &dyn Fn(u32) -> Option<u64>,
    interrupted: &dyn Fn() -> bool,
) -> Vec<(u32, &'static str)> {
    let until = Instant::now() + DUMP_WAIT;
    let mut sizes: Vec<(u32, Option<u64>, Instant)> =
        pids.iter().map(|&p| (p, None, Instant::now())).collect();
    loop {
        let mut pending = Vec::new();
        for (pid, size, since) in &mut sizes {
            if !alive(*pid) {
                continue;
            }
            let now = size_of(*pid);
            if now != *size {
                *size = now;
                *since = Instant::now();
            }
            let still = size.is_some() && since.elapsed() >= DUMP_STILL;
            if !still {
                pending.push((*pid, if size.is_some() { "writing its dump" } else { "no dump yet" }));
            }
        }
        if pending.is_empty() || Instant::now() >= until || interrupted() {
            return pending;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits up to [`TRACE_WAIT`] (or until `interrupted`) for `want` flight-recorder dumps in
/// `dir` (files named `prefix<rank>`, not the `.json` made from them, modified at or after
/// `since` when given) to appear and stop growing; returns those there.
pub fn wait_for_traces(
    dir: &Path,
    prefix: &str,
    want: usize,
    since: Option<SystemTime>,
    interrupted: &dyn Fn() -> bool,
) -> Vec<PathBuf> {
    let until = Instant::now() + TRACE_WAIT;
    let mut last: Vec<(PathBuf, u64)> = Vec::new();
    loop {
        let now: Vec<(PathBuf, u64)> = files(dir, prefix)
            .into_iter()
            .filter(|p| !name_of(p).ends_with(".json"))
            .filter_map(|p| {
                let m = std::fs::metadata(&p).ok();
                let fresh = match (since, m.as_ref().and_then(|m| m.modified().ok())) {
                    (Some(s), Some(t)) => t >= s,
                    (Some(_), None) => false,
                    (None, _) => true,
                };
                fresh.then(|| (p, m.map(|m| m.len()).unwrap_or(0)))
            })
            .collect();
        let settled = now == last && now.len() >= want && now.iter().all(|(_, n)| *n > 0);
        if settled || Instant::now() >= until || interrupted() {
            return now.into_iter().map(|(p, _)| p).collect();
        }
        last = now;
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[cfg(test)]
mod tests {

    /// A child is triggered before its parent; a gone process last.
    #[test]
    fn the_youngest_process_comes_first() {
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        let (me, kid) = (std::process::id(), child.id());
        let mut pids = vec![me, u32::MAX - 1, kid];
        youngest_first(&mut pids, |&p| p);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(pids, [kid, me, u32::MAX - 1]);
    }

    use super::*;

    #[test]
    fn python_interpreters_are_known_by_name() {
        for n in ["python", "python3", "python3.12", "/opt/torch/.venv/bin/python3"] {
            assert!(is_python_name(n), "{n}");
        }
        for n in ["pythonista", "sh", "hang_flag", "", "/usr/bin/ipython"] {
            assert!(!is_python_name(n), "{n}");
        }
    }

    #[test]
    fn the_gdb_command_is_the_recordings() {
        let inv = gdb(Path::new("/b/core.vm.1.2"));
        assert_eq!(
            inv.shell_line(),
            "cuda-gdb -batch -nx -ex 'set pagination off' -ex 'target cudacore /b/core.vm.1.2' -ex 'info cuda \
             kernels' -ex bt -ex 'info cuda threads' -ex 'info cuda warps' -ex 'x/i $pc'"
        );
    }

    #[test]
    fn a_trace_is_converted_from_where_it_lies_to_where_it_goes() {
        let inv = trace_to_json_at(Path::new("/tmp/nccl_trace_rank_0"), Path::new("/b/nccl-trace-0.json"));
        assert_eq!(inv.argv[0], "python3");
        assert_eq!(&inv.argv[3..], ["/tmp/nccl_trace_rank_0", "/b/nccl-trace-0.json"]);
        let inv = trace_to_json(Path::new("/b/r"));
        assert_eq!(&inv.argv[3..], [format!("/b/r/{TRACE}"), format!("/b/r/{TRACE}.json")]);
    }

    #[test]
    fn a_pipe_nobody_reads_is_reported_and_one_read_gets_its_byte() {
        let d = std::env::temp_dir().join(format!("xtask-evidence-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("corepipe.h.1");
        let _ = std::fs::remove_file(&p);
        let c = std::ffi::CString::new(p.display().to_string()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { nix::libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(fifos(&d, "corepipe.", ""), vec![p.clone()]);
        assert_eq!(poke(&p, b"1"), Wrote::NoReader);
        let reader = {
            let p = p.clone();
            std::thread::spawn(move || std::fs::read(&p).unwrap())
        };
        assert_eq!(poke(&p, b"1"), Wrote::Done);
        assert_eq!(reader.join().unwrap(), b"1");
        std::fs::remove_dir_all(&d).unwrap();
    }
}

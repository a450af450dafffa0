//! What the integration tests that run the real binary against the stand-ins share: the
//! repository's paths, a scratch folder per test that records the stand-ins' PIDs, and the
//! check that no process of theirs is left. Each test module adds its own methods.
//!
//! Must not: change anything process-wide (every module's tests share the process), or
//! signal a process the test did not start (its runs of the binary, the stand-ins they
//! recorded).

pub mod corpus;
pub mod plant;
pub mod recipes;
pub mod run;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use nix::errno::Errno;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// Whether `cond` holds within `limit`, polled every 20 ms.
pub fn wait_for(limit: std::time::Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    cond()
}

/// The name libtest knows the test `function` of the module `module` (its `module_path!()`)
/// by, as a copy of the test binary is given it with `--exact`: the module path without the
/// test crate's name (`exec::interrupt_child`), or the bare function at the crate's root.
pub fn test_name(module: &str, function: &str) -> String {
    match module.split_once("::") {
        Some((_, inner)) => format!("{inner}::{function}"),
        None => function.to_string(),
    }
}

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

pub fn standins() -> PathBuf {
    root().join("tests/standins")
}

/// Says that a test skipped its real work, where the test command's output shows it: the
/// test harness captures `eprintln!` (shown only with `--nocapture` or on failure), not a
/// write to the process's stderr itself. CI sets `CI`, where the callers fail instead.
pub fn skipped(why: &str) {
    use std::io::Write;
    let line = format!("\ntest skipped its real work: {why}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// The variable that lets the slow tests run: those that build the tool once more, outside
/// the test command's own build (a nested `cargo install`, `cargo xtask` in a target folder
/// of their own: minutes and a gigabyte more on two cores). `.ci/run` sets it.
pub const SLOW_TESTS_VAR: &str = "DEBUG_IMA_SLOW_TESTS";

/// Whether `CI` is set to something that means yes (as GitHub Actions and `.ci/run` set it).
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// Whether the slow test `what` runs: with [`SLOW_TESTS_VAR`]`=1`. Without it the test says
/// it skipped its real work ([`skipped`]) and passes, unless `CI` is set, where it fails: CI
/// runs every test.
pub fn slow_tests(what: &str) -> bool {
    if std::env::var_os(SLOW_TESTS_VAR).is_some_and(|v| v == "1") {
        return true;
    }
    let why = format!("{what} builds the tool again (slow): `{SLOW_TESTS_VAR}=1` runs it, as `.ci/run` does");
    assert!(!in_ci(), "{why}; CI must run it");
    skipped(&why);
    false
}

/// A recording of the GPU suite (`tests/fixtures/h200/<case>`).
pub fn fixture(case: &str) -> PathBuf {
    root().join("tests/fixtures/h200").join(case)
}

/// PATH with `dirs` first.
pub fn path_with(dirs: &[&Path]) -> String {
    let mut parts: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    if let Ok(p) = std::env::var("PATH") {
        parts.push(p);
    }
    parts.join(":")
}

/// Whether a process exists and is neither a zombie nor dead (a killed orphan stays a
/// zombie until its reaper, which in a container may be slow, collects it).
pub fn alive(pid: i32) -> bool {
    match kill(Pid::from_raw(pid), None) {
        Err(Errno::ESRCH) => false,
        _ => match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            // `PID (comm) STATE ...`; comm may hold spaces and parentheses.
            Ok(stat) => !matches!(
                stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()),
                Some("Z" | "X")
            ),
            Err(_) => false,
        },
    }
}

/// A named pipe at `p`.
pub fn mkfifo(p: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // Safe: a valid NUL-terminated path.
    assert_eq!(unsafe { nix::libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", p.display());
}

/// A copy of the folder `from` (regular files and folders) at `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// A folder of its own for one test, removed at the end unless the test failed; the
/// stand-ins write their PIDs into it (`STANDIN_PIDS`).
pub struct Scratch {
    pub dir: PathBuf,
}

impl Scratch {
    /// `CARGO_TARGET_TMPDIR/<prefix>-<name>-<pid>-<n>`, empty.
    pub fn create(prefix: &str, name: &str) -> Scratch {
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "{prefix}-{name}-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch { dir }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    pub fn bundles(&self) -> PathBuf {
        self.path("bundles")
    }

    /// Where the stand-ins write `target PID` and `child PID`.
    pub fn pids_file(&self) -> PathBuf {
        self.path("standin-pids.txt")
    }

    /// Every PID a stand-in recorded, with its role.
    pub fn standin_pids(&self) -> Vec<(String, i32)> {
        let text = std::fs::read_to_string(self.pids_file()).unwrap_or_default();
        text.lines()
            .filter_map(|l| {
                let (role, pid) = l.split_once(' ')?;
                Some((role.to_string(), pid.trim().parse().ok()?))
            })
            .collect()
    }

    /// Fails when a process a stand-in started is still alive.
    pub fn assert_no_standin_left(&self) {
        for (role, pid) in self.standin_pids() {
            assert!(!alive(pid), "stand-in {role} (PID {pid}) is still running");
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Whatever happened, leave no process behind (the assertions have already failed
        // if one was there), and keep the folder of a failed test for a look.
        for (_, pid) in self.standin_pids() {
            if alive(pid) {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
        }
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Whether this machine has a real `nvidia-smi` (on PATH or where drivers put it): a test of
/// the no-GPU path cannot run there (it would run the demo).
pub fn has_real_nvidia_smi() -> bool {
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .chain(["/usr/bin", "/usr/local/nvidia/bin", "/usr/lib/wsl/lib"])
        .any(|d| Path::new(d).join("nvidia-smi").is_file())
}

/// Every regular file under `dir` (not following links), read whole: what a bundle holds.
pub fn every_file(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.is_file() {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

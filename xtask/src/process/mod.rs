//! The only code that starts processes. [`run`] supervises the ladder's runs: the target
//! under each rung and the tools that read what it left. Each run is its own process group
//! (the target with its workers and ranks), started through duct ([`spawn`]); stdout and
//! stderr are copied to log files as the bytes come, each log capped at [`log_cap`] (its
//! head and its tail kept), and handed, line by line, to a callback (progress, the attach
//! message). A timeout, Ctrl-C/SIGTERM ([`Interrupt`]) and the callback's [`Control::Stop`]
//! end the run: its whole process tree gets SIGTERM, [`TERM_GRACE`] to go (torchrun
//! forwards it to its workers, NCCL tears its communicators down), then SIGKILL; when the
//! direct child exits by itself, whatever is left of its tree is killed at once. The tree is
//! the group and every process outside it that carries the run's mark or that the tool,
//! its subreaper, inherited as an orphan ([`tree`]), so a descendant that calls `setsid()`
//! is killed too. [`short`] runs short commands whose output is wanted as text. [`foreign`]
//! knows the tree of a process the tool did not start (`debug-ima dump PID`), resumes one a
//! debugger left stopped and, for `dump --kill`, ends that tree.
//!
//! [`init`], at the start of the tool, makes it the subreaper of what it starts and
//! installs the signal handler; [`end`], at its end, kills whatever is left.
//!
//! Must not: parse tool output or decide policy (what runs, what a line means and when to
//! stop belong to the rungs, the ladder and the callback), print, hold a whole output in
//! memory, or leave a process of the target alive. Every group started is in a registry
//! that [`kill_all`] kills, with every descendant and every marked process, for errors,
//! panics, a second Ctrl-C and the end of the tool.
//!
//! Once the run's tree is gone, every byte it wrote is logged, however long the readers take
//! over it (a long line redacted on a busy machine): the readers read their pipes to the end
//! ([`drain`]) and the run waits for them. The limit: a descendant that clears its
//! environment and outlives its parent is found only where the tool is the subreaper (the
//! binary). If such a process keeps the pipes open, the readers stop once a pipe stayed empty
//! for [`READERS_GRACE`] (or more than its capacity came after the tree), and
//! [`Outcome::output_abandoned`] says so.

mod drain;
pub mod foreign;
mod groups;
pub mod guard;
mod interrupt;
mod log;
pub mod short;
mod spawn;
mod tree;

use groups::Registered;
pub use interrupt::{while_prompting, Cause, Interrupt};
use log::CappedLog;
pub use log::{log_cap, LogCut, LOG_CAP_DEFAULT, LOG_CAP_MIN, LOG_CAP_VAR, TAIL_MAX};
pub use tree::{kill_all, MARK_VAR};

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{self, PipeReader};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use nix::sys::signal::Signal;

pub use crate::model::{Exit, Stream};

/// Lines handed to the callback are cut at this many bytes; the logs keep them whole.
pub const MAX_LINE: usize = 64 * 1024;
/// Once the run's tree is gone and a reader has read all it wrote, how long its pipe may
/// stay open and empty (a process that left the tree holds it) before the reader stops. The
/// time a reader takes over the bytes it read is not counted.
pub const READERS_GRACE: Duration = Duration::from_secs(2);
/// How long a killed child may take to die (a CUDA process can take seconds to release
/// the device) before `run` gives up with an error.
pub const KILL_WAIT: Duration = Duration::from_secs(60);
/// After a timeout, a Stop or Ctrl-C the group gets SIGTERM and this long to exit before
/// SIGKILL: torchrun forwards SIGTERM to its workers and waits for them, NCCL and PyTorch
/// tear down on it. A target that exits at once costs nothing.
pub const TERM_GRACE: Duration = Duration::from_secs(5);

/// With [`Spec::redact`], the most bytes of one line held back until its newline.
pub const REDACT_HOLD: usize = 1 << 20;

/// Size of one read from a pipe.
const CHUNK: usize = 64 * 1024;
/// How long the calling thread waits for a line before it checks the child, the clock and
/// the interrupt flag.
const TICK: Duration = Duration::from_millis(50);
/// While lines flow, the child, the clock and the flag are checked at most this often.
const CHECK_EVERY: Duration = Duration::from_millis(20);
/// Lines waiting for the callback, at most; beyond this (or [`QUEUE_BYTES`]) lines are
/// dropped from the callback, never from the logs.
const QUEUE_LINES: usize = 4096;
/// Bytes of lines waiting for the callback, at most.
const QUEUE_BYTES: usize = 8 << 20;

/// One process to run.
#[derive(Debug, Clone, Default)]
pub struct Spec {
    pub program: OsString,
    pub args: Vec<OsString>,
    /// Working directory; the caller's when `None`.
    pub cwd: Option<PathBuf>,
    /// Variables added or overridden (applied after `env_remove`).
    pub env_set: Vec<(String, String)>,
    /// Variables removed from the inherited environment (e.g. `TRITON_DISABLE_LINE_INFO`).
    pub env_remove: Vec<String>,
    /// Where stdout goes, streamed as it comes; created (with its directory) or truncated.
    pub stdout_log: PathBuf,
    /// Where stderr goes; may be the same path as `stdout_log` to interleave both.
    pub stderr_log: PathBuf,
    /// The group is killed this long after the start; `None` waits for ever.
    pub timeout: Option<Duration>,
    /// Redact secrets from the logs before they are written ([`crate::redact::redact_line`]):
    /// the logs are then written a whole line at a time (a line longer than [`REDACT_HOLD`]
    /// is written in pieces, each redacted), and [`Outcome::redacted`] counts what was taken
    /// out.
    pub redact: bool,
    /// Asked every few milliseconds: once set the group is ended and the run returns
    /// [`Exit::Interrupted`]; a run asked to start after it starts nothing.
    pub interrupt: Interrupt,
    /// `watch`'s job: its stdout and stderr bytes also go, unchanged and as they come, to this
    /// process's stdout and stderr ([`crate::ui::pass_through`]: no line cut, no UTF-8
    /// repair, no redaction, no cap; the logs stay redacted and capped), and it reads this
    /// process's stdin ([`stdin_for`]) instead of none.
    pub pass_through: bool,
}

/// What a run yielded besides its logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub exit: Exit,
    /// From the start to the exit (or to the decision to kill).
    pub duration: Duration,
    /// The child's pid, which is also its group's id; 0 when nothing was started because
    /// of an earlier interrupt.
    pub pid: u32,
    /// Lines the callback did not see because it fell behind; the logs hold them.
    pub lines_dropped: u64,
    /// A process outside the group kept the pipes open after the run: what it wrote later
    /// is not in the logs.
    pub output_abandoned: bool,
    /// With [`Spec::redact`]: the kinds of secret taken out of each stream's log, with the
    /// number of lines that held one; sorted.
    pub redacted: Vec<(Stream, &'static str, u64)>,
    /// The logs that were over their cap ([`log_cap`]), and what was cut from each.
    pub log_cuts: Vec<LogCut>,
}

impl Outcome {
    /// What the rung's record should say about the run beyond its exit: a log cut.
    pub fn notes(&self) -> Vec<String> {
        self.log_cuts.iter().map(LogCut::note).collect()
    }
}

/// What the callback wants after a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    Continue,
    /// Kill the whole group now; the run ends with [`Exit::Stopped`].
    Stop,
}

impl Spec {
    /// A spec with no extra environment, the caller's working directory and no timeout.
    pub fn new(
        program: impl Into<OsString>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
        stdout_log: impl Into<PathBuf>,
        stderr_log: impl Into<PathBuf>,
    ) -> Spec {
        Spec {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            stdout_log: stdout_log.into(),
            stderr_log: stderr_log.into(),
            ..Spec::default()
        }
    }
}

/// Makes this process the tool that owns what it starts, once, at its start (`cli::main`):
/// the child subreaper of every process it starts (an orphaned descendant re-parents to it,
/// so it can be found and killed), with the signal handler installed, so that a signal that
/// comes before a command watches for it ([`Interrupt::install`]) still kills what was
/// started (a probe of doctor) before the tool ends by it.
pub fn init() -> anyhow::Result<()> {
    tree::become_subreaper()?;
    interrupt::install_handler()
}

/// At the end of the tool: SIGKILLs whatever it started that is still alive (every
/// descendant, every marked process) and reaps it. While a signal that no command watched
/// is being handled, it does not return: the handler ends the tool by that signal.
pub fn end() {
    interrupt::wait_if_dying();
    tree::kill_all();
    interrupt::wait_if_dying();
}

/// Runs `spec` to its end and returns how it ended. `on_line` gets every complete line of
/// stdout and stderr (in order within each stream, cut at [`MAX_LINE`], lossy UTF-8,
/// without the newline) on the calling thread; it may block as long as it likes (the
/// attach rung runs cuda-gdb from it) while the pipes keep being drained into the logs.
/// Lines are dropped from the callback, never from the logs, when it falls behind.
///
/// Each log is capped at [`log_cap`] bytes: past it the head stays, the last bytes are
/// kept and a marker line says what was cut between them ([`Outcome::log_cuts`]).
///
/// Whatever happens, the group and the rest of the run's tree are dead when this returns,
/// except that a process stuck for [`KILL_WAIT`] after SIGKILL makes it an error (the group
/// stays registered for [`kill_all`]). If [`Spec::interrupt`] is already set, nothing is
/// started.
pub fn run(spec: &Spec, on_line: &mut dyn FnMut(Stream, &str) -> Control) -> anyhow::Result<Outcome> {
    run_watched(spec, on_line, &mut |_| Control::Continue)
}

/// What [`run_watched`]'s `on_tick` sees of the run while it runs: its child, how long it has
/// run, the live processes of its tree.
pub struct Running<'a> {
    group: &'a Group,
    started: Instant,
}

impl Running<'_> {
    /// The child's pid (its group's id).
    pub fn pid(&self) -> u32 {
        self.group.registered.pgid.as_raw() as u32
    }

    /// Since the start.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// The live processes of the run's tree, sorted: the child until it exits, every process
    /// that carries the run's mark, the orphans it left, and their descendants (zombies left
    /// out). A process that cleared its environment and kept its parent is found through that
    /// parent.
    pub fn tree(&self) -> Vec<u32> {
        tree::members(&self.group.tree).into_iter().map(|p| p as u32).collect()
    }

    /// Whether the child has exited (it is not reaped before the run returns, so its pid
    /// stays its own).
    pub fn child_exited(&self) -> bool {
        self.group.exited().unwrap_or(true)
    }
}

/// [`run`], calling `on_tick` with the [`Running`] run every few tens of milliseconds while
/// the child runs (not after it exited by itself, nor after a timeout, a Stop or an
/// interruption). `on_tick` may block as long as it likes, as `on_line` may: the pipes keep
/// being drained into the logs, and a child that exits meanwhile is reaped only after it
/// returns, its tree untouched until then. Its [`Control::Stop`] ends the run as
/// `on_line`'s does.
pub fn run_watched(
    spec: &Spec,
    on_line: &mut dyn FnMut(Stream, &str) -> Control,
    on_tick: &mut dyn FnMut(&Running) -> Control,
) -> anyhow::Result<Outcome> {
    let cap = log_cap()?;
    let (out_log, err_log) = open_logs(spec, cap)?;
    if spec.interrupt.is_set() {
        for log in [&out_log, &err_log] {
            lock(log).close().context("cannot write a log")?;
        }
        return Ok(Outcome {
            exit: Exit::Interrupted,
            duration: Duration::ZERO,
            pid: 0,
            lines_dropped: 0,
            output_abandoned: false,
            redacted: Vec::new(),
            log_cuts: Vec::new(),
        });
    }
    check_cwd(spec)?;
    let (stdout, out_w) = std::io::pipe().context("cannot make a pipe for the output")?;
    let (stderr, err_w) = std::io::pipe().context("cannot make a pipe for the output")?;
    let start = Instant::now();
    let mark = tree::new_mark();
    let launch = spawn::Start {
        program: &spec.program,
        args: &spec.args,
        cwd: spec.cwd.as_ref(),
        env_remove: &spec.env_remove,
        env_set: &spec.env_set,
        mark: &mark,
    };
    let stdin = if spec.pass_through { stdin_for()? } else { spawn::Input::Null };
    let mut group = Group::spawn(&launch, stdin, OwnedFd::from(out_w), OwnedFd::from(err_w))
        .map_err(|e| spawn_error(&spec.program, e))?;
    let pid = group.registered.pgid.as_raw() as u32;

    let shared = Arc::new(Shared { pass_through: spec.pass_through, ..Shared::default() });
    let (tx, rx) = mpsc::sync_channel(QUEUE_LINES);
    let readers = [
        spawn_reader(
            stdout,
            LogWriter::new(Arc::clone(&out_log), spec.redact),
            &spec.stdout_log,
            Stream::Stdout,
            tx.clone(),
            &shared,
        )?,
        spawn_reader(
            stderr,
            LogWriter::new(Arc::clone(&err_log), spec.redact),
            &spec.stderr_log,
            Stream::Stderr,
            tx,
            &shared,
        )?,
    ];

    let deadline = spec.timeout.map(|t| start + t);
    let reason = supervise(&mut group, &rx, &shared, deadline, &spec.interrupt, on_line, on_tick, start)?;
    let duration = start.elapsed();

    let status = group.finish(reason.is_some())?;
    let exit = reason.unwrap_or_else(|| exit_of(status));

    // No process of the tree can write any more: the readers read what is left in the pipes
    // and end (`drain`). Hand over what is still queued meanwhile (only after a normal exit: a
    // kill means the caller is done).
    shared.gone.store(true, Ordering::Release);
    let mut deliver = reason.is_none();
    while let Ok(line) = rx.recv() {
        shared.queued_bytes.fetch_sub(line.text.len(), Ordering::Relaxed);
        if deliver && on_line(line.stream, &line.text) == Control::Stop {
            deliver = false;
        }
    }
    let mut read = Ok(());
    for reader in readers {
        let done = reader.join().map_err(|_| anyhow!("the reader of a log panicked")).and_then(|r| r);
        read = read.and(done);
    }
    let output_abandoned = shared.held_open.load(Ordering::Relaxed);
    // The logs are closed here, the tails of capped ones written (one log for both streams
    // is closed once).
    let mut log_cuts = Vec::new();
    for (log, path) in [(&out_log, &spec.stdout_log), (&err_log, &spec.stderr_log)] {
        let closed = lock(log).close();
        log_cuts.extend(closed.with_context(|| format!("cannot write the log `{}`", path.display()))?);
    }
    read?;

    let redacted: Vec<_> = shared
        .redacted
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .map(|(&(s, k), &n)| (s, k, n))
        .collect();
    Ok(Outcome {
        exit,
        duration,
        pid,
        lines_dropped: shared.dropped.load(Ordering::Relaxed),
        output_abandoned,
        redacted,
        log_cuts,
    })
}

/// Waits for the child to exit, delivering lines; returns why the group must be killed,
/// or `None` when the child exited by itself.
#[allow(clippy::too_many_arguments)]
fn supervise(
    group: &mut Group,
    rx: &Receiver<Line>,
    shared: &Shared,
    deadline: Option<Instant>,
    interrupt: &Interrupt,
    on_line: &mut dyn FnMut(Stream, &str) -> Control,
    on_tick: &mut dyn FnMut(&Running) -> Control,
    started: Instant,
) -> anyhow::Result<Option<Exit>> {
    let mut last_check: Option<Instant> = None;
    loop {
        let idle = match rx.recv_timeout(TICK) {
            Ok(line) => {
                shared.queued_bytes.fetch_sub(line.text.len(), Ordering::Relaxed);
                if on_line(line.stream, &line.text) == Control::Stop {
                    return Ok(Some(Exit::Stopped));
                }
                false
            }
            Err(RecvTimeoutError::Timeout) => true,
            Err(RecvTimeoutError::Disconnected) => {
                // Both pipes are closed but the child runs on: just poll.
                thread::sleep(TICK);
                true
            }
        };
        if !idle && last_check.is_some_and(|t| t.elapsed() < CHECK_EVERY) {
            continue;
        }
        last_check = Some(Instant::now());
        if interrupt.is_set() {
            return Ok(Some(Exit::Interrupted));
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(Some(Exit::TimedOut));
        }
        if group.has_exited().context("cannot wait for the child")? {
            return Ok(None);
        }
        if on_tick(&Running { group, started }) == Control::Stop {
            return Ok(Some(Exit::Stopped));
        }
    }
}

/// The exit of a reaped child.
fn exit_of(status: ExitStatus) -> Exit {
    match (status.code(), status.signal()) {
        (Some(code), _) => Exit::Code(code),
        (None, Some(signal)) => Exit::Signal(signal),
        // Neither: not a termination status, which `wait` does not return.
        (None, None) => Exit::Code(-1),
    }
}

/// A log shared by the reader that writes it and the run that closes it.
type SharedLog = Arc<Mutex<CappedLog>>;

fn lock(log: &SharedLog) -> std::sync::MutexGuard<'_, CappedLog> {
    log.lock().unwrap_or_else(PoisonError::into_inner)
}

fn open_logs(spec: &Spec, cap: u64) -> anyhow::Result<(SharedLog, SharedLog)> {
    let out = create_log(&spec.stdout_log, cap)?;
    let err = if spec.stderr_log == spec.stdout_log {
        // One log for both, under one cap.
        Arc::clone(&out)
    } else {
        create_log(&spec.stderr_log, cap)?
    };
    Ok((out, err))
}

fn create_log(path: &Path, cap: u64) -> anyhow::Result<SharedLog> {
    let log = CappedLog::create(path, cap)
        .with_context(|| format!("cannot create the log `{}`", path.display()))?;
    Ok(Arc::new(Mutex::new(log)))
}

/// The stdin of a job whose input passes through ([`Spec::pass_through`]): this process's own
/// when it is not a terminal (a file, a pipe: shared as it is); from a terminal, a pipe that a
/// thread feeds with what it reads there, since the job runs in a process group of its own,
/// which the terminal would stop (SIGTTIN) at its first read. The thread ends at the
/// terminal's end of input (Ctrl-D), or at the first write after the job is gone.
fn stdin_for() -> anyhow::Result<spawn::Input> {
    use std::io::{IsTerminal, Read, Write};
    if !io::stdin().is_terminal() {
        return Ok(spawn::Input::Inherit);
    }
    let (r, mut w) = std::io::pipe().context("cannot make a pipe for the input")?;
    thread::Builder::new()
        .name("exec-stdin".into())
        .spawn(move || {
            let mut buf = vec![0u8; CHUNK];
            let mut input = io::stdin();
            loop {
                match input.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) if w.write_all(&buf[..n]).is_err() => break,
                    Ok(_) => {}
                }
            }
        })
        .context("cannot start a thread to pass the input on")?;
    Ok(spawn::Input::From(OwnedFd::from(r)))
}

fn check_cwd(spec: &Spec) -> anyhow::Result<()> {
    if let Some(dir) = &spec.cwd {
        if !dir.is_dir() {
            bail!(
                "cannot start `{}`: the working directory `{}` does not exist; check the recipe",
                Path::new(&spec.program).display(),
                dir.display()
            );
        }
    }
    Ok(())
}

fn spawn_error(program: &OsString, e: io::Error) -> anyhow::Error {
    let shown = Path::new(program).display();
    let is_path = program.as_bytes().contains(&b'/');
    match e.kind() {
        io::ErrorKind::NotFound if is_path && Path::new(program).is_file() => {
            anyhow!("cannot start `{shown}`: its interpreter (the `#!` line) was not found; check the script")
        }
        io::ErrorKind::NotFound if is_path => {
            anyhow!("cannot start `{shown}`: no such file; check the path in the recipe")
        }
        io::ErrorKind::NotFound => {
            anyhow!("cannot start `{shown}`: not found on PATH; check PATH or the recipe")
        }
        io::ErrorKind::PermissionDenied => {
            anyhow!("cannot start `{shown}`: permission denied; is it executable? check the recipe")
        }
        _ => anyhow::Error::new(e).context(format!("cannot start `{shown}`")),
    }
}

// ---------------------------------------------------------------------------------------
// The group: a child in its own process group, registered until it is reaped, and the rest
// of its tree (the processes that carry its mark, the orphans it left).

/// The child, owned: dropped without [`Group::finish`] (an error, a panic in the
/// callback), it kills the group and the tree.
struct Group {
    handle: duct::Handle,
    registered: Registered,
    tree: tree::Run,
    reaped: bool,
}

impl Group {
    fn spawn(
        launch: &spawn::Start,
        stdin: spawn::Input,
        stdout: OwnedFd,
        stderr: OwnedFd,
    ) -> io::Result<Group> {
        // Registered before the reaper of orphans can look: it never reaps a registered child.
        let spawning = groups::hold_spawns();
        let handle = spawn::start(launch, stdin, stdout, stderr)?;
        let pid = handle.pids().first().copied().unwrap_or(0);
        let registered = Registered::new(pid, launch.mark);
        drop(spawning);
        let tree = tree::Run::new(launch.mark.to_string(), pid);
        Ok(Group { handle, registered, tree, reaped: false })
    }

    /// SIGKILLs the group and the rest of the tree.
    fn kill(&self) {
        self.registered.kill();
        tree::kill(&self.tree);
    }

    /// Whether the child has exited, without reaping it: while it is a zombie its pid
    /// cannot be reused, so killing its group afterwards cannot hit a stranger.
    fn has_exited(&mut self) -> io::Result<bool> {
        self.exited()
    }

    /// [`Group::has_exited`] through a shared reference.
    fn exited(&self) -> io::Result<bool> {
        use nix::errno::Errno;
        use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
        match waitid(Id::Pid(self.registered.pgid), flags) {
            Ok(WaitStatus::StillAlive) | Err(Errno::EINTR) => Ok(false),
            Ok(_) => Ok(true),
            Err(e) => Err(e.into()),
        }
    }

    /// Ends what is left of the group and of the tree, and reaps the child. `ask_first` (a
    /// timeout, a Stop, Ctrl-C: the child still runs) sends the group and the tree SIGTERM
    /// and waits up to [`TERM_GRACE`] for the child and the tree before SIGKILL; after a
    /// normal exit the leftovers get SIGKILL at once.
    fn finish(&mut self, ask_first: bool) -> anyhow::Result<ExitStatus> {
        if ask_first {
            self.registered.signal(Signal::SIGTERM);
            tree::signal(&self.tree, Signal::SIGTERM);
            let until = Instant::now() + TERM_GRACE;
            let mut pause = Duration::from_millis(1);
            let mut next_look = Instant::now();
            loop {
                let now = Instant::now();
                if now >= until {
                    break;
                }
                if self.has_exited().unwrap_or(true) {
                    // The child is gone: what of its tree is left outside the group? Looked
                    // at through /proc, so not at every pause.
                    if now < next_look {
                        thread::sleep(next_look - now);
                        continue;
                    }
                    if !tree::any_left(&self.tree) {
                        break;
                    }
                    next_look = Instant::now() + TICK;
                }
                thread::sleep(pause);
                pause = (pause * 2).min(TICK);
            }
        }
        self.kill();
        match self.reap(KILL_WAIT).context("cannot wait for the child")? {
            Some(status) => {
                self.reaped = true;
                self.registered.done();
                Ok(status)
            }
            None => bail!(
                "process {} is still alive {} s after SIGKILL (stuck in the driver?); \
                 look at it with `ps -o pid,stat,wchan,cmd -g {}`",
                self.registered.pgid,
                KILL_WAIT.as_secs(),
                self.registered.pgid
            ),
        }
    }

    /// Waits up to `limit` for the (killed) child, killing the group again now and then.
    fn reap(&mut self, limit: Duration) -> io::Result<Option<ExitStatus>> {
        let start = Instant::now();
        let mut pause = Duration::from_millis(1);
        let mut next_kill = start + Duration::from_secs(1);
        loop {
            if let Some(out) = self.handle.try_wait()? {
                return Ok(Some(out.status));
            }
            let now = Instant::now();
            if now >= start + limit {
                return Ok(None);
            }
            if now >= next_kill {
                self.registered.kill();
                next_kill = now + Duration::from_secs(1);
            }
            thread::sleep(pause);
            pause = (pause * 2).min(TICK);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if self.reaped {
            return;
        }
        self.kill();
        if !matches!(self.reap(Duration::from_secs(2)), Ok(Some(_))) {
            // Still registered: a later kill_all gets it.
            self.registered.keep();
        }
    }
}

// ---------------------------------------------------------------------------------------
// The readers: pipe -> log file (every byte) and -> channel (lines, lossy).

struct Line {
    stream: Stream,
    text: String,
}

#[derive(Default)]
struct Shared {
    /// Set once no process of the run's tree can write any more: the readers read what is
    /// left and end ([`drain::Drain`]).
    gone: AtomicBool,
    /// A reader stopped with its pipe still held open by a process outside the tree.
    held_open: AtomicBool,
    queued_bytes: AtomicUsize,
    dropped: AtomicU64,
    /// Lines redacted, by stream and kind of secret.
    redacted: Mutex<BTreeMap<(Stream, &'static str), u64>>,
    /// [`Spec::pass_through`].
    pass_through: bool,
}

fn spawn_reader(
    pipe: PipeReader,
    log: LogWriter,
    log_path: &Path,
    stream: Stream,
    tx: SyncSender<Line>,
    shared: &Arc<Shared>,
) -> anyhow::Result<JoinHandle<anyhow::Result<()>>> {
    let shared = Arc::clone(shared);
    let log_path = log_path.to_path_buf();
    let name = match stream {
        Stream::Stdout => "exec-stdout",
        Stream::Stderr => "exec-stderr",
    };
    thread::Builder::new()
        .name(name.into())
        .spawn(move || pump(pipe, log, &log_path, stream, tx, &shared))
        .context("cannot start a thread to read the output")
}

fn pump(
    pipe: PipeReader,
    mut log: LogWriter,
    log_path: &Path,
    stream: Stream,
    tx: SyncSender<Line>,
    shared: &Shared,
) -> anyhow::Result<()> {
    let mut buf = vec![0u8; CHUNK];
    let mut line = Vec::new();
    let mut tx = Some(tx);
    let mut log_error = None;
    let mut pipe = drain::Drain::new(pipe, &shared.gone, READERS_GRACE);
    loop {
        let n = match pipe.next(&mut buf).context("cannot read the output of the child")? {
            drain::Got::Bytes(n) => n,
            drain::Got::End => break,
            drain::Got::HeldOpen => {
                shared.held_open.store(true, Ordering::Relaxed);
                break;
            }
        };
        let chunk = &buf[..n];
        if shared.pass_through {
            crate::ui::pass_through(stream, chunk);
        }
        // Unbuffered: each chunk (each complete line, when redacting) is in the file before
        // the next read. After a write error the pipe is still drained, so the child never
        // blocks.
        if log_error.is_none() {
            log_error = log.write(chunk, stream, shared).err();
        }
        let mut rest = chunk;
        while let Some(i) = memchr::memchr(b'\n', rest) {
            append_cut(&mut line, &rest[..i]);
            send_line(&mut tx, shared, stream, &line);
            line.clear();
            rest = &rest[i + 1..];
        }
        append_cut(&mut line, rest);
    }
    if !line.is_empty() {
        send_line(&mut tx, shared, stream, &line);
    }
    if log_error.is_none() {
        log_error = log.finish(stream, shared).err();
    }
    match log_error {
        Some(e) => Err(e).with_context(|| format!("cannot write the log `{}`", log_path.display())),
        None => Ok(()),
    }
}

/// A log file, written as the bytes come, or a whole line at a time with each line redacted;
/// capped ([`CappedLog`]) after the redaction.
struct LogWriter {
    file: SharedLog,
    redact: bool,
    /// With `redact`: the start of a line whose newline has not come yet.
    held: Vec<u8>,
    /// With `redact`: the PEM block the lines are in, if any.
    lines: crate::redact::Lines,
}

impl LogWriter {
    fn new(file: SharedLog, redact: bool) -> LogWriter {
        LogWriter { file, redact, held: Vec::new(), lines: crate::redact::Lines::new() }
    }

    fn write(&mut self, chunk: &[u8], stream: Stream, shared: &Shared) -> io::Result<()> {
        if !self.redact {
            return lock(&self.file).write(chunk);
        }
        let mut out: Vec<u8> = Vec::with_capacity(chunk.len() + self.held.len());
        let mut rest = chunk;
        // The line the last chunk left unfinished, completed.
        if !self.held.is_empty() {
            if let Some(i) = memchr::memchr(b'\n', rest) {
                self.held.extend_from_slice(&rest[..=i]);
                push_redacted(&mut out, &self.held, &mut self.lines, stream, shared);
                self.held.clear();
                rest = &rest[i + 1..];
            }
        }
        // The complete lines: where a secret could start is searched once over all of them
        // (SIMD searches), and only the lines holding such a place are redacted line by line.
        if self.held.is_empty() {
            if let Some(last) = memchr::memrchr(b'\n', rest) {
                let lines = &rest[..=last];
                let mut marks = Vec::new();
                crate::redact::candidates(lines, &mut marks);
                let mut next = marks.iter().peekable();
                let mut start = 0;
                for end in memchr::memchr_iter(b'\n', lines).map(|i| i + 1) {
                    let mut hit = false;
                    while next.next_if(|&&m| m < end).is_some() {
                        hit = true;
                    }
                    if hit || self.lines.in_block() {
                        push_redacted(&mut out, &lines[start..end], &mut self.lines, stream, shared);
                    } else {
                        out.extend_from_slice(&lines[start..end]);
                    }
                    start = end;
                }
                rest = &rest[last + 1..];
            }
        }
        self.held.extend_from_slice(rest);
        // A line too long to hold goes out in pieces, each cut where no secret straddles.
        while self.held.len() >= REDACT_HOLD {
            let cut = crate::redact::cut_point(&self.held[..REDACT_HOLD]);
            push_redacted(&mut out, &self.held[..cut], &mut self.lines, stream, shared);
            self.held.drain(..cut);
        }
        lock(&self.file).write(&out)
    }

    /// Writes a last line without a newline.
    fn finish(&mut self, stream: Stream, shared: &Shared) -> io::Result<()> {
        if self.held.is_empty() {
            return Ok(());
        }
        let mut out = Vec::with_capacity(self.held.len());
        push_redacted(&mut out, &self.held, &mut self.lines, stream, shared);
        self.held.clear();
        lock(&self.file).write(&out)
    }
}

/// Appends `line` (with its newline, if any) to `out`, redacted. Bytes that are not UTF-8 are
/// kept as they are unless the line held a secret (then the line is written lossily).
fn push_redacted(
    out: &mut Vec<u8>,
    line: &[u8],
    lines: &mut crate::redact::Lines,
    stream: Stream,
    shared: &Shared,
) {
    let body = line.strip_suffix(b"\n").unwrap_or(line);
    let text = String::from_utf8_lossy(body);
    match lines.line(&text) {
        (Cow::Borrowed(_), _) => out.extend_from_slice(line),
        (Cow::Owned(new), labels) => {
            out.extend_from_slice(new.as_bytes());
            out.extend_from_slice(&line[body.len()..]);
            let mut counts = shared.redacted.lock().unwrap_or_else(PoisonError::into_inner);
            for label in labels {
                *counts.entry((stream, label)).or_insert(0) += 1;
            }
        }
    }
}

/// Appends what fits under [`MAX_LINE`]; the rest of a long line is skipped.
fn append_cut(line: &mut Vec<u8>, bytes: &[u8]) {
    let room = MAX_LINE - line.len();
    line.extend_from_slice(&bytes[..bytes.len().min(room)]);
}

fn send_line(tx: &mut Option<SyncSender<Line>>, shared: &Shared, stream: Stream, line: &[u8]) {
    let Some(sender) = tx else { return };
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // Counted as the receiver counts it: lossy conversion can make the text longer.
    let text = String::from_utf8_lossy(line).into_owned();
    let len = text.len();
    if shared.queued_bytes.fetch_add(len, Ordering::Relaxed) + len > QUEUE_BYTES {
        shared.queued_bytes.fetch_sub(len, Ordering::Relaxed);
        shared.dropped.fetch_add(1, Ordering::Relaxed);
        return;
    }
    match sender.try_send(Line { stream, text }) {
        Ok(()) => {}
        Err(TrySendError::Full(_)) => {
            shared.queued_bytes.fetch_sub(len, Ordering::Relaxed);
            shared.dropped.fetch_add(1, Ordering::Relaxed);
        }
        Err(TrySendError::Disconnected(_)) => {
            // The run is over; keep logging.
            shared.queued_bytes.fetch_sub(len, Ordering::Relaxed);
            *tx = None;
        }
    }
}

//! Ctrl-C, SIGTERM, SIGHUP and every other signal that asks a process to end (SIGQUIT,
//! SIGUSR1, SIGUSR2, SIGALRM: [`OTHER`]) as a value: an [`Interrupt`] handle that the runner, the
//! ladder's driver and the `collect` thread are given and ask, instead of each reading a
//! global, and which remembers what stopped the run ([`Cause`]: the first signal that came).
//! The signal handler is process-wide, so every handle made by [`Interrupt::install`] or
//! [`Interrupt::default`] sees the same flag; [`Interrupt::manual`] makes one that only
//! [`Interrupt::trigger`] sets (tests, embedding).
//!
//! The handler is installed once, at the start of the tool ([`install_handler`], through
//! `process::init`), so no signal ever finds a child of the tool unattended. Until a command
//! says it handles interrupts itself ([`Interrupt::install`]: the ladder, a container build),
//! a signal kills everything the tool started ([`super::tree::kill_all`]: doctor's probes,
//! say) and then ends the tool by the same signal, as the default action would have.
//!
//! SIGPIPE stays ignored (Rust's default): the tool's own writes to a closed pipe fail with
//! EPIPE, which `ui` handles, and `watch` must not end a job because its reader went away.
//! SIGKILL and SIGSTOP cannot be caught: the guardian (`guard.rs`) ends what a SIGKILL left.
//!
//! Must not: print or decide what an interrupt means to the ladder (the driver does).

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

use anyhow::anyhow;
use nix::libc::c_int;
use nix::sys::signal::{raise, sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

/// What asked the run to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// SIGINT: Ctrl-C at the terminal (or `kill -INT`).
    CtrlC,
    /// SIGTERM: `kill`, a batch system, `docker stop`, a CI job's cancel.
    Terminate,
    /// SIGHUP: the terminal went away.
    Hangup,
    /// [`Interrupt::trigger`], no signal.
    Asked,
    /// Another signal whose default action ends the process ([`OTHER`]: SIGQUIT, SIGUSR1,
    /// SIGUSR2, SIGALRM), handled as SIGTERM is.
    Other(Signal),
}

impl Cause {
    /// `Ctrl-C`, `SIGTERM`, `SIGHUP`, `a stop request`, `SIGUSR1`, ...
    pub fn text(self) -> &'static str {
        match self {
            Cause::CtrlC => "Ctrl-C",
            Cause::Terminate => "SIGTERM",
            Cause::Hangup => "SIGHUP",
            Cause::Asked => "a stop request",
            Cause::Other(signal) => signal.as_str(),
        }
    }

    /// The signal, for a cause that is one.
    pub fn signal(self) -> Option<Signal> {
        match self {
            Cause::CtrlC => Some(Signal::SIGINT),
            Cause::Terminate => Some(Signal::SIGTERM),
            Cause::Hangup => Some(Signal::SIGHUP),
            Cause::Asked => None,
            Cause::Other(signal) => Some(signal),
        }
    }

    /// 1 to 4 for the first four; 64 + the signal's number for [`Cause::Other`].
    fn code(self) -> u8 {
        match self {
            Cause::CtrlC => 1,
            Cause::Terminate => 2,
            Cause::Hangup => 3,
            Cause::Asked => 4,
            Cause::Other(signal) => 64 + signal as u8,
        }
    }

    fn from_code(code: u8) -> Option<Cause> {
        match code {
            1 => Some(Cause::CtrlC),
            2 => Some(Cause::Terminate),
            3 => Some(Cause::Hangup),
            4 => Some(Cause::Asked),
            n if n > 64 => Signal::try_from(c_int::from(n - 64)).ok().map(Cause::Other),
            _ => None,
        }
    }

    fn of_signal(signo: c_int) -> Cause {
        match Signal::try_from(signo) {
            Ok(Signal::SIGTERM) => Cause::Terminate,
            Ok(Signal::SIGHUP) => Cause::Hangup,
            Ok(other) if OTHER.contains(&other) => Cause::Other(other),
            // SIGINT, or a signal that came before ours was chained in (see `chain`).
            _ => Cause::CtrlC,
        }
    }
}

/// The process-wide state the signal handler sets: 0 while nothing came, else a
/// [`Cause::code`].
static SIGNALLED: OnceLock<Arc<AtomicU8>> = OnceLock::new();
static SIGNALS: AtomicU32 = AtomicU32::new(0);
static HANDLER: OnceLock<Result<(), String>> = OnceLock::new();
/// Set once a command handles interrupts itself ([`Interrupt::install`]).
static WATCHED: AtomicBool = AtomicBool::new(false);
/// Set when a signal came that no command watches: the handler is killing what the tool
/// started and will end the tool by that signal.
static DYING: AtomicBool = AtomicBool::new(false);
/// The first signal that came (its number), written by [`note`] in signal context.
static FIRST_SIGNAL: AtomicI32 = AtomicI32::new(0);
/// The signals handled, and the handlers (ctrlc's) that [`note`] passes them on to.
const HANDLED: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];
static CHAINED: [OnceLock<extern "C" fn(c_int)>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
/// The other signals whose default action ends the process and that can be caught: each
/// ends a run as SIGTERM does (its `stopped:` line, its processes ended, the bundle sealed),
/// and ends the tool by itself where no command watches. ctrlc does not handle them: [`note`]
/// is their handler, and wakes ctrlc's thread through a handler ctrlc installed.
pub const OTHER: [Signal; 4] = [Signal::SIGQUIT, Signal::SIGUSR1, Signal::SIGUSR2, Signal::SIGALRM];

fn signalled() -> Arc<AtomicU8> {
    SIGNALLED.get_or_init(|| Arc::new(AtomicU8::new(0))).clone()
}

/// Runs in signal context: only atomics and the chained handler (ctrlc's, which posts a
/// semaphore), all async-signal-safe.
extern "C" fn note(signo: c_int) {
    let _ = FIRST_SIGNAL.compare_exchange(0, signo, Ordering::SeqCst, Ordering::SeqCst);
    let chained = match HANDLED.iter().position(|s| *s as c_int == signo) {
        Some(i) => CHAINED[i].get(),
        // One of [`OTHER`]: ctrlc's handler only wakes its thread, whatever the signal.
        None => CHAINED.iter().find_map(OnceLock::get),
    };
    if let Some(next) = chained {
        next(signo);
    }
}

/// Puts [`note`] in front of the handlers ctrlc installed, so that the handler thread knows
/// which signal woke it. A signal between ctrlc's install and this one is taken for Ctrl-C.
fn chain() -> Result<(), String> {
    let ours = SigAction::new(SigHandler::Handler(note), SaFlags::SA_RESTART, SigSet::empty());
    for (i, &sig) in HANDLED.iter().enumerate() {
        // Safe: `note` is async-signal-safe (atomics and the previous handler only).
        let old = unsafe { sigaction(sig, &ours) }.map_err(|e| format!("sigaction({sig}): {e}"))?;
        match old.handler() {
            SigHandler::Handler(f) => {
                let _ = CHAINED[i].set(f);
            }
            other => {
                // Not ctrlc's: put it back, and go without knowing which signal came.
                let _ = unsafe { sigaction(sig, &SigAction::new(other, old.flags(), old.mask())) };
            }
        }
    }
    if CHAINED.iter().any(|c| c.get().is_some()) {
        for sig in OTHER {
            // Safe: as above.
            unsafe { sigaction(sig, &ours) }.map_err(|e| format!("sigaction({sig}): {e}"))?;
        }
    }
    Ok(())
}

/// Installs the handler for Ctrl-C, SIGTERM, SIGHUP and [`OTHER`], once (later calls return the first
/// result). While no command watches ([`Interrupt::install`]), a signal kills everything
/// the tool started and ends the tool by that signal; once one does, the first signal sets
/// the flag and the second kills everything at once.
pub(super) fn install_handler() -> anyhow::Result<()> {
    let installed = HANDLER.get_or_init(|| {
        let state = signalled();
        ctrlc::set_handler(move || {
            let before = SIGNALS.fetch_add(1, Ordering::SeqCst);
            let cause = match FIRST_SIGNAL.load(Ordering::SeqCst) {
                0 => Cause::CtrlC,
                signo => Cause::of_signal(signo),
            };
            let _ = state.compare_exchange(0, cause.code(), Ordering::SeqCst, Ordering::SeqCst);
            let watched = WATCHED.load(Ordering::SeqCst);
            if !watched {
                DYING.store(true, Ordering::SeqCst);
            }
            if watched && PROMPT_THREAD.load(Ordering::SeqCst) != 0 {
                // A prompt waits for a key (in another thread, so this handler stays free
                // for a second signal).
                std::thread::spawn(wake_the_prompt);
            }
            if before > 0 || !watched {
                super::tree::kill_all();
            }
            if !watched {
                die_of(cause.signal().unwrap_or(Signal::SIGINT));
            }
        })
        .map_err(|e| e.to_string())?;
        chain()
    });
    installed.clone().map_err(|e| anyhow!("cannot install the Ctrl-C handler: {e}"))
}

/// The thread (a `pthread_t`) whose prompt waits for a key ([`while_prompting`]); 0 when none.
static PROMPT_THREAD: AtomicU64 = AtomicU64::new(0);
/// The signal that interrupts the prompt's read: its handler does nothing, and is installed
/// without `SA_RESTART`, so the read fails with EINTR instead of starting again. A real-time
/// signal, which nobody sends the tool from outside (SIGUSR2, once this, is one of [`OTHER`]).
fn wake_signal() -> c_int {
    nix::libc::SIGRTMIN() + 1
}

extern "C" fn woken(_: c_int) {}

/// Runs `f`, a prompt that reads the terminal, so that a signal ends it: a Ctrl-C that the
/// terminal turns into SIGINT (the key came between two of the prompt's raw-mode reads, or
/// before the first) is otherwise absorbed by the handler, the read starts again, and the
/// prompt waits for a key for ever. While `f` runs, the handler thread interrupts its thread's
/// read ([`WAKE`], EINTR), which the prompt reports as an interruption.
pub fn while_prompting<T>(f: impl FnOnce() -> T) -> T {
    static WAKE_INSTALLED: OnceLock<bool> = OnceLock::new();
    let ready = *WAKE_INSTALLED.get_or_init(|| {
        // Safe: a zeroed `sigaction` is a valid empty one; `woken` does nothing.
        unsafe {
            let mut action: nix::libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = woken as extern "C" fn(c_int) as usize;
            nix::libc::sigemptyset(&mut action.sa_mask);
            nix::libc::sigaction(wake_signal(), &action, std::ptr::null_mut()) == 0
        }
    });
    if !ready {
        return f();
    }
    // Safe: pthread_self has no preconditions.
    PROMPT_THREAD.store(unsafe { nix::libc::pthread_self() } as u64, Ordering::SeqCst);
    struct Done;
    impl Drop for Done {
        fn drop(&mut self) {
            PROMPT_THREAD.store(0, Ordering::SeqCst);
        }
    }
    let _done = Done;
    f()
}

/// Interrupts the waiting prompt's read, again every 20 ms while it still waits (the signal
/// may come while the prompt draws, between two reads), for up to 5 s.
fn wake_the_prompt() {
    for _ in 0..250 {
        let thread = PROMPT_THREAD.load(Ordering::SeqCst);
        if thread == 0 {
            return;
        }
        // Safe: the thread is the prompt's (the main thread, which outlives the prompt); a
        // thread that has ended would have cleared PROMPT_THREAD first.
        let _ = unsafe { nix::libc::pthread_kill(thread as nix::libc::pthread_t, wake_signal()) };
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Waits for ever once a signal that no command watches is being handled: the handler ends
/// the tool by that signal, and the tool must not end first with an exit status (the main
/// thread reaching its end while the handler kills what it started).
pub(super) fn wait_if_dying() {
    while DYING.load(Ordering::SeqCst) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Ends this process by `signal`, with its default action, as if no handler had been there
/// (a shell then sees the signal, and stops a loop around the tool on Ctrl-C).
fn die_of(signal: Signal) -> ! {
    let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
    // Safe: restoring the default disposition.
    let _ = unsafe { sigaction(signal, &default) };
    let mut only = SigSet::empty();
    only.add(signal);
    let _ = only.thread_unblock();
    let _ = raise(signal);
    // Not reached: the default action of every handled signal ends the process.
    std::process::abort()
}

/// Whether the run was asked to stop, and why.
#[derive(Debug, Clone)]
pub struct Interrupt {
    state: Arc<AtomicU8>,
}

impl Default for Interrupt {
    /// The process-wide handle: set by the signal handler once it is installed.
    fn default() -> Interrupt {
        Interrupt { state: signalled() }
    }
}

impl Interrupt {
    /// Says that the caller handles interrupts itself (it asks [`Interrupt::is_set`] and
    /// ends cleanly), installing the handler if the tool's start did not (a library caller),
    /// and returns the process-wide handle. A run in progress then ends its whole process
    /// tree within about 50 ms (SIGTERM, then SIGKILL after the runner's grace) and ends as
    /// interrupted; later runs start nothing. A second signal kills everything at once
    /// ([`super::tree::kill_all`]), for when the caller is busy inside a line callback
    /// (cuda-gdb attached to a spinning target).
    pub fn install() -> anyhow::Result<Interrupt> {
        install_handler()?;
        WATCHED.store(true, Ordering::SeqCst);
        Ok(Interrupt::default())
    }

    /// A handle no signal sets: only [`Interrupt::trigger`] does.
    pub fn manual() -> Interrupt {
        Interrupt { state: Arc::new(AtomicU8::new(0)) }
    }

    /// Asks every holder of this handle to stop ([`Cause::Asked`], unless a signal came first).
    pub fn trigger(&self) {
        let _ = self.state.compare_exchange(0, Cause::Asked.code(), Ordering::SeqCst, Ordering::SeqCst);
    }

    pub fn is_set(&self) -> bool {
        self.state.load(Ordering::SeqCst) != 0
    }

    /// What stopped the run, once it was asked to stop.
    pub fn cause(&self) -> Option<Cause> {
        Cause::from_code(self.state.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_handle_is_its_own() {
        let a = Interrupt::manual();
        let b = a.clone();
        assert!(!b.is_set());
        assert_eq!(b.cause(), None);
        a.trigger();
        assert!(b.is_set());
        assert_eq!(b.cause(), Some(Cause::Asked));
        assert!(!Interrupt::manual().is_set());
    }

    #[test]
    fn causes_name_their_signal() {
        assert_eq!(Cause::of_signal(Signal::SIGTERM as c_int), Cause::Terminate);
        assert_eq!(Cause::of_signal(Signal::SIGHUP as c_int), Cause::Hangup);
        assert_eq!(Cause::of_signal(Signal::SIGINT as c_int), Cause::CtrlC);
        assert_eq!(Cause::Terminate.text(), "SIGTERM");
        assert_eq!(Cause::CtrlC.text(), "Ctrl-C");
        for c in [Cause::CtrlC, Cause::Terminate, Cause::Hangup, Cause::Asked] {
            assert_eq!(Cause::from_code(c.code()), Some(c));
        }
        assert_eq!(Cause::Asked.signal(), None);
        for sig in OTHER {
            let c = Cause::of_signal(sig as c_int);
            assert_eq!(c, Cause::Other(sig));
            assert_eq!(Cause::from_code(c.code()), Some(c));
            assert_eq!(c.signal(), Some(sig));
            assert_eq!(c.text(), sig.as_str());
        }
    }
}

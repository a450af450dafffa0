//! How a process ended, and the roles a process plays in a rung: values the process runner
//! returns, the policy reads and the manifest records.
//!
//! Must not: run or print anything.

use serde::{Deserialize, Serialize};

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Exit {
    /// The child exited with this code.
    Code(i32),
    /// The child died of this signal (6 is SIGABRT, as after a GPU coredump).
    Signal(i32),
    /// Killed when the run's time limit ran out.
    TimedOut,
    /// Killed because the callback returned the caller's request (`Control::Stop`).
    Stopped,
    /// Killed because of Ctrl-C or SIGTERM.
    Interrupted,
    /// Could not be started (a short command: its output says why; the runner of the
    /// rungs returns an error instead).
    NotStarted,
}

impl Exit {
    /// `exit 1`, `signal 6`, `timed out`, ...
    pub fn text(self) -> String {
        match self {
            Exit::Code(c) => format!("exit {c}"),
            Exit::Signal(s) => format!("signal {s}"),
            Exit::TimedOut => "timed out".into(),
            Exit::Stopped => "killed by the ladder".into(),
            Exit::Interrupted => "interrupted".into(),
            Exit::NotStarted => "not started".into(),
        }
    }

    pub fn success(self) -> bool {
        self == Exit::Code(0)
    }
}

/// What one process of a rung is, in the manifest's `role`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// The program being debugged.
    Target,
    /// The recipe's build (plain, or the rebuild with line info).
    Build,
    /// `cuobjdump -elf` checking line info.
    Cuobjdump,
    /// `cuda-gdb` on a dump or attached.
    CudaGdb,
    /// A `collect:` command or the environment snapshot.
    Collect,
    /// `py-spy dump` on a hung Python process.
    PySpy,
    /// `gdb -p PID` (`thread apply all bt`): a running native process's host stacks.
    Gdb,
    /// `python3 -c ...` converting an NCCL flight-recorder dump (a pickle) to JSON.
    Python,
    /// `objdump -d -l` of the target's binary: where its host code launches each kernel.
    Objdump,
    /// The reproducer the repro rung wrote (`repro/repro.py`), run to check it faults.
    Reproducer,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Target => "target",
            Role::Build => "build",
            Role::Cuobjdump => "cuobjdump",
            Role::CudaGdb => "cuda-gdb",
            Role::Collect => "collect",
            Role::PySpy => "py-spy",
            Role::Gdb => "gdb",
            Role::Python => "python3",
            Role::Objdump => "objdump",
            Role::Reproducer => "reproducer",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which pipe a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stream {
    Stdout,
    Stderr,
}

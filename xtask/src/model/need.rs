//! What a rung needs of the machine, as doctor checks it. Each rung id says which it needs
//! ([`crate::model::RungId::needs`]); doctor tags every check with one, so "which rungs
//! does this missing tool stop" is derived, never listed twice.
//!
//! Must not: check anything (that is doctor).

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Need {
    /// A usable GPU and driver: every rung.
    Gpu,
    /// The container runtime, the image and its GPU plumbing, when the run uses one: every rung.
    Container,
    Nvcc,
    Cuobjdump,
    CudaGdb,
    ComputeSanitizer,
    /// `libcudadebugger.so.1`, which cuda-gdb needs to attach to a live process.
    DebuggerBackend,
    /// Permission to ptrace the target.
    Ptrace,
    /// A writable `TMPDIR`, where the CUDA debugger keeps its pipes.
    Tmpdir,
    /// Room for coredumps, and a core pattern that does not swallow them.
    CoredumpSpace,
    /// `py-spy`, for the host stacks of a hung Python process (optional: the hang rung goes
    /// on without them).
    PySpy,
}

impl Need {
    /// Needed by every rung, whatever it is.
    pub fn universal(self) -> bool {
        matches!(self, Need::Gpu | Need::Container)
    }
}

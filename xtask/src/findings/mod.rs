//! Findings: what CUDA's debugging tools printed, as typed data.
//!
//! Pure code only: the parsers here read text (or bytes) and return values. They never
//! spawn processes, never touch the terminal and never write files. Every parser is fed
//! one line at a time by [`scan`], so a gigabyte log is read in bounded memory; the only
//! parser that does not work on lines is [`memcheck_xml`], which pulls XML events.

/// In tests: a file of the project's own recordings, relative to tests/fixtures (`h200/`,
/// recorded on an H200 by tests/gpu/record.sh; `bundles/`, written by `debug-ima`), for every
/// parser's tests below.
#[cfg(test)]
macro_rules! recording {
    ($f:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/", $f))
    };
}

/// In tests: a reference excerpt kept until the project records the same output itself
/// (tests/fixtures/transcripts/README.md).
#[cfg(test)]
macro_rules! transcript {
    ($f:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/transcripts/", $f))
    };
}

pub mod coredump;
pub mod cubin;
pub mod cudagdb;
pub mod elf;
pub mod faulthandler;
pub mod hazards;
pub mod host;
pub mod hoststack;
pub mod launch_log;
pub mod launch_sites;
pub mod memcheck;
pub mod memcheck_xml;
pub mod names;
pub mod nccl;
pub mod origin;
pub mod provenance;
pub mod pyspy;
pub mod quick;
pub mod racecheck;
pub mod ranks;
pub mod render;
pub mod repro;
pub mod scan;
pub mod verdict;
pub mod verdict_hang;
pub mod verdict_kinds;
pub mod verdict_model;
pub mod verdict_sites;
pub mod waits;
pub mod yaml_bounds;

#[cfg(test)]
pub(crate) mod fuzz;

use serde::{Serialize, Serializer};

/// A CUDA `dim3`-like triple: block index, thread index, grid or block shape.
pub type Dim3 = [u32; 3];

/// Which tool wrote the lines a finding came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tool {
    /// The program itself: CUDA runtime errors, Python tracebacks and faulthandler stacks,
    /// PyTorch's assert line.
    Host,
    /// The CUDA driver's coredump progress stream (`CUDA_COREDUMP_SHOW_PROGRESS=1`).
    Coredump,
    /// cuda-gdb, on a coredump (`target cudacore`) or attached to a live process.
    CudaGdb,
    /// The `CUDA_DEVICE_WAITS_ON_EXCEPTION` message.
    Waits,
    /// compute-sanitizer's text output.
    Memcheck,
    /// compute-sanitizer's `--xml --save` report.
    MemcheckXml,
    /// `py-spy dump`: Python (and, with `--native`, native) stacks of a live process.
    PySpy,
    /// PyTorch's NCCL flight recorder dump, as JSON.
    NcclFlightRecorder,
    /// The static launch sites the ladder read from the binary's disassembly (objdump).
    Objdump,
    /// debug-ima's launch recorder in a Python target (`launches.log`, [`launch_log`]).
    LaunchRecorder,
}

impl Tool {
    pub fn as_str(self) -> &'static str {
        match self {
            Tool::Host => "host",
            Tool::Coredump => "coredump",
            Tool::CudaGdb => "cuda-gdb",
            Tool::Waits => "waits",
            Tool::Memcheck => "memcheck",
            Tool::MemcheckXml => "memcheck-xml",
            Tool::PySpy => "py-spy",
            Tool::NcclFlightRecorder => "nccl-flight-recorder",
            Tool::Objdump => "objdump",
            Tool::LaunchRecorder => "launch-recorder",
        }
    }
}

/// The kind of device error, normalised across tools.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorClass {
    /// `an illegal memory access was encountered`, `Warp Illegal Address`, `CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS`.
    IllegalAddress,
    /// `Warp Out-of-range Address`, `CUDBG_EXCEPTION_WARP_OUT_OF_RANGE_ADDRESS`: an address
    /// outside its memory space's window (shared or local memory past its size, most often).
    OutOfRangeAddress,
    /// `Warp Invalid Address Space`, `operation not supported on global/shared address space`
    /// (`cudaErrorInvalidAddressSpace`): a generic address in no memory space's window, or an
    /// instruction on a space it does not work in. A wild pointer lands here or in
    /// [`ErrorClass::IllegalAddress`] depending on where it points.
    InvalidAddressSpace,
    /// `misaligned address`, `Warp Misaligned Address`.
    MisalignedAddress,
    /// `device-side assert triggered`, `Assertion failed.`, `CUDBG_EXCEPTION_WARP_ASSERT`.
    DeviceAssert,
    /// `unspecified launch failure` (often what a fault becomes under compute-sanitizer).
    LaunchFailure,
    /// `an illegal instruction was encountered`, `Warp Illegal Instruction`.
    IllegalInstruction,
    /// compute-sanitizer's `Invalid __global__ read/write ...`: an out-of-bounds or
    /// otherwise invalid access, whether or not the hardware faulted.
    InvalidAccess,
    /// compute-sanitizer's misaligned-access record.
    MisalignedAccess,
    /// initcheck's `Uninitialized __global__ memory read`: a read of memory never written.
    UninitializedRead,
    /// The program never returned: a GPU dump taken while kernels were running, with no
    /// exception (a user-triggered coredump of a hang). Never from a message.
    Hang,
    /// A kernel executed `__trap()` (or `asm("trap;")`): cuda-gdb's `signal SIGTRAP`,
    /// compute-sanitizer's `Trace/breakpoint trap`; the host sees `unspecified launch failure`.
    Trap,
    /// A data race: racecheck's `Race reported between …` or a RAW/WAR/WAW hazard.
    Race,
    /// synccheck's `Barrier error detected`: a divergent `__syncthreads()`, an invalid
    /// `__syncwarp()` mask.
    BarrierError,
    /// `Warp Stack Overflow`, compute-sanitizer's `stack overflow`: deep recursion or large
    /// local arrays.
    StackOverflow,
    /// Anything else, as printed (normalised to lower case).
    Other(String),
}

impl ErrorClass {
    pub fn as_str(&self) -> &str {
        match self {
            ErrorClass::IllegalAddress => "illegal-address",
            ErrorClass::OutOfRangeAddress => "out-of-range-address",
            ErrorClass::InvalidAddressSpace => "invalid-address-space",
            ErrorClass::MisalignedAddress => "misaligned-address",
            ErrorClass::DeviceAssert => "device-assert",
            ErrorClass::LaunchFailure => "launch-failure",
            ErrorClass::IllegalInstruction => "illegal-instruction",
            ErrorClass::InvalidAccess => "invalid-access",
            ErrorClass::MisalignedAccess => "misaligned-access",
            ErrorClass::UninitializedRead => "uninitialized-read",
            ErrorClass::Hang => "hang",
            ErrorClass::Trap => "trap",
            ErrorClass::Race => "race",
            ErrorClass::BarrierError => "barrier-error",
            ErrorClass::StackOverflow => "stack-overflow",
            ErrorClass::Other(s) => s,
        }
    }

    /// What the class means and what to check first, in one line for the verdict
    /// (docs/analyze.md, "Error classes", has the glossary); `None` for an unknown class.
    pub fn meaning(&self) -> Option<&'static str> {
        Some(match self {
            ErrorClass::IllegalAddress => {
                "an address no allocation covers: check the index or offset against the buffer's size"
            }
            ErrorClass::OutOfRangeAddress => {
                "an address outside its memory space (shared or local past its size): check shared-array indices"
            }
            ErrorClass::InvalidAddressSpace => {
                "an address in no memory space (a wild or garbage pointer, a huge offset or stride): check the \
                 index arithmetic and the pointer's origin"
            }
            ErrorClass::MisalignedAddress | ErrorClass::MisalignedAccess => {
                "an access not aligned to its size: check casts of byte pointers to wider types and vector loads"
            }
            ErrorClass::DeviceAssert => "a device-side assert failed: its condition and message name the broken invariant",
            ErrorClass::LaunchFailure => {
                "the kernel died without a more precise reason: the dump or memcheck names what it did"
            }
            ErrorClass::IllegalInstruction => {
                "an instruction the GPU refused: a wrong architecture build, a corrupt function pointer or stack"
            }
            ErrorClass::InvalidAccess => "memcheck saw an access outside any allocation: check the index against the size",
            ErrorClass::UninitializedRead => "memory read before anything wrote it: check the copy or kernel meant to fill it",
            ErrorClass::Hang => "kernels were still running: check the spinning line's loop condition and who should release it",
            ErrorClass::Trap => "the kernel executed a trap (`__trap()`, a release-mode check): check the condition before it",
            ErrorClass::Race => {
                "two threads touched the same memory without ordering: add the missing barrier (`__syncthreads()`, \
                 `__syncwarp()`) between the two lines"
            }
            ErrorClass::BarrierError => {
                "a barrier not every thread reaches, or a `__syncwarp` mask without the calling lane: check the branch around it"
            }
            ErrorClass::StackOverflow => "the per-thread stack ran out: check recursion and large local arrays",
            ErrorClass::Other(_) => return None,
        })
    }

    /// Classifies an error message from any tool (`an illegal memory access was
    /// encountered`, `Warp Illegal Address`, `CUDBG_EXCEPTION_WARP_MISALIGNED_ADDRESS`, ...).
    pub fn from_message(msg: &str) -> ErrorClass {
        let m = msg.to_ascii_lowercase();
        if m.contains("out-of-range address")
            || m.contains("out of range address")
            || m.contains("out_of_range_address")
        {
            ErrorClass::OutOfRangeAddress
        } else if m.contains("illegal memory access")
            || m.contains("illegal address")
            || m.contains("illegal_address")
        {
            ErrorClass::IllegalAddress
        } else if m.contains("invalid address space")
            || m.contains("invalid_address_space")
            || m.contains("not supported on global/shared address space")
        {
            ErrorClass::InvalidAddressSpace
        } else if m.contains("uninitialized") && m.contains("read") {
            ErrorClass::UninitializedRead
        } else if m.contains("misaligned") {
            ErrorClass::MisalignedAddress
        } else if m.contains("assert") {
            ErrorClass::DeviceAssert
        } else if m.contains("unspecified launch failure") || m.contains("launchfailure") {
            ErrorClass::LaunchFailure
        } else if m.contains("illegal instruction") || m.contains("illegal_instruction") {
            ErrorClass::IllegalInstruction
        } else if m.contains("sigtrap") || m.contains("breakpoint trap") || m.contains("trap instruction") {
            ErrorClass::Trap
        } else if m.contains("stack overflow") || m.contains("stack_overflow") {
            ErrorClass::StackOverflow
        } else if m.contains("barrier error") {
            ErrorClass::BarrierError
        } else if m.contains("race reported") || m.contains("race condition") {
            ErrorClass::Race
        } else {
            ErrorClass::Other(m.trim().to_string())
        }
    }

    /// True for errors that mean a kernel faulted (as opposed to, say, `invalid argument`, or
    /// a hang, a race or a barrier error, where nothing faulted).
    pub fn is_device_fault(&self) -> bool {
        !matches!(self, ErrorClass::Other(_) | ErrorClass::Hang | ErrorClass::Race | ErrorClass::BarrierError)
    }
}

impl Serialize for ErrorClass {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A source position as a tool printed it (`ima_far.cu:13`, `/src/x.py:21`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct SourceLoc {
    pub file: String,
    pub line: u32,
}

impl std::fmt::Display for SourceLoc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// One frame of a device or host stack.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Frame {
    /// Function name, demangled where it was mangled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Shared object or executable (`libtorch_cuda.so`, `f_li`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// A Python frame (from a traceback or a sanitizer `Host Frame: f in x.py:12`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub python: bool,
}

/// One place in the host code that launches a kernel.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct StaticLaunch {
    /// The kernel, demangled (`scatter_tail(float*, float const*, int, long long)`).
    pub kernel: String,
    /// The function, file and line of the reference, and the binary (`module`).
    #[serde(flatten)]
    pub site: Frame,
    /// The instruction's address where no line is known (then two references are two
    /// places); 0 with a line.
    #[serde(skip_serializing_if = "is_zero")]
    pub address: u64,
}

/// A place the program launched a Python-launched (Triton) kernel from, as the launch
/// recorder saw it in the run ([`launch_log`]): once per distinct place.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct RecordedLaunch {
    pub pid: u32,
    /// The kernel's name (the `@triton.jit` function's, which is the device kernel's).
    pub kernel: String,
    /// The first frame outside Triton and PyTorch: the user's launching line.
    pub site: Frame,
    /// Where the CUDA graph capture this launch was recorded into began, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture: Option<Frame>,
    /// The user's frames, innermost first (up to six), for context.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<Frame>,
}

/// Where a process began capturing a CUDA graph (`torch.cuda.graph`), as the launch recorder
/// saw it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct RecordedCapture {
    pub pid: u32,
    pub site: Frame,
}

/// Where a bad address lies relative to the nearest allocation (compute-sanitizer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Nearest {
    /// Distance in bytes to the allocation.
    pub distance: u64,
    /// True when the access is before the allocation, false when after it.
    pub before: bool,
    /// The allocation's start: a hex string in JSON (`"0x7f..."`), like every address.
    #[serde(serialize_with = "ser_hex")]
    pub allocation: u64,
    pub allocation_size: u64,
}

/// The memory access behind a fault, where a tool said what it was.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Access {
    /// `read`, `write`, `atomic`, ... as printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `__global__`, `__shared__`, `__local__`, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub space: Option<String>,
    /// Access size in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_hex_opt")]
    pub address: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nearest: Option<Nearest>,
}

/// The other side of a race (racecheck names two accesses: the fault's `location` and
/// `access.kind` are the first, this the second).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RaceSide {
    /// `Write`, `Read`, as printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The second access's line.
    pub at: SourceLoc,
    /// The thread of the second access (the hazard report), where printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<Dim3>,
}

/// A device-side fault located (at least) to a kernel: from a coredump, cuda-gdb,
/// compute-sanitizer or PyTorch's device assert line. Grouped sanitizer records are one
/// `Fault` with `count > 1` and the ranges of blocks and threads seen.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Fault {
    pub tool: Option<Tool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorClass>,
    /// The kernel, demangled (`scatter_far(int*, int)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// The mangled name, where the tool printed one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mangled: Option<String>,
    /// The user's source line: for an inlined device function, the outermost
    /// `inlined from` position; otherwise where the tool said the fault was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<SourceLoc>,
    /// For faults inside inlined code: the innermost position first, then each
    /// `inlined from` position, ending with `location`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inlined: Vec<SourceLoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<Dim3>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<Dim3>,
    /// Launch shape, where printed (`<<<(4,1,1),(256,1,1)>>>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grid: Option<Dim3>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_dim: Option<Dim3>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sm: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warp: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lane: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_hex_opt")]
    pub pc: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access: Option<Access>,
    /// How many tool records this finding stands for (1 unless grouped).
    pub count: u64,
    /// Smallest and largest block and thread index among the grouped records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_range: Option<[Dim3; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_range: Option<[Dim3; 2]>,
    /// Device stack (cuda-gdb `bt`, coredump `#0 ...` lines), innermost first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub frames: Vec<Frame>,
    /// Host stack at launch time (compute-sanitizer), innermost first; Python frames included.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub host_frames: Vec<Frame>,
    /// Kernel arguments and locals as cuda-gdb printed them (`i = 640`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<(String, String)>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub locals: Vec<(String, String)>,
    /// Process that faulted (coredump file name, attach PID), where known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The rank of a distributed job (`[rank1]:` prefix), where known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// Free text a tool added: the assertion, `warp has exited`, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// For a race (racecheck): the second access of the pair ([`racecheck`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_side: Option<RaceSide>,
}

/// What the program itself reported on the host: the (misleading) symptom.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Symptom {
    pub error: Option<ErrorClass>,
    /// The error text as printed (`an illegal memory access was encountered`).
    pub message: String,
    /// The `file:line` the program reported the error from, where it printed one
    /// (`CUDA error at ima_far.cu:32: ...`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reported_at: Option<SourceLoc>,
    /// The call that returned the error (`cudaMemcpy(h, d, ...)`), where printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// Python exception type (`torch.AcceleratorError`, `RuntimeError`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exception: Option<String>,
    /// Python traceback frames, outermost first as Python prints them; or the frames of
    /// faulthandler's stack at a fatal error (`Fatal Python error: ...` as the message, no
    /// exception: [`faulthandler::is_stack`]), in the same order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub python_frames: Vec<Frame>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// 1-based line of the log where the symptom was seen.
    pub log_line: u64,
}

impl Symptom {
    /// The innermost traceback frame that is the user's code rather than a library's.
    pub fn user_frame(&self) -> Option<&Frame> {
        // Outermost first; a function torch.compile compiled (entered through Dynamo, shown at
        // its `def`) is not the launch: its caller is.
        let fr = &self.python_frames;
        let user = |f: Option<&str>| f.is_some_and(|p| !names::is_host_machinery(p));
        (0..fr.len())
            .rev()
            .find(|&i| {
                user(fr[i].file.as_deref())
                    && !names::entered_compiled(fr[..i].iter().rev().map(|f| f.file.as_deref()), user)
            })
            .map(|i| &fr[i])
            .or(self.python_frames.last())
    }
}

/// One host thread's stack as a debugger printed it (`thread apply all bt` on a CPU core or
/// in an attached process), innermost frame first. Only threads inside a CUDA API call are
/// kept: the one in a launch names the host line that launched the kernel.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HostStack {
    /// gdb's thread number (`Thread 2 (...)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<u32>,
    /// The thread's LWP (its Linux thread id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lwp: Option<u32>,
    /// The innermost CUDA launch API on the stack (`cuLaunchKernel`, `cudaGraphLaunch`, ...),
    /// when the thread was inside a launch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_api: Option<String>,
    /// The innermost CUDA API of any kind (`cudaMemcpy`, `cuStreamSynchronize`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    pub frames: Vec<Frame>,
    /// 1-based line of the log where the thread's stack starts.
    pub log_line: u64,
}

/// One row of cuda-gdb's `info cuda threads`, or several rows of one kernel at the same PC
/// and line merged: `count` threads from `block_range[0]`/`thread_range[0]` up to
/// `block_range[1]`/`thread_range[1]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadGroup {
    /// The `Kernel N` header the rows were under (cuda-gdb's kernel id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_id: Option<u32>,
    /// Threads in the group (the `Count` column, summed).
    pub count: u64,
    /// Rows of the table merged into this group.
    pub rows: u64,
    #[serde(serialize_with = "ser_hex")]
    pub pc: u64,
    /// `Filename` and `Line` as printed (a full path, or a CUDA header's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Smallest and largest block, and smallest and largest thread index, of the rows.
    pub block_range: [Dim3; 2],
    pub thread_range: [Dim3; 2],
    /// The row of cuda-gdb's focus (`*`) is in this group.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub focus: bool,
}

/// One row of `info cuda warps` (cuda-gdb 13.0 lists only the focused SM).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WarpRow {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sm: Option<u32>,
    pub warp: u32,
    #[serde(serialize_with = "ser_hex")]
    pub active_mask: u64,
    #[serde(serialize_with = "ser_hex")]
    pub divergent_mask: u64,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_hex_opt")]
    pub pc: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_id: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<Dim3>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<Dim3>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub focus: bool,
}

/// A row of `info cuda kernels`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct KernelInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<u32>,
    /// `Active`, ... as printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grid: Option<Dim3>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_dim: Option<Dim3>,
    /// The `Invocation` column: `consume()`, `scatter_far(out=0x7f.., n=1024)`.
    pub invocation: String,
    /// cuda-gdb's focus is in this kernel (`*`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub focus: bool,
}

/// What cuda-gdb showed of a GPU dump (or a live process) with no exception: the device as
/// it was when the dump was triggered, which for a user-triggered dump of a program that
/// never returned is a snapshot of the hang.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DeviceSnapshot {
    /// The process (`core.<host>.<pid>.<time>`, `-p PID`), where known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// The dump read (`Opening GPU coredump: PATH`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub core: Option<String>,
    /// The focus thread's kernel, as `bt` printed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mangled: Option<String>,
    /// The focus thread's position: `bt`'s frame 0, innermost first, then each `inlined from`
    /// position (`hang_flag.cu:8`, `hang_flag.cu:15`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub chain: Vec<SourceLoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<Dim3>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<Dim3>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sm: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warp: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_hex_opt")]
    pub pc: Option<u64>,
    /// The instruction at the focus PC (`x/i $pc`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instruction: Option<String>,
    /// The focus frame's source line as cuda-gdb printed it after `bt` (`__syncthreads();`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_text: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kernels: Vec<KernelInfo>,
    /// `info cuda threads`, rows of one kernel, PC and line merged, in the order first seen.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<ThreadGroup>,
    /// Rows of `info cuda threads` not kept (past the cap), and the threads they counted.
    #[serde(skip_serializing_if = "is_zero")]
    pub threads_dropped: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warps: Vec<WarpRow>,
    /// cuda-gdb said `No CUDA threads.` (or `No CUDA kernels.`): no kernel was running.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub no_threads: bool,
    /// 1-based line of the log where the session starts.
    pub log_line: u64,
}

impl DeviceSnapshot {
    /// Threads the table counted (kept groups and dropped rows).
    pub fn thread_count(&self) -> u64 {
        self.threads.iter().map(|g| g.count).sum::<u64>().saturating_add(self.threads_dropped)
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One Python thread of a `py-spy dump`, innermost frame first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PyThread {
    /// The thread id as printed (`Thread 845 (active)`, or hex `Thread 0x7f..`).
    pub id: u64,
    /// The name in quotes (`MainThread`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `active` (running, or in native code) or `idle` (waiting), as py-spy judged it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Python frames (`main (hang.py:26)`, `python: true`) and, with `--native`, native ones
    /// (`cudaDeviceSynchronize (libcudart.so.13)`, `0x7fb7.. (libcuda.so..)`), innermost first.
    pub frames: Vec<Frame>,
    /// Frames past the cap that were not kept.
    #[serde(skip_serializing_if = "is_zero")]
    pub frames_dropped: u64,
}

/// One process of a `py-spy dump`: `Process PID: CMDLINE`, `Python vX.Y.Z (PATH)`, its threads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PyProcess {
    pub pid: u32,
    pub command: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    pub threads: Vec<PyThread>,
    /// 1-based line of the log where the process starts.
    pub log_line: u64,
}

/// A collective of the NCCL flight recorder that was enqueued and not completed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NcclCollective {
    /// `profiling_name` (`nccl:all_reduce`).
    pub op: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p2p_seq: Option<u64>,
    /// `scheduled`, `started`, ... as recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub input_sizes: Vec<Vec<u64>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub output_sizes: Vec<Vec<u64>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dtypes: Vec<String>,
    /// The innermost frame of the user's code that issued it (outside torch and the stdlib).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issued_at: Option<Frame>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// One process group of a flight recorder dump: the last collective enqueued, started and
/// completed (`pg_status`), and the collectives enqueued but not completed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NcclGroup {
    pub id: String,
    /// `desc` of `pg_config` (`default_pg`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub desc: Option<String>,
    /// `ranks` of `pg_config`, as recorded (`[0, 1]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranks: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_enqueued: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_started: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_completed: Option<i64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<NcclCollective>,
}

impl NcclGroup {
    /// Collectives enqueued and not completed: by the entries, else by `pg_status`.
    pub fn incomplete(&self) -> u64 {
        let by_status = match (self.last_enqueued, self.last_completed) {
            (Some(e), Some(c)) if e > c => (e - c.max(0)) as u64,
            _ => 0,
        };
        by_status.max(self.pending.len() as u64)
    }
}

/// A NCCL flight recorder dump (`TORCH_FR_DUMP_TEMP_FILE`, converted to JSON).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NcclTrace {
    /// The rank: from the file name (`nccl-trace-<rank>.json`), else the entries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub groups: Vec<NcclGroup>,
    /// Entries in the dump.
    pub entries: u64,
}

/// `... You can now attach a debugger to the application (PID N) for inspection.`
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WaitNotice {
    pub host: String,
    pub pid: u32,
}

/// What a line said about a rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RankSignal {
    /// The coredump progress stream's `Detected an exception of type X` (its timestamp kept).
    DeviceException,
    /// `Process group watchdog thread terminated with exception: X` (X not a timeout).
    WatchdogError,
    /// `Watchdog caught collective operation timeout: WorkNCCL(...)`.
    Timeout,
    /// ProcessGroupNCCL `taking the entire process down`.
    Terminate,
    /// One entry of torchrun's failure summary (`rank : 0 (local_rank: 0)`, `exitcode`, `host`).
    Exit,
    /// `RANK=N` (or `LOCAL_RANK`, `SLURM_PROCID`) in a printed environment: the file's rank.
    Env,
}

/// One thing a line said about a rank, for the triage across ranks ([`ranks`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RankNote {
    pub rank: Option<u32>,
    pub signal: RankSignal,
    /// The exception, the error, the collective, the exit as printed.
    pub text: String,
    pub pid: Option<u32>,
    pub host: Option<String>,
    /// Nanoseconds since midnight, from the line's `HH:MM:SS.frac` stamp.
    pub time: Option<u64>,
    /// torchrun's summary put this entry under `Root Cause (first observed failure)`.
    pub root_cause: bool,
    pub log_line: u64,
}

/// A coredump the driver said it wrote (`Writing ELF file to PATH`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CoredumpFile {
    pub path: String,
    /// The PID in a `%h.%p.%t` name, where the name has that shape.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

/// compute-sanitizer's `Program hit cudaErrorX (error N) due to "..." on CUDA API call to f.`,
/// grouped by (error, api).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApiError {
    pub api: String,
    pub error: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<u32>,
    pub message: String,
    pub count: u64,
}

/// Everything read from one input file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Evidence {
    /// The file, as given.
    pub path: String,
    /// A short name for where it came from: the rung (`coredump`) for a file inside a
    /// bundle's `rungs/NN-<rung>/`, otherwise the file name.
    pub origin: String,
    /// The tools whose output was recognised in the file, sorted.
    pub tools: Vec<Tool>,
    pub symptoms: Vec<Symptom>,
    pub faults: Vec<Fault>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waits: Vec<WaitNotice>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub coredumps: Vec<CoredumpFile>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub api_errors: Vec<ApiError>,
    /// Host threads inside a CUDA call, from a debugger's `thread apply all bt`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub host_stacks: Vec<HostStack>,
    /// GPU dumps that cuda-gdb read with no exception in them: snapshots of a hang.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub snapshots: Vec<DeviceSnapshot>,
    /// Python processes of a `py-spy dump`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub python: Vec<PyProcess>,
    /// A NCCL flight recorder dump.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nccl: Option<NcclTrace>,
    /// Where the binary's host code launches each kernel ([`launch_sites`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub static_launches: Vec<StaticLaunch>,
    /// Where the run launched its Triton kernels from, by the launch recorder ([`launch_log`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub recorded_launches: Vec<RecordedLaunch>,
    /// Where the run began its CUDA graph captures, by the launch recorder.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub recorded_captures: Vec<RecordedCapture>,
    /// The processes whose Triton launches the recorder saw (it hooked Triton there): a
    /// kernel of theirs missing from `recorded_launches` was not launched through Triton.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub recorder_pids: Vec<u32>,
    /// Where the run's kernels came from (torch.compile, a JIT build, NVRTC), by the launch
    /// recorder ([`provenance`]).
    #[serde(skip_serializing_if = "provenance::Records::is_empty")]
    pub provenance: provenance::Records,
    /// What the lines said about the ranks of a distributed job (launcher summaries, NCCL's
    /// watchdog, dump timestamps), for the triage across ranks ([`ranks`]). Not serialised.
    #[serde(skip)]
    pub rank_notes: Vec<RankNote>,
    /// The run that wrote this input had `CUDA_LAUNCH_BLOCKING=1`: every launch was
    /// synchronous, so a host stack or traceback in it points at the launch itself. Set by
    /// the reader of a bundle (from the rung's command), not by the parsers.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub launch_blocking: bool,
    /// The CUDA driver said it was writing a GPU coredump (`Starting GPU coredump generation`,
    /// with or without its progress stream): a process of this input faulted on the device, so
    /// Python's faulthandler stack at the abort after it is that fault's ([`faulthandler`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub gpu_dump_started: bool,
    /// The run of the program this input belongs to, where the reader knows it (the bundle
    /// the file is in): a host frame is joined to a kernel only from the same run, or from an
    /// input that names the kernel or the program's own sources. Set by the reader, not the
    /// parsers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// compute-sanitizer's `ERROR SUMMARY: N errors`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_summary: Option<u64>,
    /// cuda-gdb hit `A fatal error internal to GDB has been detected`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub debugger_crashed: bool,
    /// ... while opening the GPU dump (`target cudacore`), before any later command ran: the
    /// same command again crashes the same way, so the ladder does not retry it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub debugger_crashed_opening: bool,
    /// Lines read and bytes read.
    pub lines: u64,
    pub bytes: u64,
    /// What could not be read, and other things a human must know.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Evidence {
    pub fn new(path: impl Into<String>, origin: impl Into<String>) -> Evidence {
        Evidence { path: path.into(), origin: origin.into(), ..Evidence::default() }
    }

    /// Records that a tool's output was seen.
    pub fn saw(&mut self, tool: Tool) {
        if let Err(i) = self.tools.binary_search(&tool) {
            self.tools.insert(i, tool);
        }
    }
}

/// Per-line context that [`scan`] gives every parser.
#[derive(Debug, Clone, Copy, Default)]
pub struct LineCtx {
    /// 1-based line number in the file.
    pub lineno: u64,
    /// The rank from a `[rankN]:` prefix (already stripped from the line).
    pub rank: Option<u32>,
}

/// A parser of one tool's text output, fed one line at a time (without the newline).
/// Lines that are not its tool's must be ignored cheaply: every line reaches every parser's
/// `wants`, inlined into the scanner's loop, and its `line` where `wants` takes it.
pub trait LineParser {
    /// The cheap test every line goes through first, inlined into the scanner's loop: a byte
    /// or two of the line and the parser's state. `false` only where [`LineParser::line`]
    /// would change nothing; the scanner calls `line` only where it is `true`.
    /// `phrase_free`: the scanner found none of [`scan::PHRASES`] in the line.
    #[inline]
    fn wants(&self, _line: &str, _phrase_free: bool) -> bool {
        true
    }
    fn line(&mut self, line: &str, ctx: LineCtx);
    /// Called once after the last line; moves what was found into `ev`.
    fn finish(&mut self, ev: &mut Evidence);
}

fn ser_hex<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{v:#x}"))
}

fn ser_hex_opt<S: Serializer>(v: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => s.serialize_str(&format!("{v:#x}")),
        None => s.serialize_none(),
    }
}

/// Parses `(x,y,z)` or `[x,y,z]` (spaces allowed) into a [`Dim3`].
pub fn parse_dim3(s: &str) -> Option<Dim3> {
    let s = s.trim();
    let inner = s
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .or_else(|| s.strip_prefix('[').and_then(|r| r.strip_suffix(']')))?;
    let mut it = inner.split(',').map(|p| p.trim().parse::<u32>().ok());
    let d = [it.next()??, it.next()??, it.next()??];
    if it.next().is_some() {
        return None;
    }
    Some(d)
}

/// Parses `0x7f..` (or decimal) into a number.
pub fn parse_hex(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Parses `31,999,997,952` (thousands separators allowed) into a number.
pub fn parse_grouped_u64(s: &str) -> Option<u64> {
    let digits: String = s.trim().chars().filter(|c| *c != ',').collect();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Splits `FILE:LINE` at the last colon; the line must be a number.
pub fn parse_source_loc(s: &str) -> Option<SourceLoc> {
    let s = s.trim();
    let (file, line) = s.rsplit_once(':')?;
    let line: u32 = line.trim().parse().ok()?;
    if file.is_empty() {
        return None;
    }
    Some(SourceLoc { file: file.to_string(), line })
}

/// Strips a rank label, returning the rank: PyTorch distributed's `[rankN]:`, torchrun's
/// `--tee` label `[defaultN]:`, and Slurm's `srun -l` task label (`0: `, ` 7: ` padded to the
/// widest task id). Labels nest (`1: [rank1]: ...`): the innermost `[rankN]:` wins.
pub fn strip_rank(line: &str) -> (&str, Option<u32>) {
    strip_rank_in(line, true)
}

/// [`strip_rank`], with Slurm's bare `N: ` label only when `srun_labels` (a program's own
/// numbered lines, `0: loss 1.2`, are no ranks: see [`SrunLabels`]).
#[inline]
pub fn strip_rank_in(line: &str, srun_labels: bool) -> (&str, Option<u32>) {
    let (line, outer) = strip_label(line, srun_labels);
    match outer {
        Some(r) => {
            let (inner, own) = strip_label(line, false);
            (inner, own.or(Some(r)))
        }
        None => (line, None),
    }
}

/// Whether a stream's `N: ` prefixes are `srun -l` task labels: once a line is the Slurm
/// launcher's placement line (`1: debug-ima: task 1 on node node2`, printed by each task
/// before its program starts), the labels of that stream are taken as ranks; before it, and in
/// output without it, `N: ` is the program's own text.
#[derive(Debug, Default, Clone, Copy)]
pub struct SrunLabels {
    on: bool,
}

impl SrunLabels {
    /// Looks at one raw line; returns whether its `N: ` label is a rank.
    #[inline]
    pub fn see(&mut self, raw: &str) -> bool {
        if !self.on {
            let (rest, label) = strip_label(raw, true);
            self.on = label.is_some() && rest.starts_with(crate::model::launcher::PLACED);
        }
        self.on
    }
}

/// The outer label of `line`, stripped. Every label starts with `[`, a space or a digit: other
/// lines (most) cost one comparison, inlined.
#[inline]
fn strip_label(line: &str, srun_labels: bool) -> (&str, Option<u32>) {
    match line.as_bytes().first() {
        Some(b'[') => {}
        Some(b' ' | b'0'..=b'9') if srun_labels => {}
        _ => return (line, None),
    }
    label_at_start(line, srun_labels)
}

fn label_at_start(line: &str, srun_labels: bool) -> (&str, Option<u32>) {
    for open in ["[rank", "[default"] {
        if let Some(rest) = line.strip_prefix(open) {
            if let Some((num, tail)) = rest.split_once("]:") {
                if let Ok(r) = num.parse::<u32>() {
                    return (tail.strip_prefix(' ').unwrap_or(tail), Some(r));
                }
            }
        }
    }
    // `srun -l`: spaces, at most six digits, `: `.
    if !srun_labels {
        return (line, None);
    }
    let digits_at = line.len() - line.trim_start_matches(' ').len();
    let b = line.as_bytes();
    let digits = b[digits_at..].iter().take(7).take_while(|c| c.is_ascii_digit()).count();
    if digits_at <= 6 && (1..=6).contains(&digits) && b[digits_at + digits..].starts_with(b": ") {
        if let Ok(r) = line[digits_at..digits_at + digits].parse::<u32>() {
            return (&line[digits_at + digits + 2..], Some(r));
        }
    }
    (line, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_and_numbers() {
        assert_eq!(parse_dim3("(2,0,0)"), Some([2, 0, 0]));
        assert_eq!(parse_dim3("[0, 0, 3]"), Some([0, 0, 3]));
        assert_eq!(parse_dim3("(2,0)"), None);
        assert_eq!(parse_dim3("(1,2,3,4)"), None);
        assert_eq!(parse_hex("0x7f9a577a00f0"), Some(0x7f9a577a00f0));
        assert_eq!(parse_grouped_u64("31,999,997,952"), Some(31_999_997_952));
        assert_eq!(parse_grouped_u64(",,"), None);
        assert_eq!(
            parse_source_loc("ima_far.cu:13"),
            Some(SourceLoc { file: "ima_far.cu".into(), line: 13 })
        );
        assert_eq!(parse_source_loc("C:\\x"), None);
    }

    #[test]
    fn rank_labels() {
        assert_eq!(strip_rank("[rank1]: Traceback"), ("Traceback", Some(1)));
        assert_eq!(strip_rank("[default0]:rank 0 pid 614"), ("rank 0 pid 614", Some(0)));
        assert_eq!(strip_rank("1: [rank1]:[E1130 x"), ("[E1130 x", Some(1)));
        assert_eq!(strip_rank(" 7: vm: The application"), ("vm: The application", Some(7)));
        assert_eq!(strip_rank("12:34: x"), ("12:34: x", None));
        assert_eq!(strip_rank("#0  0x00007f"), ("#0  0x00007f", None));
        // A program's numbered lines are no ranks until the launcher's placement line.
        let mut srun = SrunLabels::default();
        assert!(!srun.see("0: loss 1.25"));
        assert_eq!(strip_rank_in("0: loss 1.25", false), ("0: loss 1.25", None));
        assert_eq!(strip_rank_in("[rank1]: Traceback", false), ("Traceback", Some(1)));
        assert!(srun.see("1: debug-ima: task 1 on node node2"));
        assert!(srun.see("0: anything after it"));
        assert_eq!(strip_rank("1:x"), ("1:x", None));
    }

    /// The H200's recordings of a Triton copy given a stride 10^6 too large
    /// (tests/gpu/programs/triton_from_module.py strided): cuda-gdb's exception and the host's
    /// message name the invalid address space, a fault of its own class.
    #[test]
    fn an_invalid_address_space_is_a_device_fault_of_its_own_class() {
        let host = recording!("h200/capture/strided/out.log");
        let line = host.lines().find(|l| l.contains("Triton Error")).unwrap();
        assert_eq!(ErrorClass::from_message(line), ErrorClass::InvalidAddressSpace);
        let ev =
            scan::scan_str(recording!("h200/capture/strided/cudagdb-repro-pass2.log"), "repro/cudagdb-1");
        let f = ev.faults.first().expect("the dump's fault");
        let class = f.error.clone().expect("a class");
        assert_eq!(class, ErrorClass::InvalidAddressSpace);
        assert!(class.is_device_fault());
        assert_eq!(class.as_str(), "invalid-address-space");
    }

    #[test]
    fn error_classes() {
        assert_eq!(
            ErrorClass::from_message("an illegal memory access was encountered"),
            ErrorClass::IllegalAddress
        );
        assert_eq!(ErrorClass::from_message("Warp Misaligned Address"), ErrorClass::MisalignedAddress);
        // cuda-gdb 13.0 and the coredump progress stream (tests/fixtures/h200/shared_atomic).
        assert_eq!(ErrorClass::from_message("Warp Out-of-range Address"), ErrorClass::OutOfRangeAddress);
        assert_eq!(
            ErrorClass::from_message("CUDBG_EXCEPTION_WARP_OUT_OF_RANGE_ADDRESS (5)"),
            ErrorClass::OutOfRangeAddress
        );
        assert_eq!(ErrorClass::from_message("device-side assert triggered"), ErrorClass::DeviceAssert);
        assert_eq!(ErrorClass::from_message("unspecified launch failure"), ErrorClass::LaunchFailure);
        assert!(!ErrorClass::from_message("invalid argument").is_device_fault());
    }
}

//! The verdict's and the analysis's types (what `analyze`, `findings.json` and the ladder
//! read), apart from `verdict.rs`, which builds them, so that the parts a verdict is given
//! after its merge (its origin) can name them.
//!
//! Must not: hold logic beyond small accessors; build a verdict (that is `verdict.rs`).

use serde::Serialize;

use super::ranks::RankTriage;
use super::verdict_hang::Hang;
use super::verdict_kinds::OtherFault;
use super::verdict_sites::{HostSite, Located};
use super::{hazards, Access, DeviceSnapshot, Dim3, ErrorClass, Fault, Frame, SourceLoc, Symptom, Tool};

/// How the remark of a verdict with no source line begins; an origin that says why (a JIT
/// build, NVRTC) replaces it.
pub const NO_LINE: &str = "no tool printed a source line";

/// A part of a complete verdict (issue: the kernel, the user's line, the class, the launch
/// site). A verdict always names the kernel; the others may be unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Part {
    /// The `file:line` of the faulting access.
    SourceLine,
    /// The error class (illegal address, out of range, misaligned, assert, ...).
    Class,
    /// The host line that launched the kernel, from a synchronous source.
    LaunchSite,
    /// For a hang: where the stuck process's host threads wait (py-spy, a CPU core).
    HostStacks,
}

impl Part {
    pub fn as_str(self) -> &'static str {
        match self {
            Part::SourceLine => "source line",
            Part::Class => "error class",
            Part::LaunchSite => "launch site",
            Part::HostStacks => "host stacks",
        }
    }
}

/// The merged answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// The kernel, demangled, with its signature where a tool printed one.
    pub kernel: String,
    /// The source position of the faulting access: the user's line.
    pub file: Option<String>,
    pub line: Option<u32>,
    pub error: ErrorClass,
    /// What the class means and what to check first ([`ErrorClass::meaning`]); none for an
    /// unknown class.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meaning: Option<&'static str>,
    pub block: Option<Dim3>,
    pub thread: Option<Dim3>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<u32>,
    /// Process and rank that faulted, where known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// The access (kind, size, address, nearest allocation), where memcheck saw it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access: Option<Access>,
    /// For a fault in inlined code: the chain from the faulting line out to the
    /// kernel's own line (`store_helpers.cuh:5`, `inlined.cu:8`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inlined: Vec<SourceLoc>,
    /// The device line is library or toolkit code (ATen, CUTLASS, CUDA's headers) outside the
    /// user's tree: the user's own line is then the launch site.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub library_line: bool,
    /// The host line that launched the kernel. Only from a synchronous source: a traceback or
    /// a thread's stack under `CUDA_LAUNCH_BLOCKING=1`, or memcheck's host backtrace at launch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_site: Option<HostSite>,
    /// Where the error surfaced on the host: the later synchronising call that reported it
    /// (an asynchronous traceback, `CUDA error at x.cu:39`). Not where the kernel was launched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub surfaced_at: Option<HostSite>,
    /// For a kernel that ran in a CUDA graph replay: where it was put into the graph (its
    /// launch inside the capture, or where the capture began).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub captured_at: Option<HostSite>,
    /// The parts no input established: said as unknown, never guessed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unknown: Vec<Part>,
    /// The parts that cannot exist for this fault, so no rung looks for them: the source line
    /// of a precompiled library kernel.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_applicable: Vec<Part>,
    /// For a fault in a precompiled kernel: the library it belongs to (`cuBLAS (libcublasLt.so.13)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub library: Option<String>,
    /// The other distinct faults the tools reported (other kernels), ranked: the program-order
    /// first leads the verdict, these follow.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub others: Vec<OtherFault>,
    /// The inputs (rungs) whose findings support this verdict, in input order.
    pub rungs: Vec<String>,
    /// Inputs that point elsewhere, one sentence each.
    pub disagreements: Vec<String>,
    /// Things a reader should know about this verdict (graph replay, crashed debugger).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub remarks: Vec<String>,
    /// For a verdict of class `hang`: the threads by line, the processes, the NCCL ranks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hang: Option<Hang>,
    /// For a job of several ranks: the rank that faulted first and what each other rank saw.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranks: Option<RankTriage>,
    /// For a race or a barrier error: the other line, the memory, the count, the kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hazard: Option<hazards::Hazard>,
    /// Where the kernel came from when it was generated or compiled at run time
    /// (torch.compile, a JIT extension, NVRTC): [`super::origin`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
}

impl Verdict {
    /// The rank that faulted first, in a job of several ranks.
    pub fn culprit_rank(&self) -> Option<u32> {
        self.ranks.as_ref().map(|t| t.culprit.rank)
    }
}

/// Everything `analyze` reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Analysis {
    pub verdict: Option<Verdict>,
    /// Why there is no verdict, or what the verdict rests on, in one sentence.
    pub conclusion: String,
    /// Every device fault found, grouped by site within each input.
    pub findings: Vec<Located<Fault>>,
    /// What the program reported on the host, per input.
    pub symptoms: Vec<Located<Symptom>>,
    /// Per input: what was recognised and what could not be read.
    pub inputs: Vec<InputSummary>,
    /// In how many of the climb's runs of the target the fault showed; set by the ladder (a
    /// folder of logs does not say how many runs it holds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reproduced: Option<Reproduced>,
}

/// `reproduced in k of n runs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Reproduced {
    /// Runs in which a fault (or the hang) showed.
    pub faulted: usize,
    /// Runs of the target.
    pub runs: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InputSummary {
    pub path: String,
    pub origin: String,
    pub tools: Vec<Tool>,
    pub lines: u64,
    pub bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_summary: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waits: Vec<super::WaitNotice>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub coredumps: Vec<super::CoredumpFile>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub api_errors: Vec<super::ApiError>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub debugger_crashed: bool,
    /// GPU dumps read with no exception (hang snapshots), py-spy's processes, a NCCL dump.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub snapshots: Vec<DeviceSnapshot>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub python: Vec<super::PyProcess>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nccl: Option<super::NcclTrace>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Where a kernel came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OriginKind {
    /// Generated by torch.compile's Inductor (a Triton kernel in its cache).
    Inductor,
    /// A PyTorch extension built while the program ran (`load`, `load_inline`).
    JitExtension,
    /// Compiled from a string at run time by NVRTC.
    Nvrtc,
}

/// One statement of the user's model a generated kernel was traced from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelSite {
    /// The FX source node (Dynamo's name for the value).
    pub node: String,
    #[serde(flatten)]
    pub frame: Frame,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The module calls around it, innermost first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub callers: Vec<Frame>,
}

/// The origin of the verdict's kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Origin {
    pub kind: OriginKind,
    /// What made it: `torch.compile (Inductor)`, `torch.utils.cpp_extension`, `cupy.RawKernel`.
    pub library: String,
    /// The extension's or program's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The line a device tool named in generated or compiled-from-string code (the Inductor
    /// kernel's file, NVRTC's virtual file): not a file the user edits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generated: Option<SourceLoc>,
    /// The files a reader needs to follow it (the generated kernel and its output code, the
    /// saved NVRTC string, the extension's source), as the run had them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// For Inductor: the model statements the kernel fused, the faulting access's first when
    /// `pinned`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub model: Vec<ModelSite>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
    /// For Inductor: the ATen ops the kernel fused.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aten: Vec<String>,
    /// The user's line that built or compiled it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub built_at: Option<Frame>,
    /// One sentence: what it is, and what can or cannot be known of its line.
    pub note: String,
}

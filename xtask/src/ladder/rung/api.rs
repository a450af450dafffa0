//! What a rung is and what it is given: the [`Rung`] trait, the [`Step`]s it runs, and the
//! [`RungIo`] through which the driver runs them. The rungs' files and the driver import
//! this; it imports none of them.
//!
//! Must not: run anything or know any particular rung.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::findings::verdict::{Part, Verdict};
use crate::findings::Evidence;
use crate::launch::container::Access;
use crate::model::{Exit, Invocation, Role, RungId};
use crate::process::{Control, Running};
use crate::recipe::Resolved;

/// One rung: its identity, what it is for, what the policy needs to know of it (the
/// methods with defaults), the steps it runs and how. Its name, what it needs of the machine
/// and its recipe options are its [`RungId`]'s line in `model/rung.rs`, which the layers below
/// the ladder read.
pub trait Rung: Sync {
    fn id(&self) -> RungId;
    /// What the rung does and what it costs, for the prompt before it runs.
    fn describe(&self) -> &'static str;
    /// The description at a debug level: the dry-run's heading names the flags the build
    /// really gets (`-G -g` under `--device-debug`), not the default's.
    fn describe_for(&self, debug: Debug) -> String {
        let _ = debug;
        self.describe().to_string()
    }
    /// The description for this recipe, at the debug level: the dry-run's heading. It differs
    /// from [`Rung::describe_for`] only where the recipe changes what the rung does (the
    /// rebuild of a Python target without a build redoes its run-time builds instead).
    fn describe_in(&self, r: &Resolved, debug: Debug) -> String {
        let _ = r;
        self.describe_for(debug)
    }
    /// What the prompt before the rung says it will do, for this recipe: its description
    /// ([`Rung::describe_in`]), and what the recipe makes of it where that matters (the
    /// rebuild's command and time limit).
    fn prompt(&self, r: &Resolved, debug: Debug) -> String {
        self.describe_in(r, debug)
    }
    /// Whether the rung is of use only when the target faults (then a clean baseline skips it).
    fn needs_fault(&self) -> bool {
        false
    }
    /// The parts of a verdict this rung can establish, for a Python target or a native one:
    /// the policy picks the cheapest rung that answers what is still unknown.
    fn answers(&self, _python: bool) -> &'static [Part] {
        &[]
    }
    /// Where the rung stands among those the policy picks to establish what is unknown of a
    /// fault, for a Python target or a native one: lower is cheaper, tried first (one run each
    /// about 10-30, a sanitizer's 10-100x slower run 100 and more). `None`: the policy never
    /// picks it so (the sweep, `--full` and `--rungs` still run it).
    fn cost_rank(&self, _python: bool) -> Option<u32> {
        None
    }
    /// Whether the policy may pick it (by [`Rung::cost_rank`]) once the target faulted:
    /// `false` for a rung that finds only what does not fault (initcheck: reads of memory
    /// never written), which is the sweep's.
    fn locates_faults(&self) -> bool {
        true
    }
    /// Whether the rung belongs to the sweep: when nothing faulted, the sweep's rungs run in
    /// ladder order, each while nothing was found (bugs that do not make the target fault).
    fn in_sweep(&self) -> bool {
        false
    }
    /// Whether this run of the rung, when the target ended by itself, says what a baseline
    /// says (`hung`: the target was still running when the rung gave up waiting): the
    /// baseline, and the hang rung when the target ended before `hang_after`. A failure
    /// without a CUDA error there stops the climb, a clean run there starts the sweep.
    fn stands_for_baseline(&self, _hung: bool) -> bool {
        false
    }
    /// Whether the armed baseline run does what this rung's run does (the coredump rung's:
    /// a dump on the exception, read by cuda-gdb), so that an armed run that faulted under the
    /// same conditions covers it.
    fn covered_by_armed_run(&self) -> bool {
        false
    }
    /// Whether what the rung's files say is evidence about the target, read into the verdict:
    /// not the repro rung's, whose dumps are the reproducer's.
    fn gives_evidence(&self) -> bool {
        true
    }
    /// Whether the rung runs the target (the rebuild does not): only those runs count in how
    /// often the fault was reproduced.
    fn runs_target(&self) -> bool {
        true
    }
    /// Every step the rung may run, in order, each with when it runs: the run executes these
    /// (placeholders filled in), `--dry-run` prints them.
    fn steps(&self, cx: &StepCx) -> Vec<Step>;
    /// Runs the steps through `io`.
    fn run(&self, io: &mut dyn RungIo, steps: &[Step]) -> Result<Ran>;
}

/// The debug information asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Debug {
    /// `-lineinfo`: source lines, optimised code (the default).
    LineInfo,
    /// `-G`: full device debug info, locals and arguments, unoptimised code.
    Full,
}

impl Debug {
    pub fn flag(self) -> &'static str {
        match self {
            Debug::LineInfo => "-lineinfo",
            Debug::Full => "-G",
        }
    }

    /// The `NVCC_PREPEND_FLAGS` of a build with line info: the device flag plus `-g`, host
    /// debug info, which names the host line of a launch in a CPU core and changes no device
    /// code.
    pub fn flags(self) -> String {
        format!("{} -g", self.flag())
    }
}

/// What a rung ran to, for the policy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ran {
    /// The target exited non-zero, died of a signal, or left a dump.
    pub faulted: bool,
    /// The rung's tool produced the artifact it exists for.
    pub yielded: bool,
    /// Whether the target's binaries carry line info, where this rung learnt it (built them
    /// with it, or `cuobjdump` looked).
    pub lineinfo: Option<bool>,
    /// The target was still running when its `hang_after` came (the hang rung): the rungs
    /// that rerun it would hang too.
    pub hung: bool,
    /// Whether the target's disassembly named its kernels' launch sites, where this rung
    /// read it ([`super::parts::sites`]); for the armed baseline, whether its run counted on them
    /// (`policy::Facts::static_sites`).
    pub static_sites: Option<bool>,
}

/// What the armed run's target ran to, told to the driver once it ended and before its
/// dumps are read ([`RungIo::reading_begins`]): what the driver may start beside the reading.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArmedEnd {
    /// The GPU dumps it left (a device fault the reading will name).
    pub dumps: usize,
    /// How long the target ran, in seconds.
    pub secs: f64,
    /// Whether its binaries carry line info, where the rung knows it by now.
    pub lineinfo: Option<bool>,
}

/// What the steps are built from.
#[derive(Debug, Clone)]
pub struct StepCx<'a> {
    pub recipe: &'a Resolved,
    pub debug: Debug,
    /// The rung's folder in the bundle (absolute): dumps and reports go there.
    pub dir: PathBuf,
    /// `NVCC_PREPEND_FLAGS` of the ladder's own environment, which the rebuild keeps.
    pub inherited_prepend: Option<String>,
    /// The armed run is launch-blocking (the policy decides, per attempt:
    /// `policy::armed_blocking`).
    pub blocking: bool,
    /// Whether the target's disassembly named its kernels' launch sites (`None`: not read
    /// yet; the first armed run reads it).
    pub static_sites: Option<bool>,
}

/// When a step runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    Always,
    /// Before the target, when it is not built yet: a binary the build makes, or the program
    /// the run names, does not exist (`Resolved::not_built`).
    BinariesMissing,
    /// After the target, when the binaries existed before the ladder (their line info is
    /// checked, not assumed).
    BinariesPresent,
    /// After the target, once per extension library its run built into the rebuild's fresh
    /// `TORCH_EXTENSIONS_DIR` ([`EXTENSION`] stands for its path).
    PerJitLibrary,
    /// Instead of the [`When::Always`] step, when the verdict so far names a suspect kernel
    /// ([`KERNEL`] stands for its mangled name).
    KernelKnown,
    /// Before a sanitizer's run, once per binary: its device code's sections, which name the
    /// kernels the check concerns (`sanitizer::Scope`).
    Listing,
    /// Instead of the [`When::Always`] step, when the binaries' listings named the kernels the
    /// check concerns ([`KERNELS`] stands for their filters, [`LAUNCHES`] for how many launches).
    KernelsListed,
    /// Instead of the other steps, when the run is the memcheck pass after a fault's complete
    /// verdict ([`RungIo::pass`]): every kernel, and only the first records printed, since an
    /// earlier bug's come first.
    Pass,
    /// On the CPU core the target's abort wrote, once moved into the rung's folder.
    PerCpuCore,
    /// Once per dump the target left ([`DUMP`] in its argv stands for the dump's path).
    PerDump,
    /// Instead, once per dump the job left after it counted as hung (`watch`).
    PerHangDump,
    /// Again on that dump, with fewer commands, when cuda-gdb crashed on it.
    PerDumpAfterCrash,
    /// Before the armed run of a native target, while the policy does not know yet whether
    /// the binary names its launch sites ([`super::parts::sites`]).
    LaunchSites,
    /// Instead of the launch-blocking armed run, when the binary named its launch sites.
    LaunchSitesKnown,
    /// Before a native target's capture run: the capture library built in the rung's folder.
    CaptureLibrary,
    /// Once a native reproducer is written: its build with the kernel's translation unit
    /// ([`SOURCE`] stands for that file).
    ReproBuild,
    /// After the capture run, once the reproducer is written: its own run.
    Reproducer,
    /// When a process announces it waits for a debugger ([`PID`] stands for its pid).
    OnWaitMessage,
    /// Again while it still waits, with fewer commands, when cuda-gdb crashed attached.
    OnWaitMessageAfterCrash,
    /// Once `hang_after` has passed, beside the running target, for every Python process of
    /// its tree ([`PID`] stands for its pid).
    PerPythonProcess,
    /// Once per NCCL flight-recorder dump the target wrote when its pipe was triggered
    /// ([`TRACE`] stands for the dump's path without the folder).
    PerNcclTrace,
}

impl When {
    /// How `--dry-run` says it.
    pub fn label(self) -> &'static str {
        match self {
            When::Always => "",
            When::BinariesMissing => "if the program or a binary does not exist yet",
            When::BinariesPresent => "if the binaries existed already",
            When::PerJitLibrary => "per extension library the run built into the fresh TORCH_EXTENSIONS_DIR",
            When::KernelKnown => "instead, when a suspect kernel is known",
            When::Listing => "before the run, per binary, to name the kernels the check concerns",
            When::KernelsListed => "instead, when the binaries' listings name the kernels the check concerns",
            When::Pass => "instead, as the pass after a complete verdict: every kernel, its first records",
            When::PerCpuCore => "on the CPU core, if one was written (then deleted)",
            When::PerDump => "per dump",
            When::PerHangDump => "per dump, once the job counted as hung",
            When::PerDumpAfterCrash => "per dump, if cuda-gdb crashed",
            When::LaunchSites => "once, beside the run (its symbols hold kernel stubs) or before it, where the binary launches its kernels",
            When::LaunchSitesKnown => "instead, when the binary names its launch sites",
            When::CaptureLibrary => "before the capture run, once: the launch capture library",
            When::ReproBuild => "once the reproducer is written: its build with the kernel's source file",
            When::Reproducer => "once the reproducer is written from the capture",
            When::OnWaitMessage => "on the wait message",
            When::OnWaitMessageAfterCrash => "on the wait message, if cuda-gdb crashed",
            When::PerPythonProcess => "after hang_after, per Python process of the target's tree",
            When::PerNcclTrace => "per NCCL flight-recorder dump, once its pipe was triggered",
        }
    }
}

/// Where a step's process runs, with a container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    /// In a new container of its own.
    New(Access),
    /// Inside the container of the target that is running (cuda-gdb attaching to it).
    BesideTarget,
}

/// Stands for the path of a dump in a [`When::PerDump`] step.
pub const DUMP: &str = "core_<host>.<pid>.<time>";
/// Stands for the suspect kernel's mangled name in a [`When::KernelKnown`] step.
pub const KERNEL: &str = "<mangled name of the suspect kernel>";
/// Stands for each kernel's mangled name in a [`When::KernelsListed`] step: its
/// `--kernel-name kne=` pair is repeated once per kernel.
pub const KERNELS: &str = "<each kernel of the scope>";
/// Stands for how many launches a [`When::KernelsListed`] step checks.
pub const LAUNCHES: &str = "<2 per kernel>";
/// Stands for the kernel's translation unit in a [`When::ReproBuild`] step.
pub const SOURCE: &str = "<the kernel's source file>";
/// Stands for an extension library's name in a [`When::PerJitLibrary`] step (its folder and
/// file under the fresh `TORCH_EXTENSIONS_DIR`).
pub const EXTENSION: &str = "<NAME>/<NAME>.so";
/// Stands for the pid in a [`When::OnWaitMessage`] step.
pub const PID: &str = "<PID from the message>";
/// Stands for a process's pid in a [`When::PerPythonProcess`] step.
pub const TREE_PID: &str = "<PID>";
/// Stands for an NCCL flight-recorder dump's name in a [`When::PerNcclTrace`] step.
pub const TRACE: &str = "nccl-trace-<rank>";

/// One process a rung runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub role: Role,
    pub inv: Invocation,
    /// The logs' name in the rung folder: empty for the target's `stdout.log` and
    /// `stderr.log`, else `<stem>.log` with both streams.
    pub stem: String,
    pub at: At,
    pub when: When,
}

impl Step {
    pub fn new(role: Role, inv: Invocation, stem: impl Into<String>) -> Step {
        Step { role, inv, stem: stem.into(), at: At::New(Access::Plain), when: When::Always }
    }

    /// The target's run: its streams in `stdout.log` and `stderr.log`.
    pub fn target(inv: Invocation) -> Step {
        Step::new(Role::Target, inv, "")
    }

    pub fn when(mut self, when: When) -> Step {
        self.when = when;
        self
    }

    pub fn at(mut self, at: At) -> Step {
        self.at = at;
        self
    }

    /// The step with `placeholder` replaced by `value` in its argv and `{n}` in its stem by
    /// `n`: a per-dump or on-message step made concrete.
    pub fn filled(&self, placeholder: &str, value: &str, n: usize) -> Step {
        let mut s = self.clone();
        for a in &mut s.inv.argv {
            if a.contains(placeholder) {
                *a = a.replace(placeholder, value);
            }
        }
        s.stem = s.stem.replace("{n}", &n.to_string());
        s
    }

    /// The step with the argument holding `placeholder` and the one before it (its option)
    /// repeated once per value, the placeholder replaced by the value: `--kernel-name kne=A
    /// --kernel-name kne=B`.
    pub fn listed(&self, placeholder: &str, values: &[String]) -> Step {
        let mut s = self.clone();
        if let Some(i) = s.inv.argv.iter().position(|a| a.contains(placeholder)).filter(|&i| i > 0) {
            let (option, arg) = (s.inv.argv[i - 1].clone(), s.inv.argv[i].clone());
            let pairs = values.iter().flat_map(|v| [option.clone(), arg.replace(placeholder, v)]);
            s.inv.argv.splice(i - 1..=i, pairs);
        }
        s
    }
}

/// The first step of `steps` that runs `when`.
pub fn step(steps: &[Step], when: When) -> Result<&Step> {
    steps.iter().find(|s| s.when == when).ok_or_else(|| anyhow::anyhow!("the rung has no {when:?} step"))
}

/// What the driver gives a rung's run.
pub trait RungIo {
    fn recipe(&self) -> &Resolved;
    /// The rung's folder (absolute).
    fn dir(&self) -> &Path;
    /// The rung's folder as the bundle names it (`rungs/02-rebuild`), for messages.
    fn shown_dir(&self) -> String;
    /// GPUs doctor saw.
    fn gpus(&self) -> usize;
    /// The kernel the verdict so far names, as a sanitizer's `--kernel-name kns=` filter
    /// takes it (a substring of the mangled name), when there is one.
    fn suspect(&self) -> Option<String>;
    /// Whether this run is the memcheck pass after a fault's complete verdict (or beside the
    /// reading that completes it): it looks over every kernel for an earlier bug that corrupted
    /// memory without faulting, and the verdict's own parts are known already.
    fn pass(&self) -> bool;
    /// The verdict so far, when there is one.
    fn verdict(&self) -> Option<Verdict>;
    /// Whether the target's runs go into a container.
    fn in_container(&self) -> bool;
    /// The source files the findings so far name (the frames' files, as the tools printed
    /// them), for a rung that needs a path to the verdict's file.
    fn sources(&self) -> Vec<String>;
    fn interrupted(&self) -> bool;
    /// Runs what `run` describes into the bundle and records it (the executor,
    /// `ladder/exec`): its step at its place, the target's and the build's lines to the
    /// progress, the watcher at each line and the ticker every few tens of milliseconds (either
    /// returning [`Control::Stop`] ends the step with its whole tree), and the steps `with` it
    /// meanwhile, each its own process, waited for after it. Every step's exit, in the order
    /// given; the record of each joins the rung's in that order.
    fn execute(&mut self, run: Run<'_, '_>) -> Exits;
    /// The armed run's target ended as `ended` and its dumps are read next: the driver may
    /// start beside the reading what the policy will want once a fault's verdict is known (the
    /// memcheck pass of a short native run), rather than after it.
    fn reading_begins(&mut self, ended: ArmedEnd);
    /// What the findings read in `path`, a file of the rung's folder the rung must read to
    /// decide (a cuda-gdb log that may have crashed). Read once: the driver takes this
    /// evidence for the verdict rather than reading the file again.
    fn scan(&mut self, path: &Path) -> Result<Evidence>;
    /// A note kept in the rung's record (and shown when the rung ends).
    fn note(&mut self, text: String);
    /// A remark shown now, while the rung runs.
    fn say(&self, text: &str);
    /// A file of the rung holds the program's input values: said now, noted, and recorded in
    /// the manifest, where `bundle pack` finds what to leave out.
    fn holds_inputs(&mut self, record: crate::bundle::InputsRecord);
}

/// What watches each line of a run, with a runner for steps beside it.
pub type OnLine<'f> = dyn FnMut(&str, &mut dyn Beside) -> Control + 'f;
/// What is called at each tick of a run (its tree, its time), with a runner for steps beside it.
pub type OnTick<'f> = dyn FnMut(&Running, &mut dyn Beside) -> Control + 'f;

/// A run described as data, for [`RungIo::execute`]: the step, what watches it, and what runs
/// with it. A new way of running things side by side is a field here, not a new method.
pub struct Run<'r, 'f> {
    /// The step the run is about (the target, a build, a tool); none when the run is only
    /// steps side by side ([`together`]).
    pub step: Option<&'r Step>,
    /// Sees each line of `step` (the target's), with a runner for steps beside it
    /// ([`At::BesideTarget`]).
    pub watch: Option<&'r mut OnLine<'f>>,
    /// Called every few tens of milliseconds while `step` runs.
    pub tick: Option<&'r mut OnTick<'f>>,
    /// Steps that need nothing of `step` and run at the same time, each its own process,
    /// placed before it and recorded after it (the executable's disassembly beside the armed
    /// run; the readings of several dumps).
    pub with: &'r [Step],
}

impl<'r, 'f> Run<'r, 'f> {
    /// `step` alone.
    pub fn of(step: &'r Step) -> Run<'r, 'f> {
        Run { step: Some(step), watch: None, tick: None, with: &[] }
    }

    /// With `watch` at each line.
    pub fn watched(self, watch: &'r mut OnLine<'f>) -> Run<'r, 'f> {
        Run { watch: Some(watch), ..self }
    }

    /// With `tick` at each tick.
    pub fn ticked(self, tick: &'r mut OnTick<'f>) -> Run<'r, 'f> {
        Run { tick: Some(tick), ..self }
    }

    /// With `steps` at the same time.
    pub fn with(self, steps: &'r [Step]) -> Run<'r, 'f> {
        Run { with: steps, ..self }
    }
}

/// What a [`Run`] left: its step's exit (none without a step), and each step's `with` it, in
/// order; each is the bundle's error (a log that could not be written) or the process's.
pub struct Exits {
    pub exit: Option<Result<Exit>>,
    pub with: Vec<Result<Exit>>,
}

/// Runs `step` alone ([`Run::of`]).
pub fn exec(io: &mut dyn RungIo, step: &Step) -> Result<Exit> {
    exit_of(io.execute(Run::of(step)).exit)
}

/// The exit of a run's step; a run given a step always has one.
pub fn exit_of(exit: Option<Result<Exit>>) -> Result<Exit> {
    exit.unwrap_or_else(|| Err(anyhow::anyhow!("the run had no step to run")))
}

/// Runs `steps` at once, each its own process (cuda-gdb on several dumps and on the CPU core),
/// each recorded in the order given; each step's exit, or its error.
pub fn together(io: &mut dyn RungIo, steps: &[Step]) -> Vec<Result<Exit>> {
    if let [one] = steps {
        return vec![exec(io, one)];
    }
    io.execute(Run { step: None, watch: None, tick: None, with: steps }).with
}

/// Runs steps beside a running target, from inside its line callback.
pub trait Beside {
    /// Runs the step into the bundle; the error is the process's (the bundle's are kept).
    fn exec(&mut self, step: &Step) -> Result<()>;
    /// The log the step wrote (`<stem>.log`).
    fn log(&self, step: &Step) -> PathBuf;
    /// What the findings read in `path` (a log of a step it ran), read once as
    /// [`RungIo::scan`] does.
    fn scan(&mut self, path: &Path) -> Result<Evidence>;
    fn say(&self, text: &str);
    fn interrupted(&self) -> bool;
    /// Through Slurm: the steps beside run on this node (the waiting task's) from now on.
    fn on_node(&mut self, _node: &str) {}
    /// Whether a GPU is busy now (`nvidia-smi`'s utilization above 0 on any GPU); `None` when
    /// that cannot be told.
    fn gpu_busy(&self) -> Option<bool> {
        None
    }
}

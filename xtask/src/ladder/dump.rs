//! `debug-ima dump PID` (docs/hangs.md): the evidence of a process that already runs, started
//! with or without this tool (a kernel spinning, ranks waiting in a collective), collected into
//! a bundle of its own, with the layout and manifest of a ladder run under the recipe name
//! `dump`. In this order, each step bounded by its time limit, Ctrl-C looked at between them:
//!
//! 1. **host stacks** of every Python process of its tree: `py-spy dump --native` (it pauses
//!    the process for a moment; the hang rung's recordings show that a user-triggered dump
//!    still comes after it);
//! 2. **NCCL**: one `1` into each flight-recorder pipe (`TORCH_NCCL_DEBUG_INFO_PIPE_FILE` in a
//!    process's environment, or a `*.pipe` FIFO among its open files); the traces PyTorch
//!    writes are converted to JSON into the folder;
//! 3. **GPU**: with `--kill`, each process armed for a user-triggered dump
//!    (`CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1`) gets one byte into its pipe, and nothing
//!    attaches to it first (a cuda-gdb attached before prevents the dump: the driver says `CUDA
//!    coredump is not supported with late attach`); the driver writes the dump and aborts the
//!    process, and cuda-gdb reads the dump as the hang rung reads its own. Every other CUDA
//!    process (those that map `libcuda.so`, else the PID given) gets gdb's `thread apply all
//!    bt` when it is native, then a cuda-gdb attach (`info cuda kernels`, `info cuda threads`,
//!    `bt`, `detach`) that leaves it running; a process a debugger left stopped gets SIGCONT;
//! 4. with `--kill` the tree is ended (SIGTERM, 5 s, SIGKILL; only its own processes), else it
//!    is left running.
//!
//! The folder is `rungs/01-dump`, named by [`RungId::Dump`]: an id that is no rung of the
//! ladder (not in `RungId::ALL`, no `--rungs` value, no recipe key), so that `analyze`,
//! `bundle show|report|verify` and the verdict read the folder as they read a rung's, with no
//! second kind of record in the manifest. A rung of the ladder would have to start the target
//! and be planned by the policy; a folder outside `rungs/` would need its own manifest record
//! and its own walk in each of those readers.
//!
//! Must not: start the target, signal a process outside its tree (`process::foreign` checks
//! pid and start time), attach a debugger to a process before its user-triggered dump, leave
//! stopped a process that was running, print other than through the progress sink, or spawn
//! other than through `process`.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Result;

use super::run::run_logged;
use super::rung::parts::evidence::{self, Wrote};
use crate::bundle::inputs::{is_rung_output, scan_file};
use crate::bundle::{self, layout, Bundle, RungRecord, RungStatus};
use crate::findings::verdict::{decide_in, Analysis};
use crate::launch::Place;
use crate::model::{Exit, Invocation, Role, RungId, Usage};
use crate::process::foreign::{self, Proc};
use crate::process::{Control, Interrupt, TERM_GRACE};
use crate::redact::Redaction;
use crate::ui::Progress;

/// Processes of a tree looked at, at most; the rest are named in a note.
const MAX_PROCESSES: usize = 64;
/// gdb's host stacks of one process.
const HOST_TIMEOUT: Duration = Duration::from_secs(60);
/// One cuda-gdb attach: 0.6 s for a native process on the H200, 2.1 s for a Python one with
/// the host libraries' symbols skipped (12.3 s with them).
const ATTACH_TIMEOUT: Duration = Duration::from_secs(120);
/// Where PyTorch writes a flight-recorder dump when `TORCH_NCCL_DEBUG_INFO_TEMP_FILE` is not
/// set: this, then the rank.
const TRACE_PREFIX_DEFAULT: &str = "/tmp/nccl_trace_rank_";
/// A file written this little before the trigger still counts as the trigger's (file times
/// come from a coarse clock).
const CLOCK_SLACK: Duration = Duration::from_secs(1);

/// One process of the target's tree, as `/proc` showed it before anything ran.
#[derive(Debug, Clone)]
pub struct Member {
    pub proc: Proc,
    pub argv: Vec<String>,
    pub python: bool,
    /// It maps `libcuda.so`: a CUDA process.
    pub cuda: bool,
    /// Stopped already (`T`, `t`) before this tool looked.
    pub stopped: bool,
    /// Its environment; `None` when it could not be read.
    env: Option<Vec<(String, String)>>,
    cwd: Option<PathBuf>,
}

impl Member {
    fn read(proc: Proc) -> Member {
        let pid = proc.pid;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let argv = cmdline
            .split(|&b| b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let env = std::fs::read(format!("/proc/{pid}/environ")).ok().map(|e| {
            e.split(|&b| b == 0)
                .filter_map(|kv| {
                    let kv = String::from_utf8_lossy(kv);
                    let (k, v) = kv.split_once('=')?;
                    Some((k.to_string(), v.to_string()))
                })
                .collect()
        });
        Member {
            proc,
            argv,
            python: evidence::is_python(pid),
            cuda: maps_libcuda(pid),
            stopped: foreign::stopped(pid),
            env,
            cwd: std::fs::read_link(format!("/proc/{pid}/cwd")).ok(),
        }
    }

    fn pid(&self) -> u32 {
        self.proc.pid
    }

    fn var(&self, name: &str) -> Option<&str> {
        self.env.as_ref()?.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// Armed for a user-triggered GPU dump.
    pub fn armed(&self) -> bool {
        self.var("CUDA_ENABLE_USER_TRIGGERED_COREDUMP") == Some("1")
    }

    fn command(&self) -> String {
        let c = self.argv.join(" ");
        if c.chars().count() > 120 {
            format!("{}...", c.chars().take(120).collect::<String>())
        } else {
            c
        }
    }

    /// A path as the process means it: relative ones from its working folder.
    fn at(&self, path: &str) -> PathBuf {
        match &self.cwd {
            Some(cwd) if !path.starts_with('/') => cwd.join(path),
            _ => PathBuf::from(path),
        }
    }
}

/// Why a tree is taken for one without CUDA.
const NO_CUDA: &str = "no process of its tree maps the CUDA driver, `libcuda.so`";

/// Whether `pid` maps the CUDA driver library.
fn maps_libcuda(pid: u32) -> bool {
    let Ok(f) = std::fs::File::open(format!("/proc/{pid}/maps")) else { return false };
    std::io::BufReader::new(f).lines().map_while(Result::ok).any(|l| l.contains("/libcuda.so"))
}

/// The process given and its tree.
#[derive(Debug, Clone)]
pub struct Target {
    pub root: Proc,
    pub uid: u32,
    /// The root first.
    pub members: Vec<Member>,
    /// Processes of the tree past [`MAX_PROCESSES`].
    pub left_out: usize,
    /// Why ptrace cannot reach it from here (py-spy, gdb and cuda-gdb are then not run).
    pub ptrace_denied: Option<String>,
}

impl Target {
    /// The process `pid` and its tree, or a [`Usage`] error saying why it is refused: no
    /// such process, a zombie, PID 1, a kernel thread, this tool or one of its ancestors.
    pub fn survey(pid: u32) -> Result<Target> {
        if pid == 0 {
            return Err(Usage::error(
                "PID 0 is no process: give the PID of the hung program (`ps -ef`, `nvidia-smi`)",
            ));
        }
        if pid == 1 {
            return Err(Usage::error(
                "PID 1 is the init process of this machine or container: refused (stopping or killing it ends \
                 everything); give the PID of the hung program (`ps -ef`, `nvidia-smi`)",
            ));
        }
        if foreign::is_self_or_ancestor(pid) {
            let what = if pid == std::process::id() {
                "this tool itself"
            } else {
                "an ancestor of this tool (the shell or program that started it)"
            };
            return Err(Usage::error(format!(
                "PID {pid} is {what}: refused; give the PID of the hung program (`ps -ef`, `nvidia-smi`)"
            )));
        }
        let Some(root) = foreign::identity(pid) else {
            let why = match foreign::state(pid) {
                Some(_) => "has exited (a zombie its parent has not reaped)",
                None => "does not exist (it may have exited)",
            };
            return Err(Usage::error(format!(
                "process {pid} {why}: give the PID of a running program (`ps -ef`)"
            )));
        };
        let first = Member::read(root);
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let ppid = status.lines().find_map(|l| l.strip_prefix("PPid:")).map(str::trim);
        if first.argv.is_empty() && (pid == 2 || ppid == Some("2")) {
            return Err(Usage::error(format!("process {pid} is a kernel thread: give the PID of a program")));
        }
        let uid = status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|u| u.split_whitespace().next()?.parse().ok())
            .unwrap_or(u32::MAX);
        let tree = foreign::tree(root);
        let left_out = tree.len().saturating_sub(MAX_PROCESSES);
        let mut members = vec![first];
        members.extend(tree.into_iter().skip(1).take(MAX_PROCESSES - 1).map(Member::read));
        Ok(Target { root, uid, members, left_out, ptrace_denied: foreign::ptrace_denied(uid) })
    }

    fn python(&self) -> Vec<&Member> {
        self.members.iter().filter(|m| m.python).collect()
    }

    /// The processes the GPU is looked at in: the CUDA ones; when none maps `libcuda.so` but
    /// that cannot be told (the given process's maps are not readable), the one given; none
    /// when the tree does not use CUDA ([`Target::without_cuda`]).
    fn gpu(&self) -> Vec<&Member> {
        let cuda: Vec<&Member> = self.members.iter().filter(|m| m.cuda).collect();
        if cuda.is_empty() && !self.without_cuda() {
            self.members.iter().take(1).collect()
        } else {
            cuda
        }
    }

    /// Whether no process of the tree uses CUDA: none maps `libcuda.so`, and the given
    /// process's maps could be read (else it cannot be told, and the given one is attached).
    pub fn without_cuda(&self) -> bool {
        !self.members.iter().any(|m| m.cuda)
            && std::fs::File::open(format!("/proc/{}/maps", self.root.pid)).is_ok()
    }

    /// Whether a process the GPU is looked at in is armed for a user-triggered dump.
    pub fn armed(&self) -> bool {
        self.gpu().iter().any(|m| m.armed())
    }

    /// What the command will do, for the prompt.
    pub fn plan(&self, kill: bool) -> String {
        let root = &self.members[0];
        let mut s = format!(
            "process {} (`{}`), {} process(es) in its tree",
            root.pid(),
            root.command(),
            self.members.len()
        );
        let py: Vec<String> = self.python().iter().map(|m| m.pid().to_string()).collect();
        if !py.is_empty() {
            s.push_str(&format!("; py-spy on {}", py.join(", ")));
        }
        let (trigger, attach): (Vec<&Member>, Vec<&Member>) =
            self.gpu().into_iter().partition(|m| kill && m.armed());
        if !trigger.is_empty() {
            let p: Vec<String> = trigger.iter().map(|m| m.pid().to_string()).collect();
            s.push_str(&format!("; a user-triggered GPU dump of {} (the driver aborts it)", p.join(", ")));
        }
        if !attach.is_empty() {
            let p: Vec<String> = attach.iter().map(|m| m.pid().to_string()).collect();
            s.push_str(&format!(
                "; cuda-gdb attached to {} (stopped for a few seconds, then detached)",
                p.join(", ")
            ));
        }
        if self.without_cuda() {
            s.push_str(&format!("; no GPU state ({NO_CUDA}), only host stacks"));
        }
        s.push_str(if kill {
            "; then its tree is ended (SIGTERM, 5 s, SIGKILL)"
        } else {
            "; it is left running"
        });
        s
    }
}

/// What the command is given besides the target.
pub struct Options {
    pub kill: bool,
    pub bundle_root: PathBuf,
    pub interrupt: Interrupt,
}

/// How the collection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Done,
    /// Ctrl-C, SIGTERM or SIGHUP between (or during) the steps.
    Interrupted,
}

/// What a dump left.
pub struct Dumped {
    pub bundle: Bundle,
    pub analysis: Analysis,
    /// How it ended, or the error (a file of the bundle that could not be written) that ended it.
    pub outcome: Result<Ended>,
}

/// The recipe the manifest records: what was asked and what the target is (its command, its
/// allow-listed environment); redacted by the bundle.
fn recipe_value(t: &Target, kill: bool) -> serde_json::Value {
    let root = &t.members[0];
    let env: BTreeMap<&str, &str> = root
        .env
        .iter()
        .flatten()
        .filter(|(k, _)| {
            bundle::ENV_ALLOW.contains(&k.as_str())
                || bundle::ENV_ALLOW_PREFIXES.iter().any(|p| k.starts_with(p))
        })
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let processes: Vec<serde_json::Value> = t
        .members
        .iter()
        .map(|m| serde_json::json!({"pid": m.pid(), "argv": m.argv, "python": m.python, "cuda": m.cuda, "armed": m.armed()}))
        .collect();
    serde_json::json!({
        "name": RungId::Dump.name(),
        "description": "debug-ima dump PID: the evidence of a running process",
        "source": format!("debug-ima dump {}{}", t.root.pid, if kill { " --kill" } else { "" }),
        "pid": t.root.pid,
        "kill": kill,
        "cwd": root.cwd,
        "processes": processes,
        "environment": env,
    })
}

/// The secret values of the target's environments, to be redacted wherever they show up.
pub fn secret_env(t: &Target) -> Vec<(String, String)> {
    t.members.iter().flat_map(|m| m.env.iter().flatten().cloned()).collect()
}

/// Collects the evidence of `t` into a new bundle under `opts.bundle_root` and writes the
/// analysis; the outer error is the bundle's creation.
pub fn run(t: &Target, opts: &Options, progress: &dyn Progress) -> Result<Dumped> {
    let mut bundle = Bundle::create(&opts.bundle_root, RungId::Dump.name(), &recipe_value(t, opts.kill))?;
    bundle.start(BTreeMap::new(), vec![RungId::Dump])?;
    progress.status(&format!("bundle: {}", bundle.root().display()));
    let dir = bundle.rung_dir(1, RungId::Dump, 0)?;
    let mut w = Work {
        root: bundle.root().to_path_buf(),
        record: RungRecord {
            rung: RungId::Dump,
            dir: bundle.rel(&dir),
            status: RungStatus::Ran,
            duration_s: 0.0,
            commands: vec![],
            files: vec![],
            notes: vec![],
            inputs: vec![],
        },
        dir,
        found: Vec::new(),
        interrupt: opts.interrupt.clone(),
        progress,
    };
    let started = Instant::now();
    if t.left_out > 0 {
        w.note(format!(
            "{} more processes of the tree were not looked at (over {MAX_PROCESSES})",
            t.left_out
        ));
    }
    let mut outcome = w.collect(t, opts.kill);
    // With `--kill` the tree is ended however the collection went; without, left running.
    if opts.kill {
        w.end(t);
    } else {
        w.leave_running(t);
    }
    w.record.duration_s = started.elapsed().as_secs_f64();
    if opts.interrupt.is_set() {
        w.record.status = RungStatus::Interrupted;
        if outcome.is_ok() {
            outcome = Ok(Ended::Interrupted);
        }
    }
    if let Err(e) = &outcome {
        w.record.status = RungStatus::Failed;
        w.record.notes.push(format!("{e:#}"));
    }
    let Work { mut record, dir, found, .. } = w;
    bundle.note_redactions(found);
    redact_reports(&mut bundle, &dir, &mut record);
    record.files = bundle.files_of(&dir);
    let mut evidence = Vec::new();
    for f in record.files.iter().filter(|f| is_rung_output(Path::new(&f.path))) {
        if let Ok(ev) = scan_file(&bundle.root().join(&f.path)) {
            evidence.push(ev);
        }
    }
    let roots: Vec<String> = t.members[0]
        .cwd
        .iter()
        .map(|c| c.display().to_string())
        .filter(|c| c.starts_with('/') && c != "/")
        .collect();
    let mut analysis = decide_in(&evidence, &roots);
    if analysis.verdict.is_none() && t.without_cuda() {
        // Nothing on a GPU to look for: neither "no device fault was seen" nor the sweep.
        analysis.conclusion = format!(
            "no verdict: process {} does not use CUDA ({NO_CUDA}); its host stacks are in the bundle",
            t.root.pid
        );
    }
    for n in &record.notes {
        progress.status(&format!("    note: {n}"));
    }
    let interrupted = outcome.as_ref().is_ok_and(|e| *e == Ended::Interrupted);
    let left = match (opts.kill, foreign::same(t.root)) {
        (true, _) => "its tree was ended (`--kill`)",
        (false, true) => "it was left running",
        (false, false) => "it has exited meanwhile",
    };
    bundle.set_stopped(match &outcome {
        Ok(_) if interrupted => {
            format!("interrupted: the bundle keeps what was collected; process {}: {left}", t.root.pid)
        }
        Ok(_) => format!("dumped process {}: {left}", t.root.pid),
        Err(e) => format!("error: {e:#}"),
    });
    bundle.push_rung(record)?;
    bundle.write_analysis(&analysis)?;
    Ok(Dumped { bundle, analysis, outcome })
}

/// Redacts the reports the tools wrote themselves (the flight recorder's JSON) in place; logs
/// were redacted as they were written.
fn redact_reports(bundle: &mut Bundle, dir: &Path, record: &mut RungRecord) {
    for p in evidence::files(dir, "").into_iter().filter(|p| p.extension().is_some_and(|x| x == "json")) {
        let mut found = Vec::new();
        let place = bundle.rel(&p);
        if let Err(e) = bundle::redact_file(&p, &place, &mut found) {
            record.notes.push(format!("{e:#}: check `{place}` for secrets before sharing the bundle"));
        }
        bundle.note_redactions(found);
    }
}

/// A program on PATH, as the command names it; cuda-gdb also where the toolkit puts it (then by
/// its full path).
fn program(name: &str) -> Option<String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    if std::env::split_paths(&path).any(|d| is_executable(&d.join(name))) {
        return Some(name.to_string());
    }
    let toolkit = Path::new("/usr/local/cuda/bin").join(name);
    (name == "cuda-gdb" && is_executable(&toolkit)).then(|| toolkit.display().to_string())
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// gdb's host stacks of the running process `pid`, detached at the end (the explicit `detach`
/// names the pid: `[Inferior 1 (process PID) detached]`).
pub fn host_stacks(gdb: &str, pid: u32) -> Invocation {
    let mut argv: Vec<String> =
        vec![gdb.to_string(), "-batch".into(), "-nx".into(), "-p".into(), pid.to_string()];
    for c in ["set pagination off", "thread apply all bt", "detach"] {
        argv.extend(["-ex".to_string(), c.to_string()]);
    }
    Invocation { timeout: Some(HOST_TIMEOUT), ..Invocation::new(argv) }
}

/// cuda-gdb attached to the running process `pid`: the kernels, every thread grouped by PC and
/// line, the focused thread's stack (and every host thread's when `host` asks for them: a
/// native process without gdb), then `detach`. Without `host` the host libraries' symbols are
/// skipped (`set auto-solib-add off`: 2.1 s instead of 12.3 s for a Python process).
pub fn attach(cuda_gdb: &str, pid: u32, host: bool) -> Invocation {
    let mut argv: Vec<String> = vec![cuda_gdb.to_string(), "-batch".into(), "-nx".into()];
    if !host {
        argv.extend(["-iex".to_string(), "set auto-solib-add off".to_string()]);
    }
    argv.extend(["-p".to_string(), pid.to_string()]);
    let mut commands = vec!["set pagination off", "info cuda kernels", "info cuda threads", "bt"];
    if host {
        commands.push("thread apply all bt");
    }
    commands.push("detach");
    for c in commands {
        argv.extend(["-ex".to_string(), c.to_string()]);
    }
    Invocation { timeout: Some(ATTACH_TIMEOUT), ..Invocation::new(argv) }
}

/// The host name, as the driver puts it into the names it makes.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().trim().to_string()
}

/// A `CUDA_COREDUMP_*` template with `%h` (the host name) and `%p` filled, `%t` left.
fn fill(template: &str, pid: u32) -> String {
    template.replace("%h", &host_name()).replace("%p", &pid.to_string())
}

/// Whether `name` is `pattern` with each `%t` standing for digits.
fn matches_time(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split("%t").collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let Some(mut rest) = name.strip_prefix(parts[0]) else { return false };
    for (i, part) in parts.iter().enumerate().skip(1) {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return false;
        }
        rest = &rest[digits..];
        if i == parts.len() - 1 {
            return rest == *part;
        }
        let Some(r) = rest.strip_prefix(part) else { return false };
        rest = r;
    }
    false
}

/// The FIFOs among the open files of `pid` whose names pass `keep`.
fn open_fifos(pid: u32, keep: &dyn Fn(&str) -> bool) -> Vec<PathBuf> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return Vec::new() };
    let mut v: Vec<PathBuf> = fds
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter(|p| keep(&evidence::name_of(p)))
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.file_type().is_fifo()))
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The user-triggered dump's pipe of an armed process: `CUDA_COREDUMP_PIPE` filled in, else
/// a `corepipe*` FIFO it has open (the driver holds it open), else one whose name ends in its
/// pid in its working folder.
fn core_pipe(m: &Member) -> Option<PathBuf> {
    if let Some(t) = m.var("CUDA_COREDUMP_PIPE") {
        let p = m.at(&fill(t, m.pid()));
        if std::fs::metadata(&p).is_ok_and(|x| x.file_type().is_fifo()) {
            return Some(p);
        }
    }
    if let Some(p) = open_fifos(m.pid(), &|n| n.starts_with("corepipe")).into_iter().next() {
        return Some(p);
    }
    // The driver's own name is `corepipe_<host>_<pid>` (tests/fixtures/h200/dump).
    let cwd = m.cwd.as_ref()?;
    evidence::fifos(cwd, "corepipe", "").into_iter().find(|p| ends_in_pid(&evidence::name_of(p), m.pid()))
}

/// Whether a name's last `.` or `_` field is `pid` (`corepipe_vm_738`, `corepipe.vm.738`).
fn ends_in_pid(name: &str, pid: u32) -> bool {
    name.rsplit(['.', '_']).next() == Some(pid.to_string().as_str())
}

/// Whether `name` is a dump's (`core...`) holding `pid` as a `.` or `_` field
/// (`core_1796162904_vm_738.nvcudmp`).
fn dump_with_pid(name: &str, pid: u32) -> bool {
    let pid = pid.to_string();
    name.starts_with("core") && name.split(['.', '_']).any(|f| f == pid)
}

/// The newest GPU dump of `m` written since `since`: `CUDA_COREDUMP_FILE` filled in (`%t`
/// any number), else a `core*` file in its working folder whose name holds its pid (the
/// driver's own name is `core_<time>_<host>_<pid>.nvcudmp`, tests/fixtures/h200/dump).
fn dump_of(m: &Member, since: SystemTime) -> Option<PathBuf> {
    let pattern = m.var("CUDA_COREDUMP_FILE").map(|t| m.at(&fill(t, m.pid())));
    let dir = match &pattern {
        Some(p) => p.parent()?.to_path_buf(),
        None => m.cwd.clone()?,
    };
    let keep = |n: &str| match &pattern {
        Some(p) => matches_time(&evidence::name_of(p), n),
        None => dump_with_pid(n, m.pid()),
    };
    let modified = |p: &PathBuf| std::fs::metadata(p).and_then(|x| x.modified()).ok();
    evidence::files(&dir, "")
        .into_iter()
        .filter(|p| keep(&evidence::name_of(p)) && modified(p).is_some_and(|t| t + CLOCK_SLACK >= since))
        .max_by_key(modified)
}

/// The flight-recorder pipes of `m` (`<TORCH_NCCL_DEBUG_INFO_PIPE_FILE><rank>.pipe`, or a
/// `*.pipe` FIFO it has open) and where its traces go (`<TORCH_NCCL_DEBUG_INFO_TEMP_FILE>`).
fn nccl_pipes(m: &Member) -> (Vec<PathBuf>, PathBuf) {
    let mut pipes = open_fifos(m.pid(), &|n| n.ends_with(".pipe"));
    if let Some(p) = m.var("TORCH_NCCL_DEBUG_INFO_PIPE_FILE").filter(|p| !p.is_empty()) {
        let p = m.at(p);
        if let Some(dir) = p.parent() {
            pipes.extend(evidence::fifos(dir, &evidence::name_of(&p), ".pipe"));
        }
    }
    pipes.sort();
    pipes.dedup();
    let prefix = m
        .var("TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
        .or_else(|| m.var("TORCH_FR_DUMP_TEMP_FILE"))
        .filter(|p| !p.is_empty())
        .unwrap_or(TRACE_PREFIX_DEFAULT);
    (pipes, m.at(prefix))
}

/// The collection under way: the folder, its record, the redactions found.
struct Work<'p> {
    root: PathBuf,
    dir: PathBuf,
    record: RungRecord,
    found: Vec<Redaction>,
    interrupt: Interrupt,
    progress: &'p dyn Progress,
}

impl Work<'_> {
    fn note(&mut self, text: String) {
        self.record.notes.push(text);
    }

    fn stop(&self) -> bool {
        self.interrupt.is_set()
    }

    /// Runs one tool into the folder and records it; the error is the bundle's (a log that
    /// could not be written). A tool that could not start is a note and `None`.
    fn exec(&mut self, role: Role, inv: &Invocation, stem: &str) -> Result<Option<Exit>> {
        self.progress.status(&format!("==> {role} ({stem}.log)"));
        let (rec, result) = run_logged(
            &self.root,
            role,
            inv,
            &Place::HOST,
            layout::logs(&self.dir, stem),
            Some(&self.dir),
            &mut self.found,
            &self.interrupt,
            &mut |_, _| Control::Continue,
        )?;
        self.record.commands.push(rec);
        match result {
            Ok(o) => {
                if o.exit == Exit::TimedOut {
                    let secs = inv.timeout.map(|t| t.as_secs()).unwrap_or(0);
                    self.note(format!("{role} ({stem}) timed out after {secs} s and was killed"));
                }
                for n in o.notes() {
                    self.note(format!("{role}: {n}"));
                }
                Ok(Some(o.exit))
            }
            Err(e) => {
                self.note(format!("{role} could not run ({e:#})"));
                Ok(None)
            }
        }
    }

    /// [`Work::exec`] of a tool that ptraces `m`, then `m` back to running if the tool left it
    /// stopped (a debugger killed at its time limit or crashed while it held the process).
    fn traced(&mut self, m: &Member, role: Role, inv: &Invocation, stem: &str) -> Result<Option<Exit>> {
        let ran = self.exec(role, inv, stem)?;
        self.keep_running(m);
        Ok(ran)
    }

    fn keep_running(&mut self, m: &Member) {
        if m.stopped || !foreign::same(m.proc) || !foreign::stopped(m.pid()) {
            return;
        }
        if let Some(t) = foreign::tracer(m.pid()) {
            self.note(format!(
                "process {} is stopped and traced by process {t}, which is not this tool's",
                m.pid()
            ));
            return;
        }
        if foreign::resume(m.proc) {
            self.note(format!("process {} was left stopped by a debugger: sent SIGCONT", m.pid()));
        }
    }

    /// Steps 1 to 3; the error is the bundle's.
    fn collect(&mut self, t: &Target, kill: bool) -> Result<Ended> {
        if let Some(why) = &t.ptrace_denied {
            self.note(format!("no host stacks and no attach: ptrace is not permitted here ({why})"));
        }
        if t.members[0].env.is_none() {
            self.note(format!("cannot read the environment of process {}: whether it is armed for a user-triggered dump or has NCCL pipes is unknown", t.root.pid));
        }
        if t.ptrace_denied.is_none() {
            self.pyspy(t)?;
        }
        if self.stop() {
            return Ok(Ended::Interrupted);
        }
        self.nccl(t)?;
        if self.stop() {
            return Ok(Ended::Interrupted);
        }
        let gpu = t.gpu();
        if t.without_cuda() {
            self.note(format!("no GPU state was taken: {NO_CUDA}"));
            if t.ptrace_denied.is_none() {
                let native: Vec<&Member> = t.members.iter().filter(|m| !m.python).collect();
                self.host_stacks_only(&native)?;
            }
            return Ok(if self.stop() { Ended::Interrupted } else { Ended::Done });
        }
        let (armed, others): (Vec<&Member>, Vec<&Member>) = gpu.into_iter().partition(|m| m.armed());
        let mut attach: Vec<&Member> = others;
        if kill {
            let triggered = self.trigger(&armed)?;
            attach.extend(armed.iter().copied().filter(|m| !triggered.contains(&m.pid())));
        } else {
            for m in &armed {
                self.note(format!(
                    "process {} is armed for a user-triggered dump, but without `--kill` it is attached instead \
                     (the dump aborts it); after a cuda-gdb attach the driver no longer dumps it (`CUDA coredump \
                     is not supported with late attach`)",
                    m.pid()
                ));
            }
            attach.extend(armed);
        }
        attach.sort_by_key(|m| m.pid());
        if self.stop() {
            return Ok(Ended::Interrupted);
        }
        if t.ptrace_denied.is_none() {
            self.attach_all(&attach)?;
        }
        Ok(if self.stop() { Ended::Interrupted } else { Ended::Done })
    }

    /// Step 1: py-spy on every Python process.
    fn pyspy(&mut self, t: &Target) -> Result<()> {
        let python = t.python();
        if python.is_empty() {
            return Ok(());
        }
        let Some(py_spy) = program("py-spy") else {
            self.note(
                "py-spy is not installed, so there are no host stacks of the Python processes: install it (`pip \
                 install py-spy`; `cargo xtask doctor` checks it)"
                    .into(),
            );
            return Ok(());
        };
        for m in python {
            if self.stop() {
                break;
            }
            let mut inv = evidence::pyspy(&m.pid().to_string());
            inv.argv[0] = py_spy.clone();
            self.traced(m, Role::PySpy, &inv, &layout::pyspy_stem(m.pid()))?;
        }
        Ok(())
    }

    /// Step 2: the NCCL flight recorders, through their pipes.
    fn nccl(&mut self, t: &Target) -> Result<()> {
        let mut pipes: Vec<(PathBuf, PathBuf)> = Vec::new();
        for m in &t.members {
            let (ps, prefix) = nccl_pipes(m);
            for p in ps {
                if !pipes.iter().any(|(q, _)| *q == p) {
                    pipes.push((p, prefix.clone()));
                }
            }
        }
        if pipes.is_empty() {
            return Ok(());
        }
        let since = SystemTime::now() - CLOCK_SLACK;
        let mut wanted: BTreeMap<PathBuf, usize> = BTreeMap::new();
        for (p, prefix) in &pipes {
            match evidence::poke(p, b"1") {
                Wrote::Done => *wanted.entry(prefix.clone()).or_default() += 1,
                Wrote::NoReader => self.note(format!("nobody read the NCCL pipe `{}`", p.display())),
                Wrote::Failed(e) => self.note(format!("cannot write the NCCL pipe `{}`: {e}", p.display())),
            }
        }
        let python3 = program("python3");
        for (prefix, want) in wanted {
            let (Some(dir), name) = (prefix.parent(), evidence::name_of(&prefix)) else { continue };
            let interrupt = self.interrupt.clone();
            let traces = evidence::wait_for_traces(dir, &name, want, Some(since), &|| interrupt.is_set());
            if traces.len() < want {
                self.note(format!(
                    "{} of {want} NCCL flight-recorder dumps came within {} s (`{}<rank>`)",
                    traces.len(),
                    evidence::TRACE_WAIT.as_secs(),
                    prefix.display()
                ));
            }
            for trace in traces {
                self.convert(&trace, python3.as_deref())?;
            }
        }
        Ok(())
    }

    /// A flight-recorder dump (a pickle the target wrote) as JSON in the folder; only a regular
    /// file of this tool's user is unpickled (a pickle runs code when it is read).
    fn convert(&mut self, trace: &Path, python3: Option<&str>) -> Result<()> {
        let name = evidence::name_of(trace);
        let Some(json) = layout::nccl_json(&name) else {
            self.note(format!("the NCCL trace `{}` has no rank in its name: not converted", trace.display()));
            return Ok(());
        };
        let ours = std::fs::symlink_metadata(trace)
            .is_ok_and(|m| m.file_type().is_file() && Some(m.uid()) == foreign::euid());
        let how = format!(
            "`python3 -c 'import pickle,json,sys; print(json.dumps(pickle.load(open(sys.argv[1],\"rb\")),default=repr))' {}`",
            trace.display()
        );
        if !ours {
            self.note(format!(
                "the NCCL trace `{}` is not a file of this tool's user, so it was not unpickled (a pickle runs code \
                 when read); convert it yourself if you trust it: {how}",
                trace.display()
            ));
            return Ok(());
        }
        let Some(py) = python3 else {
            self.note(format!("no python3 to convert the NCCL trace `{}`: {how}", trace.display()));
            return Ok(());
        };
        let mut inv = evidence::trace_to_json_at(trace, &self.dir.join(&json));
        inv.argv[0] = py.to_string();
        let stem = format!("{}-json", json.trim_end_matches(".json"));
        if self.exec(Role::Python, &inv, &stem)? != Some(Exit::Code(0)) {
            self.note(format!("could not convert the NCCL trace `{}` to JSON: {how}", trace.display()));
        }
        Ok(())
    }

    /// Step 3 with `--kill`: one byte into each armed process's pipe, nothing attached; waits for
    /// the dumps, moves each into the folder and reads it. Returns the pids triggered.
    fn trigger(&mut self, armed: &[&Member]) -> Result<Vec<u32>> {
        let since = SystemTime::now() - CLOCK_SLACK;
        // The youngest process first (a child before its parent), as the hang rung does.
        let mut armed = armed.to_vec();
        evidence::youngest_first(&mut armed, |m| m.pid());
        let mut triggered: Vec<&Member> = Vec::new();
        let interrupt = self.interrupt.clone();
        let size_of = |m: &Member| dump_of(m, since).and_then(|p| std::fs::metadata(p).ok()).map(|x| x.len());
        let mut left = Vec::new();
        for m in &armed {
            if !foreign::same(m.proc) {
                self.note(format!("process {} exited before its pipe was triggered: no dump of it", m.pid()));
                continue;
            }
            let Some(pipe) = core_pipe(m) else {
                self.note(format!(
                    "process {} is armed for a user-triggered dump but no pipe of it was found (`CUDA_COREDUMP_PIPE`, \
                     its open files, `corepipe*` in its folder): it may not have initialised CUDA yet",
                    m.pid()
                ));
                continue;
            };
            match evidence::poke(&pipe, b"1") {
                // One at a time, each dump waited for before the next trigger: triggered together
                // on one GPU, one of three processes wrote no dump in 2 of 3 runs on the H200
                // (docs/validation.md §23).
                Wrote::Done => {
                    triggered.push(m);
                    self.progress.status(&format!("GPU dump triggered in process {}: waiting for it", m.pid()));
                    let size = |_: u32| size_of(m);
                    left.extend(evidence::wait_for_dumps(&[m.pid()], &size, &|| interrupt.is_set()));
                }
                Wrote::NoReader => self.note(format!(
                    "process {} did not read its pipe `{}` within {} s: no dump of it (is a debugger attached to \
                     it, or was one? docs/hangs.md)",
                    m.pid(),
                    pipe.display(),
                    evidence::OPEN_RETRY.as_secs()
                )),
                Wrote::Failed(e) => self.note(format!("cannot write the pipe `{}`: {e}", pipe.display())),
            }
        }
        if triggered.is_empty() {
            return Ok(Vec::new());
        }
        let pids: Vec<u32> = triggered.iter().map(|m| m.pid()).collect();
        self.note(format!(
            "triggered a GPU coredump of process{} {} (one byte into each pipe, one after the other)",
            if pids.len() == 1 { "" } else { "es" },
            pids.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
        ));
        for (pid, state) in left {
            self.note(format!(
                "process {pid} had not exited {} s after its trigger ({state})",
                evidence::DUMP_WAIT.as_secs()
            ));
        }
        let cuda_gdb = program("cuda-gdb");
        for m in &triggered {
            if self.stop() {
                break;
            }
            let Some(dump) = dump_of(m, since) else {
                self.note(format!(
                    "no GPU dump of process {} was found (`CUDA_COREDUMP_FILE`, or its folder)",
                    m.pid()
                ));
                continue;
            };
            let secs = std::fs::metadata(&dump)
                .and_then(|x| x.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_secs());
            let kept = self.dir.join(layout::dump_file(&host_name(), m.pid(), secs));
            let dump = match std::fs::rename(&dump, &kept) {
                Ok(()) => kept,
                Err(e) => {
                    self.note(format!(
                        "the GPU dump `{}` stays where the driver wrote it ({e})",
                        dump.display()
                    ));
                    dump
                }
            };
            let Some(cg) = &cuda_gdb else {
                self.note(format!("cuda-gdb is not installed: the dump `{}` was not read", dump.display()));
                continue;
            };
            let mut inv = evidence::gdb(&dump);
            inv.argv[0] = cg.clone();
            self.exec(Role::CudaGdb, &inv, &layout::dump_read_stem(m.pid()))?;
        }
        Ok(pids)
    }

    /// Step 3 otherwise: gdb's host stacks of each native process, then a cuda-gdb attach.
    /// gdb's host stacks of `members`, processes without CUDA: no cuda-gdb.
    fn host_stacks_only(&mut self, members: &[&Member]) -> Result<()> {
        let Some(gdb) = program("gdb") else {
            if !members.is_empty() {
                self.note("gdb is not installed: no host stacks of the native processes were taken".into());
            }
            return Ok(());
        };
        for m in members {
            if self.stop() {
                break;
            }
            if foreign::same(m.proc) {
                self.traced(m, Role::Gdb, &host_stacks(&gdb, m.pid()), &layout::host_stacks_stem(m.pid()))?;
            }
        }
        Ok(())
    }

    fn attach_all(&mut self, members: &[&Member]) -> Result<()> {
        let gdb = program("gdb");
        let cuda_gdb = program("cuda-gdb");
        if cuda_gdb.is_none() && !members.is_empty() {
            self.note(
                "cuda-gdb is not installed (`cargo xtask doctor` says how): no GPU state was taken".into(),
            );
        }
        for m in members {
            if self.stop() {
                break;
            }
            if !foreign::same(m.proc) {
                self.note(format!("process {} exited before it was attached", m.pid()));
                continue;
            }
            let host_from_gdb = !m.python && gdb.is_some();
            if let (false, Some(g)) = (m.python, &gdb) {
                self.traced(m, Role::Gdb, &host_stacks(g, m.pid()), &layout::host_stacks_stem(m.pid()))?;
                if self.stop() {
                    break;
                }
            }
            if let Some(cg) = &cuda_gdb {
                let host = !m.python && !host_from_gdb;
                self.traced(m, Role::CudaGdb, &attach(cg, m.pid(), host), &layout::attach_stem(m.pid()))?;
            }
        }
        Ok(())
    }

    /// Step 4 with `--kill`.
    fn end(&mut self, t: &Target) {
        let known: Vec<Proc> = t.members.iter().map(|m| m.proc).collect();
        let ended = foreign::end_tree(t.root, &known, TERM_GRACE);
        let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
        if ended.termed.is_empty() {
            self.note(format!("the tree of process {} had already ended (`--kill`)", t.root.pid));
            return;
        }
        let mut s = format!(
            "ended the tree of process {} (`--kill`): SIGTERM to {}",
            t.root.pid,
            list(&ended.termed)
        );
        if !ended.killed.is_empty() {
            s.push_str(&format!(", SIGKILL {} s later to {}", TERM_GRACE.as_secs(), list(&ended.killed)));
        }
        self.note(s);
        if !ended.left.is_empty() {
            self.note(format!(
                "still there after SIGKILL: {} (stuck in the kernel or the driver?)",
                list(&ended.left)
            ));
        }
    }

    /// Step 4 without `--kill`: every process that was running runs still.
    fn leave_running(&mut self, t: &Target) {
        for m in &t.members {
            self.keep_running(m);
            if m.stopped && foreign::same(m.proc) {
                self.note(format!("process {} was stopped before this tool looked, and is left so", m.pid()));
            }
        }
        if !foreign::same(t.root) {
            self.note(format!("process {} has exited meanwhile", t.root.pid));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_driver_default_names_are_found_by_pid() {
        // The names the H200's driver chose (tests/fixtures/h200/dump/hang_flag_armed_default).
        assert!(dump_with_pid("core_1796162904_vm_738.nvcudmp", 738));
        assert!(!dump_with_pid("core_1796162904_vm_7381.nvcudmp", 738));
        assert!(!dump_with_pid("notes_738.txt", 738));
        assert!(ends_in_pid("corepipe_vm_738", 738) && ends_in_pid("corepipe.vm.738", 738));
        assert!(!ends_in_pid("corepipe_vm_7381", 738));
    }

    #[test]
    fn dump_names_take_their_time_as_digits() {
        assert!(matches_time("core.vm.584.%t", "core.vm.584.1796145815"));
        assert!(!matches_time("core.vm.584.%t", "core.vm.584."));
        assert!(!matches_time("core.vm.584.%t", "core.vm.5841.1796145815"));
        assert!(matches_time("core_%t_vm_7.nvcudmp", "core_12_vm_7.nvcudmp"));
        assert!(!matches_time("core_%t_vm_7.nvcudmp", "core_12_vm_7.nvcudmp.tmp"));
        assert!(matches_time("dump", "dump"));
    }

    #[test]
    fn the_attach_is_the_recorded_command_and_detaches() {
        assert_eq!(
            attach("cuda-gdb", 584, false).shell_line(),
            "cuda-gdb -batch -nx -iex 'set auto-solib-add off' -p 584 -ex 'set pagination off' -ex 'info cuda \
             kernels' -ex 'info cuda threads' -ex bt -ex detach"
        );
        let with_host = attach("cuda-gdb", 584, true).shell_line();
        assert!(
            !with_host.contains("auto-solib-add") && with_host.contains("'thread apply all bt' -ex detach")
        );
        assert_eq!(
            host_stacks("gdb", 584).shell_line(),
            "gdb -batch -nx -p 584 -ex 'set pagination off' -ex 'thread apply all bt' -ex detach"
        );
    }

    #[test]
    fn bad_pids_are_usage_errors() {
        for pid in [0, 1, std::process::id()] {
            let e = Target::survey(pid).unwrap_err();
            assert!(Usage::is_in(&e), "{pid}: {e:#}");
        }
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let e = Target::survey(gone).unwrap_err();
        assert!(Usage::is_in(&e) && format!("{e:#}").contains("does not exist"), "{e:#}");
    }
}

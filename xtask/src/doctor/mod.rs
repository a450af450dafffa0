//! `cargo xtask doctor`: checks what the ladder needs (a GPU and its driver, nvcc,
//! cuobjdump, cuda-gdb, compute-sanitizer, the debugger back-end, ptrace permission, a
//! writable TMPDIR, room for coredumps) and says how to fix what is missing. `debug-ima`
//! runs the same checks first ([`gate`]): it skips the rungs of its default plan that cannot
//! run here, saying so, and stops within seconds when one it needs cannot (the baseline, a
//! rung named with `--rungs`, a build that runs a missing `nvcc`), as doctor's table says.
//!
//! With a container ([`Options::container`]) it also checks the runtime, the image and the
//! GPU plumbing, and looks for the tools inside the image with one probe run there (the
//! script [`IMAGE_PROBE_SCRIPT`], which prints `key=value` lines that [`parse_image_probe`]
//! reads); the host's GPU, ptrace, coredump space and core pattern stay host checks.
//!
//! Two layers. [`gather`] is the impure one: through a [`Probe`] it runs short commands
//! (`nvidia-smi`, `nvcc --version`, `df -Pk`, `ldconfig -p`), each killed after
//! [`PROBE_TIMEOUT`] at most and all at once in threads, and reads files (`/proc`); what
//! it saw is kept raw in [`Facts`]. [`evaluate`] is pure: facts in, [`Check`]s out, so the
//! tests feed it outputs recorded on a real H200 and on a machine without a GPU.
//!
//! Must not: print (rendering returns a string; `ui` prints), change the machine (the
//! only writes are a probe file created and removed at once to test that a directory is
//! writable, and the probe's container, started with `--rm` and removed by name if it
//! outlives its timeout; no image is pulled), run any probe longer than [`PROBE_TIMEOUT`]
//! (the one inside an image: [`IMAGE_PROBE_TIMEOUT`]), or start a process that it does not
//! kill when the timeout passes.

mod checks;
mod container;
mod facts;
mod probe;
mod report;

pub use checks::*;
pub use container::*;
pub use facts::*;
pub use probe::*;
pub use report::*;

use crate::model::{Need, RungId};
pub use crate::process::short::Output;
use anyhow::{bail, Result};
use std::path::Path;
use std::thread;

/// Runs every check `opts` asks for on this machine. Takes about [`PROBE_TIMEOUT`] at
/// worst (a hanging `nvidia-smi`); on a machine without a GPU, well under a second.
pub fn run_checks(opts: &Options) -> Report {
    evaluate(&gather(&SystemProbe, opts))
}

/// Looks at the machine through `probe`, for the checks `opts` asks for. The commands run
/// in parallel threads, each within [`PROBE_TIMEOUT`] (the probe inside a container image
/// within [`IMAGE_PROBE_TIMEOUT`]). With a container, the host's CUDA tools, debugger
/// back-end and TMPDIR are not probed: the image's are.
pub fn gather(probe: &dyn Probe, opts: &Options) -> Facts {
    let target = opts.container_target();
    let tools: Vec<(&str, Need)> = [
        ("nvcc", Need::Nvcc),
        ("cuobjdump", Need::Cuobjdump),
        ("cuda-gdb", Need::CudaGdb),
        ("compute-sanitizer", Need::ComputeSanitizer),
        ("py-spy", Need::PySpy),
    ]
    .into_iter()
    .filter(|(_, need)| opts.wants(*need))
    .collect();
    let (host_tools, in_image_checks): (Vec<&str>, Vec<String>) = match target {
        None => (tools.iter().map(|(name, _)| *name).collect(), Vec::new()),
        Some(_) => {
            let mut names: Vec<String> = tools.iter().map(|(name, _)| name.to_string()).collect();
            if opts.wants(Need::DebuggerBackend) {
                names.push("cuda-debugger-backend".into());
            }
            if opts.wants(Need::Tmpdir) {
                names.push("tmpdir".into());
            }
            (Vec::new(), names)
        }
    };
    let on_host = target.is_none();
    thread::scope(|s| {
        let gpu = s.spawn(|| probe_gpu(probe, opts.wait_for_gpu));
        let tools: Vec<_> =
            host_tools.iter().map(|name| s.spawn(move || probe_tool(probe, name, &["--version"]))).collect();
        let backend =
            (on_host && opts.wants(Need::DebuggerBackend)).then(|| s.spawn(|| probe_backend(probe)));
        let space =
            opts.wants(Need::CoredumpSpace).then(|| s.spawn(|| probe_space(probe, &opts.coredump_dir)));
        let container = target.map(|t| {
            let uid_wanted = opts.wants(Need::Ptrace);
            s.spawn(move || probe_container(probe, t, in_image_checks, uid_wanted))
        });
        let plumbing = target.filter(|t| t.gpus).map(|t| s.spawn(move || probe_plumbing(probe, t.runtime)));
        let tmpdir = (on_host && opts.wants(Need::Tmpdir)).then(|| probe_tmpdir(probe));
        let ptrace = opts.wants(Need::Ptrace).then(|| PtraceFacts {
            proc_status: probe.read_file(Path::new("/proc/self/status")),
            ptrace_scope: probe.read_file(Path::new("/proc/sys/kernel/yama/ptrace_scope")),
        });
        let core = opts.wants(Need::CoredumpSpace).then(|| CoreFacts {
            core_pattern: probe.read_file(Path::new("/proc/sys/kernel/core_pattern")),
            limits: probe.read_file(Path::new("/proc/self/limits")),
        });
        fn join<T>(h: thread::ScopedJoinHandle<'_, T>) -> T {
            h.join().expect("a doctor probe panicked")
        }
        let container = container.map(|h| ContainerFacts { plumbing: plumbing.map(join), ..join(h) });
        Facts {
            gpu: Some(join(gpu)),
            tools: tools.into_iter().map(join).collect(),
            debugger_backend: backend.map(join),
            ptrace,
            tmpdir,
            coredump: space.map(join),
            core,
            container,
        }
    })
}

/// Every check for the facts gathered, in a fixed order.
pub fn evaluate(facts: &Facts) -> Report {
    let mut checks = Vec::new();
    if let Some(gpu) = &facts.gpu {
        checks.push(check_gpu(gpu));
    }
    let mut in_image = None;
    match &facts.container {
        None => {
            let nvcc = facts.tools.iter().find(|t| t.name == "nvcc");
            if let (Some(gpu), Some(nvcc)) = (&facts.gpu, nvcc) {
                checks.extend(check_driver_toolkit(gpu, nvcc));
            }
            for tool in &facts.tools {
                checks.push(check_tool(tool));
            }
            if let Some(b) = &facts.debugger_backend {
                checks.push(check_debugger_backend(b));
            }
            if facts.gpu.is_some() && checks.first().is_some_and(|g| g.status != Status::Missing) {
                if let Some(nvcc) = checks.iter_mut().find(|c| c.name == "nvcc") {
                    explain_missing_nvcc(nvcc);
                }
            }
        }
        Some(c) => {
            let runtime = check_runtime(c);
            let image = check_image(c, &runtime);
            let outcome = image_probe_outcome(c, &runtime, &image);
            checks.push(runtime);
            if let Some(p) = &c.plumbing {
                checks.push(check_gpu_plumbing(c.target.runtime, p));
            }
            checks.push(image);
            let wants = |name: &str| c.in_image_checks.iter().any(|n| n == name);
            if let (Some(gpu), Ok(found), true) = (&facts.gpu, &outcome, wants("nvcc")) {
                checks.extend(check_image_driver_toolkit(gpu, &c.target, found));
            }
            for name in c.in_image_checks.iter().filter(|n| *n != "tmpdir") {
                checks.push(check_in_image(name, &c.target, &outcome));
            }
            in_image = Some((c, outcome));
        }
    }
    if let Some(p) = &facts.ptrace {
        checks.push(match &in_image {
            None => check_ptrace(p),
            Some((c, outcome)) => {
                let uid = outcome.as_ref().ok().and_then(|found| found.uid);
                check_ptrace_in_container(p, c.target.runtime, uid)
            }
        });
    }
    if let Some(t) = &facts.tmpdir {
        checks.push(check_tmpdir(t));
    }
    if let Some((c, outcome)) = &in_image {
        if c.in_image_checks.iter().any(|n| n == "tmpdir") {
            checks.push(check_in_image("tmpdir", &c.target, outcome));
        }
    }
    if let Some(s) = &facts.coredump {
        checks.push(check_space(s));
    }
    if let Some(c) = &facts.core {
        checks.push(check_core_pattern(c));
    }
    Report { checks }
}

/// Whether `nvidia-smi` cannot even be found: known at once, without running anything, so
/// `debug-ima` can say so before it asks its questions. The check, as doctor reports it.
pub fn gpu_not_found() -> Option<Check> {
    let found = locate(&SystemProbe, "nvidia-smi");
    matches!(found, Found::NotFound { .. })
        .then(|| check_gpu(&ToolFacts { name: "nvidia-smi".to_string(), found, output: None }))
}

/// What `debug-ima` runs of `plan` on this machine, and why it leaves some out. With a rung
/// that cannot run here: when the user named it (`explicit`, `--rungs`), or it is the
/// baseline, or the recipe's build runs `nvcc` (`build_runs_nvcc`: every rung runs the
/// target it builds) and `nvcc` is missing, the run stops with [`require`]'s error naming
/// every missing check and its fix. Otherwise the rung is left out of the plan, and the
/// second value says which and why, for the user (doctor's table says the same: "the rungs
/// that need it will be skipped").
pub fn gate(
    report: &Report,
    plan: &[RungId],
    explicit: bool,
    build_runs_nvcc: bool,
) -> Result<(Vec<RungId>, Vec<String>)> {
    let blocked = |r: RungId| report.missing_for(&[r]);
    let nvcc = report.get("nvcc").filter(|c| c.status == Status::Missing);
    if let (true, Some(nvcc), true) = (build_runs_nvcc, nvcc, report.has_gpu()) {
        let mut msg = format!(
            "this machine cannot run the ladder for this recipe: its build step runs `nvcc`, and every rung \
             runs the target it builds\n  nvcc: {}",
            nvcc.detail
        );
        if let Some(fix) = &nvcc.fix {
            msg.push_str(&format!("\n    fix: {fix}"));
        }
        msg.push_str("\n`cargo xtask doctor` lists every check");
        bail!(msg);
    }
    let stops = plan.iter().any(|&r| !blocked(r).is_empty() && (explicit || r == RungId::Baseline));
    if stops || !report.has_gpu() {
        require(report, plan)?;
    }
    let mut runs = Vec::new();
    let mut skipped = Vec::new();
    for &r in plan {
        let missing = blocked(r);
        if missing.is_empty() {
            runs.push(r);
        } else {
            let what: Vec<String> = missing.iter().map(|c| format!("{} ({})", c.name, c.detail)).collect();
            skipped.push(format!(
                "skipping {r}: it needs what is missing here: {}; `cargo xtask doctor` says how to fix it",
                what.join(", ")
            ));
        }
    }
    if runs.is_empty() {
        // Only a plan without the baseline gets here: every rung in it is blocked.
        require(report, plan)?;
    }
    Ok((runs, skipped))
}

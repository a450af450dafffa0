//! Rung 11, repro (`--repro`; docs/repro.md): a standalone reproducer of the faulting launch.
//! For a Triton kernel the target runs once more under `CUDA_LAUNCH_BLOCKING=1` with the launch
//! recorder in capture mode for the verdict's kernel (`DEBUG_IMA_CAPTURE`), which keeps each
//! launch of that kernel before it starts and writes the one that faulted; `repro/repro.py` is
//! written from it (`findings::repro::python`), redacted like every file of the bundle, and run
//! alone under the GPU coredump, whose dump cuda-gdb reads: only when it faults in the same
//! kernel at the same line with the same class is it called verified (`repro/result.json` says
//! what it showed either way).
//!
//! For a kernel that is no Triton kernel (an ATen kernel, an extension's), the operator call
//! that raised is captured instead (`DEBUG_IMA_CAPTURE_OPS`: a TorchDispatchMode) and the
//! reproducer calls that operator. A native target's kernel is captured by a CUPTI injection
//! library and reproduced by a driver-API program (`repro_native`). It runs on the host or
//! through Slurm (the capture is not loaded in a container): for anything else it says why
//! there is no reproducer and runs nothing. Its folder is `repro/`, beside `rungs/`: its runs
//! are no evidence about the target.
//!
//! Must not: run a step but through [`RungIo`], print, decide when it runs (the policy), or
//! put a capture's text into the program unchecked (the writer's contract).

use std::path::Path;

use anyhow::{Context, Result};

use super::api::{step, Ran, Rung, RungIo, Step, StepCx, When};
use super::armed;
use super::build::{target, with_options};
use super::coredump::reading_steps;
use crate::bundle::layout;
use crate::findings::repro::capture::{self, Capture};
use crate::findings::repro::{python, Expected, Outcome, Status};
use crate::findings::verdict::Verdict;
use super::repro_check::{finish, latest_capture, others_note, verify, SUSPECT_KERNEL};
use super::repro_native as native;
use crate::ladder::recorder;
use crate::model::{Invocation, Role, RungId};
use crate::recipe::Resolved;

pub struct Repro;

/// The reproducer's own run: long enough for `import torch` and a Triton compile, far from
/// the minutes a target may take.
const REPRO_TIMEOUT_S: u64 = 180;

/// The capture run: the target under launch-blocking, the recorder capturing [`SUSPECT_KERNEL`].
pub fn capture_invocation(r: &Resolved, dir: &Path) -> Invocation {
    let mut inv = target(r);
    inv.set("CUDA_LAUNCH_BLOCKING", "1");
    inv.set(recorder::CAPTURE_VAR, SUSPECT_KERNEL);
    inv.set(recorder::CAPTURE_DIR_VAR, dir.display().to_string());
    with_options(inv, r, RungId::Repro)
}

/// The reproducer's run: the target's interpreter (its command's first `python*`, else
/// `python3`), environment and folder, with the GPU coredump on exception into `dir`.
pub fn repro_invocation(r: &Resolved, dir: &Path) -> Invocation {
    let mut inv = target(r);
    let python = inv
        .argv
        .iter()
        .find(|a| Path::new(a).file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("python")))
        .cloned()
        .unwrap_or_else(|| "python3".to_string());
    inv.argv = vec![python, dir.join(layout::REPRO_SCRIPT).display().to_string()];
    armed::on_exception(&mut inv, dir, layout::DUMP_PREFIX);
    inv.set("CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION", "0");
    inv.timeout = Some(std::time::Duration::from_secs(REPRO_TIMEOUT_S));
    inv
}

/// Whether a kernel name is a Triton kernel's (a Python identifier: a CUDA C++ or ATen kernel
/// carries `::`, a signature or template arguments).
pub fn triton_kernel(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Why no reproducer can be written for this verdict and recipe, if none can.
pub fn not_applicable(v: Option<&Verdict>, in_container: bool) -> Option<String> {
    if v.is_none() {
        return Some("no verdict names a faulting kernel, so there is no launch to reproduce".into());
    }
    if in_container {
        return Some("the launch capture is not loaded into a container's run".into());
    }
    None
}

impl Rung for Repro {
    fn id(&self) -> RungId {
        RungId::Repro
    }

    fn describe(&self) -> &'static str {
        "write a standalone reproducer of the faulting launch (a Triton kernel's, the PyTorch operator \
         call that ran the kernel, or a CUDA C++ kernel's): one more run of the target under \
         `CUDA_LAUNCH_BLOCKING=1` capturing it, then `repro/`, run alone under the GPU coredump to check \
         it faults the same way"
    }

    fn needs_fault(&self) -> bool {
        true
    }

    fn gives_evidence(&self) -> bool {
        false
    }

    fn steps(&self, cx: &StepCx) -> Vec<Step> {
        let mut steps = if cx.recipe.python {
            vec![
                Step::target(capture_invocation(cx.recipe, &cx.dir)),
                Step::new(Role::Reproducer, repro_invocation(cx.recipe, &cx.dir), "repro-run").when(When::Reproducer),
            ]
        } else {
            vec![
                Step::new(Role::Build, native::library_invocation(&cx.dir), "capture-library").when(When::CaptureLibrary),
                Step::target(native::capture_invocation(cx.recipe, &cx.dir)),
                Step::new(Role::Build, native::build_invocation(cx.recipe, &cx.dir), "repro-build").when(When::ReproBuild),
                Step::new(Role::Reproducer, native::repro_invocation(cx.recipe, &cx.dir), "repro-run")
                    .when(When::Reproducer),
            ]
        };
        // The reproducer leaves no CPU core to read: only its GPU dump.
        steps.extend(reading_steps(cx).into_iter().filter(|s| s.when != When::PerCpuCore));
        steps
    }

    fn run(&self, io: &mut dyn RungIo, steps: &[Step]) -> Result<Ran> {
        let verdict = io.verdict();
        if let Some(why) = not_applicable(verdict.as_ref(), io.in_container()) {
            io.note(format!("no reproducer: {why}"));
            return Ok(Ran::default());
        }
        let v = verdict.expect("not_applicable says None only with a verdict");
        if !io.recipe().python {
            return native::run(io, steps, &v);
        }
        let expected = Expected::of(&v);
        let mut capture_step = step(steps, When::Always)?.clone();
        capture_step.inv.set(recorder::CAPTURE_VAR, v.kernel.clone());
        if !triton_kernel(&v.kernel) {
            // A PyTorch operator's kernel (ATen's, an extension's): the operator call is captured.
            capture_step.inv.set(recorder::CAPTURE_OPS_VAR, "1");
        }
        let ran = io.exec(&capture_step)?;
        let dir = io.dir().to_path_buf();
        let mut outcome = Outcome {
            status: Status::NotWritten,
            script: None,
            expected: expected.clone(),
            seen: None,
            notes: vec![],
            seconds: None,
        };
        let Some((c, others)) = latest_capture(&dir, layout::CAPTURE_PREFIX, capture::parse, &mut outcome.notes)? else {
            outcome.notes.push(format!(
                "the capture run ({}) recorded no {} of `{}`{}",
                ran.text(),
                if triton_kernel(&v.kernel) { "launch" } else { "operator call that raised for the kernel" },
                v.kernel,
                if ran.success() { ": it did not fault this time" } else { "" }
            ));
            return finish(io, &dir, outcome, ran.success());
        };
        outcome.notes.extend(others_note(others, c.pid));
        if ran.success() {
            outcome.notes.push(
                "the capture run did not fault (the fault is intermittent, or launch-blocking hides it): \
                 the reproducer holds the last launch of the kernel, which need not be the one that faulted"
                    .into(),
            );
        }
        let written = python::write(&c, &expected);
        outcome.notes.extend(written.notes);
        let mut found = Vec::new();
        let script = crate::redact::redact_text(&written.script, layout::REPRO_SCRIPT, &mut found);
        if !found.is_empty() {
            outcome.notes.push(format!(
                "redaction replaced {} value(s) in the script; the run below is of the redacted script",
                found.len()
            ));
        }
        let path = dir.join(layout::REPRO_SCRIPT);
        std::fs::write(&path, script).with_context(|| format!("cannot write {}", path.display()))?;
        outcome.script = Some(format!("{}/{}", layout::repro_dir(), layout::REPRO_SCRIPT));
        let floats = unrecorded_floats(&c);
        verify(io, steps, &dir, &mut outcome, floats)?;
        finish(io, &dir, outcome, ran.success())
    }
}


/// For a reproducer that ran clean: the float storages it filled with random values, whose
/// contents the fault may have depended on (an index computed from a float tensor).
fn unrecorded_floats(c: &Capture) -> Option<String> {
    let floats = c.storages.iter().filter(|s| s.values.is_none() && s.left_out.is_some()).count();
    (floats > 0).then(|| {
        format!(
            "the kernel reads {floats} storage(s) whose contents were not recorded (float tensors get random values): if the faulting address is computed from their values, the \
             fault depends on data the reproducer does not have"
        )
    })
}


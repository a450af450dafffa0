//! The repro rung's native half (docs/repro.md, "A CUDA C++ kernel"): the CUPTI capture
//! library built in `repro/` from `ladder/capture_native.c`, the capture run that loads it
//! (`CUDA_INJECTION64_PATH`) under launch-blocking, `repro_driver.cu` and `build.sh` written from
//! the capture (`findings::repro::native`), the build (the kernel's source file into
//! `kernel.cubin`, the driver into `repro`), and the check the Python half makes too
//! (`repro_check::verify`).
//!
//! Must not: run a step but through [`RungIo`], print, or build anything outside the rung's
//! folder (the user's translation unit is only read, by nvcc).

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};

use super::armed;
use super::build::{target, with_options};
use super::repro_check::{finish, holds_inputs, latest_capture, others_note, verify, SUSPECT_KERNEL};
use crate::bundle::layout;
use crate::findings::repro::native;
use crate::findings::repro::{Expected, Outcome, Status};
use crate::findings::verdict::Verdict;
use crate::ladder::recorder;
use crate::ladder::rung::api::{exec, step, Ran, RungIo, Step, When, SOURCE};
use crate::model::invocation::quote;
use crate::model::{Invocation, RungId};
use crate::recipe::Resolved;

/// The capture library's source, written into the rung's folder and built there.
pub const LIBRARY_SOURCE: &str = include_str!("../../capture_native.c");
const LIBRARY_C: &str = layout::CAPTURE_LIBRARY_SOURCE;
const LIBRARY: &str = layout::CAPTURE_LIBRARY;
const DRIVER: &str = layout::REPRO_DRIVER;
const BUILD: &str = layout::REPRO_BUILD;
const PREFIX: &str = layout::NATIVE_CAPTURE_PREFIX;

/// `cc` on the capture library, with CUDA's and CUPTI's headers and libraries found from the
/// `nvcc` on `PATH` (or `CUDA_HOME`): CUPTI comes with every CUDA toolkit.
pub fn library_invocation(dir: &Path) -> Invocation {
    let script = format!(
        "set -e; cuda=${{CUDA_HOME:-$(dirname \"$(dirname \"$(command -v nvcc)\")\")}}; \
         inc=$(dirname \"$(find \"$cuda\"/ -name cupti.h 2>/dev/null | head -1)\"); \
         lib=$(dirname \"$(find \"$cuda\"/ -name libcupti.so 2>/dev/null | head -1)\"); \
         cc -shared -fPIC -O1 -I\"$cuda/include\" -I\"$inc\" \"$1/{LIBRARY_C}\" -o \"$1/{LIBRARY}\" \
         -L\"$lib\" -Wl,-rpath,\"$lib\" -L\"$cuda/lib64/stubs\" -L\"$cuda/targets/x86_64-linux/lib/stubs\" \
         -lcupti -lcuda"
    );
    let mut inv =
        Invocation::new(vec!["sh".into(), "-c".into(), script, "sh".into(), dir.display().to_string()]);
    inv.timeout = Some(Duration::from_secs(120));
    inv
}

/// The capture run: the target under launch-blocking with the library injected.
pub fn capture_invocation(r: &Resolved, dir: &Path) -> Invocation {
    let mut inv = target(r);
    inv.set("CUDA_LAUNCH_BLOCKING", "1");
    inv.set("CUDA_INJECTION64_PATH", dir.join(LIBRARY).display().to_string());
    inv.set(recorder::CAPTURE_VAR, SUSPECT_KERNEL);
    inv.set(recorder::CAPTURE_DIR_VAR, dir.display().to_string());
    with_options(inv, r, RungId::Repro)
}

/// `build.sh SOURCE`, where the target runs.
pub fn build_invocation(r: &Resolved, dir: &Path) -> Invocation {
    let mut inv = Invocation::new(vec!["sh".into(), dir.join(BUILD).display().to_string(), SOURCE.into()]);
    inv.cwd = r.run.cwd.clone();
    inv.timeout = Some(Duration::from_secs(300));
    inv
}

/// The reproducer's run, under the GPU coredump.
pub fn repro_invocation(r: &Resolved, dir: &Path) -> Invocation {
    let mut inv = target(r);
    inv.argv = vec![
        dir.join(layout::repro_binary()).display().to_string(),
        dir.join(layout::REPRO_CUBIN).display().to_string(),
    ];
    armed::on_exception(&mut inv, dir, layout::DUMP_PREFIX);
    inv.set("CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION", "0");
    inv.timeout = Some(Duration::from_secs(120));
    inv
}

/// The kernel's name as the mangled symbol holds it, `<length><identifier>` (`11scale_write`
/// for `scale_write(float*, int, long long)`, `5scale` for `void ns::scale<float, 4>(float*)`).
pub fn mangled_part(kernel: &str) -> String {
    let kernel = kernel.replace("(anonymous namespace)", "");
    let head = kernel.split('(').next().unwrap_or(&kernel);
    let mut depth = 0usize;
    let mut plain = String::new();
    for c in head.chars() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            _ if depth == 0 => plain.push(c),
            _ => {}
        }
    }
    let ident =
        plain.rsplit("::").next().unwrap_or(&plain).rsplit(' ').next().unwrap_or("").trim().to_string();
    format!("{}{ident}", ident.len())
}

/// The kernel's source file as a path to compile: the file of the kernel's own line (the end of
/// the inlining chain, when the faulting line is a header's), as the longest path among the
/// findings' frames that ends with it (`sources`), else as given, from the target's folder.
fn source_path(v: &Verdict, sources: &[String], r: &Resolved) -> Option<String> {
    let file = v.inlined.last().map(|l| l.file.as_str()).or(v.file.as_deref())?;
    let absolute = |p: String| -> String {
        match std::env::current_dir() {
            Ok(here) if Path::new(&p).is_relative() => here.join(&p).display().to_string(),
            _ => p,
        }
    };
    let tail = format!("/{}", file.trim_start_matches("./"));
    let found = sources.iter().filter(|s| s.ends_with(&tail) || s.as_str() == file).max_by_key(|s| s.len());
    let path = match found {
        Some(s) if Path::new(s).is_absolute() => s.clone(),
        Some(s) => r.run.cwd.as_ref().map(|c| c.join(s).display().to_string()).unwrap_or_else(|| s.clone()),
        None if Path::new(file).is_absolute() => file.to_string(),
        None => {
            r.run.cwd.as_ref().map(|c| c.join(file).display().to_string()).unwrap_or_else(|| file.to_string())
        }
    };
    Some(absolute(path))
}

/// The native half of the rung's run, for the verdict `v`.
pub fn run(io: &mut dyn RungIo, steps: &[Step], v: &Verdict) -> Result<Ran> {
    let dir = io.dir().to_path_buf();
    let mut outcome = Outcome {
        status: Status::NotWritten,
        script: None,
        expected: Expected::of(v),
        seen: None,
        notes: vec![],
        seconds: None,
    };
    let Some(source) = source_path(v, &io.sources(), io.recipe()) else {
        outcome
            .notes
            .push(format!("the verdict names no source file of `{}` to build a reproducer with", v.kernel));
        return finish(io, &dir, outcome, false);
    };
    std::fs::write(dir.join(LIBRARY_C), LIBRARY_SOURCE)
        .context("cannot write the capture library's source")?;
    if !exec(io, step(steps, When::CaptureLibrary)?)?.success() {
        outcome.notes.push(
            "the capture library did not build (repro/capture-library.log): it needs `cc` and CUPTI's header \
             and library, which come with the CUDA toolkit"
                .into(),
        );
        return finish(io, &dir, outcome, false);
    }
    let mut capture = step(steps, When::Always)?.clone();
    capture.inv.set(recorder::CAPTURE_VAR, mangled_part(&v.kernel));
    let ran = exec(io, &capture)?;
    // The library is built again for every capture; the bundle keeps its source, not the binary.
    let _ = std::fs::remove_file(dir.join(LIBRARY));
    let Some((c, others)) = latest_capture(&dir, PREFIX, native::parse, &mut outcome.notes)? else {
        outcome.notes.push(format!("the capture run ({}) recorded no launch of `{}`", ran.text(), v.kernel));
        return finish(io, &dir, outcome, ran.success());
    };
    outcome.notes.extend(others_note(others, c.pid));
    let written = native::write(&c, &outcome.expected);
    outcome.notes.extend(written.notes);
    let mut found = Vec::new();
    let driver = crate::redact::redact_text(&written.script, DRIVER, &mut found);
    std::fs::write(dir.join(DRIVER), driver).context("cannot write the reproducer")?;
    std::fs::write(dir.join(BUILD), native::build_script(&source)).context("cannot write build.sh")?;
    outcome.script = Some(format!("{}/{DRIVER}", layout::repro_dir()));
    holds_inputs(io, &dir, PREFIX, DRIVER, c.input_values());
    let build = step(steps, When::ReproBuild)?.filled(SOURCE, &source, 0);
    if !exec(io, &build)?.success() {
        outcome.status = Status::DidNotReproduce;
        outcome.notes.insert(
            0,
            format!(
                "it did not build with {} (repro/repro-build.log): the source file may need the \
                 program's own flags or include folders",
                quote(&source)
            ),
        );
        return finish(io, &dir, outcome, ran.success());
    }
    verify(io, steps, &dir, &mut outcome, None)?;
    finish(io, &dir, outcome, ran.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mangled_part_of_a_kernel_s_name() {
        assert_eq!(mangled_part("scale_write(float*, int, long long)"), "11scale_write");
        assert_eq!(mangled_part("void ns::scale<float, 4>(float*, int)"), "5scale");
        assert_eq!(mangled_part("smooth"), "6smooth");
        assert_eq!(mangled_part("void at::native::(anonymous namespace)::k<int>(int)"), "1k");
    }
}

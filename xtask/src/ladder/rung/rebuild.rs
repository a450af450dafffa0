//! Rung 2, rebuild: the recipe's build with `NVCC_PREPEND_FLAGS="-lineinfo -g"` (or `-G -g`)
//! and compilation caches unable to serve stale objects; then `cuobjdump -elf` on each binary
//! to check that line info is really there. The policy runs it only when the baseline found
//! binaries without line info: a baseline that builds the target builds it this way at once.
//! A Python target without a `build:` step has its kernels built while it runs: for it the
//! rebuild is one more armed run whose run-time builds go into fresh folders with line info
//! ([`rebuild_jit`](super::rebuild_jit)), which the policy runs when a fault's kernel (not a
//! library's) has no line.

use anyhow::{Context, Result};

use super::api::{exec, step, Debug, Ran, Rung, RungIo, Step, StepCx, When};
use super::build::{from_step, with_options};
use super::lineinfo::{check_lineinfo, lineinfo_check, prepend_flags};
use super::rebuild_jit;
use crate::bundle::layout;
use crate::model::{Exit, Invocation, Role, RungId};
use crate::recipe::{Resolved, Step as RecipeStep};

pub struct Rebuild;

impl Rung for Rebuild {
    fn id(&self) -> RungId {
        RungId::Rebuild
    }

    fn describe(&self) -> &'static str {
        "rebuild with `NVCC_PREPEND_FLAGS=\"-lineinfo -g\"`, compilation caches off, and check the \
         binaries carry line info with `cuobjdump` (one full build)"
    }

    fn describe_for(&self, debug: Debug) -> String {
        format!(
            "rebuild with `NVCC_PREPEND_FLAGS=\"{}\"`, compilation caches off, and check the binaries \
             carry line info with `cuobjdump` (one full build)",
            debug.flags()
        )
    }

    /// A Python target without a build: its run-time builds redone in one armed run.
    fn describe_in(&self, r: &Resolved, debug: Debug) -> String {
        if rebuilds_at_run_time(r) {
            rebuild_jit::describe(debug)
        } else {
            self.describe_for(debug)
        }
    }

    /// The recipe's own build command and its time limit; a `pip install` says that it replaces
    /// the package installed in this Python environment.
    fn prompt(&self, r: &Resolved, debug: Debug) -> String {
        let mut text = self.describe_in(r, debug);
        let Some(b) = &r.build else { return text };
        let words = b.argv.join(" ");
        text.push_str(&format!(": `{}`", words.chars().take(160).collect::<String>()));
        if let Some(t) = b.timeout {
            text.push_str(&format!(", up to {} min", t.as_secs().div_ceil(60)));
        }
        let pip = b.argv.windows(2).any(|w| w[0].ends_with("pip") && w[1] == "install")
            || b.argv.windows(3).any(|w| w[0] == "-m" && w[1] == "pip" && w[2] == "install");
        if pip {
            text.push_str(
                "; it reinstalls the package into this Python environment, replacing the installed one",
            );
        }
        text
    }

    /// It builds and checks the binaries; the target does not run. (For a Python target
    /// without a build it does: `policy::reproduced` counts that run, as the policy knows the
    /// recipe's kind and this trait does not.)
    fn runs_target(&self) -> bool {
        false
    }

    fn steps(&self, cx: &StepCx) -> Vec<Step> {
        if rebuilds_at_run_time(cx.recipe) {
            return rebuild_jit::steps(cx);
        }
        let Some(b) = &cx.recipe.build else { return Vec::new() };
        // The build's streams in `stdout.log` and `stderr.log`, like the target's.
        let build = invocation(cx.recipe, b, cx.debug, cx.inherited_prepend.as_deref(), RungId::Rebuild);
        let mut steps = vec![Step::new(Role::Build, build, "")];
        steps.extend(lineinfo_checks(b, When::Always));
        steps
    }

    fn run(&self, io: &mut dyn RungIo, steps: &[Step]) -> Result<Ran> {
        if rebuilds_at_run_time(io.recipe()) {
            return rebuild_jit::run(io, steps);
        }
        let b = io.recipe().build.clone().context("the recipe has no `build` step to rebuild with")?;
        create_binary_dirs(&b)?;
        let mut steps = steps.iter().filter(|s| s.when == When::Always);
        let build = steps.next().context("the rebuild has no build step")?;
        let ran = exec(io, build)?;
        if !ran.success() {
            let logs = [io.dir().join(layout::STDERR), io.dir().join(layout::STDOUT)];
            return Err(build_failed(io, "the rebuild", ran, &logs, layout::STDERR));
        }
        let all_ok = check_lineinfo(io, &b.binaries, steps, "after the rebuild")?;
        Ok(Ran { faulted: false, yielded: all_ok, lineinfo: Some(all_ok), hung: false, static_sites: None })
    }
}

/// Whether the rebuild of this recipe redoes its run-time builds ([`rebuild_jit`]): a Python
/// program without a `build:` step.
pub fn rebuilds_at_run_time(r: &Resolved) -> bool {
    r.build.is_none() && r.python
}

/// The `cuobjdump -elf` step of each binary, run `when`.
pub fn lineinfo_checks(b: &RecipeStep, when: When) -> Vec<Step> {
    b.binaries
        .iter()
        .enumerate()
        .map(|(i, bin)| {
            Step::new(Role::Cuobjdump, lineinfo_check(bin), format!("cuobjdump-{}", i + 1)).when(when)
        })
        .collect()
}

/// `nvcc -o DIR/FILE` does not create `DIR`: the build's output folders are made first.
pub fn create_binary_dirs(b: &RecipeStep) -> Result<()> {
    for d in b.binary_dirs() {
        std::fs::create_dir_all(&d)
            .with_context(|| format!("cannot create `{}` for the build's output", d.display()))?;
    }
    Ok(())
}

/// The build, as the recipe has it, with line info (and host debug info) added and caches
/// bypassed; `rung`'s recipe options apply (the baseline's when it builds the target first).
pub fn invocation(
    r: &Resolved,
    build: &RecipeStep,
    debug: Debug,
    inherited_prepend: Option<&str>,
    rung: RungId,
) -> Invocation {
    let mut inv = from_step(build);
    inv.set("NVCC_PREPEND_FLAGS", prepend_flags(debug, inherited_prepend));
    // ccache would hand back the objects built without line info.
    inv.set("CCACHE_DISABLE", "1");
    // sccache cannot be disabled by a variable, but it can be told to recompile and re-cache.
    inv.set("SCCACHE_RECACHE", "1");
    with_options(inv, r, rung)
}

/// How many of a failed build's last lines its note shows, and how many of its error lines
/// from before them.
const BUILD_TAIL: usize = 10;
const BUILD_ERRORS: usize = 6;

/// The error of a failed build (`what`: "the rebuild"), after a note with its last lines
/// ([`build_tail`]) from the first of `logs` that has any; `shown` names the log in the rung's
/// folder. The end of each log is read, never the whole of it (a log may be a gigabyte).
fn build_failed(
    io: &mut dyn RungIo,
    what: &str,
    ran: Exit,
    logs: &[std::path::PathBuf],
    shown: &str,
) -> anyhow::Error {
    use std::io::{Read, Seek, SeekFrom};
    let shown = format!("{}/{shown}", io.shown_dir());
    for log in logs {
        let Ok(mut f) = std::fs::File::open(log) else { continue };
        let mut bytes = Vec::new();
        let tail = f.seek(SeekFrom::End(0)).map_or(0, |len| len.saturating_sub(256 * 1024));
        if f.seek(SeekFrom::Start(tail)).is_err() || f.read_to_end(&mut bytes).is_err() {
            continue;
        }
        if let Some(lines) = build_tail(&String::from_utf8_lossy(&bytes)) {
            io.note(format!("the build's last lines (`{shown}`):\n{lines}"));
            break;
        }
    }
    anyhow::anyhow!(
        "{what} failed ({}): the notes above show its last lines, `{shown}` all of them; fix the build, then run again",
        ran.text()
    )
}

/// The lines of a failed build's log worth showing, indented and made safe for a terminal:
/// its last error lines (`error`, `fatal`, `undefined reference`; the compiler writes them to
/// stderr, which may come before its other output in the log), then its last lines, in the
/// log's order; `None` for an empty log.
fn build_tail(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return None;
    }
    let is_error = |l: &str| {
        let l = l.to_ascii_lowercase();
        l.contains("error") || l.contains("fatal") || l.contains("undefined reference")
    };
    let tail_from = lines.len().saturating_sub(BUILD_TAIL);
    let mut keep: Vec<usize> = (0..tail_from).filter(|&i| is_error(lines[i])).collect();
    keep.drain(..keep.len().saturating_sub(BUILD_ERRORS));
    keep.extend(tail_from..lines.len());
    let shown: Vec<String> = keep
        .iter()
        .map(|&i| format!("    {}", crate::ui::safe(&lines[i].chars().take(300).collect::<String>(), true)))
        .collect();
    Some(shown.join("\n"))
}

/// Builds the target when it is not built yet (the `BinariesMissing` step, with line info):
/// a binary of the recipe's build, or the program its run names, does not exist
/// (`Resolved::not_built`). True when it built. A failed build is the rung's error, naming its
/// log. The baseline and the hang rung (which replaces the baseline) both start so.
pub(super) fn build_if_missing(io: &mut dyn RungIo, steps: &[Step]) -> Result<bool> {
    let Some(b) = io.recipe().build.clone() else { return Ok(false) };
    let Some(missing) = io.recipe().not_built(!io.in_container()) else { return Ok(false) };
    io.say(&format!(
        "`{missing}` does not exist yet: building the target first, with line info (`-lineinfo -g`)"
    ));
    create_binary_dirs(&b)?;
    let build = step(steps, When::BinariesMissing)?;
    let ran = exec(io, build)?;
    if !ran.success() {
        let log = format!("{}.log", build.stem);
        let logs = [io.dir().join(&log)];
        return Err(build_failed(io, "the recipe's build", ran, &logs, &log));
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The prompt before the rebuild says the recipe's own command and time limit, and that a
    /// `pip install` (the vLLM recipe's) replaces the package installed in the environment.
    #[test]
    fn the_rebuild_prompt_says_what_it_runs_and_what_it_replaces() {
        let resolve = |name: &str, sets: &[(&str, &str)]| {
            let r = crate::recipe::load(name).unwrap();
            let sets = sets.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            crate::recipe::resolve(&r, &sets, &Default::default()).unwrap()
        };
        let vllm = resolve("vllm", &[("vllm_src", "/src/vllm"), ("repro", "python3 repro.py")]);
        let p = Rebuild.prompt(&vllm, Debug::LineInfo);
        assert!(p.contains("pip install") && p.contains("replacing the installed one"), "{p}");
        assert!(p.contains(", up to 240 min"), "{p}");
        let cuda = resolve("cuda", &[("build", "make -B"), ("run", "./app")]);
        let p = Rebuild.prompt(&cuda, Debug::Full);
        assert!(p.contains(": `make -B`") && p.contains("\"-G -g\"") && !p.contains("replacing"), "{p}");
        // A Python program without a build: one more armed run that redoes its run-time builds
        // in fresh folders, and says the user's caches are left alone.
        let py = resolve("pytorch", &[("script", "jit_op_fault.py")]);
        assert!(rebuilds_at_run_time(&py) && !rebuilds_at_run_time(&vllm) && !rebuilds_at_run_time(&cuda));
        let p = Rebuild.prompt(&py, Debug::LineInfo);
        for want in [
            "rerun the target armed",
            "fresh, empty folders in the rung's folder",
            "TORCH_EXTENSIONS_DIR with `NVCC_PREPEND_FLAGS=\"-lineinfo -g\"`",
            "CUPY_CUDA_COMPILE_WITH_DEBUG=1",
            "nothing of your own caches is read, changed or deleted",
        ] {
            assert!(p.contains(want), "`{want}` missing: {p}");
        }
        assert_eq!(p, Rebuild.describe_in(&py, Debug::LineInfo));
        assert!(Rebuild.describe_in(&py, Debug::Full).contains("\"-G -g\""));
        assert_eq!(Rebuild.describe_in(&cuda, Debug::LineInfo), Rebuild.describe_for(Debug::LineInfo));
    }

    #[test]
    fn the_heading_names_the_flags_of_the_debug_level() {
        // The dry-run's heading over a `--device-debug` build said `-lineinfo` (issue 13).
        let full = Rebuild.describe_for(Debug::Full);
        assert!(full.contains("NVCC_PREPEND_FLAGS=\"-G -g\""), "{full}");
        assert!(!full.contains("-lineinfo"), "{full}");
        let default = Rebuild.describe_for(Debug::LineInfo);
        assert!(default.contains("NVCC_PREPEND_FLAGS=\"-lineinfo -g\""), "{default}");
    }
}

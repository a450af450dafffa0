//! Rung 2, rebuild: the recipe's build with `NVCC_PREPEND_FLAGS="-lineinfo -g"` (or `-G -g`)
//! and compilation caches unable to serve stale objects; then `cuobjdump -elf` on each binary
//! to check that line info is really there. The policy runs it only when the baseline found
//! binaries without line info: a baseline that builds the target builds it this way at once.
//! A Python target without a `build:` step has its kernels built while it runs: for it the
//! rebuild is one more armed run whose run-time builds go into fresh folders with line info
//! ([`rebuild_jit`](super::parts::rebuild_jit)), which the policy runs when a fault's kernel (not a
//! library's) has no line.

use anyhow::{Context, Result};

use super::api::{exec, Debug, Ran, Rung, RungIo, Step, StepCx, When};
use super::parts::lineinfo::{check_lineinfo, lineinfo_checks};
use super::parts::rebuild_jit;
use super::parts::target_build::{build_failed, create_binary_dirs, invocation};
use crate::bundle::layout;
use crate::model::{Role, RungId};
use crate::recipe::Resolved;

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

//! The command builders the rungs share: the target's run as every rung starts it, a
//! rung's recipe options, a recipe step as an invocation, cuda-gdb in batch mode.
//!
//! Pure: builds [`Invocation`] values from the recipe; must not run or read anything.

use std::time::Duration;

use crate::model::{Invocation, RungId};
use crate::recipe::{Resolved, Step as RecipeStep};

/// Default time limit of one run of the target when the recipe sets none.
pub const DEFAULT_RUN_TIMEOUT: Duration = Duration::from_secs(600);
/// Time limit for one cuda-gdb session.
pub const GDB_TIMEOUT: Duration = Duration::from_secs(300);

/// `cuda-gdb -batch -nx` with `first` (the target: `-p PID`, or nothing) and the
/// commands: pagination off, then `target` (the coredump, if any); with `full`, the kernels
/// table, the backtrace and, on a dump, the instruction at the error PC (its mnemonic names the
/// memory space: `ATOMS` is shared memory); with `locals` too, locals and arguments (a `-G` build has
/// them).
pub fn cuda_gdb(first: &[String], target: Option<String>, full: bool, locals: bool) -> Invocation {
    let mut argv: Vec<String> = vec!["cuda-gdb".into(), "-batch".into(), "-nx".into()];
    argv.extend(first.iter().cloned());
    let mut commands = vec!["set pagination off".to_string()];
    let on_dump = target.is_some();
    commands.extend(target);
    if full {
        commands.extend(["info cuda kernels".to_string(), "bt".to_string()]);
        if on_dump {
            // 0.5 s more per session on the H200 (0.31 s against 0.84 s): worth it once, on the
            // dump; attach comes only when the dump said too little.
            commands.push("x/i $errorpc".to_string());
            // A trap (`__trap()`) has no error PC and its PC is past the `BPT.TRAP`: the
            // instruction before the PC and its line name the trap's line (recorded on the H200,
            // tests/fixtures/h200/kinds-pc).
            commands.extend(["x/2i $pc-16".to_string(), "info line *($pc-16)".to_string()]);
        }
        if locals {
            commands.extend(["info locals".to_string(), "info args".to_string()]);
        }
    }
    for c in commands {
        argv.push("-ex".into());
        argv.push(c);
    }
    Invocation { timeout: Some(GDB_TIMEOUT), ..Invocation::new(argv) }
}

/// An invocation of a recipe step (build or run) with its own environment.
pub fn from_step(step: &RecipeStep) -> Invocation {
    Invocation {
        argv: step.argv.clone(),
        cwd: step.cwd.clone(),
        env_set: step.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        env_remove: step.env_remove.clone(),
        timeout: step.timeout.or(Some(DEFAULT_RUN_TIMEOUT)),
    }
}

/// The target's run, as every rung starts it: the recipe's command and environment, plus
/// what keeps the evidence intact — unbuffered Python output, Triton line info on.
pub fn target(r: &Resolved) -> Invocation {
    let mut inv = from_step(&r.run);
    // Triton drops line info when this is set: the coredump and memcheck rungs need it.
    inv.remove("TRITON_DISABLE_LINE_INFO");
    if r.python {
        inv.set("PYTHONUNBUFFERED", "1");
    }
    inv
}

/// Applies a rung's recipe options: its timeout and extra environment.
pub fn with_options(mut inv: Invocation, r: &Resolved, rung: RungId) -> Invocation {
    if let Some(o) = r.rungs.get(&rung) {
        if let Some(t) = o.timeout {
            inv.timeout = Some(Duration::from_secs(t));
        }
        for (k, v) in &o.env {
            inv.set(k, v.clone());
        }
    }
    inv
}

/// `TOOL ARGS... BINARY` on a binary of the target, run where the target runs (its `cwd`),
/// through a shell that finds a bare name on `PATH` as the run would and exits 127 when it
/// cannot; `tool` is the start of the command (`exec TOOL "$p"`), `name` the shell's `$0`.
pub fn on_binary(r: &Resolved, tool: &str, name: &str, binary: &str, timeout: Duration) -> Invocation {
    let script = format!("p=$(command -v -- \"$1\") || exit 127; exec {tool} \"$p\"");
    Invocation {
        timeout: Some(timeout),
        cwd: r.run.cwd.clone(),
        ..Invocation::new(vec!["sh".into(), "-c".into(), script, name.into(), binary.into()])
    }
}

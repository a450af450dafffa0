//! The rungs: for each, the exact command and environment of its run, built from the
//! resolved recipe. One file per rung; this file holds what they share.
//!
//! Pure: builds [`Invocation`] values and reads nothing but its arguments. Running them is
//! `exec`'s job, deciding which to run is `ladder`'s.

pub mod attach;
pub mod baseline;
pub mod coredump;
pub mod launch_blocking;
pub mod memcheck;
pub mod rebuild;

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::recipe::{Collect, Resolved, Step};
use crate::redact::{redact_args, redact_env, Redaction};

/// Default time limit of one run of the target when the recipe sets none.
pub const DEFAULT_RUN_TIMEOUT: Duration = Duration::from_secs(600);
/// Time limit for one cuda-gdb session.
pub const GDB_TIMEOUT: Duration = Duration::from_secs(300);

/// One process to run: what `exec` needs, and what the bundle and `--dry-run` show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Invocation {
    pub argv: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Variables set for this run, in order (the recipe's first, then the rung's).
    pub env_set: Vec<(String, String)>,
    /// Variables removed for this run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env_remove: Vec<String>,
    #[serde(skip)]
    pub timeout: Option<Duration>,
}

impl Invocation {
    /// Sets (or replaces) a variable.
    pub fn set(&mut self, k: &str, v: impl Into<String>) {
        let v = v.into();
        match self.env_set.iter_mut().find(|(n, _)| n == k) {
            Some(e) => e.1 = v,
            None => self.env_set.push((k.to_string(), v)),
        }
        self.env_remove.retain(|n| n != k);
    }

    /// Removes a variable from the environment the process sees.
    pub fn remove(&mut self, k: &str) {
        self.env_set.retain(|(n, _)| n != k);
        if !self.env_remove.iter().any(|n| n == k) {
            self.env_remove.push(k.to_string());
        }
    }

    /// The command as a shell line, `env` changes first: for `--dry-run`, `command.txt`
    /// and `replay.sh`. Values are single-quoted where needed.
    pub fn shell_line(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if !self.env_remove.is_empty() || !self.env_set.is_empty() {
            parts.push("env".into());
            for k in &self.env_remove {
                parts.push(format!("-u {}", quote(k)));
            }
            for (k, v) in &self.env_set {
                parts.push(quote(&format!("{k}={v}")));
            }
        }
        parts.extend(self.argv.iter().map(|a| quote(a)));
        let line = parts.join(" ");
        match &self.cwd {
            Some(c) => format!("cd {} && {line}", quote(&c.display().to_string())),
            None => line,
        }
    }
}

impl Invocation {
    /// The invocation as a bundle may record it: arguments and variables redacted
    /// ([`crate::redact`]), each redaction reported at `place`. Running it is not the same.
    pub fn redacted(&self, place: &str, out: &mut Vec<Redaction>) -> Invocation {
        Invocation {
            argv: redact_args(&self.argv, place, out),
            cwd: self.cwd.clone(),
            env_set: redact_env(&self.env_set, place, out),
            env_remove: self.env_remove.clone(),
            timeout: self.timeout,
        }
    }
}

/// Quotes a word for a POSIX shell when it needs it.
pub fn quote(s: &str) -> String {
    let safe = !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+%@^".contains(&b));
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// `cuda-gdb -batch -nx` with `first` (the target: `-p PID`, or nothing) and the
/// commands: pagination off, then `target` (the coredump, if any); with `full`, the kernels
/// table and the backtrace; with `locals` too, locals and arguments (a `-G` build has them).
pub fn cuda_gdb(first: &[String], target: Option<String>, full: bool, locals: bool) -> Invocation {
    let mut argv: Vec<String> = vec!["cuda-gdb".into(), "-batch".into(), "-nx".into()];
    argv.extend(first.iter().cloned());
    let mut commands = vec!["set pagination off".to_string()];
    commands.extend(target);
    if full {
        commands.extend(["info cuda kernels".to_string(), "bt".to_string()]);
        if locals {
            commands.extend(["info locals".to_string(), "info args".to_string()]);
        }
    }
    for c in commands {
        argv.push("-ex".into());
        argv.push(c);
    }
    Invocation { argv, cwd: None, env_set: vec![], env_remove: vec![], timeout: Some(GDB_TIMEOUT) }
}

/// An invocation of a recipe step (build or run) with its own environment.
pub fn from_step(step: &Step) -> Invocation {
    Invocation {
        argv: step.argv.clone(),
        cwd: step.cwd.clone(),
        env_set: step.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        env_remove: step.env_remove.clone(),
        timeout: step.timeout.or(Some(DEFAULT_RUN_TIMEOUT)),
    }
}

/// A `collect:` command (`vllm collect-env`), run once before the baseline: in the run
/// step's directory and environment, so that it sees the target's Python and packages,
/// with its own short time limit.
pub fn collect(r: &Resolved, c: &Collect) -> Invocation {
    let mut inv = from_step(&r.run);
    inv.argv = c.argv.clone();
    inv.timeout = Some(c.timeout);
    inv
}

/// The snapshot's file that is always made on the host, also when the rungs run in a
/// container: `git describe` of the host's checkout.
pub const SNAPSHOT_ON_HOST: &str = "git-describe.txt";

/// The environment snapshot taken before the baseline, besides the recipe's own `collect`
/// commands: `git describe --always --dirty` of the target's source (its working directory),
/// and for Python targets `pip freeze` and PyTorch's `collect_env` (unless the recipe already
/// collects a `collect-env`), with the target's Python.
pub fn snapshot(r: &Resolved) -> Vec<Collect> {
    let mut out = vec![Collect {
        name: SNAPSHOT_ON_HOST.into(),
        argv: ["git", "describe", "--always", "--dirty", "--tags"].map(String::from).to_vec(),
        timeout: Duration::from_secs(20),
    }];
    if r.python {
        let python = r.vars.get("python").cloned().unwrap_or_else(|| {
            let first = r.run.program();
            let base = first.rsplit('/').next().unwrap_or(first);
            if base.starts_with("python") {
                first.to_string()
            } else {
                "python3".to_string()
            }
        });
        out.push(Collect {
            name: "pip-freeze.txt".into(),
            argv: vec![python.clone(), "-m".into(), "pip".into(), "freeze".into()],
            timeout: Duration::from_secs(60),
        });
        if !r.collect.iter().any(|c| c.name.contains("collect-env")) {
            out.push(Collect {
                name: "torch-collect-env.txt".into(),
                argv: vec![python, "-m".into(), "torch.utils.collect_env".into()],
                timeout: Duration::from_secs(120),
            });
        }
    }
    out.retain(|c| !r.collect.iter().any(|own| own.name == c.name));
    out
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
pub fn with_options(mut inv: Invocation, r: &Resolved, rung: &str) -> Invocation {
    if let Some(o) = r.rungs.get(rung) {
        if let Some(t) = o.timeout {
            inv.timeout = Some(Duration::from_secs(t));
        }
        for (k, v) in &o.env {
            inv.set(k, v.clone());
        }
    }
    inv
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_lines_quote_what_needs_it() {
        let mut inv = Invocation {
            argv: vec!["python3".into(), "my script.py".into(), "--n=1".into()],
            cwd: None,
            env_set: vec![],
            env_remove: vec![],
            timeout: None,
        };
        inv.set("CUDA_LAUNCH_BLOCKING", "1");
        inv.remove("TRITON_DISABLE_LINE_INFO");
        assert_eq!(
            inv.shell_line(),
            "env -u TRITON_DISABLE_LINE_INFO CUDA_LAUNCH_BLOCKING=1 python3 'my script.py' --n=1"
        );
        assert_eq!(quote("it's"), "'it'\\''s'");
    }
}

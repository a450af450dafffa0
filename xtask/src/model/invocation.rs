//! One process to run, as a value: argv, working directory, environment changes, time
//! limit. The rungs build it, `launch` wraps it for a container, `process` runs it, the
//! bundle records it (redacted), `--dry-run` and `replay.sh` show it as a shell line.
//!
//! Must not: run, print or read anything; redaction is the caller's (`redact`).

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

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
    /// An invocation of `argv` with nothing else set.
    pub fn new(argv: Vec<String>) -> Invocation {
        Invocation { argv, cwd: None, env_set: vec![], env_remove: vec![], timeout: None }
    }

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

/// Quotes a word for a POSIX shell when it needs it.
pub fn quote(s: &str) -> String {
    let safe = !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+%@^".contains(&b));
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_lines_quote_what_needs_it() {
        let mut inv = Invocation::new(vec!["python3".into(), "my script.py".into(), "--n=1".into()]);
        inv.set("CUDA_LAUNCH_BLOCKING", "1");
        inv.remove("TRITON_DISABLE_LINE_INFO");
        assert_eq!(
            inv.shell_line(),
            "env -u TRITON_DISABLE_LINE_INFO CUDA_LAUNCH_BLOCKING=1 python3 'my script.py' --n=1"
        );
        assert_eq!(quote("it's"), "'it'\\''s'");
    }
}

//! What the benchmarks share: the time limit of a measured or reference command, peak
//! memory and CPU time from `getrusage` and `/proc`, the CPU model, the median of runs, and
//! `result PASS|FAIL` as an outcome.
//!
//! Must not: run a process or write a file.

use crate::commands::Outcome;
use anyhow::{Context, Result};
use nix::sys::resource::{getrusage, UsageWho};
use std::time::Duration;

/// The longest a reference command (`grep`, `tar`) or the measured `analyze` may run.
pub(super) const COMMAND_LIMIT: Duration = Duration::from_secs(3600);
pub(super) fn peak_rss_kib(who: UsageWho) -> Result<u64> {
    let usage = getrusage(who).context("reading peak memory (getrusage)")?;
    Ok(u64::try_from(usage.max_rss()).unwrap_or(0))
}

/// The peak resident memory of a running process (`VmHWM` in `/proc/PID/status`), in KiB.
pub(super) fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line["VmHWM:".len()..].trim().trim_end_matches("kB").trim().parse().ok()
}

pub(super) fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string())
}

/// `result PASS` is [`Outcome::Done`]; `result FAIL` is [`Outcome::Mismatch`], so that a
/// script (or CI) running the benchmark sees the goal missed in the exit status (1).
pub fn verdict_outcome(passed: bool) -> Outcome {
    if passed {
        Outcome::Done
    } else {
        Outcome::Mismatch
    }
}
/// The median of a non-empty list (the mean of the middle two for an even count).
pub fn median(times: &[Duration]) -> Duration {
    let mut t = times.to_vec();
    t.sort();
    match t.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => t[n / 2],
        n => (t[n / 2 - 1] + t[n / 2]) / 2,
    }
}

/// User plus system time of this process (all its threads) or of its waited-for children.
pub(super) fn cpu_time(who: UsageWho) -> Result<Duration> {
    let u = getrusage(who).context("reading CPU time (getrusage)")?;
    let tv = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(t.tv_sec().max(0) as u64) + Duration::from_micros(t.tv_usec().max(0) as u64)
    };
    Ok(tv(u.user_time()) + tv(u.system_time()))
}

//! The reproducer (docs/repro.md): the launch the recorder captured at the fault
//! ([`capture`]), the standalone program written from it ([`python`]), and what running that
//! program showed ([`Outcome`], [`check`]).
//!
//! Must not: run anything, read files or write them (the repro rung does): text in, values or
//! text out.

pub mod capture;
pub mod native;
pub mod python;

use serde::{Deserialize, Serialize};

use super::verdict::Verdict;

/// What the reproducer's own run showed, against the verdict it was written for: kept as
/// `repro/result.json` in the bundle and presented by `bundle report`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// `verified`: it faults in the same kernel at the same line with the same class;
    /// `did-not-reproduce`: it ran and did not; `not-written`: there was nothing to write it from.
    pub status: Status,
    /// The script, relative to the bundle (`repro/repro.py`), when one was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
    /// The kernel, line and class it was written for (the verdict's).
    pub expected: Expected,
    /// What its own run showed, when it faulted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<Expected>,
    /// Why it was not verified, or what to know about it (what it does not contain).
    #[serde(default)]
    pub notes: Vec<String>,
    /// How long its own run took, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Verified,
    DidNotReproduce,
    NotWritten,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Verified => "verified",
            Status::DidNotReproduce => "did not reproduce",
            Status::NotWritten => "not written",
        }
    }
}

/// A fault as the reproducer is checked against it: kernel, line, class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expected {
    pub kernel: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// The class as the verdict names it (`illegal-address`).
    pub error: String,
}

impl Expected {
    pub fn of(v: &Verdict) -> Expected {
        Expected {
            kernel: v.kernel.clone(),
            file: v.file.clone(),
            line: v.line,
            error: v.error.as_str().to_string(),
        }
    }

    /// `illegal-address in `k` at f.py:12`.
    pub fn text(&self) -> String {
        let at = match (&self.file, self.line) {
            (Some(f), Some(l)) => format!(" at {f}:{l}"),
            _ => String::new(),
        };
        format!("{} in `{}`{at}", self.error, self.kernel)
    }
}

/// Whether what the reproducer's run showed (`seen`, the verdict of its own dump) is the fault
/// it was written for: the same kernel (by name, a signature aside), the same class, and the
/// same line where both name one. `Err` says what differs.
pub fn check(expected: &Expected, seen: Option<&Expected>) -> Result<(), String> {
    let Some(seen) = seen else {
        return Err("it ran without a device fault".to_string());
    };
    let name = |k: &str| super::names::kernel_key(k).to_string();
    if name(&seen.kernel) != name(&expected.kernel) {
        return Err(format!("it faulted in another kernel: {}", seen.text()));
    }
    if seen.error != expected.error {
        return Err(format!("it faulted with another class: {}", seen.text()));
    }
    let base = |f: &Option<String>| f.as_deref().map(|f| f.rsplit('/').next().unwrap_or(f).to_string());
    if let (Some(a), Some(b)) = (expected.line, seen.line) {
        if a != b || base(&expected.file) != base(&seen.file) {
            return Err(format!("it faulted at another line: {}", seen.text()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::ErrorClass;

    fn fault(kernel: &str, line: u32, error: ErrorClass) -> Expected {
        Expected {
            kernel: kernel.into(),
            file: Some("/w/x.py".into()),
            line: Some(line),
            error: error.as_str().into(),
        }
    }

    #[test]
    fn the_same_kernel_line_and_class_verify_and_any_difference_is_named() {
        let want = fault("gather_kv_kernel", 22, ErrorClass::IllegalAddress);
        assert_eq!(check(&want, Some(&fault("gather_kv_kernel", 22, ErrorClass::IllegalAddress))), Ok(()));
        let other = check(&want, Some(&fault("other_kernel", 22, ErrorClass::IllegalAddress))).unwrap_err();
        assert!(other.contains("another kernel") && other.contains("other_kernel"), "{other}");
        let line =
            check(&want, Some(&fault("gather_kv_kernel", 23, ErrorClass::IllegalAddress))).unwrap_err();
        assert!(line.contains("another line") && line.contains(":23"), "{line}");
        let class =
            check(&want, Some(&fault("gather_kv_kernel", 22, ErrorClass::MisalignedAddress))).unwrap_err();
        assert!(class.contains("another class"), "{class}");
        assert!(check(&want, None).unwrap_err().contains("without a device fault"));
        // The same file under another folder (the bundle's relative name, the dump's absolute one).
        let mut rel = want.clone();
        rel.file = Some("x.py".into());
        assert_eq!(check(&rel, Some(&want)), Ok(()));
    }
}

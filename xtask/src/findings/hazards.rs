//! What a verdict of class `race` or `barrier-error` adds to the kernel and line: for a race
//! the other access of the pair (the second line: `race_shared.cu:9` writes, `:11` reads),
//! the memory, the hazard count; for a barrier error its kind (`invalid arguments`,
//! `divergent threads`); for both what to check ([`ErrorClass::meaning`]). The verdict's
//! merge ([`super::verdict`]) calls [`of_faults`] with its kernel's findings.
//!
//! Pure. Must not: decide the kernel or the line (the verdict does), read files or print.

use serde::Serialize;

use super::{ErrorClass, Fault, RaceSide};

/// The race's or barrier error's particulars.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hazard {
    /// For a race: the second access (the verdict's own line is the first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_side: Option<RaceSide>,
    /// For a race: the first access's kind (`Write`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access: Option<String>,
    /// `shared` or `global`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    /// How many hazards racecheck counted for the pair (or records, for synccheck).
    pub count: u64,
    /// `RAW hazard` (racecheck's hazard report), `invalid arguments`, `divergent threads`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// What to check first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<&'static str>,
}

/// `__shared__` as a memory's name.
fn memory(space: &str) -> String {
    space.trim_matches('_').to_string()
}

/// The kind of a barrier error from synccheck's text (`Barrier error detected. Invalid
/// arguments.`) or its XML `<type>` (`Invalid arguments`).
fn barrier_kind(detail: &str) -> Option<String> {
    let d = detail.trim();
    let d =
        d.strip_prefix("Barrier error detected.").or_else(|| d.strip_prefix("Barrier error")).unwrap_or(d);
    let d = d.trim().trim_end_matches('.').trim();
    (!d.is_empty()).then(|| d.to_ascii_lowercase())
}

/// The particulars of a verdict of class `error` from its kernel's findings; `None` for
/// another class.
pub fn of_faults<'a>(error: &ErrorClass, faults: impl Iterator<Item = &'a Fault>) -> Option<Hazard> {
    let faults: Vec<&Fault> = faults.filter(|f| f.error.as_ref() == Some(error)).collect();
    match error {
        ErrorClass::Race => {
            // The pair with the second line and the most hazards; the count is one input's
            // (the text and the XML of one run count the same hazards).
            let best = faults.iter().max_by_key(|f| (f.other_side.is_some(), f.count))?;
            let space = faults.iter().find_map(|f| f.access.as_ref()?.space.as_deref());
            let kind = best.detail.as_deref().and_then(|d| d.split_once("racecheck ")).map(|(_, k)| k);
            Some(Hazard {
                other_side: best.other_side.clone(),
                access: best.access.as_ref().and_then(|a| a.kind.clone()),
                // racecheck checks shared memory only; its hazard report names the space.
                memory: Some(space.map(memory).unwrap_or_else(|| "shared".to_string())),
                count: best.count,
                kind: kind.filter(|k| *k != "race").map(str::to_string),
                check: error.meaning(),
            })
        }
        ErrorClass::BarrierError => {
            let best = faults.iter().max_by_key(|f| f.count)?;
            Some(Hazard {
                other_side: None,
                access: None,
                memory: None,
                count: best.count,
                kind: faults.iter().find_map(|f| f.detail.as_deref().and_then(barrier_kind)),
                check: error.meaning(),
            })
        }
        _ => None,
    }
}

/// The verdict's lines for `analyze`'s text (after `access:`): the pair, the count, the check.
pub fn text_lines(h: &Hazard, file: Option<&str>, line: Option<u32>) -> Vec<String> {
    let mut out = Vec::new();
    let here = match (file, line) {
        (Some(f), Some(l)) => format!("{f}:{l}"),
        _ => "?".to_string(),
    };
    if let Some(o) = &h.other_side {
        let a = h.access.as_deref().unwrap_or("access").to_ascii_lowercase();
        let b = o.kind.as_deref().unwrap_or("access").to_ascii_lowercase();
        let mem = h.memory.as_deref().map(|m| format!(" of {m} memory")).unwrap_or_default();
        let kind = h.kind.as_deref().map(|k| format!(", {k}")).unwrap_or_default();
        out.push(format!(
            "  race:     {a} at {here} against {b} at {}{mem}{kind}, {} hazards",
            o.at, h.count
        ));
    } else if let Some(k) = &h.kind {
        out.push(format!("  barrier:  {k} at {here}, {} records", h.count));
    }
    if let Some(c) = h.check {
        out.push(format!("  check:    {c}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn barrier_kinds() {
        assert_eq!(
            barrier_kind("Barrier error detected. Invalid arguments.").as_deref(),
            Some("invalid arguments")
        );
        assert_eq!(barrier_kind("Invalid arguments").as_deref(), Some("invalid arguments"));
        assert_eq!(
            barrier_kind("Barrier error detected. Divergent threads.").as_deref(),
            Some("divergent threads")
        );
        assert_eq!(barrier_kind("Barrier error"), None);
    }
}

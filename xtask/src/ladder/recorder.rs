//! The launch recorder of a Python target (`recorder.py`, loaded as `sitecustomize`): where
//! each Triton kernel was launched from and where each CUDA graph capture began, appended to
//! `launches.log` in the rung's folder by the run itself, once per distinct place. It gives
//! the launch site without `CUDA_LAUNCH_BLOCKING=1` (a job that must not be serialised, a
//! silent bug memcheck finds with no Python frame) and the capture site of a kernel that
//! faulted in a graph replay, from the very run that faulted (docs/ladder.md, "The launch
//! recorder").
//!
//! Pure: the source to write and the environment that arms a run. Must not: write the file
//! (the driver writes [`SOURCE`] into the bundle), run anything, or arm a run in a container
//! (the image's own `PYTHONPATH` is not known here; putting the host's in its place would
//! change the program).

use std::path::Path;

use crate::bundle::layout;
use crate::model::Invocation;

/// The recorder, written to `recorder/sitecustomize.py` in the bundle.
pub const SOURCE: &str = include_str!("recorder.py");

/// The variable that names the log and turns the recorder on.
pub const LOG_VAR: &str = "DEBUG_IMA_LAUNCHES";
/// Capture mode (the repro rung): the Triton kernel whose launches are captured, and the
/// folder the captures go to (`capture-<pid>.json`).
pub const CAPTURE_VAR: &str = "DEBUG_IMA_CAPTURE";
pub const CAPTURE_DIR_VAR: &str = "DEBUG_IMA_CAPTURE_DIR";
/// With [`CAPTURE_VAR`]: the kernel is a PyTorch operator's, so operator calls are captured.
pub const CAPTURE_OPS_VAR: &str = "DEBUG_IMA_CAPTURE_OPS";

/// Arms a run of the target whose folder is `rung_dir` (inside a bundle): the recorder's folder
/// first on `PYTHONPATH`, before the recipe's value or, without one, `inherited` (the ladder's
/// own, which the target would have seen), and the log in `rung_dir`. A run outside a bundle's
/// rung folder, or whose recipe removes `PYTHONPATH`, is left as it is.
pub fn arm(inv: &mut Invocation, rung_dir: &Path, inherited: Option<&str>) {
    let Some(root) = layout::bundle_of_rung_dir(rung_dir) else { return };
    if inv.env_remove.iter().any(|k| k == "PYTHONPATH") {
        return;
    }
    let own = inv.env_set.iter().find(|(k, _)| k == "PYTHONPATH").map(|(_, v)| v.clone());
    let rest = own.or_else(|| inherited.map(str::to_string)).filter(|p| !p.is_empty());
    let first = root.join(layout::RECORDER_DIR).display().to_string();
    let path = match rest {
        Some(r) => format!("{first}:{r}"),
        None => first,
    };
    inv.set("PYTHONPATH", path);
    inv.set(LOG_VAR, rung_dir.join(layout::LAUNCHES).display().to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(inv: &'a Invocation, k: &str) -> Option<&'a str> {
        inv.env_set.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }

    #[test]
    fn the_recorder_goes_first_and_keeps_the_path_the_target_had() {
        let dir = Path::new("/b/run/rungs/01-baseline");
        let mut inv = Invocation::new(vec!["python3".into(), "x.py".into()]);
        arm(&mut inv, dir, Some("/home/u/lib"));
        assert_eq!(env(&inv, "PYTHONPATH"), Some("/b/run/recorder:/home/u/lib"));
        assert_eq!(env(&inv, LOG_VAR), Some("/b/run/rungs/01-baseline/launches.log"));
        let mut own = Invocation::new(vec!["python3".into()]);
        own.set("PYTHONPATH", "/src");
        arm(&mut own, dir, Some("/home/u/lib"));
        assert_eq!(env(&own, "PYTHONPATH"), Some("/b/run/recorder:/src"));
        let mut bare = Invocation::new(vec!["python3".into()]);
        arm(&mut bare, dir, Some(""));
        assert_eq!(env(&bare, "PYTHONPATH"), Some("/b/run/recorder"));
        let mut removed = Invocation::new(vec!["python3".into()]);
        removed.remove("PYTHONPATH");
        arm(&mut removed, dir, None);
        assert_eq!(env(&removed, LOG_VAR), None);
        let mut elsewhere = Invocation::new(vec!["python3".into()]);
        arm(&mut elsewhere, Path::new("/tmp/x"), None);
        assert!(elsewhere.env_set.is_empty());
    }

    #[test]
    fn the_recorder_passes_redaction_unchanged() {
        let mut found = Vec::new();
        assert_eq!(crate::redact::redact_text(SOURCE, "recorder", &mut found), SOURCE);
        assert!(found.is_empty());
    }
}

//! Rung 3, launch-blocking: `CUDA_LAUNCH_BLOCKING=1` makes every launch synchronous, so the
//! error surfaces at the launch that faulted (but not inside a CUDA graph replay: a replay
//! is one launch). With more than one GPU visible it can deadlock NCCL collectives
//! (NVIDIA/nccl#750): [`multi_gpu_note`] says so, and the rung's timeout bounds the run.

use std::time::Duration;

use anyhow::Result;

use super::api::{exec, step, Ran, Rung, RungIo, Step, StepCx, When};
use super::parts::build::{target, with_options};
use crate::findings::verdict::Part;
use crate::model::{Invocation, RungId};
use crate::recipe::Resolved;

pub struct LaunchBlocking;

pub fn invocation(r: &Resolved) -> Invocation {
    let mut inv = target(r);
    inv.set("CUDA_LAUNCH_BLOCKING", "1");
    with_options(inv, r, RungId::LaunchBlocking)
}

impl Rung for LaunchBlocking {
    fn id(&self) -> RungId {
        RungId::LaunchBlocking
    }

    fn describe(&self) -> &'static str {
        "rerun with `CUDA_LAUNCH_BLOCKING=1`: the error surfaces at the launch that faulted \
         (one run, somewhat slower)"
    }

    fn needs_fault(&self) -> bool {
        true
    }

    /// A Python traceback under launch-blocking names the launching line; a native program's
    /// own error check does not (unchecked launches), its CPU core does (the coredump rung).
    fn answers(&self, python: bool) -> &'static [Part] {
        if python {
            &[Part::LaunchSite]
        } else {
            &[]
        }
    }

    /// One run, somewhat slower: for Python (the launching line) right after the coredump
    /// rung; for a native target after attach (it adds no part of a verdict there).
    fn cost_rank(&self, python: bool) -> Option<u32> {
        Some(if python { 20 } else { 30 })
    }

    fn steps(&self, cx: &StepCx) -> Vec<Step> {
        vec![Step::target(invocation(cx.recipe))]
    }

    fn run(&self, io: &mut dyn RungIo, steps: &[Step]) -> Result<Ran> {
        let target = step(steps, When::Always)?;
        let inherited = std::env::var("CUDA_VISIBLE_DEVICES").ok();
        let visible = visible_gpus(io.gpus(), cuda_visible_devices(&target.inv, inherited.as_deref()));
        if let Some(note) = multi_gpu_note(visible, target.inv.timeout) {
            // Said before the run, which may hang until the timeout.
            io.say(&format!("warning: {note}"));
            io.note(note);
        }
        let ran = exec(io, target)?;
        Ok(Ran { faulted: !ran.success(), yielded: true, lineinfo: None, hung: false, static_sites: None })
    }
}

/// How many GPUs a process sees: the `gpus` doctor listed, narrowed by
/// `CUDA_VISIBLE_DEVICES` when it is set (its comma-separated entries; empty: none).
pub fn visible_gpus(gpus: usize, cuda_visible_devices: Option<&str>) -> usize {
    match cuda_visible_devices {
        Some(v) => v.split(',').filter(|d| !d.trim().is_empty()).count().min(gpus),
        None => gpus,
    }
}

/// The value of `CUDA_VISIBLE_DEVICES` the rung's run will see: the one the invocation
/// sets, none if it removes it, else `inherited` (the ladder's own environment).
pub fn cuda_visible_devices<'a>(inv: &'a Invocation, inherited: Option<&'a str>) -> Option<&'a str> {
    if let Some((_, v)) = inv.env_set.iter().find(|(k, _)| k == "CUDA_VISIBLE_DEVICES") {
        return Some(v.as_str());
    }
    if inv.env_remove.iter().any(|k| k == "CUDA_VISIBLE_DEVICES") {
        return None;
    }
    inherited
}

/// The warning for a run that sees more than one GPU: `CUDA_LAUNCH_BLOCKING=1` can deadlock
/// NCCL, so a hang until the timeout is no evidence about the fault. `None` for one GPU.
pub fn multi_gpu_note(visible: usize, timeout: Option<Duration>) -> Option<String> {
    if visible <= 1 {
        return None;
    }
    let bound = match timeout {
        Some(t) => format!("the rung's timeout ({} s) bounds it", t.as_secs()),
        None => "nothing bounds it".to_string(),
    };
    Some(format!(
        "CUDA_LAUNCH_BLOCKING=1 with {visible} GPUs visible can deadlock NCCL (NVIDIA/nccl#750): {bound}, and a \
         hang there says nothing about the fault; if one GPU shows the fault, run with `CUDA_VISIBLE_DEVICES=0` \
         (exported, or in the recipe's `run.env` or `rungs.launch-blocking.env`), or leave the rung out (`--rungs`)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_than_one_visible_gpu_gets_the_note() {
        assert_eq!(visible_gpus(2, None), 2);
        assert_eq!(visible_gpus(2, Some("0")), 1);
        assert_eq!(visible_gpus(2, Some("0,1")), 2);
        assert_eq!(visible_gpus(8, Some("GPU-1234, GPU-5678")), 2);
        assert_eq!(visible_gpus(1, Some("0,1,2")), 1);
        assert_eq!(visible_gpus(4, Some("")), 0);
        assert!(multi_gpu_note(1, None).is_none());
        assert!(multi_gpu_note(0, None).is_none());
        let note = multi_gpu_note(2, Some(Duration::from_secs(900))).unwrap();
        assert!(note.contains("2 GPUs") && note.contains("NCCL") && note.contains("900 s"), "{note}");
    }

    #[test]
    fn the_run_s_own_setting_wins_over_the_inherited_one() {
        let mut inv = Invocation::new(vec!["python3".into()]);
        assert_eq!(cuda_visible_devices(&inv, Some("0,1")), Some("0,1"));
        inv.set("CUDA_VISIBLE_DEVICES", "3");
        assert_eq!(cuda_visible_devices(&inv, Some("0,1")), Some("3"));
        inv.remove("CUDA_VISIBLE_DEVICES");
        assert_eq!(cuda_visible_devices(&inv, Some("0,1")), None);
    }
}

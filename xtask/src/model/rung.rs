//! The rungs' identities: the only list of rung names in the code. What a rung does lives in
//! its own file under `ladder/rung/`; recipes, doctor, the manifest and the command line name
//! rungs through [`RungId`].
//!
//! Must not: hold a rung's behaviour (commands, descriptions, the steps it runs): only its
//! name and what it needs of the machine, which doctor checks.

use serde::{Deserialize, Serialize};

use super::need::Need;

/// One rung of the escalation ladder, cheapest first; and [`RungId::Dump`], which is no rung of
/// the ladder (it is not in [`RungId::ALL`]) but names the one folder `debug-ima dump PID`
/// writes its evidence into (`rungs/01-dump`), so that every reader of a bundle (`analyze`,
/// `bundle show|report|verify`, the verdict's `rungs`) takes that folder as it takes a rung's.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum RungId {
    /// The target as it is: the symptom.
    Baseline,
    /// Rebuild with `NVCC_PREPEND_FLAGS=-lineinfo` (or `-G`), caches off, line info checked.
    Rebuild,
    /// `CUDA_LAUNCH_BLOCKING=1`: where does the error surface now?
    LaunchBlocking,
    /// GPU coredump on the exception, read with `cuda-gdb`.
    Coredump,
    /// `CUDA_DEVICE_WAITS_ON_EXCEPTION=1`, then `cuda-gdb -p PID` on the live process.
    Attach,
    /// `compute-sanitizer --tool memcheck --padding`, text and XML.
    Memcheck,
    /// `compute-sanitizer --tool initcheck`: reads of memory never written.
    Initcheck,
    /// `compute-sanitizer --tool racecheck`: shared-memory data races (the analysis report).
    Racecheck,
    /// `compute-sanitizer --tool synccheck`: barriers not every thread reaches, bad masks.
    Synccheck,
    /// A run that does not end: after `hang_after` seconds, host stacks (py-spy), the NCCL
    /// flight recorder and a user-triggered GPU coredump of every CUDA process, read with
    /// `cuda-gdb`.
    Hang,
    /// Not a rung: what `debug-ima dump PID` took of a process it did not start (host stacks,
    /// a cuda-gdb attach, the NCCL flight recorder, a user-triggered dump with `--kill`). Not
    /// in [`RungId::ALL`], not a value of `--rungs`, no recipe key.
    #[value(skip)]
    Dump,
}

impl RungId {
    /// Every rung of the ladder, in ladder order ([`RungId::Dump`] is none).
    pub const ALL: [RungId; 10] = [
        RungId::Baseline,
        RungId::Rebuild,
        RungId::LaunchBlocking,
        RungId::Coredump,
        RungId::Attach,
        RungId::Memcheck,
        RungId::Initcheck,
        RungId::Racecheck,
        RungId::Synccheck,
        RungId::Hang,
    ];

    /// The name on the command line, in recipes and in the bundle (`rungs/03-launch-blocking`).
    pub fn name(self) -> &'static str {
        match self {
            RungId::Baseline => "baseline",
            RungId::Rebuild => "rebuild",
            RungId::LaunchBlocking => "launch-blocking",
            RungId::Coredump => "coredump",
            RungId::Attach => "attach",
            RungId::Memcheck => "memcheck",
            RungId::Initcheck => "initcheck",
            RungId::Racecheck => "racecheck",
            RungId::Synccheck => "synccheck",
            RungId::Hang => "hang",
            RungId::Dump => "dump",
        }
    }

    /// What the rung needs of the machine besides a GPU (and the container, with one):
    /// doctor's checks that stop it when missing.
    pub fn needs(self) -> &'static [Need] {
        match self {
            RungId::Baseline | RungId::LaunchBlocking => &[],
            RungId::Rebuild => &[Need::Nvcc, Need::Cuobjdump],
            RungId::Coredump => &[Need::Cuobjdump, Need::CudaGdb, Need::Tmpdir, Need::CoredumpSpace],
            RungId::Attach => &[Need::CudaGdb, Need::DebuggerBackend, Need::Ptrace, Need::Tmpdir],
            RungId::Memcheck | RungId::Initcheck | RungId::Racecheck | RungId::Synccheck => {
                &[Need::ComputeSanitizer]
            }
            RungId::Hang => &[Need::CudaGdb, Need::Tmpdir, Need::CoredumpSpace, Need::PySpy],
            RungId::Dump => &[Need::CudaGdb, Need::DebuggerBackend, Need::Ptrace, Need::PySpy],
        }
    }

    /// Whether the rung needs `need` (a universal one: always).
    pub fn has_need(self, need: Need) -> bool {
        need.universal() || self.needs().contains(&need)
    }

    pub fn from_name(s: &str) -> Option<RungId> {
        RungId::ALL.into_iter().find(|r| r.name() == s)
    }

    /// Every rung's name, for error messages (`baseline, rebuild, ...`).
    pub fn names() -> String {
        RungId::ALL.map(RungId::name).join(", ")
    }
}

impl std::fmt::Display for RungId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_match_serde() {
        for r in RungId::ALL {
            assert_eq!(RungId::from_name(r.name()), Some(r));
            assert_eq!(serde_json::to_string(&r).unwrap(), format!("\"{}\"", r.name()));
        }
        assert_eq!(RungId::from_name("nope"), None);
        // The dump's folder is named like a rung's, but it is no rung of the ladder.
        assert_eq!(serde_json::to_string(&RungId::Dump).unwrap(), format!("\"{}\"", RungId::Dump.name()));
        assert!(!RungId::ALL.contains(&RungId::Dump));
        assert_eq!(RungId::from_name(RungId::Dump.name()), None);
        use clap::ValueEnum;
        assert!(
            !RungId::value_variants().contains(&RungId::Dump) && RungId::Dump.to_possible_value().is_none()
        );
    }
}

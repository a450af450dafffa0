//! The rungs' identities: the only list of rung names in the code, one line per rung in the
//! `rung_ids!` table below. What a rung does lives in its own file under `ladder/rung/`;
//! recipes, doctor, the manifest and the command line name rungs through [`RungId`].
//!
//! Must not: hold a rung's behaviour (commands, descriptions, the steps it runs): only its
//! name, what it needs of the machine (which doctor checks) and which recipe options it takes
//! (which the recipe parser checks).

use serde::{Deserialize, Serialize};

use super::need::Need;

/// The recipe options every rung takes (`rungs.NAME.enabled`, `.timeout`, `.env`); a rung's
/// line in the table adds its own (`args`, `debug`).
const COMMON_OPTIONS: [&str; 3] = ["enabled", "timeout", "env"];

/// The table: for each rung of the ladder, in ladder order, its doc (the `--rungs` help), its
/// variant, its name (command line, recipes, bundle folders), what it needs of the machine
/// and the recipe options it takes besides [`COMMON_OPTIONS`]; then the ids that are no rung
/// of the ladder (not in [`RungId::ALL`], no value of `--rungs`, no recipe key).
/// tests/tidy.rs reads the names from these lines.
macro_rules! rung_ids {
    (
        ladder {
            $(
                $(#[$doc:meta])*
                $rung:ident = $name:literal, needs [$($need:ident),*], options [$($opt:ident),*];
            )*
        }
        beside {
            $($(#[$odoc:meta])* $other:ident = $oname:literal, needs [$($oneed:ident),*];)*
        }
    ) => {
        /// One rung of the escalation ladder, cheapest first; and the ids beside it, no rung of
        /// the ladder ([`RungId::Dump`]).
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, clap::ValueEnum,
        )]
        pub enum RungId {
            $($(#[$doc])* #[serde(rename = $name)] #[value(name = $name)] $rung,)*
            $($(#[$odoc])* #[serde(rename = $oname)] #[value(skip)] $other,)*
        }

        impl RungId {
            /// Every rung of the ladder, in ladder order ([`RungId::Dump`] is none).
            pub const ALL: [RungId; [$($name),*].len()] = [$(RungId::$rung),*];

            /// Their names, in the same order (for errors that list the valid ones).
            pub const NAMES: [&'static str; [$($name),*].len()] = [$($name),*];

            /// The name on the command line, in recipes and in the bundle (`rungs/03-launch-blocking`).
            pub fn name(self) -> &'static str {
                match self {
                    $(RungId::$rung => $name,)*
                    $(RungId::$other => $oname,)*
                }
            }

            /// What the rung needs of the machine besides a GPU (and the container, with one):
            /// doctor's checks that stop it when missing.
            pub fn needs(self) -> &'static [Need] {
                match self {
                    $(RungId::$rung => &[$(Need::$need),*],)*
                    $(RungId::$other => &[$(Need::$oneed),*],)*
                }
            }

            /// The keys of the rung's options in a recipe (`rungs.NAME.KEY`): `enabled`,
            /// `timeout` and `env`, which every rung takes, and its own; none for an id that is
            /// no rung of the ladder.
            pub fn options(self) -> &'static [&'static str] {
                match self {
                    $(RungId::$rung => {
                        &[COMMON_OPTIONS[0], COMMON_OPTIONS[1], COMMON_OPTIONS[2] $(, stringify!($opt))*]
                    })*
                    $(RungId::$other => &[],)*
                }
            }
        }
    };
}

rung_ids! {
    ladder {
        /// The target as it is: the symptom.
        Baseline = "baseline", needs [], options [];
        /// Rebuild with `NVCC_PREPEND_FLAGS=-lineinfo` (or `-G`), caches off, line info checked.
        Rebuild = "rebuild", needs [Nvcc, Cuobjdump], options [debug];
        /// `CUDA_LAUNCH_BLOCKING=1`: where does the error surface now?
        LaunchBlocking = "launch-blocking", needs [], options [];
        /// GPU coredump on the exception, read with `cuda-gdb`.
        Coredump = "coredump", needs [Cuobjdump, CudaGdb, Tmpdir, CoredumpSpace], options [];
        /// `CUDA_DEVICE_WAITS_ON_EXCEPTION=1`, then `cuda-gdb -p PID` on the live process.
        Attach = "attach", needs [CudaGdb, DebuggerBackend, Ptrace, Tmpdir], options [];
        /// `compute-sanitizer --tool memcheck --padding`, text and XML.
        Memcheck = "memcheck", needs [ComputeSanitizer], options [args];
        /// `compute-sanitizer --tool initcheck`: reads of memory never written.
        Initcheck = "initcheck", needs [ComputeSanitizer], options [args];
        /// `compute-sanitizer --tool racecheck`: shared-memory data races (the analysis report).
        Racecheck = "racecheck", needs [ComputeSanitizer], options [args];
        /// `compute-sanitizer --tool synccheck`: barriers not every thread reaches, bad masks.
        Synccheck = "synccheck", needs [ComputeSanitizer], options [args];
        /// A run that does not end: after `hang_after` seconds, host stacks (py-spy), the NCCL
        /// flight recorder and a user-triggered GPU coredump of every CUDA process, read with
        /// `cuda-gdb`.
        Hang = "hang", needs [CudaGdb, Tmpdir, CoredumpSpace, PySpy], options [];
        /// A standalone reproducer of the faulting launch (a Triton kernel's, a PyTorch
        /// operator's, a CUDA C++ kernel's): the target once more under launch-blocking with that
        /// launch captured, `repro/` written from it, and run under the GPU coredump to check it
        /// faults the same way (`--repro`; docs/repro.md).
        Repro = "repro", needs [CudaGdb, Tmpdir, CoredumpSpace], options [];
    }
    beside {
        /// Not a rung: what `debug-ima dump PID` took of a process it did not start (host stacks,
        /// a cuda-gdb attach, the NCCL flight recorder, a user-triggered dump with `--kill`). Not
        /// in [`RungId::ALL`], not a value of `--rungs`, no recipe key. It names the one folder
        /// `debug-ima dump PID` writes its evidence into (`rungs/01-dump`), so that every reader
        /// of a bundle (`analyze`, `bundle show|report|verify`, the verdict's `rungs`) takes that
        /// folder as it takes a rung's.
        Dump = "dump", needs [CudaGdb, DebuggerBackend, Ptrace, PySpy];
    }
}

impl RungId {
    /// Whether the rung needs `need` (a universal one: always).
    pub fn has_need(self, need: Need) -> bool {
        need.universal() || self.needs().contains(&need)
    }

    /// The rung of the ladder named `s` ([`RungId::Dump`] is none).
    pub fn from_name(s: &str) -> Option<RungId> {
        RungId::ALL.into_iter().find(|r| r.name() == s)
    }

    /// Every rung's name, for error messages (`baseline, rebuild, ...`).
    pub fn names() -> String {
        RungId::NAMES.join(", ")
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
            assert!(RungId::NAMES.contains(&r.name()));
            assert_eq!(serde_json::to_string(&r).unwrap(), format!("\"{}\"", r.name()));
            assert_eq!(serde_json::from_str::<RungId>(&format!("\"{}\"", r.name())).unwrap(), r);
        }
        assert_eq!(RungId::from_name("nope"), None);
        // The dump's folder is named like a rung's, but it is no rung of the ladder.
        assert_eq!(serde_json::to_string(&RungId::Dump).unwrap(), format!("\"{}\"", RungId::Dump.name()));
        assert!(!RungId::ALL.contains(&RungId::Dump));
        assert_eq!(RungId::from_name(RungId::Dump.name()), None);
        assert!(RungId::Dump.options().is_empty());
        use clap::ValueEnum;
        assert!(
            !RungId::value_variants().contains(&RungId::Dump) && RungId::Dump.to_possible_value().is_none()
        );
        // The command line spells every rung as the table does, in ladder order.
        let values: Vec<String> = RungId::value_variants()
            .iter()
            .filter_map(|r| r.to_possible_value().map(|v| v.get_name().to_string()))
            .collect();
        assert_eq!(values, RungId::ALL.map(|r| r.name().to_string()));
    }

    /// Names are kebab-case, unique, and every rung takes the common options first.
    #[test]
    fn the_table_is_well_formed() {
        let mut seen = std::collections::BTreeSet::new();
        for r in RungId::ALL.into_iter().chain([RungId::Dump]) {
            let n = r.name();
            assert!(n.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'), "{n}");
            assert!(seen.insert(n), "{n} twice");
        }
        for r in RungId::ALL {
            assert_eq!(r.options()[..3], COMMON_OPTIONS, "{r}");
        }
        assert_eq!(RungId::Rebuild.options(), ["enabled", "timeout", "env", "debug"]);
        assert_eq!(RungId::Racecheck.options(), ["enabled", "timeout", "env", "args"]);
        // Variant order is ladder order (the plan sorts by it).
        assert!(RungId::ALL.windows(2).all(|w| w[0] < w[1]));
    }
}

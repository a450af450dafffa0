//! `bench`: how fast, and in how much memory, `analyze` reads a gigabyte compute-sanitizer
//! log. The log is generated from a real recording's records, repeated with only the
//! `by thread (x,y,z) in block (x,y,z)` numbers varied (many records of few sites, as a
//! real run prints), then `analyze --json` (this executable) and `grep -c` read it.
//!
//! `bench --names 500,1000,2000,4000`: how `analyze` grows with the number of distinct kernel
//! names (of 5,000 characters each, as a hostile or generated log may hold): a log of N
//! records, each a real record with its own kernel name, for each N; linear, not quadratic.
//!
//! `bench pack`: how fast `bundle pack` ([`crate::bundle::archive::pack`]) writes a bundle with a
//! coredump-sized file, against `tar -I 'zstd -T0'` on the same folder.
//!
//! `bench` and `bench pack` end with `result PASS` or `result FAIL`; a FAIL is
//! [`Outcome::Mismatch`] (exit 1), so a script sees the goal missed.
//!
//! The files: `analyzer.rs` (`bench`, `bench --names`), `pack.rs` (`bench pack`),
//! `redact.rs` (`bench redact`), `records.rs` (the generated logs), `common.rs` (limits,
//! memory and time readers, the outcome), `tests.rs`. This file only declares and
//! re-exports.
//!
//! [`Outcome::Mismatch`]: crate::commands::Outcome::Mismatch
//!
//! Must not: run anything but `grep`, `tar`, `zstd` and this executable's own `analyze`;
//! hold a generated file in memory (they are written through buffers); or leave them on disk
//! unless `--keep` was given (also when a step fails).

mod analyzer;
mod common;
mod pack;
mod records;
mod redact;

pub use analyzer::{
    measure, names_table, run, run_names, BenchArgs, BenchReport, NamesRow, GOAL_MB_PER_S, GOAL_RSS_MIB,
};
pub use common::{median, verdict_outcome};
pub use pack::{
    measure_pack, pack_dump, run_pack, write_coredump, write_pack_bundle, PackBenchArgs, PackBenchReport,
    PACK_BUNDLE,
};
pub use records::{
    distinct_name, extract_records, generate, names_log, write_names_log, GenStats, RecordTemplate,
};
pub use redact::{run_redact, RedactBenchArgs};

#[cfg(test)]
mod tests;

//! compute-sanitizer (memcheck) text output: the `========= `-prefixed records of invalid
//! accesses and hardware exceptions (`Warp assert`), `Program hit ...` API errors, the
//! `ERROR SUMMARY` and a sanitizer-written coredump, turned into [`Fault`]s grouped by site
//! and [`ApiError`]s grouped by (error, API).
//!
//! The files: `parser.rs` (the text parser and the record being read), `grouping.rs` (sites
//! and API errors grouped), `fields.rs` (a record's fields, shared with the XML and racecheck
//! readers), `caps.rs`, `tests.rs`. This file only declares and re-exports.
//!
//! [`Fault`]: crate::findings::Fault
//! [`ApiError`]: crate::findings::ApiError
//!
//! Must not: keep state for more than the record being read (groups and API errors are
//! capped), allocate for a record that joins an existing group, panic on any input, or look
//! at lines without the `=========` prefix (they are the program's own; the host parser
//! reads them). The grouping helpers here are shared with
//! [`memcheck_xml`](crate::findings::memcheck_xml).

mod caps;
mod fields;
mod grouping;
mod parser;

pub use caps::{MAX_API_ERRORS, MAX_DEVICE_FRAMES, MAX_HOST_FRAMES, MAX_SITES};
pub(crate) use fields::{
    access_class, clip, dim3_prefix, grouped_u64, kernel_name, parse_host_frame, parse_program_hit,
    push_clipped, source_loc, split_position,
};
pub(crate) use grouping::{ApiErrors, Sites, Slot};
pub use parser::MemcheckParser;

#[cfg(test)]
mod tests;

//! Host-side reports: what the CUDA program (or the Python/PyTorch program) printed itself.
//!
//! Recognises, line by line:
//! - CUDA runtime errors printed by C/C++ error checks (`CUDA error at ima_far.cu:32:
//!   cudaMemcpy(...): an illegal memory access was encountered`, `GPUassert: ... ima.cu 40`,
//!   `sync: unspecified launch failure`, `cudaErrorIllegalAddress`, a `what():` line after
//!   `terminate called after throwing an instance of 'c10::Error'`, PyTorch's NCCL watchdog
//!   line). Only CUDA errors are kept: a known CUDA error string, a fault enum name, or a
//!   `CUDA error` / `cudaErrorX` mention; not every line that says "error".
//! - Python tracebacks, per rank (`[rankN]:` prefixes are stripped by the scanner), chained
//!   ones included, ending in an exception line whose message is a CUDA error
//!   (`torch.AcceleratorError: CUDA error: device-side assert triggered`). Exceptions that
//!   are not CUDA errors are ignored.
//!   A logger prefix repeated before every traceback line is allowed for.
//! - Device-side assert lines, from PyTorch, from C `assert()` in device code and from
//!   Triton (`FILE:LINE: FUNC: block: [x,y,z], thread: [x,y,z] Assertion `COND` failed.`,
//!   with `unknown:0: unknown` where Triton knows neither): these are a device location, so
//!   they become [`Fault`]s, one per site, with the count and the block/thread ranges of the
//!   threads that printed it.
//!
//! The files: `parser.rs` (the line parser and its state per rank), `triggers.rs` (the cheap
//! test every line goes through first), `errors.rs` (CUDA errors in text), `python.rs`
//! (tracebacks and exception lines), `text.rs` (the caps, positions and small helpers),
//! `tests.rs`. This file only declares and re-exports.
//!
//! [`Fault`]: crate::findings::Fault
//! [`HostParser::line`]: crate::findings::LineParser::line
//!
//! Must not: do I/O, spawn processes or print. Every line of a possibly huge log but
//! compute-sanitizer's (which its `wants` leaves out) reaches [`HostParser::line`], so a line
//! that is nothing of ours costs a few byte checks and no allocation; everything kept is
//! capped (frames per traceback, symptoms, sites, ranks).

mod errors;
mod parser;
mod python;
mod text;
mod triggers;

pub use parser::HostParser;
pub(crate) use python::strip_prefix_like;
pub(super) use text::infer_rank;

#[cfg(test)]
mod tests;

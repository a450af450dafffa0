//! The caps of the compute-sanitizer readers (sites, frames, API errors, coredumps, the
//! length of a field) and the default `=========` prefix of the text output.
//!
//! Must not: hold anything but constants.

/// Distinct sites (kernel, line, error kind) kept; records at further sites are only counted.
pub const MAX_SITES: usize = 4096;
/// Host frames kept per site (of its first record).
pub const MAX_HOST_FRAMES: usize = 64;
/// Device frames kept per site (of its first record).
pub const MAX_DEVICE_FRAMES: usize = 64;
/// Distinct (error, API) pairs kept.
pub const MAX_API_ERRORS: usize = 256;
/// Sanitizer-written coredumps kept.
pub(super) const MAX_COREDUMPS: usize = 64;
/// Longest record field (header, `at` line) kept, in bytes.
pub(super) const MAX_FIELD: usize = 16 * 1024;

/// compute-sanitizer's default `--prefix`.
pub(super) const PREFIX: &[u8] = b"=========";

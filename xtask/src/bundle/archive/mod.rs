//! Bundle archives: `pack` writes a bundle as a deterministic `.tar.zst` with its
//! `SHA256SUMS`, carrying only what may leave (`bundle::leaves`: the tool's own files, other
//! text redacted in place first; coredumps and binary files left out unless asked for, and
//! listed in `LEFT_OUT.tsv`), `unpack` extracts one without trusting it, `verify` checks a
//! bundle directory or archive against its `SHA256SUMS`; [`write_sums`] writes that file at the
//! end of every ladder run. [`pack_until`] and [`unpack_until`] stop when asked (Ctrl-C, through
//! the caller's check) and remove what they had written: the `.partial` archive, the hidden
//! partial folder. `shared` holds what they share, `read` the one streaming check of an
//! archive's entries that `unpack` and `verify` go through. This file only declares and
//! re-exports.
//!
//! Must not: print (it returns values; `ui` and `cli` render them); follow, create or archive
//! links or special files; write anywhere but the archive (and its `.partial` and `.sha256`
//! siblings), the bundle's `SHA256SUMS` and `LEFT_OUT.tsv` (and, through `bundle::leaves`, the
//! texts it redacts and the names it renames in the bundle before packing), the folder given
//! to `unpack`, and the private temporary folder of [`unpack_temp`] (removed when its value is
//! dropped); or trust an archive's paths, types, sizes, modes, owners or times. Concurrent
//! changes to a bundle or destination while this code runs are outside its threat model.

mod pack;
mod read;
mod shared;
mod unpack;
mod verify;

pub use pack::{default_archive_path, default_archive_path_for, pack, pack_until, PackOptions, Packed};
pub use read::{Limits, DEFAULT_MAX_RATIO};
pub(crate) use shared::write_atomic;
pub use shared::{
    sha256_file, write_sums, write_sums_reusing, Compression, DEFAULT_LEVEL, LEFT_OUT, MTIME, SUMS,
};
pub use unpack::{is_archive, unpack, unpack_temp, unpack_until, RemoveDir, TempUnpacked, Unpacked};
pub use verify::{render_verification, verify, Verification};

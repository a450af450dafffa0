//! The end every command that writes a bundle shares: `SHA256SUMS` written last, so that
//! `bundle verify` can tell later edits (also after Ctrl-C). A full disk is the command's
//! error (when it had none); any other failure is a warning naming the command that writes
//! the file later.
//!
//! Must not: print other than through `ui`, or lose the command's own error.

use anyhow::Result;

use crate::bundle::{layout, Bundle};
use crate::ui;

/// Seals `bundle` and returns `outcome`, or the full disk's error when `outcome` was fine.
pub fn seal<T>(bundle: &Bundle, outcome: Result<T>) -> Result<T> {
    match bundle.seal() {
        Ok(()) => outcome,
        Err(e) if crate::files::out_of_space(&e) => match outcome {
            Ok(_) => Err(e.context(format!("cannot write {}", layout::SUMS))),
            Err(first) => Err(first),
        },
        Err(e) => {
            ui::status(&format!("warning: {e:#}; `cargo xtask bundle pack` writes {} later", layout::SUMS));
            outcome
        }
    }
}

//! The bundle: its [`layout`] (every path and name), the [`manifest`] schema, the [`writer`]
//! the ladder writes it with, the files an analysis reads ([`inputs`]), `replay.sh`
//! ([`replay`]), the GitHub-issue report ([`report`]), the archives ([`archive`]) and their
//! anonymized copies ([`anonymize`]), and what of it leaves the machine ([`leaves`]: the
//! tool's own files as they are, other text redacted in place, the rest left out of archives).
//! `recorded` holds what the writer and the runner share: the recorded environment and the
//! redactions of logs. This file only declares and re-exports.
//!
//! Secrets never reach the bundle: commands and environments are recorded redacted
//! ([`crate::redact`]), logs are redacted as the runner writes them, and every other text a
//! rung's folder holds (tool reports, what the target left, at any depth) is redacted in place
//! after its rung; what was taken out is listed in the manifest by name and place.
//! docs/bundles.md documents every manifest field.
//!
//! Must not: run processes or decide policy.

pub mod anonymize;
pub mod archive;
pub mod inputs;
pub mod layout;
pub mod leaves;
pub mod manifest;
pub mod ranks;
mod recorded;
pub mod replay;
pub mod report;
pub mod sources;
pub mod user_data;
pub mod writer;

pub use leaves::{redact_file, redact_left};
pub use manifest::{
    CommandRecord, ContainerRecord, FileRecord, InputsRecord, Manifest, RungRecord, RungStatus,
};
pub use recorded::{log_redactions, recorded_environment, ENV_ALLOW, ENV_ALLOW_PREFIXES};
pub use writer::{utc_stamp, Bundle};

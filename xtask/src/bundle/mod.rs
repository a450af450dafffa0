//! The bundle: its [`layout`] (every path and name), the [`manifest`] schema, the [`writer`]
//! the ladder writes it with, the files an analysis reads ([`inputs`]), `replay.sh`
//! ([`replay`]), the GitHub-issue report ([`report`]), the archives ([`archive`]) and their
//! anonymized copies ([`anonymize`]). `recorded` holds
//! what the writer and the runner share: the recorded environment and redaction of logs and
//! tool reports. This file only declares and re-exports.
//!
//! Secrets never reach the bundle: commands and environments are recorded redacted
//! ([`crate::redact`]), logs are redacted as the runner writes them, and tool reports (XML) are
//! redacted in place after their rung; what was taken out is listed in the manifest by name
//! and place. docs/bundles.md documents every manifest field.
//!
//! Must not: run processes or decide policy.

pub mod anonymize;
pub mod archive;
pub mod inputs;
pub mod layout;
pub mod manifest;
pub mod ranks;
mod recorded;
pub mod replay;
pub mod report;
pub mod sources;
pub mod writer;

pub use manifest::{CommandRecord, ContainerRecord, FileRecord, Manifest, RungRecord, RungStatus};
pub use recorded::{
    log_redactions, recorded_environment, redact_file, redact_left, ENV_ALLOW, ENV_ALLOW_PREFIXES,
};
pub use writer::{utc_stamp, Bundle};

//! Redaction of secrets before anything is written into a bundle, with the shapes of the public
//! rule sets of gitleaks and trufflehog (docs/security.md lists them). By name: environment
//! variables, recipe keys, flags and `NAME=value`, `name: value`, `"name": "value"` pairs whose
//! name says secret (`*TOKEN`, `*SECRET*`, `*PASSWORD*`, `KEY`, credentials, auth), HTTP
//! headers (`Authorization:`, `X-Api-Key:`, `Cookie:`), `-p`/`--password` arguments, `.netrc`
//! passwords and cuda-gdb's locals. By value: tokens with a known prefix (`ghp_…`, `glpat-…`,
//! `xoxb-…`, `sk_live_…`, `AKIA…`, `AIza…`, `eyJ…` JWTs, ...), passwords in URLs (any character),
//! PEM private keys (one line at a time, or a whole block with [`Lines`]), random tokens of 20
//! bytes or more told by their randomness wherever they are, and the values [`remember`]ed for
//! the run; over the text as it is and decoded, to three levels of escaping. The secret part becomes [`MARK`]; what says what it was (the prefix, the name,
//! the header) is kept, so a bundle stays readable. What was redacted is reported as
//! [`Redaction`]s that name the place and the kind, never the value.
//!
//! Pure: this module must do no I/O and print nothing, and it must never copy a secret value into
//! a [`Redaction`]; its one state is what [`remember`] keeps, set once per process. Matching is
//! hand-written (no regex crate) around a few SIMD byte searches
//! (`memchr`), each hit checked in a few byte comparisons; a line with nothing to redact costs no
//! allocation ([`redact_line`] returns `Cow::Borrowed`), since captured logs can be large.
//!
//! This file only declares the parts and re-exports what the rest of the crate uses.
//!
//! Must not: hold code; every rule lives in one of the files below.

mod bytes;
mod decode;
mod flags;
mod generic;
mod keys;
mod line;
mod names;
mod pairs;
mod quoted;
mod scan;
mod structured;
mod tokens;

pub use line::{candidates, cut_point, redact_line, Lines};
pub use names::{secret_name, Redaction, MARK};
pub use scan::remember;
pub use structured::{
    invocation, redact_args, redact_env, redact_json, redact_text, redact_value, secret_values,
};

#[cfg(test)]
mod test_util;
#[cfg(test)]
mod tests_fixtures;
#[cfg(test)]
mod tests_generic;
#[cfg(test)]
mod tests_shapes;
#[cfg(test)]
mod tests_values;

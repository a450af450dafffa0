//! What the bundle writer and the runner share: the allow-listed environment recorded in the
//! manifest, and the redactions of a run's logs as the manifest lists them. (What the target
//! and the tools leave in a rung's folder is redacted in place by `leaves`.)
//!
//! Must not: read or write files, or copy a secret into a record.

use crate::model::Stream;
use crate::redact::{redact_env, Redaction};
use std::collections::BTreeMap;

/// Inherited variables recorded in [`Manifest::environment`]: these names, and names
/// starting with one of [`ENV_ALLOW_PREFIXES`].
pub const ENV_ALLOW: &[&str] = &[
    "PATH",
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "PYTHONPATH",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "CC",
    "CXX",
    "CUDACXX",
    "MAX_JOBS",
    "OMP_NUM_THREADS",
    "TMPDIR",
];

/// Prefixes of the inherited variables recorded in [`Manifest::environment`].
pub const ENV_ALLOW_PREFIXES: &[&str] = &[
    "CUDA_",
    "CUDNN_",
    "CUBLAS_",
    "NCCL_",
    "NVIDIA_",
    "NVCC_",
    "PYTORCH_",
    "TORCH_",
    "TORCHINDUCTOR_",
    "TRITON_",
    "VLLM_",
    "HF_",
    "TRANSFORMERS_",
    "XLA_",
    "COMPUTE_SANITIZER_",
];

/// The allow-listed part of an environment ([`ENV_ALLOW`], [`ENV_ALLOW_PREFIXES`]),
/// redacted, each redaction reported at `environment`.
pub fn recorded_environment(
    vars: impl IntoIterator<Item = (String, String)>,
    out: &mut Vec<Redaction>,
) -> BTreeMap<String, String> {
    let mut kept: Vec<(String, String)> = vars
        .into_iter()
        .filter(|(k, _)| {
            ENV_ALLOW.contains(&k.as_str()) || ENV_ALLOW_PREFIXES.iter().any(|p| k.starts_with(p))
        })
        .collect();
    kept.sort();
    redact_env(&kept, "environment", out).into_iter().collect()
}

/// The redactions of a run's logs as the manifest lists them: one per log and kind of secret,
/// with the number of lines (both streams counted when they share a log).
pub fn log_redactions(redacted: &[(Stream, &str, u64)], stdout: &str, stderr: &str) -> Vec<Redaction> {
    let mut counts: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    for &(stream, kind, n) in redacted {
        let log = match stream {
            Stream::Stdout => stdout,
            Stream::Stderr => stderr,
        };
        *counts.entry((log, kind)).or_insert(0) += n;
    }
    counts
        .into_iter()
        .map(|((log, kind), n)| Redaction {
            place: log.to_string(),
            what: format!("{kind} ({n} line{})", if n == 1 { "" } else { "s" }),
        })
        .collect()
}

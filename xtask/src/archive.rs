//! Bundle archives: deterministic `.tar.zst` with `SHA256SUMS`, safe unpack, verify.

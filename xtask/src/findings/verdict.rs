//! Verdict (in progress).

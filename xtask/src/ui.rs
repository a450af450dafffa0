//! ui (in progress).

//! analyze (in progress).

//! The bundle commands through the real binary: redaction, replay, report, list and show.

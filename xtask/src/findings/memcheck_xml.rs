//! Placeholder being replaced by the real XML parser.
use super::Evidence;
pub fn parse<R: std::io::BufRead>(_r: R, _ev: &mut Evidence) {}

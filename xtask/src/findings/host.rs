//! Placeholder being replaced by the real host parser.
use super::{Evidence, LineCtx, LineParser};

#[derive(Default)]
pub struct HostParser;

impl LineParser for HostParser {
    fn line(&mut self, _line: &str, _ctx: LineCtx) {}
    fn finish(&mut self, _ev: &mut Evidence) {}
}

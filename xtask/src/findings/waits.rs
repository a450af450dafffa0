//! Placeholder being replaced by the real waits parser.
use super::{Evidence, LineCtx, LineParser};

#[derive(Default)]
pub struct WaitsParser;

impl LineParser for WaitsParser {
    fn line(&mut self, _line: &str, _ctx: LineCtx) {}
    fn finish(&mut self, _ev: &mut Evidence) {}
}

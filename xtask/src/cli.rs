//! cli (in progress).
pub fn main() -> i32 { 0 }

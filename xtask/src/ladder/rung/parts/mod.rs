//! What the rungs share, one job a file: the rungs import these, never each other's files, and
//! nothing here imports a rung. The command builders (`build`: the target, cuda-gdb, a tool on
//! the binary; `sanitizer`: compute-sanitizer's rungs), the armed run (`armed`: the dumps,
//! pipes and core limit a run is armed with; `sites`: a binary's static launch sites read
//! beside it), the reading of what an armed run left (`dumps`), the run until hung and the
//! hang's evidence (`hung`, with `evidence`, which `debug-ima dump` shares), the recipe's build
//! with line info (`target_build`) and the check of its binaries (`lineinfo`), the rebuild's
//! half for a Python target's run-time builds (`rebuild_jit`), and the repro rung's shared
//! check (`repro_check`) and native half (`repro_native`).
//!
//! Must not: import a rung's file (a piece two rungs need moves here instead), or reach the
//! rung interface through `ladder::rung` itself (its `mod.rs` lists the rungs, which import
//! these: import `crate::ladder::rung::api` instead). Like the rungs: no printing, no spawning
//! (every step runs through [`RungIo`](super::api::RungIo)).

pub mod armed;
pub mod build;
pub mod dumps;
pub mod evidence;
pub mod hung;
pub mod lineinfo;
pub mod rebuild_jit;
pub mod repro_check;
pub mod repro_native;
pub mod sanitizer;
pub mod sites;
pub mod target_build;

//! cuda-gdb's output, on a GPU coredump (`target cudacore FILE`) or attached to a live
//! process (`-p PID`, after `CUDA_DEVICE_WAITS_ON_EXCEPTION`).
//!
//! Recognises `Opening GPU coredump: PATH`, `CUDA Exception: Warp Illegal Address`,
//! `Assertion failed.`, `Thread N "x" received signal CUDA_EXCEPTION_14, ...`,
//! `The exception was triggered at PC 0x...  KERNEL  (FILE:LINE)` (also without the
//! location, and with `in FN inlined from FILE:LINE`: the location is then the outermost
//! `inlined from` position and the chain is kept innermost first), the focus line
//! (`[Current focus set to ...]` / `[Switching focus to ...]`), `bt` frames with the launch
//! shape, arguments and `at FILE:LINE`, the stop line of an attach
//! (`0x... in KERNEL<<<...>>> (...) at FILE:LINE`), `info locals` / `info args` lines right
//! after a device `bt`, the `info cuda kernels` table, and cuda-gdb's own crash
//! (`A fatal error internal to GDB has been detected`). One [`Fault`] per debugging
//! session (a `$ cuda-gdb ...` command line, an `Opening GPU coredump:` line, or the
//! first cuda-gdb line of a log without either) that showed an exception.
//!
//! A session with no exception that printed `info cuda threads` (the table under its
//! `BlockIdx ThreadIdx To BlockIdx ThreadIdx Count PC Filename Line` header, `Kernel N` lines,
//! the `*` focus row), or `No CUDA threads.` / `No CUDA kernels.`, is a [`DeviceSnapshot`]
//! instead: a user-triggered dump of a program that never returned. It keeps the focus, the
//! `bt` frame with its inline chain (`at FILE:LINE in FN inlined from FILE:LINE`), every row of
//! `info cuda kernels`, the thread rows merged by kernel, PC and line, `info cuda warps` (only
//! the focused SM on cuda-gdb 13.0) and `x/i $pc`.
//!
//! The files: `parser.rs` (the line parser: sessions opened and closed, each line handed
//! on), `session.rs` (one session and its fault or snapshot), `frames.rs` (`bt` frames, the
//! exception line, the focus), `tables.rs` (`info cuda threads|warps|kernels` rows),
//! `instructions.rs` (`x/i`, SASS access, the trap, `info line`), `text.rs` (the caps and the
//! shared bits of gdb's syntax), `tests.rs`. This file only declares and re-exports.
//!
//! [`Fault`]: crate::findings::Fault
//! [`DeviceSnapshot`]: crate::findings::DeviceSnapshot
//!
//! Must not: do I/O, spawn processes, print, panic on any input, or allocate for lines
//! that are not cuda-gdb's while no session is open (every line of a log reaches every
//! parser). Memory is bounded: frames, arguments, locals, notes, kernel rows, thread groups
//! and warps are capped.

mod frames;
mod instructions;
mod parser;
mod session;
mod tables;
mod text;

pub use instructions::sass_access;
pub use parser::CudaGdbParser;
pub(super) use text::open_of_last_group;

#[cfg(test)]
mod tests;

//! Tests of the cuda-gdb parser: the recordings from the H200 (coredumps, attaches, hangs,
//! dumps), the reference transcripts, the line readers, and property tests.
//!
//! Must not: read files other than the recordings compiled in.

use super::frames::*;
use super::instructions::*;
use super::parser::*;
use super::tables::*;
use super::text::*;
use crate::findings::scan::scan_str;
use crate::findings::{names, ErrorClass, Evidence, Fault, Frame, LineCtx, LineParser, SourceLoc, Tool};

#[test]
fn an_inlined_header_atomic_on_shared_memory_keeps_the_chain_the_class_and_the_space() {
    // cuda-gdb 13.0 on an H200, tests/gpu/programs/shared_atomic.cu (record_verdict.sh).
    let ev = crate::findings::scan::scan_str(recording!("h200/shared_atomic/cudagdb-merged-1.log"), "x.log");
    let f = &ev.faults[0];
    assert_eq!(f.error, Some(ErrorClass::OutOfRangeAddress));
    assert_eq!(f.location, Some(SourceLoc { file: "shared_atomic.cu".into(), line: 16 }));
    assert_eq!(f.inlined[0], SourceLoc { file: "device_atomic_functions.hpp".into(), line: 112 });
    let a = f.access.as_ref().expect("x/i $errorpc gives the access");
    assert_eq!((a.kind.as_deref(), a.space.as_deref(), a.size), (Some("atomic"), Some("shared"), Some(4)));
}

#[test]
fn sass_mnemonics_name_the_space() {
    let space = |i: &str| sass_access(i).and_then(|a| a.space);
    assert_eq!(space("ATOMS.POPC.INC.32 RZ[R5+URZ]").as_deref(), Some("shared"));
    assert_eq!(space("@P0 STG.E.64 desc[UR4][R2.64], R4").as_deref(), Some("global"));
    assert_eq!(space("LDL.64 R2, [R1]").as_deref(), Some("local"));
    assert_eq!(space("ST.E [R2.64], R5"), None);
    assert!(sass_access("IMAD R1, R2, R3").is_none());
    assert!(sass_access("").is_none());
    assert_eq!(sass_access("STG.E.128 [R2], R4").and_then(|a| a.size), Some(16));
}
use proptest::prelude::*;

/// `target cudacore` on PyTorch's device-side assert: no source line (PID 2899).
const TORCH_ASSERT_CORE: &str = recording!("h200/torch_assert/cudagdb-core-1.log");
/// Attached to the same program: the same kernel, no source line.
const TORCH_ASSERT_ATTACH: &str = recording!("h200/torch_assert/attach.log");
/// cuda-gdb crashes right after the exception line (the warp had exited; PID 851).
const OOB_WRITE_CORE: &str = recording!("h200/oob_write/cudagdb-core-1.log");
/// The same crash when attaching (PID 915, from meta.tsv).
const OOB_WRITE_ATTACH: &str = recording!("h200/oob_write/attach.log");
const OOB_WRITE_META: &str = recording!("h200/oob_write/meta.tsv");
/// A -G build: `info locals` and `info args` after `bt` (PID 2419).
const OOB_WRITE_G_CORE: &str = recording!("h200/oob_write_G/cudagdb-core-1.log");
/// Attached to the -G build (PID 2482, from meta.tsv).
const OOB_WRITE_G_ATTACH: &str = recording!("h200/oob_write_G/attach.log");
const OOB_WRITE_G_META: &str = recording!("h200/oob_write_G/meta.tsv");
/// A template kernel, `axpy_vec<float, 4>` (PID 1740).
const TEMPLATED_CORE: &str = recording!("h200/templated/cudagdb-core-1.log");
/// Attached by `debug-ima` (PID 4069 in the command it wrote beside the log).
const OOB_READ_ATTACH: &str = recording!("bundles/oob_read-full/rungs/05-attach/cudagdb-attach.log");
const OOB_READ_ATTACH_CMD: &str =
    recording!("bundles/oob_read-full/rungs/05-attach/cudagdb-attach.command.txt");
/// cuda-gdb without a coredump, and attaching to a process that is gone.
const NO_CORE_13: &str = transcript!("13_cudacore.excerpt.log");
const NO_PROCESS_17: &str = transcript!("17_attach.excerpt.log");
/// Attached to a -G build with `print i` and `print out` among the commands.
const ATTACH_G_53: &str = transcript!("53_attach_G.excerpt.log");
/// Attached to a PyTorch kernel without line information: the exception line names a
/// template kernel with spaces and no `(FILE:LINE)`.
const DIST_ATTACH_86: &str = transcript!("86_dist_attach.excerpt.log");
/// Attached by `debug-ima` to the faulting rank (device 1) of a two-GPU torchrun job
/// (PID 1040 in the command it wrote beside the log).
const DIST_ATTACH: &str = recording!("bundles/dist_fault-full/rungs/04-attach/cudagdb-attach.log");
const DIST_ATTACH_CMD: &str =
    recording!("bundles/dist_fault-full/rungs/04-attach/cudagdb-attach.command.txt");

/// `log` after a shell transcript's `$ CMD` line, with the command line record.sh noted
/// for `rung` in a case's `meta.tsv` (rung, exit status, seconds, command): how a log
/// that carries its command gives cuda-gdb's `-p PID`.
fn with_command(meta: &str, rung: &str, log: &str) -> String {
    let cmd = meta
        .lines()
        .find_map(|l| {
            let mut f = l.split('\t');
            if f.next() == Some(rung) {
                f.nth(2)
            } else {
                None
            }
        })
        .unwrap_or_else(|| panic!("no `{rung}` in meta.tsv"));
    format!("$ {}\n{log}", cmd.trim_end())
}

/// A bundle's attach log after the command `debug-ima` ran (written beside it).
fn with_bundle_command(cmd: &str, log: &str) -> String {
    format!("$ {}\n{log}", cmd.trim_end())
}

fn loc(file: &str, line: u32) -> SourceLoc {
    SourceLoc { file: file.to_string(), line }
}

fn pair(a: &str, b: &str) -> (String, String) {
    (a.to_string(), b.to_string())
}

fn one_fault(text: &str) -> (Evidence, Fault) {
    let ev = scan_str(text, "x.log");
    assert_eq!(ev.faults.len(), 1, "{:#?}", ev.faults);
    let f = ev.faults[0].clone();
    assert_eq!(f.tool, Some(Tool::CudaGdb));
    assert_eq!(f.count, 1);
    (ev, f)
}

const NLL: &str = "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)";

const FILL: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<unsigned char>, std::array<char*, 1ul> >(int, at::native::FillFunctor<unsigned char>, std::array<char*, 1ul>)";

const SCALE_WRITE: &str = "scale_write(float*, int, long long)";

#[test]
fn coredump_of_a_device_assert() {
    let (ev, f) = one_fault(TORCH_ASSERT_CORE);
    assert!(ev.tools.contains(&Tool::CudaGdb));
    assert_eq!(f.error, Some(ErrorClass::DeviceAssert));
    assert_eq!(f.kernel.as_deref(), Some(NLL));
    assert_eq!(f.location, None);
    assert_eq!(f.block, Some([0, 0, 0]));
    assert_eq!(f.thread, Some([5, 0, 0]));
    assert_eq!((f.device, f.sm, f.warp, f.lane), (Some(0), Some(124), Some(1), Some(5)));
    assert_eq!(f.grid, Some([1, 1, 1]));
    assert_eq!(f.block_dim, Some([32, 1, 1]));
    assert_eq!(f.pid, Some(2899));
    assert_eq!(f.frames.len(), 1);
    assert!(f.args.is_empty() && f.locals.is_empty());
    assert!(!ev.debugger_crashed);
}

#[test]
fn crash_after_the_exception_line_keeps_it() {
    let (ev, f) = one_fault(OOB_WRITE_CORE);
    assert!(ev.debugger_crashed);
    // GDB's own backtrace names the frame that opens the dump: a retry would crash the same way.
    assert!(ev.debugger_crashed_opening);
    assert_eq!(f.error, Some(ErrorClass::IllegalAddress));
    assert_eq!(f.kernel.as_deref(), Some(SCALE_WRITE));
    assert_eq!(f.location, Some(loc("oob_write.cu", 7)));
    assert!(f.inlined.is_empty());
    assert_eq!(f.pc, Some(0x7fd8177a0110));
    assert_eq!(f.pid, Some(851));
    assert_eq!((f.block, f.thread, f.grid), (None, None, None));
    assert!(f.frames.is_empty());
    let note = ev.notes.iter().find(|n| n.contains("cuda-gdb crashed")).expect("crash note");
    assert!(note.contains("scale_write(float*, int, long long) at oob_write.cu:7"), "{note}");
    assert!(note.contains("line 34"), "{note}");
}

#[test]
fn debug_build_coredump_with_locals_and_args() {
    let (_, f) = one_fault(OOB_WRITE_G_CORE);
    assert_eq!(f.error, Some(ErrorClass::IllegalAddress));
    assert_eq!(f.kernel.as_deref(), Some(SCALE_WRITE));
    // The exception line is exact; the frame (line 9, `}`) is where the warp was after.
    assert_eq!(f.location, Some(loc("oob_write.cu", 7)));
    assert_eq!(f.pc, Some(0x7f857b7a0370));
    assert_eq!(f.block, Some([8, 0, 0]));
    assert_eq!(f.thread, Some([128, 0, 0]));
    assert_eq!((f.device, f.sm, f.warp, f.lane), (Some(0), Some(0), Some(4), Some(0)));
    assert_eq!(f.grid, Some([16, 1, 1]));
    assert_eq!(f.block_dim, Some([256, 1, 1]));
    assert_eq!(f.args, vec![pair("out", "0x7f856de00000"), pair("n", "4096"), pair("shift", "-8589934592")]);
    // `info args` repeats the arguments after `info locals`: only `i` is a local.
    assert_eq!(f.locals, vec![pair("i", "2176")]);
    assert_eq!(
        f.frames,
        vec![Frame {
            function: Some("scale_write".into()),
            file: Some("oob_write.cu".into()),
            line: Some(9),
            ..Frame::default()
        }]
    );
    assert_eq!(f.pid, Some(2419));
}

#[test]
fn crash_on_attach_keeps_the_exception_and_the_pid() {
    let (ev, f) = one_fault(&with_command(OOB_WRITE_META, "attach", OOB_WRITE_ATTACH));
    assert!(ev.debugger_crashed);
    assert!(!ev.debugger_crashed_opening, "attached, no dump was opened");
    assert_eq!(f.kernel.as_deref(), Some(SCALE_WRITE));
    assert_eq!(f.location, Some(loc("oob_write.cu", 7)));
    assert_eq!(f.pc, Some(0x7f490f7a0110));
    assert_eq!(f.pid, Some(915));
    assert!(ev.notes.iter().any(|n| n.contains("cuda-gdb crashed")));
    // The log alone (as `debug-ima` keeps it): the same fault, no PID.
    let (ev, f) = one_fault(OOB_WRITE_ATTACH);
    assert!(ev.debugger_crashed);
    assert_eq!((f.pc, f.pid), (Some(0x7f490f7a0110), None));
}

#[test]
fn attach_to_a_debug_build() {
    let (ev, f) = one_fault(&with_command(OOB_WRITE_G_META, "attach", OOB_WRITE_G_ATTACH));
    assert!(!ev.debugger_crashed);
    assert_eq!(f.error, Some(ErrorClass::IllegalAddress));
    assert_eq!(f.kernel.as_deref(), Some(SCALE_WRITE));
    assert_eq!(f.location, Some(loc("oob_write.cu", 7)));
    assert_eq!(f.pc, Some(0x7fdd9b7a0370));
    assert_eq!(f.block, Some([8, 0, 0]));
    assert_eq!(f.thread, Some([128, 0, 0]));
    assert_eq!((f.device, f.sm, f.warp, f.lane), (Some(0), Some(0), Some(4), Some(0)));
    assert_eq!(f.grid, Some([16, 1, 1]));
    assert_eq!(f.block_dim, Some([256, 1, 1]));
    assert_eq!(f.args, vec![pair("out", "0x7fdd93e00000"), pair("n", "4096"), pair("shift", "-8589934592")]);
    assert_eq!(f.locals, vec![pair("i", "2176")]);
    assert_eq!(f.pid, Some(2482));
}

#[test]
fn print_results_are_not_locals() {
    // `$1 = 640` (print i) and `$2 = ...` (print out) after `info locals`.
    let (_, f) = one_fault(ATTACH_G_53);
    assert_eq!(f.locals, vec![pair("i", "640")]);
    assert_eq!(f.args, vec![pair("out", "0x7fe6f5e00000"), pair("n", "1024")]);
    assert_eq!(f.pid, Some(1933));
}

#[test]
fn template_kernels_with_spaces_with_and_without_a_line() {
    let (_, f) = one_fault(TEMPLATED_CORE);
    let axpy = "void axpy_vec<float, 4>(float*, float const*, float, int, long long)";
    assert_eq!(f.kernel.as_deref(), Some(axpy));
    assert_eq!(f.location, Some(loc("templated.cu", 11)));
    assert_eq!(f.pc, Some(0x7fd74b7a0190));
    assert_eq!(f.block, Some([8, 0, 0]));
    assert_eq!(f.thread, Some([64, 0, 0]));
    assert_eq!((f.device, f.sm, f.warp, f.lane), (Some(0), Some(0), Some(2), Some(0)));
    assert_eq!(f.grid, Some([16, 1, 1]));
    assert_eq!(f.block_dim, Some([128, 1, 1]));
    assert_eq!(f.frames.len(), 1);
    assert_eq!(f.pid, Some(1740));

    // PyTorch's kernels have no line information: the stop line and `bt` end in `()`.
    let (_, f) = one_fault(TORCH_ASSERT_ATTACH);
    assert_eq!(f.error, Some(ErrorClass::DeviceAssert));
    assert_eq!(f.kernel.as_deref(), Some(NLL));
    assert_eq!(f.location, None);
    assert_eq!(f.block, Some([0, 0, 0]));
    assert_eq!(f.thread, Some([5, 0, 0]));
    assert_eq!((f.device, f.sm, f.warp, f.lane), (Some(0), Some(124), Some(1), Some(5)));
    assert_eq!(f.grid, Some([1, 1, 1]));
    assert_eq!(f.block_dim, Some([32, 1, 1]));
    assert_eq!(f.frames.len(), 1);
    assert_eq!(f.frames[0].function.as_deref(), Some(NLL));
    assert_eq!(f.pid, None);
}

#[test]
fn attach_to_one_rank_of_a_distributed_job() {
    let (_, f) = one_fault(&with_bundle_command(DIST_ATTACH_CMD, DIST_ATTACH));
    assert_eq!(f.error, Some(ErrorClass::IllegalAddress));
    assert_eq!(f.kernel.as_deref(), Some("gather_kv_kernel"));
    assert_eq!(f.location, Some(loc("vllm_shaped.py", 22)));
    assert_eq!(f.pc, Some(0x7fca749ff600));
    assert_eq!(f.block, Some([41, 0, 0]));
    assert_eq!(f.thread, Some([96, 0, 0]));
    assert_eq!((f.device, f.sm, f.warp, f.lane), (Some(1), Some(84), Some(0), Some(0)));
    assert_eq!(f.grid, Some([64, 1, 1]));
    assert_eq!(f.block_dim, Some([128, 1, 1]));
    assert_eq!(f.pid, Some(1040));
}

#[test]
fn exception_line_without_a_location() {
    let (_, f) = one_fault(DIST_ATTACH_86);
    assert_eq!(f.error, Some(ErrorClass::IllegalAddress));
    assert_eq!(f.kernel.as_deref(), Some(FILL));
    assert_eq!(f.location, None);
    assert_eq!(f.pc, Some(0x7f02edd3c830));
    assert_eq!(f.block, Some([50295, 0, 0]));
    assert_eq!((f.device, f.sm, f.warp, f.lane), (Some(1), Some(0), Some(7), Some(0)));
    assert_eq!(f.grid, Some([524288, 1, 1]));
    assert_eq!(f.block_dim, Some([128, 1, 1]));
    assert_eq!(f.pid, Some(833));
}

#[test]
fn focus_and_bt_without_the_exception_line() {
    // The attach log from the signal line on: no `The exception was triggered` line.
    let from = OOB_READ_ATTACH.find("Thread 1 \"oob_read\"").unwrap();
    let (_, f) = one_fault(&OOB_READ_ATTACH[from..]);
    assert_eq!(f.error, Some(ErrorClass::IllegalAddress));
    assert_eq!(f.kernel.as_deref(), Some("gather_rows"));
    assert_eq!(f.pc, None);
    assert_eq!(f.block, Some([3, 0, 0]));
    assert_eq!(f.device, Some(0));
    assert_eq!(f.grid, Some([4, 1, 1]));
    assert_eq!(f.pid, None);
    // Only the focus line and the stop line.
    let from = OOB_READ_ATTACH.find("[Switching focus").unwrap();
    let to = OOB_READ_ATTACH.find("  Kernel Parent").unwrap();
    let (_, f) = one_fault(&OOB_READ_ATTACH[from..to]);
    assert_eq!(f.error, None);
    assert_eq!(f.kernel.as_deref(), Some("gather_rows"));
    assert_eq!(f.block, Some([3, 0, 0]));
    assert_eq!(f.grid, Some([4, 1, 1]));
}

#[test]
fn failed_runs_give_notes_not_faults() {
    let ev = scan_str(NO_CORE_13, "13.log");
    assert!(ev.faults.is_empty());
    assert!(ev.tools.contains(&Tool::CudaGdb));
    assert!(ev.notes.iter().any(|n| n == "cuda-gdb (line 2): No core file specified."), "{:?}", ev.notes);
    let ev = scan_str(NO_PROCESS_17, "17.log");
    assert!(ev.faults.is_empty());
    assert!(ev.notes.iter().any(|n| n == "cuda-gdb (line 2): ptrace: No such process."), "{:?}", ev.notes);
    assert!(!ev.debugger_crashed);
}

#[test]
fn sessions_in_one_log_stay_apart() {
    let text = format!(
        "{TORCH_ASSERT_CORE}{OOB_WRITE_CORE}{OOB_WRITE_G_CORE}{}",
        with_bundle_command(OOB_READ_ATTACH_CMD, OOB_READ_ATTACH)
    );
    let ev = scan_str(&text, "many.log");
    let got: Vec<_> = ev.faults.iter().map(|f| (f.pid, f.error.clone(), f.location.clone())).collect();
    assert_eq!(
        got,
        vec![
            (Some(2899), Some(ErrorClass::DeviceAssert), None),
            (Some(851), Some(ErrorClass::IllegalAddress), Some(loc("oob_write.cu", 7))),
            (Some(2419), Some(ErrorClass::IllegalAddress), Some(loc("oob_write.cu", 7))),
            (Some(4069), Some(ErrorClass::IllegalAddress), Some(loc("oob_read.cu", 8))),
        ]
    );
    assert!(ev.debugger_crashed);
    assert_eq!(ev.faults[2].locals, vec![pair("i", "2176")]);
    assert!(ev.faults[3].locals.is_empty());
}

#[test]
fn kernel_table_rows() {
    let row_of = |text: &str| text.lines().find(|l| l.starts_with('*')).unwrap().to_string();
    let row = parse_kernel_row(&row_of(TEMPLATED_CORE)).unwrap();
    assert!(row.current);
    assert_eq!(row.device, Some(0));
    assert_eq!(row.grid, Some([16, 1, 1]));
    assert_eq!(row.block_dim, Some([128, 1, 1]));
    assert_eq!(row.invocation, "axpy_vec<float, 4>()");
    // A kernel on the second GPU.
    let row = parse_kernel_row(&row_of(DIST_ATTACH)).unwrap();
    assert_eq!(row.device, Some(1));
    assert_eq!(row.grid, Some([64, 1, 1]));
    assert_eq!(row.invocation, "gather_kv_kernel()");
    // A template kernel's row without line information.
    let row = parse_kernel_row(&row_of(TORCH_ASSERT_CORE)).unwrap();
    assert_eq!((row.grid, row.block_dim), (Some([1, 1, 1]), Some([32, 1, 1])));
    assert_eq!(
        row.invocation,
        "at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>()"
    );
    let header = TEMPLATED_CORE.lines().find(|l| l.trim_start().starts_with("Kernel Parent")).unwrap();
    assert_eq!(parse_kernel_row(header), None);
}

#[test]
fn excerpts_cut_at_every_char_boundary_never_panic() {
    // The parser alone (scan_str allocates a 1 MiB buffer per call).
    fn parse(text: &str) -> Evidence {
        let mut p = CudaGdbParser::default();
        for (n, line) in text.lines().enumerate() {
            let (line, rank) = crate::findings::scan::strip_rank(line);
            p.line(line, LineCtx { lineno: n as u64 + 1, rank });
        }
        let mut ev = Evidence::default();
        p.finish(&mut ev);
        ev
    }
    for text in [
        NO_CORE_13,
        NO_PROCESS_17,
        TORCH_ASSERT_CORE,
        TORCH_ASSERT_ATTACH,
        OOB_WRITE_CORE,
        OOB_WRITE_G_CORE,
        OOB_WRITE_ATTACH,
        OOB_WRITE_G_ATTACH,
        TEMPLATED_CORE,
        OOB_READ_ATTACH,
        ATTACH_G_53,
        DIST_ATTACH_86,
        DIST_ATTACH,
    ] {
        assert_eq!(parse(text).faults, scan_str(text, "x.log").faults);
        for (i, _) in text.char_indices() {
            let _ = parse(&text[..i]);
            let _ = parse(&text[i..]);
        }
    }
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(s in "\\PC{0,400}") {
        let _ = scan_str(&s, "any.log");
        let _ = parse_triggered(&s);
        let _ = parse_frame_body(&s);
        let _ = parse_kernel_row(&s);
        let _ = parse_focus(&s);
    }

    #[test]
    fn gdb_like_lines_never_panic(
        lines in prop::collection::vec(
            "(\\$ cuda-gdb -p |Opening GPU coredump: |CUDA Exception: |The exception was triggered at PC 0x|\\[Current focus set to |#[0-9]  0x[0-9a-f]{1,4} in |0x1 in |  Kernel Parent Dev Grid Status|\\*  |[a-z]{1,3} = |A fatal error internal to GDB has been detected|Assertion failed\\.|\\[exit )[ -~]{0,60}",
            0..40,
        )
    ) {
        let text = lines.join("\n");
        let ev = scan_str(&text, "gen.log");
        prop_assert!(ev.faults.iter().all(|f| f.frames.len() <= MAX_ITEMS && f.locals.len() <= MAX_ITEMS));
    }

    #[test]
    fn triggered_lines_with_nested_parentheses_never_panic(
        s in "PC 0x[0-9a-f]{1,8} {1,2}[a-z<>(), :*0-9]{0,60}( \\(| inlined from )?[a-z.:0-9() ]{0,30}"
    ) {
        if let Some(t) = parse_triggered(&s) {
            prop_assert!(t.chain.len() <= MAX_ITEMS);
        }
    }

    #[test]
    fn shuffled_real_lines_never_panic(picks in prop::collection::vec(0usize..200, 0..80)) {
        let all: Vec<&str> = [
            TORCH_ASSERT_CORE,
            OOB_WRITE_CORE,
            OOB_WRITE_G_CORE,
            OOB_WRITE_G_ATTACH,
            TEMPLATED_CORE,
            OOB_READ_ATTACH,
            DIST_ATTACH_86,
            DIST_ATTACH,
        ]
            .iter()
            .flat_map(|t| t.lines())
            .collect();
        let text: Vec<&str> = picks.iter().map(|&i| all[i % all.len()]).collect();
        let _ = scan_str(&text.join("\n"), "mix.log");
    }
}

// Multi-byte, invalid and 5,000-character kernel names in cuda-gdb's lines (`The exception
// was triggered at PC`, frames with `<<<...>>>`, the kernel table): no panic.
crate::findings::fuzz::multi_byte_kernel_names_never_panic!(
    "cudagdb-core-1.log",
    "attach.log",
    "cudagdb-merged-1.log",
    "cudagdb-hang.log"
);

const HANG_FLAG: &str = recording!("h200/hang/hang_flag/cudagdb_1.log");
const HANG_PEER: &str = recording!("h200/hang/hang_two_procs/cudagdb_1.log");
const HANG_IDLE: &str = recording!("h200/hang/hang_two_procs/cudagdb_2.log");

/// A real attach to the hung `hang_flag` (`-ex 'thread apply all bt' -ex detach`).
const ATTACHED: &str = recording!("h200/hang/hang_flag_attached/attach_host.log");
/// `debug-ima dump`'s attach to the hung `hang_flag` and `hang_triton` (tests/fixtures/h200/dump).
const LIVE_FLAG: &str = recording!("h200/dump/hang_flag/attach.log");
const LIVE_TRITON: &str = recording!("h200/dump/hang_triton/attach.log");

#[test]
fn an_attach_names_its_pid_when_it_detaches() {
    let last = ATTACHED.lines().last().unwrap();
    assert_eq!(last, "[Inferior 1 (process 2963) detached]");
    assert_eq!(detached_pid(last), Some(2963));
    assert_eq!(detached_pid("[Inferior 1 (process x) detached]"), None);
    assert_eq!(detached_pid("[Inferior 1 (process 2963) exited normally]"), None);
}

#[test]
fn an_attach_to_a_hung_process_is_a_snapshot_with_its_pid() {
    let ev = scan_str(LIVE_FLAG, "cudagdb-attach-467.log");
    assert!(ev.faults.is_empty(), "{:?}", ev.faults);
    assert_eq!(ev.snapshots.len(), 1, "{ev:?}");
    let s = &ev.snapshots[0];
    assert_eq!((s.pid, s.kernel.as_deref(), s.core.as_deref()), (Some(467), Some("consume"), None));
    assert_eq!(s.chain, vec![loc("/work/main/tests/gpu/programs/hang_flag.cu", 8), loc("hang_flag.cu", 15)]);
    let lines: Vec<(u64, Option<u32>)> = s.threads.iter().map(|g| (g.count, g.line)).collect();
    assert_eq!(lines, vec![(256, Some(8)), (768, Some(18))], "{:?}", s.threads);
    let s = &scan_str(LIVE_TRITON, "cudagdb-attach-571.log").snapshots[0];
    assert_eq!((s.pid, s.kernel.as_deref(), s.thread_count()), (Some(571), Some("wait_then_copy"), 512));
}

#[test]
fn a_user_triggered_dump_of_a_hang_is_a_snapshot_not_a_fault() {
    let ev = scan_str(HANG_FLAG, "cudagdb-584.log");
    assert!(ev.faults.is_empty(), "{:?}", ev.faults);
    assert_eq!(ev.snapshots.len(), 1);
    let s = &ev.snapshots[0];
    assert_eq!(s.pid, Some(584));
    assert_eq!(s.kernel.as_deref(), Some("consume"));
    assert_eq!(s.mangled.as_deref(), Some("_Z7consumePViPiPf"));
    // `bt`: `at /tmp/ima-hang_flag/hang_flag.cu:8 in _Z13wait_for_flagPViPi inlined from hang_flag.cu:15`.
    assert_eq!(s.chain, vec![loc("/tmp/ima-hang_flag/hang_flag.cu", 8), loc("hang_flag.cu", 15)]);
    assert_eq!(
        (s.block, s.thread, s.device, s.sm, s.warp),
        (Some([4, 0, 0]), Some([0, 0, 0]), Some(0), Some(124), Some(0))
    );
    assert_eq!(s.pc, Some(0x7f197f7a0120));
    assert_eq!(s.instruction.as_deref(), Some("ISETP.NE.AND P0,PT,R0,RZ,PT"));
    assert_eq!(s.kernels.len(), 1);
    let k = &s.kernels[0];
    assert_eq!(
        (k.id, k.status.as_deref(), k.grid, k.block_dim),
        (Some(0), Some("Active"), Some([8, 1, 1]), Some([128, 1, 1]))
    );
    assert!(k.focus);
    // 16 rows in three groups: the header's atomicAdd, line 8, line 18.
    let g: Vec<(u64, u64, Option<&str>, Option<u32>)> = s
        .threads
        .iter()
        .map(|g| (g.count, g.rows, g.file.as_deref().map(names::base_name), g.line))
        .collect();
    assert_eq!(
        g,
        vec![
            (128, 4, Some("device_atomic_functions.hpp"), Some(107)),
            (768, 8, Some("hang_flag.cu"), Some(18)),
            (128, 4, Some("hang_flag.cu"), Some(8)),
        ]
    );
    assert_eq!(
        s.threads[0].file.as_deref(),
        Some("/usr/local/cuda/bin/../targets/x86_64-linux/include/device_atomic_functions.hpp")
    );
    assert_eq!(s.threads[1].block_range, [[0, 0, 0], [7, 0, 0]]);
    assert_eq!(s.threads[1].thread_range, [[32, 0, 0], [127, 0, 0]]);
    assert_eq!(s.threads[2].block_range, [[3, 0, 0], [7, 0, 0]]);
    assert!(s.threads[2].focus && !s.threads[1].focus);
    assert_eq!(s.threads.iter().map(|g| g.kernel_id).collect::<Vec<_>>(), vec![Some(0); 3]);
    assert_eq!(s.thread_count(), 1024);
    // `info cuda warps`: the focused SM only.
    assert_eq!(s.warps.len(), 4);
    assert_eq!((s.warps[0].sm, s.warps[0].focus, s.warps[0].pc), (Some(124), true, Some(0x7f197f7a0120)));
    assert_eq!(
        (s.warps[3].warp, s.warps[3].block, s.warps[3].thread),
        (3, Some([4, 0, 0]), Some([96, 0, 0]))
    );
}

#[test]
fn a_row_spanning_blocks_covers_every_thread_of_the_block() {
    let s = &scan_str(HANG_PEER, "cudagdb-1163.log").snapshots[0];
    assert_eq!(s.pid, Some(1163));
    assert_eq!(s.chain, vec![loc("/tmp/ima-hang_two_procs/hang_two_procs.py", 15)]);
    // (1,0,0)(96,0,0) .. (2,0,0)(127,0,0), 160 threads, joins the rows at the same PC.
    let at_f80 = s.threads.iter().find(|g| g.pc == 0x7eff8f7a0f80).unwrap();
    assert_eq!((at_f80.count, at_f80.rows), (384, 4));
    assert_eq!(at_f80.block_range, [[0, 0, 0], [3, 0, 0]]);
    assert_eq!(at_f80.thread_range, [[0, 0, 0], [127, 0, 0]]);
    assert_eq!(s.thread_count(), 512);
}

#[test]
fn a_dump_with_no_kernel_running_says_so() {
    let ev = scan_str(HANG_IDLE, "cudagdb-1190.log");
    assert!(ev.faults.is_empty());
    let s = &ev.snapshots[0];
    assert_eq!(s.pid, Some(1190));
    assert!(s.no_threads && s.threads.is_empty() && s.kernels.is_empty());
    assert_eq!(s.kernel, None);
}

#[test]
fn thread_rows_with_spaces_in_the_file_and_without_a_line() {
    let row = HANG_FLAG.lines().find(|l| l.starts_with('*') && l.contains("hang_flag.cu")).unwrap();
    let spaced = row.replace("/tmp/ima-hang_flag/hang_flag.cu", "/tmp/my project/hang flag.cu");
    let r = parse_thread_row(&spaced).unwrap();
    assert_eq!(
        (r.file.as_deref(), r.line, r.count, r.focus),
        (Some("/tmp/my project/hang flag.cu"), Some(8), 32, true)
    );
    let cut_line = row.trim_end().trim_end_matches(char::is_numeric).to_string();
    let r = parse_thread_row(&cut_line).unwrap();
    assert_eq!((r.file.as_deref(), r.line), (Some("/tmp/ima-hang_flag/hang_flag.cu"), None));
    let header = HANG_FLAG.lines().find(|l| l.contains("BlockIdx ThreadIdx")).unwrap();
    assert_eq!(parse_thread_row(header), None);
    assert_eq!(parse_thread_row("Kernel 0"), None);
}

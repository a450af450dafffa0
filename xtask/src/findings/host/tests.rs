//! Tests of the host parser: CUDA error lines, Python tracebacks, device-side asserts, the
//! recordings from the H200, and property tests.
//!
//! Must not: read files other than the recordings compiled in.

use super::parser::*;
use super::python::*;
use super::text::*;
use super::triggers::*;
use crate::findings::scan::{scan_str, strip_rank};
use crate::findings::{ErrorClass, Evidence, Fault, Frame, LineCtx, LineParser, SourceLoc, Symptom, Tool};
use proptest::prelude::*;

/// Feeds `text` to a `HostParser` alone, line by line, as the scanner does (the
/// `[rankN]:` prefix stripped), so these tests do not depend on the other parsers.
fn host(text: &str) -> Evidence {
    let mut p = HostParser::default();
    feed(&mut p, text);
    let mut ev = Evidence::default();
    p.finish(&mut ev);
    ev
}

fn feed(p: &mut HostParser, text: &str) {
    for (i, raw) in text.lines().enumerate() {
        let (line, rank) = strip_rank(raw);
        p.line(line, LineCtx { lineno: i as u64 + 1, rank });
    }
}

fn pyframe(function: &str, file: &str, line: u32) -> Frame {
    Frame {
        function: Some(function.into()),
        file: Some(file.into()),
        line: Some(line),
        module: None,
        python: true,
    }
}

fn loc(file: &str, line: u32) -> Option<SourceLoc> {
    Some(SourceLoc { file: file.into(), line })
}

/// Lines `from..=to` (1-based) of `text`, each with its newline.
fn lines(text: &str, from: usize, to: usize) -> String {
    text.lines().skip(from - 1).take(to + 1 - from).map(|l| format!("{l}\n")).collect()
}

/// The invariants every input must keep.
fn check_bounded(text: &str, ev: &Evidence) {
    let n = text.lines().count().max(1);
    assert!(ev.symptoms.len() <= n, "{} symptoms from {n} lines", ev.symptoms.len());
    assert!(ev.faults.len() <= n);
    assert!(ev.faults.iter().map(|f| f.count).sum::<u64>() <= n as u64);
    for s in &ev.symptoms {
        assert!(s.message.len() <= MAX_MESSAGE && !s.message.is_empty());
        assert!(s.python_frames.len() <= MAX_FRAMES);
        assert!(s.log_line >= 1 && s.log_line <= n as u64);
        assert!(s.call.as_ref().is_none_or(|c| c.len() <= MAX_CALL));
    }
    for f in &ev.faults {
        assert_eq!(f.tool, Some(Tool::Host));
        assert!(f.count >= 1);
        assert!(f.detail.as_ref().is_none_or(|d| d.len() <= MAX_MESSAGE));
    }
}

// ----- The project's own recordings (tests/fixtures/h200 and bundles) --------------------
/// `CUDA error at oob_read.cu:26: cudaMemcpy(...): an illegal memory access was encountered`.
const OOB_READ_BASELINE: &str = recording!("h200/oob_read/baseline.log");
/// The program's own `CUDA error at ...` line (line 14) among compute-sanitizer's.
const OOB_READ_MEMCHECK: &str = recording!("h200/oob_read/memcheck.log");
/// The waits-on-exception message: `vm: The application encountered ...`.
const OOB_READ_WAITS: &str = recording!("h200/oob_read/waits.log");
/// PyTorch's assert line, then its traceback (exception line 7).
const TORCH_ASSERT_BASELINE: &str = recording!("h200/torch_assert/baseline.log");
/// PyTorch's assert line among the coredump's progress lines.
const TORCH_ASSERT_COREDUMP: &str = recording!("h200/torch_assert/coredump.log");
/// Lines 106-113: `terminate` + `what():` from a destructor, no traceback.
const TORCH_ASSERT_MEMCHECK: &str = recording!("h200/torch_assert/memcheck.log");
/// A CUDA graph replayed: the error is reported at the next sync (exception line 8).
const TRITON_GRAPH_BASELINE: &str = recording!("h200/triton_graph/baseline.log");
/// The same with CUDA_LAUNCH_BLOCKING=1: reported at `g.replay()`, through torch's frame.
const TRITON_GRAPH_BLOCKING: &str = recording!("h200/triton_graph/launch-blocking.log");
/// cuda-gdb's own crash: `terminate` + `what():  vector::_M_range_check`.
const OOB_WRITE_CUDAGDB: &str = recording!("h200/oob_write/cudagdb-core-1.log");
/// C `assert()` in a kernel.
const DEVICE_ASSERT_BASELINE: &str = recording!("h200/device_assert/baseline.log");
/// Triton's launcher raises `RuntimeError: Triton Error [CUDA]: ...`.
const TRITON_EAGER_BLOCKING: &str = recording!("h200/triton_eager/launch-blocking.log");
/// Rank 1 of a two-GPU torchrun job faults (recorded by `debug-ima`,
/// tests/fixtures/bundles/dist_fault-full): the NCCL watchdog's report behind `[rank1]:`,
/// `terminate` + `what():`, torchrun's traceback.
const DIST_PLAIN: &str = recording!("bundles/dist_fault-full/rungs/01-baseline/stderr.log");
/// The same with CUDA_LAUNCH_BLOCKING=1: rank 1's traceback behind `[rank1]:`, then
/// torchrun's own.
const DIST_BLOCKING: &str = recording!("bundles/dist_fault-full/rungs/02-launch-blocking/stderr.log");

// ----- Reference excerpts (tests/fixtures/transcripts) -------------------------------------
/// `cudaMemcpy(...): invalid argument`: a host API error.
const NULL_PLAIN: &str = transcript!("46_null_plain.excerpt.log");
/// A spawned child's assert line (with an empty condition) under memcheck.
const CHILD_MEMCHECK_HEAD: &str = transcript!("39_child_memcheck.head.excerpt.log");
/// The child's Python traceback among memcheck's lines.
const CHILD_MEMCHECK_TAIL: &str = transcript!("39_child_memcheck.tail.excerpt.log");
/// `compute-sanitizer --help` naming `CUDA_ERROR_NOT_FOUND`.
const SANITIZER_HELP: &str = transcript!("01_sanitizer_help.excerpt.log");
/// A watchdog timeout, not a CUDA error.
const DIST_TIMEOUT: &str = transcript!("87_dist_memcheck.timeout.excerpt.log");

/// torch_assert/memcheck.log, lines 106-113.
fn torch_what() -> String {
    lines(TORCH_ASSERT_MEMCHECK, 106, 113)
}

const OOB_READ_CALL: &str = "cudaMemcpy(h_out.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost)";
const VLLM_SHAPED: &str = "/tmp/ima-record/vllm_shaped.py";
const DIST_FAULT: &str = "/work/main/tests/gpu/programs/dist_fault.py";
const SUITE_VLLM_SHAPED: &str = "/work/main/tests/gpu/programs/vllm_shaped.py";

// ----- C/C++ runtime errors ---------------------------------------------------------------

#[test]
fn cuda_error_at_file_line_through_the_scanner() {
    let ev = scan_str(OOB_READ_BASELINE, "oob_read/baseline.log");
    assert_eq!(
        ev.symptoms,
        vec![Symptom {
            error: Some(ErrorClass::IllegalAddress),
            message: "an illegal memory access was encountered".into(),
            reported_at: loc("oob_read.cu", 26),
            call: Some(OOB_READ_CALL.into()),
            exception: None,
            python_frames: vec![],
            rank: None,
            log_line: 1,
        }]
    );
    assert!(ev.tools.contains(&Tool::Host));
    assert!(ev.faults.iter().all(|f| f.tool != Some(Tool::Host)));
}

#[test]
fn host_api_errors_are_kept_but_are_not_device_faults() {
    let ev = host(NULL_PLAIN);
    assert_eq!(ev.symptoms.len(), 1);
    let s = &ev.symptoms[0];
    assert_eq!(s.message, "invalid argument");
    assert_eq!(s.error, Some(ErrorClass::Other("invalid argument".into())));
    assert!(!s.error.as_ref().unwrap().is_device_fault());
    assert_eq!(s.reported_at, loc("ima_far.cu", 32));
    assert_eq!(s.call.as_deref(), Some("cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost)"));
    assert_eq!(ev.tools, vec![Tool::Host]);
}

#[test]
fn program_line_inside_a_sanitizer_log() {
    let ev = host(OOB_READ_MEMCHECK);
    // `CUDA error at oob_read.cu:26: ...: unspecified launch failure` is the program's;
    // `========= Program hit cudaErrorLaunchFailure ...` is compute-sanitizer's and is not
    // read here.
    assert_eq!(
        ev.symptoms,
        vec![Symptom {
            error: Some(ErrorClass::LaunchFailure),
            message: "unspecified launch failure".into(),
            reported_at: loc("oob_read.cu", 26),
            call: Some(OOB_READ_CALL.into()),
            log_line: 14,
            ..Symptom::default()
        }]
    );
    assert!(ev.faults.is_empty());
}

#[test]
fn shapes_named_in_the_brief() {
    // `GPUassert: %s %s %d`, the widespread gpuErrchk helper.
    let ev = host("GPUassert: an illegal memory access was encountered ima.cu 40\n");
    assert_eq!(ev.symptoms.len(), 1);
    assert_eq!(ev.symptoms[0].message, "an illegal memory access was encountered");
    assert_eq!(ev.symptoms[0].reported_at, loc("ima.cu", 40));
    assert_eq!(ev.symptoms[0].error, Some(ErrorClass::IllegalAddress));

    let ev = host("cudaErrorIllegalAddress\n");
    assert_eq!(ev.symptoms[0].message, "cudaErrorIllegalAddress");
    assert_eq!(ev.symptoms[0].error, Some(ErrorClass::IllegalAddress));

    let ev = host("small.cu:12: void k(int*): block: [0,0,0], thread: [0,0,0] Assertion `i < n` failed.\n");
    assert_eq!(ev.faults.len(), 1);
    let f = &ev.faults[0];
    assert_eq!(f.kernel.as_deref(), Some("void k(int*)"));
    assert_eq!(f.location, loc("small.cu", 12));
    assert_eq!(f.detail.as_deref(), Some("i < n"));
    assert_eq!((f.block, f.thread), (Some([0, 0, 0]), Some([0, 0, 0])));
}

#[test]
fn not_every_error_line_is_a_cuda_error() {
    // cuda-gdb's own crash (`what():  vector::_M_range_check`), an option's help text
    // naming CUDA_ERROR_NOT_FOUND, a watchdog timeout, PyTorch's follow-up lines.
    for text in [OOB_WRITE_CUDAGDB, SANITIZER_HELP, DIST_TIMEOUT, &lines(TRITON_GRAPH_BASELINE, 9, 13)] {
        let ev = host(text);
        assert!(ev.symptoms.is_empty(), "{text}: {:?}", ev.symptoms);
        assert!(ev.faults.is_empty());
        assert!(ev.tools.is_empty());
    }
}

#[test]
fn repeated_identical_reports_are_folded() {
    let line = lines(OOB_READ_BASELINE, 1, 1);
    let ev = host(&line.repeat(1000));
    assert_eq!(ev.symptoms.len(), 1);
    assert_eq!(ev.symptoms[0].log_line, 1);
}

// ----- Python tracebacks ------------------------------------------------------------------

#[test]
fn pytorch_assert_line_and_traceback() {
    let ev = host(TORCH_ASSERT_BASELINE);
    assert_eq!(
        ev.faults,
        vec![Fault {
            tool: Some(Tool::Host),
            error: Some(ErrorClass::DeviceAssert),
            kernel: Some("nll_loss_forward_reduce_cuda_kernel_2d".into()),
            location: loc("/pytorch/aten/src/ATen/native/cuda/Loss.cu", 245),
            block: Some([0, 0, 0]),
            thread: Some([5, 0, 0]),
            count: 1,
            block_range: Some([[0, 0, 0], [0, 0, 0]]),
            thread_range: Some([[5, 0, 0], [5, 0, 0]]),
            detail: Some("t >= 0 && t < n_classes".into()),
            ..Fault::default()
        }]
    );
    assert_eq!(
        ev.symptoms,
        vec![Symptom {
            error: Some(ErrorClass::DeviceAssert),
            message: "device-side assert triggered".into(),
            exception: Some("torch.AcceleratorError".into()),
            python_frames: vec![pyframe("<module>", "/tmp/ima-record/torch_assert.py", 10)],
            log_line: 7,
            ..Symptom::default()
        }]
    );
    assert_eq!(ev.tools, vec![Tool::Host]);
}

#[test]
fn traceback_through_a_library_frame() {
    let ev = host(TRITON_GRAPH_BASELINE);
    assert_eq!(ev.symptoms.len(), 1);
    assert_eq!(
        ev.symptoms[0].python_frames,
        vec![pyframe("<module>", VLLM_SHAPED, 65), pyframe("run", VLLM_SHAPED, 50)]
    );
    assert_eq!(ev.symptoms[0].error, Some(ErrorClass::IllegalAddress));
    assert_eq!(ev.symptoms[0].log_line, 8);

    let ev = host(TRITON_GRAPH_BLOCKING);
    let s = &ev.symptoms[0];
    assert_eq!(
        s.python_frames,
        vec![
            pyframe("<module>", VLLM_SHAPED, 65),
            pyframe("run", VLLM_SHAPED, 44),
            pyframe("replay", "/opt/torch/.venv/lib/python3.12/site-packages/torch/cuda/graphs.py", 139),
        ]
    );
    assert_eq!(s.user_frame(), Some(&pyframe("run", VLLM_SHAPED, 44)));
    assert_eq!(s.message, "an illegal memory access was encountered");
    assert_eq!(s.exception.as_deref(), Some("torch.AcceleratorError"));
}

#[test]
fn child_process_under_memcheck() {
    let ev = host(CHILD_MEMCHECK_HEAD);
    assert_eq!(ev.faults.len(), 1);
    let f = &ev.faults[0];
    assert_eq!(f.kernel.as_deref(), Some("_assert_async_cuda_kernel"));
    assert_eq!(f.location, loc("/pytorch/aten/src/ATen/native/cuda/TensorCompare.cu", 109));
    assert_eq!(f.detail, None, "Assertion `` has no text");

    let ev = host(CHILD_MEMCHECK_TAIL);
    assert_eq!(ev.symptoms.len(), 1);
    let s = &ev.symptoms[0];
    assert_eq!(s.message, "device-side assert triggered");
    assert_eq!(s.log_line, 12);
    assert_eq!(s.python_frames.len(), 3);
    assert_eq!(s.user_frame(), Some(&pyframe("worker", "/src/probe/child_ima.py", 8)));
}

#[test]
fn assert_line_among_coredump_progress() {
    let ev = host(TORCH_ASSERT_COREDUMP);
    assert!(ev.symptoms.is_empty());
    assert_eq!(ev.faults.len(), 1);
    assert_eq!(ev.faults[0].kernel.as_deref(), Some("nll_loss_forward_reduce_cuda_kernel_2d"));
    assert_eq!(ev.faults[0].thread, Some([5, 0, 0]));
}

#[test]
fn rank_prefixed_traceback() {
    let ev = host(DIST_BLOCKING);
    // torchrun's own traceback ends in ChildFailedError: not a CUDA error, ignored.
    let site = "/opt/torch/.venv/lib/python3.12/site-packages/triton";
    assert_eq!(
        ev.symptoms,
        vec![Symptom {
            error: Some(ErrorClass::IllegalAddress),
            message: "an illegal memory access was encountered".into(),
            exception: Some("RuntimeError".into()),
            python_frames: vec![
                pyframe("<module>", DIST_FAULT, 37),
                pyframe("main", DIST_FAULT, 30),
                pyframe("gather", SUITE_VLLM_SHAPED, 27),
                pyframe("<lambda>", &format!("{site}/runtime/jit.py"), 370),
                pyframe("run", &format!("{site}/runtime/jit.py"), 744),
                pyframe("__call__", &format!("{site}/backends/nvidia/driver.py"), 713),
            ],
            rank: Some(1),
            log_line: 20,
            ..Symptom::default()
        }]
    );
}

#[test]
fn nccl_watchdog_and_its_what_line_are_one_symptom() {
    let ev = host(DIST_PLAIN);
    assert_eq!(
        ev.symptoms,
        vec![Symptom {
            error: Some(ErrorClass::IllegalAddress),
            message: "an illegal memory access was encountered".into(),
            // From the `Exception raised from query at ...` line that follows.
            reported_at: loc("/pytorch/c10/cuda/CUDAEvent.h", 111),
            rank: Some(1),
            log_line: 5,
            ..Symptom::default()
        }]
    );
    // The `terminate` + `what():` pair alone: the exception type, and the rank from
    // `[PG ID 0 PG GUID 0(default_pg) Rank 1]` (the line has no `[rank1]:` prefix).
    let at = DIST_PLAIN.lines().position(|l| l.starts_with("terminate called")).unwrap() + 1;
    let ev = host(&lines(DIST_PLAIN, at, at + 1));
    assert_eq!(ev.symptoms.len(), 1);
    let s = &ev.symptoms[0];
    assert_eq!(s.exception.as_deref(), Some("c10::DistBackendError"));
    assert_eq!((s.rank, s.log_line), (Some(1), 2));
    assert_eq!(s.message, "an illegal memory access was encountered");
}

// Derived inputs: real lines, re-arranged (interleaved, relabelled, repeated) to exercise
// what a recording of one run cannot show.

#[test]
fn interleaved_ranks_keep_separate_tracebacks() {
    let r1: Vec<&str> = DIST_BLOCKING.lines().filter(|l| l.starts_with("[rank1]:")).collect();
    let r0: Vec<String> = r1.iter().map(|l| l.replacen("[rank1]:", "[rank0]:", 1)).collect();
    let noise = lines(DIST_PLAIN, 2, 3); // torchrun's `OMP_NUM_THREADS` banner
    let mut text = String::new();
    for (a, b) in r1.iter().zip(&r0) {
        text.push_str(&format!("{a}\n{noise}{b}\n"));
    }
    let ev = host(&text);
    assert_eq!(ev.symptoms.len(), 2, "{:?}", ev.symptoms);
    let mut ranks: Vec<_> = ev.symptoms.iter().map(|s| s.rank).collect();
    ranks.sort();
    assert_eq!(ranks, vec![Some(0), Some(1)]);
    for s in &ev.symptoms {
        assert_eq!(s.python_frames.len(), 6);
        assert_eq!(s.user_frame(), Some(&pyframe("gather", SUITE_VLLM_SHAPED, 27)));
    }
}

#[test]
fn unrelated_lines_inside_a_traceback_are_skipped() {
    let other = lines(TRITON_GRAPH_BASELINE, 1, 1); // `replayed`
    let text: String = TRITON_GRAPH_BLOCKING.lines().map(|l| format!("{l}\n{other}")).collect();
    let ev = host(&text);
    assert_eq!(ev.symptoms.len(), 1);
    assert_eq!(ev.symptoms[0].python_frames.len(), 3);
}

#[test]
fn chained_tracebacks_report_an_error_once() {
    let first = lines(TRITON_GRAPH_BASELINE, 2, 8);
    let second = lines(TRITON_GRAPH_BLOCKING, 1, 8);
    let chained = format!("{first}\n{CHAIN_DURING}\n\n{second}");
    let ev = host(&chained);
    assert_eq!(ev.symptoms.len(), 1);
    assert_eq!(
        ev.symptoms[0].python_frames,
        vec![pyframe("<module>", VLLM_SHAPED, 65), pyframe("run", VLLM_SHAPED, 50)]
    );
    // Two separate tracebacks of the same error are two reports.
    let ev = host(&format!("{first}{second}"));
    assert_eq!(ev.symptoms.len(), 2);
}

#[test]
fn logger_prefix_before_every_traceback_line() {
    let text: String = lines(TRITON_GRAPH_BLOCKING, 1, 8).lines().map(|l| format!("w0| {l}\n")).collect();
    let ev = host(&text);
    assert_eq!(ev.symptoms.len(), 1);
    assert_eq!(ev.symptoms[0].python_frames.len(), 3);
    assert_eq!(ev.symptoms[0].exception.as_deref(), Some("torch.AcceleratorError"));
}

#[test]
fn a_traceback_that_never_ends_stays_bounded() {
    let frame = lines(TRITON_GRAPH_BLOCKING, 2, 3);
    let mut p = HostParser::default();
    feed(&mut p, &format!("{}{}", lines(TRITON_GRAPH_BLOCKING, 1, 1), frame.repeat(50_000)));
    assert_eq!(p.ranks[0].tb.as_ref().map(|t| t.frames.len()), Some(MAX_FRAMES));
    p.line(lines(TRITON_GRAPH_BLOCKING, 8, 8).trim_end(), LineCtx { lineno: 100_002, rank: None });
    let mut ev = Evidence::default();
    p.finish(&mut ev);
    assert_eq!(ev.symptoms.len(), 1);
    assert_eq!(ev.symptoms[0].python_frames.len(), MAX_FRAMES);
}

#[test]
fn assert_lines_are_grouped_per_site() {
    // PyTorch prints one line per failing thread: the recorded line, with other threads.
    let line = lines(TORCH_ASSERT_BASELINE, 2, 2);
    let mut text = String::new();
    for t in [5, 3, 7, 0, 4] {
        text.push_str(&line.replace("thread: [5,0,0]", &format!("thread: [{t},0,0]")));
    }
    text.push_str(&format!("[rank1]:{line}"));
    let ev = host(&text);
    assert_eq!(ev.faults.len(), 2);
    let f = &ev.faults[0];
    assert_eq!(f.count, 5);
    assert_eq!(f.thread, Some([5, 0, 0]));
    assert_eq!(f.thread_range, Some([[0, 0, 0], [7, 0, 0]]));
    assert_eq!(f.block_range, Some([[0, 0, 0], [0, 0, 0]]));
    assert_eq!((ev.faults[1].rank, ev.faults[1].count), (Some(1), 1));
    assert_eq!(ev.faults[1].thread_range, Some([[5, 0, 0], [5, 0, 0]]));
}

#[test]
fn distinct_reports_are_capped() {
    let line = lines(OOB_READ_BASELINE, 1, 1);
    let text: String = (0..MAX_SYMPTOMS + 10).map(|i| line.replace(":26:", &format!(":{i}:"))).collect();
    let ev = host(&text);
    assert_eq!(ev.symptoms.len(), MAX_SYMPTOMS);
    assert!(ev.notes.iter().any(|n| n.contains("10 further")));
}

#[test]
fn helpers() {
    // Triton prints `unknown:0: unknown` for position and function.
    let (l, f) = split_assert_prefix("unknown:0: unknown");
    assert_eq!((l, f), (loc("unknown", 0), Some("unknown")));
    assert_eq!(
        exception_shape(TORCH_ASSERT_BASELINE.lines().nth(6).unwrap(), true).map(|e| e.0),
        Some("torch.AcceleratorError")
    );
    // `vm: The application encountered ...`: a host name, not an exception.
    assert_eq!(exception_shape(OOB_READ_WAITS.lines().next().unwrap(), false), None);
    assert_eq!(exception_shape("launched scale_write", false), None);
    let what = DIST_PLAIN.lines().find(|l| l.contains("what():")).unwrap();
    assert_eq!(infer_rank(what), Some(1));
    assert_eq!(cut("héllo", 2), "h");
    // PyTorch's follow-up line (torch_assert/baseline.log, line 9) names no error itself.
    assert!(!triggers(TORCH_ASSERT_BASELINE.lines().nth(8).unwrap().as_bytes()));
    assert!(triggers(b"x CUDA Error: y") && triggers(b"cudaErrorAssert") && triggers(b"CUDA_ERROR_ASSERT"));
    assert!(!triggers(b"libtorch_cuda.so") && !triggers(b"device='cuda'"));
}

#[test]
fn project_recordings() {
    let ev = host(DEVICE_ASSERT_BASELINE);
    assert_eq!(ev.faults.len(), 1);
    let f = &ev.faults[0];
    assert_eq!(f.kernel.as_deref(), Some("void check_labels(const int *, int, int, int *)"));
    assert_eq!(f.location, loc("device_assert.cu", 10));
    assert_eq!((f.block, f.thread), (Some([0, 0, 0]), Some([37, 0, 0])));
    assert_eq!(f.detail.as_deref(), Some("c >= 0 && c < classes"));
    assert_eq!(
        ev.symptoms,
        vec![Symptom {
            error: Some(ErrorClass::DeviceAssert),
            message: "device-side assert triggered".into(),
            reported_at: loc("device_assert.cu", 26),
            call: Some("cudaDeviceSynchronize()".into()),
            log_line: 2,
            ..Symptom::default()
        }]
    );

    // Triton's launcher raises `RuntimeError: Triton Error [CUDA]: ...`.
    let ev = host(TRITON_EAGER_BLOCKING);
    assert_eq!(ev.symptoms.len(), 1);
    let s = &ev.symptoms[0];
    assert_eq!((s.exception.as_deref(), s.log_line), (Some("RuntimeError"), 15));
    assert_eq!(s.error, Some(ErrorClass::IllegalAddress));
    assert_eq!(s.python_frames.len(), 6);
    assert_eq!(s.user_frame(), Some(&pyframe("gather", VLLM_SHAPED, 27)));

    // An exception thrown from a destructor: `terminate` + `what():`, no traceback.
    let ev = host(&torch_what());
    assert_eq!(
        ev.symptoms,
        vec![Symptom {
            error: Some(ErrorClass::DeviceAssert),
            message: "device-side assert triggered".into(),
            reported_at: loc("/pytorch/c10/cuda/CUDACachingAllocator.cpp", 3885),
            exception: Some("c10::AcceleratorError".into()),
            log_line: 2,
            ..Symptom::default()
        }]
    );
}

// ----- Robustness ---------------------------------------------------------------------------

/// Every input above (the long recordings cut to the part the tests read).
fn all_inputs() -> Vec<String> {
    let mut all: Vec<String> = [
        OOB_READ_BASELINE,
        NULL_PLAIN,
        OOB_READ_MEMCHECK,
        TORCH_ASSERT_BASELINE,
        TRITON_GRAPH_BASELINE,
        TRITON_GRAPH_BLOCKING,
        DIST_BLOCKING,
        DIST_PLAIN,
        CHILD_MEMCHECK_HEAD,
        CHILD_MEMCHECK_TAIL,
        OOB_WRITE_CUDAGDB,
        SANITIZER_HELP,
        DIST_TIMEOUT,
        DEVICE_ASSERT_BASELINE,
        TRITON_EAGER_BLOCKING,
    ]
    .iter()
    .map(|t| t.to_string())
    .collect();
    // The assert line and the first coredump progress lines; the `what():` pair.
    all.push(lines(TORCH_ASSERT_COREDUMP, 1, 8));
    all.push(torch_what());
    all
}

#[test]
fn truncated_excerpts_never_panic() {
    for ex in all_inputs() {
        for cut_at in (0..=ex.len()).filter(|&i| ex.is_char_boundary(i)) {
            let text = &ex[..cut_at];
            check_bounded(text, &host(text));
        }
    }
}

fn real_lines() -> Vec<String> {
    all_inputs().iter().flat_map(|t| t.lines().map(str::to_string).collect::<Vec<_>>()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_is_bounded(s in any::<String>()) {
        check_bounded(&s, &host(&s));
    }

    #[test]
    fn byte_soup_is_bounded(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let s = String::from_utf8_lossy(&bytes);
        check_bounded(&s, &host(&s));
    }

    #[test]
    fn shuffled_real_lines_are_bounded(
        picks in proptest::collection::vec((any::<proptest::sample::Index>(), 0u8..4), 0..400),
    ) {
        let pool = real_lines();
        let mut text = String::new();
        for (i, r) in picks {
            let l = &pool[i.index(pool.len())];
            match r {
                0 => text.push_str(&format!("[rank0]:{l}\n")),
                1 => text.push_str(&format!("[rank1]: {l}\n")),
                _ => text.push_str(&format!("{l}\n")),
            }
        }
        check_bounded(&text, &host(&text));
    }

    #[test]
    fn real_lines_with_junk_spliced_in(
        i in any::<proptest::sample::Index>(),
        at in any::<proptest::sample::Index>(),
        junk in "\\PC{0,40}",
    ) {
        let pool = real_lines();
        let l = &pool[i.index(pool.len())];
        let mut cut_at = at.index(l.len() + 1);
        while !l.is_char_boundary(cut_at) {
            cut_at -= 1;
        }
        let text = format!("{}{junk}{}\n", &l[..cut_at], &l[cut_at..]);
        check_bounded(&text, &host(&text));
    }
}

// Multi-byte, invalid and 5,000-character kernel names in the program's own lines
// (PyTorch's and CUDA's device-assert lines): no panic.
crate::findings::fuzz::multi_byte_kernel_names_never_panic!("baseline.log");

//! Tests of the memcheck readers' text side: the recordings from the H200, grouping at the
//! caps, the record fields, and property tests.
//!
//! Must not: read files other than the recordings compiled in.

use super::caps::*;
use super::fields::*;
use crate::findings::scan::scan_str;
use crate::findings::{
    Access, ApiError, CoredumpFile, ErrorClass, Evidence, Fault, Frame, Nearest, SourceLoc, Tool,
};
use proptest::prelude::*;

/// 200 printed records of one write site (of 4097 errors), the program's own lines.
const OOB_WRITE: &str = recording!("h200/oob_write/memcheck.log");
/// One invalid read, then the API error it causes and the program's own error line.
const OOB_READ: &str = recording!("h200/oob_read/memcheck.log");
/// A Triton kernel replayed in a CUDA graph: host stacks that end in Python frames, the
/// program's `replayed` among the records.
const TRITON_GRAPH: &str = recording!("h200/triton_graph/memcheck.log");
/// PyTorch's device-side assert: `Warp assert` in `__assertfail`, then two API errors.
const TORCH_ASSERT: &str = recording!("h200/torch_assert/memcheck.log");
/// A clean run.
const CLEAN: &str = recording!("h200/clean/memcheck.log");
const MISALIGNED_LOG: &str = recording!("h200/misaligned/memcheck.log");
const INLINED_LOG: &str = recording!("h200/inlined/memcheck.log");
const TRITON_LOG: &str = recording!("h200/triton_worker/memcheck.log");
/// A two-GPU torchrun job under memcheck (recorded by `debug-ima`,
/// tests/fixtures/bundles/dist_fault-full): NCCL's API errors at start-up, rank 1's
/// invalid reads, the API errors they cause.
const DIST: &str = recording!("bundles/dist_fault-full/rungs/05-memcheck/stdout.log");
/// An invalid read `after` an allocation, then an API error.
const SMALL_22: &str = transcript!("22_memcheck_small.excerpt.log");
/// A build without -lineinfo (no `in FILE:LINE`): its first record.
const PLAIN_21: &str = transcript!("21_memcheck_plain.excerpt.log");
/// `--generate-coredump`: the sanitizer writes a coredump itself.
const COREDUMP_57: &str = transcript!("57_far_memcheck_coredump.excerpt.log");

fn memcheck_faults(ev: &Evidence) -> Vec<&Fault> {
    ev.faults.iter().filter(|f| f.tool == Some(Tool::Memcheck)).collect()
}

/// `text` from its start to the end of its `n`-th record (the blank `========= ` line).
fn records(text: &str, n: usize) -> &str {
    let mut seen = 0;
    let mut end = 0;
    for l in text.split_inclusive('\n') {
        end += l.len();
        if l.trim_end() == "=========" {
            seen += 1;
            if seen == n {
                return &text[..end];
            }
        }
    }
    panic!("fewer than {n} records");
}

/// The first `n` lines of `text`.
fn head(text: &str, n: usize) -> &str {
    let end: usize = text.split_inclusive('\n').take(n).map(str::len).sum();
    &text[..end]
}

/// The first record of `text`, from its `========= Invalid` line to its end.
fn first_record(text: &str) -> &str {
    let one = records(text, 1);
    &one[one.find("========= Invalid").unwrap()..]
}

#[test]
fn records_of_one_site_are_one_fault() {
    let ev = scan_str(OOB_WRITE, "oob_write/memcheck.log");
    assert!(ev.tools.contains(&Tool::Memcheck));
    let f = memcheck_faults(&ev);
    assert_eq!(f.len(), 1);
    let f = f[0];
    assert_eq!(f.error, Some(ErrorClass::InvalidAccess));
    assert_eq!(f.kernel.as_deref(), Some("scale_write(float*, int, long long)"));
    assert_eq!(f.mangled, None);
    assert_eq!(f.location, Some(SourceLoc { file: "oob_write.cu".into(), line: 7 }));
    assert_eq!(f.pc, Some(0x110));
    assert_eq!(f.count, 200);
    assert_eq!(f.block, Some([8, 0, 0]));
    assert_eq!(f.thread, Some([0, 0, 0]));
    assert_eq!(f.block_range, Some([[8, 0, 0], [8, 0, 0]]));
    assert_eq!(f.thread_range, Some([[0, 0, 0], [199, 0, 0]]));
    assert_eq!(f.detail.as_deref(), Some("out of bounds"));
    assert_eq!(
        f.access,
        Some(Access {
            kind: Some("write".into()),
            space: Some("__global__".into()),
            size: Some(4),
            address: Some(0x7f4b50802000),
            nearest: Some(Nearest {
                distance: 34_359_730_176,
                before: true,
                allocation: 0x7f5350800000,
                allocation_size: 16_384,
            }),
        })
    );
    assert_eq!(
        f.host_frames,
        vec![Frame { function: Some("main".into()), module: Some("oob_write".into()), ..Frame::default() }]
    );
    assert!(f.frames.is_empty());
    assert_eq!(ev.error_summary, Some(4097));
    assert!(ev.notes.iter().any(|n| n.contains("did not print 3897 of 4097 errors")), "{:?}", ev.notes);
    assert!(ev.api_errors.is_empty());
}

#[test]
fn read_before_allocation_and_api_error() {
    let ev = scan_str(OOB_READ, "oob_read/memcheck.log");
    let f = memcheck_faults(&ev);
    assert_eq!(f.len(), 1);
    let f = f[0];
    assert_eq!(f.kernel.as_deref(), Some("gather_rows(const float*, const long long*, float*, int)"));
    assert_eq!(f.location, Some(SourceLoc { file: "oob_read.cu".into(), line: 8 }));
    assert_eq!(f.thread, Some([9, 0, 0]));
    assert_eq!(f.block, Some([3, 0, 0]));
    let a = f.access.as_ref().unwrap();
    assert_eq!(a.kind.as_deref(), Some("read"));
    assert_eq!(
        a.nearest,
        Some(Nearest {
            distance: 34_359_738_368,
            before: true,
            allocation: 0x7fa9e2800000,
            allocation_size: 4096
        })
    );
    assert_eq!(
        ev.api_errors,
        vec![ApiError {
            api: "cudaMemcpy".into(),
            error: "cudaErrorLaunchFailure".into(),
            code: Some(719),
            message: "unspecified launch failure".into(),
            count: 1,
        }]
    );
    assert_eq!(ev.error_summary, Some(2));
    assert!(!ev.notes.iter().any(|n| n.contains("did not print")));
}

#[test]
fn read_after_allocation_and_api_error() {
    let ev = scan_str(SMALL_22, "22_memcheck_small.log");
    let f = memcheck_faults(&ev);
    assert_eq!(f.len(), 1);
    let f = f[0];
    assert_eq!(f.kernel.as_deref(), Some("sum_neighbors(const float*, float*, int)"));
    assert_eq!(f.location, Some(SourceLoc { file: "small_oob.cu".into(), line: 8 }));
    assert_eq!(f.thread, Some([231, 0, 0]));
    assert_eq!(f.block, Some([3, 0, 0]));
    let a = f.access.as_ref().unwrap();
    assert_eq!(a.kind.as_deref(), Some("read"));
    assert_eq!(
        a.nearest,
        Some(Nearest { distance: 1, before: false, allocation: 0x7f0496800000, allocation_size: 4000 })
    );
    assert_eq!(
        ev.api_errors,
        vec![ApiError {
            api: "cudaDeviceSynchronize".into(),
            error: "cudaErrorLaunchFailure".into(),
            code: Some(719),
            message: "unspecified launch failure".into(),
            count: 1,
        }]
    );
    assert_eq!(ev.error_summary, Some(2));
    assert!(!ev.notes.iter().any(|n| n.contains("did not print")));
}

#[test]
fn without_line_info_the_offset_is_the_site() {
    let ev = scan_str(PLAIN_21, "21_memcheck_plain.log");
    let f = memcheck_faults(&ev);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].location, None);
    assert_eq!(f[0].pc, Some(0xc0));
    assert_eq!(f[0].kernel.as_deref(), Some("scatter_far(int*, int)"));
    assert_eq!(f[0].host_frames[0].module.as_deref(), Some("a_plain"));
}

#[test]
fn python_host_frames_are_marked() {
    let ev = scan_str(TRITON_GRAPH, "triton_graph/memcheck.log");
    let f = memcheck_faults(&ev);
    assert_eq!(f.len(), 1);
    let f = f[0];
    assert_eq!(f.kernel.as_deref(), Some("gather_kv_kernel"));
    assert_eq!(f.location, Some(SourceLoc { file: "vllm_shaped.py".into(), line: 22 }));
    assert_eq!(f.pc, Some(0x100));
    assert_eq!(f.block, Some([41, 0, 0]));
    assert_eq!(f.count, 128);
    assert_eq!(f.host_frames.len(), 22);
    assert_eq!(f.host_frames[0], Frame { module: Some("libcudart.so.13".into()), ..Frame::default() });
    assert_eq!(f.host_frames[1].function.as_deref(), Some("cudaGraphLaunch"));
    assert_eq!(f.host_frames[2].function.as_deref(), Some("at::cuda::CUDAGraph::replay()"));
    assert_eq!(
        f.host_frames[21],
        Frame {
            function: Some("<module>".into()),
            file: Some("vllm_shaped.py".into()),
            line: Some(65),
            module: None,
            python: true,
        }
    );
    assert!(f.host_frames[20].python);
    assert!(!f.host_frames[18].python, "{:?}", f.host_frames[18]);
    assert_eq!(f.host_frames.iter().filter(|h| h.python).count(), 3);
}

#[test]
fn warp_assert_and_grouped_api_errors() {
    let ev = scan_str(TORCH_ASSERT, "torch_assert/memcheck.log");
    let f = memcheck_faults(&ev);
    assert_eq!(f.len(), 1);
    let f = f[0];
    assert_eq!(f.error, Some(ErrorClass::DeviceAssert));
    assert_eq!(f.kernel, None, "__assertfail is not the user's kernel");
    assert_eq!(f.detail.as_deref(), Some("Warp assert"));
    assert_eq!(f.pc, Some(0x19a0));
    assert_eq!(f.thread, Some([5, 0, 0]));
    assert_eq!(f.frames, vec![Frame { function: Some("__assertfail".into()), ..Frame::default() }]);
    assert_eq!(f.host_frames.len(), 35);
    assert_eq!(
        f.host_frames[34],
        Frame {
            function: Some("<module>".into()),
            file: Some("torch_assert.py".into()),
            line: Some(8),
            module: None,
            python: true,
        }
    );
    assert_eq!(f.host_frames.iter().filter(|h| h.python).count(), 2);
    assert_eq!(ev.api_errors.len(), 2);
    assert_eq!(ev.api_errors[0].api, "cudaFree");
    assert_eq!(ev.api_errors[0].code, Some(710));
    assert_eq!(ev.api_errors[0].message, "device-side assert triggered");
    assert_eq!(ev.api_errors[1].api, "cudaGetLastError");
    assert_eq!(ev.error_summary, Some(3));
}

#[test]
fn api_errors_group_by_error_and_api() {
    let ev = scan_str(DIST, "dist_fault-full/rungs/05-memcheck/stdout.log");
    let got: Vec<(&str, &str, u64)> =
        ev.api_errors.iter().map(|e| (e.error.as_str(), e.api.as_str(), e.count)).collect();
    assert_eq!(
        got,
        vec![
            ("cudaErrorNoKernelImageForDevice", "cudaFuncGetAttributes", 8),
            ("cudaErrorNoKernelImageForDevice", "cudaGetLastError", 8),
            ("cudaErrorLaunchFailure", "cudaEventQuery", 1),
            ("cudaErrorLaunchFailure", "cudaGetLastError", 1),
        ]
    );
    assert_eq!(ev.api_errors[0].code, Some(209));
    assert_eq!(ev.api_errors[0].message, "no kernel image is available for execution on the device");
    // Rank 1's invalid reads are one site.
    let f = memcheck_faults(&ev);
    assert_eq!(f.len(), 1);
    assert_eq!((f[0].kernel.as_deref(), f[0].count), (Some("gather_kv_kernel"), 128));
    assert_eq!(ev.error_summary, Some(146));
}

#[test]
fn sanitizer_coredump_and_clean_run() {
    let ev = scan_str(COREDUMP_57, "57_far_memcheck_coredump.log");
    assert_eq!(ev.coredumps, vec![CoredumpFile { path: "/tmp/cd/cs_core".into(), pid: None }]);
    assert_eq!(ev.error_summary, Some(1024));
    assert!(memcheck_faults(&ev).is_empty());
    let ev = scan_str(CLEAN, "clean/memcheck.log");
    assert!(ev.tools.contains(&Tool::Memcheck));
    assert_eq!(ev.error_summary, Some(0));
    assert!(ev.faults.is_empty());
}

/// `n` with thousands separators, as compute-sanitizer prints distances.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The first record of oob_write/memcheck.log repeated with the recorded pattern: thread
/// x counts up (256 a block, from block 8), the address by 4, the distance down by 4.
fn repeated_records(n: u32) -> String {
    let rec = first_record(OOB_WRITE);
    let mut s = String::from("========= COMPUTE-SANITIZER\n");
    for i in 0..n {
        let (tx, bx) = (i % 256, 8 + i / 256);
        let k = u64::from(i) * 4;
        s.push_str(
            &rec.replace(
                "by thread (0,0,0) in block (8,0,0)",
                &format!("by thread ({tx},0,0) in block ({bx},0,0)"),
            )
            .replace("0x7f4b50802000", &format!("{:#x}", 0x7f4b50802000u64 + k))
            .replace("34,359,730,176", &grouped(34_359_730_176 - k)),
        );
    }
    s
}

#[test]
fn many_records_group_with_ranges() {
    let text = repeated_records(1000);
    // The pattern reproduces the recording's own second record.
    let second = &records(&text, 2)[records(&text, 1).len()..];
    assert_eq!(second, &records(OOB_WRITE, 2)[records(OOB_WRITE, 1).len()..]);
    let ev = scan_str(&text, "repeated.log");
    assert_eq!(ev.faults.len(), 1);
    let f = &ev.faults[0];
    assert_eq!(f.count, 1000);
    assert_eq!(f.thread_range, Some([[0, 0, 0], [255, 0, 0]]));
    assert_eq!(f.block_range, Some([[8, 0, 0], [11, 0, 0]]));
    assert_eq!(f.access.as_ref().unwrap().address, Some(0x7f4b50802000));
    assert_eq!(f.access.as_ref().unwrap().nearest.as_ref().unwrap().distance, 34_359_730_176);
    assert_eq!(f.host_frames.len(), 1);
}

#[test]
fn sites_keep_order_of_first_appearance() {
    // oob_read's read site, then oob_write's write site (5 records), then oob_read again.
    let read = records(OOB_READ, 1);
    let write = records(OOB_WRITE, 5);
    let text = format!("{read}{write}{read}");
    let ev = scan_str(&text, "x.log");
    let got: Vec<(Option<&str>, u64)> = ev.faults.iter().map(|f| (f.kernel.as_deref(), f.count)).collect();
    assert_eq!(
        got,
        vec![
            (Some("gather_rows(const float*, const long long*, float*, int)"), 2),
            (Some("scale_write(float*, int, long long)"), 5)
        ]
    );
    assert_eq!(ev.faults[0].host_frames.len(), 1);
}

#[test]
fn distinct_sites_are_capped() {
    let rec = first_record(OOB_WRITE);
    let mut text = String::new();
    for i in 0..(MAX_SITES + 10) {
        // Different lines are different sites.
        text.push_str(&rec.replace("in oob_write.cu:7", &format!("in oob_write.cu:{}", 100 + i)));
    }
    let ev = scan_str(&text, "x.log");
    assert_eq!(ev.faults.len(), MAX_SITES);
    assert!(ev.notes.iter().any(|n| n.contains("10 record(s) at sites beyond")), "{:?}", ev.notes);
}

#[test]
fn misaligned_records_group_and_keep_no_nearest() {
    let ev = scan_str(MISALIGNED_LOG, "misaligned/memcheck.log");
    let f = memcheck_faults(&ev);
    assert_eq!(f.len(), 1);
    let f = f[0];
    assert_eq!(f.error, Some(ErrorClass::MisalignedAccess));
    assert_eq!(f.kernel.as_deref(), Some("sum_pairs(const char*, double*, int)"));
    assert_eq!(f.location, Some(SourceLoc { file: "misaligned.cu".into(), line: 8 }));
    assert_eq!(f.count, 200);
    assert_eq!(f.thread_range, Some([[0, 0, 0], [127, 0, 0]]));
    assert_eq!(f.block_range, Some([[0, 0, 0], [1, 0, 0]]));
    assert_eq!(f.detail.as_deref(), Some("misaligned"));
    let a = f.access.as_ref().unwrap();
    assert_eq!((a.kind.as_deref(), a.size), (Some("read"), Some(8)));
    // `and is inside the nearest allocation ...` has no distance: not a `Nearest`.
    assert_eq!(a.nearest, None);
    assert_eq!(ev.error_summary, Some(513));
}

#[test]
fn device_frames_of_inlined_code() {
    let ev = scan_str(INLINED_LOG, "inlined/memcheck.log");
    let f = memcheck_faults(&ev);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].kernel.as_deref(), Some("store_scaled(float*, long long, float, float)"));
    assert_eq!(f[0].location, Some(SourceLoc { file: "store_helpers.cuh".into(), line: 5 }));
    assert_eq!(
        f[0].frames,
        vec![Frame {
            function: Some("apply_offsets(float*, const long long*, int)".into()),
            file: Some("inlined.cu".into()),
            line: Some(8),
            ..Frame::default()
        }]
    );
    assert_eq!(f[0].host_frames.len(), 1);
    assert_eq!(ev.api_errors.len(), 1);
}

#[test]
fn triton_kernel_in_a_python_file() {
    let ev = scan_str(TRITON_LOG, "triton_worker/memcheck.log");
    let f = memcheck_faults(&ev);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].kernel.as_deref(), Some("gather_kv_kernel"));
    assert_eq!(f[0].location, Some(SourceLoc { file: "vllm_shaped.py".into(), line: 22 }));
    assert_eq!(f[0].count, 128);
    assert!(f[0].frames.is_empty());
    assert_eq!(f[0].host_frames.iter().filter(|h| h.python).count(), 11);
    // A multiprocessing-spawned worker: its stack ends in `<module> in <string>:1`.
    let last = f[0].host_frames.last().unwrap();
    assert_eq!(
        (last.function.as_deref(), last.file.as_deref(), last.line),
        (Some("<module>"), Some("<string>"), Some(1))
    );
    assert!(last.python);
    let apis: Vec<(&str, u64)> = ev.api_errors.iter().map(|e| (e.api.as_str(), e.count)).collect();
    assert_eq!(apis, vec![("cudaLaunchKernel", 1), ("cudaGetLastError", 2), ("cudaFree", 1)]);
    assert_eq!(ev.error_summary, Some(132));
}

#[test]
fn rows_of_equals_signs_are_not_sanitizer_lines() {
    let ev = scan_str("======================================================\n", "x.log");
    assert!(!ev.tools.contains(&Tool::Memcheck));
}

#[test]
fn helpers() {
    assert_eq!(grouped_u64("34,359,738,368"), Some(34_359_738_368));
    assert_eq!(grouped_u64("18,446,744,073,709,551,615"), Some(u64::MAX));
    assert_eq!(grouped_u64("99,999,999,999,999,999,999"), None);
    assert_eq!(grouped_u64(""), None);
    assert_eq!(
        split_position("scale_write(float *, int, long long)+0x110 in oob_write.cu:7"),
        ("scale_write(float *, int, long long)", Some("0x110"), Some("oob_write.cu:7"))
    );
    assert_eq!(split_position("__assertfail+0x1930"), ("__assertfail", Some("0x1930"), None));
    assert_eq!(parse_by_thread(b"(9,0,0) in block (3,0,0)"), Some(([9, 0, 0], [3, 0, 0])));
    assert_eq!(parse_by_thread(b"(9,0) in block (3,0,0)"), None);
    assert_eq!(parse_by_thread(b"(4294967296,0,0) in block (3,0,0)"), None);
    assert_eq!(parse_by_thread(b"(1,2,3) in block (4,5,6"), None);
    // A host frame with a source position and a module (NCCL's).
    let nccl = DIST.lines().find_map(|l| l.split_once("Host Frame: ncclInit")).unwrap();
    let f = parse_host_frame(&format!("ncclInit{}", nccl.1));
    assert_eq!(f.function.as_deref(), Some("ncclInitKernelsForDevice(int, int, unsigned long*)"));
    assert_eq!((f.file.as_deref(), f.line), (Some("enqueue.cc"), Some(52)));
    assert_eq!(f.module.as_deref(), Some("libnccl.so.2"));
    assert!(!f.python);
    // A `[clone .isra.0]` suffix stays part of the function (torch_assert/memcheck.log).
    let clone = TORCH_ASSERT
        .lines()
        .filter_map(|l| l.split_once("Host Frame: ").map(|(_, t)| t))
        .find(|t| t.contains("[clone .isra.0]"))
        .unwrap();
    let f = parse_host_frame(clone);
    assert_eq!(
            f.function.as_deref(),
            Some("at::native::(anonymous namespace)::nll_loss_forward_out_cuda_template(at::Tensor const&, at::Tensor const&, at::Tensor const&, at::Tensor const&, at::Tensor const&, long, long)::{lambda()#3}::operator()() const::{lambda()#2}::operator()() const [clone .isra.0]")
        );
    assert_eq!(f.module.as_deref(), Some("libtorch_cuda.so"));
    assert_eq!(
        kernel_name("_Z11gather_rowsPKfPKxPfi"),
        (
            Some("gather_rows(float const*, long long const*, float*, int)".into()),
            Some("_Z11gather_rowsPKfPKxPfi".into())
        )
    );
}

#[test]
fn every_truncation_of_real_output_is_safe() {
    let write = records(OOB_WRITE, 5);
    for text in [write, OOB_READ, records(TORCH_ASSERT, 1), SMALL_22, head(DIST, 6), COREDUMP_57] {
        for (i, _) in text.char_indices() {
            let ev = scan_str(&text[..i], "t.log");
            assert!(ev.faults.len() <= 2);
        }
    }
    // Cut inside a record before its site is known: the record is dropped, with a note.
    let cut = write.find("=========     Access to 0x7f4b50802004").unwrap();
    let ev = scan_str(&write[..cut], "t.log");
    assert_eq!(ev.faults.len(), 1);
    assert_eq!(ev.faults[0].count, 1);
    assert!(ev.notes.iter().any(|n| n.contains("cut off")), "{:?}", ev.notes);
    // Cut after it: it counts.
    let cut = write.find("=========     and is 34,359,730,172").unwrap();
    let ev = scan_str(&write[..cut], "t.log");
    assert_eq!(ev.faults[0].count, 2);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_text_never_panics(s in "\\PC*") {
        let _ = scan_str(&s, "r.log");
    }

    #[test]
    fn prefixed_garbage_never_panics(lines in proptest::collection::vec(
        ("(=========)?( {0,9})?(Invalid |at |by thread |Access to |Address |and is |Host Frame:|Device Frame:|Program hit |ERROR SUMMARY: )?", "\\PC{0,40}"),
        0..40,
    )) {
        let text: String = lines.iter().map(|(a, b)| format!("{a}{b}\n")).collect();
        let _ = scan_str(&text, "r.log");
    }

    #[test]
    fn spliced_real_output_never_panics(cut in 0usize..4000, junk in "\\PC{0,30}") {
        let s = crate::findings::fuzz::inserted(records(TRITON_GRAPH, 1), cut, &junk);
        let _ = scan_str(&s, "r.log");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Multi-byte, invalid and 5,000-character kernel names where memcheck prints the kernel
    /// (`at NAME(...)+0x110 in f.cu:7`, templates too): no panic; a plain name comes through whole.
    #[test]
    fn multi_byte_kernel_names_never_panic(
        which in any::<proptest::sample::Index>(),
        name in crate::findings::fuzz::name(),
        edits in crate::findings::fuzz::invalid_edits(),
    ) {
        let reals: Vec<_> = ["memcheck.log"].iter().flat_map(|f| crate::findings::fuzz::real(f)).collect();
        let _a = crate::findings::fuzz::splice_and_run(&reals, which, &name, &edits);
        let plain = name.chars().all(|c| c.is_alphanumeric() || c == '_') && name.len() < MAX_FIELD / 2;
        if edits.is_empty() && plain && reals[which.index(reals.len())].kernel == "scale_write" {
            let v = _a.verdict.expect("the record still locates the fault");
            prop_assert!(v.kernel.starts_with(&format!("{name}(")), "{} for {name}", v.kernel);
        }
    }
}

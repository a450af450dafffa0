//! What a verdict says of some kinds of fault beyond the kernel and the line: the library a
//! precompiled kernel belongs to (cuBLAS, cuDNN, NCCL, CUTLASS: no source line exists for it),
//! the other distinct faults of a run ([`OtherFault`]), and which GPU dumps the tool itself
//! triggered (the hang rung, `dump PID`, watch's hang dump), whose cuda-gdb sessions are
//! snapshots of a hang even when `info cuda threads` is missing, and which records are one
//! occurrence seen twice (a device assert's message and the dump the driver wrote of it).
//!
//! Pure. Must not: read files, print, or decide the verdict's kernel, line or class (verdict.rs
//! does), nor use verdict.rs (it uses this file).

use serde::Serialize;

use crate::model::RungId;

use super::{names, DeviceSnapshot, Dim3, ErrorClass, Evidence, Fault, Frame, SourceLoc, Tool};

/// Another distinct fault the tools reported (another kernel, line or class), ranked after the
/// verdict's own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OtherFault {
    pub kernel: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    pub error: ErrorClass,
    /// The inputs that reported it, in input order.
    pub from: Vec<String>,
}

/// Vendor libraries by the start of a shared object's name, and what they are called.
const LIBRARY_MODULES: &[(&str, &str)] = &[
    ("libcublasLt", "cuBLAS"),
    ("libcublas", "cuBLAS"),
    ("libcudnn", "cuDNN"),
    ("libnccl", "NCCL"),
    ("libcufft", "cuFFT"),
    ("libcusparse", "cuSPARSE"),
    ("libcusolver", "cuSOLVER"),
    ("libcurand", "cuRAND"),
    ("libcutlass", "CUTLASS"),
];

/// A host frame inside a vendor library (`cublasLtSSSMatmul in libcublasLt.so.13`): never the
/// user's call.
pub fn in_vendor_library(f: &Frame) -> bool {
    let m = f.module.as_deref().map(names::base_name).unwrap_or("");
    LIBRARY_MODULES.iter().any(|(p, _)| m.starts_with(p))
}

/// The library a kernel without a source line belongs to, in words (`cuBLAS (libcublasLt.so.13,
/// libcublas.so.13)`): from the kernel's name (`…_cublas`, `sm80_xmma_gemm_…`, `cutlass::`,
/// `nccl…`, `cudnn`), the vendor modules of the faults' host frames, or a device frame in a
/// library's path. `None`: nothing says it is a library's.
pub fn library_of<'a>(kernel: &str, members: impl Iterator<Item = &'a Fault>) -> Option<String> {
    let k = names::kernel_key(kernel).to_ascii_lowercase();
    let ident = k.rsplit("::").next().unwrap_or(&k);
    let by_name = if k.contains("cublaslt") || ident.ends_with("_cublas") || ident.contains("cublas") {
        Some("cuBLAS")
    } else if k.contains("cudnn") {
        Some("cuDNN")
    } else if ident.starts_with("nccl") || k.contains("ncclkernel") || k.contains("nccldevkernel") {
        Some("NCCL")
    } else if k.starts_with("cutlass::") || k.contains("::cutlass::") || ident.starts_with("cutlass") {
        Some("CUTLASS")
    } else if ident.starts_with("sm") && ident.contains("_xmma_") {
        // cuBLAS's and cuDNN's own tensor-core kernels: the host frames tell which.
        Some("cuBLAS or cuDNN")
    } else {
        None
    };
    let mut modules: Vec<String> = Vec::new();
    let mut by_module: Option<&str> = None;
    let mut device_library = false;
    for f in members {
        for h in f.host_frames.iter().filter(|h| in_vendor_library(h)) {
            let m = names::base_name(h.module.as_deref().unwrap_or_default()).to_string();
            by_module =
                by_module.or_else(|| LIBRARY_MODULES.iter().find(|(p, _)| m.starts_with(p)).map(|(_, n)| *n));
            if !modules.contains(&m) && modules.len() < 4 {
                modules.push(m);
            }
        }
        device_library |= f.frames.iter().filter_map(|d| d.file.as_deref()).any(names::is_library_path);
    }
    let name = match (by_name, by_module) {
        (Some("cuBLAS or cuDNN"), Some(m)) | (None, Some(m)) => m,
        (Some(n), _) => n,
        (None, None) if device_library => "a library",
        (None, None) => return None,
    };
    Some(if modules.is_empty() { name.to_string() } else { format!("{name} ({})", modules.join(", ")) })
}

/// Whether an input may be of a GPU dump the tool itself triggered while the program ran: the
/// hang rung's and `dump PID`'s cuda-gdb logs, and the baseline's `cudagdb-N`, whose run takes
/// a hang's evidence itself when it reaches its time limit (`--timeout`) or, under `watch`,
/// `--hang-after` (the same dump, read with the same commands, as the hang rung's: issue 41,
/// where these said `unknown in ... faulting warp` and the hang rung `hang in ...`). A fault's
/// dump shows an exception, which the caller tells it by.
pub fn tool_triggered(origin: &str) -> bool {
    let (rung, file) = origin.split_once('/').unwrap_or((origin, ""));
    if rung == RungId::Hang.name() || rung == RungId::Dump.name() {
        return true;
    }
    (rung == "watch" || rung == RungId::Baseline.name()) && file.starts_with("cudagdb-")
}

/// The inputs with each cuda-gdb session of a dump the tool triggered ([`tool_triggered`]) that
/// shows no exception turned from a fault into a snapshot: cuda-gdb printed a focus and a `bt`
/// but no `info cuda threads` table (or it was cut), and without an exception a focus is where a
/// thread spins, not a faulting warp.
pub fn snapshots_of_triggered_dumps(inputs: &[Evidence]) -> Vec<Evidence> {
    let mut out = inputs.to_vec();
    for ev in out.iter_mut().filter(|e| tool_triggered(&e.origin)) {
        let (spin, keep): (Vec<Fault>, Vec<Fault>) = std::mem::take(&mut ev.faults)
            .into_iter()
            .partition(|f| f.tool == Some(Tool::CudaGdb) && f.error.is_none() && f.kernel.is_some());
        ev.faults = keep;
        for f in spin {
            let mut chain: Vec<SourceLoc> = f.inlined.clone();
            if chain.is_empty() {
                chain.extend(f.location.clone());
            }
            ev.snapshots.push(DeviceSnapshot {
                pid: f.pid,
                rank: f.rank,
                // `dump PID` attaches to the process; the other rungs read a dump.
                core: (ev.origin.split('/').next() != Some(RungId::Dump.name())).then(|| ev.path.clone()),
                kernel: f.kernel.clone(),
                mangled: f.mangled.clone(),
                chain,
                block: f.block,
                thread: f.thread,
                device: f.device,
                sm: f.sm,
                warp: f.warp,
                pc: f.pc,
                ..DeviceSnapshot::default()
            });
        }
    }
    out
}

/// For each fault (with the input it came from), the fault it is the same occurrence as, when
/// it is a device assert's message (`FILE:LINE: FUNC: block: [..], thread: [..] Assertion ..`)
/// and a tool of the same rung saw that assert with the same block and thread: the message's
/// `FUNC` is the device function that asserted (ATen's is a lambda's `operator()`), the other
/// record's kernel is the one launched (recorded on the H200:
/// `at::native::_scatter_gather_elementwise_kernel<..>` in the driver's dump of the assert).
pub(super) fn same_assert(faults: &[(&str, &Fault)]) -> Vec<Option<usize>> {
    let rung = names::rung_of;
    // The records of an assert a tool saw, by (rung, block, thread): the first of each.
    let mut seen: std::collections::HashMap<(&str, Dim3, Dim3), usize> = std::collections::HashMap::new();
    for (i, &(origin, g)) in faults.iter().enumerate() {
        let tool =
            g.tool != Some(Tool::Host) && g.error == Some(ErrorClass::DeviceAssert) && g.kernel.is_some();
        if let (true, Some(b), Some(t)) = (tool, g.block, g.thread) {
            seen.entry((rung(origin), b, t)).or_insert(i);
        }
    }
    faults
        .iter()
        .map(|&(origin, f)| {
            let message = f.tool == Some(Tool::Host) && f.error == Some(ErrorClass::DeviceAssert);
            match (message, f.block, f.thread) {
                (true, Some(b), Some(t)) => seen.get(&(rung(origin), b, t)).copied(),
                _ => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::scan::scan_reader;
    use super::super::verdict::decide;
    use super::super::{Access, Fault, Nearest};
    use super::*;

    /// One recording read as the input of `origin` (`hang/cudagdb-584`).
    fn scan_str(text: &str, origin: &str) -> Evidence {
        scan_reader(text.as_bytes(), origin, origin)
    }

    const TRAP_GDB: &str = recording!("h200/kinds/trap/cudagdb-1.log");
    const TWO_MEMCHECK: &str = recording!("h200/kinds/two_bugs/memcheck.log");
    const TWO_GDB: &str = recording!("h200/kinds/two_bugs/cudagdb-1.log");
    const HANG_FLAG: &str = recording!("h200/hang/hang_flag/cudagdb_1.log");

    /// cuda-gdb on the dump of a `__trap()`: `Program terminated with signal SIGTRAP`, no CUDA
    /// exception: class trap, with the line and the note that the trap is at or just before it.
    #[test]
    fn a_sigtrap_in_cuda_gdb_is_a_trap_at_or_just_before_the_line() {
        let a = decide(&[scan_str(TRAP_GDB, "coredump/cudagdb-1")]);
        let v = a.verdict.unwrap();
        assert_eq!(v.error, ErrorClass::Trap);
        assert_eq!(v.line, Some(11));
        assert_eq!(v.meaning, ErrorClass::Trap.meaning());
        assert!(v.remarks.iter().any(|r| r.contains("at or just before")), "{:?}", v.remarks);
    }

    /// two_bugs: memcheck reports `bias_add` (line 8) as it happens; cuda-gdb on the dump sees
    /// only `gather`, the fault that ended the run. The first leads, the other follows.
    #[test]
    fn several_bugs_lead_with_the_first_and_list_the_others() {
        let alone = decide(&[scan_str(TWO_MEMCHECK, "memcheck")]).verdict.unwrap();
        assert!(alone.kernel.starts_with("bias_add"), "{}", alone.kernel);
        assert_eq!(alone.line, Some(8));
        let both = decide(&[scan_str(TWO_MEMCHECK, "memcheck"), scan_str(TWO_GDB, "coredump/cudagdb-1")]);
        let v = both.verdict.unwrap();
        assert!(v.kernel.starts_with("bias_add"), "{}", v.kernel);
        assert_eq!((v.line, &v.error), (Some(8), &ErrorClass::InvalidAccess));
        assert_eq!(v.others.len(), 1, "{:?}", v.others);
        let o = &v.others[0];
        assert!(o.kernel.starts_with("gather"), "{}", o.kernel);
        assert_eq!((o.line, &o.error), (Some(13), &ErrorClass::IllegalAddress));
        assert_eq!(o.from, vec!["coredump/cudagdb-1".to_string()]);
    }

    /// The access is one record's: the thread's record (16-byte read, no allocation said), not
    /// its size with another record's nearest allocation.
    #[test]
    fn the_access_fields_come_from_one_record() {
        let rec = |size: u64, nearest: Option<Nearest>, thread: Option<[u32; 3]>| Fault {
            tool: Some(Tool::Memcheck),
            error: Some(ErrorClass::InvalidAccess),
            kernel: Some("k(float*)".into()),
            location: Some(SourceLoc { file: "k.cu".into(), line: 3 }),
            thread,
            block: thread.map(|_| [0, 0, 0]),
            access: Some(Access {
                kind: Some("read".into()),
                size: Some(size),
                address: Some(0x1000 + size),
                nearest,
                ..Access::default()
            }),
            count: 1,
            ..Fault::default()
        };
        let other = Nearest { distance: 4, before: false, allocation: 0x900, allocation_size: 64 };
        let mut ev = Evidence::new("memcheck.log", "memcheck");
        ev.faults = vec![rec(16, None, Some([5, 0, 0])), rec(4, Some(other), None)];
        let v = decide(&[ev]).verdict.unwrap();
        let a = v.access.unwrap();
        assert_eq!((a.size, a.address, a.nearest), (Some(16), Some(0x1010), None));
        assert_eq!(v.thread, Some([5, 0, 0]));
    }

    /// The hang rung's dump read without `info cuda threads`: still a hang, said as spinning,
    /// from the rung that triggered the dump; the same session in the coredump rung is not.
    #[test]
    fn a_dump_the_tool_triggered_is_a_hang_without_the_threads_table() {
        let cut: String = HANG_FLAG
            .lines()
            .filter(|l| {
                let t = l.trim_start();
                !(t.starts_with("BlockIdx")
                    || t.starts_with("Kernel 0")
                    || (t.starts_with('(') || t.starts_with("*  (")))
            })
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(!cut.contains("ThreadIdx To"), "the table is gone");
        let a = decide(&[scan_str(&cut, "hang/cudagdb-584")]);
        let v = a.verdict.unwrap();
        assert_eq!(v.error, ErrorClass::Hang);
        assert!(v.kernel.starts_with("consume"), "{}", v.kernel);
        assert_eq!(v.line, Some(8));
        assert!(a.conclusion.contains("spins at"), "{}", a.conclusion);
        assert!(v.remarks.iter().any(|r| r.contains("no `info cuda threads`")), "{:?}", v.remarks);
        assert!(!v.remarks.iter().any(|r| r.contains("faulting warp")), "{:?}", v.remarks);
        assert!(tool_triggered("dump/cudagdb-attach-571") && tool_triggered("watch/cudagdb-1"));
        // The same hang caught by the baseline's time limit (`--timeout`) or by `watch`, whose
        // folder is the baseline's: worded as the hang rung words it.
        let a = decide(&[scan_str(&cut, "baseline/cudagdb-1")]);
        let v = a.verdict.unwrap();
        assert_eq!((v.error, v.line), (ErrorClass::Hang, Some(8)));
        assert!(a.conclusion.starts_with("hang: `consume` spins at"), "{}", a.conclusion);
        assert!(!v.remarks.iter().any(|r| r.contains("faulting warp")), "{:?}", v.remarks);
        let elsewhere = decide(&[scan_str(&cut, "coredump/cudagdb-1")]).verdict.unwrap();
        assert_ne!(elsewhere.error, ErrorClass::Hang);
    }

    #[test]
    fn library_names_from_the_kernel_and_the_host_frames() {
        let f = |m: &str| Fault {
            host_frames: vec![Frame { module: Some(m.into()), ..Frame::default() }],
            ..Fault::default()
        };
        assert_eq!(library_of("ncclDevKernel_AllReduce_Sum_f32_RING_LL", [].iter()).as_deref(), Some("NCCL"));
        assert_eq!(
            library_of("void cutlass::Kernel<Gemm>(Gemm::Params)", [].iter()).as_deref(),
            Some("CUTLASS")
        );
        assert_eq!(
            library_of("sm90_xmma_fprop_implicit_gemm", [f("libcudnn_engines_precompiled.so.9")].iter())
                .as_deref(),
            Some("cuDNN (libcudnn_engines_precompiled.so.9)")
        );
        assert_eq!(library_of("bias_add(float*, float, int)", [f("two_bugs")].iter()), None);
    }
}

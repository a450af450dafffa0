//! The host side of a verdict: where the kernel was launched (from synchronous sources only)
//! and where its error surfaced, which inputs' host frames may be joined to a kernel at all,
//! and what counts as the runtime's frames rather than the user's; with [`HostSite`] and
//! [`Located`], the types those answers come in.
//!
//! Pure, like the verdict it serves. Must not: read files, print, or decide the kernel, the line
//! or the class (verdict.rs does), nor use verdict.rs (it uses this file).

use std::collections::HashSet;

use serde::Serialize;

use super::{
    faulthandler, launch_log, launch_sites, names, Evidence, Fault, Frame, HostStack, RecordedLaunch,
    SourceLoc, Symptom, Tool,
};

/// A host position and what it rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostSite {
    #[serde(flatten)]
    pub frame: Frame,
    /// The input it came from (`coredump/cpucore-gdb`, `launch-blocking`).
    pub from: String,
    /// Why it can be trusted, in words (`the launch-blocking traceback`).
    pub how: String,
}

/// A finding together with the input it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Located<T> {
    pub origin: String,
    #[serde(flatten)]
    pub item: T,
}

/// [`same_kernel`] on two comparison keys ([`names::kernel_key`]).
pub(super) fn keys_match(ka: &str, kb: &str) -> bool {
    ka == kb || is_tail(ka, kb) || is_tail(kb, ka)
}

/// Whether `tail` is the part of `key` after one of its `::` (`key` ends with `::tail`).
pub(super) fn is_tail(key: &str, tail: &str) -> bool {
    key.len() >= tail.len() + 2 && key.ends_with(tail) && key[..key.len() - tail.len()].ends_with("::")
}

/// `cudaGraphLaunch`, `cuLaunchKernel`, `cudaMemcpy`: the runtime and driver APIs.
pub(super) fn is_cuda_api(func: &str) -> bool {
    let upper_after =
        |p: &str| func.strip_prefix(p).and_then(|r| r.chars().next()).is_some_and(|c| c.is_ascii_uppercase());
    upper_after("cuda") || upper_after("cu")
}

/// Host frames that are the runtime, the driver or the interpreter, not the user's code.
pub(super) fn is_runtime_frame(f: &Frame) -> bool {
    if f.python {
        return f.file.as_deref().is_none_or(names::is_host_machinery);
    }
    let module = f.module.as_deref().unwrap_or("");
    let func = f.function.as_deref().unwrap_or("");
    func.is_empty()
        || module.starts_with("libcuda")
        || module.starts_with("libcudart")
        || module.starts_with("libtorch")
        || module.starts_with("libc10")
        || module.starts_with("libc.so")
        || module.starts_with("python")
        || module.starts_with("libpython")
        || module.starts_with("__triton_launcher")
        || module.contains("/nvidia/")
        || is_cuda_api(func)
        || func.starts_with("__cudaLaunch")
        || func.starts_with("__device_stub")
        || func.starts_with("libcudart_static")
        || func.starts_with("_Py")
        || func.starts_with("Py")
        || func == "_start"
        || func == "__libc_start_main"
}

/// The origins of the inputs whose host frames may be joined to the kernel (`kernel_key`):
/// those with a finding of it (`members`); those of the same run (the same [`Evidence::group`],
/// a bundle); those whose host stacks name the kernel; and those that name one of the user's
/// source files (by file name, outside libraries and the toolkit) that the kernel's own inputs
/// name, which tells one program's loose recordings from another's.
pub(super) fn related_inputs<'a>(
    inputs: &'a [Evidence],
    members: &HashSet<&str>,
    kernel_key: &str,
) -> HashSet<&'a str> {
    let own: Vec<&Evidence> = inputs.iter().filter(|e| members.contains(e.origin.as_str())).collect();
    let groups: HashSet<&str> = own.iter().filter_map(|e| e.group.as_deref()).collect();
    let sources = |e: &'a Evidence| -> HashSet<&'a str> {
        let mut files: Vec<&str> = Vec::new();
        for f in &e.faults {
            files.extend(f.location.iter().chain(&f.inlined).map(|l| l.file.as_str()));
            files.extend(f.host_frames.iter().filter_map(|h| h.file.as_deref()));
        }
        for sy in &e.symptoms {
            files.extend(sy.reported_at.iter().map(|l| l.file.as_str()));
            files.extend(sy.python_frames.iter().filter_map(|h| h.file.as_deref()));
        }
        for st in &e.host_stacks {
            files.extend(st.frames.iter().filter_map(|h| h.file.as_deref()));
        }
        files
            .into_iter()
            .filter(|p| !names::is_library_path(p) && !names::is_toolkit_source(p))
            .map(names::base_name)
            .collect()
    };
    let own_sources: HashSet<&str> = own.iter().flat_map(|e| sources(e)).collect();
    let names_kernel = |e: &Evidence| {
        e.host_stacks.iter().flat_map(|st| &st.frames).any(|f| {
            f.function.as_deref().is_some_and(|n| {
                let n = n.strip_prefix("__device_stub__").unwrap_or(n);
                keys_match(&names::kernel_key(n), kernel_key)
            })
        })
    };
    inputs
        .iter()
        .filter(|e| {
            members.contains(e.origin.as_str())
                || e.group.as_deref().is_some_and(|g| groups.contains(g))
                || names_kernel(e)
                || e.static_launches.iter().any(|s| keys_match(&names::kernel_key(&s.kernel), kernel_key))
                || sources(e).iter().any(|f| own_sources.contains(f))
        })
        .map(|e| e.origin.as_str())
        .collect()
}

/// Whether a host frame is the launch machinery rather than the caller of the launch: the
/// runtime and driver, the toolkit's headers, nvcc's stub (`__device_stub__...`), and the host
/// function that carries the kernel's own name (`kernel_key`, the kernel's [`names::kernel_key`]).
fn is_launch_machinery(f: &Frame, kernel_key: &str) -> bool {
    is_runtime_frame(f)
        || super::verdict_kinds::in_vendor_library(f)
        || f.function
            .as_deref()
            .is_some_and(|n| n.starts_with("__cudaLaunch") || keys_match(&names::kernel_key(n), kernel_key))
        || f.file.as_deref().is_some_and(|p| names::is_toolkit_source(p) || p.ends_with(".stub.c"))
}

/// The launch site in a host thread's stack: the first frame outside the launch machinery,
/// going outwards from the launch call, preferring one with a source line.
fn site_in_stack(st: &HostStack, kernel_key: &str) -> Option<Frame> {
    let api = st.launch_api.as_deref()?;
    let at = st.frames.iter().position(|f| f.function.as_deref() == Some(api))?;
    let outer = &st.frames[at + 1..];
    let callers = || outer.iter().filter(|f| !is_launch_machinery(f, kernel_key));
    callers().find(|f| f.file.is_some() && f.line.is_some()).or_else(|| callers().next()).cloned()
}

/// Python's faulthandler stack at the driver's abort, as `how` says it (launch, surfaced).
pub(super) const FATAL_LAUNCH: &str = "the Python stack at the driver's abort, under launch-blocking";
const FATAL_SURFACED: &str =
    "asynchronous: the Python stack at the driver's abort, a later call, not the launch";

/// Whether a symptom's frames may name a host site of the kernel: a traceback's always (it
/// ended in a CUDA error); faulthandler's stack at a fatal error only when it is of a device
/// fault: the process aborted (as the driver does after its GPU coredump) and its input shows
/// the fault (the driver's dump, a finding) or is of the same run (group) as an input that does.
pub(super) fn of_a_fault(s: &Located<Symptom>, inputs: &[Evidence]) -> bool {
    if !faulthandler::is_stack(&s.item) {
        return true;
    }
    let shows = |e: &Evidence| {
        e.gpu_dump_started
            || !e.faults.is_empty()
            || !e.coredumps.is_empty()
            || e.tools.contains(&Tool::Coredump)
    };
    let runs: Vec<Option<&str>> =
        inputs.iter().filter(|e| e.origin == s.origin).map(|e| e.group.as_deref()).collect();
    faulthandler::is_abort(&s.item)
        && inputs.iter().any(|e| {
            shows(e) && (e.origin == s.origin || (e.group.is_some() && runs.contains(&e.group.as_deref())))
        })
}

/// The host line that launched the kernel, from synchronous sources only: memcheck's host
/// backtrace (taken at the launch) where it names a Python file the tracebacks show as the
/// user's; the launching thread in a stack taken under launch-blocking (a CPU core); the
/// launch-blocking traceback or faulthandler stack (of a device fault: [`of_a_fault`]); then
/// memcheck's C++ frames.
pub(super) fn pick_launch_site<'a>(
    members: impl Iterator<Item = &'a Fault> + Clone,
    symptoms: &[Located<Symptom>],
    inputs: &[Evidence],
    kernel: &str,
    replayed: bool,
) -> Option<HostSite> {
    const MEMCHECK: &str = "memcheck's host backtrace at launch";
    let pid = members.clone().find_map(|f| f.pid);
    let kernel = &names::kernel_key(kernel);
    let memcheck_origin = |want: &Frame| {
        inputs
            .iter()
            .find(|e| e.faults.iter().any(|f| f.host_frames.iter().any(|h| h == want)))
            .map(|e| e.origin.clone())
            .unwrap_or_default()
    };
    let user_files: Vec<&str> = symptoms
        .iter()
        .flat_map(|s| s.item.python_frames.iter())
        .filter(|f| !is_runtime_frame(f))
        .filter_map(|f| f.file.as_deref().map(names::base_name))
        .collect();
    let sanitizer_python = members
        .clone()
        .flat_map(|f| f.host_frames.iter())
        .find(|f| f.python && f.file.as_deref().is_some_and(|p| user_files.contains(&names::base_name(p))));
    if let Some(f) = sanitizer_python {
        return Some(HostSite { frame: f.clone(), from: memcheck_origin(f), how: MEMCHECK.into() });
    }
    let blocking = |origin: &str| inputs.iter().any(|e| e.launch_blocking && e.origin == origin);
    for ev in inputs.iter().filter(|e| e.launch_blocking) {
        if let Some(f) = ev.host_stacks.iter().find_map(|st| site_in_stack(st, kernel)) {
            return Some(HostSite {
                frame: f,
                from: ev.origin.clone(),
                how: "the launching thread, under launch-blocking".into(),
            });
        }
    }
    if let Some((s, f)) = symptoms
        .iter()
        .filter(|s| blocking(&s.origin) && of_a_fault(s, inputs))
        .find_map(|s| s.item.user_frame().filter(|f| !is_runtime_frame(f)).map(|f| (s, f)))
    {
        let how =
            if faulthandler::is_stack(&s.item) { FATAL_LAUNCH } else { "the launch-blocking traceback" };
        return Some(HostSite { frame: f.clone(), from: s.origin.clone(), how: how.into() });
    }
    if !replayed {
        if let Some(h) = recorded_launch_site(inputs, pid, kernel) {
            return Some(h);
        }
    }
    let memcheck = members
        .flat_map(|f| f.host_frames.iter())
        .find(|f| !f.python && !is_launch_machinery(f, kernel))
        .map(|f| HostSite { frame: f.clone(), from: memcheck_origin(f), how: MEMCHECK.into() });
    // memcheck's frame names the function only where the binary lacks host line info for it;
    // the disassembly's only launch of the kernel, where it has the line, says more.
    match (memcheck, static_launch_site(inputs, kernel)) {
        (Some(m), Some(s)) if m.frame.line.is_none() && s.frame.line.is_some() => Some(s),
        (Some(m), _) => Some(m),
        (None, s) => s,
    }
}

/// The binary's only launch of `kernel` (its disassembly, [`launch_sites::only_site`]), where
/// a rung read one: a fact about the code, for a fault and for a kernel that never ends.
pub(super) fn static_launch_site(inputs: &[Evidence], kernel: &str) -> Option<HostSite> {
    inputs.iter().find_map(|e| {
        launch_sites::only_site(&e.static_launches, kernel).map(|s| HostSite {
            frame: s.site.clone(),
            from: e.origin.clone(),
            how: STATIC_LAUNCH.into(),
        })
    })
}

/// How a launch site from the launch recorder is named.
pub const RECORDED_LAUNCH: &str =
    "the launch recorder: the only place this process launched the kernel from outside a graph capture";
/// How a launch inside a graph capture, from the launch recorder, is named.
pub const RECORDED_CAPTURE: &str = "the launch recorder: where this kernel was launched into the CUDA graph";
/// How the start of a capture, from the launch recorder, is named.
pub const CAPTURE_BEGAN: &str =
    "the launch recorder: where the only CUDA graph capture of this process began \
     (the kernel's own launch inside it is not recorded: not a Triton kernel)";
/// How a static launch site inside a captured region is named.
pub const STATIC_CAPTURE: &str =
    "the only launch of this kernel in the binary (its disassembly): the launch the graph captured";

/// The places the launch recorder saw the kernel (`kernel`, a [`names::kernel_key`]) launched
/// from by the faulting process `pid`, or by any process when that one is not known or
/// launched none.
fn recorded_places<'a>(inputs: &'a [Evidence], pid: Option<u32>, kernel: &str) -> Vec<&'a RecordedLaunch> {
    let same = |k: &str| keys_match(&names::kernel_key(k), kernel);
    let mine = launch_log::places_of(inputs, pid, same);
    if mine.is_empty() && pid.is_some() {
        launch_log::places_of(inputs, None, same)
    } else {
        mine
    }
}

/// The launch site from the launch recorder: the kernel's only place outside graph captures,
/// when it was never launched into one (then a fault may be a replay's).
pub(super) fn recorded_launch_site(inputs: &[Evidence], pid: Option<u32>, kernel: &str) -> Option<HostSite> {
    let places = recorded_places(inputs, pid, kernel);
    match places[..] {
        [one] if one.capture.is_none() => Some(HostSite {
            frame: one.site.clone(),
            from: origin_of_launch(inputs, one),
            how: RECORDED_LAUNCH.into(),
        }),
        _ => None,
    }
}

/// The places the launch recorder saw the kernel launched from, when there are several (then
/// none is the launch site: one of them launched the faulting one), as `file:line`.
pub(super) fn recorded_candidates(inputs: &[Evidence], pid: Option<u32>, kernel: &str) -> Vec<String> {
    let places = recorded_places(inputs, pid, &names::kernel_key(kernel));
    let mut at: Vec<String> = places.iter().map(|p| frame_at(&p.site)).collect();
    at.sort();
    at.dedup();
    if at.len() > 1 {
        at
    } else {
        Vec::new()
    }
}

/// Whether the launch recorder saw the kernel launched only inside graph captures: then it ran
/// in a replay.
pub(super) fn only_captured(inputs: &[Evidence], pid: Option<u32>, kernel: &str) -> bool {
    let places = recorded_places(inputs, pid, &names::kernel_key(kernel));
    !places.is_empty() && places.iter().all(|p| p.capture.is_some())
}

fn origin_of_launch(inputs: &[Evidence], l: &RecordedLaunch) -> String {
    inputs.iter().find(|e| e.recorded_launches.contains(l)).map(|e| e.origin.clone()).unwrap_or_default()
}

/// Where a kernel that ran in a CUDA graph replay (`replayed`) was put into the graph: its one
/// launch inside a capture (the launch recorder), else the start of the process's only capture
/// (the recorder, for a kernel it does not see launched: PyTorch's own), else, for a native
/// binary, its only launch of the kernel (the disassembly: the captured `<<<...>>>`).
pub(super) fn pick_captured(
    inputs: &[Evidence],
    pid: Option<u32>,
    kernel: &str,
    replayed: bool,
) -> Option<HostSite> {
    let key = &names::kernel_key(kernel);
    let places = recorded_places(inputs, pid, key);
    let captured: Vec<&&RecordedLaunch> = places.iter().filter(|p| p.capture.is_some()).collect();
    if let [one] = captured[..] {
        return Some(HostSite {
            frame: one.site.clone(),
            from: origin_of_launch(inputs, one),
            how: format!(
                "{RECORDED_CAPTURE} (the capture began at {})",
                one.capture.as_ref().map(frame_at).unwrap_or_default()
            ),
        });
    }
    if !replayed || !captured.is_empty() {
        return None;
    }
    if places.is_empty() {
        let mut begun: Vec<(&Frame, &str)> = Vec::new();
        for e in inputs {
            for c in e.recorded_captures.iter().filter(|c| pid.is_none_or(|p| p == c.pid)) {
                if !begun.iter().any(|(f, _)| *f == &c.site) {
                    begun.push((&c.site, &e.origin));
                }
            }
        }
        if let [(frame, from)] = begun[..] {
            return Some(HostSite {
                frame: frame.clone(),
                from: from.to_string(),
                how: CAPTURE_BEGAN.into(),
            });
        }
    }
    inputs.iter().find_map(|e| {
        launch_sites::only_site(&e.static_launches, key).map(|s| HostSite {
            frame: s.site.clone(),
            from: e.origin.clone(),
            how: STATIC_CAPTURE.into(),
        })
    })
}

/// `file:line` of a frame (`?` where unknown).
pub(super) fn frame_at(f: &Frame) -> String {
    format!("{}:{}", f.file.as_deref().unwrap_or("?"), f.line.map(|l| l.to_string()).unwrap_or("?".into()))
}

/// How a launch site read from the binary is named: a fact about the code, not a run's stack.
pub const STATIC_LAUNCH: &str =
    "the only launch of this kernel in the binary (its disassembly), not a stack of the run";

/// Where the error surfaced on the host, from the runs whose launches were asynchronous: the
/// traceback's (or the faulthandler stack's, [`of_a_fault`]) user frame, the program's own
/// `CUDA error at FILE:LINE`, or the thread that was inside a CUDA call.
pub(super) fn pick_surfaced(symptoms: &[Located<Symptom>], inputs: &[Evidence]) -> Option<HostSite> {
    let how = "asynchronous: a later call reported it, not the launch";
    let asynchronous = |origin: &str| !inputs.iter().any(|e| e.launch_blocking && e.origin == origin);
    for s in symptoms.iter().filter(|s| asynchronous(&s.origin) && of_a_fault(s, inputs)) {
        let frame = s.item.user_frame().filter(|f| !is_runtime_frame(f)).cloned().or_else(|| {
            // PyTorch names its own check (`c10/cuda/CUDAEvent.h:111`): not the user's line.
            let at = s.item.reported_at.as_ref().filter(|l| !names::is_toolkit_source(&l.file));
            at.map(|l| Frame {
                function: s.item.call.clone(),
                file: Some(l.file.clone()),
                line: Some(l.line),
                ..Frame::default()
            })
        });
        if let Some(frame) = frame {
            let how = if faulthandler::is_stack(&s.item) { FATAL_SURFACED } else { how };
            return Some(HostSite { frame, from: s.origin.clone(), how: how.into() });
        }
    }
    inputs.iter().filter(|e| !e.launch_blocking).find_map(|e| {
        e.host_stacks.iter().filter(|st| st.launch_api.is_none() && st.api.is_some()).find_map(|st| {
            let frame = st.frames.iter().find(|f| !is_runtime_frame(f) && f.file.is_some())?.clone();
            Some(HostSite { frame, from: e.origin.clone(), how: how.into() })
        })
    })
}

/// Whether a position is in the user's own sources: inside one of the user's trees (`roots`,
/// absolute folders), or outside the toolkit's and the libraries' sources.
pub(super) fn is_users(l: &SourceLoc, roots: &[String]) -> bool {
    let under = |r: &String| {
        let r = r.trim_end_matches('/');
        !r.is_empty() && l.file.starts_with(r) && l.file.as_bytes().get(r.len()) == Some(&b'/')
    };
    // A virtual environment inside the project is still the libraries'.
    let installed = l.file.contains("/site-packages/") || l.file.contains("/dist-packages/");
    (roots.iter().any(under) && !installed) || !names::is_toolkit_source(&l.file)
}

/// The user's line in a chain: the innermost position in the user's sources, else (library
/// code all the way, `true`) the innermost position.
pub(super) fn user_loc<'a>(chain: &'a [SourceLoc], roots: &[String]) -> Option<(&'a SourceLoc, bool)> {
    chain.iter().find(|l| is_users(l, roots)).map(|l| (l, false)).or(chain.first().map(|l| (l, true)))
}

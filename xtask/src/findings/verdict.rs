//! The verdict: merges the findings of every rung (every input file) into one answer —
//! the faulting kernel, the source line, the error, block and thread, the bad address,
//! the first user frame on the host — and says which inputs support it and where they
//! disagree. When no tool located a fault there is no verdict: this module never guesses.
//! A GPU dump with kernels running and no exception (a user-triggered dump of a program that
//! never returned) gives a verdict of class `hang` instead: the kernel and the user's line where
//! its threads spin, the threads grouped by line, each process's host stack (py-spy, the CPU
//! core) and the NCCL collectives not completed.
//!
//! Pure: takes [`Evidence`] values, returns an [`Analysis`]. No I/O, no printing.

use std::collections::{HashMap, HashSet};

use super::verdict_hang::{divergent_barrier, focus_line, hang_groups, hang_without_kernel, host_waits};
pub use super::verdict_hang::{
    group_text, host_frame_text, Hang, HangGroup, HangProcess, HostWait, NcclStuck,
};
pub use super::verdict_kinds::OtherFault;
use super::verdict_kinds::{library_of, same_assert, snapshots_of_triggered_dumps};
pub use super::verdict_model::{Analysis, InputSummary, Part, Reproduced, Verdict};
use super::verdict_sites::{
    frame_at, is_tail, keys_match, only_captured, pick_captured, pick_launch_site, pick_surfaced,
    recorded_candidates, recorded_launch_site, related_inputs, static_launch_site, user_loc,
};
pub use super::verdict_sites::{HostSite, Located, STATIC_LAUNCH};
use super::{
    hazards, names, ranks, Access, Dim3, ErrorClass, Evidence, Fault, Frame, SourceLoc, Symptom, Tool,
};

/// The verdict's kernel as compute-sanitizer's `--kernel-name kns=` takes it: a substring of
/// the mangled name. The mangled name a tool printed for it; else its unqualified identifier
/// (`apply_offsets` of `apply_offsets(float*, ...)`, `nll_loss_forward_reduce_cuda_kernel_2d` of
/// `at::native::...::nll_loss_forward_reduce_cuda_kernel_2d<float, ...>(...)`), which an
/// Itanium-mangled name holds verbatim and a Triton or `extern "C"` kernel's name is; none for
/// an identifier too short to single a kernel out.
pub fn kernel_filter(a: &Analysis) -> Option<String> {
    let v = a.verdict.as_ref()?;
    let key = names::kernel_key(&v.kernel);
    let mangled = a.findings.iter().find_map(|f| {
        let k = f.item.kernel.as_deref()?;
        let m = f.item.mangled.as_ref().filter(|m| m.starts_with("_Z"))?;
        keys_match(&names::kernel_key(k), &key).then(|| m.clone())
    });
    mangled.or_else(|| {
        let ident = key.rsplit("::").next().unwrap_or(&key);
        let ok = ident.len() >= 4 && ident.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        ok.then(|| ident.to_string())
    })
}

/// How much a finding from a tool is worth when locating a fault. cuda-gdb's
/// `The exception was triggered at PC` is the hardware's own word; memcheck watched the
/// access; PyTorch's assert line names the line that failed; the coredump progress stream
/// names only the kernel.
fn weight(f: &Fault) -> u32 {
    let located = f.location.is_some();
    match f.tool {
        Some(Tool::CudaGdb) if located => 50,
        Some(Tool::Memcheck | Tool::MemcheckXml) if located => 40,
        Some(Tool::Host) if located => 35,
        Some(Tool::CudaGdb) => 20,
        Some(Tool::Memcheck | Tool::MemcheckXml) => 15,
        Some(Tool::Coredump) => 10,
        _ => 5,
    }
}

/// The kernel a fault happened in: for memcheck records in inlined code, the outermost
/// device frame is the `__global__` function; otherwise the kernel as printed.
fn kernel_of(f: &Fault) -> Option<&str> {
    if matches!(f.tool, Some(Tool::Memcheck | Tool::MemcheckXml)) {
        // The outermost device frame is the kernel, except for the assert machinery
        // (`__assertfail`), which a warp assert reports as its only frame.
        if let Some(outer) =
            f.frames.iter().rev().filter_map(|fr| fr.function.as_deref()).find(|n| !n.starts_with("__assert"))
        {
            return Some(outer);
        }
    }
    f.kernel.as_deref()
}

/// True when two printed kernel names denote the same kernel: equal comparison keys, or
/// one is the other's unqualified tail (`nll_loss_forward_reduce_cuda_kernel_2d` from
/// PyTorch's assert line vs `at::native::(anonymous namespace)::nll_loss_...` from cuda-gdb).
pub fn same_kernel(a: &str, b: &str) -> bool {
    keys_match(&names::kernel_key(a), &names::kernel_key(b))
}

/// Faults clustered by kernel, in order of first appearance. A cluster is founded by a name,
/// and a fault joins the first cluster whose founding key [`keys_match`] its own.
///
/// Linear in the total length of the keys, however many distinct kernels there are: each
/// key is computed once, and the clusters are found through hashes of whole founding keys
/// and of every part after a `::` in them (a rolling hash, so a key with many `::` costs
/// its length once), each candidate checked on the strings themselves.
struct Clusters {
    /// (founding name, its key, members).
    list: Vec<(String, String, Vec<usize>)>,
    /// Hash of a founding key -> the clusters with a key of that hash, in order.
    whole: HashMap<u64, Vec<usize>>,
    /// Hash of each part after a `::` of a founding key -> the clusters, in order.
    tails: HashMap<u64, Vec<usize>>,
    base: u64,
}

/// 2^61 - 1, the modulus of the rolling hash.
const MERSENNE_61: u64 = (1 << 61) - 1;

impl Clusters {
    fn new() -> Clusters {
        use std::hash::BuildHasher as _;
        // A random base per run: no input can be made to collide on purpose.
        let base = std::collections::hash_map::RandomState::new().hash_one(0x9e37_79b9_u64) % MERSENNE_61;
        Clusters { list: Vec::new(), whole: HashMap::new(), tails: HashMap::new(), base: base.max(257) }
    }

    /// `h[i]` is the hash of `key[i..]`, for every `i` up to `key.len()` (where it is 0).
    fn suffix_hashes(&self, key: &str) -> Vec<u64> {
        let b = key.as_bytes();
        let mut h = vec![0u64; b.len() + 1];
        for i in (0..b.len()).rev() {
            let v = (u128::from(h[i + 1]) * u128::from(self.base) + u128::from(b[i]) + 1)
                % u128::from(MERSENNE_61);
            h[i] = v as u64;
        }
        h
    }

    /// The byte offsets just after each `::` of a key (overlapping ones included).
    fn tail_starts(key: &str) -> impl Iterator<Item = usize> + '_ {
        key.as_bytes().windows(2).enumerate().filter(|(_, w)| w == b"::").map(|(p, _)| p + 2)
    }

    /// Adds finding `i`, named `name` with key `key`, to its cluster, or founds one.
    fn add(&mut self, i: usize, name: &str, key: String) {
        let h = self.suffix_hashes(&key);
        let first = |map: &HashMap<u64, Vec<usize>>, hash: u64, fits: &dyn Fn(&str) -> bool| {
            map.get(&hash).and_then(|cs| cs.iter().copied().find(|&c| fits(&self.list[c].1)))
        };
        // Equal keys; this key a tail of the founding key; the founding key a tail of this one.
        let mut found = first(&self.whole, h[0], &|ck| ck == key);
        let mut consider = |c: Option<usize>| {
            if let Some(c) = c {
                found = Some(found.map_or(c, |f: usize| f.min(c)));
            }
        };
        consider(first(&self.tails, h[0], &|ck| is_tail(ck, &key)));
        for p in Self::tail_starts(&key) {
            consider(first(&self.whole, h[p], &|ck| ck == &key[p..]));
        }
        match found {
            Some(c) => self.list[c].2.push(i),
            None => {
                let c = self.list.len();
                self.whole.entry(h[0]).or_default().push(c);
                for p in Self::tail_starts(&key) {
                    let tails = self.tails.entry(h[p]).or_default();
                    if tails.last() != Some(&c) {
                        tails.push(c);
                    }
                }
                self.list.push((name.to_string(), key, vec![i]));
            }
        }
    }
}

/// Whether two positions name the same line: same line number and the same file, where
/// one tool may print a full path and the other only the file name.
fn same_loc(a: &SourceLoc, b: &SourceLoc) -> bool {
    a.line == b.line && (a.file == b.file || names::base_name(&a.file) == names::base_name(&b.file))
}

/// The positions of a fault, innermost first: the faulting line, then the lines it was
/// inlined into (cuda-gdb's `inlined from`, memcheck's device frames).
fn chain(f: &Fault) -> Vec<SourceLoc> {
    let mut out: Vec<SourceLoc> = Vec::new();
    let mut push = |l: SourceLoc| {
        if !out.iter().any(|o| same_loc(o, &l)) {
            out.push(l);
        }
    };
    if !f.inlined.is_empty() {
        for l in &f.inlined {
            push(l.clone());
        }
    }
    if let Some(l) = &f.location {
        push(l.clone());
    }
    if matches!(f.tool, Some(Tool::Memcheck | Tool::MemcheckXml)) {
        for fr in &f.frames {
            if let (Some(file), Some(line)) = (&fr.file, fr.line) {
                push(SourceLoc { file: file.clone(), line });
            }
        }
    }
    out
}

/// Merges the evidence of every input into an analysis, with no tree of the user's known.
pub fn decide(inputs: &[Evidence]) -> Analysis {
    decide_in(inputs, &[])
}

/// Merges the evidence of every input into an analysis. `roots` are the user's own source
/// trees (absolute): there, CUTLASS, CUB or ATen files are the user's lines too. In named
/// passes: the findings located, clustered by kernel and one cluster chosen ([`winner`]), its
/// place ([`Merge::place`]), the faulting thread and access ([`Merge::who`]), the host sites
/// ([`Merge::sites`]), what disagrees ([`Merge::disagreements`]), the remarks
/// ([`Merge::remarks`]), the parts left unknown ([`parts`]), then the ranks' triage and the
/// kernel's origin ([`finish`]).
pub fn decide_in(inputs: &[Evidence], roots: &[String]) -> Analysis {
    let promoted = snapshots_of_triggered_dumps(inputs);
    let inputs = &promoted[..];
    let mut findings: Vec<Located<Fault>> = Vec::new();
    let mut symptoms: Vec<Located<Symptom>> = Vec::new();
    for ev in inputs {
        findings.extend(ev.faults.iter().map(|f| Located { origin: ev.origin.clone(), item: f.clone() }));
        symptoms.extend(ev.symptoms.iter().map(|s| Located { origin: ev.origin.clone(), item: s.clone() }));
    }
    let summaries = inputs.iter().map(summarise).collect();
    let clusters = clusters_of(&findings);
    let Some(win) = winner(&findings, &clusters) else {
        let (verdict, conclusion) = match hang_verdict(inputs, roots) {
            Some((v, c)) => (Some(v), c),
            None => {
                let mut conclusion = no_verdict_reason(&symptoms, inputs);
                if let Some(more) = hang_without_kernel(inputs) {
                    conclusion = format!("{conclusion}. {more}");
                }
                (None, conclusion)
            }
        };
        return Analysis { verdict, conclusion, findings, symptoms, inputs: summaries, reproduced: None };
    };
    let m = Merge { inputs, roots, findings: &findings, symptoms: &symptoms, clusters: &clusters, win };
    let place = m.place();
    let who = m.who(&place);
    let sites = m.sites(&place.kernel, who.pid);
    let (rungs, disagreements, others) = m.disagreements(place.user.as_ref());
    let library = match place.user {
        None => library_of(&place.kernel, m.faults()),
        Some(_) => None,
    };
    let remarks = m.remarks(&place, &who, &sites, library.as_deref());
    let (unknown, not_applicable, conclusion) =
        parts(&place, &who.error, sites.launch_site.as_ref(), library.as_deref());
    let hazard = hazards::of_faults(&who.error, m.faults());
    let verdict = Verdict {
        kernel: place.kernel,
        file: place.user.as_ref().map(|l| l.file.clone()),
        line: place.user.as_ref().map(|l| l.line),
        meaning: who.error.meaning(),
        error: who.error,
        block: who.block,
        thread: who.thread,
        device: who.device,
        pid: who.pid,
        rank: who.rank,
        access: who.access,
        inlined: place.inlined,
        library_line: place.library_line,
        launch_site: sites.launch_site,
        surfaced_at: sites.surfaced_at,
        captured_at: sites.captured_at,
        unknown,
        not_applicable,
        library,
        others,
        rungs,
        disagreements,
        remarks,
        hang: None,
        ranks: None,
        hazard,
        origin: None,
    };
    let (verdict, conclusion) = finish(verdict, conclusion, inputs);
    Analysis { verdict: Some(verdict), conclusion, findings, symptoms, inputs: summaries, reproduced: None }
}

/// The faults clustered by kernel (an assert's message joins the dump of it: its kernel is
/// the one launched), in the order first seen. Only faults that name a kernel are in one.
fn clusters_of(findings: &[Located<Fault>]) -> Vec<(String, Vec<usize>)> {
    let mut index = Clusters::new();
    let pairs: Vec<(&str, &Fault)> = findings.iter().map(|f| (f.origin.as_str(), &f.item)).collect();
    let same = same_assert(&pairs);
    for (i, f) in findings.iter().enumerate() {
        let named = same[i].map(|j| &findings[j].item).unwrap_or(&f.item);
        let Some(k) = kernel_of(named) else { continue };
        index.add(i, k, names::kernel_key(k));
    }
    index.list.into_iter().map(|(k, _, m)| (k, m)).collect()
}

/// The cluster the verdict is of: the one with the most weight (each input counted once, by
/// its best finding), ties going to the one seen first; but in program order a kernel a
/// sanitizer located comes first when the heaviest was seen by no sanitizer (a sanitizer
/// reports each bad access and goes on, where cuda-gdb and the coredump see only the fault
/// that ended the run).
fn winner(findings: &[Located<Fault>], clusters: &[(String, Vec<usize>)]) -> Option<usize> {
    let cluster_weight = |members: &[usize]| -> u32 {
        let mut best: Vec<(&str, u32)> = Vec::new();
        for &i in members {
            let w = weight(&findings[i].item);
            match best.iter_mut().find(|(o, _)| *o == findings[i].origin) {
                Some(b) => b.1 = b.1.max(w),
                None => best.push((&findings[i].origin, w)),
            }
        }
        best.iter().map(|b| b.1).sum()
    };
    let heaviest = clusters
        .iter()
        .enumerate()
        .max_by_key(|(idx, (_, m))| (cluster_weight(m), std::cmp::Reverse(*idx)))
        .map(|(idx, _)| idx);
    let sanitized = |m: &[usize]| {
        m.iter().any(|&i| {
            let f = &findings[i].item;
            matches!(f.tool, Some(Tool::Memcheck | Tool::MemcheckXml)) && f.location.is_some()
        })
    };
    match heaviest {
        Some(w) if !sanitized(&clusters[w].1) => clusters.iter().position(|(_, m)| sanitized(m)).or(Some(w)),
        w => w,
    }
}

/// The merge of one cluster of findings (the verdict's kernel) with everything else read.
struct Merge<'a> {
    inputs: &'a [Evidence],
    roots: &'a [String],
    findings: &'a [Located<Fault>],
    symptoms: &'a [Located<Symptom>],
    clusters: &'a [(String, Vec<usize>)],
    win: usize,
}

/// Where the fault is: the primary finding, the kernel's name, the user's line.
struct Placed {
    primary: usize,
    kernel: String,
    user: Option<SourceLoc>,
    library_line: bool,
    inlined: Vec<SourceLoc>,
}

/// Who faulted and how: the class, the thread, the process, the access.
struct Who {
    error: ErrorClass,
    block: Option<Dim3>,
    thread: Option<Dim3>,
    /// Block and thread are a warp's focus lane (cuda-gdb, the coredump), not memcheck's thread.
    warp_level: bool,
    device: Option<u32>,
    pid: Option<u32>,
    rank: Option<u32>,
    access: Option<Access>,
}

/// The host's side: the launch, the graph capture, where the error surfaced.
struct Sites {
    launch_site: Option<HostSite>,
    captured_at: Option<HostSite>,
    surfaced_at: Option<HostSite>,
    replayed: bool,
    /// The inputs of the kernel's own runs: host frames come only from these.
    related: Vec<Evidence>,
}

impl<'a> Merge<'a> {
    fn members(&self) -> &'a [usize] {
        &self.clusters[self.win].1
    }

    fn faults(&self) -> impl Iterator<Item = &'a Fault> + Clone + 'a {
        let findings = self.findings;
        self.members().iter().map(move |&i| &findings[i].item)
    }

    /// The primary finding (the heaviest; among equals, the first), the kernel's display name
    /// (the longest demangled name a member gives: cuda-gdb prints the full signature), and the
    /// primary's location chain (else any member's), each file in its fullest spelling,
    /// relative to the user's trees.
    fn place(&self) -> Placed {
        let (members, findings) = (self.members(), self.findings);
        let primary = *members
            .iter()
            .max_by_key(|&&i| (weight(&findings[i].item), std::cmp::Reverse(i)))
            .expect("a cluster has members");
        let kernel = self
            .faults()
            .filter_map(kernel_of)
            .max_by_key(|k| (k.contains('('), names::display_kernel(k).len()))
            .map(names::display_kernel)
            .unwrap_or_default();
        let mut loc_chain = chain(&findings[primary].item);
        if loc_chain.is_empty() {
            if let Some(m) = self.faults().filter(|f| f.location.is_some()).max_by_key(|f| weight(f)) {
                loc_chain = chain(m);
            }
        }
        let (user, library_line) = match user_loc(&loc_chain, self.roots) {
            Some((l, lib)) => (Some(l.clone()), lib),
            None => (None, false),
        };
        let spelt: Vec<String> = self.faults().flat_map(chain).map(|l| l.file).collect();
        let canonical = |l: &SourceLoc| SourceLoc {
            file: names::relative_to_roots(
                names::fullest(&l.file, spelt.iter().map(String::as_str)),
                self.roots,
            ),
            line: l.line,
        };
        let user = user.as_ref().map(canonical);
        let inlined =
            if loc_chain.len() > 1 { loc_chain.iter().map(canonical).collect() } else { Vec::new() };
        Placed { primary, kernel, user, library_line, inlined }
    }

    /// The class (the program's message only with one kernel at fault), block and thread
    /// (memcheck's very thread where it saw the kernel, else the primary's warp focus), device,
    /// process and rank (the fault's, else the one rank whose program reported a device error),
    /// and one record's access, whole: never fields of one record with another's.
    fn who(&self, place: &Placed) -> Who {
        let primary = &self.findings[place.primary].item;
        let error_symptoms = if self.clusters.len() > 1 { &[][..] } else { self.symptoms };
        let error = pick_error(self.faults(), error_symptoms);
        let pick =
            |get: &dyn Fn(&Fault) -> Option<Dim3>| get(primary).or_else(|| self.faults().find_map(get));
        let sanitizer = self
            .faults()
            .filter(|f| matches!(f.tool, Some(Tool::Memcheck | Tool::MemcheckXml)) && f.thread.is_some())
            .enumerate()
            .max_by_key(|(n, f)| {
                let a = f.access.as_ref();
                (
                    a.is_some_and(|a| a.nearest.is_some()),
                    a.is_some_and(|a| a.address.is_some()),
                    std::cmp::Reverse(*n),
                )
            })
            .map(|(_, f)| f);
        let (block, thread) = match sanitizer {
            Some(f) => (f.block, f.thread),
            None => (pick(&|f| f.block), pick(&|f| f.thread)),
        };
        let warp_level = sanitizer.is_none()
            && matches!(primary.tool, Some(Tool::CudaGdb | Tool::Coredump))
            && thread.is_some();
        let rank = self.faults().find_map(|f| f.rank).or_else(|| {
            let mut ranks: Vec<u32> = self
                .symptoms
                .iter()
                .filter(|s| s.item.error.as_ref().is_some_and(ErrorClass::is_device_fault))
                .filter_map(|s| s.item.rank)
                .collect();
            ranks.sort_unstable();
            ranks.dedup();
            (ranks.len() == 1).then(|| ranks[0])
        });
        let access =
            sanitizer.and_then(|f| f.access.clone()).or_else(|| primary.access.clone()).or_else(|| {
                self.faults()
                    .filter_map(|f| f.access.clone())
                    .max_by_key(|a| (a.nearest.is_some(), a.address.is_some()))
            });
        Who {
            error,
            block,
            thread,
            warp_level,
            device: primary.device.or_else(|| self.faults().find_map(|f| f.device)),
            pid: self.faults().find_map(|f| f.pid),
            rank,
            access,
        }
    }

    /// The launch, capture and surfacing sites, from the inputs of the kernel's own runs only
    /// (never a traceback of another program in the same folder), each file relative to the
    /// user's trees as the device line is.
    fn sites(&self, kernel: &str, pid: Option<u32>) -> Sites {
        let member_origins: HashSet<&str> =
            self.members().iter().map(|&i| self.findings[i].origin.as_str()).collect();
        let related = related_inputs(self.inputs, &member_origins, &names::kernel_key(kernel));
        let inputs_related: Vec<Evidence> =
            self.inputs.iter().filter(|e| related.contains(e.origin.as_str())).cloned().collect();
        let symptoms_related: Vec<Located<Symptom>> =
            self.symptoms.iter().filter(|s| related.contains(s.origin.as_str())).cloned().collect();
        let replayed = graph_replay(self.findings, self.symptoms, &inputs_related)
            || only_captured(&inputs_related, pid, kernel);
        let launch_site =
            pick_launch_site(self.faults(), &symptoms_related, &inputs_related, kernel, replayed);
        let captured_at = pick_captured(&inputs_related, pid, kernel, replayed);
        let surfaced_at = pick_surfaced(&symptoms_related, &inputs_related);
        let in_roots = |mut h: HostSite| {
            if let Some(f) = h.frame.file.take() {
                h.frame.file = Some(names::relative_to_roots(&f, self.roots));
            }
            h
        };
        Sites {
            launch_site: launch_site.map(in_roots),
            captured_at: captured_at.map(in_roots),
            surfaced_at: surfaced_at.map(in_roots),
            replayed,
            related: inputs_related,
        }
    }

    /// The rungs the verdict rests on (inputs are `rung/file`), the members that place the
    /// fault elsewhere, and the other kernels at fault.
    fn disagreements(&self, user: Option<&SourceLoc>) -> (Vec<String>, Vec<String>, Vec<OtherFault>) {
        let (members, findings) = (self.members(), self.findings);
        let mut rungs: Vec<String> = Vec::new();
        for &i in members {
            let rung = findings[i].origin.split('/').next().unwrap_or_default().to_string();
            if !rungs.contains(&rung) {
                rungs.push(rung);
            }
        }
        let mut disagreements = Vec::new();
        let mut said = HashSet::new();
        for (&i, u) in user.into_iter().flat_map(|u| members.iter().map(move |i| (i, u))) {
            let f = &findings[i].item;
            let c = chain(f);
            if let Some((fl, _)) = user_loc(&c, self.roots) {
                if !c.iter().any(|l| same_loc(l, u)) {
                    let s = format!(
                        "{} ({}) places the fault at {fl}",
                        findings[i].origin,
                        f.tool.map(Tool::as_str).unwrap_or("?")
                    );
                    if said.insert(s.clone()) {
                        disagreements.push(s);
                    }
                }
            }
        }
        let others = other_faults(findings, self.clusters, self.win, &mut disagreements);
        (rungs, disagreements, others)
    }

    /// What a reader should know: a graph replay, the recorder's several launch places, a
    /// shutdown's false positive, a warp's focus lane, a library's line or kernel, a missing
    /// line, a trap's offset, a crashed debugger.
    fn remarks(&self, place: &Placed, who: &Who, sites: &Sites, library: Option<&str>) -> Vec<String> {
        let kernel = &place.kernel;
        let mut remarks = Vec::new();
        if sites.replayed {
            remarks.push(match &sites.captured_at {
                Some(c) => format!(
                    "the kernel ran inside a CUDA graph replay: the host stack of the fault points at the replay; \
                     it was captured into the graph at {}",
                    frame_at(&c.frame)
                ),
                None => "the kernel ran inside a CUDA graph replay: `CUDA_LAUNCH_BLOCKING=1` cannot see inside a \
                         graph, so the host traceback points at the replay, not at a launch"
                    .to_string(),
            });
        }
        let candidates = recorded_candidates(&sites.related, who.pid, kernel);
        if !candidates.is_empty()
            && sites.launch_site.as_ref().is_none_or(|h| h.how != super::verdict_sites::FATAL_LAUNCH)
        {
            remarks.push(format!(
                "the launch recorder saw this kernel launched from {} places: {}; one of them launched the faulting \
                 one (a launch-blocking run tells which)",
                candidates.len(),
                candidates.join(", ")
            ));
        }
        if shutdown_false_positive(kernel, self.symptoms) {
            remarks.push(
                "likely a known false positive: an illegal address in a communication kernel while the \
                 job was shutting down (peer memory already unmapped). Check whether the work had finished; \
                 a fault during the run itself is not explained by this"
                    .to_string(),
            );
        }
        if who.warp_level && who.error != ErrorClass::DeviceAssert {
            remarks.push(
                "block and thread are cuda-gdb's focus in the faulting warp (its first active lane); \
                 memcheck names the exact thread"
                    .to_string(),
            );
        }
        if place.library_line {
            remarks.push(
                "the device line is in library or toolkit code, not in your sources: the launch site is \
                 where your code called it"
                    .to_string(),
            );
        }
        match (&place.user, library) {
            (None, Some(lib)) => remarks.push(format!(
                "`{}` is a precompiled kernel of {lib}: it has no source line, and no rebuild gives one; \
                 the line that matters is your call into the library (launched), and the buffer it was given",
                names::kernel_key(kernel)
            )),
            (None, None) => remarks.push(format!(
                "{}: rebuild with `-lineinfo` (or `-G`) and rerun the coredump or memcheck rung",
                super::verdict_model::NO_LINE
            )),
            _ => {}
        }
        if let (ErrorClass::Trap, Some(l)) = (&who.error, &place.user) {
            remarks.push(format!(
                "a trap is reported at the instruction after it: the `__trap()` (or failed check) is at or just \
                 before {l}"
            ));
        }
        for ev in self.inputs.iter().filter(|ev| ev.debugger_crashed) {
            remarks.push(format!(
                "cuda-gdb crashed in {}; what it printed before the crash was kept",
                ev.origin
            ));
        }
        remarks
    }
}

/// The parts no input established (unknown) or that cannot exist (a library kernel's line),
/// and the conclusion in one sentence.
fn parts(
    place: &Placed,
    error: &ErrorClass,
    launch_site: Option<&HostSite>,
    library: Option<&str>,
) -> (Vec<Part>, Vec<Part>, String) {
    let kernel = &place.kernel;
    let mut unknown = Vec::new();
    let mut not_applicable = Vec::new();
    match (&place.user, library) {
        (None, Some(_)) => not_applicable.push(Part::SourceLine),
        (None, None) => unknown.push(Part::SourceLine),
        _ => {}
    }
    if matches!(error, ErrorClass::Other(_)) {
        unknown.push(Part::Class);
    }
    // A launch site without a line (a binary without host debug info: `main in app`) names
    // the function, not the line: the line stays unknown.
    if launch_site.is_none_or(|h| h.frame.line.is_none()) {
        unknown.push(Part::LaunchSite);
    }
    let conclusion = match (&place.user, library) {
        (Some(l), _) => format!("{} in `{kernel}` at {l}", error.as_str()),
        (None, Some(lib)) => format!("{} in `{kernel}`, a kernel of {lib} (no source line)", error.as_str()),
        (None, None) => format!("{} in `{kernel}` (source line unknown)", error.as_str()),
    };
    (unknown, not_applicable, conclusion)
}

/// The last passes: the triage across ranks (the verdict's rank where only it could tell, and
/// a remark when another rank faulted first, in another kernel), then the kernel's origin.
fn finish(verdict: Verdict, conclusion: String, inputs: &[Evidence]) -> (Verdict, String) {
    let triage = ranks::triage(
        inputs,
        &ranks::Established {
            kernel: &verdict.kernel,
            error: &verdict.error,
            rank: verdict.rank,
            pid: verdict.pid,
            device: verdict.device,
        },
    );
    let rank = verdict.rank.or_else(|| {
        let c = &triage.as_ref()?.culprit;
        (c.kernel.as_deref() == Some(verdict.kernel.as_str())).then_some(c.rank)
    });
    let mut remarks = verdict.remarks;
    if let Some(c) = triage
        .as_ref()
        .map(|t| &t.culprit)
        .filter(|c| c.kernel.as_deref().is_some_and(|k| k != verdict.kernel))
    {
        remarks.push(format!(
            "rank {} faulted first, in {}; this kernel's fault is another rank's, later",
            c.rank,
            c.kernel.as_deref().unwrap_or_default()
        ));
    }
    let verdict = Verdict { rank, ranks: triage, remarks, ..verdict };
    super::origin::attach(verdict, conclusion, inputs)
}

/// The faults of the clusters other than the verdict's (`win`), one per kernel, in order of
/// support (ties: first seen); each also said as a disagreement for the older readers.
fn other_faults(
    findings: &[Located<Fault>],
    clusters: &[(String, Vec<usize>)],
    win: usize,
    disagreements: &mut Vec<String>,
) -> Vec<OtherFault> {
    let mut ranked: Vec<(u32, usize, OtherFault)> = Vec::new();
    for (ci, (k, m)) in clusters.iter().enumerate().filter(|(ci, _)| *ci != win) {
        let mut from: Vec<String> = Vec::new();
        let mut best: Vec<(&str, u32)> = Vec::new();
        for &i in m {
            let o = findings[i].origin.as_str();
            if !from.iter().any(|f| f == o) {
                from.push(o.to_string());
            }
            let w = weight(&findings[i].item);
            match best.iter_mut().find(|(b, _)| *b == o) {
                Some(b) => b.1 = b.1.max(w),
                None => best.push((o, w)),
            }
        }
        let loc = m
            .iter()
            .map(|&i| &findings[i].item)
            .filter(|f| f.location.is_some())
            .max_by_key(|f| weight(f))
            .and_then(|f| f.location.clone());
        let at = loc.as_ref().map(|l| format!(" at {l}")).unwrap_or_default();
        disagreements.push(format!(
            "{} also report{} `{}`{at}",
            from.join(", "),
            if from.len() == 1 { "s" } else { "" },
            names::display_kernel(k)
        ));
        let kernel = m
            .iter()
            .filter_map(|&i| kernel_of(&findings[i].item))
            .max_by_key(|k| (k.contains('('), names::display_kernel(k).len()))
            .map(names::display_kernel)
            .unwrap_or_else(|| names::display_kernel(k));
        let error = pick_error(m.iter().map(|&i| &findings[i].item), &[]);
        let o = OtherFault {
            kernel,
            file: loc.as_ref().map(|l| l.file.clone()),
            line: loc.map(|l| l.line),
            error,
            from,
        };
        ranked.push((best.iter().map(|b| b.1).sum(), ci, o));
    }
    ranked.sort_by_key(|(w, ci, _)| (std::cmp::Reverse(*w), *ci));
    ranked.into_iter().map(|(_, _, o)| o).collect()
}

/// A verdict of class `hang`: from the first GPU dump (in input order) with threads running
/// and no exception. `None` when no input has one.
fn hang_verdict(inputs: &[Evidence], roots: &[String]) -> Option<(Verdict, String)> {
    let primary = inputs.iter().flat_map(|e| &e.snapshots).find(|s| {
        !s.threads.is_empty()
                || s.kernels.iter().any(|k| k.status.as_deref() == Some("Active"))
                // A session of a dump the tool triggered, without its threads table.
                || (s.kernel.is_some() && !s.no_threads)
    })?;
    let spelt: Vec<String> = inputs
        .iter()
        .flat_map(|e| &e.snapshots)
        .flat_map(|s| {
            s.chain.iter().map(|l| l.file.clone()).chain(s.threads.iter().filter_map(|g| g.file.clone()))
        })
        .collect();
    let canonical = |l: &SourceLoc| SourceLoc {
        file: names::relative_to_roots(names::fullest(&l.file, spelt.iter().map(String::as_str)), roots),
        line: l.line,
    };
    let kernel = primary
        .kernel
        .as_deref()
        .or_else(|| primary.kernels.iter().find(|k| k.focus).map(|k| k.invocation.as_str()))
        .map(names::display_kernel)
        .unwrap_or_else(|| "?".to_string());
    let (user, library_line) = match focus_line(primary, roots) {
        Some((l, lib)) => (Some(canonical(&l)), lib),
        None => (None, false),
    };
    let inlined: Vec<SourceLoc> =
        if primary.chain.len() > 1 { primary.chain.iter().map(canonical).collect() } else { Vec::new() };
    let groups = hang_groups(primary, roots, &canonical);
    let barrier = divergent_barrier(primary, &groups);
    let error = if barrier.is_some() { ErrorClass::BarrierError } else { ErrorClass::Hang };

    let (processes, mut remarks) = hang_processes(inputs, roots, &canonical);

    let nccl = stuck_collectives(inputs, &mut remarks);

    let primary_host = processes.iter().find(|p| p.pid == primary.pid).is_some_and(|p| !p.host.is_empty());
    let mut unknown = Vec::new();
    if user.is_none() {
        unknown.push(Part::SourceLine);
        remarks.push(
            "cuda-gdb printed no source line for the spinning threads: rebuild with `-lineinfo` (or `-G`) and \
             rerun the hang rung"
                .to_string(),
        );
    }
    if !primary_host {
        unknown.push(Part::HostStacks);
    }
    if groups.is_empty() {
        remarks.push(
            "cuda-gdb printed no `info cuda threads` table: the dump was triggered by the tool while the \
             program ran (no exception), so this is a hang; the line is cuda-gdb's focus thread's"
                .to_string(),
        );
    }
    if groups.iter().any(|g| !g.via.is_empty()) {
        remarks.push(
            "threads whose line is in a CUDA header are counted at the user's line of cuda-gdb's focus thread \
             (its `bt` inline chain): cuda-gdb prints the chain for the focus only"
                .to_string(),
        );
    }
    if library_line {
        remarks.push("the spinning line is in library or toolkit code, not in your sources".to_string());
    }
    remarks.extend(barrier);
    remarks.push(match primary.core {
        Some(_) => {
            "a snapshot, not a fault: the dump was triggered while the kernels ran; block and thread are \
                    cuda-gdb's focus"
                .to_string()
        }
        // `debug-ima dump PID`: cuda-gdb attached to the running process, no dump.
        None => "a snapshot, not a fault: cuda-gdb attached while the kernels ran; block and thread are its \
                 focus"
            .to_string(),
    });
    for ev in inputs.iter().filter(|e| e.debugger_crashed) {
        remarks.push(format!("cuda-gdb crashed in {}; what it printed before the crash was kept", ev.origin));
    }

    let rungs = hang_rungs(inputs, &processes);
    let threads: u64 = primary.thread_count();
    let conclusion = match &user {
        Some(l) if error == ErrorClass::BarrierError => {
            format!("barrier-error: `{kernel}` hangs at the barrier at {l} ({threads} threads on the device)")
        }
        Some(l) if groups.is_empty() => format!("hang: `{kernel}` spins at {l} (threads not listed)"),
        Some(l) => format!("hang: `{kernel}` spins at {l} ({threads} threads on the device)"),
        None => format!("hang: `{kernel}` spins (source line unknown; {threads} threads on the device)"),
    };
    // A kernel that never ends has no fault to stop at: its launch line is the recorder's, or
    // the binary's only launch of it.
    let launch_site = recorded_launch_site(inputs, primary.pid, &names::kernel_key(&kernel))
        .or_else(|| static_launch_site(inputs, &kernel));
    let verdict = Verdict {
        kernel,
        file: user.as_ref().map(|l| l.file.clone()),
        line: user.as_ref().map(|l| l.line),
        meaning: error.meaning(),
        error,
        block: primary.block,
        thread: primary.thread,
        device: primary.device,
        pid: primary.pid,
        rank: primary.rank,
        access: None,
        inlined,
        library_line,
        launch_site,
        surfaced_at: None,
        captured_at: None,
        unknown,
        not_applicable: Vec::new(),
        library: None,
        others: Vec::new(),
        rungs,
        disagreements: Vec::new(),
        remarks,
        hang: Some(Hang {
            odd_one_out: super::verdict_hang::odd_one_out(&processes, &nccl),
            groups,
            processes,
            nccl,
        }),
        ranks: None,
        hazard: None,
        origin: None,
    };
    Some(super::origin::attach(verdict, conclusion, inputs))
}

/// A hang's processes: those with a dump, in input order, then py-spy's, by first appearance;
/// each with its host waits and, where a launcher placed it, its rank. Python processes with
/// nothing of the user's (a resource tracker) are left out and said in the remark returned.
fn hang_processes(
    inputs: &[Evidence],
    roots: &[String],
    canonical: &dyn Fn(&SourceLoc) -> SourceLoc,
) -> (Vec<HangProcess>, Vec<String>) {
    let mut processes: Vec<HangProcess> = Vec::new();
    for ev in inputs {
        for s in &ev.snapshots {
            if processes.iter().any(|p| p.pid.is_some() && p.pid == s.pid) {
                continue;
            }
            let running = !s.threads.is_empty();
            processes.push(HangProcess {
                pid: s.pid,
                rank: s.rank,
                dumped: true,
                kernel: running.then(|| s.kernel.as_deref().map(names::display_kernel)).flatten(),
                spinning_at: running.then(|| focus_line(s, roots).map(|(l, _)| canonical(&l))).flatten(),
                threads: s.thread_count(),
                no_kernel: s.no_threads,
                ..HangProcess::default()
            });
        }
    }
    for ev in inputs {
        for p in &ev.python {
            match processes.iter_mut().find(|h| h.pid == Some(p.pid)) {
                Some(h) => h.command = h.command.take().or(Some(p.command.clone())),
                None => processes.push(HangProcess {
                    pid: Some(p.pid),
                    command: Some(p.command.clone()),
                    ..HangProcess::default()
                }),
            }
        }
    }
    let pids: Vec<u32> = processes.iter().filter_map(|p| p.pid).collect();
    for (pid, w) in host_waits(inputs, &pids) {
        let slot = match pid {
            Some(pid) => processes.iter().position(|p| p.pid == Some(pid)),
            None => None,
        };
        let slot = slot.unwrap_or_else(|| {
            processes.push(HangProcess::default());
            processes.len() - 1
        });
        let p = &mut processes[slot];
        let dup = p.host.iter().any(|h| h.frame == w.frame && h.thread == w.thread);
        if !dup && p.host.len() < 16 {
            p.host.push(w);
        }
    }
    // A launcher's ranks (srun's tasks, ssh's ranks) said where they run and with which pid:
    // a process known only by its pid gets its rank.
    for n in inputs.iter().flat_map(|e| &e.rank_notes) {
        let Some(placed) = crate::model::launcher::placed(n.text.trim_end()) else { continue };
        let Some(pid) = placed.pid else { continue };
        if let Some(p) = processes.iter_mut().find(|p| p.pid == Some(pid) && p.rank.is_none()) {
            p.rank = Some(placed.task);
        }
    }
    // Python processes with nothing of the user's (a resource tracker): said in a remark.
    let mut remarks = Vec::new();
    let idle: Vec<String> = processes
        .iter()
        .filter(|p| !p.dumped && p.host.is_empty())
        .map(|p| match (p.pid, &p.command) {
            (Some(pid), Some(c)) => format!("{pid} (`{}`)", c.chars().take(80).collect::<String>()),
            (Some(pid), None) => pid.to_string(),
            _ => "?".to_string(),
        })
        .collect();
    processes.retain(|p| p.dumped || !p.host.is_empty());
    if !idle.is_empty() {
        remarks.push(format!("py-spy: no frame of your code in process {}", idle.join(", ")));
    }

    (processes, remarks)
}

/// The NCCL collectives a flight recorder shows not completed; a remark for a recorder whose
/// every collective completed.
fn stuck_collectives(inputs: &[Evidence], remarks: &mut Vec<String>) -> Vec<NcclStuck> {
    let mut nccl = Vec::new();
    for ev in inputs {
        let Some(t) = &ev.nccl else { continue };
        for g in &t.groups {
            if g.incomplete() > 0 {
                nccl.push(NcclStuck {
                    rank: t.rank,
                    group: g.id.clone(),
                    desc: g.desc.clone(),
                    incomplete: g.incomplete(),
                    last_completed: g.last_completed,
                    pending: g.pending.iter().take(8).cloned().collect(),
                    from: ev.origin.clone(),
                });
            }
        }
        if t.groups.iter().all(|g| g.incomplete() == 0) {
            remarks.push(format!(
                "NCCL flight recorder{}: every collective enqueued had completed ({} entries; {})",
                t.rank.map(|r| format!(" of rank {r}")).unwrap_or_default(),
                t.entries,
                ev.origin
            ));
        }
    }
    nccl
}

/// The rungs a hang verdict rests on: those with a dump, py-spy's stacks, a flight recorder, or a
/// host wait of a process.
fn hang_rungs(inputs: &[Evidence], processes: &[HangProcess]) -> Vec<String> {
    let mut rungs: Vec<String> = Vec::new();
    let host_from: HashSet<&str> = processes.iter().flat_map(|p| &p.host).map(|w| w.from.as_str()).collect();
    let supports = |e: &Evidence| {
        !e.snapshots.is_empty()
            || !e.python.is_empty()
            || e.nccl.is_some()
            || host_from.contains(e.origin.as_str())
    };
    for ev in inputs.iter().filter(|e| supports(e)) {
        let r = names::rung_of(&ev.origin).to_string();
        if !rungs.contains(&r) {
            rungs.push(r);
        }
    }
    rungs
}

/// The error class: the hardware's word (cuda-gdb, coredump) first, then the program's,
/// then memcheck's.
fn pick_error<'a>(
    members: impl Iterator<Item = &'a Fault> + Clone,
    symptoms: &[Located<Symptom>],
) -> ErrorClass {
    let by_tool = |tools: &[Tool]| {
        members
            .clone()
            .filter(|f| f.tool.is_some_and(|t| tools.contains(&t)))
            .find_map(|f| f.error.clone().filter(|e| *e != ErrorClass::LaunchFailure))
    };
    by_tool(&[Tool::CudaGdb, Tool::Coredump, Tool::Host])
        .or_else(|| {
            symptoms
                .iter()
                .filter_map(|s| s.item.error.clone())
                .find(|e| e.is_device_fault() && *e != ErrorClass::LaunchFailure)
        })
        // Among the sanitizers' records, an out-of-bounds access is the cause of an
        // uninitialised read it also caused (a read past the end into an unwritten neighbour).
        .or_else(|| {
            let sanitizer = |f: &&Fault| matches!(f.tool, Some(Tool::Memcheck | Tool::MemcheckXml));
            members
                .clone()
                .filter(sanitizer)
                .filter_map(|f| f.error.clone())
                .find(|e| *e != ErrorClass::LaunchFailure && *e != ErrorClass::UninitializedRead)
        })
        .or_else(|| by_tool(&[Tool::Memcheck, Tool::MemcheckXml]))
        .or_else(|| members.clone().find_map(|f| f.error.clone()))
        .unwrap_or(ErrorClass::Other("unknown".into()))
}

/// The multi-GPU shutdown false positive (vLLM's CUDA coredump article): a communication
/// kernel (NCCL, a custom all-reduce) touching peer memory that another process has already
/// unmapped while the job shuts down. Recognised when the kernel is a communication kernel
/// and the program reported the error from its shutdown path (`destroy_process_group`,
/// `shutdown`, `__del__`, `atexit`).
/// Per rank, the triage across ranks ([`ranks`]) flags a rank that faulted only so.
pub fn shutdown_false_positive(kernel: &str, symptoms: &[Located<Symptom>]) -> bool {
    ranks::is_communication_kernel(kernel)
        && symptoms.iter().any(|s| s.item.python_frames.iter().any(ranks::in_shutdown_path))
}

/// Whether the kernel ran in a CUDA graph replay: a host stack of the fault (memcheck's, the
/// launching thread's under launch-blocking) or the program's traceback is in the replay.
fn graph_replay(findings: &[Located<Fault>], symptoms: &[Located<Symptom>], inputs: &[Evidence]) -> bool {
    let frame_says = |f: &Frame| {
        f.function
            .as_deref()
            .is_some_and(|n| n.contains("cudaGraphLaunch") || n.contains("CUDAGraph::replay"))
    };
    findings.iter().any(|f| f.item.host_frames.iter().any(frame_says))
        || inputs.iter().filter(|e| e.launch_blocking).any(|e| {
            e.host_stacks
                .iter()
                .any(|st| st.launch_api.as_deref().is_some_and(|a| a.contains("cudaGraphLaunch")))
        })
        || symptoms.iter().any(|s| {
            s.item.call.as_deref().is_some_and(|c| c.contains("cudaGraphLaunch"))
                || s.item.python_frames.iter().any(|f| f.function.as_deref() == Some("replay"))
        })
}

fn no_verdict_reason(symptoms: &[Located<Symptom>], inputs: &[Evidence]) -> String {
    if inputs.is_empty() {
        // A bundle where no rung ran (each skipped, or the climb stopped before the first):
        // nothing was looked at, so nothing can be said about what was or was not seen.
        return NOTHING_READ.to_string();
    }
    if let Some(s) = symptoms.iter().find(|s| s.item.error.as_ref().is_some_and(|e| e.is_device_fault())) {
        return format!(
            "no verdict: {} reported `{}` but no tool located the faulting kernel; run the coredump or \
             memcheck rung (`--rungs coredump,memcheck` on the same recipe or program)",
            s.origin, s.item.message
        );
    }
    let swept: Vec<&str> = {
        let mut o: Vec<&str> = Vec::new();
        for e in inputs.iter().filter(|e| e.error_summary == Some(0)) {
            let rung = e.origin.split('/').next().unwrap_or_default();
            if !o.contains(&rung) {
                o.push(rung);
            }
        }
        o
    };
    if !swept.is_empty() {
        return format!(
            "no verdict: nothing faulted, and compute-sanitizer found no errors ({})",
            swept.join(", ")
        );
    }
    "no verdict: no CUDA error and no device fault was seen. Not every bad access faults: the \
     sweep (`--rungs memcheck,initcheck` on the same recipe or program) looks for silent ones"
        .to_string()
}

/// The conclusion when there was nothing to read: no rung ran, or none left a log.
pub const NOTHING_READ: &str = "no verdict: nothing was looked at (no rung ran, or none left a log)";

fn summarise(ev: &Evidence) -> InputSummary {
    InputSummary {
        path: ev.path.clone(),
        origin: ev.origin.clone(),
        tools: ev.tools.clone(),
        lines: ev.lines,
        bytes: ev.bytes,
        error_summary: ev.error_summary,
        waits: ev.waits.clone(),
        coredumps: ev.coredumps.clone(),
        api_errors: ev.api_errors.clone(),
        debugger_crashed: ev.debugger_crashed,
        snapshots: ev.snapshots.clone(),
        python: ev.python.clone(),
        nccl: ev.nccl.clone(),
        notes: ev.notes.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::verdict_sites::of_a_fault;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn kernels_match_across_qualification() {
        assert!(same_kernel(
            "nll_loss_forward_reduce_cuda_kernel_2d",
            "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*)"
        ));
        assert!(same_kernel("scatter_far(int *, int)", "_Z11scatter_farPii"));
        assert!(!same_kernel("scatter", "scatter_far"));
    }

    #[test]
    fn the_sanitizer_filter_is_the_mangled_name_or_the_identifier() {
        use crate::findings::scan::scan_str;
        // The coredump progress stream of shared_atomic.cu names `_Z9histogramPKiPji`.
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/h200/");
        let read = |f: &str| std::fs::read_to_string(format!("{dir}{f}")).unwrap();
        let a = decide(&[scan_str(&read("shared_atomic/merged.log"), "coredump")]);
        assert_eq!(kernel_filter(&a).as_deref(), Some("_Z9histogramPKiPji"));
        // cuda-gdb attached to the inlined case prints the demangled signature only.
        let a = decide(&[scan_str(&read("inlined/memcheck.log"), "memcheck")]);
        assert_eq!(kernel_filter(&a).as_deref(), Some("apply_offsets"));
        // PyTorch's assert line: a qualified template, cut to its identifier.
        let a = decide(&[scan_str(&read("torch_assert/baseline.log"), "baseline")]);
        assert_eq!(kernel_filter(&a).as_deref(), Some("nll_loss_forward_reduce_cuda_kernel_2d"));
        assert_eq!(kernel_filter(&decide(&[])), None);
    }

    #[test]
    fn no_findings_no_verdict() {
        let a = decide(&[Evidence::new("x.log", "baseline")]);
        assert!(a.verdict.is_none());
        assert!(a.conclusion.contains("no CUDA error"), "{}", a.conclusion);
    }

    /// Python's faulthandler stack (tests/fixtures/h200/faulthandler) names a host site only
    /// after a device fault: its input shows the driver's dump or a finding, or its run does.
    #[test]
    fn a_fatal_stack_counts_only_after_a_device_fault() {
        let log = recording!("h200/faulthandler/E1_p01_triton_rope_partial.1.log");
        let scan = |text: &str, group: Option<&str>| {
            let mut ev = super::super::scan::scan_reader(text.as_bytes(), "run.log", "run");
            ev.group = group.map(String::from);
            ev
        };
        let counts = |ev: &Evidence, others: &[Evidence]| {
            let s = Located { origin: ev.origin.clone(), item: ev.symptoms[0].clone() };
            of_a_fault(&s, &[std::slice::from_ref(ev), others].concat())
        };
        let gdb = recording!("h200/triton_eager/cudagdb-core-1.log");
        let fault = |group: &str| {
            let mut ev = super::super::scan::scan_reader(gdb.as_bytes(), "gdb.log", "coredump");
            ev.group = Some(group.into());
            ev
        };
        // The driver's `Starting GPU coredump generation` before it (the log's first line).
        assert!(counts(&scan(log, None), &[]));
        let without = log.split_once('\n').unwrap().1;
        assert!(!counts(&scan(without, None), &[]));
        assert!(counts(&scan(without, Some("b")), &[fault("b")]));
        assert!(!counts(&scan(without, Some("b")), &[fault("c")]));
        // A segmentation fault's stack is not the driver's abort (the header relabelled).
        assert!(!counts(&scan(&log.replace("Aborted", "Segmentation fault"), Some("b")), &[fault("b")]));
    }

    fn symptom_in(functions: &[&str]) -> Located<Symptom> {
        Located {
            origin: "baseline".into(),
            item: Symptom {
                error: Some(ErrorClass::IllegalAddress),
                message: "an illegal memory access was encountered".into(),
                python_frames: functions
                    .iter()
                    .map(|f| Frame { function: Some(f.to_string()), python: true, ..Frame::default() })
                    .collect(),
                ..Symptom::default()
            },
        }
    }

    #[test]
    fn shutdown_false_positive_needs_a_communication_kernel_and_the_shutdown_path() {
        let during = [symptom_in(&["<module>", "main", "destroy_process_group"])];
        let running = [symptom_in(&["<module>", "main", "forward"])];
        assert!(shutdown_false_positive(
            "void ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            &during
        ));
        assert!(shutdown_false_positive("void vllm::cross_device_reduce_1stage<float, 2>(...)", &during));
        assert!(!shutdown_false_positive("void ncclDevKernel_AllReduce_Sum_f32_RING_LL(...)", &running));
        assert!(!shutdown_false_positive("gather_kv_kernel", &during));
    }

    #[test]
    fn user_line_skips_toolkit_headers() {
        let c = vec![
            SourceLoc { file: "/usr/local/cuda/include/cuda/std/span".into(), line: 3 },
            SourceLoc { file: "k.cu".into(), line: 9 },
        ];
        assert_eq!(user_loc(&c, &[]).unwrap(), (&c[1], false));
        // cuda-gdb's bare header name for an inlined atomicAdd (tests/fixtures/h200/shared_atomic).
        let c = vec![
            SourceLoc { file: "device_atomic_functions.hpp".into(), line: 112 },
            SourceLoc { file: "shared_atomic.cu".into(), line: 16 },
        ];
        assert_eq!(user_loc(&c, &[]).unwrap().0.line, 16);
        // ATen is a library, unless it is the user's own tree.
        let c = vec![SourceLoc { file: "/root/pytorch/aten/src/ATen/native/cuda/Loss.cu".into(), line: 245 }];
        assert!(user_loc(&c, &[]).unwrap().1);
        assert!(!user_loc(&c, &["/root/pytorch".to_string()]).unwrap().1);
        assert!(user_loc(&c, &["/root/py".to_string()]).unwrap().1);
    }

    /// The clustering as first written, quadratic: each name against every cluster so far,
    /// joining the first that [`same_kernel`] matches. The index must give the same clusters.
    fn clusters_pairwise(names: &[String]) -> Vec<(String, Vec<usize>)> {
        let mut clusters: Vec<(String, Vec<usize>)> = Vec::new();
        for (i, k) in names.iter().enumerate() {
            match clusters.iter_mut().find(|(ck, _)| same_kernel(ck, k)) {
                Some((_, members)) => members.push(i),
                None => clusters.push((k.clone(), vec![i])),
            }
        }
        clusters
    }

    fn clusters_indexed(names: &[String]) -> Vec<(String, Vec<usize>)> {
        let mut index = Clusters::new();
        for (i, k) in names.iter().enumerate() {
            index.add(i, k, names::kernel_key(k));
        }
        index.list.into_iter().map(|(k, _, m)| (k, m)).collect()
    }

    #[test]
    fn the_index_keeps_the_tail_rule() {
        let names: Vec<String> = [
            "nll_loss_forward_reduce_cuda_kernel_2d",
            "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float>(float*)",
            "b::k",
            "a::b::k(int)",
            "k",
            "x:::k",
            "核::😀",
            "😀",
            "",
            "a::",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(clusters_indexed(&names), clusters_pairwise(&names));
        let c = clusters_indexed(&names);
        assert_eq!(c[0].1, vec![0, 1]);
        // `a::b::k` ends with `::b::k`, and `k` is the tail of `b::k`; `x:::k` is neither equal to
        // `b::k` nor one of its tails (clusters compare with their founder, not transitively).
        assert_eq!(c[1].1, vec![2, 3, 4]);
        assert_eq!(c[2], ("x:::k".to_string(), vec![5]));
    }

    /// Qualified names from a small alphabet, so that equal keys and `::` tails are common.
    fn qualified() -> impl Strategy<Value = String> {
        let seg = prop::sample::select(vec!["a", "b", "k", "核", "😀", "ns", "(anonymous namespace)", ""]);
        let tail = prop::sample::select(vec!["", "(int*)", "<float>(float*)", "<核>", " (int *, int)"]);
        (prop::collection::vec(seg, 1..4), tail, any::<bool>()).prop_map(|(segs, tail, void)| {
            format!("{}{}{tail}", if void { "void " } else { "" }, segs.join("::"))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// The index finds the same clusters as comparing every pair, for names built to be
        /// each other's `::` tails.
        #[test]
        fn the_index_clusters_as_pairwise_comparison_does(names in prop::collection::vec(qualified(), 0..40)) {
            prop_assert_eq!(clusters_indexed(&names), clusters_pairwise(&names));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Several inputs, each a real recording with its own generated kernel name (multi-byte,
        /// 5,000 characters) and invalid bytes: deciding, filtering and rendering never panic,
        /// and the clusters still match the pairwise rule.
        #[test]
        fn deciding_over_multi_byte_names_never_panics(
            picks in prop::collection::vec(
                (any::<prop::sample::Index>(), crate::findings::fuzz::name(), crate::findings::fuzz::invalid_edits()),
                1..5,
            ),
        ) {
            use crate::findings::fuzz::{analyse, spliced, REAL};
            use crate::findings::scan::scan_reader;
            let evidence: Vec<Evidence> = picks
                .iter()
                .map(|(which, name, edits)| {
                    let r = &REAL[which.index(REAL.len())];
                    scan_reader(&spliced(r.excerpt(), r.kernel, name, edits)[..], r.file, r.file)
                })
                .collect();
            let a = analyse(&evidence);
            let names: Vec<String> =
                a.findings.iter().filter_map(|f| kernel_of(&f.item)).map(str::to_string).collect();
            prop_assert_eq!(clusters_indexed(&names), clusters_pairwise(&names));
        }
    }
}

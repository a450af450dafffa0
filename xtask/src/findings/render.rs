//! The analysis as text and JSON, for `analyze`, the end of `debug-ima`, `summary.md` and
//! reports: deterministic, so snapshots are stable.
//!
//! Pure: takes an [`Analysis`], returns strings; must not print or read files.

use std::fmt::Write as _;

use super::{
    faulthandler, names, ranks,
    scan::{EMPTY, NOT_RECOGNISED},
    verdict::{group_text, host_frame_text, Analysis, Hang, HangProcess, Verdict},
    Fault, Frame, NcclCollective,
};

/// The analysis as one JSON object (`verdict`, `findings`, `symptoms`, `inputs`, ...).
pub fn render_json(a: &Analysis) -> String {
    serde_json::to_string_pretty(a).expect("analysis serialises") + "\n"
}

fn dim(d: [u32; 3]) -> String {
    format!("({},{},{})", d[0], d[1], d[2])
}

fn frame_text(f: &Frame) -> String {
    let mut s = f.function.clone().unwrap_or_else(|| "?".into());
    match (&f.file, f.line) {
        (Some(file), Some(line)) => write!(s, " at {file}:{line}").unwrap(),
        (Some(file), None) => write!(s, " in {file}").unwrap(),
        _ => {}
    }
    if let Some(m) = &f.module {
        if f.file.is_none() {
            write!(s, " in {m}").unwrap();
        }
    }
    s
}

/// `n` with thousands separators, as compute-sanitizer prints byte counts.
pub fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A finding in one line. `spelt`: the files the findings of the same kernel printed, so that
/// a file is shown in its most complete spelling whichever tool printed it.
fn fault_line(f: &Fault, spelt: &[&str]) -> String {
    let mut s = String::new();
    if let Some(e) = &f.error {
        s.push_str(e.as_str());
    }
    if let Some(k) = &f.kernel {
        // The mangled name where the tool printed one: compute-sanitizer's text names template
        // parameters (`T1*`) where the symbol has the arguments (`float*`).
        let full = f.mangled.as_deref().filter(|m| m.starts_with("_Z")).and_then(names::demangle);
        write!(s, " in `{}`", names::display_kernel(full.as_deref().unwrap_or(k))).unwrap();
    }
    if let Some(l) = &f.location {
        write!(s, " at {}:{}", names::fullest(&l.file, spelt.iter().copied()), l.line).unwrap();
    }
    if f.count > 1 {
        write!(s, ", {} records", grouped(f.count)).unwrap();
    }
    match (f.block_range, f.thread_range) {
        (Some(b), Some(t)) if f.count > 1 => {
            write!(s, ", blocks {}..{}, threads {}..{}", dim(b[0]), dim(b[1]), dim(t[0]), dim(t[1])).unwrap()
        }
        _ => {
            if let Some(b) = f.block {
                write!(s, ", block {}", dim(b)).unwrap();
            }
            if let Some(t) = f.thread {
                write!(s, " thread {}", dim(t)).unwrap();
            }
        }
    }
    if let Some(d) = &f.detail {
        write!(s, " ({d})").unwrap();
    }
    s
}

/// Describes a memory access in words: `write of 4 bytes at 0x.. (__global__), 34,359,738,368
/// bytes before the nearest allocation at 0x.. of 16,384 bytes`.
pub fn access_text(a: &crate::findings::Access) -> String {
    let mut s = String::new();
    if let Some(k) = &a.kind {
        s.push_str(k);
    } else {
        s.push_str("access");
    }
    if let Some(sz) = a.size {
        write!(s, " of {sz} bytes").unwrap();
    }
    if let Some(addr) = a.address {
        write!(s, " at {addr:#x}").unwrap();
    }
    if let Some(sp) = &a.space {
        write!(s, " ({sp})").unwrap();
    }
    if let Some(n) = &a.nearest {
        write!(
            s,
            ", {} bytes {} the nearest allocation at {:#x} of {} bytes",
            grouped(n.distance),
            if n.before { "before" } else { "after" },
            n.allocation,
            grouped(n.allocation_size)
        )
        .unwrap();
    }
    s
}

/// The analysis for a human: verdict first, then the evidence, then what could not be read.
/// The origin of a generated or run-time compiled kernel: what made it, the generated line,
/// the model's statements (up to 8), the files.
fn origin_text(s: &mut String, o: &super::verdict_model::Origin) {
    let name = o.name.as_deref().map(|n| format!(" `{n}`")).unwrap_or_default();
    let generated = o.generated.as_ref().map(|g| format!(", generated line {g}")).unwrap_or_default();
    writeln!(s, "  origin:   {}{name}{generated}", o.library).unwrap();
    for (i, m) in o.model.iter().take(8).enumerate() {
        let code = m.code.as_deref().map(|c| format!(": {c}")).unwrap_or_default();
        let mark = if i == 0 && o.pinned { "; the faulting access" } else { "" };
        writeln!(s, "  model:    {}{code} [{}{mark}]", frame_text(&m.frame), m.node).unwrap();
    }
    if o.model.len() > 8 {
        writeln!(s, "  model:    ... {} more statement(s) (in the JSON output)", o.model.len() - 8).unwrap();
    }
    if let Some(b) = &o.built_at {
        let what =
            if o.kind == super::verdict_model::OriginKind::Inductor { "loaded by" } else { "built by" };
        writeln!(s, "  {what}: {}", frame_text(b)).unwrap();
    }
}

pub fn render_text(a: &Analysis) -> String {
    let mut s = render_verdict(a);
    symptoms_text(&mut s, a);
    findings_text(&mut s, a);
    also_seen(&mut s, a);
    s
}

/// The verdict and its fields (or, without one, the conclusion): the essential part of
/// [`render_text`], all that `-q` prints of an analysis.
pub fn render_verdict(a: &Analysis) -> String {
    let mut s = String::new();
    match &a.verdict {
        Some(v) => {
            verdict_head(&mut s, v);
            let function_only = verdict_sites(&mut s, v);
            verdict_tail(&mut s, a, v, function_only);
        }
        None => writeln!(s, "{}", a.conclusion).unwrap(),
    }
    s
}

/// The verdict's line and what locates it: the meaning, where (block, thread, device, rank,
/// pid), the ranks' culprit, the access, the hazard, the inline chain, a hang's parts.
fn verdict_head(s: &mut String, v: &Verdict) {
    let at = match (&v.file, v.line) {
        (Some(f), Some(l)) => format!("{f}:{l}"),
        _ if !v.not_applicable.is_empty() => "no source line (a precompiled kernel)".to_string(),
        _ => "an unknown line".to_string(),
    };
    // The verdict is one line whatever a name holds (`crate::ui::safe`).
    writeln!(
        s,
        "verdict: {} in `{}` at {}",
        v.error.as_str(),
        crate::ui::safe(&v.kernel, true),
        crate::ui::safe(&at, true)
    )
    .unwrap();
    if let Some(m) = v.meaning {
        writeln!(s, "  means:    {m}").unwrap();
    }
    let mut who = Vec::new();
    if let Some(b) = v.block {
        who.push(format!("block {}", dim(b)));
    }
    if let Some(t) = v.thread {
        who.push(format!("thread {}", dim(t)));
    }
    if let Some(d) = v.device {
        who.push(format!("device {d}"));
    }
    if let Some(r) = v.rank {
        who.push(format!("rank {r}"));
    }
    if let Some(p) = v.pid {
        who.push(format!("pid {p}"));
    }
    if !who.is_empty() {
        writeln!(s, "  where:    {}", who.join(", ")).unwrap();
    }
    if let Some(t) = &v.ranks {
        let c = &t.culprit;
        let what = match (&c.error, &c.kernel) {
            (Some(e), Some(k)) => format!("{} in {k}", e.as_str()),
            _ => c.reason.clone(),
        };
        writeln!(s, "  culprit:  {}: {what}", ranks::entry_head(c)).unwrap();
        for (i, e) in t.collateral.iter().enumerate() {
            let label = if i == 0 { "  collateral: " } else { "              " };
            writeln!(s, "{label}{}: {}", ranks::entry_head(e), e.reason).unwrap();
        }
    }
    if let Some(acc) = &v.access {
        writeln!(s, "  access:   {}", access_text(acc)).unwrap();
    }
    for l in v.hazard.iter().flat_map(|h| super::hazards::text_lines(h, v.file.as_deref(), v.line)) {
        writeln!(s, "{}", crate::ui::safe(&l, true)).unwrap();
    }
    if !v.inlined.is_empty() {
        let chain: Vec<String> = v.inlined.iter().map(|l| l.to_string()).collect();
        writeln!(s, "  inlined:  {}", chain.join(" <- ")).unwrap();
    }
    if let Some(h) = &v.hang {
        hang_text(s, h);
    }
}

/// The host's side: the launch (said to be the function only without a line; returned), the
/// capture, the kernel's origin, where the error surfaced.
fn verdict_sites(s: &mut String, v: &Verdict) -> bool {
    // A launch known to its function only (no host debug info): said so, so that it
    // agrees with `unknown:` below, which then names the launch *line*.
    let function_only = v.launch_site.as_ref().is_some_and(|h| h.frame.line.is_none());
    match (&v.launch_site, &v.hang) {
        (Some(h), _) if function_only => writeln!(
            s,
            "  launched: {} (the function only: its line needs host debug info, `-g`) [{}; {}]",
            frame_text(&h.frame),
            h.how,
            h.from
        )
        .unwrap(),
        (Some(h), _) => writeln!(s, "  launched: {} [{}; {}]", frame_text(&h.frame), h.how, h.from).unwrap(),
        (None, None) => writeln!(s, "  launched: unknown (no synchronous source named the launch)").unwrap(),
        (None, Some(_)) => {}
    }
    if let Some(h) = &v.captured_at {
        writeln!(s, "  captured: {} [{}; {}]", frame_text(&h.frame), h.how, h.from).unwrap();
    }
    if let Some(o) = &v.origin {
        origin_text(s, o);
    }
    if let Some(h) = &v.surfaced_at {
        writeln!(s, "  surfaced: {} [{}; {}]", frame_text(&h.frame), h.how, h.from).unwrap();
    }
    function_only
}

/// What is unknown or cannot exist, the library, what found it, how often, the other kernels,
/// what disagrees, the notes.
fn verdict_tail(s: &mut String, a: &Analysis, v: &Verdict, function_only: bool) {
    if !v.unknown.is_empty() {
        let parts: Vec<&str> = v
            .unknown
            .iter()
            .map(|p| {
                if *p == super::verdict::Part::LaunchSite && function_only {
                    "launch line"
                } else {
                    p.as_str()
                }
            })
            .collect();
        writeln!(s, "  unknown:  {}", parts.join(", ")).unwrap();
    }
    if let Some(lib) = &v.library {
        writeln!(s, "  library:  {}", crate::ui::safe(lib, true)).unwrap();
    }
    if !v.not_applicable.is_empty() {
        let parts: Vec<&str> = v.not_applicable.iter().map(|p| p.as_str()).collect();
        writeln!(s, "  n/a:      {} (cannot exist for this kernel)", parts.join(", ")).unwrap();
    }
    writeln!(s, "  found by: {}", v.rungs.join(", ")).unwrap();
    if let Some(r) = a.reproduced.filter(|r| r.runs > 0) {
        writeln!(
            s,
            "  seen in:  {} of {} run{} of the target",
            r.faulted,
            r.runs,
            if r.runs == 1 { "" } else { "s" }
        )
        .unwrap();
    }
    for o in v.others.iter().take(16) {
        let at = match (&o.file, o.line) {
            (Some(f), Some(l)) => format!("{f}:{l}"),
            _ => "an unknown line".to_string(),
        };
        writeln!(
            s,
            "  also:     {} in `{}` at {} [{}]",
            o.error.as_str(),
            crate::ui::safe(&o.kernel, true),
            crate::ui::safe(&at, true),
            o.from.join(", ")
        )
        .unwrap();
    }
    if v.others.len() > 16 {
        writeln!(s, "  also:     {} more kernels (the JSON verdict lists them)", v.others.len() - 16)
            .unwrap();
    }
    // Another kernel's report is said once, as an `also:` line.
    for d in v.disagreements.iter().filter(|d| !d.contains(" also report")) {
        writeln!(s, "  differs:  {d}").unwrap();
    }
    for r in &v.remarks {
        writeln!(s, "  note:     {r}").unwrap();
    }
}

/// What the program reported, each with where it was raised or reported.
fn symptoms_text(s: &mut String, a: &Analysis) {
    if !a.symptoms.is_empty() {
        writeln!(s, "\nsymptoms (what the program reported):").unwrap();
        for sy in &a.symptoms {
            let mut line = format!("  {}: {}", sy.origin, sy.item.message);
            if let Some(e) = &sy.item.exception {
                line = format!("  {}: {e}: {}", sy.origin, sy.item.message);
            }
            if let Some(r) = &sy.item.reported_at {
                write!(line, " (reported at {r})").unwrap();
            } else if let Some(f) = sy.item.user_frame() {
                let at = if faulthandler::is_stack(&sy.item) { "Python stack:" } else { "raised at" };
                write!(line, " ({at} {})", frame_text(f)).unwrap();
            }
            if let Some(r) = sy.item.rank {
                write!(line, " [rank {r}]").unwrap();
            }
            writeln!(s, "{line}").unwrap();
        }
    }
}

/// Every device fault found, each file in the fullest spelling its kernel's findings printed.
fn findings_text(s: &mut String, a: &Analysis) {
    if !a.findings.is_empty() {
        writeln!(s, "\nfindings:").unwrap();
        let keys: Vec<Option<String>> =
            a.findings.iter().map(|f| f.item.kernel.as_deref().map(names::kernel_key)).collect();
        for (f, key) in a.findings.iter().zip(&keys) {
            let spelt: Vec<&str> = a
                .findings
                .iter()
                .zip(&keys)
                .filter(|(_, k)| key.is_some() && *k == key)
                .filter_map(|(g, _)| g.item.location.as_ref().map(|l| l.file.as_str()))
                .collect();
            writeln!(s, "  {}: {}", f.origin, fault_line(&f.item, &spelt)).unwrap();
        }
    }
}

/// Notes of the inputs: files of no known tool, empty ones, waits, dumps, API errors, NCCL,
/// sanitizer summaries; each said once with how many times it was seen.
fn also_seen(s: &mut String, a: &Analysis) {
    // Several files of one input share its origin (a tool's `.log` and `.stderr.log`), and
    // one note can come from several files: each line and each name is said once, in order,
    // with how many times it was seen.
    let mut extra: Vec<String> = Vec::new();
    let unknown: Vec<&str> = a
        .inputs
        .iter()
        .filter(|i| i.tools.is_empty() && i.notes.iter().any(|n| n.starts_with(NOT_RECOGNISED)))
        .map(|i| i.origin.as_str())
        .collect();
    if !unknown.is_empty() {
        extra.push(format!("  no known tool's output in: {}", counted(&unknown, "files").join(", ")));
    }
    let empty: Vec<&str> = a
        .inputs
        .iter()
        .filter(|i| i.bytes == 0 && i.notes.iter().any(|n| n.starts_with(EMPTY)))
        .map(|i| i.origin.as_str())
        .collect();
    if !empty.is_empty() {
        extra.push(format!("  empty: {}", counted(&empty, "files").join(", ")));
    }
    let mut seen: Vec<String> = Vec::new();
    for i in &a.inputs {
        for w in &i.waits {
            seen.push(format!("  {}: process {} on {} waits for a debugger", i.origin, w.pid, w.host));
        }
        for c in &i.coredumps {
            seen.push(format!("  {}: coredump written to {}", i.origin, c.path));
        }
        for e in &i.api_errors {
            seen.push(format!("  {}: {} on `{}` ({}) x{}", i.origin, e.error, e.api, e.message, e.count));
        }
        if let Some(t) = &i.nccl {
            let groups: Vec<String> = t
                .groups
                .iter()
                .map(|g| {
                    let n = |v: Option<i64>| v.map_or("?".to_string(), |v| v.to_string());
                    format!(
                        "process group {}{}: last enqueued {}, started {}, completed {}",
                        g.id,
                        g.desc.as_deref().map(|d| format!(" ({d})")).unwrap_or_default(),
                        n(g.last_enqueued),
                        n(g.last_started),
                        n(g.last_completed)
                    )
                })
                .collect();
            let rank = t.rank.map(|r| format!(" of rank {r}")).unwrap_or_default();
            seen.push(format!(
                "  {}: NCCL flight recorder{rank}, {} entries; {}",
                i.origin,
                t.entries,
                groups.join("; ")
            ));
        }
        if let Some(n) = i.error_summary {
            seen.push(format!("  {}: compute-sanitizer ERROR SUMMARY: {} errors", i.origin, grouped(n)));
        }
        for n in i.notes.iter().filter(|n| !n.starts_with(NOT_RECOGNISED) && !n.starts_with(EMPTY)) {
            seen.push(format!("  {}: {n}", i.origin));
        }
    }
    let seen: Vec<&str> = seen.iter().map(String::as_str).collect();
    extra.extend(counted(&seen, "times"));
    if !extra.is_empty() {
        writeln!(s, "\nalso seen:").unwrap();
        for line in extra {
            writeln!(s, "{line}").unwrap();
        }
    }
}

/// The parts of a hang verdict: the threads by line, each process, the NCCL ranks.
fn hang_text(s: &mut String, h: &Hang) {
    for (i, g) in h.groups.iter().enumerate() {
        let label = if i == 0 { "  threads:  " } else { "            " };
        writeln!(s, "{label}{}", group_text(g, i == 0)).unwrap();
    }
    if let Some(o) = &h.odd_one_out {
        writeln!(
            s,
            "  odd one:  {} is stuck elsewhere: {}; the other {} at: {}",
            o.who, o.at, o.others, o.others_at
        )
        .unwrap();
    }
    for p in &h.processes {
        writeln!(s, "  process:  {}", process_text(p)).unwrap();
    }
    for n in &h.nccl {
        let rank = n.rank.map(|r| format!("rank {r}, ")).unwrap_or_default();
        let desc = n.desc.as_deref().map(|d| format!(" ({d})")).unwrap_or_default();
        let pending: Vec<String> = n.pending.iter().map(collective_text).collect();
        let list = if pending.is_empty() { String::new() } else { format!(": {}", pending.join("; ")) };
        writeln!(
            s,
            "  nccl:     {rank}process group {}{desc}: {} collective(s) not completed{list} [{}]",
            n.group, n.incomplete, n.from
        )
        .unwrap();
    }
}

/// `pid 584: `consume` spinning at hang_flag.cu:8 (1024 threads); host: main at hang_flag.cu:31
/// in cudaDeviceSynchronize [cpucore-gdb]`.
fn process_text(p: &HangProcess) -> String {
    let mut s = match (p.pid, p.rank) {
        (Some(pid), Some(r)) => format!("pid {pid} (rank {r}): "),
        (Some(pid), None) => format!("pid {pid}: "),
        (None, Some(r)) => format!("rank {r}: "),
        (None, None) => "a process: ".to_string(),
    };
    match (&p.kernel, &p.spinning_at) {
        (Some(k), Some(l)) => {
            write!(s, "`{k}` spinning at {}:{} ({} threads)", names::base_name(&l.file), l.line, p.threads)
                .unwrap()
        }
        (Some(k), None) => write!(s, "`{k}` running ({} threads, line unknown)", p.threads).unwrap(),
        (None, _) if p.no_kernel => s.push_str("no kernel running"),
        (None, _) if p.dumped => s.push_str("GPU dump with no thread listed"),
        (None, _) => s.push_str("no GPU dump"),
    }
    if p.host.is_empty() {
        s.push_str("; host: unknown (no py-spy or CPU core stack in your code)");
    }
    for (i, w) in p.host.iter().enumerate() {
        s.push_str(if i == 0 { "; host: " } else { "; also " });
        s.push_str(&host_frame_text(&w.frame));
        if let Some(f) = &w.waiting_in {
            write!(s, " in {}", host_frame_text(f)).unwrap();
        }
        if let Some(api) = &w.api {
            let sep = if w.waiting_in.is_some() { ", " } else { " in " };
            write!(s, "{sep}{api}").unwrap();
        }
        if let Some(t) = &w.thread {
            write!(s, " ({t})").unwrap();
        }
        write!(s, " [{}; {}]", w.tool.as_str(), w.from).unwrap();
    }
    s
}

/// `nccl:all_reduce seq 5 (started), sizes [[1024]] Float, issued at train (train.py:40)`.
fn collective_text(c: &NcclCollective) -> String {
    let mut s = c.op.clone();
    if let Some(n) = c.seq {
        write!(s, " seq {n}").unwrap();
    }
    if let Some(st) = &c.state {
        write!(s, " ({st})").unwrap();
    }
    if !c.input_sizes.is_empty() {
        write!(s, ", sizes {:?}", c.input_sizes).unwrap();
    }
    if !c.dtypes.is_empty() {
        write!(s, " {}", c.dtypes.join(",")).unwrap();
    }
    if let Some(f) = &c.issued_at {
        write!(s, ", issued at {}", host_frame_text(f)).unwrap();
    }
    s
}

/// Each item once, in the order first seen, with ` (N what)` when it was seen N > 1 times.
fn counted(items: &[&str], what: &str) -> Vec<String> {
    let mut order: Vec<(&str, usize)> = Vec::new();
    let mut at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for &item in items {
        match at.get(item) {
            Some(&i) => order[i].1 += 1,
            None => {
                at.insert(item, order.len());
                order.push((item, 1));
            }
        }
    }
    order
        .into_iter()
        .map(|(item, n)| if n > 1 { format!("{item} ({n} {what})") } else { item.to_string() })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn repeats_are_said_once_in_order_with_a_count() {
        let items = ["baseline/build", "coredump", "baseline/build", "baseline/build"];
        assert_eq!(counted(&items, "files"), ["baseline/build (3 files)", "coredump"]);
        assert_eq!(counted(&[], "files"), Vec::<String>::new());
    }

    #[test]
    fn thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(4096), "4,096");
        assert_eq!(grouped(34_359_738_368), "34,359,738,368");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Analyses of real recordings with multi-byte, 5,000-character and invalid kernel names:
        /// both renderings end, the JSON parses back, and a kernel named in the verdict is in
        /// the text as printed (compacted, control characters escaped).
        #[test]
        fn renders_multi_byte_names(
            which in any::<proptest::sample::Index>(),
            name in crate::findings::fuzz::name(),
            edits in crate::findings::fuzz::invalid_edits(),
        ) {
            let reals: Vec<_> = crate::findings::fuzz::REAL.iter().collect();
            let a = crate::findings::fuzz::splice_and_run(&reals, which, &name, &edits);
            let json: serde_json::Value = serde_json::from_str(&render_json(&a)).expect("JSON");
            prop_assert!(json.get("conclusion").is_some());
            let text = render_text(&a);
            if let Some(v) = &a.verdict {
                // As `ui::safe` shows it: a control character in the name as `\u{..}`.
                prop_assert!(text.contains(&*crate::ui::safe(&v.kernel, true)), "{text}");
            }
        }
    }
}

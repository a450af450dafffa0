//! compute-sanitizer racecheck's text output: the default analysis report (`Error: Race
//! reported between Write access at f(...)+0x220 in x.cu:9` / `and Read access at ... in
//! x.cu:11 [262144 hazards]`), the hazard report (`--racecheck-report hazard`: `Potential RAW
//! hazard detected at __shared__ 0x604 in block (8,0,0) :`, its `Write Thread` and `Read
//! Thread` lines and host frames) and `RACECHECK SUMMARY: N hazards displayed (E errors, W
//! warnings)`, turned into [`Fault`]s of class `race`, one per pair of lines, with the second
//! access in [`Fault::other_side`]. Synccheck's records have memcheck's shape:
//! [`super::memcheck`] reads them.
//!
//! Must not: keep more than the record being read and [`MAX_PAIRS`] pairs (further pairs
//! are counted only), panic on any input, or look at lines without the `=========` prefix.

use super::memcheck::{clip, dim3_prefix, grouped_u64, kernel_name, parse_host_frame, split_position};
use super::{
    parse_source_loc, Access, Dim3, ErrorClass, Evidence, Fault, Frame, LineCtx, LineParser, RaceSide,
    SourceLoc, Tool,
};

/// Distinct pairs of lines kept.
pub const MAX_PAIRS: usize = 1024;
/// Host frames kept per pair (of its first record).
const MAX_HOST_FRAMES: usize = 64;
const PREFIX: &str = "=========";

/// One side of a record: `Write access at f(...)+0x220 in x.cu:9`.
#[derive(Default, Clone)]
struct Side {
    kind: String,
    func: String,
    loc: Option<SourceLoc>,
    thread: Option<Dim3>,
}

/// The record being read.
#[derive(Default)]
struct Record {
    open: bool,
    /// `Error` or `Warning`.
    level: String,
    /// `RAW`, `WAR`, `WAW` (the hazard report).
    hazard: String,
    /// `__shared__` (the hazard report).
    space: String,
    address: Option<u64>,
    block: Option<Dim3>,
    sides: Vec<Side>,
    hazards: Option<u64>,
    host: Vec<Frame>,
}

/// Reads racecheck's text output. See the module documentation.
#[derive(Default)]
pub struct RacecheckParser {
    seen: bool,
    rec: Record,
    pairs: Vec<Fault>,
    dropped: u64,
    summary: Option<(u64, u64, u64)>,
}

/// `Write access at f(...)+0x220 in x.cu:9` (or `Write Thread (1,0,0) at ...`) into a side.
fn parse_side(s: &str) -> Option<Side> {
    let s = s.trim();
    let (kind, rest) = s.split_once(' ')?;
    let (thread, at) = if let Some(r) = rest.strip_prefix("access at ") {
        (None, r)
    } else {
        let r = rest.strip_prefix("Thread ")?;
        let (t, n) = dim3_prefix(r.as_bytes())?;
        (Some(t), r.get(n..)?.trim_start().strip_prefix("at ")?)
    };
    // The analysis report ends its second side with ` [262144 hazards]`.
    let at = match at.rfind(" [") {
        Some(p) if at.ends_with("hazards]") || at.ends_with("hazard]") => &at[..p],
        _ => at,
    };
    let (func, _, loc) = split_position(at);
    Some(Side {
        kind: clip(kind).to_string(),
        func: clip(func.trim()).to_string(),
        loc: loc.and_then(parse_source_loc),
        thread,
    })
}

/// `[262144 hazards]` at the end of a line.
fn hazard_count(s: &str) -> Option<u64> {
    let p = s.rfind(" [")?;
    let inner = s[p + 2..].strip_suffix(']')?;
    grouped_u64(inner.split_whitespace().next()?)
}

/// `1 hazard displayed (1 error, 0 warnings)`: displayed, errors, warnings.
fn parse_summary(s: &str) -> Option<(u64, u64, u64)> {
    let displayed = grouped_u64(s.split_whitespace().next()?)?;
    let (_, inner) = s.split_once('(')?;
    let mut it =
        inner.trim_end_matches(')').split(',').map(|p| p.split_whitespace().next().and_then(grouped_u64));
    Some((displayed, it.next()??, it.next()??))
}

impl RacecheckParser {
    fn end_record(&mut self) {
        let r = std::mem::take(&mut self.rec);
        if !r.open || r.sides.is_empty() {
            return;
        }
        self.seen = true;
        let first = &r.sides[0];
        let second = r.sides.get(1);
        let same = |f: &Fault| {
            f.location == first.loc
                && f.other_side.as_ref().map(|o| &o.at) == second.and_then(|s| s.loc.as_ref())
                && f.access.as_ref().and_then(|a| a.kind.as_deref()) == Some(first.kind.as_str())
                && f.detail.as_deref().is_some_and(|d| d.starts_with(r.level.as_str()))
        };
        let n = r.hazards.unwrap_or(1);
        if let Some(f) = self.pairs.iter_mut().find(|f| same(f)) {
            f.count = f.count.saturating_add(n);
            return;
        }
        if self.pairs.len() >= MAX_PAIRS {
            self.dropped = self.dropped.saturating_add(1);
            return;
        }
        let (kernel, mangled) = kernel_name(&first.func);
        let what = if r.hazard.is_empty() { "race".to_string() } else { format!("{} hazard", r.hazard) };
        self.pairs.push(Fault {
            tool: Some(Tool::Memcheck),
            error: Some(ErrorClass::Race),
            kernel,
            mangled,
            location: first.loc.clone(),
            block: r.block,
            thread: first.thread,
            access: Some(Access {
                kind: (!first.kind.is_empty()).then(|| first.kind.clone()),
                space: (!r.space.is_empty()).then(|| r.space.clone()),
                address: r.address,
                ..Access::default()
            }),
            count: n,
            host_frames: r.host,
            detail: Some(format!("{}: racecheck {what}", r.level)),
            other_side: second.and_then(|s| {
                Some(RaceSide {
                    kind: (!s.kind.is_empty()).then(|| s.kind.clone()),
                    at: s.loc.clone()?,
                    thread: s.thread,
                })
            }),
            ..Fault::default()
        });
    }

    fn top_level(&mut self, text: &str) {
        self.end_record();
        if let Some(rest) = text.strip_prefix("RACECHECK SUMMARY: ") {
            self.seen = true;
            self.summary = parse_summary(rest);
            return;
        }
        let Some((level, rest)) = text.split_once(": ") else { return };
        if level != "Error" && level != "Warning" {
            return;
        }
        let rest = rest.strip_prefix("(Warp Level Programming) ").unwrap_or(rest);
        if let Some(side) = rest.strip_prefix("Race reported between ") {
            if let Some(s) = parse_side(side) {
                self.rec =
                    Record { open: true, level: level.to_string(), sides: vec![s], ..Record::default() };
            }
        } else if let Some(h) = rest.strip_prefix("Potential ") {
            let Some((hazard, at)) = h.split_once(" hazard detected at ") else { return };
            let mut words = at.split_whitespace();
            let space = words.next().unwrap_or_default();
            let address = words.next().and_then(super::parse_hex);
            let block =
                at.split_once(" in block ").and_then(|(_, b)| dim3_prefix(b.as_bytes())).map(|(d, _)| d);
            self.rec = Record {
                open: true,
                level: level.to_string(),
                hazard: clip(hazard).to_string(),
                space: clip(space).to_string(),
                address,
                block,
                ..Record::default()
            };
        }
    }

    fn detail(&mut self, text: &str) {
        let r = &mut self.rec;
        if let Some(f) = text.strip_prefix("Host Frame:") {
            if r.host.len() < MAX_HOST_FRAMES {
                r.host.push(parse_host_frame(clip(f)));
            }
        } else if let Some(side) = text.strip_prefix("and ") {
            if r.sides.len() == 1 {
                r.hazards = hazard_count(text);
                if let Some(s) = parse_side(side) {
                    r.sides.push(s);
                }
            }
        } else if !r.hazard.is_empty() && r.sides.len() < 2 && text.contains(" Thread (") {
            if let Some(s) = parse_side(text) {
                r.sides.push(s);
            }
        }
    }
}

impl LineParser for RacecheckParser {
    /// compute-sanitizer's lines; an indented one (a record's) only while a record is open.
    #[inline]
    fn wants(&self, line: &str, _phrase_free: bool) -> bool {
        let b = line.as_bytes();
        b.starts_with(PREFIX.as_bytes()) && (self.rec.open || !b[PREFIX.len()..].starts_with(b"  "))
    }

    // Inlined into the scanner's loop: on compute-sanitizer's output it takes many lines.
    #[inline]
    fn line(&mut self, line: &str, _ctx: LineCtx) {
        let Some(rest) = line.strip_prefix(PREFIX) else { return };
        let Some(body) = rest.strip_prefix(' ') else {
            if rest.trim().is_empty() {
                self.end_record();
            }
            return;
        };
        let indent = body.bytes().take_while(|&c| c == b' ').count();
        let text = body[indent..].trim_end();
        if text.is_empty() {
            self.end_record();
        } else if indent == 0 {
            self.top_level(text);
        } else if self.rec.open {
            self.detail(text);
        }
    }

    fn finish(&mut self, ev: &mut Evidence) {
        self.end_record();
        if !self.seen {
            return;
        }
        ev.saw(Tool::Memcheck);
        ev.faults.append(&mut self.pairs);
        if self.dropped > 0 {
            ev.notes
                .push(format!("racecheck: {} records at further pairs of lines were not kept", self.dropped));
        }
        if let Some((shown, errors, warnings)) = self.summary {
            ev.notes.push(format!(
                "racecheck: {shown} hazard record(s) displayed ({errors} error(s), {warnings} warning(s))"
            ));
        }
    }
}

/// The XML reader's second side of a racecheck record (`<destination>` of an `Analysis`
/// record, `<thread1>` of a `Hazard` record), the hazard count and type; text fields capped.
#[derive(Default)]
pub(crate) struct XmlSide {
    kind: String,
    path: String,
    line: String,
    thread: [Option<u32>; 3],
    count: Option<u64>,
    hazard: String,
}

impl XmlSide {
    pub(crate) fn clear(&mut self) {
        *self = XmlSide::default();
    }

    fn put(dst: &mut String, s: &str) {
        dst.clear();
        dst.push_str(clip(s.trim()));
    }

    pub(crate) fn kind(&mut self, s: &str) {
        Self::put(&mut self.kind, s);
    }

    pub(crate) fn hazard(&mut self, s: &str) {
        Self::put(&mut self.hazard, s);
    }

    pub(crate) fn count(&mut self, s: &str) {
        self.count = grouped_u64(s);
    }

    /// A `<where>` field of the second side: its `<line>`, `<path>`, or else ignored.
    pub(crate) fn where_field(&mut self, line: bool, path: bool, s: &str) {
        if line {
            Self::put(&mut self.line, s);
        } else if path {
            Self::put(&mut self.path, s);
        }
    }

    pub(crate) fn thread_dim(&mut self, x: bool, y: bool, s: &str) {
        let i = if x {
            0
        } else if y {
            1
        } else {
            2
        };
        self.thread[i] = s.trim().parse().ok();
    }

    /// What goes into the site key besides the first side: the second line.
    pub(crate) fn key(&self, k: &mut Vec<u8>) {
        k.push(0);
        k.extend_from_slice(self.path.as_bytes());
        k.push(0);
        k.extend_from_slice(self.line.as_bytes());
    }

    /// Hazards beyond the record itself (an analysis record's `<count>` less one).
    pub(crate) fn extra(&self) -> u64 {
        self.count.unwrap_or(1).saturating_sub(1)
    }
}

/// The fault of a racecheck XML record (`kind` `Analysis` or `Hazard`), with the first
/// side's access kind `direction`; the caller adds the kernel, line and stacks. `None` for
/// another kind.
pub(crate) fn xml_fault(kind: &str, direction: &str, side: &XmlSide) -> Option<Fault> {
    if kind != "Analysis" && kind != "Hazard" {
        return None;
    }
    let thread = match side.thread {
        [Some(x), Some(y), Some(z)] => Some([x, y, z]),
        _ => None,
    };
    let at = super::memcheck::source_loc(&side.path, &side.line);
    let what = if side.hazard.is_empty() { "race".to_string() } else { format!("{} hazard", side.hazard) };
    Some(Fault {
        error: Some(ErrorClass::Race),
        access: Some(Access {
            kind: (!direction.is_empty()).then(|| direction.to_string()),
            ..Access::default()
        }),
        detail: Some(format!("racecheck {what}")),
        other_side: at.map(|at| RaceSide {
            kind: (!side.kind.is_empty()).then(|| side.kind.clone()),
            at,
            thread,
        }),
        ..Fault::default()
    })
}

#[cfg(test)]
mod tests {
    use super::super::scan::scan_str;
    use super::*;
    use proptest::prelude::*;

    const SHARED: &str = recording!("h200/kinds/race_shared/racecheck.log");
    const REDUCE: &str = recording!("h200/kinds/race_reduce/racecheck.log");
    const HAZARD: &str = recording!("h200/kinds/race_shared/racecheck-hazard.log");
    const CLEAN: &str = recording!("h200/kinds/barrier/racecheck.log");

    fn races(ev: &Evidence) -> Vec<&Fault> {
        ev.faults.iter().filter(|f| f.error == Some(ErrorClass::Race)).collect()
    }

    #[test]
    fn the_analysis_report_is_one_pair_with_both_lines_and_the_hazard_count() {
        let ev = scan_str(SHARED, "racecheck.log");
        let r = races(&ev);
        assert_eq!(r.len(), 1, "{:?}", ev.faults);
        let f = r[0];
        assert_eq!(f.kernel.as_deref(), Some("shift_left(const float*, float*, int)"));
        assert_eq!(f.location.as_ref().map(|l| l.to_string()).as_deref(), Some("race_shared.cu:9"));
        assert_eq!(f.access.as_ref().and_then(|a| a.kind.as_deref()), Some("Write"));
        let o = f.other_side.as_ref().unwrap();
        assert_eq!((o.kind.as_deref(), o.at.to_string().as_str()), (Some("Read"), "race_shared.cu:11"));
        assert_eq!(f.count, 262_144);
        assert!(ev
            .notes
            .iter()
            .any(|n| n.contains("1 hazard record(s) displayed (1 error(s), 0 warning(s))")));

        let ev = scan_str(REDUCE, "racecheck.log");
        let f = races(&ev)[0];
        assert_eq!(f.location.as_ref().unwrap().to_string(), "race_reduce.cu:13");
        assert_eq!(f.access.as_ref().and_then(|a| a.kind.as_deref()), Some("Read"));
        let o = f.other_side.as_ref().unwrap();
        assert_eq!((o.kind.as_deref(), o.at.to_string().as_str()), (Some("Write"), "race_reduce.cu:13"));
        assert_eq!(f.count, 132_864);
    }

    #[test]
    fn the_hazard_report_groups_by_pair_with_the_memory_and_host_frames() {
        let ev = scan_str(HAZARD, "racecheck-hazard.log");
        let r = races(&ev);
        assert!(!r.is_empty() && r.len() <= 4, "{r:?}");
        let f = r[0];
        assert_eq!(f.location.as_ref().unwrap().to_string(), "race_shared.cu:9");
        assert_eq!(f.other_side.as_ref().unwrap().at.to_string(), "race_shared.cu:11");
        assert_eq!(f.access.as_ref().and_then(|a| a.space.as_deref()), Some("__shared__"));
        assert_eq!(f.block, Some([8, 0, 0]));
        assert_eq!(f.thread, Some([129, 0, 0]));
        assert_eq!(f.other_side.as_ref().unwrap().thread, Some([128, 0, 0]));
        assert!(f.host_frames.iter().any(|h| h.function.as_deref() == Some("main") && h.line == Some(21)));
        assert_eq!(r.iter().map(|f| f.count).sum::<u64>(), 100);
        assert!(ev.notes.iter().any(|n| n.contains("(8192 error(s), 253952 warning(s))")), "{:?}", ev.notes);
    }

    #[test]
    fn a_clean_run_has_no_race() {
        let ev = scan_str(CLEAN, "racecheck.log");
        assert!(races(&ev).is_empty());
        assert!(ev.tools.contains(&Tool::Memcheck));
    }

    #[test]
    fn every_truncation_of_real_output_is_safe() {
        let hazard: String = HAZARD.lines().take(30).collect::<Vec<_>>().join("\n");
        for text in [SHARED, REDUCE, hazard.as_str()] {
            for (i, _) in text.char_indices() {
                let ev = scan_str(&text[..i], "t.log");
                assert!(races(&ev).len() <= 2);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn prefixed_garbage_never_panics(lines in proptest::collection::vec(
            ("(=========)?( {0,9})?(Error: |Warning: |Race reported between |and |Potential RAW hazard detected at |Write Thread |Read access at |Host Frame:|RACECHECK SUMMARY: )?", "\\PC{0,40}"),
            0..40,
        )) {
            let text: String = lines.iter().map(|(a, b)| format!("{a}{b}\n")).collect();
            let _ = scan_str(&text, "r.log");
        }

        #[test]
        fn spliced_real_output_never_panics(cut in 0usize..400, junk in "\\PC{0,30}") {
            let s = crate::findings::fuzz::inserted(SHARED, cut, &junk);
            let _ = scan_str(&s, "r.log");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Multi-byte and very long kernel names where racecheck prints the kernel: no panic.
        #[test]
        fn multi_byte_kernel_names_never_panic(name in crate::findings::fuzz::name()) {
            let _ = scan_str(&SHARED.replace("shift_left", &name), "r.log");
        }
    }
}

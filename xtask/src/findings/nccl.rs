//! PyTorch's NCCL flight recorder dump (`TORCH_FR_DUMP_TEMP_FILE` + rank, a pickle, as JSON):
//! per process group, the last collective enqueued, started and completed (`pg_status`), and
//! the collectives enqueued but not completed (`entries` whose `state` is not `completed`),
//! with their op (`profiling_name`), sequence id, sizes, dtypes and the frame of the user's
//! code that issued them. The rank comes from the file name (`nccl-trace-<rank>.json`,
//! `nccl_trace_0.json`: the digits that end its stem).
//!
//! Recognised by content ([`looks_like`]): a JSON object whose head names `entries` and
//! `pg_status`, `pg_config` or `profiling_name`. Read with serde_json into the few fields
//! used (the others are skipped as they stream), from at most [`MAX_BYTES`].
//!
//! Must not: do I/O beyond the reader it is given, print, or panic on any input. Memory is
//! bounded by [`MAX_BYTES`] and the caps on groups and collectives kept.

use std::io::Read;

use serde::Deserialize;
use serde_json::Value;

use super::names;
use super::{Evidence, Frame, NcclCollective, NcclGroup, NcclTrace, Tool};

/// Bytes of a dump read at most (the recorder keeps 2,000 entries by default: a few MiB).
pub const MAX_BYTES: u64 = 256 * 1024 * 1024;
/// Process groups and pending collectives per group kept.
const MAX_GROUPS: usize = 1024;
const MAX_PENDING: usize = 256;

/// Whether the first bytes of an input are a flight recorder dump as JSON.
pub fn looks_like(head: &[u8]) -> bool {
    let t = head.trim_ascii_start();
    let has = |needle: &[u8]| memchr::memmem::find(head, needle).is_some();
    t.first() == Some(&b'{')
        && has(b"\"entries\"")
        && (has(b"\"pg_status\"") || has(b"\"pg_config\"") || has(b"\"profiling_name\""))
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawDump {
    version: Option<Value>,
    pg_config: Option<serde_json::Map<String, Value>>,
    pg_status: Option<serde_json::Map<String, Value>>,
    entries: Vec<RawEntry>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawEntry {
    frames: Vec<RawFrame>,
    pg_id: Option<Value>,
    process_group: Option<Value>,
    collective_seq_id: Option<Value>,
    p2p_seq_id: Option<Value>,
    profiling_name: Option<String>,
    input_sizes: Option<Value>,
    output_sizes: Option<Value>,
    input_dtypes: Option<Value>,
    state: Option<String>,
    timeout_ms: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawFrame {
    name: Option<String>,
    filename: Option<String>,
    line: Option<Value>,
}

/// A number, also written as a string (`"4"`).
fn int(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `[[1024], [2, 3]]` -> the shapes; anything else, none.
fn shapes(v: &Option<Value>) -> Vec<Vec<u64>> {
    let Some(Value::Array(outer)) = v else { return Vec::new() };
    outer
        .iter()
        .take(64)
        .filter_map(|s| s.as_array().map(|d| d.iter().take(16).filter_map(Value::as_u64).collect()))
        .collect()
}

/// The rank a dump's file name gives: the digits ending its stem (`nccl-trace-3.json` -> 3).
pub fn rank_from_name(path: &str) -> Option<u32> {
    let name = names::base_name(path);
    let stem = name.split('.').next().unwrap_or(name);
    let digits = stem.bytes().rev().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits == stem.len() {
        return None;
    }
    stem[stem.len() - digits..].parse().ok()
}

/// The frame of the user's code that issued a collective: the innermost outside torch and
/// the standard library, else the outermost (`<module> (<stdin>:5)`).
fn issuer(frames: &[RawFrame]) -> Option<Frame> {
    let to_frame = |f: &RawFrame| Frame {
        function: f.name.clone(),
        file: f.filename.clone(),
        line: f.line.as_ref().and_then(int).and_then(|l| u32::try_from(l).ok()),
        module: None,
        python: true,
    };
    frames
        .iter()
        .find(|f| f.filename.as_deref().is_some_and(|p| !names::is_python_library(p)))
        .or(frames.last())
        .map(to_frame)
}

/// Reads a dump from `r` (at most [`MAX_BYTES`]) into `ev.nccl`; what cannot be read is a note.
pub fn parse<R: Read>(r: R, path: &str, ev: &mut Evidence) {
    let mut limited = r.take(MAX_BYTES);
    let raw: RawDump = match serde_json::from_reader(&mut limited) {
        Ok(d) => d,
        Err(e) => {
            let more = if limited.limit() == 0 {
                format!(" (read up to the limit of {MAX_BYTES} bytes)")
            } else {
                String::new()
            };
            ev.notes.push(format!("a NCCL flight recorder dump that could not be read: {e}{more}"));
            return;
        }
    };
    ev.saw(Tool::NcclFlightRecorder);
    ev.nccl = Some(summarise(raw, path));
}

fn summarise(raw: RawDump, path: &str) -> NcclTrace {
    let mut groups: Vec<NcclGroup> = Vec::new();
    let group = |groups: &mut Vec<NcclGroup>, id: &str| -> Option<usize> {
        if let Some(i) = groups.iter().position(|g| g.id == id) {
            return Some(i);
        }
        (groups.len() < MAX_GROUPS).then(|| {
            groups.push(NcclGroup { id: id.to_string(), ..NcclGroup::default() });
            groups.len() - 1
        })
    };
    if let Some(cfg) = &raw.pg_config {
        for (id, c) in cfg {
            let Some(i) = group(&mut groups, id) else { break };
            groups[i].desc = c.get("desc").and_then(text);
            groups[i].ranks = c.get("ranks").and_then(text);
        }
    }
    if let Some(st) = &raw.pg_status {
        for (id, s) in st {
            let Some(i) = group(&mut groups, id) else { break };
            groups[i].last_enqueued = s.get("last_enqueued_collective").and_then(int);
            groups[i].last_started = s.get("last_started_collective").and_then(int);
            groups[i].last_completed = s.get("last_completed_collective").and_then(int);
        }
    }
    for e in &raw.entries {
        if e.state.as_deref() == Some("completed") {
            continue;
        }
        let id = e
            .process_group
            .as_ref()
            .and_then(|p| p.as_array().and_then(|a| a.first()).and_then(text))
            .or_else(|| e.pg_id.as_ref().and_then(text))
            .unwrap_or_else(|| "?".to_string());
        let Some(i) = group(&mut groups, &id) else { continue };
        if groups[i].desc.is_none() {
            groups[i].desc = e.process_group.as_ref().and_then(|p| p.as_array()?.get(1).and_then(text));
        }
        if groups[i].pending.len() >= MAX_PENDING {
            continue;
        }
        let dtypes = match &e.input_dtypes {
            Some(Value::Array(a)) => a.iter().take(64).filter_map(text).collect(),
            _ => Vec::new(),
        };
        groups[i].pending.push(NcclCollective {
            op: e.profiling_name.clone().unwrap_or_else(|| "?".to_string()),
            seq: e.collective_seq_id.as_ref().and_then(int).and_then(|n| u64::try_from(n).ok()),
            p2p_seq: e
                .p2p_seq_id
                .as_ref()
                .and_then(int)
                .and_then(|n| u64::try_from(n).ok())
                .filter(|&n| n > 0),
            state: e.state.clone(),
            input_sizes: shapes(&e.input_sizes),
            output_sizes: shapes(&e.output_sizes),
            dtypes,
            issued_at: issuer(&e.frames),
            timeout_ms: e.timeout_ms.as_ref().and_then(int).and_then(|n| u64::try_from(n).ok()),
        });
    }
    NcclTrace {
        rank: rank_from_name(path),
        version: raw.version.as_ref().and_then(text),
        groups,
        entries: raw.entries.len() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::super::scan::scan_str;
    use super::*;

    const TRACE: &str = recording!("h200/hang/nccl_trace/nccl_trace_0.json");

    #[test]
    fn a_dump_where_every_collective_completed() {
        let ev = scan_str(TRACE, "rungs/05-x/nccl-trace-0.json");
        assert_eq!(ev.tools, vec![Tool::NcclFlightRecorder]);
        let t = ev.nccl.unwrap();
        assert_eq!((t.rank, t.version.as_deref(), t.entries), (Some(0), Some("2.10"), 4));
        assert_eq!(t.groups.len(), 1);
        let g = &t.groups[0];
        assert_eq!(
            (g.id.as_str(), g.desc.as_deref(), g.ranks.as_deref()),
            ("0", Some("default_pg"), Some("[0]"))
        );
        assert_eq!((g.last_enqueued, g.last_started, g.last_completed), (Some(4), Some(-1), Some(4)));
        assert!(g.pending.is_empty());
        assert_eq!(g.incomplete(), 0);
    }

    /// The recording with its last entry (the broadcast, seq 4) not completed, as a dump
    /// taken while it waited would show it: the collective is pending, with the user's frame.
    #[test]
    fn a_collective_not_completed_is_pending_with_its_issuer() {
        let mut v: Value = serde_json::from_str(TRACE).unwrap();
        v["entries"][3]["state"] = Value::from("started");
        v["pg_status"]["0"]["last_completed_collective"] = Value::from(3);
        let ev = scan_str(&serde_json::to_string_pretty(&v).unwrap(), "nccl_trace_1.json");
        let t = ev.nccl.unwrap();
        assert_eq!(t.rank, Some(1));
        let g = &t.groups[0];
        assert_eq!(g.incomplete(), 1);
        let c = &g.pending[0];
        assert_eq!((c.op.as_str(), c.seq, c.state.as_deref()), ("nccl:broadcast", Some(4), Some("started")));
        assert_eq!((c.input_sizes.clone(), c.dtypes.clone()), (vec![vec![1024]], vec!["Float".to_string()]));
        let f = c.issued_at.as_ref().unwrap();
        assert_eq!(
            (f.function.as_deref(), f.file.as_deref(), f.line),
            (Some("<module>"), Some("<stdin>"), Some(6))
        );
        assert_eq!(c.timeout_ms, Some(600_000));
    }

    #[test]
    fn ranks_from_names_and_what_is_not_a_dump() {
        assert_eq!(rank_from_name("b/rungs/07-hang/nccl-trace-12.json"), Some(12));
        assert_eq!(rank_from_name("trace.json"), None);
        assert_eq!(rank_from_name("7.json"), None);
        assert!(looks_like(TRACE.as_bytes()));
        assert!(!looks_like(b"{\"verdict\": null, \"entries\": []}"));
        // Cut short: a note, nothing kept.
        let ev = scan_str(&TRACE[..TRACE.len() / 2], "nccl_trace_0.json");
        assert!(ev.nccl.is_none());
        assert!(ev.notes.iter().any(|n| n.contains("could not be read")), "{:?}", ev.notes);
    }

    crate::findings::fuzz::multi_byte_kernel_names_never_panic!("nccl-trace-0.json");
}

//! What cuda-gdb says about instructions: `x/i` lines (the address, the symbol, the
//! instruction at the current or error PC), the SASS access kind and memory space of a
//! mnemonic, the `BPT.TRAP` of `__trap()`, and `info line *ADDR`'s line range.
//!
//! Must not: do I/O, spawn processes, print, or panic on any input.

use super::text::{cut, MAX_NAME};
use crate::findings::{parse_hex, SourceLoc};

/// One answer of `info line *ADDR`: the code of `line` of `file` is in `[start, end)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LineRange {
    pub(super) loc: SourceLoc,
    pub(super) start: u64,
    pub(super) end: u64,
}

/// `Line 26 of "/w/paged_kv.cu" starts at address 0x7f99..0100 <_Z16..+256> and ends at
/// 0x7f99..0140 <_Z16..+320>.` (gdb's `info line`, recorded by cuda-gdb 13 on the H200).
pub(super) fn parse_line_range(line: &str) -> Option<LineRange> {
    let rest = line.strip_prefix("Line ")?;
    let (n, rest) = rest.split_once(" of \"")?;
    let (file, rest) = rest.split_once("\" starts at address ")?;
    let (start, rest) = rest.split_once(' ')?;
    let (_, end) = rest.split_once(" and ends at ")?;
    let end = end.split([' ', '.']).next()?;
    Some(LineRange {
        loc: SourceLoc { file: cut(file, MAX_NAME), line: n.parse().ok()? },
        start: parse_hex(start)?,
        end: parse_hex(end)?,
    })
}

/// Whether a SASS instruction is the trap `__trap()` compiles to (`BPT.TRAP 0x1`), predicated
/// or not.
pub(super) fn is_trap_instruction(ins: &str) -> bool {
    let mut words = ins.split_whitespace();
    let op = match words.next() {
        Some(w) if w.starts_with('@') => words.next(),
        w => w,
    };
    op.is_some_and(|o| o.starts_with("BPT.TRAP"))
}

/// The address and the symbol of an `x/i` line: `=> 0x7f19.. <_Z7consumePViPiPf+288>:` ->
/// (`0x7f19..`, `_Z7consumePViPiPf`).
pub(super) fn instruction_address(line: &str) -> (Option<u64>, Option<&str>) {
    let rest = line.get(3..).unwrap_or("");
    let (addr, tail) = rest.split_once(' ').unwrap_or((rest, ""));
    let sym = tail
        .strip_prefix('<')
        .and_then(|t| t.split_once(">:"))
        .map(|(s, _)| s.rsplit_once('+').map(|(n, _)| n).unwrap_or(s))
        .filter(|s| !s.is_empty());
    (parse_hex(addr), sym)
}

/// The instruction of an `x/i` line marked as the current (`=>`) or error (`*>`) PC.
pub(super) fn errorpc_instruction(line: &str) -> Option<String> {
    let rest = line.strip_prefix("*> ").or_else(|| line.strip_prefix("=> "))?;
    if !rest.starts_with("0x") {
        return None;
    }
    let (_, ins) = rest.split_once(">:")?;
    let ins = ins.trim();
    (!ins.is_empty()).then(|| ins.chars().take(200).collect())
}

/// The memory space and kind of access of a SASS instruction, from its mnemonic: `LDS`,
/// `STS`, `ATOMS` are shared memory; `LDL`, `STL` local; `LDG`, `STG`, `ATOMG`, `RED` global;
/// `LD`, `ST`, `ATOM` generic (the address decides, so the space stays unknown).
pub fn sass_access(instruction: &str) -> Option<crate::findings::Access> {
    // A predicate (`@P0 `, `@!P1 `) may come first.
    let mut words = instruction.split_whitespace();
    let mut op = words.next()?;
    if op.starts_with('@') {
        op = words.next()?;
    }
    let base = op.split('.').next().unwrap_or(op);
    let (kind, space) = match base {
        "LDS" | "LDSM" => ("read", Some("shared")),
        "STS" => ("write", Some("shared")),
        "ATOMS" => ("atomic", Some("shared")),
        "LDL" => ("read", Some("local")),
        "STL" => ("write", Some("local")),
        "LDG" | "LDGSTS" => ("read", Some("global")),
        "STG" => ("write", Some("global")),
        "ATOMG" | "RED" => ("atomic", Some("global")),
        "LD" => ("read", None),
        "ST" => ("write", None),
        "ATOM" => ("atomic", None),
        _ => return None,
    };
    // The access size, where the mnemonic has one (`.32`, `.64`, `.128`, `.U8`, `.E.64`).
    let size = op.split('.').skip(1).find_map(|m| {
        let digits = m.trim_start_matches(['U', 'S']);
        match digits.parse::<u64>() {
            Ok(bits @ (8 | 16 | 32 | 64 | 128)) => Some(bits / 8),
            _ => None,
        }
    });
    Some(crate::findings::Access {
        kind: Some(kind.to_string()),
        space: space.map(str::to_string),
        size,
        ..crate::findings::Access::default()
    })
}

//! Which kernels of a binary can race or misuse a barrier, read from its SASS
//! (`cuobjdump -sass BINARY`): a kernel touches shared memory when one of its instructions
//! loads, stores or reduces there (`LDS`, `STS`, `ATOMS`, `LDSM`, `STSM`, the async copies
//! and the tensor-memory copies into it, the mbarrier operations `SYNCS`, and the generic
//! `LD`/`ST`/`ATOM`/`RED`, which may address it), and it synchronises when it waits at a
//! block barrier (`BAR`), a warp barrier (`WARPSYNC`) or an mbarrier (`SYNCS`). racecheck finds
//! only races on shared memory and synccheck only barrier misuse, so the sanitizer rungs scope
//! themselves to these kernels and skip a binary that has none (docs/ladder.md, "The sweep").
//!
//! Must not: run cuobjdump or read files (it takes a reader), or take a missing listing for one
//! without kernels: [`select`] reads a binary whose listing could not be had (the ladder gives
//! only those of a `cuobjdump` that exited 0) as "not known".

use std::collections::BTreeMap;
use std::io::BufRead;

/// Lines longer than this are skipped (an instruction line is under 200 bytes).
const MAX_LINE: usize = 64 * 1024;

/// What one kernel's SASS does, of what the race and barrier checks need.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelUse {
    /// It loads from, stores to or reduces into shared memory (or may, through a generic address).
    pub shared: bool,
    /// It waits at a block, warp or memory barrier.
    pub syncs: bool,
}

/// The kernels of one `cuobjdump -sass` listing, by mangled name, in name order (a kernel
/// compiled for several architectures is the union of its listings).
pub fn kernels(reader: impl BufRead) -> BTreeMap<String, KernelUse> {
    let mut out: BTreeMap<String, KernelUse> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in reader.split(b'\n') {
        let Ok(line) = line else { break };
        if line.len() > MAX_LINE {
            continue;
        }
        let line = String::from_utf8_lossy(&line);
        let t = line.trim();
        if let Some(name) = t.strip_prefix("Function : ") {
            let name = name.trim();
            if !name.is_empty() && !name.contains(char::is_whitespace) {
                out.entry(name.to_string()).or_default();
                current = Some(name.to_string());
            }
            continue;
        }
        let (Some(name), Some(op)) = (&current, opcode(t)) else { continue };
        let u = out.entry(name.clone()).or_default();
        u.shared |= touches_shared(op);
        u.syncs |= synchronises(op);
    }
    out
}

/// The opcode of an instruction line (`/*00b0*/  @!P0 STS [R5], R2 ;`), without its modifiers
/// (`BAR` of `BAR.SYNC.DEFER_BLOCKING`).
fn opcode(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("/*")?;
    let (addr, rest) = rest.split_once("*/")?;
    if addr.is_empty() || !addr.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut words = rest.split_whitespace();
    let mut op = words.next()?;
    if op.starts_with('@') {
        op = words.next()?;
    }
    let base = op.split(['.', ';']).next().unwrap_or(op);
    (!base.is_empty() && base.bytes().all(|b| b.is_ascii_alphanumeric())).then_some(base)
}

fn touches_shared(op: &str) -> bool {
    matches!(
        op,
        "LDS"
            | "STS"
            | "ATOMS"
            | "LDSM"
            | "STSM"
            | "STAS"
            | "LDGSTS"
            | "SYNCS"
            | "UTMALDG"
            | "UTMASTG"
            | "UTMAREDG"
            | "UBLKCP"
            | "UBLKRED"
            | "LD"
            | "ST"
            | "ATOM"
            | "RED"
    )
}

fn synchronises(op: &str) -> bool {
    matches!(op, "BAR" | "WARPSYNC" | "SYNCS")
}

/// The names of the kernels that `pick` selects, over listings read whole; `None` when a
/// listing is missing (then nothing is known of its kernels).
pub fn select(
    listings: &[Option<BTreeMap<String, KernelUse>>],
    pick: fn(&KernelUse) -> bool,
) -> Option<Vec<String>> {
    let mut names = Vec::new();
    for l in listings {
        names.extend(l.as_ref()?.iter().filter(|(_, u)| pick(u)).map(|(n, _)| n.clone()));
    }
    names.sort();
    names.dedup();
    Some(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> BTreeMap<String, KernelUse> {
        kernels(text.as_bytes())
    }

    const SHARED: KernelUse = KernelUse { shared: true, syncs: true };

    #[test]
    fn reads_the_recorded_listings_of_the_h200() {
        // clean_layers.cu: a tiled transpose and a block RMSNorm through shared memory, with
        // barriers; a row sum through warp shuffles only (no shared memory, no barrier).
        let k = read(recording!("h200/scope/clean_layers.sass.txt"));
        assert_eq!(k.len(), 3, "{k:?}");
        assert_eq!(k["_Z15transpose_tiledPKfPfii"], SHARED);
        assert_eq!(k["_Z8rms_normPKfS0_Pfif"], SHARED);
        assert_eq!(k["_Z8row_sumsPKfPfii"], KernelUse { shared: false, syncs: false });
        // A bounds-checked store: neither.
        let k = read(recording!("h200/scope/oob_write.sass.txt"));
        assert_eq!(k["_Z11scale_writePfix"], KernelUse::default());
        // The warp row sum that races through shared memory between the warps of a block.
        assert!(read(recording!("h200/scope/rowsum.sass.txt"))["_Z8row_sumsPKfPfii"].shared);
        // `__syncwarp(mask)` with a partial mask: a warp barrier, no shared memory.
        let k = read(recording!("h200/scope/expert_offsets.sass.txt"));
        assert!(k["_Z14expert_offsetsPKiPii"].syncs, "{k:?}");
        // barrier.cu: a half-warp `__syncwarp` and a block barrier, in two kernels.
        let k = read(recording!("h200/scope/barrier.sass.txt"));
        assert!(k["_Z14half_warp_syncPfi"].syncs && k["_Z9normalizePfi"].syncs, "{k:?}");
    }

    #[test]
    fn opcodes_with_predicates_and_modifiers() {
        assert_eq!(opcode("/*0060*/              @!P0 STS [UR4], RZ ;  /* 0x0 */"), Some("STS"));
        assert_eq!(opcode("/*0070*/   BAR.SYNC.DEFER_BLOCKING 0x0 ;"), Some("BAR"));
        assert_eq!(opcode("/*0b30*/ EXIT ;"), Some("EXIT"));
        assert_eq!(opcode("/* 0x000fe20000000800 */"), None);
        assert_eq!(opcode("/*zz*/ STS"), None);
        assert_eq!(opcode(".headerflags @\"EF_CUDA_SM90\""), None);
        // Global loads and stores are no shared access; generic ones may be.
        assert!(!touches_shared("LDG") && !touches_shared("STG") && !touches_shared("LDC"));
        assert!(touches_shared("LD") && touches_shared("ATOMS"));
    }

    #[test]
    fn select_needs_every_listing() {
        let one = read(recording!("h200/scope/clean_layers.sass.txt"));
        let shared = select(&[Some(one.clone())], |u| u.shared).unwrap();
        assert_eq!(shared, ["_Z15transpose_tiledPKfPfii", "_Z8rms_normPKfS0_Pfif"]);
        assert_eq!(select(&[Some(one), None], |u| u.shared), None);
        assert_eq!(select(&[], |u| u.syncs), Some(vec![]));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        /// Garbage, truncated and multi-byte listings never panic, and a cut listing never
        /// gains a kernel it does not name.
        #[test]
        fn garbage_and_cut_listings_never_panic(cut in 0usize..40_000, junk in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2000)) {
            let text = recording!("h200/scope/transpose.sass.txt").as_bytes();
            let mut bytes = text[..cut.min(text.len())].to_vec();
            bytes.extend_from_slice(&junk);
            bytes.extend_from_slice("\t\tFunction : _Z3ü日😀\n /*0000*/ STS ;\n".as_bytes());
            let k = kernels(&bytes[..]);
            proptest::prop_assert!(k.len() <= 2);
        }
    }
}

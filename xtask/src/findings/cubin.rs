//! Which kernels of a binary have shared memory, read from its device code's ELF sections
//! (`cuobjdump -elf BINARY`): each kernel's code is a `.text.<mangled name>` section, and a
//! kernel that can touch shared memory has a `.nv.shared.<mangled name>` section (its static
//! shared memory, or the reservation that a kernel using `extern __shared__` gets, which nvcc
//! gives every kernel of such a translation unit). racecheck finds only races on shared memory,
//! so its rung scopes itself to these kernels and skips a binary that has none (docs/ladder.md,
//! "The sweep"). The ELF listing takes milliseconds where the SASS (`cuobjdump -sass`, through
//! nvdisasm) took 1.3 s of a tiny binary on the H200; barriers are not read from either (a
//! `__syncwarp(mask)` the compiler dropped from the SASS, tests/fixtures/h200/scope/barrier.sass.txt,
//! is still synccheck's error).
//!
//! Must not: run cuobjdump or read files (it takes a reader), or take a missing listing for one
//! without kernels: [`select`] reads a binary whose listing could not be had (the ladder passes
//! only those of a `cuobjdump` that exited 0) as "not known".

use std::collections::BTreeMap;
use std::io::BufRead;

/// Lines longer than this are skipped (a section header line is under 200 bytes).
const MAX_LINE: usize = 64 * 1024;

/// The kernels of one `cuobjdump -elf` listing, by mangled name, in name order, each with
/// whether it has shared memory (a binary with code for several architectures lists each
/// kernel once per architecture: the union is taken).
pub fn kernels(reader: impl BufRead) -> BTreeMap<String, bool> {
    let mut out: BTreeMap<String, bool> = BTreeMap::new();
    for line in reader.split(b'\n') {
        let Ok(line) = line else { break };
        if line.len() > MAX_LINE {
            continue;
        }
        let line = String::from_utf8_lossy(&line);
        // Section header rows: `  18  5180  580  0 80  PROGBITS  6  3  14 .text._Z15transpose_tiledPKfPfii`.
        let Some(last) = line.split_whitespace().next_back() else { continue };
        if !line.contains("PROGBITS") && !line.contains("NOBITS") {
            continue;
        }
        if let Some(name) = last.strip_prefix(".text.").filter(|n| is_symbol(n)) {
            out.entry(name.to_string()).or_insert(false);
        } else if let Some(name) =
            last.strip_prefix(".nv.shared.").filter(|n| is_symbol(n) && !n.starts_with("reserved."))
        {
            out.insert(name.to_string(), true);
        }
    }
    out
}

fn is_symbol(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b == b'.')
}

/// The names of the kernels that have shared memory, over listings read whole; `None` when a
/// listing is missing (then nothing is known of its kernels).
pub fn select(listings: &[Option<BTreeMap<String, bool>>]) -> Option<Vec<String>> {
    let mut names = Vec::new();
    for l in listings {
        names.extend(l.as_ref()?.iter().filter(|(_, shared)| **shared).map(|(n, _)| n.clone()));
    }
    names.sort();
    names.dedup();
    Some(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> BTreeMap<String, bool> {
        kernels(text.as_bytes())
    }

    #[test]
    fn reads_the_recorded_listings_of_the_h200() {
        // clean_layers.cu: a tiled transpose and a block RMSNorm through shared memory; a row
        // sum through warp shuffles only.
        let k = read(recording!("h200/scope/clean_layers.elf.txt"));
        let want: BTreeMap<String, bool> = [
            ("_Z15transpose_tiledPKfPfii", true),
            ("_Z8rms_normPKfS0_Pfif", true),
            ("_Z8row_sumsPKfPfii", false),
        ]
        .map(|(n, s)| (n.to_string(), s))
        .into();
        assert_eq!(k, want);
        // A bounds-checked store, and barrier.cu's two kernels: global memory only.
        assert_eq!(
            read(recording!("h200/scope/oob_write.elf.txt")),
            [("_Z11scale_writePfix".to_string(), false)].into()
        );
        let k = read(recording!("h200/scope/barrier.elf.txt"));
        assert_eq!((k.len(), k.values().filter(|s| **s).count()), (2, 0), "{k:?}");
        // The race programs' kernels have it.
        assert!(read(recording!("h200/scope/transpose.elf.txt"))["_Z15transpose_tiledPKfPfii"]);
        assert!(read(recording!("h200/scope/rowsum.elf.txt"))["_Z8row_sumsPKfPfii"]);
    }

    #[test]
    fn select_needs_every_listing() {
        let one = read(recording!("h200/scope/clean_layers.elf.txt"));
        assert_eq!(
            select(&[Some(one.clone())]).unwrap(),
            ["_Z15transpose_tiledPKfPfii", "_Z8rms_normPKfS0_Pfif"]
        );
        assert_eq!(select(&[Some(one), None]), None);
        assert_eq!(select(&[]), Some(vec![]));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        /// Garbage, truncated and multi-byte listings never panic, and a cut listing never
        /// gains a kernel it does not name.
        #[test]
        fn garbage_and_cut_listings_never_panic(cut in 0usize..40_000, junk in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2000)) {
            let text = recording!("h200/scope/transpose.elf.txt").as_bytes();
            let mut bytes = text[..cut.min(text.len())].to_vec();
            bytes.extend_from_slice(&junk);
            bytes.extend_from_slice("\n 1a 0 0 0 4 NOBITS 43 0 17 .nv.shared._Z3ü日😀\n".as_bytes());
            let k = kernels(&bytes[..]);
            proptest::prop_assert!(k.len() <= 1, "{:?}", k);
        }
    }
}

//! Whether a host executable holds the host stubs of CUDA kernels (`__device_stub__...`, the
//! functions nvcc writes for each kernel a translation unit defines), read from its ELF symbol
//! names. A binary that has them is one whose disassembly names where its kernels are launched
//! ([`crate::findings::launch_sites`]), so the armed run can start at full speed while that
//! disassembly is read beside it, rather than after it: `objdump -d -l` of a small program
//! statically linked with cudart takes 0.2 s, of a large one a minute.
//!
//! Must not: open files (it takes a reader), read more than the section headers and the symbol
//! names (never the code), or trust a size or offset the file states: every read is bounded by
//! [`MAX_NAMES`] and by the reader's own length, and a file that is not a 64-bit little-endian
//! ELF is "not known" (`None`), never an error.

use std::io::{Read, Seek, SeekFrom};

/// The most bytes of symbol names read (`.strtab`, a megabyte at a time): a binary of hundreds
/// of megabytes has tens of megabytes of names; past this the answer is "not known".
pub const MAX_NAMES: u64 = 1 << 30;

/// The most section headers read (ELF allows 65,535 before the extended numbering this does
/// not follow).
const MAX_SECTIONS: u16 = 0xff00;

/// What a kernel's host stub is called (`__device_stub__Z10scale_...`).
const STUB: &[u8] = b"__device_stub__";

/// `Some(true)` when the ELF file `r` has a symbol table whose names include a kernel's host
/// stub, `Some(false)` when it has none (no symbol table: a stripped binary; or no kernels in
/// it: they live in a shared library), `None` when it is not a 64-bit little-endian ELF file or
/// cannot be read.
pub fn kernel_stubs(r: &mut (impl Read + Seek)) -> Option<bool> {
    let len = r.seek(SeekFrom::End(0)).ok()?;
    let header = read_at(r, len, 0, 64)?;
    if header[..4] != *b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return None;
    }
    let shoff = u64_at(&header, 0x28);
    let shentsize = u16_at(&header, 0x3a);
    let shnum = u16_at(&header, 0x3c);
    if shoff == 0 || shnum == 0 {
        return Some(false);
    }
    if shnum > MAX_SECTIONS || shentsize < 64 {
        return None;
    }
    let table = read_at(r, len, shoff, u64::from(shentsize) * u64::from(shnum))?;
    let section = |i: usize| table.get(i * usize::from(shentsize)..(i + 1) * usize::from(shentsize));
    // The symbol table's names: the string table its `sh_link` points at (SHT_SYMTAB = 2).
    let symtab = (0..usize::from(shnum)).filter_map(section).find(|s| u32_at(s, 4) == 2);
    let Some(symtab) = symtab else { return Some(false) };
    let strtab = section(u32_at(symtab, 0x28) as usize)?;
    let (offset, size) = (u64_at(strtab, 0x18), u64_at(strtab, 0x20));
    if size > MAX_NAMES {
        return None;
    }
    contains(r, len, offset, size, STUB)
}

/// Whether `size` bytes of `r` from `offset` contain `needle`, read a chunk at a time (each
/// chunk overlapping the last by the needle's length less one).
fn contains(r: &mut (impl Read + Seek), len: u64, offset: u64, size: u64, needle: &[u8]) -> Option<bool> {
    const CHUNK: u64 = 1 << 20;
    let keep = needle.len() as u64 - 1;
    let end = offset.checked_add(size).filter(|&e| e <= len)?;
    let mut at = offset;
    while at < end {
        let n = CHUNK.min(end - at);
        let chunk = read_at(r, len, at, n)?;
        if memchr::memmem::find(&chunk, needle).is_some() {
            return Some(true);
        }
        if at + n == end {
            break;
        }
        at += n - keep.min(n - 1);
    }
    Some(false)
}

/// `n` bytes of `r` (whose length is `len`) from `offset`; `None` past its end.
fn read_at(r: &mut (impl Read + Seek), len: u64, offset: u64, n: u64) -> Option<Vec<u8>> {
    if offset.checked_add(n)? > len {
        return None;
    }
    r.seek(SeekFrom::Start(offset)).ok()?;
    let mut buf = vec![0; usize::try_from(n).ok()?];
    r.read_exact(&mut buf).ok()?;
    Some(buf)
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or_default())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Cursor;

    /// Built from tests/gpu/programs/oob_write.cu with the PyPI nvcc 13.5 of CI
    /// (tests/fixtures/elf/README.md says how).
    fn binary(name: &str) -> Vec<u8> {
        std::fs::read(format!("{}/../tests/fixtures/elf/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    }

    #[test]
    fn a_cuda_program_has_its_kernel_stubs_until_it_is_stripped() {
        assert_eq!(kernel_stubs(&mut Cursor::new(binary("oob_write"))), Some(true));
        assert_eq!(kernel_stubs(&mut Cursor::new(binary("oob_write_nog"))), Some(true));
        assert_eq!(kernel_stubs(&mut Cursor::new(binary("oob_write_stripped"))), Some(false));
    }

    #[test]
    fn a_program_without_kernels_has_none() {
        // This test's own executable: an ELF file with a symbol table and no kernel stub
        // symbol (the constant above is data, not a symbol's name).
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert_eq!(kernel_stubs(&mut Cursor::new(me)), Some(false));
    }

    #[test]
    fn what_is_not_an_elf_file_is_not_known() {
        assert_eq!(kernel_stubs(&mut Cursor::new(b"#!/bin/sh\nexec python3 serve.py\n".to_vec())), None);
        assert_eq!(kernel_stubs(&mut Cursor::new(Vec::new())), None);
        // A 32-bit ELF header.
        let mut elf32 = binary("oob_write");
        elf32[4] = 1;
        assert_eq!(kernel_stubs(&mut Cursor::new(elf32)), None);
    }

    #[test]
    fn a_truncated_binary_is_not_known() {
        let whole = binary("oob_write");
        // Cut before its section headers (at the end of the file): not known, no panic.
        let cut = whole[..whole.len() - 100].to_vec();
        assert_eq!(kernel_stubs(&mut Cursor::new(cut)), None);
    }

    #[test]
    fn a_name_across_two_chunks_is_found() {
        // The stub's name straddles the first megabyte's end, then lies wholly in the second.
        for start in [(1 << 20) - 5, (1 << 20) + 7] {
            let mut names = vec![b'x'; 3 << 20];
            names[start..start + STUB.len()].copy_from_slice(STUB);
            let len = names.len() as u64;
            assert_eq!(contains(&mut Cursor::new(&names), len, 0, len, STUB), Some(true), "at {start}");
        }
        let none = vec![b'x'; 3 << 20];
        assert_eq!(contains(&mut Cursor::new(&none), 3 << 20, 0, 3 << 20, STUB), Some(false));
        // A size past the file's end is not known.
        assert_eq!(contains(&mut Cursor::new(&none), 3 << 20, 1, 3 << 20, STUB), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Garbage written over a real binary's header and section table never panics, and
        /// never reads past the file.
        #[test]
        fn damaged_binaries_never_panic(edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..64)) {
            let mut b = binary("oob_write");
            let n = b.len();
            for (at, byte) in edits {
                // Half the edits land in the 64-byte header, half anywhere.
                let i = if byte % 2 == 0 { at.index(64) } else { at.index(n) };
                b[i] = byte;
            }
            let _ = kernel_stubs(&mut Cursor::new(b));
        }
    }
}

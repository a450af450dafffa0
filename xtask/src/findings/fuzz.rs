//! In tests only: what every parser's property tests feed it to hunt for panics on names.
//! Kernel names of multi-byte UTF-8 (two-, three- and four-byte characters: accents, CJK,
//! emoji, bidirectional controls), names of 5,000 characters and more, the same names as XML
//! character references (`&#x1F600;`) and entities, invalid UTF-8 spliced into bytes; all
//! put into real lines from the recordings (tests/fixtures/h200), at the kernel's place.
//!
//! Must not: be compiled outside tests (`findings/mod.rs` declares it `#[cfg(test)]`), read
//! files (the recordings come in through `include_str!`), or assert anything about what a
//! parser finds: only that nothing panics and the whole pipeline (scan, decide, render) ends.

use proptest::prelude::*;
use proptest::sample::Index;

use super::render::{render_json, render_text};
use super::scan::scan_reader;
use super::verdict::{decide, kernel_filter, Analysis};
use super::Evidence;

/// The property test every line parser's module gets: a multi-byte, invalid or very long
/// kernel name spliced into that parser's own recordings (`files`, as [`real`] names them)
/// never panics the pipeline.
macro_rules! multi_byte_kernel_names_never_panic {
    ($($file:literal),+) => {
        proptest::proptest! {
            #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]
            #[test]
            fn multi_byte_kernel_names_never_panic(
                which in proptest::prelude::any::<proptest::sample::Index>(),
                name in crate::findings::fuzz::name(),
                edits in crate::findings::fuzz::invalid_edits(),
            ) {
                let reals: Vec<_> =
                    [$($file),+].iter().flat_map(|f| crate::findings::fuzz::real(f)).collect();
                let _ = crate::findings::fuzz::splice_and_run(&reals, which, &name, &edits);
            }
        }
    };
}
pub(crate) use multi_byte_kernel_names_never_panic;

/// A real recording and the kernel name it prints, to be replaced by a generated one.
pub struct Real {
    /// The file name it is scanned as (`memcheck.xml` makes no difference: content decides).
    pub file: &'static str,
    pub text: &'static str,
    /// The kernel's identifier, as it stands in the recording (also inside mangled names).
    pub kernel: &'static str,
    /// How many lines of it to use (the first ones), so that a case stays quick.
    pub lines: usize,
}

impl Real {
    /// The first [`Real::lines`] lines of the recording.
    pub fn excerpt(&self) -> &'static str {
        let end: usize = self.text.split_inclusive('\n').take(self.lines).map(str::len).sum();
        &self.text[..end]
    }
}

/// Real output of every tool the parsers read, from tests/fixtures/h200, with the kernel each
/// names: memcheck (text and XML), cuda-gdb (coredump and attach, with and without `-G`), the
/// coredump progress stream with its stack trace, the program (PyTorch's and CUDA's
/// device-assert lines), Python's faulthandler stacks, a CPU core's `thread apply all bt`, the
/// waits-on-exception notice, and a hang's: cuda-gdb on user-triggered dumps, py-spy, the NCCL
/// flight recorder's JSON.
pub const REAL: &[Real] = &[
    Real {
        file: "memcheck.log",
        text: recording!("h200/oob_write/memcheck.log"),
        kernel: "scale_write",
        lines: 20,
    },
    Real {
        file: "memcheck.log",
        text: recording!("h200/templated/memcheck.log"),
        kernel: "axpy_vec",
        lines: 20,
    },
    Real {
        file: "memcheck.xml",
        text: recording!("h200/oob_read/memcheck.xml"),
        kernel: "gather_rows",
        lines: 200,
    },
    Real {
        file: "cudagdb-core-1.log",
        text: recording!("h200/oob_write/cudagdb-core-1.log"),
        kernel: "scale_write",
        lines: 60,
    },
    Real {
        file: "attach.log",
        text: recording!("h200/oob_write_G/attach.log"),
        kernel: "scale_write",
        lines: 60,
    },
    Real {
        file: "cudagdb-merged-1.log",
        text: recording!("h200/shared_atomic/cudagdb-merged-1.log"),
        kernel: "histogram",
        lines: 60,
    },
    Real {
        file: "coredump.log",
        text: recording!("h200/templated/coredump.log"),
        kernel: "axpy_vec",
        lines: 200,
    },
    Real {
        file: "baseline.log",
        text: recording!("h200/torch_assert/baseline.log"),
        kernel: "nll_loss_forward_reduce_cuda_kernel_2d",
        lines: 20,
    },
    Real {
        file: "baseline.log",
        text: recording!("h200/device_assert/baseline.log"),
        kernel: "check_labels",
        lines: 20,
    },
    // Python's faulthandler stacks at the driver's abort: a Triton launch (the kernel's
    // launching function), a spawned worker (its name is in the path too).
    Real {
        file: "faulthandler.log",
        text: recording!("h200/faulthandler/E1_p01_triton_rope_partial.1.log"),
        kernel: "apply_rope",
        lines: 20,
    },
    Real {
        file: "faulthandler.log",
        text: recording!("h200/faulthandler/E1_p03_spawn_worker.1.log"),
        kernel: "worker",
        lines: 20,
    },
    Real {
        file: "cpucore-gdb.log",
        text: recording!("h200/shared_atomic/cpucore-gdb.log"),
        kernel: "histogram",
        lines: 200,
    },
    Real {
        file: "waits.log",
        text: recording!("h200/oob_write/waits.log"),
        kernel: "scale_write",
        lines: 20,
    },
    // A hang: cuda-gdb on user-triggered dumps (threads table with a CUDA header's long path,
    // inline chain in `bt`, warps; a dump with no kernel), py-spy, the flight recorder's JSON.
    Real {
        file: "cudagdb-hang.log",
        text: recording!("h200/hang/hang_flag/cudagdb_1.log"),
        kernel: "consume",
        lines: 40,
    },
    Real {
        file: "cudagdb-hang.log",
        text: recording!("h200/hang/hang_two_procs/cudagdb_1.log"),
        kernel: "wait_for_peer",
        lines: 40,
    },
    Real {
        file: "cudagdb-hang.log",
        text: recording!("h200/hang/hang_two_procs/cudagdb_2.log"),
        kernel: "CUDA",
        lines: 40,
    },
    Real {
        file: "pyspy.log",
        text: recording!("h200/hang/hang_triton/pyspy_845.log"),
        kernel: "synchronize",
        lines: 40,
    },
    Real {
        file: "pyspy.log",
        text: recording!("h200/hang/hang_two_procs/pyspy_1190.log"),
        kernel: "worker",
        lines: 40,
    },
    Real {
        file: "nccl-trace-0.json",
        text: recording!("h200/hang/nccl_trace/nccl_trace_0.json"),
        kernel: "all_reduce",
        lines: 400,
    },
];

/// The recordings of one file name (`memcheck.log`, `coredump.log`, ...).
pub fn real(file: &str) -> Vec<&'static Real> {
    let found: Vec<&Real> = REAL.iter().filter(|r| r.file == file).collect();
    assert!(!found.is_empty(), "no recording named {file}");
    found
}

/// Splices `name` into one of `reals` (picked by `which`), with `edits`, and runs the
/// pipeline on it: the property every parser's test checks.
pub fn splice_and_run(reals: &[&Real], which: Index, name: &str, edits: &[(Index, Index)]) -> Analysis {
    let r = reals[which.index(reals.len())];
    let bytes = spliced(r.excerpt(), r.kernel, name, edits);
    pipeline(&[(&bytes, r.file)])
}

/// One character beyond ASCII, of two, three or four bytes in UTF-8.
pub const WIDE: &str = "[\\u{80}-\\u{10FFFF}]";

/// Pieces a kernel name is made of: identifiers, multi-byte runs, and the punctuation that
/// names carry (`::`, templates, the anonymous namespace).
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[A-Za-z_][A-Za-z0-9_]{0,8}",
        3 => "[\\u{80}-\\u{10FFFF}]{1,4}",
        1 => prop::sample::select(vec!["核", "函数", "😀", "🔥", "é", "ß", "\u{202E}", "\u{301}", "\u{FEFF}", "𝔘"])
            .prop_map(str::to_string),
        1 => prop::sample::select(vec!["::", "<", ">", "(", ")", "(anonymous namespace)", ", ", "*", "void "])
            .prop_map(str::to_string),
    ]
}

/// A kernel name: mostly short, mixed pieces; one in five of 5,000 to 6,000 characters.
pub fn name() -> BoxedStrategy<String> {
    let short = || prop::collection::vec(piece(), 1..12).prop_map(|p| p.concat());
    let long = (short(), 5_000usize..6_000).prop_map(|(s, n)| s.chars().cycle().take(n).collect());
    prop_oneof![4 => short(), 1 => long].boxed()
}

/// Invalid UTF-8: a lone continuation byte, truncated sequences, an overlong `/`, a UTF-16
/// surrogate, bytes that never occur.
pub const INVALID: &[&[u8]] = &[
    b"\x80",
    b"\xbf",
    b"\xc3",
    b"\xe2\x82",
    b"\xf0\x9f\x98",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    b"\xff",
    b"\xfe\xfe",
];

/// Where to put invalid bytes: (position, which of [`INVALID`]).
pub fn invalid_edits() -> impl Strategy<Value = Vec<(Index, Index)>> {
    prop::collection::vec((any::<Index>(), any::<Index>()), 0..8)
}

/// `text` with every `kernel` replaced by `name`, as bytes with the invalid sequences of
/// `edits` inserted (anywhere, also inside a multi-byte character).
pub fn spliced(text: &str, kernel: &str, name: &str, edits: &[(Index, Index)]) -> Vec<u8> {
    let mut b = text.replace(kernel, name).into_bytes();
    for (at, which) in edits {
        let at = at.index(b.len() + 1);
        let bad = INVALID[which.index(INVALID.len())];
        b.splice(at..at, bad.iter().copied());
    }
    b
}

/// The Itanium-mangled form of a function `name(int*, int)`: `_Z<bytes><name>Pii`, which
/// `cpp_demangle` is then given with whatever the name holds.
pub fn mangled(name: &str) -> String {
    format!("_Z{}{name}Pii", name.len())
}

/// `name` escaped for XML text the way a writer may: every non-ASCII character as a
/// character reference, in hex and decimal by turns, and `<`, `>`, `&` as entities.
pub fn char_refs(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            c if c.is_ascii() => out.push(c),
            c if i % 2 == 0 => out.push_str(&format!("&#x{:X};", c as u32)),
            c => out.push_str(&format!("&#{};", c as u32)),
        }
    }
    out
}

/// The whole pipeline on some inputs: scan each (bytes, name), decide, the sanitizer filter,
/// both renderings. Returns the analysis; panics only where the code under test does.
pub fn pipeline(inputs: &[(&[u8], &str)]) -> Analysis {
    let evidence: Vec<Evidence> = inputs.iter().map(|(b, n)| scan_reader(*b, n, n)).collect();
    analyse(&evidence)
}

/// Decides, filters and renders evidence already scanned.
pub fn analyse(evidence: &[Evidence]) -> Analysis {
    let a = decide(evidence);
    let _ = kernel_filter(&a);
    let text = render_text(&a);
    let json = render_json(&a);
    assert!(!text.is_empty() && json.ends_with('\n'));
    a
}

/// `text` with `junk` put in at byte `cut` (moved back to a character boundary; past the end,
/// at the end): what the parsers' `spliced_real_output_never_panics` tests feed them.
pub fn inserted(text: &str, cut: usize, junk: &str) -> String {
    let mut s = text.to_string();
    let mut at = cut.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    s.insert_str(at, junk);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn char_refs_escape_every_wide_character() {
        assert_eq!(char_refs("k😀<int>"), "k&#128512;&lt;int&gt;");
        assert_eq!(char_refs("核k"), "&#x6838;k");
    }

    #[test]
    fn splicing_can_cut_a_character() {
        let b = spliced("a scale_write b", "scale_write", "核", &[]);
        assert_eq!(b, "a 核 b".as_bytes());
        assert_eq!(mangled("核"), "_Z3核Pii");
    }
}

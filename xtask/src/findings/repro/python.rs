//! Writes `repro.py` from a [`Capture`]: a standalone program that imports the user's Triton
//! kernel from its file (or its module) and launches it once with the recorded grid, keywords
//! and arguments. Tensors get the recorded dtypes, shapes, strides and offsets in storages of
//! the recorded sizes (arguments that shared a storage share one); integer and bool storages
//! hold the recorded values, written out as numbers; float storages hold random values.
//!
//! Must not: put anything from the capture into the program but checked identifiers, numbers
//! and escaped string literals (a capture is the target's output); read or write files; or
//! depend on anything but PyTorch and Triton in the program it writes.

use std::fmt::Write as _;

use super::capture::{Capture, Storage, Value};
use super::Expected;

/// The program and what a reader should know about it (what it does not contain).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub script: String,
    pub notes: Vec<String>,
}

/// Element sizes of the integer dtypes the recorder keeps bytes of.
fn int_size(dtype: &str) -> Option<(usize, bool)> {
    Some(match dtype {
        "int8" => (1, true),
        "uint8" | "bool" => (1, false),
        "int16" => (2, true),
        "uint16" => (2, false),
        "int32" => (4, true),
        "uint32" => (4, false),
        "int64" => (8, true),
        "uint64" => (8, false),
        _ => return None,
    })
}

/// A Python string literal of `s` (single quotes, every non-printable or non-ASCII character
/// escaped), so that nothing in it can end the literal.
pub fn py_str(s: &str) -> String {
    let mut out = String::from("'");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            ' '..='~' => out.push(c),
            c if (c as u32) < 0x100 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('\'');
    out
}

fn ident(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A float as Python reads it: the recorded `repr` when it is a plain literal, `float('inf')`
/// and the like for the rest; `None` for anything else.
fn py_float(repr: &str) -> Option<String> {
    match repr {
        "inf" | "-inf" | "nan" => Some(format!("float('{repr}')")),
        _ if repr.parse::<f64>().is_ok()
            && repr.chars().all(|c| c.is_ascii_digit() || "+-.eE".contains(c)) =>
        {
            Some(repr.to_string())
        }
        _ => None,
    }
}

/// The Python expression of a value; what cannot be rebuilt goes to `notes` and becomes `None`.
fn expr(v: &Value, notes: &mut Vec<String>, name: &str) -> String {
    match v {
        Value::Tensor { dtype, shape, stride, offset, storage } => {
            if !ident(dtype) {
                notes.push(format!("`{name}`: a tensor of an unknown dtype, passed as None"));
                return "None".into();
            }
            let list = |xs: &[i64]| {
                let body: Vec<String> = xs.iter().map(i64::to_string).collect();
                if xs.len() == 1 {
                    format!("({},)", body[0])
                } else {
                    format!("({})", body.join(", "))
                }
            };
            format!("tensor(S[{storage}], torch.{dtype}, {}, {}, {offset})", list(shape), list(stride))
        }
        Value::Int { value } => value.to_string(),
        Value::Float { value } => py_float(value).unwrap_or_else(|| {
            notes.push(format!(
                "`{name}`: the float `{}` could not be read, passed as 0.0",
                crate::model::text::cut(value, 40)
            ));
            "0.0".into()
        }),
        Value::Bool { value } => if *value { "True" } else { "False" }.into(),
        Value::None => "None".into(),
        Value::Str { value } => py_str(value),
        Value::Tuple { items } => {
            let parts: Vec<String> = items.iter().map(|i| expr(i, notes, name)).collect();
            match parts.len() {
                1 => format!("({},)", parts[0]),
                _ => format!("({})", parts.join(", ")),
            }
        }
        Value::TorchDtype { value } | Value::TorchAttr { value } if ident(value) => format!("torch.{value}"),
        Value::TritonDtype { value } if ident(value) => format!("tl.dtype({})", py_str(value)),
        Value::TorchDtype { .. } | Value::TritonDtype { .. } | Value::TorchAttr { .. } => {
            notes.push(format!("`{name}`: a dtype that could not be read, passed as None"));
            "None".into()
        }
        Value::Other { type_name, .. } => {
            notes.push(format!(
                "`{name}`: a `{}` the recorder could not describe, passed as None",
                crate::model::text::cut(type_name, 80)
            ));
            "None".into()
        }
    }
}

/// The dtype a storage's recorded bytes are written as: that of the first tensor on it whose
/// element size divides its length (else bytes).
fn storage_dtype(c: &Capture, index: usize, bytes: usize) -> String {
    let keywords: Vec<Value> = c.keywords().into_iter().map(|(_, v)| v).collect();
    for v in c.args.iter().chain(keywords.iter()) {
        if let Value::Tensor { dtype, storage, .. } = v {
            if *storage == index && int_size(dtype).is_some_and(|(n, _)| bytes.is_multiple_of(n)) {
                return dtype.clone();
            }
        }
    }
    "uint8".to_string()
}

/// One storage's line in `STORAGES`: its size and its recorded values as numbers of their
/// dtype, or `None`.
fn storage_line(c: &Capture, i: usize, s: &Storage, notes: &mut Vec<String>) -> String {
    let Some(bytes) = s.recorded() else {
        if let Some(why) = &s.left_out {
            if !why.ends_with("contents are not recorded") {
                notes.push(format!(
                    "storage {i} ({} bytes): its values were not recorded: {}",
                    s.bytes,
                    crate::model::text::cut(why, 200)
                ));
            }
        }
        return format!("    ({}, None, None),", s.bytes);
    };
    let dtype = storage_dtype(c, i, bytes.len());
    let (size, signed) = int_size(&dtype).unwrap_or((1, false));
    let mut out = format!("    ({}, torch.{dtype}, [", s.bytes);
    let mut width = out.len();
    for (k, chunk) in bytes.chunks(size).enumerate() {
        let mut raw = [0u8; 8];
        raw[..size].copy_from_slice(chunk);
        let unsigned = u64::from_le_bytes(raw);
        let n = if signed {
            let shift = 64 - 8 * size as u32;
            (((unsigned << shift) as i64) >> shift).to_string()
        } else {
            unsigned.to_string()
        };
        let sep = if k == 0 { "" } else { ", " };
        if width + sep.len() + n.len() > 96 {
            out.push_str(",\n        ");
            width = 8;
        } else {
            out.push_str(sep);
            width += sep.len();
        }
        width += n.len();
        out.push_str(&n);
    }
    out.push_str("]),");
    out
}

/// The launching line, for the header.
fn site_text(c: &Capture) -> String {
    c.site
        .as_ref()
        .map(|t| format!("{}:{} ({})", t.file, t.line, t.function))
        .unwrap_or_else(|| "an unknown line".into())
}

/// The header's first lines: what the program is for, and where the launch came from (`from`).
fn opening(s: &mut String, expected: &Expected, from: &str) {
    let _ = writeln!(s, "#!/usr/bin/env python3");
    let _ = writeln!(s, "# A reproducer written by debug-ima (docs/repro.md) for the fault:");
    let _ = writeln!(s, "#   {}", one_line(&expected.text()));
    let _ = writeln!(s, "{}", one_line(from));
    let _ = writeln!(s, "#");
}

/// `STORAGES = [...]`: each storage's size and recorded values.
fn storages_block(s: &mut String, c: &Capture, notes: &mut Vec<String>) {
    let _ =
        writeln!(s, "# Each storage: its size in bytes, and its recorded values with their dtype (or None).");
    let _ = writeln!(s, "STORAGES = [");
    for (i, st) in c.storages.iter().enumerate() {
        let line = storage_line(c, i, st, notes);
        let _ = writeln!(s, "{line}");
    }
    let _ = writeln!(s, "]");
}

/// `args = [...]` and `keywords = {...}` inside `main`; `params` names each argument in a
/// comment (a Triton kernel's parameters).
fn call_block(s: &mut String, c: &Capture, notes: &mut Vec<String>, params: bool) {
    let _ = writeln!(s, "    args = [");
    for (i, a) in c.args.iter().enumerate() {
        let name = c.params.get(i).filter(|p| params && ident(p)).cloned();
        let e = expr(a, notes, name.as_deref().unwrap_or(&format!("argument {i}")));
        match (&name, params) {
            (Some(n), _) => {
                let _ = writeln!(s, "        {e},  # {n}");
            }
            (None, true) => {
                let _ = writeln!(s, "        {e},  # argument {i}");
            }
            (None, false) => {
                let _ = writeln!(s, "        {e},");
            }
        }
    }
    let _ = writeln!(s, "    ]");
    let _ = writeln!(s, "    keywords = {{");
    for (k, v) in c.keywords() {
        let e = expr(&v, notes, &k);
        let _ = writeln!(s, "        {}: {e},", py_str(&k));
    }
    let _ = writeln!(s, "    }}");
}

/// The program for `c`, written for the fault `expected` (named in its header).
pub fn write(c: &Capture, expected: &Expected) -> Written {
    if let Some(op) = &c.op {
        return write_op(c, op, expected);
    }
    let mut notes = Vec::new();
    let mut s = String::new();
    let from =
        format!("# from launch {} of `{}` in process {}, at {}.", c.seq, c.kernel, c.pid, site_text(c));
    opening(&mut s, expected, &from);
    let _ = writeln!(
        s,
        "# Run it with `python3 repro.py`: it needs PyTorch, Triton, one GPU and the kernel's file"
    );
    let _ = writeln!(
        s,
        "# (KERNEL_FILE below), nothing else of the program. It launches the kernel once, alone,"
    );
    let _ = writeln!(
        s,
        "# with the recorded grid, keywords and arguments: tensors of the recorded dtypes, shapes,"
    );
    let _ = writeln!(
        s,
        "# strides and offsets, in storages of the recorded sizes (arguments that shared a storage"
    );
    let _ = writeln!(
        s,
        "# share one); integer and bool storages hold the recorded values (read at the {}),",
        values_at(c)
    );
    let _ = writeln!(s, "# float storages random ones (their contents were not recorded).");
    s.push_str(HEAD);
    let _ = writeln!(s, "KERNEL_FILE = {}", py_str(&c.file));
    let _ =
        writeln!(s, "KERNEL_MODULE = {}", c.module.as_deref().map(py_str).unwrap_or_else(|| "None".into()));
    let _ = writeln!(s, "KERNEL_NAME = {}", py_str(&c.qualname));
    let grid: Vec<String> = c.grid.iter().map(u64::to_string).collect();
    let _ = writeln!(s, "GRID = ({},)", grid.join(", "));
    storages_block(&mut s, c, &mut notes);
    s.push_str(LOAD_KERNEL);
    s.push_str(STORAGE_HELPERS);
    let _ = writeln!(s, "def main():");
    let _ = writeln!(s, "    torch.manual_seed(0)");
    let _ = writeln!(s, "    kernel = load_kernel()");
    let _ = writeln!(s, "    S = [storage(n, dtype, values) for n, dtype, values in STORAGES]");
    call_block(&mut s, c, &mut notes, true);
    s.push_str(TAIL);
    if c.capturing {
        notes.push(format!(
            "the kernel was launched inside a CUDA graph capture; the reproducer launches it directly, with \
             the values {}",
            if c.values_at.as_deref() == Some("replay") {
                "its integer storages held before the graph's replay"
            } else {
                "read at the capture (the graph was not replayed after it, so the replay's values are unknown)"
            }
        ));
    }
    if matches!(c.module.as_deref(), None | Some("__main__" | "__mp_main__")) {
        notes.push(format!(
            "the kernel is defined in the program's main script ({}): the reproducer loads that file as a \
             module, which runs its top-level code (what `if __name__ == \"__main__\":` guards does not run)",
            c.file.rsplit('/').next().unwrap_or(&c.file)
        ));
    }
    Written { script: s, notes }
}

/// The program for an operator call (`aten.embedding.default`): the same storages and tensors,
/// then the operator through `torch.ops`.
fn write_op(c: &Capture, op: &str, expected: &Expected) -> Written {
    let mut notes = Vec::new();
    let mut s = String::new();
    let from =
        format!("# from call {} of the operator `{op}` in process {}, at {}.", c.seq, c.pid, site_text(c));
    opening(&mut s, expected, &from);
    let _ = writeln!(
        s,
        "# Run it with `python3 repro.py`: it needs PyTorch and one GPU, nothing else of the program."
    );
    let _ = writeln!(
        s,
        "# It calls the operator once, alone, with the recorded arguments: tensors of the recorded"
    );
    let _ = writeln!(
        s,
        "# dtypes, shapes, strides and offsets, in storages of the recorded sizes (arguments that"
    );
    let _ = writeln!(
        s,
        "# shared a storage share one); integer and bool storages hold the recorded values (read"
    );
    let _ = writeln!(s, "# at the call), float storages random ones (their contents were not recorded).");
    s.push_str("\nimport torch\n\n");
    let _ = writeln!(s, "OPERATOR = {}", py_str(op));
    storages_block(&mut s, c, &mut notes);
    s.push_str("\n\n");
    s.push_str(STORAGE_HELPERS);
    let _ = writeln!(s, "def main():");
    let _ = writeln!(s, "    torch.manual_seed(0)");
    let _ = writeln!(s, "    op = torch.ops");
    let _ = writeln!(s, "    for part in OPERATOR.split(\".\"):");
    let _ = writeln!(s, "        op = getattr(op, part)");
    let _ = writeln!(s, "    S = [storage(n, dtype, values) for n, dtype, values in STORAGES]");
    call_block(&mut s, c, &mut notes, false);
    s.push_str(OP_TAIL);
    if !op.starts_with("aten.") {
        notes.push(format!(
            "`{op}` is not an ATen operator: import the extension that registers it (its Python package) \
             before running the reproducer"
        ));
    }
    Written { script: s, notes }
}

const OP_TAIL: &str = r#"    op(*args, **keywords)
    torch.cuda.synchronize()
    print("repro.py: the operator ran without a device error")


if __name__ == "__main__":
    main()
"#;

fn values_at(c: &Capture) -> &'static str {
    match c.values_at.as_deref() {
        Some("replay") => "CUDA graph's replay",
        Some("capture") => "capture",
        _ => "launch",
    }
}

/// A header line cannot break the comment it is in.
fn one_line(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

const HEAD: &str = r#"
import importlib
import importlib.util
import os
import sys

import torch
import triton.language as tl  # noqa: F401 (for a triton dtype among the keywords)

"#;

const LOAD_KERNEL: &str = r#"

def load_kernel():
    """The kernel from its module when that imports, else from its file (as a module)."""
    module = None
    sys.path.insert(0, os.path.dirname(KERNEL_FILE))
    if KERNEL_MODULE not in (None, "__main__", "__mp_main__"):
        try:
            module = importlib.import_module(KERNEL_MODULE)
        except ImportError:
            module = None
    if module is None:
        spec = importlib.util.spec_from_file_location("debug_ima_repro_kernels", KERNEL_FILE)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    kernel = module
    for part in KERNEL_NAME.split("."):
        kernel = getattr(kernel, part)
    # @triton.autotune and @triton.heuristics wrap the JIT function: launch the function itself,
    # with the configuration that was chosen (its keywords below).
    from triton.runtime.jit import JITFunction

    while not isinstance(kernel, JITFunction) and hasattr(kernel, "fn"):
        kernel = kernel.fn
    return kernel


"#;

const STORAGE_HELPERS: &str = r#"def storage(nbytes, dtype, values):
    """A storage of `nbytes` bytes on the GPU: the recorded values, else random bytes."""
    if values is not None:
        return torch.tensor(values, dtype=dtype).view(torch.uint8).to("cuda")
    raw = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    whole = nbytes // 4 * 4
    if whole:
        raw[:whole].view(torch.float32).normal_()
    return raw


def tensor(raw, dtype, shape, stride, offset):
    """A tensor of the recorded dtype, shape, stride and offset on a storage."""
    return torch.empty(0, dtype=dtype, device="cuda").set_(raw.untyped_storage(), offset, shape, stride)


"#;

const TAIL: &str = r#"    kernel[GRID](*args, **keywords)
    torch.cuda.synchronize()
    print("repro.py: the kernel ran without a device error")


if __name__ == "__main__":
    main()
"#;

#[cfg(test)]
mod tests {
    use super::super::capture::{parse, recorded};
    use super::*;

    fn expected(kernel: &str) -> Expected {
        Expected {
            kernel: kernel.into(),
            file: Some("vllm_shaped.py".into()),
            line: Some(22),
            error: "illegal-address".into(),
        }
    }

    /// Every reproducer the H200 runs verified (tests/fixtures/bundles/repro), written again
    /// from its capture: the writer still writes exactly the program that was seen to fault.
    #[test]
    fn the_writer_writes_the_programs_the_h200_verified() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/bundles/repro");
        let mut seen = 0;
        for case in std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()) {
            for bundle in std::fs::read_dir(&case).unwrap().map(|e| e.unwrap().path()) {
                let dir = bundle.join("repro");
                let result: super::super::Outcome =
                    serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).unwrap()).unwrap();
                assert_eq!(result.status, super::super::Status::Verified, "{}", dir.display());
                let capture = std::fs::read_dir(&dir)
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("capture-"))
                    .unwrap();
                let c = parse(&std::fs::read_to_string(capture).unwrap()).unwrap();
                let again = write(&c, &result.expected);
                let verified = std::fs::read_to_string(dir.join("repro.py")).unwrap();
                assert!(
                    again.script == verified,
                    "{}: the writer no longer writes the verified program; if that is meant, verify the new \
                     one on a GPU (tests/gpu/repro_suite.sh) and record it",
                    dir.display()
                );
                assert_eq!(
                    again.notes.iter().filter(|n| !result.notes.contains(n)).count(),
                    0,
                    "{}: notes {:?} vs {:?}",
                    dir.display(),
                    again.notes,
                    result.notes
                );
                seen += 1;
            }
        }
        assert_eq!(seen, 8, "the eight recorded cases");
    }

    /// An ATen operator's kernel: the operator call is replayed through `torch.ops`, with the
    /// stale token id of aten_async.py among the recorded indices.
    #[test]
    fn an_operator_capture_calls_the_operator_with_the_recorded_indices() {
        let root =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/bundles/repro/aten");
        let bundle = std::fs::read_dir(&root).unwrap().next().unwrap().unwrap().path();
        let script = std::fs::read_to_string(bundle.join("repro/repro.py")).unwrap();
        assert!(script.contains("OPERATOR = 'aten.embedding.default'"), "{script}");
        assert!(script.contains("[3, 17, 42, 99, 5, 140, 7, 0]"), "{script}");
        assert!(!script.contains("import triton"), "an operator's reproducer needs no Triton");
    }

    #[test]
    fn python_string_literals_cannot_be_broken_out_of() {
        assert_eq!(py_str("a'b\\c"), "'a\\'b\\\\c'");
        assert_eq!(py_str("x\ny\u{e9}\u{1F600}"), "'x\\x0ay\\xe9\\U0001f600'");
        assert_eq!(py_float("0.5").as_deref(), Some("0.5"));
        assert_eq!(py_float("1e-05").as_deref(), Some("1e-05"));
        assert_eq!(py_float("inf").as_deref(), Some("float('inf')"));
        assert_eq!(py_float("__import__('os')"), None);
    }

    #[test]
    fn the_graph_capture_s_script_holds_the_replay_s_bad_entry() {
        let c = recorded("graph");
        let w = write(&c, &expected("gather_kv_kernel"));
        insta::assert_snapshot!("repro_graph", w.script);
        assert!(w.script.contains("-67108864"), "the stale block-table entry is in the program");
        assert!(w.notes.iter().any(|n| n.contains("CUDA graph capture")), "{:?}", w.notes);
    }

    #[test]
    fn an_autotuned_kernel_from_a_module_is_launched_with_its_chosen_configuration() {
        let c = recorded("strided");
        let w = write(&c, &expected("strided_copy_kernel"));
        assert!(w.script.contains("KERNEL_MODULE = 'triton_kernels'"));
        assert!(
            w.script.contains("'BLOCK': 256,")
                && w.script.contains("'num_warps': 4,")
                && w.script.contains("'EVEN': True,")
        );
        assert!(w.script.contains("        1000000,  # src_stride"), "{}", w.script);
        assert!(!w.notes.iter().any(|n| n.contains("main script")), "{:?}", w.notes);
    }
}

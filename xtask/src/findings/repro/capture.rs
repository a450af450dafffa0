//! The launch recorder's capture of one Triton launch (`capture-PID.json`, written by
//! `ladder/recorder.py` in capture mode before each launch of the suspect kernel): the kernel's
//! file, module and name, the launching line, the grid, each argument and keyword, and the
//! storages the tensors live in with the bytes of the integer ones.
//!
//! Must not: read files (the repro rung hands the text in), trust a field it did not check
//! (a capture is the target's process's output: sizes are bounded, names are checked before
//! the writer puts them in a program), or panic on any input.

use anyhow::{bail, Context, Result};
use serde::Deserialize;

/// The largest storage the reproducer allocates from a capture (64 GiB): a larger size is no
/// real tensor's.
pub const MAX_STORAGE_BYTES: u64 = 64 << 30;
/// The most arguments, keywords, storages or tensor dimensions a capture may hold.
pub const MAX_ITEMS: usize = 256;

/// One launch of the suspect kernel.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Capture {
    pub version: u32,
    pub pid: u32,
    /// How many launches of the kernel (calls of operators) the process had made, this one
    /// included.
    pub seq: u64,
    /// For a PyTorch operator's kernel: the operator call captured instead of a Triton launch,
    /// as `torch.ops` names it (`aten.embedding.default`); the Triton fields are then empty.
    #[serde(default)]
    pub op: Option<String>,
    /// The Triton function's name (the GPU dump's kernel name).
    pub kernel: String,
    /// Its module (`__main__` for a script, `__mp_main__` in a spawned worker).
    pub module: Option<String>,
    pub qualname: String,
    /// The file that defines it (absolute) and its first line.
    pub file: String,
    pub first_line: u32,
    /// The launching line (the first frame outside Triton and PyTorch).
    pub site: Option<Site>,
    pub grid: Vec<u64>,
    /// Launched while a CUDA graph was being captured.
    pub capturing: bool,
    /// The kernel's parameter names, in order.
    #[serde(default)]
    pub params: Vec<String>,
    pub args: Vec<Value>,
    /// Keywords by name (sorted; a call does not depend on their order): constexprs,
    /// `num_warps`, `num_stages`, ...
    #[serde(default)]
    pub kwargs: serde_json::Map<String, serde_json::Value>,
    pub storages: Vec<Storage>,
    /// When the integer storages' bytes were read: at the launch, or before the replay of the
    /// graph it was captured into; `capture` when they could not be read.
    #[serde(default)]
    pub values_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Site {
    pub file: String,
    pub line: u32,
    pub function: String,
}

/// An argument or keyword value.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Value {
    Tensor {
        dtype: String,
        shape: Vec<i64>,
        stride: Vec<i64>,
        offset: i64,
        storage: usize,
    },
    Int {
        value: i64,
    },
    /// As Python's `repr` wrote it (`0.5`, `inf`, `nan`).
    Float {
        value: String,
    },
    Bool {
        value: bool,
    },
    None,
    Str {
        value: String,
    },
    Tuple {
        items: Vec<Value>,
    },
    TorchDtype {
        value: String,
    },
    /// `torch.contiguous_format`, `torch.strided`: an attribute of `torch` by its name.
    TorchAttr {
        value: String,
    },
    TritonDtype {
        value: String,
    },
    /// A value the recorder could not describe: its type and a bounded `repr`.
    Other {
        #[serde(rename = "type")]
        type_name: String,
        repr: String,
    },
}

/// The storage of one or more tensor arguments.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Storage {
    pub ptr: String,
    pub bytes: u64,
    pub device: String,
    /// Base64 of its bytes (integer and bool storages under the caps).
    pub values: Option<String>,
    /// Why its bytes are not there.
    pub left_out: Option<String>,
}

impl Storage {
    /// Its recorded bytes, when there are any and they decode (standard base64, padded).
    pub fn recorded(&self) -> Option<Vec<u8>> {
        let text = self.values.as_deref()?;
        let bytes = base64_decode(text)?;
        (bytes.len() as u64 == self.bytes).then_some(bytes)
    }
}

/// The bytes of one element of a tensor of `dtype` (`torch.int64`: 8, `torch.bool`: 1).
fn itemsize(dtype: &str) -> u64 {
    match dtype {
        d if d.ends_with("64") => 8,
        d if d.ends_with("32") => 4,
        d if d.ends_with("16") => 2,
        _ => 1,
    }
}

/// Standard base64 (`A-Z a-z 0-9 + /`, `=` padding), as Python's `base64.b64encode` writes it;
/// `None` for anything else.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let digit = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let raw = text.as_bytes();
    if !raw.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(raw.len() / 4 * 3);
    for (i, chunk) in raw.chunks(4).enumerate() {
        let last = i + 1 == raw.len() / 4;
        let pad = chunk.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for &c in &chunk[..4 - pad] {
            n = (n << 6) | digit(c)?;
        }
        n <<= 6 * pad as u32;
        let three = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&three[..3 - pad]);
    }
    Some(out)
}

impl Capture {
    /// The program's input values this capture recorded (elements of the integer and bool
    /// storages whose bytes it holds) and the arguments they came from, in order; `None` when
    /// it holds none.
    pub fn input_values(&self) -> Option<(u64, Vec<String>)> {
        fn walk(name: String, v: &Value, c: &Capture, seen: &mut Vec<usize>, out: &mut (u64, Vec<String>)) {
            match v {
                Value::Tensor { dtype, storage, .. } => {
                    let Some(s) = c.storages.get(*storage).filter(|s| s.values.is_some()) else { return };
                    if !out.1.contains(&name) {
                        out.1.push(name);
                    }
                    if !seen.contains(storage) {
                        seen.push(*storage);
                        out.0 += s.bytes / itemsize(dtype);
                    }
                }
                Value::Tuple { items } => {
                    for (i, x) in items.iter().enumerate() {
                        walk(format!("{name}[{i}]"), x, c, seen, out);
                    }
                }
                _ => {}
            }
        }
        let mut out = (0, Vec::new());
        let mut seen = Vec::new();
        for (i, a) in self.args.iter().enumerate() {
            let name = self.params.get(i).cloned().unwrap_or_else(|| format!("argument {i}"));
            walk(name, a, self, &mut seen, &mut out);
        }
        for (k, v) in self.keywords() {
            walk(k, &v, self, &mut seen, &mut out);
        }
        (!out.1.is_empty()).then_some(out)
    }

    /// The keywords, each as a [`Value`] (a keyword the recorder wrote in a shape this reader does
    /// not know becomes [`Value::Other`]).
    pub fn keywords(&self) -> Vec<(String, Value)> {
        self.kwargs
            .iter()
            .map(|(k, v)| {
                let value = serde_json::from_value(v.clone()).unwrap_or_else(|_| Value::Other {
                    type_name: "unknown".into(),
                    repr: crate::model::text::cut(&v.to_string(), 200).to_string(),
                });
                (k.clone(), value)
            })
            .collect()
    }
}

/// Reads one capture file's text, checking what the writer relies on: every tensor names a
/// storage that exists, shapes and strides agree, sizes are bounded, names are identifiers.
pub fn parse(text: &str) -> Result<Capture> {
    let c: Capture = serde_json::from_str(text).context("the capture is not the recorder's JSON")?;
    if c.version != 1 {
        bail!("capture version {} (this tool reads version 1)", c.version);
    }
    let ident = |s: &str| !s.is_empty() && s.chars().all(|ch| ch.is_alphanumeric() || ch == '_');
    match &c.op {
        Some(op) => {
            let parts: Vec<&str> = op.split('.').collect();
            if !(2..=3).contains(&parts.len()) || !parts.iter().all(|p| ident(p)) {
                bail!(
                    "the capture's operator `{}` is not `namespace.name[.overload]`",
                    crate::model::text::cut(op, 80)
                );
            }
        }
        None => {
            if !ident(&c.kernel) || !c.qualname.split('.').all(ident) {
                bail!(
                    "the capture's kernel name `{}` is not a Python identifier",
                    crate::model::text::cut(&c.qualname, 80)
                );
            }
            if c.grid.is_empty() || c.grid.len() > 3 {
                bail!("the capture's grid has {} dimensions (1 to 3)", c.grid.len());
            }
        }
    }
    if c.args.len() > MAX_ITEMS || c.kwargs.len() > MAX_ITEMS || c.storages.len() > MAX_ITEMS {
        bail!("the capture has more than {MAX_ITEMS} arguments, keywords or storages");
    }
    for s in &c.storages {
        if s.bytes > MAX_STORAGE_BYTES {
            bail!("a storage of {} bytes (over {MAX_STORAGE_BYTES})", s.bytes);
        }
    }
    let keywords = c.keywords();
    for v in c.args.iter().chain(keywords.iter().map(|(_, v)| v)) {
        check_value(v, &c.storages, 0)?;
    }
    for (k, _) in &keywords {
        if !ident(k) {
            bail!("the capture's keyword `{}` is not a Python identifier", crate::model::text::cut(k, 80));
        }
    }
    Ok(c)
}

fn check_value(v: &Value, storages: &[Storage], depth: usize) -> Result<()> {
    match v {
        Value::Tensor { shape, stride, offset, storage, .. } => {
            if *storage >= storages.len() {
                bail!("a tensor names storage {storage} of {}", storages.len());
            }
            if shape.len() != stride.len() || shape.len() > 16 || shape.iter().any(|d| *d < 0) || *offset < 0
            {
                bail!("a tensor's shape {shape:?}, stride {stride:?} and offset {offset} do not agree");
            }
        }
        Value::Tuple { items } => {
            if depth > 4 || items.len() > MAX_ITEMS {
                bail!("a tuple argument nested too deep or too long");
            }
            for i in items {
                check_value(i, storages, depth + 1)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// The capture of the process that faulted, among those of one run (one file per process that
/// launched the kernel): the one whose launch came last (`written`: each file's modification
/// time), since the faulting process stops launching at its fault. With more than one, the
/// second value says which others there were.
pub fn choose<T>(mut captures: Vec<(T, std::time::SystemTime)>) -> Option<(T, usize)> {
    let n = captures.len();
    captures.sort_by_key(|(_, t)| *t);
    captures.pop().map(|(c, _)| (c, n - 1))
}

/// In tests: the H200's capture of a case of tests/fixtures/h200/capture.
#[cfg(test)]
pub(super) fn recorded(case: &str) -> Capture {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/h200/capture").join(case);
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("capture-"))
        .unwrap();
    parse(&std::fs::read_to_string(file).unwrap()).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_captures_read_back() {
        let eager = recorded("eager");
        assert_eq!(eager.kernel, "gather_kv_kernel");
        assert_eq!(eager.grid, vec![64]);
        assert_eq!(eager.site.as_ref().map(|s| s.line), Some(27));
        assert!(matches!(eager.args[1], Value::Tensor { ref dtype, storage: 1, .. } if dtype == "int64"));
        assert!(eager.storages[1].values.is_some() && eager.storages[0].values.is_none());
        assert_eq!(eager.keywords(), vec![("BLOCK".to_string(), Value::Int { value: 128 })]);
        let graph = recorded("graph");
        assert!(graph.capturing);
        assert_eq!(graph.values_at.as_deref(), Some("replay"));
        assert!(graph.storages[1].values.is_some());
        let strided = recorded("strided");
        let kw: Vec<String> = strided.keywords().into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            kw,
            ["BLOCK", "EVEN", "num_ctas", "num_stages", "num_warps"],
            "sorted: the order of keywords does not matter"
        );
        assert_eq!(recorded("worker").module.as_deref(), Some("__mp_main__"));
    }

    #[test]
    fn a_capture_that_breaks_what_the_writer_relies_on_is_refused() {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../tests/fixtures/h200/capture/eager/capture-510.json"),
        )
        .unwrap();
        for (from, to, why) in [
            ("\"storage\": 1", "\"storage\": 9", "names storage 9"),
            ("\"kernel\": \"gather_kv_kernel\"", "\"kernel\": \"os.system('x')\"", "not a Python identifier"),
            ("\"grid\": [64]", "\"grid\": []", "grid has 0"),
            ("\"bytes\": 512", "\"bytes\": 999999999999999", "over"),
            ("\"version\": 1", "\"version\": 7", "version 7"),
            ("\"BLOCK\": {", "\"BL OCK\": {", "keyword"),
        ] {
            assert!(text.contains(from), "{from}");
            let err = parse(&text.replacen(from, to, 1)).unwrap_err().to_string();
            assert!(err.contains(why), "{from} -> {err}");
        }
    }

    #[test]
    fn recorded_bytes_decode_to_the_values_the_program_held() {
        let graph = recorded("graph");
        let bytes = graph.storages[1].recorded().unwrap();
        let table: Vec<i64> = bytes.chunks(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(table.len(), 64);
        // vllm_shaped.py sets entry 41 to -(1 << 26) before the replay.
        assert_eq!(table[41], -(1 << 26));
        assert_eq!(base64_decode("YWI="), Some(b"ab".to_vec()));
        assert_eq!(base64_decode("YWJj"), Some(b"abc".to_vec()));
        assert_eq!(base64_decode("YQ=="), Some(b"a".to_vec()));
        for bad in ["YQ=", "Y===", "YQ==YWJj", "Y!Jj"] {
            assert_eq!(base64_decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_last_written_capture_is_the_faulting_process_s() {
        let t = |s| std::time::UNIX_EPOCH + std::time::Duration::from_secs(s);
        assert_eq!(choose(vec![("a", t(5)), ("b", t(9)), ("c", t(7))]), Some(("b", 2)));
        assert_eq!(choose::<&str>(vec![]), None);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        /// Garbage, a real capture cut anywhere or with bytes replaced, never panics the reader.
        #[test]
        fn garbage_and_cut_captures_never_panic(
            garbage in ".{0,400}",
            cut in 0usize..4000,
            at in 0usize..4000,
            with in "[\\x00-\\x7f\\u{80}-\\u{10ffff}]{1,8}",
        ) {
            let _ = parse(&garbage);
            let real = include_str!("../../../../tests/fixtures/h200/capture/late/capture-631.json");
            let mut end = cut.min(real.len());
            while !real.is_char_boundary(end) { end -= 1; }
            let _ = parse(&real[..end]);
            let mut i = at.min(real.len());
            while !real.is_char_boundary(i) { i -= 1; }
            let _ = parse(&format!("{}{with}{}", &real[..i], &real[i..]));
        }
    }
}

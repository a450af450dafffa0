//! Where kernels came from (issue 40, docs/provenance.md): the launch recorder in a real
//! `python3`, with stand-in `torch._inductor`, `torch.utils.cpp_extension` and `cupy` packages
//! whose functions have the signatures the recorder wraps, loading the output code and kernel
//! files torch.compile really wrote on an H100 (tests/fixtures/real_stack/inductor).

use crate::support::{root, Scratch};

use xtask::findings::scan::scan_str;

const READ_WRAPPER: &str = "cagpvtgukgclcmskpte2wlq3hp3yrljh2citied4knondxujruxd.py";
const READ_KERNEL: &str = "cj2bb7oloszmvp746xw2xvetmctsursybt4s4g7bt7r7nuxxurem.py";
const ASSERT_WRAPPER: &str = "cbldufoid267gsp4m3jqxuampcn7f2y7hgegxub5gvwpuen4zi5p.py";
const ASSERT_KERNEL: &str = "cawrwbe2ycsqnwhxcjuyflwvjisyxucba5gcokja6fycxcrrz67n.py";
const KERNEL: &str = "triton_red_fused_add_embedding_index_native_layer_norm_0";

/// Puts a recorded Inductor file back into a cache under `s` as Inductor lays it out
/// (`<cache>/<name[1..3]>/<name>`), the wrappers' `# kernel path:` pointing there.
fn into_cache(s: &Scratch, name: &str) -> String {
    let text = std::fs::read_to_string(root().join("tests/fixtures/real_stack/inductor").join(name)).unwrap();
    let cache = s.path("cache");
    let text = text.replace("/tmp/torchinductor_root/", &format!("{}/", cache.display()));
    let dest = cache.join(&name[1..3]).join(name);
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    std::fs::write(&dest, text).unwrap();
    dest.display().to_string()
}

/// A recorded kernel file that the stand-in `AsyncCompile.triton` writes into the cache when
/// called, as Inductor does on a cold cache; its path in the cache.
fn pending_kernel(s: &Scratch, name: &str) -> String {
    let staged = s.path("staged").join(name);
    std::fs::create_dir_all(staged.parent().unwrap()).unwrap();
    std::fs::copy(root().join("tests/fixtures/real_stack/inductor").join(name), &staged).unwrap();
    let dest = s.path("cache").join(&name[1..3]).join(name);
    let _ = std::fs::remove_file(&dest);
    std::fs::write(s.path("pending.tsv"), format!("{}\t{}\n", staged.display(), dest.display())).unwrap();
    dest.display().to_string()
}

fn put(s: &Scratch, rel: &str, text: &str) {
    let p = s.path(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A node of a traced graph, with the stack trace Dynamo gives each node (outermost first).
const APP: &str = r#"import sys, types
import torch._inductor.compile_fx as cf
from torch.utils.cpp_extension import load
import cupy as cp

class Node:
    def __init__(self, name, line, code):
        self.name = name
        self.meta = {"stack_trace": '  File "/w/run.py", line 42, in main\n    out = step(t)\n'
                     '  File "/w/tiny_model.py", line %d, in forward\n    %s\n' % (line, code)}

gm = types.SimpleNamespace(graph=types.SimpleNamespace(nodes=[
    Node("h", 27, "h = self.embed(tokens)"),
    Node("getitem", 28, "h = h + self.pos_table[positions]"),
    Node("h_1", 28, "h = h + self.pos_table[positions]"),
    Node("layer_norm", 29, "k = torch.tanh(self.proj(self.norm(h)))"),
]))
wrapper, line = sys.argv[1], int(sys.argv[2])
cf.compile_fx(gm, [], wrapper=wrapper, line=line, kernel=sys.argv[3])
op = load("ima_gather_op", sources=[sys.argv[4]])
k = cp.RawKernel('extern "C" __global__ void scatter_add(float* x) {\n  x[0] = 1;\n}\n', "scatter_add")
print(type(k).__name__, isinstance(k, cp.RawKernel), flush=True)
from torch._inductor.runtime.triton_heuristics import CachingAutotuner
launcher = CachingAutotuner({"kernel_name": sys.argv[3]})
ns = {"k": launcher}
exec(compile("\n" * 299 + "def call():\n    k.run(1, stream=0)\n", wrapper, "exec"), ns)
from torch._dynamo.eval_frame import _fn
def forward():
    ns["call"]()
def step():
    _fn(forward)
for _ in range(3):
    step()
"#;

fn stand_ins(s: &Scratch) {
    put(s, "pkg/torch/__init__.py", "");
    put(s, "pkg/torch/_inductor/__init__.py", "");
    put(
        s,
        "pkg/torch/_inductor/async_compile.py",
        "import os, shutil\nclass AsyncCompile:\n    def triton(self, kernel_name, source_code, device_str='cuda'):\n        \
         # As on a cold cache: the call writes the kernel's file.\n        \
         for src, dest in [l.split('\\t') for l in open(os.environ['PENDING']).read().splitlines()]:\n            \
         os.makedirs(os.path.dirname(dest), exist_ok=True)\n            shutil.copy(src, dest)\n        return kernel_name\n",
    );
    // Loads the output code as Inductor does: its `async_compile.triton(...)` runs in a frame
    // of the wrapper's file, at its line, while compile_fx runs.
    put(
        s,
        "pkg/torch/_inductor/compile_fx.py",
        "from torch._inductor.async_compile import AsyncCompile\n\
         def compile_fx(gm, example_inputs, wrapper=None, line=0, kernel=None):\n    \
         code = '\\n' * (line - 1) + 'k = async_compile.triton(%r, \"\")\\n' % kernel\n    \
         exec(compile(code, wrapper, 'exec'), {'async_compile': AsyncCompile()})\n    return lambda *a: None\n",
    );
    put(s, "pkg/torch/_inductor/runtime/__init__.py", "");
    put(
        s,
        "pkg/torch/_inductor/runtime/triton_heuristics.py",
        "class CachingAutotuner:\n    def __init__(self, inductor_meta):\n        self.inductor_meta = inductor_meta\n    \
         def run(self, *args, stream=None):\n        return None\n",
    );
    put(s, "pkg/torch/_dynamo/__init__.py", "");
    // Dynamo's entry into a compiled function: the function's own frame is not the launch.
    put(s, "pkg/torch/_dynamo/eval_frame.py", "def _fn(f):\n    return f()\n");
    put(s, "pkg/torch/utils/__init__.py", "");
    put(
        s,
        "pkg/torch/utils/cpp_extension.py",
        "import types\n\
         def _jit_compile(name, sources, extra_cflags=None):\n    \
         return types.SimpleNamespace(__file__='/home/u/.cache/torch_extensions/py312_cu130/%s/%s.so' % (name, name))\n\
         def load(name, sources, **kw):\n    return _jit_compile(name, sources)\n",
    );
    put(
        s,
        "pkg/cupy/__init__.py",
        "class RawKernel:\n    def __init__(self, code, name, options=()):\n        self.code, self.name = code, name\n",
    );
    put(s, "rec/sitecustomize.py", xtask::ladder::recorder::SOURCE);
    put(s, "app.py", APP);
}

/// Runs the app under the recorder; the log's text.
fn record(s: &Scratch, wrapper: &str, line: u32) -> String {
    let log = s.path("rung/launches.log");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(&log);
    let source = root().join("tests/gpu/programs/real_stack/jit_op/gather_rows.cu");
    let out = std::process::Command::new("python3")
        .arg(s.path("app.py"))
        .args([wrapper, &line.to_string(), KERNEL, &source.display().to_string()])
        .env("PYTHONPATH", format!("{}:{}", s.path("rec").display(), s.path("pkg").display()))
        .env(xtask::ladder::recorder::LOG_VAR, &log)
        .env("PENDING", s.path("pending.tsv"))
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("RawKernel True"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(log).unwrap()
}

/// The recorder names each generated kernel's file, output code and fused FX nodes, each
/// node's model line, and which lines of the kernel's file go through the tensor a node
/// indexes (the recorded kernel's line 49 reads `pos_table` for `getitem`; its assert twin's
/// line 50 checks that index); a JIT-built extension's kernels and library; an NVRTC string,
/// saved beside the log; where the program launched an Inductor kernel (its line, not the
/// output code's); and the program still sees the classes it built.
#[test]
fn the_recorder_says_where_generated_and_run_time_compiled_kernels_came_from() {
    let s = Scratch::create("provenance", "recorder");
    stand_ins(&s);
    let kernel = pending_kernel(&s, READ_KERNEL);
    let wrapper = into_cache(&s, READ_WRAPPER);
    let log = record(&s, &wrapper, 64);
    let ev = scan_str(&log, "baseline/launches.log");
    let p = &ev.provenance;
    assert_eq!(p.inductor.len(), 1, "{log}");
    let k = &p.inductor[0];
    assert_eq!(
        (k.kernel.as_str(), k.kernel_file.as_deref(), k.wrapper_line),
        (KERNEL, Some(kernel.as_str()), 64)
    );
    assert_eq!(k.nodes, ["h", "getitem", "h_1", "layer_norm"]);
    assert_eq!(k.aten, ["aten.embedding", "aten.index", "aten.add", "aten.native_layer_norm"]);
    let lines =
        |node: &str| p.model.iter().find(|m| m.node == node).map(|m| (m.site.line, m.kernel_lines.clone()));
    assert_eq!(lines("getitem"), Some((28, vec![49, 79])), "{log}");
    assert_eq!(lines("h"), Some((27, vec![44, 74])), "{log}");
    assert_eq!(lines("layer_norm"), Some((29, vec![])), "{log}");
    let gi = p.model.iter().find(|m| m.node == "getitem").unwrap();
    assert_eq!(gi.code.as_deref(), Some("h = h + self.pos_table[positions]"));
    assert_eq!(gi.callers[0].line, 42);
    let ext = p.jit.iter().find(|j| !j.is_nvrtc()).expect("the extension");
    assert_eq!(
        (ext.name.as_deref(), ext.kernels.as_slice()),
        (Some("ima_gather_op"), &["gather_rows_kernel".to_string()][..])
    );
    assert!(ext.output.as_deref().is_some_and(|o| o.ends_with("/ima_gather_op.so")));
    let rtc = p.jit.iter().find(|j| j.is_nvrtc()).expect("the NVRTC program");
    assert_eq!(
        (rtc.library.as_str(), rtc.kernels.as_slice()),
        ("cupy.RawKernel", &["scatter_add".to_string()][..])
    );
    let saved = rtc.source.as_deref().unwrap();
    assert!(saved.starts_with(&s.path("rung").display().to_string()), "{saved}");
    assert!(std::fs::read_to_string(saved).unwrap().contains("x[0] = 1;"));
    assert_eq!(rtc.site.as_ref().map(|f| f.line), Some(21), "the app's line that built it: {log}");
    assert_eq!(ext.site.as_ref().map(|f| f.line), Some(20), "{log}");

    // Inductor's launches (through CachingAutotuner.run, from the output code's `call`, inside
    // a function entered through Dynamo): the user's line that called the compiled code, once.
    let app = s.path("app.py").display().to_string();
    let sites: Vec<_> =
        ev.recorded_launches.iter().map(|l| (l.kernel.as_str(), l.site.file.clone(), l.site.line)).collect();
    assert_eq!(sites, [(KERNEL, Some(app), Some(31))], "{log}");

    // The assert's twin: the assert line and the load after it both go through `getitem`.
    pending_kernel(&s, ASSERT_KERNEL);
    let wrapper = into_cache(&s, ASSERT_WRAPPER);
    let log = record(&s, &wrapper, 66);
    let ev = scan_str(&log, "baseline/launches.log");
    let gi = ev.provenance.model.iter().find(|m| m.node == "getitem").unwrap();
    assert!(gi.kernel_lines.contains(&50) && gi.kernel_lines.contains(&51), "{log}");
}

/// One recorded bundle's expected verdict: the case, the kernel's start, the verdict's
/// `file:line` end (`None`: unknown), the origin (`-`: none) and whether its model line is the
/// faulting access's, and the launch line's end (`None`: unknown).
type Expected = (&'static str, &'static str, Option<&'static str>, &'static str, bool, Option<&'static str>);

const RECORDED: &[Expected] = &[
    // A cold Inductor cache, recorded before the recorder read the kernel's file after the
    // call that writes it: the fused statements are listed, none chosen.
    (
        "ind_read",
        "triton_red_fused",
        Some("cj2bb7oloszmvp746xw2xvetmctsursybt4s4g7bt7r7nuxxurem.py:49"),
        "inductor",
        false,
        Some("inductor_fault.py:43"),
    ),
    (
        "ind_assert",
        "triton_red_fused",
        Some("cawrwbe2ycsqnwhxcjuyflwvjisyxucba5gcokja6fycxcrrz67n.py:49"),
        "inductor",
        false,
        Some("inductor_fault.py:43"),
    ),
    (
        "ind_read_graphs",
        "triton_red_fused",
        Some("tiny_model.py:28"),
        "inductor",
        true,
        Some("inductor_fault.py:43"),
    ),
    (
        "ind_assert_graphs",
        "triton_red_fused",
        Some("tiny_model.py:28"),
        "inductor",
        true,
        Some("inductor_fault.py:43"),
    ),
    (
        "ind_write",
        "triton_poi_fused",
        Some("tiny_model.py:30"),
        "inductor",
        true,
        Some("inductor_fault.py:43"),
    ),
    (
        "engine_inductor-read",
        "triton_red_fused",
        Some("tiny_model.py:28"),
        "inductor",
        true,
        Some("engine_serve.py:135"),
    ),
    ("engine_watch_late", "triton_red_fused", Some("tiny_model.py:28"), "inductor", true, None),
    (
        "engine_triton",
        "paged_scores_kernel",
        Some("engine_serve.py:61"),
        "-",
        false,
        Some("engine_serve.py:66"),
    ),
    ("jit_load", "gather_rows_kernel", None, "jit-extension", false, Some("jit_op_fault.py:41")),
    ("jit_inline", "gather_rows_kernel", None, "jit-extension", false, Some("jit_op_fault.py:41")),
    (
        "jit_rebuild",
        "gather_rows_kernel",
        Some("gather_rows.cu:12"),
        "jit-extension",
        false,
        Some("jit_op_fault.py:41"),
    ),
    ("cupy", "scatter_add", None, "nvrtc", false, Some("nvrtc_fault.py:52")),
    ("cupy_module", "scatter_add", None, "nvrtc", false, Some("nvrtc_fault.py:52")),
    (
        "cupy_debug",
        "scatter_add",
        Some("00fbfaeb924fb39e58db144444aa336f7fc0f973.cubin.cu:13"),
        "nvrtc",
        false,
        Some("nvrtc_fault.py:52"),
    ),
    (
        "cupy_rebuild",
        "scatter_add",
        Some("00fbfaeb924fb39e58db144444aa336f7fc0f973.cubin.cu:13"),
        "nvrtc",
        false,
        Some("nvrtc_fault.py:52"),
    ),
    ("cuda_core", "scatter_add", None, "nvrtc", false, Some("nvrtc_fault.py:73")),
];

/// The bundles an H100 wrote for each provenance (tests/fixtures/bundles/real_stack, docs/
/// validation.md section 27) give their verdicts: the model's line for an Inductor kernel whose
/// faulting access leads to one statement (in a graph replay, in the engine's worker, under
/// `watch`), the user's call as the launch (never the output code), the extension's or the
/// NVRTC program's origin with an honest note where no line exists, and the generated sources
/// kept in the bundle.
#[test]
fn the_recorded_real_stack_bundles_give_their_verdicts_and_origins() {
    let dir = root().join("tests/fixtures/bundles/real_stack");
    for (case, kernel, at, origin, pinned, launched) in RECORDED {
        let b = dir.join(case);
        let a = xtask::bundle::inputs::analyze(std::slice::from_ref(&b)).unwrap();
        let v = a.verdict.as_ref().unwrap_or_else(|| panic!("{case}: {}", a.conclusion));
        let text = xtask::findings::render::render_text(&a);
        assert!(v.kernel.starts_with(kernel), "{case}: {text}");
        let line = v.file.as_ref().zip(v.line).map(|(f, l)| format!("{f}:{l}"));
        assert_eq!(line.is_some(), at.is_some(), "{case}: {text}");
        if let (Some(line), Some(at)) = (&line, at) {
            assert!(line.ends_with(at), "{case}: {line} vs {at}\n{text}");
        }
        let launch = v
            .launch_site
            .as_ref()
            .and_then(|h| Some(format!("{}:{}", h.frame.file.as_ref()?, h.frame.line?)));
        match (launch, launched) {
            (Some(l), Some(want)) => assert!(l.ends_with(want), "{case}: {l}\n{text}"),
            (got, want) => assert_eq!(got.is_some(), want.is_some(), "{case}: {text}"),
        }
        let o = v.origin.as_ref();
        let kind = o.map(|o| serde_json::to_value(o.kind).unwrap().as_str().unwrap().to_string());
        assert_eq!(kind.as_deref().unwrap_or("-"), *origin, "{case}: {text}");
        assert_eq!(o.is_some_and(|o| o.pinned), *pinned, "{case}: {text}");
        assert!(
            !text.contains("torchinductor_root/ag/") || !text.contains("launched: call"),
            "{case}: {text}"
        );
        if *origin == "inductor" {
            let o = o.unwrap();
            assert!(
                o.generated.is_some() && (o.model.len() >= 4 || case.starts_with("before")),
                "{case}: {text}"
            );
            // The output code and the generated kernel travel with the bundle.
            if case.starts_with("before") {
                continue;
            }
            let index = std::fs::read_to_string(b.join("sources/index.tsv")).unwrap();
            for f in &o.files {
                assert!(
                    index.lines().any(|l| l.starts_with(&format!("{f}\t"))),
                    "{case}: {f} not in\n{index}"
                );
            }
        }
        if *origin == "nvrtc" && at.is_none() {
            assert!(text.contains("without line info: no file holds it"), "{case}: {text}");
        }
        if *origin == "jit-extension" && at.is_none() {
            assert!(text.contains("fresh TORCH_EXTENSIONS_DIR"), "{case}: {text}");
        }
    }
}

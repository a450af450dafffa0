//! Kernel and path names: demangling, normalising for comparison across tools, and
//! telling library code from the user's. Pure string functions; no I/O.

/// Demangles an Itanium C++ symbol (`_Z11scatter_farPii` -> `scatter_far(int*, int)`).
/// Returns `None` when the input is not a mangled name or cannot be demangled (bounded
/// recursion, so hostile input cannot blow the stack).
pub fn demangle(sym: &str) -> Option<String> {
    let sym = sym.trim();
    if !sym.starts_with("_Z") || sym.len() > 16 * 1024 {
        return None;
    }
    let parse = cpp_demangle::ParseOptions::default().recursion_limit(256);
    let symbol = cpp_demangle::Symbol::new_with_options(sym.as_bytes(), &parse).ok()?;
    let opts = cpp_demangle::DemangleOptions::default().recursion_limit(256);
    symbol.demangle_with_options(&opts).ok()
}

/// Demangles where possible; otherwise returns the name as it was.
pub fn pretty(sym: &str) -> String {
    demangle(sym).unwrap_or_else(|| sym.trim().to_string())
}

/// A comparison key for kernel names as different tools print them:
/// `scatter_far(int *, int)` (sanitizer), `scatter_far(int*, int)` (cuda-gdb),
/// `void scatter_far<...>(...)` and `_Z11scatter_farPii` all compare equal on the
/// qualified base name. Template arguments and parameter lists are dropped.
pub fn kernel_key(name: &str) -> String {
    let pretty = pretty(name);
    let mut s = pretty.as_str().trim();
    // Drop a leading return type (`void `), which cuda-gdb prints for templates.
    if let Some(rest) = s.strip_prefix("void ") {
        s = rest;
    }
    // Cut at the first '(' or '<' that is at nesting depth 0, but keep
    // `(anonymous namespace)` which is part of the qualified name.
    // Walked by characters, never by byte index: a name may hold any UTF-8 (`核`, `😀`).
    const ANONYMOUS: &str = "(anonymous namespace)";
    let mut out = String::with_capacity(s.len());
    let mut depth_angle = 0usize;
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix(ANONYMOUS) {
            if depth_angle == 0 {
                out.push_str(ANONYMOUS);
            }
            rest = after;
            continue;
        }
        match c {
            '<' => depth_angle += 1,
            '>' => depth_angle = depth_angle.saturating_sub(1),
            '(' if depth_angle == 0 => break,
            _ if depth_angle == 0 && !c.is_whitespace() => out.push(c),
            _ => {}
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Compacts a demangled signature for display: `int *` -> `int*`, collapses spaces.
pub fn compact_signature(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut prev_space = false;
    for c in name.trim().chars() {
        if c.is_whitespace() {
            prev_space = true;
            continue;
        }
        if prev_space && !matches!(c, '*' | '&' | ')' | ',' | '>') && !out.ends_with(['(', '<']) {
            out.push(' ');
        }
        prev_space = false;
        out.push(c);
        if c == ',' {
            prev_space = true;
        }
    }
    out
}

/// The one form a kernel is shown in, whichever tool printed it: demangled, spaced as
/// cpp_demangle prints it (`scatter(float const*, int)`: `const` after the type it qualifies,
/// as compute-sanitizer's `const float *` and cuda-gdb's `float const*` both become), no
/// leading return type (`void k<float>(...)` -> `k<float>(...)`) and `(void)` as `()`.
/// Names that compare equal by [`kernel_key`] and differ only in these render the same.
pub fn display_kernel(name: &str) -> String {
    let compact = compact_signature(&pretty(name));
    let mut s = compact.as_str();
    if let Some(rest) = s.strip_prefix("void ") {
        if rest.contains('(') {
            s = rest;
        }
    }
    let Some(open) = params_start(s) else { return s.to_string() };
    let Some(close) = matching_close(s, open) else { return s.to_string() };
    let inner = &s[open + 1..close];
    let params: Vec<String> = split_top(inner).into_iter().map(canonical_param).collect();
    let params = if params.len() == 1 && params[0] == "void" { String::new() } else { params.join(", ") };
    format!("{}({params}){}", &s[..open], &s[close + 1..])
}

/// The byte index of the `(` that opens the parameter list: the first at template depth 0
/// that is not `(anonymous namespace)`.
fn params_start(s: &str) -> Option<usize> {
    const ANONYMOUS: &str = "(anonymous namespace)";
    let mut depth = 0usize;
    let mut i = 0;
    while i < s.len() {
        let rest = &s[i..];
        if rest.starts_with(ANONYMOUS) {
            i += ANONYMOUS.len();
            continue;
        }
        let c = rest.chars().next()?;
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            '(' if depth == 0 => return Some(i),
            _ => {}
        }
        i += c.len_utf8();
    }
    None
}

/// The `)` that closes the `(` at `open`.
fn matching_close(s: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// A parameter list split at its top-level commas.
fn split_top(inner: &str) -> Vec<&str> {
    if inner.trim().is_empty() {
        return Vec::new();
    }
    let (mut depth, mut start, mut out) = (0usize, 0usize, Vec::new());
    for (i, c) in inner.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(inner[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(inner[start..].trim());
    out
}

/// `const float*` -> `float const*`, `const int` -> `int const`: a leading cv-qualifier moves
/// behind the type it qualifies, where cpp_demangle prints it.
fn canonical_param(p: &str) -> String {
    for q in ["const ", "volatile "] {
        if let Some(rest) = p.strip_prefix(q) {
            let rest = canonical_param(rest);
            let q = q.trim_end();
            let cut = rest.find(['*', '&']).unwrap_or(rest.len());
            let (base, ptr) = rest.split_at(cut);
            return format!("{} {q}{ptr}", base.trim_end());
        }
    }
    p.to_string()
}

/// The most complete spelling of a source file among `seen` (the same file as other tools
/// printed it): `oob_write.cu` becomes `/src/probe/oob_write.cu` when that was seen; the file
/// itself when no longer spelling ends with `/<file>`. Ties go to the first in sort order.
pub fn fullest<'a>(file: &'a str, seen: impl IntoIterator<Item = &'a str>) -> &'a str {
    let mut best = file;
    for c in seen {
        let longer = c.len() > file.len() && c.ends_with(file) && c[..c.len() - file.len()].ends_with('/');
        if longer && (c.len() > best.len() || (c.len() == best.len() && c < best)) {
            best = c;
        }
    }
    best
}

/// A path inside one of the user's source trees (`roots`, absolute) relative to it
/// (`/work/app/src/k.cu` -> `src/k.cu`); any other path as it is.
pub fn relative_to_roots(path: &str, roots: &[String]) -> String {
    for r in roots {
        let r = r.trim_end_matches('/');
        if let Some(rest) = path.strip_prefix(r).and_then(|p| p.strip_prefix('/')) {
            if !r.is_empty() && !rest.is_empty() {
                return rest.to_string();
            }
        }
    }
    path.to_string()
}

/// True for paths that belong to Python, PyTorch, Triton or other installed libraries
/// rather than the user's code: the first user frame skips these.
pub fn is_library_path(path: &str) -> bool {
    const MARKERS: &[&str] = &[
        "/site-packages/",
        "/dist-packages/",
        "/lib/python3",
        "<frozen ",
        "/torch/",
        "/triton/",
        "/pytorch/",
        "/usr/lib/",
        // The launch recorder debug-ima loads into a Python target: its frame wraps a Triton
        // launch in every stack taken there.
        "/recorder/sitecustomize.py",
    ];
    MARKERS.iter().any(|m| path.contains(m)) || path.starts_with('<')
}

/// True for host (Python) frames that are not the user's: [`is_library_path`], and the output
/// code torch.compile generated ([`super::provenance::is_inductor_output`]), whose `call` runs
/// the kernels of a compiled graph the user's line called.
pub fn is_host_machinery(path: &str) -> bool {
    is_library_path(path) || is_inductor_output(path)
}

/// Whether a user's frame was entered through torch.compile's frame evaluation (Dynamo's
/// `eval_frame.py`), so that it is a compiled function shown at its `def`: `outward` are the
/// frames outside it, nearest first, up to the next frame `user` takes.
pub fn entered_compiled<'a>(
    outward: impl IntoIterator<Item = Option<&'a str>>,
    user: impl Fn(Option<&str>) -> bool,
) -> bool {
    outward
        .into_iter()
        .take_while(|f| !user(*f))
        .any(|f| f.is_some_and(|p| p.ends_with("/torch/_dynamo/eval_frame.py")))
}

/// Whether `path` is a file torch.compile's Inductor wrote: `c` + 51 base32 characters +
/// `.py`, in a folder named by its characters 2 and 3 (`…/j2/cj2bb7….py`), kernels and
/// wrappers alike. A host frame there is generated code, never the user's line.
pub fn is_inductor_output(path: &str) -> bool {
    let mut parts = path.rsplit('/');
    let (Some(base), Some(parent)) = (parts.next(), parts.next()) else { return false };
    base.len() == 55
        && base.starts_with('c')
        && base.ends_with(".py")
        && base.is_char_boundary(3)
        && parent == &base[1..3]
        && base[1..52].bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// The installed libraries whose files [`is_python_library`] knows by their package.
const PYTHON_PACKAGES: &[&str] = &[
    "torch",
    "triton",
    "numpy",
    "transformers",
    "accelerate",
    "deepspeed",
    "ray",
    "safetensors",
    "huggingface_hub",
    "tqdm",
    "_pytest",
    "pytest",
    "pluggy",
    "importlib_metadata",
];

/// The standard modules whose files [`is_python_library`] knows by their name.
const PYTHON_STDLIB: &[&str] = &[
    "multiprocessing",
    "concurrent",
    "asyncio",
    "threading",
    "queue",
    "selectors",
    "subprocess",
    "socket",
    "socketserver",
    "ssl",
    "runpy",
    "importlib",
    "contextlib",
    "functools",
    "logging",
    "signal",
    "os",
    "shutil",
    "io",
    "codecs",
    "json",
    "pickle",
    "copyreg",
    "weakref",
    "abc",
    "typing",
    "traceback",
    "inspect",
    "code",
    "pdb",
    "bdb",
    "cmd",
    "unittest",
    "argparse",
    "dataclasses",
    "enum",
    "collections",
    "tempfile",
    "pathlib",
    "http",
    "urllib",
    "email",
    "xml",
    "sqlite3",
    "ctypes",
    "site",
    "sched",
    "heapq",
    "bisect",
    "random",
    "linecache",
    "tokenize",
    "warnings",
    "zipfile",
    "tarfile",
    "gzip",
    "bz2",
    "lzma",
    "base64",
    "hashlib",
    "hmac",
    "uuid",
    "datetime",
    "calendar",
    "timeit",
    "cProfile",
    "profile",
    "pstats",
    "trace",
    "faulthandler",
    "atexit",
    "gc",
    "copy",
    "pprint",
    "reprlib",
    "string",
    "re",
    "struct",
    "array",
    "glob",
    "fnmatch",
    "filecmp",
    "stat",
    "posixpath",
    "genericpath",
    "ntpath",
    "platform",
    "sysconfig",
    "getpass",
    "select",
    "mmap",
    "fcntl",
    "termios",
    "tty",
    "pty",
    "pipes",
    "shlex",
    "textwrap",
    "difflib",
    "operator",
    "itertools",
    "numbers",
    "decimal",
    "fractions",
    "statistics",
    "math",
    "zipimport",
    "encodings",
    "distutils",
    "venv",
    "ensurepip",
    "wsgiref",
    "xmlrpc",
    "ftplib",
    "smtplib",
    "poplib",
    "imaplib",
    "telnetlib",
    "mailbox",
    "mimetypes",
    "html",
    "csv",
    "configparser",
    "secrets",
    "contextvars",
    "_weakrefset",
    "_collections_abc",
    "_threading_local",
];

/// True for a Python file of a library or of the standard library, also in the form py-spy
/// prints, relative to the entry of `sys.path` it was found under (`torch/cuda/__init__.py`,
/// `multiprocessing/queues.py`, `threading.py`, `<string>`): [`is_library_path`], or a
/// relative path whose first part is an installed library's package or a standard module.
pub fn is_python_library(path: &str) -> bool {
    if is_library_path(path) {
        return true;
    }
    if path.starts_with('/') {
        return false;
    }
    let head = path.split('/').next().unwrap_or(path);
    let module = if path.contains('/') { head } else { head.strip_suffix(".py").unwrap_or(head) };
    (path.contains('/') && PYTHON_PACKAGES.contains(&head)) || PYTHON_STDLIB.contains(&module)
}

/// The rung of an input's name, as a bundle's inputs are named (`coredump` of
/// `coredump/cudagdb-1`, and of `coredump`).
pub fn rung_of(origin: &str) -> &str {
    origin.split('/').next().unwrap_or_default()
}

/// Whether a function (demangled or mangled) is one of CUDA's warp-synchronous intrinsics,
/// whose mask must name the calling lanes: `__syncwarp`, `__shfl_sync` and its `_up`, `_down`,
/// `_xor` forms, `__ballot_sync`, `__all_sync`, `__any_sync`, `__uni_sync`, `__match_*_sync`,
/// `__reduce_*_sync`.
pub fn is_warp_sync_intrinsic(name: &str) -> bool {
    const FAMILIES: &[&str] = &["__shfl", "__ballot", "__all", "__any", "__uni", "__match", "__reduce"];
    name.contains("__syncwarp")
        || FAMILIES.iter().any(|f| {
            name.match_indices(f).any(|(i, _)| {
                let rest = &name[i + f.len()..];
                let word =
                    rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).next().unwrap_or("");
                word.contains("_sync")
            })
        })
}

/// Whether a device source position is the toolkit's or a library's rather than the user's:
/// CUDA's headers (by path, or by the bare name cuda-gdb prints for an inlined header function:
/// `device_atomic_functions.hpp`), CUTLASS, CUB, Thrust, cuda::std, and PyTorch's ATen and c10.
/// The caller decides first whether the file lies in the user's own tree, where none of these
/// count as a library.
pub fn is_toolkit_source(path: &str) -> bool {
    const DIRS: &[&str] = &[
        "/cuda/include/",
        "/targets/x86_64-linux/include/",
        "/targets/sbsa-linux/include/",
        "/cutlass/",
        "/cute/",
        "/cub/",
        "/thrust/",
        "/cuda/std/",
        "/libcudacxx/",
        "/ATen/",
        "/aten/src/",
        "/c10/",
        "/torch/include/",
        "/site-packages/",
        "/dist-packages/",
    ];
    if DIRS.iter().any(|d| path.contains(d))
        || path.starts_with("/usr/include/")
        || path.contains("/cuda-1")
        || path.starts_with("ATen/")
        || path.starts_with("c10/")
        || path.starts_with("crt/")
        || path.starts_with("cutlass/")
        || path.starts_with("cub/")
        || path.starts_with("thrust/")
    {
        return true;
    }
    // A bare header name: the CUDA headers' own files.
    let name = base_name(path);
    let header = name.ends_with(".h") || name.ends_with(".hpp") || name.ends_with(".cuh");
    header
        && !path.contains('/')
        && (name.starts_with("device_")
            || name.starts_with("sm_")
            || name.starts_with("cuda_")
            || name.starts_with("math_functions")
            || name.starts_with("cooperative_groups")
            || name.starts_with("texture_")
            || name.starts_with("surface_")
            || name.starts_with("vector_")
            || name.starts_with("common_functions")
            || name.starts_with("host_defines")
            || name.starts_with("nvfunctional")
            || name.starts_with("mma")
            || name == "cuda_runtime.h")
}

/// The file name part of a path (`/src/probe/ima_far.cu` -> `ima_far.cu`).
pub fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {

    #[test]
    fn warp_synchronous_intrinsics_are_known_mangled_or_not() {
        for n in [
            "__syncwarp",
            "_ZN48_INTERNAL_6a7f0777_17_expert_offsets_cu_b729ea6a10__syncwarpEj",
            "__shfl_xor_sync(unsigned int, float, int, int)",
            "_Z15__shfl_down_syncjfji",
            "__ballot_sync",
            "__match_any_sync",
            "__reduce_add_sync",
        ] {
            assert!(is_warp_sync_intrinsic(n), "{n}");
        }
        for n in ["__syncthreads", "__shfl", "all_reduce_kernel", "atomicAdd", "__any_of", "__syncwar"] {
            assert!(!is_warp_sync_intrinsic(n), "{n}");
        }
    }

    use super::*;
    use proptest::prelude::*;

    #[test]
    fn demangles_kernels() {
        assert_eq!(demangle("_Z11scatter_farPii").as_deref(), Some("scatter_far(int*, int)"));
        assert_eq!(demangle("scatter_far"), None);
        assert_eq!(demangle("_Z"), None);
        assert_eq!(pretty("not_mangled"), "not_mangled");
    }

    #[test]
    fn keys_agree_across_tools() {
        let k = kernel_key("scatter_far(int *, int)");
        assert_eq!(k, "scatter_far");
        assert_eq!(kernel_key("scatter_far(int*, int)"), k);
        assert_eq!(kernel_key("_Z11scatter_farPii"), k);
        assert_eq!(
            kernel_key("void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*, float*)"),
            "at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d"
        );
        assert_eq!(
            kernel_key("at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>()"),
            "at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d"
        );
    }

    #[test]
    fn compacts() {
        assert_eq!(compact_signature("scatter_far(int *, int)"), "scatter_far(int*, int)");
        assert_eq!(compact_signature("f(float const *, long)"), "f(float const*, long)");
    }

    #[test]
    fn one_display_form_whichever_tool_printed_the_kernel() {
        // compute-sanitizer 2025.3 and cuda-gdb 13.0 on the same kernel (tests/fixtures/h200/oob_read).
        let cpp = "gather_rows(float const*, long long const*, float*, int)";
        assert_eq!(display_kernel("gather_rows(const float *, const long long *, float *, int)"), cpp);
        assert_eq!(display_kernel(cpp), cpp);
        assert_eq!(display_kernel("_Z11gather_rowsPKfPKxPfi"), cpp);
        assert_eq!(display_kernel("void k<float>(float*, int)"), "k<float>(float*, int)");
        assert_eq!(display_kernel("k(void)"), "k()");
        assert_eq!(display_kernel("f(const volatile int *, const int)"), "f(int volatile const*, int const)");
        assert_eq!(
            display_kernel("void at::native::(anonymous namespace)::k<float, long>(const float *, void)"),
            "at::native::(anonymous namespace)::k<float, long>(float const*, void)"
        );
        assert_eq!(display_kernel("gather_kv_kernel"), "gather_kv_kernel");
        assert_eq!(display_kernel("k(int*"), "k(int*");
    }

    #[test]
    fn the_fullest_spelling_and_paths_relative_to_roots() {
        let seen = ["oob_write.cu", "/src/probe/oob_write.cu", "/other/not_oob_write.cu"];
        assert_eq!(fullest("oob_write.cu", seen), "/src/probe/oob_write.cu");
        assert_eq!(fullest("/src/probe/oob_write.cu", seen), "/src/probe/oob_write.cu");
        assert_eq!(fullest("x.cu", seen), "x.cu");
        let roots = ["/work/main/".to_string()];
        assert_eq!(relative_to_roots("/work/main/tests/gpu/a.cu", &roots), "tests/gpu/a.cu");
        assert_eq!(relative_to_roots("/work/mainly/a.cu", &roots), "/work/mainly/a.cu");
        assert_eq!(relative_to_roots("a.cu", &roots), "a.cu");
    }

    #[test]
    fn library_paths() {
        assert!(is_library_path("/opt/torch/.venv/lib/python3.12/site-packages/torch/cuda/graphs.py"));
        assert!(!is_library_path("/src/probe/graph_ima.py"));
        assert_eq!(base_name("/src/probe/ima_far.cu"), "ima_far.cu");
        // As cuda-gdb 13.0 printed the inlined atomicAdd (tests/fixtures/h200/shared_atomic).
        assert!(is_toolkit_source("device_atomic_functions.hpp"));
        assert!(is_toolkit_source("sm_60_atomic_functions.hpp"));
        assert!(is_toolkit_source(
            "/usr/local/cuda/bin/../targets/x86_64-linux/include/crt/device_functions.h"
        ));
        assert!(is_toolkit_source("/usr/local/cuda-13.0/include/cuda_fp16.hpp"));
        assert!(is_toolkit_source("/root/pytorch/aten/src/ATen/native/cuda/Loss.cu"));
        assert!(is_toolkit_source("/src/third_party/cutlass/include/cute/tensor.hpp"));
        assert!(!is_toolkit_source("store_helpers.cuh"));
        assert!(!is_toolkit_source("shared_atomic.cu"));
        assert!(!is_toolkit_source("/src/kernels/device_helpers.cuh"));
    }

    #[test]
    fn multi_byte_names_have_keys() {
        // Three- and four-byte characters, where walking by bytes cut one in two (a panic), and
        // a two-byte one, which it read as two Latin-1 characters.
        assert_eq!(kernel_key("核心_kernel(int*, int)"), "核心_kernel");
        assert_eq!(kernel_key("void ns::😀<float>(float*)"), "ns::😀");
        assert_eq!(kernel_key("é(anonymous namespace)::k<核>(int)"), "é(anonymous namespace)::k");
        assert_eq!(kernel_key(&"核".repeat(5_000)), "核".repeat(5_000));
        assert_eq!(compact_signature("核 (int *, 😀)"), "核 (int*, 😀)");
        let _ = demangle("_Z3核Pii");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Every name function on multi-byte, long and mangled-looking names: no panic, and a
        /// key is never longer than the name it comes from.
        #[test]
        fn names_never_panic(name in crate::findings::fuzz::name(), junk in "\\PC{0,64}") {
            let shapes = [
                name.clone(),
                crate::findings::fuzz::mangled(&name),
                format!("void {name}<{junk}>({junk})"),
                format!("{junk}{name}"),
                format!("_Z{junk}{name}"),
                format!("/src/{name}/{junk}.cu"),
            ];
            for s in &shapes {
                let key = kernel_key(s);
                prop_assert!(key.len() <= pretty(s).len(), "{key} from {s}");
                let _ = demangle(s);
                let _ = compact_signature(s);
                let _ = display_kernel(s);
                let _ = is_library_path(s);
                let _ = is_toolkit_source(s);
                let _ = base_name(s);
            }
        }
    }
}

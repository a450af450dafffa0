# debug-ima's launch recorder (docs/ladder.md, "The launch recorder").
#
# Python loads this file as `sitecustomize` because debug-ima put its folder first on
# PYTHONPATH for the target's run, and only then: DEBUG_IMA_LAUNCHES names the log to append
# to. It records, once per distinct place, where the program launched each Triton kernel (the
# first frame outside Triton and PyTorch) and, for a launch while a CUDA graph was being
# captured, where that capture began; and where every `torch.cuda.graph` capture began. A
# kernel that faults in a graph replay, or that memcheck finds without a Python frame, is then
# named with the line that launched it, from the same run.
#
# Must not: change what the program does (every hook falls back to the original call and
# swallows its own errors; capture mode alone adds a synchronize and copies of small integer
# storages to the host before each launch of its one kernel, in a run that is launch-blocking
# anyway), import Triton or PyTorch itself (it patches them after the program
# imports them), write more than MAX_LINES lines, or hide another sitecustomize (it imports
# the next one on the path).
#
# Capture mode (docs/repro.md), for the reproducer rung: DEBUG_IMA_CAPTURE names a kernel
# (its Triton function's name, as the GPU dump names it) and DEBUG_IMA_CAPTURE_DIR a folder.
# Before each launch of that kernel the launch is kept in memory, replacing the one before,
# and written to FOLDER/capture-PID.json once an error shows (the launch raised, or the next
# launch or graph replay found the error pending) or at exit: the kernel's file, module and
# name, the launching line, the grid, every argument and keyword (tensors as dtype, shape, stride, offset into their storage; storages
# shared between arguments kept shared) and the bytes of integer and bool storages up to
# CAPTURE_ONE bytes each, CAPTURE_ALL in all (float contents are never recorded). The rung runs
# the target under CUDA_LAUNCH_BLOCKING=1, so the last launch kept is the one that faulted;
# a launch that finds the error of the one before it pending keeps nothing. Inside a CUDA
# graph capture no bytes are read (a copy would break the capture): they are read before the
# graph's next replay, which sets them (`values_at`).
#
# For a kernel of a PyTorch operator (an ATen kernel, an extension's), DEBUG_IMA_CAPTURE_OPS is
# set too: once torch is imported, a TorchDispatchMode entered on the importing thread keeps
# each operator call on CUDA tensors the same way (`op`: its name, `aten::embedding`, and its
# arguments) and writes the one that raised.
#
# The log: one tab-separated record per line, its first field the kind:
#   hooked   PID  WHAT
#   launch   PID  KERNEL  FILE  LINE  FUNCTION  CAPTURE_FILE  CAPTURE_LINE  STACK
#   capture  PID  FILE  LINE  FUNCTION
#   full     PID  MAX_LINES
#   inductor PID  KERNEL  KERNEL_FILE  WRAPPER_FILE  WRAPPER_LINE  NODES  ATEN
#   model    PID  KERNEL  NODE  FILE  LINE  FUNCTION  CODE  CALLERS  KLINES
#   jit      PID  LIBRARY  NAME  KERNELS  SOURCE  OUTPUT  FILE  LINE  FUNCTION
# CAPTURE_* are `-` outside a capture; STACK is up to 6 user frames, innermost first, as
# `FILE:LINE:FUNCTION` joined by ` <- `.
#
# Where a kernel came from (docs/provenance.md), recorded where it is built or loaded, never
# per launch:
# - `inductor`: a Triton kernel torch.compile generated, as its output code (the wrapper)
#   loads it (`AsyncCompile.triton`): the kernel's file, the wrapper's file and line, and the
#   comment Inductor writes above it (its FX source nodes, comma-separated, and their ATen
#   ops). `model`: for each of those nodes, the user's line it was traced from (the FX node's
#   stack trace, from the graph `compile_fx` was given; CALLERS are the outer frames, as
#   STACK); none when no traced graph holds the node (a graph loaded precompiled). KLINES:
#   the lines of the kernel's file whose load, store or index assert goes through the tensor
#   this node indexes (its pointer -> the wrapper's argument -> the graph fragment's indexing
#   op -> the node), comma-separated, `-` when none is known.
# - `jit` (at most MAX_SOURCES NVRTC programs): code compiled at run time: a `torch.utils.cpp_extension` build (NAME the
#   extension, SOURCE its file holding `__global__` functions, OUTPUT the library it loaded)
#   or an NVRTC program (CuPy RawKernel/RawModule, cuda.core Program; its source string saved
#   as SOURCE beside the log, OUTPUT `-`); KERNELS the `__global__` names in the source,
#   space-separated; FILE LINE FUNCTION the user's frame that asked for it.

import os as _os
import sys as _sys

MAX_LINES = 20000
_HOOKS = {}
# Places seen: (id(jit), id(code), line, capture) -> the code object, kept so that its id is
# never reused while the key stands. Keys by id: hashing a code object hashes its bytecode.
_SEEN = {}
# id(code) -> (code, whether it is launch machinery), for the frames walked on every launch.
_MACHINERY = {}
_CAPTURES = []
_STATE = {"fd": None, "lines": 0, "skip": None}


def _clean(s):
    return str(s).replace("\t", " ").replace("\n", " ")


def _write(fields):
    st = _STATE
    if st["lines"] > MAX_LINES:
        return
    try:
        if st["fd"] is None:
            st["fd"] = _os.open(
                _os.environ["DEBUG_IMA_LAUNCHES"],
                _os.O_WRONLY | _os.O_CREAT | _os.O_APPEND | getattr(_os, "O_CLOEXEC", 0),
                0o644,
            )
        st["lines"] += 1
        if st["lines"] > MAX_LINES:
            fields = ["full", str(MAX_LINES)]
        line = "\t".join([fields[0], str(_os.getpid())] + [_clean(f) for f in fields[1:]]) + "\n"
        _os.write(st["fd"], line.encode("utf-8", "replace"))
    except Exception:
        st["lines"] = MAX_LINES + 1


def _skipped():
    # The launch machinery: Triton's and PyTorch's own files, and this one.
    if _STATE["skip"] is None:
        dirs = [_os.path.dirname(_os.path.abspath(__file__))]
        for name in ("triton", "torch"):
            mod = _sys.modules.get(name)
            f = getattr(mod, "__file__", None)
            if f:
                dirs.append(_os.path.dirname(_os.path.abspath(f)))
        _STATE["skip"] = tuple(d + _os.sep for d in dirs)
    return _STATE["skip"]


def _user_frames(f, limit):
    # The user's frames outwards from f. A function torch.compile compiled (entered through
    # Dynamo's eval_frame.py, shown at its `def`) is left out: its caller called it.
    skip = _skipped()
    out = []
    dynamo = False
    while f is not None and len(out) < limit:
        name = f.f_code.co_filename
        if not name.startswith(skip) and not name.startswith("<frozen") and not _is_generated(name):
            if dynamo and out:
                out.pop()
            out.append(f)
            dynamo = False
        elif name.endswith(_EVAL_FRAME):
            dynamo = True
        f = f.f_back
    return out


_EVAL_FRAME = _os.sep.join(("", "torch", "_dynamo", "eval_frame.py"))


def _where(f):
    return [f.f_code.co_filename, str(f.f_lineno), f.f_code.co_name]


def _is_machinery(code):
    known = _MACHINERY.get(id(code))
    if known is None:
        name = code.co_filename
        known = (code, name.startswith(_STATE["skip"] or _skipped()) or name.startswith("<frozen")
                 or _is_generated(name))
        _MACHINERY[id(code)] = known
    return known[1]


def _note_launch(jit, first):
    # The fast path, every launch: the first frame outside the launch machinery (each code
    # object judged once), and whether this place was seen; the name and the stack only for a
    # new place.
    while first is not None and _is_machinery(first.f_code):
        first = first.f_back
    if first is None:
        return
    capture = _CAPTURES[-1] if _CAPTURES else None
    code = first.f_code
    key = (id(jit), id(code), first.f_lineno, capture)
    if key in _SEEN:
        return
    _SEEN[key] = code
    meta = getattr(jit, "inductor_meta", None)
    name = ((meta.get("kernel_name") if isinstance(meta, dict) else None)
            or getattr(getattr(jit, "fn", None), "__name__", None) or getattr(jit, "__name__", "?"))
    frames = _user_frames(first, 7)
    if not frames:
        return
    stack = " <- ".join(":".join(_where(f)) for f in frames[:6])
    cap = list(capture[:2]) if capture else ["-", "-"]
    _write(["launch", name] + _where(frames[0]) + cap + [stack])


CAPTURE_ONE = 1 << 20
CAPTURE_ALL = 4 << 20
_CAPTURE = {"name": _os.environ.get("DEBUG_IMA_CAPTURE"), "dir": _os.environ.get("DEBUG_IMA_CAPTURE_DIR"),
            "seq": 0, "done": False, "last": None, "saved": False, "signatures": {}}
_INTEGER = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool")


class _Storages:
    # The storages of one launch's tensors, each once (by its address), and the bytes left to
    # record.
    def __init__(self):
        self.index = {}
        self.list = []
        self.budget = CAPTURE_ALL
        self.at_replay = []


def _bytes_of(torch, st):
    import ctypes

    raw = torch.empty(0, dtype=torch.uint8, device=st.device)
    raw.set_(st, 0, (st.nbytes(),), (1,))
    host = raw.cpu()
    return ctypes.string_at(host.data_ptr(), st.nbytes())


def _keep(rec):
    # The launch just captured, kept in memory until an error shows it was the faulting one.
    _CAPTURE["last"] = rec
    _CAPTURE["saved"] = False


def _flush():
    # Writes the last launch kept (once): when an error of it showed (the launch raised, the
    # next launch or replay found it pending) or when the process exits.
    cap = _CAPTURE
    rec = cap.get("last")
    if rec is None or cap.get("saved"):
        return
    cap["saved"] = True
    import base64
    import json

    out = dict(rec)
    out["storages"] = [
        dict(s, values=base64.b64encode(s["values"]).decode() if s["values"] is not None else None)
        for s in rec["storages"]
    ]
    path = _os.path.join(cap["dir"], "capture-%d.json" % _os.getpid())
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(out, f)
    _os.replace(path + ".tmp", path)


def _pending_error(torch):
    # Under launch-blocking nothing is pending but an error of the launch before: then that
    # launch, the one kept, faulted.
    try:
        torch.cuda.synchronize()
        return False
    except Exception:
        _CAPTURE["done"] = True
        _flush()
        return True


def _before_replay():
    # A launch captured into a graph: its integer storages hold the replay's values now.
    pending = _CAPTURE.get("replay")
    torch = _sys.modules.get("torch")
    if not pending or torch is None or _CAPTURE["done"] or _pending_error(torch):
        return
    rec, kept = pending
    for srec, st in kept:
        srec["values"] = _bytes_of(torch, st)
        srec["left_out"] = None
    rec["values_at"] = "replay"
    _keep(rec)


def _value(v, storages, capturing):
    # One argument or keyword, as the reproducer rebuilds it.
    torch = _sys.modules.get("torch")
    if torch is not None and isinstance(v, torch.Tensor):
        st = v.untyped_storage()
        base = st.data_ptr()
        index = storages.index.get(base)
        if index is None:
            index = len(storages.list)
            storages.index[base] = index
            dtype = str(v.dtype).replace("torch.", "")
            rec = {"ptr": hex(base), "bytes": st.nbytes(), "device": str(v.device), "values": None,
                   "left_out": None}
            if dtype not in _INTEGER:
                rec["left_out"] = "%s contents are not recorded" % dtype
            elif capturing:
                # Read at the graph's next replay (`_before_replay`), when the values are set.
                rec["left_out"] = "launched inside a CUDA graph capture and not replayed"
                storages.at_replay.append((rec, st))
            elif st.nbytes() > min(CAPTURE_ONE, storages.budget):
                rec["left_out"] = "%d bytes, over the cap of %d" % (st.nbytes(), min(CAPTURE_ONE, storages.budget))
            else:
                rec["values"] = _bytes_of(torch, st)
                storages.budget -= st.nbytes()
            storages.list.append(rec)
        return {"kind": "tensor", "dtype": str(v.dtype).replace("torch.", ""), "shape": list(v.shape),
                "stride": list(v.stride()), "offset": v.storage_offset(), "storage": index}
    if isinstance(v, bool):
        return {"kind": "bool", "value": v}
    if isinstance(v, int):
        return {"kind": "int", "value": v}
    if isinstance(v, float):
        return {"kind": "float", "value": repr(v)}
    if v is None:
        return {"kind": "none"}
    if isinstance(v, str):
        return {"kind": "str", "value": v}
    if isinstance(v, (tuple, list)):
        return {"kind": "tuple", "items": [_value(x, storages, capturing) for x in v]}
    if torch is not None and isinstance(v, torch.dtype):
        return {"kind": "torch_dtype", "value": str(v).replace("torch.", "")}
    if torch is not None and isinstance(v, torch.device):
        return {"kind": "str", "value": str(v)}
    if torch is not None and isinstance(v, (torch.memory_format, torch.layout)):
        return {"kind": "torch_attr", "value": str(v).replace("torch.", "")}
    inner = getattr(v, "value", None)
    if type(v).__name__ == "constexpr":
        return _value(inner, storages, capturing)
    if type(v).__module__.startswith("triton") and type(v).__name__ == "dtype":
        return {"kind": "triton_dtype", "value": str(v)}
    return {"kind": "other", "type": type(v).__module__ + "." + type(v).__qualname__, "repr": repr(v)[:200]}


def _capture(jit, first, args, kwargs):
    cap = _CAPTURE
    fn = getattr(jit, "fn", None)
    if cap["done"] or getattr(fn, "__name__", None) != cap["name"]:
        return
    torch = _sys.modules.get("torch")
    capturing = False
    if torch is not None:
        capturing = bool(torch.cuda.is_current_stream_capturing())
        if not capturing and _pending_error(torch):
            return
    grid = kwargs.get("grid")
    if callable(grid):
        sig = cap["signatures"].get(id(fn))
        if sig is None:
            import inspect

            sig = cap["signatures"][id(fn)] = inspect.signature(fn)
        named = {k: v for k, v in kwargs.items() if k in sig.parameters}
        bound = sig.bind_partial(*args, **named)
        bound.apply_defaults()
        grid = grid(dict(bound.arguments))
    grid = [int(g) for g in (grid if isinstance(grid, (tuple, list)) else (grid,))]
    storages = _Storages()
    params = [p.name for p in getattr(jit, "params", [])]
    frames = _user_frames(first, 1) if first is not None else []
    site = None
    if frames:
        f = frames[0]
        site = {"file": _os.path.abspath(f.f_code.co_filename), "line": f.f_lineno, "function": f.f_code.co_name}
    cap["seq"] += 1
    rec = {
        "version": 1, "pid": _os.getpid(), "seq": cap["seq"], "kernel": fn.__name__,
        "module": getattr(fn, "__module__", None), "qualname": getattr(fn, "__qualname__", fn.__name__),
        "file": _os.path.abspath(fn.__code__.co_filename), "first_line": fn.__code__.co_firstlineno,
        "site": site,
        "grid": grid, "capturing": capturing, "params": params,
        "args": [_value(a, storages, capturing) for a in args],
        "kwargs": {k: _value(v, storages, capturing) for k, v in kwargs.items() if k not in ("grid", "warmup")},
        "storages": storages.list,
    }
    rec["values_at"] = "capture" if capturing else "launch"
    cap["replay"] = (rec, storages.at_replay) if capturing else None
    _keep(rec)


def _op_capture(func, args, kwargs):
    # One PyTorch operator call with a CUDA tensor among its arguments, kept as the launch of a
    # Triton kernel is (capture mode for an operator's kernel: DEBUG_IMA_CAPTURE_OPS).
    cap = _CAPTURE
    torch = _sys.modules.get("torch")
    if cap["done"] or torch is None or torch.cuda.is_current_stream_capturing():
        return
    flat = list(args) + list(kwargs.values())
    if not any(isinstance(a, torch.Tensor) and a.is_cuda for a in flat):
        return
    if _pending_error(torch):
        return
    storages = _Storages()
    frames = _user_frames(_sys._getframe(1), 1)
    site = None
    if frames:
        f = frames[0]
        site = {"file": _os.path.abspath(f.f_code.co_filename), "line": f.f_lineno, "function": f.f_code.co_name}
    cap["seq"] += 1
    # `aten.embedding.default`: the operator as `torch.ops` names it.
    name = str(func)
    rec = {
        "version": 1, "pid": _os.getpid(), "seq": cap["seq"], "kernel": name, "op": name,
        "module": None, "qualname": "", "file": "", "first_line": 0, "site": site, "grid": [],
        "capturing": False, "params": [],
        "args": [_value(a, storages, False) for a in args],
        "kwargs": {k: _value(v, storages, False) for k, v in kwargs.items()},
        "storages": storages.list, "values_at": "launch",
    }
    _keep(rec)


def _hook_ops(mod):
    # Capture mode for an operator's kernel: every operator call on CUDA tensors of this
    # thread goes through a dispatch mode, which keeps the call and writes it when it raises.
    try:
        from torch.utils._python_dispatch import TorchDispatchMode
    except Exception as e:
        _write(["hooked", "none: no TorchDispatchMode (%s)" % e])
        return

    class _OpCapture(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            try:
                _op_capture(func, args, kwargs)
            except Exception as e:
                _CAPTURE["done"] = True
                _write(["hooked", "capture failed: %s: %s" % (type(e).__name__, e)])
            try:
                return func(*args, **kwargs)
            except Exception:
                _flush_quietly()
                raise

    mode = _OpCapture()
    mode.__enter__()
    _CAPTURE["mode"] = mode
    _write(["hooked", "torch operators (TorchDispatchMode)"])


def _flush_quietly():
    try:
        _flush()
    except Exception as e:
        _write(["hooked", "capture not written: %s: %s" % (type(e).__name__, e)])


def _hook_triton(mod):
    cls = getattr(mod, "JITFunction", None)
    run = getattr(cls, "run", None)
    if run is None:
        _write(["hooked", "none: triton.runtime.jit has no JITFunction.run"])
        return

    getframe = _sys._getframe

    def run_recorded(self, *args, **kwargs):
        if not kwargs.get("warmup"):
            try:
                _note_launch(self, getframe(1))
            except Exception:
                pass
            if _CAPTURE["name"]:
                try:
                    _capture(self, getframe(1), args, kwargs)
                except Exception as e:
                    _CAPTURE["done"] = True
                    _write(["hooked", "capture failed: %s: %s" % (type(e).__name__, e)])
                try:
                    return run(self, *args, **kwargs)
                except Exception:
                    # Under launch-blocking a faulting launch raises here.
                    _flush_quietly()
                    raise
        return run(self, *args, **kwargs)

    run_recorded.__wrapped__ = run
    cls.run = run_recorded
    _write(["hooked", "triton.runtime.jit.JITFunction.run"])


def _hook_graphs(mod):
    cls = getattr(mod, "CUDAGraph", None)
    begin = getattr(cls, "capture_begin", None)
    end = getattr(cls, "capture_end", None)
    if begin is None or end is None:
        return

    def capture_begin(self, *args, **kwargs):
        try:
            frames = _user_frames(_sys._getframe(1), 1)
            site = tuple(_where(frames[0])) if frames else ("?", "0", "?")
            _CAPTURES.append(site)
            _write(["capture"] + list(site))
        except Exception:
            pass
        return begin(self, *args, **kwargs)

    def capture_end(self, *args, **kwargs):
        try:
            return end(self, *args, **kwargs)
        finally:
            if _CAPTURES:
                _CAPTURES.pop()

    replay = getattr(cls, "replay", None)
    if _CAPTURE["name"] and replay is not None:

        def replay_captured(self, *args, **kwargs):
            try:
                _before_replay()
            except Exception as e:
                _CAPTURE["done"] = True
                _write(["hooked", "capture failed at replay: %s: %s" % (type(e).__name__, e)])
            try:
                return replay(self, *args, **kwargs)
            except Exception:
                _flush_quietly()
                raise

        cls.replay = replay_captured
    cls.capture_begin = capture_begin
    cls.capture_end = capture_end
    _write(["hooked", "torch.cuda.graphs.CUDAGraph.capture_begin"])


# ---------------------------------------------------------------- where kernels come from

_GRAPHS = []  # traced graphs given to compile_fx, newest last: {node name: stack trace}
_GRAPH_STACK = []  # the graphs of the compile_fx calls in progress on this process
MAX_GRAPHS = 256
_GENERATED = {}  # a file name -> whether it is Inductor output (c + 51 base32, in <h[1:3]>/)


def _is_generated(path):
    known = _GENERATED.get(path)
    if known is None:
        base = _os.path.basename(path)
        parent = _os.path.basename(_os.path.dirname(path))
        known = (len(base) == 55 and base.startswith("c") and base.endswith(".py")
                 and parent == base[1:3])
        _GENERATED[path] = known
    return known


def _hook_compile_fx(mod):
    compile_fx = getattr(mod, "compile_fx", None)
    if compile_fx is None:
        return

    def compile_fx_recorded(model_, *args, **kwargs):
        table = None
        try:
            graph = getattr(model_, "graph", None)
            if graph is not None:
                table = {}
                for n in graph.nodes:
                    st = n.meta.get("stack_trace") if hasattr(n, "meta") else None
                    if st:
                        table[n.name] = st
                _GRAPHS.append(table)
                del _GRAPHS[:-MAX_GRAPHS]
                _GRAPH_STACK.append(table)
        except Exception:
            table = None
        try:
            return compile_fx(model_, *args, **kwargs)
        finally:
            if table is not None and _GRAPH_STACK and _GRAPH_STACK[-1] is table:
                _GRAPH_STACK.pop()

    compile_fx_recorded.__wrapped__ = compile_fx
    mod.compile_fx = compile_fx_recorded
    _write(["hooked", "torch._inductor.compile_fx.compile_fx"])


def _frames_of(stack_trace):
    # `  File "F", line N, in FUNC\n    CODE` blocks, outermost first -> innermost first.
    out = []
    lines = stack_trace.splitlines()
    for i, l in enumerate(lines):
        l = l.strip()
        if not l.startswith('File "'):
            continue
        try:
            f, rest = l[6:].split('", line ', 1)
            n, _, func = rest.partition(", in ")
            code = lines[i + 1].strip() if i + 1 < len(lines) and not lines[i + 1].strip().startswith('File "') else ""
            out.append((f, n.strip(), func.strip(), code))
        except Exception:
            continue
    out.reverse()
    return out


def _comment_above(wrapper, kernel, line):
    # Inductor's comment above `<kernel> = async_compile.triton('<kernel>', ...)`, outermost line
    # first (its kernel path, source nodes and ATen ops, node mapping, graph fragment).
    import linecache

    start = None
    for n in range(line, max(0, line - 4000), -1):
        if ("async_compile.triton('%s'" % kernel) in linecache.getline(wrapper, n):
            start = n
            break
    block = []
    if start is None:
        return block
    for n in range(start - 1, max(0, start - 4000), -1):
        text = linecache.getline(wrapper, n).strip()
        if not text.startswith("#"):
            break
        block.append(text)
        if text.startswith("# kernel path: "):
            break
    block.reverse()
    return block


def _summary_of(block):
    path, nodes, aten = None, [], []
    for text in block:
        if text.startswith("# kernel path: "):
            path = text[len("# kernel path: "):].strip()
        elif "Source Nodes: [" in text and not nodes:
            names, _, rest = text.partition("Source Nodes: [")[2].partition("]")
            nodes = [x.strip() for x in names.split(",") if x.strip()]
            if "Original ATen: [" in rest:
                aten = [x.strip() for x in rest.partition("Original ATen: [")[2].partition("]")[0].split(",") if x.strip()]
    return path, nodes, aten


# The ATen ops that index one tensor by the values of another: their first argument is the
# tensor indexed, so a load or store through it with a computed offset is theirs.
_INDEXING = ("index", "index_put", "index_put_", "_unsafe_index", "_unsafe_index_put", "embedding",
             "gather", "scatter", "scatter_add", "scatter_reduce", "index_select", "index_add",
             "index_copy", "take", "put")


def _split_args(text):
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _access_lines(kernel, kpath, wrapper, block):
    # Which source node each load, store or index assert of the kernel's file belongs to:
    # pointer parameter -> the wrapper's argument at its position in `<kernel>.run(...)` -> the
    # graph fragment's indexing op whose indexed tensor that is -> the source node mapped to it.
    # {source node: [kernel file lines]}; empty where a link is missing.
    import linecache
    import re

    to_source = {}
    indexed = {}
    in_mapping = False
    for text in block:
        body = text.lstrip("#").strip()
        if text.startswith("# Source node to ATen node mapping"):
            in_mapping = True
            continue
        if text.startswith("# Graph fragment"):
            in_mapping = False
            continue
        if in_mapping and " => " in body:
            src, _, atens = body.partition(" => ")
            for a in atens.split(","):
                to_source[a.strip()] = src.strip()
            continue
        m = re.match(r"%(\w+) : .*?call_function\[target=torch\.ops\.aten\.(\w+)\.\w+\]\(args = \(%(\w+)", body)
        if m and m.group(2) in _INDEXING:
            indexed.setdefault(m.group(3), []).append(m.group(1))
    if not indexed:
        return {}
    lines = linecache.getlines(kpath)
    params = []
    for text in lines:
        if text.startswith("def %s(" % kernel):
            params = [p.split(":")[0].strip() for p in _split_args(text.split("(", 1)[1])]
            break
    args = {}
    for text in linecache.getlines(wrapper):
        at = text.find("%s.run(" % kernel)
        if at < 0:
            continue
        for i, a in enumerate(_split_args(text[at + len(kernel) + 5:])):
            name = re.match(r"(?:reinterpret_tensor\()?\s*(\w+)", a)
            if i < len(params) and name and "=" not in a.split("(")[0]:
                args.setdefault(params[i], set()).add(name.group(1))
    out = {}

    def owner(ptr):
        found = set()
        for arg in args.get(ptr, ()):
            for node in indexed.get(arg, ()):
                if node in to_source:
                    found.add(to_source[node])
        return found

    access = re.compile(r"tl\.(?:load|store)\((\w+) \+")
    for i, text in enumerate(lines, 1):
        ptr = None
        m = access.search(text)
        if m:
            ptr = m.group(1)
        else:
            a = re.search(r'index out of bounds: 0 <= (tmp\d+) <', text)
            if a:
                var = re.compile(r"\b%s\b" % a.group(1))
                for later in lines[i:i + 40]:
                    m = access.search(later)
                    if m and var.search(later):
                        ptr = m.group(1)
                        break
        if ptr:
            found = owner(ptr)
            if len(found) == 1:
                out.setdefault(found.pop(), []).append(i)
    return out


def _graph_for(nodes):
    # The graph being compiled, else the newest traced graph holding every node.
    if _GRAPH_STACK and all(n in _GRAPH_STACK[-1] for n in nodes):
        return _GRAPH_STACK[-1]
    for table in reversed(_GRAPHS):
        if all(n in table for n in nodes):
            return table
    return None


_KERNELS_SEEN = set()


def _note_inductor(kernel, caller):
    wrapper = caller.f_code.co_filename
    key = (kernel, wrapper)
    if key in _KERNELS_SEEN:
        return
    _KERNELS_SEEN.add(key)
    block = _comment_above(wrapper, kernel, caller.f_lineno)
    path, nodes, aten = _summary_of(block)
    _write(["inductor", kernel, path or "-", wrapper, str(caller.f_lineno), ",".join(nodes) or "-",
            ",".join(aten) or "-"])
    table = _graph_for(nodes) if nodes else None
    if table is None:
        return
    try:
        lines = _access_lines(kernel, path, wrapper, block) if path else {}
    except Exception:
        lines = {}
    for node in nodes:
        frames = _frames_of(table.get(node, ""))
        if not frames:
            continue
        f, n, func, code = frames[0]
        callers = " <- ".join("%s:%s:%s" % fr[:3] for fr in frames[1:5])
        klines = ",".join(str(x) for x in lines.get(node, ())) or "-"
        _write(["model", kernel, node, f, n, func, code or "-", callers or "-", klines])


def _hook_inductor_launches(mod):
    # Inductor launches its kernels through CachingAutotuner.run, not JITFunction.run.
    cls = getattr(mod, "CachingAutotuner", None)
    run = getattr(cls, "run", None)
    if run is None:
        return
    getframe = _sys._getframe

    def run_recorded(self, *args, **kwargs):
        try:
            _note_launch(self, getframe(1))
        except Exception:
            pass
        return run(self, *args, **kwargs)

    run_recorded.__wrapped__ = run
    cls.run = run_recorded
    _write(["hooked", "triton.inductor: torch._inductor.runtime.triton_heuristics.CachingAutotuner.run"])


def _hook_async_compile(mod):
    cls = getattr(mod, "AsyncCompile", None)
    triton = getattr(cls, "triton", None)
    if triton is None:
        return
    getframe = _sys._getframe

    def triton_recorded(self, kernel_name, *args, **kwargs):
        # After the call: on a cold cache it is the call that writes the kernel's file.
        result = triton(self, kernel_name, *args, **kwargs)
        try:
            _note_inductor(kernel_name, getframe(1))
        except Exception:
            pass
        return result

    triton_recorded.__wrapped__ = triton
    cls.triton = triton_recorded
    _write(["hooked", "torch._inductor.async_compile.AsyncCompile.triton"])


def _globals_in(code):
    import re

    return sorted(set(re.findall(r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?[\w:<>,\s\*&]*?\b(\w+)\s*\(", code)))


def _caller_site():
    frames = _user_frames(_sys._getframe(2), 1)
    return _where(frames[0]) if frames else ["-", "0", "-"]


def _save_source(library, code):
    # The source string beside the log: `nvrtc-<sha1>.cu` (the same program once).
    import hashlib

    text = code if isinstance(code, str) else bytes(code).decode("utf-8", "replace")
    name = "nvrtc-%s.cu" % hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()[:16]
    path = _os.path.join(_os.path.dirname(_os.environ["DEBUG_IMA_LAUNCHES"]), name)
    if not _os.path.exists(path):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return path, text


MAX_SOURCES = 200
_SOURCES = {"n": 0}


def _note_nvrtc(library, name, code):
    if _SOURCES["n"] >= MAX_SOURCES:
        return
    _SOURCES["n"] += 1
    path, text = _save_source(library, code)
    _write(["jit", library, name or "-", " ".join(_globals_in(text)) or "-", path, "-"] + _caller_site())


def _hook_cpp_extension(mod):
    jit_compile = getattr(mod, "_jit_compile", None)
    if jit_compile is None:
        return

    def jit_compile_recorded(name, sources, *args, **kwargs):
        result = jit_compile(name, sources, *args, **kwargs)
        try:
            kernels, source = [], "-"
            for src in sources:
                try:
                    with open(src, encoding="utf-8", errors="replace") as f:
                        found = _globals_in(f.read())
                except OSError:
                    continue
                if found and source == "-":
                    source = _os.path.abspath(src)
                kernels += found
            out = getattr(result, "__file__", None) or "-"
            _write(["jit", "torch.utils.cpp_extension", name, " ".join(sorted(set(kernels))) or "-", source,
                    out] + _caller_site())
        except Exception:
            pass
        return result

    jit_compile_recorded.__wrapped__ = jit_compile
    mod._jit_compile = jit_compile_recorded
    _write(["hooked", "torch.utils.cpp_extension._jit_compile"])


def _subclass_recording(base, library, note):
    # A subclass of an extension type whose construction is noted first; the module's name
    # for it is replaced, so `cupy.RawKernel(...)` builds one (isinstance still holds).
    try:
        class Recorded(base):
            def __init__(self, *args, **kwargs):
                try:
                    note(args, kwargs)
                except Exception:
                    pass
                super().__init__(*args, **kwargs)

        Recorded.__name__ = base.__name__
        Recorded.__qualname__ = base.__qualname__
        Recorded.__module__ = base.__module__
        return Recorded
    except TypeError:
        _write(["hooked", "none: %s cannot be subclassed" % library])
        return None


def _hook_cupy(mod):
    for cls_name, arg in (("RawKernel", "name"), ("RawModule", None)):
        base = getattr(mod, cls_name, None)
        if base is None:
            continue
        library = "cupy." + cls_name

        def note(args, kwargs, library=library, arg=arg):
            code = kwargs.get("code", args[0] if args else None)
            if code is None:
                return
            name = kwargs.get(arg, args[1] if len(args) > 1 else None) if arg else None
            _note_nvrtc(library, name, code)

        rec = _subclass_recording(base, library, note)
        if rec is not None:
            setattr(mod, cls_name, rec)
    _write(["hooked", "cupy.RawKernel"])


def _hook_cuda_core(mod):
    base = getattr(mod, "Program", None)
    if base is None:
        return

    def note(args, kwargs):
        code = kwargs.get("code", args[0] if args else None)
        if code is None:
            return
        opts = kwargs.get("options", args[2] if len(args) > 2 else None)
        _note_nvrtc("cuda.core.Program", getattr(opts, "name", None) or "default_program", code)

    rec = _subclass_recording(base, "cuda.core.Program", note)
    if rec is not None:
        mod.Program = rec
        _write(["hooked", "cuda.core.Program"])


class _Loader:
    def __init__(self, inner, hook):
        self._inner = inner
        self._hook = hook

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module):
        self._inner.exec_module(module)
        try:
            self._hook(module)
        except Exception:
            pass

    def __getattr__(self, name):
        return getattr(self._inner, name)


class _Finder:
    """Wraps the loader of the modules in _HOOKS, so that each hook runs once its module has."""

    def find_spec(self, name, path=None, target=None):
        hook = _HOOKS.pop(name, None)
        if hook is None:
            return None
        for finder in _sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            try:
                spec = finder.find_spec(name, path, target)
            except Exception:
                spec = None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, hook)
                return spec
        return None


def _chain():
    # Another sitecustomize on the path (a distribution's, a virtual environment's) still runs.
    here = _os.path.dirname(_os.path.abspath(__file__))
    ours = _sys.modules.pop("sitecustomize", None)
    saved = list(_sys.path)
    try:
        _sys.path[:] = [p for p in _sys.path if _os.path.abspath(p or ".") != here]
        try:
            import sitecustomize  # noqa: F401
        except ModuleNotFoundError as e:
            if e.name != "sitecustomize":
                raise
            if ours is not None:
                _sys.modules["sitecustomize"] = ours
    finally:
        _sys.path[:] = saved


if _os.environ.get("DEBUG_IMA_LAUNCHES"):
    _HOOKS["triton.runtime.jit"] = _hook_triton
    _HOOKS["torch.cuda.graphs"] = _hook_graphs
    _HOOKS["torch._inductor.compile_fx"] = _hook_compile_fx
    _HOOKS["torch._inductor.async_compile"] = _hook_async_compile
    _HOOKS["torch._inductor.runtime.triton_heuristics"] = _hook_inductor_launches
    _HOOKS["torch.utils.cpp_extension"] = _hook_cpp_extension
    _HOOKS["cupy"] = _hook_cupy
    _HOOKS["cuda.core"] = _hook_cuda_core
    if _CAPTURE["name"] and _os.environ.get("DEBUG_IMA_CAPTURE_OPS"):
        _HOOKS["torch"] = _hook_ops
    _sys.meta_path.insert(0, _Finder())
    if _CAPTURE["name"]:
        import atexit

        # A fault that surfaced elsewhere (a later call raised; the program exited): the last
        # launch kept is written at exit.
        atexit.register(_flush_quietly)
_chain()

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
# swallows its own errors), import Triton or PyTorch itself (it patches them after the program
# imports them), write more than MAX_LINES lines, or hide another sitecustomize (it imports
# the next one on the path).
#
# The log: one tab-separated record per line, its first field the kind:
#   hooked   PID  WHAT
#   launch   PID  KERNEL  FILE  LINE  FUNCTION  CAPTURE_FILE  CAPTURE_LINE  STACK
#   capture  PID  FILE  LINE  FUNCTION
#   full     PID  MAX_LINES
# CAPTURE_* are `-` outside a capture; STACK is up to 6 user frames, innermost first, as
# `FILE:LINE:FUNCTION` joined by ` <- `.

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
    skip = _skipped()
    out = []
    while f is not None and len(out) < limit:
        name = f.f_code.co_filename
        if not name.startswith(skip) and not name.startswith("<frozen"):
            out.append(f)
        f = f.f_back
    return out


def _where(f):
    return [f.f_code.co_filename, str(f.f_lineno), f.f_code.co_name]


def _is_machinery(code):
    known = _MACHINERY.get(id(code))
    if known is None:
        name = code.co_filename
        known = (code, name.startswith(_STATE["skip"] or _skipped()) or name.startswith("<frozen"))
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
    name = getattr(getattr(jit, "fn", None), "__name__", None) or getattr(jit, "__name__", "?")
    frames = _user_frames(first, 6)
    stack = " <- ".join(":".join(_where(f)) for f in frames)
    cap = list(capture[:2]) if capture else ["-", "-"]
    _write(["launch", name] + _where(first) + cap + [stack])


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

    cls.capture_begin = capture_begin
    cls.capture_end = capture_end
    _write(["hooked", "torch.cuda.graphs.CUDAGraph.capture_begin"])


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
    _sys.meta_path.insert(0, _Finder())
_chain()

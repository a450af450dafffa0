"""GPU facts for issue 26 (the reproducer): what Triton's JITFunction.run is given at each
launch of a kernel (positional arguments, keyword arguments, the grid as a tuple or a
callable, autotune and heuristics wrappers), on this machine's Triton. Prints one block per
launch; faults nothing. Usage: python3 probe_triton.py"""
import inspect
import time

t0 = time.monotonic()
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402

print("import", round(time.monotonic() - t0, 2), "s; triton", triton.__version__, "torch", torch.__version__)
print("run signature", inspect.signature(JITFunction.run))
print("JITFunction attrs", sorted(a for a in vars(JITFunction) if not a.startswith("__")))
_orig = JITFunction.run


def _desc(v):
    if isinstance(v, torch.Tensor):
        st = v.untyped_storage()
        return (f"Tensor shape={tuple(v.shape)} stride={v.stride()} dtype={v.dtype} dev={v.device} "
                f"offset={v.storage_offset()} storage_bytes={st.nbytes()} ptr={v.data_ptr():#x} base={st.data_ptr():#x}")
    if callable(v):
        return f"callable {type(v).__name__}"
    return f"{type(v).__name__} {v!r}"


def run(self, *args, **kwargs):
    fn = self.fn
    print("RUN", fn.__name__, "module", fn.__module__, "qualname", fn.__qualname__,
          "file", fn.__code__.co_filename, "line", fn.__code__.co_firstlineno)
    print("  arg_names", getattr(self, "arg_names", None))
    print("  params", [(p.name, p.is_constexpr) for p in getattr(self, "params", [])])
    for i, a in enumerate(args):
        print("  arg", i, _desc(a))
    for k, v in kwargs.items():
        print("  kw", k, _desc(v))
        if k == "grid" and callable(v):
            try:
                bound = inspect.signature(fn).bind(*args, **{x: y for x, y in kwargs.items() if x in inspect.signature(fn).parameters})
                bound.apply_defaults()
                print("  grid evaluated", v(dict(bound.arguments)))
            except Exception as e:
                print("  grid eval failed", type(e).__name__, e)
    return _orig(self, *args, **kwargs)


JITFunction.run = run


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 128}, num_warps=4)], key=["n"])
@triton.jit
def tuned_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)


@triton.heuristics({"EVEN": lambda a: a["n"] % a["BLOCK"] == 0})
@triton.jit
def heur_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * scale)


n = 1000
x = torch.randn(4096, device="cuda")[8:8 + n]
y = torch.randn(n, device="cuda")
out = torch.empty(n, device="cuda")
t = time.monotonic()
add_kernel[(triton.cdiv(n, 128),)](x, y, out, n, BLOCK=128)
torch.cuda.synchronize()
print("first launch+compile", round(time.monotonic() - t, 2), "s")
add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n, BLOCK=256, num_warps=8)
tuned_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
heur_kernel[(4,)](x, out, 1024, 0.5, BLOCK=256)
m2 = torch.randn(64, 32, device="cuda").t()
add_kernel[(1,)](m2, m2, out, 16, BLOCK=16)
idx = torch.arange(10, device="cuda", dtype=torch.int32)
add_kernel[(1,)](idx, idx, idx, 10, BLOCK=16)
torch.cuda.synchronize()
print("probe done")

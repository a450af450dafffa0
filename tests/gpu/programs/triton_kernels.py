"""GPU suite (issue 26): Triton kernels that live in a module of their own, imported by the
programs that launch them (triton_from_module.py), as vLLM's and SGLang's kernels live in
`ops` modules."""
import triton
import triton.language as tl


@triton.jit
def rope_rows_kernel(x_ptr, pos_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    pos = tl.load(pos_ptr + row)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    vals = tl.load(x_ptr + pos * stride_row + cols, mask=mask)  # FAULT
    tl.store(out_ptr + row * stride_row + cols, vals * 2.0, mask=mask)


@triton.autotune(
    configs=[triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 256}, num_warps=4)],
    key=["n"],
)
@triton.heuristics({"EVEN": lambda a: a["n"] % a["BLOCK"] == 0})
@triton.jit
def strided_copy_kernel(src_ptr, dst_ptr, n, src_stride, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        vals = tl.load(src_ptr + offs * src_stride)  # FAULT
    else:
        vals = tl.load(src_ptr + offs * src_stride, mask=offs < n)
    tl.store(dst_ptr + offs, vals, mask=offs < n)

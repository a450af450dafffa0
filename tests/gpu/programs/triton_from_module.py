"""GPU suite (issue 26): Triton kernels from a module of their own (triton_kernels.py).

Modes:
  rope     a position table with one stale entry sends row 5 of a 2-D launch 32 GiB away
           (an index-dependent fault on a transposed, non-contiguous input's row stride)
  strided  an autotuned, heuristics-wrapped copy given a stride 1,000,000 times too large
"""
import sys

import torch

from triton_kernels import rope_rows_kernel, strided_copy_kernel


def rope():
    rows, cols = 64, 96
    x = torch.randn(rows, 128, device="cuda")
    pos = torch.arange(rows, device="cuda", dtype=torch.int32)
    out = torch.empty(rows, 128, device="cuda")
    rope_rows_kernel[(rows,)](x, pos, out, cols, x.stride(0), BLOCK=128)
    torch.cuda.synchronize()
    pos[5] = -(1 << 23)  # the bug: a stale position, 4 GiB before x (int32 arithmetic)
    rope_rows_kernel[(rows,)](x, pos, out, cols, x.stride(0), BLOCK=128)  # LAUNCH
    print("checksum", out.sum().item(), flush=True)


def strided():
    n = 4096
    src = torch.randn(n, device="cuda")
    dst = torch.empty(n, device="cuda")
    grid = lambda meta: (n // meta["BLOCK"],)  # noqa: E731
    strided_copy_kernel[grid](src, dst, n, 1)
    torch.cuda.synchronize()
    strided_copy_kernel[grid](src, dst, n, 1_000_000)  # LAUNCH: the bug, a stride in bytes
    print("checksum", dst.sum().item(), flush=True)


if __name__ == "__main__":
    {"rope": rope, "strided": strided}[sys.argv[1] if len(sys.argv) > 1 else "rope"]()

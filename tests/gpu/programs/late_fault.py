"""GPU suite (issue 21): a long PyTorch/Triton job that faults once, late. For about 35 s (a
clock, argument 1) it scatters rows through a valid index tensor with a Triton kernel,
thousands of launches, with a progress line every 5 s; then ONE launch, from its own line,
whose index tensor holds a stale row: the kernel stores 32 GiB before its output. The host
learns of it at the next synchronizing call (the checksum's `.item()`).

Usage: python3 late_fault.py [seconds [steps]]   (steps > 0: exactly that many steps, so that
two runs do the same work; a launch-blocking run is slower per step)
"""
import sys
import time

import torch
import triton
import triton.language as tl

BLOCK = 128


@triton.jit
def scatter_rows_kernel(src_ptr, idx_ptr, dst_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    row = tl.load(idx_ptr + pid)
    offs = tl.arange(0, BLOCK)
    vals = tl.load(src_ptr + pid * BLOCK + offs)
    tl.store(dst_ptr + row * BLOCK + offs, vals * 0.5)  # FAULT


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 35.0
    fixed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    torch.manual_seed(0)
    rows = 256
    src = torch.randn(rows * BLOCK, device="cuda")
    dst = torch.zeros(rows * BLOCK, device="cuda")
    acc = torch.zeros(rows * BLOCK, device="cuda")
    print("late_fault.py: start", flush=True)
    t0 = time.monotonic()
    nxt, steps = 5.0, 0
    while (steps < fixed) if fixed > 0 else ((t := time.monotonic() - t0) < seconds):
        t = time.monotonic() - t0
        idx = torch.randperm(rows, device="cuda")
        scatter_rows_kernel[(rows,)](src, idx, dst, BLOCK=BLOCK)
        acc.add_(dst)  # an elementwise consumer of each step
        steps += 1
        if t >= nxt:
            print(f"late_fault.py: {t:.0f} s, {steps} steps, sum {acc.sum().item():.1f}", flush=True)
            nxt += 5.0

    idx = torch.randperm(rows, device="cuda")
    idx[rows - 7] = -(1 << 26)  # the bug: a stale row, 32 GiB before dst
    print(f"late_fault.py: {steps} steps; last step", flush=True)
    scatter_rows_kernel[(rows,)](src, idx, dst, BLOCK=BLOCK)  # LAUNCH
    acc.add_(dst)
    print("checksum", acc.sum().item(), flush=True)  # the error surfaces here


if __name__ == "__main__":
    main()

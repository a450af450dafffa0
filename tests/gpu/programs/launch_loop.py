"""The launch recorder's cost (tests/gpu/recorder.sh, part C): a trivial Triton kernel
launched from one line as fast as Python can for SECONDS (argument 1, default 5), then one
synchronize; prints the launches a second. The cost of a per-launch hook shows here at its
largest: nothing else runs between launches.
"""
import sys
import time

import torch
import triton
import triton.language as tl


@triton.jit
def add_one(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1.0)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    x = torch.zeros(1024, device="cuda")
    for _ in range(100):  # compile and warm up
        add_one[(1,)](x, BLOCK=1024)
    torch.cuda.synchronize()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(1000):
            add_one[(1,)](x, BLOCK=1024)
        n += 1000
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print(f"launch_loop.py: {n} launches in {dt:.2f} s, {n / dt:.0f} launches/s, x[0]={x[0].item():.0f}")


if __name__ == "__main__":
    main()

"""GPU suite (issue 21): a serving-like job that hangs after about 10 s. It serves batches,
with a progress line every second, then launches a Triton kernel whose programs wait for a
flag in global memory that nothing ever sets, and waits for it: from then on it prints
nothing, which `debug-ima watch --hang-after 15` must take for a hang. The same kernel ran
once at start-up with the flag set (that compiled it), so the hang needs no JIT.

Usage: python3 hang_serving.py [seconds of serving]   (default 10)
"""
print("hang_serving: start", flush=True)  # before the imports, which take seconds

import sys  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def wait_then_copy(flag_ptr, src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    ready = tl.load(flag_ptr, volatile=True)
    while ready == 0:  # HANG: spins here
        ready = tl.load(flag_ptr, volatile=True)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    n = 4096
    w = torch.randn(1024, 1024, device="cuda") / 32.0
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    grid = (triton.cdiv(n, 1024),)
    ready = torch.ones(1, dtype=torch.int32, device="cuda")
    wait_then_copy[grid](ready, src, dst, n, BLOCK=1024)  # warm-up: the flag is set
    torch.cuda.synchronize()

    t0 = time.monotonic()
    nxt, served = 1.0, 0
    while (t := time.monotonic() - t0) < seconds:
        x = torch.randn(64, 1024, device="cuda")
        torch.relu(x @ w).sum(dim=-1).cpu()
        served += 1
        if t >= nxt:
            print(f"hang_serving: {t:.0f} s, {served} requests", flush=True)
            nxt += 1.0

    flag = torch.zeros(1, dtype=torch.int32, device="cuda")  # the bug: nobody sets it
    print("hang_serving: handing off", flush=True)
    wait_then_copy[grid](flag, src, dst, n, BLOCK=1024)  # LAUNCH
    torch.cuda.synchronize()  # waits forever
    flag.fill_(1)
    print("hang_serving: done", flush=True)


if __name__ == "__main__":
    main()

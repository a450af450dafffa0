# A hang in a Triton kernel: every program waits for a flag in global memory that the host
# was meant to set after the launch, but the host waits for the kernel first.
import torch
import triton
import triton.language as tl


@triton.jit
def wait_then_copy(flag_ptr, src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    ready = tl.load(flag_ptr, volatile=True)
    while ready == 0:  # hang: spins here
        ready = tl.load(flag_ptr, volatile=True)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def main():
    n = 4096
    flag = torch.zeros(1, dtype=torch.int32, device="cuda")
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    print("launching wait_then_copy; the flag is set only after synchronize", flush=True)
    wait_then_copy[(triton.cdiv(n, 1024),)](flag, src, dst, n, BLOCK=1024)
    torch.cuda.synchronize()
    flag.fill_(1)
    print("done", flush=True)


if __name__ == "__main__":
    main()

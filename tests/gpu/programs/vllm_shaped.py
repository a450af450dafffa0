"""GPU suite: a vLLM-shaped Triton kernel reads the KV cache through a corrupt block table.

Modes: `eager` (plain launch), `graph` (inside a captured CUDA graph, found at replay),
`worker` (in a process started with multiprocessing spawn, as inference servers do),
`clean` (no corruption).
"""
import multiprocessing as mp
import sys

import torch
import triton
import triton.language as tl

BLOCK = 128


@triton.jit
def gather_kv_kernel(cache_ptr, block_table_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    blk = tl.load(block_table_ptr + pid)
    offs = tl.arange(0, BLOCK)
    vals = tl.load(cache_ptr + blk * BLOCK + offs)  # FAULT
    tl.store(out_ptr + pid * BLOCK + offs, vals)


def gather(cache, table, out):
    gather_kv_kernel[(table.numel(),)](cache, table, out, BLOCK=BLOCK)


def run(mode):
    torch.manual_seed(0)
    num_blocks, n = 256, 64
    cache = torch.randn(num_blocks * BLOCK, device="cuda")
    table = torch.randint(0, num_blocks, (n,), device="cuda", dtype=torch.int64)
    out = torch.empty(n * BLOCK, device="cuda")
    gather(cache, table, out)  # warm-up with a valid table: compiles the kernel
    torch.cuda.synchronize()
    bad = -(1 << 26) if mode != "clean" else 0  # 32 GiB before the cache
    if mode == "graph":
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            gather(cache, table, out)
        table[41] = bad
        g.replay()
        print("replayed", flush=True)
    else:
        table[41] = bad
        gather(cache, table, out)
        print("launched", flush=True)
    print("checksum", out.sum().item(), flush=True)


def worker():
    run("eager")


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "eager"
    if mode == "worker":
        p = mp.get_context("spawn").Process(target=worker)
        p.start()
        p.join()
        print("worker exit code", p.exitcode, flush=True)
        sys.exit(1 if p.exitcode else 0)
    run(mode)

"""GPU suite: one rank of a two-GPU torch.distributed (NCCL) job reads through a corrupt
block table (the Triton kernel of vllm_shaped.py); the other rank waits in all_reduce.

Run with `python3 -m torch.distributed.run --nproc-per-node 2 dist_fault.py`.
"""
import datetime
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vllm_shaped import BLOCK, gather  # noqa: E402


def main():
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=30))
    num_blocks, n = 256, 64
    cache = torch.randn(num_blocks * BLOCK, device="cuda")
    table = torch.randint(0, num_blocks, (n,), device="cuda", dtype=torch.int64)
    out = torch.empty(n * BLOCK, device="cuda")
    x = torch.ones(1024, device="cuda")
    dist.all_reduce(x)  # both ranks are up
    torch.cuda.synchronize()
    if rank == 1:
        table[41] = -(1 << 26)  # corrupt on rank 1 only
    gather(cache, table, out)  # FAULT (rank 1)
    dist.all_reduce(out)
    print(f"rank {rank} checksum", out.sum().item(), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

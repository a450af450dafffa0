# A one-rank torch.distributed (NCCL) job that hangs in a Triton kernel after a few
# collectives: the hang rung takes its flight recorder through the pipe as well as the GPU
# dump and py-spy stacks.
import os

import torch
import torch.distributed as dist
import triton
import triton.language as tl


@triton.jit
def wait_for_flag(flag_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    seen = tl.load(flag_ptr, volatile=True)
    while seen == 0:  # hang: spins here
        seen = tl.load(flag_ptr, volatile=True)
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), seen)


def main():
    for k, v in {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29541", "RANK": "0", "WORLD_SIZE": "1"}.items():
        os.environ.setdefault(k, v)
    dist.init_process_group("nccl", device_id=torch.device("cuda:0"))
    x = torch.ones(1024, device="cuda")
    for _ in range(3):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    flag = torch.zeros(1, dtype=torch.int32, device="cuda")
    out = torch.empty(2 * 128, dtype=torch.int32, device="cuda")
    print("collectives done; launching wait_for_flag", flush=True)
    wait_for_flag[(2,)](flag, out, BLOCK=128)
    torch.cuda.synchronize()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

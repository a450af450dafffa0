# Two processes on one GPU where one waits for the other: the parent launches a Triton kernel
# that waits for a flag the worker should set through CUDA IPC; the worker waits for a message
# from the parent that is only sent after the kernel finishes. The parent spins on the GPU,
# the worker blocks on the host (a deadlock across processes, as a barrier mismatch is).
import torch
import torch.multiprocessing as mp
import triton
import triton.language as tl


@triton.jit
def wait_for_peer(flag_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    seen = tl.load(flag_ptr, volatile=True)
    while seen == 0:  # hang: spins here
        seen = tl.load(flag_ptr, volatile=True)
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), seen)


def worker(flag, go):
    go.get()  # waits for the parent's message: never comes
    flag.fill_(1)
    torch.cuda.synchronize()


def main():
    mp.set_start_method("spawn")
    flag = torch.zeros(1, dtype=torch.int32, device="cuda")
    out = torch.empty(4 * 256, dtype=torch.int32, device="cuda")
    go = mp.Queue()
    p = mp.Process(target=worker, args=(flag, go))
    p.start()
    print(f"worker {p.pid} started; launching wait_for_peer", flush=True)
    wait_for_peer[(4,)](flag, out, BLOCK=256)
    torch.cuda.synchronize()
    go.put("go")
    p.join()
    print("done", flush=True)


if __name__ == "__main__":
    main()

# Four ranks on one GPU, one of them stuck elsewhere: ranks 0, 1 and 3 wait on the host for a
# step that never comes (an event, as ranks wait for a straggler at a barrier), each with a
# CUDA context and no kernel running; rank 2 is still in a long kernel (`torch.cuda._sleep`,
# ATen's spin kernel) and waits in `torch.cuda.synchronize`. Rank 0 is the parent itself, so
# every process is a rank. The hang verdict should name rank 2 as the odd one out.
import os

import torch
import torch.multiprocessing as mp


def rank_main(rank, step_done):
    os.environ["RANK"] = str(rank)
    x = torch.ones(1024, device="cuda")
    torch.cuda.synchronize()
    print(f"rank {rank} pid {os.getpid()} ready", flush=True)
    if rank == 2:
        torch.cuda._sleep(1 << 42)  # the straggler: far longer than anyone waits
        torch.cuda.synchronize()
    else:
        step_done.wait()  # the others: waiting for the straggler's step
    print(f"rank {rank} done {x.sum().item()}", flush=True)


def main():
    mp.set_start_method("spawn")
    step_done = mp.Event()
    procs = [mp.Process(target=rank_main, args=(r, step_done)) for r in (1, 2, 3)]
    for p in procs:
        p.start()
    rank_main(0, step_done)
    for p in procs:
        p.join()


if __name__ == "__main__":
    main()

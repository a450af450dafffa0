"""Real stack (issue 40): an engine-shaped server, in the process layout of vLLM's V1 engine.

  front (this process)  --requests-->  EngineCore process  --batches-->  Worker_TP<r> processes
                        <--outputs---                      <--tokens---

Each worker (one per rank, started with multiprocessing spawn, as vLLM does) runs one
decode step per batch:
  1. the model (tiny_model.py) compiled by torch.compile and replayed as a CUDA graph
     (mode="reduce-overhead"; --eager: neither, as vLLM's --enforce-eager);
  2. a custom op built at run time by torch.utils.cpp_extension.load (jit_op/gather_rows.cu);
  3. a Triton paged-attention-style kernel reading the KV cache through a block table;
  4. an NVRTC kernel compiled by CuPy from a string (penalties scattered into the logits).
--fault picks one of them to get one stale index (far out of range), once, after
--fault-after seconds of serving. A worker that hits an exception logs "WorkerProc hit an
exception." with the traceback, reports FAILURE and exits; the engine core then raises
"Worker failed with error ..." (or "Worker proc ... died unexpectedly") and the front ends
with an EngineDeadError, as vLLM's layers do: the error surfaces far from the kernel.

--fault hang launches a barrier kernel that waits for a peer that never comes (a custom
all-reduce whose other rank is gone): the worker spins on the GPU, the engine core's RPC
times out after 120 s.

Usage: python3 engine_serve.py [--fault none|inductor-assert|inductor-read|jit-op|triton|nvrtc|hang]
                               [--fault-after S] [--seconds S] [--tp N] [--eager]
Prints "served N steps in T s: R steps/s" every 5 s and at the end (watch's throughput).
"""
import argparse
import multiprocessing as mp
import os
import queue
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
BATCH = 64
SEQS = 8
BLOCKS_PER_SEQ = 4
BLOCK = 16
DIM = 256
VOCAB = 4096
BAD = 1 << 28


def log(who, msg):
    print(f"({who} pid={os.getpid()}) {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- worker


def build_triton():
    import triton
    import triton.language as tl

    @triton.jit
    def paged_scores_kernel(q_ptr, kv_ptr, table_ptr, out_ptr, BLOCKS_PER_SEQ: tl.constexpr,
                            BLOCK: tl.constexpr, DIM: tl.constexpr):
        seq = tl.program_id(0)
        j = tl.program_id(1)
        blk = tl.load(table_ptr + seq * BLOCKS_PER_SEQ + j)
        d = tl.arange(0, DIM)
        q = tl.load(q_ptr + seq * DIM + d)
        rows = blk * BLOCK + tl.arange(0, BLOCK)
        k = tl.load(kv_ptr + rows[:, None] * DIM + d[None, :])  # FAULT triton
        s = tl.sum(k * q[None, :], axis=1)
        tl.store(out_ptr + (seq * BLOCKS_PER_SEQ + j) * BLOCK + tl.arange(0, BLOCK), s)

    def paged_scores(q, kv, table, out):
        paged_scores_kernel[(SEQS, BLOCKS_PER_SEQ)](q, kv, table, out, BLOCKS_PER_SEQ=BLOCKS_PER_SEQ,
                                                    BLOCK=BLOCK, DIM=DIM)

    @triton.jit
    def wait_peer_kernel(flag_ptr):
        # A custom all-reduce's barrier: spin until the peer rank raises the flag.
        seen = tl.atomic_add(flag_ptr, 0)
        while seen == 0:
            seen = tl.atomic_add(flag_ptr, 0)  # HANG

    def wait_peer(flag):
        wait_peer_kernel[(1,)](flag)

    return paged_scores, wait_peer


PENALTY_SRC = r"""
extern "C" __global__ void apply_penalty(float* logits, const long long* ids, int vocab,
                                         int per_row, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        long long row = i / per_row;
        long long id = ids[i];
        logits[row * vocab + id] -= 1.0f;  // FAULT nvrtc
    }
}
"""


class Worker:
    def __init__(self, rank, args):
        import torch

        from tiny_model import TinyLM

        self.torch = torch
        self.rank = rank
        self.args = args
        self.dev = torch.device("cuda", rank % torch.cuda.device_count())
        torch.cuda.set_device(self.dev)
        if args.fault == "inductor-read":
            torch._inductor.config.assert_indirect_indexing = False
        torch.manual_seed(rank)
        self.model = TinyLM(vocab=VOCAB, dim=DIM).to(self.dev).eval()
        self.forward = self.model if args.eager else torch.compile(self.model, mode="reduce-overhead")
        from torch.utils.cpp_extension import load

        self.op = load(name="engine_gather_op", sources=[os.path.join(HERE, "jit_op", "gather_rows.cu")])
        self.paged_scores, self.wait_peer = build_triton()
        self.flag = torch.zeros(1, dtype=torch.int32, device=self.dev)
        import cupy as cp

        self.cp = cp
        self.penalty = cp.RawKernel(PENALTY_SRC, "apply_penalty")
        self.scores = torch.empty(SEQS * BLOCKS_PER_SEQ * BLOCK, device=self.dev)
        self.started = None
        self.planted = False

    def plant(self, b):
        a = self.args
        if a.fault == "none" or self.planted or time.monotonic() - self.started < a.fault_after:
            return
        self.planted = True
        log(f"Worker_TP{self.rank}", f"planting the {a.fault} fault")
        if a.fault in ("inductor-assert", "inductor-read"):
            b["positions"][17] = BAD
        elif a.fault == "jit-op":
            b["rows"][5] = BAD
        elif a.fault == "triton":
            b["table"][3] = BAD
        elif a.fault == "nvrtc":
            b["penalty_ids"][40] = BAD
        elif a.fault == "hang":
            self.wait_peer(self.flag)  # no peer ever raises it: the step never ends

    def step(self, b):
        torch = self.torch
        if self.started is None:
            self.started = time.monotonic()
        t = {k: torch.tensor(v, device=self.dev) for k, v in b.items()}
        self.plant(t)
        with torch.no_grad():
            logits = self.forward(t["tokens"], t["positions"], t["slots"])
            hidden = self.op.gather_rows(self.model.kv_cache, t["rows"])
            self.paged_scores(hidden, self.model.kv_cache, t["table"], self.scores)
            logits = logits.clone()
            n = t["penalty_ids"].numel()
            self.penalty(((n + 127) // 128,), (128,),
                         (self.cp.asarray(logits), self.cp.asarray(t["penalty_ids"]),
                          self.cp.int32(VOCAB), self.cp.int32(n // BATCH), self.cp.int32(n)))
            return logits.argmax(-1).tolist()


def worker_main(rank, args, inbox, outbox):
    name = f"Worker_TP{rank}"
    try:
        w = Worker(rank, args)
        outbox.put(("READY", rank))
        while True:
            b = inbox.get()
            if b is None:
                return
            outbox.put(("OK", w.step(b)))
    except Exception as e:
        log(name, "WorkerProc hit an exception.\n" + traceback.format_exc())
        try:
            outbox.put(("FAILURE", f"{type(e).__name__}: {e}"))
        except Exception:
            pass
        sys.exit(1)


# ---------------------------------------------------------------- engine core


def make_batch(step):
    import random

    rnd = random.Random(step)
    return {
        "tokens": [rnd.randrange(VOCAB) for _ in range(BATCH)],
        "positions": [(step + i) % 2048 for i in range(BATCH)],
        "slots": [(step * BATCH + i) % 8192 for i in range(BATCH)],
        "rows": [rnd.randrange(8192) for _ in range(SEQS)],
        "table": [rnd.randrange(8192 // BLOCK) for _ in range(SEQS * BLOCKS_PER_SEQ)],
        "penalty_ids": [rnd.randrange(VOCAB) for _ in range(BATCH * 4)],
    }


def engine_core_main(args, requests, outputs):
    ctx = mp.get_context("spawn")
    workers, inboxes, outbox = [], [], ctx.Queue()
    for r in range(args.tp):
        q = ctx.Queue()
        p = ctx.Process(target=worker_main, args=(r, args, q, outbox), name=f"VllmWorker-{r}")
        p.start()
        workers.append(p)
        inboxes.append(q)
    try:
        ready = 0
        while ready < args.tp:
            kind, val = wait_worker(outbox, workers, 600)
            if kind != "READY":
                raise RuntimeError(f"Worker failed with error '{val}', please check the stack trace above for the root cause")
            ready += 1
        outputs.put(("READY", None))
        step = 0
        while True:
            req = requests.get()
            if req is None:
                break
            b = make_batch(step)
            for q in inboxes:
                q.put(b)
            toks = None
            for _ in workers:
                kind, val = wait_worker(outbox, workers, 120)
                if kind != "OK":
                    raise RuntimeError(f"Worker failed with error '{val}', please check the stack trace above for the root cause")
                toks = val
            outputs.put(("OUT", toks[:4]))
            step += 1
    except Exception:
        log("EngineCore_DP0", "EngineCore encountered a fatal error.\n" + traceback.format_exc())
        outputs.put(("DEAD", None))
        for p in workers:
            p.join(10)
            if p.is_alive():
                p.kill()
        sys.exit(1)
    for q in inboxes:
        q.put(None)
    for p in workers:
        p.join(30)


def wait_worker(outbox, workers, timeout):
    deadline = time.monotonic() + timeout
    while True:
        try:
            return outbox.get(timeout=1.0)
        except queue.Empty:
            for r, p in enumerate(workers):
                if p.exitcode is not None:
                    raise RuntimeError(f"Worker proc Worker_TP{r} died unexpectedly (exit code: {p.exitcode}), shutting down executor.")
            if time.monotonic() > deadline:
                raise TimeoutError("RPC call to execute_model timed out.")


# ---------------------------------------------------------------- front


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fault", default="none",
                    choices=["none", "inductor-assert", "inductor-read", "jit-op", "triton", "nvrtc", "hang"])
    ap.add_argument("--fault-after", type=float, default=0.0)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--tp", type=int, default=1)
    ap.add_argument("--eager", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, HERE)
    ctx = mp.get_context("spawn")
    requests, outputs = ctx.Queue(), ctx.Queue()
    core = ctx.Process(target=engine_core_main, args=(args, requests, outputs), name="EngineCore_DP0")
    core.start()
    kind, _ = outputs.get()
    if kind != "READY":
        return dead(core)
    log("APIServer", "engine ready; serving")
    t0 = last = time.monotonic()
    served = 0
    while time.monotonic() - t0 < args.seconds:
        requests.put(("generate", served))
        kind, _ = outputs.get()
        if kind != "OUT":
            return dead(core)
        served += 1
        now = time.monotonic()
        if now - last >= 5:
            last = now
            print(f"served {served} steps in {now - t0:.1f} s: {served / (now - t0):.1f} steps/s", flush=True)
    dt = time.monotonic() - t0
    print(f"served {served} steps in {dt:.1f} s: {served / dt:.1f} steps/s", flush=True)
    requests.put(None)
    core.join(60)
    return 0


def dead(core):
    core.join(30)
    log("APIServer", "EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.")
    return 1


if __name__ == "__main__":
    sys.exit(main())

"""GPU suite (issue 21): a serving-like loop with no fault, to measure what `debug-ima watch`
costs (goal: at most 2 %). For N seconds (argument 1, default 20) it serves "requests": each
is a few small matmuls and an elementwise op; a step serves a batch of them and copies their
results to the host, as a serving engine's step does. One line a second with the requests/s;
the last line is `throughput: X req/s` over the whole loop (warm-up excluded).

Usage: python3 serving_loop.py [seconds]
"""
import sys
import time

import torch

HIDDEN = 1024
LAYERS = 4
PER_STEP = 8  # requests per step


def serve(x, weights):
    h = x
    for w in weights:
        h = torch.nn.functional.gelu(h @ w)  # a small matmul and an elementwise op
    return (h * x).sum(dim=-1)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
    torch.manual_seed(0)
    weights = [torch.randn(HIDDEN, HIDDEN, device="cuda") / HIDDEN**0.5 for _ in range(LAYERS)]
    inputs = torch.randn(64, 16, HIDDEN, device="cuda")  # a pool of 64 requests of 16 tokens
    for i in range(20):  # warm-up: cuBLAS handles, kernels loaded
        serve(inputs[i % 64], weights)
    torch.cuda.synchronize()
    print("serving_loop: start", flush=True)

    t0 = time.monotonic()
    tick, tick_done, done = t0 + 1.0, 0, 0
    while True:
        now = time.monotonic()
        if now - t0 >= seconds:
            break
        outs = [serve(inputs[(done + r) % 64], weights) for r in range(PER_STEP)]
        torch.stack(outs).cpu()  # the step's results to the host (synchronizes)
        done += PER_STEP
        now = time.monotonic()
        if now >= tick:
            print(f"serving_loop: {now - t0:.0f} s, {done - tick_done} req/s", flush=True)
            tick, tick_done = tick + 1.0, done
    elapsed = time.monotonic() - t0
    print(f"throughput: {done / elapsed:.1f} req/s", flush=True)


if __name__ == "__main__":
    main()

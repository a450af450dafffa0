"""Real stack (issue 40): a fault in an Inductor-generated Triton kernel.

The model (tiny_model.py) is compiled with torch.compile; after warm-up steps with valid
inputs, one step gets a position (or a cache slot) far out of range.

Usage: python3 inductor_fault.py MODE [graphs]
  MODE  assert   the gather by position trips Inductor's index assert (the default config)
        read     the same gather with `assert_indirect_indexing` off: an out-of-bounds read
        write    the KV-cache write with asserts off: an out-of-bounds write
        clean    no fault
  graphs   compile with mode="reduce-overhead": the step runs as a CUDA graph replay
"""
import sys

import torch

from tiny_model import TinyLM

BAD = 1 << 28  # rows: 256 GiB past a 256-float row table


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "assert"
    graphs = "graphs" in sys.argv[2:]
    if mode in ("read", "write"):
        torch._inductor.config.assert_indirect_indexing = False
    torch.manual_seed(0)
    model = TinyLM().cuda()
    step = torch.compile(model, mode="reduce-overhead" if graphs else None)
    n = 64
    tokens = torch.randint(0, 4096, (n,), device="cuda")
    positions = torch.arange(n, device="cuda")
    slots = torch.arange(n, device="cuda")
    with torch.no_grad():
        for _ in range(3):  # warm-up; with graphs: warm-up, record, replay
            out = step(tokens, positions, slots)
        torch.cuda.synchronize()
        print("warm", float(out.float().abs().sum()), flush=True)
        if mode in ("assert", "read"):
            positions[17] = BAD
        elif mode == "write":
            slots[17] = BAD
        out = step(tokens, positions, slots)  # LAUNCH
        print("stepped", flush=True)
        print("checksum", float(out.float().abs().sum()), flush=True)


if __name__ == "__main__":
    main()

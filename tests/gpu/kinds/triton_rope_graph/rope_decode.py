"""Rotary embeddings in Triton for the decode step, captured once in a CUDA graph and
replayed every step, as serving engines do. One sequence outgrows the cached positions, so
the cos/sin cache is rebuilt with NTK-scaled frequencies -- new, longer tensors -- and the
old ones are freed and handed back to the driver. The graph still reads the old cache: the
replay after the rebuild faults.
"""
import torch
import triton
import triton.language as tl

HEADS, HEAD_DIM, BATCH = 32, 128, 8


@triton.jit
def rope_kernel(q_ptr, cos_ptr, sin_ptr, pos_ptr, stride_tok, HALF: tl.constexpr):
    tok = tl.program_id(0)
    head = tl.program_id(1)
    pos = tl.load(pos_ptr + tok)
    offs = tl.arange(0, HALF)
    c, s = tl.load(cos_ptr + pos * HALF + offs), tl.load(sin_ptr + pos * HALF + offs)
    base = q_ptr + tok * stride_tok + head * 2 * HALF
    x1 = tl.load(base + offs)
    x2 = tl.load(base + HALF + offs)
    tl.store(base + offs, x1 * c - x2 * s)
    tl.store(base + HALF + offs, x2 * c + x1 * s)


def build_cache(max_pos, base=10000.0):
    inv = 1.0 / (base ** (torch.arange(0, HEAD_DIM, 2, device="cuda", dtype=torch.float32) / HEAD_DIM))
    ang = torch.arange(max_pos, device="cuda", dtype=torch.float32)[:, None] * inv[None, :]
    return ang.cos().contiguous(), ang.sin().contiguous()


def apply_rope(q, cos, sin, pos):
    rope_kernel[(q.shape[0], HEADS)](q, cos, sin, pos, q.stride(0), HALF=HEAD_DIM // 2)


def main():
    max_pos = 65536
    cos, sin = build_cache(max_pos)
    q = torch.randn(BATCH, HEADS * HEAD_DIM, device="cuda")
    pos = torch.tensor([100, 220, 37, 4000, 65530, 512, 9, 1300], device="cuda")
    apply_rope(q, cos, sin, pos)  # warm-up: compiles the kernel
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        apply_rope(q, cos, sin, pos)
    for step in range(12):
        if int(pos.max()) + 1 >= max_pos:  # a sequence outgrew the cache: NTK-scale and rebuild
            max_pos *= 2
            cos, sin = build_cache(max_pos, base=10000.0 * 2 ** (HEAD_DIM / (HEAD_DIM - 2)))
            torch.cuda.empty_cache()  # give the old cache's memory back
            print(f"step {step}: rope cache rebuilt for {max_pos} positions", flush=True)
        graph.replay()
        pos += 1
    torch.cuda.synchronize()
    print("decode done, q norm", q.norm().item(), flush=True)


if __name__ == "__main__":
    main()

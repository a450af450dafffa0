"""Dynamic per-tensor FP8 quantisation of activations: a Triton kernel takes max|x| over the
tensor (atomic max across programs), the scale is amax / 448. The wrapper passes x.nbytes
where the kernel wants the element count, so for bf16 the grid and the load mask cover twice
the tensor: half the programs read the 4 MiB after x. Nothing faults -- the caching
allocator's 20 MiB segment is mapped there -- and here the scale may even come out right (the
bytes after x are likely still zero), but whatever tensor lives there next feeds the scale. Only
memcheck sees it.
"""
import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def absmax_kernel(x_ptr, amax_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n_elements, other=0.0)
    tl.atomic_max(amax_ptr, tl.max(tl.abs(x.to(tl.float32)), axis=0))


def dynamic_fp8_scale(x):
    amax = torch.zeros(1, device=x.device, dtype=torch.float32)
    n = x.nbytes
    absmax_kernel[(triton.cdiv(n, BLOCK),)](x, amax, n, BLOCK=BLOCK)
    return amax / 448.0


def main():
    torch.manual_seed(0)
    x = torch.randn(512, 4096, device="cuda", dtype=torch.bfloat16)  # [tokens, hidden]
    scale = dynamic_fp8_scale(x)
    ref = x.float().abs().max() / 448.0
    xq = (x.float() / scale).clamp(-448, 448).to(torch.float8_e4m3fn)
    print(f"fp8 scale {scale.item():.6f} (reference {ref.item():.6f}), {xq.numel()} values quantised", flush=True)


if __name__ == "__main__":
    main()

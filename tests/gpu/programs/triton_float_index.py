"""GPU suite (issue 26): a Triton kernel whose fault depends on float contents, which the
reproducer does not record: a row index computed from a float tensor (a bucketing of scores)
that holds one huge score. The reproducer fills float storages with random values, so it is
expected NOT to reproduce, and to say so."""
import torch
import triton
import triton.language as tl


@triton.jit
def bucket_rows_kernel(score_ptr, src_ptr, dst_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    row = tl.load(score_ptr + pid).to(tl.int64)  # a score used as a row index
    offs = tl.arange(0, BLOCK)
    vals = tl.load(src_ptr + row * BLOCK + offs)  # FAULT
    tl.store(dst_ptr + pid * BLOCK + offs, vals)


def main():
    rows, block = 64, 128
    score = torch.randint(0, rows, (rows,), device="cuda").float()
    src = torch.randn(rows * block, device="cuda")
    dst = torch.empty(rows * block, device="cuda")
    bucket_rows_kernel[(rows,)](score, src, dst, BLOCK=block)
    torch.cuda.synchronize()
    score[9] = 3.0e9  # the bug: an unclamped score, 1.5 TB past the source
    bucket_rows_kernel[(rows,)](score, src, dst, BLOCK=block)  # LAUNCH
    print("checksum", dst.sum().item(), flush=True)


if __name__ == "__main__":
    main()

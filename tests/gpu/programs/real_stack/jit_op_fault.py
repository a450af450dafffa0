"""Real stack (issue 40): a fault in a custom op built at run time (JIT extension).

Usage: python3 jit_op_fault.py MODE
  load     torch.utils.cpp_extension.load of jit_op/gather_rows.cu (a file of the project),
           built into TORCH_EXTENSIONS_DIR (default ~/.cache/torch_extensions)
  inline   load_inline of the same kernel from a string: its source lives only in the build
           folder
  clean    load, no fault
The op's rows are gathered through an index with one stale entry (far out of range).
"""
import os
import sys

import torch
from torch.utils.cpp_extension import load, load_inline

HERE = os.path.dirname(os.path.abspath(__file__))


def build(mode):
    if mode == "inline":
        src = open(os.path.join(HERE, "jit_op", "gather_rows.cu")).read()
        body, _, _ = src.partition("PYBIND11_MODULE")
        return load_inline(name="ima_inline_op",
                           cpp_sources="torch::Tensor gather_rows(torch::Tensor src, torch::Tensor idx);", cuda_sources=body,
                           functions=["gather_rows"], verbose=False)
    return load(name="ima_gather_op", sources=[os.path.join(HERE, "jit_op", "gather_rows.cu")],
                verbose=False)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "load"
    op = build(mode)
    print("loaded", op.__file__, flush=True)
    src = torch.randn(1024, 256, device="cuda")
    idx = torch.randint(0, 1024, (64,), device="cuda")
    out = op.gather_rows(src, idx)
    torch.cuda.synchronize()
    if mode != "clean":
        idx[9] = 1 << 28  # 256 GiB past src
    out = op.gather_rows(src, idx)  # LAUNCH
    print("launched", flush=True)
    print("checksum", float(out.sum()), flush=True)


if __name__ == "__main__":
    main()

"""Real stack (issue 40): calls the installed extension's op with one stale slot.

Usage: python3 use_ext.py [clean]
"""
import sys

import torch

import ima_ext


def main():
    dst = torch.zeros(1024, 256, device="cuda")
    src = torch.randn(64, 256, device="cuda")
    idx = torch.arange(64, device="cuda")
    ima_ext.scatter_rows(dst, idx, src)
    torch.cuda.synchronize()
    if "clean" not in sys.argv[1:]:
        idx[33] = 1 << 28  # 256 GiB past dst
    ima_ext.scatter_rows(dst, idx, src)  # LAUNCH
    print("launched", flush=True)
    print("checksum", float(dst.sum()), flush=True)


if __name__ == "__main__":
    main()

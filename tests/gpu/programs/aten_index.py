"""GPU suite (issue 26): advanced indexing with one stale index trips ATen's device assert
(`index out of bounds`) inside its index kernel; the error surfaces at the later `.item()`."""
import torch


def lookup(table, idx):
    return table[idx] * 2.0  # LAUNCH: aten.index.Tensor


table = torch.randn(1000, 16, device="cuda")
idx = torch.randint(0, 1000, (64,), device="cuda")
idx[7] = 5000  # the bug: a stale index past the table's 1000 rows
rows = lookup(table, idx)
print("sum", rows.sum().item())  # SURFACES

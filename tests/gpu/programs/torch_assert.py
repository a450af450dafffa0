"""GPU suite: cross-entropy with a class index out of range (PyTorch device-side assert)."""
import torch
import torch.nn.functional as F

logits = torch.randn(16, 10, device="cuda")
target = torch.arange(16, device="cuda") % 10
target[5] = 12  # out of range for 10 classes
loss = F.cross_entropy(logits, target)  # FAULT
print("loss queued", flush=True)
print(loss.item())

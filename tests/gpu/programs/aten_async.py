"""GPU suite: an embedding lookup with an index out of range trips a device assert inside
ATen; the plain run's traceback names a later line, where the error surfaces."""
import torch

emb = torch.nn.Embedding(100, 32).cuda()
proj = torch.nn.Linear(32, 8).cuda()
tokens = torch.tensor([[3, 17, 42, 99], [5, 140, 7, 0]], device="cuda")  # 140 >= 100


def encode(t):
    h = emb(t)  # LAUNCH: the assert fires in this lookup
    return torch.tanh(proj(h))


out = encode(tokens)
scores = out.softmax(-1).mean(0)
print("scores", scores.sum().item())  # SURFACES

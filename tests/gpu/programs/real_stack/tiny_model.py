"""A small decoder-shaped model for the real-stack programs (issue 40).

Its forward gathers by token id and by position, writes the step's keys into a KV cache
through a slot mapping (vLLM's `reshape_and_cache` pattern) and projects. Under
torch.compile these lines become Inductor-generated Triton kernels: the gather by
position (`pos_table[positions]`) and the cache write (`kv_cache[slots] = k`) are indirect
accesses, which Inductor guards with `tl.device_assert` unless `assert_indirect_indexing`
is off. The lines marked MODEL-* are the model lines a verdict must name.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyLM(nn.Module):
    def __init__(self, vocab=4096, dim=256, max_pos=2048, cache_slots=8192):
        super().__init__()
        # A buffer, as an engine's KV cache is static: CUDA graphs may mutate it.
        self.register_buffer("kv_cache", torch.zeros(cache_slots, dim))
        self.embed = nn.Embedding(vocab, dim)
        self.pos_table = nn.Parameter(torch.randn(max_pos, dim) * 0.02)
        self.norm = nn.LayerNorm(dim)
        self.proj = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens, positions, slots):
        h = self.embed(tokens)
        h = h + self.pos_table[positions]  # MODEL-GATHER
        k = torch.tanh(self.proj(self.norm(h)))
        self.kv_cache[slots] = k  # MODEL-SCATTER
        return self.head(F.gelu(k + h))

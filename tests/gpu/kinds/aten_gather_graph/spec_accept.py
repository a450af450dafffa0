"""The acceptance step of speculative decoding, captured in a CUDA graph: the target model's
log-probabilities gathered at the token ids the draft model proposed. The draft model was
trained with a padded vocabulary (32064) and the target has 32000 tokens; on step 2 the draft
proposes one of its padding ids, and ATen's gather kernel asserts on the out-of-range index --
inside the graph, so the error comes out of graph.replay().
"""
import torch

TARGET_VOCAB, DRAFT_EOT, BATCH, K = 32000, 32011, 4, 5


def accept_step(logits, draft_ids, out):
    logprobs = torch.log_softmax(logits, dim=-1)
    torch.gather(logprobs, 1, draft_ids, out=out)
    return out


def main():
    torch.manual_seed(0)
    logits = torch.randn(BATCH * K, TARGET_VOCAB, device="cuda")
    draft_ids = torch.zeros(BATCH * K, 1, dtype=torch.long, device="cuda")
    out = torch.empty(BATCH * K, 1, device="cuda")
    side = torch.cuda.Stream()  # warm up on a side stream, as the CUDA graph docs advise
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        accept_step(logits, draft_ids, out)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        accept_step(logits, draft_ids, out)
    for step in range(4):
        proposal = torch.randint(0, TARGET_VOCAB, (BATCH * K, 1), device="cuda")
        if step == 2:
            proposal[7] = DRAFT_EOT  # the draft's own end-of-turn token, past the target's vocab
        draft_ids.copy_(proposal)
        logits.normal_()
        graph.replay()
        accepted = (out.exp() > 1e-5).sum().item()
        print(f"step {step}: {accepted} of {BATCH * K} draft tokens accepted", flush=True)


if __name__ == "__main__":
    main()

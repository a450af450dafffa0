// The LM head of a GPT-2-small-shaped model through cublasGemmEx: logits[tokens, vocab] =
// h[tokens, 768] E^T, with the tied embedding E stored row-major as [vocab, 768]. The logits
// buffer uses the padded vocabulary (50304, a multiple of 64, as training code pads it), and so
// does the GEMM -- but the embedding was loaded from the checkpoint with its real 50257 rows.
// The GEMM reads 47 rows (144 KiB) past the end of E. That stays inside the allocation's last
// 2 MiB page: nothing faults, the padded logits are garbage; only memcheck sees it.
#include <cstdio>
#include <vector>
#include <cublas_v2.h>
#include <cuda_runtime.h>

int main() {
  const int tokens = 8, hidden = 768, vocab = 50257, vocab_padded = 50304;
  std::vector<float> h_emb((size_t)vocab * hidden), h_x((size_t)tokens * hidden);
  for (size_t i = 0; i < h_emb.size(); ++i) h_emb[i] = (float)((i * 7919) % 201) / 1000.0f - 0.1f;
  for (size_t i = 0; i < h_x.size(); ++i) h_x[i] = (float)(i % 13) / 13.0f;
  float *emb, *x, *logits;
  cudaMalloc(&emb, h_emb.size() * sizeof(float));  // [vocab, hidden], as loaded
  cudaMalloc(&x, h_x.size() * sizeof(float));
  cudaMalloc(&logits, (size_t)tokens * vocab_padded * sizeof(float));
  cudaMemcpy(emb, h_emb.data(), h_emb.size() * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(x, h_x.data(), h_x.size() * sizeof(float), cudaMemcpyHostToDevice);

  cublasHandle_t handle;
  cublasCreate(&handle);
  const float one = 1.0f, zero = 0.0f;
  cublasStatus_t st = cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, vocab_padded, tokens, hidden, &one, emb, CUDA_R_32F, hidden, x, CUDA_R_32F, hidden, &zero, logits, CUDA_R_32F, vocab_padded, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "cublasGemmEx failed: %d\n", (int)st);
    return 1;
  }
  std::vector<float> out((size_t)tokens * vocab_padded);
  cudaError_t err = cudaMemcpy(out.data(), logits, out.size() * sizeof(float), cudaMemcpyDeviceToHost);
  if (err != cudaSuccess) {
    fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(err));
    return 1;
  }
  int best = 0;
  for (int v = 1; v < vocab; ++v) best = out[v] > out[best] ? v : best;
  printf("next token for position 0: %d (logit %.3f)\n", best, out[best]);
  cublasDestroy(handle);
  return 0;
}

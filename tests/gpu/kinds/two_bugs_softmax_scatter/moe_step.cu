// One step of a toy MoE router with two unrelated bugs in two kernels:
//  1. softmax_rows, launched first: its max loop runs to c <= experts and reads one element
//     past each row; for the last row that is one float past the buffer. Silent (the read
//     stays inside the allocation's page); memcheck reports it.
//  2. scatter_tokens, launched second: padding tokens carry the slot kEmptySlot, which the
//     kernel was meant to skip and does not: the write lands 8 TiB away and faults.
#include <cmath>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(call) do { cudaError_t e = (call); if (e != cudaSuccess) { \
  printf("CUDA error: %s (%s:%d)\n", cudaGetErrorString(e), __FILE__, __LINE__); return 1; } } while (0)

const long long kEmptySlot = 0x7fffffff;  // INT32_MAX marks a padding token in the slot mapping

__global__ void softmax_rows(const float *logits, float *probs, int rows, int experts) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const float *x = logits + (size_t)row * experts;
  float m = -INFINITY;
  for (int c = 0; c <= experts; ++c) m = fmaxf(m, x[c]);
  float s = 0.0f;
  for (int c = 0; c < experts; ++c) s += __expf(x[c] - m);
  for (int c = 0; c < experts; ++c) probs[(size_t)row * experts + c] = __expf(x[c] - m) / s;
}

__global__ void scatter_tokens(const float *hidden, const long long *slots, float *dispatched, int dim) {
  long long slot = slots[blockIdx.x];
  for (int c = threadIdx.x; c < dim; c += blockDim.x)
    dispatched[slot * dim + c] = hidden[(size_t)blockIdx.x * dim + c];
}

int main() {
  const int tokens = 1000, experts = 8, dim = 1024;
  std::vector<float> h_logits((size_t)tokens * experts);
  for (size_t i = 0; i < h_logits.size(); ++i) h_logits[i] = (float)(i % 17) * 0.1f;
  std::vector<long long> h_slots(tokens);
  for (int t = 0; t < tokens; ++t) h_slots[t] = t < 996 ? t : kEmptySlot;  // 4 padding tokens
  float *logits, *probs, *hidden, *dispatched;
  long long *slots;
  CHECK(cudaMalloc(&logits, h_logits.size() * sizeof(float)));
  CHECK(cudaMalloc(&probs, h_logits.size() * sizeof(float)));
  CHECK(cudaMalloc(&hidden, (size_t)tokens * dim * sizeof(float)));
  CHECK(cudaMalloc(&dispatched, (size_t)tokens * dim * sizeof(float)));
  CHECK(cudaMalloc(&slots, tokens * sizeof(long long)));
  CHECK(cudaMemcpy(logits, h_logits.data(), h_logits.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(slots, h_slots.data(), tokens * sizeof(long long), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(hidden, 0, (size_t)tokens * dim * sizeof(float)));
  softmax_rows<<<(tokens + 127) / 128, 128>>>(logits, probs, tokens, experts);
  scatter_tokens<<<tokens, 256>>>(hidden, slots, dispatched, dim);
  CHECK(cudaDeviceSynchronize());
  printf("router step done\n");
  return 0;
}

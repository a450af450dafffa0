// Per-block histogram of token ids (vocabulary statistics for a tokenizer check), staged in
// shared memory. Special tokens (ids below 4: PAD, BOS, EOS, UNK) and ordinary ones are
// counted on two paths, and each path ends in its own __syncthreads() before the flush: two
// barriers in divergent code (within every warp), where CUDA wants one that every thread of
// the block reaches. The counts usually come out right.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(x) if ((x) != cudaSuccess) { fprintf(stderr, "CUDA failure at line %d: %s\n", __LINE__, cudaGetErrorString(cudaGetLastError())); exit(1); }

constexpr int BINS = 256, SPECIAL = 4;

__global__ void token_hist(const int *ids, unsigned *hist, int n) {
  __shared__ unsigned bins[BINS];
  for (int b = threadIdx.x; b < BINS; b += blockDim.x) bins[b] = 0;
  __syncthreads();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int id = i < n ? ids[i] : -1;
  if (id >= 0 && id < SPECIAL) {
    atomicAdd(&bins[id], 1u);
    __syncthreads();
  } else {
    if (id >= SPECIAL) atomicAdd(&bins[id % BINS], 1u);
    __syncthreads();
  }
  for (int b = threadIdx.x; b < BINS; b += blockDim.x) atomicAdd(&hist[b], bins[b]);
}

int main() {
  const int n = 1 << 16;
  std::vector<int> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = (i % 97 == 0) ? i % SPECIAL : 4 + (i * 31) % 5000;
  int *d_ids;
  unsigned *d_hist;
  CHECK(cudaMalloc(&d_ids, n * sizeof(int)));
  CHECK(cudaMalloc(&d_hist, BINS * sizeof(unsigned)));
  CHECK(cudaMemset(d_hist, 0, BINS * sizeof(unsigned)));
  CHECK(cudaMemcpy(d_ids, ids.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  token_hist<<<n / 256, 256>>>(d_ids, d_hist, n);
  CHECK(cudaDeviceSynchronize());
  std::vector<unsigned> hist(BINS);
  CHECK(cudaMemcpy(hist.data(), d_hist, BINS * sizeof(unsigned), cudaMemcpyDeviceToHost));
  unsigned special = 0, total = 0;
  for (int b = 0; b < BINS; ++b) total += hist[b];
  for (int b = 0; b < SPECIAL; ++b) special += hist[b];
  printf("token_hist: %u tokens counted, %u in the special bins\n", total, special);
  return 0;
}

// GPU suite: a histogram in shared memory; a negative key makes atomicAdd, an inlined function
// of the CUDA headers, hit shared memory out of range. The user's line is the atomicAdd call.
#include "check.h"

constexpr int kBins = 256;

__device__ int bin_of(int key) { return key % kBins; }  // negative keys give negative bins

__global__ void histogram(const int *keys, unsigned *counts, int n) {
  __shared__ unsigned bins[kBins];
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) bins[b] = 0;
  __syncthreads();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    int b = bin_of(keys[i]) * 4096;
    atomicAdd(&bins[b], 1u);  // FAULT
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) atomicAdd(&counts[b], bins[b]);
}

int main() {
  const int n = 1 << 14;
  int *h = new int[n];
  for (int i = 0; i < n; ++i) h[i] = i % kBins;
  h[9000] = -77;  // block 35, thread 40
  int *keys;
  unsigned *counts;
  CHECK(cudaMalloc(&keys, n * sizeof(int)));
  CHECK(cudaMalloc(&counts, kBins * sizeof(unsigned)));
  CHECK(cudaMemcpy(keys, h, n * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(counts, 0, kBins * sizeof(unsigned)));
  histogram<<<n / 256, 256>>>(keys, counts, n);
  CHECK(cudaDeviceSynchronize());
  printf("done\n");
  delete[] h;
  return 0;
}

// Exclusive offsets of the tokens routed to each expert (MoE), one warp per 32 experts, the
// counts staged through shared memory. For the tail warp only `valid` lanes hold an expert,
// so the author syncs "just the lanes with data" -- but every lane of the warp executes that
// __syncwarp(mask), including the lanes the mask leaves out: undefined behaviour, which
// synccheck reports as invalid arguments. The plain run prints plausible offsets.
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>

__global__ void expert_offsets(const int *counts, int *offsets, int experts) {
  __shared__ int buf[128];
  int e = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & 31;
  int valid = max(0, min(32, experts - (e - lane)));
  unsigned mask = valid >= 32 ? 0xffffffffu : (1u << valid) - 1u;
  buf[threadIdx.x] = e < experts ? counts[e] : 0;
  __syncwarp(mask);
  if (e < experts) {
    int sum = 0;
    for (int j = threadIdx.x - lane; j < (int)threadIdx.x; ++j) sum += buf[j];
    offsets[e] = sum;
  }
}

int main() {
  const int experts = 200;  // not a multiple of 32: the last warp holds 8 experts
  std::vector<int> counts(experts), offsets(experts);
  for (int i = 0; i < experts; ++i) counts[i] = (i * 37) % 11;
  int *d_counts, *d_offsets;
  cudaMalloc(&d_counts, experts * sizeof(int));
  cudaMalloc(&d_offsets, experts * sizeof(int));
  cudaMemcpy(d_counts, counts.data(), experts * sizeof(int), cudaMemcpyHostToDevice);
  expert_offsets<<<(experts + 127) / 128, 128>>>(d_counts, d_offsets, experts);
  cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    fprintf(stderr, "expert_offsets: %s\n", cudaGetErrorString(err));
    return 1;
  }
  cudaMemcpy(offsets.data(), d_offsets, experts * sizeof(int), cudaMemcpyDeviceToHost);
  printf("expert 199 starts at %d (of its warp)\n", offsets[experts - 1]);
  return 0;
}

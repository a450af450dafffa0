// GPU suite (issue 23): barrier errors, no crash: a __syncthreads() that only half of the
// block reaches (divergent barrier), and a __syncwarp() whose mask leaves out the lanes that
// call it. `compute-sanitizer --tool synccheck` reports both.
#include "check.h"

__global__ void normalize(float *x, int n) {
  __shared__ float total;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x < 128) {
    if (threadIdx.x == 0) total = 1.0f;
    __syncthreads();  // BUG: only threads 0-127 of 256 reach this barrier
  }
  if (i < n) x[i] = x[i] / total;
}

__global__ void half_warp_sync(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
  __syncwarp(0x0000ffffu);  // BUG: lanes 16-31 call it with a mask that leaves them out
}

int main() {
  const int n = 1 << 12;
  float *x;
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  CHECK(cudaMemset(x, 0, n * sizeof(float)));
  normalize<<<n / 256, 256>>>(x, n);  // LAUNCH 1
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  half_warp_sync<<<n / 256, 256>>>(x, n);  // LAUNCH 2
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  printf("done\n");
  return 0;
}

// GPU suite: the bad store happens inside an inlined device function (inlined frame).
#include "check.h"
#include "store_helpers.cuh"

__global__ void apply_offsets(float *out, const long long *offsets, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    store_scaled(out, offsets[i], 1.0f, 0.5f);  // FAULT
  }
}

int main() {
  const int n = 2048;
  long long *h = new long long[n];
  for (int i = 0; i < n; ++i) h[i] = i;
  h[1500] = -(1LL << 33);  // block 5, thread 220
  float *out;
  long long *offsets;
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  CHECK(cudaMalloc(&offsets, n * sizeof(long long)));
  CHECK(cudaMemcpy(offsets, h, n * sizeof(long long), cudaMemcpyHostToDevice));
  apply_offsets<<<n / 256, 256>>>(out, offsets, n);
  CHECK(cudaDeviceSynchronize());
  printf("done\n");
  delete[] h;
  return 0;
}

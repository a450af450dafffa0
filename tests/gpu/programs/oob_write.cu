// GPU suite: a kernel writes 32 GiB before its allocation (out-of-bounds write).
#include "check.h"

__global__ void scale_write(float *out, int n, long long shift) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i + shift] = 2.0f * i;  // FAULT
  }
}

int main() {
  const int n = 4096;
  float *d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  scale_write<<<n / 256, 256>>>(d, n, -(1LL << 33));
  printf("launched scale_write\n");
  fflush(stdout);
  CHECK(cudaDeviceSynchronize());
  printf("done\n");
  return 0;
}

// GPU suite: 8-byte loads through a pointer that is 4 bytes off (misaligned address).
#include "check.h"

__global__ void sum_pairs(const char *bytes, double *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const double *p = reinterpret_cast<const double *>(bytes + 4);
    out[i] = p[i] + 1.0;  // FAULT
  }
}

int main() {
  const int n = 512;
  char *bytes;
  double *out;
  CHECK(cudaMalloc(&bytes, (n + 1) * sizeof(double)));
  CHECK(cudaMalloc(&out, n * sizeof(double)));
  CHECK(cudaMemset(bytes, 0, (n + 1) * sizeof(double)));
  sum_pairs<<<n / 128, 128>>>(bytes, out, n);
  CHECK(cudaDeviceSynchronize());
  printf("done\n");
  return 0;
}

// GPU suite: a correct program; every rung must report no fault.
#include "check.h"

__global__ void saxpy(float *y, const float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

int main() {
  const int n = 1 << 16;
  float *x, *y;
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  CHECK(cudaMalloc(&y, n * sizeof(float)));
  CHECK(cudaMemset(x, 0, n * sizeof(float)));
  CHECK(cudaMemset(y, 0, n * sizeof(float)));
  saxpy<<<n / 256, 256>>>(y, x, 2.0f, n);
  CHECK(cudaDeviceSynchronize());
  printf("clean run finished\n");
  return 0;
}

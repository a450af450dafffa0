// GPU suite: a templated, vectorised kernel writes past its buffer (templated kernel).
#include "check.h"

template <typename T, int VEC>
__global__ void axpy_vec(T *y, const T *x, T a, int n, long long bad_offset) {
  int base = (blockIdx.x * blockDim.x + threadIdx.x) * VEC;
#pragma unroll
  for (int k = 0; k < VEC; ++k) {
    int i = base + k;
    if (i < n) {
      y[i + bad_offset] = a * x[i] + y[i];  // FAULT
    }
  }
}

int main() {
  const int n = 8192;
  float *x, *y;
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  CHECK(cudaMalloc(&y, n * sizeof(float)));
  CHECK(cudaMemset(x, 0, n * sizeof(float)));
  CHECK(cudaMemset(y, 0, n * sizeof(float)));
  axpy_vec<float, 4><<<n / (4 * 128), 128>>>(y, x, 2.0f, n, -(1LL << 33));
  CHECK(cudaDeviceSynchronize());
  printf("done\n");
  return 0;
}

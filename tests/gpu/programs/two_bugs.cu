// GPU suite (issue 23): two distinct bugs in one program. `bias_add` writes one element past
// its buffer (silent: the allocator's slack absorbs it; memcheck reports it), then `gather`
// reads through a corrupt index and faults. Both must be reported, the first one first.
#include "check.h"

__global__ void bias_add(float *y, float b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) y[i] += b;  // BUG 1: <= writes y[n]
}

__global__ void gather(const float *src, const long long *idx, float *dst, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[idx[i]];  // BUG 2: idx[7] is far out of range
}

int main() {
  const int n = 4096;
  float *y, *src, *dst;
  long long *idx;
  CHECK(cudaMalloc(&y, n * sizeof(float)));
  CHECK(cudaMalloc(&src, n * sizeof(float)));
  CHECK(cudaMalloc(&dst, n * sizeof(float)));
  CHECK(cudaMalloc(&idx, n * sizeof(long long)));
  CHECK(cudaMemset(y, 0, n * sizeof(float)));
  long long *h = (long long *)malloc(n * sizeof(long long));
  for (int i = 0; i < n; ++i) h[i] = i;
  h[7] = 1LL << 34;
  CHECK(cudaMemcpy(idx, h, n * sizeof(long long), cudaMemcpyHostToDevice));
  bias_add<<<n / 256 + 1, 256>>>(y, 1.0f, n);  // LAUNCH 1
  gather<<<n / 256, 256>>>(src, idx, dst, n);  // LAUNCH 2
  CHECK(cudaDeviceSynchronize());
  printf("done\n");
  return 0;
}

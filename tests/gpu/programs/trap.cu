// GPU suite (issue 23): a release-mode range check that executes __trap() (no assert, no
// message): the launch fails with `unspecified launch failure`; cuda-gdb's dump says the
// program got SIGTRAP at the trap's line.
#include "check.h"

__global__ void lookup(const int *idx, const float *table, float *out, int n, int rows) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int r = idx[i];
  if (r < 0 || r >= rows) __trap();  // TRAP: a bad index stops the kernel
  out[i] = table[r];
}

int main() {
  const int n = 4096, rows = 1000;
  int *idx;
  float *table, *out;
  CHECK(cudaMalloc(&idx, n * sizeof(int)));
  CHECK(cudaMalloc(&table, rows * sizeof(float)));
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  int *h = (int *)malloc(n * sizeof(int));
  for (int i = 0; i < n; ++i) h[i] = i % rows;
  h[3000] = rows + 7;  // the bad index
  CHECK(cudaMemcpy(idx, h, n * sizeof(int), cudaMemcpyHostToDevice));
  lookup<<<n / 256, 256>>>(idx, table, out, n, rows);  // LAUNCH
  CHECK(cudaDeviceSynchronize());
  printf("done\n");
  return 0;
}

// GPU suite: a bounds check in device code fails (device-side assert).
#include "check.h"
#include <cassert>
#include <vector>

__global__ void check_labels(const int *labels, int n, int classes, int *hist) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    int c = labels[i];
    assert(c >= 0 && c < classes);  // FAULT
    atomicAdd(&hist[c], 1);
  }
}

int main() {
  const int n = 256, classes = 10;
  std::vector<int> h(n);
  for (int i = 0; i < n; ++i) h[i] = i % classes;
  h[37] = 12;  // one label out of range: block 0, thread 37
  int *labels, *hist;
  CHECK(cudaMalloc(&labels, n * sizeof(int)));
  CHECK(cudaMalloc(&hist, classes * sizeof(int)));
  CHECK(cudaMemset(hist, 0, classes * sizeof(int)));
  CHECK(cudaMemcpy(labels, h.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  check_labels<<<1, n>>>(labels, n, classes, hist);
  CHECK(cudaDeviceSynchronize());
  printf("done\n");
  return 0;
}

// GPU suite: a gather reads through one bad index, far outside the table (out-of-bounds read).
#include "check.h"
#include <vector>

__global__ void gather_rows(const float *table, const long long *idx, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = table[idx[i]];  // FAULT
  }
}

int main() {
  const int n = 1024;
  std::vector<long long> h_idx(n);
  for (int i = 0; i < n; ++i) h_idx[i] = (i * 7) % n;
  h_idx[777] = -(1LL << 33);  // one corrupt index: block 3, thread 9
  float *table, *out;
  long long *idx;
  CHECK(cudaMalloc(&table, n * sizeof(float)));
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  CHECK(cudaMalloc(&idx, n * sizeof(long long)));
  CHECK(cudaMemset(table, 0, n * sizeof(float)));
  CHECK(cudaMemcpy(idx, h_idx.data(), n * sizeof(long long), cudaMemcpyHostToDevice));
  gather_rows<<<n / 256, 256>>>(table, idx, out, n);
  std::vector<float> h_out(n);
  CHECK(cudaMemcpy(h_out.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
  printf("out[0] = %f\n", h_out[0]);
  return 0;
}

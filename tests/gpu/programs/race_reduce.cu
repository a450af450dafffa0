// GPU suite (issue 23): a tree reduction in shared memory without the barrier inside its
// loop: a block-level race while the stride is 32 or more (threads of other warps still
// writing), a warp-level one below it (no __syncwarp). No crash; the sums are sometimes wrong.
#include "check.h"

__global__ void block_sum(const float *in, float *out, int n) {
  __shared__ float part[256];
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  part[t] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) part[t] += part[t + s];  // RACE: reads what another thread writes this step
    // BUG: no __syncthreads() (nor __syncwarp() once s < 32)
  }
  if (t == 0) out[blockIdx.x] = part[0];
}

int main() {
  const int n = 1 << 16, blocks = n / 256;
  float *in, *out;
  CHECK(cudaMalloc(&in, n * sizeof(float)));
  CHECK(cudaMalloc(&out, blocks * sizeof(float)));
  CHECK(cudaMemset(in, 0, n * sizeof(float)));
  block_sum<<<blocks, 256>>>(in, out, n);  // LAUNCH
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  printf("done\n");
  return 0;
}

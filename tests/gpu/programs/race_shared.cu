// GPU suite (issue 23): a shared-memory read-after-write race, no crash. Each thread writes
// its slot of a tile, then, without a barrier, reads its neighbour's slot, which another warp
// may not have written yet: `compute-sanitizer --tool racecheck` names both lines.
#include "check.h"

__global__ void shift_left(const float *in, float *out, int n) {
  __shared__ float tile[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? in[i] : 0.0f;  // WRITE
  // BUG: no __syncthreads() here
  float right = tile[(threadIdx.x + 1) % blockDim.x];  // READ of another warp's slot
  if (i < n) out[i] = right;
}

int main() {
  const int n = 1 << 16;
  float *in, *out;
  CHECK(cudaMalloc(&in, n * sizeof(float)));
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  CHECK(cudaMemset(in, 0, n * sizeof(float)));
  shift_left<<<n / 256, 256>>>(in, out, n);  // LAUNCH
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  printf("done\n");
  return 0;
}

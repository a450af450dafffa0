// The sweep's cost (issue 23, docs/benchmarks.md): a correct program with the kernels the new
// sanitizers look at -- a tiled transpose through shared memory with its barrier, a block
// RMSNorm reduction with its barriers, a warp-shuffle row sum with a full mask -- run for a few
// "layers", so that every sanitizer of the sweep has shared memory, barriers and warp-level
// primitives to check and finds nothing.
#include <cstdlib>

#include "check.h"

constexpr int TILE = 32, ROWS = 8;

__global__ void transpose_tiled(const float *in, float *out, int w, int h) {
  __shared__ float tile[TILE][TILE + 1];
  int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS)
    if (x < w && y + j < h) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * w + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS)
    if (x < h && y + j < w) out[(y + j) * h + x] = tile[threadIdx.x][threadIdx.y + j];
}

__global__ void rms_norm(const float *x, const float *g, float *y, int d, float eps) {
  __shared__ float part[256];
  const float *row = x + (size_t)blockIdx.x * d;
  float s = 0.0f;
  for (int i = threadIdx.x; i < d; i += blockDim.x) s += row[i] * row[i];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
    __syncthreads();
  }
  float r = rsqrtf(part[0] / d + eps);
  for (int i = threadIdx.x; i < d; i += blockDim.x) y[(size_t)blockIdx.x * d + i] = row[i] * r * g[i];
}

__global__ void row_sums(const float *x, float *out, int rows, int cols) {
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x & 31;
  if (warp >= rows) return;
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) s += x[(size_t)warp * cols + c];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  if (lane == 0) out[warp] = s;
}

int main(int argc, char **argv) {
  // `clean_layers [N [LAYERS]]`: an N x N activation (a multiple of 32), LAYERS rounds.
  const int n = argc > 1 ? atoi(argv[1]) : 1024, layers = argc > 2 ? atoi(argv[2]) : 4;
  float *a, *b, *g, *sums;
  CHECK(cudaMalloc(&a, n * n * sizeof(float)));
  CHECK(cudaMalloc(&b, n * n * sizeof(float)));
  CHECK(cudaMalloc(&g, n * sizeof(float)));
  CHECK(cudaMalloc(&sums, n * sizeof(float)));
  CHECK(cudaMemset(a, 0, n * n * sizeof(float)));
  CHECK(cudaMemset(g, 0, n * sizeof(float)));
  for (int l = 0; l < layers; ++l) {
    transpose_tiled<<<dim3(n / TILE, n / TILE), dim3(TILE, ROWS)>>>(a, b, n, n);
    rms_norm<<<n, 256>>>(b, g, a, n, 1e-6f);
    row_sums<<<n * 32 / 256, 256>>>(a, sums, n, n);
  }
  CHECK(cudaDeviceSynchronize());
  printf("clean_layers: %d layers done\n", layers);
  return 0;
}

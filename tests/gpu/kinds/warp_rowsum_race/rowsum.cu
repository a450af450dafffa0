// Row sums of a [rows, cols] score matrix, one warp per row (the normalisers of an attention
// softmax, say). Each lane adds up a strided slice of the row, then the warp folds its 32
// partial sums in shared memory. Written in the old warp-synchronous style: the fold has no
// __syncwarp() between its steps. Since Volta the lanes of a warp are not in lock-step, so a
// lane can read red[w][lane + off] before lane + off has added into it. No crash.
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>

constexpr int WARPS = 8;

__global__ void row_sums(const float *x, float *sums, int rows, int cols) {
  __shared__ float red[WARPS][32];
  int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  int row = blockIdx.x * WARPS + w;
  if (row >= rows) return;
  float acc = 0.0f;
  for (int c = lane; c < cols; c += 32) acc += x[(size_t)row * cols + c];
  red[w][lane] = acc;
  __syncwarp();
  for (int off = 16; off > 0; off >>= 1) {
    if (lane < off) red[w][lane] += red[w][lane + off];
  }
  if (lane == 0) sums[row] = red[w][0];
}

int main() {
  const int rows = 4096, cols = 1000;
  std::vector<float> h(rows * (size_t)cols, 0.5f), s(rows);
  float *x, *sums;
  cudaMalloc(&x, h.size() * sizeof(float));
  cudaMalloc(&sums, rows * sizeof(float));
  cudaMemcpy(x, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice);
  row_sums<<<(rows + WARPS - 1) / WARPS, WARPS * 32>>>(x, sums, rows, cols);
  cudaError_t err = cudaMemcpy(s.data(), sums, rows * sizeof(float), cudaMemcpyDeviceToHost);
  if (err != cudaSuccess) {
    fprintf(stderr, "row_sums failed: %s\n", cudaGetErrorString(err));
    return 1;
  }
  int wrong = 0;
  for (int r = 0; r < rows; ++r) wrong += s[r] != 0.5f * cols;
  printf("row_sums: %d rows, sum[0] = %.1f (expected %.1f), %d rows wrong\n", rows, s[0], 0.5f * cols, wrong);
  cudaFree(x);
  cudaFree(sums);
  return 0;
}

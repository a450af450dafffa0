// Tiled matrix transpose through shared memory: 32x32 tiles, 32x8 threads per block, each
// thread moving four elements, as in the CUDA samples. The __syncthreads() between filling the
// tile and reading it back transposed was lost in a refactor: a thread reads tile[x][y + j],
// which a thread of another warp may not have written yet. It does not crash; some runs give
// wrong elements.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(call)                                                               \
  do {                                                                            \
    cudaError_t e_ = (call);                                                      \
    if (e_ != cudaSuccess) {                                                      \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)

constexpr int TILE = 32, ROWS = 8;

__global__ void transpose_tiled(const float *__restrict__ in, float *__restrict__ out, int width, int height) {
  __shared__ float tile[TILE][TILE + 1];  // +1: no bank conflicts on the transposed read
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS)
    if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * width + x];
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS)
    if (x < height && y + j < width) out[(size_t)(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

int main() {
  const int width = 1024, height = 768;
  const size_t n = (size_t)width * height;
  std::vector<float> h_in(n), h_out(n);
  for (size_t i = 0; i < n; ++i) h_in[i] = (float)(i % 9973);
  float *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, n * sizeof(float)));
  CHECK(cudaMalloc(&d_out, n * sizeof(float)));
  CHECK(cudaMemcpy(d_in, h_in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  dim3 block(TILE, ROWS), grid(width / TILE, height / TILE);
  transpose_tiled<<<grid, block>>>(d_in, d_out, width, height);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(h_out.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
  size_t bad = 0;
  for (int r = 0; r < height; ++r)
    for (int c = 0; c < width; ++c) bad += h_out[(size_t)c * height + r] != h_in[(size_t)r * width + c];
  printf("transpose %dx%d: %zu of %zu elements differ\n", width, height, bad, n);
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  return 0;
}

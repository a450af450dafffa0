// GPU suite: four launches, none checked; the third writes far past its buffer. The host
// learns of it only at the cudaMemcpy further down, so the launch line must come from
// elsewhere (a launch-blocking CPU core of a `-g` build).
#include <climits>
#include <cstdio>
#include <cuda_runtime.h>

__global__ void fill(float *buf, float v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) buf[i] = v;
}

__global__ void scale(float *buf, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) buf[i] *= s;
}

__global__ void scatter_rows(float *buf, const int *rows, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) buf[(size_t)rows[i] * 4096 + threadIdx.x] = 3.0f;  // FAULT: rows[i] may be huge
}

int main() {
  const int n = 8192;
  float *buf;
  int *rows;
  cudaMalloc(&buf, n * sizeof(float));
  cudaMalloc(&rows, n * sizeof(int));
  int *h = new int[n];
  for (int i = 0; i < n; ++i) h[i] = (i % 113 == 7) ? INT_MAX : 0;
  cudaMemcpy(rows, h, n * sizeof(int), cudaMemcpyHostToDevice);
  fill<<<n / 256, 256>>>(buf, 1.0f, n);
  scale<<<n / 256, 256>>>(buf, 2.0f, n);
  scatter_rows<<<n / 256, 256>>>(buf, rows, n);  // LAUNCH
  scale<<<n / 256, 256>>>(buf, 0.5f, n);
  float out[4];
  printf("queued\n");
  fflush(stdout);
  cudaError_t e = cudaMemcpy(out, buf, sizeof(out), cudaMemcpyDeviceToHost);  // SURFACES
  printf("memcpy: %s\n", cudaGetErrorString(e));
  delete[] h;
  return e == cudaSuccess ? 0 : 1;
}

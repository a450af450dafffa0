// RMSNorm over the hidden dimension, one block of 256 threads per token, as LLM inference
// kernels do it: each warp reduces its sum of squares with shuffles, lane 0 of every warp
// parks the warp's sum in shared memory, and warp 0 adds the eight of them up. The barrier
// between parking the partial sums and warp 0 reading them is missing, so warp 0 can read a
// slot another warp has not written yet (a block-level race). No crash.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CUDA_CHECK(expr)                                                            \
  do {                                                                              \
    cudaError_t status = (expr);                                                    \
    if (status != cudaSuccess) {                                                    \
      fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(status), __FILE__, __LINE__); \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)

__global__ void rms_norm(const float *x, const float *weight, float *y, int hidden, float eps) {
  __shared__ float warp_ss[32];
  __shared__ float inv_rms;
  const float *xr = x + (size_t)blockIdx.x * hidden;
  float ss = 0.0f;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) ss += xr[i] * xr[i];
  for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) warp_ss[warp] = ss;
  if (warp == 0) {
    ss = lane < blockDim.x / 32 ? warp_ss[lane] : 0.0f;
    for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
    if (lane == 0) inv_rms = rsqrtf(ss / hidden + eps);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) y[(size_t)blockIdx.x * hidden + i] = xr[i] * inv_rms * weight[i];
}

int main() {
  const int tokens = 512, hidden = 4096;
  std::vector<float> hx((size_t)tokens * hidden), hw(hidden, 1.0f), hy(hx.size());
  for (size_t i = 0; i < hx.size(); ++i) hx[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
  float *x, *w, *y;
  CUDA_CHECK(cudaMalloc(&x, hx.size() * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&w, hidden * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&y, hx.size() * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(x, hx.data(), hx.size() * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(w, hw.data(), hidden * sizeof(float), cudaMemcpyHostToDevice));
  rms_norm<<<tokens, 256>>>(x, w, y, hidden, 1e-6f);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaMemcpy(hy.data(), y, hy.size() * sizeof(float), cudaMemcpyDeviceToHost));
  double ss = 0;
  for (int i = 0; i < hidden; ++i) ss += hy[i] * hy[i];
  printf("rms_norm: %d tokens x %d, rms(y[0]) = %.4f (expected 1.0000)\n", tokens, hidden, std::sqrt(ss / hidden));
  return 0;
}

// The `demo` recipe's target: one kernel stores 32 GiB before its 4 KiB buffer, an
// illegal memory access. Built by `debug-ima run --recipe demo`; see
// docs/recipes.md. The error check is the usual one: `CUDA error at FILE:LINE: call: message`.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                                  \
  do {                                                                               \
    cudaError_t err_ = (call);                                                       \
    if (err_ != cudaSuccess) {                                                       \
      std::fprintf(stderr, "CUDA error at %s:%d: %s: %s\n", __FILE__, __LINE__,     \
                   #call, cudaGetErrorString(err_));                                 \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

// Stores each thread's index `shift` elements away from its slot. With a negative shift of
// 2^33 ints the store lands 32 GiB below the buffer, far from any allocation.
__global__ void offset_store(int *out, int n, long long shift) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i + shift] = (int)i;  // the bad write
  }
}

int main() {
  const int n = 1024;  // 4 KiB of int
  const long long shift = -(1LL << 33);
  int *out = nullptr;
  CHECK(cudaMalloc(&out, n * sizeof(int)));
  offset_store<<<n / 256, 256>>>(out, n, shift);
  CHECK(cudaGetLastError());
  std::printf("launched offset_store<<<%d, 256>>> with shift %lld\n", n / 256, shift);
  std::fflush(stdout);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(out));
  std::printf("done: no fault was reported (a bad access does not always fault; try memcheck)\n");
  return 0;
}

// A hang: a producer/consumer kernel whose producer never publishes. Warp 0 of every block
// spins on a flag in global memory (the line the verdict must name); the other warps of the
// block wait at the block barrier for it. The host waits in cudaDeviceSynchronize forever.
#include <cstdio>
#include <cuda_runtime.h>

__device__ void wait_for_flag(volatile int* flag, int* spins) {
  while (flag[0] == 0) {  // hang: spins here
    atomicAdd(spins, 1);
  }
}

__global__ void consume(volatile int* flag, int* spins, float* out) {
  if (threadIdx.x < 32) {
    wait_for_flag(flag, spins);
  }
  __syncthreads();  // the other warps wait here
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}

int main() {
  int *flag, *spins;
  float* out;
  cudaMalloc(&flag, sizeof(int));
  cudaMemset(flag, 0, sizeof(int));
  cudaMalloc(&spins, sizeof(int));
  cudaMalloc(&out, 8 * 128 * sizeof(float));
  printf("launching consume<<<8, 128>>>; nobody sets the flag\n");
  fflush(stdout);
  consume<<<8, 128>>>(flag, spins, out);
  cudaError_t e = cudaDeviceSynchronize();
  printf("done: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}

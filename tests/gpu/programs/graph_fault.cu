// GPU suite: the faulting kernel runs inside a captured CUDA graph (fault inside a graph).
#include "check.h"

__global__ void fill_ones(float *p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = 1.0f;
}

__global__ void shift_copy(const float *src, float *dst, int n, long long shift) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    dst[i + shift] = src[i];  // FAULT
  }
}

int main() {
  const int n = 4096;
  float *a, *b;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&b, n * sizeof(float)));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  fill_ones<<<n / 256, 256, 0, s>>>(a, n);
  shift_copy<<<n / 256, 256, 0, s>>>(a, b, n, -(1LL << 33));
  CHECK(cudaStreamEndCapture(s, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphLaunch(exec, s));
  printf("graph launched\n");
  fflush(stdout);
  CHECK(cudaStreamSynchronize(s));
  printf("done\n");
  return 0;
}

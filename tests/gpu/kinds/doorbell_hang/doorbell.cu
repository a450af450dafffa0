// A persistent worker kernel waits for a doorbell in device memory that the host rings once
// the inputs are staged. The host rings it with cudaMemcpyAsync -- on the worker's own stream,
// so the copy is queued behind the kernel, which waits for the copy: a hang. Every thread of
// the grid spins on the doorbell; the host blocks in the copy or the synchronize after it.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void persistent_worker(volatile int *doorbell, const float *in, float *out, int n) {
  while (*doorbell == 0) __nanosleep(1000);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = 2.0f * in[i];
}

int main() {
  const int n = 1 << 20;
  int *doorbell;
  float *in, *out;
  cudaMalloc(&doorbell, sizeof(int));
  cudaMalloc(&in, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  cudaMemset(doorbell, 0, sizeof(int));
  cudaMemset(in, 0, n * sizeof(float));
  cudaDeviceSynchronize();
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  persistent_worker<<<132, 256, 0, stream>>>(doorbell, in, out, n);
  printf("worker running on 132 blocks; ringing the doorbell\n");
  fflush(stdout);
  const int ring = 1;
  cudaMemcpyAsync(doorbell, &ring, sizeof(int), cudaMemcpyHostToDevice, stream);
  cudaError_t err = cudaStreamSynchronize(stream);
  printf("worker done: %s\n", cudaGetErrorString(err));
  return err == cudaSuccess ? 0 : 1;
}

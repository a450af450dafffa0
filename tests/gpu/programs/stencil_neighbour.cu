// GPU suite: a two-point stencil reads one element past its input, which lands in the next
// allocation: nothing faults and plain memcheck sees a valid address. `-DFIXED` builds the
// correct program (the sweep must leave it alone). Usage: stencil_neighbour [n]
#include "check.h"

__global__ void smooth(float *out, const float *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef FIXED
  if (i < n) out[i] = i + 1 < n ? 0.5f * (in[i] + in[i + 1]) : in[i];
#else
  if (i < n) out[i] = 0.5f * (in[i] + in[i + 1]);  // FAULT: in[n] is past the end
#endif
}

int main(int argc, char **argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 4096;
  float *in, *scratch, *out;
  CHECK(cudaMalloc(&in, n * sizeof(float)));
  CHECK(cudaMalloc(&scratch, n * sizeof(float)));  // right after `in`, never written
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  float *h = new float[n];
  for (int i = 0; i < n; ++i) h[i] = float(i);
  CHECK(cudaMemcpy(in, h, n * sizeof(float), cudaMemcpyHostToDevice));
  smooth<<<(n + 255) / 256, 256>>>(out, in, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(h, out, n * sizeof(float), cudaMemcpyDeviceToHost));
  printf("out[n-2] = %g\n", h[n - 2]);
  CHECK(cudaFree(in));
  CHECK(cudaFree(scratch));
  CHECK(cudaFree(out));
  delete[] h;
  return 0;
}

// GPU suite (issue 21): a long job that faults once, late. For about 35 s of wall time (a
// clock, so the time holds on any GPU) or for exactly STEPS steps (so that two runs do the
// same work: a launch-blocking run is slower per step) it launches small correct kernels,
// thousands a second, with a progress line every 5 s; then ONE unchecked launch of a kernel
// that writes 32 GiB before its buffer through an offset computed at run time. The host
// learns of it only at the cudaDeviceSynchronize further down, and exits 1.
// Usage: late_fault [seconds [steps]]   (default 35 s; steps > 0 fixes the step count)
#include "check.h"
#include <chrono>
#include <vector>

__global__ void relax(float *y, const float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 0.5f * y[i] + a * x[i];
}

__global__ void reduce_sum(const float *y, float *sum, int n) {  // one atomicAdd per block
  __shared__ float part[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  part[threadIdx.x] = i < n ? y[i] : 0.0f;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(sum, part[0]);
}

__global__ void scatter_tail(float *out, const float *y, int n, long long offset) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i + offset] = y[i];  // FAULT: offset is 32 GiB before out
}

int main(int argc, char **argv) {
  const double seconds = argc > 1 ? atof(argv[1]) : 35.0;
  const long long fixed = argc > 2 ? atoll(argv[2]) : 0;
  const int n = 1 << 16;
  std::vector<float> h(n);
  for (int i = 0; i < n; ++i) h[i] = 1.0f / float(i + 1);
  float *x, *y, *out, *sum;
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  CHECK(cudaMalloc(&y, n * sizeof(float)));
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  CHECK(cudaMalloc(&sum, sizeof(float)));
  CHECK(cudaMemcpy(x, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(y, 0, n * sizeof(float)));
  CHECK(cudaMemset(sum, 0, sizeof(float)));
  printf("late_fault: start, %.0f s of steps\n", seconds);
  fflush(stdout);

  using steady = std::chrono::steady_clock;
  const auto t0 = steady::now();
  double next = 5.0;
  long long steps = 0;
  for (;;) {
    const double t = std::chrono::duration<double>(steady::now() - t0).count();
    if (fixed > 0 ? steps >= fixed : t >= seconds) break;
    relax<<<n / 256, 256>>>(y, x, 0.25f, n);
    reduce_sum<<<n / 256, 256>>>(y, sum, n);
    ++steps;
    if (t >= next) {  // progress: the checked copy also waits for the queued steps
      float s = 0.0f;
      CHECK(cudaMemcpy(&s, sum, sizeof(float), cudaMemcpyDeviceToHost));
      CHECK(cudaMemset(sum, 0, sizeof(float)));
      printf("late_fault: %.0f s, %lld steps, sum %.1f\n", t, steps, s);
      fflush(stdout);
      next += 5.0;
    }
  }

  const long long offset = -(1LL << 33) - (steps & 1);  // the bug, known only at run time
  printf("late_fault: %lld steps; last step\n", steps);
  fflush(stdout);
  scatter_tail<<<n / 256, 256>>>(out, y, n, offset);  // LAUNCH (unchecked)
  relax<<<n / 256, 256>>>(y, x, 0.25f, n);
  CHECK(cudaDeviceSynchronize());  // the error surfaces here
  printf("late_fault: done\n");
  return 0;
}

// GPU suite (issue 21): a fault in about half of the runs, which launch-blocking does not
// hide. Each run draws 8 bytes from /dev/urandom (the clock's nanoseconds if it cannot be
// read); when the draw is odd, one entry of the index table is stale (32 GiB before the
// table) and the gather faults on it, else the run is correct. Nothing says which it was.
#include "check.h"
#include <chrono>
#include <cstdint>
#include <vector>

__global__ void gather(const float *table, const long long *idx, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = table[idx[i]];  // FAULT
}

static uint64_t draw() {
  uint64_t s = 0;
  FILE *f = fopen("/dev/urandom", "rb");
  if (f == nullptr || fread(&s, sizeof s, 1, f) != 1)
    s = (uint64_t)std::chrono::steady_clock::now().time_since_epoch().count();
  if (f != nullptr) fclose(f);
  s += 0x9e3779b97f4a7c15ULL;  // splitmix64: mixes the clock's low bits too
  s = (s ^ (s >> 30)) * 0xbf58476d1ce4e5b9ULL;
  s = (s ^ (s >> 27)) * 0x94d049bb133111ebULL;
  return s ^ (s >> 31);
}

int main() {
  const int n = 1 << 14;
  std::vector<long long> h_idx(n);
  for (int i = 0; i < n; ++i) h_idx[i] = (i * 31LL) % n;
  const uint64_t s = draw();
  if (s & 1) h_idx[(s >> 1) % n] = -(1LL << 33);  // the bug: a stale entry, in half the runs
  float *table, *out;
  long long *idx;
  CHECK(cudaMalloc(&table, n * sizeof(float)));
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  CHECK(cudaMalloc(&idx, n * sizeof(long long)));
  CHECK(cudaMemset(table, 0, n * sizeof(float)));
  CHECK(cudaMemcpy(idx, h_idx.data(), n * sizeof(long long), cudaMemcpyHostToDevice));
  gather<<<n / 256, 256>>>(table, idx, out, n);  // LAUNCH
  std::vector<float> h_out(n);
  CHECK(cudaMemcpy(h_out.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
  double sum = 0.0;
  for (float v : h_out) sum += v;
  printf("gathered %d rows, checksum %g\n", n, sum);
  return 0;
}

// GPU suite (issue 25): one rank of a job faults. Each process reads its rank from
// SLURM_PROCID (or RANK); rank 1 writes 32 GiB before its allocation, every other rank runs the
// same kernel in bounds, waits a moment (as a collective would, for the peer that died) and
// exits 0. No collectives: the ranks share one GPU, where NCCL refuses two ranks.
#include <cstdlib>
#include <unistd.h>
#include "check.h"

__global__ void scatter_rows(float *out, int n, long long shift) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i + shift] = 2.0f * i;  // FAULT (rank 1)
  }
}

static int rank_of() {
  const char *r = getenv("SLURM_PROCID");
  if (!r) r = getenv("RANK");
  return r ? atoi(r) : 0;
}

int main() {
  const int rank = rank_of();
  const int n = 4096;
  float *d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  long long shift = rank == 1 ? -(1LL << 33) : 0;
  printf("rank %d: launching scatter_rows\n", rank);
  fflush(stdout);
  scatter_rows<<<n / 256, 256>>>(d, n, shift);  // LAUNCH
  CHECK(cudaDeviceSynchronize());
  sleep(2);
  printf("rank %d: done\n", rank);
  return 0;
}

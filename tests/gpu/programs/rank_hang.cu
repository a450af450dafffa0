// GPU suite (issue 25): the rank that hangs elsewhere. Three ranks (SLURM_PROCID or RANK);
// every rank but 1 spins in `wait_for_peer` for a flag its peer never sets (as ranks wait in
// a collective for a missing one); rank 1 is stuck in `stuck_tile`, a loop whose bound it read
// wrong. The odd rank out is 1, at its own kernel and line.
#include <cstdlib>
#include "check.h"

__global__ void wait_for_peer(volatile int *flag) {
  while (flag[0] == 0) {  // HANG (the others)
  }
}

__global__ void stuck_tile(volatile int *flag, float *acc) {
  float a = 0.0f;
  for (int k = 0; flag[0] == 0; k++) {  // HANG (rank 1)
    a += k * 0.5f;
  }
  acc[threadIdx.x] = a;
}

static int rank_of() {
  const char *r = getenv("SLURM_PROCID");
  if (!r) r = getenv("RANK");
  return r ? atoi(r) : 0;
}

int main() {
  const int rank = rank_of();
  int *flag;
  float *acc;
  CHECK(cudaMalloc(&flag, sizeof(int)));
  CHECK(cudaMemset(flag, 0, sizeof(int)));
  CHECK(cudaMalloc(&acc, 128 * sizeof(float)));
  printf("rank %d: launching %s\n", rank, rank == 1 ? "stuck_tile" : "wait_for_peer");
  fflush(stdout);
  if (rank == 1) {
    stuck_tile<<<1, 128>>>(flag, acc);
  } else {
    wait_for_peer<<<1, 32>>>(flag);
  }
  CHECK(cudaDeviceSynchronize());
  return 0;
}

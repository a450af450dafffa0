// Copies each sequence's KV-cache blocks out of a paged pool into a contiguous buffer, through
// its block table (vLLM-style paging). Release builds keep one cheap check: a block id outside
// the pool traps. The scheduler preempted sequence 5 and freed its blocks (-1 in the table)
// but left its length in seq_lens, so the gather walks into a freed entry and traps.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(call)                                                                 \
  do {                                                                              \
    cudaError_t err = call;                                                         \
    if (err != cudaSuccess) {                                                       \
      fprintf(stderr, "CUDA error at %s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err)); \
      exit(EXIT_FAILURE);                                                           \
    }                                                                               \
  } while (0)

constexpr int BLOCK_TOKENS = 16, HEAD_ELEMS = 8 * 128;  // 8 KV heads x head_dim 128

__global__ void gather_kv_blocks(const float *pool, const int *block_tables, const int *seq_lens, float *out,
                                 int max_blocks, int pool_blocks) {
  int seq = blockIdx.y, b = blockIdx.x;
  if (b * BLOCK_TOKENS >= seq_lens[seq]) return;
  int phys = block_tables[seq * max_blocks + b];
  if (phys < 0 || phys >= pool_blocks) __trap();
  const size_t block_elems = (size_t)BLOCK_TOKENS * HEAD_ELEMS;
  for (size_t i = threadIdx.x; i < block_elems; i += blockDim.x)
    out[((size_t)seq * max_blocks + b) * block_elems + i] = pool[(size_t)phys * block_elems + i];
}

int main() {
  const int seqs = 8, max_blocks = 32, pool_blocks = 256;
  const size_t block_elems = (size_t)BLOCK_TOKENS * HEAD_ELEMS;
  std::vector<int> table(seqs * max_blocks), lens(seqs);
  for (int s = 0; s < seqs; ++s) {
    lens[s] = 100 + 37 * s;
    for (int b = 0; b < max_blocks; ++b) table[s * max_blocks + b] = (s * max_blocks + b) % pool_blocks;
  }
  for (int b = 0; b < max_blocks; ++b) table[5 * max_blocks + b] = -1;  // sequence 5 preempted
  float *pool, *out;
  int *d_table, *d_lens;
  CHECK(cudaMalloc(&pool, pool_blocks * block_elems * sizeof(float)));
  CHECK(cudaMalloc(&out, seqs * max_blocks * block_elems * sizeof(float)));
  CHECK(cudaMalloc(&d_table, table.size() * sizeof(int)));
  CHECK(cudaMalloc(&d_lens, seqs * sizeof(int)));
  CHECK(cudaMemset(pool, 0, pool_blocks * block_elems * sizeof(float)));
  CHECK(cudaMemcpy(d_table, table.data(), table.size() * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_lens, lens.data(), seqs * sizeof(int), cudaMemcpyHostToDevice));
  gather_kv_blocks<<<dim3(max_blocks, seqs), 256>>>(pool, d_table, d_lens, out, max_blocks, pool_blocks);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  printf("gathered KV blocks of %d sequences\n", seqs);
  return 0;
}

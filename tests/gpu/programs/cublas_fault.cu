// GPU suite (issue 23): a fault inside a precompiled cuBLAS kernel. The model's hidden size
// grew from 64 to 8192, but B is still allocated for the old size: the GEMM reads far past
// its end. No source line exists for the faulting kernel; the user's line is the call.
// Build: nvcc -arch=sm_90 -lineinfo -g -o cublas_fault cublas_fault.cu -lcublas
#include "check.h"
#include <cublas_v2.h>

int main() {
  const int m = 1024, n = 1024, k = 8192, k_old = 64;
  float *A, *B, *C;
  CHECK(cudaMalloc(&A, (size_t)m * k * sizeof(float)));
  CHECK(cudaMalloc(&C, (size_t)m * n * sizeof(float)));
  CHECK(cudaMalloc(&B, (size_t)k_old * n * sizeof(float)));  // BUG: sized for the old k
  CHECK(cudaMemset(A, 0, (size_t)m * k * sizeof(float)));
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) { fprintf(stderr, "cublasCreate failed\n"); return 2; }
  const float alpha = 1.0f, beta = 0.0f;
  cublasStatus_t st = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, A, m, B, k, &beta, C, m);  // CALL
  printf("cublasSgemm returned %d\n", (int)st);
  fflush(stdout);
  CHECK(cudaDeviceSynchronize());
  printf("done\n");
  return 0;
}

// The up-projection of an MLP block through cuBLAS: Y[tokens, inter] = X[tokens, hidden] W^T,
// with W stored row-major as [inter, hidden]. The model config moved from hidden = 1024 to
// hidden = 8192, but the weight buffer is still allocated from the constant of the old config:
// the GEMM reads 7/8 of W past the end of its allocation and faults inside cuBLAS's kernel.
#include <cstdio>
#include <cstdlib>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1); } } while (0)
#define CUBLAS_CHECK(x) do { cublasStatus_t s = (x); if (s != CUBLAS_STATUS_SUCCESS) { \
  fprintf(stderr, "cuBLAS error %d at %s:%d\n", (int)s, __FILE__, __LINE__); exit(1); } } while (0)

static const int kHiddenV1 = 1024;  // hidden size of the first checkpoint format

struct MlpConfig { int tokens, hidden, inter; };

int main() {
  const MlpConfig cfg{16, 8192, 14336};
  cublasHandle_t handle;
  CUBLAS_CHECK(cublasCreate(&handle));
  float *x, *w_up, *y;
  CUDA_CHECK(cudaMalloc(&x, sizeof(float) * cfg.tokens * cfg.hidden));
  CUDA_CHECK(cudaMalloc(&y, sizeof(float) * cfg.tokens * cfg.inter));
  CUDA_CHECK(cudaMalloc(&w_up, sizeof(float) * cfg.inter * kHiddenV1));
  CUDA_CHECK(cudaMemset(x, 0, sizeof(float) * cfg.tokens * cfg.hidden));
  CUDA_CHECK(cudaMemset(w_up, 0, sizeof(float) * cfg.inter * kHiddenV1));
  printf("up_proj: [%d x %d] x [%d x %d]^T\n", cfg.tokens, cfg.hidden, cfg.inter, cfg.hidden);
  fflush(stdout);
  const float alpha = 1.0f, beta = 0.0f;
  const int m = cfg.inter, n = cfg.tokens, k = cfg.hidden;  // column-major: Y^T = W X^T
  CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, w_up, k, x, k, &beta, y, m));
  CUDA_CHECK(cudaDeviceSynchronize());
  printf("up_proj done\n");
  CUBLAS_CHECK(cublasDestroy(handle));
  return 0;
}

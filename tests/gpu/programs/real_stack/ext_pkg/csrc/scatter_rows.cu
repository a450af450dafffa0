// Real stack (issue 40): a CUDA op of an extension installed with `pip install -e .`, as
// vLLM's csrc is. scatter_rows(dst, idx, src) writes row r of src into row idx[r] of dst
// with no bounds check: a stale slot writes far outside dst.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

__global__ void scatter_rows_kernel(float* dst, const int64_t* idx, const float* src,
                                    int64_t dim) {
  const int64_t r = blockIdx.x;
  const int64_t slot = idx[r];
  for (int64_t c = threadIdx.x; c < dim; c += blockDim.x) {
    dst[slot * dim + c] = src[r * dim + c];  // FAULT
  }
}

void scatter_rows(torch::Tensor dst, torch::Tensor idx, torch::Tensor src) {
  auto stream = at::cuda::getCurrentCUDAStream();
  scatter_rows_kernel<<<idx.size(0), 128, 0, stream>>>(
      dst.data_ptr<float>(), idx.data_ptr<int64_t>(), src.data_ptr<float>(), dst.size(1));
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("scatter_rows", &scatter_rows, "scatter rows by slot (no bounds check)");
}

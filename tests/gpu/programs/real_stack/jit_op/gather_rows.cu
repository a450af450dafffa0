// Real stack (issue 40): a custom op built at run time by torch.utils.cpp_extension.load.
// gather_rows(src, idx) copies row idx[r] of src into row r of the output, with no bounds
// check on idx: a stale index reads far outside src.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

__global__ void gather_rows_kernel(const float* src, const int64_t* idx, float* out,
                                   int64_t dim) {
  const int64_t r = blockIdx.x;
  const int64_t row = idx[r];
  for (int64_t c = threadIdx.x; c < dim; c += blockDim.x) {
    out[r * dim + c] = src[row * dim + c];  // FAULT
  }
}

torch::Tensor gather_rows(torch::Tensor src, torch::Tensor idx) {
  TORCH_CHECK(src.is_cuda() && idx.is_cuda(), "gather_rows: CUDA tensors only");
  auto out = torch::empty({idx.size(0), src.size(1)}, src.options());
  auto stream = at::cuda::getCurrentCUDAStream();
  gather_rows_kernel<<<idx.size(0), 128, 0, stream>>>(
      src.data_ptr<float>(), idx.data_ptr<int64_t>(), out.data_ptr<float>(), src.size(1));
  return out;  // launch errors surface at the next synchronising call
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("gather_rows", &gather_rows, "gather rows by index (no bounds check)");
}

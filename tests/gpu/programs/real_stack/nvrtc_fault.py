"""Real stack (issue 40): a fault in a kernel compiled from a string at run time (NVRTC).

Usage: python3 nvrtc_fault.py MODE
  cupy       CuPy RawKernel (NVRTC; cache ~/.cupy/kernel_cache or CUPY_CACHE_DIR)
  cupy-module  CuPy RawModule with two kernels, the second faults
  cuda-core  cuda.core Program (NVRTC, program name "default_program")
  numba      numba-cuda @cuda.jit from a Python function (NVVM, not NVRTC: for comparison)
  clean      CuPy, no fault
Each scatters values through an index with one stale entry (far out of range).
"""
import sys

import numpy as np

SRC = r"""
extern "C" __global__ void scale_rows(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = 2.0f * x[i];
    }
}

extern "C" __global__ void scatter_add(const float* x, const long long* idx, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        long long j = idx[i];
        out[j] += x[i];  // FAULT
    }
}
"""

N = 4096
BAD = 1 << 36  # floats: 256 GiB past out


def with_cupy(mode):
    import cupy as cp

    x = cp.ones(N, dtype=cp.float32)
    out = cp.zeros(N, dtype=cp.float32)
    idx = cp.arange(N, dtype=cp.int64)
    if mode == "cupy-module":
        mod = cp.RawModule(code=SRC)
        mod.get_function("scale_rows")((N // 256,), (256,), (x, out, cp.int32(N)))
        kern = mod.get_function("scatter_add")
    else:
        kern = cp.RawKernel(SRC, "scatter_add")
    kern((N // 256,), (256,), (x, idx, out, cp.int32(N)))
    cp.cuda.runtime.deviceSynchronize()
    if mode != "clean":
        idx[100] = BAD
    kern((N // 256,), (256,), (x, idx, out, cp.int32(N)))  # LAUNCH
    print("launched", flush=True)
    print("checksum", float(out.sum()), flush=True)


def with_cuda_core():
    from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch
    import cupy as cp

    dev = Device()
    dev.set_current()
    stream = dev.create_stream()
    prog = Program(SRC, code_type="c++", options=ProgramOptions(arch=f"sm_{dev.arch}"))
    mod = prog.compile("cubin", name_expressions=())
    kern = mod.get_kernel("scatter_add")
    x = cp.ones(N, dtype=cp.float32)
    out = cp.zeros(N, dtype=cp.float32)
    idx = cp.arange(N, dtype=cp.int64)
    idx[100] = BAD
    cp.cuda.runtime.deviceSynchronize()
    cfg = LaunchConfig(grid=N // 256, block=256)
    launch(stream, cfg, kern, x.data.ptr, idx.data.ptr, out.data.ptr, np.int32(N))  # LAUNCH
    print("launched", flush=True)
    stream.sync()
    print("checksum", float(out.sum()), flush=True)


def with_numba():
    from numba import cuda

    @cuda.jit
    def scatter_add(x, idx, out):
        i = cuda.grid(1)
        if i < x.size:
            out[idx[i]] += x[i]  # FAULT

    x = cuda.to_device(np.ones(N, dtype=np.float32))
    out = cuda.to_device(np.zeros(N, dtype=np.float32))
    h = np.arange(N, dtype=np.int64)
    h[100] = BAD
    idx = cuda.to_device(h)
    scatter_add[N // 256, 256](x, idx, out)  # LAUNCH
    print("launched", flush=True)
    cuda.synchronize()
    print("checksum", float(out.copy_to_host().sum()), flush=True)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "cupy"
    if mode == "cuda-core":
        with_cuda_core()
    elif mode == "numba":
        with_numba()
    else:
        with_cupy(mode)


if __name__ == "__main__":
    main()

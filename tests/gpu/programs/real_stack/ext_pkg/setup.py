"""Real stack (issue 40): a small CUDA extension installed with `pip install -e .`, the way
vLLM builds its csrc. NVCC_PREPEND_FLAGS (the rebuild rung's -lineinfo) reaches nvcc only
when the build really compiles."""
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="ima-ext",
    version="0.1",
    packages=["ima_ext"],
    ext_modules=[CUDAExtension("ima_ext._C", ["csrc/scatter_rows.cu"])],
    cmdclass={"build_ext": BuildExtension},
)

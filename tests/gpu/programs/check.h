// GPU suite: the error check every program of the suite uses, as real CUDA code does.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                                  \
  do {                                                                               \
    cudaError_t err_ = (call);                                                       \
    if (err_ != cudaSuccess) {                                                       \
      fprintf(stderr, "CUDA error at %s:%d: %s: %s\n", __FILE__, __LINE__, #call,    \
              cudaGetErrorString(err_));                                             \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

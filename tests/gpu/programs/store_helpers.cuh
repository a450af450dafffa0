// GPU suite: a small device helper that gets inlined into the kernel that calls it.
#pragma once

__device__ __forceinline__ void store_scaled(float *dst, long long at, float v, float s) {
  dst[at] = v * s;  // INLINED
}

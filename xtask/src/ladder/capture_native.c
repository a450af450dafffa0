/* debug-ima's launch capture for a native target (docs/repro.md, "A CUDA C++ kernel"): a
 * CUPTI injection library the repro rung builds in `repro/` and the capture run loads through
 * CUDA_INJECTION64_PATH, which the driver honours whatever the program links (a static cudart
 * included). Before each driver-API launch of a kernel whose mangled name contains
 * DEBUG_IMA_CAPTURE it writes the launch to DEBUG_IMA_CAPTURE_DIR/native-capture-PID.json,
 * replacing the one before: the kernel's mangled name, grid, block, dynamic shared memory,
 * and each parameter (offset, size, bytes), and for a parameter that points into a device
 * allocation (cuMemGetAddressRange) the allocation's base, size, the offset into it and, up to
 * 1 MiB and outside a stream capture (where a copy would end the capture), its bytes. The run is launch-blocking, so the last launch written is the one that
 * faulted. DEBUG_IMA_CAPTURE_TRACE=1 prints every API call it sees to stderr.
 *
 * Must not: change what the program does (it only reads parameters and copies allocations to
 * the host before a launch), write anywhere but its folder, or print but its one line when
 * it is loaded (the capture run's log then shows it was) unless tracing. */
#include <cuda.h>
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *want;
static const char *dir;
static unsigned long seq;

static void hex(FILE *f, const unsigned char *p, size_t n) {
  fputc('"', f);
  for (size_t i = 0; i < n; i++) fprintf(f, "%02x", p[i]);
  fputc('"', f);
}

/* A parameter's offset and size: the handle the runtime passes may be a CUkernel (the
 * library API, CUDA 12+) rather than a CUfunction. */
static int param_info(CUfunction fn, size_t i, size_t *off, size_t *size) {
  if (cuFuncGetParamInfo(fn, i, off, size) == CUDA_SUCCESS) return 1;
  return cuKernelGetParamInfo((CUkernel)fn, i, off, size) == CUDA_SUCCESS;
}

static void record(const char *name, CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                   unsigned by, unsigned bz, unsigned shmem, CUstream stream, void **params) {
  if (!name || !strstr(name, want)) return;
  /* Inside a stream capture no copy may be made (it would end the capture): bytes are left out. */
  CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
  if (cuStreamIsCapturing(stream, &capturing) != CUDA_SUCCESS) capturing = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/native-capture-%d.json", dir, (int)getpid());
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) return;
  seq++;
  fprintf(f, "{\"version\": 1, \"pid\": %d, \"seq\": %lu, \"kernel\": \"%s\", \"grid\": [%u, %u, %u], "
             "\"block\": [%u, %u, %u], \"shared\": %u, \"params\": [",
          (int)getpid(), seq, name, gx, gy, gz, bx, by, bz, shmem);
  for (size_t i = 0; params; i++) {
    size_t off = 0, size = 0;
    if (!param_info(fn, i, &off, &size)) break;
    fprintf(f, "%s{\"offset\": %zu, \"size\": %zu, \"bytes\": ", i ? ", " : "", off, size);
    hex(f, (const unsigned char *)params[i], size);
    if (size == 8) {
      CUdeviceptr v, base;
      size_t asize = 0;
      memcpy(&v, params[i], 8);
      if (v && cuMemGetAddressRange(&base, &asize, v) == CUDA_SUCCESS) {
        fprintf(f, ", \"allocation\": {\"base\": %llu, \"size\": %zu, \"offset\": %llu, \"values\": ",
                (unsigned long long)base, asize, (unsigned long long)(v - base));
        unsigned char *buf = asize <= (1u << 20) && capturing == CU_STREAM_CAPTURE_STATUS_NONE ? malloc(asize) : NULL;
        if (buf && cuMemcpyDtoH(buf, base, asize) == CUDA_SUCCESS) hex(f, buf, asize);
        else fputs("null", f);
        free(buf);
        fputc('}', f);
      }
    }
    fputc('}', f);
  }
  fputs("]}\n", f);
  fclose(f);
  rename(tmp, path);
}

static int trace;

static void CUPTIAPI callback(void *ud, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data) {
  (void)ud;
  const CUpti_CallbackData *cb = data;
  if (trace && cb->callbackSite == CUPTI_API_ENTER)
    fprintf(stderr, "trace: domain %d cbid %u %s symbol %s\n", (int)domain, (unsigned)cbid,
            cb->functionName ? cb->functionName : "?", cb->symbolName ? cb->symbolName : "-");
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || cb->callbackSite != CUPTI_API_ENTER) return;
  switch (cbid) {
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
    const cuLaunchKernel_params *p = cb->functionParams;
    record(cb->symbolName, p->f, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY, p->blockDimZ,
           p->sharedMemBytes, p->hStream, p->kernelParams);
    break;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
    const cuLaunchKernelEx_params *p = cb->functionParams;
    const CUlaunchConfig *c = p->config;
    record(cb->symbolName, p->f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
           c->sharedMemBytes, c->hStream, p->kernelParams);
    break;
  }
  default:
    break;
  }
}

int InitializeInjection(void) {
  want = getenv("DEBUG_IMA_CAPTURE");
  dir = getenv("DEBUG_IMA_CAPTURE_DIR");
  if (!want || !dir) return 1;
  CUpti_SubscriberHandle sub;
  if (cuptiSubscribe(&sub, callback, NULL) != CUPTI_SUCCESS) {
    fprintf(stderr, "debug-ima capture: cuptiSubscribe failed\n");
    return 0;
  }
  cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
  trace = getenv("DEBUG_IMA_CAPTURE_TRACE") != NULL;
  if (trace) cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
  fprintf(stderr, "debug-ima capture: injected, capturing `%s`\n", want);
  return 1;
}

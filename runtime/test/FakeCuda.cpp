//===- FakeCuda.cpp - A stand-in libcuda.so.1 for tests without a GPU -----===//
//
// Implements the driver API calls runtime/lib/Cuda.cpp makes, on host
// memory, so that the host side of the CUDA target (initialization, device
// checks, counted stream-ordered allocation, copies, result handling, error
// messages) runs in CI. Kernels are not executed: cuLaunchKernel only counts
// launches, so the numbers a step computes are meaningless; its memory
// traffic through the allocator is real. Environment:
//   FAKE_CUDA_CC=90          compute capability reported (major*10+minor)
//   FAKE_CUDA_TOTAL=BYTES    device memory (default 1 GiB); allocations
//                            beyond it fail with CUDA_ERROR_OUT_OF_MEMORY
//   FAKE_CUDA_FAIL_LAUNCH=1  cuLaunchKernel fails (CUDA_ERROR_LAUNCH_FAILED)
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

namespace {
using CUresult = int;
constexpr CUresult kSuccess = 0, kOutOfMemory = 2, kInvalidValue = 1,
                   kLaunchFailed = 719;
std::map<uintptr_t, size_t> live;
size_t used = 0, usedHigh = 0;
long launches = 0;

size_t total() {
  const char *t = std::getenv("FAKE_CUDA_TOTAL");
  return t ? std::strtoull(t, nullptr, 10) : (size_t(1) << 30);
}
int cc() {
  const char *c = std::getenv("FAKE_CUDA_CC");
  return c ? std::atoi(c) : 90;
}
int dummy;
} // namespace

extern "C" {
CUresult cuInit(unsigned) { return kSuccess; }
CUresult cuDriverGetVersion(int *v) {
  *v = 13000;
  return kSuccess;
}
CUresult cuDeviceGetCount(int *n) {
  *n = 1;
  return kSuccess;
}
CUresult cuDeviceGet(int *d, int ordinal) {
  *d = ordinal;
  return ordinal == 0 ? kSuccess : kInvalidValue;
}
CUresult cuDeviceGetName(char *name, int len, int) {
  std::snprintf(name, len, "Fake GPU (sm_%d)", cc());
  return kSuccess;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int) {
  *v = attr == 75 ? cc() / 10 : attr == 76 ? cc() % 10 : 1;
  return kSuccess;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, int) {
  *ctx = &dummy;
  return kSuccess;
}
CUresult cuCtxSetCurrent(void *) { return kSuccess; }
CUresult cuCtxSynchronize() { return kSuccess; }
CUresult cuMemGetInfo_v2(size_t *freeBytes, size_t *totalBytes) {
  *totalBytes = total();
  *freeBytes = total() - used;
  return kSuccess;
}
CUresult cuMemAllocAsync(uintptr_t *p, size_t bytes, void *) {
  if (used + bytes > total())
    return kOutOfMemory;
  void *m = std::calloc(1, bytes);
  if (!m)
    return kOutOfMemory;
  *p = reinterpret_cast<uintptr_t>(m);
  live[*p] = bytes;
  used += bytes;
  if (used > usedHigh)
    usedHigh = used;
  return kSuccess;
}
CUresult cuMemFreeAsync(uintptr_t p, void *) {
  auto it = live.find(p);
  if (it == live.end())
    return kInvalidValue;
  used -= it->second;
  live.erase(it);
  std::free(reinterpret_cast<void *>(p));
  return kSuccess;
}
CUresult cuDeviceGetDefaultMemPool(void **pool, int) {
  *pool = &dummy;
  return kSuccess;
}
CUresult cuMemPoolGetAttribute(void *, int attr, void *value) {
  if (attr == 8)
    *static_cast<uint64_t *>(value) = usedHigh;
  return kSuccess;
}
CUresult cuMemPoolSetAttribute(void *, int attr, void *value) {
  // Resetting the high-water mark (the only value CUDA accepts is 0)
  // restarts it from the memory in use.
  if (attr == 8 && *static_cast<uint64_t *>(value) == 0)
    usedHigh = used;
  return kSuccess;
}
CUresult cuMemcpyHtoD_v2(uintptr_t dst, const void *src, size_t n) {
  std::memcpy(reinterpret_cast<void *>(dst), src, n);
  return kSuccess;
}
CUresult cuMemcpyDtoH_v2(void *dst, uintptr_t src, size_t n) {
  std::memcpy(dst, reinterpret_cast<const void *>(src), n);
  return kSuccess;
}
CUresult cuMemcpyAsync(uintptr_t dst, uintptr_t src, size_t n, void *) {
  std::memcpy(reinterpret_cast<void *>(dst),
              reinterpret_cast<const void *>(src), n);
  return kSuccess;
}
CUresult cuMemsetD32Async(uintptr_t dst, unsigned v, size_t n, void *) {
  for (size_t i = 0; i < n; ++i)
    reinterpret_cast<unsigned *>(dst)[i] = v;
  return kSuccess;
}
CUresult cuMemsetD16Async(uintptr_t dst, unsigned short v, size_t n, void *) {
  for (size_t i = 0; i < n; ++i)
    reinterpret_cast<unsigned short *>(dst)[i] = v;
  return kSuccess;
}
CUresult cuStreamCreate(void **s, unsigned) {
  *s = &dummy;
  return kSuccess;
}
CUresult cuStreamDestroy_v2(void *) { return kSuccess; }
CUresult cuStreamSynchronize(void *) { return kSuccess; }
CUresult cuStreamWaitEvent(void *, void *, unsigned) { return kSuccess; }
CUresult cuEventCreate(void **e, unsigned) {
  *e = &dummy;
  return kSuccess;
}
CUresult cuEventRecord(void *, void *) { return kSuccess; }
CUresult cuEventSynchronize(void *) { return kSuccess; }
CUresult cuEventElapsedTime_v2(float *ms, void *, void *) {
  *ms = 0;
  return kSuccess;
}
CUresult cuModuleLoadData(void **m, const void *image) {
  // A fatbin starts with its magic 0xba55ed50; a cubin is an ELF file.
  uint32_t magic;
  std::memcpy(&magic, image, 4);
  if (magic != 0xba55ed50u && std::memcmp(image,
                                          "\x7f"
                                          "ELF",
                                          4) != 0)
    return 200; // CUDA_ERROR_INVALID_IMAGE
  *m = &dummy;
  return kSuccess;
}
CUresult cuModuleUnload(void *) { return kSuccess; }
CUresult cuModuleGetFunction(void **f, void *, const char *) {
  *f = &dummy;
  return kSuccess;
}
CUresult cuLaunchKernel(void *, unsigned, unsigned, unsigned, unsigned,
                        unsigned, unsigned, unsigned, void *, void **,
                        void **) {
  ++launches;
  return std::getenv("FAKE_CUDA_FAIL_LAUNCH") ? kLaunchFailed : kSuccess;
}
CUresult cuGetErrorName(CUresult r, const char **name) {
  *name = r == kOutOfMemory    ? "CUDA_ERROR_OUT_OF_MEMORY"
          : r == kLaunchFailed ? "CUDA_ERROR_LAUNCH_FAILED"
          : r == 200           ? "CUDA_ERROR_INVALID_IMAGE"
                               : "CUDA_ERROR_UNKNOWN";
  return kSuccess;
}
CUresult cuGetErrorString(CUresult, const char **text) {
  *text = "reported by the fake driver";
  return kSuccess;
}
} // extern "C"

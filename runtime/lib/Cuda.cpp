//===- Cuda.cpp - The mgpu* functions on the CUDA driver API --------------===//
//
// Host code lowered by upstream's gpu-to-llvm calls mgpu* functions, which
// Debian's MLIR does not ship for CUDA. These implement them on the driver
// API, loaded with dlopen so that remat-run builds and starts on machines
// without the NVIDIA driver (it then says so when a step needs a GPU).
//
// Every device byte a step holds comes from mgpuMemAlloc or
// remat_cuda_alloc, both stream-ordered allocations from the device's
// default memory pool: the runtime counts the requested bytes (the figure the
// compiler predicts), and the pool's own high-water mark is a cross-check
// from the driver. Errors inside a step cannot be returned through the
// compiled code, so they end the process with a message.
//
//===----------------------------------------------------------------------===//

#include "remat/Runtime.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace {
// The few driver API types and constants used, so that no CUDA header is
// needed to build (values from CUDA 13's cuda.h, stable since CUDA 11.2).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;
using CUmemoryPool = struct CUmemPoolHandle_st *;
constexpr CUresult kSuccess = 0, kOutOfMemory = 2;
constexpr int kAttrCCMajor = 75, kAttrCCMinor = 76, kAttrPools = 115;
constexpr int kPoolReleaseThreshold = 4, kPoolUsedHigh = 8;

struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int *);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuMemGetInfo)(size_t *, size_t *);
  CUresult (*cuMemAllocAsync)(CUdeviceptr *, size_t, CUstream);
  CUresult (*cuMemFreeAsync)(CUdeviceptr, CUstream);
  CUresult (*cuDeviceGetDefaultMemPool)(CUmemoryPool *, CUdevice);
  CUresult (*cuMemPoolGetAttribute)(CUmemoryPool, int, void *);
  CUresult (*cuMemPoolSetAttribute)(CUmemoryPool, int, void *);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
  CUresult (*cuMemsetD16Async)(CUdeviceptr, unsigned short, size_t, CUstream);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUstream, void **,
                             void **);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
};

struct State {
  Driver d{};
  bool ready = false;
  CUdevice device = 0;
  CUmemoryPool pool = nullptr;
  std::mutex mutex;
  std::unordered_map<CUdeviceptr, size_t> sizes;
  int64_t current = 0, peak = 0, allocations = 0, frees = 0;
  std::map<std::pair<CUmodule, const char *>, CUfunction> functions;
  // Events around the last step: recorded when the step creates its stream
  // and before it synchronizes it.
  CUstream stepStream = nullptr;
  CUevent start = nullptr, end = nullptr;
  double lastStepMs = -1;
  // Kernel profiling (remat_cuda_set_profiling): launches of the current
  // step waiting for their times, two events each, and the totals.
  struct Launch {
    CUfunction function;
    unsigned grid, block;
  };
  struct KernelTotal {
    double ms = 0;
    int64_t launches = 0;
  };
  bool profiling = false;
  std::map<CUfunction, std::string> names;
  std::vector<CUevent> launchEvents;
  std::vector<Launch> launches;
  std::map<std::tuple<std::string, unsigned, unsigned>, KernelTotal> kernels;
};

State &state() {
  // Never destroyed: the step library's destructor unloads its module after
  // the exit handlers that would destroy a plain static have run.
  static State *s = new State;
  return *s;
}

std::string errorText(CUresult r) {
  const char *name = nullptr, *text = nullptr;
  Driver &d = state().d;
  if (d.cuGetErrorName)
    d.cuGetErrorName(r, &name);
  if (d.cuGetErrorString)
    d.cuGetErrorString(r, &text);
  return std::string(name ? name : "CUDA error") + " (" + std::to_string(r) +
         (text ? std::string(": ") + text : std::string()) + ")";
}

[[noreturn]] void fatal(const char *fmt, ...) {
  std::fflush(stdout);
  std::fprintf(stderr, "remat-run: error: ");
  va_list args;
  va_start(args, fmt);
  std::vfprintf(stderr, fmt, args);
  va_end(args);
  std::fprintf(stderr, "\n");
  std::_Exit(1);
}

void check(CUresult r, const char *call) {
  if (r != kSuccess)
    fatal("CUDA: %s failed: %s", call, errorText(r).c_str());
}

void requireReady(const char *what) {
  if (!state().ready && std::strcmp(remat_rt_target(), "cpu") == 0)
    fatal("the step's library holds CUDA device code, but its manifest "
          "says target 'cpu'");
  if (!state().ready)
    fatal("%s before the CUDA runtime was initialized (a CUDA step loaded "
          "outside remat-run?)",
          what);
}

void notePeak(State &s) {
  if (s.current > s.peak)
    s.peak = s.current;
}

void *allocate(size_t bytes, CUstream stream) {
  State &s = state();
  requireReady("device allocation");
  CUdeviceptr p = 0;
  int64_t cap = remat_rt_memory_cap();
  if (cap >= 0 && s.current + static_cast<int64_t>(bytes) > cap)
    fatal("out of device memory: the step asked for %zu bytes with %lld "
          "bytes of its own allocated (over --memory-cap %lld)",
          bytes, static_cast<long long>(s.current),
          static_cast<long long>(cap));
  // Zero-byte buffers (empty tensors) still need a distinct pointer.
  CUresult r = s.d.cuMemAllocAsync(&p, bytes ? bytes : 1, stream);
  if (r == kOutOfMemory) {
    size_t freeBytes = 0, total = 0;
    s.d.cuMemGetInfo(&freeBytes, &total);
    fatal("out of device memory: the step asked for %zu bytes with %lld "
          "bytes of its own allocated (the GPU has %zu of %zu bytes free); "
          "compile with a lower --memory-limit",
          bytes, static_cast<long long>(s.current), freeBytes, total);
  }
  check(r, "cuMemAllocAsync");
  std::lock_guard<std::mutex> lock(s.mutex);
  s.sizes[p] = bytes;
  s.current += static_cast<int64_t>(bytes);
  ++s.allocations;
  notePeak(s);
  return reinterpret_cast<void *>(p);
}

void release(void *ptr, CUstream stream) {
  if (!ptr)
    return;
  State &s = state();
  requireReady("device free");
  auto p = reinterpret_cast<CUdeviceptr>(ptr);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.sizes.find(p);
    if (it == s.sizes.end())
      fatal("CUDA: free of %p, which the runtime did not allocate", ptr);
    s.current -= static_cast<int64_t>(it->second);
    ++s.frees;
    s.sizes.erase(it);
  }
  check(s.d.cuMemFreeAsync(p, stream), "cuMemFreeAsync");
}

template <typename F> bool load(void *lib, F &fn, const char *name) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  return fn != nullptr;
}
} // namespace

extern "C" {

int remat_cuda_init(int ordinal, char *error, size_t errorSize) {
  State &s = state();
  auto fail = [&](const std::string &msg) {
    std::snprintf(error, errorSize, "%s", msg.c_str());
    return -1;
  };
  if (s.ready)
    return 0;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!lib)
    return fail("the NVIDIA driver's libcuda.so.1 cannot be loaded (" +
                std::string(dlerror()) + ")");
  Driver &d = s.d;
  bool ok =
      load(lib, d.cuInit, "cuInit") &&
      load(lib, d.cuDriverGetVersion, "cuDriverGetVersion") &&
      load(lib, d.cuDeviceGetCount, "cuDeviceGetCount") &&
      load(lib, d.cuDeviceGet, "cuDeviceGet") &&
      load(lib, d.cuDeviceGetName, "cuDeviceGetName") &&
      load(lib, d.cuDeviceGetAttribute, "cuDeviceGetAttribute") &&
      load(lib, d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
      load(lib, d.cuCtxSetCurrent, "cuCtxSetCurrent") &&
      load(lib, d.cuMemGetInfo, "cuMemGetInfo_v2") &&
      load(lib, d.cuMemAllocAsync, "cuMemAllocAsync") &&
      load(lib, d.cuMemFreeAsync, "cuMemFreeAsync") &&
      load(lib, d.cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool") &&
      load(lib, d.cuMemPoolGetAttribute, "cuMemPoolGetAttribute") &&
      load(lib, d.cuMemPoolSetAttribute, "cuMemPoolSetAttribute") &&
      load(lib, d.cuMemcpyHtoD, "cuMemcpyHtoD_v2") &&
      load(lib, d.cuMemcpyDtoH, "cuMemcpyDtoH_v2") &&
      load(lib, d.cuMemcpyAsync, "cuMemcpyAsync") &&
      load(lib, d.cuMemsetD32Async, "cuMemsetD32Async") &&
      load(lib, d.cuMemsetD16Async, "cuMemsetD16Async") &&
      load(lib, d.cuCtxSynchronize, "cuCtxSynchronize") &&
      load(lib, d.cuStreamCreate, "cuStreamCreate") &&
      load(lib, d.cuStreamDestroy, "cuStreamDestroy_v2") &&
      load(lib, d.cuStreamSynchronize, "cuStreamSynchronize") &&
      load(lib, d.cuEventCreate, "cuEventCreate") &&
      load(lib, d.cuEventRecord, "cuEventRecord") &&
      load(lib, d.cuEventSynchronize, "cuEventSynchronize") &&
      (load(lib, d.cuEventElapsedTime, "cuEventElapsedTime_v2") ||
       load(lib, d.cuEventElapsedTime, "cuEventElapsedTime")) &&
      load(lib, d.cuStreamWaitEvent, "cuStreamWaitEvent") &&
      load(lib, d.cuModuleLoadData, "cuModuleLoadData") &&
      load(lib, d.cuModuleUnload, "cuModuleUnload") &&
      load(lib, d.cuModuleGetFunction, "cuModuleGetFunction") &&
      load(lib, d.cuLaunchKernel, "cuLaunchKernel") &&
      load(lib, d.cuGetErrorName, "cuGetErrorName") &&
      load(lib, d.cuGetErrorString, "cuGetErrorString");
  if (!ok)
    return fail("libcuda.so.1 lacks driver API functions this runtime needs "
                "(CUDA 11.2 or newer): " +
                std::string(dlerror() ? dlerror() : "a symbol is missing"));
  if (CUresult r = d.cuInit(0); r != kSuccess)
    return fail("cuInit failed: " + errorText(r) +
                (r == 34 ? "; this is the CUDA toolkit's stub libcuda, not "
                           "a driver"
                         : ""));
  int count = 0;
  if (CUresult r = d.cuDeviceGetCount(&count); r != kSuccess || count == 0)
    return fail("no CUDA device is visible");
  if (ordinal < 0 || ordinal >= count)
    return fail("device " + std::to_string(ordinal) + " does not exist (" +
                std::to_string(count) + " visible)");
  CUcontext ctx = nullptr;
  int pools = 0;
  if (CUresult r = d.cuDeviceGet(&s.device, ordinal); r != kSuccess)
    return fail("cuDeviceGet failed: " + errorText(r));
  // CUDA 13 changed cuCtxCreate; the primary context is what the runtime
  // API would use too.
  if (CUresult r = d.cuDevicePrimaryCtxRetain(&ctx, s.device); r != kSuccess)
    return fail("cuDevicePrimaryCtxRetain failed: " + errorText(r));
  if (CUresult r = d.cuCtxSetCurrent(ctx); r != kSuccess)
    return fail("cuCtxSetCurrent failed: " + errorText(r));
  d.cuDeviceGetAttribute(&pools, kAttrPools, s.device);
  if (!pools)
    return fail("the device does not support stream-ordered allocation");
  if (CUresult r = d.cuDeviceGetDefaultMemPool(&s.pool, s.device);
      r != kSuccess)
    return fail("cuDeviceGetDefaultMemPool failed: " + errorText(r));
  // Keep freed memory in the pool between steps instead of returning it to
  // the driver at every synchronization: allocation stays cheap, and the
  // byte counts are unaffected.
  unsigned long long keep = ~0ULL;
  d.cuMemPoolSetAttribute(s.pool, kPoolReleaseThreshold, &keep);
  d.cuEventCreate(&s.start, 0);
  d.cuEventCreate(&s.end, 0);
  s.ready = true;
  return 0;
}

void remat_cuda_get_device(remat_cuda_device *info) {
  State &s = state();
  requireReady("device query");
  std::memset(info, 0, sizeof(*info));
  s.d.cuDeviceGetName(info->name, sizeof(info->name) - 1, s.device);
  s.d.cuDeviceGetAttribute(&info->ccMajor, kAttrCCMajor, s.device);
  s.d.cuDeviceGetAttribute(&info->ccMinor, kAttrCCMinor, s.device);
  s.d.cuDriverGetVersion(&info->driverVersion);
  size_t freeBytes = 0, total = 0;
  s.d.cuMemGetInfo(&freeBytes, &total);
  info->freeBytes = static_cast<int64_t>(freeBytes);
  info->totalBytes = static_cast<int64_t>(total);
}

void *remat_cuda_alloc(size_t bytes) {
  void *p = allocate(bytes, nullptr);
  check(state().d.cuStreamSynchronize(nullptr), "cuStreamSynchronize");
  return p;
}

void remat_cuda_free(void *ptr) {
  release(ptr, nullptr);
  check(state().d.cuStreamSynchronize(nullptr), "cuStreamSynchronize");
}

void remat_cuda_upload(void *dst, const void *src, size_t bytes) {
  requireReady("upload");
  check(state().d.cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(dst), src, bytes),
        "cuMemcpyHtoD");
}

void remat_cuda_download(void *dst, const void *src, size_t bytes) {
  requireReady("download");
  check(state().d.cuMemcpyDtoH(dst, reinterpret_cast<CUdeviceptr>(src), bytes),
        "cuMemcpyDtoH");
}

void remat_cuda_get_stats(remat_rt_stats *stats) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  stats->currentBytes = s.current;
  stats->peakBytes = s.peak;
  stats->allocations = s.allocations;
  stats->frees = s.frees;
}

void remat_cuda_reset_peak(void) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.peak = s.current;
}

int64_t remat_cuda_pool_used_high(void) {
  State &s = state();
  unsigned long long high = 0;
  if (!s.ready ||
      s.d.cuMemPoolGetAttribute(s.pool, kPoolUsedHigh, &high) != kSuccess)
    return -1;
  return static_cast<int64_t>(high);
}

void remat_cuda_reset_pool_high(void) {
  State &s = state();
  unsigned long long zero = 0;
  if (s.ready)
    s.d.cuMemPoolSetAttribute(s.pool, kPoolUsedHigh, &zero);
}

double remat_cuda_last_step_device_ms(void) { return state().lastStepMs; }

void remat_cuda_set_profiling(int on) { state().profiling = on != 0; }

void remat_cuda_print_profile(int top, int steps) {
  State &s = state();
  using Entry = decltype(s.kernels)::const_iterator;
  std::vector<Entry> rows;
  double total = 0;
  for (auto it = s.kernels.begin(); it != s.kernels.end(); ++it) {
    rows.push_back(it);
    total += it->second.ms;
  }
  std::sort(rows.begin(), rows.end(),
            [](Entry a, Entry b) { return a->second.ms > b->second.ms; });
  double per = 1.0 / std::max(steps, 1);
  std::fprintf(stderr,
               "kernel profile, per step over %d steps: %.3f ms in %zu "
               "kernels and shapes\n%10s %8s %8s %17s %s\n",
               steps, total * per, rows.size(), "ms", "share%", "launches",
               "blocks x threads", "kernel");
  for (size_t i = 0; i < rows.size() && static_cast<int>(i) < top; ++i) {
    const auto &[name, grid, block] = rows[i]->first;
    const State::KernelTotal &t = rows[i]->second;
    std::fprintf(stderr, "%10.3f %8.2f %8lld %9u x %-5u %s\n", t.ms * per,
                 total > 0 ? 100 * t.ms / total : 0.0,
                 static_cast<long long>(t.launches) / std::max(steps, 1), grid,
                 block, name.c_str());
  }
}

// The functions upstream's gpu-to-llvm lowering calls (the signatures of
// MLIR's CudaRuntimeWrappers.cpp).

void *mgpuModuleLoad(void *data, size_t /*size*/) {
  requireReady("module load");
  CUmodule module = nullptr;
  check(state().d.cuModuleLoadData(&module, data), "cuModuleLoadData");
  return module;
}

void mgpuModuleUnload(void *module) {
  State &s = state();
  if (!s.ready)
    return;
  for (auto it = s.functions.begin(); it != s.functions.end();)
    it = it->first.first == module ? s.functions.erase(it) : std::next(it);
  s.d.cuModuleUnload(static_cast<CUmodule>(module));
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  State &s = state();
  requireReady("kernel lookup");
  auto key = std::make_pair(static_cast<CUmodule>(module), name);
  auto it = s.functions.find(key);
  if (it != s.functions.end())
    return it->second;
  CUfunction f = nullptr;
  check(s.d.cuModuleGetFunction(&f, key.first, name), "cuModuleGetFunction");
  s.functions[key] = f;
  s.names[f] = name;
  return f;
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t /*paramsCount*/) {
  State &s = state();
  size_t first = 2 * s.launches.size();
  if (s.profiling) {
    while (s.launchEvents.size() < first + 2) {
      CUevent e = nullptr;
      check(s.d.cuEventCreate(&e, 0), "cuEventCreate");
      s.launchEvents.push_back(e);
    }
    s.d.cuEventRecord(s.launchEvents[first], static_cast<CUstream>(stream));
  }
  check(s.d.cuLaunchKernel(static_cast<CUfunction>(function), gridX, gridY,
                           gridZ, blockX, blockY, blockZ, smem,
                           static_cast<CUstream>(stream), params, extra),
        "cuLaunchKernel");
  if (s.profiling) {
    s.d.cuEventRecord(s.launchEvents[first + 1], static_cast<CUstream>(stream));
    s.launches.push_back({static_cast<CUfunction>(function),
                          static_cast<unsigned>(gridX * gridY * gridZ),
                          static_cast<unsigned>(blockX * blockY * blockZ)});
  }
}

void *mgpuStreamCreate() {
  State &s = state();
  requireReady("stream creation");
  CUstream stream = nullptr;
  check(s.d.cuStreamCreate(&stream, 0), "cuStreamCreate");
  s.stepStream = stream;
  s.d.cuEventRecord(s.start, stream);
  return stream;
}

void mgpuStreamDestroy(void *stream) {
  State &s = state();
  if (stream == s.stepStream)
    s.stepStream = nullptr;
  check(s.d.cuStreamDestroy(static_cast<CUstream>(stream)), "cuStreamDestroy");
}

void mgpuStreamSynchronize(void *stream) {
  State &s = state();
  bool timed = stream && stream == s.stepStream;
  if (timed)
    s.d.cuEventRecord(s.end, static_cast<CUstream>(stream));
  check(s.d.cuStreamSynchronize(static_cast<CUstream>(stream)),
        "cuStreamSynchronize (a kernel of the step failed)");
  if (timed) {
    float ms = 0;
    if (s.d.cuEventElapsedTime(&ms, s.start, s.end) == kSuccess)
      s.lastStepMs = ms;
  }
  for (size_t i = 0; i < s.launches.size(); ++i) {
    float ms = 0;
    s.d.cuEventElapsedTime(&ms, s.launchEvents[2 * i],
                           s.launchEvents[2 * i + 1]);
    const State::Launch &l = s.launches[i];
    State::KernelTotal &t = s.kernels[{s.names[l.function], l.grid, l.block}];
    t.ms += ms;
    ++t.launches;
  }
  s.launches.clear();
}

void *mgpuMemAlloc(uint64_t bytes, void *stream, bool isHostShared) {
  if (isHostShared)
    fatal("CUDA: host-shared allocations are not supported");
  return allocate(bytes, static_cast<CUstream>(stream));
}

void mgpuMemFree(void *ptr, void *stream) {
  release(ptr, static_cast<CUstream>(stream));
}

void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream) {
  check(state().d.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                                reinterpret_cast<CUdeviceptr>(src), bytes,
                                static_cast<CUstream>(stream)),
        "cuMemcpyAsync");
}

void mgpuMemset32(void *dst, unsigned value, size_t count, void *stream) {
  check(state().d.cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value,
                                   count, static_cast<CUstream>(stream)),
        "cuMemsetD32Async");
}

void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream) {
  check(state().d.cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value,
                                   count, static_cast<CUstream>(stream)),
        "cuMemsetD16Async");
}

void mgpuSetDefaultDevice(int32_t /*device*/) {}

// Events, for steps whose async regions join more than one stream.
void *mgpuEventCreate() {
  CUevent event = nullptr;
  check(state().d.cuEventCreate(&event, 0), "cuEventCreate");
  return event;
}
void mgpuEventDestroy(void *event) {
  (void)event; // Events are few; the context's teardown reclaims them.
}
void mgpuEventSynchronize(void *event) {
  check(state().d.cuEventSynchronize(static_cast<CUevent>(event)),
        "cuEventSynchronize");
}
void mgpuStreamWaitEvent(void *stream, void *event) {
  check(state().d.cuStreamWaitEvent(static_cast<CUstream>(stream),
                                    static_cast<CUevent>(event), 0),
        "cuStreamWaitEvent");
}
void mgpuEventRecord(void *event, void *stream) {
  check(state().d.cuEventRecord(static_cast<CUevent>(event),
                                static_cast<CUstream>(stream)),
        "cuEventRecord");
}

} // extern "C"

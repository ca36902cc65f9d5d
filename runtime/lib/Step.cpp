//===- Step.cpp - Loading and running a compiled step ---------------------===//

#include "remat/Step.h"

#include "NarrowFloat.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <limits>
#include <sstream>

using namespace remat;
using namespace remat::narrow;

namespace {
std::string dirOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

/// A cubin runs on its own chip's major version with an equal or newer
/// minor; the fatbin's PTX lets the driver compile for newer chips. Chips
/// with an 'a' suffix run only on that exact chip.
bool checkChip(const Manifest &m, const std::string &path,
               const remat_cuda_device &gpu, std::string &error) {
  char suffix = 0;
  std::string digits = m.chip.substr(m.chip.rfind('_') + 1);
  if (!digits.empty() &&
      std::isalpha(static_cast<unsigned char>(digits.back()))) {
    suffix = digits.back();
    digits.pop_back();
  }
  if (digits.size() < 2 || m.chip.rfind("sm_", 0) != 0 ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    error = "manifest '" + path + "': chip '" + m.chip + "' is not sm_XY";
    return false;
  }
  int major = std::stoi(digits.substr(0, digits.size() - 1));
  int minor = digits.back() - '0';
  int have = gpu.ccMajor * 10 + gpu.ccMinor, need = major * 10 + minor;
  if (have >= need && (!suffix || have == need))
    return true;
  std::string sm =
      "sm_" + std::to_string(gpu.ccMajor) + std::to_string(gpu.ccMinor);
  error = "'" + path + "' was compiled for " + m.chip + "; the GPU '" +
          gpu.name + "' is " + sm + " (recompile with --chip=" + sm + ")";
  return false;
}

void freeAll(std::vector<void *> ptrs) {
  std::sort(ptrs.begin(), ptrs.end());
  ptrs.erase(std::unique(ptrs.begin(), ptrs.end()), ptrs.end());
  for (void *p : ptrs)
    remat_rt_free(p);
}
} // namespace

std::unique_ptr<Step> Step::load(const std::string &manifestPath,
                                 std::string &error) {
  std::unique_ptr<Step> step(new Step());
  step->path = manifestPath;
  if (!step->init(error))
    return nullptr;
  return step;
}

bool Step::init(std::string &error) {
  std::ifstream in(path);
  if (!in) {
    error = "cannot open manifest '" + path + "'";
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  if (!parseManifest(text.str(), m, error)) {
    error = "manifest '" + path + "': " + error;
    return false;
  }
  cuda = m.target == "cuda";
  std::string library =
      m.library[0] == '/' ? m.library : dirOf(path) + "/" + m.library;
  // A CUDA step loads its kernels when the library is opened: the driver
  // must be up first.
  remat_rt_set_target(m.target.c_str());
  if (cuda) {
    char why[512];
    if (remat_cuda_init(0, why, sizeof(why)) != 0) {
      error = "'" + path + "' is a CUDA step (" + m.chip +
              ") and no GPU can be used here: " + why;
      return false;
    }
    remat_cuda_get_device(&gpu);
    if (!checkChip(m, path, gpu, error))
      return false;
  }
  handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    error = "cannot load '" + library + "': " + dlerror();
    return false;
  }
  entry = reinterpret_cast<void (*)(void **)>(dlsym(handle, m.entry.c_str()));
  auto signature = reinterpret_cast<const char *const *>(
      dlsym(handle, "remat_step_signature"));
  if (!entry || !signature) {
    error = "'" + library + "' is not a step compiled by remat-compile (no '" +
            m.entry + "' or 'remat_step_signature')";
    return false;
  }
  auto builtFor =
      reinterpret_cast<const char *const *>(dlsym(handle, "remat_step_target"));
  if (builtFor && m.target != *builtFor) {
    error = "manifest '" + path + "' is for target '" + m.target + "' but '" +
            library + "' was compiled for '" + *builtFor + "'";
    return false;
  }
  if (m.signature != *signature) {
    error = "manifest '" + path + "' does not match '" + library +
            "': the library was compiled for " + *signature +
            " but the manifest describes " + m.signature;
    return false;
  }

  for (const TensorSpec &t : m.arguments) {
    void *p = cuda ? std::malloc(std::max<size_t>(t.bytes(), 1))
                   : remat_rt_alloc(t.bytes());
    if (!p) {
      error = "out of memory allocating argument '" + t.name + "'";
      return false;
    }
    buffers.push_back(p);
    if (cuda)
      deviceBuffers.push_back(remat_cuda_alloc(t.bytes()));
  }
  size_t words = 0;
  for (const TensorSpec &t : m.results)
    words += t.descriptorWords();
  resultWords.assign(words, 0);
  for (size_t i = 0; i < m.arguments.size(); ++i) {
    const TensorSpec &t = m.arguments[i];
    std::vector<int64_t> d(t.descriptorWords(), 0);
    d[0] = d[1] = static_cast<int64_t>(
        reinterpret_cast<intptr_t>(cuda ? deviceBuffers[i] : buffers[i]));
    int64_t stride = 1;
    size_t rank = t.shape.size();
    for (size_t k = rank; k-- > 0;) {
      d[3 + k] = t.shape[k];
      d[3 + rank + k] = stride;
      stride *= t.shape[k];
    }
    descriptors.push_back(std::move(d));
  }
  return true;
}

Step::~Step() {
  releaseResults();
  for (void *p : buffers)
    cuda ? std::free(p) : remat_rt_free(p);
  for (void *p : deviceBuffers)
    remat_cuda_free(p);
}

bool Step::bindArgument(size_t i, void *data, size_t bytes,
                        std::string &error) {
  if (i >= m.arguments.size()) {
    error = "argument index " + std::to_string(i) +
            " out of range: the step has " +
            std::to_string(m.arguments.size()) + " arguments";
    return false;
  }
  const TensorSpec &t = m.arguments[i];
  if (data && bytes != t.bytes()) {
    error = "argument '" + t.name + "' (" + t.describe() + ") needs " +
            std::to_string(t.bytes()) + " bytes, got " + std::to_string(bytes);
    return false;
  }
  void *target = data ? data : (cuda ? deviceBuffers[i] : buffers[i]);
  descriptors[i][0] = descriptors[i][1] =
      static_cast<int64_t>(reinterpret_cast<intptr_t>(target));
  return true;
}

void Step::upload() {
  for (size_t i = 0; i < deviceBuffers.size(); ++i)
    remat_cuda_upload(deviceBuffers[i], buffers[i], m.arguments[i].bytes());
}

void Step::download() {
  for (size_t i = 0; i < deviceBuffers.size(); ++i)
    remat_cuda_download(buffers[i], deviceBuffers[i], m.arguments[i].bytes());
}

double Step::run(double *ms, std::vector<void *> *keep) {
  // A step without results (an update step) takes no result pointer.
  std::vector<void *> packed;
  if (!m.results.empty())
    packed.push_back(resultWords.data());
  for (auto &d : descriptors)
    packed.push_back(d.data());
  auto t0 = std::chrono::steady_clock::now();
  entry(packed.data());
  auto t1 = std::chrono::steady_clock::now();
  if (ms)
    *ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  std::vector<void *> allocated, aligned;
  size_t w = 0;
  for (const TensorSpec &t : m.results) {
    allocated.push_back(reinterpret_cast<void *>(resultWords[w]));
    aligned.push_back(reinterpret_cast<void *>(resultWords[w + 1]));
    w += t.descriptorWords();
  }
  if (cuda) {
    // Results are device buffers: read them back and free them now. Kept
    // results get their own copies, which later steps leave alone.
    auto &copies = keep ? keptResults : hostResults;
    copies.resize(m.results.size());
    for (size_t r = 0; r < m.results.size(); ++r) {
      copies[r].resize(m.results[r].bytes());
      remat_cuda_download(copies[r].data(), aligned[r], m.results[r].bytes());
      aligned[r] = copies[r].data();
    }
    std::sort(allocated.begin(), allocated.end());
    allocated.erase(std::unique(allocated.begin(), allocated.end()),
                    allocated.end());
    for (void *p : allocated)
      remat_cuda_free(p);
    allocated.clear();
  }
  double loss = m.results.empty() ? std::numeric_limits<double>::quiet_NaN()
                                  : readScalar(m.results[0], aligned[0]);
  if (keep) {
    *keep = aligned;
    pendingFree = allocated;
  } else {
    freeAll(allocated);
  }
  return loss;
}

void Step::releaseResults() {
  freeAll(pendingFree);
  pendingFree.clear();
}

uint64_t remat::splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// Element `i` of a floating-point tensor set to `v`.
static void writeScalar(const TensorSpec &t, void *data, double v,
                        int64_t i = 0) {
  if (t.dtype == "f64")
    static_cast<double *>(data)[i] = v;
  else if (t.dtype == "f16")
    static_cast<uint16_t *>(data)[i] = toF16(static_cast<float>(v));
  else if (t.dtype == "bf16")
    static_cast<uint16_t *>(data)[i] = toBF16(static_cast<float>(v));
  else
    static_cast<float *>(data)[i] = static_cast<float>(v);
}

void remat::fillDeterministic(const TensorSpec &t, void *data, uint64_t seed,
                              size_t index) {
  uint64_t state = seed * 0x100000001b3ULL + index * 0x9e3779b97f4a7c15ULL;
  if (!t.isFloat()) {
    uint64_t range = t.range > 0 ? t.range : (uint64_t(1) << 31);
    for (int64_t i = 0; i < t.numElements(); ++i) {
      int64_t v = static_cast<int64_t>(splitmix64(state) % range);
      if (t.dtype == "i64")
        static_cast<int64_t *>(data)[i] = v;
      else
        static_cast<int32_t *>(data)[i] = static_cast<int32_t>(v);
    }
    return;
  }
  double bound = 1.0;
  if (t.bound >= 0)
    bound = t.bound;
  else if (t.role == "param")
    bound = t.shape.size() >= 2 ? std::sqrt(6.0 / t.shape[0]) : 0.0;
  for (int64_t i = 0; i < t.numElements(); ++i) {
    double u = (splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);
    writeScalar(t, data, t.constant ? *t.constant : (2 * u - 1) * bound, i);
  }
}

double remat::readScalar(const TensorSpec &t, const void *data, int64_t i) {
  if (t.dtype == "f16")
    return fromF16(static_cast<const uint16_t *>(data)[i]);
  if (t.dtype == "bf16")
    return fromBF16(static_cast<const uint16_t *>(data)[i]);
  return t.dtype == "f64" ? static_cast<const double *>(data)[i]
                          : static_cast<const float *>(data)[i];
}

void Step::setHyperparameters(int64_t stepCount, double lr) {
  for (size_t i = 0; i < m.arguments.size(); ++i) {
    const TensorSpec &t = m.arguments[i];
    if (t.role == "step")
      *static_cast<int64_t *>(buffers[i]) = stepCount;
    else if (t.role == "lr" && lr >= 0)
      writeScalar(t, buffers[i], lr);
    else
      continue;
    if (i < deviceBuffers.size())
      remat_cuda_upload(deviceBuffers[i], buffers[i], t.bytes());
  }
}

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

#include "remat/StepC.h"

struct remat_step {
  std::unique_ptr<Step> step;
};

static int fail(char *error, size_t size, const std::string &message) {
  if (error && size) {
    size_t n = std::min(size - 1, message.size());
    std::memcpy(error, message.data(), n);
    error[n] = 0;
  }
  return 1;
}

remat_step *remat_step_open(const char *manifest, char *error,
                            size_t errorSize) {
  std::string why;
  std::unique_ptr<Step> step = Step::load(manifest ? manifest : "", why);
  if (!step) {
    fail(error, errorSize, why);
    return nullptr;
  }
  return new remat_step{std::move(step)};
}

void remat_step_close(remat_step *step) { delete step; }

int64_t remat_step_num_arguments(const remat_step *step) {
  return static_cast<int64_t>(step->step->manifest().arguments.size());
}

void *remat_step_argument(remat_step *step, int64_t index) {
  if (index < 0 || index >= remat_step_num_arguments(step))
    return nullptr;
  return step->step->argument(static_cast<size_t>(index));
}

int remat_step_bind_argument(remat_step *step, int64_t index, void *data,
                             size_t bytes, char *error, size_t errorSize) {
  std::string why;
  if (index < 0 ||
      !step->step->bindArgument(static_cast<size_t>(index), data, bytes, why))
    return fail(error, errorSize,
                why.empty() ? "negative argument index" : why);
  return 0;
}

void remat_step_upload(remat_step *step) { step->step->upload(); }

void remat_step_set_hyperparameters(remat_step *step, int64_t count,
                                    double lr) {
  step->step->setHyperparameters(count, lr);
}
void remat_step_download(remat_step *step) { step->step->download(); }

int remat_step_run(remat_step *step, double *loss, double *milliseconds,
                   char *error, size_t errorSize) {
  double ms = 0;
  double l = step->step->run(&ms);
  if (loss)
    *loss = l;
  if (milliseconds)
    *milliseconds = ms;
  return 0;
}

int remat_step_run_results(remat_step *step, double *loss, double *milliseconds,
                           void **results, int64_t count, char *error,
                           size_t errorSize) {
  const Manifest &m = step->step->manifest();
  if (count != static_cast<int64_t>(m.results.size())) {
    if (error && errorSize)
      std::snprintf(error, errorSize,
                    "the step has %zu results, the caller asked for %lld",
                    m.results.size(), static_cast<long long>(count));
    return 1;
  }
  double ms = 0;
  std::vector<void *> kept;
  double l = step->step->run(&ms, &kept);
  for (int64_t i = 0; i < count; ++i)
    results[i] = kept[i];
  if (loss)
    *loss = l;
  if (milliseconds)
    *milliseconds = ms;
  return 0;
}

void remat_step_release_results(remat_step *step) {
  step->step->releaseResults();
}

static remat_rt_stats statsOf(const remat_step *step) {
  remat_rt_stats stats;
  if (step->step->isCUDA())
    remat_cuda_get_stats(&stats);
  else
    remat_rt_get_stats(&stats);
  return stats;
}

int64_t remat_step_current_bytes(const remat_step *step) {
  return statsOf(step).currentBytes;
}

int64_t remat_step_peak_bytes(const remat_step *step) {
  return statsOf(step).peakBytes;
}

void remat_step_reset_peak(const remat_step *step) {
  if (step->step->isCUDA())
    remat_cuda_reset_peak();
  else
    remat_rt_reset_peak();
}

//===- remat-run.cpp - Run a compiled training step -----------------------===//
//
// Loads the shared object and manifest that remat-compile wrote, fills the
// arguments deterministically from a seed (or from files), runs N steps and
// reports the losses, the median step time and the predicted vs measured
// peak bytes. It links only the C/C++ runtime and Remat's runtime library,
// never MLIR, so it runs wherever the compiled step can.
//
//===----------------------------------------------------------------------===//

#include "Json.h"
#include "NarrowFloat.h"
#include "remat/Runtime.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {
namespace json = remat::json;
using namespace remat::narrow;

struct TensorSpec {
  std::string name, role, dtype;
  std::vector<int64_t> shape;
  int64_t param = -1;
  /// How remat-compile says to fill it: integers uniform in [0, range);
  /// floats uniform in [-bound, bound), or `constant` when set.
  int64_t range = 0;
  double bound = -1;
  std::optional<double> constant;
  bool isFloat() const { return dtype[0] == 'f' || dtype == "bf16"; }
  size_t elementBytes() const {
    if (dtype == "f16" || dtype == "bf16")
      return 2;
    return dtype == "f64" || dtype == "i64" ? 8 : 4;
  }
  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  size_t bytes() const { return numElements() * elementBytes(); }
  /// Words of the memref descriptor: allocated, aligned, offset, sizes,
  /// strides.
  size_t descriptorWords() const { return 3 + 2 * shape.size(); }
};

struct Manifest {
  std::string path, target, chip, library, entry, function, signature, solver;
  std::vector<TensorSpec> arguments, results;
  int64_t predictedPeak = 0, fixedBytes = 0, memoryLimit = -1;
  double predictedCost = 0, baselineCost = 0;
};

[[noreturn]] void die(const std::string &message) {
  std::fprintf(stderr, "remat-run: error: %s\n", message.c_str());
  std::exit(1);
}

std::string describe(const TensorSpec &t) {
  std::string s = t.dtype + "[";
  for (size_t i = 0; i < t.shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(t.shape[i]);
  return s + "]";
}

/// The same canonical signature remat-compile embeds in the shared object.
std::string signatureOf(const Manifest &m) {
  std::string s;
  for (const TensorSpec &t : m.arguments)
    s += describe(t) + ";";
  s += "->";
  for (const TensorSpec &t : m.results)
    s += describe(t) + ";";
  return s;
}

TensorSpec readTensor(const json::Value &v, const std::string &where) {
  if (!v.isObject())
    die(where + " must be an object");
  TensorSpec t;
  auto str = [&](const char *key, bool required) {
    const json::Value *f = v.get(key);
    if (!f || !f->isString()) {
      if (required)
        die(where + ": missing string field '" + key + "'");
      return std::string();
    }
    return f->string;
  };
  t.name = str("name", false);
  t.role = str("role", true);
  t.dtype = str("dtype", true);
  if (t.dtype != "f16" && t.dtype != "bf16" && t.dtype != "f32" &&
      t.dtype != "f64" && t.dtype != "i32" && t.dtype != "i64")
    die(where + ": unsupported dtype '" + t.dtype +
        "' (f16, bf16, f32, f64, i32 or i64)");
  const json::Value *shape = v.get("shape");
  if (!shape || !shape->isArray())
    die(where + ": missing array field 'shape'");
  for (const json::Value &d : shape->array) {
    if (!d.isNumber() || d.number < 1 || d.number != std::floor(d.number))
      die(where + ": shape entries must be positive integers");
    t.shape.push_back(static_cast<int64_t>(d.number));
  }
  if (const json::Value *p = v.get("param"); p && p->isNumber())
    t.param = static_cast<int64_t>(p->number);
  if (const json::Value *r = v.get("range"); r && r->isNumber()) {
    if (t.isFloat() || r->number < 1)
      die(where + ": 'range' must be a positive integer on an integer tensor");
    t.range = static_cast<int64_t>(r->number);
  }
  if (const json::Value *init = v.get("init"); init && init->isObject()) {
    if (const json::Value *b = init->get("uniform"); b && b->isNumber())
      t.bound = b->number;
    if (const json::Value *c = init->get("constant"); c && c->isNumber())
      t.constant = c->number;
  }
  return t;
}

Manifest loadManifest(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    die("cannot open manifest '" + path + "'");
  std::stringstream buffer;
  buffer << in.rdbuf();
  json::Value root;
  std::string error;
  if (!json::parse(buffer.str(), root, error))
    die("manifest '" + path + "' is not valid JSON: " + error);
  if (!root.isObject())
    die("manifest '" + path + "' must be a JSON object");
  Manifest m;
  m.path = path;
  auto str = [&](const char *key) {
    const json::Value *f = root.get(key);
    if (!f || !f->isString())
      die("manifest '" + path + "': missing string field '" + key + "'");
    return f->string;
  };
  auto num = [&](const char *key) {
    const json::Value *f = root.get(key);
    if (!f || !f->isNumber())
      die("manifest '" + path + "': missing number field '" + key + "'");
    return f->number;
  };
  std::string format = str("format");
  if (format != "remat-step/1")
    die("manifest '" + path + "' has format '" + format +
        "'; this remat-run reads 'remat-step/1'");
  m.target = str("target");
  if (m.target != "cpu" && m.target != "cuda")
    die("manifest '" + path + "' is for target '" + m.target +
        "'; remat-run runs steps for the cpu and cuda targets");
  if (m.target == "cuda")
    m.chip = str("chip");
  m.library = str("library");
  m.entry = str("entry");
  m.function = str("function");
  m.signature = str("signature");
  m.predictedPeak = static_cast<int64_t>(num("predicted_peak_bytes"));
  m.fixedBytes = static_cast<int64_t>(num("fixed_bytes"));
  m.predictedCost = num("predicted_cost_flops");
  m.baselineCost = num("baseline_cost_flops");
  if (const json::Value *l = root.get("memory_limit_bytes"); l && l->isNumber())
    m.memoryLimit = static_cast<int64_t>(l->number);
  if (const json::Value *s = root.get("solver"); s && s->isString())
    m.solver = s->string;
  for (const char *key : {"arguments", "results"}) {
    const json::Value *list = root.get(key);
    if (!list || !list->isArray())
      die("manifest '" + path + "': missing array field '" + key + "'");
    for (size_t i = 0; i < list->array.size(); ++i)
      (std::string(key) == "arguments" ? m.arguments : m.results)
          .push_back(readTensor(list->array[i], "manifest '" + path + "' " +
                                                    key + "[" +
                                                    std::to_string(i) + "]"));
  }
  if (m.results.empty() || m.results[0].role != "loss" ||
      !m.results[0].shape.empty())
    die("manifest '" + path + "': the first result must be the scalar loss");
  if (signatureOf(m) != m.signature)
    die("manifest '" + path +
        "': 'signature' does not match its arguments "
        "and results");
  return m;
}

uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// As the manifest says (remat-compile knows each parameter's role: norm
/// weights are ones, biases zeros, weights He-uniform); without a hint,
/// parameters are He-uniform with fan_in the first dimension (vectors zero),
/// floats uniform in [-1, 1) and integers (labels, indices, seeds) uniform
/// in [0, range).
void fillDeterministic(const TensorSpec &t, void *data, uint64_t seed,
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
    double v = t.constant ? *t.constant : (2 * u - 1) * bound;
    if (t.dtype == "f64")
      static_cast<double *>(data)[i] = v;
    else if (t.dtype == "f16")
      static_cast<uint16_t *>(data)[i] = toF16(static_cast<float>(v));
    else if (t.dtype == "bf16")
      static_cast<uint16_t *>(data)[i] = toBF16(static_cast<float>(v));
    else
      static_cast<float *>(data)[i] = static_cast<float>(v);
  }
}

double readScalar(const TensorSpec &t, const void *data, int64_t i = 0) {
  if (t.dtype == "f16")
    return fromF16(static_cast<const uint16_t *>(data)[i]);
  if (t.dtype == "bf16")
    return fromBF16(static_cast<const uint16_t *>(data)[i]);
  return t.dtype == "f64" ? static_cast<const double *>(data)[i]
                          : static_cast<const float *>(data)[i];
}

uint64_t fnv1a(uint64_t h, const void *data, size_t bytes) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < bytes; ++i)
    h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

std::string formatNumber(double v, const std::string &dtype) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), dtype == "f64" ? "%.17g" : "%.9g", v);
  return buf;
}

struct Options {
  std::string manifest;
  int steps = 5;
  int64_t memoryCap = -1;
  uint64_t seed = 0;
  bool json = false, verbose = false;
  int gradCheck = 0;
  /// The number of slowest kernels --profile-kernels prints (0: off).
  int profileKernels = 0;
  /// Central-difference step and relative tolerance of --grad-check; looser
  /// values check a model that rounds through f32 or narrower on the way.
  double gradEps = 1e-6, gradRtol = 1e-6;
  std::string saveParams, saveOutputs, inputsDir, compareOutputs;
  double compareRtol = 1e-4;
  std::map<std::string, std::string> inputs;
};

void usage() {
  std::fprintf(stderr, "usage: remat-run MANIFEST.json [--steps=N] [--seed=S] "
                       "[--input=NAME=FILE]... [--inputs-dir=DIR] "
                       "[--save-params=FILE] [--save-outputs=FILE] "
                       "[--compare-outputs=FILE [--compare-rtol=R]] "
                       "[--memory-cap=BYTES] [--profile-kernels=N] "
                       "[--grad-check=K [--grad-eps=E] [--grad-rtol=R] "
                       "[--verbose]] [--json]\n");
}

Options parseOptions(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char *flag) -> std::string {
      std::string f = std::string(flag) + "=";
      if (a.rfind(f, 0) == 0)
        return a.substr(f.size());
      if (a == flag && i + 1 < argc)
        return argv[++i];
      die(std::string("option ") + flag + " needs a value");
    };
    auto integer = [&](const char *flag, long min) {
      std::string v = value(flag);
      char *end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || n < min)
        die(std::string("option ") + flag + " expects an integer >= " +
            std::to_string(min) + ", got '" + v + "'");
      return n;
    };
    auto positive = [&](const char *flag) {
      std::string v = value(flag);
      char *end = nullptr;
      double x = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !(x > 0) || !std::isfinite(x))
        die(std::string("option ") + flag +
            " expects a positive number, got '" + v + "'");
      return x;
    };
    auto is = [&](const char *flag) {
      return a == flag || a.rfind(std::string(flag) + "=", 0) == 0;
    };
    if (a == "--json")
      o.json = true;
    else if (a == "--verbose")
      o.verbose = true;
    else if (a == "-h" || a == "--help") {
      usage();
      std::exit(0);
    } else if (is("--steps"))
      o.steps = static_cast<int>(integer("--steps", 1));
    else if (is("--memory-cap"))
      o.memoryCap = integer("--memory-cap", 0);
    else if (is("--profile-kernels"))
      o.profileKernels = static_cast<int>(integer("--profile-kernels", 1));
    else if (is("--seed"))
      o.seed = static_cast<uint64_t>(integer("--seed", 0));
    else if (is("--grad-check"))
      o.gradCheck = static_cast<int>(integer("--grad-check", 1));
    else if (is("--grad-eps"))
      o.gradEps = positive("--grad-eps");
    else if (is("--grad-rtol"))
      o.gradRtol = positive("--grad-rtol");
    else if (is("--save-params"))
      o.saveParams = value("--save-params");
    else if (is("--save-outputs"))
      o.saveOutputs = value("--save-outputs");
    else if (is("--compare-outputs"))
      o.compareOutputs = value("--compare-outputs");
    else if (is("--compare-rtol"))
      o.compareRtol = positive("--compare-rtol");
    else if (is("--inputs-dir"))
      o.inputsDir = value("--inputs-dir");
    else if (is("--input")) {
      std::string v = value("--input");
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0)
        die("--input expects NAME=FILE, got '" + v + "'");
      o.inputs[v.substr(0, eq)] = v.substr(eq + 1);
    } else if (!a.empty() && a[0] == '-') {
      usage();
      die("unknown option '" + a + "'");
    } else if (o.manifest.empty())
      o.manifest = a;
    else
      die("more than one manifest given");
  }
  if (o.manifest.empty()) {
    usage();
    die("no manifest given");
  }
  return o;
}

using EntryFn = void (*)(void **);

/// One loaded step with its argument buffers and descriptors. For the CUDA
/// target the arguments live on the device; `argument(i)` is a host copy
/// that upload() and download() keep in step with it.
class Step {
public:
  Step(const Manifest &m, EntryFn entry)
      : m(m), entry(entry), cuda(m.target == "cuda") {
    for (const TensorSpec &t : m.arguments) {
      void *p = cuda ? std::malloc(std::max<size_t>(t.bytes(), 1))
                     : remat_rt_alloc(t.bytes());
      if (!p)
        die("out of memory allocating argument '" + t.name + "'");
      buffers.push_back(p);
      if (cuda)
        device.push_back(remat_cuda_alloc(t.bytes()));
    }
    size_t words = 0;
    for (const TensorSpec &t : m.results)
      words += t.descriptorWords();
    resultWords.assign(words, 0);
    for (size_t i = 0; i < m.arguments.size(); ++i) {
      const TensorSpec &t = m.arguments[i];
      std::vector<int64_t> d(t.descriptorWords(), 0);
      d[0] = d[1] = static_cast<int64_t>(
          reinterpret_cast<intptr_t>(cuda ? device[i] : buffers[i]));
      int64_t stride = 1;
      size_t rank = t.shape.size();
      for (size_t k = rank; k-- > 0;) {
        d[3 + k] = t.shape[k];
        d[3 + rank + k] = stride;
        stride *= t.shape[k];
      }
      descriptors.push_back(std::move(d));
    }
  }
  ~Step() {
    for (void *p : buffers)
      cuda ? std::free(p) : remat_rt_free(p);
    for (void *p : device)
      remat_cuda_free(p);
  }

  void *argument(size_t i) { return buffers[i]; }
  /// Copies the host arguments to the device (CUDA; a no-op on the CPU).
  void upload() {
    for (size_t i = 0; i < device.size(); ++i)
      remat_cuda_upload(device[i], buffers[i], m.arguments[i].bytes());
  }
  /// Copies the device arguments (the updated parameters) back.
  void download() {
    for (size_t i = 0; i < device.size(); ++i)
      remat_cuda_download(buffers[i], device[i], m.arguments[i].bytes());
  }

  /// Runs one step; returns the loss and, when `keep` is given, the data of
  /// every result (the caller frees them with releaseResults).
  double run(double *ms, std::vector<void *> *keep = nullptr) {
    std::vector<void *> packed = {resultWords.data()};
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
      // Results are device buffers: read them back and free them now.
      // Kept results get their own copies, which later steps leave alone.
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
    double loss = readScalar(m.results[0], aligned[0]);
    if (keep) {
      *keep = aligned;
      pendingFree = allocated;
    } else {
      freeAll(allocated);
    }
    return loss;
  }
  void releaseResults() {
    freeAll(pendingFree);
    pendingFree.clear();
  }

private:
  static void freeAll(std::vector<void *> ptrs) {
    std::sort(ptrs.begin(), ptrs.end());
    ptrs.erase(std::unique(ptrs.begin(), ptrs.end()), ptrs.end());
    for (void *p : ptrs)
      remat_rt_free(p);
  }

  const Manifest &m;
  EntryFn entry;
  bool cuda;
  std::vector<void *> buffers, device, pendingFree;
  std::vector<std::vector<char>> hostResults, keptResults;
  std::vector<std::vector<int64_t>> descriptors;
  std::vector<int64_t> resultWords;
};

/// Central differences of the loss against the returned gradients, on `k`
/// parameter elements spread over all parameters.
int gradCheck(const Manifest &m, Step &step, const Options &opts) {
  int k = opts.gradCheck;
  bool json = opts.json, verbose = opts.verbose;
  std::vector<size_t> params;
  for (size_t i = 0; i < m.arguments.size(); ++i)
    if (m.arguments[i].role == "param")
      params.push_back(i);
  std::map<int64_t, size_t> gradResult;
  for (size_t r = 0; r < m.results.size(); ++r)
    if (m.results[r].role == "grad")
      gradResult[m.results[r].param] = r;
  if (params.empty() || gradResult.size() != params.size())
    die("--grad-check needs a step compiled with --return-gradients");
  std::vector<std::vector<char>> saved;
  for (size_t i : params) {
    const char *p = static_cast<const char *>(step.argument(i));
    saved.emplace_back(p, p + m.arguments[i].bytes());
  }
  auto restore = [&]() {
    for (size_t j = 0; j < params.size(); ++j)
      std::memcpy(step.argument(params[j]), saved[j].data(), saved[j].size());
    step.upload();
  };
  // In float32 the central difference is dominated by rounding and by ReLU
  // kinks within the large step it needs; only float64 gives a check that
  // can be held to a tight tolerance.
  for (size_t i : params)
    if (m.arguments[i].dtype != "f64")
      die("--grad-check needs a float64 model (parameter '" +
          m.arguments[i].name + "' is " + m.arguments[i].dtype + ")");
  std::vector<void *> results;
  step.run(nullptr, &results);
  const double eps = opts.gradEps, rtol = opts.gradRtol, atol = 1e-9;
  double worst = 0;
  int failures = 0;
  uint64_t state = 12345;
  for (int s = 0; s < k; ++s) {
    size_t j = s % params.size();
    const TensorSpec &t = m.arguments[params[j]];
    int64_t e = static_cast<int64_t>(splitmix64(state) % t.numElements());
    double analytic = readScalar(t, results[gradResult[j]], e);
    auto lossAt = [&](double delta) {
      restore();
      void *p = step.argument(params[j]);
      static_cast<double *>(p)[e] += delta;
      step.upload();
      return step.run(nullptr);
    };
    double numeric = (lossAt(eps) - lossAt(-eps)) / (2 * eps);
    double err = std::fabs(numeric - analytic);
    double allowed =
        atol + rtol * std::max(std::fabs(numeric), std::fabs(analytic));
    worst = std::max(worst, err / allowed);
    if (verbose)
      std::printf("%s[%" PRId64 "]: analytic %.12g, numeric %.12g\n",
                  t.name.c_str(), e, analytic, numeric);
    if (err > allowed) {
      ++failures;
      std::fprintf(stderr,
                   "gradient mismatch: %s[%" PRId64 "] analytic %.12g, "
                   "numeric %.12g\n",
                   t.name.c_str(), e, analytic, numeric);
    }
  }
  restore();
  step.releaseResults();
  if (json)
    std::printf("{\"grad_check_samples\": %d, \"grad_check_failures\": %d, "
                "\"grad_check_worst_ratio\": %.6g, \"rtol\": %g, "
                "\"atol\": %g}\n",
                k, failures, worst, rtol, atol);
  else
    std::printf("gradient check: %d samples, %d failures (worst error %.3g "
                "of the allowed atol %g + rtol %g)\n",
                k, failures, worst, atol, rtol);
  return failures ? 1 : 0;
}

double medianOf(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string jsonEscape(const std::string &s) {
  std::string out;
  for (char c : s)
    if (c == '"' || c == '\\')
      out += std::string("\\") + c;
    else if (static_cast<unsigned char>(c) >= 0x20)
      out += c;
  return out;
}

/// A cubin runs on its own chip's major version with an equal or newer
/// minor; the fatbin's PTX lets the driver compile for newer chips. Chips
/// with an 'a' suffix run only on that exact chip.
void checkChip(const Manifest &m, const remat_cuda_device &gpu) {
  int major = 0, minor = 0;
  char suffix = 0;
  std::string digits = m.chip.substr(m.chip.rfind('_') + 1);
  if (!digits.empty() &&
      std::isalpha(static_cast<unsigned char>(digits.back()))) {
    suffix = digits.back();
    digits.pop_back();
  }
  if (digits.size() < 2 || m.chip.rfind("sm_", 0) != 0 ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    die("manifest '" + m.path + "': chip '" + m.chip + "' is not sm_XY");
  major = std::stoi(digits.substr(0, digits.size() - 1));
  minor = digits.back() - '0';
  int have = gpu.ccMajor * 10 + gpu.ccMinor, need = major * 10 + minor;
  if (have < need || (suffix && have != need))
    die("'" + m.path + "' was compiled for " + m.chip + "; the GPU '" +
        gpu.name + "' is sm_" + std::to_string(gpu.ccMajor) +
        std::to_string(gpu.ccMinor) + " (recompile with --chip=sm_" +
        std::to_string(gpu.ccMajor) + std::to_string(gpu.ccMinor) + ")");
}

std::string dirOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

} // namespace

/// A failed check in the step (a label or token index out of range) prints
/// its message and aborts; turn that into an error exit.
extern "C" void onAbort(int) {
  std::fflush(stdout);
  const char msg[] = "remat-run: error: the step stopped on a failed check "
                     "(its message is above)\n";
  if (write(2, msg, sizeof(msg) - 1) < 0) {
  }
  _exit(1);
}

int main(int argc, char **argv) {
  std::signal(SIGABRT, onAbort);
  Options opts = parseOptions(argc, argv);
  // Pretend the memory (host or device) is this small: how a step that does
  // not fit fails, testable anywhere.
  remat_rt_set_memory_cap(opts.memoryCap);
  Manifest m = loadManifest(opts.manifest);
  for (auto &[name, file] : opts.inputs) {
    bool found = false;
    for (const TensorSpec &t : m.arguments)
      found |= t.name == name;
    if (!found)
      die("--input names '" + name + "', which is not an argument of '" +
          m.function + "'");
  }

  if (opts.profileKernels && m.target != "cuda")
    die("--profile-kernels times CUDA kernels; '" + opts.manifest + "' is a " +
        m.target + " step");
  std::string library =
      m.library[0] == '/' ? m.library : dirOf(opts.manifest) + "/" + m.library;
  // A CUDA step loads its kernels when the library is opened: the driver
  // must be up first.
  remat_cuda_device gpu{};
  remat_rt_set_target(m.target.c_str());
  if (m.target == "cuda") {
    char error[512];
    if (remat_cuda_init(0, error, sizeof(error)) != 0)
      die("'" + opts.manifest + "' is a CUDA step (" + m.chip +
          ") and no GPU can be used here: " + error);
    remat_cuda_get_device(&gpu);
    checkChip(m, gpu);
  }
  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    die("cannot load '" + library + "': " + dlerror());
  auto entry = reinterpret_cast<EntryFn>(dlsym(handle, m.entry.c_str()));
  auto signature = reinterpret_cast<const char *const *>(
      dlsym(handle, "remat_step_signature"));
  if (!entry || !signature)
    die("'" + library + "' is not a step compiled by remat-compile (no '" +
        m.entry + "' or 'remat_step_signature')");
  auto builtFor =
      reinterpret_cast<const char *const *>(dlsym(handle, "remat_step_target"));
  if (builtFor && m.target != *builtFor)
    die("manifest '" + opts.manifest + "' is for target '" + m.target +
        "' but '" + library + "' was compiled for '" + *builtFor + "'");
  if (m.signature != *signature)
    die("manifest '" + opts.manifest + "' does not match '" + library +
        "': the library was compiled for " + *signature +
        " but the manifest "
        "describes " +
        m.signature);

  Step step(m, entry);
  for (size_t i = 0; i < m.arguments.size(); ++i) {
    const TensorSpec &t = m.arguments[i];
    auto it = opts.inputs.find(t.name);
    // --inputs-dir=DIR reads NAME.bin for each argument that has one there
    // (an exporter's weights); --input=NAME=FILE wins over it.
    std::string file;
    if (it != opts.inputs.end())
      file = it->second;
    else if (!opts.inputsDir.empty() && !t.name.empty() &&
             std::ifstream(opts.inputsDir + "/" + t.name + ".bin").good())
      file = opts.inputsDir + "/" + t.name + ".bin";
    if (file.empty()) {
      fillDeterministic(t, step.argument(i), opts.seed, i);
      continue;
    }
    std::ifstream in(file, std::ios::binary | std::ios::ate);
    if (!in)
      die("cannot open input file '" + file + "'");
    size_t size = static_cast<size_t>(in.tellg());
    if (size != t.bytes())
      die("input file '" + file + "' has " + std::to_string(size) +
          " bytes; argument '" + t.name + "' (" + describe(t) + ") needs " +
          std::to_string(t.bytes()));
    in.seekg(0);
    in.read(static_cast<char *>(step.argument(i)), size);
  }

  step.upload();
  if (opts.gradCheck)
    return gradCheck(m, step, opts);
  if ((!opts.saveOutputs.empty() || !opts.compareOutputs.empty()) &&
      m.results.size() < 2)
    die("--save-outputs and --compare-outputs need a step compiled with "
        "--return-gradients");
  std::vector<char> reference;
  if (!opts.compareOutputs.empty()) {
    std::ifstream in(opts.compareOutputs, std::ios::binary);
    if (!in)
      die("cannot open '" + opts.compareOutputs + "'");
    reference.assign(std::istreambuf_iterator<char>(in), {});
    size_t expected = 0;
    for (size_t i = 1; i < m.results.size(); ++i)
      expected += m.results[i].bytes();
    if (reference.size() != expected)
      die("'" + opts.compareOutputs + "' has " +
          std::to_string(reference.size()) + " bytes; the step's outputs " +
          "after the loss have " + std::to_string(expected));
  }
  // Per output: max |x - ref| / max |ref|, a normwise relative error that
  // near-zero entries cannot blow up.
  double worstError = 0;
  std::string worstOutput;

  bool cuda = m.target == "cuda";
  std::vector<double> losses, times, deviceTimes;
  int64_t measuredPeak = 0, poolPeak = -1;
  if (cuda) {
    remat_cuda_reset_peak();
    remat_cuda_reset_pool_high();
  }
  // Steps compiled with --return-gradients also return every gradient: they
  // are hashed, every step, so that two builds can be compared bit for bit.
  uint64_t outputsHash = 0xcbf29ce484222325ULL;
  bool hashOutputs = m.results.size() > 1;
  // The first step loads the device module: profiles leave it out when
  // there are more.
  int firstProfiled = opts.steps > 1 ? 1 : 0;
  for (int s = 0; s < opts.steps; ++s) {
    double ms;
    std::vector<void *> outputs;
    if (opts.profileKernels && s == firstProfiled)
      remat_cuda_set_profiling(1);
    losses.push_back(step.run(&ms, hashOutputs ? &outputs : nullptr));
    times.push_back(ms);
    if (hashOutputs) {
      for (size_t i = 1; i < m.results.size(); ++i)
        outputsHash = fnv1a(outputsHash, outputs[i], m.results[i].bytes());
      // The last step's outputs (gradients), in result order.
      if (!opts.saveOutputs.empty() && s + 1 == opts.steps) {
        std::ofstream out(opts.saveOutputs, std::ios::binary);
        for (size_t i = 1; i < m.results.size() && out; ++i)
          out.write(static_cast<const char *>(outputs[i]),
                    m.results[i].bytes());
        if (!out)
          die("cannot write '" + opts.saveOutputs + "'");
      }
      if (!reference.empty() && s + 1 == opts.steps) {
        // Outputs that are rounding noise around zero (a gradient that
        // cancels) are measured against a floor: 1e-3 of the largest
        // reference magnitude over all outputs.
        std::vector<double> diffs, scales;
        double global = 0;
        size_t offset = 0;
        for (size_t i = 1; i < m.results.size(); ++i) {
          const TensorSpec &t = m.results[i];
          const char *ref = reference.data() + offset;
          offset += t.bytes();
          double diff = 0, scale = 0;
          for (int64_t e = 0; e < t.numElements(); ++e) {
            double x = readScalar(t, outputs[i], e), r = readScalar(t, ref, e);
            diff = std::max(diff, std::fabs(x - r));
            scale = std::max(scale, std::fabs(r));
            if (std::isnan(x) != std::isnan(r))
              diff = INFINITY;
          }
          diffs.push_back(diff);
          scales.push_back(scale);
          global = std::max(global, scale);
        }
        for (size_t i = 0; i < diffs.size(); ++i) {
          double floor = std::max(scales[i], 1e-3 * global);
          double err = floor > 0 ? diffs[i] / floor : diffs[i];
          if (err >= worstError) {
            worstError = err;
            worstOutput = "output " + std::to_string(i + 1);
          }
        }
      }
      step.releaseResults();
    }
    remat_rt_stats stats;
    if (cuda) {
      remat_cuda_get_stats(&stats);
      remat_cuda_reset_peak();
      poolPeak = std::max(poolPeak, remat_cuda_pool_used_high());
      remat_cuda_reset_pool_high();
      deviceTimes.push_back(remat_cuda_last_step_device_ms());
    } else {
      remat_rt_get_stats(&stats);
      remat_rt_reset_peak();
    }
    measuredPeak = std::max(measuredPeak, stats.peakBytes);
    if (!opts.json)
      std::printf("step %d: loss %s (%.1f ms)\n", s + 1,
                  formatNumber(losses.back(), m.results[0].dtype).c_str(), ms);
  }
  double median = medianOf(times);
  double deviceMedian = cuda ? medianOf(deviceTimes) : -1;
  step.download();
  uint64_t hash = 0xcbf29ce484222325ULL;
  std::ofstream save;
  if (!opts.saveParams.empty()) {
    save.open(opts.saveParams, std::ios::binary);
    if (!save)
      die("cannot write '" + opts.saveParams + "'");
  }
  for (size_t i = 0; i < m.arguments.size(); ++i)
    if (m.arguments[i].role == "param") {
      hash = fnv1a(hash, step.argument(i), m.arguments[i].bytes());
      if (save)
        save.write(static_cast<const char *>(step.argument(i)),
                   m.arguments[i].bytes());
    }
  if (opts.profileKernels)
    remat_cuda_print_profile(opts.profileKernels, opts.steps - firstProfiled);
  double overhead = m.predictedCost / std::max(m.baselineCost, 1.0);
  if (opts.json) {
    std::printf("{\"function\": \"%s\", \"target\": \"%s\", "
                "\"matmul_backend\": \"%s\", \"steps\": %d, \"losses\": [",
                m.function.c_str(), m.target.c_str(), remat_rt_matmul_backend(),
                opts.steps);
    for (size_t i = 0; i < losses.size(); ++i)
      std::printf("%s%s", i ? ", " : "",
                  formatNumber(losses[i], m.results[0].dtype).c_str());
    std::printf("], \"step_ms\": [");
    for (size_t i = 0; i < times.size(); ++i)
      std::printf("%s%.3f", i ? ", " : "", times[i]);
    std::printf("], \"median_step_ms\": %.3f, \"predicted_peak_bytes\": "
                "%" PRId64 ", \"measured_peak_bytes\": %" PRId64
                ", \"fixed_bytes\": %" PRId64 ", \"memory_limit_bytes\": ",
                median, m.predictedPeak, measuredPeak, m.fixedBytes);
    if (m.memoryLimit >= 0)
      std::printf("%" PRId64, m.memoryLimit);
    else
      std::printf("null");
    std::printf(", \"solver\": \"%s\", \"predicted_cost_flops\": %.0f, "
                "\"baseline_cost_flops\": %.0f, \"predicted_overhead\": %.6f, "
                "\"params_fnv1a\": \"%016" PRIx64 "\"",
                m.solver.c_str(), m.predictedCost, m.baselineCost, overhead,
                hash);
    if (hashOutputs)
      std::printf(", \"outputs_fnv1a\": \"%016" PRIx64 "\"", outputsHash);
    if (!reference.empty())
      std::printf(", \"compare_worst_error\": %.6g, \"compare_rtol\": %g",
                  worstError, opts.compareRtol);
    if (cuda)
      std::printf(", \"chip\": \"%s\", \"device\": \"%s\", "
                  "\"compute_capability\": \"%d.%d\", "
                  "\"median_device_ms\": %.3f, \"pool_peak_bytes\": %" PRId64
                  ", \"device_total_bytes\": %" PRId64
                  ", \"device_free_bytes\": %" PRId64,
                  m.chip.c_str(), jsonEscape(gpu.name).c_str(), gpu.ccMajor,
                  gpu.ccMinor, deviceMedian, poolPeak, gpu.totalBytes,
                  gpu.freeBytes);
    std::printf("}\n");
  } else {
    auto mib = [](int64_t b) { return b / (1024.0 * 1024.0); };
    if (cuda)
      std::printf("median step time: %.2f ms (device: %.2f ms by CUDA "
                  "events) on %s (sm_%d%d)\n",
                  median, deviceMedian, gpu.name, gpu.ccMajor, gpu.ccMinor);
    else
      std::printf("median step time: %.1f ms (matmul: %s)\n", median,
                  remat_rt_matmul_backend());
    std::printf("peak memory: predicted %" PRId64 " bytes (%.1f MiB), "
                "measured %" PRId64 " bytes (%.1f MiB); fixed part %.1f MiB",
                m.predictedPeak, mib(m.predictedPeak), measuredPeak,
                mib(measuredPeak), mib(m.fixedBytes));
    if (m.memoryLimit >= 0)
      std::printf("; limit %.1f MiB", mib(m.memoryLimit));
    if (cuda)
      std::printf("\ndevice pool high-water mark (driver): %" PRId64
                  " bytes (%.1f MiB); device memory %.1f of %.1f GiB free",
                  poolPeak, mib(poolPeak), gpu.freeBytes / 1073741824.0,
                  gpu.totalBytes / 1073741824.0);
    std::printf("\npredicted compute: %.3g FLOPs (%.3fx the step without "
                "remat)\nparameters fnv1a: %016" PRIx64 "\n",
                m.predictedCost, overhead, hash);
    if (hashOutputs)
      std::printf("gradients fnv1a: %016" PRIx64 " (every step)\n",
                  outputsHash);
    if (!reference.empty())
      std::printf("outputs vs '%s': worst error %.3g (max |x - ref| / max "
                  "|ref|, floor 1e-3 of the largest, %s; allowed %g)\n",
                  opts.compareOutputs.c_str(), worstError, worstOutput.c_str(),
                  opts.compareRtol);
  }
  if (!reference.empty() && !(worstError <= opts.compareRtol)) {
    std::fprintf(stderr,
                 "remat-run: error: outputs differ from '%s': worst error "
                 "%.3g (%s) over --compare-rtol %g\n",
                 opts.compareOutputs.c_str(), worstError, worstOutput.c_str(),
                 opts.compareRtol);
    return 1;
  }
  return 0;
}

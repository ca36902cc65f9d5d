//===- RunChecks.cpp - Gradient and output checks of remat-run ------------===//

#include "RunDriver.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

using namespace remat;
using namespace remat::run;

int remat::run::gradCheck(Step &step, const Options &opts) {
  const Manifest &m = step.manifest();
  int k = opts.gradCheck;
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
  // In float32 the central difference is dominated by rounding and by ReLU
  // kinks within the large step it needs; only float64 gives a check that
  // can be held to a tight tolerance.
  for (size_t i : params)
    if (m.arguments[i].dtype != "f64")
      die("--grad-check needs a float64 model (parameter '" +
          m.arguments[i].name + "' is " + m.arguments[i].dtype + ")");
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
      static_cast<double *>(step.argument(params[j]))[e] += delta;
      step.upload();
      return step.run(nullptr);
    };
    double numeric = (lossAt(eps) - lossAt(-eps)) / (2 * eps);
    double err = std::fabs(numeric - analytic);
    double allowed =
        atol + rtol * std::max(std::fabs(numeric), std::fabs(analytic));
    worst = std::max(worst, err / allowed);
    if (opts.verbose)
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
  if (opts.json)
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

OutputComparison::OutputComparison(const Manifest &m, const std::string &file)
    : m(m) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    die("cannot open '" + file + "'");
  reference.assign(std::istreambuf_iterator<char>(in), {});
  size_t expected = 0;
  for (size_t i = 1; i < m.results.size(); ++i)
    expected += m.results[i].bytes();
  if (reference.size() != expected)
    die("'" + file + "' has " + std::to_string(reference.size()) +
        " bytes; the step's outputs after the loss have " +
        std::to_string(expected));
}

void OutputComparison::compare(const std::vector<void *> &outputs) {
  // Outputs that are rounding noise around zero (a gradient that cancels)
  // are measured against a floor: 1e-3 of the largest reference magnitude
  // over all outputs.
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

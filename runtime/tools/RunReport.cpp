//===- RunReport.cpp - remat-run's summary --------------------------------===//

#include "RunDriver.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <sys/resource.h>

using namespace remat;
using namespace remat::run;

uint64_t remat::run::fnv1a(uint64_t h, const void *data, size_t bytes) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < bytes; ++i)
    h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

std::string remat::run::formatNumber(double v, const std::string &dtype) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), dtype == "f64" ? "%.17g" : "%.9g", v);
  return buf;
}

static double medianOf(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static std::string jsonEscape(const std::string &s) {
  std::string out;
  for (char c : s)
    if (c == '"' || c == '\\')
      out += std::string("\\") + c;
    else if (static_cast<unsigned char>(c) >= 0x20)
      out += c;
  return out;
}

/// The process's maximum resident set (getrusage), in bytes.
static int64_t maxRSSBytes() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

static void printJson(const Step &step, const Options &opts,
                      const RunResult &r) {
  const Manifest &m = step.manifest();
  const std::string &lossType = m.results[0].dtype;
  std::printf("{\"function\": \"%s\", \"target\": \"%s\", "
              "\"matmul_backend\": \"%s\", \"steps\": %d, \"losses\": [",
              m.function.c_str(), m.target.c_str(), remat_rt_matmul_backend(),
              opts.steps);
  for (size_t i = 0; i < r.losses.size(); ++i)
    std::printf("%s%s", i ? ", " : "",
                formatNumber(r.losses[i], lossType).c_str());
  std::printf("], \"step_ms\": [");
  for (size_t i = 0; i < r.times.size(); ++i)
    std::printf("%s%.3f", i ? ", " : "", r.times[i]);
  std::printf("], \"median_step_ms\": %.3f, \"predicted_peak_bytes\": "
              "%" PRId64 ", \"measured_peak_bytes\": %" PRId64
              ", \"fixed_bytes\": %" PRId64 ", \"memory_limit_bytes\": ",
              medianOf(r.times), m.predictedPeak, r.measuredPeak, m.fixedBytes);
  if (m.memoryLimit >= 0)
    std::printf("%" PRId64, m.memoryLimit);
  else
    std::printf("null");
  std::printf(", \"max_rss_bytes\": %" PRId64, maxRSSBytes());
  if (m.arenaBytes)
    std::printf(", \"arena_bytes\": %" PRId64
                ", \"arena_live_bytes\": %" PRId64,
                m.arenaBytes, m.arenaLiveBytes);
  std::printf(", \"solver\": \"%s\", \"predicted_cost_flops\": %.0f, "
              "\"baseline_cost_flops\": %.0f, \"predicted_overhead\": %.6f, "
              "\"params_fnv1a\": \"%016" PRIx64 "\"",
              m.solver.c_str(), m.predictedCost, m.baselineCost,
              m.predictedCost / std::max(m.baselineCost, 1.0), r.paramsHash);
  std::printf(", \"cost_model\": \"%s\"", m.costModel.c_str());
  if (m.costModel != "flops")
    std::printf(", \"predicted_step_ms\": %.6g, \"baseline_step_ms\": %.6g",
                m.predictedMs, m.baselineMs);
  if (r.hashedOutputs)
    std::printf(", \"outputs_fnv1a\": \"%016" PRIx64 "\"", r.outputsHash);
  if (r.comparison)
    std::printf(", \"compare_worst_error\": %.6g, \"compare_rtol\": %g",
                r.comparison->worstError, opts.compareRtol);
  if (step.isCUDA()) {
    const remat_cuda_device &gpu = step.device();
    std::printf(", \"chip\": \"%s\", \"device\": \"%s\", "
                "\"compute_capability\": \"%d.%d\", "
                "\"median_device_ms\": %.3f, \"pool_peak_bytes\": %" PRId64
                ", \"device_total_bytes\": %" PRId64
                ", \"device_free_bytes\": %" PRId64,
                m.chip.c_str(), jsonEscape(gpu.name).c_str(), gpu.ccMajor,
                gpu.ccMinor, medianOf(r.deviceTimes), r.poolPeak,
                gpu.totalBytes, gpu.freeBytes);
  }
  std::printf("}\n");
}

static void printText(const Step &step, const Options &opts,
                      const RunResult &r) {
  const Manifest &m = step.manifest();
  auto mib = [](int64_t b) { return b / (1024.0 * 1024.0); };
  const remat_cuda_device &gpu = step.device();
  if (step.isCUDA())
    std::printf("median step time: %.2f ms (device: %.2f ms by CUDA "
                "events) on %s (sm_%d%d)\n",
                medianOf(r.times), medianOf(r.deviceTimes), gpu.name,
                gpu.ccMajor, gpu.ccMinor);
  else
    std::printf("median step time: %.1f ms (matmul: %s)\n", medianOf(r.times),
                remat_rt_matmul_backend());
  std::printf("peak memory: predicted %" PRId64 " bytes (%.1f MiB), "
              "measured %" PRId64 " bytes (%.1f MiB); fixed part %.1f MiB",
              m.predictedPeak, mib(m.predictedPeak), r.measuredPeak,
              mib(r.measuredPeak), mib(m.fixedBytes));
  if (m.memoryLimit >= 0)
    std::printf("; limit %.1f MiB", mib(m.memoryLimit));
  if (m.arenaBytes)
    std::printf(
        "\narena: %" PRId64 " bytes (%.1f MiB), its buffers' live peak "
        "%" PRId64 " bytes (%.4fx)",
        m.arenaBytes, mib(m.arenaBytes), m.arenaLiveBytes,
        static_cast<double>(m.arenaBytes) /
            static_cast<double>(std::max<int64_t>(m.arenaLiveBytes, 1)));
  // What the process holds beyond the plan: code, libraries, and workspace
  // no plan counts (BLAS threads' buffers).
  std::printf("\nprocess max RSS: %.1f MiB (%.1f MiB beyond the plan's peak)",
              mib(maxRSSBytes()), mib(maxRSSBytes() - m.predictedPeak));
  if (step.isCUDA())
    std::printf("\ndevice pool high-water mark (driver): %" PRId64
                " bytes (%.1f MiB); device memory %.1f of %.1f GiB free",
                r.poolPeak, mib(r.poolPeak), gpu.freeBytes / 1073741824.0,
                gpu.totalBytes / 1073741824.0);
  std::printf("\npredicted compute: %.3g FLOPs (%.3fx the step without "
              "remat)\nparameters fnv1a: %016" PRIx64 "\n",
              m.predictedCost, m.predictedCost / std::max(m.baselineCost, 1.0),
              r.paramsHash);
  if (m.costModel != "flops")
    std::printf("predicted step time: %.3f ms by the %s (%.3fx the "
                "step without remat; measured median %.3f ms)\n",
                m.predictedMs, m.costModel.c_str(),
                m.predictedMs / std::max(m.baselineMs, 1e-9),
                medianOf(r.times));
  if (r.hashedOutputs)
    std::printf("gradients fnv1a: %016" PRIx64 " (every step)\n",
                r.outputsHash);
  if (r.comparison)
    std::printf("outputs vs '%s': worst error %.3g (max |x - ref| / max "
                "|ref|, floor 1e-3 of the largest, %s; allowed %g)\n",
                opts.compareOutputs.c_str(), r.comparison->worstError,
                r.comparison->worstOutput.c_str(), opts.compareRtol);
}

void remat::run::printReport(const Step &step, const Options &opts,
                             const RunResult &r) {
  if (opts.json)
    printJson(step, opts, r);
  else
    printText(step, opts, r);
}

void remat::run::writeProfile(const Step &step, const Options &opts,
                              const RunResult &r) {
  const Manifest &m = step.manifest();
  int steps = std::max(r.profiledSteps, 1);
  struct Timed {
    size_t id;
    double calls, ns;
  };
  std::vector<Timed> timed;
  double totalNs = 0;
  for (size_t id = 0; id < m.profileOps.size(); ++id) {
    int64_t n = remat_rt_profile_read(static_cast<int32_t>(id), nullptr, 0);
    std::vector<double> ns(n);
    remat_rt_profile_read(static_cast<int32_t>(id), ns.data(), n);
    // An op that never ran has no time to report.
    if (!n)
      continue;
    Timed t{id, static_cast<double>(n) / steps, medianOf(ns)};
    totalNs += t.calls * t.ns;
    timed.push_back(t);
  }
  std::string out = "{\n  \"format\": \"remat-profile/1\",\n";
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "  \"target\": \"%s\",\n  \"steps\": %d,\n"
                "  \"step_ms\": %.6g,\n  \"timed_ms\": %.6g,\n  \"ops\": [",
                m.target.c_str(), r.profiledSteps,
                medianOf({r.times.end() - r.profiledSteps, r.times.end()}),
                totalNs * 1e-6);
  out += buf;
  for (const Timed &t : timed) {
    const ProfileOp &op = m.profileOps[t.id];
    std::snprintf(buf, sizeof(buf), ", \"calls\": %.6g, \"ns\": %.6g}", t.calls,
                  t.ns);
    out += (&t != timed.data() ? ",\n    " : "\n    ") +
           std::string("{\"op\": \"") + jsonEscape(op.op) + "\", \"loc\": \"" +
           jsonEscape(op.loc) + "\", \"types\": \"" + jsonEscape(op.types) +
           "\"" + buf;
  }
  out += "\n  ]\n}\n";
  std::ofstream file(opts.profile);
  if (!(file << out))
    die("cannot write '" + opts.profile + "'");
  if (opts.json)
    return;
  std::printf("profile: %zu ops timed over %d steps, %.3f ms of the %.3f ms "
              "median step; written to %s\n",
              timed.size(), r.profiledSteps, totalNs * 1e-6,
              medianOf({r.times.end() - r.profiledSteps, r.times.end()}),
              opts.profile.c_str());
  std::sort(timed.begin(), timed.end(), [](const Timed &a, const Timed &b) {
    return a.calls * a.ns > b.calls * b.ns;
  });
  for (size_t i = 0; i < std::min<size_t>(timed.size(), 10); ++i) {
    const Timed &t = timed[i];
    const ProfileOp &op = m.profileOps[t.id];
    std::printf("  %8.3f ms %5.1f%%  %s at %s: %s\n", t.calls * t.ns * 1e-6,
                100 * t.calls * t.ns / std::max(totalNs, 1.0), op.op.c_str(),
                op.loc.c_str(), op.types.c_str());
  }
}

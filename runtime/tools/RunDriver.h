//===- RunDriver.h - remat-run's parts --------------------------*- C++ -*-===//
//
// The driver's command line, its checks (gradients by central differences,
// outputs against a reference) and its report, kept apart from the loop in
// remat-run.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_RUNTIME_TOOLS_RUNDRIVER_H
#define REMAT_RUNTIME_TOOLS_RUNDRIVER_H

#include "remat/Step.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace remat::run {

[[noreturn]] void die(const std::string &message);

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
  /// --profile: where a profiling build's op times go.
  std::string profile;
  double compareRtol = 1e-4;
  std::map<std::string, std::string> inputs;
};

/// Parses the command line; exits with a message on a bad option.
Options parseOptions(int argc, char **argv);

/// Central differences of the loss against the returned gradients on
/// `opts.gradCheck` parameter elements; returns the exit status.
int gradCheck(Step &step, const Options &opts);

/// The step's outputs after the loss, checked against a file of reference
/// bytes: per output, max |x - ref| / max |ref|, a normwise relative error
/// that near-zero entries cannot blow up.
class OutputComparison {
public:
  /// Reads the reference; exits when it does not have the outputs' size.
  OutputComparison(const Manifest &m, const std::string &file);
  void compare(const std::vector<void *> &outputs);
  double worstError = 0;
  std::string worstOutput;

private:
  const Manifest &m;
  std::vector<char> reference;
};

/// What a run measured, for the report.
struct RunResult {
  std::vector<double> losses, times, deviceTimes;
  /// The steps --profile timed (all but the first when there are more).
  int profiledSteps = 0;
  int64_t measuredPeak = 0, poolPeak = -1;
  uint64_t paramsHash = 0, outputsHash = 0;
  bool hashedOutputs = false;
  const OutputComparison *comparison = nullptr;
};

/// Prints the run's summary, as text or as one JSON object.
void printReport(const Step &step, const Options &opts, const RunResult &r);

/// Writes the op times of a profiling build (--profile) to `opts.profile`
/// and, unless --json, the slowest ops to stdout.
void writeProfile(const Step &step, const Options &opts, const RunResult &r);

/// FNV-1a over `bytes`, continuing from `h`.
uint64_t fnv1a(uint64_t h, const void *data, size_t bytes);
std::string formatNumber(double v, const std::string &dtype);

} // namespace remat::run

#endif // REMAT_RUNTIME_TOOLS_RUNDRIVER_H

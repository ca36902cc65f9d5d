//===- Manifest.h - The compiled step's description -------------*- C++ -*-===//
//
// remat-compile writes a manifest beside each shared object: the step's
// function, its arguments and results (role, dtype, shape, how to fill them),
// and the predicted peak and cost. The compiler and remat-run read and
// write it through this one definition, which needs no LLVM so that a
// machine with only a C++ compiler can run a step.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_MANIFEST_H
#define REMAT_MANIFEST_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace remat {

/// One argument or result of the step.
struct TensorSpec {
  std::string name, role, dtype;
  std::vector<int64_t> shape;
  /// For a gradient result: the index of its parameter among the params.
  int64_t param = -1;
  /// How to fill it when no data is given: integers uniform in [0, range);
  /// floats uniform in [-bound, bound), or `constant` when set.
  int64_t range = 0;
  double bound = -1;
  std::optional<double> constant;

  bool isFloat() const { return dtype[0] == 'f' || dtype == "bf16"; }
  size_t elementBytes() const;
  int64_t numElements() const;
  size_t bytes() const { return numElements() * elementBytes(); }
  /// Words of the memref descriptor: allocated, aligned, offset, sizes,
  /// strides.
  size_t descriptorWords() const { return 3 + 2 * shape.size(); }
  /// `f32[8,4]`: the form signatures use.
  std::string describe() const;
};

/// An op a profiling build times (remat-compile --profile-ops): the key the
/// profile cost model looks its time up by.
struct ProfileOp {
  std::string op, loc, types;
};

struct Manifest {
  static constexpr const char *kFormat = "remat-step/1";
  std::string target, chip, library, entry = "remat_step", function, signature,
                                     solver;
  std::vector<TensorSpec> arguments, results;
  int64_t predictedPeak = 0, fixedBytes = 0, paramBytes = 0, dataBytes = 0,
          stateBytes = 0;
  /// -1: compiled without a limit.
  int64_t memoryLimit = -1;
  double predictedCost = 0, baselineCost = 0;
  /// What priced the schedule ("flops", "roofline" or "profile"); with a
  /// time model, its predicted step time with and without remat (-1: none).
  std::string costModel = "flops";
  double predictedMs = -1, baselineMs = -1;
  /// CPU: the --cpu-conv-layout of the convolutions oneDNN runs ("auto",
  /// "plain", "blocked"), or "" where the runtime's kernels run them all.
  std::string convLayout;
  /// Seconds of timed search the solver spent (0: none); a schedule from a
  /// timed search depends on the machine that compiled it.
  double searchSeconds = 0;
  /// The arena of intermediate buffers (--memory-plan=arena; 0 without):
  /// its size, the most bytes of its buffers live at once, and each
  /// buffer's offset and size in program order.
  int64_t arenaBytes = 0, arenaLiveBytes = 0;
  std::vector<int64_t> arenaOffsets;
  /// A profiling build's timed ops, by the id its timers carry.
  std::vector<ProfileOp> profileOps;
  /// CUDA: the device code's format and its kernel count.
  std::string deviceCode;
  int64_t kernels = 0;

  /// The canonical signature of the arguments and results, which the
  /// compiled library embeds too.
  std::string computeSignature() const;
};

/// Parses manifest text. On failure returns false and sets `error` to a
/// message naming the field (without the file's name).
bool parseManifest(const std::string &text, Manifest &out, std::string &error);

/// The manifest as JSON text, one field per line.
std::string printManifest(const Manifest &manifest);

} // namespace remat

#endif // REMAT_MANIFEST_H

//===- Step.h - A compiled step, loaded and ready to run --------*- C++ -*-===//
//
// Loads the shared object a manifest names, checks that the two agree
// (signature, target, chip), owns the argument buffers and their memref
// descriptors, and runs the step.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_STEP_H
#define REMAT_STEP_H

#include "remat/Manifest.h"
#include "remat/Runtime.h"

#include <memory>
#include <string>
#include <vector>

namespace remat {

class Step {
public:
  /// Reads `manifestPath`, brings up the GPU for a CUDA step, loads the
  /// library and allocates the arguments (unfilled). Null, with `error`
  /// set, when any of that fails.
  static std::unique_ptr<Step> load(const std::string &manifestPath,
                                    std::string &error);
  ~Step();

  const Manifest &manifest() const { return m; }
  const std::string &manifestPath() const { return path; }
  bool isCUDA() const { return cuda; }
  /// The GPU a CUDA step runs on.
  const remat_cuda_device &device() const { return gpu; }

  /// The host copy of argument `i`; for CUDA, upload() sends it.
  void *argument(size_t i) { return buffers[i]; }
  /// Makes argument `i` read `data` from the next run on (host memory on
  /// the CPU, device memory for CUDA), or its own buffer again for null.
  bool bindArgument(size_t i, void *data, size_t bytes, std::string &error);
  /// Copies the host arguments to the device (CUDA; a no-op on the CPU).
  void upload();
  /// Copies the device arguments (the updated parameters) back.
  void download();
  /// Sets the step count (from 1) of the arguments with role "step" and,
  /// where `lr` is not negative, the learning rate of those with role "lr",
  /// on the device too for CUDA.
  void setHyperparameters(int64_t stepCount, double lr = -1);

  /// Runs one step; returns the loss (NaN for an update step, which has no
  /// results) and, when `keep` is given, the host
  /// data of every result, valid until releaseResults().
  double run(double *ms, std::vector<void *> *keep = nullptr);
  void releaseResults();

private:
  Step() = default;
  bool init(std::string &error);

  Manifest m;
  std::string path;
  void *handle = nullptr;
  void (*entry)(void **) = nullptr;
  bool cuda = false;
  remat_cuda_device gpu{};
  std::vector<void *> buffers, deviceBuffers, pendingFree;
  std::vector<std::vector<char>> hostResults, keptResults;
  std::vector<std::vector<int64_t>> descriptors;
  std::vector<int64_t> resultWords;
};

/// Fills `data` as the manifest says (remat-compile knows each parameter's
/// role: norm weights ones, biases zeros, weights He-uniform); without a
/// hint, parameters are He-uniform over the first dimension (vectors zero),
/// floats uniform in [-1, 1) and integers uniform in [0, range). The same
/// seed and index give the same values everywhere.
void fillDeterministic(const TensorSpec &t, void *data, uint64_t seed,
                       size_t index);
/// Element `i` of a floating-point tensor, as a double.
double readScalar(const TensorSpec &t, const void *data, int64_t i = 0);
/// The splitmix64 generator fillDeterministic draws from.
uint64_t splitmix64(uint64_t &state);

} // namespace remat

#endif // REMAT_STEP_H

//===- remat-run.cpp - Run a compiled training step -----------------------===//
//
// Loads the shared object and manifest that remat-compile wrote, fills the
// arguments deterministically from a seed (or from files), runs N steps and
// reports the losses, the median step time and the predicted vs measured
// peak bytes. It links only the C/C++ runtime and Remat's runtime library,
// never MLIR, so it runs wherever the compiled step can.
//
//===----------------------------------------------------------------------===//

#include "RunDriver.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <optional>
#include <unistd.h>

using namespace remat;
using namespace remat::run;

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

/// --input=NAME=FILE, else NAME.bin in --inputs-dir (an exporter's
/// weights), else the deterministic fill.
static void fillArguments(Step &step, const Options &opts) {
  const Manifest &m = step.manifest();
  for (size_t i = 0; i < m.arguments.size(); ++i) {
    const TensorSpec &t = m.arguments[i];
    auto it = opts.inputs.find(t.name);
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
          " bytes; argument '" + t.name + "' (" + t.describe() + ") needs " +
          std::to_string(t.bytes()));
    in.seekg(0);
    in.read(static_cast<char *>(step.argument(i)), size);
  }
}

/// Runs the steps, hashing (and saving or comparing) the outputs after the
/// loss when the step returns gradients, and tracking the peaks.
static RunResult runSteps(Step &step, const Options &opts,
                          OutputComparison *comparison) {
  const Manifest &m = step.manifest();
  RunResult r;
  r.comparison = comparison;
  r.hashedOutputs = m.results.size() > 1;
  r.outputsHash = 0xcbf29ce484222325ULL;
  if (step.isCUDA()) {
    remat_cuda_reset_peak();
    remat_cuda_reset_pool_high();
  }
  // The first step loads the device module: profiles leave it out when
  // there are more.
  int firstProfiled = opts.steps > 1 ? 1 : 0;
  for (int s = 0; s < opts.steps; ++s) {
    double ms;
    std::vector<void *> outputs;
    if (opts.profileKernels && s == firstProfiled)
      remat_cuda_set_profiling(1);
    if (!opts.profile.empty() && s == firstProfiled)
      remat_rt_profile_start(static_cast<int32_t>(m.profileOps.size()));
    step.setHyperparameters(s + 1);
    r.losses.push_back(step.run(&ms, r.hashedOutputs ? &outputs : nullptr));
    r.times.push_back(ms);
    if (r.hashedOutputs) {
      for (size_t i = 1; i < m.results.size(); ++i)
        r.outputsHash = fnv1a(r.outputsHash, outputs[i], m.results[i].bytes());
      bool last = s + 1 == opts.steps;
      if (last && !opts.saveOutputs.empty()) {
        std::ofstream out(opts.saveOutputs, std::ios::binary);
        for (size_t i = 1; i < m.results.size() && out; ++i)
          out.write(static_cast<const char *>(outputs[i]),
                    m.results[i].bytes());
        if (!out)
          die("cannot write '" + opts.saveOutputs + "'");
      }
      if (last && comparison)
        comparison->compare(outputs);
      step.releaseResults();
    }
    remat_rt_stats stats;
    if (step.isCUDA()) {
      remat_cuda_get_stats(&stats);
      remat_cuda_reset_peak();
      r.poolPeak = std::max(r.poolPeak, remat_cuda_pool_used_high());
      remat_cuda_reset_pool_high();
      r.deviceTimes.push_back(remat_cuda_last_step_device_ms());
    } else {
      remat_rt_get_stats(&stats);
      remat_rt_reset_peak();
    }
    r.measuredPeak = std::max(r.measuredPeak, stats.peakBytes);
    if (!opts.json)
      std::printf("step %d: loss %s (%.1f ms)\n", s + 1,
                  formatNumber(r.losses.back(), m.results[0].dtype).c_str(),
                  ms);
  }
  if (opts.profileKernels)
    remat_cuda_print_profile(opts.profileKernels, opts.steps - firstProfiled);
  r.profiledSteps = opts.steps - firstProfiled;
  return r;
}

int main(int argc, char **argv) {
  std::signal(SIGABRT, onAbort);
  Options opts = parseOptions(argc, argv);
  // Pretend the memory (host or device) is this small: how a step that does
  // not fit fails, testable anywhere.
  remat_rt_set_memory_cap(opts.memoryCap);
  std::string error;
  std::unique_ptr<Step> step = Step::load(opts.manifest, error);
  if (!step)
    die(error);
  const Manifest &m = step->manifest();
  if (m.results.empty())
    die("manifest '" + opts.manifest +
        "' is an update step (mode=apply): it takes gradients and returns "
        "no loss; remat.Step drives it");
  for (auto &[name, file] : opts.inputs)
    if (std::none_of(m.arguments.begin(), m.arguments.end(),
                     [&](const TensorSpec &t) { return t.name == name; }))
      die("--input names '" + name + "', which is not an argument of '" +
          m.function + "'");
  if (!opts.profile.empty() && opts.gradCheck)
    die("--profile times training steps; --grad-check runs none");
  if (!opts.profile.empty() && m.profileOps.empty())
    die("--profile reads the op timers of a profiling build; compile '" +
        opts.manifest + "' with remat-compile --profile-ops");
  if (opts.profileKernels && !step->isCUDA())
    die("--profile-kernels times CUDA kernels; '" + opts.manifest + "' is a " +
        m.target + " step");

  fillArguments(*step, opts);
  step->upload();
  if (opts.gradCheck)
    return gradCheck(*step, opts);
  if ((!opts.saveOutputs.empty() || !opts.compareOutputs.empty()) &&
      m.results.size() < 2)
    die("--save-outputs and --compare-outputs need a step compiled with "
        "--return-gradients");
  std::optional<OutputComparison> comparison;
  if (!opts.compareOutputs.empty())
    comparison.emplace(m, opts.compareOutputs);

  RunResult r = runSteps(*step, opts, comparison ? &*comparison : nullptr);
  step->download();
  r.paramsHash = 0xcbf29ce484222325ULL;
  std::ofstream save;
  if (!opts.saveParams.empty()) {
    save.open(opts.saveParams, std::ios::binary);
    if (!save)
      die("cannot write '" + opts.saveParams + "'");
  }
  for (size_t i = 0; i < m.arguments.size(); ++i)
    if (m.arguments[i].role == "param") {
      r.paramsHash =
          fnv1a(r.paramsHash, step->argument(i), m.arguments[i].bytes());
      if (save)
        save.write(static_cast<const char *>(step->argument(i)),
                   m.arguments[i].bytes());
    }
  printReport(*step, opts, r);
  if (!opts.profile.empty())
    writeProfile(*step, opts, r);
  if (comparison && !(comparison->worstError <= opts.compareRtol)) {
    std::fprintf(stderr,
                 "remat-run: error: outputs differ from '%s': worst error "
                 "%.3g (%s) over --compare-rtol %g\n",
                 opts.compareOutputs.c_str(), comparison->worstError,
                 comparison->worstOutput.c_str(), opts.compareRtol);
    return 1;
  }
  return 0;
}

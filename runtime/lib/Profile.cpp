//===- Profile.cpp - Per-op timers of a profiling build -------------------===//
//
// The step runs on one host thread (the kernels' own threads are inside an
// op), so a begin is always followed by its op's end: one start time is
// enough, and the durations need no locks.
//
//===----------------------------------------------------------------------===//

#include "remat/Runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {
struct Profile {
  std::vector<std::vector<double>> times;
  std::chrono::steady_clock::time_point started;
  int32_t open = -1;
};

Profile &profile() {
  static Profile p;
  return p;
}

[[noreturn]] void corrupt(const char *what, int32_t id) {
  std::fprintf(stderr,
               "remat runtime: profile timer %s for op %d, which the step's "
               "manifest does not list (a library from another build?)\n",
               what, id);
  std::abort();
}
} // namespace

extern "C" {

void remat_rt_profile_start(int32_t ops) {
  Profile &p = profile();
  p.times.assign(std::max(ops, 0), {});
  p.open = -1;
}

void remat_rt_profile_begin(int32_t id) {
  Profile &p = profile();
  if (p.times.empty())
    return;
  if (id < 0 || static_cast<size_t>(id) >= p.times.size())
    corrupt("started", id);
  p.open = id;
  p.started = std::chrono::steady_clock::now();
}

void remat_rt_profile_end(int32_t id) {
  auto now = std::chrono::steady_clock::now();
  Profile &p = profile();
  if (p.times.empty())
    return;
  if (id != p.open)
    corrupt("stopped", id);
  p.times[id].push_back(
      std::chrono::duration<double, std::nano>(now - p.started).count());
  p.open = -1;
}

int64_t remat_rt_profile_read(int32_t id, double *ns, int64_t capacity) {
  Profile &p = profile();
  if (id < 0 || static_cast<size_t>(id) >= p.times.size())
    return 0;
  const std::vector<double> &t = p.times[id];
  std::copy_n(t.begin(), std::min<int64_t>(capacity, t.size()), ns);
  return static_cast<int64_t>(t.size());
}
}

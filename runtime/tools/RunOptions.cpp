//===- RunOptions.cpp - remat-run's command line --------------------------===//

#include "RunDriver.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace remat::run;

void remat::run::die(const std::string &message) {
  std::fprintf(stderr, "remat-run: error: %s\n", message.c_str());
  std::exit(1);
}

static void usage() {
  std::fprintf(stderr, "usage: remat-run MANIFEST.json [--steps=N] [--seed=S] "
                       "[--input=NAME=FILE]... [--inputs-dir=DIR] "
                       "[--save-params=FILE] [--save-outputs=FILE] "
                       "[--compare-outputs=FILE [--compare-rtol=R]] "
                       "[--memory-cap=BYTES] [--profile=FILE] "
                       "[--profile-kernels=N] "
                       "[--grad-check=K [--grad-eps=E] [--grad-rtol=R] "
                       "[--verbose]] [--json]\n");
}

Options remat::run::parseOptions(int argc, char **argv) {
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
    else if (is("--profile") && !is("--profile-kernels"))
      o.profile = value("--profile");
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

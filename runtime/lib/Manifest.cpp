//===- Manifest.cpp - Reading and writing step manifests ------------------===//

#include "remat/Manifest.h"

#include "Json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace remat;

size_t TensorSpec::elementBytes() const {
  if (dtype == "f16" || dtype == "bf16")
    return 2;
  return dtype == "f64" || dtype == "i64" ? 8 : 4;
}

int64_t TensorSpec::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string TensorSpec::describe() const {
  std::string s = dtype + "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string Manifest::computeSignature() const {
  std::string s;
  for (const TensorSpec &t : arguments)
    s += t.describe() + ";";
  s += "->";
  for (const TensorSpec &t : results)
    s += t.describe() + ";";
  return s;
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {
/// Field access that records the first error.
class Reader {
public:
  explicit Reader(std::string &error) : error(error) {}

  bool fail(const std::string &message) {
    if (error.empty())
      error = message;
    return false;
  }
  std::string str(const json::Value &v, const std::string &where,
                  const char *key, bool required = true) {
    const json::Value *f = v.get(key);
    if (!f || !f->isString()) {
      if (required)
        fail(where + "missing string field '" + key + "'");
      return "";
    }
    return f->string;
  }
  /// A number, not negative; a size (`size`) at most 2^53, where JSON
  /// numbers are exact.
  double num(const json::Value &v, const char *key, bool size = true) {
    const json::Value *f = v.get(key);
    if (!f || !f->isNumber()) {
      fail(std::string("missing number field '") + key + "'");
      return 0;
    }
    if (!(f->number >= 0) || !std::isfinite(f->number) ||
        (size && f->number > 9007199254740992.0)) {
      fail(std::string("field '") + key + "' must be " +
           (size ? "in [0, 2^53]" : "a finite number >= 0"));
      return 0;
    }
    return f->number;
  }
  bool tensor(const json::Value &v, const std::string &where, TensorSpec &t);

private:
  std::string &error;
};
} // namespace

bool Reader::tensor(const json::Value &v, const std::string &where,
                    TensorSpec &t) {
  if (!v.isObject())
    return fail(where + " must be an object");
  std::string prefix = where + ": ";
  t.name = str(v, prefix, "name", false);
  t.role = str(v, prefix, "role");
  t.dtype = str(v, prefix, "dtype");
  if (!error.empty())
    return false;
  if (t.dtype != "f16" && t.dtype != "bf16" && t.dtype != "f32" &&
      t.dtype != "f64" && t.dtype != "i32" && t.dtype != "i64")
    return fail(prefix + "unsupported dtype '" + t.dtype +
                "' (f16, bf16, f32, f64, i32 or i64)");
  const json::Value *shape = v.get("shape");
  if (!shape || !shape->isArray())
    return fail(prefix + "missing array field 'shape'");
  // The bytes must fit 2^53, where the JSON number that carries them and
  // every sum the runtime forms stay exact.
  double bytes = static_cast<double>(t.elementBytes());
  for (const json::Value &d : shape->array) {
    if (!d.isNumber() || d.number < 1 || d.number != std::floor(d.number))
      return fail(prefix + "shape entries must be positive integers");
    bytes *= d.number;
    if (bytes > 9007199254740992.0)
      return fail(prefix + "is larger than 2^53 bytes");
    t.shape.push_back(static_cast<int64_t>(d.number));
  }
  if (const json::Value *p = v.get("param"); p && p->isNumber())
    t.param = static_cast<int64_t>(p->number);
  if (const json::Value *r = v.get("range"); r && r->isNumber()) {
    if (t.isFloat() || r->number < 1)
      return fail(prefix +
                  "'range' must be a positive integer on an integer tensor");
    t.range = static_cast<int64_t>(r->number);
  }
  if (const json::Value *init = v.get("init"); init && init->isObject()) {
    if (const json::Value *b = init->get("uniform"); b && b->isNumber())
      t.bound = b->number;
    if (const json::Value *c = init->get("constant"); c && c->isNumber())
      t.constant = c->number;
  }
  return true;
}

bool remat::parseManifest(const std::string &text, Manifest &m,
                          std::string &error) {
  error.clear();
  json::Value root;
  std::string syntax;
  if (!json::parse(text, root, syntax)) {
    error = "not valid JSON: " + syntax;
    return false;
  }
  Reader r(error);
  if (!root.isObject())
    return r.fail("not a JSON object");
  std::string format = r.str(root, "", "format");
  if (!error.empty())
    return false;
  if (format != Manifest::kFormat)
    return r.fail("format '" + format + "'; this version reads '" +
                  Manifest::kFormat + "'");
  m.target = r.str(root, "", "target");
  if (!error.empty())
    return false;
  if (m.target != "cpu" && m.target != "cuda")
    return r.fail("target '" + m.target +
                  "'; steps run on the cpu and cuda targets");
  if (m.target == "cuda") {
    m.chip = r.str(root, "", "chip");
    m.deviceCode = r.str(root, "", "device_code", false);
    if (const json::Value *k = root.get("kernels"); k && k->isNumber())
      m.kernels = static_cast<int64_t>(k->number);
  }
  m.library = r.str(root, "", "library");
  m.entry = r.str(root, "", "entry");
  m.function = r.str(root, "", "function");
  m.signature = r.str(root, "", "signature");
  m.predictedPeak = static_cast<int64_t>(r.num(root, "predicted_peak_bytes"));
  m.fixedBytes = static_cast<int64_t>(r.num(root, "fixed_bytes"));
  m.predictedCost = r.num(root, "predicted_cost_flops", /*size=*/false);
  m.baselineCost = r.num(root, "baseline_cost_flops", /*size=*/false);
  if (!error.empty())
    return false;
  for (const char *key : {"param_bytes", "data_bytes", "state_bytes",
                          "memory_limit_bytes", "search_seconds"}) {
    const json::Value *f = root.get(key);
    if (!f || !f->isNumber())
      continue;
    std::string k = key;
    // A limit may be any count of bytes; what it bounds fits 2^53.
    r.num(root, key,
          /*size=*/k != "search_seconds" && k != "memory_limit_bytes");
    if (!error.empty())
      return false;
    if (k == "param_bytes")
      m.paramBytes = static_cast<int64_t>(f->number);
    else if (k == "data_bytes")
      m.dataBytes = static_cast<int64_t>(f->number);
    else if (k == "state_bytes")
      m.stateBytes = static_cast<int64_t>(f->number);
    else if (k == "memory_limit_bytes" && f->number >= 9223372036854775808.0)
      return r.fail("field 'memory_limit_bytes' must be less than 2^63");
    else if (k == "memory_limit_bytes")
      m.memoryLimit = static_cast<int64_t>(f->number);
    else
      m.searchSeconds = f->number;
  }
  if (root.get("arena_bytes")) {
    m.arenaBytes = static_cast<int64_t>(r.num(root, "arena_bytes"));
    m.arenaLiveBytes = static_cast<int64_t>(r.num(root, "arena_live_bytes"));
    const json::Value *offsets = root.get("arena_offsets");
    if (!offsets || !offsets->isArray() || offsets->array.size() % 2)
      return r.fail("field 'arena_offsets' must be an array of offset, size "
                    "pairs");
    for (const json::Value &v : offsets->array) {
      if (!v.isNumber() || v.number < 0 || v.number > m.arenaBytes ||
          v.number != static_cast<double>(static_cast<int64_t>(v.number)))
        return r.fail("field 'arena_offsets' holds a value outside the arena");
      m.arenaOffsets.push_back(static_cast<int64_t>(v.number));
    }
    for (size_t i = 0; i < m.arenaOffsets.size(); i += 2)
      if (m.arenaOffsets[i] + m.arenaOffsets[i + 1] > m.arenaBytes)
        return r.fail("field 'arena_offsets': a buffer ends past the arena");
    if (!error.empty())
      return false;
  }
  m.solver = r.str(root, "", "solver", false);
  m.convLayout = r.str(root, "", "conv_layout", false);
  if (!m.convLayout.empty() && m.convLayout != "auto" &&
      m.convLayout != "plain" && m.convLayout != "blocked")
    return r.fail("field 'conv_layout': expected \"auto\", \"plain\" or "
                  "\"blocked\"");
  if (root.get("cost_model"))
    m.costModel = r.str(root, "", "cost_model");
  if (m.costModel != "flops" && m.costModel != "roofline" &&
      m.costModel != "profile")
    return r.fail("field 'cost_model' must be \"flops\", \"roofline\" or "
                  "\"profile\"");
  if (m.costModel != "flops") {
    m.predictedMs = r.num(root, "predicted_step_ms", /*size=*/false);
    m.baselineMs = r.num(root, "baseline_step_ms", /*size=*/false);
    if (!error.empty())
      return false;
  }
  if (const json::Value *ops = root.get("profile_ops")) {
    if (!ops->isArray())
      return r.fail("field 'profile_ops' must be an array");
    for (size_t i = 0; i < ops->array.size(); ++i) {
      const json::Value &v = ops->array[i];
      std::string prefix = "profile_ops[" + std::to_string(i) + "]";
      if (!v.isObject())
        return r.fail(prefix + " must be an object");
      ProfileOp op{r.str(v, prefix + ": ", "op"),
                   r.str(v, prefix + ": ", "loc"),
                   r.str(v, prefix + ": ", "types")};
      if (!error.empty())
        return false;
      m.profileOps.push_back(std::move(op));
    }
  }
  for (const char *key : {"arguments", "results"}) {
    const json::Value *list = root.get(key);
    if (!list || !list->isArray())
      return r.fail(std::string("missing array field '") + key + "'");
    auto &specs = std::string(key) == "arguments" ? m.arguments : m.results;
    for (size_t i = 0; i < list->array.size(); ++i) {
      specs.emplace_back();
      if (!r.tensor(list->array[i],
                    std::string(key) + "[" + std::to_string(i) + "]",
                    specs.back()))
        return false;
    }
  }
  // An update step (train-autodiff mode=apply) returns nothing; any other
  // returns its loss first.
  bool update =
      m.results.empty() &&
      std::any_of(m.arguments.begin(), m.arguments.end(),
                  [](const TensorSpec &t) { return t.role == "grad"; });
  if (!update && (m.results.empty() || m.results[0].role != "loss" ||
                  !m.results[0].shape.empty()))
    return r.fail("the first result must be the scalar loss");
  if (m.computeSignature() != m.signature)
    return r.fail("'signature' does not match its arguments and results");
  return true;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

namespace {
std::string quote(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

/// Integers print without a fraction; other numbers to the last digit.
std::string number(double v) {
  char buf[32];
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0)
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  else
    std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

/// An object's members, one per line at `indent`.
class ObjectWriter {
public:
  ObjectWriter(std::string &out, int indent) : out(out), indent(indent) {
    out += "{";
  }
  void field(const char *key, const std::string &rawValue) {
    out += first ? "\n" : ",\n";
    first = false;
    out += std::string(indent + 2, ' ') + quote(key) + ": " + rawValue;
  }
  void finish() { out += "\n" + std::string(indent, ' ') + "}"; }

private:
  std::string &out;
  int indent;
  bool first = true;
};

std::string tensorJson(const TensorSpec &t, int indent) {
  std::string out;
  ObjectWriter w(out, indent);
  if (!t.name.empty())
    w.field("name", quote(t.name));
  w.field("role", quote(t.role));
  w.field("dtype", quote(t.dtype));
  std::string shape = "[";
  for (size_t i = 0; i < t.shape.size(); ++i)
    shape += (i ? ", " : "") + std::to_string(t.shape[i]);
  w.field("shape", shape + "]");
  if (t.param >= 0)
    w.field("param", std::to_string(t.param));
  if (t.range > 0)
    w.field("range", std::to_string(t.range));
  if (t.constant)
    w.field("init", "{\"constant\": " + number(*t.constant) + "}");
  else if (t.bound >= 0)
    w.field("init", "{\"uniform\": " + number(t.bound) + "}");
  w.finish();
  return out;
}

std::string tensorList(const std::vector<TensorSpec> &specs) {
  if (specs.empty())
    return "[]";
  std::string out = "[";
  for (size_t i = 0; i < specs.size(); ++i)
    out += (i ? ",\n    " : "\n    ") + tensorJson(specs[i], 4);
  return out + "\n  ]";
}
} // namespace

std::string remat::printManifest(const Manifest &m) {
  std::string out;
  ObjectWriter w(out, 0);
  w.field("format", quote(Manifest::kFormat));
  w.field("target", quote(m.target));
  if (m.target == "cuda") {
    w.field("chip", quote(m.chip));
    w.field("device_code", quote(m.deviceCode));
    w.field("kernels", std::to_string(m.kernels));
  }
  w.field("library", quote(m.library));
  w.field("entry", quote(m.entry));
  w.field("function", quote(m.function));
  w.field("signature", quote(m.signature));
  w.field("arguments", tensorList(m.arguments));
  w.field("results", tensorList(m.results));
  w.field("predicted_peak_bytes", std::to_string(m.predictedPeak));
  w.field("fixed_bytes", std::to_string(m.fixedBytes));
  w.field("param_bytes", std::to_string(m.paramBytes));
  w.field("data_bytes", std::to_string(m.dataBytes));
  if (m.stateBytes)
    w.field("state_bytes", std::to_string(m.stateBytes));
  w.field("predicted_cost_flops", number(m.predictedCost));
  w.field("baseline_cost_flops", number(m.baselineCost));
  w.field("cost_model", quote(m.costModel));
  if (!m.convLayout.empty())
    w.field("conv_layout", quote(m.convLayout));
  if (m.costModel != "flops") {
    w.field("predicted_step_ms", number(m.predictedMs));
    w.field("baseline_step_ms", number(m.baselineMs));
  }
  w.field("memory_limit_bytes",
          m.memoryLimit >= 0 ? std::to_string(m.memoryLimit) : "null");
  if (m.arenaBytes) {
    w.field("arena_bytes", std::to_string(m.arenaBytes));
    w.field("arena_live_bytes", std::to_string(m.arenaLiveBytes));
    std::string offsets = "[";
    for (size_t i = 0; i < m.arenaOffsets.size(); ++i)
      offsets += (i ? ", " : "") + std::to_string(m.arenaOffsets[i]);
    w.field("arena_offsets", offsets + "]");
  }
  w.field("solver", quote(m.solver));
  if (m.searchSeconds > 0)
    w.field("search_seconds", number(m.searchSeconds));
  if (!m.profileOps.empty()) {
    std::string ops = "[";
    for (size_t i = 0; i < m.profileOps.size(); ++i) {
      const ProfileOp &op = m.profileOps[i];
      ops += (i ? ",\n    " : "\n    ") + std::string("{\"op\": ") +
             quote(op.op) + ", \"loc\": " + quote(op.loc) +
             ", \"types\": " + quote(op.types) + "}";
    }
    w.field("profile_ops", ops + "\n  ]");
  }
  w.finish();
  return out + "\n";
}

//===- Json.h - A minimal JSON reader for manifests -------------*- C++ -*-===//
//
// remat-run must build without LLVM (on a GPU machine with only a compiler),
// so it cannot use llvm::json; manifests are small and regular, and this
// reader is all they need.
//
//===----------------------------------------------------------------------===//

#ifndef REMAT_RUNTIME_JSON_H
#define REMAT_RUNTIME_JSON_H

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace remat::json {

struct Value {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Value> array;
  std::map<std::string, Value> object;

  /// Member `key` of an object, or null when absent (or not an object).
  const Value *get(const std::string &key) const;
  bool isNumber() const { return kind == Kind::Number; }
  bool isString() const { return kind == Kind::String; }
  bool isArray() const { return kind == Kind::Array; }
  bool isObject() const { return kind == Kind::Object; }
};

/// Parses `text`; on failure returns false and sets `error` (with the byte
/// offset).
bool parse(const std::string &text, Value &out, std::string &error);

} // namespace remat::json

#endif // REMAT_RUNTIME_JSON_H

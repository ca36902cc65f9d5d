//===- Json.cpp - A minimal JSON reader for manifests ---------------------===//
//
// Recursive descent over RFC 8259, enough for manifests: \u escapes outside
// ASCII are kept as '?', since manifest strings are names and paths.
//
//===----------------------------------------------------------------------===//

#include "Json.h"

#include <cstdlib>

using namespace remat::json;

const Value *Value::get(const std::string &key) const {
  if (kind != Kind::Object)
    return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &it->second;
}

namespace {
class Parser {
public:
  Parser(const std::string &text) : text(text) {}

  bool parseDocument(Value &out, std::string &error) {
    bool ok = parseValue(out, 0);
    skipSpace();
    if (ok && pos != text.size())
      ok = fail("trailing characters");
    if (!ok)
      error = message + " at byte " + std::to_string(pos);
    return ok;
  }

private:
  bool fail(const std::string &why) {
    if (message.empty())
      message = why;
    return false;
  }
  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\n' ||
                                 text[pos] == '\t' || text[pos] == '\r'))
      ++pos;
  }
  bool literal(const char *word) {
    size_t n = std::char_traits<char>::length(word);
    if (text.compare(pos, n, word) != 0)
      return fail("invalid literal");
    pos += n;
    return true;
  }
  bool parseString(std::string &out) {
    if (pos >= text.size() || text[pos] != '"')
      return fail("expected a string");
    ++pos;
    while (pos < text.size() && text[pos] != '"') {
      char c = text[pos++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos >= text.size())
        return fail("unterminated escape");
      char e = text[pos++];
      switch (e) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'u': {
        if (pos + 4 > text.size())
          return fail("bad \\u escape");
        unsigned code = std::strtoul(text.substr(pos, 4).c_str(), nullptr, 16);
        out += code < 0x80 ? static_cast<char>(code) : '?';
        pos += 4;
        break;
      }
      default:
        out += e;
        break;
      }
    }
    if (pos >= text.size())
      return fail("unterminated string");
    ++pos;
    return true;
  }
  bool parseValue(Value &out, int depth) {
    if (depth > 64)
      return fail("nesting too deep");
    skipSpace();
    if (pos >= text.size())
      return fail("unexpected end of input");
    char c = text[pos];
    if (c == '{') {
      out.kind = Value::Kind::Object;
      ++pos;
      skipSpace();
      if (pos < text.size() && text[pos] == '}') {
        ++pos;
        return true;
      }
      while (true) {
        skipSpace();
        std::string key;
        if (!parseString(key))
          return false;
        skipSpace();
        if (pos >= text.size() || text[pos] != ':')
          return fail("expected ':'");
        ++pos;
        if (!parseValue(out.object[key], depth + 1))
          return false;
        skipSpace();
        if (pos < text.size() && text[pos] == ',') {
          ++pos;
          continue;
        }
        if (pos < text.size() && text[pos] == '}') {
          ++pos;
          return true;
        }
        return fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      out.kind = Value::Kind::Array;
      ++pos;
      skipSpace();
      if (pos < text.size() && text[pos] == ']') {
        ++pos;
        return true;
      }
      while (true) {
        out.array.emplace_back();
        if (!parseValue(out.array.back(), depth + 1))
          return false;
        skipSpace();
        if (pos < text.size() && text[pos] == ',') {
          ++pos;
          continue;
        }
        if (pos < text.size() && text[pos] == ']') {
          ++pos;
          return true;
        }
        return fail("expected ',' or ']'");
      }
    }
    if (c == '"') {
      out.kind = Value::Kind::String;
      return parseString(out.string);
    }
    if (c == 't' || c == 'f') {
      out.kind = Value::Kind::Bool;
      out.boolean = c == 't';
      return literal(c == 't' ? "true" : "false");
    }
    if (c == 'n') {
      out.kind = Value::Kind::Null;
      return literal("null");
    }
    const char *start = text.c_str() + pos;
    char *end = nullptr;
    out.number = std::strtod(start, &end);
    if (end == start)
      return fail("unexpected character");
    out.kind = Value::Kind::Number;
    pos += static_cast<size_t>(end - start);
    return true;
  }

  const std::string &text;
  size_t pos = 0;
  std::string message;
};
} // namespace

bool remat::json::parse(const std::string &text, Value &out,
                        std::string &error) {
  return Parser(text).parseDocument(out, error);
}

//===- Json.h - A small streaming JSON writer --------------------*- C++ -*-===//
//
// Enough JSON for results.json: nested objects and arrays, strings, numbers
// (non-finite ones become null) and booleans, with commas handled by a stack.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace attnc_bench {

class JsonWriter {
public:
  JsonWriter &beginObject() { return open('{'); }
  JsonWriter &endObject() { return close('}'); }
  JsonWriter &beginArray() { return open('['); }
  JsonWriter &endArray() { return close(']'); }
  JsonWriter &key(const std::string &k) {
    comma();
    out << quote(k) << ": ";
    afterKey = true;
    return *this;
  }
  JsonWriter &value(const std::string &s) { return raw(quote(s)); }
  JsonWriter &value(const char *s) { return raw(quote(s)); }
  JsonWriter &value(bool b) { return raw(b ? "true" : "false"); }
  JsonWriter &value(double d) {
    if (!std::isfinite(d))
      return raw("null");
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", d);
    return raw(buf);
  }
  JsonWriter &value(int64_t i) { return raw(std::to_string(i)); }
  JsonWriter &value(int i) { return raw(std::to_string(i)); }
  template <typename T> JsonWriter &field(const std::string &k, const T &v) {
    key(k);
    return value(v);
  }
  std::string str() const { return out.str(); }

private:
  JsonWriter &open(char c) {
    comma();
    out << c;
    first.push_back(true);
    return *this;
  }
  JsonWriter &close(char c) {
    first.pop_back();
    out << c;
    return *this;
  }
  JsonWriter &raw(const std::string &s) {
    comma();
    out << s;
    return *this;
  }
  void comma() {
    if (afterKey) {
      afterKey = false;
      return;
    }
    if (!first.empty()) {
      if (!first.back())
        out << ", ";
      first.back() = false;
    }
  }
  static std::string quote(const std::string &s) {
    std::string q = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\')
        q += '\\', q += c;
      else if (c == '\n')
        q += "\\n";
      else if ((unsigned char)c < 0x20)
        q += ' ';
      else
        q += c;
    }
    return q + "\"";
  }

  std::ostringstream out;
  std::vector<bool> first;
  bool afterKey = false;
};

} // namespace attnc_bench

#pragma once
// Private: a minimal JSON writer for symmcomm's reports (objects, arrays, strings, numbers,
// booleans, null), enough for a small, fixed document without a JSON library in the library's
// build.

#include <cstdio>
#include <string>

namespace symmcomm::detail {

class JsonWriter {
 public:
  JsonWriter& begin_object(const char* key = nullptr) { return open(key, '{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array(const char* key = nullptr) { return open(key, '['); }
  JsonWriter& end_array() { return close(']'); }
  JsonWriter& value(const char* key, const std::string& v) {
    prefix(key);
    quote(v);
    return *this;
  }
  JsonWriter& value(const char* key, const char* v) {
    return v == nullptr ? null(key) : value(key, std::string(v));
  }
  JsonWriter& value(const char* key, bool v) {
    prefix(key);
    out_ += v ? "true" : "false";
    return *this;
  }
  JsonWriter& value(const char* key, long long v) {
    prefix(key);
    out_ += std::to_string(v);
    return *this;
  }
  JsonWriter& value(const char* key, int v) { return value(key, static_cast<long long>(v)); }
  JsonWriter& null(const char* key) {
    prefix(key);
    out_ += "null";
    return *this;
  }
  const std::string& str() const { return out_; }

 private:
  JsonWriter& open(const char* key, char bracket) {
    prefix(key);
    out_ += bracket;
    first_ = true;
    return *this;
  }
  JsonWriter& close(char bracket) {
    out_ += bracket;
    first_ = false;
    return *this;
  }
  void prefix(const char* key) {
    if (!first_) out_ += ',';
    first_ = false;
    if (key != nullptr) {
      quote(key);
      out_ += ':';
    }
  }
  void quote(const std::string& s) {
    out_ += '"';
    for (char c : s) {
      switch (c) {
        case '"':
          out_ += "\\\"";
          break;
        case '\\':
          out_ += "\\\\";
          break;
        case '\n':
          out_ += "\\n";
          break;
        case '\t':
          out_ += "\\t";
          break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
            out_ += buf;
          } else {
            out_ += c;
          }
      }
    }
    out_ += '"';
  }

  std::string out_;
  bool first_ = true;
};

}  // namespace symmcomm::detail

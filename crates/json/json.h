// A small streaming JSON writer (RFC 8259) with no knowledge of BGP.
//
// Used by `petrel decode`, the HTTP API and structured logs. It appends to a
// caller-owned std::string, puts commas where they belong, and never
// allocates except to grow that string (and its nesting stack past 16
// levels). Misuse (a value in an object without a key, an unbalanced end_*)
// is caught by asserts in debug builds.
//
// Strings: '"', '\\' and the control characters U+0000..U+001F are escaped
// (\b \f \n \r \t, others as \u00XX); valid UTF-8 is copied as it is. Each
// byte that is not part of a well-formed UTF-8 sequence (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF) is replaced by
// U+FFFD, so the output is always valid UTF-8 and valid JSON. Callers that
// must keep arbitrary bytes write them as hex instead.
//
// Top-level values are not separated by commas: write line_end() between
// them for newline-delimited JSON.
#pragma once

#include <cassert>
#include <charconv>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace petrel::json {

// Appends s to out as the contents of a JSON string (no quotes), escaped as
// described above.
void append_escaped(std::string& out, std::string_view s);

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) { stack_.reserve(16); }

  Writer& begin_object() {
    before_value();
    out_.push_back('{');
    stack_.push_back(Level{true, false});
    return *this;
  }
  Writer& end_object() {
    assert(!stack_.empty() && stack_.back().object && !after_key_);
    out_.push_back('}');
    stack_.pop_back();
    return *this;
  }
  Writer& begin_array() {
    before_value();
    out_.push_back('[');
    stack_.push_back(Level{false, false});
    return *this;
  }
  Writer& end_array() {
    assert(!stack_.empty() && !stack_.back().object);
    out_.push_back(']');
    stack_.pop_back();
    return *this;
  }

  // An object member's name; the next value written is its value.
  Writer& key(std::string_view k) {
    assert(!stack_.empty() && stack_.back().object && !after_key_);
    separator();
    out_.push_back('"');
    append_escaped(out_, k);
    out_.append("\":", 2);
    after_key_ = true;
    return *this;
  }
  // A key known to need no escaping (a literal in our code): no scan.
  Writer& key_raw(std::string_view k) {
    assert(!stack_.empty() && stack_.back().object && !after_key_);
    separator();
    out_.push_back('"');
    out_.append(k);
    out_.append("\":", 2);
    after_key_ = true;
    return *this;
  }

  Writer& string(std::string_view s) {
    before_value();
    out_.push_back('"');
    append_escaped(out_, s);
    out_.push_back('"');
    return *this;
  }
  // A string known to need no escaping (an address or prefix in text form,
  // a name from our own tables): quoted, not scanned.
  Writer& string_raw(std::string_view s) {
    before_value();
    out_.push_back('"');
    out_.append(s);
    out_.push_back('"');
    return *this;
  }

  template <std::integral T>
    requires(!std::same_as<T, bool>)
  Writer& number(T v) {
    before_value();
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, static_cast<size_t>(r.ptr - buf));
    return *this;
  }
  // Shortest round-trip form; NaN and infinities (not JSON) become null.
  Writer& number(double v);

  Writer& boolean(bool v) {
    before_value();
    if (v) {
      out_.append("true", 4);
    } else {
      out_.append("false", 5);
    }
    return *this;
  }
  Writer& null() {
    before_value();
    out_.append("null", 4);
    return *this;
  }
  // A complete JSON value written by the caller, copied as it is.
  Writer& raw(std::string_view json_text) {
    before_value();
    out_.append(json_text);
    return *this;
  }

  // Shorthands for an object member.
  Writer& member(std::string_view k, std::string_view v) { return key(k).string(v); }
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  Writer& member(std::string_view k, T v) {
    return key(k).number(v);
  }

  // Ends a top-level value with '\n' (newline-delimited JSON).
  Writer& line_end() {
    assert(stack_.empty() && !after_key_);
    out_.push_back('\n');
    return *this;
  }

  // True when every object and array opened has been closed.
  [[nodiscard]] bool complete() const { return stack_.empty() && !after_key_; }
  [[nodiscard]] size_t depth() const { return stack_.size(); }
  std::string& buffer() { return out_; }

 private:
  struct Level {
    bool object;
    bool need_comma;
  };

  // Writes the comma before an array element or object member.
  void separator() {
    if (stack_.empty()) return;
    Level& l = stack_.back();
    if (l.need_comma) out_.push_back(',');
    l.need_comma = true;
  }
  void before_value() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    assert(stack_.empty() || !stack_.back().object);
    separator();
  }

  std::string& out_;
  std::vector<Level> stack_;
  bool after_key_ = false;
};

}  // namespace petrel::json

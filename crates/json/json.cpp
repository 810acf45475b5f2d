// String escaping and number formatting for the JSON writer (RFC 8259
// section 7; UTF-8 well-formedness per RFC 3629 section 4).
#include "crates/json/json.h"

#include <array>
#include <cmath>

namespace petrel::json {
namespace {

enum : uint8_t { kCopy = 0, kEscape = 1, kNonAscii = 2 };

constexpr std::array<uint8_t, 256> make_classes() {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 0x20; ++c) t[static_cast<size_t>(c)] = kEscape;
  t['"'] = kEscape;
  t['\\'] = kEscape;
  for (int c = 0x80; c < 0x100; ++c) t[static_cast<size_t>(c)] = kNonAscii;
  return t;
}
constexpr std::array<uint8_t, 256> kClass = make_classes();

constexpr char kHex[] = "0123456789abcdef";

void append_control(std::string& out, unsigned char c) {
  switch (c) {
    case '"': out.append("\\\"", 2); return;
    case '\\': out.append("\\\\", 2); return;
    case '\b': out.append("\\b", 2); return;
    case '\f': out.append("\\f", 2); return;
    case '\n': out.append("\\n", 2); return;
    case '\r': out.append("\\r", 2); return;
    case '\t': out.append("\\t", 2); return;
    default: break;
  }
  char u[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xf]};
  out.append(u, 6);
}

// Length of the well-formed UTF-8 sequence starting at s[i] (a byte >=
// 0x80), or 0 if it is not one (RFC 3629 section 4's table).
size_t utf8_sequence(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  auto cont = [&](size_t k, unsigned char lo, unsigned char hi) {
    return i + k < s.size() && b(k) >= lo && b(k) <= hi;
  };
  unsigned char c = b(0);
  if (c >= 0xc2 && c <= 0xdf) return cont(1, 0x80, 0xbf) ? 2 : 0;
  if (c == 0xe0) return cont(1, 0xa0, 0xbf) && cont(2, 0x80, 0xbf) ? 3 : 0;
  if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef)
    return cont(1, 0x80, 0xbf) && cont(2, 0x80, 0xbf) ? 3 : 0;
  if (c == 0xed) return cont(1, 0x80, 0x9f) && cont(2, 0x80, 0xbf) ? 3 : 0;
  if (c == 0xf0)
    return cont(1, 0x90, 0xbf) && cont(2, 0x80, 0xbf) && cont(3, 0x80, 0xbf) ? 4 : 0;
  if (c >= 0xf1 && c <= 0xf3)
    return cont(1, 0x80, 0xbf) && cont(2, 0x80, 0xbf) && cont(3, 0x80, 0xbf) ? 4 : 0;
  if (c == 0xf4)
    return cont(1, 0x80, 0x8f) && cont(2, 0x80, 0xbf) && cont(3, 0x80, 0xbf) ? 4 : 0;
  return 0;
}

}  // namespace

void append_escaped(std::string& out, std::string_view s) {
  size_t run = 0;  // start of the bytes not yet copied
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    uint8_t cls = kClass[c];
    if (cls == kCopy) {
      ++i;
      continue;
    }
    if (cls == kNonAscii) {
      size_t n = utf8_sequence(s, i);
      if (n != 0) {
        i += n;
        continue;
      }
      out.append(s.data() + run, i - run);
      out.append("\xef\xbf\xbd", 3);  // U+FFFD REPLACEMENT CHARACTER
    } else {
      out.append(s.data() + run, i - run);
      append_control(out, c);
    }
    ++i;
    run = i;
  }
  out.append(s.data() + run, s.size() - run);
}

Writer& Writer::number(double v) {
  if (!std::isfinite(v)) return null();
  before_value();
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, static_cast<size_t>(r.ptr - buf));
  return *this;
}

}  // namespace petrel::json

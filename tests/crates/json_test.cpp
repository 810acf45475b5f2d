// Tests for crates/json: commas, escaping, numbers; output parses with
// nlohmann-json and strings round-trip (property tests).
#include "crates/json/json.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace petrel::json {
namespace {

std::string escaped(std::string_view s) {
  std::string out;
  append_escaped(out, s);
  return out;
}

TEST(JsonWriter, EmptyContainers) {
  std::string out;
  Writer w(out);
  w.begin_array().begin_object().end_object().begin_array().end_array().end_array();
  EXPECT_EQ(out, "[{},[]]");
  EXPECT_TRUE(w.complete());
}

TEST(JsonWriter, CommasInObjectsAndArrays) {
  std::string out;
  Writer w(out);
  w.begin_object();
  w.key("a").number(1);
  w.key("b").begin_array().number(-2).string("x").boolean(true).boolean(false).null().end_array();
  w.key_raw("c").begin_object().member("d", "e").member("f", uint64_t{7}).end_object();
  w.key("g").raw("[1,2]");
  w.end_object();
  EXPECT_EQ(out, R"({"a":1,"b":[-2,"x",true,false,null],"c":{"d":"e","f":7},"g":[1,2]})");
  EXPECT_TRUE(w.complete());
}

TEST(JsonWriter, TopLevelValuesAreLines) {
  std::string out;
  Writer w(out);
  w.begin_object().member("n", 1).end_object().line_end();
  w.begin_object().member("n", 2).end_object().line_end();
  w.number(3).line_end();
  EXPECT_EQ(out, "{\"n\":1}\n{\"n\":2}\n3\n");
}

TEST(JsonWriter, AppendsToExistingText) {
  std::string out = "data: ";
  Writer w(out);
  w.begin_array().string_raw("10.0.0.0/8").end_array();
  EXPECT_EQ(out, "data: [\"10.0.0.0/8\"]");
}

TEST(JsonWriter, IntegerExtremes) {
  std::string out;
  Writer w(out);
  w.begin_array()
      .number(std::numeric_limits<int64_t>::min())
      .number(std::numeric_limits<uint64_t>::max())
      .number(uint8_t{255})
      .number(int16_t{-1})
      .end_array();
  EXPECT_EQ(out, "[-9223372036854775808,18446744073709551615,255,-1]");
}

TEST(JsonWriter, DoublesAndNonFinite) {
  std::string out;
  Writer w(out);
  w.begin_array()
      .number(0.5)
      .number(std::numeric_limits<double>::infinity())
      .number(std::numeric_limits<double>::quiet_NaN())
      .number(1e300)
      .end_array();
  EXPECT_EQ(out, "[0.5,null,null,1e+300]");
}

TEST(JsonEscape, QuotesBackslashAndControls) {
  EXPECT_EQ(escaped("plain"), "plain");
  EXPECT_EQ(escaped("a\"b\\c"), "a\\\"b\\\\c");
  EXPECT_EQ(escaped("\b\f\n\r\t"), "\\b\\f\\n\\r\\t");
  EXPECT_EQ(escaped(std::string_view("\x00\x01\x1f", 3)), "\\u0000\\u0001\\u001f");
  EXPECT_EQ(escaped("\x7f"), "\x7f");  // DEL is allowed unescaped
}

TEST(JsonEscape, ValidUtf8IsCopied) {
  EXPECT_EQ(escaped("caf\xc3\xa9"), "caf\xc3\xa9");               // U+00E9
  EXPECT_EQ(escaped("\xe2\x82\xac"), "\xe2\x82\xac");             // U+20AC
  EXPECT_EQ(escaped("\xf0\x9f\x90\xa6"), "\xf0\x9f\x90\xa6");     // U+1F426
  EXPECT_EQ(escaped("\xf4\x8f\xbf\xbf"), "\xf4\x8f\xbf\xbf");     // U+10FFFF
}

TEST(JsonEscape, InvalidUtf8BytesBecomeReplacementCharacters) {
  const std::string r = "\xef\xbf\xbd";
  EXPECT_EQ(escaped("\xff"), r);
  EXPECT_EQ(escaped("a\x80z"), "a" + r + "z");
  EXPECT_EQ(escaped("\xc0\xaf"), r + r);          // overlong '/'
  EXPECT_EQ(escaped("\xed\xa0\x80"), r + r + r);  // surrogate U+D800
  EXPECT_EQ(escaped("\xf4\x90\x80\x80"), r + r + r + r);  // above U+10FFFF
  EXPECT_EQ(escaped("\xe2\x82"), r + r);          // truncated at the end
  EXPECT_EQ(escaped("\xc3\xa9\xc3"), "\xc3\xa9" + r);
}

// Reference model of the writer's UTF-8 policy, written independently of
// it: decode code points arithmetically, replace each byte that does not
// start a well-formed sequence with U+FFFD.
std::string sanitised(std::string_view s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = n != 0 && i + n <= s.size();
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1fu) : n == 3 ? (c & 0x0fu) : (c & 0x07u);
    for (size_t k = 1; ok && k < n; ++k) {
      auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) ok = false;
      cp = (cp << 6) | (d & 0x3fu);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (ok && (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))) ok = false;
    if (ok) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out.append("\xef\xbf\xbd");
      ++i;
    }
  }
  return out;
}

std::string any_string() {
  // Arbitrary bytes, biased towards the interesting ones.
  return *rc::gen::container<std::string>(rc::gen::oneOf(
      rc::gen::arbitrary<char>(),
      rc::gen::elementOf(std::vector<char>{'"', '\\', '\n', '\0', '\x1f', 'a'}),
      rc::gen::map(rc::gen::inRange(0x80, 0x100), [](int c) { return static_cast<char>(c); })));
}

// Writes a random value with w and returns what a parser should read back.
nlohmann::json write_random(Writer& w, int depth) {
  switch (*rc::gen::inRange(0, depth > 0 ? 8 : 6)) {
    case 0: w.null(); return nullptr;
    case 1: { bool b = *rc::gen::arbitrary<bool>(); w.boolean(b); return b; }
    case 2: { auto v = *rc::gen::arbitrary<int64_t>(); w.number(v); return v; }
    case 3: { auto v = *rc::gen::arbitrary<uint64_t>(); w.number(v); return v; }
    case 4: case 5: { auto s = any_string(); w.string(s); return sanitised(s); }
    case 6: {
      auto a = nlohmann::json::array();
      w.begin_array();
      int n = *rc::gen::inRange(0, 5);
      for (int k = 0; k < n; ++k) a.push_back(write_random(w, depth - 1));
      w.end_array();
      return a;
    }
    default: {
      auto o = nlohmann::json::object();
      w.begin_object();
      int n = *rc::gen::inRange(0, 5);
      for (int k = 0; k < n; ++k) {
        auto key = any_string();
        w.key(key);
        o[sanitised(key)] = write_random(w, depth - 1);  // a repeated key: the last wins
      }
      w.end_object();
      return o;
    }
  }
}

RC_GTEST_PROP(JsonWriterProp, OutputParsesToWhatWasWritten, ()) {
  std::string out;
  Writer w(out);
  nlohmann::json expected = write_random(w, 3);
  RC_ASSERT(w.complete());
  nlohmann::json parsed = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  RC_ASSERT(!parsed.is_discarded());
  RC_ASSERT(parsed == expected);
}

RC_GTEST_PROP(JsonWriterProp, ValidUtf8StringsRoundTrip, ()) {
  // Code points from every UTF-8 length, surrogates excluded.
  auto cps = *rc::gen::container<std::vector<uint32_t>>(rc::gen::oneOf(
      rc::gen::inRange<uint32_t>(0, 0x80), rc::gen::inRange<uint32_t>(0x80, 0x800),
      rc::gen::inRange<uint32_t>(0x800, 0xd800), rc::gen::inRange<uint32_t>(0xe000, 0x10000),
      rc::gen::inRange<uint32_t>(0x10000, 0x110000)));
  std::string s;
  for (uint32_t cp : cps) {
    if (cp < 0x80) {
      s.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      s.push_back(static_cast<char>(0xc0 | (cp >> 6)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      s.push_back(static_cast<char>(0xe0 | (cp >> 12)));
      s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      s.push_back(static_cast<char>(0xf0 | (cp >> 18)));
      s.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }
  std::string out;
  Writer(out).string(s);
  auto parsed = nlohmann::json::parse(out, nullptr, false);
  RC_ASSERT(parsed.is_string());
  RC_ASSERT(parsed.get<std::string>() == s);
}

RC_GTEST_PROP(JsonWriterProp, EscapingMatchesTheModel, ()) {
  auto s = any_string();
  std::string out;
  Writer(out).string(s);
  auto parsed = nlohmann::json::parse(out, nullptr, false);
  RC_ASSERT(parsed.is_string());
  RC_ASSERT(parsed.get<std::string>() == sanitised(s));
}

}  // namespace
}  // namespace petrel::json

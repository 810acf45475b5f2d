// Tests of rpki/framer.h: PDUs out of a stream split anywhere; a bad header
// is refused as soon as its 8 bytes are in.
#include "rpki/framer.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "tests/rpki/rpki_testing.h"

namespace petrel::rpki {
namespace {

using testing::hex;

std::vector<std::vector<std::byte>> drain(Framer& f, bool& error) {
  std::vector<std::vector<std::byte>> out;
  bytes::Span pdu;
  DecodeError err;
  for (;;) {
    auto s = f.next(pdu, err);
    if (s == Framer::Status::kNeedMore) return out;
    if (s == Framer::Status::kError) {
      error = true;
      return out;
    }
    out.emplace_back(pdu.begin(), pdu.end());
  }
}

TEST(Framer, EverySplitPoint) {
  std::vector<std::byte> stream;
  encode(1, CacheResponse{7}, stream);
  encode(1, PrefixPdu{true, {*net::Prefix::parse("192.0.2.0/24"), 24, 1}}, stream);
  encode(1, EndOfData{7, 1, Intervals{}}, stream);
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    Framer f;
    bool error = false;
    f.feed(bytes::Span(stream).first(cut));
    auto a = drain(f, error);
    f.feed(bytes::Span(stream).subspan(cut));
    auto b = drain(f, error);
    EXPECT_FALSE(error);
    EXPECT_EQ(a.size() + b.size(), 3u) << cut;
    EXPECT_EQ(f.buffered(), 0u);
  }
}

TEST(Framer, ByteByByte) {
  std::vector<std::byte> stream;
  encode(0, CacheResponse{7}, stream);
  encode(0, EndOfData{7, 1, std::nullopt}, stream);
  Framer f;
  bool error = false;
  size_t got = 0;
  for (std::byte b : stream) {
    f.feed(bytes::Span(&b, 1));
    got += drain(f, error).size();
  }
  EXPECT_FALSE(error);
  EXPECT_EQ(got, 2u);
}

TEST(Framer, BadHeaderIsAnErrorBeforeTheBody) {
  Framer f;
  f.feed(hex("01 0a 0000 7fffffff"));  // an Error Report of 2 GB
  bytes::Span pdu;
  DecodeError err;
  EXPECT_EQ(f.next(pdu, err), Framer::Status::kError);
  EXPECT_EQ(err.code, ErrorCode::kCorruptData);
  EXPECT_EQ(f.offending().size(), 8u);
  // It stays in error.
  f.feed(hex("01 02 0000 00000008"));
  EXPECT_EQ(f.next(pdu, err), Framer::Status::kError);

  Framer g;
  g.feed(hex("01 04 0000 00000015"));  // IPv4 Prefix is 20 bytes
  EXPECT_EQ(g.next(pdu, err), Framer::Status::kError);
  Framer h;
  h.feed(hex("07 02 0000 00000008"));
  EXPECT_EQ(h.next(pdu, err), Framer::Status::kError);
  EXPECT_EQ(err.code, ErrorCode::kUnsupportedProtocolVersion);
  h.reset();
  h.feed(hex("01 02 0000"));
  EXPECT_EQ(h.next(pdu, err), Framer::Status::kNeedMore);
}

RC_GTEST_PROP(Framer, RandomSplitsOfValidStreams, ()) {
  auto msgs = *rc::gen::container<std::vector<Message>>(testing::gen_message());
  std::vector<std::byte> stream;
  for (const auto& m : msgs) encode(m.version, m.pdu, stream);
  Framer f;
  bool error = false;
  std::vector<std::vector<std::byte>> got;
  size_t at = 0;
  while (at < stream.size()) {
    size_t n = *rc::gen::inRange<size_t>(1, 40);
    n = std::min(n, stream.size() - at);
    f.feed(bytes::Span(stream).subspan(at, n));
    at += n;
    for (auto& p : drain(f, error)) got.push_back(std::move(p));
  }
  RC_ASSERT(!error);
  RC_ASSERT(got.size() == msgs.size());
  for (size_t i = 0; i < msgs.size(); ++i) {
    auto m = decode(got[i]);
    RC_ASSERT(m.ok());
    RC_ASSERT(*m == msgs[i]);
  }
}

// Hostile streams: never more than the declared length is handed out, and
// each PDU handed out passed the header check.
RC_GTEST_PROP(Framer, HostileStreams, ()) {
  auto raw = *rc::gen::container<std::vector<uint8_t>>(rc::gen::arbitrary<uint8_t>());
  Framer f;
  std::vector<std::byte> in;
  for (uint8_t b : raw) in.push_back(std::byte{b});
  size_t at = 0;
  while (at < in.size()) {
    size_t n = std::min(in.size() - at, *rc::gen::inRange<size_t>(1, 16));
    f.feed(bytes::Span(in).subspan(at, n));
    at += n;
    bytes::Span pdu;
    DecodeError err;
    Framer::Status s;
    while ((s = f.next(pdu, err)) == Framer::Status::kPdu) {
      auto h = check_header(pdu.first(kHeaderLen));
      RC_ASSERT(h.ok());
      RC_ASSERT(h->length == pdu.size());
    }
    if (s == Framer::Status::kError) RC_ASSERT(f.offending().size() >= kHeaderLen);
  }
}

}  // namespace
}  // namespace petrel::rpki

// Tests for fsm/events.h: the event for each message from the framer, and
// the names.
#include "fsm/events.h"

#include <gtest/gtest.h>

#include <set>

#include "fsm/negotiate.h"
#include "tests/fsm/fsm_testing.h"

namespace petrel::fsm {
namespace {

// Frames `bytes` (one whole message) and turns it into an event.
Event event_of(const std::vector<std::byte>& bytes) {
  codec::Framer f;
  f.feed(bytes);
  codec::Message m;
  codec::NotifyError e;
  EXPECT_EQ(f.next(m, e), codec::Framer::Status::kMessage);
  return event_from_message(m);
}

TEST(FromMessage, Open) {
  std::vector<std::byte> b;
  codec::encode_open(our_open(testing::config_b()), b);
  Event e = event_of(b);
  ASSERT_TRUE(std::holds_alternative<OpenReceived>(e));
  EXPECT_EQ(std::get<OpenReceived>(e).open.as(), 65002u);
}

TEST(FromMessage, MalformedOpenIsAnOpenError) {
  std::vector<std::byte> b;
  codec::encode_open(our_open(testing::config_b()), b);
  b[codec::kHeaderLen] = std::byte{3};  // version 3
  Event e = event_of(b);
  ASSERT_TRUE(std::holds_alternative<MessageError>(e));
  const auto& m = std::get<MessageError>(e);
  EXPECT_EQ(m.type, codec::MessageType::kOpen);
  EXPECT_EQ(m.error.code, codec::ErrorCode::kOpenMessage);
  EXPECT_EQ(m.error.subcode, codec::open_error::kUnsupportedVersion);
}

TEST(FromMessage, KeepaliveUpdateNotificationRefresh) {
  std::vector<std::byte> ka;
  codec::encode_keepalive(ka);
  EXPECT_TRUE(std::holds_alternative<KeepaliveReceived>(event_of(ka)));

  std::vector<std::byte> n;
  codec::encode_notification(codec::Notification{4, 0, {}}, n);
  Event ne = event_of(n);
  ASSERT_TRUE(std::holds_alternative<NotificationReceived>(ne));
  EXPECT_EQ(std::get<NotificationReceived>(ne).notification.code, 4);

  std::vector<std::byte> rr;
  codec::RouteRefresh r;
  r.family = codec::kIpv6Unicast;
  codec::encode_route_refresh(r, rr);
  Event re = event_of(rr);
  ASSERT_TRUE(std::holds_alternative<RouteRefreshReceived>(re));
  EXPECT_EQ(std::get<RouteRefreshReceived>(re).refresh.family, codec::kIpv6Unicast);

  auto up = *bytes::from_hex("ffffffffffffffffffffffffffffffff 0017 02 00000000");
  Event ue = event_of(up);
  ASSERT_TRUE(std::holds_alternative<UpdateReceived>(ue));
  EXPECT_EQ(std::get<UpdateReceived>(ue).body.size(), 4u);
}

TEST(FromMessage, RouteRefreshOfTheWrongLength) {
  auto rr = *bytes::from_hex("ffffffffffffffffffffffffffffffff 0018 05 0001010100");  // a BoRR of 5 octets
  Event e = event_of(rr);
  ASSERT_TRUE(std::holds_alternative<MessageError>(e));
  EXPECT_EQ(std::get<MessageError>(e).type, codec::MessageType::kRouteRefresh);
  EXPECT_EQ(std::get<MessageError>(e).error.code, codec::ErrorCode::kRouteRefresh);
}

TEST(Kinds, MatchTheVariantAndHaveDistinctNames) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < kEventKindCount; ++i) {
    auto k = static_cast<EventKind>(i);
    EXPECT_EQ(event_kind(testing::sample_event(k)), k);
    names.insert(event_kind_name(k));
  }
  EXPECT_EQ(names.size(), kEventKindCount);
  EXPECT_TRUE(is_message(EventKind::kUpdateReceived));
  EXPECT_FALSE(is_message(EventKind::kHoldTimerExpired));
}

}  // namespace
}  // namespace petrel::fsm

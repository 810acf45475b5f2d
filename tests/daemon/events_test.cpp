// Tests of daemon/events.h: the wire form of an event, the filters, a
// client's bounded queue (a slow client is dropped with a final event,
// publishing never waits), and the hub end to end: a best-route change
// applied to a real table and a session line logged both reach a client,
// the hub's thread woken by the table.
#include "daemon/events.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "codec/attribute_set.h"
#include "daemon/log.h"
#include "table/table.h"

namespace petrel::daemon {
namespace {

using nlohmann::json;

net::Prefix P(const char* s) { return *net::Prefix::parse(s); }

Event best_event(const char* prefix, const char* peer) {
  Event e;
  e.type = "best-change";
  e.prefix = P(prefix);
  e.peer = peer;
  e.data = "{}";
  return e;
}

Event session_event(const char* type, const char* peer) {
  Event e;
  e.type = type;
  e.peer = peer;
  e.data = "{}";
  return e;
}

// What a client's stream holds now, keep-alives left out.
std::vector<std::string> drain(EventClient& c) {
  std::vector<std::string> out;
  for (int i = 0; i < 10000; ++i) {
    auto s = c.next(0);
    if (!s || s->starts_with(":")) break;
    out.push_back(*s);
  }
  return out;
}

TEST(Events, WireForm) {
  Event e = best_event("192.0.2.0/24", "a");
  e.id = 7;
  e.data = R"({"x":1})";
  EXPECT_EQ(format_sse(e), "id: 7\nevent: best-change\ndata: {\"x\":1}\n\n");
}

TEST(Events, Filters) {
  EventFilter none;
  EXPECT_TRUE(none.passes(best_event("192.0.2.0/24", "a")));
  EventFilter peer{"a", std::nullopt};
  EXPECT_TRUE(peer.passes(session_event("session-up", "a")));
  EXPECT_FALSE(peer.passes(session_event("session-up", "b")));
  EXPECT_FALSE(peer.passes(best_event("192.0.2.0/24", "b")));
  EXPECT_TRUE(peer.passes(best_event("192.0.2.0/24", "")));  // no route left: no peer to filter on
  EventFilter prefix{"", P("192.0.2.0/23")};
  EXPECT_TRUE(prefix.passes(best_event("192.0.2.0/24", "a")));
  EXPECT_TRUE(prefix.passes(best_event("192.0.3.128/25", "a")));
  EXPECT_FALSE(prefix.passes(best_event("192.0.4.0/24", "a")));
  EXPECT_FALSE(prefix.passes(best_event("192.0.0.0/16", "a")));  // covers the filter, is not inside it
  EXPECT_TRUE(prefix.passes(session_event("session-down", "a")));
}

TEST(Events, SlowClientIsDroppedWithAFinalEvent) {
  EventHub hub;  // not started: publish() alone
  auto slow = hub.subscribe({}, 4);
  auto other = hub.subscribe({"b", std::nullopt}, 4);
  ASSERT_TRUE(slow && other);
  for (int i = 0; i < 4; ++i) hub.publish(best_event("192.0.2.0/24", "a"));
  EXPECT_FALSE(slow->closed());
  hub.publish(best_event("192.0.2.0/24", "a"));  // the fifth: over the bound
  EXPECT_TRUE(slow->closed());
  auto got = drain(*slow);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].starts_with("id: 5\nevent: dropped\n")) << got[0];
  EXPECT_NE(got[0].find("fell 4 events behind"), std::string::npos);
  EXPECT_FALSE(slow->next(0).has_value()) << "the stream ends after the final event";
  // the filtered client saw none of them and is still open
  EXPECT_FALSE(other->closed());
  EXPECT_TRUE(drain(*other).empty());
  hub.publish(session_event("session-up", "b"));
  auto b = drain(*other);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_TRUE(b[0].starts_with("id: 6\nevent: session-up\n")) << b[0];
}

TEST(Events, ClientLimit) {
  EventHub hub;
  std::vector<std::shared_ptr<EventClient>> clients;
  for (size_t i = 0; i < EventHub::kMaxClients; ++i) clients.push_back(hub.subscribe({}));
  EXPECT_EQ(hub.subscribe({}), nullptr);
  hub.unsubscribe(clients.back());
  EXPECT_TRUE(clients.back()->closed());
  EXPECT_NE(hub.subscribe({}), nullptr);
}

TEST(Events, KeepAliveWhenIdle) {
  EventClient c({}, 8);
  auto s = c.next(10);
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, ": keep-alive\n\n");
}

// The next event of `type` the client reads within a few seconds.
std::optional<json> wait_for(EventClient& c, std::string_view type) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    auto s = c.next(100);
    if (!s) return std::nullopt;
    std::string head = "event: " + std::string(type) + "\n";
    auto at = s->find(head);
    if (at == std::string::npos) continue;
    auto data = s->find("data: ", at);
    return json::parse(s->substr(data + 6));
  }
  return std::nullopt;
}

// The table slot of peer "upstream" (192.0.2.2, AS 65002).
uint16_t add_upstream(table::Table& t) {
  table::PeerInfo info;
  info.address = net::IpAddress::v4(0xC0000202);
  info.router_id = 2;
  info.asn = 65002;
  info.name = "upstream";
  return *t.add_peer(info);
}

// An attribute set from upstream with this AS_PATH.
codec::AttributeSet upstream_set(std::vector<uint32_t> path) {
  codec::PathAttributes a;
  a.origin = codec::Origin::kIgp;
  a.as_path = codec::AsPath{{{codec::SegmentType::kAsSequence, std::move(path)}}};
  a.next_hop = net::IpAddress::v4(0xC0000202);
  return codec::AttributeSet::from(a);
}

TEST(Events, HubCarriesBestChangesAndSessionLines) {
  table::Table t;
  auto slot = add_upstream(t);
  EventHub hub;
  hub.start(t);
  auto all = hub.subscribe({});
  auto only = hub.subscribe({"", P("198.51.100.0/24")});
  ASSERT_TRUE(all && only);

  auto set = upstream_set({65002, 65010});
  std::vector<codec::NlriPrefix> ann = {{P("192.0.2.0/24"), 0}};
  t.apply(slot, 0, &set, ann, {});
  auto ev = wait_for(*all, "best-change");
  ASSERT_TRUE(ev);
  EXPECT_EQ((*ev)["prefix"], "192.0.2.0/24");
  EXPECT_EQ((*ev)["family"], "ipv4-unicast");
  EXPECT_EQ((*ev)["best"]["peer"], "upstream");
  EXPECT_EQ((*ev)["best"]["next_hop"], "192.0.2.2");
  EXPECT_EQ((*ev)["best"]["as_path_length"], 2);
  EXPECT_EQ((*ev)["best"]["origin_as"], 65010);
  // withdrawn: the best is null
  t.apply(slot, 0, nullptr, {}, ann);
  ev = wait_for(*all, "best-change");
  ASSERT_TRUE(ev);
  EXPECT_TRUE((*ev)["best"].is_null());

  log(LogLevel::kDebug, "session-down", {{"peer", "upstream"}, {"cause", "hold-timer-expired"}}, "Hold Timer Expired");
  log(LogLevel::kInfo, "dial-scheduled", {{"peer", "upstream"}});  // not a session event
  ev = wait_for(*all, "session-down");
  ASSERT_TRUE(ev);
  EXPECT_EQ(*ev, json::parse(R"({"peer":"upstream","cause":"hold-timer-expired","reason":"Hold Timer Expired"})"));

  // prefix=198.51.100.0/24 kept out both 192.0.2.0/24 changes; the
  // session line has no prefix, so that filter does not apply to it
  auto got = drain(*only);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_NE(got[0].find("event: session-down"), std::string::npos);

  hub.stop();
  EXPECT_TRUE(all->closed());
  log(LogLevel::kInfo, "session-up", {{"peer", "upstream"}});  // after stop: no hub, no crash
}

// The hub's thread reads when the table wakes it: with nobody listening it
// does not read at all, a client gets the changes made after it came (not
// one from before), and a change reaches it at once, well within the
// thread's one-second safety wait (a wake missed would show as a
// keep-alive first: next(900) gives one after 900 ms without an event).
TEST(Events, HubIsWokenByTheTable) {
  table::Table t;
  auto slot = add_upstream(t);
  EventHub hub;
  hub.start(t);
  auto set = upstream_set({65002});
  std::vector<codec::NlriPrefix> before = {{P("192.0.2.0/24"), 0}}, after = {{P("198.51.100.0/24"), 0}};
  t.apply(slot, 0, &set, before, {});
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto c = hub.subscribe({});
  ASSERT_TRUE(c);
  for (int round = 0; round < 3; ++round) {
    if (round % 2 == 0) t.apply(slot, 0, &set, after, {});
    else t.apply(slot, 0, nullptr, {}, after);
    auto s = c->next(900);
    ASSERT_TRUE(s);
    EXPECT_NE(s->find("event: best-change\n"), std::string::npos) << "round " << round << ": " << *s;
    EXPECT_NE(s->find("198.51.100.0/24"), std::string::npos) << "round " << round << ": " << *s;
  }
  hub.stop();
}

}  // namespace
}  // namespace petrel::daemon

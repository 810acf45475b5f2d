// Two state machines wired back to back in memory, on a fake clock, for
// tests and fuzzing (in the manner of h11's connection pair): every message
// goes out as bytes, through the codec's framer and decoders, into the
// other side's step(). The pair plays the daemon's part: it dials, accepts,
// closes, reports unsent bytes (RFC 9687) and arms one timer per side at
// next_deadline().
//
// The connection model is deliberately small: at most one TCP connection
// at a time; a dial reaches the other side only if it is listening
// (Connect or Active), else it fails at once; closing one end delivers
// what was already written and then fails the other end.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "codec/framer.h"
#include "codec/notification.h"
#include "codec/route_refresh.h"
#include "crates/bytes/bytes.h"
#include "fsm/actions.h"
#include "fsm/config.h"
#include "fsm/events.h"
#include "fsm/fsm.h"

namespace petrel::fsm {

enum class Side : uint8_t { kA = 0, kB = 1 };
inline constexpr Side other(Side s) { return s == Side::kA ? Side::kB : Side::kA; }

// What one side did, for tests to look at.
struct Trace {
  std::vector<codec::MessageType> sent;             // every message written
  std::vector<codec::Notification> notifications;   // the NOTIFICATIONs among them
  std::vector<std::vector<std::byte>> updates;      // UPDATE bodies delivered to it
  std::vector<codec::RouteRefresh> refreshes;       // ROUTE-REFRESHes delivered
  std::vector<SessionDown> downs;
  std::vector<uint32_t> accepted_opens;             // peer ids from OpenAccepted
  int ups = 0;
  int dials = 0;
  std::vector<std::string> log;                     // one line per event and action
};

class SessionPair {
 public:
  SessionPair(PeerConfig a, PeerConfig b, Time start = Time{});

  [[nodiscard]] Fsm& fsm(Side s) { return fsms_[idx(s)]; }
  [[nodiscard]] const Trace& trace(Side s) const { return traces_[idx(s)]; }
  [[nodiscard]] Time now() const { return now_; }
  [[nodiscard]] bool connected() const { return connected_; }

  // Steps one side at the current time, then runs until nothing moves.
  void step(Side s, const Event& e);
  // Steps both sides at the current time before anything moves (two
  // speakers started together), then runs.
  void step_both(const Event& a, const Event& b);
  // Delivers what is in flight and the events that follow, until quiet.
  void run();
  // Moves the clock forward by d, firing each side's timers as they come
  // due and delivering messages in between (the wire has no delay).
  void advance(Duration d);
  void advance_to(Time t);

  // Whether Trace::log gets a line per event and action (off for fuzzing).
  void set_logging(bool on) { logging_ = on; }
  // A side that stops reading (RFC 9687): the other side's bytes wait, and
  // the other side is told since when. Reading again delivers them.
  void set_reading(Side s, bool reading);
  // The routing side of `from` writes an UPDATE with this body.
  void send_update(Side from, bytes::Span body);
  // Raw bytes from `from` on the wire as they are, for malformed input.
  void inject(Side from, bytes::Span raw);
  // The TCP connection fails under both sides.
  void break_connection();

 private:
  static size_t idx(Side s) { return static_cast<size_t>(s); }
  void step_now(Side s, const Event& e);
  void perform(Side s, Actions& actions);
  void write(Side from, std::vector<std::byte> bytes);
  void deliver(Side to);
  void disconnect(Side by);
  void connect(Side dialer);
  [[nodiscard]] bool moving() const;
  void note(Side s, std::string line);

  std::array<Fsm, 2> fsms_;
  std::array<Trace, 2> traces_;
  std::array<codec::Framer, 2> framers_;          // framers_[s] reads what s receives
  std::array<std::vector<std::byte>, 2> wire_;    // wire_[s]: written by s, not yet read
  std::array<bool, 2> reading_{true, true};
  std::array<bool, 2> stuck_{false, false};       // s was told its bytes wait
  std::array<bool, 2> dialling_{false, false};
  // Work queued for run(): an event for a side, or (no event) the end of
  // the connection for that side: the bytes the other end wrote before it
  // closed, then TcpFailed.
  struct Work {
    Side side;
    std::optional<Event> event;
    std::vector<std::byte> leftover;
  };
  void closed(Side s, std::vector<std::byte> leftover);

  std::deque<Work> pending_;
  bool connected_ = false;
  bool logging_ = true;
  uint64_t generation_ = 0;  // bumped by every connect and disconnect
  Time now_;
};

}  // namespace petrel::fsm

// Two FSMs back to back on a fake clock; see session_pair.h.
#include "fsm/session_pair.h"

#include <algorithm>

namespace petrel::fsm {

namespace {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

std::string at(Time t) { return std::to_string(t.time_since_epoch().count()) + "ms "; }

}  // namespace

SessionPair::SessionPair(PeerConfig a, PeerConfig b, Time start)
    : fsms_{Fsm(std::move(a)), Fsm(std::move(b))}, now_(start) {}

void SessionPair::note(Side s, std::string line) {
  if (logging_) traces_[idx(s)].log.push_back(at(now_) + line);
}

void SessionPair::step(Side s, const Event& e) {
  step_now(s, e);
  run();
}

void SessionPair::step_both(const Event& a, const Event& b) {
  step_now(Side::kA, a);
  step_now(Side::kB, b);
  run();
}

void SessionPair::step_now(Side s, const Event& e) {
  if (logging_)
    note(s, std::string("event ") + std::string(event_kind_name(event_kind(e))) + " in " +
              std::string(state_name(fsm(s).state())));
  Actions actions;
  fsm(s).step(e, now_, actions);
  perform(s, actions);
}

void SessionPair::perform(Side s, Actions& actions) {
  Trace& tr = traces_[idx(s)];
  for (Action& a : actions) {
    std::visit(Overloaded{
                   [&](Send& x) {
                     tr.sent.push_back(x.type);
                     note(s, "send " + std::string(codec::message_type_name(x.type)));
                     if (x.type == codec::MessageType::kNotification) {
                       auto n = codec::decode_notification(bytes::Span(x.bytes).subspan(codec::kHeaderLen));
                       if (n) tr.notifications.push_back(*n);
                     }
                     write(s, std::move(x.bytes));
                   },
                   [&](Connect&) {
                     ++tr.dials;
                     note(s, "dial");
                     dialling_[idx(s)] = true;
                   },
                   [&](Disconnect&) {
                     note(s, "disconnect");
                     disconnect(s);
                   },
                   [&](TimerArmed& x) {
                     note(s, "arm " + std::string(timer_name(x.timer)) + " at " + at(x.deadline));
                   },
                   [&](TimerStopped& x) { note(s, "stop " + std::string(timer_name(x.timer))); },
                   [&](OpenAccepted& x) { tr.accepted_opens.push_back(x.peer_id); },
                   [&](SessionUp& x) {
                     ++tr.ups;
                     note(s, "up");
                     framers_[idx(s)].set_max_len(x.params.max_message_len());
                   },
                   [&](DeliverUpdate& x) { tr.updates.emplace_back(x.body.begin(), x.body.end()); },
                   [&](DeliverRouteRefresh& x) { tr.refreshes.push_back(x.refresh); },
                   [&](SessionDown& x) {
                     tr.downs.push_back(x);
                     note(s, "down " + std::string(down_cause_name(x.cause)));
                   },
                   [&](Ignored& x) { note(s, "ignored " + std::string(event_kind_name(x.event))); },
               },
               a);
  }
}

void SessionPair::write(Side from, std::vector<std::byte> bytes) {
  if (!connected_) {
    note(from, "no connection: bytes dropped");
    return;
  }
  auto& w = wire_[idx(from)];
  w.insert(w.end(), bytes.begin(), bytes.end());
  if (!reading_[idx(other(from))] && !stuck_[idx(from)]) {
    stuck_[idx(from)] = true;
    pending_.push_back({from, SendProgress{now_}, {}});
  }
}

void SessionPair::deliver(Side to) {
  Side from = other(to);
  auto& w = wire_[idx(from)];
  if (!connected_ || !reading_[idx(to)] || w.empty()) return;
  codec::Framer& f = framers_[idx(to)];
  f.feed(w);
  w.clear();
  uint64_t gen = generation_;
  codec::Message m;
  codec::NotifyError err;
  // Each message is stepped before the framer is asked for the next: an
  // UPDATE's body views the framer's buffer.
  while (connected_ && generation_ == gen) {
    codec::Framer::Status st = f.next(m, err);
    if (st == codec::Framer::Status::kNeedMore) return;
    if (st == codec::Framer::Status::kError) return step_now(to, MessageError{err, std::nullopt});
    step_now(to, event_from_message(m));
  }
}

void SessionPair::closed(Side s, std::vector<std::byte> leftover) {
  // What the other end wrote before closing still arrives, on a framer of
  // its own: this connection's framer state goes with it.
  codec::Framer f(framers_[idx(s)].max_len());
  f.feed(leftover);
  codec::Message m;
  codec::NotifyError err;
  for (;;) {
    if (fsm(s).state() == State::kIdle) break;
    codec::Framer::Status st = f.next(m, err);
    if (st != codec::Framer::Status::kMessage) break;
    step_now(s, event_from_message(m));
  }
  if (fsm(s).state() != State::kIdle) step_now(s, TcpFailed{});
}

void SessionPair::disconnect(Side by) {
  dialling_[idx(by)] = false;
  if (!connected_) return;
  connected_ = false;
  ++generation_;
  Side peer = other(by);
  std::vector<std::byte> leftover;
  if (reading_[idx(peer)]) leftover = std::move(wire_[idx(by)]);
  wire_ = {};
  stuck_ = {false, false};
  pending_.push_back({peer, std::nullopt, std::move(leftover)});
}

void SessionPair::connect(Side dialer) {
  dialling_[idx(dialer)] = false;
  if (connected_) {
    note(dialer, "dial ignored: the pair holds one connection");
    return;
  }
  Side listener = other(dialer);
  State ls = fsm(listener).state();
  if (ls != State::kConnect && ls != State::kActive) {
    pending_.push_back({dialer, TcpFailed{}, {}});
    return;
  }
  connected_ = true;
  ++generation_;
  dialling_[idx(listener)] = false;
  for (size_t i = 0; i < 2; ++i) framers_[i] = codec::Framer();
  wire_ = {};
  stuck_ = {false, false};
  pending_.push_back({dialer, TcpConnected{}, {}});
  pending_.push_back({listener, TcpAccepted{}, {}});
}

void SessionPair::run() {
  for (;;) {
    if (!pending_.empty()) {
      Work w = std::move(pending_.front());
      pending_.pop_front();
      if (w.event) {
        step_now(w.side, *w.event);
      } else {
        closed(w.side, std::move(w.leftover));
      }
      continue;
    }
    bool moved = false;
    for (Side s : {Side::kA, Side::kB}) {
      if (dialling_[idx(s)]) {
        connect(s);
        moved = true;
        break;
      }
      if (connected_ && reading_[idx(s)] && !wire_[idx(other(s))].empty()) {
        deliver(s);
        moved = true;
        break;
      }
    }
    if (!moved) return;
  }
}

void SessionPair::advance(Duration d) { advance_to(now_ + d); }

void SessionPair::advance_to(Time t) {
  run();
  for (;;) {
    std::optional<Time> due;
    for (Side s : {Side::kA, Side::kB}) {
      auto d = fsm(s).next_deadline();
      if (d && (!due || *d < *due)) due = d;
    }
    if (!due || *due > t) break;
    now_ = std::max(now_, *due);
    for (Side s : {Side::kA, Side::kB}) {
      auto d = fsm(s).next_deadline();
      if (d && *d <= now_) step_now(s, Tick{});
    }
    run();
  }
  now_ = std::max(now_, t);
}

void SessionPair::set_reading(Side s, bool reading) {
  reading_[idx(s)] = reading;
  Side from = other(s);
  if (reading && stuck_[idx(from)]) {
    stuck_[idx(from)] = false;
    pending_.push_back({from, SendProgress{std::nullopt}, {}});
  } else if (!reading && connected_ && !wire_[idx(from)].empty() && !stuck_[idx(from)]) {
    stuck_[idx(from)] = true;
    pending_.push_back({from, SendProgress{now_}, {}});
  }
  run();
}

void SessionPair::send_update(Side from, bytes::Span body) {
  std::vector<std::byte> msg;
  bytes::Writer w(msg);
  size_t start = codec::begin_message(w, codec::MessageType::kUpdate);
  w.bytes(body);
  codec::finish_message(w, start);
  traces_[idx(from)].sent.push_back(codec::MessageType::kUpdate);
  write(from, std::move(msg));
  step_now(from, UpdateSent{});
  run();
}

void SessionPair::inject(Side from, bytes::Span raw) {
  write(from, std::vector<std::byte>(raw.begin(), raw.end()));
  run();
}

void SessionPair::break_connection() {
  if (connected_) {
    connected_ = false;
    ++generation_;
    wire_ = {};
    stuck_ = {false, false};
    pending_.push_back({Side::kA, TcpFailed{}, {}});
    pending_.push_back({Side::kB, TcpFailed{}, {}});
  }
  run();
}

}  // namespace petrel::fsm

// The RTR client machine (see client.h for what it does and why).
#include "rpki/client.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include "rpki/internal/overloaded.h"

namespace petrel::rpki {
namespace {

using internal::Overloaded;

// RFC 1982 serial number arithmetic: a comes before b.
bool serial_before(uint32_t a, uint32_t b) {
  return a != b && ((a < b && b - a < 0x80000000u) || (a > b && a - b > 0x80000000u));
}

Duration seconds(uint32_t s) { return std::chrono::duration_cast<Duration>(std::chrono::seconds(s)); }

bool is_error_report(bytes::Span raw) {
  return raw.size() >= 2 && std::to_integer<uint8_t>(raw[1]) == static_cast<uint8_t>(PduType::kErrorReport);
}

// Replays the announcements and withdrawals of one answer, record by
// record in arrival order, from `present` (whether the record was held
// before). Returns the error code, or nothing; sets `now_present`.
template <typename T>
std::optional<ErrorCode> replay(const std::vector<std::pair<T, bool>>& ops, size_t from, size_t to, bool present,
                                bool& now_present, size_t& bad) {
  for (size_t i = from; i < to; ++i) {
    if (ops[i].second) {
      if (present) {
        bad = i;
        return ErrorCode::kDuplicateAnnouncement;
      }
      present = true;
    } else {
      if (!present) {
        bad = i;
        return ErrorCode::kWithdrawalOfUnknownRecord;
      }
      present = false;
    }
  }
  now_present = present;
  return std::nullopt;
}

// What one key in keys_ costs: the set's node (a red-black tree node's
// colour and three links, before the value, in libstdc++ and libc++
// alike), the key, and its SPKI's buffer.
size_t held_key_bytes(const RouterKey& k) {
  constexpr size_t kNodeLinks = 4 * sizeof(void*);
  return kNodeLinks + sizeof(RouterKey) + k.spki.capacity();
}

}  // namespace

size_t router_key_records(const RouterKey& k) {
  return 2 + (k.spki.size() + kSpkiOctetsPerRecord - 1) / kSpkiOctetsPerRecord;
}

std::string_view state_name(Client::State s) {
  switch (s) {
    case Client::State::kDisconnected: return "disconnected";
    case Client::State::kDialing: return "dialing";
    case Client::State::kQuerySent: return "query-sent";
    case Client::State::kReceiving: return "receiving";
    case Client::State::kIdle: return "idle";
    case Client::State::kClosing: return "closing";
  }
  return "?";
}

Client::Client(ClientConfig config)
    : config_(config), version_(std::min(config.max_version, kMaxVersion)), intervals_(clamp(config.defaults)) {}

ClientActions Client::step(const ClientEvent& event, Time now) {
  ClientActions out;
  step(event, now, out);
  return out;
}

void Client::step(const ClientEvent& event, Time now, ClientActions& out) {
  std::visit(Overloaded{
                 [&](const Connected&) { connected(now, out); },
                 [&](const Disconnected&) { disconnected(now); },
                 [&](const Received& r) { received(r.data, now, out); },
                 [&](const Tick&) { tick(now, out); },
             },
             event);
}

std::optional<Time> Client::next_deadline() const {
  std::optional<Time> d = expire_at_;
  auto earliest = [&](std::optional<Time> t) {
    if (t && (!d || *t < *d)) d = t;
  };
  if (state_ == State::kDisconnected) earliest(reconnect_at_);
  if (state_ == State::kIdle) earliest(query_at_);
  if (state_ == State::kQuerySent || state_ == State::kReceiving) earliest(answer_by_);
  return d;
}

void Client::connected(Time now, ClientActions& out) {
  framer_.reset();
  version_agreed_ = false;
  reconnect_at_.reset();
  clear_pending();
  // Not sooner than notify_gap after the last answer, as for a notify or
  // the refresh timer: a cache that closed the connection after each
  // answer (or each query) would otherwise be asked again, and cost a
  // rebuild, as fast as we dial it.
  if (answered_at_ && now < *answered_at_ + config_.notify_gap) {
    state_ = State::kIdle;
    query_at_ = *answered_at_ + config_.notify_gap;
    first_query_deferred_ = true;
    return;
  }
  send_query(now, out);
}

void Client::disconnected(Time now) {
  const bool unanswered = serial_query_unanswered();
  if (unanswered) want_reset_ = true;
  bool at_once = (state_ == State::kClosing && reconnect_now_) || unanswered;
  state_ = State::kDisconnected;
  reconnect_now_ = false;
  first_query_deferred_ = false;
  clear_pending();
  framer_.reset();
  query_at_.reset();
  reconnect_at_ = at_once ? now : now + seconds(intervals_.retry);
}

void Client::received(bytes::Span data, Time now, ClientActions& out) {
  switch (state_) {
    case State::kDisconnected:
    case State::kDialing:
    case State::kClosing: return;  // late bytes of a connection we gave up
    case State::kQuerySent:
    case State::kReceiving:
    case State::kIdle: break;
  }
  framer_.feed(data);
  for (;;) {
    bytes::Span raw;
    DecodeError err;
    auto status = framer_.next(raw, err);
    if (status == Framer::Status::kNeedMore) return;
    if (status == Framer::Status::kError) {
      fail_with(err.code, err.what, framer_.offending(), out);
      return;
    }
    auto m = decode(raw);
    if (!m) {
      fail_with(m.error().code, m.error().what, raw, out);
      return;
    }
    on_pdu(*m, raw, now, out);
    if (state_ == State::kClosing) return;
  }
}

void Client::tick(Time now, ClientActions& out) {
  if (expire_at_ && now >= *expire_at_) expire(out);
  if (state_ == State::kDisconnected && reconnect_at_ && now >= *reconnect_at_) {
    reconnect_at_.reset();
    state_ = State::kDialing;
    out.push_back(Reconnect{});
  }
  if (state_ == State::kIdle && query_at_ && now >= *query_at_) send_query(now, out);
  if ((state_ == State::kQuerySent || state_ == State::kReceiving) && answer_by_ && now >= *answer_by_) {
    // A cache that starts an answer and never ends it would otherwise hold
    // the connection (and what it sent) for ever. The data in force stays.
    out.push_back(Diagnostic{Diagnostic::Kind::kTimedOut, ErrorCode::kInternalError,
                             "no complete answer within " +
                                 std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                                    config_.answer_timeout).count()) +
                                 " s of the query"});
    clear_pending();
    answer_by_.reset();
    state_ = State::kClosing;
    out.push_back(CloseConnection{CloseReason::kTimedOut});
  }
}

void Client::on_pdu(const Message& m, bytes::Span raw, Time now, ClientActions& out) {
  if (std::holds_alternative<ErrorReport>(m.pdu)) {
    on_error_report(m, now, out);
    return;
  }
  // RFC 8210 section 7.
  if (!version_agreed_) {
    if (std::holds_alternative<SerialNotify>(m.pdu)) return;  // ignored during start-up
    if (m.version > version_) {
      fail_with(ErrorCode::kUnsupportedProtocolVersion, "answer in a version higher than our query", raw, out);
      return;
    }
    if (m.version < version_) {
      version_ = m.version;
      out.push_back(Diagnostic{Diagnostic::Kind::kVersionFallback, ErrorCode::kUnsupportedProtocolVersion,
                               "cache answered in version " + std::to_string(m.version)});
      if (!reset_pending_) {
        // An answer to a Serial Query of another version: session ids and
        // serials are not commensurate across versions, so start over in
        // this version with a Reset Query.
        restart_with_reset(CloseReason::kVersionFallback, out);
        return;
      }
    }
    version_agreed_ = true;
  } else if (m.version != version_) {
    fail_with(ErrorCode::kUnexpectedProtocolVersion, "PDU version differs from the agreed one", raw, out);
    return;
  }

  auto session_mismatch = [&](uint16_t id) {
    // RFC 8210 section 5.1: Corrupt Data, and the router flushes.
    fail_with(ErrorCode::kCorruptData, "session id differs from ours", raw, out);
    (void)id;
    flush(out);
  };

  std::visit(
      Overloaded{
          [&](const SerialNotify& n) {
            if (session_id_ && n.session_id != *session_id_) {
              session_mismatch(n.session_id);
              return;
            }
            // A query already out will bring the news; the refresh timer
            // catches anything after it.
            if (state_ != State::kIdle || (serial_ && n.serial == *serial_)) return;
            // Not sooner than notify_gap after the last answer: the query
            // timer moves forward to then (see kDefaultNotifyGap).
            if (answered_at_ && now < *answered_at_ + config_.notify_gap) {
              const Time at = *answered_at_ + config_.notify_gap;
              if (!query_at_ || at < *query_at_) query_at_ = at;
              return;
            }
            send_query(now, out);
          },
          [&](const SerialQuery&) { fail_with(ErrorCode::kUnsupportedPduType, "a query sent to the router", raw, out); },
          [&](const ResetQuery&) { fail_with(ErrorCode::kUnsupportedPduType, "a query sent to the router", raw, out); },
          [&](const CacheResponse& c) {
            if (state_ != State::kQuerySent) {
              fail_with(ErrorCode::kCorruptData, "Cache Response without a query", raw, out);
              return;
            }
            if (!reset_pending_ && session_id_ && c.session_id != *session_id_) {
              session_mismatch(c.session_id);
              return;
            }
            pending_session_ = c.session_id;
            clear_pending();
            state_ = State::kReceiving;
          },
          [&](const PrefixPdu& p) {
            if (state_ != State::kReceiving) {
              fail_with(ErrorCode::kCorruptData, "Prefix PDU outside a Cache Response", raw, out);
              return;
            }
            if (over_limit()) {
              fail_with(ErrorCode::kInternalError, limit_text(), raw, out);
              return;
            }
            pending_.emplace_back(p.vrp, p.announce);
          },
          [&](const RouterKeyPdu& k) {
            if (state_ != State::kReceiving) {
              fail_with(ErrorCode::kCorruptData, "Router Key PDU outside a Cache Response", raw, out);
              return;
            }
            const size_t records = router_key_records(k.key);
            if (over_limit(records)) {
              fail_with(ErrorCode::kInternalError, limit_text(), raw, out);
              return;
            }
            pending_keys_.emplace_back(k.key, k.announce);
            pending_key_records_ += records;
            pending_key_bytes_ += pending_keys_.back().first.spki.capacity();
          },
          [&](const AspaPdu& a) {
            if (state_ != State::kReceiving) {
              fail_with(ErrorCode::kCorruptData, "ASPA PDU outside a Cache Response", raw, out);
              return;
            }
            if (a.legacy_afi && *a.legacy_afi != 0) return;  // 8210bis-10's IPv6 copy (see client.h)
            // The ASPA and its providers, before they are buffered.
            if (over_limit(1 + a.aspa.providers.size()) || a.aspa.providers.size() > config_.max_vrps) {
              fail_with(ErrorCode::kInternalError, limit_text(), raw, out);
              return;
            }
            pending_providers_ += a.aspa.providers.size();
            pending_aspas_.emplace_back(a.aspa, a.announce);
            pending_provider_bytes_ += pending_aspas_.back().first.providers.capacity() * sizeof(uint32_t);
          },
          [&](const EndOfData& e) {
            if (state_ != State::kReceiving) {
              fail_with(ErrorCode::kCorruptData, "End of Data outside a Cache Response", raw, out);
              return;
            }
            if (e.session_id != pending_session_) {
              session_mismatch(e.session_id);
              return;
            }
            on_end_of_data(e, now, out);
          },
          [&](const CacheReset&) {
            if (state_ != State::kQuerySent || reset_pending_) {
              fail_with(ErrorCode::kCorruptData, "Cache Reset not in answer to a Serial Query", raw, out);
              return;
            }
            want_reset_ = true;
            send_reset_query(now, out);
          },
          [&](const ErrorReport&) {},
      },
      m.pdu);
}

void Client::on_error_report(const Message& m, Time now, ClientActions& out) {
  const auto& e = std::get<ErrorReport>(m.pdu);
  out.push_back(Diagnostic{Diagnostic::Kind::kErrorReceived, e.code, e.text});
  if (e.code == ErrorCode::kUnsupportedProtocolVersion && !version_agreed_ && m.version < version_) {
    version_ = m.version;
    out.push_back(Diagnostic{Diagnostic::Kind::kVersionFallback, e.code,
                             "cache speaks version " + std::to_string(m.version)});
    restart_with_reset(CloseReason::kVersionFallback, out);
    return;
  }
  if (!is_fatal(e.code)) {
    // No Data Available: ask again after the retry interval.
    clear_pending();
    state_ = State::kIdle;
    query_at_ = now + seconds(intervals_.retry);
    return;
  }
  // Corrupt Data in answer to a Serial Query: the cache does not know our
  // session id or serial (it restarted; StayRTR answers so rather than with
  // a Cache Reset). Reconnect at once and ask for everything again, as a
  // Cache Reset would have had us do; the data in hand stays until it
  // expires. A Reset Query answered so is a failure like any other, so this
  // cannot loop.
  if (e.code == ErrorCode::kCorruptData && !reset_pending_) {
    restart_with_reset(CloseReason::kResynchronise, out);
    return;
  }
  clear_pending();
  state_ = State::kClosing;
  out.push_back(CloseConnection{CloseReason::kErrorReceived});
}

void Client::restart_with_reset(CloseReason why, ClientActions& out) {
  want_reset_ = true;
  clear_pending();
  state_ = State::kClosing;
  reconnect_now_ = true;
  out.push_back(CloseConnection{why});
}

void Client::on_end_of_data(const EndOfData& e, Time now, ClientActions& out) {
  bool reset = reset_pending_;
  if (!reset && serial_ && serial_before(e.serial, *serial_)) {
    // The serial does not follow ours: start over.
    out.push_back(Diagnostic{Diagnostic::Kind::kIgnored, ErrorCode::kCorruptData,
                             "End of Data serial behind ours; sending Reset Query"});
    clear_pending();
    want_reset_ = true;
    send_reset_query(now, out);
    return;
  }

  ApplyUpdate up;
  up.reset = reset;
  up.session_id = e.session_id;
  up.serial = e.serial;

  // VRPs: group the operations per record, in arrival order within a group.
  std::stable_sort(pending_.begin(), pending_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Vrp> now_held;  // for a reset: the whole new set
  for (size_t i = 0; i < pending_.size();) {
    size_t j = i;
    while (j < pending_.size() && pending_[j].first == pending_[i].first) ++j;
    bool before = !reset && std::binary_search(vrps_.begin(), vrps_.end(), pending_[i].first);
    bool after = false;
    size_t bad = 0;
    if (auto err = replay(pending_, i, j, before, after, bad)) {
      auto quoted = encode(version_, PrefixPdu{pending_[bad].second, pending_[bad].first});
      fail_with(*err, error_code_name(*err), quoted, out);
      return;
    }
    if (reset) {
      if (after) now_held.push_back(pending_[i].first);
    } else if (before != after) {
      (after ? up.announced : up.withdrawn).push_back(pending_[i].first);
    }
    i = j;
  }
  // Router keys: decided against the set in force (nothing, for a reset)
  // without copying it; only what changes is copied.
  std::stable_sort(pending_keys_.begin(), pending_keys_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<RouterKey> keys_now;  // for a reset: the whole new set, sorted
  for (size_t i = 0; i < pending_keys_.size();) {
    size_t j = i;
    while (j < pending_keys_.size() && pending_keys_[j].first == pending_keys_[i].first) ++j;
    const RouterKey& key = pending_keys_[i].first;
    bool before = !reset && keys_.count(key) != 0;
    bool after = false;
    size_t bad = 0;
    if (auto err = replay(pending_keys_, i, j, before, after, bad)) {
      if (version_ >= kVersion1) {
        auto quoted = encode(version_, RouterKeyPdu{pending_keys_[bad].second, pending_keys_[bad].first});
        fail_with(*err, error_code_name(*err), quoted, out);
      } else {
        fail_with(*err, error_code_name(*err), {}, out);
      }
      return;
    }
    if (reset) {
      if (after) keys_now.push_back(key);
    } else if (before != after) {
      (after ? up.keys_announced : up.keys_withdrawn).push_back(key);
    }
    i = j;
  }
  size_t key_records = reset ? 0 : key_records_;
  for (const RouterKey& k : reset ? keys_now : up.keys_announced) key_records += router_key_records(k);
  for (const RouterKey& k : up.keys_withdrawn) key_records -= router_key_records(k);

  std::vector<Aspa> aspas_changed;
  std::vector<uint32_t> aspas_gone;
  size_t aspa_records = 0;
  if (!plan_aspas(reset, aspas_changed, aspas_gone, aspa_records, out)) return;

  // An incremental answer may replace records (withdraw one, announce
  // another) past max_vrps records received; what it leaves must fit.
  const size_t result_size = (reset ? now_held.size() : vrps_.size() - up.withdrawn.size() + up.announced.size()) +
                             key_records + aspa_records;
  if (result_size > config_.max_vrps) {
    fail_with(ErrorCode::kInternalError, limit_text(), {}, out);
    return;
  }

  if (reset) {
    std::set_difference(now_held.begin(), now_held.end(), vrps_.begin(), vrps_.end(),
                        std::back_inserter(up.announced));
    std::set_difference(vrps_.begin(), vrps_.end(), now_held.begin(), now_held.end(),
                        std::back_inserter(up.withdrawn));
    vrps_ = std::move(now_held);
  } else {
    std::vector<Vrp> kept;
    kept.reserve(vrps_.size() - up.withdrawn.size());
    std::set_difference(vrps_.begin(), vrps_.end(), up.withdrawn.begin(), up.withdrawn.end(),
                        std::back_inserter(kept));
    std::vector<Vrp> next;
    next.reserve(kept.size() + up.announced.size());
    std::merge(kept.begin(), kept.end(), up.announced.begin(), up.announced.end(), std::back_inserter(next));
    vrps_ = std::move(next);
  }
  commit_keys(reset, std::move(keys_now), up);
  commit_aspas(reset, std::move(aspas_changed), std::move(aspas_gone), up);
  assert(key_records_ == key_records && aspa_records_ == aspa_records);

  session_id_ = e.session_id;
  serial_ = e.serial;
  intervals_ = clamp(e.intervals.value_or(config_.defaults));
  // The cache's refresh interval, but not sooner than notify_gap: a cache
  // may ask for a refresh of 1 s (RFC 8210 section 6's least), and each
  // answer that changes anything costs a rebuild, as a notify's does.
  query_at_ = now + std::max<Duration>(seconds(intervals_.refresh), config_.notify_gap);
  expire_at_ = now + seconds(intervals_.expire);
  answered_at_ = now;
  reset_pending_ = false;
  want_reset_ = false;
  answer_by_.reset();
  clear_pending();
  state_ = State::kIdle;
  out.push_back(std::move(up));
}

bool Client::plan_aspas(bool reset, std::vector<Aspa>& changed, std::vector<uint32_t>& gone, size_t& records,
                        ClientActions& out) {
  auto by_customer = [](const Aspa& a, const Aspa& b) { return a.customer < b.customer; };
  const std::vector<Aspa> none;
  const std::vector<Aspa>& held = reset ? none : aspas_;
  records = reset ? 0 : aspa_records_;
  std::stable_sort(pending_aspas_.begin(), pending_aspas_.end(),
                   [](const auto& a, const auto& b) { return a.first.customer < b.first.customer; });
  for (size_t i = 0; i < pending_aspas_.size();) {
    size_t j = i;
    const uint32_t customer = pending_aspas_[i].first.customer;
    while (j < pending_aspas_.size() && pending_aspas_[j].first.customer == customer) ++j;
    auto it = std::lower_bound(held.begin(), held.end(), pending_aspas_[i].first, by_customer);
    const Aspa* before = (it != held.end() && it->customer == customer) ? &*it : nullptr;
    const Aspa* after = before;
    for (size_t k = i; k < j; ++k) {
      if (pending_aspas_[k].second) {
        after = &pending_aspas_[k].first;  // 8210bis: an announcement replaces the ASPA held
      } else if (after == nullptr) {
        auto quoted = encode(version_, AspaPdu{false, Aspa{customer, {}}, std::nullopt});
        fail_with(ErrorCode::kWithdrawalOfUnknownRecord, error_code_name(ErrorCode::kWithdrawalOfUnknownRecord),
                  quoted, out);
        return false;
      } else {
        after = nullptr;
      }
    }
    if (after != nullptr && (before == nullptr || *before != *after)) {
      changed.push_back(*after);
      records += 1 + after->providers.size();
      if (before != nullptr) records -= 1 + before->providers.size();
    } else if (after == nullptr && before != nullptr) {
      gone.push_back(customer);
      records -= 1 + before->providers.size();
    }
    i = j;
  }
  return true;
}

void Client::commit_keys(bool reset, std::vector<RouterKey> keys_now, ApplyUpdate& up) {
  // The figures follow each key in and out, from the copy the set holds.
  auto take = [&](const RouterKey& k) {
    key_records_ += router_key_records(k);
    key_bytes_ += held_key_bytes(k);
  };
  if (reset) {
    std::set_difference(keys_now.begin(), keys_now.end(), keys_.begin(), keys_.end(),
                        std::back_inserter(up.keys_announced));
    std::set_difference(keys_.begin(), keys_.end(), keys_now.begin(), keys_now.end(),
                        std::back_inserter(up.keys_withdrawn));
    keys_.clear();
    key_records_ = 0;
    key_bytes_ = 0;
    for (RouterKey& k : keys_now) take(*keys_.insert(keys_.end(), std::move(k)));
    return;
  }
  for (const RouterKey& k : up.keys_withdrawn) {
    auto it = keys_.find(k);
    assert(it != keys_.end());
    key_records_ -= router_key_records(*it);
    key_bytes_ -= held_key_bytes(*it);
    keys_.erase(it);
  }
  for (const RouterKey& k : up.keys_announced) take(*keys_.insert(k).first);
}

void Client::commit_aspas(bool reset, std::vector<Aspa> changed, std::vector<uint32_t> gone, ApplyUpdate& up) {
  auto by_customer = [](const Aspa& a, const Aspa& b) { return a.customer < b.customer; };
  auto take = [&](const Aspa& a) {
    aspa_records_ += 1 + a.providers.size();
    aspa_bytes_ += a.providers.capacity() * sizeof(uint32_t);
  };
  auto drop = [&](const Aspa& a) {
    aspa_records_ -= 1 + a.providers.size();
    aspa_bytes_ -= a.providers.capacity() * sizeof(uint32_t);
  };
  if (reset) {
    // Against the data in force, not the empty start: only what differs.
    for (const Aspa& a : changed) {
      auto old = std::lower_bound(aspas_.begin(), aspas_.end(), a, by_customer);
      if (old == aspas_.end() || *old != a) up.aspas_announced.push_back(a);
    }
    for (const Aspa& old : aspas_) {
      if (!std::binary_search(changed.begin(), changed.end(), old, by_customer)) {
        up.aspas_withdrawn.push_back(old.customer);
      }
    }
    aspas_ = std::move(changed);
    aspa_records_ = 0;
    aspa_bytes_ = 0;
    for (const Aspa& a : aspas_) take(a);
    return;
  }
  // aspas_ := aspas_ - gone, with changed replacing or joining. An entry
  // moved across keeps its buffer, and so its share of the figures.
  std::vector<Aspa> next;
  next.reserve(aspas_.size() + changed.size());
  size_t c = 0;
  auto join = [&](const Aspa& a) {
    next.push_back(a);
    take(next.back());
  };
  for (Aspa& a : aspas_) {
    while (c < changed.size() && changed[c].customer < a.customer) join(changed[c++]);
    if (c < changed.size() && changed[c].customer == a.customer) {
      drop(a);
      join(changed[c++]);
    } else if (std::binary_search(gone.begin(), gone.end(), a.customer)) {
      drop(a);
    } else {
      next.push_back(std::move(a));
    }
  }
  while (c < changed.size()) join(changed[c++]);
  aspas_ = std::move(next);
  up.aspas_announced = std::move(changed);
  up.aspas_withdrawn = std::move(gone);
}

void Client::send(const Pdu& pdu, ClientActions& out) { out.push_back(SendBytes{encode(version_, pdu)}); }

void Client::send_query(Time now, ClientActions& out) {
  query_at_.reset();
  first_query_deferred_ = false;
  if (!want_reset_ && session_id_ && serial_ && has_data()) {
    reset_pending_ = false;
    answer_by_ = now + config_.answer_timeout;
    state_ = State::kQuerySent;
    send(SerialQuery{*session_id_, *serial_}, out);
    return;
  }
  send_reset_query(now, out);
}

void Client::send_reset_query(Time now, ClientActions& out) {
  query_at_.reset();
  first_query_deferred_ = false;
  answer_by_ = now + config_.answer_timeout;
  reset_pending_ = true;
  state_ = State::kQuerySent;
  send(ResetQuery{}, out);
}

void Client::fail_with(ErrorCode code, std::string_view text, bytes::Span raw, ClientActions& out) {
  if (!is_error_report(raw)) {
    ErrorReport r;
    r.code = code;
    // Quote at most the PDU's first kMaxPduLen / 2 bytes: the report must
    // itself stay within kMaxPduLen.
    raw = raw.first(std::min<size_t>(raw.size(), kMaxPduLen / 2));
    r.pdu.assign(raw.begin(), raw.end());
    r.text = std::string(text);
    send(r, out);
    out.push_back(Diagnostic{Diagnostic::Kind::kErrorSent, code, std::string(text)});
  } else {
    out.push_back(Diagnostic{Diagnostic::Kind::kIgnored, code, "bad Error Report (not answered): " + std::string(text)});
  }
  clear_pending();
  want_reset_ = true;
  state_ = State::kClosing;
  out.push_back(CloseConnection{CloseReason::kErrorSent});
}

void Client::flush(ClientActions& out) {
  ApplyUpdate up;
  up.reset = true;
  up.withdrawn = std::move(vrps_);
  up.keys_withdrawn.assign(keys_.begin(), keys_.end());
  for (const Aspa& a : aspas_) up.aspas_withdrawn.push_back(a.customer);
  vrps_.clear();
  drop_keys_and_aspas();
  session_id_.reset();
  serial_.reset();
  expire_at_.reset();
  out.push_back(std::move(up));
}

void Client::expire(ClientActions& out) {
  std::vector<Vrp>().swap(vrps_);  // clear() would keep the capacity
  drop_keys_and_aspas();
  session_id_.reset();
  serial_.reset();
  expire_at_.reset();
  want_reset_ = true;
  out.push_back(DataExpired{});
}

void Client::drop_keys_and_aspas() {
  keys_.clear();
  std::vector<Aspa>().swap(aspas_);
  key_records_ = 0;
  key_bytes_ = 0;
  aspa_records_ = 0;
  aspa_bytes_ = 0;
}

// Frees the buffers rather than clear() them: an answer may have been
// millions of records (up to max_vrps), and clear() keeps the capacity for
// as long as the client lives.
void Client::clear_pending() {
  std::vector<std::pair<Vrp, bool>>().swap(pending_);
  std::vector<std::pair<RouterKey, bool>>().swap(pending_keys_);
  std::vector<std::pair<Aspa, bool>>().swap(pending_aspas_);
  pending_providers_ = 0;
  pending_provider_bytes_ = 0;
  pending_key_records_ = 0;
  pending_key_bytes_ = 0;
}

size_t Client::held_records() const { return vrps_.size() + key_records_ + aspa_records_; }

size_t Client::held_records_by_walk() const {
  size_t n = vrps_.size() + aspas_.size();
  for (const RouterKey& k : keys_) n += router_key_records(k);
  for (const Aspa& a : aspas_) n += a.providers.size();
  return n;
}

bool Client::over_limit(size_t adding) const {
  // A reset answer replaces everything: its records alone count. An
  // incremental one may withdraw all we hold and announce max_vrps new.
  const size_t held = reset_pending_ ? 0 : held_records();
  const size_t pending = pending_.size() + pending_key_records_ + pending_aspas_.size() + pending_providers_;
  return pending + adding > config_.max_vrps + held;
}

std::string Client::limit_text() const {
  return "more than " + std::to_string(config_.max_vrps) + " VRPs, router keys and ASPA entries (rpki.max_vrps)";
}

size_t Client::held_bytes() const {
  return vrps_.capacity() * sizeof(Vrp) + pending_.capacity() * sizeof(pending_[0]) + key_bytes_ +
         pending_keys_.capacity() * sizeof(pending_keys_[0]) + pending_key_bytes_ +
         aspas_.capacity() * sizeof(Aspa) + aspa_bytes_ + pending_aspas_.capacity() * sizeof(pending_aspas_[0]) +
         pending_provider_bytes_ + framer_.held_bytes();
}

size_t Client::held_bytes_by_walk() const {
  size_t keys = 0;
  for (const RouterKey& k : keys_) keys += held_key_bytes(k);
  for (const auto& [k, announce] : pending_keys_) keys += k.spki.capacity();
  size_t aspas = aspas_.capacity() * sizeof(Aspa) + pending_aspas_.capacity() * sizeof(pending_aspas_[0]);
  for (const Aspa& a : aspas_) aspas += a.providers.capacity() * sizeof(uint32_t);
  for (const auto& [a, announce] : pending_aspas_) aspas += a.providers.capacity() * sizeof(uint32_t);
  return vrps_.capacity() * sizeof(Vrp) + pending_.capacity() * sizeof(pending_[0]) +
         pending_keys_.capacity() * sizeof(pending_keys_[0]) + keys + aspas + framer_.held_bytes();
}

}  // namespace petrel::rpki

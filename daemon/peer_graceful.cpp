// Graceful restart as the helper (receiving speaker) of one peer: when its
// session goes down in a way that allows it (fsm/graceful.h), its routes
// stay in the table, and so in the kernel and with every other peer,
// marked stale, for at most its restart time; when it is back, what it
// announces again replaces them (an unchanged route touches nothing: the
// table journals no change), and the rest goes at its End-of-RIB for each
// family or when the stale timer runs out.
//
// With long-lived graceful restart (RFC 9494), when the restart time runs
// out (or at once, for a family the restart time does not cover), the
// routes of each family the peer gave a Long-lived Stale Time stay for
// that long as long-lived stale routes: with the LLGR_STALE community,
// least preferred, and only for peers that negotiated LLGR
// (Table::mark_long_lived_stale); those with NO_LLGR go.
//
// RFC 4724 sections 3 and 4.2, RFC 8538, RFC 9494 section 4.2. The
// capabilities Petrel offers are decided here too (offered_graceful_restart,
// offered_long_lived_graceful_restart).
#include <algorithm>
#include <chrono>
#include <string>

#include <fmt/format.h>

#include "daemon/log.h"
#include "daemon/peer.h"
#include "daemon/restart.h"
#include "daemon/worker.h"
#include "fsm/graceful.h"

namespace petrel::daemon {

namespace {

// RFC 4724 sections 3 and 4.1, the Restart State bit: set while Petrel,
// restarted with its kernel routes kept, defers its route selection for
// its peers' End-of-RIB (daemon/restart.h).
bool restart_state() { return own_restart().restarting(); }

// RFC 4724 section 3, the Forwarding State bit: whether the kernel routes
// of this family were kept across Petrel's own restart (found at start-up).
bool forwarding_preserved(codec::Family f) { return own_restart().forwarding_kept(f); }

std::string family_text(codec::Family f) {
  char buf[32];
  return std::string(codec::family_name(f, buf));
}

int64_t system_ms_in(double seconds) {
  const auto at = std::chrono::system_clock::now() +
                  std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(seconds));
  return std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count();
}

}  // namespace

std::string_view graceful_phase_name(GracefulStatus::Phase p) {
  switch (p) {
    case GracefulStatus::Phase::kNone: return "none";
    case GracefulStatus::Phase::kRestarting: return "restarting";
    case GracefulStatus::Phase::kLongLived: return "long-lived";
    case GracefulStatus::Phase::kRecovering: return "recovering";
  }
  return "none";
}

codec::GracefulRestart offered_graceful_restart(const PeerConfig& peer) {
  codec::GracefulRestart gr;
  gr.restarting = restart_state();
  gr.notification = true;  // RFC 8538
  gr.restart_time = peer.graceful.restart_time;
  for (codec::Family f : codec::kKnownFamilyList)
    if (peer.families.has(f)) gr.families.push_back({f, forwarding_preserved(f)});
  return gr;
}

std::optional<codec::LongLivedGracefulRestart> offered_long_lived_graceful_restart(const PeerConfig& peer) {
  if (!peer.graceful.enabled || peer.graceful.long_lived_stale_time == 0) return std::nullopt;
  codec::LongLivedGracefulRestart llgr;
  for (codec::Family f : codec::kKnownFamilyList)
    if (peer.families.has(f)) llgr.families.push_back({f, forwarding_preserved(f), peer.graceful.long_lived_stale_time});
  return llgr;
}

uint64_t Peer::stale_routes(size_t family_index) const {
  int32_t slot = table_slot_.load(std::memory_order_acquire);
  if (slot < 0) return 0;
  return table_.peer_stale(static_cast<uint16_t>(slot), static_cast<table::FamilyIndex>(family_index));
}

bool Peer::keep_for_restart(const fsm::SessionDown& down) {
  const int32_t at = table_slot_.load(std::memory_order_relaxed);
  if (!down.graceful || !graceful_peer_ || at < 0) return false;
  const auto slot = static_cast<uint16_t>(at);
  end_session_routing();
  const double now = ev_now(worker_.loop());
  // RFC 4724 section 4.2: routes still stale from a restart before this
  // one go first (consecutive restarts); then every family the peer listed
  // keeps its routes, stale (long-lived stale at once for a family only
  // LLGR covers, RFC 9494 section 4.2), and the others lose theirs.
  uint64_t earlier = 0, kept = 0, gone = 0, long_lived = 0, dropped = 0;
  bool restart_phase = false;
  for (codec::Family f : codec::kKnownFamilyList) {
    const auto fi = static_cast<table::FamilyIndex>(codec::known_index(f));
    if (stale_families_.has(f)) earlier += table_.sweep_stale(slot, fi);
  }
  stale_families_ = {};
  long_lived_families_ = {};
  for (codec::Family f : codec::kKnownFamilyList) {
    const auto fi = static_cast<table::FamilyIndex>(codec::known_index(f));
    if (table_.peer_routes(slot, fi) == 0) continue;
    const uint64_t n = table_.mark_stale(slot, fi);
    switch (fsm::kept_as(graceful_peer_, long_lived_peer_, f, peer_.graceful.long_lived_stale_time)) {
      case fsm::KeptAs::kRestart:
        kept += n;
        stale_families_.add(f);
        restart_phase = true;
        break;
      case fsm::KeptAs::kLongLived:
        stale_families_.add(f);
        begin_long_lived(slot, f, now, long_lived, dropped);
        break;
      case fsm::KeptAs::kWithdraw: gone += table_.sweep_stale(slot, fi); break;
    }
  }
  if (stale_families_.empty()) return false;  // leave_table frees the slot
  restarting_ = true;
  down_at_ = now;
  const double wait = std::min<double>(graceful_peer_->restart_time, peer_.graceful.stale_routes_time);
  restart_until_ = restart_phase ? now + wait : 0;
  graceful_deadlines(now);  // arms the timer
  {
    std::lock_guard lock(status_mu_);
    ++status_.graceful.restarts;
    if (!long_lived_families_.empty()) ++status_.graceful.long_lived;
  }
  publish_graceful();
  log(LogLevel::kInfo, "graceful-restart-helper",
      {{"peer", peer_.name}, {"stale_routes", kept}, {"long_lived_stale_routes", long_lived},
       {"routes_withdrawn", gone + earlier + dropped},
       {"restart_time", static_cast<int64_t>(graceful_peer_->restart_time)},
       {"wait_seconds", static_cast<int64_t>(restart_phase ? wait : 0)}},
      "the peer's session went down as a graceful restart: its routes stay, marked stale, until it comes back "
      "(RFC 4724 section 4.2; long-lived stale at once where only LLGR covers them, RFC 9494)");
  return true;
}

void Peer::begin_long_lived(uint16_t slot, codec::Family f, double now, uint64_t& kept, uint64_t& dropped) {
  const auto i = static_cast<size_t>(codec::known_index(f));
  const auto r = table_.mark_long_lived_stale(slot, static_cast<table::FamilyIndex>(i));
  kept += r.kept;
  dropped += r.dropped;
  long_lived_families_.add(f);
  long_lived_until_[i] =
      now + fsm::long_lived_stale_time(graceful_peer_, long_lived_peer_, f, peer_.graceful.long_lived_stale_time);
}

bool Peer::graceful_deadlines(double now) {
  const int32_t at = table_slot_.load(std::memory_order_relaxed);
  if (at < 0) return false;
  const auto slot = static_cast<uint16_t>(at);
  if (restarting_ && restart_until_ > 0 && now >= restart_until_) {
    // RFC 9494 section 4.2: the restart time is over; the families with
    // a Long-lived Stale Time go on as long-lived stale routes.
    restart_until_ = 0;
    const bool counted = !long_lived_families_.empty();  // (when the session went down)
    uint64_t kept = 0, dropped = 0, gone = 0;
    for (codec::Family f : codec::kKnownFamilyList) {
      if (!stale_families_.has(f) || long_lived_families_.has(f)) continue;
      if (fsm::long_lived_stale_time(graceful_peer_, long_lived_peer_, f, peer_.graceful.long_lived_stale_time) > 0) {
        begin_long_lived(slot, f, now, kept, dropped);
      } else {
        gone += table_.sweep_stale(slot, static_cast<table::FamilyIndex>(codec::known_index(f)));
        stale_families_.remove(f);
      }
    }
    if (!long_lived_families_.empty()) {
      if (!counted) {
        std::lock_guard lock(status_mu_);
        ++status_.graceful.long_lived;
      }
      log(LogLevel::kInfo, "graceful-restart-long-lived",
          {{"peer", peer_.name}, {"long_lived_stale_routes", kept}, {"routes_withdrawn", gone + dropped}},
          "the peer's restart time ran out: its routes stay as long-lived stale routes, least preferred, with "
          "LLGR_STALE, only for peers with LLGR (RFC 9494 section 4.2); NO_LLGR ones are withdrawn");
    }
  }
  uint64_t expired = 0;
  for (codec::Family f : codec::kKnownFamilyList) {
    const auto i = static_cast<size_t>(codec::known_index(f));
    if (!long_lived_families_.has(f) || now < long_lived_until_[i]) continue;
    expired += table_.sweep_stale(slot, static_cast<table::FamilyIndex>(i));
    long_lived_families_.remove(f);
    stale_families_.remove(f);
  }
  if (expired)
    log(LogLevel::kWarn, "graceful-restart-long-lived-expired",
        {{"peer", peer_.name}, {"stale_routes_withdrawn", expired}},
        "the peer's long-lived stale time ran out: those routes are withdrawn (RFC 9494 section 4.2)");
  if (stale_families_.empty()) return false;
  double next = restart_until_ > 0 ? restart_until_ : 0;
  for (codec::Family f : codec::kKnownFamilyList) {
    const auto i = static_cast<size_t>(codec::known_index(f));
    if (long_lived_families_.has(f) && (next == 0 || long_lived_until_[i] < next)) next = long_lived_until_[i];
  }
  arm_graceful_timer(std::max(0.0, next - now));
  publish_graceful();
  return true;
}

void Peer::graceful_up(const fsm::Negotiated& n) {
  graceful_peer_ = n.graceful_restart;
  long_lived_peer_ = n.long_lived_graceful_restart;
  graceful_notification_ = n.graceful_notification;
  const int32_t at = table_slot_.load(std::memory_order_relaxed);
  if (!restarting_ || at < 0) {
    publish_graceful();
    return;
  }
  restarting_ = false;
  restart_until_ = 0;
  const codec::FamilySet long_lived = long_lived_families_;
  long_lived_families_ = {};
  const auto slot = static_cast<uint16_t>(at);
  const table::PeerInfo& was = table_.peer(slot);
  if (was.router_id != n.peer_id || was.asn != n.peer_as) {
    // Another speaker at the peer's address: its predecessor's routes are
    // not its to replace.
    log(LogLevel::kInfo, "graceful-restart-other-speaker", {{"peer", peer_.name}},
        "the peer came back with another BGP Identifier or AS: its stale routes are withdrawn");
    leave_table();
    return;
  }
  // RFC 4724 section 4.2: a family the new capability does not list with
  // the Forwarding State bit loses its stale routes at once (for
  // long-lived stale routes, the bit of the new LLGR capability, RFC 9494
  // section 4.2).
  uint64_t gone = 0;
  std::string waiting;
  for (codec::Family f : codec::kKnownFamilyList) {
    if (!stale_families_.has(f)) continue;
    const bool kept = long_lived.has(f) ? fsm::keeps_long_lived_on_return(n.long_lived_graceful_restart, f)
                                        : fsm::keeps_stale_on_return(n.graceful_restart, f);
    if (kept && n.families.has(f)) {
      waiting += waiting.empty() ? "" : ",";
      waiting += family_text(f);
      continue;
    }
    gone += table_.sweep_stale(slot, static_cast<table::FamilyIndex>(codec::known_index(f)));
    stale_families_.remove(f);
  }
  if (stale_families_.empty()) {
    ev_timer_stop(worker_.loop(), &graceful_timer_);
  } else {
    // stale_routes_time bounds the whole wait, from the session's going
    // down (from its return, after a long-lived stale time).
    const double from = long_lived.empty() ? down_at_ : ev_now(worker_.loop());
    const double left = from + peer_.graceful.stale_routes_time - ev_now(worker_.loop());
    arm_graceful_timer(std::max(0.0, left));
  }
  publish_graceful();
  log(LogLevel::kInfo, "graceful-restart-back",
      {{"peer", peer_.name}, {"routes_withdrawn", gone}, {"waiting_for_end_of_rib", waiting}},
      gone ? "the peer is back; families without the Forwarding State bit lost their stale routes (RFC 4724 "
             "section 4.2)"
           : "the peer is back; its stale routes go at its End-of-RIB");
}

void Peer::graceful_end_of_rib(codec::Family f) {
  const int32_t at = table_slot_.load(std::memory_order_relaxed);
  if (restarting_ || at < 0 || !stale_families_.has(f)) return;
  const uint64_t gone =
      table_.sweep_stale(static_cast<uint16_t>(at), static_cast<table::FamilyIndex>(codec::known_index(f)));
  stale_families_.remove(f);
  long_lived_families_.remove(f);
  if (stale_families_.empty()) ev_timer_stop(worker_.loop(), &graceful_timer_);
  publish_graceful();
  log(LogLevel::kInfo, "graceful-restart-end-of-rib",
      {{"peer", peer_.name}, {"family", family_text(f)}, {"stale_routes_withdrawn", gone}},
      "the peer's End-of-RIB: the routes it did not announce again are withdrawn");
}

void Peer::graceful_clear() {
  ev_timer_stop(worker_.loop(), &graceful_timer_);
  if (stale_families_.empty() && !restarting_) return;
  stale_families_ = {};
  long_lived_families_ = {};
  restart_until_ = 0;
  restarting_ = false;
  publish_graceful();
}

void Peer::arm_graceful_timer(double seconds) {
  stale_deadline_ = ev_now(worker_.loop()) + seconds;
  ev_timer_stop(worker_.loop(), &graceful_timer_);
  ev_timer_set(&graceful_timer_, seconds, 0);
  ev_timer_start(worker_.loop(), &graceful_timer_);
}

void Peer::on_graceful_timer(struct ev_loop* loop, ev_timer* w, int) {
  auto* p = static_cast<Peer*>(w->data);
  const int32_t at = p->table_slot_.load(std::memory_order_relaxed);
  // Down: the restart time or a long-lived stale time ran out; routes
  // left (long-lived stale ones) keep the peer's slot.
  if (p->restarting_ && p->graceful_deadlines(ev_now(loop))) return;
  {
    std::lock_guard lock(p->status_mu_);
    ++p->status_.graceful.expired;
  }
  if (p->restarting_) {
    // RFC 4724 section 4.2: not back within its restart time.
    log(LogLevel::kWarn, "graceful-restart-expired", {{"peer", p->peer_.name}},
        "the peer did not come back within its restart time (or stale_routes_time): its routes are withdrawn");
    p->leave_table();
    return;
  }
  uint64_t gone = 0;
  if (at >= 0)
    for (codec::Family f : codec::kKnownFamilyList)
      if (p->stale_families_.has(f))
        gone += p->table_.sweep_stale(static_cast<uint16_t>(at), static_cast<table::FamilyIndex>(codec::known_index(f)));
  p->stale_families_ = {};
  p->publish_graceful();
  log(LogLevel::kWarn, "graceful-restart-stale-expired", {{"peer", p->peer_.name}, {"stale_routes_withdrawn", gone}},
      "stale_routes_time ran out before the peer's End-of-RIB: its routes still stale are withdrawn");
}

void Peer::publish_graceful() {
  std::lock_guard lock(status_mu_);
  GracefulStatus& g = status_.graceful;
  g.phase = restarting_ && restart_until_ == 0 && !long_lived_families_.empty() ? GracefulStatus::Phase::kLongLived
            : restarting_                 ? GracefulStatus::Phase::kRestarting
            : !stale_families_.empty() ? GracefulStatus::Phase::kRecovering
                                       : GracefulStatus::Phase::kNone;
  g.negotiated = graceful_peer_.has_value();
  g.notification = graceful_notification_;
  g.peer_restart_time = graceful_peer_ ? graceful_peer_->restart_time : 0;
  g.peer_families = graceful_peer_ ? graceful_peer_->families : std::vector<codec::GracefulRestart::PerFamily>{};
  g.long_lived_negotiated = long_lived_peer_.has_value();
  g.peer_long_lived_families =
      long_lived_peer_ ? long_lived_peer_->families : std::vector<codec::LongLivedGracefulRestart::PerFamily>{};
  g.stale_until_ms = g.phase == GracefulStatus::Phase::kNone
                         ? 0
                         : system_ms_in(std::max(0.0, stale_deadline_ - ev_now(worker_.loop())));
}

}  // namespace petrel::daemon

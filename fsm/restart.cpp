// Petrel's own restart: which families' route selection is still deferred
// (see restart.h). RFC 4724 sections 3 and 4.1.
#include "fsm/restart.h"

#include <algorithm>
#include <utility>

namespace petrel::fsm {

RestartDeferral::RestartDeferral(std::vector<Peer> peers, codec::FamilySet kept, double deadline)
    : kept_(kept), deadline_(deadline) {
  for (Peer& p : peers) peers_.push_back(Wait{std::move(p.name), p.families});
}

bool RestartDeferral::restarting(double now) const {
  return std::any_of(codec::kKnownFamilyList.begin(), codec::kKnownFamilyList.end(),
                     [&](codec::Family f) { return settled(f, now) == Settled::kNo; });
}

void RestartDeferral::session_up(const std::string& peer, const std::optional<codec::GracefulRestart>& theirs) {
  for (Wait& w : peers_) {
    if (w.name != peer) continue;
    // Not waited for: no capability on both sides, or it restarts too;
    // else only in the families its capability lists.
    if (!theirs || theirs->restarting) {
      w.pending = {};
      continue;
    }
    codec::FamilySet listed;
    for (const auto& e : theirs->families)
      if (w.pending.has(e.family)) listed.add(e.family);
    w.pending = listed;
  }
}

void RestartDeferral::end_of_rib(const std::string& peer, codec::Family f) {
  for (Wait& w : peers_)
    if (w.name == peer) w.pending.remove(f);
}

RestartDeferral::Settled RestartDeferral::settled(codec::Family f, double now) const {
  if (!kept_.has(f)) return Settled::kNotDeferred;
  const bool waiting = std::any_of(peers_.begin(), peers_.end(), [&](const Wait& w) { return w.pending.has(f); });
  if (!waiting) return Settled::kEndOfRib;
  return now >= deadline_ ? Settled::kTimer : Settled::kNo;
}

std::vector<std::string> RestartDeferral::waiting_for(codec::Family f) const {
  std::vector<std::string> out;
  for (const Wait& w : peers_)
    if (w.pending.has(f)) out.push_back(w.name);
  return out;
}

}  // namespace petrel::fsm

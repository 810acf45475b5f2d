// Petrel's own graceful restart as the restarting speaker (RFC 4724
// section 4.1): after a start that found its forwarding state (its kernel
// routes) kept, route selection for a family is deferred until every peer
// it waits for sent its End-of-RIB for that family, or the selection
// deferral timer ran out. Pure: the daemon feeds the peers' events and the
// time (seconds on any steady clock) and asks which families are settled;
// it holds the kernel changes of a deferred family (fib::Plan::defer).
//
// The peers waited for are the configured peers with graceful restart on
// that carry the family. Per RFC 4724 section 4.1, a peer whose session
// came up without the capability on both sides, or whose capability has
// the Restart State bit set (it restarts too, and waits for us), is not
// waited for; one that came up is waited for only in the families its
// capability lists. A peer that never comes up holds the family until the timer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codec/capabilities.h"
#include "codec/types.h"

namespace petrel::fsm {

class RestartDeferral {
 public:
  struct Peer {
    std::string name;
    codec::FamilySet families;  // the families it is waited for in
  };
  enum class Settled : uint8_t {
    kNo,          // still deferred
    kEndOfRib,    // every peer waited for sent its End-of-RIB (or none is waited for)
    kTimer,       // the selection deferral timer ran out first
    kNotDeferred  // the family's forwarding state was not kept: nothing to defer
  };

  RestartDeferral() = default;
  // kept: the families whose forwarding state the start found kept;
  // deadline: the time the selection deferral timer runs out.
  RestartDeferral(std::vector<Peer> peers, codec::FamilySet kept, double deadline);

  // RFC 4724 section 3: the Restart State bit Petrel sends now (some family
  // still deferred), and the Forwarding State bit for a family.
  [[nodiscard]] bool restarting(double now) const;
  [[nodiscard]] bool forwarding_kept(codec::Family f) const { return kept_.has(f); }

  // A session came up; `theirs` is the peer's graceful restart capability
  // when both sides sent one (nothing otherwise).
  void session_up(const std::string& peer, const std::optional<codec::GracefulRestart>& theirs);
  void end_of_rib(const std::string& peer, codec::Family f);

  [[nodiscard]] Settled settled(codec::Family f, double now) const;
  [[nodiscard]] double deadline() const { return deadline_; }
  // The peers still waited for in f (for the log and the API).
  [[nodiscard]] std::vector<std::string> waiting_for(codec::Family f) const;

 private:
  struct Wait {
    std::string name;
    codec::FamilySet pending;  // End-of-RIB still to come
  };
  std::vector<Wait> peers_;
  codec::FamilySet kept_;
  double deadline_ = 0;
};

}  // namespace petrel::fsm

// Petrel's own restart (docs/graceful-restart.md, "Petrel restarting"): the
// process-wide, locked holder of the restarting speaker's deferral
// (fsm/restart.h). The kernel syncer begins it once its start-up dump
// found routes of ours (before any session starts), the sessions tell it
// of their peers' capabilities and End-of-RIB markers, the capability
// Petrel offers reads its R and F bits from it (daemon/peer_graceful.cpp),
// and the kernel syncer asks which families are settled.
#pragma once

#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fsm/restart.h"

namespace petrel::daemon {

class OwnRestart {
 public:
  void begin(fsm::RestartDeferral d, std::function<void()> on_change);
  void stop_waking();  // on_change is not called again
  [[nodiscard]] bool restarting() const;
  // RFC 4724 section 4.1: the forwarding state is updated before routes
  // are advertised. The kernel syncer says which families it deferred
  // (kernel_deferred) and when the changes of each reached the kernel
  // after their release (kernel_updated); sessions send their UPDATEs
  // once exports_wait() is false: not restarting, and every deferred
  // family updated.
  void kernel_deferred(codec::Family f);
  void kernel_updated(codec::Family f);
  [[nodiscard]] bool exports_wait() const;
  [[nodiscard]] bool forwarding_kept(codec::Family f) const;
  void session_up(const std::string& peer, const std::optional<codec::GracefulRestart>& theirs);
  void end_of_rib(const std::string& peer, codec::Family f);
  [[nodiscard]] fsm::RestartDeferral::Settled settled(codec::Family f) const;
  [[nodiscard]] std::vector<std::string> waiting_for(codec::Family f) const;

  // Seconds on the steady clock (the deferral's time).
  static double now();

 private:
  void changed();
  mutable std::mutex mu_;
  fsm::RestartDeferral d_;
  codec::FamilySet kernel_waiting_;  // deferred by the kernel syncer, not updated yet
  std::function<void()> on_change_;
};

// The daemon's one instance.
OwnRestart& own_restart();

}  // namespace petrel::daemon

// Petrel's own restart: the locked holder of the deferral (see restart.h).
#include "daemon/restart.h"

#include <chrono>
#include <utility>

namespace petrel::daemon {

double OwnRestart::now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void OwnRestart::begin(fsm::RestartDeferral d, std::function<void()> on_change) {
  std::lock_guard lock(mu_);
  d_ = std::move(d);
  on_change_ = std::move(on_change);
}

void OwnRestart::stop_waking() {
  std::lock_guard lock(mu_);
  on_change_ = nullptr;
}

bool OwnRestart::restarting() const {
  std::lock_guard lock(mu_);
  return d_.restarting(now());
}

void OwnRestart::kernel_deferred(codec::Family f) {
  std::lock_guard lock(mu_);
  kernel_waiting_.add(f);
}

void OwnRestart::kernel_updated(codec::Family f) {
  std::lock_guard lock(mu_);
  kernel_waiting_.remove(f);
}

bool OwnRestart::exports_wait() const {
  std::lock_guard lock(mu_);
  return d_.restarting(now()) || !kernel_waiting_.empty();
}

bool OwnRestart::forwarding_kept(codec::Family f) const {
  std::lock_guard lock(mu_);
  return d_.forwarding_kept(f);
}

void OwnRestart::session_up(const std::string& peer, const std::optional<codec::GracefulRestart>& theirs) {
  {
    std::lock_guard lock(mu_);
    d_.session_up(peer, theirs);
  }
  changed();
}

void OwnRestart::end_of_rib(const std::string& peer, codec::Family f) {
  {
    std::lock_guard lock(mu_);
    d_.end_of_rib(peer, f);
  }
  changed();
}

fsm::RestartDeferral::Settled OwnRestart::settled(codec::Family f) const {
  std::lock_guard lock(mu_);
  return d_.settled(f, now());
}

std::vector<std::string> OwnRestart::waiting_for(codec::Family f) const {
  std::lock_guard lock(mu_);
  return d_.waiting_for(f);
}

void OwnRestart::changed() {
  std::function<void()> fn;
  {
    std::lock_guard lock(mu_);
    fn = on_change_;
  }
  if (fn) fn();
}

OwnRestart& own_restart() {
  static OwnRestart instance;
  return instance;
}

}  // namespace petrel::daemon

// RFC 7606 section 2: the strongest action wins.
#include "codec/rfc7606.h"

namespace petrel::codec {

void ErrorReport::add(const Diagnostic& d) {
  if (d.action > action_) action_ = d.action;
  if (count_ < kMaxDiagnostics) {
    diags_[count_++] = d;
  } else {
    ++dropped_;
  }
}

void ErrorReport::reset(const Diagnostic& d, const NotifyError& n) {
  Diagnostic x = d;
  x.action = ErrorAction::kSessionReset;
  if (action_ != ErrorAction::kSessionReset) {  // the first reset's data wins
    notify_ = n;
    has_notify_ = true;
  }
  add(x);
}

void ErrorReport::disable(const Diagnostic& d, const NotifyError& n) {
  Diagnostic x = d;
  x.action = ErrorAction::kAfiSafiDisable;
  if (!has_notify_) {
    notify_ = n;
    has_notify_ = true;
  }
  if (!is_disabled(d.family) && disabled_count_ < kMaxDisabledFamilies)
    disabled_[disabled_count_++] = d.family;
  add(x);
}

bool ErrorReport::is_disabled(Family f) const {
  for (size_t i = 0; i < disabled_count_; ++i)
    if (disabled_[i] == f) return true;
  return false;
}

}  // namespace petrel::codec

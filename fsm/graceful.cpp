// Graceful restart decisions of a session: RFC 4724 section 4.2, RFC 8538.
#include "fsm/graceful.h"

#include <utility>

#include "fsm/negotiate.h"

namespace petrel::fsm {

namespace {
constexpr auto kCease = static_cast<uint8_t>(codec::ErrorCode::kCease);
}  // namespace

bool cease_is_hard(uint8_t subcode) {
  switch (subcode) {
    case codec::cease::kMaxPrefixes:
    case codec::cease::kAdministrativeShutdown:
    case codec::cease::kPeerDeconfigured:
    case codec::cease::kAdministrativeReset:
    case codec::cease::kHardReset: return true;
    default: return false;
  }
}

bool is_hard_reset(uint8_t code, uint8_t subcode) { return code == kCease && subcode == codec::cease::kHardReset; }

codec::Notification hard_reset(const codec::Notification& inner) {
  codec::Notification n{kCease, codec::cease::kHardReset, {}};
  n.data.reserve(2 + inner.data.size());
  n.data.push_back(std::byte{inner.code});
  n.data.push_back(std::byte{inner.subcode});
  n.data.insert(n.data.end(), inner.data.begin(), inner.data.end());
  return n;
}

codec::Notification for_session(codec::Notification n, const Negotiated* negotiated) {
  if (!negotiated || !negotiated->graceful_notification || n.code != kCease || !cease_is_hard(n.subcode) ||
      n.subcode == codec::cease::kHardReset)
    return n;
  return hard_reset(n);
}

bool helper_keeps_routes(const Negotiated& negotiated, DownCause cause, uint8_t code, uint8_t subcode) {
  if (!negotiated.graceful_restart) return false;
  switch (cause) {
    case DownCause::kTcpFailed:
    case DownCause::kHoldTimerExpired:
    case DownCause::kSendHoldTimerExpired: return true;
    case DownCause::kManualStop:
    case DownCause::kAutomaticStop:
    case DownCause::kNotificationReceived:
    case DownCause::kMessageError:
    case DownCause::kOpenRefused:
    case DownCause::kUnexpectedEvent:
    case DownCause::kCollision: return negotiated.graceful_notification && !is_hard_reset(code, subcode);
  }
  return false;
}

bool keeps_stale_on_return(const std::optional<codec::GracefulRestart>& again, codec::Family f) {
  if (!again) return false;
  for (const auto& e : again->families)
    if (e.family == f) return e.forwarding_preserved;
  return false;
}

}  // namespace petrel::fsm

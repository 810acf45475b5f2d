// Graceful restart decisions of a session: RFC 4724 section 4.2, RFC 8538,
// RFC 9494 section 4.2.
#include "fsm/graceful.h"

#include <algorithm>
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

uint32_t long_lived_stale_time(const std::optional<codec::GracefulRestart>& gr,
                               const std::optional<codec::LongLivedGracefulRestart>& llgr, codec::Family f,
                               uint32_t local_limit) {
  if (!gr || !llgr) return 0;  // RFC 9494 section 4.1
  uint32_t t = 0;
  for (const auto& e : llgr->families)
    if (e.family == f) t = e.stale_time;
  return std::min(t, local_limit);
}

KeptAs kept_as(const std::optional<codec::GracefulRestart>& gr,
               const std::optional<codec::LongLivedGracefulRestart>& llgr, codec::Family f, uint32_t local_limit) {
  if (!gr) return KeptAs::kWithdraw;
  const bool listed =
      std::any_of(gr->families.begin(), gr->families.end(), [&](const auto& e) { return e.family == f; });
  if (listed && gr->restart_time > 0) return KeptAs::kRestart;
  return long_lived_stale_time(gr, llgr, f, local_limit) > 0 ? KeptAs::kLongLived : KeptAs::kWithdraw;
}

bool keeps_long_lived_on_return(const std::optional<codec::LongLivedGracefulRestart>& again, codec::Family f) {
  if (!again) return false;
  bool kept = false;
  for (const auto& e : again->families)
    if (e.family == f) kept = e.forwarding_preserved;
  return kept;
}

}  // namespace petrel::fsm

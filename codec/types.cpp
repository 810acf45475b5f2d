// Names for message types, families, error codes and RFC 7606 actions.
#include "codec/types.h"

#include <charconv>
#include <cstdio>

namespace petrel::codec {

std::string_view message_type_name(MessageType t) {
  switch (t) {
    case MessageType::kOpen: return "open";
    case MessageType::kUpdate: return "update";
    case MessageType::kNotification: return "notification";
    case MessageType::kKeepalive: return "keepalive";
    case MessageType::kRouteRefresh: return "route-refresh";
  }
  return "unknown";
}

namespace {

struct NamedFamily {
  Family family;
  std::string_view name;
};

constexpr NamedFamily kFamilyNames[] = {
    {{1, 1}, "ipv4-unicast"},      {{2, 1}, "ipv6-unicast"},
    {{1, 2}, "ipv4-multicast"},    {{2, 2}, "ipv6-multicast"},
    {{1, 4}, "ipv4-labeled-unicast"}, {{2, 4}, "ipv6-labeled-unicast"},
    {{1, 5}, "ipv4-mvpn"},         {{2, 5}, "ipv6-mvpn"},
    {{1, 128}, "ipv4-vpn"},        {{2, 128}, "ipv6-vpn"},
    {{1, 129}, "ipv4-multicast-vpn"}, {{2, 129}, "ipv6-multicast-vpn"},
    {{1, 132}, "ipv4-rtc"},        {{1, 133}, "ipv4-flowspec"},
    {{2, 133}, "ipv6-flowspec"},   {{1, 134}, "ipv4-flowspec-vpn"},
    {{2, 134}, "ipv6-flowspec-vpn"}, {{1, 73}, "ipv4-sr-policy"},
    {{2, 73}, "ipv6-sr-policy"},   {{25, 65}, "l2vpn-vpls"},
    {{25, 70}, "l2vpn-evpn"},      {{16388, 71}, "ls"},
};

}  // namespace

std::string_view family_name(Family f, std::span<char, 32> buf) {
  for (const auto& n : kFamilyNames)
    if (n.family == f) return n.name;
  int len = std::snprintf(buf.data(), buf.size(), "afi-%u-safi-%u", unsigned{f.afi}, unsigned{f.safi});
  return std::string_view(buf.data(), static_cast<size_t>(len));
}

bool parse_family(std::string_view name, Family& out) {
  for (const auto& n : kFamilyNames) {
    if (n.name == name) {
      out = n.family;
      return true;
    }
  }
  return false;
}

std::string_view error_code_name(ErrorCode c) {
  switch (c) {
    case ErrorCode::kMessageHeader: return "Message Header Error";
    case ErrorCode::kOpenMessage: return "OPEN Message Error";
    case ErrorCode::kUpdateMessage: return "UPDATE Message Error";
    case ErrorCode::kHoldTimerExpired: return "Hold Timer Expired";
    case ErrorCode::kFsm: return "Finite State Machine Error";
    case ErrorCode::kCease: return "Cease";
    case ErrorCode::kRouteRefresh: return "ROUTE-REFRESH Message Error";
    case ErrorCode::kSendHoldTimerExpired: return "Send Hold Timer Expired";
  }
  return "unknown";
}

std::string_view error_subcode_name(ErrorCode c, uint8_t s) {
  switch (c) {
    case ErrorCode::kMessageHeader:
      switch (s) {
        case 1: return "Connection Not Synchronized";
        case 2: return "Bad Message Length";
        case 3: return "Bad Message Type";
        default: break;
      }
      break;
    case ErrorCode::kOpenMessage:
      switch (s) {
        case 0: return "Unspecific";
        case 1: return "Unsupported Version Number";
        case 2: return "Bad Peer AS";
        case 3: return "Bad BGP Identifier";
        case 4: return "Unsupported Optional Parameter";
        case 6: return "Unacceptable Hold Time";
        case 7: return "Unsupported Capability";
        case 11: return "Role Mismatch";
        default: break;
      }
      break;
    case ErrorCode::kUpdateMessage:
      switch (s) {
        case 1: return "Malformed Attribute List";
        case 2: return "Unrecognized Well-known Attribute";
        case 3: return "Missing Well-known Attribute";
        case 4: return "Attribute Flags Error";
        case 5: return "Attribute Length Error";
        case 6: return "Invalid ORIGIN Attribute";
        case 8: return "Invalid NEXT_HOP Attribute";
        case 9: return "Optional Attribute Error";
        case 10: return "Invalid Network Field";
        case 11: return "Malformed AS_PATH";
        default: break;
      }
      break;
    case ErrorCode::kFsm:
      switch (s) {
        case 0: return "Unspecified Error";
        case 1: return "Receive Unexpected Message in OpenSent State";
        case 2: return "Receive Unexpected Message in OpenConfirm State";
        case 3: return "Receive Unexpected Message in Established State";
        default: break;
      }
      break;
    case ErrorCode::kCease:
      switch (s) {
        case 1: return "Maximum Number of Prefixes Reached";
        case 2: return "Administrative Shutdown";
        case 3: return "Peer De-configured";
        case 4: return "Administrative Reset";
        case 5: return "Connection Rejected";
        case 6: return "Other Configuration Change";
        case 7: return "Connection Collision Resolution";
        case 8: return "Out of Resources";
        case 9: return "Hard Reset";
        case 10: return "BFD Down";
        default: break;
      }
      break;
    case ErrorCode::kRouteRefresh:
      if (s == 1) return "Invalid Message Length";
      break;
    case ErrorCode::kHoldTimerExpired:
    case ErrorCode::kSendHoldTimerExpired:
      if (s == 0) return "";
      break;
  }
  return "unknown";
}

std::string_view error_action_name(ErrorAction a) {
  switch (a) {
    case ErrorAction::kNone: return "none";
    case ErrorAction::kAttributeDiscard: return "attribute-discard";
    case ErrorAction::kTreatAsWithdraw: return "treat-as-withdraw";
    case ErrorAction::kAfiSafiDisable: return "afi-safi-disable";
    case ErrorAction::kSessionReset: return "session-reset";
  }
  return "unknown";
}

}  // namespace petrel::codec

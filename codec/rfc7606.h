// RFC 7606 error handling as a return value.
//
// Decoding an UPDATE collects diagnostics: each names the attribute (by
// type code), a static reason and the action the malformation costs
// (RFC 7606 section 2: attribute discard < treat-as-withdraw < AFI/SAFI
// disable < session reset). Decoding goes on after a recoverable error and
// the strongest action wins; a session reset also carries the NOTIFICATION
// to send (RFC 4271 section 6.3). Nothing here allocates.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "codec/types.h"

namespace petrel::codec {

// Whether the peer is in our AS (or confederation) or not: several RFC 7606
// rules (sections 7.2, 7.5, 7.9, 7.10) depend on it.
enum class PeerType : uint8_t { kExternal, kInternal };

// One finding. attr_type is 0 when the finding is not about one attribute
// (framing, NLRI fields); family is set for NLRI and MP_* findings.
struct Diagnostic {
  ErrorAction action = ErrorAction::kNone;
  uint8_t attr_type = 0;
  Family family{};
  std::string_view reason;
};

class ErrorReport {
 public:
  static constexpr size_t kMaxDiagnostics = 8;
  static constexpr size_t kMaxDisabledFamilies = 2;

  void add(const Diagnostic& d);
  // A session reset with the NOTIFICATION to send. The first one is kept.
  void reset(const Diagnostic& d, const NotifyError& n);
  // An AFI/SAFI disable (RFC 4760 section 7); n is the NOTIFICATION to send
  // if the caller prefers to reset the session instead.
  void disable(const Diagnostic& d, const NotifyError& n);

  [[nodiscard]] ErrorAction action() const { return action_; }
  [[nodiscard]] bool ok() const { return action_ == ErrorAction::kNone; }
  // Meaningful when action() is kSessionReset or kAfiSafiDisable.
  [[nodiscard]] const NotifyError& notification() const { return notify_; }
  [[nodiscard]] std::span<const Diagnostic> diagnostics() const { return {diags_.data(), count_}; }
  // Findings past kMaxDiagnostics: counted, not kept.
  [[nodiscard]] size_t dropped() const { return dropped_; }
  [[nodiscard]] std::span<const Family> disabled_families() const {
    return {disabled_.data(), disabled_count_};
  }
  [[nodiscard]] bool is_disabled(Family f) const;

 private:
  std::array<Diagnostic, kMaxDiagnostics> diags_{};
  std::array<Family, kMaxDisabledFamilies> disabled_{};
  NotifyError notify_{};
  size_t count_ = 0;
  size_t dropped_ = 0;
  size_t disabled_count_ = 0;
  ErrorAction action_ = ErrorAction::kNone;
  bool has_notify_ = false;
};

// A malformation found by one attribute decoder: a static reason and, for
// the rare cases the attribute's table entry does not decide, a cost.
struct AttrError {
  std::string_view reason;
  ErrorAction cost = ErrorAction::kNone;  // kNone: the descriptor table decides
};

}  // namespace petrel::codec

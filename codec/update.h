// The UPDATE message (RFC 4271 section 4.3), decoded as a view.
//
// UpdateView::decode() checks the framing once (withdrawn routes length,
// total path attribute length, RFC 4271 section 6.3), walks the attributes
// once checking each against the descriptor table and its decoder, and
// validates every NLRI field, keeping offsets only. It never fails as a
// function: the RFC 7606 outcome is report().action(), the strongest of
// every finding, and decoding goes on after recoverable ones:
//
//   kNone              use everything
//   kAttributeDiscard  use everything; the discarded attributes are left
//                      out of attribute_set()
//   kTreatAsWithdraw   withdraw every prefix of announced() as well as
//                      those of withdrawn() (RFC 7606 section 2)
//   kAfiSafiDisable    the families in report().disabled_families() are
//                      to be flushed and ignored (RFC 4760 section 7); the
//                      others' prefixes are as above
//   kSessionReset      send report().notification() and close; the ranges
//                      are empty
//
// Two rules act on the whole message once the walk is done:
// - RFC 7606 section 5.2: an UPDATE with path attributes other than
//   MP_UNREACH_NLRI and no reachable NLRI cannot be trusted to have been
//   parsed right, so an error costing more than attribute discard there
//   becomes a session reset, with the NOTIFICATION of the first such error
//   (RFC 4271 section 6.3 subcodes).
// - On a 2-octet AS session the canonical set carries AS_PATH with 4-octet
//   AS numbers (AS4_PATH merged in). A path that widens past 65535 octets
//   cannot be written with its 16-bit length: the routes are
//   treat-as-withdraw with a diagnostic naming AS_PATH, which is left out
//   (attribute discard when the message announces nothing).
//
// Prefixes are handed out by NlriRange, lazily and without copying.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "codec/attribute_set.h"
#include "codec/attributes.h"
#include "codec/mp_nlri.h"
#include "codec/nlri.h"
#include "codec/rfc7606.h"
#include "codec/types.h"
#include "crates/bytes/bytes.h"
#include "crates/result/result.h"

namespace petrel::codec {

class UpdateView {
 public:
  // body: the message after its 19-octet header (Message::body).
  static UpdateView decode(bytes::Span body, const SessionParams& params, PeerType peer);

  [[nodiscard]] const ErrorReport& report() const { return report_; }
  [[nodiscard]] ErrorAction action() const { return report_.action(); }

  // IPv4 unicast in the classic fields.
  [[nodiscard]] const NlriRange& withdrawn() const { return withdrawn_; }
  [[nodiscard]] const NlriRange& nlri() const { return nlri_; }
  [[nodiscard]] const std::optional<MpReach>& mp_reach() const { return mp_reach_; }
  [[nodiscard]] const std::optional<MpUnreach>& mp_unreach() const { return mp_unreach_; }

  // Every announced / withdrawn field of a supported family, classic first:
  // at most two each. Families disabled by an error are left out.
  struct Ranges {
    std::array<NlriRange, 2> items{};
    size_t count = 0;
    [[nodiscard]] const NlriRange* begin() const { return items.data(); }
    [[nodiscard]] const NlriRange* end() const { return items.data() + count; }
  };
  [[nodiscard]] Ranges announced() const;
  [[nodiscard]] Ranges withdrawals() const;

  // RFC 4724 section 2: the End-of-RIB marker's family, if this is one.
  [[nodiscard]] std::optional<Family> end_of_rib() const;

  // The attributes block as walked (up to a section 4 break, if any).
  [[nodiscard]] AttributeRange raw_attributes() const { return AttributeRange(attrs_); }
  // The first occurrence of a recognised attribute, unless discarded.
  [[nodiscard]] std::optional<RawAttribute> attribute(uint8_t type) const;

  // The canonical attribute set of the announced routes (one allocation).
  // For a view whose action() is below treat-as-withdraw (under
  // treat-as-withdraw it still builds, without the malformed attributes,
  // for inspection only): every attribute that cannot be built is a
  // finding of decode(), so the set always builds (asserted).
  [[nodiscard]] AttributeSet attribute_set() const;
  // The same into `into`, whose buffer is reused (no allocation once it
  // is large enough: the import path builds one set per UPDATE).
  void attribute_set(AttributeSet& into) const;
  // Its canonical bytes alone (attribute_set().wire()), written into `out`
  // (cleared first; its capacity is reused): for the table's import path,
  // which interns by these bytes and needs neither the allocation nor the
  // fields AttributeSet extracts from them again. False, with `out`
  // empty, if an attribute could not be written with its length (never
  // after decode() found nothing above attribute discard): the routes
  // must then be withdrawn, not announced.
  [[nodiscard]] bool write_attribute_set(std::vector<std::byte>& out) const;

  [[nodiscard]] const SessionParams& params() const { return params_; }
  [[nodiscard]] PeerType peer() const { return peer_; }

 private:
  struct Slot {
    bytes::Span value;
    uint8_t flags = 0;
    bool present = false;
  };
  static constexpr size_t kSlots = 40;  // type codes below this are indexed

  void walk_attributes(bytes::Span block);
  void check_attribute(const RawAttribute& a);
  void check_value(const AttrDescriptor& d, const RawAttribute& a);
  void mp_failed(const RawAttribute& a, const MpError& e);
  void check_mandatory();
  void check_as4();
  void check_widened_as_path();
  void check_missing_nlri();
  // A finding; `n` is the NOTIFICATION it costs if RFC 7606 section 5.2
  // turns it into a session reset.
  void error(const Diagnostic& d, const NotifyError& n);
  void malformed(const AttrDescriptor& d, std::string_view reason, ErrorAction cost, const NotifyError& n);
  void discard(uint8_t type, std::string_view reason, ErrorAction action);

  SessionParams params_{};
  PeerType peer_ = PeerType::kExternal;
  ErrorReport report_{};
  bytes::Span body_, attrs_;
  NlriRange withdrawn_, nlri_;
  std::optional<MpReach> mp_reach_;
  std::optional<MpUnreach> mp_unreach_;
  std::array<Slot, kSlots> slots_{};
  std::array<uint64_t, 4> seen_{};  // type codes met, for duplicates
  uint64_t discarded_ = 0;          // bit per slot
  bool attrs_broken_ = false;       // RFC 7606 section 4 break
  bool ignore_as4_ = false;         // RFC 6793 4.2.3: AS4_* ignored
  // The first finding above attribute discard (RFC 7606 section 5.2).
  std::optional<NotifyError> escalate_;
  uint8_t escalate_type_ = 0;
};

}  // namespace petrel::codec

// Builds UPDATE messages: packs as many prefixes sharing one attribute set
// as fit in a message (4096 octets, or 65535 with RFC 8654 extended
// messages), withdrawals first.
//
// IPv4 unicast goes in the classic fields (with NEXT_HOP), unless its next
// hop is IPv6 (RFC 8950: MP_REACH_NLRI); every other family goes in
// MP_REACH_NLRI / MP_UNREACH_NLRI, placed first (RFC 7606 section 5.1).
// Path ids are written when ADD-PATH send is negotiated for the family
// (RFC 7911). On a 2-octet session the path is written with AS_TRANS and
// AS4_PATH / AS4_AGGREGATOR added (RFC 6793 section 4.2.2). End-of-RIB
// markers follow RFC 4724 section 2.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "codec/attribute_set.h"
#include "codec/nlri.h"
#include "codec/types.h"
#include "crates/result/result.h"

namespace petrel::codec {

class UpdateBuilder {
 public:
  explicit UpdateBuilder(const SessionParams& params) : params_(params) {}

  // Appends whole UPDATE messages to out, back to back: first the
  // withdrawals, then the announcements with attrs (attrs may be null when
  // there are none). Returns the number of messages, or a static reason
  // (an attribute set too large for one message, a family without a next
  // hop of its kind).
  Result<size_t, std::string_view> build(Family f, const AttributeSet* attrs,
                                         std::span<const NlriPrefix> announce,
                                         std::span<const NlriPrefix> withdraw,
                                         std::vector<std::byte>& out) const;

  Result<size_t, std::string_view> announce(Family f, const AttributeSet& attrs,
                                            std::span<const NlriPrefix> prefixes,
                                            std::vector<std::byte>& out) const {
    return build(f, &attrs, prefixes, {}, out);
  }
  Result<size_t, std::string_view> withdraw(Family f, std::span<const NlriPrefix> prefixes,
                                            std::vector<std::byte>& out) const {
    return build(f, nullptr, {}, prefixes, out);
  }

  // RFC 4724 section 2: an empty UPDATE for IPv4 unicast, an UPDATE with an
  // empty MP_UNREACH_NLRI for any other family.
  static void end_of_rib(Family f, std::vector<std::byte>& out);

  // The attributes as this session needs them (2-octet AS conversion),
  // without MP_REACH_NLRI and, unless classic, NEXT_HOP.
  void encode_attributes(const AttributeSet& attrs, bool classic_next_hop,
                         std::vector<std::byte>& out) const;

 private:
  SessionParams params_;
};

}  // namespace petrel::codec

// UPDATE decoding: RFC 4271 sections 4.3 and 6.3, RFC 4760, RFC 6793
// section 4.2.3, RFC 7606 sections 3, 4, 5 and 7, RFC 4724 section 2.
#include "codec/update.h"

#include <bit>

#include "codec/as_path.h"

namespace petrel::codec {
namespace {

bool test_and_set(std::array<uint64_t, 4>& bits, uint8_t type) {
  uint64_t mask = uint64_t{1} << (type & 63u);
  uint64_t& word = bits[type >> 6];
  bool was = (word & mask) != 0;
  word |= mask;
  return was;
}

bool has_bit(const std::array<uint64_t, 4>& bits, uint8_t type) {
  return (bits[type >> 6] >> (type & 63u)) & 1u;
}

NotifyError update_notify(uint8_t subcode) { return NotifyError::make(ErrorCode::kUpdateMessage, subcode); }
NotifyError update_notify(uint8_t subcode, const RawAttribute& a) {
  return NotifyError::with_view(ErrorCode::kUpdateMessage, subcode, a.whole);
}

}  // namespace

UpdateView UpdateView::decode(bytes::Span body, const SessionParams& params, PeerType peer) {
  UpdateView u;
  u.params_ = params;
  u.peer_ = peer;
  u.body_ = body;
  const auto malformed_list = update_notify(update_error::kMalformedAttributeList);

  // RFC 4271 section 6.3: the two length fields must fit the message.
  bytes::Reader r(body);
  auto wlen = r.u16();
  auto wd = wlen ? r.take(*wlen) : std::nullopt;
  if (!wd) {
    u.report_.reset({{}, 0, kIpv4Unicast, "withdrawn routes length overruns the message"},
                    malformed_list);
    return u;
  }
  auto alen = r.u16();
  auto attrs = alen ? r.take(*alen) : std::nullopt;
  if (!attrs) {
    u.report_.reset({{}, 0, {}, "total path attribute length overruns the message"}, malformed_list);
    return u;
  }
  bytes::Span nlri = r.rest();

  // RFC 7606 section 5.3: syntactically incorrect classic fields.
  const NlriFormat v4{net::IpFamily::V4, params.add_path_receive.has(kIpv4Unicast)};
  if (auto ok = validate_nlri(*wd, v4); !ok) {
    u.report_.reset({{}, 0, kIpv4Unicast, ok.error()},
                    update_notify(update_error::kInvalidNetworkField));
    return u;
  }
  if (auto ok = validate_nlri(nlri, v4); !ok) {
    u.report_.reset({{}, 0, kIpv4Unicast, ok.error()},
                    update_notify(update_error::kInvalidNetworkField));
    return u;
  }
  u.withdrawn_ = NlriRange(kIpv4Unicast, *wd, v4);
  u.nlri_ = NlriRange(kIpv4Unicast, nlri, v4);

  u.walk_attributes(*attrs);
  if (u.action() != ErrorAction::kSessionReset) {
    u.check_mandatory();
    u.check_as4();
    u.check_widened_as_path();
    u.check_missing_nlri();
  }
  if (u.action() == ErrorAction::kSessionReset) {
    u.withdrawn_ = {};
    u.nlri_ = {};
    u.mp_reach_.reset();
    u.mp_unreach_.reset();
  }
  return u;
}

void UpdateView::walk_attributes(bytes::Span block) {
  const auto malformed_list = update_notify(update_error::kMalformedAttributeList);
  bytes::Reader r(block);
  attrs_ = block;
  while (!r.empty()) {
    size_t before = r.offset();
    AttrReadError e;
    auto a = read_attribute(r, e);
    if (!a) {
      // RFC 7606 section 4: treat-as-withdraw; the Total Attribute Length
      // still locates the NLRI field.
      attrs_ = block.first(before);
      attrs_broken_ = true;
      uint8_t type = block.size() - before >= 2 ? std::to_integer<uint8_t>(block[before + 1]) : 0;
      if (type == attr_type::kMpReachNlri || type == attr_type::kMpUnreachNlri) {
        // Its NLRI cannot be located: no treat-as-withdraw is possible.
        report_.reset({{}, type, {}, "attribute length exceeds the remaining attribute octets"},
                      update_notify(update_error::kMalformedAttributeList));
        return;
      }
      error({ErrorAction::kTreatAsWithdraw, e.short_header ? uint8_t{0} : type, {},
             e.short_header ? "fewer octets left than an attribute header"
                            : "attribute length exceeds the remaining attribute octets"},
            malformed_list);
      break;
    }
    check_attribute(*a);
    if (action() == ErrorAction::kSessionReset) return;
  }
  // RFC 7606 section 2: treat-as-withdraw needs every NLRI located. With
  // the walk broken and no MP attribute met before the break, routes in an
  // MP_REACH_NLRI after it could not be withdrawn.
  if (attrs_broken_ && !mp_reach_ && !mp_unreach_ && nlri_.empty() && withdrawn_.empty()) {
    report_.reset({{}, 0, {}, "attributes unreadable and no NLRI could be located"},
                  update_notify(update_error::kMalformedAttributeList));
  }
}

void UpdateView::error(const Diagnostic& d, const NotifyError& n) {
  report_.add(d);
  if (d.action > ErrorAction::kAttributeDiscard && !escalate_) {
    escalate_ = n;
    escalate_type_ = d.attr_type;
  }
}

void UpdateView::malformed(const AttrDescriptor& d, std::string_view reason, ErrorAction cost,
                           const NotifyError& n) {
  if (d.type < kSlots) discarded_ |= uint64_t{1} << d.type;
  error({cost, d.type, {}, reason}, n);
}

void UpdateView::discard(uint8_t type, std::string_view reason, ErrorAction action) {
  if (type < kSlots) discarded_ |= uint64_t{1} << type;
  report_.add({action, type, {}, reason});
}

void UpdateView::check_attribute(const RawAttribute& a) {
  const bool repeated = test_and_set(seen_, a.type);
  if (repeated) {
    // RFC 7606 section 3 (g).
    if (a.type == attr_type::kMpReachNlri || a.type == attr_type::kMpUnreachNlri) {
      report_.reset({{}, a.type, {}, "MP attribute appears more than once"},
                    update_notify(update_error::kMalformedAttributeList));
    } else {
      report_.add({ErrorAction::kAttributeDiscard, a.type, {},
                   "attribute repeated; all but the first discarded"});
    }
    return;
  }
  const AttrDescriptor* d = find_descriptor(a.type);
  if (!d) {
    if (!a.optional()) {
      // RFC 4271 section 6.3, unchanged by RFC 7606.
      report_.reset({{}, a.type, {}, "unrecognised well-known attribute"},
                    NotifyError::with_view(ErrorCode::kUpdateMessage,
                                           update_error::kUnrecognizedWellKnown, a.whole));
    } else if (!a.transitive()) {
      report_.add({ErrorAction::kNone, a.type, {}, "unrecognised optional non-transitive attribute ignored"});
    }
    return;
  }
  if (d->internal_only && peer_ == PeerType::kExternal) {
    discard(a.type, "not accepted from an external peer; discarded", ErrorAction::kAttributeDiscard);
    return;
  }
  if ((a.type == attr_type::kAs4Path || a.type == attr_type::kAs4Aggregator) && params_.four_octet_as) {
    // RFC 6793 section 4.1: a NEW speaker discards AS4_* from a NEW speaker.
    discard(a.type, "AS4_* attribute on a 4-octet AS session; discarded", ErrorAction::kAttributeDiscard);
    return;
  }
  const bool is_mp = a.type == attr_type::kMpReachNlri || a.type == attr_type::kMpUnreachNlri;
  const uint8_t ot = a.flags & (attr_flag::kOptional | attr_flag::kTransitive);
  if (ot != d->flags) {
    malformed(*d, "Optional/Transitive flags conflict with the attribute type", d->flags_cost,
              update_notify(update_error::kAttributeFlags, a));
    if (!is_mp) return;  // the MP NLRI is still needed to withdraw
  }
  if (!length_ok(*d, a.value.size(), params_.four_octet_as)) {
    malformed(*d, "attribute length is invalid for its type", d->cost,
              update_notify(update_error::kAttributeLength, a));
    return;
  }
  if (d->type < kSlots) slots_[d->type] = Slot{a.value, a.flags, true};
  check_value(*d, a);
}

void UpdateView::check_value(const AttrDescriptor& d, const RawAttribute& a) {
  const bytes::Span v = a.value;
  switch (a.type) {
    case attr_type::kOrigin:
      if (auto o = decode_origin(v); !o)
        malformed(d, o.error().reason, d.cost, update_notify(update_error::kInvalidOrigin, a));
      break;
    case attr_type::kAsPath: {
      AsPathRules rules{params_.four_octet_as ? AsWidth::k4 : AsWidth::k2,
                        peer_ == PeerType::kInternal};
      if (auto ok = validate_as_path(v, rules); !ok)
        malformed(d, ok.error().reason, d.cost, update_notify(update_error::kMalformedAsPath));
      break;
    }
    case attr_type::kAs4Path:
      if (auto ok = validate_as_path(v, {AsWidth::k4, false}); !ok)
        malformed(d, ok.error().reason, d.cost, update_notify(update_error::kOptionalAttribute, a));
      break;
    case attr_type::kAggregator:
      if (auto g = decode_aggregator(v, params_.four_octet_as); !g)
        malformed(d, g.error().reason, d.cost, update_notify(update_error::kOptionalAttribute, a));
      break;
    case attr_type::kAs4Aggregator:
      if (auto g = decode_as4_aggregator(v); !g)
        malformed(d, g.error().reason, d.cost, update_notify(update_error::kOptionalAttribute, a));
      break;
    case attr_type::kMpReachNlri: {
      auto m = decode_mp_reach(v, params_.add_path_receive, params_.extended_next_hop);
      if (!m) {
        mp_failed(a, m.error());
        break;
      }
      if (!m->supported)
        report_.add({ErrorAction::kNone, d.type, m->family, "family not supported; NLRI skipped"});
      mp_reach_ = *m;
      break;
    }
    case attr_type::kMpUnreachNlri: {
      auto m = decode_mp_unreach(v, params_.add_path_receive);
      if (!m) {
        mp_failed(a, m.error());
        break;
      }
      if (!m->supported)
        report_.add({ErrorAction::kNone, d.type, m->family, "family not supported; NLRI skipped"});
      mp_unreach_ = *m;
      break;
    }
    default:
      break;  // the table's length rule is the whole check
  }
}

// RFC 7606 sections 5.3 and 7.11, RFC 4760 section 7: an MP attribute
// that names its family costs that family; one that cannot, the session.
void UpdateView::mp_failed(const RawAttribute& a, const MpError& e) {
  if (!e.family_known) {
    report_.reset({{}, a.type, {}, e.reason},
                  NotifyError::with_view(ErrorCode::kUpdateMessage, update_error::kAttributeLength,
                                         a.whole));
  } else {
    const auto n = update_notify(update_error::kOptionalAttribute, a);
    report_.disable({{}, a.type, e.family, e.reason}, n);
    if (!escalate_) {
      escalate_ = n;
      escalate_type_ = a.type;
    }
  }
  discarded_ |= uint64_t{1} << a.type;
}

void UpdateView::check_mandatory() {
  // RFC 7606 section 3 (d); NEXT_HOP only with classic NLRI (RFC 4760
  // section 3). An UPDATE without NLRI needs no attributes at all.
  const bool mp_nlri = mp_reach_ && (!mp_reach_->supported || !mp_reach_->nlri.empty());
  if (nlri_.empty() && !mp_nlri) return;
  for (uint8_t t : {attr_type::kOrigin, attr_type::kAsPath}) {
    const auto missing = NotifyError::with_u8(ErrorCode::kUpdateMessage, update_error::kMissingWellKnown, t);
    if (!has_bit(seen_, t) && !(attrs_broken_)) {
      error({ErrorAction::kTreatAsWithdraw, t, {}, "missing well-known mandatory attribute"}, missing);
    } else if (!has_bit(seen_, t)) {
      error({ErrorAction::kTreatAsWithdraw, t, {}, "well-known mandatory attribute not found"}, missing);
    }
  }
  if (!nlri_.empty() && !has_bit(seen_, attr_type::kNextHop))
    error({ErrorAction::kTreatAsWithdraw, attr_type::kNextHop, {}, "missing well-known mandatory attribute"},
          NotifyError::with_u8(ErrorCode::kUpdateMessage, update_error::kMissingWellKnown,
                               attr_type::kNextHop));
}

void UpdateView::check_as4() {
  if (params_.four_octet_as) return;
  // RFC 6793 section 4.2.3: an AGGREGATOR without AS_TRANS means the
  // AS4_* attributes are stale.
  auto agg = attribute(attr_type::kAggregator);
  if (!agg) return;
  auto a = decode_aggregator(agg->value, false);
  if (a && a->asn != kAsTrans &&
      (attribute(attr_type::kAs4Path) || attribute(attr_type::kAs4Aggregator))) {
    ignore_as4_ = true;
    report_.add({ErrorAction::kNone, attr_type::kAs4Path, {},
                 "AGGREGATOR does not carry AS_TRANS; AS4_PATH and AS4_AGGREGATOR ignored"});
  }
}

// The canonical set carries a 2-octet session's AS_PATH with 4-octet AS
// numbers (RFC 6793 section 4.2.3 merge included); its Attribute Length
// has 16 bits. A path that does not fit cannot be kept, so its routes are
// treat-as-withdraw (the attribute is malformed for this session's use, as
// RFC 7606 section 7.2 treats an AS_PATH it cannot use) and AS_PATH is left
// out of the set. A message that announces nothing loses only the
// attribute (attribute discard: no route depends on it, and RFC 7606
// section 5.2 does not turn it into a session reset).
void UpdateView::check_widened_as_path() {
  if (params_.four_octet_as) return;
  auto path = attribute(attr_type::kAsPath);
  if (!path) return;
  auto as4 = ignore_as4_ ? std::nullopt : attribute(attr_type::kAs4Path);
  // Widening at most doubles a segment (2 + 2n octets to 2 + 4n); the
  // merged AS4_PATH adds at most its own octets, and merging segments
  // never adds a segment header. Most paths stop here, with no copy.
  if (2 * path->value.size() + (as4 ? as4->value.size() : 0) <= kMaxAttributeValue) return;
  AsPath p = to_as_path(path->value, AsWidth::k2);
  if (as4) p = reconstruct_as4_path(p, to_as_path(as4->value, AsWidth::k4));
  if (as_path_value_size(p, AsWidth::k4) <= kMaxAttributeValue) return;
  malformed(*find_descriptor(attr_type::kAsPath),
            "AS_PATH with 4-octet AS numbers exceeds 65535 octets (2-octet AS session)",
            announced().count > 0 ? ErrorAction::kTreatAsWithdraw : ErrorAction::kAttributeDiscard,
            update_notify(update_error::kMalformedAsPath));
}

// RFC 7606 section 5.2: "if an UPDATE message is encountered that does
// contain path attributes other than MP_UNREACH_NLRI and doesn't encode
// any reachable NLRI, [...] if any encountered error specifies an
// error-handling approach other than 'attribute discard', then the
// 'session reset' approach MUST be used". An MP_REACH_NLRI that could not
// be read, or of a family Petrel skips, is taken to encode reachable NLRI.
void UpdateView::check_missing_nlri() {
  if (action() <= ErrorAction::kAttributeDiscard || !escalate_) return;
  if (!nlri_.empty()) return;
  if (has_bit(seen_, attr_type::kMpReachNlri) &&
      !(mp_reach_ && mp_reach_->supported && mp_reach_->nlri.empty()))
    return;
  std::array<uint64_t, 4> others = seen_;
  others[attr_type::kMpUnreachNlri >> 6] &= ~(uint64_t{1} << (attr_type::kMpUnreachNlri & 63u));
  const bool other_attributes = attrs_broken_ || others[0] || others[1] || others[2] || others[3];
  if (!other_attributes) return;
  report_.reset({{}, escalate_type_, {},
                 "no reachable NLRI: an error above attribute discard is a session reset (RFC 7606 section 5.2)"},
                *escalate_);
}

std::optional<RawAttribute> UpdateView::attribute(uint8_t type) const {
  if (type >= kSlots || !slots_[type].present || ((discarded_ >> type) & 1u)) return std::nullopt;
  RawAttribute a;
  a.type = type;
  a.flags = slots_[type].flags;
  a.value = slots_[type].value;
  return a;
}

UpdateView::Ranges UpdateView::announced() const {
  Ranges r;
  if (action() == ErrorAction::kSessionReset) return r;
  if (!nlri_.empty()) r.items[r.count++] = nlri_;
  if (mp_reach_ && mp_reach_->supported && !report_.is_disabled(mp_reach_->family) &&
      !mp_reach_->nlri.empty())
    r.items[r.count++] = mp_reach_->nlri;
  return r;
}

UpdateView::Ranges UpdateView::withdrawals() const {
  Ranges r;
  if (action() == ErrorAction::kSessionReset) return r;
  if (!withdrawn_.empty()) r.items[r.count++] = withdrawn_;
  if (mp_unreach_ && mp_unreach_->supported && !report_.is_disabled(mp_unreach_->family) &&
      !mp_unreach_->withdrawn.empty())
    r.items[r.count++] = mp_unreach_->withdrawn;
  return r;
}

std::optional<Family> UpdateView::end_of_rib() const {
  if (action() == ErrorAction::kSessionReset) return std::nullopt;
  if (body_.size() == 4 && withdrawn_.empty() && attrs_.empty() && nlri_.empty()) return kIpv4Unicast;
  if (!withdrawn_.empty() || !nlri_.empty() || !mp_unreach_ || mp_reach_) return std::nullopt;
  size_t n = 0;
  for (uint64_t w : seen_) n += static_cast<size_t>(std::popcount(w));
  if (n != 1) return std::nullopt;
  auto u = attribute(attr_type::kMpUnreachNlri);
  if (!u || u->value.size() != 3) return std::nullopt;
  return mp_unreach_->family;
}

}  // namespace petrel::codec

// JSON rendering of BGP messages (schema: docs/decode.md).
#include "codec/to_json.h"

#include <cstdio>

#include "codec/attribute_set.h"
#include "codec/capabilities.h"
#include "codec/notification.h"
#include "codec/open.h"
#include "codec/route_refresh.h"
#include "codec/update.h"

namespace petrel::codec {

namespace {

void family_value(json::Writer& w, Family f) {
  char buf[32];
  w.string_raw(family_name(f, buf));
}

void address_value(json::Writer& w, const net::IpAddress& a) {
  char buf[net::IpAddress::kMaxTextLen];
  w.string_raw(std::string_view(buf, static_cast<size_t>(a.format(buf) - buf)));
}

void ipv4_value(json::Writer& w, uint32_t v) { address_value(w, net::IpAddress::v4(v)); }

void hex_value(json::Writer& w, bytes::Span s) { w.string_raw(bytes::to_hex(s)); }

void notify_error(json::Writer& w, const NotifyError& e) {
  w.key_raw("notification").begin_object();
  w.key_raw("code").number(static_cast<unsigned>(e.code));
  w.key_raw("subcode").number(unsigned{e.subcode});
  w.key_raw("code_name").string_raw(error_code_name(e.code));
  w.key_raw("subcode_name").string_raw(error_subcode_name(e.code, e.subcode));
  w.key_raw("data");
  hex_value(w, e.data());
  w.end_object();
}

// {"action":"session-reset","notification":{...}}
void decode_error(json::Writer& w, const NotifyError& e) {
  w.key_raw("error").begin_object();
  w.key_raw("action").string_raw(error_action_name(ErrorAction::kSessionReset));
  notify_error(w, e);
  w.end_object();
}

void prefix_list(json::Writer& w, const NlriRange& r) {
  char buf[net::Prefix::kMaxTextLen];
  bool add_path = r.format().add_path;
  for (const NlriPrefix& p : r) {
    std::string_view text(buf, static_cast<size_t>(p.prefix.format(buf) - buf));
    if (add_path) {
      w.begin_object();
      w.key_raw("prefix").string_raw(text);
      w.key_raw("path_id").number(p.path_id);
      w.end_object();
    } else {
      w.string_raw(text);
    }
  }
}

void next_hop_value(json::Writer& w, const NextHop& nh) {
  if (!nh.link_local) {
    address_value(w, nh.global);
    return;
  }
  w.begin_array();
  address_value(w, nh.global);
  address_value(w, *nh.link_local);
  w.end_array();
}

void attributes(json::Writer& w, const PathAttributes& a) {
  w.key_raw("attributes").begin_object();
  if (a.origin) w.key_raw("origin").string_raw(origin_name(*a.origin));
  if (a.as_path) {
    w.key_raw("as_path").begin_array();
    for (const auto& seg : a.as_path->segments) {
      w.begin_object();
      w.key_raw("type").string_raw(segment_type_name(seg.type));
      w.key_raw("asns").begin_array();
      for (uint32_t asn : seg.asns) w.number(asn);
      w.end_array();
      w.end_object();
    }
    w.end_array();
  }
  if (a.next_hop) {
    w.key_raw("next_hop");
    address_value(w, *a.next_hop);
  }
  if (a.med) w.key_raw("med").number(*a.med);
  if (a.local_pref) w.key_raw("local_pref").number(*a.local_pref);
  if (a.atomic_aggregate) w.key_raw("atomic_aggregate").boolean(true);
  if (a.aggregator) {
    w.key_raw("aggregator").begin_object();
    w.key_raw("asn").number(a.aggregator->asn);
    w.key_raw("address");
    address_value(w, a.aggregator->address);
    w.end_object();
  }
  char buf[64];
  if (!a.communities.empty()) {
    w.key_raw("communities").begin_array();
    for (uint32_t c : a.communities) {
      int n = std::snprintf(buf, sizeof buf, "%u:%u", c >> 16, c & 0xffff);
      w.string_raw(std::string_view(buf, static_cast<size_t>(n)));
    }
    w.end_array();
  }
  if (a.originator_id) {
    w.key_raw("originator_id");
    ipv4_value(w, *a.originator_id);
  }
  if (!a.cluster_list.empty()) {
    w.key_raw("cluster_list").begin_array();
    for (uint32_t c : a.cluster_list) ipv4_value(w, c);
    w.end_array();
  }
  if (!a.ext_communities.empty()) {
    w.key_raw("extended_communities").begin_array();
    for (const auto& c : a.ext_communities) {
      int n = std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(c.value));
      w.string_raw(std::string_view(buf, static_cast<size_t>(n)));
    }
    w.end_array();
  }
  if (!a.ipv6_ext_communities.empty()) {
    w.key_raw("ipv6_extended_communities").begin_array();
    for (const auto& c : a.ipv6_ext_communities) {
      w.begin_object();
      w.key_raw("type").number(unsigned{c.type});
      w.key_raw("subtype").number(unsigned{c.subtype});
      w.key_raw("global");
      address_value(w, net::IpAddress::from_bytes(net::IpFamily::V6, c.global.data()));
      w.key_raw("local").number(unsigned{c.local});
      w.end_object();
    }
    w.end_array();
  }
  if (!a.large_communities.empty()) {
    w.key_raw("large_communities").begin_array();
    for (const auto& c : a.large_communities) {
      int n = std::snprintf(buf, sizeof buf, "%u:%u:%u", c.global, c.local1, c.local2);
      w.string_raw(std::string_view(buf, static_cast<size_t>(n)));
    }
    w.end_array();
  }
  if (a.otc) w.key_raw("otc").number(*a.otc);
  if (!a.unknown.empty()) {
    w.key_raw("unknown").begin_array();
    for (const auto& u : a.unknown) {
      w.begin_object();
      w.key_raw("type").number(unsigned{u.type});
      w.key_raw("flags").number(unsigned{u.flags});
      w.key_raw("value");
      hex_value(w, u.value);
      w.end_object();
    }
    w.end_array();
  }
  w.end_object();
}

bool update_json(bytes::Span body, const JsonOptions& opts, json::Writer& w) {
  UpdateView u = UpdateView::decode(body, opts.params, opts.peer);
  ErrorAction action = u.action();
  const ErrorReport& rep = u.report();
  if (action != ErrorAction::kNone) {
    w.key_raw("rfc7606").begin_object();
    w.key_raw("action").string_raw(error_action_name(action));
    if (action == ErrorAction::kSessionReset || action == ErrorAction::kAfiSafiDisable)
      notify_error(w, rep.notification());
    if (!rep.disabled_families().empty()) {
      w.key_raw("disabled_families").begin_array();
      for (Family f : rep.disabled_families()) family_value(w, f);
      w.end_array();
    }
    w.key_raw("diagnostics").begin_array();
    for (const Diagnostic& d : rep.diagnostics()) {
      w.begin_object();
      w.key_raw("action").string_raw(error_action_name(d.action));
      if (d.attr_type) w.key_raw("attribute").string(attr_name(d.attr_type));
      if (d.family.afi) {
        w.key_raw("family");
        family_value(w, d.family);
      }
      w.key_raw("reason").string(d.reason);
      w.end_object();
    }
    w.end_array();
    if (rep.dropped()) w.key_raw("diagnostics_dropped").number(rep.dropped());
    w.end_object();
    if (action == ErrorAction::kSessionReset) return false;
  }
  if (auto eor = u.end_of_rib()) {
    w.key_raw("end_of_rib");
    family_value(w, *eor);
    return action == ErrorAction::kNone;
  }
  // AFI/SAFI disable too: Petrel resets the session, and the table takes
  // such an UPDATE (Batch::add, import_update) as withdrawing everything.
  bool withdraw_all = action >= ErrorAction::kTreatAsWithdraw;
  auto announced = u.announced();
  auto withdrawals = u.withdrawals();
  // Treat-as-withdraw (RFC 7606 section 2): what was announced is
  // withdrawn, and that is what the JSON says.
  bool any_withdrawn = withdrawals.count > 0 || (withdraw_all && announced.count > 0);
  if (any_withdrawn) {
    w.key_raw("withdraw").begin_object();
    for (const NlriRange& r : withdrawals) {
      char buf[32];
      w.key_raw(family_name(r.family(), buf)).begin_array();
      prefix_list(w, r);
      if (withdraw_all)
        for (const NlriRange& a : announced)
          if (a.family() == r.family()) prefix_list(w, a);
      w.end_array();
    }
    if (withdraw_all) {
      for (const NlriRange& a : announced) {
        bool done = false;
        for (const NlriRange& r : withdrawals) done = done || r.family() == a.family();
        if (done) continue;
        char buf[32];
        w.key_raw(family_name(a.family(), buf)).begin_array();
        prefix_list(w, a);
        w.end_array();
      }
    }
    w.end_object();
  }
  if (!withdraw_all && announced.count > 0) {
    w.key_raw("announce").begin_object();
    for (const NlriRange& r : announced) {
      char buf[32];
      w.key_raw(family_name(r.family(), buf)).begin_object();
      const auto& mp = u.mp_reach();
      if (mp && mp->supported && mp->family == r.family()) {
        w.key_raw("next_hop");
        next_hop_value(w, mp->next_hop);
      } else if (auto nh = u.attribute(3); nh && nh->value.size() == 4) {
        w.key_raw("next_hop");
        address_value(w, net::IpAddress::from_bytes(net::IpFamily::V4,
                                                     reinterpret_cast<const uint8_t*>(nh->value.data())));
      }
      w.key_raw("prefixes").begin_array();
      prefix_list(w, r);
      w.end_array();
      w.end_object();
    }
    w.end_object();
  }
  // Families Petrel does not decode: named and skipped.
  if ((u.mp_reach() && !u.mp_reach()->supported) || (u.mp_unreach() && !u.mp_unreach()->supported)) {
    w.key_raw("skipped_families").begin_array();
    if (u.mp_reach() && !u.mp_reach()->supported) family_value(w, u.mp_reach()->family);
    if (u.mp_unreach() && !u.mp_unreach()->supported) family_value(w, u.mp_unreach()->family);
    w.end_array();
  }
  if (!withdraw_all && announced.count > 0) attributes(w, u.attribute_set().decode());
  return action == ErrorAction::kNone;
}

void capabilities_json(json::Writer& w, const Capabilities& c) {
  w.key_raw("capabilities").begin_object();
  if (!c.multiprotocol.empty()) {
    w.key_raw("multiprotocol").begin_array();
    for (Family f : c.multiprotocol) family_value(w, f);
    w.end_array();
  }
  if (c.route_refresh) w.key_raw("route_refresh").boolean(true);
  if (c.enhanced_route_refresh) w.key_raw("enhanced_route_refresh").boolean(true);
  if (c.four_octet_as) w.key_raw("four_octet_as").number(*c.four_octet_as);
  if (!c.add_path.empty()) {
    w.key_raw("add_path").begin_array();
    for (const auto& a : c.add_path) {
      w.begin_object();
      w.key_raw("family");
      family_value(w, a.family);
      w.key_raw("mode").string_raw(a.mode == AddPathMode::kReceive ? "receive"
                                   : a.mode == AddPathMode::kSend  ? "send"
                                                                   : "both");
      w.end_object();
    }
    w.end_array();
  }
  if (!c.extended_next_hop.empty()) {
    w.key_raw("extended_next_hop").begin_array();
    for (const auto& e : c.extended_next_hop) {
      w.begin_object();
      w.key_raw("family");
      family_value(w, e.family);
      w.key_raw("next_hop_afi").number(unsigned{e.next_hop_afi});
      w.end_object();
    }
    w.end_array();
  }
  if (c.extended_message) w.key_raw("extended_message").boolean(true);
  if (c.graceful_restart) {
    const auto& g = *c.graceful_restart;
    w.key_raw("graceful_restart").begin_object();
    w.key_raw("restarting").boolean(g.restarting);
    w.key_raw("notification").boolean(g.notification);
    w.key_raw("restart_time").number(unsigned{g.restart_time});
    w.key_raw("families").begin_array();
    for (const auto& f : g.families) {
      w.begin_object();
      w.key_raw("family");
      family_value(w, f.family);
      w.key_raw("forwarding_preserved").boolean(f.forwarding_preserved);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  if (c.long_lived_graceful_restart) {
    w.key_raw("long_lived_graceful_restart").begin_array();
    for (const auto& f : c.long_lived_graceful_restart->families) {
      w.begin_object();
      w.key_raw("family");
      family_value(w, f.family);
      w.key_raw("forwarding_preserved").boolean(f.forwarding_preserved);
      w.key_raw("stale_time").number(f.stale_time);
      w.end_object();
    }
    w.end_array();
  }
  if (c.role) {
    static constexpr std::string_view kRoles[] = {"provider", "route-server", "rs-client", "customer", "peer"};
    auto r = static_cast<size_t>(*c.role);
    w.key_raw("role");
    if (r < 5) w.string_raw(kRoles[r]);
    else w.number(r);
  }
  if (c.fqdn) {
    w.key_raw("fqdn").begin_object();
    w.key_raw("hostname").string(c.fqdn->hostname);
    w.key_raw("domain").string(c.fqdn->domain);
    w.end_object();
  }
  if (!c.unknown.empty()) {
    w.key_raw("unknown").begin_array();
    for (const auto& u : c.unknown) {
      w.begin_object();
      w.key_raw("code").number(unsigned{u.code});
      w.key_raw("value");
      hex_value(w, u.value);
      w.end_object();
    }
    w.end_array();
  }
  w.end_object();
}

}  // namespace

bool message_to_json(bytes::Span whole, const JsonOptions& opts, json::Writer& w) {
  w.begin_object();
  if (whole.size() < kHeaderLen) {
    w.key_raw("type").null();
    w.key_raw("error").begin_object();
    w.key_raw("action").string_raw(error_action_name(ErrorAction::kSessionReset));
    w.key_raw("reason").string_raw("shorter than a BGP header");
    w.end_object();
    w.end_object();
    return false;
  }
  auto h = check_header(whole.first(kHeaderLen), opts.params.max_message_len());
  if (!h || h->length != whole.size()) {
    w.key_raw("type").null();
    if (!h) {
      decode_error(w, h.error());
    } else {
      w.key_raw("error").begin_object();
      w.key_raw("action").string_raw(error_action_name(ErrorAction::kSessionReset));
      w.key_raw("reason").string_raw("the length field does not match the bytes given");
      w.key_raw("length_field").number(unsigned{h->length});
      w.key_raw("bytes").number(whole.size());
      w.end_object();
    }
    w.end_object();
    return false;
  }
  auto type = static_cast<MessageType>(h->type);
  bytes::Span body = whole.subspan(kHeaderLen);
  w.key_raw("type").string_raw(message_type_name(type));
  w.key_raw("length").number(whole.size());
  bool ok = true;
  switch (type) {
    case MessageType::kUpdate:
      ok = update_json(body, opts, w);
      break;
    case MessageType::kKeepalive:
      break;
    case MessageType::kOpen: {
      auto o = decode_open(body);
      if (!o) {
        decode_error(w, o.error());
        ok = false;
        break;
      }
      w.key_raw("version").number(unsigned{o->version});
      w.key_raw("my_as").number(unsigned{o->my_as});
      w.key_raw("as").number(o->as());
      w.key_raw("hold_time").number(unsigned{o->hold_time});
      w.key_raw("bgp_id");
      ipv4_value(w, o->bgp_id);
      if (o->extended_params) w.key_raw("extended_optional_parameters").boolean(true);
      capabilities_json(w, o->caps);
      break;
    }
    case MessageType::kNotification: {
      auto n = decode_notification(body);
      if (!n) {
        decode_error(w, n.error());
        ok = false;
        break;
      }
      w.key_raw("code").number(unsigned{n->code});
      w.key_raw("subcode").number(unsigned{n->subcode});
      w.key_raw("code_name").string_raw(error_code_name(n->error_code()));
      w.key_raw("subcode_name").string_raw(error_subcode_name(n->error_code(), n->subcode));
      if (auto text = shutdown_communication(*n)) {
        w.key_raw("shutdown_communication").string(*text);
      } else {
        w.key_raw("data");
        hex_value(w, n->data);
      }
      break;
    }
    case MessageType::kRouteRefresh: {
      auto r = decode_route_refresh(body, whole);
      if (!r) {
        decode_error(w, r.error());
        ok = false;
        break;
      }
      w.key_raw("family");
      family_value(w, r->family);
      switch (r->subtype) {
        case RefreshSubtype::kRequest: w.key_raw("subtype").string_raw("request"); break;
        case RefreshSubtype::kBeginOfRefresh: w.key_raw("subtype").string_raw("begin-of-refresh"); break;
        case RefreshSubtype::kEndOfRefresh: w.key_raw("subtype").string_raw("end-of-refresh"); break;
        default: w.key_raw("subtype").number(static_cast<unsigned>(r->subtype)); break;
      }
      if (!r->orf.empty()) {
        w.key_raw("orf");
        hex_value(w, r->orf);
      }
      break;
    }
  }
  w.end_object();
  return ok;
}

void attributes_to_json(const PathAttributes& a, json::Writer& w) { attributes(w, a); }

}  // namespace petrel::codec

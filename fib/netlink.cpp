// rtnetlink messages as bytes and back (see netlink.h). Layouts from
// <linux/netlink.h>, <linux/rtnetlink.h> and <linux/nexthop.h>: a nlmsghdr,
// the type's fixed struct (rtmsg, ifinfomsg, ifaddrmsg, nhmsg, nlmsgerr),
// then rtattr TLVs (NHA_GROUP: an array of nexthop_grp), each
// padded to 4 octets; RTA_MULTIPATH holds rtnexthop records, each followed
// by its own attributes.
#include "fib/netlink.h"

#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/nexthop.h>
#include <linux/rtnetlink.h>

#include <cstring>

namespace petrel::fib {
namespace {

constexpr size_t align4(size_t n) { return (n + 3u) & ~size_t{3}; }

// ---- writing

void pad(std::vector<std::byte>& out) { out.resize(align4(out.size())); }

void put_u32_at(std::vector<std::byte>& out, size_t at, uint32_t v) { std::memcpy(out.data() + at, &v, 4); }
void put_u16_at(std::vector<std::byte>& out, size_t at, uint16_t v) { std::memcpy(out.data() + at, &v, 2); }

size_t begin_message(const Header& h, std::vector<std::byte>& out) {
  pad(out);
  size_t at = out.size();
  nlmsghdr n{};
  n.nlmsg_type = h.type;
  n.nlmsg_flags = h.flags;
  n.nlmsg_seq = h.seq;
  n.nlmsg_pid = h.pid;
  bytes::Writer(out).raw(&n, sizeof n);
  return at;
}

void end_message(size_t at, std::vector<std::byte>& out) {
  put_u32_at(out, at + offsetof(nlmsghdr, nlmsg_len), static_cast<uint32_t>(out.size() - at));
  pad(out);
}

void attr(std::vector<std::byte>& out, uint16_t type, const void* p, size_t n) {
  rtattr a{};
  a.rta_len = static_cast<unsigned short>(RTA_LENGTH(n));
  a.rta_type = type;
  bytes::Writer w(out);
  w.raw(&a, sizeof a);
  w.raw(p, n);
  pad(out);
}

void attr_u32(std::vector<std::byte>& out, uint16_t type, uint32_t v) { attr(out, type, &v, sizeof v); }

void attr_addr(std::vector<std::byte>& out, uint16_t type, const net::IpAddress& a) {
  attr(out, type, a.data(), a.size());
}

size_t begin_nested(std::vector<std::byte>& out, uint16_t type) {
  size_t at = out.size();
  rtattr a{};
  a.rta_type = type;
  bytes::Writer(out).raw(&a, sizeof a);
  return at;
}

void end_nested(std::vector<std::byte>& out, size_t at) {
  put_u16_at(out, at + offsetof(rtattr, rta_len), static_cast<uint16_t>(out.size() - at));
}

// A gateway of the route's family is RTA_GATEWAY; one of the other family
// (an IPv4 route over an IPv6 next hop, RFC 8950) is RTA_VIA: struct rtvia,
// a 16-bit address family then the address.
void attr_gateway(std::vector<std::byte>& out, net::IpFamily route_family, const net::IpAddress& gw) {
  if (gw.family() == route_family) return attr_addr(out, RTA_GATEWAY, gw);
  std::vector<std::byte> via(sizeof(uint16_t) + gw.size());
  const uint16_t family = af_of(gw.family());
  std::memcpy(via.data(), &family, sizeof family);
  std::memcpy(via.data() + sizeof family, gw.data(), gw.size());
  attr(out, RTA_VIA, via.data(), via.size());
}

void encode_route(const Route& r, std::vector<std::byte>& out) {
  rtmsg m{};
  m.rtm_family = af_of(r.dst.family());
  m.rtm_dst_len = r.dst.len();
  m.rtm_table = static_cast<unsigned char>(r.table < 256 ? r.table : RT_TABLE_UNSPEC);
  m.rtm_protocol = r.protocol;
  m.rtm_scope = r.scope;
  m.rtm_type = r.type;
  bytes::Writer(out).raw(&m, sizeof m);
  attr_addr(out, RTA_DST, r.dst.addr());
  attr_u32(out, RTA_TABLE, r.table);
  attr_u32(out, RTA_PRIORITY, r.metric);
  // One next hop goes as RTA_GATEWAY/RTA_OIF unless that would lose
  // something (a weight, or a next hop with neither): then RTA_MULTIPATH,
  // so what decodes encodes back to the same.
  bool plain = r.nexthops.size() == 1 && r.nexthops[0].hops == 0 &&
               (r.nexthops[0].has_gateway || r.nexthops[0].ifindex != 0);
  if (plain) {
    const NextHop& nh = r.nexthops[0];
    if (nh.has_gateway) attr_gateway(out, r.dst.family(), nh.gateway);
    if (nh.ifindex != 0) attr_u32(out, RTA_OIF, nh.ifindex);
  } else if (!r.nexthops.empty()) {
    size_t mp = begin_nested(out, RTA_MULTIPATH);
    for (const NextHop& nh : r.nexthops) {
      size_t at = out.size();
      rtnexthop h{};
      h.rtnh_hops = nh.hops;
      h.rtnh_ifindex = static_cast<int>(nh.ifindex);
      bytes::Writer(out).raw(&h, sizeof h);
      if (nh.has_gateway) attr_gateway(out, r.dst.family(), nh.gateway);
      put_u16_at(out, at + offsetof(rtnexthop, rtnh_len), static_cast<uint16_t>(out.size() - at));
    }
    end_nested(out, mp);
  }
  if (r.nhid != 0) attr_u32(out, RTA_NH_ID, r.nhid);
}

void encode_nexthop(const NexthopObject& o, std::vector<std::byte>& out) {
  nhmsg m{};
  m.nh_family = o.family;
  m.nh_scope = o.scope;
  m.nh_protocol = o.protocol;
  m.nh_flags = o.flags;
  bytes::Writer(out).raw(&m, sizeof m);
  if (o.id != 0) attr_u32(out, NHA_ID, o.id);
  if (!o.group.empty()) {
    std::vector<nexthop_grp> g(o.group.size());
    for (size_t i = 0; i < g.size(); ++i) {
      g[i] = nexthop_grp{};
      g[i].id = o.group[i].id;
      g[i].weight = o.group[i].weight;
    }
    attr(out, NHA_GROUP, g.data(), g.size() * sizeof g[0]);
  }
  if (o.blackhole) attr(out, NHA_BLACKHOLE, nullptr, 0);
  if (o.ifindex != 0) attr_u32(out, NHA_OIF, o.ifindex);
  if (o.has_gateway) attr_addr(out, NHA_GATEWAY, o.gateway);
}

void encode_link(const Link& l, std::vector<std::byte>& out) {
  ifinfomsg m{};
  m.ifi_index = static_cast<int>(l.index);
  m.ifi_flags = l.flags;
  bytes::Writer(out).raw(&m, sizeof m);
  std::string name = l.name;  // with its NUL
  attr(out, IFLA_IFNAME, name.c_str(), name.size() + 1);
}

void encode_address(const Address& a, std::vector<std::byte>& out) {
  ifaddrmsg m{};
  m.ifa_family = af_of(a.local.family());
  m.ifa_prefixlen = a.prefix_len;
  m.ifa_scope = a.scope;
  m.ifa_index = a.ifindex;
  bytes::Writer(out).raw(&m, sizeof m);
  attr_addr(out, IFA_ADDRESS, a.address);
  if (a.local.is_v4() || a.local != a.address) attr_addr(out, IFA_LOCAL, a.local);
}

// ---- reading

// Calls fn(type, payload) for each attribute; fn returns false to stop
// with kBadAddress (a payload of the wrong size).
template <typename F>
Result<void, DecodeError> for_each_attr(bytes::Reader r, F&& fn) {
  while (!r.empty()) {
    rtattr a{};
    if (!r.copy_to(&a, sizeof a) || a.rta_len < sizeof a) return fail(DecodeError::kBadAttribute);
    auto payload = r.take(a.rta_len - sizeof a);
    if (!payload) return fail(DecodeError::kBadAttribute);
    (void)r.skip(std::min(align4(a.rta_len) - a.rta_len, r.remaining()));
    if (!fn(static_cast<uint16_t>(a.rta_type & NLA_TYPE_MASK), *payload)) return fail(DecodeError::kBadAddress);
  }
  return {};
}

bool read_addr(bytes::Span p, net::IpFamily f, net::IpAddress& out) {
  if (p.size() != net::IpAddress::width(f)) return false;
  out = net::IpAddress::from_bytes(f, reinterpret_cast<const uint8_t*>(p.data()));
  return true;
}

// RTA_VIA (struct rtvia): an address family of 16 bits, then an address
// of that family (IPv4 or IPv6; another family is an error).
bool read_via(bytes::Span p, net::IpAddress& out) {
  uint16_t family = 0;
  if (p.size() < sizeof family) return false;
  std::memcpy(&family, p.data(), sizeof family);
  if (family != kAfInet && family != kAfInet6) return false;
  return read_addr(p.subspan(sizeof family), family == kAfInet ? net::IpFamily::V4 : net::IpFamily::V6, out);
}

bool read_u32(bytes::Span p, uint32_t& out) {
  if (p.size() != 4) return false;
  std::memcpy(&out, p.data(), 4);
  return true;
}

Result<std::vector<NextHop>, DecodeError> decode_multipath(bytes::Reader r, net::IpFamily f) {
  std::vector<NextHop> hops;
  while (!r.empty()) {
    rtnexthop h{};
    if (!r.copy_to(&h, sizeof h) || h.rtnh_len < sizeof h) return fail(DecodeError::kBadAttribute);
    auto attrs = r.sub(h.rtnh_len - sizeof h);
    if (!attrs) return fail(DecodeError::kBadAttribute);
    (void)r.skip(std::min(align4(h.rtnh_len) - h.rtnh_len, r.remaining()));
    NextHop nh;
    nh.hops = h.rtnh_hops;
    nh.ifindex = static_cast<uint32_t>(h.rtnh_ifindex);
    auto ok = for_each_attr(*attrs, [&](uint16_t type, bytes::Span p) {
      if (type != RTA_GATEWAY && type != RTA_VIA) return true;
      nh.has_gateway = true;
      return type == RTA_VIA ? read_via(p, nh.gateway) : read_addr(p, f, nh.gateway);
    });
    if (!ok) return fail(ok.error());
    hops.push_back(nh);
  }
  return hops;
}

Result<Message, DecodeError> decode_route(Header h, bytes::Reader r) {
  rtmsg m{};
  if (!r.copy_to(&m, sizeof m)) return fail(DecodeError::kShortBody);
  if (m.rtm_family != kAfInet && m.rtm_family != kAfInet6) return Message{h, Other{}};
  net::IpFamily f = m.rtm_family == kAfInet ? net::IpFamily::V4 : net::IpFamily::V6;
  if (m.rtm_dst_len > net::IpAddress::max_len(f)) return fail(DecodeError::kBadPrefixLength);
  Route route;
  route.table = m.rtm_table;
  route.protocol = m.rtm_protocol;
  route.scope = m.rtm_scope;
  route.type = m.rtm_type;
  net::IpAddress dst = net::IpAddress::from_bytes(f, std::array<uint8_t, 16>{}.data());
  NextHop single;
  bool has_single = false;
  std::vector<NextHop> multi;
  DecodeError mp_error{};
  bool mp_bad = false;
  auto ok = for_each_attr(r, [&](uint16_t type, bytes::Span p) {
    switch (type) {
      case RTA_DST: return read_addr(p, f, dst);
      case RTA_TABLE: return read_u32(p, route.table);
      case RTA_PRIORITY: return read_u32(p, route.metric);
      case RTA_GATEWAY:
        has_single = single.has_gateway = true;
        return read_addr(p, f, single.gateway);
      case RTA_VIA:
        has_single = single.has_gateway = true;
        return read_via(p, single.gateway);
      case RTA_OIF:
        has_single = true;
        return read_u32(p, single.ifindex);
      case RTA_NH_ID: return read_u32(p, route.nhid);
      case RTA_MULTIPATH: {
        auto hops = decode_multipath(bytes::Reader(p), f);
        if (!hops) {
          mp_bad = true;
          mp_error = hops.error();
          return true;
        }
        multi = std::move(*hops);
        return true;
      }
      default: return true;
    }
  });
  if (!ok) return fail(ok.error());
  if (mp_bad) return fail(mp_error);
  route.dst = *net::Prefix::make(dst, m.rtm_dst_len);
  if (!multi.empty()) route.nexthops = std::move(multi);
  else if (has_single) route.nexthops.push_back(single);
  return Message{h, std::move(route)};
}

Result<Message, DecodeError> decode_nexthop(Header h, bytes::Reader r) {
  nhmsg m{};
  if (!r.copy_to(&m, sizeof m)) return fail(DecodeError::kShortBody);
  NexthopObject o;
  o.family = m.nh_family;
  o.scope = m.nh_scope;
  o.protocol = m.nh_protocol;
  o.flags = m.nh_flags;
  auto ok = for_each_attr(r, [&](uint16_t type, bytes::Span p) {
    switch (type) {
      case NHA_ID: return read_u32(p, o.id);
      case NHA_BLACKHOLE: return o.blackhole = true;
      case NHA_OIF: return read_u32(p, o.ifindex);
      case NHA_GATEWAY:
        // The gateway's family is the object's (an AF_UNSPEC object has none).
        if (o.family != kAfInet && o.family != kAfInet6) return false;
        o.has_gateway = true;
        return read_addr(p, o.family == kAfInet ? net::IpFamily::V4 : net::IpFamily::V6, o.gateway);
      case NHA_GROUP: {
        if (p.size() % sizeof(nexthop_grp) != 0) return false;
        bytes::Reader g(p);
        o.group.clear();
        while (!g.empty()) {
          nexthop_grp e{};
          (void)g.copy_to(&e, sizeof e);
          o.group.push_back(GroupMember{e.id, e.weight});
        }
        return true;
      }
      default: return true;
    }
  });
  if (!ok) return fail(ok.error());
  return Message{h, std::move(o)};
}

Result<Message, DecodeError> decode_link(Header h, bytes::Reader r) {
  ifinfomsg m{};
  if (!r.copy_to(&m, sizeof m)) return fail(DecodeError::kShortBody);
  Link l;
  l.index = static_cast<uint32_t>(m.ifi_index);
  l.flags = m.ifi_flags;
  auto ok = for_each_attr(r, [&](uint16_t type, bytes::Span p) {
    if (type == IFLA_IFNAME) {
      auto s = bytes::as_chars(p);
      l.name.assign(s.substr(0, s.find('\0')));
    }
    return true;
  });
  if (!ok) return fail(ok.error());
  return Message{h, std::move(l)};
}

Result<Message, DecodeError> decode_address(Header h, bytes::Reader r) {
  ifaddrmsg m{};
  if (!r.copy_to(&m, sizeof m)) return fail(DecodeError::kShortBody);
  if (m.ifa_family != kAfInet && m.ifa_family != kAfInet6) return Message{h, Other{}};
  net::IpFamily f = m.ifa_family == kAfInet ? net::IpFamily::V4 : net::IpFamily::V6;
  if (m.ifa_prefixlen > net::IpAddress::max_len(f)) return fail(DecodeError::kBadPrefixLength);
  Address a;
  a.ifindex = m.ifa_index;
  a.prefix_len = m.ifa_prefixlen;
  a.scope = m.ifa_scope;
  a.address = a.local = net::IpAddress::from_bytes(f, std::array<uint8_t, 16>{}.data());
  bool has_local = false, has_address = false;
  auto ok = for_each_attr(r, [&](uint16_t type, bytes::Span p) {
    if (type == IFA_ADDRESS) return has_address = true, read_addr(p, f, a.address);
    if (type == IFA_LOCAL) return has_local = true, read_addr(p, f, a.local);
    return true;
  });
  if (!ok) return fail(ok.error());
  if (!has_local) a.local = a.address;
  if (!has_address) a.address = a.local;
  return Message{h, a};
}

}  // namespace

const char* to_string(DecodeError e) {
  switch (e) {
    case DecodeError::kShortHeader: return "netlink message shorter than its header";
    case DecodeError::kBadLength: return "netlink message length out of range";
    case DecodeError::kShortBody: return "netlink message body too short";
    case DecodeError::kBadAttribute: return "netlink attribute length out of range";
    case DecodeError::kBadPrefixLength: return "prefix length too long for the family";
    case DecodeError::kBadAddress: return "netlink address or value of the wrong size";
  }
  return "netlink: unknown error";
}

void encode(const Message& m, std::vector<std::byte>& out) {
  size_t at = begin_message(m.header, out);
  std::visit(
      [&](const auto& b) {
        using T = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<T, Route>) {
          encode_route(b, out);
        } else if constexpr (std::is_same_v<T, Link>) {
          encode_link(b, out);
        } else if constexpr (std::is_same_v<T, Address>) {
          encode_address(b, out);
        } else if constexpr (std::is_same_v<T, NexthopObject>) {
          encode_nexthop(b, out);
        } else if constexpr (std::is_same_v<T, Ack>) {
          int32_t e = b.error;
          bytes::Writer(out).raw(&e, sizeof e);
          size_t req = begin_message(b.request, out);
          put_u32_at(out, req, static_cast<uint32_t>(sizeof(nlmsghdr)));
        } else if constexpr (std::is_same_v<T, Done>) {
          int32_t zero = 0;
          bytes::Writer(out).raw(&zero, sizeof zero);
        }
      },
      m.body);
  end_message(at, out);
}

void encode(const Header& h, const Route& r, std::vector<std::byte>& out) {
  size_t at = begin_message(h, out);
  encode_route(r, out);
  end_message(at, out);
}

void encode(const Header& h, const NexthopObject& o, std::vector<std::byte>& out) {
  size_t at = begin_message(h, out);
  encode_nexthop(o, out);
  end_message(at, out);
}

void encode_dump(uint16_t type, uint8_t family, uint32_t seq, std::vector<std::byte>& out) {
  size_t at = begin_message(Header{type, NLM_F_REQUEST | NLM_F_DUMP, seq, 0}, out);
  bytes::Writer w(out);
  if (type == RTM_GETLINK) {
    ifinfomsg m{};
    m.ifi_family = family;
    w.raw(&m, sizeof m);
  } else if (type == RTM_GETADDR) {
    ifaddrmsg m{};
    m.ifa_family = family;
    w.raw(&m, sizeof m);
  } else if (type == RTM_GETNEXTHOP) {
    nhmsg m{};
    m.nh_family = family;
    w.raw(&m, sizeof m);
  } else {
    rtmsg m{};
    m.rtm_family = family;
    w.raw(&m, sizeof m);
  }
  end_message(at, out);
}

Result<bytes::Span, DecodeError> next_message(bytes::Reader& r) {
  nlmsghdr n{};
  bytes::Reader peek(r.peek_rest());
  if (!peek.copy_to(&n, sizeof n)) return fail(DecodeError::kShortHeader);
  if (n.nlmsg_len < sizeof n || n.nlmsg_len > r.remaining()) return fail(DecodeError::kBadLength);
  bytes::Span one = *r.take(n.nlmsg_len);
  (void)r.skip(std::min(align4(n.nlmsg_len) - n.nlmsg_len, r.remaining()));
  return one;
}

Result<Message, DecodeError> decode(bytes::Span one) {
  bytes::Reader r(one);
  nlmsghdr n{};
  if (!r.copy_to(&n, sizeof n)) return fail(DecodeError::kShortHeader);
  if (n.nlmsg_len != one.size()) return fail(DecodeError::kBadLength);
  Header h{n.nlmsg_type, n.nlmsg_flags, n.nlmsg_seq, n.nlmsg_pid};
  switch (n.nlmsg_type) {
    case RTM_NEWROUTE:
    case RTM_DELROUTE: return decode_route(h, r);
    case RTM_NEWLINK:
    case RTM_DELLINK: return decode_link(h, r);
    case RTM_NEWADDR:
    case RTM_DELADDR: return decode_address(h, r);
    case RTM_NEWNEXTHOP:
    case RTM_DELNEXTHOP: return decode_nexthop(h, r);
    case NLMSG_ERROR: {
      int32_t e = 0;
      nlmsghdr req{};
      if (!r.copy_to(&e, sizeof e) || !r.copy_to(&req, sizeof req)) return fail(DecodeError::kShortBody);
      return Message{h, Ack{e, Header{req.nlmsg_type, req.nlmsg_flags, req.nlmsg_seq, req.nlmsg_pid}}};
    }
    case NLMSG_DONE: return Message{h, Done{}};
    default: return Message{h, Other{}};
  }
}

}  // namespace petrel::fib

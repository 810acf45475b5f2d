// rtnetlink messages as bytes and back, without I/O.
//
// The messages Petrel exchanges with the kernel (man 7 rtnetlink,
// <linux/rtnetlink.h>): routes (RTM_NEWROUTE, RTM_DELROUTE, their dumps,
// RTA_MULTIPATH for ECMP), addresses (RTM_NEWADDR, RTM_DELADDR), links
// (RTM_NEWLINK, RTM_DELLINK), nexthop objects (RTM_NEWNEXTHOP,
// RTM_DELNEXTHOP, their dumps; <linux/nexthop.h>), and the kernel's answers (NLMSG_ERROR, an
// ack when its error is 0; NLMSG_DONE ending a dump). Netlink is in host
// byte order: structs are copied in and out through the bounded reader
// and writer (crates/bytes), never read in place.
//
// Only the attributes Petrel needs are kept; the decoder skips the others
// (the kernel adds new ones over time). A message of a family or type
// Petrel does not use decodes as Other, not as an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "crates/bytes/bytes.h"
#include "crates/net/ip.h"
#include "crates/result/result.h"

namespace petrel::fib {

// Linux's address family numbers (the ABI; <sys/socket.h> is not for pure
// modules).
inline constexpr uint8_t kAfInet = 2;
inline constexpr uint8_t kAfInet6 = 10;

inline uint8_t af_of(net::IpFamily f) { return f == net::IpFamily::V4 ? kAfInet : kAfInet6; }

struct Header {
  uint16_t type = 0;   // RTM_* or NLMSG_*
  uint16_t flags = 0;  // NLM_F_*
  uint32_t seq = 0;
  uint32_t pid = 0;
  friend bool operator==(const Header&, const Header&) = default;
};

// One way to reach a route's destination: a gateway on a link, or the
// link alone (a directly connected destination).
struct NextHop {
  bool has_gateway = false;
  net::IpAddress gateway;
  uint32_t ifindex = 0;  // 0: the kernel chooses (not used by Petrel)
  uint8_t hops = 0;      // rtnh_hops: weight - 1 (RTA_MULTIPATH only)
  friend bool operator==(const NextHop&, const NextHop&) = default;
  friend auto operator<=>(const NextHop&, const NextHop&) = default;
};

struct Route {
  net::Prefix dst;
  uint32_t table = 0;     // RT_TABLE_*; RTA_TABLE when above 255
  uint32_t metric = 0;    // RTA_PRIORITY
  uint8_t protocol = 0;   // RTPROT_*
  uint8_t scope = 0;      // RT_SCOPE_*
  uint8_t type = 0;       // RTN_*
  // One: RTA_GATEWAY and RTA_OIF. More: RTA_MULTIPATH. A gateway of the
  // other family (an IPv4 route over an IPv6 next hop, RFC 8950) goes as
  // RTA_VIA.
  std::vector<NextHop> nexthops;
  // RTA_NH_ID: the route refers to a nexthop object (0: none). A request
  // carries the id alone (the kernel refuses it beside next hops); the
  // kernel reports the object's next hops beside it (nexthop_compat_mode).
  uint32_t nhid = 0;
  friend bool operator==(const Route&, const Route&) = default;
};

// One member of a nexthop group (struct nexthop_grp): weight is the
// kernel's weight - 1, as on the wire.
struct GroupMember {
  uint32_t id = 0;
  uint8_t weight = 0;
  friend bool operator==(const GroupMember&, const GroupMember&) = default;
  friend auto operator<=>(const GroupMember&, const GroupMember&) = default;
};

// A nexthop object (struct nhmsg and NHA_* attributes): a gateway on a
// link (family AF_INET or AF_INET6), or a group of other objects (family
// 0, NHA_GROUP: a multipath next hop), or a blackhole. Routes refer to it
// by id (Route::nhid).
struct NexthopObject {
  uint32_t id = 0;        // NHA_ID
  uint8_t family = 0;     // nh_family
  uint8_t scope = 0;      // nh_scope (the kernel's answer only)
  uint8_t protocol = 0;   // nh_protocol: RTPROT_*
  uint32_t flags = 0;     // nh_flags: RTNH_F_*
  bool blackhole = false; // NHA_BLACKHOLE
  bool has_gateway = false;
  net::IpAddress gateway;  // NHA_GATEWAY, of the family
  uint32_t ifindex = 0;    // NHA_OIF
  std::vector<GroupMember> group;  // NHA_GROUP
  friend bool operator==(const NexthopObject&, const NexthopObject&) = default;
};

struct Link {
  uint32_t index = 0;
  uint32_t flags = 0;  // IFF_*
  std::string name;    // IFLA_IFNAME
  friend bool operator==(const Link&, const Link&) = default;
};

struct Address {
  uint32_t ifindex = 0;
  uint8_t prefix_len = 0;
  uint8_t scope = 0;
  net::IpAddress local;    // IFA_LOCAL (IPv4), else IFA_ADDRESS
  net::IpAddress address;  // IFA_ADDRESS: the peer's on a point-to-point link
  friend bool operator==(const Address&, const Address&) = default;
};

// NLMSG_ERROR: error 0 is an ack; otherwise a negative errno.
struct Ack {
  int32_t error = 0;
  Header request;  // the header of the request it answers
  friend bool operator==(const Ack&, const Ack&) = default;
};

struct Done {
  friend bool operator==(const Done&, const Done&) = default;
};

// A message Petrel does not use (another family, another type).
struct Other {
  friend bool operator==(const Other&, const Other&) = default;
};

using Body = std::variant<Route, Link, Address, NexthopObject, Ack, Done, Other>;

struct Message {
  Header header;
  Body body;
  friend bool operator==(const Message&, const Message&) = default;
};

enum class DecodeError : uint8_t {
  kShortHeader,     // fewer bytes than a nlmsghdr
  kBadLength,       // nlmsg_len below the header or past the buffer
  kShortBody,       // the type's fixed struct does not fit
  kBadAttribute,    // an attribute's length is wrong
  kBadPrefixLength, // longer than the family allows
  kBadAddress,      // an address attribute of the wrong size
};
const char* to_string(DecodeError e);

// Appends one message (padded to NLMSG_ALIGNTO). Route bodies go out as
// RTM_NEWROUTE/RTM_DELROUTE (header.type says which), nexthop objects as
// RTM_NEWNEXTHOP/RTM_DELNEXTHOP, links and addresses as their RTM_ types;
// Ack as NLMSG_ERROR, Done as NLMSG_DONE.
void encode(const Message& m, std::vector<std::byte>& out);
// The same for a route, without building a Message.
void encode(const Header& h, const Route& r, std::vector<std::byte>& out);
// The same for a nexthop object.
void encode(const Header& h, const NexthopObject& o, std::vector<std::byte>& out);

// Appends a dump request (NLM_F_REQUEST | NLM_F_DUMP) for RTM_GETROUTE,
// RTM_GETLINK, RTM_GETADDR or RTM_GETNEXTHOP of one address family (0: all).
void encode_dump(uint16_t type, uint8_t family, uint32_t seq, std::vector<std::byte>& out);

// Decodes one message (exactly its nlmsg_len bytes).
Result<Message, DecodeError> decode(bytes::Span one);

// Splits a buffer of messages as the kernel sends them (one datagram):
// takes the next message's bytes from r, with its padding.
Result<bytes::Span, DecodeError> next_message(bytes::Reader& r);

// fn(const Message&) for each message of a datagram that decodes; a
// message that does not is skipped, a framing error ends the datagram.
template <typename F>
void for_each_message(bytes::Span datagram, F&& fn) {
  bytes::Reader r(datagram);
  while (!r.empty()) {
    auto one = next_message(r);
    if (!one) return;
    if (auto m = decode(*one)) fn(*m);
  }
}

}  // namespace petrel::fib

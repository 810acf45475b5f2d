// MRT (RFC 6396) TABLE_DUMP_V2 writer, with RFC 8050's ADD-PATH RIB
// subtypes, and the BGP4MP_ET records of an UPDATE log (section 4.4:
// MESSAGE_AS4, RFC 8050's MESSAGE_AS4_ADDPATH, STATE_CHANGE_AS4). Part of mrt/, a pure module: no I/O, no clock (the caller
// passes the time); it includes crates/ only.
//
// A dump is a PEER_INDEX_TABLE record followed by one RIB record per
// prefix (RIB_IPV4_UNICAST, RIB_IPV6_UNICAST; the _ADDPATH subtype for the
// routes that carry a path identifier). TableDumpWriter appends records
// to a byte vector, so a caller can write them out in pieces:
//   TableDumpWriter w(now);
//   w.peer_index_table(router_id, "petrel", peers, out);
//   for (...) w.rib(prefix, routes, out);
//
// The attributes of a route are BGP path attributes as an UPDATE carries
// them, AS_PATH with 4-octet ASes. MP_REACH_NLRI is abbreviated on the
// way out to its next hop length and next hop (RFC 6396 section 4.3.4);
// MP_UNREACH_NLRI is left out. Nothing is truncated silently: a route
// whose attributes do not fit a RIB entry's 16-bit length, or that would
// make a record longer than its 32-bit length or hold more than 65535
// entries, or whose attributes' framing is broken, is left out and counted
// in DumpStats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "crates/bytes/bytes.h"
#include "crates/net/ip.h"

namespace petrel::mrt {

// One peer of the PEER_INDEX_TABLE.
struct DumpPeer {
  uint32_t bgp_id = 0;  // host order
  net::IpAddress address;
  uint32_t as = 0;  // written as 4 octets
};

// One route of a prefix.
struct DumpRoute {
  uint16_t peer_index = 0;  // into the peers given to peer_index_table()
  uint32_t originated = 0;  // seconds since the epoch
  std::optional<uint32_t> path_id;  // RFC 7911: the route goes to the _ADDPATH record
  bytes::Span attributes;  // BGP path attributes, wire form, 4-octet AS
};

struct DumpStats {
  uint64_t records = 0;           // PEER_INDEX_TABLE included
  uint64_t prefixes = 0;          // prefixes with at least one route written
  uint64_t routes = 0;            // RIB entries written
  uint64_t routes_left_out = 0;   // too large for a RIB entry or a record, or broken
  uint64_t bytes = 0;             // appended in all
};

// The longest attribute block a RIB entry takes (its length is 16-bit).
inline constexpr size_t kMaxRibAttributes = 0xFFFF;
// Entries of one RIB record (the entry count is 16-bit).
inline constexpr size_t kMaxRibEntries = 0xFFFF;
// The longest record body (the common header's length is 32-bit).
inline constexpr uint64_t kMaxRecordBody = 0xFFFFFFFFull;

// `attributes` with MP_REACH_NLRI abbreviated to its next hop length and
// next hop, and MP_UNREACH_NLRI left out; every other attribute as it is.
// Nothing when the framing is broken (an attribute or an MP_REACH_NLRI
// next hop running past its end): the input is the table's own canonical
// bytes, but it is checked, and such a route is left out and counted.
std::optional<std::vector<std::byte>> rib_attributes(bytes::Span attributes);

class TableDumpWriter {
 public:
  // `timestamp`: the records' common header time, seconds since the epoch.
  explicit TableDumpWriter(uint32_t timestamp) : timestamp_(timestamp) {}

  // Appends the PEER_INDEX_TABLE. False (nothing appended) when there are
  // more than 65535 peers or the view name is longer than 65535 bytes.
  bool peer_index_table(uint32_t collector_bgp_id, std::string_view view_name, std::span<const DumpPeer> peers,
                        std::vector<std::byte>& out);

  // Appends the RIB record(s) of one prefix: the routes without a path
  // identifier in RIB_IPVx_UNICAST, those with one in the _ADDPATH
  // subtype, each record with the next sequence number. Nothing when no
  // route fits. Routes naming a peer index at or past the table's peer
  // count are left out (counted).
  void rib(const net::Prefix& prefix, std::span<const DumpRoute> routes, std::vector<std::byte>& out);

  [[nodiscard]] const DumpStats& stats() const { return stats_; }

 private:
  void rib_record(const net::Prefix& prefix, std::span<const DumpRoute> routes, bool add_path,
                  std::vector<std::byte>& out);
  uint32_t timestamp_;
  uint32_t sequence_ = 0;
  size_t peer_count_ = 0;
  DumpStats stats_;
};

// --- BGP4MP_ET (RFC 6396 sections 3 and 4.4, RFC 8050 section 3) ---------

// A record's time: seconds since the epoch and the microseconds past them.
struct Bgp4mpTime {
  uint32_t seconds = 0;
  uint32_t microseconds = 0;
};

// The session a BGP4MP record is about. Both ASes are written as 4 octets
// (the _AS4 subtypes), whatever the session negotiated.
struct Bgp4mpPeer {
  uint32_t peer_as = 0;
  uint32_t local_as = 0;
  uint16_t interface_index = 0;
  net::IpAddress peer_ip;   // its family is the record's AFI
  net::IpAddress local_ip;  // zeros when unknown or of the other family
};

// Appends a BGP4MP_ET record of subtype BGP4MP_MESSAGE_AS4, or
// BGP4MP_MESSAGE_AS4_ADDPATH when the message's NLRI carry path
// identifiers (ADD-PATH receive negotiated). `message`: the whole BGP
// message, marker and header included, as it came.
void bgp4mp_message(const Bgp4mpTime& t, const Bgp4mpPeer& peer, bool add_path, bytes::Span message,
                    std::vector<std::byte>& out);

// Appends a BGP4MP_ET record of subtype BGP4MP_STATE_CHANGE_AS4. States
// are numbered as RFC 4271 section 8.2.2 (1 Idle .. 6 Established).
void bgp4mp_state_change(const Bgp4mpTime& t, const Bgp4mpPeer& peer, uint16_t old_state, uint16_t new_state,
                         std::vector<std::byte>& out);

}  // namespace petrel::mrt

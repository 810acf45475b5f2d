// MRT (RFC 6396) reader, with RFC 8050's ADD-PATH subtypes. Part of mrt/,
// a pure BGP module like codec/ (no I/O, no clock; it includes crates/ only).
//
// Reads records from a byte span and decodes the framing of the record
// types BGP data comes in: BGP4MP and BGP4MP_ET (messages and state
// changes), TABLE_DUMP (v1) and TABLE_DUMP_V2 (the peer index table and the
// AFI/SAFI-specific RIB subtypes). It hands out BGP messages and path
// attributes as raw bytes and knows nothing about their contents; decoding
// them is codec/'s job. Note that in TABLE_DUMP_V2 RIB entries
// MP_REACH_NLRI is abbreviated to its next hop (RFC 6396 section 4.3.4).
//
// Nothing is copied: every Span points into the caller's buffer, which
// must outlive the values. Lengths are checked before every read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "crates/bytes/bytes.h"
#include "crates/net/ip.h"
#include "crates/result/result.h"

namespace petrel::mrt {

using bytes::Span;

// RFC 6396 section 4.
enum class Type : uint16_t {
  kOspfV2 = 11,
  kTableDump = 12,
  kTableDumpV2 = 13,
  kBgp4mp = 16,
  kBgp4mpEt = 17,
  kIsis = 32,
  kIsisEt = 33,
  kOspfV3 = 48,
  kOspfV3Et = 49,
};

// TABLE_DUMP_V2 subtypes (RFC 6396 section 4.3, RFC 8050 section 4).
enum class TableDumpV2 : uint16_t {
  kPeerIndexTable = 1,
  kRibIpv4Unicast = 2,
  kRibIpv4Multicast = 3,
  kRibIpv6Unicast = 4,
  kRibIpv6Multicast = 5,
  kRibGeneric = 6,
  kGeoPeerTable = 7,  // RFC 6397
  kRibIpv4UnicastAddPath = 8,
  kRibIpv4MulticastAddPath = 9,
  kRibIpv6UnicastAddPath = 10,
  kRibIpv6MulticastAddPath = 11,
  kRibGenericAddPath = 12,
};

// BGP4MP subtypes (RFC 6396 section 4.4, RFC 8050 section 3).
enum class Bgp4mp : uint16_t {
  kStateChange = 0,
  kMessage = 1,
  kMessageAs4 = 4,
  kStateChangeAs4 = 5,
  kMessageLocal = 6,
  kMessageAs4Local = 7,
  kMessageAddPath = 8,
  kMessageAs4AddPath = 9,
  kMessageLocalAddPath = 10,
  kMessageAs4LocalAddPath = 11,
};

enum class Error : uint8_t {
  kTruncatedHeader,   // fewer than 12 bytes left for a common header
  kTruncatedRecord,   // the length field runs past the end of the data
  kTruncatedField,    // a field runs past the end of the record
  kWrongType,         // the record is not of the type the decoder reads
  kBadAfi,            // an address family other than IPv4 or IPv6
  kBadPrefixLength,   // longer than the family allows
  kBadEntryCount,     // fewer RIB entries than the count says
  kTrailingBytes,     // bytes left after the last field
};
const char* to_string(Error e);

// One record: the common header (section 2) and its message body. For the
// _ET types the microsecond timestamp (section 3) is read off the body.
struct Record {
  uint32_t timestamp = 0;
  uint32_t microseconds = 0;  // 0 unless an _ET type
  uint16_t type = 0;
  uint16_t subtype = 0;
  Span body;
  size_t offset = 0;  // of the header in the data, for diagnostics

  [[nodiscard]] bool is(Type t) const { return type == static_cast<uint16_t>(t); }
};

// Iterates the records of a whole MRT file:
//   RecordReader r(data);
//   while (!r.done()) { auto rec = r.next(); if (!rec) ...; }
// After an error the reader is done (the framing cannot be trusted).
class RecordReader {
 public:
  explicit RecordReader(Span data) : in_(data) {}
  [[nodiscard]] bool done() const { return in_.empty() || failed_; }
  Result<Record, Error> next();

 private:
  bytes::Reader in_;
  bool failed_ = false;
};

// --- BGP4MP, BGP4MP_ET ---------------------------------------------------

// True for the MESSAGE subtypes (with or without AS4, LOCAL, ADDPATH).
bool is_bgp4mp_message(const Record& r);
// True for STATE_CHANGE and STATE_CHANGE_AS4.
bool is_bgp4mp_state_change(const Record& r);

struct Bgp4mpHeader {
  uint32_t peer_as = 0;
  uint32_t local_as = 0;
  uint16_t interface_index = 0;
  uint16_t afi = 0;
  net::IpAddress peer_ip;
  net::IpAddress local_ip;
};

struct Bgp4mpMessage {
  Bgp4mpHeader header;
  bool as4 = false;       // ASes in the header were 4 octets
  bool local = false;     // *_LOCAL: a message the collector sent
  bool add_path = false;  // *_ADDPATH: NLRI carry path identifiers
  Span message;           // the whole BGP message, marker included
};
Result<Bgp4mpMessage, Error> decode_bgp4mp_message(const Record& r);

struct Bgp4mpStateChange {
  Bgp4mpHeader header;
  uint16_t old_state = 0;  // RFC 4271 section 8.2.2 numbering, 1..6
  uint16_t new_state = 0;
};
Result<Bgp4mpStateChange, Error> decode_bgp4mp_state_change(const Record& r);

// --- TABLE_DUMP (v1), section 4.2 -----------------------------------------

struct TableDumpEntry {
  uint16_t view = 0;
  uint16_t sequence = 0;
  net::Prefix prefix;
  uint8_t status = 0;
  uint32_t originated = 0;
  net::IpAddress peer_ip;
  uint16_t peer_as = 0;
  Span attributes;  // BGP path attributes, wire form
};
Result<TableDumpEntry, Error> decode_table_dump(const Record& r);

// --- TABLE_DUMP_V2, section 4.3 -------------------------------------------

struct PeerEntry {
  uint8_t type = 0;  // bit 0: IPv6 address, bit 1: 4-octet AS
  uint32_t bgp_id = 0;
  net::IpAddress ip;
  uint32_t as = 0;
};

struct PeerIndexTable {
  uint32_t collector_bgp_id = 0;
  std::string_view view_name;  // points into the record
  std::vector<PeerEntry> peers;
};
Result<PeerIndexTable, Error> decode_peer_index_table(const Record& r);

struct RibEntry {
  uint16_t peer_index = 0;  // into the PEER_INDEX_TABLE
  uint32_t originated = 0;
  uint32_t path_id = 0;  // set only in the _ADDPATH subtypes
  Span attributes;
};

// A RIB_IPV4/IPV6_UNICAST/MULTICAST(_ADDPATH) record. decode_rib() checks
// the framing of every entry once; iterating cannot fail afterwards.
class Rib {
 public:
  class Iterator {
   public:
    using value_type = RibEntry;
    using difference_type = std::ptrdiff_t;
    Iterator() = default;
    Iterator(Span rest, uint16_t left, bool add_path) : in_(rest), left_(left), add_path_(add_path) {
      load();
    }
    const RibEntry& operator*() const { return cur_; }
    const RibEntry* operator->() const { return &cur_; }
    Iterator& operator++() {
      --left_;
      load();
      return *this;
    }
    Iterator operator++(int) {
      Iterator old = *this;
      ++*this;
      return old;
    }
    friend bool operator==(const Iterator& a, const Iterator& b) { return a.left_ == b.left_; }

   private:
    void load();
    bytes::Reader in_;
    uint16_t left_ = 0;
    bool add_path_ = false;
    RibEntry cur_;
  };

  uint32_t sequence = 0;
  uint16_t afi = 0;  // 1 IPv4, 2 IPv6
  uint8_t safi = 0;  // 1 unicast, 2 multicast
  bool add_path = false;
  net::Prefix prefix;
  uint16_t entry_count = 0;

  [[nodiscard]] Iterator begin() const { return Iterator(entries_, entry_count, add_path); }
  [[nodiscard]] Iterator end() const { return Iterator(); }

 private:
  friend Result<Rib, Error> decode_rib(const Record& r);
  Span entries_;
};

// True for the AFI/SAFI-specific RIB subtypes decode_rib() reads.
bool is_rib(const Record& r);
Result<Rib, Error> decode_rib(const Record& r);

}  // namespace petrel::mrt

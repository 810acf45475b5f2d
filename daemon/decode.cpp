// `petrel decode [--as2] [--add-path FAMILY[,FAMILY...]] [--ibgp] [HEX...]`:
// BGP messages as hex (arguments, or stdin one per line; with or without
// the 16-byte marker) to exactly one JSON line each, in order. The exit
// status is 0 when every message decoded cleanly, 1 when any did not, 2 for
// a usage error. Schema: docs/decode.md.
#include "daemon/decode.h"

#include <cstdio>
#include <array>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "codec/to_json.h"
#include "codec/types.h"
#include "crates/bytes/bytes.h"
#include "crates/json/json.h"

namespace {

constexpr std::string_view kUsage =
    "usage: petrel decode [--as2] [--add-path FAMILY[,FAMILY...]] [--ibgp] [HEX...]\n"
    "  Decodes BGP messages given as hex (with or without the 16-byte marker)\n"
    "  as arguments, or from stdin one per line, and prints one JSON line per\n"
    "  message. --as2: the session is 2-octet AS. --add-path: NLRI of these\n"
    "  families carry path identifiers (e.g. ipv4-unicast,ipv6-unicast).\n"
    "  --ibgp: judge RFC 7606 rules as for an internal peer.\n"
    "  Exit status: 0 all decoded cleanly, 1 some did not, 2 usage error.\n";

constexpr size_t kFlushAt = 1 << 20;

class Decoder {
 public:
  explicit Decoder(petrel::codec::JsonOptions opts) : opts_(opts), w_(out_) { out_.reserve(kFlushAt * 2); }
  ~Decoder() { flush(); }

  // One message as hex text; false when it did not decode cleanly.
  bool line(std::string_view hex) {
    bool ok = decode_one(hex);
    w_.line_end();
    if (out_.size() >= kFlushAt) flush();
    return ok;
  }
  void flush() {
    if (!out_.empty()) std::fwrite(out_.data(), 1, out_.size(), stdout);
    out_.clear();
  }

 private:
  bool decode_one(std::string_view hex) {
    if (!parse_hex(hex)) {
      w_.begin_object();
      w_.key_raw("type").null();
      w_.key_raw("error").begin_object();
      w_.key_raw("reason").string_raw("not hexadecimal (or an odd number of digits)");
      w_.end_object();
      w_.end_object();
      return false;
    }
    // Without the marker: put one in front so the header check sees a
    // whole message.
    bool has_marker = buf_.size() >= petrel::codec::kMarkerLen;
    for (size_t i = 0; has_marker && i < petrel::codec::kMarkerLen; ++i)
      has_marker = buf_[i] == std::byte{0xff};
    petrel::bytes::Span whole(buf_);
    if (!has_marker) {
      framed_.assign(petrel::codec::kMarkerLen, std::byte{0xff});
      framed_.insert(framed_.end(), buf_.begin(), buf_.end());
      whole = petrel::bytes::Span(framed_);
    }
    return petrel::codec::message_to_json(whole, opts_, w_);
  }

  // A fast hex parser into buf_ (this is the tool's hot loop too).
  bool parse_hex(std::string_view s) {
    static const auto kTable = [] {
      std::array<int8_t, 256> t{};
      t.fill(-1);
      for (int c = '0'; c <= '9'; ++c) t[static_cast<size_t>(c)] = static_cast<int8_t>(c - '0');
      for (int c = 'a'; c <= 'f'; ++c) t[static_cast<size_t>(c)] = static_cast<int8_t>(c - 'a' + 10);
      for (int c = 'A'; c <= 'F'; ++c) t[static_cast<size_t>(c)] = static_cast<int8_t>(c - 'A' + 10);
      return t;
    }();
    buf_.clear();
    int hi = -1;
    for (char ch : s) {
      int v = kTable[static_cast<unsigned char>(ch)];
      if (v < 0) {
        if (ch == ' ' || ch == '\t' || ch == ':' || ch == '\r') continue;
        return false;
      }
      if (hi < 0) {
        hi = v;
      } else {
        buf_.push_back(static_cast<std::byte>((hi << 4) | v));
        hi = -1;
      }
    }
    return hi < 0;
  }

  petrel::codec::JsonOptions opts_;
  std::string out_;
  petrel::json::Writer w_;
  std::vector<std::byte> buf_, framed_;
};

bool parse_families(std::string_view list, petrel::codec::FamilySet& out) {
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view name = list.substr(0, comma);
    petrel::codec::Family f;
    if (!petrel::codec::parse_family(name, f) || petrel::codec::known_index(f) < 0) return false;
    out.add(f);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  return true;
}

}  // namespace

int decode_main(int argc, char** argv) {
  petrel::codec::JsonOptions opts;
  // A decoding tool accepts what any negotiated session could carry:
  // extended messages and IPv6 next hops for IPv4 NLRI.
  opts.params.extended_message = true;
  opts.params.extended_next_hop = {petrel::codec::kIpv4Unicast, petrel::codec::kIpv4Multicast};
  std::vector<std::string_view> hex_args;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage.data(), stdout);
      return 0;
    } else if (a == "--as2") {
      opts.params.four_octet_as = false;
    } else if (a == "--ibgp") {
      opts.peer = petrel::codec::PeerType::kInternal;
    } else if (a == "--add-path" || a.substr(0, 11) == "--add-path=") {
      std::string_view list;
      if (a == "--add-path") {
        if (i + 1 >= argc) {
          std::fprintf(stderr, "petrel decode: --add-path needs a list of families\n%s", kUsage.data());
          return 2;
        }
        list = argv[++i];
      } else {
        list = a.substr(11);
      }
      if (!parse_families(list, opts.params.add_path_receive)) {
        std::fprintf(stderr,
                     "petrel decode: --add-path: \"%.*s\" is not a list of ipv4-unicast, ipv6-unicast, "
                     "ipv4-multicast, ipv6-multicast\n",
                     static_cast<int>(list.size()), list.data());
        return 2;
      }
    } else if (!a.empty() && a[0] == '-' && a != "-") {
      std::fprintf(stderr, "petrel decode: unknown option %s\n%s", argv[i], kUsage.data());
      return 2;
    } else {
      hex_args.push_back(a);
    }
  }
  Decoder d(opts);
  bool all_ok = true;
  if (!hex_args.empty() && !(hex_args.size() == 1 && hex_args[0] == "-")) {
    for (auto h : hex_args) all_ok &= d.line(h);
    return all_ok ? 0 : 1;
  }
  // stdin, one message per line; blank lines and '#' comments are skipped.
  std::vector<char> chunk(1 << 20);
  std::string carry;
  for (;;) {
    size_t n = std::fread(chunk.data(), 1, chunk.size(), stdin);
    if (n == 0) break;
    std::string_view data(chunk.data(), n);
    size_t start = 0;
    for (;;) {
      size_t nl = data.find('\n', start);
      if (nl == std::string_view::npos) {
        carry.append(data.substr(start));
        break;
      }
      std::string_view line = data.substr(start, nl - start);
      if (!carry.empty()) {
        carry.append(line);
        line = carry;
      }
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
      if (!line.empty() && line[0] != '#') all_ok &= d.line(line);
      carry.clear();
      start = nl + 1;
    }
  }
  if (!carry.empty() && carry[0] != '#') all_ok &= d.line(carry);
  return all_ok ? 0 : 1;
}

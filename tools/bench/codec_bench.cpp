// codec-bench: how fast the codec decodes, prints and encodes UPDATEs.
//
// Modelled on ExaBGP's benchmark_codec. Two corpora:
//   ci    a few hundred UPDATEs covering every family (IPv4/IPv6 unicast and
//         multicast, with and without ADD-PATH) and every attribute Petrel
//         decodes, plus withdrawals and End-of-RIB markers;
//   bulk  20 IPv4 unicast UPDATEs of 400 prefixes each.
// Three stages: decode (validate the UPDATE and produce every prefix as a
// value), json (the `petrel decode` rendering) and encode (the UPDATE
// builder packing the prefixes under their attribute set). Each stage runs
// the corpus repeatedly for about --ms milliseconds, best of --runs (7),
// and prints one JSON line:
//   {"corpus":"bulk","stage":"decode","updates_per_s":...,"prefixes_per_s":...}
// Only benchmark tools read a clock (docs/DESIGN.md, "Measuring").
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "codec/attribute_set.h"
#include "codec/to_json.h"
#include "codec/update.h"
#include "codec/update_builder.h"
#include "crates/json/json.h"

namespace {

using petrel::bytes::Span;
using namespace petrel::codec;  // NOLINT: a benchmark tool
namespace net = petrel::net;

// One UPDATE as the encoder's input and as wire bytes.
struct Item {
  Family family;
  SessionParams params;
  std::optional<AttributeSet> attrs;
  std::vector<NlriPrefix> announce, withdraw;
  std::vector<std::byte> wire;  // one whole message
  size_t prefixes = 0;
};

struct Corpus {
  std::string name;
  std::vector<Item> items;
};

uint32_t g_seed = 12345;
uint32_t rnd() {
  g_seed = g_seed * 1103515245u + 12345u;
  return g_seed >> 8;
}

NlriPrefix make_prefix(Family f, uint32_t i, bool add_path) {
  NlriPrefix p;
  if (f.afi == 1) {
    uint32_t addr = (1u << 24) + (i << 8);
    unsigned len = 24 - (i % 3 == 0 ? 2 : 0);
    p.prefix = *net::Prefix::make(net::IpAddress::v4(addr), len);
  } else {
    std::array<uint8_t, 16> b{};
    b[0] = 0x20;
    b[1] = 0x01;
    b[2] = 0x0d;
    b[3] = 0xb8;
    b[4] = static_cast<uint8_t>(i >> 16);
    b[5] = static_cast<uint8_t>(i >> 8);
    b[6] = static_cast<uint8_t>(i);
    p.prefix = *net::Prefix::make(net::IpAddress::from_bytes(net::IpFamily::V6, b.data()), 48);
  }
  p.path_id = add_path ? 1 + i % 4 : 0;
  return p;
}

PathAttributes rich_attributes(Family f, uint32_t i) {
  PathAttributes a;
  a.origin = static_cast<Origin>(i % 3);
  AsPath path;
  path.segments.push_back({SegmentType::kAsSequence, {64500 + i % 50, 3356, 1299, 200000 + i % 1000}});
  if (i % 5 == 0) path.segments.push_back({SegmentType::kAsSet, {65010, 65011}});
  a.as_path = path;
  if (f == kIpv4Unicast) a.next_hop = net::IpAddress::v4(0xc6120001u);
  a.med = i % 7 == 0 ? std::optional<uint32_t>(i) : std::nullopt;
  a.local_pref = 100 + i % 3;
  a.atomic_aggregate = i % 11 == 0;
  if (i % 4 == 0) a.aggregator = Aggregator{64500 + i % 50, net::IpAddress::v4(0xc0000201u)};
  for (uint32_t k = 0; k < 1 + i % 6; ++k) a.communities.push_back((65000u << 16) | (i + k) % 65536);
  if (i % 3 == 0) {
    a.originator_id = 0x0a000001u + i;
    a.cluster_list = {0x0a0000feu, 0x0a0000fdu};
  }
  if (f != kIpv4Unicast) {
    NextHop nh;
    if (f.afi == 1) {
      nh.global = net::IpAddress::v4(0xc6120001u);
    } else {
      nh.global = *net::IpAddress::parse("2001:db8::1");
      if (i % 2) nh.link_local = *net::IpAddress::parse("fe80::1");
    }
    a.mp_family = f;
    a.mp_next_hop = nh;
  }
  if (i % 2 == 0) a.ext_communities.push_back(ExtCommunity{0x0002fde800000064ull + i});
  if (i % 9 == 0) {
    Ipv6ExtCommunity c;
    c.type = 0x00;
    c.subtype = 0x02;
    c.global = net::IpAddress::parse("2001:db8::2")->bytes();
    c.local = static_cast<uint16_t>(i);
    a.ipv6_ext_communities.push_back(c);
  }
  if (i % 2 == 1) a.large_communities.push_back(LargeCommunity{64500, i, 7});
  if (i % 8 == 0) a.otc = 64500;
  if (i % 10 == 0) a.unknown.push_back(UnknownAttribute{0xe0, 99, {std::byte{1}, std::byte{2}}});
  return a;
}

void add_item(Corpus& c, Item item) {
  UpdateBuilder b(item.params);
  auto r = b.build(item.family, item.attrs ? &*item.attrs : nullptr, item.announce, item.withdraw, item.wire);
  if (!r || *r != 1) {
    std::fprintf(stderr, "codec-bench: corpus %s: could not build an item (%s)\n", c.name.c_str(),
                 r ? "more than one message" : std::string(r.error()).c_str());
    std::exit(2);
  }
  item.prefixes = item.announce.size() + item.withdraw.size();
  c.items.push_back(std::move(item));
}

Corpus make_ci() {
  Corpus c{"ci", {}};
  uint32_t serial = 0;
  for (Family f : kKnownFamilyList) {
    for (int add_path = 0; add_path < 2; ++add_path) {
      SessionParams params;
      params.extended_message = false;
      if (add_path) {
        params.add_path_receive.add(f);
        params.add_path_send.add(f);
      }
      for (uint32_t i = 0; i < 40; ++i, ++serial) {
        Item it;
        it.family = f;
        it.params = params;
        it.attrs = AttributeSet::from(rich_attributes(f, serial));
        uint32_t n = 1 + rnd() % 24;
        for (uint32_t k = 0; k < n; ++k) it.announce.push_back(make_prefix(f, serial * 32 + k, add_path != 0));
        add_item(c, std::move(it));
      }
      for (uint32_t i = 0; i < 8; ++i, ++serial) {
        Item it;
        it.family = f;
        it.params = params;
        for (uint32_t k = 0; k < 1 + i; ++k) it.withdraw.push_back(make_prefix(f, serial * 32 + k, add_path != 0));
        add_item(c, std::move(it));
      }
    }
    Item eor;
    eor.family = f;
    UpdateBuilder::end_of_rib(f, eor.wire);
    c.items.push_back(std::move(eor));
  }
  return c;
}

Corpus make_bulk() {
  Corpus c{"bulk", {}};
  for (uint32_t i = 0; i < 20; ++i) {
    Item it;
    it.family = kIpv4Unicast;
    PathAttributes a;
    a.origin = Origin::kIgp;
    AsPath path;
    path.segments.push_back({SegmentType::kAsSequence, {64500, 3356, 1299 + i}});
    a.as_path = path;
    a.next_hop = net::IpAddress::v4(0xc6120001u);
    a.communities = {(65000u << 16) | i};
    it.attrs = AttributeSet::from(a);
    for (uint32_t k = 0; k < 400; ++k) {
      NlriPrefix p;
      p.prefix = *net::Prefix::make(net::IpAddress::v4((10u << 24) + ((i * 400 + k) << 8)), 24);
      it.announce.push_back(p);
    }
    add_item(c, std::move(it));
  }
  return c;
}

volatile uint64_t g_sink = 0;

// The stages: each processes the whole corpus once.
void stage_decode(const Corpus& c) {
  uint64_t acc = 0;
  for (const Item& it : c.items) {
    Span body = Span(it.wire).subspan(kHeaderLen);
    UpdateView u = UpdateView::decode(body, it.params, PeerType::kInternal);
    acc += static_cast<uint64_t>(u.action());
    for (const NlriRange& r : u.announced())
      for (const NlriPrefix& p : r) acc += p.prefix.len() + p.path_id;
    for (const NlriRange& r : u.withdrawals())
      for (const NlriPrefix& p : r) acc += p.prefix.len() + p.path_id;
  }
  g_sink = g_sink + acc;
}

std::string g_json;
void stage_json(const Corpus& c) {
  g_json.clear();
  petrel::json::Writer w(g_json);
  for (const Item& it : c.items) {
    JsonOptions o;
    o.params = it.params;
    o.peer = PeerType::kInternal;
    message_to_json(it.wire, o, w);
    w.line_end();
  }
  g_sink = g_sink + g_json.size();
}

std::vector<std::byte> g_out;
void stage_encode(const Corpus& c) {
  g_out.clear();
  for (const Item& it : c.items) {
    UpdateBuilder b(it.params);
    if (it.prefixes == 0) {
      UpdateBuilder::end_of_rib(it.family, g_out);
      continue;
    }
    auto r = b.build(it.family, it.attrs ? &*it.attrs : nullptr, it.announce, it.withdraw, g_out);
    g_sink = g_sink + (r ? *r : 0);
  }
}

struct Options {
  int runs = 7;
  int ms = 200;
  std::string only_corpus, only_stage;
};

void run(const Corpus& c, std::string_view stage, void (*fn)(const Corpus&), const Options& o) {
  size_t prefixes = 0;
  for (const Item& it : c.items) prefixes += it.prefixes;
  // Calibrate: how many passes make about o.ms milliseconds.
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  size_t passes = 0;
  while (std::chrono::duration<double, std::milli>(clock::now() - t0).count() < o.ms / 4.0 || passes < 1) {
    fn(c);
    ++passes;
  }
  double per_pass_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count() / static_cast<double>(passes);
  size_t n = std::max<size_t>(1, static_cast<size_t>(o.ms / per_pass_ms));
  double best = 1e300;
  for (int r = 0; r < o.runs; ++r) {
    auto s = clock::now();
    for (size_t k = 0; k < n; ++k) fn(c);
    double secs = std::chrono::duration<double>(clock::now() - s).count();
    best = std::min(best, secs / static_cast<double>(n));
  }
  std::printf(
      "{\"corpus\":\"%s\",\"stage\":\"%.*s\",\"updates\":%zu,\"prefixes\":%zu,\"updates_per_s\":%.0f,"
      "\"prefixes_per_s\":%.0f,\"best_of\":%d}\n",
      c.name.c_str(), static_cast<int>(stage.size()), stage.data(), c.items.size(), prefixes,
      static_cast<double>(c.items.size()) / best, static_cast<double>(prefixes) / best, o.runs);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&](std::string_view name) -> const char* {
      if (a == name && i + 1 < argc) return argv[++i];
      return nullptr;
    };
    if (const char* v = value("--runs")) o.runs = std::atoi(v);
    else if (const char* v2 = value("--ms")) o.ms = std::atoi(v2);
    else if (const char* v3 = value("--corpus")) o.only_corpus = v3;
    else if (const char* v4 = value("--stage")) o.only_stage = v4;
    else {
      std::fprintf(stderr,
                   "usage: codec-bench [--runs N] [--ms MS] [--corpus ci|bulk] [--stage decode|json|encode]\n");
      return 2;
    }
  }
  if (o.runs < 1 || o.ms < 1) {
    std::fprintf(stderr, "codec-bench: --runs and --ms must be positive\n");
    return 2;
  }
  std::vector<Corpus> corpora;
  corpora.push_back(make_ci());
  corpora.push_back(make_bulk());
  // Sanity: every message of every corpus decodes cleanly; a benchmark of
  // a decoder that refuses its input would measure nothing.
  for (const Corpus& c : corpora) {
    for (const Item& it : c.items) {
      UpdateView u = UpdateView::decode(Span(it.wire).subspan(kHeaderLen), it.params, PeerType::kInternal);
      if (u.action() != ErrorAction::kNone) {
        std::fprintf(stderr, "codec-bench: corpus %s has a message that does not decode cleanly: %s\n",
                     c.name.c_str(),
                     u.report().diagnostics().empty() ? "?" : std::string(u.report().diagnostics()[0].reason).c_str());
        return 1;
      }
    }
  }
  struct Stage {
    std::string_view name;
    void (*fn)(const Corpus&);
  };
  const Stage stages[] = {{"decode", stage_decode}, {"json", stage_json}, {"encode", stage_encode}};
  for (const Corpus& c : corpora) {
    if (!o.only_corpus.empty() && o.only_corpus != c.name) continue;
    for (const Stage& s : stages) {
      if (!o.only_stage.empty() && o.only_stage != s.name) continue;
      run(c, s.name, s.fn, o);
    }
  }
  return 0;
}

// The HTTP server (daemon/http.h): libmicrohttpd with its internal polling
// thread, on a socket we bind ourselves so a failure says exactly why.
#include "daemon/http.h"

#include <microhttpd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>

#include "daemon/api.h"
#include "daemon/kernel_api.h"
#include "daemon/rpki_api.h"
#include "daemon/log.h"
#include "daemon/server.h"
#include "daemon/sockets.h"

#ifndef PETREL_VERSION
#define PETREL_VERSION "unknown"
#endif

namespace petrel::daemon {

namespace {

constexpr unsigned kConnectionLimit = 64;    // the API is for operators and scrapers, not crowds
constexpr unsigned kConnectionTimeout = 10;  // seconds of silence before a connection is dropped
constexpr int kBacklog = 16;

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

api::PeerSnapshot peer_snapshot(const Peer& peer, int64_t now_ms) {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  const PeerConfig& pc = peer.config();
  const PeerCounters& c = peer.counters();
  PeerStatus st = peer.status();
  api::PeerSnapshot p;
  p.name = pc.name;
  p.address = pc.address_text();
  p.remote_asn = pc.asn;
  p.passive = pc.passive;
  p.enabled = pc.enabled;
  p.description = pc.description;
  p.families = pc.families;
  p.state = st.state;
  if (st.state == fsm::State::kEstablished && st.established_since_ms != 0)
    p.uptime_seconds = (now_ms - st.established_since_ms) / 1000;
  p.last_error = std::move(st.last_error);
  for (size_t i = 0; i < codec::kKnownFamilies; ++i) {
    p.announced[i] = c.announced[i].load(kRelaxed);
    p.withdrawn[i] = c.withdrawn[i].load(kRelaxed);
    p.routes[i] = peer.table_routes(i);
  }
  p.unknown_family_updates = c.unknown_family_updates.load(kRelaxed);
  for (size_t t = 0; t < api::kMessageTypes && t < c.messages_in.size(); ++t) {
    p.messages_in[t] = c.messages_in[t].load(kRelaxed);
    p.messages_out[t] = c.messages_out[t].load(kRelaxed);
  }
  p.treat_as_withdraw = c.treat_as_withdraw.load(kRelaxed);
  p.attribute_discard = c.attribute_discard.load(kRelaxed);
  p.established_total = c.established.load(kRelaxed);
  p.connections_refused = c.connections_refused.load(kRelaxed);
  return p;
}

api::Snapshot snapshot(const HttpServer::Context& ctx) {
  const Server& server = *ctx.server;
  int64_t now = steady_ms();
  api::Snapshot s;
  s.version = PETREL_VERSION;
  s.asn = ctx.asn;
  s.router_id = ctx.router_id;
  s.uptime_seconds = (now - ctx.started_ms) / 1000;
  s.connections_refused = server.refused_connections();
  s.peers.reserve(server.peers().size());
  for (const auto& peer : server.peers()) s.peers.push_back(peer_snapshot(*peer, now));
  const table::Table& t = server.table();
  for (size_t i = 0; i < codec::kKnownFamilies; ++i) s.table.prefixes[i] = t.prefixes(static_cast<table::FamilyIndex>(i));
  s.table.routes = t.routes();
  auto mem = t.memory();
  s.table.attr_sets = mem.attr_sets;
  s.table.attr_bytes = mem.attr_bytes;
  s.table.map_bytes = mem.map_bytes;
  s.table.journal_bytes = mem.journal_bytes;
  return s;
}

// One prefix's routes for the API, read under its shard's lock: the best
// first, each other route with the best-path step that decided against it.
bool lookup_prefix(const table::Table& t, const net::Prefix& p, api::PrefixSnapshot& out) {
  const codec::Family fam = p.family() == net::IpFamily::V6 ? codec::kIpv6Unicast : codec::kIpv4Unicast;
  const auto fi = static_cast<table::FamilyIndex>(codec::known_index(fam));
  out.routes.clear();
  bool found = t.lookup_all(fi, p, [&](std::span<const table::RouteView> views, int best) {
    auto cand = [](const table::RouteView& rv) {
      return table::Candidate{rv.attrs, rv.peer, rv.path_id, rv.slot, true};
    };
    auto add = [&](const table::RouteView& rv, bool is_best) {
      api::RouteSnapshot r;
      r.peer = rv.peer->name;
      r.peer_address = rv.peer->address.to_string();
      r.path_id = rv.path_id;
      r.best = is_best;
      r.stale = rv.stale;
      if (rv.validation != table::Validation::kUnchecked) r.rpki = validation_name(rv.validation);
      if (!is_best && best >= 0)
        r.lost_by = std::string(table::decision_name(
            table::compare_pair(cand(views[static_cast<size_t>(best)]), cand(rv), t.best_path_options())));
      r.attributes = rv.attrs->decode().decode();
      out.routes.push_back(std::move(r));
    };
    if (best >= 0) add(views[static_cast<size_t>(best)], true);
    for (size_t i = 0; i < views.size(); ++i)
      if (static_cast<int>(i) != best) add(views[i], false);
  });
  if (!found) return false;
  char buf[32];
  out.prefix = p.to_string();
  out.family = std::string(codec::family_name(fam, buf));
  return true;
}

MHD_Result answer(void* cls, MHD_Connection* connection, const char* url, const char* method, const char*,
                  const char*, size_t* upload_size, void** request_state) {
  // The first call only announces the request; answering there would make
  // libmicrohttpd close the connection (no keep-alive). A body, which no
  // endpoint takes, is read and dropped.
  static int seen;
  if (*request_state == nullptr) {
    *request_state = &seen;
    return MHD_YES;
  }
  if (*upload_size != 0) {
    *upload_size = 0;
    return MHD_YES;
  }
  const auto* ctx = static_cast<const HttpServer::Context*>(cls);
  api::Response r;
  try {
    if (std::string_view(url).starts_with(api::kRoutesPath))
      r = api::respond_routes(method, url, [&](const net::Prefix& p, api::PrefixSnapshot& out) {
        return lookup_prefix(ctx->server->table(), p, out);
      });
    else if (std::string_view(url) == kRpkiPath)
      r = rpki_response(method, rpki_view(*ctx->server));
    else if (std::string_view(url) == kKernelPath)
      r = kernel_response(method, ctx->server->kernel());
    else
      r = api::respond(method, url, snapshot(*ctx));
    if (std::string_view(url) == "/metrics" && r.status == 200 && ctx->server->kernel())
      r.body += kernel_metrics(ctx->server->kernel()->status());
    if (std::string_view(url) == "/metrics" && r.status == 200) r.body += rpki_metrics(rpki_view(*ctx->server));
  } catch (const std::exception& e) {
    log(LogLevel::kError, "http-error", {{"url", url}}, e.what());
    r.status = 500;
    r.content_type = api::kJsonType;
    r.body = api::error_json("internal error");
  }
  MHD_Response* resp = MHD_create_response_from_buffer(r.body.size(), r.body.data(), MHD_RESPMEM_MUST_COPY);
  if (resp == nullptr) return MHD_NO;
  (void)MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, std::string(r.content_type).c_str());
  (void)MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  if (!r.allow.empty()) (void)MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, std::string(r.allow).c_str());
  MHD_Result ok = MHD_queue_response(connection, r.status, resp);
  MHD_destroy_response(resp);
  return ok;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
void mhd_log(void*, const char* fmt, va_list ap) {
  char buf[512];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  std::string_view text(buf);
  while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  log(LogLevel::kWarn, "http-library", {}, text);
}
#pragma GCC diagnostic pop

}  // namespace

HttpServer::HttpServer() = default;

HttpServer::~HttpServer() { stop(); }

bool HttpServer::bind(const Config& config) {
  ctx_.asn = config.router.asn;
  ctx_.router_id = config.router.router_id.to_string();
  ctx_.started_ms = steady_ms();
  if (!config.http.listen) {
    log(LogLevel::kInfo, "http-disabled", {}, "[http] listen is empty");
    return true;
  }
  where_ = config.http.listen->to_string();
  std::string err;
  fd_ = open_listener(SocketAddress{config.http.listen->address, config.http.listen->port, {}, 0}, kBacklog, err,
                      BindMode::kExact);
  if (fd_ < 0) {
    std::string hint;
    if (err.find("Address already in use") != std::string::npos) hint = " (is another petrel running?)";
    if (err.find("Cannot assign requested address") != std::string::npos)
      hint = " (the address is not on this host)";
    log(LogLevel::kError, "http-listen-failed", {{"address", where_}}, err + hint);
    return false;
  }
  if (auto local = local_endpoint(fd_)) port_ = local->port;
  return true;
}

bool HttpServer::start(const Server& server) {
  if (fd_ < 0) return true;  // disabled
  ctx_.server = &server;
  unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
  daemon_ = MHD_start_daemon(flags, 0, nullptr, nullptr, &answer, &ctx_,
                             MHD_OPTION_EXTERNAL_LOGGER, &mhd_log, nullptr,  // first, or MHD logs to stderr
                             MHD_OPTION_LISTEN_SOCKET, static_cast<MHD_socket>(fd_),
                             MHD_OPTION_CONNECTION_LIMIT, kConnectionLimit,
                             MHD_OPTION_CONNECTION_TIMEOUT, kConnectionTimeout,
                             MHD_OPTION_END);
  if (daemon_ == nullptr) {
    log(LogLevel::kError, "http-start-failed", {{"address", where_}}, "libmicrohttpd could not start");
    return false;
  }
  fd_ = -1;  // libmicrohttpd owns and closes it now
  log(LogLevel::kInfo, "http-listening", {{"address", where_}, {"port", port_}});
  return true;
}

void HttpServer::stop() {
  if (daemon_ != nullptr) {
    MHD_stop_daemon(daemon_);
    daemon_ = nullptr;
  }
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

}  // namespace petrel::daemon

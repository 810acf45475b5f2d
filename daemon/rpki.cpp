// The RTR caches on the main loop, the VRP snapshot and the table's
// validator (daemon/rpki.h).
#include "daemon/rpki.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iterator>
#include <variant>

#include "crates/sendq/send_queue.h"
#include "daemon/log.h"
#include "daemon/memory.h"
#include "daemon/rtr_transport.h"
#include "daemon/sockets.h"

namespace petrel::daemon {

namespace {

constexpr double kBackoffInitialSeconds = 1.0;
constexpr double kBackoffMaxSeconds = 60.0;
constexpr size_t kReadBytes = 65536;
constexpr int kReadsPerWakeup = 16;
// A cache that takes the connection but sends no complete answer within
// this time counts as failed, so that the next one is used (RFC 8210 sets
// no such limit; without one a silent cache would hold failover back).
constexpr double kFirstAnswerSeconds = 15.0;

rpki::Time now_ms() {
  return std::chrono::time_point_cast<rpki::Duration>(std::chrono::steady_clock::now());
}

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A process-wide counter, so that versions of different stores never
// meet in one thread's cache.
std::atomic<uint64_t> g_versions{0};

// The caches in the order they are tried: by preference, then file order.
std::vector<RpkiCacheConfig> by_preference(const RpkiConfig& config) {
  std::vector<RpkiCacheConfig> sorted = config.caches;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const RpkiCacheConfig& a, const RpkiCacheConfig& b) { return a.preference < b.preference; });
  return sorted;
}

}  // namespace

// ---- VrpStore

VrpStore::VrpStore() {
  auto s = std::make_shared<VrpSnapshot>();
  s->version = ++g_versions;
  version_.store(s->version, std::memory_order_release);
  current_.store(std::move(s));
}

std::shared_ptr<const VrpSnapshot> VrpStore::current() const { return current_.load(); }

const VrpSnapshot& VrpStore::local() const {
  struct Cached {
    const VrpStore* store = nullptr;
    uint64_t version = 0;
    std::shared_ptr<const VrpSnapshot> snap;
  };
  thread_local Cached cached;
  if (cached.store != this || cached.version != version_.load(std::memory_order_acquire)) {
    cached.snap = current_.load();
    cached.store = this;
    cached.version = cached.snap->version;
  }
  return *cached.snap;
}

// The customers whose ASPA differs between two lists sorted by customer.
std::vector<uint32_t> changed_customers(std::span<const rpki::Aspa> before, std::span<const rpki::Aspa> after) {
  std::vector<uint32_t> out;
  size_t i = 0, j = 0;
  while (i < before.size() || j < after.size()) {
    if (j == after.size() || (i < before.size() && before[i].customer < after[j].customer)) {
      out.push_back(before[i++].customer);
    } else if (i == before.size() || after[j].customer < before[i].customer) {
      out.push_back(after[j++].customer);
    } else {
      if (before[i].providers != after[j].providers) out.push_back(after[j].customer);
      ++i;
      ++j;
    }
  }
  return out;
}

VrpDelta VrpStore::publish(std::vector<rpki::Vrp> vrps, std::string source, std::optional<uint32_t> serial,
                           int64_t now_unix_ms, std::span<const rpki::Aspa> aspas, SlurmChanges slurm) {
  auto old = current_.load();
  auto s = std::make_shared<VrpSnapshot>();
  s->table = rpki::VrpTable::build(vrps);
  s->aspa = rpki::AspaTable::build(aspas);
  s->aspas = s->aspa.size();
  s->aspa_list.assign(aspas.begin(), aspas.end());
  s->slurm_removed = slurm.vrps_removed;
  s->slurm_added = slurm.vrps_added;
  s->slurm_aspas_removed = slurm.aspas_removed;
  s->slurm_aspas_added = slurm.aspas_added;
  for (const rpki::Vrp& v : vrps) (v.prefix.family() == net::IpFamily::V4 ? s->v4 : s->v6) += 1;
  s->vrps = std::move(vrps);
  s->source = std::move(source);
  s->serial = serial;
  s->published_unix_ms = now_unix_ms;
  s->version = ++g_versions;

  VrpDelta d;
  d.version = s->version;
  std::set_difference(s->vrps.begin(), s->vrps.end(), old->vrps.begin(), old->vrps.end(),
                      std::back_inserter(d.announced));
  std::set_difference(old->vrps.begin(), old->vrps.end(), s->vrps.begin(), s->vrps.end(),
                      std::back_inserter(d.withdrawn));
  d.aspa_customers = changed_customers(old->aspa_list, s->aspa_list);
  const uint64_t version = s->version;
  current_.store(std::move(s));
  version_.store(version, std::memory_order_release);
  VrpDelta kept;
  kept.version = d.version;
  const size_t n = d.announced.size() + d.withdrawn.size();
  if (n > kKeptDeltaVrps) {
    kept.truncated = true;
  } else {
    kept.announced = d.announced;
    kept.withdrawn = d.withdrawn;
  }
  std::lock_guard lock(deltas_mu_);
  delta_vrps_ += kept.announced.size() + kept.withdrawn.size();
  deltas_.push_back(std::move(kept));
  while (deltas_.size() > kKeptDeltas || delta_vrps_ > kKeptDeltaVrps) {
    delta_vrps_ -= deltas_.front().announced.size() + deltas_.front().withdrawn.size();
    deltas_.pop_front();
  }
  return d;
}

std::vector<VrpDelta> VrpStore::recent_changes() const {
  std::lock_guard lock(deltas_mu_);
  return {deltas_.begin(), deltas_.end()};
}

// ---- RpkiValidator

namespace {

table::Validation state_of(rpki::Validity v) {
  switch (v) {
    case rpki::Validity::kNotFound: return table::Validation::kNotFound;
    case rpki::Validity::kValid: return table::Validation::kValid;
    case rpki::Validity::kInvalid: return table::Validation::kInvalid;
  }
  return table::Validation::kNotFound;
}

}  // namespace

template <typename A>
std::optional<uint32_t> RpkiValidator::origin_of(const A& a) const {
  if (a.as_path_length() == 0) return local_as_;
  if (a.origin_as() != 0) return a.origin_as();  // 0: the path ends in an AS_SET (NONE)
  return std::nullopt;
}

template <typename A>
table::Validation RpkiValidator::validate_any(const net::Prefix& p, const A& a) const {
  if (!enabled()) return table::Validation::kUnchecked;
  return state_of(store_.local().table.validate(p, origin_of(a)));
}

table::Validation RpkiValidator::validate(const net::Prefix& p, const table::Attrs& a) const {
  return validate_any(p, a);
}

table::Validation RpkiValidator::validate_set(const net::Prefix& p, const codec::AttributeSet& a) const {
  return validate_any(p, a);
}

table::AspaState RpkiValidator::verify_path(const table::Attrs& a, table::AspaCheck check) const {
  return verify_any(a, check);
}

table::AspaState RpkiValidator::verify_set(const codec::AttributeSet& a, table::AspaCheck check) const {
  return verify_any(a, check);
}

template <typename A>
table::AspaState RpkiValidator::verify_any(const A& a, table::AspaCheck check) const {
  if (!enabled() || check == table::AspaCheck::kNone) return table::AspaState::kUnchecked;
  // The path as on the wire, neighbour first; paths longer than this are
  // rare enough to pay for an allocation.
  thread_local std::vector<uint32_t> path;
  path.clear();
  bool has_as_set = false;
  for (const codec::AsSegmentView& seg : a.as_path_segments()) {
    if (seg.type != codec::SegmentType::kAsSequence) {
      has_as_set = true;
      continue;
    }
    for (size_t i = 0; i < seg.count; ++i) path.push_back(seg.at(i));
  }
  const rpki::AspaState s = store_.local().aspa.verify(
      path, has_as_set,
      check == table::AspaCheck::kDownstream ? rpki::AspaDirection::kDownstream : rpki::AspaDirection::kUpstream);
  switch (s) {
    case rpki::AspaState::kValid: return table::AspaState::kValid;
    case rpki::AspaState::kInvalid: return table::AspaState::kInvalid;
    case rpki::AspaState::kUnknown: return table::AspaState::kUnknown;
  }
  return table::AspaState::kUnknown;
}

void RpkiValidator::validate_batch(std::span<const Query> routes, std::span<table::Validation> out) const {
  if (!enabled()) {
    std::fill(out.begin(), out.end(), table::Validation::kUnchecked);
    return;
  }
  thread_local std::vector<rpki::RouteOrigin> in;
  thread_local std::vector<rpki::Validity> got;
  in.resize(routes.size());
  got.resize(routes.size());
  for (size_t i = 0; i < routes.size(); ++i) in[i] = {*routes[i].prefix, origin_of(*routes[i].attrs)};
  store_.local().table.validate_batch(in, got);
  for (size_t i = 0; i < routes.size(); ++i) out[i] = state_of(got[i]);
}

// ---- DeltaCover

DeltaCover::DeltaCover(const VrpDelta& delta) {
  for (const auto* list : {&delta.announced, &delta.withdrawn})
    for (const rpki::Vrp& v : *list) prefixes_.push_back(v.prefix);
  std::sort(prefixes_.begin(), prefixes_.end());
  prefixes_.erase(std::unique(prefixes_.begin(), prefixes_.end()), prefixes_.end());
  every_ = prefixes_.size() > kEveryRoute;
  for (const net::Prefix& p : prefixes_) {
    auto& lens = lens_[p.family() == net::IpFamily::V4 ? 0 : 1];
    if (std::find(lens.begin(), lens.end(), p.len()) == lens.end()) lens.push_back(p.len());
  }
}

bool DeltaCover::covers(const net::Prefix& p) const {
  if (every_) return true;
  // One binary search per distinct changed length no longer than p.
  for (uint8_t len : lens_[p.family() == net::IpFamily::V4 ? 0 : 1]) {
    if (len > p.len()) continue;
    auto up = net::Prefix::make(p.addr(), len);
    if (up && std::binary_search(prefixes_.begin(), prefixes_.end(), *up)) return true;
  }
  return false;
}

// ---- RpkiService

struct RpkiService::Cache {
  RpkiService* owner;
  size_t index;
  RpkiCacheConfig config;
  std::string name;
  rpki::Client client;
  Backoff backoff;
  Conn conn = Conn::kDown;
  int fd = -1;
  std::unique_ptr<RtrStream> stream;  // from the TCP connect on
  bool read_wants_write = false;      // a TLS read waits for the socket to be writable
  std::string last_error;             // why it last failed (the API)
  ev_io io{};
  ev_timer deadline{};  // the client's next_deadline()
  ev_timer redial{};    // back-off after a failure
  ev_timer answer{};    // kFirstAnswerSeconds after the TCP connect
  bool failed = false;
  bool ever_synced = false;  // this connection reached End of Data
  sendq::SendQueue out;  // bytes for the socket, not yet sent
  uint64_t data_generation = 0;  // increases when the client's data changes
  int64_t last_update_unix_ms = 0;
  uint64_t updates = 0, connects = 0, failures = 0;

  Cache(RpkiService* o, size_t i, const RpkiCacheConfig& c, const rpki::ClientConfig& cc, uint64_t seed)
      : owner(o),
        index(i),
        config(c),
        name(SocketAddress{c.address, c.port, c.interface, 0}.to_string()),
        client(cc),
        backoff(kBackoffInitialSeconds, kBackoffMaxSeconds, 0.25, seed) {}

  [[nodiscard]] bool in_sync() const {
    return conn == Conn::kUp && ever_synced && client.state() == rpki::Client::State::kIdle && client.has_data();
  }
};

RpkiService::RpkiService(const RpkiConfig& config, struct ev_loop* loop, VrpStore& store,
                         std::function<void(const VrpDelta&)> changed)
    : config_(config), loop_(loop), store_(store), changed_(std::move(changed)) {
  std::vector<RpkiCacheConfig> sorted = by_preference(config_);
  uint64_t seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  for (size_t i = 0; i < sorted.size(); ++i) caches_.push_back(make_cache(i, sorted[i], seed + i));
  set_slurm();
  update_status();
}

void RpkiService::set_slurm() {
  std::vector<rpki::Slurm> files;
  SlurmStatus st;
  for (const SlurmFileConfig& f : config_.slurm) {
    files.push_back(f.data);
    st.files.push_back(f.path);
    st.prefix_filters += f.data.prefix_filters.size();
    st.bgpsec_filters += f.data.bgpsec_filters.size();
    st.prefix_assertions += f.data.prefix_assertions.size();
    st.bgpsec_assertions += f.data.bgpsec_assertions.size();
    st.aspa_filters += f.data.aspa_filters.size();
    st.aspa_assertions += f.data.aspa_assertions.size();
  }
  slurm_ = rpki::SlurmFilter(files);
  std::lock_guard lock(status_mu_);
  slurm_status_ = std::move(st);
}

SlurmStatus RpkiService::slurm_status() const {
  std::lock_guard lock(status_mu_);
  return slurm_status_;
}

std::unique_ptr<RpkiService::Cache> RpkiService::make_cache(size_t index, const RpkiCacheConfig& config,
                                                            uint64_t seed) {
  rpki::ClientConfig cc;
  cc.max_vrps = config_.max_vrps;
  cc.answer_timeout = std::chrono::seconds(config_.answer_timeout);
  cc.notify_gap = std::chrono::seconds(config_.notify_gap);
  cc.max_version = config_.max_version;
  auto c = std::make_unique<Cache>(this, index, config, cc, seed);
  ev_init(&c->io, &RpkiService::on_io);
  c->io.data = c.get();
  ev_init(&c->deadline, &RpkiService::on_deadline);
  c->deadline.data = c.get();
  ev_init(&c->redial, &RpkiService::on_dial);
  c->redial.data = c.get();
  ev_init(&c->answer, &RpkiService::on_silent);
  c->answer.data = c.get();
  return c;
}

void RpkiService::reconfigure(const RpkiConfig& config) {
  const bool bounds = config.max_vrps != config_.max_vrps || config.answer_timeout != config_.answer_timeout ||
                      config.notify_gap != config_.notify_gap || config.max_version != config_.max_version;
  const bool slurm_changed = config.slurm != config_.slurm;
  const Cache* source = published_ >= 0 ? caches_[static_cast<size_t>(published_)].get() : nullptr;
  std::vector<std::unique_ptr<Cache>> old = std::move(caches_);
  caches_.clear();
  config_ = config;
  if (slurm_changed) {
    set_slurm();
    const SlurmStatus st = slurm_status();
    log(LogLevel::kInfo, "rpki-slurm",
        {{"files", st.files.size()}, {"prefix_filters", st.prefix_filters}, {"prefix_assertions", st.prefix_assertions},
         {"bgpsec_filters", st.bgpsec_filters}, {"bgpsec_assertions", st.bgpsec_assertions}},
        "SLURM files changed by a reload: the data in force is published again with them");
  }
  std::vector<RpkiCacheConfig> sorted = by_preference(config_);
  uint64_t seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  for (size_t i = 0; i < sorted.size(); ++i) {
    const RpkiCacheConfig& want = sorted[i];
    // The same cache: all its keys but the preference alike (another
    // transport, key or password is another cache).
    auto it = std::find_if(old.begin(), old.end(), [&](const std::unique_ptr<Cache>& c) {
      RpkiCacheConfig same = c->config;
      same.preference = want.preference;
      return !bounds && same == want;
    });
    if (it == old.end()) {
      caches_.push_back(make_cache(i, want, seed + i));
      log(LogLevel::kInfo, "rpki-cache", {{"cache", caches_.back()->name}, {"preference", want.preference}},
          "added by a reload");
      continue;
    }
    (*it)->index = i;
    (*it)->config = want;
    caches_.push_back(std::move(*it));
    old.erase(it);
  }
  published_ = -1;
  for (size_t i = 0; i < caches_.size(); ++i)
    if (caches_[i].get() == source) published_ = static_cast<int>(i);
  // The data in force came from a cache gone: whatever comes next (the
  // next cache's data, or none) is published, even none.
  if (source != nullptr && published_ < 0) published_data_ = UINT64_MAX;
  // New SLURM: the data in force is published again through it (with no
  // data in force there is nothing to apply it to).
  if (slurm_changed && published_ >= 0) published_data_ = UINT64_MAX;
  for (auto& c : old) {
    log(LogLevel::kInfo, "rpki-cache-removed", {{"cache", c->name}, {"active", c.get() == source}},
        c.get() == source ? "removed by a reload: its data is no longer used" : "removed by a reload");
    halt(*c);
  }
  old.clear();
  if (running_) reconsider();
  else update_status();
}

RpkiService::~RpkiService() { stop(); }

void RpkiService::start() {
  if (running_) return;
  running_ = true;
  for (const auto& c : caches_)
    log(LogLevel::kInfo, "rpki-cache", {{"cache", c->name}, {"preference", c->config.preference}});
  reconsider();
}

void RpkiService::stop() {
  if (!running_) return;
  running_ = false;
  for (auto& c : caches_) halt(*c);
  update_status();
}

void RpkiService::halt(Cache& c) {
  close(c);
  ev_timer_stop(loop_, &c.deadline);
  ev_timer_stop(loop_, &c.redial);
  ev_timer_stop(loop_, &c.answer);
}

std::vector<RpkiCacheStatus> RpkiService::status() const {
  std::lock_guard lock(status_mu_);
  return status_;
}

void RpkiService::dial(Cache& c) {
  if (c.conn != Conn::kDown || !running_) return;
  ev_timer_stop(loop_, &c.redial);
  std::string err;
  SocketAddress remote{c.config.address, c.config.port, c.config.interface, 0};
  int fd = start_connect(remote, std::nullopt, err);
  ++c.connects;
  if (fd < 0) {
    fail(c, err);
    return;
  }
  c.fd = fd;
  c.conn = Conn::kConnecting;
  ev_io_set(&c.io, fd, EV_WRITE);
  ev_io_start(loop_, &c.io);
  log(LogLevel::kDebug, "rpki-connecting", {{"cache", c.name}});
  update_status();
}

void RpkiService::on_io(struct ev_loop*, ev_io* w, int revents) {
  auto* c = static_cast<Cache*>(w->data);
  RpkiService& s = *c->owner;
  if (c->conn == Conn::kConnecting) {
    int err = connect_result(c->fd);
    if (err != 0) {
      s.fail(*c, std::strerror(err));
      return;
    }
    s.start_stream(*c);
    return;
  }
  if (c->conn == Conn::kHandshake) {
    s.handshake(*c);
    return;
  }
  if ((revents & EV_READ) || (c->read_wants_write && (revents & EV_WRITE))) s.readable(*c);
  if (c->conn == Conn::kUp && (revents & EV_WRITE)) s.flush(*c);
}

// The TCP connection is up: the transport's stream over it, and its
// handshake (none for plain TCP).
void RpkiService::start_stream(Cache& c) {
  std::string why;
  c.stream = make_rtr_stream(c.config, c.fd, why);
  if (!c.stream) {
    fail(c, why);
    return;
  }
  c.conn = Conn::kHandshake;
  c.read_wants_write = false;
  ev_timer_set(&c.answer, kFirstAnswerSeconds, 0);
  ev_timer_start(loop_, &c.answer);
  handshake(c);
  if (c.conn == Conn::kHandshake) update_status();  // else connected() or fail() did
}

void RpkiService::handshake(Cache& c) {
  StreamIo io = c.stream->handshake();
  switch (io.kind) {
    case StreamIo::Kind::kDone: connected(c); return;
    case StreamIo::Kind::kWantRead: watch(c, EV_READ); return;
    case StreamIo::Kind::kWantWrite: watch(c, EV_WRITE); return;
    case StreamIo::Kind::kClosed: fail(c, "closed by the cache during the handshake"); return;
    case StreamIo::Kind::kError: fail(c, io.error); return;
  }
}

void RpkiService::watch(Cache& c, int events) {
  if (c.io.events == events && ev_is_active(&c.io)) return;
  ev_io_stop(loop_, &c.io);
  ev_io_set(&c.io, c.fd, events);
  ev_io_start(loop_, &c.io);
}

void RpkiService::connected(Cache& c) {
  c.conn = Conn::kUp;
  c.ever_synced = false;
  watch(c, EV_READ);
  log(LogLevel::kInfo, "rpki-connected", {{"cache", c.name}, {"transport", c.stream->name()}});
  step(c, rpki::Connected{});
}

void RpkiService::readable(Cache& c) {
  std::vector<std::byte> buf(kReadBytes);
  c.read_wants_write = false;
  for (int i = 0; i < kReadsPerWakeup && c.conn == Conn::kUp; ++i) {
    StreamIo io = c.stream->read(buf);
    if (io.kind == StreamIo::Kind::kDone) {
      step(c, rpki::Received{bytes::Span(buf.data(), io.bytes)});
      continue;
    }
    if (io.kind == StreamIo::Kind::kWantRead) return;
    if (io.kind == StreamIo::Kind::kWantWrite) {
      c.read_wants_write = true;
      watch(c, EV_READ | EV_WRITE);
      return;
    }
    if (c.client.serial_query_unanswered()) {
      // Most likely a restarted cache refusing our session without saying
      // so: ask for everything at once, without the back-off (the client
      // dials again now with a Reset Query; if that is refused too, it is
      // a failure like any other).
      log(LogLevel::kInfo, "rpki-resync", {{"cache", c.name}},
          "the cache closed the connection without answering our Serial Query; reconnecting to ask for "
          "everything again");
      close(c);
      reconsider();
      return;
    }
    fail(c, io.kind == StreamIo::Kind::kClosed ? std::string("closed by the cache") : io.error);
    return;
  }
  // Records the stream holds already do not make the socket readable.
  if (c.conn == Conn::kUp && c.stream->buffered()) ev_feed_event(loop_, &c.io, EV_READ);
  // Reading may have made the transport answer (SSH window adjusts).
  if (c.conn == Conn::kUp && c.stream->write_pending()) watch(c, EV_READ | EV_WRITE);
}

void RpkiService::flush(Cache& c) {
  if (c.stream->write_pending()) {
    StreamIo io = c.stream->push();
    if (io.kind == StreamIo::Kind::kError) {
      fail(c, io.error);
      return;
    }
  }
  while (c.out.unsent() > 0) {
    StreamIo io = c.stream->write(c.out.pending());
    if (io.kind == StreamIo::Kind::kDone) {
      c.out.consume(io.bytes);
      if (c.out.unsent() == 0) c.out.clear();
      continue;
    }
    if (io.kind == StreamIo::Kind::kWantWrite || io.kind == StreamIo::Kind::kWantRead) break;
    fail(c, io.kind == StreamIo::Kind::kClosed ? std::string("closed by the cache") : io.error);
    return;
  }
  const bool more = c.out.unsent() > 0 || c.read_wants_write || c.stream->write_pending();
  watch(c, EV_READ | (more ? EV_WRITE : 0));
}

// Closes the connection, if any; the client is told it went (which asks
// for no action).
void RpkiService::close(Cache& c) {
  if (c.conn == Conn::kDown) return;
  ev_io_stop(loop_, &c.io);
  ev_timer_stop(loop_, &c.answer);
  c.stream.reset();  // before its socket closes (TLS sends close_notify)
  ::close(c.fd);
  c.fd = -1;
  c.read_wants_write = false;
  c.out.clear();
  const bool was_up = c.conn == Conn::kUp;
  c.conn = Conn::kDown;
  c.ever_synced = false;
  const size_t held_before = c.client.held_bytes();
  if (was_up) (void)c.client.step(rpki::Disconnected{}, now_ms());
  arm_deadline(c);
  released(held_before, c.client.held_bytes());
}

void RpkiService::fail(Cache& c, std::string_view why) {
  close(c);
  c.failed = true;
  c.last_error = why;
  ++c.failures;
  double wait = c.backoff.next();
  ev_timer_stop(loop_, &c.redial);
  ev_timer_set(&c.redial, wait, 0);
  ev_timer_start(loop_, &c.redial);
  log(LogLevel::kWarn, "rpki-cache-failed",
      {{"cache", c.name}, {"retry_in_ms", static_cast<int64_t>(wait * 1000)}}, why);
  reconsider();
}

void RpkiService::on_silent(struct ev_loop*, ev_timer* w, int) {
  auto* c = static_cast<Cache*>(w->data);
  if (!((c->conn == Conn::kUp || c->conn == Conn::kHandshake) && !c->ever_synced)) return;
  if (c->conn == Conn::kUp && c->client.first_query_deferred()) {
    // Not asked yet (notify_gap after the last answer, rpki.notify_gap may
    // be longer than this check): the cache's 15 s start again.
    ev_timer_set(w, kFirstAnswerSeconds, 0);
    ev_timer_start(c->owner->loop_, w);
    return;
  }
  c->owner->fail(*c, "no complete answer within 15 s of connecting");
}

void RpkiService::on_dial(struct ev_loop*, ev_timer* w, int) {
  auto* c = static_cast<Cache*>(w->data);
  if (c->owner->wanted(c->index)) c->owner->dial(*c);
}

void RpkiService::on_deadline(struct ev_loop*, ev_timer* w, int) {
  auto* c = static_cast<Cache*>(w->data);
  c->owner->step(*c, rpki::Tick{});
}

void RpkiService::arm_deadline(Cache& c) {
  ev_timer_stop(loop_, &c.deadline);
  if (!running_) return;
  auto d = c.client.next_deadline();
  if (!d) return;
  double wait = std::chrono::duration<double>(*d - now_ms()).count();
  ev_timer_set(&c.deadline, std::max(wait, 0.0), 0);
  ev_timer_start(loop_, &c.deadline);
}

void RpkiService::step(Cache& c, const rpki::ClientEvent& ev) {
  const size_t held_before = c.client.held_bytes();
  rpki::ClientActions actions = c.client.step(ev, now_ms());
  std::optional<std::string> failure;
  bool fallback = false, resync = false, reconnect = false;
  for (auto& a : actions) {
    if (auto* s = std::get_if<rpki::SendBytes>(&a)) {
      if (c.conn == Conn::kUp) c.out.append(std::span<const std::byte>(s->bytes));
    } else if (auto* cl = std::get_if<rpki::CloseConnection>(&a)) {
      if (cl->reason == rpki::CloseReason::kVersionFallback)
        fallback = true;
      else if (cl->reason == rpki::CloseReason::kResynchronise)
        resync = true;
      else if (cl->reason == rpki::CloseReason::kTimedOut)
        failure = "no complete answer within rpki.answer_timeout";
      else
        failure = cl->reason == rpki::CloseReason::kErrorSent ? "error report sent" : "error report received";
    } else if (std::holds_alternative<rpki::Reconnect>(a)) {
      reconnect = true;
    } else if (auto* u = std::get_if<rpki::ApplyUpdate>(&a)) {
      ++c.updates;
      if (u->reset || !u->announced.empty() || !u->withdrawn.empty() || !u->aspas_announced.empty() ||
          !u->aspas_withdrawn.empty() || !c.ever_synced)
        ++c.data_generation;
      c.ever_synced = true;
      ev_timer_stop(loop_, &c.answer);
      c.last_update_unix_ms = unix_ms();
      log(LogLevel::kInfo, u->reset ? "rpki-reset" : "rpki-update",
          {{"cache", c.name}, {"session_id", u->session_id}, {"serial", u->serial},
           {"announced", u->announced.size()}, {"withdrawn", u->withdrawn.size()},
           {"vrps", c.client.vrps().size()}, {"router_keys", c.client.router_keys().size()},
           {"aspas", c.client.aspas().size()}});
    } else if (std::holds_alternative<rpki::DataExpired>(a)) {
      ++c.data_generation;
      log(LogLevel::kWarn, "rpki-expired", {{"cache", c.name}},
          "the cache did not confirm its data within the expire interval");
    } else if (auto* d = std::get_if<rpki::Diagnostic>(&a)) {
      log(LogLevel::kWarn, "rpki-diagnostic", {{"cache", c.name}, {"code", static_cast<int>(d->code)}}, d->text);
    }
  }
  if (c.conn == Conn::kUp && c.out.unsent() > 0) flush(c);  // may fail the cache
  if (failure && c.conn != Conn::kDown) {
    fail(c, *failure);  // after the Error Report went out
    return;
  }
  if (fallback) {
    log(LogLevel::kInfo, "rpki-version-fallback", {{"cache", c.name}, {"version", c.client.version()}});
    close(c);  // the client asks for a Reconnect at its next deadline (now)
  }
  if (resync) {
    log(LogLevel::kInfo, "rpki-resync", {{"cache", c.name}},
        "the cache rejected our session; reconnecting to ask for everything again");
    close(c);  // likewise, without waiting for the back-off
  }
  if (c.in_sync() && c.failed) {
    c.failed = false;
    c.backoff.reset();
    ev_timer_stop(loop_, &c.redial);
  }
  // The client's own Reconnect (after a fallback, or its retry interval):
  // taken when the back-off does not hold this cache.
  if (reconnect && c.conn == Conn::kDown && !ev_is_active(&c.redial) && wanted(c.index)) dial(c);
  arm_deadline(c);
  reconsider();
  released(held_before, c.client.held_bytes());
}

// After a cache let go of much memory (an abandoned or refused answer, a
// flush, expired data, a set replaced): hand the pages back to the kernel
// now rather than after the allocator's decay time.
void RpkiService::released(size_t before, size_t after) {
  constexpr size_t kWorthPurging = size_t{64} << 20;
  if (before > after + kWorthPurging) release_free_memory();
}

// Which caches to keep connected: each one up to and including the first
// that has not failed (failed ones redial on their back-off timers), and
// none after one in sync.
size_t RpkiService::last_wanted() const {
  size_t last = caches_.empty() ? 0 : caches_.size() - 1;
  for (size_t i = 0; i < caches_.size(); ++i) {
    if (!caches_[i]->failed || caches_[i]->in_sync()) {
      last = i;
      break;
    }
  }
  return last;
}

void RpkiService::reconsider() {
  if (!running_) return;
  const size_t last = last_wanted();
  for (size_t i = 0; i < caches_.size(); ++i) {
    Cache& c = *caches_[i];
    if (i > last) {
      if (c.conn != Conn::kDown) {
        log(LogLevel::kInfo, "rpki-disconnect", {{"cache", c.name}}, "a more preferred cache is in use");
        close(c);
      }
      ev_timer_stop(loop_, &c.redial);
      c.failed = false;
      c.backoff.reset();
      continue;
    }
    if (c.conn == Conn::kDown && !ev_is_active(&c.redial)) dial(c);
  }
  publish_if_changed();
  update_status();
}

void RpkiService::publish_if_changed() {
  int source = -1;
  for (size_t i = 0; i < caches_.size(); ++i) {
    if (caches_[i]->in_sync()) {
      source = static_cast<int>(i);
      break;
    }
  }
  if (source < 0) {
    for (size_t i = 0; i < caches_.size(); ++i) {
      if (caches_[i]->client.has_data()) {
        source = static_cast<int>(i);
        break;
      }
    }
  }
  uint64_t generation = source >= 0 ? caches_[static_cast<size_t>(source)]->data_generation : 0;
  if (source == published_ && generation == published_data_) return;
  if (source != published_) {
    log(LogLevel::kInfo, "rpki-source",
        {{"from", published_ >= 0 ? caches_[static_cast<size_t>(published_)]->name : std::string("none")},
         {"to", source >= 0 ? caches_[static_cast<size_t>(source)]->name : std::string("none")}},
        source < 0 ? "no cache holds data: every route is not found"
                   : (published_ < 0 ? "first data" : "failover"));
  }
  published_ = source;
  published_data_ = generation;
  VrpDelta d;
  if (source >= 0) {
    Cache& c = *caches_[static_cast<size_t>(source)];
    rpki::SlurmFilter::Applied a = slurm_.apply(c.client.vrps());
    rpki::SlurmFilter::AppliedAspas aa = slurm_.apply_aspas(c.client.aspas());
    d = store_.publish(std::move(a.vrps), c.name, c.client.serial(), unix_ms(), aa.aspas,
                       {a.removed, a.added, aa.removed, aa.added});
  } else {
    d = store_.publish({}, {}, std::nullopt, unix_ms());
  }
  auto snap = store_.current();
  log(LogLevel::kInfo, "rpki-published",
      {{"source", snap->source.empty() ? std::string("none") : snap->source}, {"vrps_v4", snap->v4},
       {"vrps_v6", snap->v6}, {"aspas", snap->aspas}, {"announced", d.announced.size()},
       {"withdrawn", d.withdrawn.size()}, {"slurm_removed", snap->slurm_removed}, {"slurm_added", snap->slurm_added},
       {"slurm_aspas_removed", snap->slurm_aspas_removed}, {"slurm_aspas_added", snap->slurm_aspas_added}});
  if (changed_ && (!d.announced.empty() || !d.withdrawn.empty() || !d.aspa_customers.empty())) changed_(d);
}

void RpkiService::update_status() {
  std::vector<RpkiCacheStatus> st;
  for (size_t i = 0; i < caches_.size(); ++i) {
    const Cache& c = *caches_[i];
    RpkiCacheStatus s;
    s.name = c.name;
    s.preference = c.config.preference;
    switch (c.conn) {
      case Conn::kDown: s.state = "down"; break;
      case Conn::kConnecting: s.state = "connecting"; break;
      case Conn::kHandshake: s.state = "handshake"; break;  // TLS, SSH
      case Conn::kUp: s.state = std::string(rpki::state_name(c.client.state())); break;
    }
    s.in_sync = c.in_sync();
    s.failed = c.failed;
    s.active = static_cast<int>(i) == published_;
    s.version = c.client.version();
    s.session_id = c.client.session_id();
    s.serial = c.client.serial();
    s.vrps = c.client.vrps().size();
    s.aspas = c.client.aspas().size();
    s.refresh = c.client.intervals().refresh;
    s.retry = c.client.intervals().retry;
    s.expire = c.client.intervals().expire;
    s.last_update_unix_ms = c.last_update_unix_ms;
    s.updates = c.updates;
    s.connects = c.connects;
    s.failures = c.failures;
    s.transport = std::string(transport_name(c.config.transport));
    s.last_error = c.last_error;
    st.push_back(std::move(s));
  }
  std::lock_guard lock(status_mu_);
  status_ = std::move(st);
}

}  // namespace petrel::daemon

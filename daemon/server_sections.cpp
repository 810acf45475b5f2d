// The sections a reload changes live (Server::apply_sections;
// docs/operations.md, "Reloads"): [log], [rpki], [kernel] and [http], each
// replaced without touching a BGP session.
//
// [kernel] moves Petrel's routes with no moment when a prefix has none.
// To another table or metric: a second syncer starts beside the running
// one (each sees only the routes of its own table and metric, and the new
// one leaves the nexthop objects it finds alone: fib/plan.h), and the old
// one stops, removing its routes, once the new one has installed what the
// table wants. In the same table with the same metric (multipath,
// nexthop_objects): the running syncer stops keeping its routes and a new
// one takes them over, as after a restart, replacing in place those that
// differ. Turned off, the routes go; turned on, they are installed. The
// steps run on a main-loop timer: nothing here waits for the kernel.
//
// [rpki]: the caches are changed in place (RpkiService::reconfigure), the
// validator is switched on or off with a revalidation of every route, and
// reject_invalid chooses best paths again (Table::set_reject_invalid).
// [http]: run.cpp's hook (ServerOptions::reload_http). [log]: the format
// and level, unless the command line set them.
#include <chrono>

#include "daemon/server.h"

namespace petrel::daemon {

namespace {

constexpr double kKernelStepSeconds = 0.1;
// A new syncer still installing after this long is logged (once): the
// old routes stay until it is done, however long that takes.
constexpr double kKernelSlowSeconds = 60;

// Two [kernel] sections that install the same: off is off, whatever else.
bool same_kernel(const KernelConfig& a, const KernelConfig& b) { return (!a.enabled && !b.enabled) || a == b; }

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void Server::apply_sections(const Config& next, ReloadPlan& plan) {
  if (running_.log != next.log) {
    const LogFormat format = options_.log_format.value_or(next.log.format);
    const LogLevel level = options_.log_level.value_or(next.log.level);
    log_reconfigure(format, level);
    log(LogLevel::kInfo, "reload-log",
        {{"format", std::string(log_format_name(format))}, {"level", std::string(log_level_name(level))}},
        options_.log_format || options_.log_level ? "--log-format and --log-level on the command line win over [log]"
                                                  : "");
  }
  if (running_.rpki != next.rpki) apply_rpki(next.rpki);
  if (!same_kernel(kernel_in_effect(), next.kernel)) apply_kernel(next.kernel);
  const HttpConfig http = http_in_effect_ ? *http_in_effect_ : running_.http;
  if (http != next.http) {
    if (!options_.reload_http) {
      plan.restart_keys.emplace_back("http");
      log(LogLevel::kWarn, "reload-needs-restart", {{"keys", "http"}}, "these changes take effect when petrel restarts");
    } else if (std::string err = options_.reload_http(next); !err.empty()) {
      // Kept as it was; the next reload tries again.
      http_in_effect_ = http;
      log(LogLevel::kError, "reload-http-failed",
          {{"listen", next.http.listen ? next.http.listen->to_string() : std::string()}},
          err + "; the HTTP server stays as it was");
    } else {
      http_in_effect_.reset();
    }
  }
}

// ---- [rpki]

std::unique_ptr<RpkiService> Server::make_rpki(const RpkiConfig& c) {
  return std::make_unique<RpkiService>(c, loop_, vrps_, [this](const VrpDelta& d) {
    if (!d.announced.empty() || !d.withdrawn.empty()) {
      DeltaCover cover(d);
      revalidate([&](const net::Prefix& p) { return cover.covers(p); }, "vrps");
    }
    if (!d.aspa_customers.empty()) reverify_paths(d.aspa_customers);
    // Import policies that ask the states see the new data through a
    // ROUTE-REFRESH (Peer::rpki_changed).
    if (!d.announced.empty() || !d.withdrawn.empty() || !d.aspa_customers.empty())
      for (const std::shared_ptr<Peer>& peer : peers_) peer->worker().post([peer] { peer->rpki_changed(); });
  });
}

void Server::revalidate(const std::function<bool(const net::Prefix&)>& covered, std::string_view why) {
  auto t0 = std::chrono::steady_clock::now();
  uint64_t n = table_.revalidate(covered);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  log(LogLevel::kInfo, "rpki-revalidated",
      {{"routes_changed", n}, {"ms", static_cast<int64_t>(ms.count())}, {"reason", std::string(why)}});
}

// Past this many changed customers (the first set, a cache reset) every
// checked route is verified again: cheaper than a search per AS.
constexpr size_t kEveryPath = 4096;

void Server::reverify_paths(const std::vector<uint32_t>& customers) {
  auto t0 = std::chrono::steady_clock::now();
  const bool every = customers.size() > kEveryPath;
  uint64_t n = table_.reverify_paths([&](const table::Attrs& a) {
    if (every) return true;
    for (const codec::AsSegmentView& seg : a.as_path_segments())
      for (size_t i = 0; i < seg.count; ++i)
        if (std::binary_search(customers.begin(), customers.end(), seg.at(i))) return true;
    return false;
  });
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  log(LogLevel::kInfo, "aspa-reverified",
      {{"customers_changed", static_cast<uint64_t>(customers.size())}, {"routes_changed", n},
       {"ms", static_cast<int64_t>(ms.count())}});
}

void Server::apply_rpki(const RpkiConfig& next) {
  if (table_.reject_aspa_invalid() != next.reject_aspa_invalid) {
    const uint64_t n = table_.set_reject_aspa_invalid(next.reject_aspa_invalid);
    log(LogLevel::kInfo, "rpki-reject-aspa-invalid",
        {{"reject_aspa_invalid", next.reject_aspa_invalid}, {"best_changed", n}},
        "best paths chosen again where a route is ASPA-invalid");
  }
  if (table_.reject_invalid() != next.reject_invalid) {
    const uint64_t n = table_.set_reject_invalid(next.reject_invalid);
    log(LogLevel::kInfo, "rpki-reject-invalid", {{"reject_invalid", next.reject_invalid}, {"best_changed", n}},
        "best paths chosen again where a route is RPKI-invalid");
  }
  auto every = [](const net::Prefix&) { return true; };
  if (next.caches.empty()) {
    if (!rpki_) return;
    // RPKI off, as at a start without caches: no VRPs, every route
    // unchecked.
    std::unique_ptr<RpkiService> gone;
    {
      std::lock_guard lock(sections_mu_);
      gone = std::move(rpki_);
    }
    gone.reset();  // its connections close
    validator_.set_enabled(false);
    (void)vrps_.publish({}, {}, std::nullopt, unix_ms());
    revalidate(every, "rpki-off");
    log(LogLevel::kInfo, "rpki-stopped", {},
        "no [[rpki.cache]] left: the VRPs are cleared and every route is unchecked, as without RPKI");
    return;
  }
  if (rpki_) {
    rpki_->reconfigure(next);
    return;
  }
  // RPKI on: every route is not found until the first VRPs come.
  validator_.set_enabled(true);
  revalidate(every, "rpki-on");
  auto service = make_rpki(next);
  {
    std::lock_guard lock(sections_mu_);
    rpki_ = std::move(service);
  }
  rpki_->start();
}

// ---- [kernel]

KernelConfig Server::kernel_in_effect() const {
  if (kernel_target_) return *kernel_target_;
  if (kernel_next_) return kernel_next_->config();
  if (kernel_) return kernel_->config();
  return KernelConfig{};  // off
}

void Server::apply_kernel(const KernelConfig& next) {
  kernel_target_ = next;
  log(LogLevel::kInfo, "kernel-reload",
      {{"enabled", next.enabled}, {"table", next.table}, {"metric", next.metric}, {"multipath", next.multipath},
       {"nexthop_objects", next.nexthop_objects}});
  kernel_step();
}

void Server::on_kernel_step(struct ev_loop*, ev_timer* w, int) { static_cast<Server*>(w->data)->kernel_step(); }

void Server::kernel_step() {
  if (shutting_down_) {  // the syncers stop with the daemon
    ev_timer_stop(loop_, &kernel_timer_);
    return;
  }
  auto retire = [this](std::unique_ptr<KernelSyncer> k) {
    k->request_stop(KernelSyncer::Stop::kRemove);
    kernel_retired_.push_back(std::move(k));
  };
  auto replace_running = [this](std::unique_ptr<KernelSyncer> k) {
    std::lock_guard lock(sections_mu_);
    std::swap(kernel_, k);
    return k;
  };
  std::erase_if(kernel_retired_, [](const std::unique_ptr<KernelSyncer>& k) { return k->finished(); });
  const double now = ev_now(loop_);
  if (kernel_next_) {
    const KernelStatus st = kernel_next_->status();
    if (kernel_target_ && !same_kernel(*kernel_target_, kernel_next_->config())) {
      // A later reload wants something else; this one replaced nothing.
      log(LogLevel::kInfo, "kernel-reload-abandoned", {{"table", st.table}, {"metric", st.metric}},
          "a later reload changed [kernel] again");
      retire(std::move(kernel_next_));
    } else if (st.caught_up) {
      log(LogLevel::kInfo, "kernel-reloaded",
          {{"table", st.table}, {"metric", st.metric}, {"installed", st.counts.installed},
           {"ms", static_cast<int64_t>((now - kernel_next_since_) * 1000)}},
          "every route is in the new table or with the new metric; the old ones are being removed");
      retire(replace_running(std::move(kernel_next_)));
    } else if (kernel_next_->finished()) {
      log(LogLevel::kError, "kernel-reload-failed", {{"table", st.table}, {"metric", st.metric}},
          st.last_error + "; the routes stay as they were (a reload tries again)");
      kernel_next_.reset();
    } else if (!kernel_wait_logged_ && now - kernel_next_since_ > kKernelSlowSeconds) {
      kernel_wait_logged_ = true;
      log(LogLevel::kWarn, "kernel-reload-slow", {{"pending", st.counts.pending}, {"installed", st.counts.installed}},
          "the new routes are still being installed; the old ones stay until they are");
    }
  }
  if (kernel_target_ && !kernel_next_) {
    const KernelConfig want = *kernel_target_;
    std::vector<PeerConfig> peers;  // the peers now (their interfaces, for link-local next hops)
    for (const auto& p : peers_) peers.push_back(p->config());
    if (!want.enabled) {
      kernel_target_.reset();
      if (auto old = replace_running(nullptr)) {
        retire(std::move(old));
        log(LogLevel::kInfo, "kernel-disabled", {}, "[kernel] is off: Petrel's routes leave the kernel");
      }
    } else if (kernel_ && kernel_->config() == want) {
      kernel_target_.reset();  // back to what runs
    } else if (!kernel_retired_.empty()) {
      // A syncer still removing its routes (and nexthop objects) would
      // meet the new one's: it finishes first.
    } else if (kernel_ && !kernel_->status().deferred.empty()) {
      // Petrel's own restart: the kernel keeps the routes of before until
      // the peers' End-of-RIB (or the selection deferral time); the change
      // waits for that.
      if (!kernel_wait_logged_)
        log(LogLevel::kInfo, "kernel-reload-deferred", {},
            "Petrel's own graceful restart defers kernel changes: [kernel] changes when that ends");
      kernel_wait_logged_ = true;
    } else {
      kernel_target_.reset();
      kernel_wait_logged_ = false;
      auto k = std::make_unique<KernelSyncer>(want, table_, peers, &nexthops_);
      KernelRestart how;
      if (kernel_ && (kernel_->config().table != want.table || kernel_->config().metric != want.metric)) {
        how.reload = KernelRestart::Reload::kBeside;
        k->start(how);
        kernel_next_ = std::move(k);
        kernel_next_since_ = now;
      } else {
        // Nothing runs, or the same table and metric: the routes there
        // are taken over (the running syncer stops keeping them).
        how.reload = KernelRestart::Reload::kInPlace;
        if (kernel_) kernel_->stop(KernelSyncer::Stop::kKeep);
        k->start(how);
        (void)replace_running(std::move(k));
      }
    }
  }
  const bool busy = kernel_next_ || kernel_target_ || !kernel_retired_.empty();
  if (busy && !ev_is_active(&kernel_timer_)) {
    ev_timer_init(&kernel_timer_, &Server::on_kernel_step, kKernelStepSeconds, kKernelStepSeconds);
    kernel_timer_.data = this;
    ev_timer_start(loop_, &kernel_timer_);
  } else if (!busy) {
    ev_timer_stop(loop_, &kernel_timer_);
  }
}

}  // namespace petrel::daemon

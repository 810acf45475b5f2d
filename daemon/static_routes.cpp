// [[static]] routes in the kernel (daemon/static_routes.h).
#include "daemon/static_routes.h"

#include <algorithm>
#include <cstring>

#include "daemon/kernel_origin.h"
#include "daemon/log.h"

namespace petrel::daemon {
namespace {

constexpr double kRetrySeconds = 10;  // refused routes tried again; the status logged

}  // namespace

StaticRoutes::StaticRoutes(struct ev_loop* loop, const KernelConfig& kernel, std::vector<StaticRouteConfig> routes)
    : loop_(loop), table_(kernel.table), metric_(kernel.static_metric), routes_(std::move(routes)) {}

StaticRoutes::~StaticRoutes() {
  ev_io_stop(loop_, &io_);
  ev_timer_stop(loop_, &timer_);
}

bool StaticRoutes::start() {
  fib::DriverOptions o;
  KernelConfig k;
  k.table = table_;
  k.static_metric = metric_;
  o.plan = static_plan_options(k);
  o.nexthop_objects = false;
  auto opened = fib::Driver::open(o);
  if (!opened) {
    log(LogLevel::kError, "static-failed", {}, opened.error().text());
    return false;
  }
  if (auto r = (*opened)->start(); !r) {
    log(LogLevel::kError, "static-failed", {}, r.error().text());
    return false;
  }
  driver_ = std::move(*opened);
  const uint64_t found = driver_->plan().counts().installed;
  want_all();
  driver_->plan().allow_removals();  // the configuration is the whole truth: ours not in it go
  sync();
  ev_io_init(&io_, &StaticRoutes::on_notify, driver_->notify_fd(), EV_READ);
  io_.data = this;
  ev_io_start(loop_, &io_);
  ev_timer_init(&timer_, &StaticRoutes::on_timer, kRetrySeconds, kRetrySeconds);
  timer_.data = this;
  ev_timer_start(loop_, &timer_);
  log(LogLevel::kInfo, "static-started",
      {{"table", table_}, {"metric", metric_}, {"routes", routes_.size()}, {"routes_found", found},
       {"installed", driver_->plan().counts().installed}});
  return true;
}

void StaticRoutes::want_all() {
  fib::Plan& plan = driver_->plan();
  for (const StaticRouteConfig& r : routes_) {
    uint32_t ifindex = 0;
    if (!r.interface.empty()) ifindex = driver_->interfaces().index_of(r.interface).value_or(0);
    plan.want(r.prefix, static_want(r, ifindex));
  }
}

void StaticRoutes::set(std::vector<StaticRouteConfig> routes) {
  if (driver_)
    for (const StaticRouteConfig& r : routes_)
      if (std::none_of(routes.begin(), routes.end(), [&](const StaticRouteConfig& x) { return x.prefix == r.prefix; }))
        driver_->plan().unwant(r.prefix);
  routes_ = std::move(routes);
  if (!driver_) return;
  want_all();
  sync();
}

void StaticRoutes::sync() {
  if (!driver_) return;
  if (auto r = driver_->sync(); !r) last_error_ = r.error().text();
  else if (driver_->plan().last_error() != 0)
    last_error_ = std::string("route refused: ") + std::strerror(-driver_->plan().last_error());
  if (!last_error_.empty() && last_error_ != reported_) {
    reported_ = last_error_;
    log(LogLevel::kWarn, "static-error", {}, last_error_);
  }
}

void StaticRoutes::on_notify(struct ev_loop*, ev_io* w, int) {
  auto* s = static_cast<StaticRoutes*>(w->data);
  auto changed = s->driver_->read_notifications();
  if (!changed) s->last_error_ = changed.error().text();
  else if (*changed) s->want_all();  // an interface named by a route may have come
  s->sync();
}

void StaticRoutes::on_timer(struct ev_loop*, ev_timer* w, int) {
  auto* s = static_cast<StaticRoutes*>(w->data);
  s->driver_->plan().retry_refused();
  s->sync();
}

void StaticRoutes::stop() {
  ev_io_stop(loop_, &io_);
  ev_timer_stop(loop_, &timer_);
  if (!driver_) return;
  const uint64_t before = driver_->plan().counts().installed;
  if (auto r = driver_->remove_all(); !r) log(LogLevel::kError, "static-failed", {}, r.error().text());
  log(LogLevel::kInfo, "static-stopped", {{"routes_removed", before - driver_->plan().counts().installed}});
  driver_.reset();
}

StaticStatus StaticRoutes::status() const {
  StaticStatus s;
  s.running = driver_ != nullptr;
  s.table = table_;
  s.metric = metric_;
  if (driver_) s.counts = driver_->plan().counts();
  s.last_error = last_error_;
  return s;
}

}  // namespace petrel::daemon

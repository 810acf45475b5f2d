// sd_notify(3) for a Type=notify service: see service.h.
#include "daemon/service.h"

#include <systemd/sd-daemon.h>

#include <cstdint>
#include <string>

namespace petrel::daemon::service {

void ready(std::string_view status) {
  const std::string text = "READY=1\nSTATUS=" + std::string(status);
  (void)sd_notify(0, text.c_str());
}

void reloading() { (void)sd_notify(0, "RELOADING=1\nSTATUS=reloading the configuration"); }

void stopping() { (void)sd_notify(0, "STOPPING=1\nSTATUS=stopping"); }

void alive() { (void)sd_notify(0, "WATCHDOG=1"); }

std::optional<double> watchdog_interval() {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return std::nullopt;
  return static_cast<double>(usec) / 1e6;
}

}  // namespace petrel::daemon::service

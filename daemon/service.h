// Petrel under systemd (docs/operations.md, "Running under systemd"): the
// sd_notify(3) protocol of a Type=notify service, through libsystemd.
// Without $NOTIFY_SOCKET (not under systemd) every call does nothing.
#pragma once

#include <optional>
#include <string_view>

namespace petrel::daemon::service {

// READY=1 with a STATUS line: the configuration is loaded and every
// listener is open (after a reload too).
void ready(std::string_view status);
// RELOADING=1: a reload begins (READY=1 follows when it is done).
void reloading();
// STOPPING=1: the shutdown begins.
void stopping();
// WATCHDOG=1: the main loop is alive.
void alive();
// The watchdog's interval when systemd asks for keep-alives
// (WatchdogSec=, $WATCHDOG_USEC), in seconds; nothing when it does not.
std::optional<double> watchdog_interval();

}  // namespace petrel::daemon::service

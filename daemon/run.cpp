// `petrel run`: the daemon in the foreground. For now it only loads and
// checks the configuration: the event loop, listeners and sessions are not
// built yet, and it says so rather than pretend to run.
#include "daemon/run.h"

#include <fmt/format.h>

#include <cstdio>
#include <string_view>

#include "daemon/cli.h"
#include "daemon/config.h"

namespace petrel::daemon {

namespace {

constexpr std::string_view kUsage =
    "usage: petrel run [-c FILE]\n"
    "  Runs the daemon in the foreground with the configuration FILE\n"
    "  (default /etc/petrel/petrel.toml).\n";

}  // namespace

int run_main(int argc, char** argv) {
  CommandLine cl;
  if (int rc = parse_command_line(argc, argv, kUsage, {}, cl); rc != kContinue) return rc;
  auto cfg = load_config(cl.config_path);
  if (!cfg) {
    print_config_errors(cfg.error());
    return kExitFailure;
  }
  fmt::print(stderr, "petrel run: the daemon is not built yet\n");
  return kExitFailure;
}

}  // namespace petrel::daemon

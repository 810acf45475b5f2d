// The `petrel` program: a small dispatcher to one file per subcommand.
// Exit codes: 0 success, 1 the command failed, 2 a usage error.
#include <fmt/format.h>

#include <cstdio>
#include <string_view>

#include "daemon/check.h"
#include "daemon/cli.h"
#include "daemon/decode.h"
#include "daemon/run.h"

namespace {

constexpr std::string_view kUsage =
    "usage: petrel COMMAND [OPTIONS]\n"
    "\n"
    "commands:\n"
    "  run -c FILE             run the daemon in the foreground\n"
    "  check -c FILE [--dump]  validate a configuration file\n"
    "  decode ...              decode BGP messages given as hex, to JSON\n"
    "  show ...                query a running daemon over its HTTP API\n"
    "  help                    this text\n"
    "\n"
    "options:\n"
    "  --version               print the version\n"
    "  -c, --config FILE       configuration file (default /etc/petrel/petrel.toml)\n"
    "\n"
    "`petrel COMMAND --help` describes a command.\n";

int show_main(int /*argc*/, char** /*argv*/) {
  fmt::print(stderr, "petrel show: not built yet (it needs the daemon's HTTP API)\n");
  return petrel::daemon::kExitFailure;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace petrel::daemon;
  if (argc < 2) {
    fmt::print(stderr, "petrel: no command given\n{}", kUsage);
    return kExitUsage;
  }
  std::string_view cmd = argv[1];
  // Each subcommand sees its own name as argv[0].
  int sub_argc = argc - 1;
  char** sub_argv = argv + 1;
  if (cmd == "run") return run_main(sub_argc, sub_argv);
  if (cmd == "check") return check_main(sub_argc, sub_argv);
  if (cmd == "decode") return decode_main(sub_argc, sub_argv);
  if (cmd == "show") return show_main(sub_argc, sub_argv);
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    fmt::print("{}", kUsage);
    return kExitOk;
  }
  if (cmd == "--version" || cmd == "version") {
    fmt::print("petrel {}\n", PETREL_VERSION);
    return kExitOk;
  }
  fmt::print(stderr, "petrel: unknown command \"{}\"\n{}", cmd, kUsage);
  return kExitUsage;
}

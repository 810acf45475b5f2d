// The `petrel` program: a small dispatcher to one file per subcommand.
// Exit codes: 0 success, 1 the command failed, 2 a usage error.
#include <fmt/format.h>

#include <cstdio>
#include <string_view>
#include <vector>

#include "daemon/check.h"
#include "daemon/cli.h"
#include "daemon/ctl.h"
#include "daemon/decode.h"
#include "daemon/run.h"
#include "daemon/show.h"

namespace {

constexpr std::string_view kUsage =
    "usage: petrel COMMAND [OPTIONS]\n"
    "\n"
    "commands:\n"
    "  run -c FILE             run the daemon in the foreground\n"
    "  check -c FILE [--dump]  validate a configuration file\n"
    "  decode ...              decode BGP messages given as hex, to JSON\n"
    "  show ...                query a running daemon over its HTTP API\n"
    "  reload                  reload the running daemon's configuration (control socket)\n"
    "  peer NAME ...           disable, enable, reset or shut down a peer's session\n"
    "  route ...               announce or withdraw an injected route\n"
    "  help [COMMAND]          this text, or a command's\n"
    "\n"
    "options:\n"
    "  --version               print the version\n"
    "  -c, --config FILE       configuration file (default /etc/petrel/petrel.toml)\n"
    "\n"
    "`petrel COMMAND --help` describes a command.\n";

// Runs subcommand cmd with argv[0] its own name. -1: no such command.
int dispatch(std::string_view cmd, int argc, char** argv) {
  using namespace petrel::daemon;
  if (cmd == "run") return run_main(argc, argv);
  if (cmd == "check") return check_main(argc, argv);
  if (cmd == "decode") return decode_main(argc, argv);
  if (cmd == "show") return show_main(argc, argv);
  if (cmd == "reload" || cmd == "peer" || cmd == "route") return ctl_main(argc, argv);
  return -1;
}

int unknown_command(std::string_view cmd) {
  fmt::print(stderr, "petrel: unknown command \"{}\"\n{}", cmd, kUsage);
  return petrel::daemon::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace petrel::daemon;
  if (argc < 2) {
    fmt::print(stderr, "petrel: no command given\n{}", kUsage);
    return kExitUsage;
  }
  std::string_view cmd = argv[1];
  if (cmd == "help" && argc == 3) {
    // `petrel help check` is `petrel check --help`.
    char help_flag[] = "--help";
    char* help_argv[] = {argv[2], help_flag, nullptr};
    int rc = dispatch(argv[2], 2, help_argv);
    return rc >= 0 ? rc : unknown_command(argv[2]);
  }
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    fmt::print("{}", kUsage);
    return kExitOk;
  }
  if (cmd == "--version" || cmd == "version") {
    fmt::print("petrel {}\n", PETREL_VERSION);
    return kExitOk;
  }
  // `petrel -s SOCKET reload`: the control commands take their socket
  // before the command too.
  if ((cmd == "-s" || cmd == "--socket") && argc >= 4) {
    std::vector<char*> args{argv[3], argv[1], argv[2]};
    for (int i = 4; i < argc; ++i) args.push_back(argv[i]);
    args.push_back(nullptr);
    return ctl_main(static_cast<int>(args.size() - 1), args.data());
  }
  // Each subcommand sees its own name as argv[0].
  int rc = dispatch(cmd, argc - 1, argv + 1);
  return rc >= 0 ? rc : unknown_command(cmd);
}

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
#include "daemon/top.h"

namespace {

constexpr std::string_view kUsage =
    "usage: petrel COMMAND [OPTIONS]\n"
    "\n"
    "commands:\n"
    "  run -c FILE             run the daemon in the foreground\n"
    "  check -c FILE [--dump]  validate a configuration file\n"
    "  decode ...              decode BGP messages given as hex, to JSON\n"
    "  show ...                query a running daemon over its HTTP API\n"
    "  top ...                 a live view of the peers, their rates and the memory\n"
    "  policy test ...         a dry run of a policy against the running daemon's table\n"
    "  reload                  reload the running daemon's configuration (control socket)\n"
    "  peer NAME ...           disable, enable, reset or shut down a peer's session\n"
    "  route ...               announce or withdraw an injected route\n"
    "  dump [FILE]             write the routing table as an MRT file (control socket)\n"
    "  help [COMMAND]          this text, or a command's\n"
    "\n"
    "options (before or after the command):\n"
    "  --version               print the version\n"
    "  -c, --config FILE       configuration file (default /etc/petrel/petrel.toml)\n"
    "  -s, --socket PATH       the control socket (reload, peer, route, dump)\n"
    "\n"
    "`petrel COMMAND --help` describes a command.\n";

// Runs subcommand cmd with argv[0] its own name. -1: no such command.
int dispatch(std::string_view cmd, int argc, char** argv) {
  using namespace petrel::daemon;
  if (cmd == "run") return run_main(argc, argv);
  if (cmd == "check") return check_main(argc, argv);
  if (cmd == "decode") return decode_main(argc, argv);
  if (cmd == "show") return show_main(argc, argv);
  if (cmd == "top") return top_main(argc, argv);
  if (cmd == "policy") return policy_main(argc, argv);
  if (cmd == "reload" || cmd == "peer" || cmd == "route" || cmd == "dump") return ctl_main(argc, argv);
  return -1;
}

int unknown_command(std::string_view cmd) {
  fmt::print(stderr, "petrel: unknown command \"{}\"\n{}", cmd, kUsage);
  return petrel::daemon::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace petrel::daemon;
  // Global options before the command (`petrel -c FILE check`, `petrel -s
  // SOCKET reload`) go to the command as its own, right after its name;
  // before --version or --help they change nothing (`petrel -c FILE
  // --version` is what an operator's alias or script may type).
  std::vector<char*> global;
  int at = 1;
  while (at < argc) {
    std::string_view a = argv[at];
    if (a.starts_with("--config=")) {
      global.push_back(argv[at++]);
    } else if (a == "-c" || a == "--config" || a == "-s" || a == "--socket") {
      if (at + 1 >= argc) {
        fmt::print(stderr, "petrel: {} needs a value\n{}", a, kUsage);
        return kExitUsage;
      }
      global.push_back(argv[at++]);
      global.push_back(argv[at++]);
    } else {
      break;
    }
  }
  if (at >= argc) {
    fmt::print(stderr, "petrel: no command given\n{}", kUsage);
    return kExitUsage;
  }
  std::string_view cmd = argv[at];
  const int rest = argc - at;  // the command and what follows it
  if (cmd == "help" && rest == 2) {
    // `petrel help check` is `petrel check --help`.
    char help_flag[] = "--help";
    char* help_argv[] = {argv[at + 1], help_flag, nullptr};
    int rc = dispatch(argv[at + 1], 2, help_argv);
    return rc >= 0 ? rc : unknown_command(argv[at + 1]);
  }
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    fmt::print("{}", kUsage);
    return kExitOk;
  }
  if (cmd == "--version" || cmd == "version") {
    fmt::print("petrel {}\n", PETREL_VERSION);
    return kExitOk;
  }
  // Each subcommand sees its own name as argv[0].
  std::vector<char*> args{argv[at]};
  args.insert(args.end(), global.begin(), global.end());
  args.insert(args.end(), argv + at + 1, argv + argc);
  args.push_back(nullptr);
  int rc = dispatch(cmd, static_cast<int>(args.size() - 1), args.data());
  return rc >= 0 ? rc : unknown_command(cmd);
}

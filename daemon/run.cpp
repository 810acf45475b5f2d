// `petrel run -c FILE`: the daemon in the foreground. Loads and checks the
// configuration, sets up logging, binds the listeners, starts the session
// workers and peers, and runs until SIGTERM or SIGINT (exit 0) or a fatal
// error (exit 1). SIGHUP reloads the configuration (Server::reload).
#include "daemon/run.h"

#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/cli.h"
#include "daemon/config.h"
#include "daemon/http.h"
#include "daemon/log.h"
#include "daemon/privileges.h"
#include "daemon/server.h"
#include "daemon/service.h"

namespace petrel::daemon {

namespace {

constexpr std::string_view kUsage =
    "usage: petrel run [-c FILE] [--log-format text|json] [--log-level debug|info|warn|error]\n"
    "  Runs the daemon in the foreground with the configuration FILE\n"
    "  (default /etc/petrel/petrel.toml). --log-format and --log-level\n"
    "  override [log] in the file. SIGHUP reloads FILE (docs/export.md).\n";

// Takes "--NAME VALUE" or "--NAME=VALUE" out of args.
bool take_option(std::vector<char*>& args, std::string_view name, std::string& value, bool& bad) {
  for (size_t i = 1; i < args.size(); ++i) {
    std::string_view a = args[i];
    if (a == name) {
      if (i + 1 >= args.size()) {
        bad = true;
        return false;
      }
      value = args[i + 1];
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i), args.begin() + static_cast<std::ptrdiff_t>(i + 2));
      return true;
    }
    if (a.size() > name.size() && a.substr(0, name.size()) == name && a[name.size()] == '=') {
      value = std::string(a.substr(name.size() + 1));
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
      return true;
    }
  }
  return false;
}

}  // namespace

int run_main(int argc, char** argv) {
  std::vector<char*> args(argv, argv + argc);
  std::string format_text, level_text;
  bool bad = false;
  bool has_format = take_option(args, "--log-format", format_text, bad);
  bool has_level = take_option(args, "--log-level", level_text, bad);
  if (bad) {
    fmt::print(stderr, "petrel run: an option is missing its value\n{}", kUsage);
    return kExitUsage;
  }
  CommandLine cl;
  if (int rc = parse_command_line(static_cast<int>(args.size()), args.data(), kUsage, {}, cl); rc != kContinue)
    return rc;
  auto cfg = load_config(cl.config_path);
  if (!cfg) {
    print_config_errors(cfg.error());
    return kExitFailure;
  }
  LogFormat format = cfg->log.format;
  LogLevel level = cfg->log.level;
  if (has_format && !parse_log_format(format_text, format)) {
    fmt::print(stderr, "petrel run: --log-format must be text or json, not \"{}\"\n", format_text);
    return kExitUsage;
  }
  if (has_level && !parse_log_level(level_text, level)) {
    fmt::print(stderr, "petrel run: --log-level must be debug, info, warn or error, not \"{}\"\n", level_text);
    return kExitUsage;
  }
  log_configure(format, level);
  if (std::string why = refuse_full_root(cfg->router.user); !why.empty()) {
    log(LogLevel::kError, "refused-root", {}, why);
    return kExitFailure;
  }
  HttpServer http;  // bound first: a bad [http] listen fails before any session starts
  if (!http.bind(*cfg)) return kExitFailure;
  ServerOptions options;
  options.config_path = cl.config_path;  // SIGHUP reads it again
  options.after_bind = [user = cfg->router.user] {
    std::string err;
    if (!drop_privileges(user, err)) {
      log(LogLevel::kError, "privileges-failed", {{"user", user}}, err);
      return false;
    }
    if (!user.empty() && user != "root")
      log(LogLevel::kInfo, "privileges-dropped", {{"user", user}},
          "running as this user with CAP_NET_ADMIN and CAP_NET_BIND_SERVICE only");
    return true;
  };
  options.reload_http = [&http](const Config& next) { return http.rebind(next); };
  if (has_format) options.log_format = format;
  if (has_level) options.log_level = level;
  Server server(std::move(cfg).value(), std::move(options));
  if (!server.start()) return kExitFailure;
  if (!http.start(server)) return kExitFailure;
  service::ready("running");
  int rc = server.run();
  http.stop();
  return rc;
}

}  // namespace petrel::daemon

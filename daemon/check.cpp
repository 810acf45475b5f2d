// `petrel check`: loads a configuration, prints every error found or a
// one-line summary, and optionally the normalised dump (docs/configuration.md).
#include "daemon/check.h"

#include <fmt/format.h>
#include <grp.h>
#include <pwd.h>

#include <cstdio>
#include <string>
#include <string_view>

#include "daemon/cli.h"
#include "daemon/config.h"

namespace petrel::daemon {

namespace {

constexpr std::string_view kUsage =
    "usage: petrel check [-c FILE] [--dump]\n"
    "  Validates the configuration FILE (default /etc/petrel/petrel.toml).\n"
    "  --dump  print the effective configuration on stdout: every key, defaults filled in,\n"
    "          unset ones as comments, secrets replaced by a placeholder\n";

// router.user and control.group that this machine does not know: `petrel
// run` would stop at start (privileges-failed, or the control socket's
// group), so say so now. A warning, not an error: the file may be checked
// on another machine than the router.
void warn_of_unknown_accounts(const Config& cfg, const std::string& path) {
  const std::string& user = cfg.router.user;
  if (!user.empty() && user != "root" && ::getpwnam(user.c_str()) == nullptr)
    fmt::print(stderr,
               "warning: {}: router.user: no user named \"{}\" on this machine: petrel run would stop at start "
               "(create it, e.g. adduser --system --group {})\n",
               path, user, user);
  const std::string& group = cfg.control.group;
  if (!group.empty() && ::getgrnam(group.c_str()) == nullptr)
    fmt::print(stderr,
               "warning: {}: control.group: no group named \"{}\" on this machine: petrel run would stop at start\n",
               path, group);
}

}  // namespace

int check_main(int argc, char** argv) {
  CommandLine cl;
  if (int rc = parse_command_line(argc, argv, kUsage, {"--dump"}, cl); rc != kContinue) return rc;

  auto cfg = load_config(cl.config_path);
  if (!cfg) {
    print_config_errors(cfg.error());
    size_t n = cfg.error().size();
    fmt::print(stderr, "petrel check: {} error{} in {}\n", n, n == 1 ? "" : "s", cl.config_path);
    return kExitFailure;
  }
  for (const std::string& w : secret_file_warnings(*cfg)) fmt::print(stderr, "warning: {}\n", w);
  for (const std::string& w : rfc8212_warnings(*cfg)) fmt::print(stderr, "warning: {}: {}\n", cl.config_path, w);
  warn_of_unknown_accounts(*cfg, cl.config_path);
  if (!cfg->rpki.slurm.empty() && cfg->rpki.caches.empty())
    fmt::print(stderr,
               "warning: {}: rpki.slurm: no [[rpki.cache]]: the SLURM files are checked but not used (they amend a "
               "cache's VRPs; docs/rpki.md, \"SLURM\")\n",
               cl.config_path);
  size_t n = cfg->peers.size();
  std::string ok = fmt::format("{}: ok ({} peer{})\n", cl.config_path, n, n == 1 ? "" : "s");
  if (cl.has("--dump")) {
    fmt::print("{}", dump(*cfg));
    fmt::print(stderr, "{}", ok);
  } else {
    fmt::print("{}", ok);
  }
  return kExitOk;
}

}  // namespace petrel::daemon

// Command-line helpers shared by the `petrel` subcommands.
#include "daemon/cli.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace petrel::daemon {

bool CommandLine::has(std::string_view flag) const {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

int parse_command_line(int argc, char** argv, std::string_view usage,
                       std::initializer_list<std::string_view> allowed_flags, CommandLine& out) {
  std::string_view command = argc > 0 ? argv[0] : "petrel";
  auto usage_error = [&](std::string_view what) {
    fmt::print(stderr, "petrel {}: {}\n{}", command, what, usage);
    return kExitUsage;
  };
  constexpr std::string_view kLongEq = "--config=";
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.substr(0, kLongEq.size()) == kLongEq) {
      out.config_path = std::string(arg.substr(kLongEq.size()));
      if (out.config_path.empty()) return usage_error("--config needs a file name");
    } else if (arg == "-c" || arg == "--config") {
      if (i + 1 >= argc) return usage_error(fmt::format("{} needs a file name", arg));
      out.config_path = argv[++i];
    } else if (arg == "-h" || arg == "--help") {
      fmt::print("{}", usage);
      return kExitOk;
    } else if (std::find(allowed_flags.begin(), allowed_flags.end(), arg) != allowed_flags.end()) {
      out.flags.push_back(*std::find(allowed_flags.begin(), allowed_flags.end(), arg));
    } else if (!arg.starts_with('-')) {
      // `petrel check petrel.toml`: the file goes after -c.
      return usage_error(fmt::format("unexpected argument \"{}\" (a configuration file is named with -c: "
                                     "petrel {} -c {})", arg, command, arg));
    } else {
      return usage_error(fmt::format("unexpected argument \"{}\"", arg));
    }
  }
  return kContinue;
}

void print_config_errors(const ConfigErrors& errors) {
  for (const ConfigError& e : errors) fmt::print(stderr, "{}\n", e.to_string());
  // A new user's first run: no file where the default path points.
  std::error_code ec;
  if (errors.size() != 1 || errors[0].line != 0 || std::filesystem::exists(errors[0].file, ec)) return;
  if (errors[0].file == kDefaultConfigPath)
    fmt::print(stderr,
               "there is no configuration at the default path {}: name yours with -c FILE (`petrel check -c "
               "petrel.toml`, `petrel run -c petrel.toml`); docs/examples/minimal.toml is one to start from\n",
               kDefaultConfigPath);
  else
    fmt::print(stderr, "there is no file {}: check the path given with -c (relative paths start in the current "
               "folder)\n", errors[0].file);
}

}  // namespace petrel::daemon

// Shared pieces of the `petrel` subcommands: the command line every
// command that reads a configuration takes, and the exit codes.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/config.h"

namespace petrel::daemon {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the command ran and failed (bad configuration, ...)
inline constexpr int kExitUsage = 2;    // the command line was wrong
inline constexpr int kContinue = -1;    // parse_command_line: go on with the command

inline constexpr std::string_view kDefaultConfigPath = "/etc/petrel/petrel.toml";

struct CommandLine {
  std::string config_path{kDefaultConfigPath};
  std::vector<std::string_view> flags;  // the flags given, from those allowed

  [[nodiscard]] bool has(std::string_view flag) const;
};

// Parses a subcommand's arguments (argv[0] is the subcommand's name):
// "-c FILE", "--config FILE", "--config=FILE", the allowed flags, and
// -h/--help (which prints usage). Returns kContinue, or the status to exit
// with after printing help (kExitOk) or a usage error (kExitUsage).
int parse_command_line(int argc, char** argv, std::string_view usage,
                       std::initializer_list<std::string_view> allowed_flags, CommandLine& out);

// Writes each error on its own line to stderr.
void print_config_errors(const ConfigErrors& errors);

}  // namespace petrel::daemon

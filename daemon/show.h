// `petrel show`: a command-line client of the daemon's HTTP API.
#pragma once

namespace petrel::daemon {
int show_main(int argc, char** argv);
// `petrel policy test`: a dry run of a policy over the HTTP API.
int policy_main(int argc, char** argv);
}

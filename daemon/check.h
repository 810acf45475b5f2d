// `petrel check -c FILE [--dump]`: validates a configuration file.
#pragma once

namespace petrel::daemon {

// Exit 0 when the file is valid ("FILE: ok (N peers)" on stdout, warnings
// such as RFC 8212 peers without a policy on stderr, or with
// --dump the effective configuration on stdout and the ok line on stderr);
// 1 with every error on stderr; 2 for a usage error.
int check_main(int argc, char** argv);

}  // namespace petrel::daemon

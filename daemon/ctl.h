// `petrel reload`, `petrel peer ...`, `petrel route ...`: clients of the
// daemon's control socket (docs/operations.md, "The control channel").
#pragma once

namespace petrel::daemon {

// argv[0] is the command ("reload", "peer" or "route").
int ctl_main(int argc, char** argv);

}  // namespace petrel::daemon

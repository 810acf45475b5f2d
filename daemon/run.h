// `petrel run -c FILE`: the daemon, in the foreground.
#pragma once

namespace petrel::daemon {

int run_main(int argc, char** argv);

}  // namespace petrel::daemon

// `petrel top`: a live view of the running daemon in the terminal, read
// from its HTTP API (docs/operations.md).
#pragma once

namespace petrel::daemon {
int top_main(int argc, char** argv);
}

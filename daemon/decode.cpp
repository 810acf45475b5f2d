// `petrel decode`: placeholder until the decoder command is written.
#include "daemon/decode.h"

#include <cstdio>

int decode_main(int /*argc*/, char** /*argv*/) {
  std::fputs("petrel decode: not built yet\n", stderr);
  return 2;
}

// Generators and helpers shared by the rpki tests (the generators are
// defined in rpki_testing.cpp).
#pragma once

#include <rapidcheck.h>

#include <string>
#include <vector>

#include "crates/bytes/bytes.h"
#include "rpki/pdu.h"

namespace petrel::rpki::testing {

inline std::vector<std::byte> hex(const char* s) { return *bytes::from_hex(s); }

// Any VRP (either family; max length at most 7 past the length).
rc::Gen<Vrp> gen_vrp();
rc::Gen<RouterKey> gen_router_key();
rc::Gen<AspaPdu> gen_aspa_pdu();
// Any message valid in its version.
rc::Gen<Message> gen_message();

}  // namespace petrel::rpki::testing

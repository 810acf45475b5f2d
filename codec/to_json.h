// BGP messages as JSON, for `petrel decode`, the codec benchmark and (later)
// the HTTP API. One object per message; the schema is documented in
// docs/decode.md. Writing appends to a caller's string, so a tool can batch
// many messages into one buffer.
#pragma once

#include <string>

#include "codec/attribute_set.h"
#include "codec/framer.h"
#include "codec/rfc7606.h"
#include "codec/types.h"
#include "crates/bytes/bytes.h"
#include "crates/json/json.h"

namespace petrel::codec {

struct JsonOptions {
  SessionParams params;
  PeerType peer = PeerType::kExternal;
};

// Decodes one whole message (header included) and writes its JSON object
// (no newline). Returns true when it decoded cleanly: no framing error, no
// decoding error, and for an UPDATE no RFC 7606 finding at all.
bool message_to_json(bytes::Span whole, const JsonOptions& opts, json::Writer& w);

// Writes the member "attributes": {...} as message_to_json does for an
// UPDATE (the HTTP API shows a route's attributes the same way).
void attributes_to_json(const PathAttributes& a, json::Writer& w);

}  // namespace petrel::codec

// The byte stream to one RTR cache over its connected, non-blocking
// socket: plain TCP, TLS over it, or an SSH channel (RFC 6810 section 7,
// RFC 8210 section 9; [[rpki.cache]] transport). The RTR protocol (rpki/client.h) knows
// nothing of either: daemon/rpki.cpp hands it the bytes a stream reads and
// gives a stream the bytes it asks to send.
//
// TLS (OpenSSL): version 1.2 or later; the cache's certificate must chain
// to the configured CA file (else the system's trust store) and carry the
// configured server name (else the cache's address, as an IP address
// SubjectAltName). A handshake that fails says why in words an operator
// can act on ("certificate verify failed: unable to get local issuer
// certificate"), which daemon/rpki.cpp logs and shows in /api/rpki.
//
// SSH (libssh): the cache's host key must be the one the configured
// known_hosts file holds for "[address]:port" (or "address" on port 22);
// the user logs in with a private key or a password; the PDUs go over one
// session channel's "rpki-rtr" subsystem.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "daemon/config.h"

namespace petrel::daemon {

// What one call on a stream came to.
struct StreamIo {
  enum class Kind : uint8_t {
    kDone,       // handshake finished; or `bytes` read or written (never 0)
    kWantRead,   // call again when the socket is readable
    kWantWrite,  // call again when the socket is writable
    kClosed,     // the cache closed the stream
    kError,      // `error` says why; the stream is unusable
  };
  Kind kind = Kind::kDone;
  size_t bytes = 0;
  std::string error;
};

class RtrStream {
 public:
  virtual ~RtrStream() = default;
  // Drives the transport's own handshake after the TCP connect; kDone when
  // the stream carries PDUs (at once for plain TCP).
  virtual StreamIo handshake() = 0;
  virtual StreamIo read(std::span<std::byte> into) = 0;
  virtual StreamIo write(std::span<const std::byte> bytes) = 0;
  // Bytes read from the socket already and not yet handed out, which the
  // socket's readiness will not announce again.
  [[nodiscard]] virtual bool buffered() const { return false; }
  // Bytes taken by write() that the transport still holds back (SSH):
  // push() sends them when the socket is writable.
  [[nodiscard]] virtual bool write_pending() const { return false; }
  virtual StreamIo push() { return {}; }
  // "tcp", "tls" or "ssh" (logs).
  [[nodiscard]] virtual std::string_view name() const = 0;
};

// A stream over `fd` (connected; the caller keeps it and closes it after
// the stream is gone) for cache `c`, or nothing with why.
std::unique_ptr<RtrStream> make_rtr_stream(const RpkiCacheConfig& c, int fd, std::string& why);

}  // namespace petrel::daemon

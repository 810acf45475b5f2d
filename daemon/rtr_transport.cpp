// Plain TCP, TLS and SSH streams to RTR caches (daemon/rtr_transport.h).
#include "daemon/rtr_transport.h"

#include <libssh/libssh.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

namespace petrel::daemon {

namespace {

using Kind = StreamIo::Kind;

StreamIo error(std::string why) { return {Kind::kError, 0, std::move(why)}; }

class TcpStream final : public RtrStream {
 public:
  explicit TcpStream(int fd) : fd_(fd) {}
  StreamIo handshake() override { return {}; }
  StreamIo read(std::span<std::byte> into) override {
    for (;;) {
      ssize_t n = ::read(fd_, into.data(), into.size());
      if (n > 0) return {Kind::kDone, static_cast<size_t>(n), {}};
      if (n == 0) return {Kind::kClosed, 0, {}};
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return {Kind::kWantRead, 0, {}};
      return error(std::strerror(errno));
    }
  }
  StreamIo write(std::span<const std::byte> bytes) override {
    for (;;) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n > 0) return {Kind::kDone, static_cast<size_t>(n), {}};
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return {Kind::kWantWrite, 0, {}};
      return error(n == 0 ? std::string("the connection took no bytes") : std::string(std::strerror(errno)));
    }
  }
  [[nodiscard]] std::string_view name() const override { return "tcp"; }

 private:
  int fd_;
};

// OpenSSL's error queue as one line (the most recent reason last), cleared.
std::string openssl_errors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(e);
    std::string text = reason ? reason : fmt::format("error {:#x}", e);
    if (out.find(text) != std::string::npos) continue;
    if (!out.empty()) out += "; ";
    out += text;
  }
  return out;
}

class TlsStream final : public RtrStream {
 public:
  TlsStream(SSL_CTX* ctx, SSL* ssl) : ctx_(ctx), ssl_(ssl) {}
  ~TlsStream() override {
    // close_notify, best effort: the socket is non-blocking and closed next.
    if (established_ && !fatal_) (void)SSL_shutdown(ssl_);
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
  }
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  StreamIo handshake() override {
    ERR_clear_error();
    int r = SSL_do_handshake(ssl_);
    if (r == 1) {
      established_ = true;
      return {};
    }
    StreamIo io = outcome(r);
    if (io.kind == Kind::kClosed) return error("TLS handshake failed: the cache closed the connection");
    if (io.kind == Kind::kError) io.error = "TLS handshake failed: " + io.error;
    return io;
  }
  StreamIo read(std::span<std::byte> into) override {
    ERR_clear_error();
    int n = SSL_read(ssl_, into.data(), static_cast<int>(std::min<size_t>(into.size(), INT_MAX)));
    if (n > 0) return {Kind::kDone, static_cast<size_t>(n), {}};
    return outcome(n);
  }
  StreamIo write(std::span<const std::byte> bytes) override {
    ERR_clear_error();
    int n = SSL_write(ssl_, bytes.data(), static_cast<int>(std::min<size_t>(bytes.size(), INT_MAX)));
    if (n > 0) return {Kind::kDone, static_cast<size_t>(n), {}};
    return outcome(n);
  }
  [[nodiscard]] bool buffered() const override { return SSL_pending(ssl_) > 0; }
  [[nodiscard]] std::string_view name() const override { return "tls"; }

 private:
  // What a call that returned `r` (not success) came to.
  StreamIo outcome(int r) {
    const int saved_errno = errno;
    switch (SSL_get_error(ssl_, r)) {
      case SSL_ERROR_WANT_READ: return {Kind::kWantRead, 0, {}};
      case SSL_ERROR_WANT_WRITE: return {Kind::kWantWrite, 0, {}};
      case SSL_ERROR_ZERO_RETURN: return {Kind::kClosed, 0, {}};
      case SSL_ERROR_SYSCALL: {
        fatal_ = true;
        std::string queued = openssl_errors();
        if (!queued.empty()) return error(queued);
        if (saved_errno == 0) return {Kind::kClosed, 0, {}};
        return error(std::strerror(saved_errno));
      }
      default: break;
    }
    fatal_ = true;
    // A certificate refused: the verifier's own words, which name the
    // cause (unknown issuer, expired, name mismatch), before the queue's.
    const long verify = SSL_get_verify_result(ssl_);
    std::string queued = openssl_errors();
    if (verify != X509_V_OK)
      return error(fmt::format("the cache's certificate was refused: {}", X509_verify_cert_error_string(verify)));
    return error(queued.empty() ? std::string("TLS error") : queued);
  }

  SSL_CTX* ctx_;
  SSL* ssl_;
  bool established_ = false;
  bool fatal_ = false;  // OpenSSL forbids SSL_shutdown after a fatal error
};

// SSL_set_tlsext_host_name without the macro's C cast.
long sni(SSL* ssl, const std::string& name) {
  return SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, const_cast<char*>(name.c_str()));
}

std::unique_ptr<RtrStream> make_tls(const RpkiCacheConfig& c, int fd, std::string& why) {
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) {
    why = "TLS: cannot set up OpenSSL: " + openssl_errors();
    return nullptr;
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // A cache that closes without close_notify has closed the stream, as a
  // plain TCP one would (its PDUs say whether anything was cut short).
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  const bool trusted = c.tls_ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx) == 1
                                             : SSL_CTX_load_verify_locations(ctx, c.tls_ca_file.c_str(), nullptr) == 1;
  if (!trusted) {
    why = fmt::format("TLS: cannot load the CA certificates of {}: {}",
                      c.tls_ca_file.empty() ? std::string("the system's trust store") : c.tls_ca_file,
                      openssl_errors());
    SSL_CTX_free(ctx);
    return nullptr;
  }
  SSL* ssl = SSL_new(ctx);
  if (!ssl) {
    why = "TLS: cannot set up OpenSSL: " + openssl_errors();
    SSL_CTX_free(ctx);
    return nullptr;
  }
  auto stream = std::make_unique<TlsStream>(ctx, ssl);
  SSL_set_fd(ssl, fd);
  SSL_set_connect_state(ssl);
  // The name the certificate must carry: a host name (also sent as SNI),
  // else an IP address as a SubjectAltName iPAddress (RFC 6125).
  const std::string name = c.tls_server_name.empty() ? c.address.to_string() : c.tls_server_name;
  const bool is_ip = net::IpAddress::parse(name).has_value();
  bool ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str()) == 1
                  : SSL_set1_host(ssl, name.c_str()) == 1 && sni(ssl, name) == 1;
  if (!ok) {
    why = fmt::format("TLS: cannot check the certificate against {}: {}", name, openssl_errors());
    return nullptr;
  }
  return stream;
}

// SSH (libssh, non-blocking): the session's handshake, the host key
// checked against the known_hosts file, the user's key or password, then
// one channel with the "rpki-rtr" subsystem (RFC 6810 section 7), which
// carries the PDUs.
class SshStream final : public RtrStream {
 public:
  SshStream(const RpkiCacheConfig& c, ssh_session session, ssh_key key)
      : config_(c), session_(session), key_(key) {}
  ~SshStream() override {
    if (channel_) ssh_channel_free(channel_);
    if (ssh_is_connected(session_)) ssh_disconnect(session_);
    ssh_free(session_);  // leaves the socket open
    if (key_) ssh_key_free(key_);
  }
  SshStream(const SshStream&) = delete;
  SshStream& operator=(const SshStream&) = delete;

  StreamIo handshake() override {
    for (;;) {
      switch (step_) {
        case Step::kConnect: {
          int r = ssh_connect(session_);
          if (r == SSH_AGAIN) return waiting();
          if (r != SSH_OK) return failed("SSH handshake failed: ");
          step_ = Step::kHostKey;
          break;
        }
        case Step::kHostKey: {
          if (auto why = host_key_refused()) return error("SSH handshake failed: " + *why);
          step_ = Step::kAuth;
          break;
        }
        case Step::kAuth: {
          int r = key_ ? ssh_userauth_publickey(session_, nullptr, key_)
                       : ssh_userauth_password(session_, nullptr, config_.ssh_password.c_str());
          if (r == SSH_AUTH_AGAIN) return waiting();
          if (r == SSH_AUTH_ERROR) return failed("SSH login failed: ");
          if (r != SSH_AUTH_SUCCESS)
            return error(fmt::format("SSH login failed: the cache refused user {} with {}", config_.ssh_user,
                                     key_ ? "the key of " + config_.ssh_key_file : std::string("the password")));
          step_ = Step::kChannel;
          break;
        }
        case Step::kChannel: {
          if (!channel_ && !(channel_ = ssh_channel_new(session_))) return failed("SSH: ");
          int r = ssh_channel_open_session(channel_);
          if (r == SSH_AGAIN) return waiting();
          if (r != SSH_OK) return failed("SSH: the cache refused a session channel: ");
          step_ = Step::kSubsystem;
          break;
        }
        case Step::kSubsystem: {
          int r = ssh_channel_request_subsystem(channel_, "rpki-rtr");
          if (r == SSH_AGAIN) return waiting();
          if (r != SSH_OK) return failed("SSH: the cache refused the rpki-rtr subsystem: ");
          step_ = Step::kOpen;
          return {};
        }
        case Step::kOpen: return {};
      }
    }
  }
  StreamIo read(std::span<std::byte> into) override {
    int n = ssh_channel_read_nonblocking(channel_, into.data(),
                                         static_cast<uint32_t>(std::min<size_t>(into.size(), INT_MAX)), 0);
    if (n > 0) return {Kind::kDone, static_cast<size_t>(n), {}};
    if (n == SSH_ERROR) return failed("SSH: ");
    if (n == SSH_EOF || ssh_channel_is_eof(channel_) || ssh_channel_is_closed(channel_)) return {Kind::kClosed, 0, {}};
    return waiting();
  }
  StreamIo write(std::span<const std::byte> bytes) override {
    int n = ssh_channel_write(channel_, bytes.data(), static_cast<uint32_t>(std::min<size_t>(bytes.size(), INT_MAX)));
    if (n > 0) return {Kind::kDone, static_cast<size_t>(n), {}};
    if (n == SSH_ERROR) return failed("SSH: ");
    return {Kind::kWantRead, 0, {}};  // the channel's window is full: the cache's adjust comes to be read
  }
  [[nodiscard]] bool buffered() const override { return channel_ && ssh_channel_poll(channel_, 0) > 0; }
  [[nodiscard]] bool write_pending() const override {
    return (static_cast<unsigned>(ssh_get_poll_flags(session_)) & SSH_WRITE_PENDING) != 0;
  }
  StreamIo push() override {
    int r = ssh_blocking_flush(session_, 0);
    if (r == SSH_ERROR) return failed("SSH: ");
    return r == SSH_OK ? StreamIo{} : StreamIo{Kind::kWantWrite, 0, {}};
  }
  [[nodiscard]] std::string_view name() const override { return "ssh"; }

 private:
  enum class Step : uint8_t { kConnect, kHostKey, kAuth, kChannel, kSubsystem, kOpen };

  StreamIo waiting() const { return {write_pending() ? Kind::kWantWrite : Kind::kWantRead, 0, {}}; }
  StreamIo failed(std::string_view what) const { return error(std::string(what) + ssh_get_error(session_)); }

  // Why the cache's host key is not the one pinned, or nothing.
  std::optional<std::string> host_key_refused() const {
    const std::string& file = config_.ssh_known_hosts;
    switch (ssh_session_is_known_server(session_)) {
      case SSH_KNOWN_HOSTS_OK: return std::nullopt;
      case SSH_KNOWN_HOSTS_CHANGED: return fmt::format("the cache's host key is not the one {} holds for it", file);
      case SSH_KNOWN_HOSTS_OTHER:
        return fmt::format("the cache's host key is of another type than the one {} holds for it", file);
      case SSH_KNOWN_HOSTS_UNKNOWN:
      case SSH_KNOWN_HOSTS_NOT_FOUND: return fmt::format("{} holds no host key for the cache", file);
      case SSH_KNOWN_HOSTS_ERROR: break;
    }
    return fmt::format("cannot check the host key against {}: {}", file, ssh_get_error(session_));
  }

  const RpkiCacheConfig config_;
  ssh_session session_;
  ssh_key key_;
  ssh_channel channel_ = nullptr;
  Step step_ = Step::kConnect;
};

std::unique_ptr<RtrStream> make_ssh(const RpkiCacheConfig& c, int fd, std::string& why) {
  ssh_key key = nullptr;
  if (!c.ssh_key_file.empty() &&
      ssh_pki_import_privkey_file(c.ssh_key_file.c_str(), nullptr, nullptr, nullptr, &key) != SSH_OK) {
    why = fmt::format("SSH: cannot read the private key {}", c.ssh_key_file);
    return nullptr;
  }
  ssh_session session = ssh_new();
  if (!session) {
    if (key) ssh_key_free(key);
    why = "SSH: cannot set up libssh";
    return nullptr;
  }
  auto stream = std::make_unique<SshStream>(c, session, key);
  // libssh (0.10) leaves a socket it was given open when it is freed: the
  // daemon closes it after the stream, as for the other transports.
  int own = fd;
  const std::string host = c.address.to_string();
  const unsigned port = c.port;
  bool no = false;  // libssh reads a bool here
  bool ok = ssh_options_set(session, SSH_OPTIONS_FD, &own) == SSH_OK &&
            ssh_options_set(session, SSH_OPTIONS_HOST, host.c_str()) == SSH_OK &&
            ssh_options_set(session, SSH_OPTIONS_PORT, &port) == SSH_OK &&
            ssh_options_set(session, SSH_OPTIONS_USER, c.ssh_user.c_str()) == SSH_OK &&
            // The pinned host key alone: neither ~/.ssh nor /etc/ssh.
            ssh_options_set(session, SSH_OPTIONS_KNOWNHOSTS, c.ssh_known_hosts.c_str()) == SSH_OK &&
            ssh_options_set(session, SSH_OPTIONS_GLOBAL_KNOWNHOSTS, c.ssh_known_hosts.c_str()) == SSH_OK &&
            ssh_options_set(session, SSH_OPTIONS_PROCESS_CONFIG, &no) == SSH_OK;
  if (!ok) {
    why = fmt::format("SSH: cannot set up libssh: {}", ssh_get_error(session));
    return nullptr;
  }
  ssh_set_blocking(session, 0);
  return stream;
}

}  // namespace

std::unique_ptr<RtrStream> make_rtr_stream(const RpkiCacheConfig& c, int fd, std::string& why) {
  switch (c.transport) {
    case RtrTransport::kTcp: return std::make_unique<TcpStream>(fd);
    case RtrTransport::kTls: return make_tls(c, fd, why);
    case RtrTransport::kSsh: return make_ssh(c, fd, why);
  }
  return nullptr;
}

}  // namespace petrel::daemon

// The byte streams to RTR caches (daemon/rtr_transport.h) over a socket
// pair: plain TCP's reads, writes and end; TLS against an OpenSSL server
// in the test, with a CA and certificates made here: the handshake and
// bytes both ways with the right CA, and the verifier's reason for another
// CA and another name. (SSH and TLS against a real cache:
// tests/integration/test_rtr_transports.py.)
#include "daemon/rtr_transport.h"

#include <gtest/gtest.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace petrel::daemon {
namespace {

using Kind = StreamIo::Kind;

std::span<const std::byte> as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

struct SocketPair {
  int fd[2] = {-1, -1};
  SocketPair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fd), 0); }
  ~SocketPair() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
  void close_server() {
    ::close(fd[1]);
    fd[1] = -1;
  }
};

TEST(RtrTransport, TcpReadsWritesAndSeesTheEnd) {
  SocketPair sp;
  RpkiCacheConfig c;
  std::string why;
  auto s = make_rtr_stream(c, sp.fd[0], why);
  ASSERT_TRUE(s) << why;
  EXPECT_EQ(s->name(), "tcp");
  EXPECT_EQ(s->handshake().kind, Kind::kDone);
  std::vector<std::byte> buf(64);
  EXPECT_EQ(s->read(buf).kind, Kind::kWantRead);
  StreamIo w = s->write(as_bytes("query"));
  ASSERT_EQ(w.kind, Kind::kDone);
  EXPECT_EQ(w.bytes, 5u);
  char got[8] = {};
  EXPECT_EQ(::read(sp.fd[1], got, sizeof got), 5);
  EXPECT_EQ(::write(sp.fd[1], "answer", 6), 6);
  StreamIo r = s->read(buf);
  ASSERT_EQ(r.kind, Kind::kDone);
  EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(buf.data()), r.bytes), "answer");
  sp.close_server();
  EXPECT_EQ(s->read(buf).kind, Kind::kClosed);
}

// ---- TLS: a CA, a certificate for the cache, and an OpenSSL server

struct Pki {
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  ~Pki() {
    X509_free(cert);
    EVP_PKEY_free(key);
  }
};

void add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  ASSERT_NE(ext, nullptr);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A certificate for `cn` signed by `issuer` (self-signed when null), a CA
// or with the SubjectAltNames `san`.
void make_cert(Pki& out, const char* cn, const Pki* issuer, const char* san) {
  out.key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  ASSERT_NE(out.key, nullptr);
  out.cert = X509_new();
  X509_set_version(out.cert, 2);
  static long serial = 1;
  ASN1_INTEGER_set(X509_get_serialNumber(out.cert), serial++);
  X509_gmtime_adj(X509_getm_notBefore(out.cert), -60);
  X509_gmtime_adj(X509_getm_notAfter(out.cert), 3600);
  X509_set_pubkey(out.cert, out.key);
  X509_NAME* name = X509_get_subject_name(out.cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn), -1, -1, 0);
  X509* signer = issuer ? issuer->cert : out.cert;
  X509_set_issuer_name(out.cert, X509_get_subject_name(signer));
  if (san) {
    add_ext(out.cert, signer, NID_subject_alt_name, san);
  } else {
    add_ext(out.cert, signer, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(out.cert, signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  }
  ASSERT_GT(X509_sign(out.cert, issuer ? issuer->key : out.key, EVP_sha256()), 0);
}

std::string write_pem(const Pki& ca, const char* file) {
  std::string path = ::testing::TempDir() + file;
  FILE* f = std::fopen(path.c_str(), "w");
  EXPECT_NE(f, nullptr);
  PEM_write_X509(f, ca.cert);
  std::fclose(f);
  return path;
}

struct TlsLab {
  Pki ca, other_ca, server;
  std::string ca_file, other_ca_file;
  TlsLab() {
    make_cert(ca, "test CA", nullptr, nullptr);
    make_cert(other_ca, "other CA", nullptr, nullptr);
    make_cert(server, "rtr.test", &ca, "IP:127.0.0.1,DNS:rtr.test");
    ca_file = write_pem(ca, "rtr_transport_test_ca.pem");
    other_ca_file = write_pem(other_ca, "rtr_transport_test_other_ca.pem");
  }
};

// Runs both handshakes over the pair, each as far as it can go, until the
// client's ends (done or refused); the client's last outcome.
StreamIo handshakes(RtrStream& client, SSL* server) {
  StreamIo io;
  for (int i = 0; i < 100; ++i) {
    io = client.handshake();
    (void)SSL_do_handshake(server);
    if (io.kind == Kind::kDone || io.kind == Kind::kError || io.kind == Kind::kClosed) return io;
  }
  ADD_FAILURE() << "the handshakes did not end";
  return io;
}

class Tls : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = SSL_CTX_new(TLS_server_method());
    ASSERT_EQ(SSL_CTX_use_certificate(ctx_, lab_.server.cert), 1);
    ASSERT_EQ(SSL_CTX_use_PrivateKey(ctx_, lab_.server.key), 1);
    server_ = SSL_new(ctx_);
    SSL_set_fd(server_, sp_.fd[1]);
    SSL_set_accept_state(server_);
  }
  void TearDown() override {
    SSL_free(server_);
    SSL_CTX_free(ctx_);
    ERR_clear_error();
  }
  std::unique_ptr<RtrStream> client(const std::string& ca_file, const std::string& name = {}) {
    RpkiCacheConfig c;
    c.address = *net::IpAddress::parse("127.0.0.1");
    c.transport = RtrTransport::kTls;
    c.tls_ca_file = ca_file;
    c.tls_server_name = name;
    std::string why;
    auto s = make_rtr_stream(c, sp_.fd[0], why);
    EXPECT_TRUE(s) << why;
    return s;
  }

  // The handshake with the right CA and `name`, then bytes both ways, then
  // the cache's close_notify.
  void carries_bytes(const std::string& name) {
    auto c = client(lab_.ca_file, name);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->name(), "tls");
    StreamIo io = handshakes(*c, server_);
    ASSERT_EQ(io.kind, Kind::kDone) << io.error;
    ASSERT_EQ(c->write(as_bytes("query")).kind, Kind::kDone);
    char got[16] = {};
    ASSERT_EQ(SSL_read(server_, got, sizeof got), 5);
    EXPECT_EQ(std::string_view(got, 5), "query");
    ASSERT_EQ(SSL_write(server_, "answer", 6), 6);
    std::vector<std::byte> buf(64);
    StreamIo r = read_some(*c, buf);
    ASSERT_EQ(r.kind, Kind::kDone) << r.error;
    EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(buf.data()), r.bytes), "answer");
    EXPECT_FALSE(c->buffered());
    (void)SSL_shutdown(server_);
    EXPECT_EQ(read_some(*c, buf).kind, Kind::kClosed);
  }
  // The handshake against `ca_file` and `name` ends refused, with the
  // verifier's `reason`.
  void refused(const std::string& ca_file, const std::string& name, std::string_view reason) {
    auto c = client(ca_file, name);
    ASSERT_TRUE(c);
    StreamIo io = handshakes(*c, server_);
    EXPECT_EQ(io.kind, Kind::kError);
    EXPECT_EQ(io.error, "TLS handshake failed: the cache's certificate was refused: " + std::string(reason));
  }
  // A read that waits (a few tries) past kWantRead.
  static StreamIo read_some(RtrStream& c, std::span<std::byte> buf) {
    StreamIo r = c.read(buf);
    for (int i = 0; i < 10 && r.kind == Kind::kWantRead; ++i) r = c.read(buf);
    return r;
  }

  TlsLab lab_;
  SocketPair sp_;
  SSL_CTX* ctx_ = nullptr;
  SSL* server_ = nullptr;
};

TEST_F(Tls, CarriesBytesBothWaysCheckingTheAddress) { carries_bytes(""); }

TEST_F(Tls, CarriesBytesBothWaysCheckingAName) { carries_bytes("rtr.test"); }

TEST_F(Tls, RefusesACertificateOfAnotherCa) {
  refused(lab_.other_ca_file, "", "unable to get local issuer certificate");
}

TEST_F(Tls, RefusesACertificateForAnotherName) { refused(lab_.ca_file, "other.test", "hostname mismatch"); }

TEST_F(Tls, RefusesACertificateForAnotherAddress) { refused(lab_.ca_file, "192.0.2.1", "IP address mismatch"); }

TEST(RtrTransport, AMissingCaFileIsSaid) {
  SocketPair sp;
  RpkiCacheConfig c;
  c.transport = RtrTransport::kTls;
  c.tls_ca_file = ::testing::TempDir() + "no-such-ca.pem";
  std::string why;
  EXPECT_FALSE(make_rtr_stream(c, sp.fd[0], why));
  EXPECT_NE(why.find("TLS: cannot load the CA certificates of " + c.tls_ca_file), std::string::npos) << why;
  ERR_clear_error();
}

}  // namespace
}  // namespace petrel::daemon

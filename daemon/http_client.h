// The HTTP client of the commands that read the daemon's API (`petrel
// show`, `petrel policy test`, `petrel top`): a small blocking HTTP/1.0 GET
// over one TCP connection, connect and read each bounded in time, to an
// address the operator controls (usually loopback), with no TLS. A library
// such as libcurl would add a dependency and nothing this needs.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace petrel::daemon {

struct HttpResult {
  unsigned status = 0;
  std::string body;
};

// GET path from `where` ("127.0.0.1:8179", "[::1]:8179"); nullopt (with
// err) when there is no answer. Connecting takes at most 3 s, the answer
// 30 s; a body over 256 MiB is refused.
std::optional<HttpResult> http_get(std::string_view where, std::string_view path, std::string& err);

// A query argument's value, percent-encoded.
std::string url_encode(std::string_view s);

// The options every client of the API takes, and where they lead.
struct ApiOptions {
  std::string http = "127.0.0.1:8179";
  bool http_given = false;  // --http: it wins over -c
  std::string config;       // -c FILE: its [http] listen, unless --http
};

// The value of the option argv[i] (i moves on to it); nothing, after a
// usage error on stderr naming `cmd` ("petrel show"), when there is none.
std::optional<std::string> option_value(int argc, char** argv, int& i, std::string_view cmd, std::string_view usage);

// argv[i] when it is one of the options of every client: --http
// ADDRESS:PORT, -c/--config FILE (the global option `petrel -c FILE show`
// comes here too), and -s/--socket, the control socket's global option,
// taken and ignored.
enum class ApiOption { kNotOne, kTaken, kUsage };
ApiOption api_option(int argc, char** argv, int& i, ApiOptions& o, std::string_view cmd, std::string_view usage);

// Settles o.http: as given with --http, else the [http] listen of the
// configuration file -c named, else the default; and checks that it
// parses. Nothing when it is set; else the exit status, after a line on
// stderr saying why (and `usage` for a usage error).
std::optional<int> api_address(std::string_view cmd, ApiOptions& o, std::string_view usage);

}  // namespace petrel::daemon

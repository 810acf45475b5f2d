// Least privilege for `petrel run` (docs/security.md): started as root, it
// binds what needs root, then becomes [router] user keeping only the
// capabilities it needs; and it refuses to run as root with every
// capability unless the configuration says so (user = "root").
#pragma once

#include <string>

namespace petrel::daemon {

// The capabilities Petrel keeps (CAP_NET_ADMIN: kernel routes, interface
// and route notifications over netlink; CAP_NET_BIND_SERVICE: a listener
// below port 1024 bound again later, e.g. [http] moved by a reload). TCP
// MD5, TCP-AO and GTSM are ordinary socket options and need none.
inline constexpr unsigned kKeptCapabilities[] = {10 /* CAP_NET_BIND_SERVICE */, 12 /* CAP_NET_ADMIN */};

// Why the process must not go on as started (empty: it may): it runs as
// root (effective uid 0) with capabilities beyond the kept ones and
// `user` is empty.
std::string refuse_full_root(const std::string& user);

// Becomes `user` (its uid, gid and supplementary groups) keeping only the
// kept capabilities, in the effective, permitted and bounding sets, with
// no ambient ones and no_new_privs set. Nothing when `user` is "" or
// "root". Started as another user: nothing when it is that user already,
// else an error. Capabilities are per thread: call it before any thread
// but the allocator's is made (Server::start, after the listeners). False
// with err set.
bool drop_privileges(const std::string& user, std::string& err);

}  // namespace petrel::daemon

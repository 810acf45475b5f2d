// Least privilege: see privileges.h.
#include "daemon/privileges.h"

#include <grp.h>
#include <pwd.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <vector>

namespace petrel::daemon {

namespace {

bool kept(cap_value_t c) {
  return std::find(std::begin(kKeptCapabilities), std::end(kKeptCapabilities), static_cast<unsigned>(c)) !=
         std::end(kKeptCapabilities);
}

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

std::string refuse_full_root(const std::string& user) {
  if (!user.empty() || geteuid() != 0) return {};
  cap_t caps = cap_get_proc();
  if (!caps) return {};
  bool more = false;
  for (cap_value_t c = 0; c <= CAP_LAST_CAP && !more; ++c) {
    cap_flag_value_t v = CAP_CLEAR;
    if (cap_get_flag(caps, c, CAP_EFFECTIVE, &v) == 0 && v == CAP_SET && !kept(c)) more = true;
  }
  cap_free(caps);
  if (!more) return {};
  return "petrel runs as root with every capability: set [router] user = \"petrel\" (a user of its own) so that "
         "it drops to that user after binding its ports, keeping only CAP_NET_ADMIN and CAP_NET_BIND_SERVICE, "
         "or user = \"root\" to run as root anyway";
}

bool drop_privileges(const std::string& user, std::string& err) {
  if (user.empty() || user == "root") return true;
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || !found) {
    err = "[router] user: no user named \"" + user + "\" (create it, e.g. adduser --system --group " + user + ")";
    return false;
  }
  if (geteuid() != 0) {
    if (geteuid() == pw.pw_uid) return true;  // started as that user (systemd's User=)
    err = "[router] user = \"" + user + "\": petrel must start as root (or as that user) to become it";
    return false;
  }
  if (pw.pw_uid == 0) {
    err = "[router] user = \"" + user + "\" has uid 0: use a user of its own";
    return false;
  }
  // The bounding set first (that needs CAP_SETPCAP, which goes with root).
  for (cap_value_t c = 0; c <= CAP_LAST_CAP; ++c)
    if (!kept(c) && CAP_IS_SUPPORTED(c) && cap_drop_bound(c) != 0) {
      err = errno_text("dropping a capability from the bounding set");
      return false;
    }
  if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) {
    err = errno_text("prctl(PR_SET_KEEPCAPS)");
    return false;
  }
  if (initgroups(pw.pw_name, pw.pw_gid) != 0 || setresgid(pw.pw_gid, pw.pw_gid, pw.pw_gid) != 0 ||
      setresuid(pw.pw_uid, pw.pw_uid, pw.pw_uid) != 0) {
    err = errno_text("becoming the user");
    return false;
  }
  if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) != 0) {
    err = errno_text("prctl(PR_SET_KEEPCAPS)");
    return false;
  }
  cap_t caps = cap_init();
  std::vector<cap_value_t> list;
  for (unsigned c : kKeptCapabilities) list.push_back(static_cast<cap_value_t>(c));
  const int n = static_cast<int>(list.size());
  bool ok = caps && cap_set_flag(caps, CAP_PERMITTED, n, list.data(), CAP_SET) == 0 &&
            cap_set_flag(caps, CAP_EFFECTIVE, n, list.data(), CAP_SET) == 0 && cap_set_proc(caps) == 0;
  if (!ok) err = errno_text("setting the capabilities");
  if (caps) cap_free(caps);
  if (!ok) return false;
  if (cap_reset_ambient() != 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    err = errno_text("clearing ambient capabilities / no_new_privs");
    return false;
  }
  if (setuid(0) == 0) {  // no way back
    err = "the process could become root again";
    return false;
  }
  return true;
}

}  // namespace petrel::daemon

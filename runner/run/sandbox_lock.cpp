// The lock on the measuring process once its mounts are made (sandbox_detail.hpp), in
// bubblewrap's order: a nested user namespace (the mounts now belong to a user namespace in
// which the process holds nothing), every capability and the bounding set dropped with the
// securebits locked, no_new_privs, then Landlock over writes.
#include "base/process.hpp"
#include "run/sandbox_detail.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace prereg::detail {
namespace {

/// A user namespace nested in the sandbox's own, the same uid and gid mapped: the mount
/// namespace (and the PID namespace) stay owned by the outer one, where this process now holds
/// no capability, so no mount can be unmounted or made writable again from here.
std::string enter_nested_user_namespace() {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  if (::unshare(CLONE_NEWUSER) != 0)
    return errno_text("a nested user namespace is not available (unshare)");
  if (!write_proc_file("/proc/self/setgroups", "deny") ||
      !write_proc_file("/proc/self/uid_map", fmt::format("{} {} 1\n", uid, uid)) ||
      !write_proc_file("/proc/self/gid_map", fmt::format("{} {} 1\n", gid, gid)))
    return errno_text("the nested user namespace could not be mapped");
  return {};
}

/// Every capability gone: the bounding set and the ambient set emptied, the securebits that
/// would give a uid 0 capabilities again at exec set and locked, then the effective, permitted
/// and inheritable sets cleared.
std::string drop_capabilities() {
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0)
    return errno_text("the ambient capabilities could not be cleared");
  for (int cap = 0; cap < 64; ++cap)
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL)
      return errno_text("the bounding set could not be emptied");
  const unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                             SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                             SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
  if (::prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) != 0)
    return errno_text("the securebits could not be locked");
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capset, &header, data) != 0)
    return errno_text("the capabilities could not be dropped (capset)");
  return {};
}

/// Appends `layer` when `why` is empty, else `why` to the reason.
void step(isolation_facts &facts, const char *layer, const std::string &why) {
  if (why.empty())
    facts.layers.emplace_back(layer);
  else
    facts.add_reason(why);
}

} // namespace

void lock_process(isolation_facts &facts) {
  // The OOM killer's first choice when the host runs out (docs/engine.md, "What the sandbox does
  // not bound"): raising one's own score needs no privilege; before Landlock, which refuses it.
  if (!write_proc_file("/proc/self/oom_score_adj", "1000"))
    facts.add_reason(errno_text("the OOM killer's score could not be raised (oom_score_adj)"));
  step(facts, "mounts-locked", enter_nested_user_namespace());
  step(facts, "caps-dropped", drop_capabilities());
  step(facts, "no-new-privs",
       ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 ? std::string()
                                                     : errno_text("no_new_privs (prctl)"));
  const std::string landlock = restrict_writes();
  step(facts, "landlock", landlock.empty() ? landlock : "landlock: " + landlock);
}

} // namespace prereg::detail

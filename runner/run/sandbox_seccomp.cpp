// The measuring process's system-call filter (sandbox_detail.hpp), built with libseccomp and
// installed last. An allow-list cannot be written for Python, torch.compile, Triton and the
// CUDA driver (their calls change with every release), so the filter allows by default and
// refuses, with EPERM, the calls that would undo the walls or reach past them
// (docs/engine.md, "The measuring process", the list and why each).
#include "run/sandbox_detail.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>

namespace prereg::detail {
namespace {

using filter = std::unique_ptr<std::remove_pointer_t<scmp_filter_ctx>, void (*)(scmp_filter_ctx)>;

/// The calls refused whatever their arguments: mounts, namespaces, tracing and other processes'
/// memory, the kernel's keyrings, BPF, perf events, io_uring (which would run calls past this
/// filter), module, clock and swap administration, file handles.
constexpr const char *refused[] = {"mount",
                                   "umount",
                                   "umount2",
                                   "mount_setattr",
                                   "open_tree",
                                   "move_mount",
                                   "fsopen",
                                   "fsmount",
                                   "fsconfig",
                                   "fspick",
                                   "pivot_root",
                                   "chroot",
                                   "setns",
                                   "ptrace",
                                   "process_vm_readv",
                                   "process_vm_writev",
                                   "process_madvise",
                                   "pidfd_getfd",
                                   "kcmp",
                                   "bpf",
                                   "keyctl",
                                   "add_key",
                                   "request_key",
                                   "perf_event_open",
                                   "userfaultfd",
                                   "io_uring_setup",
                                   "io_uring_enter",
                                   "io_uring_register",
                                   "kexec_load",
                                   "kexec_file_load",
                                   "init_module",
                                   "finit_module",
                                   "delete_module",
                                   "open_by_handle_at",
                                   "quotactl",
                                   "swapon",
                                   "swapoff",
                                   "reboot",
                                   "acct",
                                   "syslog",
                                   "settimeofday",
                                   "clock_settime",
                                   "iopl",
                                   "ioperm",
                                   "vhangup",
                                   "tkill",
                                   "pidfd_send_signal",
                                   "lookup_dcookie",
                                   "nfsservctl",
                                   "uselib"};

/// The namespace flags of clone(2) and unshare(2).
constexpr std::uint64_t namespace_flags[] = {CLONE_NEWNS,     CLONE_NEWUSER, CLONE_NEWPID,
                                             CLONE_NEWNET,    CLONE_NEWUTS,  CLONE_NEWIPC,
                                             CLONE_NEWCGROUP, 0x00000080 /* CLONE_NEWTIME */};

/// The pids (as the low 32 bits of the argument) no signal may reach: 0 and -1 (the caller's
/// process group, every process it may signal), 1 (the namespace's init), 2 (the measuring
/// process), -2 (its process group, should it lead one).
constexpr std::uint64_t protected_pids[] = {0, 1, 2, 0xffffffffULL, 0xfffffffeULL};

int deny(scmp_filter_ctx ctx, int call, std::initializer_list<scmp_arg_cmp> args, int code) {
  return seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(code), call, static_cast<unsigned>(args.size()),
                                args.size() == 0 ? nullptr : args.begin());
}

/// Adds every rule; the first failure's text, or "".
std::string add_rules(scmp_filter_ctx ctx) {
  for (const char *name : refused) {
    const int call = seccomp_syscall_resolve_name(name);
    if (call != __NR_SCMP_ERROR && deny(ctx, call, {}, EPERM) != 0)
      return fmt::format("the rule for {} could not be added", name);
  }
  // clone3 passes its flags in memory, where no filter can read them: ENOSYS makes glibc (and
  // every runtime that knows clone3 may be missing) fall back to clone(2), whose flags it can.
  if (deny(ctx, SCMP_SYS(clone3), {}, ENOSYS) != 0)
    return "the rule for clone3 could not be added";
  for (const std::uint64_t flag : namespace_flags) {
    if (deny(ctx, SCMP_SYS(clone), {SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag)}, EPERM) != 0 ||
        deny(ctx, SCMP_SYS(unshare), {SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag)}, EPERM) != 0)
      return "the rules for clone and unshare could not be added";
  }
  // Signals: kill(2) by pid or group, tgkill(2) and the queued ones by thread group, pidfd_open
  // (a pidfd would signal past these rules): none may name the init or the measuring process,
  // except SIGKILL, which only ends the run (a failed attempt, never a changed number; a
  // process that kills itself is a crash: docs/engine.md).
  for (const std::uint64_t pid : protected_pids) {
    const scmp_arg_cmp a0 = SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffULL, pid);
    const scmp_arg_cmp not_kill1 = SCMP_A1(SCMP_CMP_NE, SIGKILL);
    const scmp_arg_cmp not_kill2 = SCMP_A2(SCMP_CMP_NE, SIGKILL);
    if (deny(ctx, SCMP_SYS(kill), {a0, not_kill1}, EPERM) != 0 ||
        deny(ctx, SCMP_SYS(rt_sigqueueinfo), {a0, not_kill1}, EPERM) != 0 ||
        deny(ctx, SCMP_SYS(tgkill), {a0, not_kill2}, EPERM) != 0 ||
        deny(ctx, SCMP_SYS(rt_tgsigqueueinfo), {a0, not_kill2}, EPERM) != 0 ||
        deny(ctx, SCMP_SYS(pidfd_open), {a0}, EPERM) != 0)
      return "the rules for signals could not be added";
  }
  // Signals the kernel sends on a process's behalf: a descriptor's owner gets F_SETSIG's signal
  // when the descriptor is ready (a helper sets the measuring process as owner of its own pipe),
  // a parent gets the exit signal its child was cloned with. None of them may stop or continue.
  for (const int sig : {SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU, SIGCONT}) {
    const auto s = static_cast<std::uint64_t>(sig);
    if (deny(ctx, SCMP_SYS(fcntl), {SCMP_A1(SCMP_CMP_EQ, F_SETSIG), SCMP_A2(SCMP_CMP_EQ, s)},
             EPERM) != 0 ||
        deny(ctx, SCMP_SYS(clone), {SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffULL, s)}, EPERM) != 0)
      return "the rules for signals sent by the kernel could not be added";
  }
  // Joining another process group (a group a helper leads, to stop it with one kill): only a
  // group of one's own (setpgid(pid, 0)).
  if (deny(ctx, SCMP_SYS(setpgid), {SCMP_A1(SCMP_CMP_NE, 0)}, EPERM) != 0)
    return "the rule for setpgid could not be added";
  // Typing into the terminal prereg was started from (TIOCSTI), or its console (TIOCLINUX).
  for (const unsigned long request :
       {static_cast<unsigned long>(TIOCSTI), static_cast<unsigned long>(TIOCLINUX)})
    if (deny(ctx, SCMP_SYS(ioctl), {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, request)}, EPERM) !=
        0)
      return "the rules for ioctl could not be added";
  return {};
}

} // namespace

namespace {

/// A filter that allows by default with the rules `add` adds, loaded: "" when it stands.
std::string load_filter(const std::function<std::string(scmp_filter_ctx)> &add) {
  filter ctx(seccomp_init(SCMP_ACT_ALLOW), seccomp_release);
  if (!ctx)
    return "seccomp: the filter could not be made (seccomp_init)";
  // Another architecture's calls (32-bit ones on x86-64) would pass under other numbers: they
  // end the process instead.
  if (seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) != 0)
    return "seccomp: the action for other architectures could not be set";
  if (std::string why = add(ctx.get()); !why.empty())
    return "seccomp: " + why;
  if (const int rc = seccomp_load(ctx.get()); rc != 0)
    return fmt::format("seccomp: the filter could not be installed (seccomp_load: {})",
                       std::strerror(-rc));
  return {};
}

} // namespace

std::string ban_fault_handlers() {
  return load_filter([](scmp_filter_ctx ctx) -> std::string {
    // A handler for a fault (a page taken away, a trap, a truncated mapping) is code the kernel
    // runs when prereg touches memory after a window: refused; asking what is installed (a
    // null new action) is not.
    for (const int sig : {SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE, SIGSYS})
      if (deny(ctx, SCMP_SYS(rt_sigaction),
               {SCMP_A0(SCMP_CMP_EQ, static_cast<std::uint64_t>(sig)), SCMP_A1(SCMP_CMP_NE, 0)},
               EPERM) != 0)
        return "the rules for fault handlers could not be added";
    return {};
  });
}

std::string install_seccomp_filter() { return load_filter(add_rules); }

} // namespace prereg::detail

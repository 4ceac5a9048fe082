/* Family 4 (issue 43): a C plugin tampers from beside the clock. Its setup forks a helper that
 * tries every way it knows to stop the measuring process (its parent): kill, tgkill,
 * rt_sigqueueinfo, a pidfd, and a descriptor whose owner is the measuring process and whose
 * readiness signal (F_SETSIG) is SIGSTOP; then the setup itself clones a child whose exit signal
 * is SIGSTOP. Each attempt is written as a loot line on stderr (`PREREG-LOOT plugin.txt ...`).
 * Last, the helper writes a forged message on the measuring process's channel. Its step is an
 * honest copy y = x (the run is meant to fail before it matters). */
#define _GNU_SOURCE
#include <prereg/arm_abi.h>
#include "../copy_step.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void loot(const char *what, long r) {
  fprintf(stderr, "PREREG-LOOT plugin.txt %s: %s\n", what, r >= 0 ? "ok" : strerror(errno));
}

static void pause_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

/* The state of process `pid` ('T' when stopped) from /proc. */
static char state_of(pid_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return '?';
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *p = strrchr(buf, ')');
  return p && p[1] && p[2] ? p[2] : '?';
}

/* Makes the kernel send `sig` to `target`: a pipe it owns, readable now. */
static long signal_by_readiness(pid_t target, int sig) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  if (fcntl(fds[0], F_SETOWN, target) != 0 || fcntl(fds[0], F_SETSIG, sig) != 0 ||
      fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_ASYNC) != 0)
    return -1;
  return write(fds[1], "x", 1) == 1 ? 0 : -1;
}

static void helper(pid_t target) {
  loot("kill SIGSTOP", kill(target, SIGSTOP));
  loot("tgkill SIGSTOP", syscall(SYS_tgkill, target, target, SIGSTOP));
  siginfo_t info;
  memset(&info, 0, sizeof info);
  info.si_code = SI_QUEUE;
  info.si_pid = getpid();
  info.si_uid = getuid();
  loot("rt_sigqueueinfo SIGSTOP", syscall(SYS_rt_sigqueueinfo, target, SIGSTOP, &info));
  loot("pidfd_open", syscall(SYS_pidfd_open, target, 0));
  long r = signal_by_readiness(target, SIGSTOP);
  loot("F_SETSIG SIGSTOP", r);
  if (r == 0) {
    pause_ms(100);
    fprintf(stderr, "PREREG-LOOT plugin.txt after F_SETSIG: state %c\n", state_of(target));
    (void)signal_by_readiness(target, SIGCONT);
  }
  /* The forged message, on the channel: the inherited socket above fd 2. */
  for (int fd = 3; fd < 64; ++fd) {
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode)) {
      const char forged[] = "{\"error\": {\"code\": 1, \"message\": \"FORGED BY A HELPER\", "
                            "\"where\": \"\"}}\n";
      loot("forged message", write(fd, forged, sizeof forged - 1));
      break;
    }
  }
}

static int setup(const prereg_cell *cell, void **state, char *error, size_t error_size) {
  (void)error;
  (void)error_size;
  static int done;
  *state = (void *)cell;
  if (done++) return 0;
  fprintf(stderr, "PREREG-LOOT plugin.txt plugin ran\n");
  /* A watcher: if a stop got through, it says so (nothing it may do continues the process). */
  pid_t me = getpid();
  pid_t watcher = fork();
  if (watcher == 0) {
    pause_ms(500);
    fprintf(stderr, "PREREG-LOOT plugin.txt watcher: state %c\n", state_of(me));
    _exit(0);
  }
  long c = syscall(SYS_clone, (long)SIGSTOP, 0L, 0L, 0L, 0L);
  if (c == 0) _exit(0); /* the clone: its end would stop its parent */
  loot("clone exit signal SIGSTOP", c);
  if (c > 0) pause_ms(100);
  pid_t h = fork();
  if (h == 0) {
    helper(me);
    _exit(0);
  }
  if (h > 0) waitpid(h, NULL, 0);
  waitpid(watcher, NULL, 0);
  pause_ms(1000); /* the forged line is read before this process writes again */
  return 0;
}

static const prereg_arm arms[] = {
    {"attacker", "layernorm", "cpu", "fp32", "fwd", "a planted attacker", setup, copy_step, NULL},
};
static const prereg_arm_table table = {PREREG_ARM_ABI_VERSION, 1, arms};
const prereg_arm_table *prereg_arms(void) { return &table; }

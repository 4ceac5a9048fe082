/* Family 7 (issue 43): faults from a C plugin, one arm each. `stuck`: a step that never returns
 * and blocks every signal it can. `filler`: a setup that writes up to 96 MiB into /tmp and
 * /dev/shm (MARKER names its files). `bidi`: a step that fails with bidirectional controls in its
 * message. `flood`: a setup that writes 80 MiB without a line end on the measuring process's
 * channel. What each got is written as a loot line on stderr (`PREREG-LOOT plugin.txt ...`).
 * The steps of `filler` are an honest copy y = x. */
#define _GNU_SOURCE
#include <prereg/arm_abi.h>
#include "../copy_step.h"
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int plain_setup(const prereg_cell *cell, void **state, char *error, size_t error_size) {
  (void)error;
  (void)error_size;
  *state = (void *)cell;
  return 0;
}

static int stuck_step(void *state, void *stream, char *error, size_t error_size) {
  (void)state;
  (void)stream;
  (void)error;
  (void)error_size;
  fprintf(stderr, "PREREG-LOOT plugin.txt stuck: in its step\n");
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, NULL);
  for (;;) {
    struct timespec t = {1, 0};
    nanosleep(&t, NULL);
  }
}

static void fill(const char *folder) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", folder, MARKER);
  FILE *f = fopen(path, "wb");
  if (!f) {
    fprintf(stderr, "PREREG-LOOT plugin.txt fill %s: 0 MiB, stopped by %s\n", folder,
            strerror(errno));
    return;
  }
  static char block[1 << 20];
  long mib = 0;
  const char *why = "nothing (wrote all it tried)";
  while (mib < 96) { /* a cap, so that without a bound the host's folder survives */
    if (fwrite(block, 1, sizeof block, f) != sizeof block || fflush(f) != 0) {
      why = strerror(errno);
      break;
    }
    ++mib;
  }
  if (fclose(f) != 0 && mib == 96) why = strerror(errno);
  fprintf(stderr, "PREREG-LOOT plugin.txt fill %s: %ld MiB, stopped by %s\n", folder, mib, why);
}

static int filler_setup(const prereg_cell *cell, void **state, char *error, size_t error_size) {
  static int done;
  if (!done++) {
    fill("/tmp");
    fill("/dev/shm");
  }
  return plain_setup(cell, state, error, error_size);
}

static int bidi_step(void *state, void *stream, char *error, size_t error_size) {
  (void)state;
  (void)stream;
  fprintf(stderr, "PREREG-LOOT plugin.txt bidi: raised\n");
  /* U+202E (right-to-left override), U+202C, U+2066, U+2069, U+061C */
  snprintf(error, error_size, "builtin is \xe2\x80\xae" "faster\xe2\x80\xac than \xe2\x81\xa6"
           "this\xe2\x81\xa9 arm\xd8\x9c");
  return 1;
}

static int flood_setup(const prereg_cell *cell, void **state, char *error, size_t error_size) {
  for (int fd = 3; fd < 64; ++fd) {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    fprintf(stderr, "PREREG-LOOT plugin.txt flood: on fd %d\n", fd);
    static char block[1 << 20];
    memset(block, 'x', sizeof block);
    (void)!write(fd, "{\"phase\": \"", 11);
    for (int i = 0; i < 80; ++i)
      if (write(fd, block, sizeof block) < 0) break;
    (void)!write(fd, "\"}\n", 3);
    break;
  }
  return plain_setup(cell, state, error, error_size);
}

static const prereg_arm arms[] = {
    {"stuck", "layernorm", "cpu", "fp32", "fwd", "never returns", plain_setup, stuck_step, NULL},
    {"filler", "layernorm", "cpu", "fp32", "fwd", "fills scratch", filler_setup, copy_step, NULL},
    {"bidi", "layernorm", "cpu", "fp32", "fwd", "bidi in errors", plain_setup, bidi_step, NULL},
    {"flood", "layernorm", "cpu", "fp32", "fwd", "floods the channel", flood_setup, copy_step,
     NULL},
};
static const prereg_arm_table table = {PREREG_ARM_ABI_VERSION, 4, arms};
const prereg_arm_table *prereg_arms(void) { return &table; }

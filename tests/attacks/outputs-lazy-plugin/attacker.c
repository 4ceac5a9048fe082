/* Family 3 (issue 43): a C plugin whose step does no work in its window. Its first call (the
 * correctness gate's) computes the LayerNorm y at once; every later call returns at once and leaves a
 * thread running that writes the same y 200 ms after the step returned, long after the window closed
 * (teardown waits for those threads). Outputs that arrive after the step returns must fail: the
 * spot checks of the timed samples read them as the window closes. */
#define _GNU_SOURCE
#include <prereg/arm_abi.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

enum { max_threads = 256 };

typedef struct state {
  const float *x, *gamma, *beta;
  float *y, *mean, *rstd; /* mean and rstd: saved for the backward, written where given */
  int64_t rows, cols;
  double eps;
  pthread_t threads[max_threads];
  int count;
} state;

static state g_states[8];
static int g_state_count;
static int g_calls; /* every step call of this process */

/* The LayerNorm of the set's x into its y. */
static void layernorm(const state *s) {
  for (int64_t r = 0; r < s->rows; ++r) {
    const float *x = s->x + r * s->cols;
    float *y = s->y + r * s->cols;
    double mu = 0, var = 0;
    for (int64_t c = 0; c < s->cols; ++c) mu += x[c];
    mu /= (double)s->cols;
    for (int64_t c = 0; c < s->cols; ++c) var += (x[c] - mu) * (x[c] - mu);
    const double rs = 1.0 / sqrt(var / (double)s->cols + s->eps);
    if (s->mean) s->mean[r] = (float)mu;
    if (s->rstd) s->rstd[r] = (float)rs;
    for (int64_t c = 0; c < s->cols; ++c)
      y[c] = (float)((x[c] - mu) * rs * s->gamma[c] + s->beta[c]);
  }
}

static void *late_write(void *arg) {
  struct timespec pause = {0, 200 * 1000 * 1000};
  nanosleep(&pause, NULL);
  layernorm(arg);
  return NULL;
}

static int setup(const prereg_cell *cell, void **out, char *error, size_t error_size) {
  if (g_state_count == 8) {
    snprintf(error, error_size, "too many buffer sets");
    return 1;
  }
  state *s = &g_states[g_state_count++];
  memset(s, 0, sizeof *s);
  for (size_t i = 0; i < cell->tensor_count; ++i) {
    if (strcmp(cell->tensor_names[i], "x") == 0) s->x = cell->tensors[i].data;
    if (strcmp(cell->tensor_names[i], "y") == 0) s->y = cell->tensors[i].data;
    if (strcmp(cell->tensor_names[i], "gamma") == 0) s->gamma = cell->tensors[i].data;
    if (strcmp(cell->tensor_names[i], "beta") == 0) s->beta = cell->tensors[i].data;
    if (strcmp(cell->tensor_names[i], "mean") == 0) s->mean = cell->tensors[i].data;
    if (strcmp(cell->tensor_names[i], "rstd") == 0) s->rstd = cell->tensors[i].data;
  }
  s->rows = cell->rows;
  s->cols = cell->cols;
  s->eps = cell->eps;
  if (g_state_count == 1) fprintf(stderr, "PREREG-LOOT plugin.txt lazy plugin planted\n");
  *out = s;
  return 0;
}

static int step(void *st, void *stream, char *error, size_t error_size) {
  (void)stream;
  (void)error;
  (void)error_size;
  state *s = st;
  if (g_calls++ == 0 || s->count == max_threads ||
      pthread_create(&s->threads[s->count], NULL, late_write, s) != 0) {
    layernorm(s); /* the gate's call: the work, at once */
    return 0;
  }
  ++s->count;
  return 0; /* the window closes now; y is written later */
}

static void teardown(void *st) {
  state *s = st;
  for (int i = 0; i < s->count; ++i) pthread_join(s->threads[i], NULL);
  s->count = 0;
}

static const prereg_arm arms[] = {
    {"attacker", "layernorm", "cpu", "fp32", "fwd", "a lazy attacker", setup, step, teardown},
};
static const prereg_arm_table table = {PREREG_ARM_ABI_VERSION, 1, arms};
const prereg_arm_table *prereg_arms(void) { return &table; }

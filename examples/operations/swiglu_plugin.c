/* A C plugin arm of the swiglu operation declared in swiglu.py (docs/operations.md,
 * docs/plugins.md): fp32 on the CPU, one pass over the elements for fwd and for fwd+bwd.
 * It finds the operation's tensors by the names the file declares (a, b, dy, y, da, db).
 *
 *   cc -O2 -fPIC -shared -I../../runner/include -o libswiglu.so swiglu_plugin.c -lm
 */
#include <prereg/arm_abi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct state {
  const float *a, *b, *dy;
  float *y, *da, *db;
  int64_t n;
} state;

static void *find(const prereg_cell *cell, const char *name) {
  for (size_t i = 0; i < cell->tensor_count; ++i)
    if (strcmp(cell->tensor_names[i], name) == 0) return cell->tensors[i].data;
  return NULL;
}

static int setup(const prereg_cell *cell, void **out, char *error, size_t error_size) {
  if (strcmp(cell->dtype, "fp32") != 0) {
    snprintf(error, error_size, "only fp32 is implemented, not %s", cell->dtype);
    return 1;
  }
  state *s = calloc(1, sizeof *s);
  if (s == NULL) {
    snprintf(error, error_size, "out of memory");
    return 1;
  }
  s->a = find(cell, "a");
  s->b = find(cell, "b");
  s->dy = find(cell, "dy"); /* NULL in the forward */
  s->y = find(cell, "y");
  s->da = find(cell, "da");
  s->db = find(cell, "db");
  s->n = cell->rows * cell->cols;
  if (s->a == NULL || s->b == NULL || s->y == NULL) {
    snprintf(error, error_size, "operation %s lacks the tensors a, b, y", cell->operation);
    free(s);
    return 1;
  }
  *out = s;
  return 0;
}

static int step(void *opaque, void *stream, char *error, size_t error_size) {
  (void)stream;
  (void)error;
  (void)error_size;
  const state *s = opaque;
  for (int64_t i = 0; i < s->n; ++i) {
    const float a = s->a[i], b = s->b[i];
    const float sig = 1.0f / (1.0f + expf(-a));
    s->y[i] = a * sig * b;
    if (s->dy != NULL) {
      s->da[i] = s->dy[i] * b * sig * (1.0f + a * (1.0f - sig));
      s->db[i] = s->dy[i] * a * sig;
    }
  }
  return 0;
}

static void teardown(void *opaque) { free(opaque); }

static const prereg_arm arms[] = {
    {"swiglu_c", "swiglu", "cpu", "fp32", "fwd,fwd+bwd",
     "SwiGLU's gate in plain C: one loop over the elements", setup, step, teardown},
};

static const prereg_arm_table table = {PREREG_ARM_ABI_VERSION, sizeof arms / sizeof arms[0], arms};

const prereg_arm_table *prereg_arms(void) { return &table; }

/* An out-of-tree prereg arm: LayerNorm on the CPU, fp32, forward and backward, written against
 * prereg's arm ABI header only (runner/include/prereg/arm_abi.h; docs/plugins.md).
 *
 *   make                      # builds libcpu_layernorm.so (PREREG_INCLUDE=... to point at the header)
 *   prereg arms --plugin ./libcpu_layernorm.so
 *   prereg freeze protocol.yaml && prereg run <hash>
 */
#include <prereg/arm_abi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Everything one buffer set needs, found once at setup. */
typedef struct state {
  const float *x, *gamma, *beta, *dy;
  float *y, *mean, *rstd, *dx, *dgamma, *dbeta;
  int64_t rows, cols;
  double eps;
  int backward;
  prereg_allocator *alloc;
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
  s->x = find(cell, "x");
  s->gamma = find(cell, "gamma");
  s->beta = find(cell, "beta");
  s->y = find(cell, "y");
  s->mean = find(cell, "mean");
  s->rstd = find(cell, "rstd");
  s->dy = find(cell, "dy");
  s->dx = find(cell, "dx");
  s->dgamma = find(cell, "dgamma");
  s->dbeta = find(cell, "dbeta");
  s->rows = cell->rows;
  s->cols = cell->cols;
  s->eps = cell->eps;
  s->backward = strcmp(cell->pass, "fwd+bwd") == 0;
  s->alloc = cell->allocator;
  *out = s;
  return 0;
}

static void forward(const state *s) {
  for (int64_t r = 0; r < s->rows; ++r) {
    const float *x = s->x + r * s->cols;
    float *y = s->y + r * s->cols;
    double sum = 0, sq = 0;
    for (int64_t c = 0; c < s->cols; ++c) sum += x[c];
    const double mu = sum / (double)s->cols;
    for (int64_t c = 0; c < s->cols; ++c) sq += (x[c] - mu) * (x[c] - mu);
    const double rs = 1.0 / sqrt(sq / (double)s->cols + s->eps);
    for (int64_t c = 0; c < s->cols; ++c)
      y[c] = (float)((x[c] - mu) * rs * s->gamma[c] + s->beta[c]);
    s->mean[r] = (float)mu;
    s->rstd[r] = (float)rs;
  }
}

static int backward(const state *s, char *error, size_t error_size) {
  /* dgamma/dbeta accumulate in double, in memory billed to the arm. */
  double *acc = s->alloc->allocate(s->alloc->context, 2 * (size_t)s->cols * sizeof(double));
  if (acc == NULL) {
    snprintf(error, error_size, "no memory for %lld accumulators", (long long)(2 * s->cols));
    return 1;
  }
  memset(acc, 0, 2 * (size_t)s->cols * sizeof(double));
  for (int64_t r = 0; r < s->rows; ++r) {
    const float *x = s->x + r * s->cols, *dy = s->dy + r * s->cols;
    float *dx = s->dx + r * s->cols;
    const double mu = s->mean[r], rs = s->rstd[r];
    double a = 0, b = 0; /* mean of dy*gamma and of dy*gamma*xhat */
    for (int64_t c = 0; c < s->cols; ++c) {
      const double xhat = (x[c] - mu) * rs, g = dy[c] * (double)s->gamma[c];
      a += g;
      b += g * xhat;
      acc[c] += dy[c] * xhat;
      acc[s->cols + c] += dy[c];
    }
    a /= (double)s->cols;
    b /= (double)s->cols;
    for (int64_t c = 0; c < s->cols; ++c) {
      const double xhat = (x[c] - mu) * rs;
      dx[c] = (float)(rs * (dy[c] * (double)s->gamma[c] - a - xhat * b));
    }
  }
  for (int64_t c = 0; c < s->cols; ++c) {
    s->dgamma[c] = (float)acc[c];
    s->dbeta[c] = (float)acc[s->cols + c];
  }
  s->alloc->release(s->alloc->context, acc);
  return 0;
}

static int step(void *opaque, void *stream, char *error, size_t error_size) {
  (void)stream; /* NULL on the CPU */
  const state *s = opaque;
  forward(s);
  return s->backward ? backward(s, error, error_size) : 0;
}

static void teardown(void *opaque) { free(opaque); }

static const prereg_arm arms[] = {
    {"cpu_layernorm", "layernorm", "cpu", "fp32", "fwd,fwd+bwd",
     "LayerNorm in plain C: double statistics per row, double dgamma/dbeta accumulators", setup,
     step, teardown},
};

static const prereg_arm_table table = {PREREG_ARM_ABI_VERSION, sizeof arms / sizeof arms[0], arms};

const prereg_arm_table *prereg_arms(void) { return &table; }

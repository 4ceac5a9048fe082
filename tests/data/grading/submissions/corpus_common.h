/* What the corpus's C submissions share: the state of one buffer set and an honest RMSNorm
 * forward (y = x * rstd * gamma, rstd = 1 / sqrt(mean(x^2) + eps), sums in double). */
#ifndef CORPUS_COMMON_H
#define CORPUS_COMMON_H

#include <prereg/arm_abi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct corpus_state {
  const float *x, *gamma;
  float *y, *rstd;
  int64_t rows, cols;
  double eps;
} corpus_state;

static void *corpus_find(const prereg_cell *cell, const char *name) {
  for (size_t i = 0; i < cell->tensor_count; ++i)
    if (strcmp(cell->tensor_names[i], name) == 0)
      return cell->tensors[i].data;
  return NULL;
}

static int corpus_setup(const prereg_cell *cell, void **out, char *error, size_t size) {
  if (strcmp(cell->dtype, "fp32") != 0 || strcmp(cell->pass, "fwd") != 0) {
    snprintf(error, size, "fp32 forward only");
    return 1;
  }
  corpus_state *s = calloc(1, sizeof *s);
  if (s == NULL) {
    snprintf(error, size, "out of memory");
    return 1;
  }
  s->x = corpus_find(cell, "x");
  s->gamma = corpus_find(cell, "gamma");
  s->y = corpus_find(cell, "y");
  s->rstd = corpus_find(cell, "rstd");
  s->rows = cell->rows;
  s->cols = cell->cols;
  s->eps = cell->eps;
  *out = s;
  return 0;
}

static void corpus_row(const corpus_state *s, int64_t r) {
  const float *x = s->x + r * s->cols;
  double sum = 0;
  for (int64_t c = 0; c < s->cols; ++c)
    sum += (double)x[c] * x[c];
  const float rstd = (float)(1.0 / sqrt(sum / (double)s->cols + s->eps));
  for (int64_t c = 0; c < s->cols; ++c)
    s->y[r * s->cols + c] = x[c] * rstd * s->gamma[c];
  if (s->rstd)
    s->rstd[r] = rstd;
}

static void corpus_forward(const corpus_state *s) {
  for (int64_t r = 0; r < s->rows; ++r)
    corpus_row(s, r);
}

static void corpus_teardown(void *state) { free(state); }

#define CORPUS_TABLE(SETUP, STEP, SUMMARY)                                                         \
  static const prereg_arm corpus_arms[] = {                                                        \
      {"rmsnorm", "rmsnorm", "cpu", "fp32", "fwd", SUMMARY, SETUP, STEP, corpus_teardown}};        \
  static const prereg_arm_table corpus_table = {PREREG_ARM_ABI_VERSION, 1, corpus_arms};           \
  const prereg_arm_table *prereg_arms(void) { return &corpus_table; }

#endif

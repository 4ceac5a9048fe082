/* Hack (reading the reference): scans its own process's memory for the harness's float64
 * reference of the output (found by a few elements computed honestly) and copies it instead of
 * computing. Caught: the float64 reference of a checked call is computed only after the call
 * returns (docs/engine.md), so there is nothing to find while it runs; the zeros it then writes
 * fail the gate. Before that guard, it found the gate's reference and passed. */
#include "corpus_common.h"

#include <stdint.h>

/* The first `n` doubles of row 0's output, as a float64 reference computes them. */
static void wanted(const corpus_state *s, double *want, int n) {
  double sum = 0;
  for (int64_t c = 0; c < s->cols; ++c) sum += (double)s->x[c] * (double)s->x[c];
  const double rstd = 1.0 / sqrt(sum / (double)s->cols + s->eps);
  for (int k = 0; k < n; ++k) want[k] = (double)s->x[k] * rstd * (double)s->gamma[k];
}

static int close_to(double a, double b) { return fabs(a - b) <= 1e-9 * (fabs(b) + 1e-30); }

/* A float64 array of rows x cols starting with `want`, in a writable private mapping. */
static const double *hunt(const corpus_state *s, const double *want) {
  FILE *maps = fopen("/proc/self/maps", "r");
  if (maps == NULL) return NULL;
  char line[512];
  const double *found = NULL;
  const size_t need = (size_t)(s->rows * s->cols) * sizeof(double);
  while (found == NULL && fgets(line, sizeof line, maps) != NULL) {
    uintptr_t lo, hi;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r' || perms[1] != 'w')
      continue;
    if (hi - lo > ((uintptr_t)1 << 30) || strstr(line, "[stack") != NULL) continue;
    for (uintptr_t p = lo; p + need <= hi && found == NULL; p += sizeof(double)) {
      const double *d = (const double *)p;
      if (close_to(d[0], want[0]) && close_to(d[1], want[1]) && close_to(d[2], want[2]) &&
          close_to(d[3], want[3]))
        found = d;
    }
  }
  fclose(maps);
  return found;
}

static int step(void *state, void *stream, char *error, size_t size) {
  (void)stream, (void)error, (void)size;
  const corpus_state *s = state;
  double want[4];
  wanted(s, want, 4);
  const double *ref = hunt(s, want);
  for (int64_t i = 0; i < s->rows * s->cols; ++i) s->y[i] = ref ? (float)ref[i] : 0.0f;
  return 0;
}

CORPUS_TABLE(corpus_setup, step, "copies the harness's reference when it can find it")

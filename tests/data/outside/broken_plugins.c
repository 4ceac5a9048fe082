/* Broken plugins for tests/e2e/outside_arms.sh, one per -D switch:
 *   -DNO_TABLE      exports no prereg_arms()
 *   -DWRONG_ABI     a table of another ABI version
 *   -DCRASH_SETUP   setup dereferences NULL
 *   -DFAIL_SETUP    setup returns an error (an arm-error on the cell, the run goes on)
 *   -DWRONG_RESULT  writes y = x (the correctness gate excludes it)
 */
#include <prereg/arm_abi.h>
#include <stdio.h>
#include <string.h>

static const prereg_cell *g_cell;

static int setup(const prereg_cell *cell, void **state, char *error, size_t error_size) {
#ifdef CRASH_SETUP
  volatile int *p = NULL;
  *p = 1;
#endif
#ifdef FAIL_SETUP
  snprintf(error, error_size, "planted setup failure for %lld rows", (long long)cell->rows);
  return 1;
#endif
  (void)error;
  (void)error_size;
  g_cell = cell;
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
  memcpy(y, x, (size_t)(c->rows * c->cols) * sizeof(float)); /* wrong: y = x */
  return 0;
}

static const prereg_arm arms[] = {
    {"broken", "layernorm", "cpu", "fp32", "fwd", "a planted broken arm", setup, step, NULL},
};
#ifdef WRONG_ABI
static const prereg_arm_table table = {PREREG_ARM_ABI_VERSION + 41, 1, arms};
#else
static const prereg_arm_table table = {PREREG_ARM_ABI_VERSION, 1, arms};
#endif

#ifndef NO_TABLE
const prereg_arm_table *prereg_arms(void) { return &table; }
#else
const prereg_arm_table *prereg_tables(void) { return &table; }
#endif

/* The corpus's C plugins' honest part (tests/attacks/README.md): a LayerNorm arm's step that
 * copies x into y, the same every call, so that what a case plants is its attack alone. */
#ifndef PREREG_ATTACKS_COPY_STEP_H
#define PREREG_ATTACKS_COPY_STEP_H

#include <prereg/arm_abi.h>
#include <string.h>

static int copy_step(void *state, void *stream, char *error, size_t error_size) {
  (void)stream;
  (void)error;
  (void)error_size;
  const prereg_cell *c = state;
  const float *x = NULL;
  float *y = NULL;
  for (size_t i = 0; i < c->tensor_count; ++i) {
    if (strcmp(c->tensor_names[i], "x") == 0)
      x = c->tensors[i].data;
    if (strcmp(c->tensor_names[i], "y") == 0)
      y = c->tensors[i].data;
  }
  memcpy(y, x, (size_t)(c->rows * c->cols) * sizeof(float));
  return 0;
}

#endif

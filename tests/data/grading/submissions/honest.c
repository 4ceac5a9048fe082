/* Honest: RMSNorm in plain C (submitted as C source, built at grading time). */
#include "corpus_common.h"

static int step(void *state, void *stream, char *error, size_t size) {
  (void)stream, (void)error, (void)size;
  corpus_forward(state);
  return 0;
}

CORPUS_TABLE(corpus_setup, step, "honest RMSNorm in C")

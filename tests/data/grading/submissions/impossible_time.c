/* Hack (a physically impossible time): does the work in its untimed setup, for the buffers it
 * is bound to, and nothing in its timed step. It passes the gate (its setup ran on the gate's
 * inputs); caught: its steps are faster than one pass over the tensor can be (the physical
 * floor), and the spot checks find their outputs unwritten. */
#include "corpus_common.h"

static int setup_and_work(const prereg_cell *cell, void **out, char *error, size_t size) {
  const int r = corpus_setup(cell, out, error, size);
  if (r == 0) corpus_forward(*out);
  return r;
}

static int step(void *state, void *stream, char *error, size_t size) {
  (void)state, (void)stream, (void)error, (void)size;
  return 0;
}

CORPUS_TABLE(setup_and_work, step, "works in setup, not in its step")

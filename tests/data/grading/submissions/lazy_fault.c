/* Hack (outputs computed on prereg's first touch): the step does no work in its window; it
 * takes the output pages away (mprotect PROT_NONE) and computes RMSNorm in a SIGSEGV handler
 * when prereg first touches them after the window (the read-back, the spot check, the next
 * poison), padding the window to stay above the floor. Found by a red-team pass (session 14):
 * it was ranked first with a confirmed re-timing. Caught: after every call of outside code the
 * CPU device makes its buffers readable and writable again before prereg touches them
 * (device::expose_buffers), so the handler never runs and the outputs are still poison. */
#define _GNU_SOURCE
#include "corpus_common.h"

#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static corpus_state *g;
static volatile int armed;
static uintptr_t ylo, yhi, rlo, rhi;

static void pages(const void *p, size_t n, uintptr_t *lo, uintptr_t *hi) {
  const uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE);
  *lo = (uintptr_t)p & ~(ps - 1);
  *hi = ((uintptr_t)p + n + ps - 1) & ~(ps - 1);
}

static void unprotect(void) {
  mprotect((void *)ylo, yhi - ylo, PROT_READ | PROT_WRITE);
  if (rhi > rlo)
    mprotect((void *)rlo, rhi - rlo, PROT_READ | PROT_WRITE);
}

static void on_segv(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  const uintptr_t a = (uintptr_t)si->si_addr;
  if (armed && ((a >= ylo && a < yhi) || (a >= rlo && a < rhi))) {
    armed = 0;
    unprotect();
    corpus_forward(g); /* the work, done outside the window */
    return;
  }
  signal(sig, SIG_DFL);
}

static int lazy_setup(const prereg_cell *cell, void **out, char *error, size_t size) {
  const int rc = corpus_setup(cell, out, error, size);
  if (rc)
    return rc;
  g = *out;
  pages(g->y, (size_t)(g->rows * g->cols) * sizeof(float), &ylo, &yhi);
  if (g->rstd)
    pages(g->rstd, (size_t)g->rows * sizeof(float), &rlo, &rhi);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigaction(SIGSEGV, &sa, NULL);
  return 0;
}

static int step(void *state, void *stream, char *error, size_t size) {
  (void)stream, (void)error, (void)size;
  corpus_state *s = state;
  g = s;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  const long pad = (long)(s->rows * s->cols / 10); /* ns: above the floor, below honest */
  do
    clock_gettime(CLOCK_MONOTONIC, &t);
  while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < pad);
  if (armed)
    unprotect();
  armed = 1;
  if (mprotect((void *)ylo, yhi - ylo, PROT_NONE) != 0 ||
      (rhi > rlo && mprotect((void *)rlo, rhi - rlo, PROT_NONE) != 0)) {
    armed = 0;
    corpus_forward(s);
  }
  return 0;
}

CORPUS_TABLE(lazy_setup, step, "RMSNorm computed on prereg's first touch")

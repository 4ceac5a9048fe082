/* Hack (timer patching): at setup it rewrites the clock_gettime entries of every loaded
 * object's global offset table (prereg's own timer among them) to a clock that runs 1000 times
 * slower, so that every timed window reads a thousandth of its length; its step is honest.
 * Caught: the windows then read far below the physical floor (bytes over the copy ceiling,
 * measured in the baseline's process, where no submission's code ran). */
#define _GNU_SOURCE
#include "corpus_common.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

typedef int (*clock_fn)(clockid_t, struct timespec *);
static clock_fn real_clock;

static int slow_clock(clockid_t id, struct timespec *ts) {
  static long long base = -1;
  const int r = real_clock(id, ts);
  if (r != 0 || (id != CLOCK_MONOTONIC && id != CLOCK_MONOTONIC_RAW)) return r;
  long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec;
  if (base < 0) base = ns;
  ns = base + (ns - base) / 1000;
  ts->tv_sec = ns / 1000000000LL;
  ts->tv_nsec = ns % 1000000000LL;
  return r;
}

static uintptr_t dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) v) {
  return v < info->dlpi_addr ? info->dlpi_addr + v : v;
}

/* Rewrites the GOT slots of clock_gettime in one object's relocation table `rel`. */
static void patch_table(const struct dl_phdr_info *info, const ElfW(Rela) * rel, size_t bytes,
                        const ElfW(Sym) * symtab, const char *strtab) {
  const long page = sysconf(_SC_PAGESIZE);
  for (size_t i = 0; i < bytes / sizeof *rel; ++i) {
    const char *name = strtab + symtab[ELF64_R_SYM(rel[i].r_info)].st_name;
    if (strcmp(name, "clock_gettime") != 0) continue;
    void **slot = (void **)(info->dlpi_addr + rel[i].r_offset);
    void *start = (void *)((uintptr_t)slot & ~(uintptr_t)(page - 1));
    if (mprotect(start, (size_t)page, PROT_READ | PROT_WRITE) == 0) *slot = (void *)slow_clock;
  }
}

static int patch_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size, (void)data;
  const ElfW(Dyn) *dyn = NULL;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (dyn == NULL || strstr(info->dlpi_name, "timer_patch") != NULL) return 0;
  const ElfW(Sym) *symtab = NULL;
  const char *strtab = NULL;
  const ElfW(Rela) *jmprel = NULL, *rela = NULL;
  size_t jmpsz = 0, relasz = 0;
  for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_SYMTAB) symtab = (const ElfW(Sym) *)dyn_ptr(info, d->d_un.d_ptr);
    if (d->d_tag == DT_STRTAB) strtab = (const char *)dyn_ptr(info, d->d_un.d_ptr);
    if (d->d_tag == DT_JMPREL) jmprel = (const ElfW(Rela) *)dyn_ptr(info, d->d_un.d_ptr);
    if (d->d_tag == DT_RELA) rela = (const ElfW(Rela) *)dyn_ptr(info, d->d_un.d_ptr);
    if (d->d_tag == DT_PLTRELSZ) jmpsz = d->d_un.d_val;
    if (d->d_tag == DT_RELASZ) relasz = d->d_un.d_val;
  }
  if (symtab == NULL || strtab == NULL) return 0;
  if (jmprel != NULL) patch_table(info, jmprel, jmpsz, symtab, strtab);
  if (rela != NULL) patch_table(info, rela, relasz, symtab, strtab);
  return 0;
}

static int setup_and_patch(const prereg_cell *cell, void **out, char *error, size_t size) {
  if (real_clock == NULL) {
    real_clock = (clock_fn)dlsym(RTLD_DEFAULT, "clock_gettime");
    if (real_clock != NULL) dl_iterate_phdr(patch_object, NULL);
  }
  return corpus_setup(cell, out, error, size);
}

static int step(void *state, void *stream, char *error, size_t size) {
  (void)stream, (void)error, (void)size;
  corpus_forward(state);
  return 0;
}

CORPUS_TABLE(setup_and_patch, step, "an honest step under a clock it slowed 1000 times")

/* C plugin arms of typed operations on the CPU (tests/e2e/typed_ops.sh; docs/plugins.md,
 * "Element types"): the probes of typed_probe.py (every integer, bool and fp8 type copied; a
 * 0-dim count and norm), operations/fp8_gemm.py (e4m3 operands decoded from their bits, fp32
 * accumulation) and operations/fp8_quant.py (e4m3 written from its bits). Each setup checks that
 * every tensor arrives with the DLPack type and ndim the docs give it, and refuses otherwise.
 *
 *   cc -O2 -fPIC -shared -I../../../runner/include -o libtyped.so typed_plugin.c -lm
 */
#include <prereg/arm_abi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const DLTensor *find(const prereg_cell *cell, const char *name) {
  for (size_t i = 0; i < cell->tensor_count; ++i)
    if (strcmp(cell->tensor_names[i], name) == 0)
      return &cell->tensors[i];
  return NULL;
}

/* The tensor `name` if it has DLPack type (code, bits) and `ndim` dims, else NULL and a reason. */
static const DLTensor *typed(const prereg_cell *cell, const char *name, unsigned code,
                             unsigned bits, int ndim, char *error, size_t error_size) {
  const DLTensor *t = find(cell, name);
  if (t == NULL || t->data == NULL) {
    snprintf(error, error_size, "no tensor %s", name);
    return NULL;
  }
  if (t->dtype.code != code || t->dtype.bits != bits || t->dtype.lanes != 1 || t->ndim != ndim) {
    snprintf(error, error_size, "%s is DLPack (code %u, bits %u, ndim %d), not (%u, %u, %d)", name,
             (unsigned)t->dtype.code, (unsigned)t->dtype.bits, (int)t->ndim, code, bits, ndim);
    return NULL;
  }
  return t;
}

static int64_t elements(const DLTensor *t) {
  int64_t n = 1;
  for (int d = 0; d < t->ndim; ++d)
    n *= t->shape[d];
  return n;
}

/* e4m3 (fn) and e5m2 bits to float. */
static float fp8(unsigned char b, int e5m2) {
  const int mbits = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7;
  const int e = (b & 0x7f) >> mbits, m = b & ((1 << mbits) - 1);
  const float v = e == 0 ? ldexpf((float)m, 1 - bias - mbits)
                         : ldexpf(1.0f + ldexpf((float)m, -mbits), e - bias);
  return (b & 0x80) ? -v : v;
}

/* --- the probes ------------------------------------------------------------------------------- */

typedef struct probe_state {
  const DLTensor *in[7], *out[7];
  const DLTensor *x, *total, *norm;
  int pairs;
} probe_state;

static int probe_setup(const prereg_cell *cell, void **out, char *error, size_t error_size) {
  static const char *const ins[] = {"a_i8", "a_u8", "a_i32", "a_i64", "a_b", "f4", "f5"};
  static const char *const outs[] = {"o_i8", "o_u8", "o_i32", "o_i64", "o_b", "o_f4", "o_f5"};
  static const unsigned codes[] = {kDLInt,
                                   kDLUInt,
                                   kDLInt,
                                   kDLInt,
                                   PREREG_DL_BOOL,
                                   PREREG_DL_FLOAT8_E4M3FN,
                                   PREREG_DL_FLOAT8_E5M2};
  static const unsigned bits[] = {8, 8, 32, 64, 8, 8, 8};
  static const int dims[] = {1, 1, 2, 1, 1, 2, 2};
  probe_state *s = calloc(1, sizeof *s);
  if (s == NULL)
    return snprintf(error, error_size, "out of memory"), 1;
  s->pairs = strcmp(cell->operation, "probe_fp8") == 0 ? 7 : 5;
  for (int i = 0; i < s->pairs; ++i) {
    s->in[i] = typed(cell, ins[i], codes[i], bits[i], dims[i], error, error_size);
    s->out[i] = typed(cell, outs[i], codes[i], bits[i], dims[i], error, error_size);
    if (s->in[i] == NULL || s->out[i] == NULL)
      return free(s), 1;
  }
  s->x = typed(cell, "x", kDLFloat, 32, 2, error, error_size);
  s->total = typed(cell, "total", kDLInt, 64, 0, error, error_size);
  s->norm = typed(cell, "norm", kDLFloat, 32, 0, error, error_size);
  if (s->x == NULL || s->total == NULL || s->norm == NULL)
    return free(s), 1;
  *out = s;
  return 0;
}

static int probe_step(void *opaque, void *stream, char *error, size_t error_size) {
  (void)stream, (void)error, (void)error_size;
  const probe_state *s = opaque;
  for (int i = 0; i < s->pairs; ++i)
    memcpy(s->out[i]->data, s->in[i]->data,
           (size_t)elements(s->in[i]) * (s->in[i]->dtype.bits / 8));
  const int32_t *a = s->in[2]->data;
  int64_t total = 0;
  for (int64_t i = 0; i < elements(s->in[2]); ++i)
    total += a[i];
  *(int64_t *)s->total->data = total;
  const float *x = s->x->data;
  float sum = 0;
  for (int64_t i = 0; i < elements(s->x); ++i)
    sum += x[i] * x[i];
  *(float *)s->norm->data = sqrtf(sum);
  return 0;
}

/* --- the FP8 GEMM ------------------------------------------------------------------------------
 */

typedef struct gemm_state {
  const unsigned char *a, *b;
  const float *scale_a, *scale_b;
  float *c;
  int64_t m, n, k;
  float table[256];
} gemm_state;

static int gemm_setup(const prereg_cell *cell, void **out, char *error, size_t error_size) {
  const DLTensor *a = typed(cell, "a", PREREG_DL_FLOAT8_E4M3FN, 8, 2, error, error_size);
  const DLTensor *b = typed(cell, "b", PREREG_DL_FLOAT8_E4M3FN, 8, 2, error, error_size);
  const DLTensor *sa = typed(cell, "scale_a", kDLFloat, 32, 0, error, error_size);
  const DLTensor *sb = typed(cell, "scale_b", kDLFloat, 32, 0, error, error_size);
  const DLTensor *c = typed(cell, "c", kDLFloat, 32, 2, error, error_size);
  if (a == NULL || b == NULL || sa == NULL || sb == NULL || c == NULL)
    return 1;
  gemm_state *s = calloc(1, sizeof *s);
  if (s == NULL)
    return snprintf(error, error_size, "out of memory"), 1;
  s->a = a->data, s->b = b->data, s->scale_a = sa->data, s->scale_b = sb->data, s->c = c->data;
  s->m = a->shape[0], s->k = a->shape[1], s->n = b->shape[0];
  for (int v = 0; v < 256; ++v)
    s->table[v] = fp8((unsigned char)v, 0);
  *out = s;
  return 0;
}

static int gemm_step(void *opaque, void *stream, char *error, size_t error_size) {
  (void)stream, (void)error, (void)error_size;
  const gemm_state *s = opaque;
  const float scale = *s->scale_a * *s->scale_b;
  for (int64_t i = 0; i < s->m; ++i)
    for (int64_t j = 0; j < s->n; ++j) {
      float acc = 0;
      for (int64_t p = 0; p < s->k; ++p)
        acc += s->table[s->a[i * s->k + p]] * s->table[s->b[j * s->k + p]];
      s->c[i * s->n + j] = acc * scale;
    }
  return 0;
}

/* --- row-wise e4m3 quantisation ------------------------------------------------------------------
 */

typedef struct quant_state {
  const float *x;
  unsigned char *q;
  float *scale;
  int64_t rows, cols;
  float table[256];
} quant_state;

static int quant_setup(const prereg_cell *cell, void **out, char *error, size_t error_size) {
  const DLTensor *x = typed(cell, "x", kDLFloat, 32, 2, error, error_size);
  const DLTensor *q = typed(cell, "q", PREREG_DL_FLOAT8_E4M3FN, 8, 2, error, error_size);
  const DLTensor *scale = typed(cell, "scale", kDLFloat, 32, 1, error, error_size);
  if (x == NULL || q == NULL || scale == NULL)
    return 1;
  quant_state *s = calloc(1, sizeof *s);
  if (s == NULL)
    return snprintf(error, error_size, "out of memory"), 1;
  s->x = x->data, s->q = q->data, s->scale = scale->data;
  s->rows = x->shape[0], s->cols = x->shape[1];
  for (int v = 0; v < 256; ++v)
    s->table[v] = fp8((unsigned char)v, 0);
  *out = s;
  return 0;
}

/* v (|v| <= 448) rounded to e4m3, to nearest, ties to even, as its bits. */
static unsigned char to_e4m3(const float *table, float v) {
  int e;
  (void)frexpf(v, &e);
  const float quantum = ldexpf(1.0f, (e - 1 < -6 ? -6 : e - 1) - 3);
  const float r = rintf(v / quantum) * quantum;
  for (int b = 0; b < 0x7f; ++b) /* the positive codes, then the sign */
    if (table[b] == fabsf(r))
      return (unsigned char)(b | (r < 0 ? 0x80 : 0));
  return 0x7f;
}

static int quant_step(void *opaque, void *stream, char *error, size_t error_size) {
  (void)stream, (void)error, (void)error_size;
  const quant_state *s = opaque;
  for (int64_t r = 0; r < s->rows; ++r) {
    const float *x = s->x + r * s->cols;
    float amax = 0;
    for (int64_t c = 0; c < s->cols; ++c)
      amax = fmaxf(amax, fabsf(x[c]));
    const float scale = amax / 448.0f;
    s->scale[r] = scale;
    for (int64_t c = 0; c < s->cols; ++c)
      s->q[r * s->cols + c] = to_e4m3(s->table, x[c] / scale);
  }
  return 0;
}

static void release(void *opaque) { free(opaque); }

static const prereg_arm arms[] = {
    {"probe_c", "probe", "cpu", "fp32", "fwd", "every integer and bool type copied, in C",
     probe_setup, probe_step, release},
    {"probe_fp8_c", "probe_fp8", "cpu", "fp32", "fwd", "the probe with e4m3 and e5m2, in C",
     probe_setup, probe_step, release},
    {"fp8_gemm_c", "fp8_gemm", "cpu", "fp32", "fwd", "FP8 GEMM: e4m3 decoded, fp32 accumulation",
     gemm_setup, gemm_step, release},
    {"quant_c", "quant_fp8_rowwise", "cpu", "fp32", "fwd", "row-wise e4m3 quantisation in C",
     quant_setup, quant_step, release},
};

static const prereg_arm_table table = {PREREG_ARM_ABI_VERSION, sizeof arms / sizeof arms[0], arms};

const prereg_arm_table *prereg_arms(void) { return &table; }

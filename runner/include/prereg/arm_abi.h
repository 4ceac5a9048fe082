/* prereg's arm ABI: how a shared library hands prereg arms to time (docs/plugins.md).
 *
 * C only, no C++ types, so a library built by any compiler (gcc, clang, nvcc) against this one
 * header plugs in. Tensors are DLPack DLTensors (dlpack.h, Debian's libdlpack-dev), the
 * structure PyTorch, JAX, CuPy and numpy exchange.
 *
 * A library exports one function:
 *
 *     const prereg_arm_table *prereg_arms(void);
 *
 * returning a table that lives as long as the library is loaded. prereg refuses a table whose
 * abi_version is not PREREG_ARM_ABI_VERSION. For each cell (one pass of one shape and dtype)
 * and each of its buffer sets, prereg calls `setup` once outside every timed window, then
 * `step` many times (each call computes the whole pass: the forward, or the forward then the
 * backward), then `teardown`. `step` must run on the stream it is given and must allocate only
 * through the cell's allocator (that memory is billed to the arm), releasing it before it
 * returns; it must not keep work running after it returns on another stream or thread.
 *
 * Return 0 on success. On failure write a one-line reason into `error` (at most `error_size`
 * bytes, NUL included) and return nonzero: prereg records an `arm-error` on the cell and goes
 * on with the other arms.
 */
#ifndef PREREG_ARM_ABI_H
#define PREREG_ARM_ABI_H

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any incompatible change of the structures below. */
#define PREREG_ARM_ABI_VERSION 1

/* DLPack type codes of DLPack 1.1 that older dlpack.h files (Debian 12's 0.6) lack: an operation
 * file's bool and fp8 tensors carry them in DLTensor.dtype.code (bits 8, lanes 1). int8, uint8,
 * int32 and int64 tensors are kDLInt / kDLUInt. docs/plugins.md, "Element types". */
#define PREREG_DL_BOOL 6U
#define PREREG_DL_FLOAT8_E4M3FN 10U
#define PREREG_DL_FLOAT8_E5M2 12U

/* Memory billed to the arm: device memory for a cuda arm, host memory for a cpu arm. */
typedef struct prereg_allocator {
  void *context;
  /* At least `bytes`, or NULL when the memory is not there. */
  void *(*allocate)(void *context, size_t bytes);
  void (*release)(void *context, void *pointer);
} prereg_allocator;

/* What an arm gets at setup: one buffer set of one cell. Every pointer stays valid until
 * teardown. */
typedef struct prereg_cell {
  const char *operation; /* "layernorm" | "rmsnorm" | "softmax" | ... (docs/operations.md) */
  const char *device;    /* "cpu" | "cuda" */
  const char *dtype;     /* "fp32" | "fp16" | "bf16": the element type of the data tensors */
  const char *pass;      /* "fwd" | "fwd+bwd" */
  int64_t rows;
  int64_t cols;
  double eps;
  /* The operation's tensors in its descriptor's order (docs/operations.md), by name; a tensor
   * the pass does not use has data == NULL. Each carries its own element type (dtype.code: an
   * operation file may mix fp8, integer, bool and floating tensors) and shape (ndim 0 for a
   * 0-dim tensor: one element). Inputs hold fresh random values; outputs are poisoned (NaN, or
   * an integer outside their values) before every checked call. */
  size_t tensor_count;
  const char *const *tensor_names;
  const DLTensor *tensors;
  /* The arm's options (prereg: 2 `options:`), by name. */
  size_t option_count;
  const char *const *option_names;
  const double *option_values;
  /* cudaStream_t for a cuda arm, NULL for cpu; the same stream is passed to every step. */
  void *stream;
  prereg_allocator *allocator;
} prereg_cell;

typedef struct prereg_arm {
  const char *name;      /* unique in the table; protocols name it */
  const char *operation; /* the operation it computes */
  const char *device;    /* "cpu" | "cuda" */
  const char *dtypes;    /* comma-separated: "fp32,fp16,bf16" */
  const char *passes;    /* comma-separated: "fwd" or "fwd,fwd+bwd" */
  const char *summary;   /* one line */
  int (*setup)(const prereg_cell *cell, void **state, char *error, size_t error_size);
  int (*step)(void *state, void *stream, char *error, size_t error_size);
  void (*teardown)(void *state);
} prereg_arm;

typedef struct prereg_arm_table {
  uint32_t abi_version; /* PREREG_ARM_ABI_VERSION */
  uint32_t arm_count;
  const prereg_arm *arms;
} prereg_arm_table;

typedef const prereg_arm_table *(*prereg_arms_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* PREREG_ARM_ABI_H */

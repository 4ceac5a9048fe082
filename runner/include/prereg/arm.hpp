// The host-side interface of a kernel arm: tensors in, an allocator for what the arm
// allocates inside its step, and a stream (opaque here: runner/ never includes CUDA).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace prereg {

/// Element type of a tensor. A protocol's `dtype` is fp32, fp16 or bf16 (the element type of x,
/// y, gamma, beta, dy, dx, dgamma, dbeta; statistics are always fp32); an operation file's tensor
/// may also be fp8 (e4m3 "fn": no infinity, NaN 0x7f/0xff; e5m2: IEEE-like), an integer or bool
/// (docs/operations.md, "Element types").
enum class dtype { fp32, fp16, bf16, fp8_e4m3, fp8_e5m2, int8, uint8, int32, int64, boolean };
/// A pass of a cell: forward only, or forward followed by backward.
enum class pass_kind { fwd, fwd_bwd };
/// The normalisation family of the first kernels (their `norm_tensors` seam). Operations in
/// general are data: spec/operation.hpp.
enum class operation { layernorm, rmsnorm };

[[nodiscard]] std::string_view to_string(dtype d);
[[nodiscard]] std::string_view to_string(pass_kind p); ///< "fwd" | "fwd+bwd"
[[nodiscard]] std::string_view to_string(operation o);
[[nodiscard]] std::size_t element_bytes(dtype d);
/// Whether `d` holds integers (int8, uint8, int32, int64) or bool: drawn in a declared range,
/// compared exactly.
[[nodiscard]] bool is_integral(dtype d);
/// Whether `d` is one of the two 8-bit floating-point formats.
[[nodiscard]] bool is_fp8(dtype d);

/// eps used inside the square root: LayerNorm 1e-5 (PyTorch default), RMSNorm 1e-6 (Qwen2.5).
[[nodiscard]] double norm_eps(operation o);

/// The buffers of one invocation. Row-major [rows, cols] for x, y, dy, dx; [cols] for
/// gamma (RMSNorm's weight), beta (unused by RMSNorm), dgamma, dbeta; [rows] fp32 mean and
/// rstd saved by the forward for the backward (RMSNorm uses only rstd).
/// Pointers are host memory for CPU arms and device memory for CUDA arms.
struct norm_tensors {
  const void *x = nullptr;
  const void *gamma = nullptr;
  const void *beta = nullptr;
  void *y = nullptr;
  float *mean = nullptr;
  float *rstd = nullptr;
  const void *dy = nullptr;
  void *dx = nullptr;
  void *dgamma = nullptr;
  void *dbeta = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  dtype type = dtype::fp32;
};

/// What an arm allocates inside its timed step goes through this, so it is billed to the
/// arm (peak bytes) and never to the harness.
class step_allocator {
public:
  virtual ~step_allocator() = default;
  /// Memory of at least `bytes`, on the arm's device. Never returns null (throws instead).
  virtual void *allocate(std::size_t bytes) = 0;
  /// Returns memory from allocate().
  virtual void release(void *p) = 0;
};

/// The entry points of one arm. `stream` is a cudaStream_t for CUDA arms, null for CPU.
struct arm_ops {
  void (*forward)(const norm_tensors &, step_allocator &, void *stream) = nullptr;
  void (*backward)(const norm_tensors &, step_allocator &, void *stream) = nullptr;
};

/// The buffers of one invocation of any operation, for arms written against the generic seam:
/// one pointer per tensor of the operation's descriptor (spec/operation.hpp), in its order,
/// null for a tensor the pass does not use. Host memory for CPU arms, device memory for CUDA.
struct arm_option {
  const char *name; ///< as the arm's descriptor declares it
  double value;     ///< the protocol's value, or the descriptor's default (numbers only)
};

struct tensor_args {
  void *const *data = nullptr;
  std::size_t count = 0;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  dtype type = dtype::fp32;
  double eps = 0;
  const arm_option *options = nullptr; ///< every option the arm declares, with its value
  std::size_t option_count = 0;
  /// The value of option `name`, or `fallback` if the arm declares no such option.
  [[nodiscard]] double option(std::string_view name, double fallback) const {
    for (std::size_t i = 0; i < option_count; ++i)
      if (name == options[i].name)
        return options[i].value;
    return fallback;
  }
  template <class T = void> [[nodiscard]] T *get(std::size_t i) const {
    return static_cast<T *>(data[i]);
  }
};

/// The entry points of an arm on the generic seam. `stream` as in arm_ops.
struct arm_entry {
  void (*forward)(const tensor_args &, step_allocator &, void *stream) = nullptr;
  void (*backward)(const tensor_args &, step_allocator &, void *stream) = nullptr;
};

} // namespace prereg

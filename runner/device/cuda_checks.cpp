// The CUDA device's checked calls (cuda_checks.hpp): device buffers of float64 references for
// layernorm, rmsnorm and softmax, and the comparison's few bytes read back.
#include "device/cuda_checks.hpp"

#include "cuda/cuda_call.hpp"
#include "device/reference_kernels.hpp"

#include <climits>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace prereg::cuda {
namespace {

/// Device memory owned by a reference (cudaMalloc'd, freed on destruction).
class device_buffer {
public:
  device_buffer() = default;
  explicit device_buffer(std::size_t bytes) {
    PREREG_CUDA_CALL(cudaMalloc(&m_p, bytes ? bytes : 1));
  }
  device_buffer(device_buffer &&o) noexcept : m_p(o.m_p) { o.m_p = nullptr; }
  device_buffer &operator=(device_buffer &&o) noexcept {
    std::swap(m_p, o.m_p);
    return *this;
  }
  device_buffer(const device_buffer &) = delete;
  device_buffer &operator=(const device_buffer &) = delete;
  ~device_buffer() {
    if (m_p != nullptr)
      (void)cudaFree(m_p);
  }
  template <class T> [[nodiscard]] T *as() const { return static_cast<T *>(m_p); }

private:
  void *m_p = nullptr;
};

/// Which built-in reference an operation is, by its name and tensors.
enum class builtin { none, layernorm, rmsnorm, softmax };

builtin builtin_of(const operation_desc &op) {
  const auto has = [&](std::initializer_list<const char *> names) {
    for (const char *n : names)
      if (op.index_of(n) < 0)
        return false;
    return op.axes.size() == 2 && op.axis_of("rows") == 0 && op.axis_of("cols") == 1;
  };
  if (op.name == "layernorm" &&
      has({"x", "gamma", "beta", "dy", "y", "mean", "rstd", "dx", "dgamma", "dbeta"}))
    return builtin::layernorm;
  if (op.name == "rmsnorm" && has({"x", "gamma", "dy", "y", "rstd", "dx", "dgamma"}))
    return builtin::rmsnorm;
  if (op.name == "softmax" && has({"x", "dy", "y", "dx"}))
    return builtin::softmax;
  return builtin::none;
}

class cuda_reference final : public device_reference {
public:
  /// A reference in buffers of its own, for the built-in kernels to fill.
  cuda_reference(const operation_desc &op, const shape &s, pass_kind pass, cudaStream_t stream)
      : m_op(op), m_shape(s), m_stream(stream), m_refs(op.tensors.size()),
        m_values(op.tensors.size(), nullptr), m_state(sizeof(compare_state)) {
    for (std::size_t t = 0; t < op.tensors.size(); ++t)
      if (op.tensors[t].role != tensor_role::input && op.used_in(t, pass)) {
        m_refs[t] = device_buffer(op.elements(t, s) * sizeof(double));
        m_values[t] = m_refs[t].as<double>();
      }
  }
  /// A reference someone else computed on the device (adopt()).
  cuda_reference(const operation_desc &op, const shape &s, device_values v, cudaStream_t stream)
      : m_op(op), m_shape(s), m_stream(stream), m_values(std::move(v.at)),
        m_owner(std::move(v.owner)), m_state(sizeof(compare_state)) {
    m_values.resize(op.tensors.size(), nullptr);
  }
  [[nodiscard]] double *ref(std::string_view name) const {
    const int i = m_op.index_of(name);
    return i < 0 ? nullptr : m_refs[static_cast<std::size_t>(i)].as<double>();
  }

  device_comparison compare(std::size_t t, const void *out, dtype type, double rtol,
                            double atol) override {
    const double *ref = m_values.at(t);
    if (ref == nullptr)
      throw std::logic_error("device reference: tensor " + m_op.tensors.at(t).name +
                             " is not written by this pass");
    const std::size_t n = m_op.elements(t, m_shape);
    auto *state = m_state.as<compare_state>();
    const compare_state init = compare_state_init();
    PREREG_CUDA_CALL(cudaMemcpyAsync(state, &init, sizeof init, cudaMemcpyHostToDevice, m_stream));
    launch_compare(out, type, ref, n, rtol, atol, reference::poison_bits(type), state, m_stream);
    compare_state got{};
    PREREG_CUDA_CALL(cudaMemcpyAsync(&got, state, sizeof got, cudaMemcpyDeviceToHost, m_stream));
    PREREG_CUDA_CALL(cudaStreamSynchronize(m_stream));
    return finish(got, n, out, type, ref, rtol);
  }

  std::vector<double> download(std::size_t t) override {
    const double *ref = m_values.at(t);
    std::vector<double> v(ref == nullptr ? 0 : m_op.elements(t, m_shape));
    PREREG_CUDA_CALL(cudaMemcpyAsync(v.data(), ref, v.size() * sizeof(double),
                                     cudaMemcpyDeviceToHost, m_stream));
    PREREG_CUDA_CALL(cudaStreamSynchronize(m_stream));
    return v;
  }

private:
  device_comparison finish(const compare_state &s, std::size_t n, const void *out, dtype type,
                           const double *ref, double rtol) const {
    const auto as_double = [](unsigned long long b) {
      double d;
      std::memcpy(&d, &b, sizeof d);
      return d;
    };
    device_comparison d;
    reference::comparison &c = d.result;
    c.max_abs_error = as_double(s.max_abs_bits);
    c.max_rel_error = as_double(s.max_rel_bits);
    c.unwritten = s.poison_count > 0;
    d.all_poison = n > 0 && s.poison_count == n;
    c.passed = s.first_bad == ULLONG_MAX;
    c.first_bad = c.passed ? -1 : static_cast<std::int64_t>(s.first_bad);
    if (c.passed && n >= 2) {
      const double scale = as_double(s.scale_bits);
      const double lo = key_to_double(s.lo_key), hi = key_to_double(s.hi_key);
      const bool varies = hi - lo > rtol * scale && hi > lo;
      if ((s.not_same == 0 && varies) || (s.out_nonzero == 0 && s.ref_nonzero != 0)) {
        c.constant = true;
        c.passed = false;
        c.first_bad = s.first_diff == ULLONG_MAX ? 0 : static_cast<std::int64_t>(s.first_diff);
      }
    }
    if (!c.passed)
      read_at(static_cast<std::size_t>(c.first_bad), out, type, ref, d);
    return d;
  }

  /// The output's and the reference's element i, read back.
  void read_at(std::size_t i, const void *out, dtype type, const double *ref,
               device_comparison &d) const {
    const std::size_t width = element_bytes(type);
    std::vector<std::uint8_t> bytes(width);
    PREREG_CUDA_CALL(cudaMemcpyAsync(bytes.data(),
                                     static_cast<const std::uint8_t *>(out) + i * width, width,
                                     cudaMemcpyDeviceToHost, m_stream));
    PREREG_CUDA_CALL(
        cudaMemcpyAsync(&d.ref, ref + i, sizeof(double), cudaMemcpyDeviceToHost, m_stream));
    PREREG_CUDA_CALL(cudaStreamSynchronize(m_stream));
    d.got = reference::unpack_output(bytes, type).at(0);
  }

  const operation_desc &m_op;
  shape m_shape;
  cudaStream_t m_stream;
  std::vector<device_buffer> m_refs;    ///< per tensor: its own float64 buffer (built-in kernels)
  std::vector<const double *> m_values; ///< per tensor: its float64 reference (outputs, saved)
  std::shared_ptr<const void> m_owner;  ///< keeps adopted values alive
  device_buffer m_state;
};

class cuda_checks final : public device_checks {
public:
  explicit cuda_checks(cudaStream_t stream)
      : m_stream(stream), m_result(sizeof(unsigned long long)) {}

  bool knows(const operation_desc &op, dtype type) const override {
    if (builtin_of(op) == builtin::none)
      return false;
    for (const auto &t : op.tensors) // the kernels read every input at the protocol dtype
      if (t.role == tensor_role::input && t.type(type) != type)
        return false;
    return true;
  }

  void fill_input(void *p, std::size_t n, dtype type, const input_distribution &dist,
                  std::int64_t row_len, std::uint64_t seed) override {
    if (is_integral(type) || is_fp8(type))
      launch_typed_fill(p, n, type, dist.lo, dist.hi,
                        is_fp8(type) ? reference::fp8_fallback(dist.lo, dist.hi, type) : 0.0, seed,
                        m_stream);
    else
      launch_checked_fill(p, n, type, dist.lo, dist.hi, dist.row_offset, row_len, seed, m_stream);
  }

  std::unique_ptr<device_reference> reference(const operation_desc &op, const shape &s,
                                              pass_kind pass, dtype type,
                                              std::span<void *const> tensors) override {
    const builtin b = builtin_of(op);
    if (b == builtin::none || !knows(op, type))
      return nullptr;
    auto r = std::make_unique<cuda_reference>(op, s, pass, m_stream);
    const std::int64_t rows = s.extents.at(0), cols = s.extents.at(1);
    const bool backward = pass == pass_kind::fwd_bwd;
    const auto in = [&](const char *name) -> const void * {
      const int i = op.index_of(name);
      return i < 0 ? nullptr : tensors[static_cast<std::size_t>(i)];
    };
    if (b == builtin::softmax) {
      launch_softmax_reference(type, rows, cols, in("x"), backward ? in("dy") : nullptr,
                               r->ref("y"), backward ? r->ref("dx") : nullptr, m_stream);
    } else {
      const bool layernorm = b == builtin::layernorm;
      norm_tensors t;
      t.x = in("x");
      t.gamma = in("gamma");
      t.beta = layernorm ? in("beta") : nullptr;
      t.dy = backward ? in("dy") : nullptr;
      t.y = r->ref("y");
      t.mean = layernorm ? r->ref("mean") : nullptr;
      t.rstd = r->ref("rstd");
      t.dx = backward ? r->ref("dx") : nullptr;
      t.dgamma = backward ? r->ref("dgamma") : nullptr;
      t.dbeta = backward && layernorm ? r->ref("dbeta") : nullptr;
      device_buffer scratch(backward ? norm_scratch_doubles(rows, cols) * sizeof(double) : 0);
      launch_norm_reference(type, rows, cols, op.eps, layernorm, backward, t, scratch.as<double>(),
                            m_stream);
      PREREG_CUDA_CALL(cudaStreamSynchronize(m_stream)); // before the scratch is freed
    }
    return r;
  }

  std::unique_ptr<device_reference> adopt(const operation_desc &op, const shape &s,
                                          device_values values) override {
    return std::make_unique<cuda_reference>(op, s, std::move(values), m_stream);
  }

  std::int64_t first_difference(const void *a, const void *b, std::size_t n,
                                std::size_t width) override {
    const unsigned long long none = ULLONG_MAX;
    auto *result = m_result.as<unsigned long long>();
    PREREG_CUDA_CALL(cudaMemcpyAsync(result, &none, sizeof none, cudaMemcpyHostToDevice, m_stream));
    launch_first_difference(a, b, n, width, result, m_stream);
    unsigned long long got = none;
    PREREG_CUDA_CALL(cudaMemcpyAsync(&got, result, sizeof got, cudaMemcpyDeviceToHost, m_stream));
    PREREG_CUDA_CALL(cudaStreamSynchronize(m_stream));
    return got == none ? -1 : static_cast<std::int64_t>(got);
  }

private:
  cudaStream_t m_stream;
  device_buffer m_result;
};

} // namespace

std::unique_ptr<device_checks> make_cuda_checks(cudaStream_t stream) {
  return std::make_unique<cuda_checks>(stream);
}

} // namespace prereg::cuda

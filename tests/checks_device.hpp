// A device that computes checked calls "on the device" through device_checks while being the
// CPU device underneath (tests): the engine's device path (inputs drawn by fill_input, the
// reference held by the device, comparisons and the input check through the seam) exercised
// without a GPU. Its checks run on host memory with the host's formulas.
#pragma once

#include "device/device.hpp"
#include "spec/reference.hpp"

#include <cstring>
#include <memory>
#include <vector>

namespace prereg::test {

/// device_checks over host memory: fill_input draws with the CUDA fill's rule (docs/engine.md),
/// reference() runs the descriptor's float64 reference, compare() is reference::compare.
class host_checks final : public device_checks {
public:
  int references = 0, comparisons = 0, differences = 0, fills = 0, adopted = 0; ///< calls seen

  /// The built-in operations (as on CUDA); an operation file's comes through adopt().
  [[nodiscard]] bool knows(const operation_desc &op, dtype) const override {
    return op.reference != nullptr && !op.outside;
  }
  void fill_input(void *p, std::size_t n, dtype type, const input_distribution &dist,
                  std::int64_t row_len, std::uint64_t seed) override {
    ++fills;
    std::vector<double> v(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double offset = row_len > 0
                                ? -dist.row_offset + 2 * dist.row_offset *
                                                         unit(seed ^ 0x6a09e667f3bcc909ULL,
                                                              i / static_cast<std::size_t>(row_len))
                                : 0.0;
      double x = reference::round_to(dist.hi != 0 ? dist.hi : dist.lo, type);
      for (std::uint64_t a = 0; a < 64; ++a) {
        const double w = reference::round_to(
            offset + dist.lo + (dist.hi - dist.lo) * unit(seed + a * 0x632be59bd9b4e019ULL, i),
            type);
        if (w != 0.0) {
          x = w;
          break;
        }
      }
      v[i] = x;
    }
    const auto bytes = reference::pack(v, type);
    std::memcpy(p, bytes.data(), bytes.size());
  }
  [[nodiscard]] std::unique_ptr<device_reference>
  reference(const operation_desc &op, const shape &s, pass_kind pass, dtype type,
            std::span<void *const> tensors) override {
    ++references;
    host_tensors t(op.tensors.size());
    for (std::size_t i = 0; i < op.tensors.size(); ++i)
      if (op.tensors[i].role == tensor_role::input && op.used_in(i, pass)) {
        const dtype et = op.tensors[i].type(type);
        const auto *b = static_cast<const std::uint8_t *>(tensors[i]);
        t[i] = reference::unpack(
            std::vector<std::uint8_t>(b, b + op.elements(i, s) * element_bytes(et)), et);
      }
    op.reference(op, s, pass, t);
    return std::make_unique<held>(*this, op, s, std::move(t));
  }
  /// `values` in host memory (this device's memory is the host's).
  [[nodiscard]] std::unique_ptr<device_reference> adopt(const operation_desc &op, const shape &s,
                                                        device_values values) override {
    ++adopted;
    host_tensors t(op.tensors.size());
    for (std::size_t i = 0; i < op.tensors.size() && i < values.at.size(); ++i)
      if (values.at[i] != nullptr)
        t[i].assign(values.at[i], values.at[i] + op.elements(i, s));
    return std::make_unique<held>(*this, op, s, std::move(t));
  }
  [[nodiscard]] std::int64_t first_difference(const void *a, const void *b, std::size_t n,
                                              std::size_t width) override {
    ++differences;
    for (std::size_t i = 0; i < n; ++i)
      if (std::memcmp(static_cast<const std::uint8_t *>(a) + i * width,
                      static_cast<const std::uint8_t *>(b) + i * width, width) != 0)
        return static_cast<std::int64_t>(i);
    return -1;
  }

private:
  static std::uint64_t mix(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  static double unit(std::uint64_t seed, std::uint64_t k) {
    return static_cast<double>(mix(seed + (k + 1) * 0x9e3779b97f4a7c15ULL) >> 11) * 0x1.0p-53;
  }

  class held final : public device_reference {
  public:
    held(host_checks &owner, const operation_desc &op, const shape &s, host_tensors t)
        : m_owner(owner), m_op(op), m_shape(s), m_t(std::move(t)) {}
    device_comparison compare(std::size_t t, const void *out, dtype type, double rtol,
                              double atol) override {
      ++m_owner.comparisons;
      const auto *b = static_cast<const std::uint8_t *>(out);
      const auto got = reference::unpack(
          std::vector<std::uint8_t>(b, b + m_op.elements(t, m_shape) * element_bytes(type)), type);
      device_comparison d;
      d.result = reference::compare(got, m_t[t], rtol, atol);
      d.all_poison = true;
      for (const double v : got)
        d.all_poison = d.all_poison && reference::is_poison(v);
      if (!d.result.passed) {
        const auto j = static_cast<std::size_t>(std::max<std::int64_t>(d.result.first_bad, 0));
        d.got = got[j];
        d.ref = m_t[t][j];
      }
      return d;
    }
    std::vector<double> download(std::size_t t) override { return m_t[t]; }

  private:
    host_checks &m_owner;
    const operation_desc &m_op;
    shape m_shape;
    host_tensors m_t;
  };
};

/// The CPU device with host_checks as its checks().
class checking_device final : public device {
public:
  explicit checking_device(std::unique_ptr<device> inner) : m_inner(std::move(inner)) {}
  host_checks checks_seen;

  [[nodiscard]] device_checks *checks() override { return &checks_seen; }
  [[nodiscard]] std::string_view kind() const override { return m_inner->kind(); }
  [[nodiscard]] json probe() override { return m_inner->probe(); }
  void finish_environment(json &env) override { m_inner->finish_environment(env); }
  [[nodiscard]] std::uint64_t memory_budget() const override { return m_inner->memory_budget(); }
  [[nodiscard]] std::int64_t processors() const override { return m_inner->processors(); }
  [[nodiscard]] instrument_plan instrument() const override { return m_inner->instrument(); }
  [[nodiscard]] void *allocate(std::size_t bytes) override { return m_inner->allocate(bytes); }
  void release(void *p) noexcept override { m_inner->release(p); }
  [[nodiscard]] std::unique_ptr<tracked_allocator> make_arm_allocator() override {
    return m_inner->make_arm_allocator();
  }
  void upload(void *d, const void *s, std::size_t n) override { m_inner->upload(d, s, n); }
  void download(void *d, const void *s, std::size_t n) override { m_inner->download(d, s, n); }
  void copy(void *d, const void *s, std::size_t n) override { m_inner->copy(d, s, n); }
  void fill_poison(void *p, std::size_t n, dtype type) override {
    m_inner->fill_poison(p, n, type);
  }
  void fill_uniform(void *p, std::size_t n, dtype type, double lo, double hi, std::uint64_t seed,
                    std::int64_t cols, double row_offset) override {
    m_inner->fill_uniform(p, n, type, lo, hi, seed, cols, row_offset);
  }
  void prepare_flush() override { m_inner->prepare_flush(); }
  void flush() override { m_inner->flush(); }
  [[nodiscard]] window_result timed(const std::function<void()> &step) override {
    return m_inner->timed(step);
  }
  void empty_step() override { m_inner->empty_step(); }
  [[nodiscard]] resolution timer_resolution() override { return m_inner->timer_resolution(); }
  [[nodiscard]] double clock_mhz() override { return m_inner->clock_mhz(); }
  void synchronize() override { m_inner->synchronize(); }
  [[nodiscard]] void *stream() const override { return m_inner->stream(); }
  [[nodiscard]] std::optional<std::string> cannot_capture() const override {
    return m_inner->cannot_capture();
  }
  [[nodiscard]] std::unique_ptr<captured_step> capture(const std::function<void()> &step) override {
    return m_inner->capture(step);
  }
  void replay(captured_step &c) override { m_inner->replay(c); }

private:
  std::unique_ptr<device> m_inner;
};

} // namespace prereg::test

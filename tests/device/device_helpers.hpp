// Helpers of the GPU tests: device buffers, a counting step_allocator, protocol/plan builders.
#pragma once

#include "device/device.hpp"
#include "engine/measure.hpp"
#include "spec/arm_code.hpp"
#include "spec/protocol.hpp"
#include "spec/records.hpp"
#include "spec/reference.hpp"

#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace prereg::device_test {

inline void ok(cudaError_t rc, const char *what) {
  if (rc != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(rc));
}

/// cudaMalloc'd bytes, freed on destruction.
class buffer {
public:
  explicit buffer(std::size_t bytes) : m_bytes(bytes) {
    ok(cudaMalloc(&m_p, bytes ? bytes : 1), "cudaMalloc");
  }
  buffer(const buffer &) = delete;
  buffer &operator=(const buffer &) = delete;
  ~buffer() { cudaFree(m_p); }
  [[nodiscard]] void *get() const { return m_p; }
  void upload(const std::vector<std::uint8_t> &b) {
    REQUIRE(b.size() <= m_bytes);
    ok(cudaMemcpy(m_p, b.data(), b.size(), cudaMemcpyHostToDevice), "upload");
  }
  [[nodiscard]] std::vector<double> download(std::size_t n, dtype t) const {
    std::vector<std::uint8_t> b(n * element_bytes(t));
    ok(cudaMemcpy(b.data(), m_p, b.size(), cudaMemcpyDeviceToHost), "download");
    return reference::unpack(b, t);
  }

private:
  void *m_p = nullptr;
  std::size_t m_bytes;
};

/// A step_allocator on the default stream that counts bytes held and the peak.
class counting_allocator final : public step_allocator {
public:
  void *allocate(std::size_t bytes) override {
    void *p = nullptr;
    ok(cudaMallocAsync(&p, bytes ? bytes : 1, nullptr), "cudaMallocAsync");
    m_live[p] = bytes;
    m_current += bytes;
    if (m_current > m_peak)
      m_peak = m_current;
    return p;
  }
  void release(void *p) override {
    REQUIRE(m_live.count(p) == 1);
    m_current -= m_live[p];
    m_live.erase(p);
    ok(cudaFreeAsync(p, nullptr), "cudaFreeAsync");
  }
  [[nodiscard]] std::size_t current() const { return m_current; }
  [[nodiscard]] std::size_t peak() const { return m_peak; }

private:
  std::unordered_map<void *, std::size_t> m_live;
  std::size_t m_current = 0, m_peak = 0;
};

/// A protocol built in code (no YAML): every arm over rows x cols x passes.
inline protocol make_protocol(const std::string &op, dtype type, std::vector<std::int64_t> rows,
                              std::vector<std::int64_t> cols, std::vector<arm_spec> arms,
                              std::int64_t repetitions, std::int64_t warmup) {
  protocol p;
  p.id = "device_test";
  p.title = "device test";
  p.hypothesis = "-";
  p.device = "cuda";
  p.op = op;
  p.type = type;
  p.rows = std::move(rows);
  p.cols = std::move(cols);
  p.passes = {pass_kind::fwd, pass_kind::fwd_bwd};
  p.arms = std::move(arms);
  p.measurement.repetitions = repetitions;
  p.measurement.warmup = warmup;
  p.correctness = default_tolerance(type);
  return p;
}

/// Every arm x pass x rows x cols of `p`, in protocol order.
inline run_plan make_plan(const protocol &p, std::uint64_t seed) {
  run_plan plan;
  plan.proto = &p;
  plan.seed = seed;
  for (const auto &a : p.arms)
    for (const auto pass : p.passes)
      for (const auto r : p.rows)
        for (const auto c : p.cols)
          plan.cells.push_back({a.id, pass, r, c});
  return plan;
}

/// The entry points of the built-in CUDA normalisation arm `name`, or null.
inline const arm_ops *cuda_arm_ops(std::string_view name) {
  const arm_info *a = find_arm("cuda", name);
  return a != nullptr ? builtin_arm_code(*a).norm : nullptr;
}

/// A progress sink that only counts.
class quiet_progress final : public progress_sink {
public:
  void phase(std::string_view) override { ++phases; }
  void cell_done(std::size_t d, std::size_t) override { done = d; }
  int phases = 0;
  std::size_t done = 0;
};

/// Measures `plan` on CUDA device 0 through the engine with the built-in arms.
inline raw_run measure_on_cuda(const run_plan &plan, progress_sink &progress) {
  const auto dev = make_cuda_device(0);
  return measure(*dev, dev->probe(), plan, builtin_resolver(), progress);
}

} // namespace prereg::device_test

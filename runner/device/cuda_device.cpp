// The CUDA device: a GPU's primitives for the measurement engine (docs/engine.md) — cudaMalloc'd
// harness memory, a cudaMallocAsync step allocator, CUDA events around the step only, the
// read-sweep L2 flush, the SM clock probe, CUDA graph capture, NVML's other processes.
#include "cuda/cuda_call.hpp"
#include "device/cublas_ceiling.hpp"
#include "device/cuda_checks.hpp"
#include "device/cuda_probe.hpp"
#include "device/cupti.hpp"
#include "device/device.hpp"
#include "device/instrument.hpp"
#include "device/nvml.hpp"
#include "device/nvml_state.hpp"
#include "device/reference_kernels.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace prereg {
namespace cuda {
namespace {

constexpr std::size_t gib = std::size_t{1} << 30;
constexpr std::size_t ceiling_copy_bytes = gib; // each copy reads and writes 1 GiB
constexpr int ceiling_samples = 11;
constexpr int floor_samples = 21;
constexpr int compute_samples = 9; // GEMMs of 1.5 ms (bf16 8192^3 on an H200) to 2.3 ms (fp32)
constexpr int timer_pairs = 200;
constexpr std::size_t min_flush_bytes = std::size_t{64} << 20;
constexpr std::uint64_t clock_interval_ns = 1'000'000; // 1 ms of %globaltimer per clock probe

[[nodiscard]] std::string version_string(int v) {
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}

// --- device memory ---------------------------------------------------------------------------

/// cudaMalloc'd memory, freed on destruction (harness memory: never billed to an arm).
class device_buffer {
public:
  device_buffer() = default;
  explicit device_buffer(std::size_t bytes) : m_bytes(bytes) {
    if (bytes > 0)
      PREREG_CUDA_CALL(cudaMalloc(&m_ptr, bytes));
  }
  device_buffer(const device_buffer &) = delete;
  device_buffer &operator=(const device_buffer &) = delete;
  device_buffer(device_buffer &&o) noexcept
      : m_ptr(std::exchange(o.m_ptr, nullptr)), m_bytes(std::exchange(o.m_bytes, 0)) {}
  device_buffer &operator=(device_buffer &&o) noexcept {
    if (this != &o) {
      reset();
      m_ptr = std::exchange(o.m_ptr, nullptr);
      m_bytes = std::exchange(o.m_bytes, 0);
    }
    return *this;
  }
  ~device_buffer() { reset(); }
  void reset() noexcept {
    if (m_ptr != nullptr)
      (void)cudaFree(m_ptr);
    m_ptr = nullptr;
    m_bytes = 0;
  }
  [[nodiscard]] void *get() const noexcept { return m_ptr; }
  template <class P> [[nodiscard]] P *as() const noexcept { return static_cast<P *>(m_ptr); }
  [[nodiscard]] std::size_t bytes() const noexcept { return m_bytes; }

private:
  void *m_ptr = nullptr;
  std::size_t m_bytes = 0;
};

/// The step allocator: cudaMallocAsync / cudaFreeAsync on the measuring stream (from the
/// device's default pool, which keeps freed memory cached like PyTorch's caching allocator;
/// capturable, so graph mode works), counting what the arm holds and its peak.
class tracking_allocator final : public tracked_allocator {
public:
  explicit tracking_allocator(cudaStream_t stream) : m_stream(stream) {}
  tracking_allocator(const tracking_allocator &) = delete;
  tracking_allocator &operator=(const tracking_allocator &) = delete;
  ~tracking_allocator() override { (void)release_all(true); }

  void *allocate(std::size_t bytes) override {
    void *p = nullptr;
    PREREG_CUDA_CALL(cudaMallocAsync(&p, bytes == 0 ? 1 : bytes, m_stream));
    m_live.emplace(p, bytes);
    m_current += bytes;
    m_peak = std::max(m_peak, m_current);
    return p;
  }
  void release(void *p) override {
    const auto it = m_live.find(p);
    if (it == m_live.end())
      throw io_error("an arm released memory its step_allocator never gave");
    PREREG_CUDA_CALL(cudaFreeAsync(p, m_stream));
    m_current -= it->second;
    m_live.erase(it);
  }
  /// Frees what the arm still holds (free_memory = false after a failed capture: the graph's
  /// allocations never existed).
  std::uint64_t release_all(bool free_memory) noexcept override {
    const std::uint64_t held = m_current;
    if (free_memory)
      for (const auto &[p, bytes] : m_live)
        (void)cudaFreeAsync(p, m_stream);
    m_live.clear();
    m_current = 0;
    return held;
  }
  [[nodiscard]] std::uint64_t current() const noexcept override { return m_current; }
  [[nodiscard]] std::uint64_t peak() const noexcept override { return m_peak; }
  void reset_peak() noexcept override { m_peak = m_current; }

private:
  cudaStream_t m_stream;
  std::unordered_map<void *, std::size_t> m_live;
  std::uint64_t m_current = 0;
  std::uint64_t m_peak = 0;
};

/// A captured step: an instantiated CUDA graph.
class cuda_graph final : public captured_step {
public:
  cuda_graph(cudaGraph_t g, cudaGraphExec_t e) : m_graph(g), m_exec(e) {}
  cuda_graph(const cuda_graph &) = delete;
  cuda_graph &operator=(const cuda_graph &) = delete;
  ~cuda_graph() override {
    if (m_exec != nullptr)
      (void)cudaGraphExecDestroy(m_exec);
    if (m_graph != nullptr)
      (void)cudaGraphDestroy(m_graph);
  }
  [[nodiscard]] cudaGraphExec_t exec() const noexcept { return m_exec; }

private:
  cudaGraph_t m_graph;
  cudaGraphExec_t m_exec;
};

bool forced_window_marks() {
  static const bool on = [] {
    const char *v = std::getenv("PREREG_WINDOW_MARKS");
    return v != nullptr && std::string(v) == "1";
  }();
  return on;
}

class cuda_device final : public device {
public:
  [[nodiscard]] int ordinal() const override { return m_ordinal; }
  explicit cuda_device(int ordinal) : m_ordinal(ordinal) {
    m_count = select_device(ordinal);
    try {
      PREREG_CUDA_CALL(cudaFree(nullptr)); // creates the context
      PREREG_CUDA_CALL(cudaDeviceGetAttribute(&m_sms, cudaDevAttrMultiProcessorCount, ordinal));
      int l2 = 0;
      PREREG_CUDA_CALL(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, ordinal));
      m_l2 = static_cast<std::size_t>(l2);
    } catch (const cuda_error &e) {
      throw environment_error(fmt::format("CUDA device {} is not usable: {}", ordinal, e.what()));
    }
    PREREG_CUDA_CALL(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking));
    PREREG_CUDA_CALL(cudaEventCreate(&m_start));
    PREREG_CUDA_CALL(cudaEventCreate(&m_stop));
    PREREG_CUDA_CALL(cudaDeviceGetDefaultMemPool(&m_pool, ordinal));
    std::uint64_t keep = std::numeric_limits<std::uint64_t>::max();
    PREREG_CUDA_CALL(cudaMemPoolSetAttribute(m_pool, cudaMemPoolAttrReleaseThreshold, &keep));
    m_scratch = device_buffer(4 * sizeof(unsigned long long));
    m_checks = make_cuda_checks(m_stream);
  }
  cuda_device(const cuda_device &) = delete;
  cuda_device &operator=(const cuda_device &) = delete;
  ~cuda_device() override {
    if (kernel_tracer::instance().enabled()) {
      std::string ignored;
      (void)kernel_tracer::instance().enable(false, ignored);
    }
    m_flush_buffer.reset();
    m_scratch.reset();
    if (m_start != nullptr)
      (void)cudaEventDestroy(m_start);
    if (m_stop != nullptr)
      (void)cudaEventDestroy(m_stop);
    if (m_stream != nullptr)
      (void)cudaStreamDestroy(m_stream);
  }

  [[nodiscard]] std::string_view kind() const override { return "cuda"; }

  [[nodiscard]] json probe() override {
    cudaDeviceProp p{};
    PREREG_CUDA_CALL(cudaGetDeviceProperties(&p, m_ordinal));
    int driver = 0, runtime = 0;
    PREREG_CUDA_CALL(cudaDriverGetVersion(&driver));
    PREREG_CUDA_CALL(cudaRuntimeGetVersion(&runtime));
    char bus[32] = {};
    PREREG_CUDA_CALL(cudaDeviceGetPCIBusId(bus, sizeof bus, m_ordinal));
    m_bus = bus;
    const nvml_report nv = query_nvml(m_bus, m_ordinal);
    json env;
    env["device_name"] = p.name;
    env["ordinal"] = m_ordinal;
    env["device_count"] = m_count;
    env["pci_bus_id"] = bus;
    env["driver_version"] =
        nv.driver_version != "unknown" ? nv.driver_version : version_string(driver);
    env["cuda_driver_api_version"] = version_string(driver);
    env["runtime_version"] = version_string(runtime);
    env["sm_count"] = p.multiProcessorCount;
    env["l2_bytes"] = p.l2CacheSize;
    env["memory_bytes"] = static_cast<std::uint64_t>(p.totalGlobalMem);
    env["cc"] = fmt::format("{}.{}", p.major, p.minor);
    env["cuda_code"] = cuda_code(p.major * 10 + p.minor);
    env["sm_clock_mhz"] = clock_mhz();
    env["sm_clock_method"] = "clock64 cycles over 1 ms of %globaltimer, one thread on one SM";
    env["other_processes"] = nv.other_processes;
    env["nvml"] = nv.status;
    if (forced_window_marks())
      env["window_marks"] = "forced by PREREG_WINDOW_MARKS=1";
    return env;
  }

  void finish_environment(json &env) override {
    // Other processes: the union of what NVML saw before and after the run.
    const nvml_report after = query_nvml(m_bus, m_ordinal);
    json &before = env["other_processes"];
    if (after.other_processes.is_array()) {
      if (!before.is_array())
        before = json::array();
      for (const auto &p : after.other_processes) {
        const bool seen = std::any_of(before.begin(), before.end(),
                                      [&](const json &b) { return b["pid"] == p["pid"]; });
        if (!seen)
          before.push_back(p);
      }
    }
    env["clock_end_mhz"] = clock_mhz();
  }

  /// 80% of the device memory free now, less what the instrument's buffers will take.
  [[nodiscard]] std::uint64_t memory_budget() const override {
    std::size_t free = 0, total = 0;
    PREREG_CUDA_CALL(cudaMemGetInfo(&free, &total));
    const std::uint64_t held = m_flush_buffer.bytes(); // already out of `free`
    return static_cast<std::uint64_t>(0.8 * static_cast<double>(free + held));
  }
  [[nodiscard]] std::int64_t processors() const override { return m_sms; }
  [[nodiscard]] instrument_plan instrument() const override {
    instrument_plan p;
    p.llc_bytes = m_l2;
    p.flush_bytes = (std::max(4 * m_l2, min_flush_bytes) + 15) / 16 * 16;
    p.flush_method = "read-sweep";
    p.ceiling_bytes = ceiling_copy_bytes;
    p.ceiling_copies = ceiling_samples;
    p.ceiling_warmup = 2;
    p.floor_steps = floor_samples;
    p.floor_warmup = 3;
    p.stream_bytes = ceiling_copy_bytes; // the copy's size: 1 GiB read, or written, a window
    p.stream_runs = ceiling_samples;
    p.stream_warmup = 2;
    p.compute_runs = compute_samples;
    p.compute_warmup = 2; // the first call loads cuBLASLt's kernel
    return p;
  }

  [[nodiscard]] void *allocate(std::size_t bytes) override {
    void *p = nullptr;
    PREREG_CUDA_CALL(cudaMalloc(&p, std::max<std::size_t>(bytes, 1)));
    return p;
  }
  void release(void *p) noexcept override { (void)cudaFree(p); }
  [[nodiscard]] std::unique_ptr<tracked_allocator> make_arm_allocator() override {
    return std::make_unique<tracking_allocator>(m_stream);
  }
  void upload(void *dst, const void *src, std::size_t bytes) override {
    PREREG_CUDA_CALL(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
  }
  void download(void *dst, const void *src, std::size_t bytes) override {
    PREREG_CUDA_CALL(cudaStreamSynchronize(m_stream));
    PREREG_CUDA_CALL(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
  }
  void copy(void *dst, const void *src, std::size_t bytes) override {
    PREREG_CUDA_CALL(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, m_stream));
  }
  void fill_uniform(void *p, std::size_t n, dtype type, double lo, double hi, std::uint64_t seed,
                    std::int64_t cols, double row_offset) override {
    if (is_integral(type) || is_fp8(type)) { // elements.cuh's rule, as a checked call's
      launch_typed_fill(p, n, type, lo, hi,
                        is_fp8(type) ? reference::fp8_fallback(lo, hi, type) : 0.0, seed, m_stream);
      return;
    }
    launch_fill_uniform(p, n, type, static_cast<float>(lo), static_cast<float>(hi), seed, cols,
                        static_cast<float>(row_offset), m_stream);
  }
  void fill_poison(void *p, std::size_t n, dtype type) override {
    launch_fill_pattern(p, n, element_bytes(type), reference::poison_bits(type), m_stream);
  }
  [[nodiscard]] device_checks *checks() override { return m_checks.get(); }
  void trim() override {
    PREREG_CUDA_CALL(cudaStreamSynchronize(m_stream));
    PREREG_CUDA_CALL(cudaMemPoolTrimTo(m_pool, 0));
    PREREG_CUDA_CALL(cudaDeviceGraphMemTrim(m_ordinal));
  }

  void prepare_flush() override {
    if (m_flush_buffer.bytes() != 0)
      return;
    // The flush buffer: 4x L2 (at least 64 MiB), filled once; the flush only reads it.
    m_flush_buffer = device_buffer(instrument().flush_bytes);
    PREREG_CUDA_CALL(cudaMemset(m_flush_buffer.get(), flush_fill_byte, m_flush_buffer.bytes()));
    PREREG_CUDA_CALL(cudaDeviceSynchronize());
  }
  void flush() override {
    prepare_flush();
    // Lines an arm marked persisting (cudaAccessPolicyWindow) would survive the read sweep.
    PREREG_CUDA_CALL(cudaCtxResetPersistingL2Cache());
    launch_read_sweep(m_flush_buffer.get(), m_flush_buffer.bytes(),
                      m_scratch.as<unsigned long long>(), m_sms, m_stream);
  }
  [[nodiscard]] window_result timed(const std::function<void()> &step) override {
    const std::uint64_t free0 = free_bytes();
    const std::uint64_t arm0 = arm_reserved();
    // The marks bound the window in the kernel clock's records; PREREG_WINDOW_MARKS=1 queues
    // them without it too, for a profiler that segments windows by them
    // (tools/device/ncu_agreement).
    const bool traced = kernel_tracer::instance().enabled() || forced_window_marks();
    if (traced)
      launch_window_mark(true, m_stream);
    PREREG_CUDA_CALL(cudaEventRecord(m_start, m_stream));
    step();
    PREREG_CUDA_CALL(cudaEventRecord(m_stop, m_stream));
    if (traced)
      launch_window_mark(false, m_stream);
    PREREG_CUDA_CALL(cudaEventSynchronize(m_stop));
    float ms = 0;
    PREREG_CUDA_CALL(cudaEventElapsedTime(&ms, m_start, m_stop));
    const std::uint64_t free1 = free_bytes();
    const std::uint64_t arm1 = arm_reserved();
    const auto device_growth = static_cast<std::int64_t>(free0) - static_cast<std::int64_t>(free1);
    const auto arm_growth = static_cast<std::int64_t>(arm1) - static_cast<std::int64_t>(arm0);
    window_result w;
    w.ms = ms;
    w.harness_growth =
        static_cast<std::uint64_t>(std::max<std::int64_t>(0, device_growth - arm_growth));
    return w;
  }
  void empty_step() override { launch_empty(m_stream); }

  [[nodiscard]] std::optional<stream_methods> stream_roofs() const override {
    return stream_methods{"read-sweep kernel: 16-byte loads ANDed per thread, 4 loads in "
                          "flight, 4 x SMs blocks of 256 threads; a store only if the data "
                          "differ from the fill, which never happens",
                          "write-fill kernel: 16-byte stores of a constant, 4 per thread and "
                          "iteration, 4 x SMs blocks of 256 threads, no load"};
  }
  void read_stream(const void *p, std::size_t bytes) override {
    launch_read_sweep(p, bytes, m_scratch.as<unsigned long long>(), m_sms, m_stream);
  }
  void write_stream(void *p, std::size_t bytes) override {
    launch_write_fill(p, bytes, m_sms, m_stream);
  }
  [[nodiscard]] std::unique_ptr<compute_step> compute_ceiling(std::string_view type,
                                                              std::string &why_not) override {
    return make_gemm_ceiling(type, m_stream, why_not);
  }

  [[nodiscard]] std::optional<std::string> kernel_clock(bool on, std::string &why_not) override {
    if (const char *v = std::getenv("PREREG_KERNEL_CLOCK");
        on && v != nullptr && std::string(v) == "off") {
      why_not = "switched off by PREREG_KERNEL_CLOCK=off";
      return std::nullopt;
    }
    PREREG_CUDA_CALL(cudaStreamSynchronize(m_stream));
    return kernel_tracer::instance().enable(on, why_not);
  }
  [[nodiscard]] std::vector<window_kernels> take_window_kernels() override {
    kernel_tracer &t = kernel_tracer::instance();
    if (!t.enabled())
      return {};
    PREREG_CUDA_CALL(cudaStreamSynchronize(m_stream)); // the last close mark
    return t.take_windows();
  }
  [[nodiscard]] std::uint64_t kernel_records_dropped() override {
    return kernel_tracer::instance().dropped();
  }
  [[nodiscard]] std::optional<std::string> state_reader(std::string &why_not) override {
    if (!m_state)
      m_state = nvml_state_reader::open(m_bus, m_ordinal, why_not);
    if (!m_state)
      return std::nullopt;
    return m_state->describe();
  }
  [[nodiscard]] device_state_sample read_state() override {
    return m_state ? m_state->read() : device_state_sample{};
  }
  [[nodiscard]] region_mark_fn region_marker() override {
    if (!kernel_tracer::instance().enabled())
      return nullptr;
    return [](int open, void *stream) noexcept -> int {
      try {
        launch_region_mark(open != 0, static_cast<cudaStream_t>(stream));
        return 0;
      } catch (...) {
        return 1;
      }
    };
  }
  [[nodiscard]] std::optional<double> drain() override {
    // A device-wide synchronise bracketed on the host: work an arm left on any stream after
    // the window's stop event makes it long (docs/engine.md, off-window work).
    const auto t0 = std::chrono::steady_clock::now();
    PREREG_CUDA_CALL(cudaDeviceSynchronize());
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }

  /// The event timer's quantum: the smallest non-zero step between the distinct elapsed times
  /// of event pairs around 0 to 3 empty kernels (or the smallest non-zero elapsed time).
  [[nodiscard]] resolution timer_resolution() override {
    std::vector<float> seen;
    seen.reserve(timer_pairs);
    for (int i = 0; i < timer_pairs; ++i) {
      PREREG_CUDA_CALL(cudaEventRecord(m_start, m_stream));
      for (int k = 0; k < i % 4; ++k)
        launch_empty(m_stream);
      PREREG_CUDA_CALL(cudaEventRecord(m_stop, m_stream));
      PREREG_CUDA_CALL(cudaEventSynchronize(m_stop));
      float ms = 0;
      PREREG_CUDA_CALL(cudaEventElapsedTime(&ms, m_start, m_stop));
      seen.push_back(ms);
    }
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    double best = 0;
    for (std::size_t i = 0; i < seen.size(); ++i) {
      const double step = i == 0 ? seen[0] : static_cast<double>(seen[i]) - seen[i - 1];
      if (step > 0 && (best == 0 || step < best))
        best = step;
    }
    if (best > 0)
      return {best, fmt::format("measured: smallest non-zero step between distinct "
                                "cudaEventElapsedTime values of {} event pairs around 0 to 3 "
                                "empty kernels",
                                timer_pairs)};
    return {0.0005, "documented: about 0.5 us (CUDA Runtime API, cudaEventElapsedTime); every "
                    "back-to-back event pair read 0"};
  }

  /// The SM clock [MHz]: clock64 cycles over 1 ms of %globaltimer on one SM.
  [[nodiscard]] double clock_mhz() override {
    launch_clock_probe(m_scratch.as<unsigned long long>(), clock_interval_ns, m_stream);
    unsigned long long out[2] = {0, 0};
    PREREG_CUDA_CALL(
        cudaMemcpyAsync(out, m_scratch.get(), sizeof out, cudaMemcpyDeviceToHost, m_stream));
    PREREG_CUDA_CALL(cudaStreamSynchronize(m_stream));
    return out[1] == 0 ? std::numeric_limits<double>::quiet_NaN()
                       : static_cast<double>(out[0]) / static_cast<double>(out[1]) * 1e3;
  }
  void synchronize() override { PREREG_CUDA_CALL(cudaStreamSynchronize(m_stream)); }
  [[nodiscard]] bool broken() const override { return !context_alive(); }
  [[nodiscard]] void *stream() const override { return m_stream; }

  [[nodiscard]] std::optional<std::string> cannot_capture() const override { return std::nullopt; }
  [[nodiscard]] std::unique_ptr<captured_step> capture(const std::function<void()> &step) override {
    PREREG_CUDA_CALL(cudaStreamBeginCapture(m_stream, cudaStreamCaptureModeThreadLocal));
    try {
      step();
    } catch (...) {
      cudaGraph_t broken = nullptr;
      (void)cudaStreamEndCapture(m_stream, &broken);
      if (broken != nullptr)
        (void)cudaGraphDestroy(broken);
      (void)cudaGetLastError();
      throw;
    }
    cudaGraph_t graph = nullptr;
    PREREG_CUDA_CALL(cudaStreamEndCapture(m_stream, &graph));
    cudaGraphExec_t exec = nullptr;
    if (const cudaError_t rc = cudaGraphInstantiate(&exec, graph, 0); rc != cudaSuccess) {
      (void)cudaGraphDestroy(graph);
      PREREG_CUDA_CALL(rc);
    }
    auto g = std::make_unique<cuda_graph>(graph, exec);
    PREREG_CUDA_CALL(cudaGraphUpload(exec, m_stream));
    PREREG_CUDA_CALL(cudaStreamSynchronize(m_stream));
    return g;
  }
  void replay(captured_step &c) override {
    PREREG_CUDA_CALL(cudaGraphLaunch(static_cast<cuda_graph &>(c).exec(), m_stream));
  }

private:
  /// Free device memory now [bytes].
  [[nodiscard]] std::uint64_t free_bytes() const {
    std::size_t free = 0, total = 0;
    PREREG_CUDA_CALL(cudaMemGetInfo(&free, &total));
    return free;
  }
  /// Memory the step allocations hold reserved: the default pool plus graph memory [bytes].
  [[nodiscard]] std::uint64_t arm_reserved() const {
    std::uint64_t pool = 0, graph = 0; // cuuint64_t
    PREREG_CUDA_CALL(cudaMemPoolGetAttribute(m_pool, cudaMemPoolAttrReservedMemCurrent, &pool));
    PREREG_CUDA_CALL(
        cudaDeviceGetGraphMemAttribute(m_ordinal, cudaGraphMemAttrReservedMemCurrent, &graph));
    return pool + graph;
  }

  int m_ordinal;
  int m_count = 0;
  int m_sms = 0;
  std::size_t m_l2 = 0;
  std::string m_bus;
  std::unique_ptr<nvml_state_reader> m_state; ///< NVML's clocks, power and reasons, once opened
  cudaStream_t m_stream = nullptr;
  cudaEvent_t m_start = nullptr;
  cudaEvent_t m_stop = nullptr;
  cudaMemPool_t m_pool = nullptr;
  device_buffer m_flush_buffer;
  device_buffer m_scratch;
  std::unique_ptr<device_checks> m_checks; ///< references and comparisons on the device
};

} // namespace
} // namespace cuda

std::unique_ptr<device> make_cuda_device(int ordinal) {
  return std::make_unique<cuda::cuda_device>(ordinal);
}

} // namespace prereg

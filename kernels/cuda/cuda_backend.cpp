// The CUDA backend: probe, memory estimates, correctness against the float64 reference, and the
// measurement loop (CUDA events around the step only, read-sweep L2 flush, copy ceiling, launch
// floor, timer resolution, allocation billing, stream or graph launch, interleaved order).
#include "cpu/reference.hpp"
#include "cuda/cuda_arms.hpp"
#include "cuda/cuda_call.hpp"
#include "cuda/instrument.hpp"
#include "cuda/nvml.hpp"
#include "prereg/backend.hpp"
#include "prereg/error.hpp"
#include "prereg/rng.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <unordered_map>
#include <utility>

namespace prereg {
namespace cuda {
namespace {

constexpr std::size_t gib = std::size_t{1} << 30;
constexpr std::size_t ceiling_copy_bytes = gib; // each copy reads and writes 1 GiB
constexpr int ceiling_samples = 11;
constexpr int floor_samples = 21;
constexpr int timer_pairs = 200;
constexpr std::uint64_t clock_interval_ns = 1'000'000; // 1 ms of %globaltimer per clock probe

[[nodiscard]] double median(std::vector<double> v) {
  if (v.empty())
    return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

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
class tracking_allocator final : public step_allocator {
public:
  explicit tracking_allocator(cudaStream_t stream) : m_stream(stream) {}
  tracking_allocator(const tracking_allocator &) = delete;
  tracking_allocator &operator=(const tracking_allocator &) = delete;
  ~tracking_allocator() override { release_all(true); }

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
  void release_all(bool free_memory) noexcept {
    if (free_memory)
      for (const auto &[p, bytes] : m_live)
        (void)cudaFreeAsync(p, m_stream);
    m_live.clear();
    m_current = 0;
  }
  [[nodiscard]] std::uint64_t current() const noexcept { return m_current; }
  [[nodiscard]] std::uint64_t peak() const noexcept { return m_peak; }

private:
  cudaStream_t m_stream;
  std::unordered_map<void *, std::size_t> m_live;
  std::uint64_t m_current = 0;
  std::uint64_t m_peak = 0;
};

/// The buffers of one invocation: inputs, outputs, saved statistics (harness memory).
struct buffer_set {
  device_buffer x, gamma, beta, y, mean, rstd, dy, dx, dgamma, dbeta;
  norm_tensors tensors;
};

[[nodiscard]] buffer_set make_set(std::int64_t rows, std::int64_t cols, dtype type, bool backward) {
  const std::size_t e = element_bytes(type);
  const auto n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  const auto c = static_cast<std::size_t>(cols);
  const auto r = static_cast<std::size_t>(rows);
  buffer_set s;
  s.x = device_buffer(n * e);
  s.gamma = device_buffer(c * e);
  s.beta = device_buffer(c * e);
  s.y = device_buffer(n * e);
  s.mean = device_buffer(r * 4);
  s.rstd = device_buffer(r * 4);
  if (backward) {
    s.dy = device_buffer(n * e);
    s.dx = device_buffer(n * e);
    s.dgamma = device_buffer(c * e);
    s.dbeta = device_buffer(c * e);
  }
  s.tensors = norm_tensors{s.x.get(),
                           s.gamma.get(),
                           s.beta.get(),
                           s.y.get(),
                           s.mean.as<float>(),
                           s.rstd.as<float>(),
                           s.dy.get(),
                           s.dx.get(),
                           s.dgamma.get(),
                           s.dbeta.get(),
                           rows,
                           cols,
                           type};
  return s;
}

/// Bytes of one buffer set.
[[nodiscard]] std::uint64_t set_bytes(std::int64_t rows, std::int64_t cols, dtype type,
                                      bool backward) {
  const std::uint64_t e = element_bytes(type);
  const auto n = static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols);
  const auto c = static_cast<std::uint64_t>(cols);
  return (backward ? 4 : 2) * n * e + (backward ? 4 : 2) * c * e +
         8 * static_cast<std::uint64_t>(rows);
}

/// An upper bound of what an arm allocates inside one invocation (see docs/cuda.md).
[[nodiscard]] std::uint64_t arm_bytes(std::string_view kernel, bool backward, std::int64_t rows,
                                      std::int64_t cols, int sms) {
  const auto n = static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols);
  const auto c = static_cast<std::uint64_t>(cols);
  const auto r = static_cast<std::uint64_t>(rows);
  const std::uint64_t partials = 2 * 8 * static_cast<std::uint64_t>(sms) * c * 4; // [P, N] x 2
  if (kernel == "rmsnorm.unfused")
    return (backward ? 16 : 12) * n + 16 * r + partials;
  if (kernel == "layernorm.unfused")
    return 8 * r + (backward ? partials : 0);
  if (kernel == "layernorm.lockgroup")
    return backward ? 2 * 256 * c * 4 + 2048 : 0;
  return backward ? partials : 0;
}

// --- the session: stream, events, flush buffer, clock probe ----------------------------------

class session {
public:
  session(int ordinal, bool flush) : m_device(ordinal), m_flush(flush) {
    PREREG_CUDA_CALL(cudaSetDevice(ordinal));
    PREREG_CUDA_CALL(cudaDeviceGetAttribute(&m_sms, cudaDevAttrMultiProcessorCount, ordinal));
    int l2 = 0;
    PREREG_CUDA_CALL(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, ordinal));
    m_l2 = static_cast<std::size_t>(l2);
    PREREG_CUDA_CALL(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking));
    PREREG_CUDA_CALL(cudaEventCreate(&m_start));
    PREREG_CUDA_CALL(cudaEventCreate(&m_stop));
    PREREG_CUDA_CALL(cudaDeviceGetDefaultMemPool(&m_pool, ordinal));
    std::uint64_t keep = std::numeric_limits<std::uint64_t>::max();
    PREREG_CUDA_CALL(cudaMemPoolSetAttribute(m_pool, cudaMemPoolAttrReleaseThreshold, &keep));
    // The flush buffer: 4x L2 (at least 64 MiB), filled once; the flush only reads it.
    const std::size_t bytes = std::max<std::size_t>(4 * m_l2, std::size_t{64} << 20);
    m_flush_buffer = device_buffer((bytes + 15) / 16 * 16);
    PREREG_CUDA_CALL(cudaMemset(m_flush_buffer.get(), flush_fill_byte, m_flush_buffer.bytes()));
    m_scratch = device_buffer(4 * sizeof(unsigned long long));
    PREREG_CUDA_CALL(cudaDeviceSynchronize());
  }
  session(const session &) = delete;
  session &operator=(const session &) = delete;
  ~session() {
    if (m_start != nullptr)
      (void)cudaEventDestroy(m_start);
    if (m_stop != nullptr)
      (void)cudaEventDestroy(m_stop);
    if (m_stream != nullptr)
      (void)cudaStreamDestroy(m_stream);
  }

  [[nodiscard]] cudaStream_t stream() const noexcept { return m_stream; }
  [[nodiscard]] int device() const noexcept { return m_device; }
  [[nodiscard]] int sms() const noexcept { return m_sms; }
  [[nodiscard]] std::size_t l2_bytes() const noexcept { return m_l2; }
  [[nodiscard]] std::size_t flush_bytes() const noexcept { return m_flush_buffer.bytes(); }
  [[nodiscard]] bool flushing() const noexcept { return m_flush; }

  /// Queues the read-sweep flush on the stream.
  void flush() {
    launch_read_sweep(m_flush_buffer.get(), m_flush_buffer.bytes(),
                      m_scratch.as<unsigned long long>(), m_sms, m_stream);
  }

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
        cudaDeviceGetGraphMemAttribute(m_device, cudaGraphMemAttrReservedMemCurrent, &graph));
    return pool + graph;
  }
  /// Gives cached step memory back to the device (between groups, outside every window).
  void trim() {
    PREREG_CUDA_CALL(cudaStreamSynchronize(m_stream));
    PREREG_CUDA_CALL(cudaMemPoolTrimTo(m_pool, 0));
    PREREG_CUDA_CALL(cudaDeviceGraphMemTrim(m_device));
  }

  struct window {
    double ms = 0;
    std::uint64_t harness_growth = 0; ///< device memory gained in the window, not the arm's
  };
  /// One timed window: flush (if on, or `force_flush`), then events around `step` only.
  template <class F> window timed(F &&step, bool force_flush = false) {
    if (m_flush || force_flush)
      flush();
    const std::uint64_t free0 = free_bytes();
    const std::uint64_t arm0 = arm_reserved();
    PREREG_CUDA_CALL(cudaEventRecord(m_start, m_stream));
    step();
    PREREG_CUDA_CALL(cudaEventRecord(m_stop, m_stream));
    PREREG_CUDA_CALL(cudaEventSynchronize(m_stop));
    float ms = 0;
    PREREG_CUDA_CALL(cudaEventElapsedTime(&ms, m_start, m_stop));
    const std::uint64_t free1 = free_bytes();
    const std::uint64_t arm1 = arm_reserved();
    const auto device_growth = static_cast<std::int64_t>(free0) - static_cast<std::int64_t>(free1);
    const auto arm_growth = static_cast<std::int64_t>(arm1) - static_cast<std::int64_t>(arm0);
    window w;
    w.ms = ms;
    w.harness_growth =
        static_cast<std::uint64_t>(std::max<std::int64_t>(0, device_growth - arm_growth));
    return w;
  }

  /// The SM clock [MHz]: clock64 cycles over 1 ms of %globaltimer on one SM.
  [[nodiscard]] double clock_mhz() {
    launch_clock_probe(m_scratch.as<unsigned long long>(), clock_interval_ns, m_stream);
    unsigned long long out[2] = {0, 0};
    PREREG_CUDA_CALL(
        cudaMemcpyAsync(out, m_scratch.get(), sizeof out, cudaMemcpyDeviceToHost, m_stream));
    PREREG_CUDA_CALL(cudaStreamSynchronize(m_stream));
    return out[1] == 0 ? std::numeric_limits<double>::quiet_NaN()
                       : static_cast<double>(out[0]) / static_cast<double>(out[1]) * 1e3;
  }

  /// Smallest non-zero elapsed time between back-to-back event pairs [ms] (0 if all were 0).
  /// The event timer's quantum: the smallest non-zero step between the distinct elapsed times
  /// of event pairs around 0 to 3 empty kernels (or the smallest non-zero elapsed time).
  [[nodiscard]] double timer_resolution_ms() {
    std::vector<float> seen;
    seen.reserve(timer_pairs);
    for (int i = 0; i < timer_pairs; ++i) {
      PREREG_CUDA_CALL(cudaEventRecord(m_start, m_stream));
      for (int k = 0; k < i % 4; ++k) launch_empty(m_stream);
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
      if (step > 0 && (best == 0 || step < best)) best = step;
    }
    return best;
  }

private:
  int m_device;
  bool m_flush;
  int m_sms = 0;
  std::size_t m_l2 = 0;
  cudaStream_t m_stream = nullptr;
  cudaEvent_t m_start = nullptr;
  cudaEvent_t m_stop = nullptr;
  cudaMemPool_t m_pool = nullptr;
  device_buffer m_flush_buffer;
  device_buffer m_scratch;
};

/// The copy ceiling, the launch floor and the timer resolution.
void calibrate(session &s, instrument_record &inst, json &env) {
  {
    device_buffer src(ceiling_copy_bytes), dst(ceiling_copy_bytes);
    launch_fill_uniform(src.get(), ceiling_copy_bytes / 4, dtype::fp32, -1.f, 1.f, 7, 0, 0.f,
                        s.stream());
    const auto copy = [&] {
      PREREG_CUDA_CALL(cudaMemcpyAsync(dst.get(), src.get(), ceiling_copy_bytes,
                                       cudaMemcpyDeviceToDevice, s.stream()));
    };
    for (int i = 0; i < 2; ++i)
      (void)s.timed(copy, true);
    for (int i = 0; i < ceiling_samples; ++i) {
      const double ms = s.timed(copy, true).ms;
      inst.ceiling_samples_gbps.push_back(2.0 * static_cast<double>(ceiling_copy_bytes) /
                                          (ms * 1e6));
    }
    inst.ceiling_gbps = median(inst.ceiling_samples_gbps);
    inst.ceiling_bytes = ceiling_copy_bytes;
  }
  std::vector<double> floor;
  const auto empty = [&] { launch_empty(s.stream()); };
  for (int i = 0; i < 3; ++i)
    (void)s.timed(empty);
  for (int i = 0; i < floor_samples; ++i)
    floor.push_back(s.timed(empty).ms);
  inst.launch_floor_ms = median(floor);
  const double res = s.timer_resolution_ms();
  if (res > 0) {
    inst.timer_resolution_ms = res;
    env["timer_resolution_source"] = fmt::format(
        "measured: smallest non-zero step between distinct cudaEventElapsedTime values of {} "
        "event pairs around 0 to 3 empty kernels",
        timer_pairs);
  } else {
    inst.timer_resolution_ms = 0.0005;
    env["timer_resolution_source"] =
        "documented: about 0.5 us (CUDA Runtime API, cudaEventElapsedTime); every back-to-back "
        "event pair read 0";
  }
  inst.flush_method = s.flushing() ? "read-sweep" : "none";
  inst.flush_bytes = s.flushing() ? s.flush_bytes() : 0;
  inst.llc_bytes = s.l2_bytes();
  inst.clock_start_mhz = s.clock_mhz();
}

// --- one cell's arm in the measurement loop ----------------------------------------------------

struct cell_state {
  std::size_t plan_index = 0;
  cell_record record;
  const arm_spec *spec = nullptr;
  const arm_ops *ops = nullptr;
  std::unique_ptr<tracking_allocator> alloc;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  bool failed = false;

  cell_state() = default;
  cell_state(const cell_state &) = delete;
  cell_state &operator=(const cell_state &) = delete;
  cell_state(cell_state &&o) noexcept
      : plan_index(o.plan_index), record(std::move(o.record)), spec(o.spec), ops(o.ops),
        alloc(std::move(o.alloc)), graph(std::exchange(o.graph, nullptr)),
        exec(std::exchange(o.exec, nullptr)), failed(o.failed) {}
  cell_state &operator=(cell_state &&) = delete;
  ~cell_state() { destroy_graph(); }
  void destroy_graph() noexcept {
    if (exec != nullptr)
      (void)cudaGraphExecDestroy(exec);
    if (graph != nullptr)
      (void)cudaGraphDestroy(graph);
    exec = nullptr;
    graph = nullptr;
  }
};

/// Runs the arm's `repeat` invocations (forward, then backward for fwd+bwd) on the sets.
void run_invocations(const arm_ops &ops, pass_kind pass, std::vector<buffer_set> &sets,
                     std::int64_t repeat, tracking_allocator &alloc, cudaStream_t stream) {
  for (std::int64_t i = 0; i < repeat; ++i) {
    const norm_tensors &t = sets[static_cast<std::size_t>(i)].tensors;
    ops.forward(t, alloc, stream);
    if (pass == pass_kind::fwd_bwd)
      ops.backward(t, alloc, stream);
  }
  if (alloc.current() != 0)
    throw io_error(fmt::format("the arm still holds {} bytes of its step allocations after its "
                               "step (it must release all of them)",
                               alloc.current()));
}

/// Captures the invocations once into a CUDA graph and instantiates it.
void capture(cell_state &c, pass_kind pass, std::vector<buffer_set> &sets, std::int64_t repeat,
             cudaStream_t stream) {
  PREREG_CUDA_CALL(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    run_invocations(*c.ops, pass, sets, repeat, *c.alloc, stream);
  } catch (...) {
    cudaGraph_t broken = nullptr;
    (void)cudaStreamEndCapture(stream, &broken);
    if (broken != nullptr)
      (void)cudaGraphDestroy(broken);
    (void)cudaGetLastError();
    c.alloc->release_all(false);
    throw;
  }
  PREREG_CUDA_CALL(cudaStreamEndCapture(stream, &c.graph));
  PREREG_CUDA_CALL(cudaGraphInstantiate(&c.exec, c.graph, 0));
  PREREG_CUDA_CALL(cudaGraphUpload(c.exec, stream));
  PREREG_CUDA_CALL(cudaStreamSynchronize(stream));
}

/// Handles an arm's failure: records it, frees what it held, and ends the run (exit 1) if the
/// CUDA context did not survive.
void arm_failed(cell_state &c, const std::exception &e, std::string_view during) {
  c.failed = true;
  c.record.error = fmt::format("{}: {}", during, e.what());
  if (const auto *pe = dynamic_cast<const prereg::error *>(&e);
      pe != nullptr && !pe->where().empty())
    *c.record.error += fmt::format(" ({})", pe->where());
  c.alloc->release_all(true);
  if (!context_alive())
    throw error(exit_code::failure,
                fmt::format("the CUDA context was lost after arm '{}' failed ({}); the run cannot "
                            "continue",
                            c.record.key.arm, *c.record.error));
}

[[nodiscard]] json cell_json(const cell_key &k) {
  return {
      {"arm", k.arm}, {"pass", std::string(to_string(k.pass))}, {"rows", k.rows}, {"cols", k.cols}};
}

// --- correctness -------------------------------------------------------------------------------

struct output_check {
  const char *name;
  const std::vector<double> *ref;
  const void *device;
  dtype type;
  std::int64_t cols; ///< for row/col in the message (0: a per-row or per-column vector)
};

void upload(void *dst, const std::vector<std::uint8_t> &bytes) {
  PREREG_CUDA_CALL(cudaMemcpy(dst, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
}

[[nodiscard]] std::vector<double> download(const void *src, std::size_t n, dtype type) {
  std::vector<std::uint8_t> bytes(n * element_bytes(type));
  PREREG_CUDA_CALL(cudaMemcpy(bytes.data(), src, bytes.size(), cudaMemcpyDeviceToHost));
  return reference::unpack(bytes, type);
}

} // namespace

// --- the backend ---------------------------------------------------------------------------------

class cuda_backend final : public backend {
public:
  explicit cuda_backend(int ordinal) : m_ordinal(ordinal) { (void)select_device(); }

  [[nodiscard]] std::string_view device() const override { return "cuda"; }

  [[nodiscard]] json probe() override {
    const int count = select_device();
    cudaDeviceProp p{};
    try {
      PREREG_CUDA_CALL(cudaGetDeviceProperties(&p, m_ordinal));
      PREREG_CUDA_CALL(cudaFree(nullptr)); // creates the context
    } catch (const cuda_error &e) {
      throw environment_error(fmt::format("CUDA device {} is not usable: {}", m_ordinal, e.what()));
    }
    int driver = 0, runtime = 0;
    PREREG_CUDA_CALL(cudaDriverGetVersion(&driver));
    PREREG_CUDA_CALL(cudaRuntimeGetVersion(&runtime));
    char bus[32] = {};
    PREREG_CUDA_CALL(cudaDeviceGetPCIBusId(bus, sizeof bus, m_ordinal));
    const nvml_report nv = query_nvml(bus, m_ordinal);
    json env;
    env["device_name"] = p.name;
    env["ordinal"] = m_ordinal;
    env["device_count"] = count;
    env["pci_bus_id"] = bus;
    env["driver_version"] =
        nv.driver_version != "unknown" ? nv.driver_version : version_string(driver);
    env["cuda_driver_api_version"] = version_string(driver);
    env["runtime_version"] = version_string(runtime);
    env["sm_count"] = p.multiProcessorCount;
    env["l2_bytes"] = p.l2CacheSize;
    env["memory_bytes"] = static_cast<std::uint64_t>(p.totalGlobalMem);
    env["cc"] = fmt::format("{}.{}", p.major, p.minor);
    {
      session s(m_ordinal, false);
      env["sm_clock_mhz"] = s.clock_mhz();
    }
    env["sm_clock_method"] = "clock64 cycles over 1 ms of %globaltimer, one thread on one SM";
    env["other_processes"] = nv.other_processes;
    env["nvml"] = nv.status;
    m_env = env;
    return env;
  }

  [[nodiscard]] std::optional<std::string> cannot_run(const arm_info &arm, pass_kind pass,
                                                      std::int64_t rows, std::int64_t cols,
                                                      dtype type,
                                                      std::int64_t repeat) const override {
    if (auto why = prereg::cannot_run(arm, pass, rows, cols, type))
      return why;
    if (cuda_arm_ops(arm.name) == nullptr)
      return fmt::format("{} has no CUDA implementation in this build", arm.name);
    const bool bwd = pass == pass_kind::fwd_bwd;
    PREREG_CUDA_CALL(cudaSetDevice(m_ordinal));
    std::size_t free = 0, total = 0;
    PREREG_CUDA_CALL(cudaMemGetInfo(&free, &total));
    int sms = 0, l2 = 0;
    PREREG_CUDA_CALL(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, m_ordinal));
    PREREG_CUDA_CALL(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, m_ordinal));
    const std::uint64_t sets = static_cast<std::uint64_t>(std::max<std::int64_t>(repeat, 1)) *
                               set_bytes(rows, cols, type, bwd);
    const std::uint64_t arm_extra = arm_bytes(arm.name, bwd, rows, cols, sms);
    const std::uint64_t harness =
        std::max<std::uint64_t>(4ULL * static_cast<std::uint64_t>(l2), 64ULL << 20);
    const std::uint64_t need = sets + arm_extra + harness;
    const double budget = 0.8 * static_cast<double>(free);
    if (static_cast<double>(need) > budget)
      return fmt::format("needs about {:.2f} GiB of device memory ({} buffer set(s) of {:.2f} GiB, "
                         "{:.2f} GiB the arm allocates, {:.2f} GiB harness), more than 80% of "
                         "the {:.2f} GiB free on CUDA device {}",
                         static_cast<double>(need) / gib, std::max<std::int64_t>(repeat, 1),
                         static_cast<double>(set_bytes(rows, cols, type, bwd)) / gib,
                         static_cast<double>(arm_extra) / gib, static_cast<double>(harness) / gib,
                         static_cast<double>(free) / gib, m_ordinal);
    return std::nullopt;
  }

  [[nodiscard]] raw_run measure(const run_plan &plan, progress_sink &progress) override {
    if (plan.proto == nullptr)
      throw io_error("measure: the plan has no protocol");
    const protocol &proto = *plan.proto;
    raw_run raw;
    raw.environment = probe();
    session s(m_ordinal, proto.measurement.l2_flush);

    progress.phase("calibrate");
    calibrate(s, raw.instrument, raw.environment);

    progress.phase("correctness");
    check_correctness(plan, s, raw);

    progress.phase("measure");
    measure_cells(plan, s, raw, progress);

    // Other processes: the union of what NVML saw before and after the run.
    char bus[32] = {};
    PREREG_CUDA_CALL(cudaDeviceGetPCIBusId(bus, sizeof bus, m_ordinal));
    const nvml_report after = query_nvml(bus, m_ordinal);
    json &before = raw.environment["other_processes"];
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
    raw.environment["clock_end_mhz"] = s.clock_mhz();
    return raw;
  }

private:
  /// Checks the device exists and makes it current; throws environment_error (exit 5) if not.
  int select_device() const {
    int count = 0;
    const cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess) {
      (void)cudaGetLastError();
      throw environment_error(fmt::format("no usable CUDA device: cudaGetDeviceCount failed: "
                                          "{}: {}",
                                          cudaGetErrorName(rc), cudaGetErrorString(rc)));
    }
    if (count == 0)
      throw environment_error("no usable CUDA device: cudaGetDeviceCount found 0");
    if (m_ordinal < 0 || m_ordinal >= count)
      throw environment_error(fmt::format("CUDA device {} does not exist: this machine has {} "
                                          "(ordinals 0..{})",
                                          m_ordinal, count, count - 1));
    if (const cudaError_t set = cudaSetDevice(m_ordinal); set != cudaSuccess) {
      (void)cudaGetLastError();
      throw environment_error(fmt::format("CUDA device {} is not usable: cudaSetDevice: {}",
                                          m_ordinal, cudaGetErrorString(set)));
    }
    return count;
  }

  [[nodiscard]] static const arm_spec &spec_of(const protocol &p, const std::string &id) {
    for (const auto &a : p.arms)
      if (a.id == id)
        return a;
    throw io_error(fmt::format("the plan names arm '{}', which the protocol lacks", id));
  }

  [[nodiscard]] static const arm_ops &ops_of(const arm_spec &spec) {
    const arm_ops *ops = cuda_arm_ops(spec.kernel);
    if (ops == nullptr)
      throw io_error(fmt::format("kernel '{}' has no CUDA implementation", spec.kernel));
    return *ops;
  }

  /// Every plan cell's arm x pass x shape against the float64 reference, on fresh random inputs
  /// (reference::cell_seed: one input set per pass and shape, shared by its arms, as the CPU
  /// backend does) with poisoned outputs.
  void check_correctness(const run_plan &plan, session &s, raw_run &raw) {
    const protocol &proto = *plan.proto;
    std::vector<std::tuple<pass_kind, std::int64_t, std::int64_t>> groups;
    for (const auto &c : plan.cells) {
      const auto g = std::tuple{c.pass, c.rows, c.cols};
      if (std::find(groups.begin(), groups.end(), g) == groups.end())
        groups.push_back(g);
    }
    std::vector<std::optional<correctness_record>> records(plan.cells.size());
    for (const auto &[pass, rows, cols] : groups) {
      const bool backward = pass == pass_kind::fwd_bwd;
      const reference::inputs64 in = reference::random_inputs(
          rows, cols, proto.type, reference::cell_seed(plan.seed, pass, rows, cols));
      const reference::outputs64 ref =
          reference::compute(reference::norm_operation(proto.op), in, backward);
      buffer_set set = make_set(rows, cols, proto.type, backward);
      upload(set.x.get(), reference::pack(in.x, proto.type));
      upload(set.gamma.get(), reference::pack(in.gamma, proto.type));
      upload(set.beta.get(), reference::pack(in.beta, proto.type));
      if (backward)
        upload(set.dy.get(), reference::pack(in.dy, proto.type));
      const auto n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
      const auto r = static_cast<std::size_t>(rows);
      const auto c = static_cast<std::size_t>(cols);
      const auto poison_n = reference::poison(n, proto.type);
      const auto poison_c = reference::poison(c, proto.type);
      const auto poison_r = reference::poison(r, dtype::fp32);
      std::vector<buffer_set> sets;
      sets.push_back(std::move(set));
      buffer_set &b = sets.front();
      for (std::size_t index = 0; index < plan.cells.size(); ++index) {
        const cell_key &key = plan.cells[index];
        if (key.pass != pass || key.rows != rows || key.cols != cols)
          continue;
        const arm_spec &spec = spec_of(proto, key.arm);
        correctness_record rec;
        rec.key = key;
        const bool bwd = key.pass == pass_kind::fwd_bwd;
        upload(b.y.get(), poison_n);
        upload(b.mean.get(), poison_r);
        upload(b.rstd.get(), poison_r);
        if (bwd) {
          upload(b.dx.get(), poison_n);
          upload(b.dgamma.get(), poison_c);
          upload(b.dbeta.get(), poison_c);
        }
        cell_state cs;
        cs.record.key = key;
        cs.spec = &spec;
        cs.ops = &ops_of(spec);
        cs.alloc = std::make_unique<tracking_allocator>(s.stream());
        try {
          if (spec.launch == launch_mode::graph) {
            capture(cs, key.pass, sets, 1, s.stream());
            PREREG_CUDA_CALL(cudaGraphLaunch(cs.exec, s.stream()));
          } else {
            run_invocations(*cs.ops, key.pass, sets, 1, *cs.alloc, s.stream());
          }
          PREREG_CUDA_CALL(cudaStreamSynchronize(s.stream()));
        } catch (const std::exception &e) {
          arm_failed(cs, e, "correctness run");
          rec.passed = false;
          rec.detail = *cs.record.error;
          records[index] = std::move(rec);
          continue;
        }
        const bool layernorm = proto.op == "layernorm";
        std::vector<output_check> outs{{"y", &ref.y, b.y.get(), proto.type, cols}};
        if (layernorm)
          outs.push_back({"mean", &ref.mean, b.mean.get(), dtype::fp32, 0});
        outs.push_back({"rstd", &ref.rstd, b.rstd.get(), dtype::fp32, 0});
        if (bwd) {
          outs.push_back({"dx", &ref.dx, b.dx.get(), proto.type, cols});
          outs.push_back({"dgamma", &ref.dgamma, b.dgamma.get(), proto.type, 0});
          if (layernorm)
            outs.push_back({"dbeta", &ref.dbeta, b.dbeta.get(), proto.type, 0});
        }
        rec.passed = true;
        for (const auto &o : outs) {
          const std::vector<double> got = download(o.device, o.ref->size(), o.type);
          const reference::comparison cmp =
              reference::compare(got, *o.ref, proto.correctness.rtol, proto.correctness.atol);
          rec.max_abs_error = std::max(rec.max_abs_error, cmp.max_abs_error);
          rec.max_rel_error = std::max(rec.max_rel_error, cmp.max_rel_error);
          rec.unwritten = rec.unwritten || cmp.unwritten;
          if (!cmp.passed && rec.passed) {
            rec.passed = false;
            const auto i = static_cast<std::size_t>(std::max<std::int64_t>(cmp.first_bad, 0));
            const std::string at = o.cols > 0 ? fmt::format("element {} (row {}, col {})", i,
                                                            static_cast<std::int64_t>(i) / o.cols,
                                                            static_cast<std::int64_t>(i) % o.cols)
                                              : fmt::format("element {}", i);
            rec.detail =
                reference::is_poison(got[i])
                    ? fmt::format("{}: unwritten (still poison) at {}", o.name, at)
                    : fmt::format("{}: {} is {:.9g}, reference {:.9g} (rtol {:g}, atol {:g})",
                                  o.name, at, got[i], (*o.ref)[i], proto.correctness.rtol,
                                  proto.correctness.atol);
          }
        }
        records[index] = std::move(rec);
      }
    }
    for (auto &r : records) // plan order
      if (r)
        raw.correctness.push_back(std::move(*r));
  }

  /// Measures every cell: per (pass, rows, cols) group, buffers for the largest repeat, warmup
  /// steps, then the repetitions in interleaved (shuffled per repetition) or sequential order.
  void measure_cells(const run_plan &plan, session &s, raw_run &raw, progress_sink &progress) {
    const protocol &proto = *plan.proto;
    rng order(stream_seed(plan.seed, stream_id::arm_order));
    std::vector<std::tuple<pass_kind, std::int64_t, std::int64_t>> groups;
    for (const auto &c : plan.cells) {
      const auto g = std::tuple{c.pass, c.rows, c.cols};
      if (std::find(groups.begin(), groups.end(), g) == groups.end())
        groups.push_back(g);
    }
    std::vector<std::optional<cell_record>> done(plan.cells.size());
    std::size_t finished = 0;
    std::uint64_t group_index = 0;

    for (const auto &[pass, rows, cols] : groups) {
      std::vector<cell_state> cells;
      std::int64_t repeat = 1;
      for (std::size_t i = 0; i < plan.cells.size(); ++i) {
        const cell_key &k = plan.cells[i];
        if (k.pass != pass || k.rows != rows || k.cols != cols)
          continue;
        cell_state c;
        c.plan_index = i;
        c.record.key = k;
        c.spec = &spec_of(proto, k.arm);
        c.ops = &ops_of(*c.spec);
        c.alloc = std::make_unique<tracking_allocator>(s.stream());
        repeat = std::max(repeat, c.spec->repeat);
        cells.push_back(std::move(c));
      }
      // Buffers for the largest repeat; inputs random, never zeros.
      std::vector<buffer_set> sets;
      try {
        for (std::int64_t i = 0; i < repeat; ++i) {
          sets.push_back(make_set(rows, cols, proto.type, pass == pass_kind::fwd_bwd));
          const norm_tensors &t = sets.back().tensors;
          const auto n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
          const auto c = static_cast<std::size_t>(cols);
          const std::uint64_t seed = stream_seed(plan.seed, stream_id::inputs) +
                                     0x1000 * group_index + static_cast<std::uint64_t>(i);
          launch_fill_uniform(sets.back().x.get(), n, proto.type, -2.f, 2.f, seed, cols, 1.f,
                              s.stream());
          launch_fill_uniform(sets.back().gamma.get(), c, proto.type, 0.5f, 1.5f, seed + 1, 0, 0.f,
                              s.stream());
          launch_fill_uniform(sets.back().beta.get(), c, proto.type, -0.5f, 0.5f, seed + 2, 0, 0.f,
                              s.stream());
          if (t.dy != nullptr)
            launch_fill_uniform(sets.back().dy.get(), n, proto.type, -1.f, 1.f, seed + 3, 0, 0.f,
                                s.stream());
        }
        PREREG_CUDA_CALL(cudaStreamSynchronize(s.stream()));
      } catch (const cuda_error &e) {
        sets.clear();
        if (!context_alive())
          throw;
        for (auto &c : cells) {
          c.record.error =
              fmt::format("buffers for this shape could not be allocated: {}", e.what());
          raw.deviations.push_back({{"kind", "skipped"},
                                    {"cell", cell_json(c.record.key)},
                                    {"message", *c.record.error}});
          done[c.plan_index] = std::move(c.record);
          progress.cell_done(++finished, plan.cells.size());
        }
        ++group_index;
        continue;
      }

      // Graph arms: capture once (outside every window).
      for (auto &c : cells) {
        if (c.spec->launch != launch_mode::graph)
          continue;
        try {
          capture(c, pass, sets, c.spec->repeat, s.stream());
        } catch (const std::exception &e) {
          arm_failed(c, e, "graph capture");
        }
      }

      const auto sample = [&](cell_state &c, bool keep) {
        if (c.failed)
          return;
        try {
          const auto step = [&] {
            if (c.exec != nullptr)
              PREREG_CUDA_CALL(cudaGraphLaunch(c.exec, s.stream()));
            else
              run_invocations(*c.ops, pass, sets, c.spec->repeat, *c.alloc, s.stream());
          };
          const session::window w = s.timed(step);
          if (!keep)
            return;
          c.record.samples_ms.push_back(w.ms);
          c.record.harness_bytes_in_window =
              std::max(c.record.harness_bytes_in_window, w.harness_growth);
        } catch (const std::exception &e) {
          arm_failed(c, e, "measurement");
        }
      };
      const auto finish = [&](cell_state &c) {
        if (!c.failed) {
          try {
            c.record.clock_mhz = s.clock_mhz();
          } catch (const std::exception &e) {
            arm_failed(c, e, "clock probe after the cell");
          }
        }
        c.record.peak_bytes = c.alloc->peak();
        c.destroy_graph();
        done[c.plan_index] = std::move(c.record);
        progress.cell_done(++finished, plan.cells.size());
      };

      const std::int64_t reps = proto.measurement.repetitions;
      if (proto.measurement.order == order_mode::sequential) {
        for (auto &c : cells) {
          for (std::int64_t w = 0; w < proto.measurement.warmup; ++w)
            sample(c, false);
          for (std::int64_t r = 0; r < reps; ++r)
            sample(c, true);
          finish(c);
        }
      } else {
        for (std::int64_t w = 0; w < proto.measurement.warmup; ++w)
          for (auto &c : cells)
            sample(c, false);
        std::vector<std::size_t> idx(cells.size());
        for (std::int64_t r = 0; r < reps; ++r) {
          for (std::size_t i = 0; i < idx.size(); ++i)
            idx[i] = i;
          for (std::size_t i = idx.size(); i > 1; --i)
            std::swap(idx[i - 1], idx[order.below(i)]);
          for (const std::size_t i : idx) {
            sample(cells[i], true);
            if (r + 1 == reps)
              finish(cells[i]);
          }
        }
        if (reps == 0)
          for (auto &c : cells)
            finish(c);
      }
      sets.clear();
      s.trim();
      ++group_index;
    }
    for (auto &d : done)
      if (d)
        raw.cells.push_back(std::move(*d));
  }

  int m_ordinal;
  std::optional<json> m_env;
};

} // namespace cuda

std::unique_ptr<backend> make_cuda_backend(int ordinal) {
  return std::make_unique<cuda::cuda_backend>(ordinal);
}

} // namespace prereg

// The GEMM compute ceiling through cuBLASLt, loaded with dlopen (cublas_ceiling.hpp). Only the
// header's types are used at build time; every function comes from dlsym.
#include "device/cublas_ceiling.hpp"

#include "device/dl_library.hpp"

#include "cuda/cuda_call.hpp"
#include "device/instrument.hpp"

#include <cublasLt.h>
#include <dlfcn.h>

#include <fmt/format.h>

#include <array>
#include <cstdlib>
#include <utility>
#include <vector>

namespace prereg::cuda {
namespace {

constexpr std::size_t workspace_bytes = std::size_t{32} << 20; // cuBLAS's advice for Hopper

/// The GEMM of each element type: its cuBLASLt data type, how prereg fills it, its size.
struct gemm_type {
  std::string_view name;
  cudaDataType_t data;
  dtype fill;
  std::uint64_t n; ///< m = n = k
};
// fp32 at 4096^3: 2.3 ms a call at the H200's ~60 TFLOP/s of fp32 (8192^3 would take 18 ms).
// fp8 and int8 are added here once the operation files have those element types.
constexpr std::array<gemm_type, 3> gemm_types{{{"bf16", CUDA_R_16BF, dtype::bf16, 8192},
                                               {"fp16", CUDA_R_16F, dtype::fp16, 8192},
                                               {"fp32", CUDA_R_32F, dtype::fp32, 4096}}};

struct lt_api {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtDestroy) destroy = nullptr;
  decltype(&cublasLtGetVersion) version = nullptr;
  decltype(&cublasLtGetStatusString) status_string = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  std::string library; ///< the path that loaded
  std::string missing; ///< why cuBLASLt cannot serve, or empty
};

using dl::bind;

/// $PREREG_CUBLASLT, the loader's search (a library a Python arm's torch loaded already is
/// found by its name), then the CUDA toolkit's folders.
std::vector<std::string> candidates() {
  return dl::candidates("PREREG_CUBLASLT", "libcublasLt.so.13",
                        {"/lib64", "/targets/x86_64-linux/lib", "/targets/sbsa-linux/lib"});
}

bool bind_all(void *lib, lt_api &a) {
  return bind(lib, a.create, "cublasLtCreate") && bind(lib, a.destroy, "cublasLtDestroy") &&
         bind(lib, a.version, "cublasLtGetVersion") &&
         bind(lib, a.status_string, "cublasLtGetStatusString") &&
         bind(lib, a.desc_create, "cublasLtMatmulDescCreate") &&
         bind(lib, a.desc_destroy, "cublasLtMatmulDescDestroy") &&
         bind(lib, a.desc_set, "cublasLtMatmulDescSetAttribute") &&
         bind(lib, a.layout_create, "cublasLtMatrixLayoutCreate") &&
         bind(lib, a.layout_destroy, "cublasLtMatrixLayoutDestroy") &&
         bind(lib, a.pref_create, "cublasLtMatmulPreferenceCreate") &&
         bind(lib, a.pref_destroy, "cublasLtMatmulPreferenceDestroy") &&
         bind(lib, a.pref_set, "cublasLtMatmulPreferenceSetAttribute") &&
         bind(lib, a.heuristic, "cublasLtMatmulAlgoGetHeuristic") &&
         bind(lib, a.matmul, "cublasLtMatmul");
}

/// cuBLASLt, loaded once (never unloaded: its kernels may still be queued).
const lt_api &api() {
  static const lt_api a = [] {
    lt_api r;
    void *lib = nullptr;
    std::string errors;
    for (const auto &path : candidates()) {
      lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib != nullptr) {
        r.library = path;
        break;
      }
      if (const char *e = dlerror(); e != nullptr && errors.empty())
        errors = e;
    }
    if (lib == nullptr) {
      r.missing = "no libcublasLt.so.13 (set PREREG_CUBLASLT to its path): " + errors;
      return r;
    }
    if (!bind_all(lib, r))
      r.missing = r.library + " lacks a cuBLASLt function prereg calls";
    return r;
  }();
  return a;
}

std::string version_text(std::size_t v) {
  return fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
}

/// One GEMM, D = A^T B in column-major terms (A stored k x m, "TN"), C = D, beta 0, its
/// descriptors and buffers freed with it.
class gemm_step final : public compute_step {
public:
  gemm_step(const gemm_type &t, cudaStream_t stream) : m_api(api()), m_stream(stream) {
    try {
      set_up(t);
    } catch (...) {
      release();
      throw;
    }
    method = fmt::format("cuBLASLt {} ({}) cublasLtMatmul, A and B and C {}, A transposed "
                         "(TN), fp32 compute and scale{}, beta 0, the heuristic's first "
                         "algorithm with a 32 MiB workspace, inputs U(-1, 1)",
                         version_text(m_api.version()), m_api.library, t.name,
                         t.data == CUDA_R_32F ? " (no TF32)" : "");
    shape = fmt::format("m=n=k={}", t.n);
    flops = 2 * t.n * t.n * t.n;
  }
  gemm_step(const gemm_step &) = delete;
  gemm_step &operator=(const gemm_step &) = delete;
  ~gemm_step() override { release(); }
  void run() override {
    const float alpha = 1.0f, beta = 0.0f;
    check(m_api.matmul(m_handle, m_desc, &alpha, m_a, m_la, m_b, m_lb, &beta, m_c, m_lc, m_c, m_lc,
                       &m_algo, m_workspace, workspace_bytes, m_stream),
          "cublasLtMatmul");
  }
  /// Whether cuBLASLt offered an algorithm for this GEMM.
  [[nodiscard]] bool has_algorithm() const { return m_found; }

private:
  /// The operands (drawn on the stream), the handle, the descriptors and the algorithm.
  void set_up(const gemm_type &t) {
    const std::size_t elements = t.n * t.n, bytes = elements * element_bytes(t.fill);
    for (void **p : {&m_a, &m_b, &m_c})
      PREREG_CUDA_CALL(cudaMalloc(p, bytes));
    PREREG_CUDA_CALL(cudaMalloc(&m_workspace, workspace_bytes));
    launch_fill_uniform(m_a, elements, t.fill, -1.0f, 1.0f, 0xa11ce, 0, 0.0f, m_stream);
    launch_fill_uniform(m_b, elements, t.fill, -1.0f, 1.0f, 0xb0b, 0, 0.0f, m_stream);
    check(m_api.create(&m_handle), "cublasLtCreate");
    check(m_api.desc_create(&m_desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const cublasOperation_t transpose = CUBLAS_OP_T, none = CUBLAS_OP_N;
    check(m_api.desc_set(m_desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose),
          "cublasLtMatmulDescSetAttribute");
    check(m_api.desc_set(m_desc, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof none),
          "cublasLtMatmulDescSetAttribute");
    const auto ld = static_cast<std::int64_t>(t.n);
    for (cublasLtMatrixLayout_t *l : {&m_la, &m_lb, &m_lc})
      check(m_api.layout_create(l, t.data, t.n, t.n, ld), "cublasLtMatrixLayoutCreate");
    pick_algorithm();
  }
  void release() noexcept {
    (void)cudaStreamSynchronize(m_stream);
    for (cublasLtMatrixLayout_t l : {m_la, m_lb, m_lc})
      if (l != nullptr)
        (void)m_api.layout_destroy(l);
    if (m_desc != nullptr)
      (void)m_api.desc_destroy(m_desc);
    if (m_handle != nullptr)
      (void)m_api.destroy(m_handle);
    for (void *p : {m_a, m_b, m_c, m_workspace})
      if (p != nullptr)
        (void)cudaFree(p);
    m_la = m_lb = m_lc = nullptr;
    m_desc = nullptr;
    m_handle = nullptr;
    m_a = m_b = m_c = m_workspace = nullptr;
  }
  void check(cublasStatus_t s, const char *call) const {
    if (s != CUBLAS_STATUS_SUCCESS)
      throw io_error(fmt::format("{} failed: {}", call, m_api.status_string(s)));
  }
  void pick_algorithm() {
    cublasLtMatmulPreference_t pref = nullptr;
    check(m_api.pref_create(&pref), "cublasLtMatmulPreferenceCreate");
    std::size_t ws = workspace_bytes;
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t set =
        m_api.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    const cublasStatus_t got =
        set == CUBLAS_STATUS_SUCCESS
            ? m_api.heuristic(m_handle, m_desc, m_la, m_lb, m_lc, m_lc, pref, 1, &result, &found)
            : set;
    (void)m_api.pref_destroy(pref);
    check(got, set == CUBLAS_STATUS_SUCCESS ? "cublasLtMatmulAlgoGetHeuristic"
                                            : "cublasLtMatmulPreferenceSetAttribute");
    m_found = found > 0;
    if (m_found)
      m_algo = result.algo;
  }

  const lt_api &m_api;
  cudaStream_t m_stream;
  void *m_a = nullptr, *m_b = nullptr, *m_c = nullptr, *m_workspace = nullptr;
  cublasLtHandle_t m_handle = nullptr;
  cublasLtMatmulDesc_t m_desc = nullptr;
  cublasLtMatrixLayout_t m_la = nullptr, m_lb = nullptr, m_lc = nullptr;
  cublasLtMatmulAlgo_t m_algo{};
  bool m_found = false;
};

} // namespace

std::unique_ptr<compute_step> make_gemm_ceiling(std::string_view type, cudaStream_t stream,
                                                std::string &why_not) {
  const gemm_type *t = nullptr;
  for (const auto &g : gemm_types)
    if (g.name == type)
      t = &g;
  if (t == nullptr) {
    why_not = fmt::format("no cuBLASLt GEMM ceiling for {} in this build (it has bf16, fp16, "
                          "fp32)",
                          type);
    return nullptr;
  }
  if (const lt_api &a = api(); !a.missing.empty()) {
    why_not = a.missing;
    return nullptr;
  }
  auto step = std::make_unique<gemm_step>(*t, stream);
  if (!step->has_algorithm()) {
    why_not = fmt::format("cuBLASLt offers no algorithm for the {} GEMM {}", type, step->shape);
    return nullptr;
  }
  return step;
}

} // namespace prereg::cuda

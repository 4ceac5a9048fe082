// The kernel clock through CUPTI's activity API, loaded with dlopen (docs/engine.md, "The
// kernel clock"). Only the header's types are used at build time; every function comes from
// dlsym, so a machine without libcupti runs on with the clock recorded as unknown.
#include "device/cupti.hpp"

#include "device/dl_library.hpp"
#include "device/kernel_windows.hpp"

#include <cupti_activity.h>
#include <cupti_version.h>
#include <cxxabi.h>
#include <dlfcn.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace prereg::cuda {
namespace {

constexpr std::size_t buffer_bytes = 8u << 20; // one activity buffer
constexpr std::size_t buffer_align = 8;
// The record layout read below is CUpti_ActivityKernel10, CUPTI 13's.
constexpr std::uint32_t api_min = 130000;
constexpr std::uint32_t api_end = 140000;

struct cupti_api {
  CUptiResult (*get_version)(std::uint32_t *) = nullptr;
  CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
                                    CUpti_BuffersCallbackCompleteFunc) = nullptr;
  CUptiResult (*enable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*disable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*flush_all)(std::uint32_t) = nullptr;
  CUptiResult (*next_record)(std::uint8_t *, std::size_t, CUpti_Activity **) = nullptr;
  CUptiResult (*dropped)(CUcontext, std::uint32_t, std::size_t *) = nullptr;
  CUptiResult (*result_string)(CUptiResult, const char **) = nullptr;
  std::string library; ///< the path that loaded
  std::uint32_t version = 0;
  std::string missing; ///< why CUPTI cannot serve, or empty
};

std::mutex g_mutex;
std::vector<kernel_event> g_events; // delivered, not yet taken
std::uint64_t g_dropped = 0;
const cupti_api *g_api = nullptr;

using dl::bind;

std::vector<std::string> candidates() {
  return dl::candidates("PREREG_CUPTI", "libcupti.so.13",
                        {"/extras/CUPTI/lib64", "/targets/x86_64-linux/lib", "/lib64", "/lib"});
}

const cupti_api &api() {
  static const cupti_api a = [] {
    cupti_api r;
    void *lib = nullptr;
    std::string errors;
    for (const auto &path : candidates()) {
      lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib != nullptr) {
        r.library = path;
        break;
      }
      if (errors.empty()) {
        const char *e = dlerror();
        errors = e != nullptr ? e : "?";
      }
    }
    if (lib == nullptr) {
      r.missing = "libcupti.so.13 not loadable: " + errors;
      return r;
    }
    const bool all = bind(lib, r.get_version, "cuptiGetVersion") &&
                     bind(lib, r.register_callbacks, "cuptiActivityRegisterCallbacks") &&
                     bind(lib, r.enable, "cuptiActivityEnable") &&
                     bind(lib, r.disable, "cuptiActivityDisable") &&
                     bind(lib, r.flush_all, "cuptiActivityFlushAll") &&
                     bind(lib, r.next_record, "cuptiActivityGetNextRecord") &&
                     bind(lib, r.dropped, "cuptiActivityGetNumDroppedRecords") &&
                     bind(lib, r.result_string, "cuptiGetResultString");
    if (!all) {
      r.missing = r.library + " lacks a function of the activity API";
      return r;
    }
    if (r.get_version(&r.version) != CUPTI_SUCCESS) {
      r.missing = r.library + ": cuptiGetVersion failed";
      return r;
    }
    if (r.version < api_min || r.version >= api_end)
      r.missing = fmt::format("{} is CUPTI API version {}, not 13.x (the record layout this "
                              "build reads)",
                              r.library, r.version);
    return r;
  }();
  return a;
}

std::string result_text(CUptiResult res) {
  const char *s = nullptr;
  if (g_api != nullptr && g_api->result_string(res, &s) == CUPTI_SUCCESS && s != nullptr)
    return s;
  return fmt::format("CUPTI error {}", static_cast<int>(res));
}

void CUPTIAPI buffer_requested(std::uint8_t **buffer, std::size_t *size, std::size_t *max_records) {
  *buffer = static_cast<std::uint8_t *>(std::aligned_alloc(buffer_align, buffer_bytes));
  *size = *buffer != nullptr ? buffer_bytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext ctx, std::uint32_t stream, std::uint8_t *buffer,
                               std::size_t /*size*/, std::size_t valid) {
  std::vector<kernel_event> got;
  CUpti_Activity *record = nullptr;
  while (g_api->next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
        record->kind != CUPTI_ACTIVITY_KIND_KERNEL)
      continue;
    const auto *k = reinterpret_cast<const CUpti_ActivityKernel10 *>(record);
    got.push_back({k->start, k->end, k->name, k->graphId != 0});
  }
  std::size_t dropped = 0;
  if (g_api->dropped(ctx, stream, &dropped) != CUPTI_SUCCESS)
    dropped = 0;
  std::free(buffer);
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_events.insert(g_events.end(), got.begin(), got.end());
  g_dropped += dropped;
}

std::string demangled(const char *name) {
  static std::map<const char *, std::string> cache; // CUPTI's names live as long as the process
  if (name == nullptr)
    return "(unnamed)";
  if (const auto it = cache.find(name); it != cache.end())
    return it->second;
  int status = 0;
  std::unique_ptr<char, void (*)(void *)> d(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                            std::free);
  std::string out = status == 0 && d ? std::string(d.get()) : std::string(name);
  cache.emplace(name, out);
  return out;
}

} // namespace

kernel_tracer &kernel_tracer::instance() {
  static kernel_tracer t;
  return t;
}

std::optional<std::string> kernel_tracer::enable(bool on, std::string &why_not) {
  const cupti_api &a = api();
  if (!a.missing.empty()) {
    why_not = a.missing;
    return std::nullopt;
  }
  g_api = &a;
  static bool registered = false;
  if (!registered) {
    if (const CUptiResult r = a.register_callbacks(buffer_requested, buffer_completed);
        r != CUPTI_SUCCESS) {
      why_not = "cuptiActivityRegisterCallbacks: " + result_text(r);
      return std::nullopt;
    }
    registered = true;
  }
  if (on != m_enabled) {
    const CUptiResult r = on ? a.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
                             : a.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS) {
      why_not = fmt::format("cuptiActivity{}(CONCURRENT_KERNEL): {}", on ? "Enable" : "Disable",
                            result_text(r));
      return std::nullopt;
    }
    m_enabled = on;
    if (!on) {
      (void)a.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
      const std::lock_guard<std::mutex> lock(g_mutex);
      g_events.clear();
    }
  }
  return fmt::format("CUPTI {}.{}.{} (API {}, {}), activity kind CONCURRENT_KERNEL",
                     a.version / 10000, a.version / 100 % 100, a.version % 100, a.version,
                     a.library);
}

std::vector<window_kernels> kernel_tracer::take_windows() {
  if (!m_enabled || g_api == nullptr)
    return {};
  // The device is synchronised, so every record is complete: one default flush delivers them
  // (a forced one also returns buffers still being filled).
  (void)g_api->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::vector<kernel_event> events;
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    events.swap(g_events);
  }
  std::vector<window_kernels> out = segment_windows(events, demangled);
  // Records after the last close mark belong to windows still to come: keep them.
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_events.insert(g_events.begin(), events.begin(), events.end());
  return out;
}

std::uint64_t kernel_tracer::dropped() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  return g_dropped;
}

} // namespace prereg::cuda

// The kernel clock through CUPTI's activity API, loaded with dlopen (docs/engine.md, "The
// kernel clock"). Only the header's types are used at build time; every function comes from
// dlsym, so a machine without libcupti runs on with the clock recorded as unknown.
#include "cuda/cupti.hpp"

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
  std::string library;   ///< the path that loaded
  std::uint32_t version = 0;
  std::string missing;   ///< why CUPTI cannot serve, or empty
};

// One kernel execution as the device reported it.
struct kernel_event {
  std::uint64_t start = 0; // ns
  std::uint64_t end = 0;
  const char *name = nullptr; // CUPTI's string, shared by the kernel's records
};

std::mutex g_mutex;
std::vector<kernel_event> g_events; // delivered, not yet taken
std::uint64_t g_dropped = 0;
const cupti_api *g_api = nullptr;

template <class F> bool bind(void *lib, F &fn, const char *name) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  return fn != nullptr;
}

std::vector<std::string> candidates() {
  std::vector<std::string> out;
  if (const char *p = std::getenv("PREREG_CUPTI"); p != nullptr && *p != '\0')
    out.emplace_back(p);
  out.emplace_back("libcupti.so.13");
  std::vector<std::string> roots;
  if (const char *h = std::getenv("CUDA_HOME"); h != nullptr && *h != '\0')
    roots.emplace_back(h);
  roots.emplace_back("/usr/local/cuda");
  for (const auto &r : roots)
    for (const char *sub : {"/extras/CUPTI/lib64", "/targets/x86_64-linux/lib", "/lib64", "/lib"})
      out.push_back(r + sub + "/libcupti.so.13");
  return out;
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

void CUPTIAPI buffer_requested(std::uint8_t **buffer, std::size_t *size,
                               std::size_t *max_records) {
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
    got.push_back({k->start, k->end, k->name});
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

bool is_mark(const char *name, const char *which) {
  return name != nullptr && std::strstr(name, which) != nullptr;
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
  events.erase(std::remove_if(events.begin(), events.end(),
                              [](const kernel_event &e) { return e.end == 0 || e.end < e.start; }),
               events.end());
  std::sort(events.begin(), events.end(),
            [](const kernel_event &a, const kernel_event &b) { return a.start < b.start; });
  // The windows: each open mark with the first close mark after it.
  struct bounds {
    std::uint64_t lo, hi;
  };
  std::vector<bounds> windows;
  std::optional<std::uint64_t> open_end;
  for (const auto &e : events) {
    if (is_mark(e.name, "prereg_window_open")) {
      open_end = e.end;
    } else if (is_mark(e.name, "prereg_window_close") && open_end) {
      windows.push_back({*open_end, e.start});
      open_end.reset();
    }
  }
  std::vector<window_kernels> out(windows.size());
  std::vector<std::uint64_t> cur_lo(windows.size()), cur_hi(windows.size());
  std::vector<bool> any(windows.size(), false);
  std::size_t first = 0; // windows are disjoint and sorted: a sliding start
  for (const auto &e : events) {
    if (is_mark(e.name, "prereg_window_open") || is_mark(e.name, "prereg_window_close"))
      continue;
    while (first < windows.size() && windows[first].hi <= e.start)
      ++first; // events come by start time: no later one can overlap that window
    for (std::size_t w = first; w < windows.size() && windows[w].lo < e.end; ++w) {
      if (!(e.end > windows[w].lo && e.start < windows[w].hi))
        continue;
      window_kernels &k = out[w];
      ++k.count;
      if (!any[w] || e.start > cur_hi[w]) {
        if (any[w])
          k.kernel_ms += static_cast<double>(cur_hi[w] - cur_lo[w]) * 1e-6;
        cur_lo[w] = e.start;
        cur_hi[w] = e.end;
        any[w] = true;
      } else {
        cur_hi[w] = std::max(cur_hi[w], e.end);
      }
      const std::string name = demangled(e.name);
      auto it = std::find_if(k.names.begin(), k.names.end(),
                             [&](const window_kernels::by_name &n) { return n.name == name; });
      if (it == k.names.end()) {
        k.names.push_back({name, 0, 0.0});
        it = k.names.end() - 1;
      }
      ++it->calls;
      it->ms += static_cast<double>(e.end - e.start) * 1e-6;
      break; // a kernel belongs to one window (they are disjoint)
    }
  }
  for (std::size_t w = 0; w < windows.size(); ++w)
    if (any[w])
      out[w].kernel_ms += static_cast<double>(cur_hi[w] - cur_lo[w]) * 1e-6;
  // Records after the last close mark belong to windows still to come (none, when the device
  // was synchronised after a window): keep them.
  if (!windows.empty()) {
    const std::uint64_t last = windows.back().hi;
    std::vector<kernel_event> later;
    for (const auto &e : events)
      if (e.start > last)
        later.push_back(e);
    const std::lock_guard<std::mutex> lock(g_mutex);
    g_events.insert(g_events.begin(), later.begin(), later.end());
  }
  return out;
}

std::uint64_t kernel_tracer::dropped() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  return g_dropped;
}

} // namespace prereg::cuda

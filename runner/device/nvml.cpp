// NVML through dlopen: the driver version and the other compute processes on a device. The few
// prototypes are declared here (the NVML 12/13 ABI), so the build needs no nvml.h.
#include "device/nvml.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <vector>

namespace prereg::cuda {
namespace {

using nvml_return = int; // nvmlReturn_t
using nvml_device = void *;
constexpr nvml_return nvml_success = 0;
constexpr nvml_return nvml_insufficient_size = 7;
constexpr unsigned long long nvml_value_not_available = ULLONG_MAX;

/// nvmlProcessInfo_t (v2/v3 layout) and nvmlProcessInfo_v1_t.
struct process_info_v2 {
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
struct process_info_v1 {
  unsigned int pid;
  unsigned long long used_gpu_memory;
};

struct nvml_api {
  nvml_return (*init)() = nullptr;
  nvml_return (*shutdown)() = nullptr;
  nvml_return (*by_pci)(const char *, nvml_device *) = nullptr;
  nvml_return (*by_index)(unsigned int, nvml_device *) = nullptr;
  nvml_return (*driver_version)(char *, unsigned int) = nullptr;
  nvml_return (*procs_v2)(nvml_device, unsigned int *, process_info_v2 *) = nullptr; // _v3 or _v2
  nvml_return (*procs_v1)(nvml_device, unsigned int *, process_info_v1 *) = nullptr;
  const char *(*error_string)(nvml_return) = nullptr;
  std::string missing; ///< why the library is unusable, or empty
};

template <class F> void bind(void *lib, F &fn, const char *name) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
}

const nvml_api &api() {
  static const nvml_api a = [] {
    nvml_api r;
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char *e = dlerror();
      r.missing = std::string("libnvidia-ml.so.1 not loadable: ") + (e ? e : "?");
      return r;
    }
    bind(lib, r.init, "nvmlInit_v2");
    bind(lib, r.shutdown, "nvmlShutdown");
    bind(lib, r.by_pci, "nvmlDeviceGetHandleByPciBusId_v2");
    bind(lib, r.by_index, "nvmlDeviceGetHandleByIndex_v2");
    bind(lib, r.driver_version, "nvmlSystemGetDriverVersion");
    bind(lib, r.procs_v2, "nvmlDeviceGetComputeRunningProcesses_v3");
    if (r.procs_v2 == nullptr)
      bind(lib, r.procs_v2, "nvmlDeviceGetComputeRunningProcesses_v2");
    bind(lib, r.procs_v1, "nvmlDeviceGetComputeRunningProcesses");
    bind(lib, r.error_string, "nvmlErrorString");
    if (r.init == nullptr || r.shutdown == nullptr)
      r.missing = "nvmlInit_v2 not found";
    return r;
  }();
  return a;
}

std::string describe(const nvml_api &a, const char *call, nvml_return rc) {
  return std::string(call) +
         " failed: " + (a.error_string != nullptr ? a.error_string(rc) : std::to_string(rc));
}

template <class Info, class Fn>
bool running_processes(Fn fn, nvml_device dev, std::vector<Info> &out, nvml_return &rc) {
  out.resize(32);
  for (int attempt = 0; attempt < 4; ++attempt) {
    unsigned int count = static_cast<unsigned int>(out.size());
    rc = fn(dev, &count, out.data());
    if (rc == nvml_insufficient_size) {
      out.resize(count + 16);
      continue;
    }
    if (rc != nvml_success)
      return false;
    out.resize(count);
    return true;
  }
  return false;
}

template <class Info> json to_json(const std::vector<Info> &infos) {
  json list = json::array();
  const auto self = static_cast<unsigned int>(getpid());
  for (const auto &p : infos) {
    if (p.pid == self)
      continue;
    json used =
        p.used_gpu_memory == nvml_value_not_available ? json(nullptr) : json(p.used_gpu_memory);
    list.push_back({{"pid", p.pid}, {"used_bytes", used}});
  }
  return list;
}

} // namespace

nvml_report query_nvml(const std::string &pci_bus_id, int ordinal) {
  nvml_report r;
  const nvml_api &a = api();
  if (!a.missing.empty()) {
    r.status = a.missing;
    return r;
  }
  if (const nvml_return rc = a.init(); rc != nvml_success) {
    r.status = describe(a, "nvmlInit_v2", rc);
    return r;
  }
  if (a.driver_version != nullptr) {
    char buf[96] = {};
    if (a.driver_version(buf, sizeof buf) == nvml_success)
      r.driver_version = buf;
  }
  nvml_device dev = nullptr;
  nvml_return rc = a.by_pci != nullptr ? a.by_pci(pci_bus_id.c_str(), &dev) : -1;
  if (rc != nvml_success && a.by_index != nullptr)
    rc = a.by_index(static_cast<unsigned int>(ordinal), &dev);
  if (rc != nvml_success) {
    r.status = describe(a, "nvmlDeviceGetHandleByPciBusId_v2/ByIndex_v2", rc);
  } else if (a.procs_v2 != nullptr) {
    std::vector<process_info_v2> infos;
    if (running_processes(a.procs_v2, dev, infos, rc)) {
      r.other_processes = to_json(infos);
      r.status = "ok";
    } else {
      r.status = describe(a, "nvmlDeviceGetComputeRunningProcesses_v3", rc);
    }
  } else if (a.procs_v1 != nullptr) {
    std::vector<process_info_v1> infos;
    if (running_processes(a.procs_v1, dev, infos, rc)) {
      r.other_processes = to_json(infos);
      r.status = "ok";
    } else {
      r.status = describe(a, "nvmlDeviceGetComputeRunningProcesses", rc);
    }
  } else {
    r.status = "nvmlDeviceGetComputeRunningProcesses not found";
  }
  a.shutdown();
  return r;
}

} // namespace prereg::cuda

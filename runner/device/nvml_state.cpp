// NVML's clocks, power, temperature and clocks-event reasons through dlopen (nvml_state.hpp). The
// few prototypes are the NVML 12/13 ABI, declared here so that the build needs no nvml.h and the
// CPU build can test the reader against a fake library (tests/fake_nvml.c).
#include "device/nvml_state.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <limits>

namespace prereg {

using nvml_return = int; // nvmlReturn_t
using nvml_device = void *;

struct nvml_state_reader::impl {
  void *lib = nullptr;
  nvml_device dev = nullptr;
  std::string what;
  nvml_return (*shutdown)() = nullptr;
  nvml_return (*clock)(nvml_device, int, unsigned *) = nullptr;        // nvmlDeviceGetClockInfo
  nvml_return (*power)(nvml_device, unsigned *) = nullptr;             // milliwatts
  nvml_return (*temperature)(nvml_device, int, unsigned *) = nullptr;  // degrees C
  nvml_return (*reasons)(nvml_device, unsigned long long *) = nullptr; // clocks-event reasons
};

namespace {

constexpr nvml_return nvml_success = 0;
constexpr int nvml_clock_sm = 1;
constexpr int nvml_clock_mem = 2;
constexpr int nvml_temperature_gpu = 0;

template <class F> void bind(void *lib, F &fn, const char *name) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
}

std::string library_name(const std::string &library) {
  if (!library.empty())
    return library;
  if (const char *env = std::getenv("PREREG_NVML"); env != nullptr && *env != '\0')
    return env;
  return "libnvidia-ml.so.1";
}

/// Finds the device; empty, or why not.
std::string find_device(void *lib, const std::string &bus, int ordinal, nvml_device &dev) {
  nvml_return (*by_pci)(const char *, nvml_device *) = nullptr;
  nvml_return (*by_index)(unsigned, nvml_device *) = nullptr;
  bind(lib, by_pci, "nvmlDeviceGetHandleByPciBusId_v2");
  bind(lib, by_index, "nvmlDeviceGetHandleByIndex_v2");
  nvml_return rc = by_pci != nullptr && !bus.empty() ? by_pci(bus.c_str(), &dev) : -1;
  if (rc != nvml_success && by_index != nullptr)
    rc = by_index(static_cast<unsigned>(ordinal), &dev);
  return rc == nvml_success ? "" : "NVML did not find the device (" + std::to_string(rc) + ")";
}

} // namespace

nvml_state_reader::nvml_state_reader(std::unique_ptr<impl> p) : m_impl(std::move(p)) {}

nvml_state_reader::~nvml_state_reader() {
  if (m_impl->shutdown != nullptr)
    m_impl->shutdown();
}

std::unique_ptr<nvml_state_reader> nvml_state_reader::open(const std::string &pci_bus_id,
                                                           int ordinal, std::string &why_not,
                                                           const std::string &library) {
  const std::string name = library_name(library);
  auto p = std::make_unique<impl>();
  p->lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (p->lib == nullptr) {
    const char *e = dlerror();
    why_not = name + " not loadable: " + (e != nullptr ? e : "?");
    return nullptr;
  }
  nvml_return (*init)() = nullptr;
  bind(p->lib, init, "nvmlInit_v2");
  if (init == nullptr || init() != nvml_success) {
    why_not = init == nullptr ? "nvmlInit_v2 not found in " + name : "nvmlInit_v2 failed";
    return nullptr;
  }
  bind(p->lib, p->shutdown, "nvmlShutdown");
  if (why_not = find_device(p->lib, pci_bus_id, ordinal, p->dev); !why_not.empty()) {
    if (p->shutdown != nullptr)
      p->shutdown();
    return nullptr;
  }
  bind(p->lib, p->clock, "nvmlDeviceGetClockInfo");
  bind(p->lib, p->power, "nvmlDeviceGetPowerUsage");
  bind(p->lib, p->temperature, "nvmlDeviceGetTemperature");
  bind(p->lib, p->reasons, "nvmlDeviceGetCurrentClocksEventReasons");
  if (p->reasons == nullptr) // drivers before 535 name it after throttling
    bind(p->lib, p->reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
  nvml_return (*driver)(char *, unsigned) = nullptr;
  bind(p->lib, driver, "nvmlSystemGetDriverVersion");
  char buf[96] = {};
  const bool known = driver != nullptr && driver(buf, sizeof buf) == nvml_success;
  p->what = "NVML " + std::string(known ? buf : "(driver unknown)") + " (" + name + ")";
  return std::unique_ptr<nvml_state_reader>(new nvml_state_reader(std::move(p)));
}

const std::string &nvml_state_reader::describe() const { return m_impl->what; }

device_state_sample nvml_state_reader::read() const {
  const impl &a = *m_impl;
  device_state_sample s;
  unsigned v = 0;
  if (a.clock != nullptr && a.clock(a.dev, nvml_clock_sm, &v) == nvml_success)
    s.sm_mhz = v;
  if (a.clock != nullptr && a.clock(a.dev, nvml_clock_mem, &v) == nvml_success)
    s.mem_mhz = v;
  if (a.power != nullptr && a.power(a.dev, &v) == nvml_success)
    s.power_w = v / 1000.0;
  if (a.temperature != nullptr && a.temperature(a.dev, nvml_temperature_gpu, &v) == nvml_success)
    s.temp_c = v;
  unsigned long long r = 0;
  if (a.reasons != nullptr && a.reasons(a.dev, &r) == nvml_success)
    s.reasons = r;
  return s;
}

} // namespace prereg

// A fake libnvidia-ml for the CPU tests (nvml_state_test.cpp): the NVML calls the state reader
// binds, with planted values. Reading k (counted per process) reports SM clock 1980 - k MHz,
// memory clock 2619 MHz, power 400.5 W, 60 + k C, and every third reading (k = 2, 5, ...) the
// software power cap (0x4) beside idle (0x1). The device is found by index only.
#include <cstring>

namespace {
int readings = 0;
int fake_device = 7;
} // namespace

extern "C" {
int nvmlInit_v2() { return 0; }
int nvmlShutdown() { return 0; }
int nvmlSystemGetDriverVersion(char *buf, unsigned len) {
  std::strncpy(buf, "999.1.2-fake", len);
  return 0;
}
int nvmlDeviceGetHandleByPciBusId_v2(const char *, void **) { return 6; } // NOT_FOUND
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **dev) {
  if (index != 0)
    return 2; // INVALID_ARGUMENT
  *dev = &fake_device;
  return 0;
}
int nvmlDeviceGetClockInfo(void *dev, int type, unsigned *mhz) {
  if (dev != &fake_device)
    return 2;
  *mhz = type == 1 ? 1980u - static_cast<unsigned>(readings) : 2619u;
  return 0;
}
int nvmlDeviceGetPowerUsage(void *, unsigned *mw) {
  *mw = 400500;
  return 0;
}
int nvmlDeviceGetTemperature(void *, int, unsigned *c) {
  *c = 60u + static_cast<unsigned>(readings);
  return 0;
}
int nvmlDeviceGetCurrentClocksEventReasons(void *, unsigned long long *r) {
  *r = readings % 3 == 2 ? 0x5ULL : 0x1ULL;
  ++readings; // the last call of one reading
  return 0;
}
}

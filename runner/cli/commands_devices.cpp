// The commands on what this build and this machine can run: arms, devices.
#include "cli/command_functions.hpp"

#include "arms/outside_arm.hpp"
#include "device/device.hpp"
#include "prereg/error.hpp"
#include "spec/outside_file.hpp"
#include "spec/registry.hpp"

#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

namespace prereg::cli::detail {
namespace {

/// Whether this machine can serve protocols of device `kind`: "usable: NAME", or why not.
struct device_probe {
  bool usable = false;
  std::string detail;
};

device_probe probe_device(const std::string &kind, int ordinal) {
  try {
    const auto dev = make_default_device(kind, ordinal);
    return {true, dev->probe().value("device_name", "unknown")};
  } catch (const error &e) {
    if (e.code() != exit_code::environment)
      throw;
    return {false, e.what()};
  }
}

} // namespace

int cmd_arms(args_t args) {
  CLI::App app{"the kernels this build knows, with device, source hash and whether this machine "
               "can run them (probed)",
               "arms"};
  std::string plugin;
  app.add_option("--plugin", plugin, "list the arms of a plugin library instead (docs/plugins.md)");
  if (!parse(app, args))
    return 0;
  if (!plugin.empty()) {
    const auto arms = list_plugin(plugin);
    fmt::print("{}: {} arm(s), ABI {}, sha256 {}\n", plugin, arms.size(), 1,
               outside_file_sha256(plugin, "--plugin").substr(0, 16));
    fmt::print("{:<24} {:<10} {:<6} {:<15} {:<12} {}\n", "name", "operation", "device", "dtypes",
               "passes", "summary");
    for (const auto &a : arms)
      fmt::print("{:<24} {:<10} {:<6} {:<15} {:<12} {}\n", a.name, a.operation, a.device, a.dtypes,
                 a.passes, a.summary);
    return 0;
  }
  std::vector<std::pair<std::string, device_probe>> probed;
  const auto runnable = [&](const std::string &kind) -> const device_probe & {
    for (const auto &[k, p] : probed)
      if (k == kind)
        return p;
    return probed.emplace_back(kind, probe_device(kind, 0)).second;
  };
  fmt::print("{:<6} {:<20} {:<10} {:<15} {:<8} {:<16} {}\n", "device", "kernel", "operation",
             "dtypes", "passes", "source", "runnable here (probed)");
  for (const auto &a : all_arms()) {
    // Joined piece by piece: "," + string trips GCC 12's -Wrestrict (a false positive).
    std::string dts;
    for (auto d : a.dtypes)
      (dts.empty() ? dts : dts += ',') += to_string(d);
    std::string passes;
    for (auto p : a.passes)
      (passes.empty() ? passes : passes += ',') += p == pass_kind::fwd ? "fwd" : "bwd";
    const device_probe &here = runnable(a.device);
    fmt::print("{:<6} {:<20} {:<10} {:<15} {:<8} {:<16} {}\n", a.device, a.name, a.op, dts, passes,
               a.source_sha256.substr(0, 16),
               here.usable ? "yes" : fmt::format("no ({})", here.detail));
  }
  return 0;
}

int cmd_devices(args_t args) {
  CLI::App app{"probe the devices a protocol can name: usable here, or why not; exit 0 if every "
               "probed device is usable, else 5",
               "devices"};
  std::vector<std::string> kinds;
  int ordinal = 0;
  app.add_option("KIND", kinds, "cpu | cuda (default: both)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--device", ordinal, "CUDA device ordinal (default 0)")
      ->check(CLI::NonNegativeNumber);
  if (!parse(app, args))
    return 0;
  if (kinds.empty())
    kinds = {"cpu", "cuda"};
  bool all_usable = true;
  for (const auto &kind : kinds) {
    const device_probe p = probe_device(kind, ordinal);
    all_usable = all_usable && p.usable;
    fmt::print("{}: {}{}\n", kind, p.usable ? "usable: " : "not usable: ", p.detail);
  }
  return all_usable ? 0 : static_cast<int>(exit_code::environment);
}

} // namespace prereg::cli::detail

// run.isolation's vocabulary and the level its layers and probes give (docs/report.md,
// "run.isolation"): shared by the measuring process's parent, the pages and the audit.
#include "model/report_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

namespace prereg {
namespace {

/// Every layer, in the order they go up; those marked required make a sandboxed run.
constexpr std::array<std::pair<std::string_view, bool>, 14> layers_known{{
    {"no-inherited-fds", true},
    {"user-namespace", true},
    {"mount-namespace", true},
    {"read-only-root", true},
    {"read-only-store", true},
    {"key-masked", true},
    {"pid-namespace", true},
    {"fresh-proc", true},
    {"mounts-locked", true},
    {"caps-dropped", true},
    {"no-new-privs", true},
    {"landlock", false}, // where the kernel has it (docs/engine.md)
    {"seccomp", true},
    {"parent-not-dumpable", true},
}};

/// Each probe and the layer it tests.
constexpr std::array<std::pair<std::string_view, std::string_view>, 20> probes_known{{
    {"inherited-fds", "no-inherited-fds"}, {"read-key", "key-masked"},
    {"write-ledger-cache", "key-masked"},  {"write-store", "read-only-store"},
    {"write-reports", "read-only-store"},  {"write-project", "read-only-store"},
    {"write-home", "read-only-root"},      {"unmount-key-mask", "mounts-locked"},
    {"clear-read-only", "mounts-locked"},  {"capabilities", "caps-dropped"},
    {"no-new-privs", "no-new-privs"},      {"write-proc", "landlock"},
    {"new-user-namespace", "seccomp"},     {"read-parent-memory", "seccomp"},
    {"ptrace-parent", "seccomp"},          {"ptrace-init", "seccomp"},
    {"signal-parent", "seccomp"},          {"signal-init", "seccomp"},
    {"signal-prereg", "pid-namespace"},    {"proc-prereg", "fresh-proc"},
}};

bool has(const std::vector<std::string> &v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool tested(std::string_view layer) {
  return std::any_of(probes_known.begin(), probes_known.end(),
                     [&](const auto &p) { return p.second == layer; });
}

/// The probes of `i` that test `layer` with the outcome `outcome`.
std::vector<const isolation_probe *> probes_of(const report_isolation &i, std::string_view layer,
                                               std::string_view outcome) {
  std::vector<const isolation_probe *> out;
  for (const auto &p : i.probes)
    if (probe_layer(p.name) == layer && p.outcome == outcome)
      out.push_back(&p);
  return out;
}

} // namespace

bool is_isolation_layer(std::string_view name) {
  return std::any_of(layers_known.begin(), layers_known.end(),
                     [&](const auto &l) { return l.first == name; });
}

std::string_view probe_layer(std::string_view name) {
  for (const auto &[probe, layer] : probes_known)
    if (probe == name)
      return layer;
  return {};
}

std::string isolation_level(const report_isolation &i) {
  if (!has(i.layers, "user-namespace"))
    return "none";
  for (const auto &[layer, required] : layers_known)
    if (required && !has(i.layers, layer))
      return "partial";
  for (const auto &p : i.probes)
    if (p.outcome == "escaped")
      return "partial";
  for (const auto &layer : i.layers)
    if (tested(layer) && probes_of(i, layer, "contained").empty())
      return "partial";
  return "sandboxed";
}

std::vector<std::string> isolation_problems(const report_isolation &i) {
  std::vector<std::string> out;
  for (const auto &layer : i.layers) {
    for (const isolation_probe *p : probes_of(i, layer, "escaped"))
      out.push_back(fmt::format("layer {} is listed, but its probe {} got past it ({})", layer,
                                p->name, p->detail));
    if (tested(layer) && probes_of(i, layer, "contained").empty())
      out.push_back(fmt::format("layer {} is listed, but no probe of it was contained", layer));
  }
  if (const std::string level = isolation_level(i); i.level != level)
    out.push_back(
        fmt::format("the level is {}, but the layers and probes give {}", i.level, level));
  return out;
}

std::string_view isolation_mode(const report_isolation &i) {
  if (!i.level.empty())
    return i.level;
  return has(i.layers, "user-namespace") ? "namespaces" : "none";
}

std::string isolation_notice(const report_isolation &i, std::string_view what) {
  if (i.level == "sandboxed")
    return {};
  std::vector<std::string> escaped;
  for (const auto &p : i.probes)
    if (p.outcome == "escaped")
      escaped.push_back(p.name);
  return fmt::format("{} ran with isolation {}: {}{}", what, i.level, i.reason,
                     escaped.empty() ? std::string()
                                     : fmt::format(" (probes that got past a wall: {})",
                                                   fmt::join(escaped, ", ")));
}

} // namespace prereg

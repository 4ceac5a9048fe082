// What plugin and Python arms share: DLPack descriptions of a buffer set, the crash guard,
// descriptor construction (internal to runner/src).
#pragma once

#include "prereg/outside_arm.hpp"

#include <dlpack/dlpack.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace prereg {
struct protocol;
namespace outside {

/// Installs (once) handlers that turn a crash inside outside code into one error line and
/// exit 2, naming the arm and what it was doing (the message of the innermost crash_scope).
void install_crash_guard();

/// While alive, a crash is reported with `message` (which must outlive the scope).
class crash_scope {
public:
  explicit crash_scope(const std::string &message);
  ~crash_scope();
  crash_scope(const crash_scope &) = delete;
  crash_scope &operator=(const crash_scope &) = delete;

private:
  const char *m_prev;
};

[[nodiscard]] std::string crash_message(const std::string &arm_id, const std::string &label,
                                        std::string_view phase);
/// Control characters as \xNN: outside text never forges lines or terminal escapes.
[[nodiscard]] std::string escape_for_message(std::string_view s);

[[nodiscard]] DLDataType dl_type(dtype t);

/// DLTensors for one buffer set, in the operation's tensor order (data null where unused).
struct dl_set {
  explicit dl_set(const outside_call &call);
  std::vector<const char *> names;
  std::vector<std::vector<std::int64_t>> shapes;
  std::vector<DLTensor> tensors;
};

[[nodiscard]] std::vector<std::string> split_list(std::string_view list);
[[nodiscard]] std::vector<dtype> parse_dtypes(std::string_view list, const std::string &where);

/// The descriptor of an outside arm (device and operation: the protocol's).
[[nodiscard]] arm_info outside_info(const std::string &name, const protocol &p,
                                    std::vector<dtype> dtypes, std::vector<pass_kind> passes,
                                    std::string abi, const std::string &sha,
                                    const std::filesystem::path &file);

} // namespace outside
} // namespace prereg

// What plugin and Python arms share: DLPack descriptions of a buffer set, the crash guard,
// descriptor construction (internal to runner/arms).
#pragma once

#include "arms/outside_arm.hpp"

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

/// What the crash guard writes for one scope, formatted before anything can crash: the error
/// line for stderr, or (in the measuring child, see set_crash_channel) an error message for
/// the parent, both with the signal's name spliced in between head and tail.
struct crash_text {
  std::string line_head, line_tail; ///< "prereg: error: WHAT (" ... "); no report was written\n"
  std::string json_head, json_tail; ///< {"error":{"code":2,"message":"WHAT (" ... "..."}}\n
};
[[nodiscard]] crash_text make_crash_text(const std::string &what);

/// In the measuring child: crash reports go to `fd` as the pipe's error message (the parent
/// prints the one error line and records the aborted attempt). -1: to stderr.
void set_crash_channel(int fd);

/// While alive, a crash is reported with `text` (which must outlive the scope).
class crash_scope {
public:
  explicit crash_scope(const crash_text &text);
  ~crash_scope();
  crash_scope(const crash_scope &) = delete;
  crash_scope &operator=(const crash_scope &) = delete;

private:
  const crash_text *m_prev;
};

/// "arm A (LABEL) crashed in its PHASE", as a crash_text.
[[nodiscard]] crash_text crash_message(const std::string &arm_id, const std::string &label,
                                       std::string_view phase);
/// Control characters as \xNN and bidirectional controls as \u202e: outside text never forges
/// lines or terminal escapes, and reads in the order it was written.
[[nodiscard]] std::string escape_for_message(std::string_view s);

/// The arms' log (docs/python-arms.md, "Failure reasons"): a failure's reason (the text the
/// cell's error carries) and its full traceback, appended in order; at most 1 MiB is kept.
void append_arm_log(std::string_view reason, std::string_view traceback);
/// The log so far, emptied.
[[nodiscard]] std::string take_arm_log();

/// The DLPack type of `t` (docs/plugins.md): bool and fp8 by the codes of DLPack 1.1
/// (PREREG_DL_BOOL, PREREG_DL_FLOAT8_E4M3FN, PREREG_DL_FLOAT8_E5M2 of arm_abi.h).
[[nodiscard]] DLDataType dl_type(dtype t);
/// The DLPack type a Python arm's capsule carries for `t`: dl_type(t), but uint8 for bool and
/// fp8 (the glue views those bytes as numpy's or torch's type, docs/python-arms.md).
[[nodiscard]] DLDataType capsule_type(dtype t);

/// DLTensors for one buffer set, in the operation's tensor order (data null where unused); with
/// `capsules`, typed by capsule_type() for Python, else by dl_type().
struct dl_set {
  explicit dl_set(const outside_call &call, bool capsules = false);
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

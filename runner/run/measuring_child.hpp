// The measuring side that runs the engine: in this process, or as the body of the forked
// measuring process that never holds the signing key (internal to runner/run; isolate.hpp).
#pragma once

#include "run/isolate.hpp"

#include <sys/types.h>

#include <cstdint>
#include <exception>
#include <memory>

namespace prereg::detail {

/// The pipe's error message of `e`: {"error": {"code", "message", "where"}}.
[[nodiscard]] json error_message(const std::exception &e);
/// Throws the error an error message describes (its exit code, message and where).
[[noreturn]] void rethrow_error_message(const json &msg);

/// The measuring side in this process: the device made, probed, planned and measured here.
[[nodiscard]] std::unique_ptr<measuring_side>
measure_in_process(const run_options &options, const protocol &proto, std::uint64_t seed);

/// The forked measuring process after fork(2), its copies of the parent's pipe ends closed: it
/// dies with `parent`, ignores SIGINT and SIGTERM, drops PREREG_KEY, sends its plan up
/// `to_parent`, measures once the parent's go byte arrives on `from_parent` and sends the raw
/// facts (or an error) up; progress travels the same way. Never returns.
[[noreturn]] void run_measuring_child(const run_options &options, const protocol &proto,
                                      std::uint64_t seed, pid_t parent, int to_parent,
                                      int from_parent);

} // namespace prereg::detail

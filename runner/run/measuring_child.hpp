// The measuring side that runs the engine: in this process, or as the body of the forked
// measuring process that never holds the signing key (internal to runner/run; isolate.hpp).
#pragma once

#include "base/watch.hpp"
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

/// The forked measuring process after fork(2), every descriptor of the parent's other
/// channels closed: it dies with `parent`, ignores SIGINT and SIGTERM, drops PREREG_KEY, waits
/// for the parent's start message on `channel` (end of file: it ends at once, a spare never
/// needed), reports its calls of arm code on `page`, sends its plan, measures once the parent's
/// go byte arrives and sends the raw facts (or an error); progress travels the same way, all
/// on `channel`. Never returns.
[[noreturn]] void run_measuring_child(const run_options &options, const protocol &proto,
                                      std::uint64_t seed, pid_t parent, int channel,
                                      watch_page *page);

} // namespace prereg::detail

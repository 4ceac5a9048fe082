// The cache of copy-ceiling measurements (docs/engine.md, "Reusing the copy ceiling"): signed
// entries of one device and build, written by the process that holds the key after a run or a
// try measured its ceiling, and offered to a later `try` (always) or run (whose protocol says
// `measurement.ceiling: reuse`) within an hour. Internal to runner/run.
#pragma once

#include "base/json.hpp"
#include "crypto/crypto.hpp"
#include "spec/records.hpp"

#include <filesystem>
#include <string>

namespace prereg {

/// The folder of the cache: $XDG_CACHE_HOME/prereg/ceilings, else ~/.cache/prereg/ceilings.
[[nodiscard]] std::filesystem::path ceiling_cache_dir();

/// The facts that name this device on this host and this build: the host name, the device
/// kind and the probe's identifying facts (name, PCI bus, compute capability, memory, cache,
/// cores, kernel), the tool's version, commit and build flags. Equal identities share entries.
[[nodiscard]] json ceiling_identity(const json &environment, const std::string &device_kind);

/// The entry of `identity` in the cache, when it is a regular file (no link followed) whose
/// signature by `key` verifies, whose identity is `identity` and which was measured at most
/// ceiling_reuse_max_age_s before `at` (RFC 3339) and not after it; else null. Never throws.
[[nodiscard]] json find_ceiling(const json &identity, const signing_key &key,
                                const std::string &at);

/// Writes the ceiling `in` measured (nothing when it was reused or the run did not flush) as
/// the entry of `identity`, signed by `key`, measured at `measured_at` by `source` (a run or
/// report id): atomically, in folders that are not links and belong to this user; a failure to
/// write is silent (the cache only saves time).
void remember_ceiling(const json &identity, const instrument_record &in,
                      const std::string &measured_at, const std::string &source,
                      const signing_key &key);

/// Throws exit 1 unless the measuring side's reuse in `in` is exactly the `offered` entry (or
/// it measured): its entry and its ceiling values are the offered ones.
void check_ceiling_reuse(const instrument_record &in, const json &offered);

} // namespace prereg

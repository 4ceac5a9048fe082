// UTC time stamps: RFC 3339 with microseconds for records, compact for folder names.
#pragma once

#include <ctime>
#include <optional>
#include <string>
#include <string_view>

namespace prereg {

/// Now as RFC 3339 UTC with microseconds: "2026-12-02T18:22:20.123456Z".
[[nodiscard]] std::string utc_now_rfc3339();

/// Seconds since the epoch of an RFC 3339 UTC stamp as utc_now_rfc3339 writes it
/// ("2026-12-02T18:22:20.123456Z"; the fraction optional), or nullopt for any other text.
[[nodiscard]] std::optional<double> rfc3339_seconds(std::string_view stamp);

/// `t` as a compact UTC stamp for run and merge ids: "20261202T182220Z".
[[nodiscard]] std::string utc_stamp(std::time_t t);

} // namespace prereg

// UTC time stamps.
#include "base/time.hpp"

#include <fmt/format.h>

#include <chrono>

namespace prereg {

std::string utc_now_rfc3339() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const auto secs = time_point_cast<seconds>(now);
  const auto micros = duration_cast<microseconds>(now - secs).count();
  const std::time_t t = system_clock::to_time_t(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:06d}Z", buf, micros);
}

std::optional<double> rfc3339_seconds(std::string_view s) {
  // YYYY-MM-DDTHH:MM:SS[.f...]Z
  const auto digits = [&](std::size_t at, std::size_t n) -> std::optional<int> {
    if (at + n > s.size())
      return std::nullopt;
    int v = 0;
    for (std::size_t i = at; i < at + n; ++i) {
      if (s[i] < '0' || s[i] > '9')
        return std::nullopt;
      v = v * 10 + (s[i] - '0');
    }
    return v;
  };
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' ||
      s.back() != 'Z')
    return std::nullopt;
  const auto y = digits(0, 4), mo = digits(5, 2), d = digits(8, 2), h = digits(11, 2),
             mi = digits(14, 2), se = digits(17, 2);
  if (!y || !mo || !d || !h || !mi || !se || *mo < 1 || *mo > 12 || *d < 1 || *d > 31 || *h > 23 ||
      *mi > 59 || *se > 60)
    return std::nullopt;
  double fraction = 0;
  if (s.size() > 20) {
    if (s[19] != '.' || s.size() == 21)
      return std::nullopt;
    double scale = 0.1;
    for (std::size_t i = 20; i + 1 < s.size(); ++i, scale /= 10) {
      if (s[i] < '0' || s[i] > '9')
        return std::nullopt;
      fraction += (s[i] - '0') * scale;
    }
  }
  std::tm tm{};
  tm.tm_year = *y - 1900;
  tm.tm_mon = *mo - 1;
  tm.tm_mday = *d;
  tm.tm_hour = *h;
  tm.tm_min = *mi;
  tm.tm_sec = *se;
  return static_cast<double>(::timegm(&tm)) + fraction;
}

std::string utc_stamp(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

} // namespace prereg

// Shared helpers of the fuzz targets: byte views and a loud abort for a broken invariant.
#pragma once

#include "prereg/error.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace prereg::fuzz {

/// The fuzzer's bytes as text.
[[nodiscard]] inline std::string_view as_text(const std::uint8_t *data, std::size_t size) {
  return {reinterpret_cast<const char *>(data), size};
}

/// Prints why and aborts, so libFuzzer keeps the input as a crash.
[[noreturn]] inline void broken(const char *what, std::string_view detail = {}) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n%.*s\n", what,
               static_cast<int>(std::min<std::size_t>(detail.size(), 2000)), detail.data());
  std::abort();
}

/// An expected rejection must be an input error (exit 2) that says where.
inline void expect_clean_rejection(const error &e, exit_code want = exit_code::invalid) {
  if (e.code() != want)
    broken("rejection with an unexpected exit code", e.line());
  if (std::string_view(e.what()).empty())
    broken("rejection without a message");
}

} // namespace prereg::fuzz

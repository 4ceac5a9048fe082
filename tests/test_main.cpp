// The doctest runner for the unit tests.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

int main(int argc, char **argv) {
  // The ledger's verified-prefix cache goes to a folder of this run, not the user's ~/.cache.
  const auto cache =
      std::filesystem::temp_directory_path() / ("prereg-tests-cache-" + std::to_string(::getpid()));
  ::setenv("XDG_CACHE_HOME", cache.c_str(), 1);
  doctest::Context context(argc, argv);
  const int rc = context.run();
  std::error_code ec;
  std::filesystem::remove_all(cache, ec);
  return rc;
}

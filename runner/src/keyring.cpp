// Signing-key location and creation on first need.
#include "prereg/keyring.hpp"

#include "prereg/error.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

namespace prereg {

std::filesystem::path default_key_path(const std::string &flag) {
  if (!flag.empty()) return flag;
  if (const char *env = std::getenv("PREREG_KEY"); env && *env) return env;
  std::filesystem::path config;
  if (const char *xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg) config = xdg;
  else if (const char *home = std::getenv("HOME"); home && *home)
    config = std::filesystem::path(home) / ".config";
  else
    throw io_error("cannot locate the signing key: set --key, PREREG_KEY or HOME");
  return config / "prereg" / "signing.key";
}

signing_key load_or_create_key(const std::filesystem::path &path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return signing_key::load(path);
  signing_key key = signing_key::generate();
  key.save(path);
  fmt::print(stderr, "prereg: created signing key {} (fingerprint {})\n", path.string(),
             key.fingerprint());
  return key;
}

} // namespace prereg

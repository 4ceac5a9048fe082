// Signing-key location and creation on first need.
#include "crypto/keyring.hpp"

#include "base/fs.hpp"
#include "base/process.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

#include <sys/prctl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace prereg {

void refuse_key_material(const std::filesystem::path &path, std::string_view bytes,
                         const std::filesystem::path &key_path) {
  std::error_code ec;
  const bool is_key = !key_path.empty() && std::filesystem::equivalent(path, key_path, ec);
  static constexpr unsigned char pkcs8_ed25519[] = {0x30, 0x2e, 0x02, 0x01, 0x00, 0x30,
                                                    0x05, 0x06, 0x03, 0x2b, 0x65, 0x70};
  const bool der = bytes.size() >= sizeof pkcs8_ed25519 &&
                   std::memcmp(bytes.data(), pkcs8_ed25519, sizeof pkcs8_ed25519) == 0;
  if (is_key || der || bytes.find("PRIVATE KEY-----") != std::string_view::npos)
    throw invalid_input(is_key ? "this is the signing key, not a protocol: refused (nothing of it "
                                 "is quoted)"
                               : "this file holds private key material, not a protocol: refused "
                                 "(nothing of it is quoted)",
                        path.string());
}

std::string read_protocol_file(const std::filesystem::path &path,
                               const std::filesystem::path &key_path) {
  std::error_code ec;
  if (!key_path.empty() && std::filesystem::equivalent(path, key_path, ec))
    refuse_key_material(path, {}, key_path); // before reading a byte of it
  std::string bytes = read_file(path, max_protocol_file_bytes + 1);
  refuse_key_material(path, bytes, key_path);
  return bytes;
}

std::filesystem::path default_key_path(const std::string &flag) {
  if (!flag.empty())
    return flag;
  if (const char *env = std::getenv("PREREG_KEY"); env && *env)
    return env;
  std::filesystem::path config;
  if (const char *xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg)
    config = xdg;
  else if (const char *home = std::getenv("HOME"); home && *home)
    config = std::filesystem::path(home) / ".config";
  else
    throw io_error("cannot locate the signing key: set --key, PREREG_KEY or HOME");
  return config / "prereg" / "signing.key";
}

signing_key load_or_create_key(const std::filesystem::path &path) {
  // A process that holds the key is not dumpable: no other process of the same user (an
  // outside arm in a measuring process) reads it through /proc/PID/mem or ptrace.
  ::prctl(PR_SET_DUMPABLE, 0);
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::symlink_status(path, ec)))
    return signing_key::load(path);
  check_key_folder(path);
  // Under a lock beside the key, and checked again: of several first commands at once, one
  // creates the key and the others load it.
  const file_lock lock(path.string() + ".lock");
  if (std::filesystem::exists(std::filesystem::symlink_status(path, ec)))
    return signing_key::load(path);
  signing_key key = signing_key::generate();
  key.save(path);
  notice(fmt::format("created signing key {} (fingerprint {})", escape_control(path.string()),
                     key.fingerprint()));
  return key;
}

} // namespace prereg

// Where the signing key lives, and creating it on first need.
#pragma once

#include "crypto/crypto.hpp"

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace prereg {

/// --key, else $PREREG_KEY, else ${XDG_CONFIG_HOME:-$HOME/.config}/prereg/signing.key.
[[nodiscard]] std::filesystem::path default_key_path(const std::string &flag);

/// Loads the key at `path`; if there is none, creates one (mode 0600, its .pub beside it) under
/// the lock file `<path>.lock`, so that concurrent first commands make one key, and prints one
/// notice line on stderr naming the path and fingerprint. The calling process becomes
/// non-dumpable first (PR_SET_DUMPABLE 0: docs/engine.md, "The measuring process").
[[nodiscard]] signing_key load_or_create_key(const std::filesystem::path &path);

/// The largest protocol file read: 1 MiB (the YAML parser's limit).
inline constexpr std::size_t max_protocol_file_bytes = std::size_t{1} << 20;

/// Throws exit 2, quoting none of `bytes`, if `path` is the signing key `key_path` or `bytes`
/// look like private key material (a PEM "PRIVATE KEY" block, a DER Ed25519 PKCS#8 key).
void refuse_key_material(const std::filesystem::path &path, std::string_view bytes,
                         const std::filesystem::path &key_path);

/// A protocol file's bytes for check, canon, freeze and run: a regular file of at most 1 MiB
/// (+1 byte, so the parser reports the size), and never key material (refuse_key_material).
[[nodiscard]] std::string read_protocol_file(const std::filesystem::path &path,
                                             const std::filesystem::path &key_path);

} // namespace prereg

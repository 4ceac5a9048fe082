// Where the signing key lives, and creating it on first need.
#pragma once

#include "prereg/crypto.hpp"

#include <filesystem>
#include <string>

namespace prereg {

/// --key, else $PREREG_KEY, else ${XDG_CONFIG_HOME:-$HOME/.config}/prereg/signing.key.
[[nodiscard]] std::filesystem::path default_key_path(const std::string &flag);

/// Loads the key at `path`; if there is none, creates one (mode 0600, its .pub beside it) and
/// prints one notice line on stderr naming the path and fingerprint.
[[nodiscard]] signing_key load_or_create_key(const std::filesystem::path &path);

} // namespace prereg

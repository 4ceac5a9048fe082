// The files an outside arm names: resolved against the protocol's folder and hashed, never loaded.
#include "spec/outside_file.hpp"

#include "crypto/crypto.hpp"
#include "prereg/error.hpp"

#include <fmt/format.h>

#include <array>
#include <fstream>

namespace fs = std::filesystem;

namespace prereg {

fs::path outside_file(const fs::path &protocol_dir, const std::string &written) {
  const fs::path p(written);
  return (p.is_absolute() ? p : fs::absolute(protocol_dir) / p).lexically_normal();
}

std::string outside_file_sha256(const fs::path &file, const std::string &arm_id) {
  std::error_code ec;
  if (!fs::exists(file, ec))
    throw invalid_input(
        fmt::format("arm {}: its file {} does not exist", arm_id, file.filename().string()),
        file.string());
  if (!fs::is_regular_file(file, ec))
    throw invalid_input(fmt::format("arm {}: {} is not a regular file", arm_id, file.string()),
                        file.string());
  std::ifstream in(file, std::ios::binary);
  std::string bytes;
  constexpr std::size_t limit = std::size_t{1} << 30; // 1 GiB: a shared library, a module
  std::array<char, 65536> chunk{};
  while (in) {
    in.read(chunk.data(), chunk.size());
    bytes.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
    if (bytes.size() > limit)
      throw invalid_input(fmt::format("arm {}: {} is larger than 1 GiB", arm_id, file.string()),
                          file.string());
  }
  if (in.bad())
    throw io_error(fmt::format("arm {}: cannot read {}", arm_id, file.string()), file.string());
  return sha256_hex(bytes);
}

} // namespace prereg

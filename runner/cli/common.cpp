// What the commands share: parsing, protocol and report files, this program's path.
#include "cli/common.hpp"

#include "base/fs.hpp"
#include "crypto/keyring.hpp"
#include "prereg/error.hpp"
#include "run/operation_check.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace prereg::cli::detail {

bool parse(CLI::App &app, args_t args) {
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp &) {
    fmt::print("{}", app.help());
    return false;
  } catch (const CLI::ParseError &e) {
    throw invalid_input(fmt::format("{}: {}", app.get_name(), e.what()));
  }
  return true;
}

bool is_yaml_path(const std::string &path) {
  return path.ends_with(".yaml") || path.ends_with(".yml");
}

std::filesystem::path configured_key_path(const std::string &flag) {
  try {
    return default_key_path(flag);
  } catch (const error &) {
    return {};
  }
}

loading_paths loading_walls(const std::string &key_flag, const std::string &store_dir) {
  std::filesystem::path key = configured_key_path(key_flag);
  if (key.empty()) // no usable key path configured: the default one is still masked
    key = configured_key_path("");
  return {key, store::default_root(store_dir)};
}

void notice_isolation(const report_isolation &i, const char *what) {
  if (const std::string notice = isolation_notice(i, what); !notice.empty())
    fmt::print(stderr, "prereg: notice: {}\n", escape_control(notice));
}

protocol parse_protocol_file(const std::string &file, const std::string &key_flag,
                             const std::string &store_dir, std::string *bytes_out) {
  std::string bytes = read_protocol_file(file, configured_key_path(key_flag));
  protocol p = parse_protocol(bytes, file);
  if (!p.op_file.empty()) { // an operation file: read in a keyless sandbox, then validated with it
    const operation_load loaded = load_operation_here(
        p, std::filesystem::absolute(file).parent_path(), loading_walls(key_flag, store_dir));
    notice_isolation(loaded.isolation, "the operation file");
    p = parse_protocol(bytes, file);
  }
  if (bytes_out)
    *bytes_out = std::move(bytes);
  return p;
}

std::string self_exe() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    throw io_error("cannot find this program's own path (/proc/self/exe)");
  return p.string();
}

json read_report_json(const std::string &dir) {
  const auto path = std::filesystem::path(dir) / "report.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw invalid_input("not a report folder: it has no report.json", dir);
  return parse_json_strict(read_file(path), path.string());
}

} // namespace prereg::cli::detail

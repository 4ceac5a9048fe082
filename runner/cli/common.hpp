// What the commands share: their argument list, the options of every command, parsing, reading
// a protocol or report file, and this program's own path (internal to runner/cli).
#pragma once

#include "base/json.hpp"
#include "run/arm_check.hpp"
#include "spec/protocol.hpp"
#include "store/store.hpp"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace prereg::cli::detail {

/// A command's arguments, after its name.
using args_t = std::vector<std::string>;

/// Options shared by every command.
struct common_options {
  std::string store_dir;
  std::string key_file;
  void add_store(CLI::App &app) {
    app.add_option("--store", store_dir, "store folder (else $PREREG_STORE, else ./.prereg)");
  }
  void add_key(CLI::App &app) {
    app.add_option("--key", key_file,
                   "signing key (else $PREREG_KEY, else ~/.config/prereg/signing.key)");
  }
  [[nodiscard]] store open_store() const { return store(store::default_root(store_dir)); }
};

/// Parses `args` with `app`; returns false when help was printed.
bool parse(CLI::App &app, args_t args);

/// Whether `path` names a protocol YAML file (.yaml, .yml).
[[nodiscard]] bool is_yaml_path(const std::string &path);

/// The signing key path that --key (or the environment) names, or empty if there is none.
[[nodiscard]] std::filesystem::path configured_key_path(const std::string &flag);

/// The protocol in `file` (read as a protocol file, see read_protocol_file); its bytes go to
/// `bytes_out` when given. An operation file it names is read in a sandboxed child that masks
/// the key `key_flag` names (else PREREG_KEY, else the default) and protects the store
/// `store_dir` names (else $PREREG_STORE, else ./.prereg); a notice says so on stderr when that
/// child stood less than every wall.
[[nodiscard]] protocol parse_protocol_file(const std::string &file, const std::string &key_flag,
                                           const std::string &store_dir,
                                           std::string *bytes_out = nullptr);

/// The walls of a child that loads outside code for this command: the key `key_flag` names
/// (else PREREG_KEY, else the default path) masked, the store `store_dir` names protected.
[[nodiscard]] loading_paths loading_walls(const std::string &key_flag,
                                          const std::string &store_dir);

/// "prereg: notice: WHAT ran with isolation LEVEL: ..." on stderr when `i` is not sandboxed.
void notice_isolation(const report_isolation &i, const char *what);

/// The path of this binary, for the processes it starts.
[[nodiscard]] std::string self_exe();

/// The report.json of the report folder `dir`, parsed strictly (exit 2 if there is none).
[[nodiscard]] json read_report_json(const std::string &dir);

} // namespace prereg::cli::detail

// The integrity check `run` performs before measuring (docs/store.md, "Before a run"): the
// target resolved, the stored copy verified, every kernel's and outside file's source hash
// compared with the freeze record's.
#include "store/store.hpp"

#include "base/fs.hpp"
#include "crypto/crypto.hpp"
#include "crypto/keyring.hpp"
#include "prereg/error.hpp"
#include "spec/operation_file.hpp"
#include "spec/outside_file.hpp"
#include "spec/registry.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace prereg {
namespace fs = std::filesystem;
namespace {

/// Why the operation file of `fp` cannot run as frozen, or nullopt.
std::optional<std::string> operation_file_problem(const frozen_protocol &fp,
                                                  const fs::path &project) {
  if (fp.proto.op_file.empty())
    return std::nullopt;
  if (!fp.freeze.contains("operation"))
    return fmt::format("freeze record has no operation entry for operation {}", fp.proto.op);
  const fs::path file = recorded_operation_file(fp.freeze, project);
  const std::string frozen = fp.freeze["operation"].value("sha256", "");
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    return fmt::format("operation file of {} is missing since freezing: {}", fp.proto.op,
                       file.string());
  const std::string now = outside_file_sha256(file, "operation " + fp.proto.op);
  if (now != frozen)
    return fmt::format("operation file of {} changed since freezing (frozen {}, now {}): {}; "
                       "this version stays refused: {}",
                       fp.proto.op, frozen.substr(0, 12), now.substr(0, 12), file.string(),
                       new_version_advice(fp.proto));
  return std::nullopt;
}

} // namespace

fs::path frozen_outside_file(const fs::path &project, const frozen_protocol &fp,
                             const arm_spec &arm) {
  const auto &kernels = fp.freeze.at("kernels");
  const auto it = kernels.find(arm.id);
  if (it == kernels.end() || !it->is_object() || !it->contains("file"))
    throw integrity_error(fmt::format("freeze record has no file for arm {}", arm.id));
  const fs::path kept(it->value("file", ""));
  return kept.is_absolute() ? kept : (project / kept).lexically_normal();
}

std::string new_version_advice(const protocol &p) {
  return fmt::format("to measure the new code, freeze a new version: set `revision: {}` in the "
                     "protocol file{} and `prereg freeze` it",
                     p.revision + 1,
                     p.schema == 1 ? " (a prereg: 2 field: write `prereg: 2` and rename "
                                     "`shapes:` to `axes:`)"
                                   : "");
}

namespace {

/// " (functions F, G changed; code outside any function changed)" of a changed Python file, from
/// `changes` against the copy kept at freeze; "" when there is none or it cannot tell.
std::string python_changes_text(const frozen_protocol &fp, const fs::path &file,
                                const std::string &frozen, const source_change_reader &changes) {
  if (!changes || fp.dir.empty())
    return {};
  const fs::path copy = kept_source_copy(fp.dir, frozen);
  std::error_code ec;
  if (!fs::is_regular_file(copy, ec) || sha256_hex(read_file(copy)) != frozen)
    return {};
  const json c = changes(copy, file);
  if (!c.is_object())
    return {};
  const auto names = [&](const char *key) {
    std::vector<std::string> out;
    if (c.contains(key) && c[key].is_array())
      for (const auto &n : c[key])
        if (n.is_string())
          out.push_back(escape_control(n.get<std::string>()));
    return out;
  };
  std::vector<std::string> parts;
  for (const auto &[key, verb] :
       {std::pair{"changed", "changed"}, {"added", "added"}, {"removed", "removed"}})
    if (const auto n = names(key); !n.empty())
      parts.push_back(fmt::format("{} {} {}", n.size() == 1 ? "function" : "functions",
                                  fmt::join(n, ", "), verb));
  if (c.value("module", false))
    parts.emplace_back("code outside any function changed");
  if (parts.empty())
    return " (no function's code changed: only comments or formatting)";
  return " (" + fmt::format("{}", fmt::join(parts, "; ")) + ")";
}

/// Why an outside arm's file cannot run as frozen (missing, or changed: naming every arm of
/// the file and, for Python, what changed), or nullopt.
std::optional<std::string> outside_file_problem(const frozen_protocol &fp, const arm_spec &arm,
                                                const fs::path &project,
                                                const source_change_reader &changes) {
  const fs::path file = frozen_outside_file(project, fp, arm);
  const std::string frozen = fp.freeze.at("kernels").at(arm.id).value("sha256", "");
  const char *kind = arm.source == arm_source::plugin ? "plugin" : "python";
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    return fmt::format("{} file of arm {} is missing since freezing: {}", kind, arm.id,
                       file.string());
  const std::string now = outside_file_sha256(file, arm.id);
  if (now == frozen)
    return std::nullopt;
  std::vector<std::string> users; // every arm that runs this file, by its entry
  for (const auto &a : fp.proto.arms)
    if (a.outside() && frozen_outside_file(project, fp, a) == file)
      users.push_back(fmt::format("{} ({})", a.id, a.entry));
  const std::string what =
      users.size() == 1 ? "arm " + arm.id : fmt::format("arms {}", fmt::join(users, ", "));
  return fmt::format("{} file of {} changed since freezing (frozen {}, now {}): {}{}; this "
                     "version stays refused: {}",
                     kind, what, frozen.substr(0, 12), now.substr(0, 12), file.string(),
                     arm.source == arm_source::python
                         ? python_changes_text(fp, file, frozen, changes)
                         : std::string(),
                     new_version_advice(fp.proto));
}

} // namespace

std::optional<std::string> kernel_source_problem(const frozen_protocol &fp, const fs::path &project,
                                                 const source_change_reader &changes) {
  if (auto problem = operation_file_problem(fp, project))
    return problem;
  const auto &kernels = fp.freeze.at("kernels");
  for (const auto &arm : fp.proto.arms) {
    if (arm.outside()) {
      if (auto problem = outside_file_problem(fp, arm, project, changes))
        return problem;
      continue;
    }
    const arm_info *info = find_arm(fp.proto.device, arm.kernel);
    if (info == nullptr)
      return fmt::format("kernel {} ({}) is not in this build", arm.kernel, fp.proto.device);
    const auto it = kernels.find(arm.id);
    if (it == kernels.end())
      return fmt::format("freeze record has no source hash for arm {}", arm.id);
    const std::string frozen = it->value("source_sha256", "");
    if (frozen != info->source_sha256)
      return fmt::format("kernel {} source changed since freezing (frozen {}, this build {}); "
                         "sources: {}; this version stays refused: {}",
                         arm.kernel, frozen.substr(0, 12), info->source_sha256.substr(0, 12),
                         fmt::join(info->sources, " "), new_version_advice(fp.proto));
  }
  return std::nullopt;
}

void check_kernel_sources(const frozen_protocol &fp, const fs::path &project,
                          const source_change_reader &changes) {
  if (auto problem = kernel_source_problem(fp, project, changes))
    throw integrity_error(*problem);
}

namespace {

frozen_protocol resolve_protocol_for_run(const store &s, std::string_view arg,
                                         const std::filesystem::path &key_path,
                                         const source_change_reader &changes) {
  const fs::path path(arg);
  std::error_code ec;
  // Lowercase hex is a hash or prefix even if a file of that name is here.
  const bool looks_like_file = !is_hex(arg) && (fs::is_regular_file(path, ec) ||
                                                arg.ends_with(".yaml") || arg.ends_with(".yml"));
  frozen_protocol fp;
  if (!looks_like_file) {
    std::string which; // an id of several versions: which one runs
    fp = s.load(s.resolve(arg, &which));
    if (!which.empty())
      fp.note = "notice: " + which;
  } else {
    const std::string bytes = read_protocol_file(path, key_path);
    const std::string digest = sha256_hex(bytes);
    std::optional<std::string> match;
    for (const auto &h : s.hashes()) {
      const auto rec = s.protocol_dir(h) / "freeze.json";
      try {
        if (parse_json_strict(read_file(rec), rec.string()).value("source_sha256", "") == digest)
          match = h;
      } catch (const error &) {
        // a corrupted record cannot match; load() reports it when that protocol is used
      }
    }
    if (match) {
      fp = s.load(*match);
    } else {
      const protocol p = parse_protocol(bytes, path.string());
      const json body = to_json(p);
      const std::string hash = protocol_hash(body);
      const auto all = s.hashes();
      if (std::find(all.begin(), all.end(), hash) != all.end()) {
        // Same canonical form: the file is that protocol, whatever its comments or layout.
        fp = s.load(hash);
        fp.note = fmt::format("{} differs from the frozen source only in comments or formatting: "
                              "running protocol {} as frozen",
                              path.string(), hash);
        check_kernel_sources(fp, s.project_root(), changes);
        return fp;
      }
      // Against the frozen protocol of the same id that differs in the fewest fields.
      std::optional<std::pair<std::string, std::vector<std::string>>> closest;
      for (const auto &h : all) {
        const auto stored = s.protocol_dir(h) / "protocol.json";
        json other;
        try {
          other = parse_json_strict(read_file(stored), stored.string());
        } catch (const error &) {
          continue;
        }
        if (!other.is_object() || other.value("id", "") != p.id)
          continue;
        auto changes = changed_fields(other, body);
        if (!closest || changes.size() < closest->second.size())
          closest.emplace(h, std::move(changes));
      }
      if (closest)
        throw integrity_error(
            fmt::format("{} was modified since freezing: changed {} (frozen as {})", path.string(),
                        fmt::join(closest->second, ", "), closest->first),
            path.string());
      throw integrity_error(fmt::format("{} is not frozen: run `prereg freeze {}` first",
                                        path.string(), path.string()),
                            path.string());
    }
  }
  check_kernel_sources(fp, s.project_root(), changes);
  return fp;
}

} // namespace

frozen_protocol resolve_for_run(const store &s, std::string_view arg,
                                const std::filesystem::path &key_path,
                                const source_change_reader &changes) {
  frozen_protocol fp = resolve_protocol_for_run(s, arg, key_path, changes);
  const ledger l = s.get_ledger();
  l.verify_for_append();
  if (!ledger_records_freeze(l.entries(), fp.hash))
    throw integrity_error(
        fmt::format("protocol {} is stored but the ledger has no freeze entry for it (a freeze "
                    "that ended early?): repair with `prereg freeze FILE`",
                    fp.hash),
        l.path().string());
  return fp;
}
} // namespace prereg

// `prereg submit`: a submission's files pinned into the store and its signed ledger entry; the
// submissions of a task read back from the ledger (docs/grading.md, "Submissions").
#include "grade/submission.hpp"

#include "base/expr.hpp"
#include "base/fs.hpp"
#include "prereg/error.hpp"
#include "store/ledger.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace prereg::grade {
namespace fs = std::filesystem;
namespace {

constexpr std::size_t max_files = 16;
constexpr std::uintmax_t max_file_bytes = std::uintmax_t{64} << 20; // 64 MiB a file

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

bool file_name_ok(const std::string &n) {
  return !n.empty() && n.size() <= 128 && n[0] != '.' &&
         std::all_of(n.begin(), n.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '.' || c == '-';
         });
}

/// The kind the entry file's extension names; the other files must fit it.
submission_kind kind_of(const std::vector<fs::path> &files) {
  const std::string ext = files.front().extension().string();
  if (ext == ".py")
    return submission_kind::python;
  if (ext == ".so")
    return submission_kind::plugin;
  if (ext == ".c")
    return submission_kind::c_source;
  throw invalid_input(fmt::format("a submission's first file is its entry: a Python file (.py), a "
                                  "shared library built against arm_abi.h (.so) or C source "
                                  "(.c), got '{}'",
                                  files.front().filename().string()),
                      files.front().string());
}

/// The request's files read, each checked: a regular file of at most 64 MiB, a plain name, no
/// name twice; C source may come with .c and .h files only.
std::vector<std::pair<submitted_file, std::string>> read_files(const submit_request &r,
                                                               submission_kind kind) {
  if (r.files.empty() || r.files.size() > max_files)
    throw invalid_input(
        fmt::format("submit takes 1 to {} files, got {}", max_files, r.files.size()));
  std::vector<std::pair<submitted_file, std::string>> out;
  std::set<std::string> names;
  for (const auto &f : r.files) {
    std::error_code ec;
    if (!fs::is_regular_file(f, ec))
      throw invalid_input("no such regular file", f.string());
    if (fs::file_size(f, ec) > max_file_bytes)
      throw invalid_input("a submitted file may have at most 64 MiB", f.string());
    const std::string name = f.filename().string();
    if (!file_name_ok(name))
      throw invalid_input(fmt::format("a submitted file's name must be 1 to 128 of A-Z a-z 0-9 _ "
                                      ". - not starting with '.', got '{}'",
                                      message_excerpt(name)),
                          f.string());
    if (!names.insert(name).second)
      throw invalid_input(fmt::format("two submitted files are named '{}'", name), f.string());
    const std::string ext = f.extension().string();
    if (kind == submission_kind::c_source && ext != ".c" && ext != ".h")
      throw invalid_input("C source is submitted as .c and .h files only", f.string());
    const std::string bytes = read_file(f, max_file_bytes);
    out.push_back({{name, sha256_hex(bytes), bytes.size()}, bytes});
  }
  return out;
}

} // namespace

std::string kind_name(submission_kind k) {
  switch (k) {
  case submission_kind::python:
    return "python";
  case submission_kind::plugin:
    return "plugin";
  case submission_kind::c_source:
    break;
  }
  return "c";
}

json submission::to_json() const {
  json f = json::array();
  for (const auto &x : files)
    f.push_back({{"name", x.name}, {"sha256", x.sha256}, {"bytes", x.bytes}});
  json out = {{"submission_id", id},
              {"name", name},
              {"kind", kind_name(kind)},
              {"entry", entry},
              {"files", f}};
  if (!supersedes.empty())
    out["supersedes"] = supersedes;
  return out;
}

std::vector<submission> submissions_of(std::span<const json> entries,
                                       const std::string &task_hash) {
  std::vector<submission> out;
  for (const auto &e : entries) {
    if (e.value("event", "") != ledger_event::submit || e.value("protocol_hash", "") != task_hash)
      continue;
    submission s;
    s.id = e.value("submission_id", "");
    s.name = e.value("name", "");
    const std::string k = e.value("kind", "");
    s.kind = k == "plugin" ? submission_kind::plugin
             : k == "c"    ? submission_kind::c_source
                           : submission_kind::python;
    s.entry = e.value("entry", "");
    s.supersedes = e.value("supersedes", "");
    s.time = e.value("time", "");
    s.seq = e.value("seq", std::int64_t{0});
    if (e.contains("files") && e["files"].is_array())
      for (const auto &f : e["files"])
        if (f.is_object())
          s.files.push_back(
              {f.value("name", ""), f.value("sha256", ""), f.value("bytes", std::uint64_t{0})});
    out.push_back(std::move(s));
  }
  return out;
}

std::string submission_rel(const std::string &task_hash, const std::string &id) {
  return fmt::format("submissions/{}/{}", task_hash, id);
}

fs::path submission_dir(const store &s, const std::string &task_hash, const std::string &id) {
  return s.root() / submission_rel(task_hash, id);
}

void check_submission_name(const std::string &name) {
  const bool ok = !name.empty() && name.size() <= 48 && name[0] >= 'a' && name[0] <= 'z' &&
                  std::all_of(name.begin(), name.end(), name_char);
  if (!ok)
    throw invalid_input(fmt::format("a submission's name must match [a-z][a-z0-9_-]{{0,47}}, got "
                                    "'{}'",
                                    message_excerpt(name)));
  if (is_expression_keyword(name))
    throw invalid_input(fmt::format("a submission's name may not be '{}', a word of the expect "
                                    "language (it becomes an arm id)",
                                    name));
}

submission submit(const store &s, const frozen_protocol &task, const submit_request &r,
                  const signing_key &key) {
  if (!task.proto.task)
    throw invalid_input(fmt::format("protocol {} is not a task (it has no task: section)",
                                    task.hash.substr(0, 12)));
  check_submission_name(r.name);
  if (r.files.empty())
    throw invalid_input("submit: give the submission's files, its entry file first");
  const submission_kind kind = kind_of(r.files);
  const auto files = read_files(r, kind);
  submission sub;
  sub.name = r.name;
  sub.kind = kind;
  sub.entry = r.entry.empty() ? task.proto.task->entry : r.entry;
  if (sub.entry.empty() || sub.entry.size() > 256)
    throw invalid_input("--entry must be 1 to 256 characters");
  for (const auto &[f, bytes] : files)
    sub.files.push_back(f);

  s.add_key(key.public_part());
  file_lock lock(s.lock_path());
  ledger l = s.get_ledger();
  l.verify_for_append(&key);
  std::int64_t n = 0;
  for (const auto &earlier : submissions_of(l.entries(), task.hash))
    if (earlier.name == sub.name) {
      ++n;
      sub.supersedes = earlier.id;
    }
  sub.id = fmt::format("{}.{}", sub.name, n + 1);
  const fs::path dir = submission_dir(s, task.hash, sub.id);
  const fs::path temp = dir.parent_path() / ("." + sub.id + ".partial");
  std::error_code ec;
  fs::remove_all(temp, ec); // a submit killed half-way, never recorded
  fs::create_directories(temp);
  for (const auto &[f, bytes] : files)
    write_file_atomic(temp / f.name, bytes, 0444);
  rename_no_replace(temp, dir);
  json entry = sub.to_json();
  entry["event"] = ledger_event::submit;
  entry["protocol_hash"] = task.hash;
  try {
    const json appended = l.append(std::move(entry), key);
    sub.time = appended.value("time", "");
    sub.seq = appended.value("seq", std::int64_t{0});
  } catch (...) {
    fs::remove_all(dir, ec); // not recorded: not a submission
    throw;
  }
  return sub;
}

frozen_protocol load_task(const store &s, const std::string &arg) {
  frozen_protocol fp = s.load(s.resolve(arg));
  if (!fp.proto.task)
    throw invalid_input(fmt::format("protocol {} ({}) is not a task: it has no task: section",
                                    fp.proto.id, fp.hash.substr(0, 12)));
  return fp;
}

} // namespace prereg::grade

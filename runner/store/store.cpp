// The frozen-protocol store and the integrity check run performs before measuring.
#include "store/store.hpp"
#include "spec/operation_file.hpp"
#include "spec/outside_file.hpp"

#include "base/fs.hpp"
#include "base/time.hpp"
#include "crypto/keyring.hpp"
#include "crypto/signed_json.hpp"
#include "prereg/build_info.hpp"
#include "prereg/error.hpp"
#include "spec/records.hpp"
#include "spec/registry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

namespace prereg {
namespace fs = std::filesystem;
bool is_hex(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

namespace {

void collect_changes(const json &a, const json &b, const std::string &path,
                     std::vector<std::string> &out) {
  if (a.is_object() && b.is_object()) {
    for (const auto &[k, v] : a.items()) {
      const std::string p = path.empty() ? k : path + "." + k;
      if (!b.contains(k))
        out.push_back(p);
      else
        collect_changes(v, b.at(k), p, out);
    }
    for (const auto &[k, v] : b.items())
      if (!a.contains(k))
        out.push_back(path.empty() ? k : path + "." + k);
    return;
  }
  if (a.is_array() && b.is_array() && a.size() == b.size()) {
    for (std::size_t i = 0; i < a.size(); ++i)
      collect_changes(a[i], b[i], fmt::format("{}[{}]", path, i), out);
    return;
  }
  if (canonical_json(a) != canonical_json(b))
    out.push_back(path);
}

// [a-z0-9][a-z0-9_-]{0,63}, the protocol id's form (docs/protocol.md).
bool is_protocol_id(std::string_view s) {
  return !s.empty() && s.size() <= 64 && s[0] != '_' && s[0] != '-' &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
         });
}

} // namespace

std::vector<std::string> changed_fields(const json &a, const json &b) {
  std::vector<std::string> out;
  collect_changes(a, b, "", out);
  std::sort(out.begin(), out.end());
  return out;
}

store::store(std::filesystem::path root)
    : m_root(std::move(root)),
      m_ledger(m_root / "ledger.jsonl", [r = m_root](const std::string &fp) {
        try {
          return store(r).find_key(fp);
        } catch (const error &) {
          return std::optional<public_key>(); // a key file not matching its name is no key
        }
      }) {}

bool ledger_records_freeze(std::span<const json> entries, std::string_view hash) {
  return std::any_of(entries.begin(), entries.end(), [&](const json &e) {
    if (!e.is_object() || e.value("protocol_hash", "") != hash)
      return false;
    const std::string event = e.value("event", "");
    return event == ledger_event::freeze || event == ledger_event::import; // imported: frozen
  });
}

fs::path store::default_root(const std::string &flag) {
  if (!flag.empty())
    return flag;
  if (const char *env = std::getenv("PREREG_STORE"); env && *env)
    return env;
  return ".prereg";
}

fs::path store::protocol_dir(const std::string &hash) const { return m_root / "protocols" / hash; }

void store::add_key(const public_key &key) const {
  const auto path = m_root / "keys" / (key.fingerprint() + ".pub");
  if (fs::exists(path) && read_file(path) == key.pem())
    return;
  write_file_atomic(path, key.pem());
}

std::optional<public_key> store::find_key(const std::string &fingerprint) const {
  if (!is_hex(fingerprint) || fingerprint.size() != 64)
    return std::nullopt;
  const auto path = m_root / "keys" / (fingerprint + ".pub");
  if (!fs::exists(path))
    return std::nullopt;
  auto key = public_key::from_pem(read_file(path), path.string());
  if (key.fingerprint() != fingerprint)
    throw integrity_error("public key file does not match its fingerprint name", path.string());
  return key;
}

namespace {
// A path as the freeze record keeps it: relative to `project` when inside it, else absolute.
std::string project_relative(const fs::path &project, const fs::path &file) {
  const fs::path rel = file.lexically_relative(project);
  if (!rel.empty() && *rel.begin() != "..")
    return rel.generic_string();
  return file.generic_string();
}
/// The freeze record's `operation` entry of `p` (an operation file's protocol): the file hashed,
/// never loaded here; the descriptor is the one `check`/`freeze` registered from a keyless child.
json frozen_operation_entry(const protocol &p, const fs::path &source_dir,
                            const fs::path &project) {
  const fs::path file =
      outside_file(source_dir.empty() ? fs::current_path() : source_dir, p.op_file);
  const std::string digest = outside_file_sha256(file, "operation " + p.op);
  const operation_desc *op = find_outside_operation(p.op);
  if (op == nullptr || op->file != file.string())
    throw std::logic_error(fmt::format("operation {} was not loaded before freezing", p.op));
  return operation_record(p, *op, project_relative(project, file), digest);
}

} // namespace

fs::path kept_source_copy(const fs::path &protocol_dir, const std::string &digest) {
  return protocol_dir / "files" / digest;
}

namespace {

/// A copy of each Python arm file under files/<sha256> (docs/store.md): read once, kept only if
/// its bytes still hash to what the record pins (a file edited meanwhile is not kept). Never
/// loaded; `run` compares it with the file's later state to name the functions that changed.
void keep_source_copies(const fs::path &dir,
                        const std::vector<std::pair<fs::path, std::string>> &files) {
  for (const auto &[file, digest] : files) {
    const fs::path copy = kept_source_copy(dir, digest);
    if (fs::exists(copy))
      continue;
    const std::string bytes = read_file(file);
    if (sha256_hex(bytes) == digest)
      write_file_atomic(copy, bytes);
  }
}

} // namespace

fs::path store::project_root() const {
  return fs::absolute(m_root).lexically_normal().parent_path();
}

freeze_outcome store::freeze(std::string_view source, const protocol &p, const signing_key &key,
                             const fs::path &source_dir) const {
  const json body = to_json(p);
  const std::string canonical = canonical_json(body);
  const std::string hash = protocol_hash(body);
  file_lock lock(lock_path());
  get_ledger().verify_for_append(&key); // before anything is written
  const auto dir = protocol_dir(hash);
  if (fs::exists(dir / "freeze.json")) {
    const frozen_protocol fp = load(hash); // an existing copy must still be intact
    freeze_outcome out;
    out.hash = hash;
    out.already_frozen = true;
    out.cosmetic_only = fp.freeze.value("source_sha256", "") != sha256_hex(source);
    out.kernel_problem = kernel_source_problem(fp, project_root());
    if (ledger_records_freeze(get_ledger().entries(), hash))
      return out;
    get_ledger().append({{"event", ledger_event::freeze},
                         {"protocol_hash", hash},
                         {"protocol_id", p.id},
                         {"note", "recorded late: an earlier freeze stored the protocol but "
                                  "ended before its ledger entry"}},
                        key);
    out.repaired = true;
    return out;
  }
  json kernels = json::object();
  std::vector<std::pair<fs::path, std::string>> python_files; // kept beside the record
  for (const auto &arm : p.arms) {
    if (arm.outside()) {
      const fs::path file =
          outside_file(source_dir.empty() ? fs::current_path() : source_dir, arm.file);
      const std::string digest = outside_file_sha256(file, arm.id);
      if (arm.source == arm_source::python)
        python_files.emplace_back(file, digest);
      // Hashed, never loaded: no outside code runs in a process that holds the signing key.
      kernels[arm.id] = {{arm.source == arm_source::plugin ? "plugin" : "python", arm.file},
                         {"entry", arm.entry},
                         {"file", project_relative(project_root(), file)},
                         {"sha256", digest}};
      continue;
    }
    const arm_info *info = find_arm(p.device, arm.kernel);
    if (info == nullptr)
      throw invalid_input(fmt::format("unknown kernel {} for device {}", arm.kernel, p.device));
    kernels[arm.id] = {{"kernel", arm.kernel}, {"source_sha256", info->source_sha256}};
  }
  json record = {{"protocol_hash", hash},
                 {"source_sha256", sha256_hex(source)},
                 {"kernels", kernels},
                 {"tool_version", build_info::version},
                 {"frozen_at", utc_now_rfc3339()},
                 {"signer", key.fingerprint()}};
  if (!p.op_file.empty()) // an operation file: pinned like an outside arm's (docs/operations.md)
    record["operation"] = frozen_operation_entry(p, source_dir, project_root());
  record = sign_record(std::move(record), key);
  add_key(key.public_part());
  try {
    write_file_atomic(dir / "source.yaml", source);
    write_file_atomic(dir / "protocol.json", canonical);
    keep_source_copies(dir, python_files);
    // freeze.json last: its presence marks the protocol as frozen.
    write_file_atomic(dir / "freeze.json", canonical_json(record));
    get_ledger().append(
        {{"event", ledger_event::freeze}, {"protocol_hash", hash}, {"protocol_id", p.id}}, key);
  } catch (...) {
    // Nothing half-written (a full disk, a read-only store): a protocol whose freeze the ledger
    // does not record is not frozen, and a later freeze must start afresh.
    std::error_code ec;
    fs::remove_all(dir, ec);
    throw;
  }
  freeze_outcome written;
  written.hash = hash;
  return written;
}

std::vector<std::string> store::hashes() const {
  std::vector<std::string> out;
  const auto dir = m_root / "protocols";
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return out;
  for (const auto &entry : fs::directory_iterator(dir)) {
    const auto name = entry.path().filename().string();
    if (entry.is_directory() && name.size() == 64 && is_hex(name) &&
        fs::exists(entry.path() / "freeze.json"))
      out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<frozen_version> store::versions_of(std::string_view id) const {
  std::vector<frozen_version> out;
  for (const auto &h : hashes()) {
    const auto stored = protocol_dir(h) / "protocol.json";
    const auto record = protocol_dir(h) / "freeze.json";
    frozen_version v{h, "", 1};
    try {
      const json body = parse_json_strict(read_file(stored), stored.string());
      if (body.value("id", "") != id)
        continue;
      if (body.contains("revision") && body["revision"].is_number_integer())
        v.revision = body["revision"].get<std::int64_t>();
    } catch (const error &) {
      continue; // a corrupted copy names no id; load() reports it when that hash is used
    }
    try {
      const json freeze = parse_json_strict(read_file(record), record.string());
      if (freeze.is_object() && freeze.contains("frozen_at") && freeze["frozen_at"].is_string())
        v.frozen_at = freeze["frozen_at"].get<std::string>();
    } catch (const error &) {
      // load() reports a corrupted record when that hash is used
    }
    out.push_back(std::move(v));
  }
  std::stable_sort(out.begin(), out.end(), [](const frozen_version &a, const frozen_version &b) {
    return a.frozen_at < b.frozen_at;
  });
  return out;
}

std::string versions_text(const std::vector<frozen_version> &versions) {
  std::string out;
  for (const auto &v : versions)
    out +=
        fmt::format("{}{} (revision {}, frozen {})", out.empty() ? "" : ", ", v.hash.substr(0, 12),
                    v.revision, v.frozen_at.empty() ? "at an unknown time" : v.frozen_at);
  return out;
}

const frozen_version *newest_version(const std::vector<frozen_version> &versions) {
  const frozen_version *best = nullptr;
  bool shared = false;
  for (const auto &v : versions) {
    if (best == nullptr || v.revision > best->revision) {
      best = &v;
      shared = false;
    } else if (v.revision == best->revision) {
      shared = true;
    }
  }
  return shared ? nullptr : best;
}

namespace {

/// The version of the id `arg` that `run ID` takes among several (newest_version), with the
/// note naming it and the others; exit 2 when its revision is frozen in several versions.
std::string newest_of_id(std::string_view arg, const std::vector<frozen_version> &versions,
                         std::string *note) {
  const frozen_version *newest = newest_version(versions);
  if (newest == nullptr) {
    std::int64_t top = 0;
    for (const auto &v : versions)
      top = std::max(top, v.revision);
    throw invalid_input(fmt::format(
        "{} versions of protocol {} are frozen: {}; revision {} is frozen more than once, so the "
        "id alone names none of them: give a hash or a prefix of at least {} hex digits",
        versions.size(), arg, versions_text(versions), top, min_prefix_digits));
  }
  if (note != nullptr) {
    std::vector<frozen_version> others;
    for (const auto &v : versions)
      if (v.hash != newest->hash)
        others.push_back(v);
    *note = fmt::format("protocol {} has {} frozen versions: taking the newest revision, {} "
                        "({}, frozen {}); give a hash or a prefix for another: {}",
                        arg, versions.size(), newest->revision, newest->hash.substr(0, 12),
                        newest->frozen_at.empty() ? "at an unknown time" : newest->frozen_at,
                        versions_text(others));
  }
  return newest->hash;
}

} // namespace

std::string store::resolve(std::string_view arg, std::string *note) const {
  // A protocol id alone names the one frozen version with that id.
  const auto all = hashes();
  std::vector<std::string> by_id;
  std::vector<frozen_version> versions;
  if (is_protocol_id(arg))
    versions = versions_of(arg);
  for (const auto &v : versions)
    by_id.push_back(v.hash);
  std::sort(by_id.begin(), by_id.end());
  const bool hex = is_hex(arg) && arg.size() <= 64;
  std::vector<std::string> by_hash;
  if (hex && arg.size() >= min_prefix_digits)
    for (const auto &h : all)
      if (h.compare(0, arg.size(), arg) == 0)
        by_hash.push_back(h);
  if (!by_hash.empty() && !by_id.empty() && by_hash != by_id)
    throw invalid_input(fmt::format("'{}' is ambiguous: it is a hash prefix of {} and the id of "
                                    "{}; give more hash digits",
                                    arg, by_hash[0], by_id[0]));
  const auto &matches = by_hash.empty() ? by_id : by_hash;
  if (matches.size() > 1) {
    if (&matches == &by_id)
      return newest_of_id(arg, versions, note);
    throw invalid_input(
        fmt::format("prefix {} is ambiguous: it matches {} and {}", arg, matches[0], matches[1]));
  }
  if (matches.size() == 1)
    return matches.front();
  if (!hex && !is_protocol_id(arg))
    throw invalid_input(fmt::format(
        "'{}' is not a protocol hash, a hash prefix of at least {} hex digits or a protocol id",
        arg, min_prefix_digits));
  if (hex && arg.size() < min_prefix_digits)
    throw invalid_input(fmt::format("no frozen protocol has the id '{}', and a hash prefix needs "
                                    "at least {} hex digits",
                                    arg, min_prefix_digits));
  throw integrity_error(fmt::format("no frozen protocol {} in the store (neither a hash prefix "
                                    "nor a protocol id there)",
                                    arg),
                        m_root.string());
}

frozen_protocol store::load(const std::string &hash) const {
  const auto dir = protocol_dir(hash);
  frozen_protocol fp;
  fp.hash = hash;
  fp.dir = dir;
  for (const char *name : {"protocol.json", "source.yaml", "freeze.json"})
    if (!fs::exists(dir / name))
      throw integrity_error(fmt::format("stored protocol is missing {}", name), dir.string());
  fp.canonical = read_file(dir / "protocol.json");
  if (sha256_hex(fp.canonical) != hash)
    throw integrity_error(
        fmt::format("stored copy is corrupted: protocol.json no longer hashes to {}", hash),
        (dir / "protocol.json").string());
  fp.body = parse_json_strict(fp.canonical, (dir / "protocol.json").string());
  fp.proto = protocol_from_json(fp.body, (dir / "protocol.json").string());
  fp.source = read_file(dir / "source.yaml");
  const auto freeze_path = (dir / "freeze.json").string();
  try {
    fp.freeze = parse_json_strict(read_file(dir / "freeze.json"), freeze_path);
  } catch (const error &e) {
    throw integrity_error(fmt::format("freeze record is corrupted: {}", e.what()), freeze_path);
  }
  if (!fp.freeze.is_object() || fp.freeze.value("protocol_hash", "") != hash)
    throw integrity_error("freeze record does not name this protocol", freeze_path);
  if (fp.freeze.value("source_sha256", "") != sha256_hex(fp.source))
    throw integrity_error("stored source.yaml no longer matches the freeze record",
                          (dir / "source.yaml").string());
  const std::string signer = record_signer(fp.freeze);
  const auto key = find_key(signer);
  if (!key)
    throw integrity_error(fmt::format("freeze record is signed by a key not in the store ({})",
                                      signer.empty() ? "unsigned" : signer),
                          freeze_path);
  if (!verify_record(fp.freeze, *key))
    throw integrity_error("freeze record signature does not verify (tampered)", freeze_path);
  // An operation file's protocol: its pinned descriptor, registered for this process.
  if (register_recorded_operation(fp.freeze, project_root(), freeze_path) != nullptr)
    fp.proto = protocol_from_json(fp.body, (dir / "protocol.json").string());
  return fp;
}

} // namespace prereg

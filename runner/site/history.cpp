// The site's data: report folders (audited once and cached by their bytes) and each protocol's
// attempts from the ledger.
#include "site/history.hpp"

#include "audit/audit.hpp"
#include "audit/prepared_ledger.hpp"
#include "base/fs.hpp"
#include "base/parallel.hpp"
#include "crypto/crypto.hpp"
#include "model/report_model.hpp"
#include "prereg/build_info.hpp"
#include "prereg/error.hpp"
#include "run/merge.hpp"
#include "spec/records.hpp"
#include "store/store.hpp"
#include "store/trust.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <fstream>

namespace prereg::site {
namespace fs = std::filesystem;
namespace {

/// The cache format; a cached entry of another format is audited again (2: claims, quartiles).
constexpr int cache_format = 2;

bool is_report_dir(const fs::path &dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "report.json", ec) ||
         fs::is_regular_file(dir / "report.dsse.json", ec);
}

std::string file_or_empty(const fs::path &p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) ? read_file(p) : std::string{};
}

std::string string_at(const json &j, const char *key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

/// The members every report has, read leniently (a merged report is not the model's format).
void read_common(const json &root, report_facts &f) {
  const json none = json::object();
  const json &tool = root.contains("tool") && root["tool"].is_object() ? root["tool"] : none;
  const json &proto =
      root.contains("protocol") && root["protocol"].is_object() ? root["protocol"] : none;
  const json &run = root.contains("run") && root["run"].is_object() ? root["run"] : none;
  const json &env =
      root.contains("environment") && root["environment"].is_object() ? root["environment"] : none;
  f.commit = string_at(tool, "git_commit");
  f.protocol_hash = string_at(proto, "hash");
  f.run_id = string_at(run, "run_id");
  f.started_at = string_at(run, "started_at");
  f.device = string_at(env, "device_name");
  f.merged = root.contains("merge_version");
  if (root.contains("attempt") && root["attempt"].is_number_integer())
    f.attempt = root["attempt"].get<std::int64_t>();
  if (root.contains("predictions") && root["predictions"].is_array())
    for (const json &p : root["predictions"])
      if (p.is_object())
        f.verdicts.push_back({string_at(p, "id"), string_at(p, "verdict"), string_at(p, "claim")});
}

/// A single run's report through the strict model (an unknown schema throws): cell medians and
/// quartiles (a quartile that is not finite is taken as the median).
void read_cells(const json &root, const std::string &where, report_facts &f) {
  const report_document r = report_from_json(root, where);
  const auto or_median = [](double q, double m) { return std::isfinite(q) ? q : m; };
  for (const report_cell &c : r.cells)
    if (!c.error && std::isfinite(c.median_ms) && c.median_ms > 0)
      f.medians.push_back({cell_label(c.key), c.median_ms, or_median(c.q1_ms, c.median_ms),
                           or_median(c.q3_ms, c.median_ms)});
}

/// Audits `dir` (a merged report through the live ledger, any other against `prepared`) and
/// reads the facts the pages need.
report_facts read_facts(const fs::path &dir, const std::string &rel, const store &s,
                        const trust_root &trust, const prepared_ledger *prepared) {
  report_facts f;
  f.rel = rel;
  f.run_id = dir.filename().string();
  try {
    const audit_result a = prepared == nullptr ? audit_merged_report(dir, s, trust, {})
                                               : audit_report(dir, s, trust, {}, *prepared);
    f.status = a.passed() ? "audited" : "audit failed";
    if (!a.passed())
      for (const audit_check &c : a.checks)
        if (!c.passed)
          f.why += fmt::format("{}{}: {}", f.why.empty() ? "" : "; ", c.name, c.detail);
    const std::string where = (dir / "report.json").string();
    const json root = parse_json_strict(read_file(dir / "report.json"), where);
    read_common(root, f);
    if (!f.merged)
      read_cells(root, where, f);
  } catch (const std::exception &e) {
    f.status = "unreadable";
    f.why = e.what();
    f.medians.clear();
  }
  if (f.status != "audited")
    f.medians.clear(); // only audited reports draw trends
  return f;
}

} // namespace

std::vector<fs::path> find_report_dirs(const fs::path &reports_root) {
  std::vector<fs::path> dirs;
  for (const auto &id : fs::directory_iterator(reports_root)) {
    if (!id.is_directory())
      continue;
    for (const auto &run : fs::directory_iterator(id.path()))
      if (run.is_directory() && is_report_dir(run.path()))
        dirs.push_back(run.path());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

namespace {

/// The cache entry of a report folder: SHA-256 over the cache format, this build's commit, the
/// folder under REPORTS, the trust pins and the SHA-256 of each of its two files.
fs::path cache_path(const fs::path &dir, const std::string &rel, const trust_root &trust,
                    const fs::path &cache_dir) {
  const std::string key =
      sha256_hex(fmt::format("{}\n{}\n{}\n{}\n{}\n{}", cache_format, build_info::git_commit, rel,
                             trust.source, sha256_hex(file_or_empty(dir / "report.dsse.json")),
                             sha256_hex(file_or_empty(dir / "report.json"))));
  return cache_dir / (key + ".json");
}

std::optional<report_facts> cached_facts(const fs::path &cached) {
  std::error_code ec;
  if (!fs::is_regular_file(cached, ec))
    return std::nullopt;
  try {
    return facts_from_json(parse_json_strict(read_file(cached), cached.string()));
  } catch (const std::exception &) {
    return std::nullopt; // a damaged cache entry: audit again and replace it
  }
}

/// Writes a cache entry: a temp file renamed over `path`, without fsync (a cache entry lost or
/// cut by a crash does not parse as an entry, so that report is audited again).
void write_cache_entry(const fs::path &path, const std::string &bytes) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out)
      throw io_error("cannot write the site's cache", tmp.string());
  }
  fs::rename(tmp, path);
}

/// The page of a report folder the site links to: report.html, else report.md, else none.
std::string page_of(const fs::path &dir) {
  std::error_code ec;
  for (const char *name : {"report.html", "report.md"})
    if (fs::is_regular_file(dir / name, ec))
      return name;
  return "";
}

/// `facts` with each folder's page looked up (not cached: the folder may gain or lose it).
std::vector<report_facts> with_pages(std::vector<report_facts> facts,
                                     const std::vector<fs::path> &dirs) {
  for (std::size_t i = 0; i < facts.size(); ++i)
    facts[i].page = page_of(dirs[i]);
  return facts;
}

} // namespace

std::vector<report_facts> all_report_facts(const std::vector<fs::path> &dirs,
                                           const fs::path &reports_root, const store &s,
                                           const trust_root &trust, const fs::path &cache_dir,
                                           std::size_t &audited_now) {
  std::vector<report_facts> out(dirs.size());
  std::vector<fs::path> entry(dirs.size());
  std::vector<std::size_t> merged;
  std::vector<std::size_t> single;
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    out[i].rel = fs::relative(dirs[i], reports_root).generic_string();
    entry[i] = cache_path(dirs[i], out[i].rel, trust, cache_dir);
    if (auto f = cached_facts(entry[i]))
      out[i] = std::move(*f);
    else
      (is_merged_report(dirs[i]) ? merged : single).push_back(i);
  }
  audited_now = merged.size() + single.size();
  if (audited_now == 0)
    return with_pages(std::move(out), dirs);
  fs::create_directories(cache_dir);
  for (const std::size_t i : merged) // the live ledger: one at a time
    out[i] = read_facts(dirs[i], out[i].rel, s, trust, nullptr);
  if (!single.empty()) {
    const prepared_ledger prepared = prepare_ledger(s, trust);
    parallel_chunks(static_cast<std::int64_t>(single.size()), 1,
                    [&](std::int64_t begin, std::int64_t end) {
                      for (std::int64_t k = begin; k < end; ++k) {
                        const std::size_t i = single[static_cast<std::size_t>(k)];
                        out[i] = read_facts(dirs[i], out[i].rel, s, trust, &prepared);
                      }
                    });
  }
  for (const std::vector<std::size_t> *list : {&merged, &single})
    for (const std::size_t i : *list)
      write_cache_entry(entry[i], canonical_json(to_json(out[i])));
  return with_pages(std::move(out), dirs);
}

json to_json(const report_facts &f) {
  json verdicts = json::array();
  for (const verdict_fact &v : f.verdicts)
    verdicts.push_back(json::array({v.id, v.verdict, v.claim}));
  json medians = json::array();
  for (const cell_fact &c : f.medians)
    medians.push_back(json::array({c.label, c.median_ms, c.q1_ms, c.q3_ms}));
  return {{"format", cache_format},     {"rel", f.rel},
          {"status", f.status},         {"why", f.why},
          {"hash", f.protocol_hash},    {"run_id", f.run_id},
          {"started_at", f.started_at}, {"commit", f.commit},
          {"device", f.device},         {"attempt", f.attempt},
          {"merged", f.merged},         {"verdicts", verdicts},
          {"medians", medians}};
}

std::optional<report_facts> facts_from_json(const json &j) {
  try {
    if (j.at("format").get<int>() != cache_format)
      return std::nullopt;
    report_facts f;
    f.rel = j.at("rel").get<std::string>();
    f.status = j.at("status").get<std::string>();
    f.why = j.at("why").get<std::string>();
    f.protocol_hash = j.at("hash").get<std::string>();
    f.run_id = j.at("run_id").get<std::string>();
    f.started_at = j.at("started_at").get<std::string>();
    f.commit = j.at("commit").get<std::string>();
    f.device = j.at("device").get<std::string>();
    f.attempt = j.at("attempt").get<std::int64_t>();
    f.merged = j.at("merged").get<bool>();
    for (const json &v : j.at("verdicts"))
      f.verdicts.push_back(
          {v.at(0).get<std::string>(), v.at(1).get<std::string>(), v.at(2).get<std::string>()});
    for (const json &m : j.at("medians"))
      f.medians.push_back({m.at(0).get<std::string>(), m.at(1).get<double>(), m.at(2).get<double>(),
                           m.at(3).get<double>()});
    return f;
  } catch (const std::exception &) {
    return std::nullopt;
  }
}

namespace {

/// The attempt of `entry` (a run-start) as the site lists it, its end filled in later.
attempt_facts attempt_of(const json &entry, std::int64_t number) {
  attempt_facts a;
  a.attempt = number;
  a.run_id = string_at(entry, "run_id");
  a.started_at = string_at(entry, "started_at");
  if (a.started_at.empty())
    a.started_at = string_at(entry, "time");
  a.device = string_at(entry, "device_name");
  a.outcome = "no end recorded";
  return a;
}

void add_ledger(const std::vector<json> &entries, std::map<std::string, protocol_facts> &out) {
  std::map<std::string, std::pair<std::string, std::size_t>> by_run; // run id -> hash, index
  for (const json &e : entries) {
    const std::string event = string_at(e, "event");
    const std::string hash = string_at(e, "protocol_hash");
    auto it = out.find(hash);
    if (it == out.end())
      continue;
    auto &attempts = it->second.attempts;
    if (event == "run-start") {
      by_run[string_at(e, "run_id")] = {hash, attempts.size()};
      attempts.push_back(attempt_of(e, static_cast<std::int64_t>(attempts.size()) + 1));
    } else if (event == "run-complete" || event == "run-aborted") {
      const auto r = by_run.find(string_at(e, "run_id"));
      if (r == by_run.end() || r->second.first != hash)
        continue;
      attempt_facts &a = attempts[r->second.second];
      a.outcome = event == "run-complete" ? "completed" : "aborted";
      a.reason = string_at(e, "reason");
    }
  }
}

} // namespace

std::map<std::string, protocol_facts> protocols_of(const store &s, std::string &ledger_problem) {
  std::map<std::string, protocol_facts> out;
  for (const std::string &hash : s.hashes()) {
    protocol_facts p;
    p.hash = hash;
    try {
      const frozen_protocol fp = s.load(hash);
      p.id = string_at(fp.body, "id");
      p.title = string_at(fp.body, "title");
      p.frozen_at = string_at(fp.freeze, "frozen_at");
      if (const auto r = fp.body.find("revision"); r != fp.body.end() && r->is_number_integer())
        p.revision = r->get<std::int64_t>();
      if (const auto ps = fp.body.find("predictions"); ps != fp.body.end() && ps->is_array())
        for (const json &pr : *ps)
          if (pr.is_object())
            p.predictions.emplace_back(string_at(pr, "id"), string_at(pr, "claim"));
    } catch (const std::exception &e) {
      p.problem = e.what();
      p.id = "(unreadable " + hash.substr(0, 12) + ")";
    }
    out.emplace(hash, std::move(p));
  }
  const ledger l = s.get_ledger();
  try {
    (void)l.verify([&](const std::string &fp) { return s.find_key(fp); });
  } catch (const std::exception &e) {
    ledger_problem = e.what();
  }
  try {
    add_ledger(l.entries(), out);
  } catch (const std::exception &e) {
    if (ledger_problem.empty())
      ledger_problem = e.what();
  }
  return out;
}

} // namespace prereg::site

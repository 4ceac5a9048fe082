// The `history` check: the sequence of a protocol's runs in the ledger, listed, and what is
// wrong with it (docs/audit.md, "What `history` verifies").
#include "audit/checks.hpp"

#include "store/ledger.hpp"
#include "store/store.hpp"

#include <fmt/format.h>

#include <optional>
#include <unordered_map>

namespace prereg::audit_detail {
namespace fs = std::filesystem;
namespace {

std::string seq_text(const json &e) {
  const auto it = e.find("seq");
  return it == e.end() ? std::string("(none)") : it->dump();
}

std::optional<std::int64_t> attempt_of(const json &e) {
  const auto it = e.find("attempt");
  if (it == e.end() || !it->is_number_integer())
    return std::nullopt;
  return it->get<std::int64_t>();
}

std::string attempt_text(const std::optional<std::int64_t> &a) {
  return a ? std::to_string(*a) : std::string("(none)");
}

/// One run of the protocol in the ledger.
struct run {
  std::size_t start;             ///< index of its run-start in `entries`
  std::int64_t number;           ///< its attempt number: run-starts of this hash so far
  std::vector<std::size_t> ends; ///< indices of its run-complete / run-aborted entries
};

/// One pass over the ledger's entries of one protocol: its runs in run-start order, and the
/// problems of the sequence in ledger order.
class history_scan {
public:
  history_scan(const std::vector<json> &entries, const std::string &hash)
      : m_entries(entries), m_hash(hash), m_numbers(attempt_numbers(entries, hash)) {
    for (std::size_t i = 0; i < m_entries.size(); ++i)
      entry(i);
  }
  /// The scan of `subset` only: a prepared ledger's indices of the protocol's entries, all of
  /// them objects (prepared_ledger::indexed), so the other entries add no problem.
  history_scan(const std::vector<json> &entries, const std::string &hash,
               const std::vector<std::size_t> &subset)
      : m_entries(entries), m_hash(hash), m_numbers(numbers_of(entries, hash, subset)) {
    for (const std::size_t i : subset)
      entry(i);
  }

  [[nodiscard]] const std::vector<std::pair<std::string, run>> &runs() const { return m_runs; }
  [[nodiscard]] std::vector<std::string> &problems() { return m_problems; }

private:
  void entry(std::size_t i) {
    const json &e = m_entries[i];
    if (!e.is_object()) {
      m_problems.push_back(fmt::format("ledger line {} is not a JSON object", i + 1));
      return;
    }
    if (e.value("protocol_hash", "") != m_hash)
      return;
    seq_order(i, e);
    const std::string event = e.value("event", "");
    const std::string id = e.value("run_id", "");
    if (event == ledger_event::freeze || event == ledger_event::import)
      m_frozen = true;
    else if (event == ledger_event::run_start)
      start(i, e, id);
    else if (event == ledger_event::run_complete || event == ledger_event::run_aborted)
      end(i, e, event, id);
  }

  void seq_order(std::size_t i, const json &e) {
    const auto seq = e.find("seq");
    if (seq == e.end() || !seq->is_number_integer() ||
        (m_last_seq && seq->get<std::int64_t>() <= *m_last_seq))
      m_problems.push_back(
          fmt::format("ledger line {} (seq {}) is out of seq order", i + 1, seq_text(e)));
    else
      m_last_seq = seq->get<std::int64_t>();
  }

  void start(std::size_t i, const json &e, const std::string &id) {
    const std::int64_t number = m_numbers[i];
    if (!m_frozen)
      m_problems.push_back(
          fmt::format("the run-start at seq {} comes before any freeze of protocol {}", seq_text(e),
                      short_hash(m_hash)));
    const auto recorded = attempt_of(e);
    if (recorded != number)
      m_problems.push_back(fmt::format(
          "the run-start at seq {} records attempt {}, but it is run number {} of this protocol",
          seq_text(e), attempt_text(recorded), number));
    if (const run *dup = find(id)) {
      m_problems.push_back(fmt::format("run {} starts twice (seq {} and seq {})", id,
                                       seq_text(m_entries[dup->start]), seq_text(e)));
    } else {
      m_index.emplace(id, m_runs.size());
      m_runs.push_back({id, run{i, number, {}}});
    }
  }

  void end(std::size_t i, const json &e, const std::string &event, const std::string &id) {
    run *r = find(id);
    if (r == nullptr) {
      m_problems.push_back(fmt::format(
          "the {} at seq {} ends run {}, which has no earlier run-start of this protocol", event,
          seq_text(e), id.empty() ? "(no run_id)" : id));
      return;
    }
    r->ends.push_back(i);
    const auto recorded = attempt_of(e);
    if (recorded != r->number)
      m_problems.push_back(fmt::format("the {} at seq {} records attempt {}, not {}", event,
                                       seq_text(e), attempt_text(recorded), r->number));
    if (r->ends.size() == 2)
      m_problems.push_back(fmt::format("run {} ends twice (seq {} and seq {})", id,
                                       seq_text(m_entries[r->ends[0]]), seq_text(e)));
  }

  /// attempt_numbers() over the entries in `subset` (the others are 0).
  static std::vector<std::int64_t> numbers_of(const std::vector<json> &entries,
                                              const std::string &hash,
                                              const std::vector<std::size_t> &subset) {
    std::vector<std::int64_t> out(entries.size(), 0);
    std::int64_t seen = 0;
    for (const std::size_t i : subset)
      if (entries[i].value("event", "") == ledger_event::run_start &&
          entries[i].value("protocol_hash", "") == hash)
        out[i] = ++seen;
    return out;
  }

  run *find(const std::string &id) {
    const auto it = m_index.find(id);
    return it == m_index.end() ? nullptr : &m_runs[it->second].second;
  }

  const std::vector<json> &m_entries;
  const std::string &m_hash;
  const std::vector<std::int64_t> m_numbers;
  bool m_frozen = false;
  std::optional<std::int64_t> m_last_seq;
  std::vector<std::pair<std::string, run>> m_runs;      // in run-start order
  std::unordered_map<std::string, std::size_t> m_index; // run id -> index in m_runs
  std::vector<std::string> m_problems;
};

/// The runs as the history line lists them, and where this report's run is among them.
struct run_list {
  std::vector<std::string> parts;
  std::int64_t mine = 0;  ///< this run's attempt number (0: not in the ledger)
  std::size_t mine_k = 0; ///< its place in the list
};

run_list list_runs(const std::vector<json> &entries,
                   const std::vector<std::pair<std::string, run>> &runs,
                   const std::string &run_id) {
  run_list l;
  for (const auto &[id, r] : runs) {
    const std::size_t k = l.parts.size() + 1;
    const json &s = entries[r.start];
    const std::string tag = id == run_id ? " (this report)" : "";
    if (id == run_id) {
      l.mine = r.number;
      l.mine_k = k;
    }
    if (r.ends.empty()) {
      l.parts.push_back(
          fmt::format("run {} started {} and has no end recorded{}", k, s.value("time", "?"), tag));
      continue;
    }
    const json &end = entries[r.ends.front()];
    if (end.value("event", "") == ledger_event::run_complete)
      l.parts.push_back(fmt::format("run {} completed {}{}", k, end.value("time", "?"), tag));
    else
      l.parts.push_back(fmt::format("run {} aborted at {} ({}){}", k, end.value("time", "?"),
                                    end.value("reason", "no reason"), tag));
  }
  return l;
}

/// "run K of N; ..." (or why this run is not among them).
std::string history_line(const run_list &l, const std::string &hash) {
  if (l.parts.empty())
    return fmt::format("the ledger holds no run of protocol {}", short_hash(hash));
  return fmt::format("{}; {}",
                     l.mine > 0
                         ? fmt::format("run {} of {}", l.mine_k, l.parts.size())
                         : fmt::format("this run is not in the ledger; {} run(s)", l.parts.size()),
                     fmt::join(l.parts, ", "));
}

} // namespace

run_history read_history(const audit_context &ctx) {
  const std::string hash = ctx.hash();
  const json_node report = ctx.report_node();
  const std::string run_id = report["run"]["run_id"].str();
  const std::int64_t attempt = any_integer(report["attempt"]);
  const ledger l = ctx.st().get_ledger();
  if (!fs::exists(l.path()))
    fail(fmt::format("there is no ledger {}", l.path().string()));
  const prepared_ledger &p = ctx.prepared();
  if (p.entries_failure) // exit-3 errors (a cut or unparsable line) FAIL the check
    fail(*p.entries_failure);
  const auto &entries = p.entries;
  history_scan scan =
      p.indexed ? history_scan(entries, hash, p.of(hash)) : history_scan(entries, hash);
  const run_list list = list_runs(entries, scan.runs(), run_id);
  run_history h;
  h.problems = std::move(scan.problems());
  if (list.mine == 0)
    h.problems.insert(h.problems.begin(),
                      fmt::format("this run ({}) has no run-start of protocol {} in the ledger",
                                  run_id, short_hash(hash)));
  else if (attempt != list.mine)
    h.problems.insert(h.problems.begin(),
                      fmt::format("the report says attempt {}, but its run-start is run number {} "
                                  "of this protocol",
                                  attempt, list.mine));
  h.line = history_line(list, hash);
  return h;
}

} // namespace prereg::audit_detail
